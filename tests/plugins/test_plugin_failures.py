"""Broken or conflicting plugins, simulated with entry points that fsframe discovers as if
installed: a broken plugin is recorded and skipped (listing and every other method keep
working), a name registered twice raises PluginError naming both providers, and
FSFRAME_DISABLED_PLUGINS / FSFRAME_DISABLE_PLUGIN_AUTOLOAD / FSFRAME_TRACE_PLUGINS take effect,
built-ins keep their names. The registry is rebuilt
before and after each test."""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import subprocess
import sys
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


@attrs.frozen
class Dup(Surrogate):
    """A third-party surrogate named "dup" (two plugins provide it below)."""

    name = "dup"

    def phi(self, t):
        return np.asarray(t, dtype=float)


def test_duplicate_third_party_name_names_both_providers(installed):
    one = plugin_module("dupe-a", fsframe_register_surrogates=lambda: [Dup])
    two = plugin_module("dupe-b", fsframe_register_surrogates=lambda: [attrs.frozen(type("Dup2", (Dup,), {}))])
    installed(FakeEntryPoint("dupe-a", lambda: one, dist_name="fsframe-dupe-a"),
              FakeEntryPoint("dupe-b", lambda: two, dist_name="fsframe-dupe-b"))
    with pytest.warns(FsframeWarning, match="surrogate 'dup' is registered by 'dupe-a'.*and 'dupe-b'"):
        reg = fsframe.plugins.get_registry()
    with pytest.raises(PluginError, match="surrogate 'dup' is registered by more than one plugin") as exc:
        reg.get("surrogate", "dup")
    assert "'dupe-a' (fsframe-dupe-a)" in str(exc.value) and "'dupe-b' (fsframe-dupe-b)" in str(exc.value)
    with pytest.raises(PluginError, match="FSFRAME_DISABLED_PLUGINS"):
        fsframe.fit(*_toy(), formulation="hinge", surrogate="dup", loop="reweighted-l1")
    # methods that do not use the conflicting name keep working
    assert fsframe.fit(*_toy(), method="l1-svm", C=10.0).objective == pytest.approx(0.5)


class FakeHighs(fsframe.Backend):
    """A third-party backend calling itself "highs" (it must never be used)."""

    name = "highs"
    supports = frozenset(fsframe.ProblemClass)
    preference = -100


def test_builtin_names_are_kept(installed):
    """A third-party surrogate "exp", backend "highs" and method "l1-svm" are refused (a clash,
    warned naming both providers); the built-ins stay in place, auto still picks HiGHS for LPs,
    and the plugin's other components are registered."""
    spec = fsframe.MethodSpec("l1-svm", formulation="hinge", surrogate="exp", loop="reweighted-l1")
    mine = fsframe.MethodSpec("mine", formulation="hinge", surrogate="l1", loop="single")
    mod = plugin_module("squatter", fsframe_register_surrogates=lambda: [DuplicateExp],
                        fsframe_register_backends=lambda: [FakeHighs],
                        fsframe_register_methods=lambda: [spec, mine])
    installed(FakeEntryPoint("squatter", lambda: mod, dist_name="fsframe-squatter"))
    with pytest.warns(FsframeWarning) as record:
        reg = fsframe.plugins.get_registry()
    texts = [str(w.message) for w in record]
    for what, builtin in (("surrogate 'exp'", "fsframe.surrogates"), ("backend 'highs'", "fsframe.backends"),
                          ("method 'l1-svm'", "svm")):
        assert any(what in t and "'squatter' (fsframe-squatter) was refused" in t and f"'{builtin}' (fsframe)" in t
                   for t in texts), (what, texts)
    assert {(c.kind, c.name) for c in reg.clashes} == {("surrogate", "exp"), ("backend", "highs"), ("method", "l1-svm")}
    assert not reg.conflicts
    assert reg.get("surrogate", "exp") is fsframe.surrogates.ExpSurrogate
    assert reg.get("backend", "highs") is not FakeHighs
    assert reg.get("method", "l1-svm").loop == "single" and "mine" in reg.names("method")
    assert fsframe.select_backend("auto", fsframe.ProblemClass.LP).name == "highs"
    res = fsframe.fit(*_toy(), method="l1-svm", C=10.0)
    assert res.backend == "highs" and res.objective == pytest.approx(0.5)
    with pytest.raises(PluginError, match="'l1-svm' of 'squatter' refused"):
        reg.check()


