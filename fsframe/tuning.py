""":class:`FSSelectorCV`: the sparsity parameter (and/or the number of features) chosen by k-fold
cross-validation over an automatic grid, in scikit-learn's ``...CV`` style
(``LogisticRegressionCV``, ``LassoCV``).

How a fit goes:

1. the grid: for the method's sparsity parameter (:attr:`MethodSpec.sparsity`, or ``tune=``),
   the automatic grid of :func:`fsframe.path` on all the data given to ``fit`` — from where the
   first feature enters to where the support stops growing (:mod:`fsframe.grids`); for
   ``n_features``, log-spaced integers from 1 (:func:`fsframe.grids.integer_grid`); or the lists
   given in ``grid=``;
2. each fold fits one warm-started path over the grid on its training part and scores every
   point on its test part (one cell of the evaluation engine per fold:
   serially, ``n_jobs`` processes or a Dask cluster, :func:`fsframe.evaluation.engine.execute`);
3. the rule picks a point: ``"best"`` the highest mean score (ties: fewer features);
   ``"1se"`` the fewest mean selected features among the points within one standard error of
   the best mean score (the one-standard-error rule of Breiman et al. / Hastie et al., toward the
   sparser model);
4. the estimator is refitted on all the data at the chosen point (``coef_``, ``support_`` ...
   as :class:`~fsframe.estimator.FSSelector`).

``cv_results_`` has :class:`sklearn.model_selection.GridSearchCV`'s keys (``params``,
``param_<name>``, ``split<k>_test_score``, ``mean_test_score``, ``std_test_score``,
``rank_test_score``, ``mean_fit_time``, ``std_fit_time``) plus the selected features per point
(``split<k>_n_selected``, ``mean_n_selected``, ``std_n_selected``).
"""

from __future__ import annotations

import numbers
import time
import warnings
from typing import Any, Mapping

import attrs
import numpy as np
from . import errors
from .dataset import target_warning_once
from .estimator import FSRegressor, FSSelector
from .evaluation.engine import Task, execute
from .evaluation.splits import make_splits
from .grids import MAX_POINTS, POINTS_PER_DECADE, declared_parameter, integer_grid, no_grid_message
from .paths import path
from .progress import progress_bar

__all__ = ["FSSelectorCV", "FSRegressorCV", "RULES"]

RULES = ("best", "1se")
"""``best``: the highest mean test score; ``1se``: the fewest mean selected features within one
standard error of the best mean score."""


@attrs.frozen(eq=False)
class _Cell:
    """What one fold's cell needs (plain data: it travels to worker processes)."""

    method: str | None
    components: dict  # kind -> {"name": ...}, for the engine's check of installed components
    fit_kwargs: dict
    inner: str  # the parameter each path sweeps
    inner_values: tuple
    outer_values: tuple  # n_features per path when both are tuned, else (None,)
    backend: str | None = None  # a registered name, None for "auto" (what the engine checks on a worker)
    label: str = "tune"
    error_score: object = "raise"
    score: str = "accuracy"  # the PathPoint attribute scored: "accuracy", or "r2" for a regression


def _fold_scores(X, y, split, cell: _Cell, raise_errors: bool) -> dict:
    """One fold: a warm-started path over the grid on the training part, scored on the test part
    (one path per ``n_features`` value when both are tuned). Module level: picklable.

    A point whose fit fails with a :class:`~fsframe.errors.SolverFailedError` stops the path; with
    a numeric ``cell.error_score`` the points are then fitted one by one and a failing one scores
    ``error_score`` (its selected count and time are NaN, its error is kept)."""
    with target_warning_once(given=True):  # the refit on the whole target warns, once
        return _fold_path_scores(X, y, split, cell)


