"""Broken or conflicting plugins, simulated with entry points that fsframe discovers as if
installed: a broken plugin is recorded and skipped (listing and every other method keep
working), a name registered twice raises PluginError naming both providers, and
FSFRAME_DISABLED_PLUGINS / FSFRAME_DISABLE_PLUGIN_AUTOLOAD take effect. The registry is rebuilt
before and after each test."""

from __future__ import annotations

import importlib.metadata as md
import types

import attrs
import numpy as np
import pytest

import fsframe
import fsframe.plugins
from fsframe.errors import FsframeWarning, PluginError
from fsframe.surrogates.base import Surrogate

REAL_ENTRY_POINTS = md.entry_points


@attrs.frozen
class DuplicateExp(Surrogate):
    """A second surrogate named "exp"."""

    name = "exp"

    def phi(self, t):
        return np.asarray(t, dtype=float)


class FakeEntryPoint:
    """Quacks like importlib.metadata.EntryPoint: ``name``, ``dist``, ``load()``."""

    def __init__(self, name, load, dist_name=None):
        self.name = name
        self._load = load
        self.dist = None if dist_name is None else types.SimpleNamespace(metadata={"Name": dist_name}, version="9.9")

    def load(self):
        return self._load()


def plugin_module(name, **hooks):
    mod = types.ModuleType(name)
    for hook, fn in hooks.items():
        setattr(mod, hook, fsframe.hookimpl(fn))
    return mod


def _raise(exc):
    def load():
        raise exc

    return load


@pytest.fixture
def installed(monkeypatch, fresh_registry):
    """``installed(*entry_points)``: pretend these are installed next to the real ones."""

    def install(*eps):
        def entry_points(**kw):
            found = list(REAL_ENTRY_POINTS(**kw))
            return found + list(eps) if kw.get("group") == "fsframe" else found

        monkeypatch.setattr(fsframe.plugins.md, "entry_points", entry_points)
        fsframe.plugins.reset_registry()

    return install


def _still_works():
    """Listing works and a built-in method still fits, with the right value (toy set: 0.5)."""
    from fsframe.testing import toy_data

    names = [m["name"] for m in fsframe.list_methods()]
    assert "l1-svm" in names and "fsv" in names
    X, y = toy_data()
    assert fsframe.fit(X, y, method="l1-svm", C=10.0).objective == pytest.approx(0.5)


def _broken(name):
    return [b for b in fsframe.plugins.get_registry().broken if b.plugin == name]


def test_import_error_is_recorded_and_skipped(installed):
    installed(FakeEntryPoint("needs-missing-dep", _raise(ModuleNotFoundError("No module named 'torch'")),
                             dist_name="fsframe-torch"))
    with pytest.warns(FsframeWarning, match="'needs-missing-dep' failed to load.*torch"):
        _still_works()
    (b,) = _broken("needs-missing-dep")
    assert "ModuleNotFoundError" in b.error and b.distribution == "fsframe-torch"
    with pytest.raises(PluginError, match="broken plugin 'needs-missing-dep'"):
        fsframe.plugins.get_registry().check()


def test_hook_that_raises_is_recorded_and_skipped(installed):
    def boom():
        raise RuntimeError("kaboom")

    mod = plugin_module("raising", fsframe_register_methods=boom,
                        fsframe_register_surrogates=lambda: [])
    installed(FakeEntryPoint("raising", lambda: mod))
    with pytest.warns(FsframeWarning, match=r"'raising' is broken.*fsframe_register_methods\(\) raised RuntimeError: kaboom"):
        _still_works()
    assert len(_broken("raising")) == 1


def test_hook_returning_a_non_component_is_recorded_and_skipped(installed):
    @attrs.frozen
    class Unnamed(Surrogate):
        def phi(self, t):
            return t

    mod = plugin_module("junk", fsframe_register_surrogates=lambda: [fsframe.surrogates.ExpSurrogate(), Unnamed, "exp"],
                        fsframe_register_methods=lambda: [{"name": "dict-method"}])
    installed(FakeEntryPoint("junk", lambda: mod))
    with pytest.warns(FsframeWarning, match="'junk' is broken"):
        _still_works()
    errors = " ".join(b.error for b in _broken("junk"))
    assert "not a named Surrogate" in errors and "not a named MethodSpec" in errors
    assert "dict-method" not in fsframe.plugins.get_registry().names("method")
    assert fsframe.plugins.get_registry().get("surrogate", "exp") is fsframe.surrogates.ExpSurrogate


def test_misspelled_hook_does_not_break_listing(installed):
    """A plugin implementing a hook that fsframe does not specify (a typo) is a broken plugin,
    not a broken registry."""
    mod = plugin_module("typo", fsframe_register_surrogate=lambda: [DuplicateExp])
    installed(FakeEntryPoint("typo", lambda: mod))
    with pytest.warns(FsframeWarning, match="typo"):
        _still_works()
    assert _broken("typo")


