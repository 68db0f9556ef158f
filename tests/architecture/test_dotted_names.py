"""Every dotted name ``fsframe.x.y`` (or a built-in plugin's, ``fsframe_mpm.x``) written in the
package's docstrings and comments, the plugins', the benchmark scripts', README.md and docs/*.md
names an importable object, cited at its home: a name reached through a module that only imports it
(``fsframe.fitting.check_task``, re-exported after its move to ``fsframe.fit_inputs``) still
resolves, but sends a reader to the wrong file, and fails here too. A package's ``__init__`` may
re-export (``fsframe.fit``, ``fsframe.backends.certify``: the public names).

Two kinds of names are not objects and are accepted: the optional methods of a formulation's
protocols (``fsframe.Formulation.with_bounds``: :data:`fsframe.formulation.PROTOCOLS`, which the
base class does not define) and the placeholders of ``PLACEHOLDERS``."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import re
import types
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = tuple(sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").is_file()))
NAME = re.compile(r"(?<![\w./\-])(?:fsframe|" + "|".join(PLUGINS) + r")(?:\.[A-Za-z_]\w*)+")
PLACEHOLDERS = {"fsframe.x": "docs/architecture.md: a module by name, in prose",
                "fsframe.X": "docs/performance.md: `import fsframe.X`, any submodule"}


def _scanned() -> list[Path]:
    return sorted([*(ROOT / "fsframe").rglob("*.py"), *(ROOT / "plugins").rglob("*.py"),
                   *(ROOT / "benchmarks").glob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"])


def _protocol_method(owner, name: str) -> bool:
    from fsframe.formulation import PROTOCOLS, Formulation

    return owner is Formulation and any(name in names for names in PROTOCOLS.values())


def _field(owner, name: str) -> bool:
    """``name`` is a field of the class ``owner`` that is not a class attribute (attrs, dataclass)."""
    if not isinstance(owner, type):
        return False
    names = set(getattr(owner, "__annotations__", {}))
    if attrs.has(owner):
        names |= {f.name for f in attrs.fields(owner)}
    if dataclasses.is_dataclass(owner):
        names |= {f.name for f in dataclasses.fields(owner)}
    return name in names


def problem(name: str) -> str | None:
    """Why the dotted ``name`` is a wrong citation, or ``None`` when it names an object at its home."""
    if name in PLACEHOLDERS:
        return None
    parts = name.split(".")
    if "__main__" in parts:  # importing it would run the command line
        return None if importlib.util.find_spec(name) else "no such module"
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
            break
        except ModuleNotFoundError:
            continue
    else:
        return "no such module"
    owner = obj
    for j, part in enumerate(parts[i:], start=i):
        owner, obj = obj, getattr(obj, part, None)
        if obj is None:
            last = j == len(parts) - 1
            if last and (_field(owner, part) or _protocol_method(owner, part)):
                return None
            return f"{'.'.join(parts[:j])} has no attribute {part!r}"
    home = getattr(obj, "__module__", None)
    if (isinstance(owner, types.ModuleType) and not hasattr(owner, "__path__") and isinstance(home, str)
            and home.split(".")[0] in ("fsframe", *PLUGINS) and home != owner.__name__):
        return f"imported into {owner.__name__}; its home is {home}.{parts[-1]}"
    return None


def citations(text: str) -> list[str]:
    return [m.group(0) for m in NAME.finditer(text)]


def test_every_dotted_name_is_an_object_at_its_home():
    wrong = []
    for path in _scanned():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in citations(line):
                why = problem(name)
                if why:
                    wrong.append(f"{path.relative_to(ROOT)}:{n}: {name}: {why}")
    assert not wrong, "\n".join(wrong)


def test_the_scan_covers_the_tree():
    scanned = {p.relative_to(ROOT).parts[0] for p in _scanned()}
    assert scanned == {"fsframe", "plugins", "benchmarks", "docs", "README.md"}
    assert {"fsframe_mpm", "fsframe_svm"} <= set(PLUGINS)


@pytest.mark.parametrize(("text", "why"), [
    (":func:`fsframe.fit_inputs.check_tasks`", "has no attribute 'check_tasks'"),  # a typo
    ("(:func:`fsframe.fitting.check_task`)", "its home is fsframe.fit_inputs.check_task"),  # moved
    ("``fsframe.loops.base.IterRecord``", "its home is fsframe.loops.records.IterRecord"),
    ("`fsframe.evaluation.executor.execute`", "has no attribute 'execute'"),
    ("fsframe_mpm.bound.largest_bounds", "has no attribute 'largest_bounds'"),
    ("`fsframe.nosuchmodule.fit`", "has no attribute 'nosuchmodule'"),
])
def test_a_wrong_or_moved_name_is_seen(text, why):
    (name,) = citations(text)
    assert why in (problem(name) or "")


@pytest.mark.parametrize("text", [
    ":func:`fsframe.fit`", "`fsframe.backends.certify`", ":func:`~fsframe.fit_inputs.check_task`",
    ":attr:`FitResult.facts <fsframe.results.FitResult.facts>`", ":meth:`fsframe.Formulation.with_bounds`",
    "``fsframe.backends.box_qp_pdas``", "fsframe_mpm.bound.largest_bound",
])
def test_a_name_at_its_home_passes(text):
    (name,) = citations(text)
    assert problem(name) is None


@pytest.mark.parametrize("text", ["plugins/fsframe-example-plugin", "fsframe/fitting.py", "tests.fsframe.x",
                                  "fsframe_capped.py"])
def test_paths_and_foreign_names_are_not_citations(text):
    assert citations(text) == []