def test_systemexit_at_import_is_isolated(installed, capsys):
    """A plugin module calling argparse at import (SystemExit on pytest's argv) breaks only itself."""
    import argparse

    def load():
        argparse.ArgumentParser(prog="cli-plugin").parse_args(["--no-such-flag"])

    installed(FakeEntryPoint("cli-plugin", load, dist_name="fsframe-cli-plugin"))
    with pytest.warns(FsframeWarning, match="'cli-plugin' failed to load.*SystemExit"):
        _still_works()
    (b,) = _broken("cli-plugin")
    assert b.error.startswith("SystemExit") and b.distribution == "fsframe-cli-plugin"


def test_systemexit_in_a_hook_is_isolated(installed):
    def leave():
        raise SystemExit(3)

    mod = plugin_module("quitter", fsframe_register_methods=leave)
    installed(FakeEntryPoint("quitter", lambda: mod))
    with pytest.warns(FsframeWarning, match=r"'quitter' is broken.*fsframe_register_methods\(\) raised SystemExit: 3"):
        _still_works()


def test_keyboard_interrupt_is_not_swallowed(installed):
    def interrupt():
        raise KeyboardInterrupt

    mod = plugin_module("ctrl-c", fsframe_register_methods=interrupt)
    installed(FakeEntryPoint("ctrl-c", lambda: mod))
    with pytest.raises(KeyboardInterrupt):
        fsframe.plugins.get_registry()


def test_broken_plugin_leaves_nothing_behind(installed):
    """The formulation hook fails: the plugin's method "ghost" (naming that formulation) and its
    working surrogate are not registered either."""
    def formulations():
        raise RuntimeError("no formulation today")

    mod = plugin_module("haunted", fsframe_register_formulations=formulations,
                        fsframe_register_surrogates=lambda: [Dup],
                        fsframe_register_methods=lambda: [fsframe.MethodSpec("ghost", formulation="ghost-f",
                                                                             surrogate="dup", loop="reweighted-l1")])
    installed(FakeEntryPoint("haunted", lambda: mod))
    with pytest.warns(FsframeWarning, match="'haunted' is broken"):
        _still_works()
    reg = fsframe.plugins.get_registry()
    assert "ghost" not in reg.names("method") and "dup" not in reg.names("surrogate")
    assert "ghost" not in [m.name for m in fsframe.list_methods()]
    assert not [e for k in reg.entries for e in reg.all(k) if e.plugin == "haunted"]


def test_own_entry_points_do_not_register_builtins_twice(installed):
    """fsframe's distribution seen twice (``svm = "fsframe_svm"`` declared again), and a third party
    pointing at the built-in module: neither registers the built-in a second time. A third-party
    entry point taking a built-in plugin's name is refused."""
    import fsframe_svm

    other = plugin_module("other", fsframe_register_surrogates=lambda: [Dup])
    installed(FakeEntryPoint("svm", lambda: fsframe_svm, dist_name="fsframe"),
              FakeEntryPoint("svm-again", lambda: fsframe_svm, dist_name="someone-else"),
              FakeEntryPoint("mpm", lambda: other, dist_name="fsframe-impostor"))
    with pytest.warns(FsframeWarning, match="entry point 'mpm' of distribution 'fsframe-impostor' has the name of a built-in"):
        reg = fsframe.plugins.get_registry()
    names = [n for n, _ in reg.pm.list_name_plugin()]
    assert "svm-again" not in names and names.count("svm") == 1 and names.count("mpm") == 1
    assert reg.pm.get_plugin("svm") is fsframe_svm and reg.dists["svm"][0] == "fsframe"
    assert "dup" not in reg.names("surrogate")
    assert not reg.conflicts and not reg.clashes and [b.plugin for b in reg.broken] == ["mpm"]
    assert {e.plugin for e in reg.all("method")} >= {"svm", "mpm"}


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
    """The built-in SVM methods are a default plugin like the others: blocking it removes them."""
    monkeypatch.setenv("FSFRAME_DISABLED_PLUGINS", "svm")
    fsframe.plugins.reset_registry()
    reg = fsframe.plugins.get_registry()
    assert "hinge" not in reg.names("formulation") and "fsv" not in reg.names("method")
    assert "exp" in reg.names("surrogate")  # core components stay
    with pytest.raises(fsframe.errors.UnknownComponentError, match="unknown method 'fsv'"):
        fsframe.fit(*_toy(), method="fsv")


BUILTIN_METHODS = {"l1-svm", "fsv", "em-l0", "arom", "svm-weights", "mpm", "l1-mpm", "l0-mpm"}


def _run(code: str, **env) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter with extra environment variables (read at registry build)."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("FSFRAME_")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=300)