def _fold_path_scores(X, y, split, cell: _Cell) -> dict:
    """:func:`_fold_scores`' work."""
    Xtr, ytr, Xte, yte = X[split.train], y[split.train], X[split.test], y[split.test]
    scores, n_sel, seconds, failed = [], [], [], []
    for r in cell.outer_values:
        kw = dict(cell.fit_kwargs)
        if r is not None:
            kw["n_features"] = int(r)
        try:
            points = path(Xtr, ytr, cell.method, validation=(Xte, yte), progress=False,
                          **{**kw, cell.inner: list(cell.inner_values)}).points
            rows = [(_score(q, cell.score), q.n_selected, q.seconds) for q in points]
        except errors.SolverFailedError:
            if isinstance(cell.error_score, str):
                raise
            rows = []
            for v in cell.inner_values:  # one point at a time: only the failing points lose their score
                try:
                    q = path(Xtr, ytr, cell.method, validation=(Xte, yte), progress=False,
                             **{**kw, cell.inner: [v]}).points[0]
                    rows.append((_score(q, cell.score), q.n_selected, q.seconds))
                except errors.SolverFailedError as exc:
                    failed.append(f"{cell.inner}={v:g}" + ("" if r is None else f", n_features={r}") + f": {exc}")
                    rows.append((float(cell.error_score), np.nan, np.nan))
        scores += [a for a, _, _ in rows]
        n_sel += [n for _, n, _ in rows]
        seconds += [t for _, _, t in rows]
    return {"score": scores, "n_selected": n_sel, "seconds": seconds, "failed": failed}


def _score(point, name: str) -> float:
    """A path point's test score ``name``. R² on a constant test target (undefined) is
    scikit-learn's ``r2_score`` default (``force_finite``): 1 for exact predictions, else 0 — the
    score ``GridSearchCV`` would give that fold."""
    v = getattr(point, name)
    if v is None and name == "r2" and point.mse is not None:
        return 1.0 if point.mse == 0.0 else 0.0
    return np.nan if v is None else float(v)


