"""Plugin discovery and the component registry.

``get_plugin_manager()`` follows pytest/tox: add the hookspecs; block the plugins named in
``FSFRAME_DISABLED_PLUGINS`` (comma separated); load every entry point of group ``fsframe``
unless ``FSFRAME_DISABLE_PLUGIN_AUTOLOAD`` is set; register plugins added at run time with
:func:`register`; register the built-in modules (:data:`DEFAULT_PLUGINS`) through the same hooks. ``FSFRAME_TRACE_PLUGINS=1`` traces hook calls.

The :class:`Registry` collects every hook's lists. A plugin that fails to import, whose hook
raises, or that returns something that is not a component, is recorded as *broken* (with the
error) and skipped — listing and every other method keep working. Two providers of one name
make that name *conflicting*: looking it up raises :class:`~fsframe.errors.PluginError`
naming both providers.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import sys
import threading
import warnings
from typing import Any

import attrs
import pluggy

from . import hookspecs
from .errors import FsframeWarning, PluginError, UnknownComponentError

__all__ = [
    "DEFAULT_PLUGINS",
    "KINDS",
    "Registry",
    "Entry",
    "get_plugin_manager",
    "get_registry",
    "reset_registry",
    "register",
    "unregister",
]

DEFAULT_PLUGINS = ("fsframe.surrogates", "fsframe.loops", "fsframe.backends")
ENTRY_POINT_GROUP = "fsframe"

KINDS = {
    "formulation": "fsframe_register_formulations",
    "surrogate": "fsframe_register_surrogates",
    "loop": "fsframe_register_loops",
    "backend": "fsframe_register_backends",
    "method": "fsframe_register_methods",
}


@attrs.frozen
class Entry:
    """One registered component: the object, the plugin that provided it and its distribution."""

    kind: str
    name: str
    obj: Any
    plugin: str
    distribution: str | None = None
    version: str | None = None


@attrs.frozen
class BrokenPlugin:
    plugin: str
    error: str
    distribution: str | None = None


def _expected_type(kind: str):
    if kind == "method":
        from .method import MethodSpec

        return MethodSpec
    from .backends.base import Backend
    from .formulation import Formulation
    from .loops.base import OuterLoop
    from .surrogates.base import Surrogate

    return {"formulation": Formulation, "surrogate": Surrogate, "loop": OuterLoop, "backend": Backend}[kind]


class Registry:
    """Every registered component by kind and name (see the module docstring)."""

    def __init__(self, pm: pluggy.PluginManager, broken: list[BrokenPlugin], dists: dict[str, tuple]):
        self.pm = pm
        self.entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        self.conflicts: dict[tuple[str, str], list[Entry]] = {}
        self.broken: list[BrokenPlugin] = list(broken)
        self.dists: dict[str, tuple] = dict(dists)  # plugin name -> (distribution, version)
        for kind, hook_name in KINDS.items():
            expected = _expected_type(kind)
            hook = getattr(pm.hook, hook_name)
            for impl in reversed(hook.get_hookimpls()):  # registration order
                plugin = impl.plugin_name
                dist, version = dists.get(plugin, (None, None))
                try:
                    items = impl.function()
                    items = list(items or ())
                except Exception as exc:  # a broken plugin must not break the others
                    self._break(plugin, f"{hook_name}() raised {type(exc).__name__}: {exc}", dist)
                    continue
                for obj in items:
                    ok = isinstance(obj, expected) if kind == "method" else (isinstance(obj, type) and issubclass(obj, expected))
                    name = getattr(obj, "name", None)
                    if not ok or not isinstance(name, str) or not name:
                        self._break(plugin, f"{hook_name}() returned {obj!r}, not a named {expected.__name__}", dist)
                        continue
                    entry = Entry(kind, name, obj, plugin, dist, version)
                    table = self.entries[kind]
                    if (kind, name) in self.conflicts:
                        self.conflicts[(kind, name)].append(entry)
                    elif name in table:
                        self.conflicts[(kind, name)] = [table.pop(name), entry]
                    else:
                        table[name] = entry
        for (kind, name), es in self.conflicts.items():
            who = " and ".join(f"{e.plugin!r} ({e.distribution or 'unknown distribution'})" for e in es)
            warnings.warn(f"fsframe: {kind} {name!r} is registered by {who}; it is unusable until one of them is "
                          "removed or blocked (FSFRAME_DISABLED_PLUGINS)", FsframeWarning, stacklevel=3)

    def _break(self, plugin: str, error: str, dist) -> None:
        self.broken.append(BrokenPlugin(plugin, error, dist))
        warnings.warn(f"fsframe plugin {plugin!r} is broken and was skipped: {error}", FsframeWarning, stacklevel=4)

    def get(self, kind: str, name: str) -> Any:
        """The component ``name`` of ``kind``; raises for unknown or conflicting names."""
        if (kind, name) in self.conflicts:
            who = " and ".join(f"{e.plugin!r} ({e.distribution or 'unknown distribution'})" for e in self.conflicts[(kind, name)])
            raise PluginError(
                f"{kind} {name!r} is registered by more than one plugin: {who}; uninstall one, or "
                f"block one with FSFRAME_DISABLED_PLUGINS=<plugin name>"
            )
        try:
            return self.entries[kind][name].obj
        except KeyError:
            known = sorted(self.entries[kind])
            raise UnknownComponentError(f"unknown {kind} {name!r}; registered {kind}s are {known}") from None

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def all(self, kind: str) -> list[Entry]:
        return [self.entries[kind][n] for n in self.names(kind)]

    def check(self) -> None:
        """Raise :class:`PluginError` if any plugin is broken or any name conflicts."""
        problems = [f"broken plugin {b.plugin!r}: {b.error}" for b in self.broken]
        problems += [f"{k} {n!r} registered by {[e.plugin for e in es]}" for (k, n), es in self.conflicts.items()]
        if problems:
            raise PluginError("; ".join(problems))

    def hooks_of(self, plugin: str) -> list[str]:
        obj = self.pm.get_plugin(plugin)
        if obj is None:
            return []
        return sorted(c.name for c in (self.pm.get_hookcallers(obj) or []))


def get_plugin_manager() -> tuple[pluggy.PluginManager, list[BrokenPlugin], dict[str, tuple]]:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name in filter(None, (s.strip() for s in os.environ.get("FSFRAME_DISABLED_PLUGINS", "").split(","))):
        pm.set_blocked(name)
    broken: list[BrokenPlugin] = []
    dists: dict[str, tuple] = {}
    if not os.environ.get("FSFRAME_DISABLE_PLUGIN_AUTOLOAD"):
        seen: dict[str, str | None] = {}
        for ep in md.entry_points(group=ENTRY_POINT_GROUP):
            dist = getattr(ep, "dist", None)
            dist_info = (dist.metadata["Name"], dist.version) if dist is not None else (None, None)
            if ep.name in seen:
                if dist_info[0] != seen[ep.name]:  # (one distribution seen twice on sys.path is harmless)
                    msg = (f"entry point {ep.name!r} of distribution {dist_info[0]!r} has the same name as one of "
                           f"{seen[ep.name]!r}, which was loaded; rename one of them")
                    broken.append(BrokenPlugin(ep.name, msg, dist_info[0]))
                    warnings.warn(f"fsframe plugin skipped: {msg}", FsframeWarning, stacklevel=3)
                continue
            if pm.is_blocked(ep.name) or pm.has_plugin(ep.name):
                continue
            seen[ep.name] = dist_info[0]
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:
                broken.append(BrokenPlugin(ep.name, f"{type(exc).__name__}: {exc}", dist_info[0]))
                warnings.warn(f"fsframe plugin {ep.name!r} failed to load and was skipped: {exc}",
                              FsframeWarning, stacklevel=3)
                continue
            dists[ep.name] = dist_info
    for name, plugin in _runtime_plugins.items():
        if pm.is_blocked(name):
            continue
        try:
            pm.register(plugin, name=name)
        except Exception as exc:  # e.g. a hook with a wrong signature: that plugin breaks, not the registry
            broken.append(BrokenPlugin(name, f"{type(exc).__name__}: {exc}"))
            warnings.warn(f"fsframe plugin {name!r} could not be registered and was skipped: {exc}",
                          FsframeWarning, stacklevel=3)
            continue
        dists[name] = (None, None)
    for modname in DEFAULT_PLUGINS:
        if pm.is_blocked(modname):
            continue
        pm.register(importlib.import_module(modname), name=modname)
        dists[modname] = ("fsframe", _own_version())
    while True:  # a hook fsframe does not specify (a typo) breaks its plugin, not the registry
        try:
            pm.check_pending()
            break
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin)
            pm.unregister(exc.plugin)
            broken.append(BrokenPlugin(name, f"PluginValidationError: {exc}", dists.pop(name, (None,))[0]))
            warnings.warn(f"fsframe plugin {name!r} was skipped: {exc}", FsframeWarning, stacklevel=3)
    if os.environ.get("FSFRAME_TRACE_PLUGINS"):
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    return pm, broken, dists


def _own_version() -> str:
    try:
        return md.version("fsframe")
    except md.PackageNotFoundError:
        return "0+unknown"


_lock = threading.Lock()
_registry: Registry | None = None
_runtime_plugins: dict[str, Any] = {}


def register(plugin: Any, name: str | None = None) -> str:
    """Register a plugin object (a module or any object with ``@hookimpl`` functions) in this
    process, without packaging it — for notebooks and tests. Returns its name. Installed
    packages should use the ``fsframe`` entry-point group instead."""
    name = name or getattr(plugin, "__name__", None) or f"runtime-{id(plugin)}"
    if name in _runtime_plugins:
        raise PluginError(f"a runtime plugin named {name!r} is already registered")
    _runtime_plugins[name] = plugin
    reset_registry()
    return name


def unregister(name: str) -> None:
    """Remove a plugin registered with :func:`register`."""
    _runtime_plugins.pop(name, None)
    reset_registry()


def get_registry(*, reload: bool = False) -> Registry:
    """The process-wide registry (built on first use)."""
    global _registry
    with _lock:
        if _registry is None or reload:
            pm, broken, dists = get_plugin_manager()
            _registry = Registry(pm, broken, dists)
        return _registry


def reset_registry() -> None:
    """Forget the registry (the next lookup rediscovers plugins)."""
    global _registry
    with _lock:
        _registry = None
