"""The code in README.md and docs/*.md runs as written (blocks preceded by a
``<!-- not-run: reason -->`` comment are skipped), and the documented third-party plugin works."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import fsframe
import fsframe.plugins

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(<!-- not-run[^>]*-->\s*)?```python\n(.*?)```", re.S)
PLUGIN_MARK = '"""Capped-L1 surrogate'


def _blocks():
    for path in DOCS:
        for i, m in enumerate(BLOCK.finditer(path.read_text())):
            skipped, code = m.group(1), m.group(2)
            if skipped or code.lstrip().startswith(PLUGIN_MARK):
                continue
            yield pytest.param(code, id=f"{path.name}[{i}]")


@pytest.mark.parametrize("code", list(_blocks()))
def test_doc_block_runs(code):
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})


def test_every_block_asserts_what_it_shows():
    """A block that only prints checks nothing when the suite runs it: each asserts what the text
    around it says it shows (the numbers in its comments, the shapes, the selection)."""
    silent = [p.id for p in _blocks() if not re.search(r"^\s*(assert|raise)\b", p.values[0], re.M)]
    assert not silent, f"doc blocks without an assertion: {silent}"


def _plugin_source() -> str:
    text = (ROOT / "README.md").read_text()
    return next(m.group(2) for m in BLOCK.finditer(text) if m.group(2).lstrip().startswith(PLUGIN_MARK))


@pytest.fixture
def capped_plugin():
    mod = types.ModuleType("fsframe_capped_doc")
    exec(compile(_plugin_source(), "fsframe_capped.py", "exec"), mod.__dict__)
    sys.modules[mod.__name__] = mod
    name = fsframe.plugins.register(mod, name="capped-doc")
    try:
        yield mod
    finally:
        fsframe.plugins.unregister(name)
        sys.modules.pop(mod.__name__, None)


def test_documented_plugin_is_short():
    # the README promises a complete plugin (pyproject entry point + module) in under 40 lines
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Write a plugin"):]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    code = [ln for ln in (toml + _plugin_source()).splitlines() if ln.strip()]
    assert len(code) < 40


def test_documented_plugin_registers_and_runs(capped_plugin):
    names = {m["name"]: m for m in fsframe.list_methods()}
    assert names["capped-svm"]["plugin"] == "capped-doc"
    s = capped_plugin.CappedL1(a=0.5)
    t = np.array([0.0, 0.25, 0.5, 2.0])
    np.testing.assert_allclose(s.phi(t), [0.0, 0.5, 1.0, 1.0])
    split = s.dc_split()
    np.testing.assert_allclose(split.g(t) - split.h(t), s.phi(t))
    rng = np.random.default_rng(3)
    X = rng.standard_normal((60, 8))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)
    r = fsframe.fit(X, y, method="capped-svm", a=0.05)
    # the informative features are found and the objective is loss + sum phi, recomputed here
    assert {0, 1} <= set(r.selected.tolist())
    margins = y * (X @ r.coef + r.intercept)
    loss = float(np.maximum(0.0, 1.0 - margins).sum())
    penalty = float(capped_plugin.CappedL1(a=0.05).phi(np.abs(r.coef)).sum())
    assert r.objective == pytest.approx(loss + penalty, rel=1e-6, abs=1e-6)
    assert r.monotone


@pytest.mark.parametrize("a", [0.1, 0.05, 0.5])
def test_documented_plugin_passes_the_kit(capped_plugin, a):
    """docs/plugins.md tells authors to run the conformance kit: the README's own surrogate
    passes it, kink at t = a included (a grid point for these a), and so does DCA with it."""
    from fsframe.loops import DCA
    from fsframe.testing import check_loop, check_surrogate

    sur = capped_plugin.CappedL1(a=a)
    ran = check_surrogate(sur)
    assert {"derivative=fd", "dc grad_h=fd", "dc g-h=phi"} <= set(ran)
    assert "derivative=fd" in check_surrogate(sur, t=[a, a * (1 + 1e-12), a * (1 - 1e-12)])
    if a == 0.5:
        assert f"weights {sur} (lin = g's slope, lin_w = -grad_h(w_k))" in check_loop(DCA(), sur)


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(path):
    # every relative link in README.md and docs/*.md names a file of the checkout
    missing = [target for target in LINK.findall(path.read_text())
               if "://" not in target and not target.startswith("mailto:")
               and not (path.parent / target).exists()]
    assert not missing, f"{path.name} links to missing files: {missing}"
