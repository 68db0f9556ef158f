"""Every command-line example in README.md and docs/cli.md is a valid command on data a reader
has: argparse accepts it, its DATA is a bundled dataset or a file the text says how to get (never
a path outside the repository), and the examples that take a few seconds run here, with the exit
status and the first line of output the documentation shows. The long ones (the comparisons,
10-fold and repeated protocols; tests/cli/test_cli.py runs the same commands on iris) are parsed
only."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from fsframe.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = {"breast_cancer", "wine", "iris", "digits", "synthetic", "diabetes"}
# files the documentation names and says where they come from (or creates in the example)
DOCUMENTED_FILES = {"colon.mat", "wdbc.data", "missing.csv", "two_classes_of_15.csv", "data.csv"}
COMMANDS = {"methods", "plugins", "select", "compare"}


def _examples() -> list[tuple[str, str, list[str]]]:
    """(where, command line, documented output lines) of every example."""
    out = []
    readme = (ROOT / "README.md").read_text()
    top = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    out += [("README top", line.split("&& ", 1)[1], []) for line in top.splitlines() if "&& fsframe " in line]
    section = readme[readme.index("## Command line"):]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    out += [("README command line", line.split("#", 1)[0].strip(), []) for line in block.splitlines()
            if line.startswith("fsframe ")]
    for block in re.findall(r"```text\n(.*?)```", (ROOT / "docs" / "cli.md").read_text(), re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ fsframe "):
                shown = []
                for nxt in lines[i + 1:]:
                    if nxt.startswith("$ "):
                        break
                    shown.append(nxt)
                out.append(("docs/cli.md", line[2:], shown))
    return out


EXAMPLES = _examples()


def _slow(argv: list[str]) -> bool:
    text = " ".join(argv)
    return argv[0] == "compare" or "--repeats" in text or "--cv 10" in text


def test_the_examples_were_found():
    where = {w for w, _, _ in EXAMPLES}
    assert where == {"README top", "README command line", "docs/cli.md"}
    assert len(EXAMPLES) >= 20


@pytest.mark.parametrize("where,line,shown", EXAMPLES, ids=[f"{w}: {c[:70]}" for w, c, _ in EXAMPLES])
def test_example_is_valid_and_runs_as_documented(where, line, shown, tmp_path, monkeypatch, capsys):
    argv = shlex.split(line)[1:]
    assert argv[0] in COMMANDS
    if argv[0] in ("select", "compare"):
        data = argv[1]
        assert data in BUNDLED or data in DOCUMENTED_FILES, f"{data!r}: use bundled data or say where it comes from"
        assert not data.startswith("..") and "shared" not in data
    meaningful = [s for s in shown if s.strip() and s.strip() != "..."]
    expected = meaningful[0] if meaningful else None
    usage_error = expected is not None and re.match(r"fsframe( \w+)?: error", expected) is not None
    if not usage_error:
        build_parser().parse_args(argv)  # argparse accepts every flag and value
    if _slow(argv) or (argv[0] != "methods" and argv[0] != "plugins" and argv[1] in {"colon.mat", "wdbc.data"}):
        return
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    rows = [f"{a:.4f},{b:.4f},{c}" for (a, b), c in zip(rng.standard_normal((30, 2)), np.repeat([0, 1], 15))]
    (tmp_path / "two_classes_of_15.csv").write_text("a,b,y\n" + "\n".join(rows) + "\n")
    (tmp_path / "data.csv").write_text("a;b;y\n" + "\n".join(r.replace(",", ";") for r in rows) + "\n")
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    if usage_error:
        assert code == 2, err
        assert expected[:40] in err, (expected, err)
        return
    assert code == 0, err
    if expected is not None and not expected.startswith("wrote "):
        assert expected.strip() in out, (expected, out[:500])
