"""Running an evaluation: one fit per (configuration, split), serially or in a pool, with the
warnings of every fold collected; :func:`cross_validate`."""

from __future__ import annotations

import secrets
import time
import traceback
import warnings
from typing import Any, Callable, Sequence

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import plugins as _plugins
from ..dataset import Dataset, check_regression_Xy, check_Xy, target_warning_once
from ..errors import DataWarning, InvalidOptionError, SolverFailedError
from ..fitting import fit, is_regression, task_mismatch
from ..method import resolve
from ..plugins import get_registry
from ..results import solved_by
from .config import _Config, _make_config
from .metrics import accuracy_score, mae_score, mcc_score, mse_score, r2_score
from .preprocess import SCALINGS, _retrain_estimator, _scale, check_scaling
from .records import CVResult, FoldRecord, Progress, solver_of
from .engine import Task, execute
from .serialize import environment_versions, to_jsonable
from .splits import Split, make_splits

__all__ = ["cross_validate", "EvaluationInterrupted", "AUTO_PARALLEL_SECONDS"]


def _run_fold(X: NDArray, y: NDArray, split: Split, cfg: _Config, raise_errors: bool = False) -> FoldRecord:
    """One fit and its evaluation. A failure (any exception, ``SystemExit`` included: a component
    that calls ``sys.exit`` fails its own fit) becomes the record's error, or propagates with
    ``raise_errors``; ``KeyboardInterrupt`` always propagates."""
    t0 = time.perf_counter()
    base = dict(label=cfg.label, repeat=split.repeat, fold=split.fold, n_train=int(split.train.size),
                n_test=int(split.test.size), train=split.train, test=split.test)
    # the whole target was checked (and a two-valued one warned about) once, before any fold
    with warnings.catch_warnings(record=True) as caught, target_warning_once(given=True):
        warnings.simplefilter("always")
        try:
            Xtr, Xte = _scale(X[split.train], X[split.test], cfg.scale)
            ytr, yte = y[split.train], y[split.test]
            res = fit(Xtr, ytr, method=cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate,
                      loop=cfg.loop, n_features=cfg.n_features, progress=False, **cfg.fit_options, **cfg.params)
            sel_pred = np.asarray(res.predict(Xte))
            if cfg.task == "regression":
                scores = _regression_scores(res, Xtr, ytr, Xte, yte, sel_pred, cfg)
                sel_acc = sel_mcc = None
            else:
                scores = {}
                sel_acc, sel_mcc = accuracy_score(yte, sel_pred), mcc_score(yte, sel_pred)
            y_pred = sel_pred
            # a study's top-k curve retrains on the top k of the ranking and replaces this
            # evaluation (Extras.after_fit): the classifier on the selected features is not trained
            curve_only = cfg.extras is not None and bool(cfg.extras.top_k)
            if cfg.retrain is not None and cfg.task != "regression" and not curve_only:
                cols = res.selected
                if cols.size == 0:
                    warnings.warn("no feature was selected: the retrained classifier predicts the training "
                                  "part's majority class", DataWarning, stacklevel=1)
                    vals, cnt = np.unique(ytr, return_counts=True)
                    y_pred = np.full(yte.shape, vals[np.argmax(cnt)], dtype=ytr.dtype)
                else:
                    clf = _retrain_estimator(cfg.retrain, cfg.retrain_C)
                    clf.fit(Xtr[:, cols], ytr)
                    y_pred = np.asarray(clf.predict(Xte[:, cols]))
            selected = res.selected
            if cfg.groups == "samples":
                selected = split.train[selected]
            n_groups = int(np.asarray(res.support).size)
            rec = FoldRecord(
                **base, ok=True, accuracy=None if scores else accuracy_score(yte, y_pred),
                mcc=None if scores else mcc_score(yte, y_pred), selector_accuracy=sel_acc, selector_mcc=sel_mcc,
                **{k: v for k, v in scores.items() if k != "y_pred"}, n_selected=res.n_selected,
                pct_selected=100.0 * res.n_selected / n_groups if n_groups else 0.0, n_iter=int(res.n_iter),
                converged=bool(res.converged), monotone=bool(res.monotone),
                objective=None if res.objective is None else float(res.objective),
                stop_reason=res.info.get("stop_reason", res.per_class[0].info.get("stop_reason") if res.per_class else None),
                statuses=tuple(getattr(s, "value", str(s)) for s in res.statuses),
                seconds=float(res.info.get("seconds", float("nan"))),
                selected=tuple(int(j) for j in selected), facts=res.facts,
                backend=res.backend, backend_version=_backend_version(res), solved_by=solved_by(res),
                y_pred=scores.get("y_pred", y_pred))
            if cfg.extras is not None:  # a study protocol's top-k curve, random-k baseline (evaluation.protocols)
                rec = cfg.extras.after_fit(rec, res, Xtr, ytr, Xte, yte, split, cfg)
        except (Exception, SystemExit) as exc:  # recorded, counted and reported, never dropped; Ctrl-C
            # (KeyboardInterrupt) stops the run, and a task cancellation (CancelledError) is its engine's
            if raise_errors:
                raise
            status = None
            if isinstance(exc, SolverFailedError) and exc.status is not None:
                status = getattr(exc.status, "value", str(exc.status))
            text = str(exc)
            if isinstance(exc, SystemExit):  # str() is only the exit code
                text = f"a component raised SystemExit({exc.code!r}) during the fit (sys.exit, argparse, ...)"
            rec = FoldRecord(**base, ok=False, error_type=type(exc).__name__, error=text, solver_status=status,
                             traceback=traceback.format_exc())
    rec = attrs.evolve(rec, total_seconds=time.perf_counter() - t0,
                       warnings=tuple((w.category, str(w.message)) for w in caught))
    return rec