def test_duplicate_name_names_both_providers(installed):
    mod = plugin_module("dupe", fsframe_register_surrogates=lambda: [DuplicateExp])
    installed(FakeEntryPoint("dupe", lambda: mod, dist_name="fsframe-dupe"))
    with pytest.warns(FsframeWarning, match="surrogate 'exp' is registered by 'fsframe.surrogates'.*and 'dupe'"):
        reg = fsframe.plugins.get_registry()
    with pytest.raises(PluginError, match="surrogate 'exp' is registered by more than one plugin") as exc:
        reg.get("surrogate", "exp")
    assert "'dupe' (fsframe-dupe)" in str(exc.value) and "'fsframe.surrogates' (fsframe)" in str(exc.value)
    with pytest.raises(PluginError, match="FSFRAME_DISABLED_PLUGINS"):
        fsframe.fit(*_toy(), method="fsv")
    # methods that do not use the conflicting name keep working
    assert fsframe.fit(*_toy(), method="l1-svm", C=10.0).objective == pytest.approx(0.5)


def test_two_distributions_with_one_entry_point_name(installed):
    """Two packages declaring the same entry-point name: the first loads, the second is a
    broken plugin naming both distributions (not silently dropped)."""
    first = plugin_module("capA", fsframe_register_methods=lambda: [
        fsframe.MethodSpec(name="from-a", formulation="hinge", surrogate="exp", loop="reweighted-l1")])
    second = plugin_module("capB", fsframe_register_methods=lambda: [
        fsframe.MethodSpec(name="from-b", formulation="hinge", surrogate="exp", loop="reweighted-l1")])
    installed(FakeEntryPoint("capped", lambda: first, dist_name="fsframe-capped-a"),
              FakeEntryPoint("capped", lambda: second, dist_name="fsframe-capped-b"))
    with pytest.warns(FsframeWarning, match="'fsframe-capped-b' has the same name as one of 'fsframe-capped-a'"):
        names = [m["name"] for m in fsframe.list_methods()]
    assert "from-a" in names and "from-b" not in names
    (b,) = _broken("capped")
    assert b.distribution == "fsframe-capped-b" and "rename one" in b.error


def test_runtime_plugin_with_a_bad_hook_signature_breaks_only_itself(fresh_registry):
    def fsframe_register_methods(foo):  # the hookspec takes no argument
        return []

    mod = plugin_module("badsig", fsframe_register_methods=fsframe_register_methods)
    name = fsframe.plugins.register(mod, name="badsig")
    try:
        with pytest.warns(FsframeWarning, match="'badsig' could not be registered"):
            _still_works()
        assert _broken("badsig") and "foo" in _broken("badsig")[0].error
    finally:
        fsframe.plugins.unregister(name)


def _toy():
    from fsframe.testing import toy_data

    return toy_data()


def test_disabled_plugins_env(installed, monkeypatch):
    mod = plugin_module("dupe", fsframe_register_surrogates=lambda: [DuplicateExp])
    installed(FakeEntryPoint("dupe", lambda: mod))
    monkeypatch.setenv("FSFRAME_DISABLED_PLUGINS", " dupe , example")
    fsframe.plugins.reset_registry()
    reg = fsframe.plugins.get_registry()
    assert reg.get("surrogate", "exp") is fsframe.surrogates.ExpSurrogate  # no conflict: dupe blocked
    assert "scad-svm" not in reg.names("method") and "scad" not in reg.names("surrogate")
    _still_works()


def test_disabling_the_builtin_method_plugin(monkeypatch, fresh_registry):
    """The built-in SVM methods come through the same entry-point group: blocking it removes them."""
    monkeypatch.setenv("FSFRAME_DISABLED_PLUGINS", "svm")
    fsframe.plugins.reset_registry()
    reg = fsframe.plugins.get_registry()
    assert "hinge" not in reg.names("formulation") and "fsv" not in reg.names("method")
    assert "exp" in reg.names("surrogate")  # core components stay
    with pytest.raises(fsframe.errors.UnknownComponentError, match="unknown method 'fsv'"):
        fsframe.fit(*_toy(), method="fsv")


def test_autoload_off(monkeypatch, fresh_registry):
    monkeypatch.setenv("FSFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    fsframe.plugins.reset_registry()
    reg = fsframe.plugins.get_registry()
    assert reg.names("method") == [] or all(e.plugin not in ("svm", "example") for e in reg.all("method"))
    assert set(reg.names("loop")) >= {"single", "reweighted-l1", "dca", "em"}


def test_reset_registry_restores_the_original(installed, monkeypatch):
    mod = plugin_module("dupe", fsframe_register_surrogates=lambda: [DuplicateExp])
    installed(FakeEntryPoint("dupe", lambda: mod))
    with pytest.warns(FsframeWarning, match="surrogate 'exp' is registered by"):
        assert ("surrogate", "exp") in fsframe.plugins.get_registry().conflicts
    monkeypatch.setattr(md, "entry_points", REAL_ENTRY_POINTS)  # what happens after each test
    fsframe.plugins.reset_registry()
    assert fsframe.plugins.get_registry().get("surrogate", "exp") is fsframe.surrogates.ExpSurrogate
