"""Rules of the test suite itself, so that ``python -m pytest`` after the README's install is green
on every fresh clone and a green run means the checks ran:

* every third-party package a test imports is a dependency of fsframe or in the ``test`` extra,
  and no test skips itself because such a package failed to import (a broken install must fail,
  not turn 132 reference checks into skips); the one optional package is the example third-party
  plugin, whose tests docs/testing.md says are skipped without it;
* a hang fails its test with a traceback (pytest-timeout, in the ``test`` extra).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
OPTIONAL = {"fsframe_example_plugin"}  # the example third-party plugin (tests/plugins/fsframe-example-plugin)


def _requirement_names(reqs) -> set:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def _declared() -> set:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return _requirement_names(project["dependencies"]) | _requirement_names(project["optional-dependencies"]["test"])


def _local_modules() -> set:
    names = {p.stem for p in TESTS.rglob("*.py")} | {p.name for p in TESTS.rglob("*") if p.is_dir()}
    names |= {p.name for p in (ROOT / "plugins").iterdir() if p.is_dir()} | {"fsframe"}
    return names


def _imports(path: Path) -> set:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def test_every_imported_package_is_declared():
    declared = _declared()
    dists = importlib.metadata.packages_distributions()
    local = _local_modules() | OPTIONAL
    undeclared = {}
    for path in sorted(TESTS.rglob("*.py")):
        written = set(re.findall(r"(\w+)\.py\b", path.read_text()))  # modules the test writes itself
        for mod in _imports(path) - set(sys.stdlib_module_names) - local - written:
            names = {d.lower().replace("_", "-") for d in dists.get(mod, [mod])}
            if not names & declared:
                undeclared.setdefault(mod, []).append(str(path.relative_to(ROOT)))
    assert not undeclared, f"tests import packages that neither fsframe nor its test extra declares: {undeclared}"


def test_no_test_skips_for_a_missing_declared_package():
    calls = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip":
                name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else "?"
                if name.split(".")[0] not in OPTIONAL:
                    calls.append(f"{path.relative_to(ROOT)}:{node.lineno} importorskip({name!r})")
    assert not calls, f"import the package (it is declared), do not skip: {calls}"


def test_a_hang_fails_with_a_traceback(request):
    assert request.config.pluginmanager.hasplugin("timeout"), "pytest-timeout (the test extra) is not installed"
    timeout = float(request.config.getini("timeout"))
    assert 300 <= timeout <= 1800  # generous: the slowest test takes ~75 s on a loaded 2-core machine


@pytest.mark.parametrize("source, found", [
    ('cp = pytest.importorskip("cvxpy")', ["importorskip('cvxpy')"]),
    ('x = pytest.importorskip("fsframe_example_plugin")', []),
])
def test_the_skip_scan_sees_an_import_skip(tmp_path, monkeypatch, source, found):
    (tmp_path / "test_x.py").write_text(source + "\n")
    monkeypatch.setattr(sys.modules[__name__], "TESTS", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    if found:
        with pytest.raises(AssertionError, match=re.escape(found[0])):
            test_no_test_skips_for_a_missing_declared_package()
    else:
        test_no_test_skips_for_a_missing_declared_package()
