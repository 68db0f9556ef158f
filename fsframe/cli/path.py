"""``fsframe path``: one method over a grid of one parameter, warm-started (:func:`fsframe.path`)."""

from __future__ import annotations

import sys

import numpy as np

from .common import EXIT_OK, GRID_FLAGS, UsageError, parse_value, check_task
from .evaluate import dataset_line, load_data, method_params
from .output import check_output_paths, meta, write_json

__all__ = ["cmd_path"]



def _values(flag: str, text: str):
    if text.strip() == "auto":
        return "auto"  # the automatic grid of this parameter
    vals = [parse_value(t) for t in text.split(",") if t.strip()]
    if not vals:
        raise UsageError(f"{flag} {text!r}: give comma-separated numbers, e.g. {flag} 1,2,5")
    return vals


def grid_of(args) -> tuple[str | None, object]:
    """The one swept parameter and its values from ``--alpha``/``--C``/``--delta``/``--grid``
    (``auto`` for its automatic grid); ``(None, None)`` without one: the method's sparsity
    parameter, gridded automatically."""
    given = [(k, _values(f"--{k}", getattr(args, f"grid_{k}"))) for k in GRID_FLAGS
             if getattr(args, f"grid_{k}") is not None]
    if args.grid is not None:
        if "=" not in args.grid:
            raise UsageError(f"--grid {args.grid!r}: expected KEY=V1,V2,... (e.g. --grid eps=1e-3,1e-2)")
        key, text = (s.strip() for s in args.grid.split("=", 1))
        given.append((key, _values(f"--grid {key}=", text)))
    if len(given) > 1:
        raise UsageError("give at most one grid: --alpha, --C, --delta or --grid KEY=V1,V2,... "
                         f"(got {[k for k, _ in given]}); none grids the method's sparsity parameter automatically")
    return given[0] if given else (None, None)


def _split(y, fraction: float, seed: int, *, regression: bool = False):
    """Train/validation indices: ``fraction`` of each class to validation (stratified), or of all
    samples drawn at random for a real target (``regression``)."""
    rng = np.random.default_rng(seed)
    if regression:
        idx = rng.permutation(len(y))
        k = int(round(fraction * len(y)))
        return np.sort(idx[k:]), np.sort(idx[:k])
    val = []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        val.extend(idx[: int(round(fraction * idx.size))].tolist())
    mask = np.zeros(len(y), dtype=bool)
    mask[val] = True
    return np.flatnonzero(~mask), np.flatnonzero(mask)


def _check_parts(tr, va, y, fraction: float, regression: bool) -> None:
    """Refuse a validation split with an empty part (or, for class labels, a training part short
    of a class), naming the sizes and the fraction that would work."""
    from ..evaluation.splits import round_up

    n = len(y)
    sizes = [n] if regression else np.unique(y, return_counts=True)[1].tolist()
    how = "of the samples" if regression else "of each class (rounded per class)"
    if regression and va.size == 1:
        raise UsageError(f"--validation {fraction:g} holds out one of the {n} samples, where R² is undefined; "
                         f"give a larger fraction (above {round_up(1.5 / n)})")
    if va.size == 0:
        # the fraction whose rounding puts aside one sample of the largest class, or two of a real target
        low = 1.5 / n if regression else 0.5 / max(sizes)
        raise UsageError(f"--validation {fraction:g} holds out {fraction:g} {how}: 0 of the {n} samples, so no point "
                         f"could be scored; give a larger fraction (above {round_up(low)}) or drop --validation")
    if regression and np.ptp(y[va]) == 0:
        raise UsageError(f"--validation {fraction:g} holds out {va.size} samples whose target is constant "
                         f"({float(y[va][0]):g}), where R² is undefined; give another --seed or a larger fraction")
    labels, counts = (None, None) if regression else np.unique(y[tr], return_counts=True)
    missing = [] if regression else sorted(set(np.unique(y).tolist()) - set(labels.tolist()))
    short = [] if regression else sorted(labels[counts < 2].tolist())
    if tr.size < 2 or missing or short:
        what = (f"only {tr.size} training sample(s)" if tr.size < 2 else
                f"no training sample of class(es) {missing}" if missing else
                f"one training sample of class(es) {short}")
        raise UsageError(f"--validation {fraction:g} holds out {fraction:g} {how} and leaves {what} of the {n}; "
                         "give a smaller fraction")


def cmd_path(args, argv) -> int:
    from ..evaluation.preprocess import _scale
    from ..paths import path

    if args.method is None and not (args.formulation and args.loop):
        raise UsageError("give --method NAME (see 'fsframe methods'), or --formulation and --loop")
    check_output_paths(args)
    name, values = grid_of(args)
    if args.plot:
        from ..evaluation.plots import _pyplot

        _pyplot()  # fail before the path when matplotlib is missing
    data = load_data(args)
    check_task(args, data)
    params, _ = method_params(args)
    if name in params:
        raise UsageError(f"{name} is both swept and set with --set; drop one")
    X = data.X.copy() if data.is_sparse else np.asarray(data.X, dtype=float)
    y = np.asarray(data.y)
    validation = None
    if args.validation is not None:
        tr, va = _split(y, args.validation, args.seed, regression=data.is_regression)
        _check_parts(tr, va, y, args.validation, data.is_regression)
        Xtr, Xva = _scale(X[tr], X[va], args.scale)
        X, validation = Xtr, (Xva, y[va])
        y = y[tr]
    else:
        X = _scale(X, X[:0], args.scale)[0]
    grid = {} if name is None else ({"n_features": values} if name == "n_features" else {name: values})
    res = path(X, y, method=args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop,
               validation=validation, **{"n_features": args.n_features, **params, **grid})
    if args.json != "-":
        label = args.method or "+".join(p for p in (args.formulation, args.surrogate, args.loop) if p)
        print(f"{label} over {res.parameter} on {dataset_line(data)}"
              + (f"; validation: {len(validation[1])} samples" if validation else ""))
        if res.rule is not None:
            print(f"automatic grid: {res.rule.how}")
        print(res.as_table())
        print(f"{len(res.points)} points in {res.seconds:.3f} s, {res.n_subproblems} subproblem(s) built")
    if args.json:
        write_json(args.json if args.json != "-" else "/dev/stdout", {**meta(args, argv), **res.to_dict()})
    if args.plot:
        from ..evaluation.plots import plot_path

        paths = plot_path(res, args.plot, title=f"{args.method or 'path'} on {data.name}")
        print(f"wrote {paths[0]} and {paths[1]}", file=sys.stderr)
    return EXIT_OK