def test_autoload_off_keeps_every_builtin():
    """With third-party entry points off, fsframe's own (its method plugins) still load: every
    built-in method, formulation, loop, backend and transform is listed, and the third-party
    example plugin is not."""
    code = ("import json, fsframe; r = fsframe.get_registry(); "
            "print(json.dumps({k: r.names(k) for k in r.entries}))")
    out = _run(code, FSFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    names = json.loads(out.stdout)
    assert BUILTIN_METHODS <= set(names["method"]) and "scad-svm" not in names["method"]
    assert {"hinge", "mpm", "mpm-max"} <= set(names["formulation"])
    assert {"single", "reweighted-l1", "dca", "em"} <= set(names["loop"])
    assert {"highs", "ecos", "clarabel"} <= set(names["backend"])
    assert names["transform"] == ["empirical-kernel-map"]


def test_autoload_off_in_process(monkeypatch, fresh_registry):
    monkeypatch.setenv("FSFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    fsframe.plugins.reset_registry()
    assert BUILTIN_METHODS <= {m.name for m in fsframe.list_methods()}
    reg = fsframe.plugins.get_registry()
    assert all(e.plugin in reg.builtin for k in ("method", "formulation") for e in reg.all(k))
    _still_works()


def test_trace_prints_hook_calls():
    """FSFRAME_TRACE_PLUGINS=1: pluggy's tracing shows every registration hook being called (the
    registry calls hooks through pm.hook)."""
    out = _run("import fsframe; fsframe.list_methods()", FSFRAME_TRACE_PLUGINS="1")
    assert out.returncode == 0, out.stderr
    for hook in ("fsframe_register_methods", "fsframe_register_formulations", "fsframe_register_backends",
                 "fsframe_register_transforms"):
        assert f"{hook} [hook]" in out.stderr, out.stderr[:2000]
    assert "finish fsframe_register_methods -->" in out.stderr
    quiet = _run("import fsframe; fsframe.list_methods()")
    assert "[hook]" not in quiet.stderr


def test_reset_registry_restores_the_original(installed, monkeypatch):
    one = plugin_module("dupe-a", fsframe_register_surrogates=lambda: [Dup])
    two = plugin_module("dupe-b", fsframe_register_surrogates=lambda: [attrs.frozen(type("Dup2", (Dup,), {}))])
    installed(FakeEntryPoint("dupe-a", lambda: one), FakeEntryPoint("dupe-b", lambda: two))
    with pytest.warns(FsframeWarning, match="surrogate 'dup' is registered by"):
        assert ("surrogate", "dup") in fsframe.plugins.get_registry().conflicts
    monkeypatch.setattr(md, "entry_points", REAL_ENTRY_POINTS)  # what happens after each test
    fsframe.plugins.reset_registry()
    assert "dup" not in fsframe.plugins.get_registry().names("surrogate")
    assert not fsframe.plugins.get_registry().conflicts


def test_method_plugins_are_entry_points_of_fsframes_own_distribution():
    """The method packages of plugins/ are found through the entry-point group ``fsframe`` of
    fsframe's distribution, like a third party's (pyproject.toml declares each one), not imported
    by name: the core alone is a default plugin of the host."""
    from pathlib import Path

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text())
    declared = project["project"]["entry-points"]["fsframe"]
    packages = sorted(p.name for p in (root / "plugins").iterdir() if (p / "__init__.py").exists())
    assert sorted(declared.values()) == packages  # every method package, each once
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert {f"plugins/{p}" for p in packages} <= set(wheel)  # shipped in the wheel
    assert set(fsframe.plugins.DEFAULT_PLUGINS) == {"fsframe.surrogates", "fsframe.loops", "fsframe.backends",
                                                    "fsframe.kernels"}
    reg = fsframe.plugins.get_registry()
    for name, module in declared.items():
        assert reg.pm.get_plugin(name).__name__ == module
        assert name in reg.builtin and reg.dists[name][0] == "fsframe"


def test_missing_own_entry_points_are_said_not_silent(monkeypatch, fresh_registry):
    """An install whose metadata predates the entry points (an editable install not redone) has no
    method plugins: fsframe says so and how to mend it, instead of silently listing no method."""
    def entry_points(**kw):
        found = REAL_ENTRY_POINTS(**kw)
        if kw.get("group") != "fsframe":
            return found
        return [ep for ep in found if getattr(ep, "dist", None) is None or ep.dist.metadata["Name"] != "fsframe"]

    monkeypatch.setattr(fsframe.plugins.md, "entry_points", entry_points)
    fsframe.plugins.reset_registry()
    with pytest.warns(FsframeWarning, match=r"own method plugins .* were not found.*pip install -e \."):
        reg = fsframe.plugins.get_registry()
    assert "hinge" not in reg.names("formulation") and "exp" in reg.names("surrogate")
