"""``fsframe plugins``: registered plugins, their hooks and components, broken plugins."""

from __future__ import annotations

import os

from ..plugins import get_registry
from .common import EXIT_OK
from .output import write_json


def _plugins_data() -> dict:
    reg = get_registry()
    comps: dict[str, list] = {}
    for kind in reg.entries:
        for e in reg.all(kind):
            comps.setdefault(e.plugin, []).append({"kind": kind, "name": e.name})
    for (kind, name), es in reg.conflicts.items():
        for e in es:
            comps.setdefault(e.plugin, []).append({"kind": kind, "name": name, "conflict": True})
    plugins = []
    for name, obj in reg.pm.list_name_plugin():
        dist, version = reg.dists.get(name, (None, None))
        plugins.append({"name": name, "blocked": obj is None, "distribution": dist, "version": version,
                        "module": getattr(obj, "__name__", None) if obj is not None else None,
                        "hooks": reg.hooks_of(name) if obj is not None else [],
                        "components": sorted(comps.get(name, []), key=lambda c: (c["kind"], c["name"]))})
    broken = [{"plugin": b.plugin, "distribution": b.distribution, "error": b.error} for b in reg.broken]
    env = {k: os.environ[k] for k in ("FSFRAME_DISABLED_PLUGINS", "FSFRAME_DISABLE_PLUGIN_AUTOLOAD",
                                      "FSFRAME_TRACE_PLUGINS") if os.environ.get(k)}
    return {"plugins": plugins, "broken": broken,
            "conflicts": [{"kind": k, "name": n, "plugins": [e.plugin for e in es]}
                          for (k, n), es in sorted(reg.conflicts.items())],
            "environment": env}


def cmd_plugins(args, argv) -> int:
    data = _plugins_data()
    if args.json:
        write_json("-", data)
        return EXIT_OK
    ps = data["plugins"]
    print(f"{len(ps)} plugin{'s' if len(ps) != 1 else ''} registered")
    for p in ps:
        print()
        if p["blocked"]:
            print(f"{p['name']}  (blocked by FSFRAME_DISABLED_PLUGINS)")
            continue
        dist = f"{p['distribution']} {p['version'] or ''}".strip() if p["distribution"] else "registered at runtime"
        print(f"{p['name']}  ({dist}; module {p['module']})")
        print(f"  hooks: {', '.join(p['hooks']) or '-'}")
        by_kind: dict[str, list[str]] = {}
        for c in p["components"]:
            by_kind.setdefault(c["kind"], []).append(c["name"] + (" [CONFLICT]" if c.get("conflict") else ""))
        for kind, names in by_kind.items():
            print(f"  {kind}: {', '.join(names)}")
    if data["broken"]:
        print()
        print("Broken plugins (skipped; everything else works):")
        for b in data["broken"]:
            print(f"  {b['plugin']} ({b['distribution'] or 'no distribution'}): {b['error']}")
    if data["conflicts"]:
        print()
        print("Name conflicts (unusable until one provider is removed or blocked with FSFRAME_DISABLED_PLUGINS):")
        for c in data["conflicts"]:
            print(f"  {c['kind']} {c['name']!r}: {', '.join(c['plugins'])}")
    if data["environment"]:
        print()
        print("environment: " + ", ".join(f"{k}={v}" for k, v in data["environment"].items()))
    return EXIT_OK

