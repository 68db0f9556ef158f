"""Regenerate, or check, the outputs that docs/cli.md shows for its example commands.

    python docs/gen_cli_outputs.py                  # rerun the examples, rewrite their outputs in docs/cli.md
    python docs/gen_cli_outputs.py --check          # exit 1 when a documented output is not what the command prints
    python docs/gen_cli_outputs.py --only "l1-mpm"  # only the examples whose command contains this text

An example is a ``$ fsframe select ...`` or ``$ fsframe compare ...`` line in a ```` ```text ````
block of docs/cli.md, with the lines after it up to the next ``$ fsframe`` line or the end of the
block; a ``$ head -N FILE`` line in between shows the first lines of a file the command wrote. A
line ``...`` stands for lines left out (at most one per example): the lines before it are the first
lines of the output, the lines after it the last ones. The output is stdout and stderr as a
terminal shows them, in the order they were written.

The examples that succeed on data a reader has — a bundled dataset, or ``wdbc.data``, which the
text says is the UCI file of the bundled breast-cancer data (written here from it, in the UCI
layout) — are rerun in this process with the exit status 0, in a temporary folder. What varies
between runs of the same code, or between machines, is masked before comparing: timings (the
``time`` line, ``seconds`` rows and columns, ``total ... s``), the solver's version, and round-off
(a number below 1e-6 written in e-notation: KKT gaps, residuals). Every other figure — accuracies,
weights, objectives, counts, stability — must be what the command prints today.
``tests/cli/test_doc_outputs.py`` runs the check; error examples (exit status 2) are checked by
``tests/cli/test_doc_examples.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

import attrs

DOC = Path(__file__).resolve().parent / "cli.md"
BUNDLED = {"breast_cancer", "wine", "iris", "digits", "synthetic", "diabetes"}
MADE_HERE = {"wdbc.data"}
ELLIPSIS = "..."

_BLOCK = re.compile(r"```text\n(.*?)```", re.S)
_VERSION = re.compile(r"\b(highs|ecos|clarabel) \d+(?:\.\d+)+")
_TOTAL = re.compile(r"\btotal \d+(?:\.\d+)? s\b")
_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_ROUNDOFF = re.compile(r"-?\d(?:\.\d+)?e-(?:0?[7-9]|[1-9]\d)\b")  # |x| < 1e-6 in e-notation: KKT gaps, residuals


@attrs.frozen
class Example:
    """One documented command: its line in docs/cli.md, the command, the ``head`` commands that
    follow it (``(line, n, file)``) and the output shown (``start:end`` of the file's lines)."""

    line: int
    command: str
    heads: tuple
    start: int
    end: int
    shows_error: bool = False

    @property
    def argv(self) -> list:
        return shlex.split(self.command)[1:]

    @property
    def runnable(self) -> bool:
        """A successful command on data a reader has (an error example is not rerun here)."""
        argv = self.argv
        on_data = argv[1] in BUNDLED or argv[1] in MADE_HERE
        return not self.shows_error and argv[0] in ("select", "compare") and on_data


def examples(text: str) -> list:
    """Every ``$ fsframe select|compare`` example of the text (runnable or not)."""
    out = []
    for block in _BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(1))
        body = block.group(1).split("\n")[:-1]
        starts = [i for i, ln in enumerate(body) if ln.startswith("$ fsframe ")]
        for k, i in enumerate(starts):
            stop = starts[k + 1] if k + 1 < len(starts) else len(body)
            cmd = body[i][2:]
            if shlex.split(cmd)[1] not in ("select", "compare"):
                continue
            heads = tuple((first + j, int(m.group(1)), m.group(2)) for j in range(i + 1, stop)
                          if (m := re.fullmatch(r"\$ head -(\d+) (\S+)", body[j])))
            error = any(re.match(r"fsframe( \w+)?: error", ln) for ln in body[i + 1:stop])
            out.append(Example(first + i, cmd, heads, first + i + 1, first + stop, error))
    return out


def _table_columns(lines: list) -> dict:
    """``{row index: (separator, column indices)}`` of the rows of the tables in ``lines`` whose
    header (a line without digits) names a ``seconds`` or ``total_seconds`` column: text tables
    split on runs of two spaces, Markdown tables on ``|``, CSV on ``,``; a table ends at a blank
    line."""
    masked, table = {}, None
    for i, ln in enumerate(lines):
        if not ln.strip():
            table = None
        elif not re.search(r"\d", ln) and (found := _timing_header(ln.strip())):
            table = found
        elif table is not None:
            masked[i] = table
    return masked


def _timing_header(line: str):
    for pattern in (r"\|", ",", r" {2,}"):
        parts = [p.strip() for p in re.split(pattern, line)]
        cols = tuple(j for j, p in enumerate(parts) if p in ("seconds", "total_seconds"))
        if cols and len(parts) > 2:
            return pattern, cols
    return None


