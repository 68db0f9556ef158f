"""The ``fsframe`` command line (also ``python -m fsframe``).

Commands: ``methods``, ``plugins``, ``select``, ``compare`` (``fsframe COMMAND --help``; reference
with examples: docs/cli.md).

Exit status: 0 success; 2 bad usage or bad input (one line on stderr naming the problem; add
``--debug`` for the traceback); 1 a solver failure (including any failed fit in a
cross-validation, whose results are still printed and written). Heavy modules (scikit-learn's
model selection, joblib) are imported only by the commands that use them.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from typing import Any, Sequence

import numpy as np

from . import errors

__all__ = ["main", "parse_value", "parse_assignment", "build_parser"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
PROG = "fsframe"
RESERVED = {"method", "formulation", "surrogate", "loop", "n_features", "random_state", "cv", "repeats", "scale",
            "n_jobs", "retrain", "retrain_C", "progress", "on_error", "keep_model"}
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageError(errors.InvalidOptionError):
    """A command-line argument that cannot be used (exit status 2)."""


# ============================================================================== value parsing
def parse_value(text: str) -> Any:
    """A ``--set`` value: ``none``/``null`` -> None; ``true``/``false`` (also yes/no, on/off) ->
    bool; an integer literal -> int; a float literal (``1e-3``, ``inf``) -> float; text starting
    with ``[`` or ``{`` -> JSON; anything else (quotes stripped) -> str."""
    s = text.strip()
    low = s.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(s)
    except ValueError:
        pass
    try:
        v = float(s)
    except ValueError:
        pass
    else:
        if math.isnan(v):
            raise UsageError(f"value {text!r} is NaN")
        return v
    if s[:1] in "[{":
        try:
            return json.loads(s)
        except json.JSONDecodeError as exc:
            raise UsageError(f"value {text!r} looks like JSON but does not parse: {exc}") from None
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def parse_assignment(text: str, *, allow_prefix: bool = False) -> tuple[str | None, str, Any]:
    """``key=value`` (or ``method:key=value`` with ``allow_prefix``) -> (prefix, key, value)."""
    if "=" not in text:
        raise UsageError(f"--set {text!r}: expected key=value (e.g. --set C=0.5)")
    key, value = text.split("=", 1)
    key = key.strip()
    prefix = None
    if allow_prefix and ":" in key:
        prefix, key = (p.strip() for p in key.split(":", 1))
        if not prefix:
            raise UsageError(f"--set {text!r}: empty method name before ':'")
    if not _KEY.match(key):
        raise UsageError(f"--set {text!r}: {key!r} is not a parameter name")
    if key in RESERVED:
        flag = {"method": "--method", "formulation": "--formulation", "surrogate": "--surrogate", "loop": "--loop",
                "n_features": "--n-features", "random_state": "--seed", "cv": "--cv", "repeats": "--repeats",
                "scale": "--scale", "n_jobs": "--jobs", "retrain": "--retrain", "retrain_C": "--retrain-C"}.get(key)
        raise UsageError(f"--set {key}=...: {'use ' + flag if flag else 'not available from the command line'}")
    return prefix, key, parse_value(value)


def _label_column(text: str | None):
    if text is None:
        return None
    return int(text) if re.fullmatch(r"-?\d+", text.strip()) else text


# ============================================================================== output helpers
class _Warnings:
    """Show each warning once, as one line on stderr."""

    def __init__(self, stream):
        self.stream = stream
        self.seen: set = set()

    _PREFIX = re.compile(r"^([\w.+-]+: )+")
    _SUFFIX = re.compile(r" \[in \d+ of \d+ fits\]$")

    def show(self, message, category, filename, lineno, file=None, line=None):
        # the same finding about the whole dataset and about every training part is one warning
        key = (category, self._SUFFIX.sub("", self._PREFIX.sub("", str(message))))
        if key in self.seen:
            return
        self.seen.add(key)
        print(f"{PROG}: warning: {category.__name__}: {message}", file=self.stream)


class _ProgressPrinter:
    """Progress of long runs on stderr: one rewritten line on a terminal, one line per fit with
    ``--progress`` elsewhere."""

    def __init__(self, stream, mode: str | None):
        self.stream = stream
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.enabled = tty if mode is None else mode == "on"
        self.inline = tty
        self.t0 = time.perf_counter()
        self.dirty = False

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        r = p.record
        what = (f"acc {100 * r.accuracy:.1f}%, {r.n_selected} features, {r.seconds:.2f} s" if r.ok
                else f"FAILED: {r.error_type}")
        text = (f"[{p.done:>{len(str(p.total))}}/{p.total}] {r.label} repeat {r.repeat} fold {r.fold}: {what} "
                f"({time.perf_counter() - self.t0:.0f} s elapsed)")
        if self.inline:
            self.stream.write("\r\033[K" + text[:200])
            self.dirty = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.dirty:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.dirty = False


_NUMERIC = re.compile(r"^[-+]?(\d[\d.,]*([eE][-+]?\d+)?|inf)%?$")


_LESS_PRESSURE = {"C": "a larger C", "alpha": "a smaller alpha", "eps": "a larger eps", "p": "a larger p",
                  "delta": "a smaller delta", "delta_fraction": "a smaller delta_fraction"}


def _pressure_hint(res) -> str:
    """The parameters of this fit's own components that lower its sparsity pressure."""
    own = [a.name for c in (res.formulation, res.surrogate) if c is not None
           for a in getattr(type(c), "__attrs_attrs__", ())]
    knobs = [f"--set {k}=... ({_LESS_PRESSURE[k]})" for k in own if k in _LESS_PRESSURE]
    return "e.g. " + " or ".join(knobs) if knobs else "another method or a larger n_features"


def _table(rows: Sequence[Sequence[str]], *, head: bool = True, indent: str = "") -> list[str]:
    """Aligned columns; columns whose cells are all numbers are right-aligned."""
    w = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    body = rows[1:] if head else rows
    right = [bool(body) and all(_NUMERIC.match(str(r[i])) for r in body) for i in range(len(w))]
    out = []
    for k, r in enumerate(rows):
        out.append(indent + "  ".join(str(c).rjust(w[i]) if right[i] else str(c).ljust(w[i])
                                      for i, c in enumerate(r)).rstrip())
        if head and k == 0:
            out.append(indent + "  ".join("-" * x for x in w))
    return out


def _write_text(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise errors.DataFileError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _write_json(path: str, obj: dict) -> None:
    _write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def _write_csv(path: str, rows: list[dict], columns: Sequence[str] | None = None) -> None:
    import io

    buf = io.StringIO()
    cols = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    _write_text(path, buf.getvalue())


def _meta(args, argv) -> dict:
    from . import __version__

    return {"fsframe_version": __version__, "command": args.command, "argv": list(argv)}


# ============================================================================== methods / plugins
def _fmt_defaults(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in d.items()) or "-"


def _methods_data() -> dict:
    from .evaluation import accepted_parameters
    from .plugins import get_registry

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
                        "plugin": e.plugin, "distribution": e.distribution, "version": e.version,
                        "parameters": params, "problem": problem})
    conflicts = [{"kind": k, "name": n, "providers": [{"plugin": e.plugin, "distribution": e.distribution,
                                                       "version": e.version} for e in es]}
                 for (k, n), es in sorted(reg.conflicts.items())]
    broken = [{"plugin": b.plugin, "distribution": b.distribution, "error": b.error} for b in reg.broken]
    return {"methods": methods, "conflicts": conflicts, "broken": broken}


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
            _write_json("-", m)
            return EXIT_OK
        print(_method_detail(m))
        return EXIT_OK
    if args.json:
        _write_json("-", data)
        return EXIT_OK
    ms = data["methods"]
    from . import __version__

    print(f"{len(ms)} method{'s' if len(ms) != 1 else ''} registered (fsframe {__version__})")
    print()
    rows = [("method", "formulation", "surrogate", "loop", "defaults", "provided by")]
    for m in ms:
        prov = f"{m['plugin']} ({m['distribution'] or 'runtime'}{' ' + m['version'] if m['version'] else ''})"
        rows.append((m["name"], m["formulation"], m["surrogate"] or "-", m["loop"], _fmt_defaults(m["defaults"]), prov))
    for line in _table(rows, indent="  "):
        print(line)
    print()
    w = max((len(m["name"]) for m in ms), default=0)
    import textwrap

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


def _method_detail(m: dict) -> str:
    from .plugins import get_registry

    reg = get_registry()
    lines = [f"{m['name']}: {m['description'] or '-'}", f"  reference: {m['reference'] or '-'}",
             f"  provided by plugin {m['plugin']} ({m['distribution'] or 'runtime'}"
             f"{' ' + m['version'] if m['version'] else ''})",
             f"  method defaults: {_fmt_defaults(m['defaults'])}", "", "  parameters (--set NAME=VALUE):"]
    if m["problem"]:
        lines.append(f"    unusable: {m['problem']}")
        return "\n".join(lines)
    import attrs

    for kind, comp in (("formulation", m["formulation"]), ("surrogate", m["surrogate"]), ("loop", m["loop"])):
        if comp in (None, "", "none"):
            continue
        cls = reg.get(kind, comp)
        fields = [f for f in attrs.fields(cls) if f.init and not f.name.startswith("_")]
        desc = ", ".join(f"{f.name}={m['defaults'].get(f.name, f.default)!r}" for f in fields) or "(none)"
        lines.append(f"    {kind} {comp}: {desc}")
    lines.append("    kernel map: kernel=None|'rbf'|'linear'|'poly', sigma, degree, coef0")
    lines.append("    fit: backend, time_limit, backend_options, verbose")
    return "\n".join(lines)


def _plugins_data() -> dict:
    from .plugins import get_registry

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
        _write_json("-", data)
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


# ============================================================================== select / compare
def _load(args):
    from .io import load_dataset

    opts: dict[str, Any] = {}
    if args.label_column is not None:
        opts["label_column"] = _label_column(args.label_column)
    if args.drop_columns:
        cols = [c.strip() for spec in args.drop_columns for c in spec.split(",") if c.strip()]
        opts["drop_columns"] = [_label_column(c) for c in cols]
    for spec in args.loader_opt or ():
        if "=" not in spec:
            raise UsageError(f"--loader-opt {spec!r}: expected key=value (e.g. --loader-opt delimiter=';')")
        key, value = (x.strip() for x in spec.split("=", 1))
        if not _KEY.match(key):
            raise UsageError(f"--loader-opt {spec!r}: {key!r} is not an option name")
        value = parse_value(value)
        if isinstance(value, str) and "\\" in value:
            value = value.encode("utf-8").decode("unicode_escape")  # delimiter='\t'
        opts[key] = value
    return load_dataset(args.data, format=args.format, **opts)


def _params(args, *, allow_prefix: bool = False) -> tuple[dict, dict]:
    common: dict = {}
    per: dict[str, dict] = {}
    for spec in args.set or ():
        prefix, key, value = parse_assignment(spec, allow_prefix=allow_prefix)
        (per.setdefault(prefix, {}) if prefix else common)[key] = value
    if args.backend is not None:
        common["backend"] = args.backend
    if getattr(args, "time_limit", None) is not None:
        common["time_limit"] = args.time_limit
    return common, per


def _cv_spec(args):
    if args.holdout is not None:
        if args.cv is not None:
            raise UsageError("give --cv K (k-fold) or --holdout FRACTION (random splits), not both")
        return args.holdout
    return args.cv


def _dataset_line(d) -> str:
    counts = ", ".join(f"{k}: {v}" for k, v in d.class_counts.items())
    return f"{d.name}: {d.n_samples} samples x {d.n_features} features, classes {{{counts}}}"


def cmd_select(args, argv) -> int:
    if args.method is None and not (args.formulation and args.loop):
        raise UsageError("give --method NAME (see 'fsframe methods'), or --formulation and --loop "
                         "(and --surrogate) for a custom combination")
    data = _load(args)
    params, _ = _params(args)
    cv = _cv_spec(args)
    if cv is None:
        if args.repeats != 1:
            raise UsageError("--repeats needs --cv or --holdout")
        if args.retrain is not None:
            raise UsageError("--retrain needs --cv or --holdout (it changes only the evaluated classifier)")
        return _select_once(args, argv, data, params)
    from .evaluation import cross_validate

    return _evaluate(args, argv, lambda **kw: cross_validate(
        data, method=args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop, cv=cv,
        **kw, **params), text=lambda r: r.report(top=args.top or 10), rows=lambda r: (r.fold_rows(), r.FOLD_COLUMNS),
        results=lambda r: [r])


def _evaluate(args, argv, run, *, text, rows, results) -> int:
    """Run a cross-validation (``run(**protocol)``) with progress; print, write, exit status."""
    prog = _ProgressPrinter(sys.stderr, args.progress)
    try:
        res = run(repeats=args.repeats, scale=args.scale, n_jobs=args.jobs, random_state=args.seed,
                  n_features=args.n_features, retrain=args.retrain, retrain_C=args.retrain_C, progress=prog)
    finally:
        prog.close()
    if args.json != "-":
        print(text(res))
    if args.json:
        _write_json(args.json, {**_meta(args, argv), **res.to_dict(arrays=args.json_arrays)})
    if args.csv:
        _write_csv(args.csv, *rows(res))
    _written(args)
    return _cv_exit(results(res))


def _cv_exit(results) -> int:
    failed = sum(r.n_failed for r in results)
    total = sum(r.n_folds for r in results)
    if failed:
        print(f"{PROG}: {failed} of {total} fits failed; the summaries use the others (exit status 1)", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _written(args) -> None:
    for flag in ("json", "csv"):
        path = getattr(args, flag, None)
        if path and path != "-":
            print(f"wrote {path}", file=sys.stderr)


def _select_once(args, argv, data, params) -> int:
    top = args.top or 30
    from .evaluation import accuracy_score, component_dict, environment_versions, format_components, scale_fit_transform
    from .method import fit

    X = scale_fit_transform(data.X, args.scale)
    t0 = time.perf_counter()
    res = fit(X, data.y, method=args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop,
              n_features=args.n_features, **params)
    wall = time.perf_counter() - t0
    names = list(data.feature_names)
    kernel = res.transform is not None
    label = args.method or "+".join(p for p in (args.formulation, args.surrogate, args.loop) if p)
    coef = np.atleast_2d(np.asarray(res.coef, dtype=float))
    classes = list(res.classes)
    ovr = bool(res.per_class)
    components = {"formulation": component_dict(res.formulation), "surrogate": component_dict(res.surrogate),
                  "loop": component_dict(res.loop), "kernel": component_dict(res.transform)}
    info = res.per_class[0].info if ovr else res.info
    solver = info.get("backend_version")
    train_acc = accuracy_score(data.y, res.predict(X))
    if args.json != "-":
        print(f"{label} on {_dataset_line(data)}")
        print(f"  model: {format_components(components)}; backend {res.backend}{' ' + str(solver) if solver else ''}")
        print(f"  protocol: fitted once on all samples, "
              + {"standard": "standardised (mean 0, std 1)", "minmax": "min-max scaled to [0, 1]",
                 "none": "unscaled"}[args.scale]
              + ("; one-vs-rest over " + str(len(classes)) + " classes" if ovr else ""))
        print()
        n = res.n_selected
        total = len(res.support)
        if kernel:
            print(f"selected {n} of {total} training samples ({100 * n / total:.1f}%): with a kernel map the "
                  "groups are training samples (--json/--csv list them)")
        else:
            print(f"selected {n} of {total} features ({100 * n / total:.1f}%)" + (":" if n else ""))
        if n and not kernel:
            order = res.selected[np.argsort(-np.max(np.abs(coef[:, res.selected]), axis=0), kind="stable")]
            if coef.shape[0] == 1:
                rows = [("#", "index", "feature", "weight")]
                rows += [(str(i + 1), str(j), names[j], _w(coef[0, j], 4)) for i, j in enumerate(order[:top])]
            elif len(classes) <= 6:
                rows = [("#", "index", "feature", *[f"w[{c}]" for c in classes])]
                rows += [(str(i + 1), str(j), names[j], *[_w(coef[k, j], 3) for k in range(coef.shape[0])])
                         for i, j in enumerate(order[:top])]
            else:
                rows = [("#", "index", "feature", "max |w| over classes")]
                rows += [(str(i + 1), str(j), names[j], f"{np.max(np.abs(coef[:, j])):.4g}")
                         for i, j in enumerate(order[:top])]
            for line in _table(rows, indent="  "):
                print(line)
            if n > top:
                print(f"  ... {n - top} more (--top N shows more; --json/--csv have all)")
        elif n == 0:
            print("  no feature was selected: lower the sparsity pressure (" + _pressure_hint(res) + ")")
        print()
        obj = "-" if res.objective is None else f"{res.objective:.6g}"
        reason = info.get("stop_reason") or ""
        print(f"objective {obj}; {res.n_iter} iteration{'s' if res.n_iter != 1 else ''}"
              f"{' (largest over classes)' if ovr else ''}; converged: {'yes' if res.converged else 'NO'}"
              f"{' (' + reason + ')' if reason and not ovr else ''}; monotone: {'yes' if res.monotone else 'NO'}")
        statuses = sorted({getattr(s, 'value', str(s)) for s in res.statuses})
        print(f"solver statuses: {', '.join(statuses)}")
        i = res.info
        print(f"time {i.get('seconds', wall):.3f} s (build {i.get('build_seconds', 0):.3f}, compile "
              f"{i.get('compile_seconds', 0):.3f}, solve {i.get('solve_seconds', 0):.3f})")
        print(f"training accuracy {100 * train_acc:.2f}% (on the data the model was fitted to; "
              f"--cv 10 estimates test accuracy)")
    if args.json:
        out = {**_meta(args, argv),
               "dataset": {"name": data.name, "source": data.source, "n_samples": data.n_samples,
                           "n_features": data.n_features, "classes": _py(classes),
                           "class_counts": {str(k): v for k, v in data.class_counts.items()},
                           "feature_names": names},
               "method": args.method, "components": components, "params": _py(res.params),
               "fit_options": _py({k: v for k, v in params.items() if k in ("backend", "time_limit")}),
               "scale": args.scale, "n_features": args.n_features, "seed": None,
               "versions": environment_versions({"solver": f"{res.backend} {solver}" if solver else res.backend}),
               "result": _py(res.summary()),
               "selected_names": None if kernel else [names[j] for j in res.selected],
               "coef": _py(np.asarray(res.coef).tolist()), "intercept": _py(np.asarray(res.intercept).tolist()),
               "classes": _py(classes), "training_accuracy": train_acc,
               "history": [_py(h.as_dict()) for h in res.history]}
        _write_json(args.json, out)
    if args.csv:
        if kernel:
            rows = [{"index": int(j), "selected": bool(res.support[j])} for j in range(len(res.support))]
            _write_csv(args.csv, rows)
        else:
            rows = []
            for j in range(len(names)):
                row = {"index": j, "feature": names[j], "selected": bool(res.support[j])}
                if coef.shape[0] == 1:
                    row["weight"] = float(coef[0, j])
                else:
                    for k, c in enumerate(classes):
                        row[f"weight_{c}"] = float(coef[k, j])
                rows.append(row)
            _write_csv(args.csv, rows)
    _written(args)
    return EXIT_OK


def _w(v: float, digits: int) -> str:
    return "0" if v == 0 else f"{v:+.{digits}g}"


def _py(v):
    from .evaluation import _jsonable

    return _jsonable(v)


def cmd_compare(args, argv) -> int:
    from .evaluation import compare
    from .plugins import get_registry

    data = _load(args)
    common, per = _params(args, allow_prefix=True)
    reg = get_registry()
    names = [m.strip() for m in args.methods.split(",") if m.strip()] if args.methods else reg.names("method")
    if not names:
        raise UsageError("--methods is empty")
    for n in names:
        reg.get("method", n)  # unknown names fail here, before any fit
    unknown = sorted(set(per) - set(names))
    if unknown:
        raise UsageError(f"--set for {unknown}, which are not among the compared methods {names}")
    sweep = args.n_features if isinstance(args.n_features, list) and len(args.n_features) > 1 else None
    if sweep:  # accuracy versus the number of features (002, 004): one row per method and r
        entries = [(f"{n} r={r}", {"method": n, **per.get(n, {}), "n_features": r}) for n in names for r in sweep]
        args.n_features = None
    else:
        if isinstance(args.n_features, list):
            args.n_features = args.n_features[0]
        entries = [(n, {"method": n, **per.get(n, {})}) for n in names]
    cv = _cv_spec(args)
    if cv is None:
        cv = 10
    return _evaluate(args, argv, lambda **kw: compare(data, methods=entries, cv=cv, **kw, **common),
                     text=lambda r: r.report(markdown=args.markdown), rows=lambda r: (r.rows(),),
                     results=lambda r: r.results)


# ============================================================================== parser
def _arg_type(convert, ok, expected: str):
    """An argparse ``type=``: ``convert(text)`` must succeed and satisfy ``ok``."""

    def parse(text: str):
        try:
            v = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {v}")
        return v

    return parse


_positive_int = _arg_type(int, lambda v: v >= 1, "a positive integer")
_folds = _arg_type(int, lambda v: v >= 2, "at least 2 folds")
_fraction = _arg_type(float, lambda v: 0 < v < 1, "a fraction in (0, 1)")
_jobs = _arg_type(lambda t: t if t == "auto" else int(t), lambda v: v != 0,
                  "'auto' or a non-zero number of jobs (1: serial, -1: all cores)")
_seed = _arg_type(int, lambda v: v >= 0, "a non-negative integer seed")
_positive_float = _arg_type(float, lambda v: 0 < v < math.inf, "a positive number")


def _add_data_args(p) -> None:
    p.add_argument("data", metavar="DATA",
                   help="a data file (CSV/TSV/.data/.txt, LIBSVM .svm/.libsvm, ARFF, MATLAB .mat; .gz read through) "
                        "or a bundled dataset: breast_cancer, wine, iris, digits, synthetic")
    g = p.add_argument_group("data loading")
    g.add_argument("--format", choices=("csv", "svmlight", "arff", "mat"), help="file format (default: from the extension)")
    g.add_argument("--label-column", metavar="C",
                   help="label column: index (negative counts from the end) or header name "
                        "(default: a column named target/class/label/y, else the last)")
    g.add_argument("--drop-columns", metavar="C[,C...]", action="append",
                   help="columns to ignore, by index or name (e.g. an id column: --drop-columns 0)")
    g.add_argument("--loader-opt", metavar="KEY=VALUE", action="append",
                   help="other loader options, e.g. delimiter=';', header=true, x_key=fea, y_key=gnd")


def _int_list(text: str) -> list[int]:
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected R or R1,R2,... (positive integers)")
    return [_positive_int(t) for t in parts]


def _add_eval_args(p, *, default_cv: str, sweep: bool = False) -> None:
    g = p.add_argument_group("evaluation protocol")
    g.add_argument("--cv", type=_folds, metavar="K", help=f"stratified K-fold cross-validation ({default_cv})")
    g.add_argument("--holdout", type=_fraction, metavar="FRACTION",
                   help="instead of --cv: --repeats stratified random splits with this test fraction "
                        "(paper 002: --holdout 0.2 --repeats 10)")
    g.add_argument("--repeats", type=_positive_int, default=1, metavar="R",
                   help="repeat K-fold CV R times with fresh shuffles (paper 001: --cv 10 --repeats 10), "
                        "or the number of --holdout splits (default 1)")
    if sweep:
        g.add_argument("--n-features", type=_int_list, metavar="R[,R...]",
                       help="select exactly R features (paper 002 §3.1); several values give one row per method "
                            "and R (accuracy versus the number of features)")
    else:
        g.add_argument("--n-features", type=_positive_int, metavar="R",
                       help="select exactly R features (paper 002 §3.1)")
    g.add_argument("--scale", choices=("standard", "minmax", "none"), default="standard",
                   help="feature scaling, fitted on each training part (default: standard)")
    g.add_argument("--retrain", choices=("svm", "linear-svc"),
                   help="evaluate a classifier retrained on the selected features (paper 002: svm = "
                        "SVC(kernel='linear'))")
    g.add_argument("--retrain-C", type=_positive_float, default=1.0, metavar="C",
                   help="C of the retrained classifier (default 1)")
    g.add_argument("--jobs", type=_jobs, default="auto", metavar="J",
                   help="parallel fits: 1 serial, -1 all cores, N; default auto (parallel over all cores when the "
                        "first fit of each method predicts more than 10 s of serial work; results do not depend on it)")
    g.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of the splits (default 0)")
    g.add_argument("--progress", dest="progress", action="store_const", const="on", default=None,
                   help="report every fit on stderr (default: only on a terminal)")
    g.add_argument("--no-progress", dest="progress", action="store_const", const="off")


def _add_solver_args(p, *, prefix_help: str = "") -> None:
    g = p.add_argument_group("method parameters")
    g.add_argument("--set", metavar="KEY=VALUE", action="append",
                   help="a method parameter (repeatable): C=0.5, alpha=5, max_iter=50, kernel=rbf, sigma=1, "
                        "loop__tol=1e-6; values are parsed as int/float/bool/None/JSON/str" + prefix_help)
    g.add_argument("--backend", metavar="B", help="solver backend (default: auto)")
    g.add_argument("--time-limit", type=_positive_float, metavar="SECONDS", help="time limit of each convex solve")


def _add_output_args(p) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--json", metavar="PATH", help="write every result, parameter and version as JSON ('-': stdout only)")
    g.add_argument("--json-arrays", action="store_true", help="include each fold's train/test indices and predictions in the JSON")
    g.add_argument("--csv", metavar="PATH", help="write a CSV ('-': stdout)")
    g.add_argument("--top", type=_positive_int, metavar="N",
                   help="features listed in the text report (default: 30 for one fit, 10 per line for CV)")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of errors")
    parser = argparse.ArgumentParser(
        prog=PROG, parents=[common],
        description="Embedded feature selection by (approximate) L0-norm minimisation.",
        epilog="examples:\n"
               "  fsframe methods\n"
               "  fsframe select breast_cancer --method fsv --cv 10\n"
               "  fsframe compare breast_cancer --methods l1-svm,fsv,em-l0,arom,svm-weights --cv 10\n"
               "  fsframe select sonar.csv --method em-l0 --holdout 0.2 --repeats 10 --n-features 10 --retrain svm\n"
               "docs/cli.md has every command and flag.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("methods", parents=[common], help="list registered methods",
                       description="Every registered method with its formulation, surrogate, loop, default "
                                   "parameters, reference and providing plugin; broken plugins and name conflicts.")
    p.add_argument("name", nargs="?", metavar="NAME", help="show one method and every parameter it accepts")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_methods)

    p = sub.add_parser("plugins", parents=[common], help="list plugins, their hooks and components",
                       description="Registered plugins with distribution and version, the hooks each implements "
                                   "and the components it provides; broken plugins with their errors.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_plugins)

    p = sub.add_parser("select", parents=[common], help="select features with one method (fit once, or cross-validate)",
                       description="Without --cv/--holdout: fit once on all samples and print the selected features. "
                                   "With them: cross-validate and report mean ± std of accuracy, MCC, selected "
                                   "features, iterations and seconds, and the selection's stability.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe select breast_cancer --method fsv\n"
                              "  fsframe select breast_cancer --method fsv --cv 10 --set alpha=3 --json out.json\n"
                              "  fsframe select wdbc.data --label-column 1 --drop-columns 0 --method em-l0 --cv 10\n"
                              "  fsframe select colon.mat --method l1-svm --cv 10 --repeats 10 --jobs -1")
    _add_data_args(p)
    g = p.add_argument_group("method")
    g.add_argument("--method", "-m", metavar="M", help="a registered method (fsframe methods)")
    g.add_argument("--formulation", metavar="F", help="override the method's formulation, or compose your own with --loop")
    g.add_argument("--surrogate", metavar="S", help="override the method's surrogate ('none' for none)")
    g.add_argument("--loop", metavar="L", help="override the method's outer loop")
    _add_solver_args(p)
    _add_eval_args(p, default_cv="default: no CV, fit once on all samples")
    _add_output_args(p)
    p.set_defaults(func=cmd_select)

    p = sub.add_parser("compare", parents=[common], help="cross-validate several methods on the same splits",
                       description="One row per method, mean ± std over the same folds (a paired comparison): "
                                   "accuracy, MCC, selected features, iterations, seconds, stability.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n"
                              "  fsframe compare breast_cancer --methods l1-svm,fsv,em-l0,arom,svm-weights --cv 10\n"
                              "  fsframe compare sonar.csv --methods fsv,em-l0 --set C=0.5 --set fsv:alpha=3 --markdown\n"
                              "  fsframe compare breast_cancer --methods fsv,arom,svm-weights --holdout 0.2 --repeats 10 "
                              "--n-features 5 --retrain svm")
    _add_data_args(p)
    p.add_argument("--methods", metavar="M[,M...]", help="comma-separated methods (default: every registered method)")
    _add_solver_args(p, prefix_help="; METHOD:KEY=VALUE sets it for one method only (fsv:alpha=3); a plain KEY "
                                    "reaches every method that accepts it")
    _add_eval_args(p, default_cv="default 10", sweep=True)
    _add_output_args(p)
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.set_defaults(func=cmd_compare)
    return parser


# ============================================================================== main
def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 solver failure, 2 bad usage/input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2)
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
    printer = _Warnings(sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = printer.show
        try:
            return args.func(args, argv)
        except errors.SolverFailedError as exc:
            return _fail(exc, debug, EXIT_FAILURE)
        except errors.FsframeError as exc:
            return _fail(exc, debug, EXIT_USAGE)
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # e.g. piped into head
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            return EXIT_OK
        except Exception as exc:  # a bug: say so, briefly unless --debug
            if debug:
                traceback.print_exc()
            else:
                print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback, "
                      "and please report it)", file=sys.stderr)
            return EXIT_FAILURE


def _fail(exc: BaseException, debug: bool, code: int) -> int:
    if debug:
        traceback.print_exc()
    kind = type(exc).__name__
    text = str(exc).strip() or kind
    print(f"{PROG}: error: {text}" + ("" if isinstance(exc, UsageError) else f" [{kind}]"), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