def _regression_scores(res, Xtr, ytr, Xte, yte, sel_pred, cfg) -> dict:
    """A regression fold's scores: R², MSE and MAE of the evaluated model's test predictions — the
    selector's own fitted values, or (``retrain=``) a regressor refitted on the training part's
    selected features ("ls": ordinary least squares with an intercept, the selector's support
    without its shrinkage) — and of the selector's own model; ``y_pred`` the evaluated ones."""
    y_pred = sel_pred
    if cfg.retrain is not None:
        cols = res.selected
        if cols.size == 0:
            warnings.warn("no feature was selected: the refitted regressor predicts the training part's mean",
                          DataWarning, stacklevel=1)
            y_pred = np.full(yte.shape, float(np.mean(ytr)))
        else:
            reg = _retrain_estimator(cfg.retrain, cfg.retrain_C)
            reg.fit(Xtr[:, cols], ytr)
            y_pred = np.asarray(reg.predict(Xte[:, cols]), dtype=float)
    return {"r2": r2_score(yte, y_pred), "mse": mse_score(yte, y_pred), "mae": mae_score(yte, y_pred),
            "selector_r2": r2_score(yte, sel_pred), "selector_mse": mse_score(yte, sel_pred),
            "selector_mae": mae_score(yte, sel_pred), "y_pred": y_pred}


def _backend_version(res) -> str | None:
    info = res.info if not res.per_class else res.per_class[0].info
    v = info.get("backend_version")
    return None if v is None else str(v)



