"""Plugin discovery and the component registry (the pluggy host).

``get_plugin_manager()`` follows pytest: add the hookspecs; block the plugins named in
``FSFRAME_DISABLED_PLUGINS`` (comma separated); register the host's core components
(:data:`DEFAULT_PLUGINS`: plugin names mapped to modules imported with :mod:`importlib`); load the
entry points of group ``fsframe``: those of fsframe's own distribution (the method packages of
``plugins/``, declared in its ``pyproject.toml`` and found the way a third party's are) always,
every other one unless ``FSFRAME_DISABLE_PLUGIN_AUTOLOAD`` is set; register plugins added at run
time with :func:`register`. The core and fsframe's own entry points are the *built-in* plugins
(:attr:`Registry.builtin`). ``FSFRAME_TRACE_PLUGINS=1`` prints every hook call to stderr
(pluggy's tracing).

The :class:`Registry` calls each hook through ``pm.hook`` once per plugin (so tracing sees the
calls and one plugin's failure cannot hide another's components). A plugin that fails to import,
whose hook raises (any exception, ``SystemExit`` included; only ``KeyboardInterrupt`` propagates)
or returns something that is not a list of named components (or two different components of one
kind and name) is recorded as *broken* with the reason, and none of its registrations is kept. A
third-party component with the name of a built-in one is refused (a :class:`Clash`, with a warning
naming both providers); so is a third-party transform claiming a built-in transform's ``kernels``
value (``rbf``). Two third-party providers of one name (or one ``kernels`` value) make that name
*conflicting*: looking it up raises :class:`~fsframe.errors.PluginError` naming both.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import sys
import threading
import types
import warnings
from typing import Any

import pluggy

from . import hookspecs
from .backends.base import Backend
from .enums import ProblemClass
from .errors import BackendUnavailableError, FsframeWarning, IncompatibleComponentsError, PluginError
from .registry import (DEFAULT_PLUGINS, ENTRY_POINT_GROUP, KINDS, OWN_DISTRIBUTION, BrokenPlugin, Clash, Entry, Kind,
                       Registry, _show, did_you_mean)

__all__ = [
    "DEFAULT_PLUGINS",
    "KINDS",
    "Kind",
    "Registry",
    "Entry",
    "BrokenPlugin",
    "Clash",
    "declare_kind",
    "did_you_mean",
    "get_plugin_manager",
    "get_registry",
    "own_plugin_names",
    "reset_registry",
    "register",
    "select_backend",
    "backends_for",
    "unregister",
]


def declare_kind(kind: str, hook: str, base: type, *, instances: bool = False) -> None:
    """Declare a component kind registered through ``hook`` (``fsframe.method`` declares
    ``method``, whose items are :class:`~fsframe.MethodSpec` instances)."""
    KINDS[kind] = Kind(hook, base, instances)
    reset_registry()


def _warn(msg: str) -> None:
    warnings.warn(msg, FsframeWarning, stacklevel=4)


def _hashable(plugin: Any, name: str) -> Any:
    """``plugin``, or for an unhashable object (a ``SimpleNamespace``) a module holding its
    attributes: pluggy's per-plugin hook callers keep plugins in sets."""
    try:
        hash(plugin)
        return plugin
    except TypeError:
        mod = types.ModuleType(name)
        mod.__dict__.update({k: getattr(plugin, k) for k in dir(plugin) if not k.startswith("__")})
        return mod