def mask(lines: list) -> list:
    """``lines`` with what varies between runs of the same code replaced by ``#``, and runs of
    spaces made one (a table's alignment follows its figures, which are compared)."""
    cols = _table_columns(lines)
    out = []
    for i, ln in enumerate(lines):
        ln = _VERSION.sub(lambda m: f"{m.group(1)} #", ln.strip())
        ln = _TOTAL.sub("total # s", ln)
        ln = _ROUNDOFF.sub("~0", ln)
        if ln.startswith("time ") or ln.startswith("seconds "):
            ln = _NUMBER.sub("#", ln)
        if i in cols:
            pattern, which = cols[i]
            fields = [f.strip() for f in re.split(pattern, ln)]
            for j in which:
                if j < len(fields):
                    fields[j] = _NUMBER.sub("#", fields[j])
            ln = {r"\|": "|", ",": ","}.get(pattern, "  ").join(fields)
        out.append(re.sub(r"\s+", " ", ln))
    return out


def write_wdbc(folder: Path) -> None:
    """``wdbc.data`` as the UCI repository distributes it: id, diagnosis (M/B), 30 features, no
    header — the bundled breast-cancer data (scikit-learn's copy of the same file)."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    rows = [",".join([str(842000 + i), "M" if c == 0 else "B", *map(repr, x.tolist())])
            for i, (x, c) in enumerate(zip(X, y))]
    (folder / "wdbc.data").write_text("\n".join(rows) + "\n")


def run(example: Example, folder: Path) -> list:
    """The example's output lines (stdout and stderr in writing order, then its ``head``
    commands' lines), run in ``folder``; AssertionError unless the exit status is 0."""
    from fsframe.cli import main

    buf = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            code = main(example.argv)
        lines = buf.getvalue().rstrip("\n").split("\n")
        for _, n, name in example.heads:
            lines.append(f"$ head -{n} {name}")
            lines += (folder / name).read_text().split("\n")[:n]
    finally:
        os.chdir(cwd)
    assert code == 0, f"docs/cli.md line {example.line + 1}: `{example.command}` exited {code}:\n{buf.getvalue()}"
    return lines


def _shown(doc_lines: list) -> tuple:
    """``(first lines, last lines)`` of a documented output (``(all, None)`` without ``...``)."""
    lines = _strip_blank(doc_lines)
    if ELLIPSIS not in lines:
        return lines, None
    i = lines.index(ELLIPSIS)
    return lines[:i], lines[i + 1:]


def compare(doc_lines: list, got: list) -> str | None:
    """``None`` when the documented lines are the output (masked), else the first difference."""
    first, last = _shown(doc_lines)
    pairs = list(zip(first, got[:len(first)]))
    if last is None:
        if len(first) != len(got):
            return f"{len(first)} lines shown, the command printed {len(got)}"
    elif last:
        if len(first) + len(last) > len(got):
            return f"{len(first) + len(last)} lines shown, the command printed {len(got)}"
        pairs += list(zip(last, got[len(got) - len(last):]))
    shown, printed = [p[0] for p in pairs], [p[1] for p in pairs]
    for a, b in zip(mask(shown), mask(printed)):
        if a != b:
            return f"shown:   {a}\nprinted: {b}"
    return None


def regenerate(doc_lines: list, got: list) -> list:
    """The documented lines with the output printed now (keeping a ``...`` where it was)."""
    first, last = _shown(doc_lines)
    if last is None:
        return list(got)
    return got[:len(first)] + [ELLIPSIS] + (got[len(got) - len(last):] if last else [])


def _outputs(text: str, folder: Path, only=None) -> list:
    """``(example, documented lines, printed lines)`` of every runnable example (``only``: a
    predicate choosing some)."""
    lines = text.split("\n")
    write_wdbc(folder)
    return [(ex, lines[ex.start:ex.end], run(ex, folder)) for ex in examples(text)
            if ex.runnable and (only is None or only(ex))]


def check(text: str | None = None, folder: Path | None = None, only=None) -> list:
    """The differences between docs/cli.md and what its runnable examples print (empty: none)."""
    text = DOC.read_text() if text is None else text
    with tempfile.TemporaryDirectory() as tmp:
        problems = []
        for ex, doc, got in _outputs(text, Path(folder or tmp), only):
            diff = compare(doc, got)
            if diff:
                problems.append(f"docs/cli.md line {ex.line + 1}: `{ex.command}`\n{diff}")
        return problems


def rewrite(only=None) -> int:
    """Rewrite docs/cli.md with the outputs printed now (of the examples ``only`` chooses);
    returns the number of examples rewritten."""
    text = DOC.read_text()
    lines = text.split("\n")
    with tempfile.TemporaryDirectory() as tmp:
        done = _outputs(text, Path(tmp), only)
    for ex, _, got in sorted(done, key=lambda d: -d[0].start):  # from the end: line numbers stay valid
        shown = lines[ex.start:ex.end]
        trailing = len(shown) - len(_strip_blank(shown))
        lines[ex.start:ex.end] = regenerate(shown, got) + [""] * trailing
    DOC.write_text("\n".join(lines))
    return len(done)


def _strip_blank(lines: list) -> list:
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="compare instead of rewriting; exit 1 on a difference")
    ap.add_argument("--only", help="only the examples whose command contains this text")
    opts = ap.parse_args()
    chosen = None if opts.only is None else (lambda ex: opts.only in ex.command)
    if opts.check:
        found = check(only=chosen)
        print("\n\n".join(found) if found else "docs/cli.md: every runnable example prints what it shows")
        sys.exit(1 if found else 0)
    print(f"rewrote the output of {rewrite(chosen)} examples in {DOC}")
