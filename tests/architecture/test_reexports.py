"""A module that says the names of the modules split out of it are "importable from here too"
keeps its word: every name of each such module's ``__all__`` is the same object from the old
import path, so imports written before a split keep working. The table names each re-exporting
module and the modules it re-exports; a module whose source makes the claim but is not in the
table fails, so a new split's claim is checked as soon as it is written."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

REEXPORTS = {
    "fsframe.dataset": ("fsframe.data_checks", "fsframe.data_diagnostics"),
    "fsframe.evaluation.paper": ("fsframe.evaluation.paper_numbers",),
    "fsframe.evaluation.protocols": ("fsframe.evaluation.evaluator",),
    "fsframe.fitting": ("fsframe.fit_inputs", "fsframe.fit_certificate", "fsframe.binary_fit"),
    "fsframe.loops.bound_search": ("fsframe.loops.bound_criteria", "fsframe.loops.bound_memo"),
}
CLAIM = re.compile(r"importable\s+from")


def _claiming_modules() -> set[str]:
    found = set()
    for path in (ROOT / "fsframe").rglob("*.py"):
        if CLAIM.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_claiming_reexports_is_checked():
    assert _claiming_modules() == set(REEXPORTS)


@pytest.mark.parametrize("old, new", [(old, new) for old, news in REEXPORTS.items() for new in news])
def test_every_name_a_module_says_it_reexports_imports_from_it(old, new):
    source = (ROOT / (old.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    assert new.rsplit(".", 1)[1] in source  # the module names what it re-exports
    new_module = importlib.import_module(new)
    namespace: dict = {}
    exec(f"from {old} import {', '.join(new_module.__all__)}", namespace)  # the import a user writes
    assert [name for name in new_module.__all__ if namespace[name] is not getattr(new_module, name)] == []
