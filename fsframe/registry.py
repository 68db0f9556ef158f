"""The component registry: every registered component by kind and name, built from a plugin
manager by :func:`fsframe.plugins.get_registry` (see :mod:`fsframe.plugins` for discovery and the
rules: broken plugins, built-in names, conflicts)."""

from __future__ import annotations

import difflib
import math
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import pluggy

from .backends.base import Backend
from .enums import ProblemClass
from .errors import FsframeWarning, PluginError, UnknownComponentError
from .formulation import Formulation
from .kernels import DataTransform
from .loops.base import OuterLoop
from .surrogates.base import Surrogate

__all__ = ["DEFAULT_PLUGINS", "ENTRY_POINT_GROUP", "OWN_DISTRIBUTION", "KINDS", "Kind", "Registry", "Entry",
           "BrokenPlugin", "Clash", "did_you_mean"]

#: The host's core components, plugin name -> module (imported with importlib), registered whatever
#: the autoload switch says (pytest's default plugins). The method packages of ``plugins/`` are not
#: here: they are entry points of fsframe's own distribution (``pyproject.toml``), discovered like a
#: third party's and loaded whatever the autoload switch says (``FSFRAME_DISABLED_PLUGINS=svm``
#: blocks the SVM family by its entry-point name).
DEFAULT_PLUGINS = {
    "fsframe.surrogates": "fsframe.surrogates",
    "fsframe.loops": "fsframe.loops",
    "fsframe.backends": "fsframe.backends",
    "fsframe.kernels": "fsframe.kernels",
}
ENTRY_POINT_GROUP = "fsframe"
OWN_DISTRIBUTION = "fsframe"


@attrs.frozen
class Kind:
    """A component kind: the hook that registers it and what each item must be (a subclass of
    ``base``, or an instance of it when ``instances`` is true). ``aliases`` names a class attribute
    (a tuple of strings) holding further names the component is looked up by (a transform's
    ``kernels``): they are protected and checked for conflicts like names. ``check(obj)``, if
    given, says what else is wrong with a component of this kind (``None``: nothing)."""

    hook: str
    base: type
    instances: bool = False
    aliases: str | None = None
    check: Any = None


def _backend_problem(cls) -> str | None:
    """What ``backend="auto"`` cannot use in a backend class: a ``preference`` that is not a
    finite number (it sorts by it), ``supports`` that is not a set of problem classes."""
    pref = getattr(cls, "preference", None)
    if isinstance(pref, bool) or not isinstance(pref, (int, float)) or not math.isfinite(pref):
        return f"preference is {_show(pref)}, not a finite number (lower is preferred by backend='auto')"
    sup = getattr(cls, "supports", None)
    if not isinstance(sup, (frozenset, set, tuple, list)) or not all(isinstance(p, ProblemClass) for p in sup):
        return f"supports is {_show(sup)}, not a set of fsframe.ProblemClass members"
    return None


