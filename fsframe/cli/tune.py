"""``fsframe select DATA --method M --tune [PARAM]``: the sparsity parameter (or the number of
features) chosen by k-fold cross-validation over the automatic grid (:class:`fsframe.tuning.FSSelectorCV`),
then the one fit at the chosen value, reported as ``fsframe select`` reports a fit."""

from __future__ import annotations

import sys

from ..evaluation import scale_fit_transform
from .common import UsageError
from .output import table

__all__ = ["tune_then_select"]


def tune_then_select(args, argv, data, params, select_once) -> int:
    """Choose by ``--tune-folds`` CV (``--rule``), print the grid's scores, then ``select_once`` at
    the chosen point (its output, ``--json``, ``--csv`` and ``--plot`` as without ``--tune``)."""
    from ..tuning import FSRegressorCV, FSSelectorCV

    if args.method is None:
        raise UsageError("--tune needs --method (the method's declared sparsity parameter is tuned; "
                         "see 'fsframe methods NAME')")
    if args.cv is not None or args.holdout is not None:
        raise UsageError("--tune chooses by its own --tune-folds cross-validation and then fits once on all samples; "
                         "drop --cv/--holdout (nested cross-validation is not offered)")
    tuned = None if args.tune == "" else args.tune
    if tuned == "n_features" and args.n_features is not None:
        raise UsageError("--tune n_features and --n-features: give one")
    fixed = {k: v for k, v in params.items() if k not in ("backend", "verify")}
    jobs = 1 if args.jobs == "auto" else args.jobs
    tuner = FSRegressorCV if data.is_regression else FSSelectorCV  # a real target: R² on shuffled folds
    est = tuner(args.method, tune=tuned, cv=args.tune_folds, rule=args.rule, n_jobs=jobs, dask=args.dask,
                random_state=args.seed, n_features=args.n_features, formulation=args.formulation,
                surrogate=args.surrogate, loop=args.loop, backend=params.get("backend", "auto"),
                params=fixed or None, progress={"on": True, "off": False}.get(args.progress))
    X = scale_fit_transform(data.X, args.scale)
    est.fit(X, data.y)
    if args.json != "-":
        _print_scores(est)
    best = dict(est.best_params_)
    if "n_features" in best:
        args.n_features = best.pop("n_features")
    return select_once(args, argv, data, {**params, **best})


def _print_scores(est) -> None:
    r = est.cv_results_
    names = list(est.tuned_)
    rule = est.grid_rule_
    r2 = est._score_name == "r2"  # FSRegressorCV: R² of the fitted values, printed as it is
    score = "R²" if r2 else "accuracy"

    def show(v: float, pct: str = "%") -> str:
        return f"{v:.4f}" if r2 else f"{100 * v:.2f}{pct}"

    print(f"tuning {', '.join(names)} by {est.n_splits_}-fold cross-validation (rule {est.rule!r}: "
          + (f"the best mean {score}" if est.rule == "best" else
             f"the fewest features within one standard error of the best mean {score}") + ")")
    if rule is not None:
        print(f"  grid: {rule.how}")
    rows = [(*names, score, "± std", "selected", "seconds", "")]
    for i, p in enumerate(r["params"]):
        mark = "<- chosen" if i == est.best_index_ else ""
        rows.append((*(f"{p[n]:.6g}" for n in names), show(r['mean_test_score'][i]),
                     show(r['std_test_score'][i], ""), f"{r['mean_n_selected'][i]:.1f}",
                     f"{r['mean_fit_time'][i]:.3f}", mark))
    for line in table(rows, indent="  "):
        print(line)
    print(f"  chosen: {', '.join(f'{k}={v:.6g}' for k, v in est.best_params_.items())} "
          f"(mean {score} {show(est.best_score_)} over the folds)")
    print()
    sys.stdout.flush()
