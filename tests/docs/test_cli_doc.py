"""docs/cli.md against the tool: its list of commands and its count are the parser's commands,
each command's synopsis lists exactly the flags and arguments the parser accepts (``--help`` and
``--debug`` aside), every flag a documented command line uses (README.md, docs/*.md) exists for
its command, and the documented "unknown method" message is the one the tool prints."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import fsframe
from fsframe.cli import main
from fsframe.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NUMBERS = {3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
EVERYWHERE = {"-h", "--help", "--debug"}  # accepted by every command, documented once
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][A-Za-z0-9-]*|-[A-Za-z])(?![\w-])")
BLOCK = re.compile(r"```(\w*)\n(.*?)```", re.S)


def commands() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def accepted(parser: argparse.ArgumentParser) -> tuple[set, list, list]:
    """The option strings of a command, its options (each the set of its aliases, ``--method``
    and ``-m``) and its positional metavars."""
    options = [set(a.option_strings) for a in parser._actions if set(a.option_strings) - EVERYWHERE]
    positional = [a.metavar or a.dest.upper() for a in parser._actions if not a.option_strings]
    return set().union(*options), options, positional


def synopses(text: str, names) -> dict[str, list[str]]:
    """``{command: [synopsis, ...]}``: in ```text blocks, a line ``fsframe COMMAND ...`` (no ``$``
    prompt, no ``fsframe COMMAND:`` message) and the indented lines continuing it."""
    found: dict[str, list[str]] = {}
    start = re.compile(r"^fsframe (" + "|".join(map(re.escape, names)) + r")(?=\s|$)")
    for lang, body in BLOCK.findall(text):
        if lang != "text":
            continue
        current = None
        for line in body.splitlines():
            m = start.match(line)
            if m:
                current = [m.group(1), line]
                found.setdefault(current[0], []).append("")
            elif current is not None and line[:1].isspace() and line.strip():
                pass
            else:
                current = None
                continue
            found[current[0]][-1] += " " + line.strip()
    return found


def test_command_list_and_count_are_the_parsers():
    cmds = commands()
    text = CLI_MD.read_text()
    m = re.search(r"has (\w+) commands", text)
    assert m and m.group(1) == NUMBERS[len(cmds)], (m and m.group(1), len(cmds))
    table = text[m.end():text.index("\n\n", text.index("| command |", m.end()) + 1)]
    listed = re.findall(r"^\| `fsframe (\w+)", table, re.M)
    assert listed == list(cmds), (listed, list(cmds))


@pytest.mark.parametrize("name", list(commands()))
def test_synopsis_lists_every_flag(name):
    found = synopses(CLI_MD.read_text(), list(commands()))
    assert len(found.get(name, [])) == 1, f"docs/cli.md needs exactly one synopsis of 'fsframe {name}': {found.get(name)}"
    (text,) = found[name]
    flags, options, positional = accepted(commands()[name])
    documented = set(FLAG.findall(text)) - EVERYWHERE
    missing = sorted("/".join(sorted(o)) for o in options if not o & documented)  # an alias suffices
    assert not missing and documented <= flags, {"missing from the synopsis": missing,
                                                 "not accepted by the parser": sorted(documented - flags)}
    for metavar in positional:
        assert re.search(rf"\b{metavar}\b", text), (metavar, text)


def _command_lines():
    """``(doc, command, line)`` for every documented invocation: ``$ fsframe ...`` in text blocks,
    ``fsframe ...`` in bash blocks (comments removed)."""
    names = list(commands())
    pat = re.compile(r"^(?:\$ )?fsframe (" + "|".join(map(re.escape, names)) + r")(?=\s|$)(.*)$")
    for path in DOCS:
        for lang, body in BLOCK.findall(path.read_text()):
            for line in body.splitlines():
                if lang == "text" and not line.startswith("$ "):
                    continue  # synopses are checked above, outputs are not command lines
                if lang not in ("text", "bash"):
                    continue
                m = pat.match(line.split("  #")[0].strip())
                if m:
                    yield path.name, m.group(1), m.group(2)


def test_documented_command_lines_use_flags_their_command_has():
    cmds = {n: accepted(p)[0] | EVERYWHERE for n, p in commands().items()}  # -h/--help, --debug too
    bad = [(doc, cmd, sorted(set(FLAG.findall(rest)) - cmds[cmd])) for doc, cmd, rest in _command_lines()
           if set(FLAG.findall(rest)) - cmds[cmd]]
    assert not bad, bad
    assert sum(1 for _ in _command_lines()) > 20  # the scan sees the examples


def test_unknown_method_message_lists_the_registered_methods(capsys):
    """The documented error is the tool's own output (with the methods of fsframe and of the
    example plugin the test command installs)."""
    dists = {m.distribution for m in fsframe.list_methods()}
    if not dists <= {"fsframe", "fsframe-example-plugin"}:
        pytest.skip(f"other plugins installed ({sorted(dists)}): the listing differs from the documented one")
    line = next(ln for ln in CLI_MD.read_text().splitlines() if ln.startswith("fsframe: error: unknown method 'nope'"))
    assert main(["select", "iris", "--method", "nope"]) == 2
    assert capsys.readouterr().err.strip() == line
