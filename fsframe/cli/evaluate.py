"""What ``select`` and ``compare`` share: loading the data, the method parameters, the protocol,
running a cross-validation and its exit status."""

from __future__ import annotations

import sys
from typing import Any

from ..errors import DataError, FsframeError
from ..io import load_dataset
from ..evaluation import EvaluationInterrupted
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, KEY, PROG, UsageError, label_column, parse_assignment, parse_value
from .output import ProgressPrinter, meta, write_csv, write_json


def load_data(args):
    """The data set of ``args.data``; a file whose label column cannot be class labels (a real
    target) read without ``--task`` for a method that takes a real target says to add it."""
    try:
        return load_dataset(args.data, **loader_options(args))
    except DataError as exc:
        who = _regression_methods(args)
        if getattr(args, "task", None) is not None or "looks continuous" not in str(exc) or not who:
            raise
        raise DataError(f"{exc}. {who} take{'s' if ',' not in who else ''} a real target: add --task regression "
                        "(without it the label column is read as class labels)") from exc


def _regression_methods(args) -> str:
    """The command's methods (``--method`` or its components; ``compare --methods``) quoted, when
    every one fits a real target; else ``""``."""
    from ..fitting import is_regression
    from ..method import resolve

    if getattr(args, "methods", None):
        specs = [dict(method=m.strip()) for m in args.methods.split(",") if m.strip()]
    elif getattr(args, "method", None) or getattr(args, "formulation", None):
        specs = [dict(method=args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop)]
    else:
        return ""
    try:
        forms = [resolve(**spec).formulation for spec in specs]
    except FsframeError:
        return ""
    if not all(is_regression(f) for f in forms):
        return ""
    return ", ".join(repr(spec.get("method") or f.name) for spec, f in zip(specs, forms))


def loader_options(args) -> dict:
    """The loader options the data flags give (``--label-column``, ``--drop-columns``, ``--loader-opt``)."""
    opts: dict[str, Any] = {} if args.format is None else {"format": args.format}
    if getattr(args, "task", None) is not None:
        opts["task"] = args.task
    if args.label_column is not None:
        opts["label_column"] = label_column(args.label_column)
    if args.drop_columns:
        cols = [c.strip() for spec in args.drop_columns for c in spec.split(",") if c.strip()]
        opts["drop_columns"] = [label_column(c) for c in cols]
    for spec in args.loader_opt or ():
        if "=" not in spec:
            raise UsageError(f"--loader-opt {spec!r}: expected key=value (e.g. --loader-opt delimiter=';')")
        key, value = (x.strip() for x in spec.split("=", 1))
        if not KEY.match(key):
            raise UsageError(f"--loader-opt {spec!r}: {key!r} is not an option name")
        value = parse_value(value)
        if isinstance(value, str) and "\\" in value:
            try:
                value = value.encode("utf-8").decode("unicode_escape")  # delimiter='\t'
            except UnicodeDecodeError as exc:
                raise UsageError(f"--loader-opt {spec!r}: a backslash escape that does not decode ({exc.reason}); "
                                 "write a tab as \\t") from None
        opts[key] = value
    return opts


def method_params(args, *, allow_prefix: bool = False) -> tuple[dict, dict]:
    common: dict = {}
    per: dict[str, dict] = {}
    for spec in args.set or ():
        prefix, key, value = parse_assignment(spec, allow_prefix=allow_prefix)
        (per.setdefault(prefix, {}) if prefix else common)[key] = value
    if args.backend is not None:
        common["backend"] = args.backend
    if getattr(args, "time_limit", None) is not None:
        common["time_limit"] = args.time_limit
    if getattr(args, "working_set", None) is not None:
        common["working_set"] = {"auto": "auto", "on": True, "off": False}[args.working_set]
    if getattr(args, "verify", None) is not None:
        common["verify"] = args.verify
    return common, per


def cv_spec(args):
    if args.holdout is not None:
        if args.cv is not None:
            raise UsageError("give --cv K (k-fold) or --holdout FRACTION (random splits), not both")
        return args.holdout
    return args.cv


def dataset_line(d) -> str:
    if d.is_regression:
        return (f"{d.name}: {d.n_samples} samples x {d.n_features} features, real target "
                f"(from {float(d.y.min()):.4g} to {float(d.y.max()):.4g})")
    counts = ", ".join(f"{k}: {v}" for k, v in d.class_counts.items())
    return f"{d.name}: {d.n_samples} samples x {d.n_features} features, classes {{{counts}}}"



def run_evaluation(args, argv, run, *, text, rows, results) -> int:
    """Run a cross-validation (``run(**protocol)``) with progress; print, write, exit status."""
    prog = ProgressPrinter(sys.stderr, args.progress)
    interrupted = None
    try:
        res = run(repeats=args.repeats, scale=args.scale, n_jobs=args.jobs, random_state=args.seed,
                  n_features=args.n_features, retrain=args.retrain, retrain_C=args.retrain_C, progress=prog,
                  dask=args.dask)
    except EvaluationInterrupted as exc:  # Ctrl-C: report and keep the fits that finished
        interrupted, res = exc, exc.result
    finally:
        prog.close()
    if args.json != "-":
        print(text(res))
    if args.json:
        write_json(args.json, {**meta(args, argv), **res.to_dict(arrays=args.json_arrays)})
    if args.csv:
        write_csv(args.csv, *rows(res))
    report_written(args)
    if interrupted is not None:
        kept = " (kept in the outputs written)" if any(p and p != "-" for p in (args.json, args.csv)) else ""
        print(f"{PROG}: interrupted after {interrupted.done} of {interrupted.planned} fits; the report covers the "
              f"finished ones{kept} (exit status {EXIT_INTERRUPTED})", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cv_exit(results(res))


def cv_exit(results) -> int:
    failed = sum(r.n_failed for r in results)
    total = sum(r.n_folds for r in results)
    if failed:
        print(f"{PROG}: {failed} of {total} fits failed; the summaries use the others (exit status 1)", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def report_written(args) -> None:
    for flag in ("json", "csv"):
        path = getattr(args, flag, None)
        if path and path != "-":
            print(f"wrote {path}", file=sys.stderr)