class FSSelectorCV(FSSelector):
    """:class:`~fsframe.estimator.FSSelector` whose sparsity is chosen by cross-validation over an
    automatic grid (see the module docstring).

    Parameters
    ----------
    method : str, default="l1-svm"
        A registered method (``fsframe.list_methods()``).
    tune : str, tuple of str or None
        What to choose: None (default) the method's declared sparsity parameter
        (``fsframe methods M`` names it: ``C`` for ``l1-svm``, ``n_features`` for ``em-l0``...),
        a parameter name (``"C"``, ``"delta"``, ``"n_features"``), or a parameter and
        ``"n_features"`` together (their product grid: one path over the parameter per number of
        features).
    grid : dict, optional
        Lists of values by name (``{"C": [0.1, 1, 10]}``) instead of the automatic grid.
    cv : int or splitter, default=5
        Stratified k-fold (shuffled with ``random_state``) or any split
        :func:`fsframe.evaluation.make_splits` takes.
    rule : {"best", "1se"}, default="best"
    n_jobs : int, default=1
        Folds in parallel (joblib processes; -1: every core).
    dask : None, "local", a scheduler address or a ``distributed.Client``
        Run the folds on a Dask cluster instead.
    points_per_decade, max_points : int
        Density and length of the automatic grid.
    random_state : int, default=0
        Seed of the fold shuffling.
    error_score : "raise" or float, default=np.nan
        The score of a grid point whose fit fails in a fold with a
        :class:`~fsframe.errors.SolverFailedError` (solver trouble at that point), as
        ``GridSearchCV``'s: with a number the other points keep theirs, a point with a NaN mean is
        never chosen, and a :class:`~fsframe.errors.ConvergenceWarning` counts the failures and
        shows the first; ``"raise"`` propagates the error.
    progress : None, bool or callable
        One step per finished fold (:func:`fsframe.progress.progress_bar`); None: only in an
        interactive session, for runs over 2 s.
    C, alpha, n_features, max_iter, tol, formulation, surrogate, loop, backend, params
        As in :class:`~fsframe.estimator.FSSelector`, held fixed (a tuned parameter must not be
        fixed too).

    Attributes
    ----------
    best_params_ : dict
        The chosen value of each tuned parameter.
    best_score_ : float
        Its mean test accuracy over the folds.
    best_index_ : int
        Its row in ``cv_results_``.
    cv_results_ : dict of arrays
        One entry per grid point (see the module docstring).
    grid_ : dict
        The grid of each tuned parameter; ``grid_rule_`` how an automatic one was made
        (:class:`fsframe.grids.GridRule`, or None).
    n_splits_ : int
    refit_time_ : float
    coef_, intercept_, support_, n_iter_, classes_, n_features_in_, result_
        Of the model refitted on all the data at ``best_params_``, as for ``FSSelector``.
    """

    def __init__(self, method: str | None = "l1-svm", *, tune=None, grid: Mapping | None = None, cv=5,
                 rule: str = "best", n_jobs: int = 1, dask=None, points_per_decade: int = POINTS_PER_DECADE,
                 max_points: int = MAX_POINTS, random_state: int | None = 0, progress=None, error_score=np.nan,
                 C: float | None = None, alpha: float | None = None, n_features: int | None = None,
                 max_iter: int | None = None, tol: float | None = None, formulation: str | None = None,
                 surrogate: str | None = None, loop: str | None = None, backend: str = "auto",
                 params: Mapping[str, Any] | None = None):
        super().__init__(method, C=C, alpha=alpha, n_features=n_features, max_iter=max_iter, tol=tol,
                         formulation=formulation, surrogate=surrogate, loop=loop, backend=backend, params=params)
        self.tune = tune
        self.grid = grid
        self.cv = cv
        self.rule = rule
        self.n_jobs = n_jobs
        self.dask = dask
        self.points_per_decade = points_per_decade
        self.max_points = max_points
        self.random_state = random_state
        self.progress = progress
        self.error_score = error_score

    # -- what is tuned ---------------------------------------------------------------------------
    def _tuned(self) -> tuple[str, ...]:
        tune = self.tune
        if tune is None:
            declared = declared_parameter(self.method)
            if declared is None:
                raise errors.InvalidOptionError(no_grid_message(self.method) + "; or pass tune= and grid=")
            tune = (declared,)
        elif isinstance(tune, str):
            tune = (tune,)
        else:
            tune = tuple(tune)
        if not tune or len(tune) > 2 or not all(isinstance(t, str) and t for t in tune) or len(set(tune)) < len(tune):
            raise errors.InvalidOptionError(f"tune must be a parameter name, or a parameter and 'n_features', got "
                                            f"{self.tune!r}")
        if len(tune) == 2 and "n_features" not in tune:
            raise errors.InvalidOptionError(f"tune two parameters only as a parameter and 'n_features', got {tune!r}")
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, (int, np.integer)) or self.n_jobs == 0:
            raise errors.InvalidOptionError(f"n_jobs must be a non-zero integer (-1: every core), got {self.n_jobs!r}")
        if not (isinstance(self.error_score, str) and self.error_score == "raise") and not (
                isinstance(self.error_score, numbers.Real) and not isinstance(self.error_score, bool)):
            raise errors.InvalidOptionError(f"error_score must be 'raise' or a number, got {self.error_score!r}")
        if self.rule not in RULES:
            raise errors.InvalidOptionError(f"rule must be one of {RULES}, got {self.rule!r}")
        return tuple(sorted(tune, key=lambda t: t == "n_features"))  # the parameter first, n_features last

    def _fixed(self, tuned) -> dict:
        kw = self._fit_kwargs()
        kw.pop("progress", None)
        for t in tuned:
            given = self.n_features if t == "n_features" else kw.get(t)
            if given is not None:
                raise errors.InvalidOptionError(f"{t!r} is tuned and also fixed (= {given!r}): drop one of them")
        if "n_features" not in tuned and self.n_features is not None:
            kw["n_features"] = self.n_features
        return kw

    def _grids(self, X, y, tuned, fixed) -> tuple[dict, object]:
        """The grid of each tuned parameter (given, or automatic: the full-data path), and the
        rule that made the automatic one."""
        given = {} if self.grid is None else dict(self.grid)
        unknown = sorted(set(given) - set(tuned))
        if unknown:
            raise errors.InvalidOptionError(f"grid names {unknown}, which are not tuned ({list(tuned)})")
        grids, rule = {}, None
        for t in tuned:
            if t in given:
                values = list(np.asarray(given[t], dtype=object).ravel())
                if not values:
                    raise errors.InvalidOptionError(f"the grid of {t!r} is empty")
                grids[t] = tuple(v.item() if isinstance(v, np.generic) else v for v in values)
            elif t == "n_features":
                grids[t] = integer_grid(X.shape[1], self.points_per_decade)
            else:
                base = {k: v for k, v in fixed.items() if k != "n_features"}
                p = path(X, y, self.method, formulation=self.formulation, surrogate=self.surrogate, loop=self.loop,
                         backend=self.backend, points_per_decade=self.points_per_decade, max_points=self.max_points,
                         progress=False, **base, **{t: "auto"})
                grids[t], rule = tuple(p.values), p.rule
        return grids, rule

    # -- fitting -----------------------------------------------------------------------------------
    def fit(self, X, y):
        """Choose the tuned parameters by cross-validation, then refit on all of ``X, y``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
        y : array-like, shape (n_samples,)

        Returns
        -------
        self
        """
        with target_warning_once():  # a two-valued real target: one warning, not one per fold and refit
            return self._fit_cv(X, y)

    def _fit_cv(self, X, y):
        """:meth:`fit`'s work."""
        X, y_idx, splits = self._cv_data(X, y)
        tuned = self._tuned()
        fixed = self._fixed(tuned)
        grids, rule = self._grids(X, y_idx, tuned, fixed)
        inner = tuned[0]
        outer = grids["n_features"] if len(tuned) == 2 else (None,)
        comps = {k: {"name": v} for k, v in (("formulation", self.formulation), ("surrogate", self.surrogate),
                                              ("loop", self.loop)) if v}
        run_kw = {k: v for k, v in fixed.items()}
        run_kw.update(formulation=self.formulation, surrogate=self.surrogate, loop=self.loop, backend=self.backend)
        cell = _Cell(self.method, comps, run_kw, inner, grids[inner], tuple(outer),
                     backend=self.backend if isinstance(self.backend, str) and self.backend != "auto" else None,
                     error_score=self.error_score, score=self._score_name)
        tasks = [Task(0, s, cell, name=f"fold {s.fold}") for s in splits]
        folds: list = [None] * len(tasks)
        who = type(self).__name__
        bar = progress_bar(self.progress, total=len(tasks), desc=f"{who} {self.method or ''} {'/'.join(tuned)}")

        def done(i, rec, _clock):
            folds[i] = rec
            bar.step(rec, f"fold {i + 1} done")

        try:
            interrupted = execute(_fold_scores, [(X, y_idx)], tasks, n_jobs=self.n_jobs, dask=self.dask,
                                  raise_errors=True, on_done=done)
        finally:
            bar.close()
        if interrupted or any(f is None for f in folds):
            raise KeyboardInterrupt(f"{who} was interrupted before every fold finished")
        failed = [msg for f in folds for msg in f["failed"]]
        if failed:
            warnings.warn(f"{who}: {len(failed)} fit(s) of grid points failed and score error_score="
                          f"{self.error_score!r} (first: {failed[0]})", errors.ConvergenceWarning, stacklevel=2)
        combos = [({inner: v} if r is None else {inner: v, "n_features": int(r)}) for r in outer
                  for v in grids[inner]]
        self.cv_results_ = _cv_results(combos, folds)
        self.best_index_ = _choose(self.cv_results_, self.rule, len(folds), who)
        self.best_params_ = dict(combos[self.best_index_])
        self.best_score_ = float(self.cv_results_["mean_test_score"][self.best_index_])
        self.grid_ = {k: list(v) for k, v in grids.items()}
        self.grid_rule_ = rule
        self.n_splits_ = len(splits)
        self.tuned_ = tuned
        t0 = time.perf_counter()
        self._refit(X, y)
        self.refit_time_ = time.perf_counter() - t0
        return self

    def _refit(self, X, y) -> None:
        """The FSSelector fit at ``best_params_`` (a tuned component parameter goes through
        ``params``, as FSSelector routes every parameter it has no argument for)."""
        best = dict(self.best_params_)
        saved = (self.n_features, self.params, self.C, self.alpha)
        extra = dict(self.params or {})
        if "n_features" in best:
            self.n_features = best.pop("n_features")
        for k, v in best.items():
            if k in ("C", "alpha"):
                setattr(self, k, v)
            else:
                extra[k] = v
        self.params = extra or saved[1]
        try:
            self._fit_once(X, y)
        finally:
            self.n_features, self.params, self.C, self.alpha = saved

    # -- what the regression flavour changes ----------------------------------------------------
    _score_name = "accuracy"
    """The path point's test score the folds report (:class:`FSRegressorCV`: ``"r2"``)."""

    def _cv_data(self, X, y) -> tuple:
        """``(X, the y the folds fit, splits)``: class codes and stratified folds, each training
        part a fittable classification."""
        self._refuse_regression()
        X, _, y_idx = self._training_data(X, y)
        splits, _ = make_splits(y_idx, self.cv, random_state=self.random_state, X=X)
        _check_training_parts(splits, y_idx)
        return X, y_idx, splits

    def _fit_once(self, X, y) -> None:
        """The one fit on all the data at the chosen point."""
        FSSelector.fit(self, X, y)


