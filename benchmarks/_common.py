"""Helpers shared by the benchmark scripts (imported as ``_common`` with this directory on
``sys.path``; the scripts put it there themselves)."""

from __future__ import annotations

from pathlib import Path


def write_section(doc: Path, begin: str, end: str, text: str, *, heading: str | None = None) -> None:
    """Replace what lies between the markers ``begin`` and ``end`` (each on a line of its own) in
    the Markdown file ``doc`` by ``text``, one line break either side. When ``doc`` lacks the
    markers they are appended, after ``heading`` (e.g. ``"## Against other libraries"``) if one is
    given; without a heading the missing markers are an error (a doc whose section was renamed
    must not grow a second copy of the table)."""
    body = doc.read_text()
    if begin not in body or end not in body:
        if heading is None:
            raise ValueError(f"{doc}: the markers {begin} and {end} are missing; add them where the section belongs")
        body = body.rstrip("\n") + f"\n\n{heading}\n\n{begin}\n{end}\n"
    head, rest = body.split(begin, 1)
    tail = rest.split(end, 1)[1]
    doc.write_text(f"{head}{begin}\n{text.strip(chr(10))}\n{end}{tail}")


def head_commit(root: Path) -> str:
    """The short hash of ``HEAD`` of the repository at ``root`` (``"unknown"`` outside git)."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
