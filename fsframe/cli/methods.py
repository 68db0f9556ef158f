"""``fsframe methods [NAME]``: the registered methods, or one method and its parameters."""

from __future__ import annotations

import textwrap

from .. import errors
from .._version import fsframe_version
from ..evaluation import accepted_parameters, to_jsonable
from ..plugins import get_registry
from .common import EXIT_OK, PROG
from .output import table, write_json
from .params import ParameterDoc, parameter_docs


def _fmt_defaults(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def _methods_data() -> dict:
    reg = get_registry()
    methods = []
    for e in reg.all("method"):
        s = e.obj
        try:
            params = accepted_parameters(s.name)
            problem = None
        except errors.FsframeError as exc:  # a method naming a missing or conflicting component
            params, problem = None, str(exc)
        methods.append({"name": s.name, "formulation": s.formulation, "surrogate": s.surrogate, "loop": s.loop,
                        "defaults": dict(s.defaults), "reference": s.reference, "description": s.description,
                        "sparsity": s.sparsity, "sparsity_grid": _sparsity_grid(reg, s), "task": _task(reg, s),
                        "plugin": e.plugin, "distribution": e.distribution, "version": e.version,
                        "parameters": params, "problem": problem})
    conflicts = [{"kind": k, "name": n, "providers": [{"plugin": e.plugin, "distribution": e.distribution,
                                                       "version": e.version} for e in es]}
                 for (k, n), es in sorted(reg.conflicts.items())]
    broken = [{"plugin": b.plugin, "distribution": b.distribution, "error": b.error} for b in reg.broken]
    return {"methods": methods, "conflicts": conflicts, "broken": broken}


def _task(reg, spec) -> str | None:
    """``"regression"`` (its formulation fits a real target) or ``"classification"``; ``None``
    when the formulation is missing."""
    try:
        return getattr(reg.get("formulation", spec.formulation), "task", "classification")
    except errors.FsframeError:
        return None


def _sparsity_grid(reg, spec) -> str | None:
    """How the automatic grid of the method's sparsity parameter is made (``fsframe methods M``)."""
    name = spec.sparsity
    if name is None:
        return None
    if name == "n_features":
        return "log-spaced integers from 1 to the number of features (exactly r features at each)"
    try:
        form = reg.get("formulation", spec.formulation)
    except errors.FsframeError:
        return None
    if getattr(form, "auto_values", None) is not None:
        doc = (form.auto_values.__doc__ or "").strip().split("\n")[0]
        return f"set from the data by formulation {form.name}" + (f": {doc}" if doc else "")
    if getattr(form, "empty_model_threshold", None) is not None:
        return (f"from where the first feature enters (formulation {form.name}'s empty-model optimality "
                "condition), log-spaced, until the support stops growing")
    return None


def _problems_text(data: dict) -> list[str]:
    lines = []
    if data["conflicts"]:
        lines += ["", "Name conflicts (these names are unusable until one provider is removed or blocked with "
                      "FSFRAME_DISABLED_PLUGINS=<plugin>):"]
        for c in data["conflicts"]:
            who = ", ".join(f"{p['plugin']} ({p['distribution'] or 'no distribution'})" for p in c["providers"])
            lines.append(f"  {c['kind']} {c['name']!r}: {who}")
    if data["broken"]:
        lines += ["", "Broken plugins (skipped):"]
        for b in data["broken"]:
            lines.append(f"  {b['plugin']} ({b['distribution'] or 'no distribution'}): {b['error']}")
    return lines


def cmd_methods(args, argv) -> int:
    data = _methods_data()
    if args.name:
        m = next((m for m in data["methods"] if m["name"] == args.name), None)
        if m is None:
            known = sorted(x["name"] for x in data["methods"])
            raise errors.UnknownComponentError(f"unknown method {args.name!r}; registered methods are {known}")
        if args.json:
            docs = {} if m["problem"] else {kind: {"name": comp, "parameters": [d.as_dict() for d in ds]}
                                             for kind, comp, ds in _component_docs(m)}
            write_json("-", {**m, "parameter_docs": to_jsonable(docs)})
            return EXIT_OK
        print(_method_detail(m))
        return EXIT_OK
    if args.json:
        write_json("-", data)
        return EXIT_OK
    ms = data["methods"]
    print(f"{len(ms)} method{'s' if len(ms) != 1 else ''} registered (fsframe {fsframe_version()})")
    print()
    rows = [("method", "formulation", "surrogate", "loop", "defaults", "provided by")]
    for m in ms:
        prov = f"{m['plugin']} ({m['distribution'] or 'runtime'}{' ' + m['version'] if m['version'] else ''})"
        rows.append((m["name"], m["formulation"], m["surrogate"] or "-", m["loop"], _fmt_defaults(m["defaults"]), prov))
    for line in table(rows, indent="  "):
        print(line)
    print()
    w = max((len(m["name"]) for m in ms), default=0)
    pad = " " * (w + 4)
    for m in ms:
        for k, text in enumerate((m["description"] or "-", m["reference"], m["problem"] and f"UNUSABLE: {m['problem']}")):
            if text:
                first = f"  {m['name']:<{w}}  " if k == 0 else pad
                print(textwrap.fill(text, width=110, initial_indent=first, subsequent_indent=pad))
    for line in _problems_text(data):
        print(line)
    print()
    print(f"'{PROG} methods NAME' lists a method's parameters; '{PROG} select DATA --method NAME --cv 10' evaluates it.")
    return EXIT_OK


def _component_docs(m: dict) -> list[tuple[str, str, list[ParameterDoc]]]:
    """``(kind, name, parameter docs)`` of the method's formulation, surrogate and loop."""
    reg = get_registry()
    out = []
    for kind in ("formulation", "surrogate", "loop"):
        comp = m[kind]
        if comp not in (None, "", "none"):
            out.append((kind, comp, parameter_docs(reg.get(kind, comp), m["defaults"])))
    return out


def _method_detail(m: dict) -> str:
    lines = [f"{m['name']}: {m['description'] or '-'}", f"  reference: {m['reference'] or '-'}",
             f"  provided by plugin {m['plugin']} ({m['distribution'] or 'runtime'}"
             f"{' ' + m['version'] if m['version'] else ''})",
             f"  method defaults: {_fmt_defaults(m['defaults'])}"]
    if m.get("task"):
        lines.append("  target: a real target (regression; a data file needs --task regression)"
                     if m["task"] == "regression" else "  target: class labels")
    if m.get("sparsity"):
        lines += textwrap.wrap(f"sparsity parameter: {m['sparsity']} — automatic grid (fsframe path DATA --method "
                               f"{m['name']}; fsframe select DATA --method {m['name']} --tune): "
                               f"{m['sparsity_grid'] or 'given by the method'}", width=100, initial_indent="  ",
                               subsequent_indent="      ")
    else:
        lines.append("  sparsity parameter: none declared (no automatic grid: give a list, e.g. fsframe path "
                     "--grid NAME=a,b,c)")
    lines += ["", "  parameters (--set NAME=VALUE):"]
    if m["problem"]:
        lines.append(f"    unusable: {m['problem']}")
        return "\n".join(lines)
    for kind, comp, docs in _component_docs(m):
        lines.append(f"    {kind} {comp}:" + ("" if docs else " (no parameters)"))
        for d in docs:
            valid = d.valid or d.type
            lines.append(f"      {d.name} = {d.default!r}" + (f"   [{valid}]" if valid else ""))
            lines.extend(textwrap.wrap(d.meaning or "(not documented by the component)", width=100,
                                       initial_indent=" " * 10, subsequent_indent=" " * 10))
    lines.append("    kernel map: kernel=None|'rbf'|'linear'|'poly', sigma, degree, coef0")
    lines.append("    fit: backend, time_limit, backend_options, verbose")
    return "\n".join(lines)