class FSRegressorCV(FSRegressor, FSSelectorCV):
    """:class:`~fsframe.estimator.FSRegressor` whose sparsity is chosen by cross-validation, as
    :class:`FSSelectorCV` chooses a classifier's (the same grids, rules and ``cv_results_``), in
    scikit-learn's ``LassoCV`` style: the folds are shuffled k-fold (not stratified: the target
    is real) and a grid point scores the coefficient of determination R² of its fitted values on
    each test part (scikit-learn's ``r2_score``, whose default gives a constant test target 1 for
    exact predictions, else 0; ``best_score_`` is its mean), as ``GridSearchCV`` scores a regressor.

    Parameters are :class:`FSSelectorCV`'s; the method (default ``"l1-ls"``) must fit a real
    target (``l1-ls``, ``l0-ls``, ``em-ls``, ``log-ls``: ``fsframe methods``), otherwise ``fit``
    raises :class:`~fsframe.errors.InvalidOptionError`. The refit is an ``FSRegressor`` fit:
    ``coef_`` of shape ``(n_features_in_,)``, a float ``intercept_``, ``predict`` the fitted
    values, ``score`` R².

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 8))
    >>> y = X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=60)
    >>> est = FSRegressorCV("l1-ls", cv=3).fit(X, y)
    >>> est.get_support().nonzero()[0].tolist(), est.best_score_ > 0.95
    ([0, 3], True)
    """

    fit = FSSelectorCV.fit
    _score_name = "r2"

    def __init__(self, method: str | None = "l1-ls", *, tune=None, grid: Mapping | None = None, cv=5,
                 rule: str = "best", n_jobs: int = 1, dask=None, points_per_decade: int = POINTS_PER_DECADE,
                 max_points: int = MAX_POINTS, random_state: int | None = 0, progress=None, error_score=np.nan,
                 C: float | None = None, alpha: float | None = None, n_features: int | None = None,
                 max_iter: int | None = None, tol: float | None = None, formulation: str | None = None,
                 surrogate: str | None = None, loop: str | None = None, backend: str = "auto",
                 params: Mapping[str, Any] | None = None):
        FSSelectorCV.__init__(self, method, tune=tune, grid=grid, cv=cv, rule=rule, n_jobs=n_jobs, dask=dask,
                              points_per_decade=points_per_decade, max_points=max_points,
                              random_state=random_state, progress=progress, error_score=error_score, C=C,
                              alpha=alpha, n_features=n_features, max_iter=max_iter, tol=tol,
                              formulation=formulation, surrogate=surrogate, loop=loop, backend=backend,
                              params=params)

    def _cv_data(self, X, y) -> tuple:
        """``(X, y, splits)``: a dense X and a real target checked as :class:`FSRegressor` checks
        them, shuffled k-fold splits, each training part at least 2 samples of a non-constant
        target."""
        X, y = self._regression_data(X, y)
        splits, _ = make_splits(y, self.cv, random_state=self.random_state, X=X, regression=True)
        for s in splits:
            part = y[s.train]
            if part.size < 2 or np.all(part == part[0]):
                raise errors.DataError(
                    f"FSRegressorCV: the training part of fold {s.fold} has a constant target ({part.size} samples); "
                    "use fewer folds (cv=...) or more samples")
            if s.test.size < 2:  # R² of one test sample is undefined (scikit-learn's r2_score gives NaN)
                raise errors.DataError(
                    f"FSRegressorCV: the test part of fold {s.fold} has {s.test.size} sample(s); R² needs at least 2: "
                    "use fewer folds (cv=...) or more samples")
        return X, y, splits

    def _fit_once(self, X, y) -> None:
        FSRegressor.fit(self, X, y)