def _as_data(data_or_X, y, scale: str | None = None, *, regression: bool = False,
             labels=None) -> tuple[NDArray, NDArray, dict]:
    """``(X, y, dataset info)`` checked and copied (a sparse ``X`` stays CSR; with a centring
    ``scale`` it is refused here, before any fold runs: :func:`~.preprocess.check_scaling`).
    ``regression``: ``y`` is a real target (:func:`~fsframe.dataset.check_regression_Xy`), the
    info has ``task = "regression"`` and no classes."""
    if isinstance(data_or_X, Dataset) and data_or_X.is_regression != regression:
        raise InvalidOptionError(task_mismatch(labels, regression, data_or_X))
    if regression and isinstance(data_or_X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        d = data_or_X
        X = d.X.copy() if d.is_sparse else np.array(d.X, dtype=np.float64)
        if scale is not None:
            check_scaling(X, scale)
        return X, np.array(d.y, dtype=np.float64), {
            "name": d.name, "n_samples": d.n_samples, "n_features": d.n_features,
            "task": "regression", "classes": [], "class_counts": {}, "feature_names": list(d.feature_names)}
    if regression:
        if y is None:
            raise InvalidOptionError("y is required when the data is an array")
        cols = getattr(data_or_X, "columns", None)
        X, yy = check_regression_Xy(data_or_X, y)
        if scale is not None:
            check_scaling(X, scale)
        names = [str(c) for c in cols] if cols is not None and len(cols) == X.shape[1] else \
            [f"x{j}" for j in range(X.shape[1])]
        return X, yy, {"name": "data", "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
                       "task": "regression", "classes": [], "class_counts": {}, "feature_names": names}
    if isinstance(data_or_X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        d = data_or_X
        X = d.X.copy() if d.is_sparse else np.array(d.X, dtype=np.float64)
        yy, names, name = np.array(d.y), list(d.feature_names), d.name
    else:
        if y is None:
            raise InvalidOptionError("y is required when the data is an array (or pass a fsframe.Dataset)")
        cols = getattr(data_or_X, "columns", None)
        X, yy = check_Xy(data_or_X, y)
        names = [str(c) for c in cols] if cols is not None and len(cols) == X.shape[1] else \
            [f"x{j}" for j in range(X.shape[1])]
        name = "data"
    if scale is not None:
        check_scaling(X, scale)
    classes, counts = np.unique(yy, return_counts=True)
    info = {"name": name, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
            "classes": to_jsonable(classes.tolist()),
            "class_counts": {str(c): int(k) for c, k in zip(classes.tolist(), counts.tolist())},
            "feature_names": names}
    return X, yy, info


def _check_common(scale, n_jobs, on_error, retrain, retrain_C):
    if scale not in SCALINGS:
        raise InvalidOptionError(f"scale={scale!r}; use one of {list(SCALINGS)}")
    if n_jobs != "auto" and (isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0):
        raise InvalidOptionError(f"n_jobs must be a non-zero integer (-1: all cores) or 'auto', got {n_jobs!r}")
    if on_error not in ("record", "raise"):
        raise InvalidOptionError(f"on_error={on_error!r}; use 'record' or 'raise'")
    if retrain is not None:
        _retrain_estimator(retrain, 1.0)  # validates the spec
    try:
        C = float(retrain_C)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"retrain_C must be a positive number, got {retrain_C!r}") from None
    if not C > 0:
        raise InvalidOptionError(f"retrain_C must be positive, got {retrain_C!r}")
    return C


AUTO_PARALLEL_SECONDS = 10.0
"""``n_jobs="auto"`` runs the fits in parallel only when the serial work left after the first fit
of each configuration is estimated above this (starting worker processes costs seconds)."""


def _execute(X, y, splits, configs, n_jobs, progress, on_error, dask=None
             ) -> tuple[list[list[FoldRecord | None]], bool]:
    """Every (configuration, split) fit; returns the records (``None`` for fits that never ran) and
    whether a KeyboardInterrupt stopped the run (the records finished before it are kept). The
    cells run through :func:`fsframe.evaluation.engine.execute`, the runner of every evaluation
    (``fsframe run`` studies included)."""
    tasks = [(ci, si) for ci in range(len(configs)) for si in range(len(splits))]
    out: list[list[FoldRecord | None]] = [[None] * len(splits) for _ in configs]
    total = len(tasks)
    raise_errors = on_error == "raise"
    done = 0

    def run(pairs, jobs, engine) -> bool:
        cells = [Task(0, splits[si], configs[ci], f"{configs[ci].label} repeat {splits[si].repeat} fold "
                      f"{splits[si].fold}") for ci, si in pairs]

        def record(i, rec, clock):
            nonlocal done
            done += 1
            ci, si = pairs[i]
            out[ci][si] = rec
            if progress is not None:
                progress(Progress(done, total, rec, eta=clock.eta(), slowest=clock.slowest()))

        return execute(_run_fold, [(X, y)], cells, n_jobs=jobs, dask=engine, raise_errors=raise_errors,
                       on_done=record)

    if n_jobs == "auto" and dask is None:
        # time the first fit of every configuration here, then decide from the estimated rest
        if run([(ci, 0) for ci in range(len(configs))], 1, None):
            return out, True
        tasks = [(ci, si) for ci, si in tasks if si > 0]
        rest = sum(out[ci][0].total_seconds for ci, _ in tasks)
        from joblib import cpu_count

        cores = cpu_count()
        n_jobs = min(cores, len(tasks)) if rest > AUTO_PARALLEL_SECONDS and cores > 1 else 1
    elif n_jobs == "auto":
        n_jobs = -1
    if (n_jobs != 1 or dask is not None) and len(tasks) > 1:
        local = _runtime_components(configs)
        if local:
            warnings.warn(f"{', '.join(local)} come from plugins registered at run time "
                          "(fsframe.plugins.register), which worker processes do not have; running the fits "
                          "serially. Install the plugin as a package (entry point) to run them in parallel",
                          RuntimeWarning, stacklevel=4)
            n_jobs, dask = 1, None
    return out, run(tasks, n_jobs, dask)


def _runtime_components(configs) -> list[str]:
    """Components of ``configs`` provided by plugins registered in this process only."""
    runtime = set(_plugins.runtime_plugin_names())
    if not runtime:
        return []
    reg = get_registry()
    found = []
    for cfg in configs:
        names = [("method", cfg.method), ("backend", cfg.backend)]
        names += [(kind, (cfg.components.get(kind) or {}).get("name")) for kind in ("formulation", "surrogate", "loop")]
        for kind, name in names:
            entry = reg.entries.get(kind, {}).get(name) if name else None
            if entry is not None and entry.plugin in runtime:
                found.append(f"{kind} {name!r}")
    return sorted(set(found))


def _emit_warnings(results: Sequence[CVResult]) -> None:
    for res in results:
        for w in res.warnings:
            msg = w["message"]
            if res.n_folds > 1:
                msg = f"{res.label}: {msg} [in {w['folds']} of {res.n_folds} fits]"
            warnings.warn(msg, w["category"], stacklevel=3)


class EvaluationInterrupted(KeyboardInterrupt):
    """A KeyboardInterrupt (Ctrl-C) stopped :func:`cross_validate` or :func:`compare`.

    It is a ``KeyboardInterrupt``, so code that does not expect it stops as usual; ``result``
    holds the fits that finished before it: a :class:`CVResult` (or :class:`CompareResult`) whose
    ``folds`` are the finished fits only (``interrupted`` is true, ``n_planned`` counts the fits
    planned), with its summaries, report and JSON export over those.
    """

    def __init__(self, result):
        done = sum(r.n_folds for r in getattr(result, "results", (result,)))
        planned = sum(r.n_planned or r.n_folds for r in getattr(result, "results", (result,)))
        super().__init__(f"interrupted after {done} of {planned} fits")
        self.result = result
        self.done = done
        self.planned = planned


def _run(data_or_X, y, entries, *, cv, repeats, scale, n_jobs, random_state, n_features, retrain, retrain_C,
         progress, on_error, dask=None) -> tuple[list[CVResult], dict]:
    t0 = time.perf_counter()
    C = _check_common(scale, n_jobs, on_error, retrain, retrain_C)
    regression = _regression_task(entries, retrain)
    X, yy, dsinfo = _as_data(data_or_X, y, scale, regression=regression, labels=[label for label, _ in entries])
    if random_state is None:
        random_state = secrets.randbelow(2**31)  # drawn, recorded, reproducible afterwards
    configs = [_make_config(label, spec, n_features=n_features, scale=scale, retrain=retrain, retrain_C=C,
                            n_columns=X.shape[1], n_samples=X.shape[0],
                            n_classes=0 if regression else len(np.unique(yy)))
               for label, spec in entries]
    labels = [c.label for c in configs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise InvalidOptionError(f"duplicate labels {dup}; give each configuration its own label")
    splits, protocol = make_splits(yy, cv, repeats=repeats, random_state=random_state, X=X, regression=regression)
    if regression:
        protocol = dict(protocol, task="regression")
    retrain_desc = None
    if retrain is not None:
        retrain_desc = (f"SVC(kernel='linear', C={C:g})" if retrain == "svm" else
                        f"LinearSVC(C={C:g})" if retrain == "linear-svc" else
                        "LinearRegression()" if retrain == "ls" else repr(retrain))
    per, interrupted = _execute(X, yy, splits, configs, n_jobs, progress, on_error, dask)
    seconds = time.perf_counter() - t0
    results = []
    for cfg, slots in zip(configs, per):
        folds = [f for f in slots if f is not None]
        versions = environment_versions({"solver": solver_of(folds, cfg.backend)})
        prot = dict(protocol, scale=scale, n_features=cfg.n_features, retrain=retrain_desc, groups=cfg.groups)
        results.append(CVResult(label=cfg.label, method=cfg.method, components=cfg.components,
                                params=to_jsonable(cfg.resolved_params), fit_options=to_jsonable(cfg.fit_options),
                                backend=cfg.backend, protocol=prot, dataset=dsinfo, folds=tuple(folds),
                                seconds=seconds, versions=versions, n_planned=len(splits)))
    return results, dict(protocol, scale=scale, n_features=n_features, retrain=retrain_desc), interrupted


def _regression_task(entries, retrain) -> bool:
    """Whether the configurations fit a real target (``Formulation.task == "regression"``); a
    mix of regression and classification methods, or a retrain for the other task, is refused."""
    flags = []
    for label, spec in entries:
        names = {k: spec.get(k) for k in ("formulation", "surrogate", "loop")}
        names = {k: v for k, v in names.items() if isinstance(v, str) or v is None}
        try:
            res = resolve(spec.get("method"), **names)
        except Exception:  # bad components are reported, typed, where the configuration is built
            continue
        flags.append((label, is_regression(res.formulation)))
    kinds = {f for _, f in flags}
    if len(kinds) > 1:
        reg = [lab for lab, f in flags if f]
        raise InvalidOptionError(f"{reg} fit a real target and the other methods class labels: evaluate regression "
                                 "and classification methods separately")
    regression = kinds == {True}
    if retrain is not None and isinstance(retrain, str) and (retrain == "ls") != regression:
        raise InvalidOptionError(f"retrain={retrain!r} is for " + ("regression" if retrain == "ls" else "classification")
                                 + " methods; " + ("use 'ls' or a scikit-learn regressor" if regression else
                                                   "use 'svm', 'linear-svc' or a scikit-learn classifier"))
    return regression


def _label_for(method, formulation, surrogate, loop) -> str:
    if method is not None and not (formulation or surrogate or loop):
        return method
    parts = [method] if method else []
    parts += [p for p in (formulation, surrogate, loop) if p]
    return "+".join(parts)


def cross_validate(
    data_or_X: Dataset | ArrayLike,
    y: ArrayLike | None = None,
    method: str | None = "fsv",
    *,
    cv: Any = 10,
    repeats: int = 1,
    scale: str = "standard",
    n_jobs: int = 1,
    random_state: int | None = 0,
    n_features: int | None = None,
    retrain: Any = None,
    retrain_C: float = 1.0,
    formulation: str | None = None,
    surrogate: str | None = None,
    loop: str | None = None,
    progress: Callable[[Progress], None] | None = None,
    on_error: str = "record",
    dask: Any = None,
    **params,
) -> CVResult:
    """Cross-validate a feature-selection method.

    Parameters
    ----------
    data_or_X : Dataset or array, shape (n_samples, n_features)
    y : array, shape (n_samples,)
        Required with an array, forbidden with a Dataset.
    method : str
        A registered method (``fsframe methods``); or ``None`` with ``formulation=``, ``loop=``
        (and ``surrogate=``) for any compatible triple.
    cv : int, float, splitter or iterable of (train, test)
        ``k`` for stratified k-fold CV; a float in (0, 1) for ``repeats`` stratified random splits
        with that test fraction; see :func:`make_splits`.
    repeats : int
        Repetitions of k-fold CV with fresh shuffles (001: ``cv=10, repeats=10``), or the number of
        random splits for a float ``cv`` (002: ``cv=0.2, repeats=10``).
    scale : {"standard", "minmax", "maxabs", "none"}
        Fitted on each training part only, applied to its test part.
    n_jobs : int or "auto"
        Parallel fits (joblib processes); ``-1`` uses every core; ``"auto"`` runs the first fit of
        each configuration in this process and the rest in parallel only if they are estimated to
        take more than :data:`AUTO_PARALLEL_SECONDS` serially. Results do not depend on it.
    random_state : int or None
        Seed of the splits. ``None`` draws one, which is recorded in ``result.protocol``.
    n_features : int, optional
        Select exactly this many features in every fold (002 §3.1).
    retrain : None, "svm", "linear-svc" or a scikit-learn classifier
        Evaluate a classifier retrained on the selected features of each training part (002:
        ``"svm"``, a standard L2 SVM ``SVC(kernel="linear", C=retrain_C)``) instead of the
        selector's own sparse model, which is still reported as ``selector_accuracy``.
    progress : callable, optional
        Called with a :class:`Progress` after every fit.
    on_error : {"record", "raise"}
        ``"record"`` (default): a fit that raises is kept as a failed :class:`FoldRecord` with its
        error and counted in the summary; ``"raise"``: the first failure propagates.
    dask : None, "local", a scheduler address or a ``distributed.Client``
        Run the fits on a Dask cluster instead of joblib (``"local"``: a ``LocalCluster`` of
        ``n_jobs`` single-threaded workers on 127.0.0.1; needs ``pip install "fsframe[dask]"``).
        Results are the same bits as a serial run (docs/experiments.md).
    **params
        Component parameters and fit options, as for :func:`fsframe.fit` (``C``, ``alpha``,
        ``max_iter``, ``backend``, ``time_limit``...).

    Returns
    -------
    CVResult

    Raises
    ------
    InvalidOptionError, UnknownComponentError, IncompatibleComponentsError, BackendUnavailableError
        before any fit, for bad parameters or components.
    DataError
        for unusable data or a protocol the data cannot support.
    EvaluationInterrupted
        on Ctrl-C (a ``KeyboardInterrupt``) during the fits; its ``result`` holds the fits that
        finished.

    Warnings raised inside the folds are collected per fold (``FoldRecord.warnings``) and
    re-issued once per kind with the number of fits they occurred in.
    """
    spec = dict(params, method=method, formulation=formulation, surrogate=surrogate, loop=loop)
    label = _label_for(method, formulation, surrogate, loop)
    results, _, interrupted = _run(data_or_X, y, [(label, spec)], cv=cv, repeats=repeats, scale=scale, n_jobs=n_jobs,
                      random_state=random_state, n_features=n_features, retrain=retrain, retrain_C=retrain_C,
                      progress=progress, on_error=on_error, dask=dask)
    _emit_warnings(results)
    if interrupted:
        raise EvaluationInterrupted(results[0])
    return results[0]
