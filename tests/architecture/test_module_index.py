"""The evaluation package's module index stays whole: every module of ``fsframe/evaluation/`` is
named, by concern, in the package docstring and in docs/architecture.md (layer 7), so a module
split out or added is placed where a reader looks for it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fsframe" / "evaluation"


def _modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_every_evaluation_module_is_in_the_package_docstring():
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text()))
    index = doc[doc.index("Modules, by concern:"):]
    missing = [m for m in _modules() if f":mod:`~.{m}`" not in index and f":mod:`~fsframe.evaluation.{m}`" not in index]
    assert _modules() and not missing, f"fsframe/evaluation/__init__.py's module index lacks {missing}"


def test_every_evaluation_module_is_in_the_architecture_page():
    page = (ROOT / "docs" / "architecture.md").read_text()
    layer = page[page.index("7. **Evaluation, estimator, conformance kit**"):page.index("8. **CLI commands**")]
    missing = [m for m in _modules() if f"`{m}`" not in layer]
    assert not missing, f"docs/architecture.md (layer 7) lacks the evaluation modules {missing}"