def _check_training_parts(splits, y_idx) -> None:
    """Every fold's training part must be a fittable dataset: two samples of every class (a class
    missing from it altogether is allowed; its test samples are simply misclassified)."""
    for s in splits:
        classes, counts = np.unique(y_idx[s.train], return_counts=True)
        if classes.size < 2 or counts.min() < 2:
            which = "one class" if classes.size < 2 else f"{counts.min()} sample of a class"
            raise errors.DataError(
                f"FSSelectorCV: the training part of fold {s.fold} has {which} (fsframe fits need two classes of "
                "at least 2 samples): use fewer folds (cv=...) or more samples")


def _cv_results(combos: list[dict], folds: list[dict]) -> dict:
    k, n = len(folds), len(combos)
    scores = np.full((k, n), np.nan)
    nsel = np.full((k, n), np.nan)
    secs = np.full((k, n), np.nan)
    for i, f in enumerate(folds):
        m = len(f["score"])  # a path may stop early: none here (fixed grids), but keep the shape safe
        scores[i, :m] = f["score"]
        nsel[i, :m] = f["n_selected"]
        secs[i, :m] = f["seconds"]
    out: dict = {"params": [dict(c) for c in combos]}
    for name in combos[0]:
        out[f"param_{name}"] = np.ma.MaskedArray([c[name] for c in combos], mask=False, dtype=object)
    for i in range(k):
        out[f"split{i}_test_score"] = scores[i]
    mean, std = scores.mean(axis=0), scores.std(axis=0)
    out["mean_test_score"], out["std_test_score"] = mean, std
    order = np.lexsort((nsel.mean(axis=0), -mean))  # best first; ties: fewer features
    rank = np.empty(n, dtype=np.int32)
    rank[order] = np.arange(1, n + 1)
    # tied scores share the best rank among them (GridSearchCV ranks ties alike)
    for j in order:
        tie = np.flatnonzero(mean == mean[j])  # empty for a NaN mean (a failed point ranks last, alone)
        if tie.size:
            rank[tie] = rank[tie].min()
    out["rank_test_score"] = rank
    out["mean_fit_time"], out["std_fit_time"] = secs.mean(axis=0), secs.std(axis=0)
    for i in range(k):
        out[f"split{i}_n_selected"] = nsel[i]
    out["mean_n_selected"], out["std_n_selected"] = nsel.mean(axis=0), nsel.std(axis=0)
    return out


def _choose(results: dict, rule: str, k: int, who: str = "FSSelectorCV") -> int:
    """The chosen row: the best mean score (ties: fewer mean features, then the earlier point),
    or with ``"1se"`` the fewest mean features among rows within one standard error
    (``std / sqrt(k)`` of the best row's fold scores) of the best mean score."""
    mean, std, nsel = results["mean_test_score"], results["std_test_score"], results["mean_n_selected"]
    if not np.isfinite(mean).any():
        raise errors.SolverFailedError(f"{who}: every grid point failed in some fold (no finite mean score); "
                                       "see the warnings, or set error_score='raise' to see the first failure")
    mean = np.where(np.isfinite(mean), mean, -np.inf)  # a point that failed somewhere is never chosen
    nsel = np.where(np.isfinite(nsel), nsel, np.inf)
    best = int(np.lexsort((np.arange(mean.size), nsel, -mean))[0])
    if rule == "best":
        return best
    threshold = mean[best] - std[best] / np.sqrt(k)
    ok = np.flatnonzero(mean >= threshold - 1e-12)
    return int(ok[np.lexsort((ok, -mean[ok], nsel[ok]))[0]])
