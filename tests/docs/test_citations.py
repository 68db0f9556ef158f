"""Code, docstrings and docs cite only what a user of the repository has: ``docs/...``, the papers
by name and equation number. A citation of a file outside the repository (the project's internal
design notes, a folder beside the checkout, a path on one machine) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("fsframe", "plugins", "docs", "README.md")
SUFFIXES = {".py", ".md", ".toml", ".txt", ".rst", ".cfg"}

OUTSIDE = re.compile(
    r"\.\.[/\\]shared"                        # a folder beside the checkout
    r"|/work/"                                # a path on one machine
    r"|\b(?:DESIGN|STYLE|MEASUREMENTS)(?:\.md\b|\s*§)"  # internal notes, by file or section
    r"|\bMEASUREMENTS\b"
)


def _files():
    for name in SCANNED:
        p = ROOT / name
        if p.is_file():
            yield p
        else:
            yield from sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in SUFFIXES
                              and "__pycache__" not in f.parts)


def outside_citations(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every citation of a file outside the repository in ``text``."""
    return [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]


def test_no_citation_of_files_outside_the_repository():
    found = {str(p.relative_to(ROOT)): hits for p in _files()
             if (hits := outside_citations(p.read_text(encoding="utf-8", errors="replace")))}
    assert not found, f"citations of files a repository user does not have: {found}"


def test_the_scan_covers_the_tree():
    names = {str(p.relative_to(ROOT)) for p in _files()}
    assert {"README.md", "fsframe/estimator.py", "plugins/fsframe_mpm/moments.py", "docs/testing.md"} <= names


@pytest.mark.parametrize("line", [
    "Parameter shape (STYLE §5, scikit-learn's rules)",
    "no n x n matrix is ever formed (DESIGN §5).",
    'returned a wrong "optimal", see `MEASUREMENTS.md`',
    "Tests that read the files of `../shared/data` (Sonar, WDBC)",
    'path = "../../shared/data/sonar.csv"',
    "see /work/shared/papers/000.txt",
    "see DESIGN.md",
])
def test_the_pattern_sees_each_kind_of_citation(line):
    assert outside_citations(line)


@pytest.mark.parametrize("line", [
    "see docs/conic.md and paper 000 eq. 45",
    "the design of the compiler (docs/architecture.md)",
    "a shared 2-core machine; styles of plots",
    "the constraint matrices are shared (fsframe.slot.weighted_problem)",
])
def test_the_pattern_passes_ordinary_text(line):
    assert not outside_citations(line)