#: kind -> :class:`Kind`. ``fsframe.method`` declares the ``method`` kind (:func:`declare_kind`).
KINDS: dict[str, Kind] = {
    "formulation": Kind("fsframe_register_formulations", Formulation),
    "surrogate": Kind("fsframe_register_surrogates", Surrogate),
    "loop": Kind("fsframe_register_loops", OuterLoop),
    "backend": Kind("fsframe_register_backends", Backend, check=_backend_problem),
    "transform": Kind("fsframe_register_transforms", DataTransform, aliases="kernels"),
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
    """A plugin skipped because it failed (``error`` says how); none of its components is kept."""

    plugin: str
    error: str
    distribution: str | None = None


@attrs.frozen
class Clash:
    """A third-party component refused because a built-in one has its name."""

    kind: str
    name: str
    refused: Entry
    builtin: Entry


def did_you_mean(name: str, known) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``known`` (difflib, ignoring case), or ``""``."""
    by_lower: dict[str, str] = {}
    for k in sorted(str(k) for k in known):
        by_lower.setdefault(k.lower(), k)
    close = [by_lower[c] for c in difflib.get_close_matches(str(name).lower(), list(by_lower), n=3, cutoff=0.6)]
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?" if close else ""


def _who(e: Entry) -> str:
    return f"{e.plugin!r} ({e.distribution or 'unknown distribution'})"


def _show(obj: Any) -> str:
    """``repr(obj)``, or a description of it when its ``__repr__`` fails (a hostile plugin)."""
    try:
        return repr(obj)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return f"<{type(obj).__name__} object whose repr() fails>"


def _reason(exc: BaseException) -> str:
    try:
        text = str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        text = "<str() of the exception fails>"
    return f"{type(exc).__name__}: {text}"


def _call_isolated(pm: pluggy.PluginManager, hook_name: str, plugin: object) -> list:
    """What ``plugin`` returns from ``hook_name``, called through ``pm.hook`` (traced) without the
    other plugins; raises whatever the implementation raises, and :class:`PluginError` when it
    returns something other than a list (a tuple or a generator is accepted)."""
    others = [p for p in pm.get_plugins() if p is not plugin]
    out = []
    for items in pm.subset_hook_caller(hook_name, remove_plugins=others)():
        if isinstance(items, (str, bytes, Mapping, type)) or not isinstance(items, Iterable):
            raise PluginError(f"{hook_name}() returned {_show(items)}, not a list")
        out.extend(items)
    return out


class Registry:
    """Every registered component by kind and name (see the module docstring)."""

    def __init__(self, pm: pluggy.PluginManager, broken: list[BrokenPlugin], dists: dict[str, tuple],
                 builtin: Iterable[str] = ()):
        self.pm = pm
        self.builtin: frozenset[str] = frozenset(DEFAULT_PLUGINS) | frozenset(builtin)
        """The built-in plugins: the core (:data:`DEFAULT_PLUGINS`) and fsframe's own entry points.
        Their components keep their names against third parties."""
        self.entries: dict[str, dict[str, Entry]] = {k: {} for k in KINDS}
        self.conflicts: dict[tuple[str, str], list[Entry]] = {}
        self.clashes: list[Clash] = []
        self.broken: list[BrokenPlugin] = list(broken)
        self.dists: dict[str, tuple] = dict(dists)  # plugin name -> (distribution, version)
        collected = [(name, self._collect(name, plugin)) for name, plugin in pm.list_name_plugin()
                     if plugin is not None]
        builtin = [c for c in collected if c[0] in self.builtin]
        for _, entries in builtin + [c for c in collected if c[0] not in self.builtin]:
            for entry in entries or ():
                self._add(entry)
        self.alias_conflicts = self._alias_conflicts()
        self._announce_preferred_backends()
        for (kind, name), es in self.conflicts.items():
            who = " and ".join(_who(e) for e in es)
            warnings.warn(f"fsframe: {kind} {name!r} is registered by {who}; it is unusable until one of them is "
                          "removed or blocked (FSFRAME_DISABLED_PLUGINS)", FsframeWarning, stacklevel=3)
        for (kind, alias), es in self.alias_conflicts.items():
            who = " and ".join(f"{e.name!r} of {_who(e)}" for e in es)
            warnings.warn(f"fsframe: {KINDS[kind].aliases} value {alias!r} is claimed by the {kind}s {who}; it is "
                          "unusable until one of them is removed or blocked (FSFRAME_DISABLED_PLUGINS)",
                          FsframeWarning, stacklevel=3)

    def _collect(self, plugin_name: str, plugin: object) -> list[Entry] | None:
        """Every component ``plugin`` registers, or ``None`` if anything fails (each failure is
        recorded): a broken plugin leaves none of its registrations behind."""
        dist, version = self.dists.get(plugin_name, (None, None))
        implemented = {c.name for c in self.pm.get_hookcallers(plugin) or ()}
        out, ok = [], True
        for kind, spec in KINDS.items():
            if spec.hook not in implemented:
                continue
            try:
                items = _call_isolated(self.pm, spec.hook, plugin)
            except KeyboardInterrupt:
                raise
            except PluginError as exc:
                ok = self._break(plugin_name, str(exc), dist)
                continue
            except BaseException as exc:  # a broken plugin must not break the others (SystemExit too)
                ok = self._break(plugin_name, f"{spec.hook}() raised {_reason(exc)}", dist)
                continue
            mine: dict[str, Any] = {}
            for obj in items:
                try:  # the checks run plugin code (a metaclass's attributes, __subclasscheck__)
                    error = self._invalid(spec, obj, mine)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    error = f"{spec.hook}() returned {_show(obj)}, whose checks raised {_reason(exc)}"
                if error:
                    ok = self._break(plugin_name, error, dist)
                elif obj is not mine.get(obj.name):  # the same object twice is registered once
                    mine[obj.name] = obj
                    out.append(Entry(kind, obj.name, obj, plugin_name, dist, version))
        return out if ok else None

    @staticmethod
    def _invalid(spec: Kind, obj: Any, mine: dict) -> str | None:
        """Why ``obj`` cannot be registered as a ``spec`` component (``mine``: this plugin's
        components of that kind so far, by name), or None."""
        what = f"{spec.hook}() returned {_show(obj)}"
        good = isinstance(obj, spec.base) if spec.instances else (isinstance(obj, type) and issubclass(obj, spec.base))
        name = getattr(obj, "name", None)
        if not good or not isinstance(name, str) or not name:
            return f"{what}, not a named {spec.base.__name__}"
        if name in mine and mine[name] is not obj:
            return f"{what}, a second {spec.base.__name__} named {name!r} (names are unique within a plugin)"
        if spec.aliases:
            values = getattr(obj, spec.aliases, None)
            if not isinstance(values, (tuple, list)) or not values or not all(isinstance(v, str) and v for v in values):
                return f"{what}, whose {spec.aliases!r} is {_show(values)}, not a non-empty tuple of strings"
        problem = spec.check(obj) if spec.check is not None else None
        return f"{what}, whose {problem}" if problem else None

    def _add(self, entry: Entry) -> None:
        kind, name = entry.kind, entry.name
        table = self.entries[kind]
        if (kind, name) in self.conflicts:
            self.conflicts[(kind, name)].append(entry)
        elif name in table and table[name].plugin in self.builtin:
            self.clashes.append(Clash(kind, name, entry, table[name]))
            warnings.warn(f"fsframe: {kind} {name!r} of plugin {_who(entry)} was refused: the built-in {kind} of "
                          f"plugin {_who(table[name])} has that name; rename it", FsframeWarning, stacklevel=4)
        elif entry.plugin not in self.builtin and self._builtin_alias(entry):
            alias, builtin = self._builtin_alias(entry)
            self.clashes.append(Clash(kind, name, entry, builtin))
            attr = KINDS[kind].aliases
            warnings.warn(f"fsframe: {kind} {name!r} of plugin {_who(entry)} was refused: it claims {attr} value "
                          f"{alias!r} of the built-in {kind} {builtin.name!r} of plugin {_who(builtin)}; rename it",
                          FsframeWarning, stacklevel=4)
        elif name in table:
            self.conflicts[(kind, name)] = [table.pop(name), entry]
        else:
            table[name] = entry

    def _announce_preferred_backends(self) -> None:
        """Warn about every third-party backend that ``backend="auto"`` would choose over the
        built-in ones for some problem class (a lower ``preference``; ties go to the built-ins):
        a plugin taking over every fit's solver is never silent."""
        backends = self.all("backend")
        builtin = [e for e in backends if e.plugin in self.builtin]
        for e in backends:
            if e.plugin in self.builtin:
                continue
            taken = {}
            for pc in sorted(e.obj.supports, key=lambda p: p.value):
                rivals = [b for b in builtin if pc in b.obj.supports]
                best = min(rivals, key=lambda b: (b.obj.preference, b.name), default=None)
                if best is not None and e.obj.preference < best.obj.preference:
                    taken[pc.value] = best
            if taken:
                was = ", ".join(f"{pc} (from {b.name!r}, preference {b.obj.preference})" for pc, b in taken.items())
                warnings.warn(
                    f"fsframe: backend {e.name!r} of plugin {_who(e)} has preference {e.obj.preference}, below the "
                    f"built-in backends': backend='auto' chooses it for {was}. Name a backend (backend='highs', "
                    "--backend) to keep the built-in one, or block the plugin (FSFRAME_DISABLED_PLUGINS)",
                    FsframeWarning, stacklevel=4)

    def _builtin_alias(self, entry: Entry) -> tuple[str, Entry] | None:
        """The first alias of ``entry`` a built-in component of its kind already claims."""
        attr = KINDS[entry.kind].aliases
        if not attr:
            return None
        for e in self.entries[entry.kind].values():
            if e.plugin in self.builtin:
                taken = set(getattr(e.obj, attr)) & set(getattr(entry.obj, attr))
                if taken:
                    return sorted(taken)[0], e
        return None

    def _alias_conflicts(self) -> dict[tuple[str, str], list[Entry]]:
        """``(kind, alias)`` -> the usable components claiming that alias, when more than one does."""
        out = {}
        for kind, spec in KINDS.items():
            if spec.aliases:
                owners: dict[str, list[Entry]] = {}
                for e in self.all(kind):
                    for alias in dict.fromkeys(getattr(e.obj, spec.aliases)):
                        owners.setdefault(alias, []).append(e)
                out.update({(kind, a): es for a, es in owners.items() if len(es) > 1})
        return out

    def by_alias(self, kind: str, alias: str) -> Any:
        """The component of ``kind`` claiming ``alias`` (a transform by one of its ``kernels``),
        or None; raises :class:`PluginError` when two third-party components claim it."""
        if (kind, alias) in self.alias_conflicts:
            who = " and ".join(f"{e.name!r} of {_who(e)}" for e in self.alias_conflicts[(kind, alias)])
            raise PluginError(f"{KINDS[kind].aliases} value {alias!r} is claimed by more than one {kind}: {who}; "
                              "uninstall one, or block one with FSFRAME_DISABLED_PLUGINS=<plugin name>")
        attr = KINDS[kind].aliases
        return next((e.obj for e in self.all(kind) if attr and alias in getattr(e.obj, attr)), None)

    def aliases(self, kind: str) -> list[str]:
        """Every alias of ``kind``'s usable components, built-ins first, in declaration order."""
        attr = KINDS[kind].aliases
        if not attr:
            return []
        ordered = sorted(self.all(kind), key=lambda e: e.plugin not in self.builtin)
        return list(dict.fromkeys(a for e in ordered for a in getattr(e.obj, attr)))

    def _break(self, plugin: str, error: str, dist) -> bool:
        """Record ``plugin`` as broken; returns False (the plugin is not ok)."""
        self.broken.append(BrokenPlugin(plugin, error, dist))
        warnings.warn(f"fsframe plugin {plugin!r} is broken and was skipped: {error}", FsframeWarning, stacklevel=5)
        return False

    def get(self, kind: str, name: str) -> Any:
        """The component ``name`` of ``kind``; raises for unknown or conflicting names."""
        if (kind, name) in self.conflicts:
            who = " and ".join(_who(e) for e in self.conflicts[(kind, name)])
            raise PluginError(
                f"{kind} {name!r} is registered by more than one plugin: {who}; uninstall one, or "
                f"block one with FSFRAME_DISABLED_PLUGINS=<plugin name>"
            )
        try:
            return self.entries[kind][name].obj
        except KeyError:
            known = sorted(self.entries[kind])
            skipped = sorted({b.plugin for b in self.broken})
            broken = (f"; broken plugins were skipped and may have provided it: {skipped} (see `fsframe plugins`)"
                      if skipped else "")
            raise UnknownComponentError(
                f"unknown {kind} {name!r}{did_you_mean(name, known)}; registered {kind}s are {known}{broken}") from None
        except TypeError:  # an unhashable name
            raise UnknownComponentError(f"{kind} names are strings, got {name!r}") from None

    def names(self, kind: str) -> list[str]:
        return sorted(self.entries[kind])

    def all(self, kind: str) -> list[Entry]:
        return [self.entries[kind][n] for n in self.names(kind)]

    def check(self) -> None:
        """Raise :class:`PluginError` if any plugin is broken, any name conflicts or any
        third-party component was refused for clashing with a built-in."""
        problems = [f"broken plugin {b.plugin!r}: {b.error}" for b in self.broken]
        problems += [f"{k} {n!r} registered by {[e.plugin for e in es]}" for (k, n), es in self.conflicts.items()]
        problems += [f"{KINDS[k].aliases} value {a!r} claimed by {[e.plugin for e in es]}"
                     for (k, a), es in self.alias_conflicts.items()]
        problems += [f"{c.kind} {c.name!r} of {c.refused.plugin!r} refused: built-in of {c.builtin.plugin!r}"
                     for c in self.clashes]
        if problems:
            raise PluginError("; ".join(problems))

    def hook_results(self, hook_name: str) -> list[tuple[str, Any]]:
        """``(plugin name, item)`` for every item each plugin returns from the list-returning hook
        ``hook_name``, called through ``pm.hook`` once per plugin: for a hook fsframe reads outside
        the component kinds (the conformance kit's ``fsframe_register_oracles``). A plugin whose
        hook raises, or returns no list, is a :class:`PluginError` naming it."""
        out = []
        for name, plugin in self.pm.list_name_plugin():
            if plugin is None or hook_name not in {c.name for c in self.pm.get_hookcallers(plugin) or ()}:
                continue
            try:
                items = _call_isolated(self.pm, hook_name, plugin)
            except KeyboardInterrupt:
                raise
            except PluginError as exc:
                raise PluginError(f"plugin {name!r}: {exc}") from exc
            except BaseException as exc:
                raise PluginError(f"plugin {name!r}: {hook_name}() raised {_reason(exc)}") from exc
            out.extend((name, item) for item in items)
        return out

    def hooks_of(self, plugin: str) -> list[str]:
        obj = self.pm.get_plugin(plugin)
        if obj is None:
            return []
        return sorted(c.name for c in (self.pm.get_hookcallers(obj) or []))
