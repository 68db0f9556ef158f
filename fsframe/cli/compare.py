"""``fsframe compare``: several methods cross-validated on the same splits."""

from __future__ import annotations

import sys

import attrs

from ..evaluation import compare
from ..evaluation.experiment import run_study
from ..plugins import get_registry
from .common import UsageError
from .evaluate import cv_spec, load_data, loader_options, method_params, run_evaluation
from .output import ProgressPrinter, check_output_paths
from .run import finish_run


def compare_study(args, data, entries, common, cv):
    """The :class:`~fsframe.evaluation.study.Study` the compare flags describe (``--out`` runs it
    through ``fsframe run``'s runner: resumable cells, manifest, ``fsframe report``)."""
    from ..evaluation.comparison import with_common_parameters
    from ..evaluation.study import DatasetSpec, MethodSpec, Protocol, Study, study_to_toml

    nf = args.n_features
    methods = tuple(MethodSpec(label, spec) for label, spec in with_common_parameters(entries, common))
    study = Study(name=f"compare-{data.name}", datasets=(DatasetSpec(data.name, args.data, loader_options(args)),),
                  methods=methods, protocol=Protocol(name=None, cv=cv, repeats=args.repeats, scale=args.scale,
                                                     retrain=args.retrain, retrain_C=args.retrain_C,
                                                     n_features=(nf,)),
                  seeds=(args.seed,), output=args.out, path=None)
    return attrs.evolve(study, text=study_to_toml(study))


def _compare_to_folder(args, data, entries, common, cv) -> int:
    if args.jobs == "auto":
        args.jobs = 1
    if args.json or args.csv:
        raise UsageError("--out writes a results folder (cells and manifest; 'fsframe report' renders it); "
                         "--json/--csv are for runs without --out")
    study = compare_study(args, data, entries, common, cv)
    prog = ProgressPrinter(sys.stderr, args.progress)
    try:
        res = run_study(study, args.out, n_jobs=args.jobs, dask=args.dask, progress=prog)
    finally:
        prog.close()
    return finish_run(res, markdown=args.markdown)


def cmd_compare(args, argv) -> int:
    check_output_paths(args)
    data = load_data(args)
    common, per = method_params(args, allow_prefix=True)
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
    cv = cv_spec(args)
    if cv is None:
        cv = 10
    if args.out:
        return _compare_to_folder(args, data, entries, common, cv)
    return run_evaluation(args, argv, lambda **kw: compare(data, methods=entries, cv=cv, **kw, **common),
                     text=lambda r: r.report(markdown=args.markdown), rows=lambda r: (r.rows(),),
                     results=lambda r: r.results)

