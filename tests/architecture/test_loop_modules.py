"""The loop package keeps its template's concerns apart and its imports one way, as
docs/architecture.md (layer 4) says: ``fsframe.loops.base`` (the template) imports only its parts
(:data:`PARTS`: the settle step, the separation stop, the per-iterate measures, the requirement
checks, the records, the support rule, the tie-break); a part imports no loop, nor the template,
nor another part but the support rule; every other module of the package (the loops,
``monitoring``) sits above the template. And the page names every module of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fsframe" / "loops"
PARTS = {"settle", "separation", "measures", "requirements", "records", "selection", "ties"}
"""The template's parts, each a concern of its own that ``base`` imports."""
SHARED = {"selection"}
"""The parts the other parts may import (the support rule)."""


def _modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def sibling_imports(source: str) -> set[str]:
    """The modules of the same package that ``source`` imports anywhere (a function, a
    ``TYPE_CHECKING`` block too): ``from .x import ...``, ``from . import x``, ``from .x.y import``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(a.name for a in node.names)
    return found


def wrong_imports(sources: dict[str, str]) -> list[str]:
    """What breaks the rule of the module docstring, one line per import, for ``sources``
    (module name -> its text)."""
    out = []
    for name, source in sorted(sources.items()):
        got = sibling_imports(source)
        if name == "base":
            allowed = PARTS
        elif name in PARTS:
            allowed = SHARED - {name}
        else:
            continue  # a loop or monitoring: above the template, anything below it
        out.extend(f"fsframe.loops.{name} imports fsframe.loops.{m}" for m in sorted(got - allowed))
    return out


def test_the_template_and_its_parts_import_one_way():
    sources = {m: (PACKAGE / f"{m}.py").read_text(encoding="utf-8") for m in _modules()}
    assert PARTS <= set(sources)
    assert wrong_imports(sources) == []


@pytest.mark.parametrize(("sources", "expected"), [
    ({"settle": "from .base import OuterLoop\n"}, ["fsframe.loops.settle imports fsframe.loops.base"]),
    ({"measures": "if TYPE_CHECKING:\n    from .em import EM\n"}, ["fsframe.loops.measures imports fsframe.loops.em"]),
    ({"separation": "def f():\n    from . import settle\n"},
     ["fsframe.loops.separation imports fsframe.loops.settle"]),
    ({"base": "from .dca import DCA\nfrom .ties import Tiebreak\n"}, ["fsframe.loops.base imports fsframe.loops.dca"]),
    ({"ties": "from .selection import x\nfrom ..problem import Iterate\n", "em": "from .base import OuterLoop\n",
      "monitoring": "from .base import OuterLoop\n"}, []),
])
def test_a_wrong_import_is_seen(sources, expected):
    assert wrong_imports(sources) == expected


def test_every_loop_module_is_in_the_architecture_page():
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    layer = page[page.index("4. **Subproblem and loops**"):page.index("5. **Registry and methods**")]
    missing = [m for m in _modules() if f"`{m}`" not in layer and f"`loops.{m}`" not in layer]
    assert _modules() and not missing, f"docs/architecture.md (layer 4) lacks the loop modules {missing}"
