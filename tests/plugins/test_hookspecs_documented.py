"""Every hook specification is documented, and docs/hooks.md is the reference generated from those
docstrings by docs/gen_hooks.py (so it cannot drift from fsframe/hookspecs.py)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pluggy
import pytest

import fsframe.hookspecs as hs

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.fixture(scope="module")
def gen_hooks(load_script):
    return load_script("docs/gen_hooks.py")


def _specs():
    pm = pluggy.PluginManager(hs.PROJECT_NAME)
    pm.add_hookspecs(hs)
    return {name: getattr(hs, name) for name in dir(pm.hook) if name.startswith(f"{hs.PROJECT_NAME}_")}


def test_specs_found(gen_hooks):
    """The generator sees exactly the hooks pluggy registers from the module."""
    assert [n for n, _ in gen_hooks.hookspecs()] and {n for n, _ in gen_hooks.hookspecs()} == set(_specs())


def test_hookspecs_documented(gen_hooks):
    text = (DOCS / "hooks.md").read_text()
    for name, fn in _specs().items():
        doc = inspect.getdoc(fn)
        assert doc and len(doc.split()) >= 5, f"hookspec {name} has no docstring"
        assert ":return:" in doc, f"hookspec {name} does not document its return value"
        assert f"## `{name}(" in text, f"hookspec {name} is missing from docs/hooks.md"


def test_hooks_md_is_generated(gen_hooks):
    assert (DOCS / "hooks.md").read_text() == gen_hooks.render(), "run: python docs/gen_hooks.py"
    assert gen_hooks.main(["--check"]) == 0


def test_guard_fails_on_an_undocumented_spec(gen_hooks, monkeypatch):
    """The check is live: a new, undocumented hookspec makes the generated file differ."""

    @hs.hookspec
    def fsframe_register_widgets():
        pass

    monkeypatch.setattr(hs, "fsframe_register_widgets", fsframe_register_widgets, raising=False)
    assert "fsframe_register_widgets" in [n for n, _ in gen_hooks.hookspecs()]
    assert "(undocumented)" in gen_hooks.render()
    assert gen_hooks.main(["--check"]) == 1