def _register(pm, broken, name, load, dist_name=None) -> bool:
    """Load and register one plugin; a failure (SystemExit included) records it as broken."""
    step = "failed to load"
    try:
        plugin = _hashable(load(), name)
        if pm.is_registered(plugin):  # e.g. a stale entry point to a built-in
            return False
        step = "could not be registered"
        if pm.has_plugin(name):
            raise PluginError(f"the name is taken by the plugin {_show(pm.get_plugin(name))} registered before it; "
                              "rename one of them")
        pm.register(plugin, name=name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        broken.append(BrokenPlugin(name, f"{type(exc).__name__}: {exc}", dist_name))
        _warn(f"fsframe plugin {name!r} {step} and was skipped: {type(exc).__name__}: {exc}")
        return False
    return True


def get_plugin_manager() -> tuple[pluggy.PluginManager, list[BrokenPlugin], dict[str, tuple], frozenset]:
    """The plugin manager with every plugin registered (see the module docstring), the plugins
    that failed to load, each plugin's ``(distribution, version)``, and the names of fsframe's own
    entry points (built-in plugins)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name in filter(None, (s.strip() for s in os.environ.get("FSFRAME_DISABLED_PLUGINS", "").split(","))):
        pm.set_blocked(name)
    broken: list[BrokenPlugin] = []
    dists: dict[str, tuple] = {}
    for name, modname in DEFAULT_PLUGINS.items():
        if not pm.is_blocked(name) and _register(pm, broken, name, lambda m=modname: importlib.import_module(m),
                                                 OWN_DISTRIBUTION):
            dists[name] = (OWN_DISTRIBUTION, _own_version())
    own, others = _entry_points()
    if not own:
        _warn(f"fsframe's own method plugins (the entry points of group {ENTRY_POINT_GROUP!r} of distribution "
              f"{OWN_DISTRIBUTION!r}) were not found: its installed metadata is missing or stale, and no "
              "method of plugins/ is available. Reinstall fsframe (pip install -e . in a checkout)")
    for ep, dist_info in own:  # built-ins, whatever the autoload switch says
        if not pm.is_blocked(ep.name) and not pm.has_plugin(ep.name) \
                and _register(pm, broken, ep.name, ep.load, dist_info[0]):
            dists[ep.name] = dist_info
    builtin = frozenset(ep.name for ep, _ in own)
    if not os.environ.get("FSFRAME_DISABLE_PLUGIN_AUTOLOAD"):
        seen: dict[str, str | None] = {}
        for ep, dist_info in others:
            if pm.is_blocked(ep.name):
                continue
            if ep.name in DEFAULT_PLUGINS or ep.name in builtin:
                msg = (f"entry point {ep.name!r} of distribution {dist_info[0]!r} has the name of a built-in "
                       "plugin; rename it")
                broken.append(BrokenPlugin(ep.name, msg, dist_info[0]))
                _warn(f"fsframe plugin skipped: {msg}")
                continue
            if ep.name in seen:
                if dist_info[0] != seen[ep.name]:  # (one distribution seen twice on sys.path is harmless)
                    msg = (f"entry point {ep.name!r} of distribution {dist_info[0]!r} has the same name as one of "
                           f"{seen[ep.name]!r}, which was loaded; rename one of them")
                    broken.append(BrokenPlugin(ep.name, msg, dist_info[0]))
                    _warn(f"fsframe plugin skipped: {msg}")
                continue
            if pm.has_plugin(ep.name):
                continue
            seen[ep.name] = dist_info[0]
            if _register(pm, broken, ep.name, ep.load, dist_info[0]):
                dists[ep.name] = dist_info
    for name, plugin in _runtime_plugins.items():
        if not pm.is_blocked(name) and _register(pm, broken, name, lambda p=plugin: p):
            dists[name] = (None, None)
    while True:  # a hook fsframe does not specify (a typo) breaks its plugin, not the registry
        try:
            pm.check_pending()
            break
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin)
            pm.unregister(exc.plugin)
            broken.append(BrokenPlugin(name, f"PluginValidationError: {exc}", dists.pop(name, (None,))[0]))
            _warn(f"fsframe plugin {name!r} was skipped: {exc}")
    if os.environ.get("FSFRAME_TRACE_PLUGINS"):
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    return pm, broken, dists, builtin


def _entry_points() -> tuple[list, list]:
    """``(own, others)``: the entry points of group ``fsframe`` with their ``(distribution,
    version)``, fsframe's own distribution's first (each name once: one distribution may be seen
    twice on ``sys.path``)."""
    own, others, own_names = [], [], set()
    for ep in md.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        dist_info = (dist.metadata["Name"], dist.version) if dist is not None else (None, None)
        if dist_info[0] == OWN_DISTRIBUTION:
            if ep.name not in own_names:
                own_names.add(ep.name)
                own.append((ep, dist_info))
        else:
            others.append((ep, dist_info))
    return own, others


def own_plugin_names() -> frozenset[str]:
    """The names of fsframe's own entry points (its method plugins: ``svm``, ``mpm``, ...), from the
    installed metadata."""
    return frozenset(ep.name for ep, _ in _entry_points()[0])


def _own_version() -> str:
    try:
        return md.version(OWN_DISTRIBUTION)
    except md.PackageNotFoundError:
        return "0+unknown"


_lock = threading.RLock()
_registry: Registry | None = None
_runtime_plugins: dict[str, Any] = {}


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object (a module or any object with ``@hookimpl`` functions) in this
    process, without packaging it — for notebooks and tests. Returns its name. Installed
    packages should use the ``fsframe`` entry-point group instead."""
    name = name or getattr(plugin, "__name__", None) or f"runtime-{id(plugin)}"
    if name in DEFAULT_PLUGINS or name in own_plugin_names():
        raise PluginError(f"{name!r} is the name of a built-in plugin; register yours under another name")
    with _lock:
        if name in _runtime_plugins:
            raise PluginError(f"a runtime plugin named {name!r} is already registered")
        _runtime_plugins[name] = plugin
        reset_registry()
    return name


def runtime_plugin_names() -> list[str]:
    """Names of the plugins registered in this process with :func:`register` (worker processes
    of a parallel run do not have them)."""
    return list(_runtime_plugins)


def unregister(name: str) -> None:
    """Remove a plugin registered with :func:`register`; an unknown name is a
    :class:`~fsframe.errors.PluginError` (only run-time plugins can be unregistered)."""
    with _lock:
        if name not in _runtime_plugins:
            raise PluginError(f"no plugin named {name!r} was registered with fsframe.plugins.register"
                              f"{did_you_mean(name, _runtime_plugins)}; runtime plugins: {sorted(_runtime_plugins)}")
        del _runtime_plugins[name]
        reset_registry()


def get_registry(*, reload: bool = False) -> Registry:
    """The process-wide registry (built on first use)."""
    global _registry
    with _lock:
        if _registry is None or reload:
            pm, broken, dists, builtin = get_plugin_manager()
            _registry = Registry(pm, broken, dists, builtin)
        return _registry


def reset_registry() -> None:
    """Forget the registry (the next lookup rediscovers plugins)."""
    global _registry
    with _lock:
        _registry = None


def backends_for(problem_class: ProblemClass | None) -> list[type]:
    """The registered backend classes that support ``problem_class`` (every one for ``None``), in
    ``backend="auto"``'s order: lowest ``preference`` first, a tie to the built-in backend."""
    reg = get_registry()
    entries = sorted(reg.all("backend"), key=lambda e: (e.obj.preference, e.plugin not in reg.builtin, e.name))
    return [e.obj for e in entries if problem_class is None or problem_class in e.obj.supports]


def select_backend(name: str | Backend, problem_class: ProblemClass, *, quadratic: bool = False,
                   time_limit: float | None = None) -> Backend:
    """A backend instance: by name, or for ``"auto"`` the preferred available backend that
    supports ``problem_class`` — HiGHS for LP/QP, ECOS for SOCP — skipping, when the subproblem
    has a ``quadratic`` objective, backends that only reformulate it (an SOCP with a quadratic
    objective, e.g. MPM + EM, goes to Clarabel), and, when a ``time_limit`` is given, backends
    that cannot enforce one. An auxiliary solve goes through :class:`fsframe.AuxSolver`, which uses this.

    Raises
    ------
    UnknownComponentError
        an unknown backend name;
    BackendUnavailableError
        the backend (or, for ``"auto"``, every backend for ``problem_class``) cannot be used here;
    IncompatibleComponentsError
        the named backend does not solve ``problem_class``.
    """
    reg = get_registry()
    if isinstance(name, Backend):
        backend = name
    elif name == "auto":
        cands = backends_for(None)
        usable = [c for c in cands if problem_class in c.supports and c.available()]
        if not usable:
            reasons = {c.name: (c.available().reason or f"does not support {problem_class.value}") for c in cands}
            raise BackendUnavailableError(f"no available backend solves {problem_class.value} problems: {reasons}")
        preferred = [c for c in usable if (c.native_quadratic or not quadratic)
                     and (c.honours_time_limit or time_limit is None)]
        backend = (preferred or usable)[0]()
    else:
        backend = reg.get("backend", name)()
    if problem_class not in backend.supports:
        raise IncompatibleComponentsError(
            f"backend {backend.name!r} cannot solve {problem_class.value} subproblems (it supports "
            f"{sorted(p.value for p in backend.supports)}); use backend='auto'")
    backend.require()
    return backend
