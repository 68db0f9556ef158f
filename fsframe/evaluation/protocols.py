"""What the papers' protocols compute in a study's cells beyond one fit and its evaluation.

* **Top-k curves** (``[protocol] top_k = [10, 20, ...]``; 004 Fig. 2 and Table 1): one fit per
  split ranks the features — a filter's own order (``FitResult.info["ranking"]``), else the norm
  of each feature's coefficients ``||W_j||_2`` (004 §5.2) — and the evaluated classifier is
  trained on the top ``k`` of that ranking for every ``k``. The record's accuracy is the one at
  the largest ``k``. A method that ranks only (a filter, RFS) is asked for the largest ``k``
  features so its ranking reaches that far. A method whose ranking needs no model
  (``OuterLoop.ranks_without_model``: ReliefF, mRMR) is asked for that ranking alone when its fit
  would compute the same one (a multi-class formulation, or two classes): the same order, without
  the model on the kept features that the curve never uses (the record then has no selector
  accuracy, objective or solver status; ``facts["ranking_only"]``).
* **Baselines** (``baselines = true``): a row *all features* (the evaluated classifier on every
  feature) and *k random features* — ``random_draws`` random subsets of ``k`` features, the same
  subsets for every method (they depend on the seed, the split and ``k`` only), on the same
  classifier. When ``k`` is fixed by the protocol (``top_k`` or ``n_features``) the random rows
  are computed once per split in the all-features cell; otherwise each method's cell draws
  ``k`` = its own number of selected features and also trains the reference classifier on its own
  features, so the two differ only in which features were used.
* **Tuning** (``tune = {p = [...]}`` in a ``[[methods]]`` entry; 002 §3.1, 004 §5.1-5.3): in each
  split the grid point with the best mean score over a stratified inner cross-validation of the
  training part (``tune_folds`` folds, 004's rule: 3 below 200 training samples, else 8; at most
  the smallest class's count in the training part, with a warning: :func:`capped_folds`) is fitted
  on the whole training part. The inner score is the evaluated quantity of the protocol: the
  retrained classifier (not itself tuned, to keep the nesting affordable: ``C = retrain_C``, or for a
  ``tuned-*`` classifier its grid search's estimator as it is, ``C = 1``)
  on the selected features, or on the top ``max(top_k)`` of the ranking that the fit's support
  reaches (a point with fewer non-zero features is scored on those alone, an empty model as the
  majority class: the zero-weight features that fill its ranking in index order are not its
  choice and do not decide the grid point; the cell key says ``"inner_cols": "support"``); the
  selector's own model without retraining. The chosen values are in the record's ``facts`` (``"tuned p"``). Each inner fold is
  scaled once for the whole grid. A grid of one parameter that the formulation restates in place,
  of a loop that solves one convex problem (the L1-SVM's ``C``: :func:`path_restates`), is swept
  by one warm-started :func:`fsframe.path` per fold instead of one fit per point (the cell key
  says ``"inner_fits": "path"``); an LP with several optima may end at another optimal vertex
  than a cold fit would, which only the inner choice could see — the final fit on the training
  part is always a fresh :func:`fsframe.fit`.

The *evaluated classifier* is the protocol's retrained one (``retrain``) or, when it retrains
none, the ``reference``: a retrained classifier name or any method (``"mpm"``: the MPM fitted on
the given features) — :class:`~fsframe.evaluation.evaluator.Evaluator`, with its memo of fits
(every name of that module's ``__all__`` is importable from here too).
"""

from __future__ import annotations

import contextlib
import itertools
import time
import traceback
import warnings
from typing import Any, ClassVar

import attrs
import numpy as np

from ..errors import DataWarning, FsframeError, InvalidOptionError
from ..fitting import default_n_features, fit, working_set_options
from ..loops.bound_memo import SearchMemo, sharing_visits
from ..method import resolve
from .config import _make_config
from .evaluator import FIT_MEMO_SIZE, Evaluator, _array_bytes, clear_fit_memo, evaluator_of, fit_memo_info
from .preprocess import _scale
from .records import FoldRecord
from .runner import _run_fold
from .study import Protocol, capped_folds, folds_for

__all__ = ["Evaluator", "Extras", "BaselineConfig", "study_cell", "ranking", "ranks_alone", "TuningError",
           "ALL_FEATURES", "plan_configs", "fit_memo_info", "clear_fit_memo", "path_restates", "search_memo_info",
           "clear_search_memo", "FIT_MEMO_SIZE", "evaluator_of"]

ALL_FEATURES = "all features"
"""Label of the baseline row: the evaluated classifier on every feature."""


class TuningError(FsframeError):
    """Every grid point of a tuned parameter failed in the inner cross-validation of a split."""


def ranking(res) -> np.ndarray:
    """Feature indices of a fit, best first: the fit's own order (``info["ranking"]``, a filter)
    followed by the rest by coefficient norm, or all by ``||W_j||_2`` (the norm over classes of
    feature ``j``'s coefficients; 004 §5.2); ties keep the index order."""
    coef = np.atleast_2d(np.asarray(res.coef, dtype=np.float64))
    norms = np.linalg.norm(coef, axis=0)
    by_norm = np.argsort(-norms, kind="stable")
    own = res.info.get("ranking")
    if own is None:
        return by_norm
    own = [int(j) for j in own]
    seen = set(own)
    return np.asarray(own + [int(j) for j in by_norm if j not in seen], dtype=np.intp)


def path_restates(cfg, points: list) -> bool:
    """Whether the inner cross-validation sweeps ``points`` (grid points of one parameter) by one
    warm-started :func:`fsframe.path` per fold: every step between neighbouring points restates the
    formulation in place (the ``restate`` protocol of :meth:`~fsframe.Formulation.provides`,
    :attr:`~fsframe.Formulation.restatable_params`, the hinge's ``C``; not a subclass that
    rebuilds the model but inherits ``restate``) and
    the loop solves that one convex problem (``single``: the L1-SVM), so one model per class
    serves the whole grid."""
    if not points or any(len(p) != 1 for p in points) or len({next(iter(p)) for p in points}) != 1:
        return False
    from ..paths import _restatement

    try:
        res = [resolve(cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop,
                       **{**cfg.params, **p}) for p in points]
    except Exception:  # a point fit() refuses: fitted (and failed) on its own
        return False
    if any(r.loop.name != "single" for r in res):  # one convex problem per class: its optimum is the answer
        return False
    steps = [_restatement(a, b) for a, b in zip(res, res[1:])]
    return all(s is not None and s[1] for s in steps)


def _path_takes(opts: dict) -> bool:
    """Whether :func:`fsframe.path` takes every one of the fit options ``opts`` (``verify=`` and
    ``callback=`` it does not: a sweep with them would be refused by the path, so their points are
    fitted one by one from the start rather than after a swallowed error)."""
    import inspect

    from ..paths import path

    named = {n for n, p in inspect.signature(path).parameters.items()
             if p.kind is inspect.Parameter.KEYWORD_ONLY or p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD}
    return set(opts) <= named - {"X", "y", "method"}


def _from_data_on_path(cfg, shape: tuple) -> bool:
    """Whether :func:`fsframe.path` with ``cfg``'s fit options solves its points at ``shape`` from
    ``X``: :func:`fsframe.from_data.from_data_along_path`, the rule the path's fits apply (the
    formulation's ``from_data_on_path``, ``n_features``, ``verify``, ``callback``, ``working_set``),
    with the backend resolved as the path resolves it (``"auto"`` may resolve away from HiGHS)."""
    from ..fitting import make_options
    from ..from_data import from_data_along_path
    from ..method import select_backend

    opts = cfg.fit_options
    res = resolve(cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop, **cfg.params)
    try:
        backend = select_backend(opts.get("backend", "auto"), res.problem_class, quadratic="quad" in res.terms,
                                 time_limit=opts.get("time_limit"))
        options = make_options(time_limit=opts.get("time_limit"), backend_options=opts.get("backend_options"))
        ws = working_set_options(opts.get("working_set", "auto"))
    except FsframeError:  # the path refuses these options too: its points are fitted on their own
        return False
    return from_data_along_path(res, shape, backend.name, options, cfg.n_features, ws, verify=opts.get("verify"),
                                callback=opts.get("callback"))


def _random_subsets(n: int, k: int, draws: int, seed: int, split) -> list[np.ndarray]:
    """``draws`` random subsets of ``k`` of ``n`` features, fixed by the seed, the split and ``k``
    (so every method of a study is compared with the same subsets)."""
    return [np.sort(np.random.default_rng([seed, split.repeat, split.fold, k, d]).choice(n, size=k, replace=False))
            for d in range(draws)]


@attrs.frozen(eq=False)
class Extras:
    """What a method's cell adds (set as ``_Config.extras``; :func:`fsframe.evaluation.runner._run_fold`
    calls :meth:`after_fit`)."""

    evaluator: Evaluator
    top_k: tuple = ()
    random_k: bool = False
    random_draws: int = 5
    seed: int = 0
    tune: dict | None = None
    tune_folds: Any = 3
    ranking_only: bool = False  # the top-k cell asks the method for its ranking alone (ranks_without_model)
    sweep: bool = False  # the inner cross-validation sweeps the grid by fsframe.path (path_restates)
    max_folds: int | None = None  # the smallest class's training count when it caps tune_folds (capped_folds)

    def key(self) -> dict:
        """What enters the cell key."""
        return {"top_k": list(self.top_k), "random_k": self.random_k, "random_draws": self.random_draws,
                "tune": self.tune, "tune_folds": self.tune_folds, "evaluator": self.evaluator.describe(),
                **({"ranking_only": True} if self.ranking_only else {}),
                **({"inner_fits": "path"} if self.sweep else {}),
                **({"inner_cols": "support"} if self.tune and self.top_k else {}),
                **({"tune_folds_capped": self.max_folds} if self.max_folds is not None else {})}

    def after_fit(self, rec: FoldRecord, res, Xtr, ytr, Xte, yte, split, cfg) -> FoldRecord:
        """The record with the top-k curve (the record's accuracy then is the one at the largest
        ``k``) and the random-k comparison of this cell."""
        n = Xtr.shape[1]
        if self.top_k:
            return self.top_k_record(rec, ranking(res), int(res.n_selected), Xtr, ytr, Xte, yte)
        regression = self.evaluator.regression
        # a regression's baseline rows average every fit (docs/glm.md): at k = 0 or k = n
        # every draw is the same subset (none or all), one is computed; a classification study
        # compares only the fits that left some feature out
        if self.random_k and cfg.groups == "features" and (0 <= rec.n_selected <= n if regression else
                                                           0 < rec.n_selected < n):
            cols = np.asarray(rec.selected, dtype=np.intp)
            own = (rec.r2 if regression else rec.accuracy) if cfg.retrain is not None else \
                self.evaluator.accuracy(Xtr, ytr, Xte, yte, cols)
            draws = 1 if rec.n_selected in (0, n) else self.random_draws
            rnd = float(np.mean([self.evaluator.accuracy(Xtr, ytr, Xte, yte, c)
                                 for c in _random_subsets(n, rec.n_selected, draws, self.seed, split)]))
            if regression:
                return attrs.evolve(rec, reference_r2=own, random_r2=rnd)
            return attrs.evolve(rec, reference_accuracy=own, random_accuracy=rnd)
        return rec

    def top_k_record(self, rec: FoldRecord, order, support: int, Xtr, ytr, Xte, yte) -> FoldRecord:
        """``rec`` with the curve of the evaluated classifier on the top ``k`` of ``order`` (the
        ranking, best first) for every ``k``; its accuracy the one at the largest ``k``."""
        n = Xtr.shape[1]
        curve, y_pred = [], None
        for k in (k for k in self.top_k if k <= n):
            y_pred = self.evaluator.fit_predict(Xtr[:, order[:k]], ytr, Xte[:, order[:k]])
            curve.append((k, self.evaluator.score(yte, y_pred)))
        k = curve[-1][0]
        return attrs.evolve(rec, **self.evaluator.scores(yte, y_pred), y_pred=y_pred, n_selected=k,
                            pct_selected=100.0 * k / n, selected=tuple(sorted(int(j) for j in order[:k])),
                            curve=tuple(curve), facts={**rec.facts, "support": support})

    def choose(self, X, y, split, cfg) -> dict:
        """The grid point of :attr:`tune` with the best mean inner-CV score on the training part
        (the first such point in grid order on a tie). Each inner fold is scaled once and fits
        every grid point (:meth:`_fold_fits`); a point that fails in some fold is not chosen."""
        from sklearn.model_selection import KFold, StratifiedKFold

        Xtr, _ = _scale(X[split.train], X[split.test][:0], cfg.scale)
        ytr = y[split.train]
        k = rule = folds_for(self.tune_folds, ytr.size)
        if not self.evaluator.regression:  # a real target has no strata; a class caps the folds (capped_folds)
            k = capped_folds(min(rule, self.max_folds or rule), ytr, cfg.label)[0]
            if k < rule:
                warnings.warn(f"{cfg.label}: {rule}-fold CV capped to {k} folds (the "
                              f"smallest class of a training part has {k} samples)", DataWarning, stacklevel=2)
        kind = KFold if self.evaluator.regression else StratifiedKFold
        folds = list(kind(k, shuffle=True, random_state=self.seed).split(np.zeros((ytr.size, 1)), ytr))
        names = list(self.tune)
        points = [dict(zip(names, values)) for values in itertools.product(*self.tune.values())]
        scores: list = [[] for _ in points]
        failed: dict = {}  # point index -> its first failure
        for itr, iva in folds:
            Xa, Xb = _scale(Xtr[itr], Xtr[iva], cfg.scale)
            todo = [i for i in range(len(points)) if i not in failed]
            for i, res in zip(todo, self._fold_fits(Xa, ytr[itr], cfg, [points[i] for i in todo])):
                try:
                    if isinstance(res, BaseException):
                        raise res
                    scores[i].append(self._score(res, Xa, ytr[itr], Xb, ytr[iva], cfg))
                except Exception as exc:  # this grid point fails in this fold: it is not chosen
                    failed[i] = f"{points[i]}: {type(exc).__name__}: {exc}"
        best, best_score = None, -np.inf
        for i, cand in enumerate(points):
            if i not in failed and float(np.mean(scores[i])) > best_score:
                best, best_score = cand, float(np.mean(scores[i]))
        failures = [failed[i] for i in sorted(failed)]
        if best is None:
            raise TuningError(f"{cfg.label}: every grid point of {self.tune} failed in the inner {k}-fold "
                              f"cross-validation; first: {failures[0]}")
        if failures:
            warnings.warn(f"inner cross-validation: {len(failures)} grid point(s) failed and were not chosen "
                          f"(first: {failures[0]})", DataWarning, stacklevel=2)
        return best

    def _fold_fits(self, Xa, ya, cfg, points: list) -> list:
        """The fits of one inner fold at ``points`` (a result, or the exception that fit raised).
        One tuned parameter that the formulation restates in place (:func:`path_restates`, the
        L1-SVM's ``C``) is swept by one :func:`fsframe.path`, in one of two orders. When the
        path's points are solved from ``X`` (:func:`_from_data_on_path`, the rule the path's fits
        apply: the hinge's column and row generation from 500 samples and as many features, on
        HiGHS, without ``n_features``, ``verify=``, a ``time_limit`` or ``working_set=False``), from
        its smallest value up: each point's first LP is the previous point's support and margin
        rows (no model is built). Otherwise, on the compiled path, from its largest value down: one
        model per class built once, only the slack costs changed and the solver warm-started from
        the previous point's basis. Either way each point is certified on its own LP and the
        results are returned in the grid's order. Any other grid, or a path that fails, fits each
        point on its own, as :func:`fsframe.fit` does."""
        opts = {k: v for k, v in cfg.fit_options.items() if k != "keep_model"}
        if self.sweep and len(points) > 1 and _path_takes(opts) and path_restates(cfg, points):
            from ..paths import path

            (name,) = points[0]
            # the compiled path from the largest value (the hinge's dense end, measured faster than
            # from the sparse end); generation from X from the smallest (each point from the last
            # point's support and margin rows: 0.46x the CPU of largest first on COIL20)
            rising = _from_data_on_path(cfg, Xa.shape)
            order = sorted(range(len(points)), key=lambda i: float(points[i][name]) * (1 if rising else -1))
            try:
                swept = path(Xa, ya, cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop,
                             n_features=cfg.n_features, progress=False, **opts,
                             **{**cfg.params, name: [points[i][name] for i in order]})
                out = [None] * len(points)
                for i, pt in zip(order, swept.points):
                    out[i] = pt.result
                return out
            except Exception:  # which point failed is not known: each is fitted on its own below
                pass
        out = []
        for cand in points:
            try:
                out.append(fit(Xa, ya, method=cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate,
                               loop=cfg.loop, n_features=cfg.n_features, **cfg.fit_options, **{**cfg.params, **cand}))
            except Exception as exc:
                out.append(exc)
        return out

    def _score(self, res, Xa, ya, Xb, yb, cfg) -> float:
        if self.top_k:  # the ranked features only: a point's zero-weight fill (index order) is not its choice
            cols = ranking(res)[: min(max(self.top_k), int(res.n_selected))]
        elif cfg.retrain is not None:
            cols = res.selected
        else:
            return self.evaluator.score(yb, np.asarray(res.predict(Xb)))
        return self.evaluator.accuracy(Xa, ya, Xb, yb, cols, untuned=True)


@attrs.frozen(eq=False)
class BaselineConfig:
    """The all-features row of a study (one cell per split): the evaluated classifier on every
    feature, and the random-``k`` accuracies for the protocol's fixed ``ks``."""

    evaluator: Evaluator
    scale: str
    ks: tuple = ()
    random_draws: int = 5
    seed: int = 0
    label: str = ALL_FEATURES
    method: ClassVar[None] = None
    formulation: ClassVar[None] = None
    surrogate: ClassVar[None] = None
    loop: ClassVar[None] = None
    backend: ClassVar[None] = None
    components: ClassVar[dict] = {}
    groups: ClassVar[str] = "features"

    def key(self) -> dict:
        return {"baseline": ALL_FEATURES, "evaluator": self.evaluator.describe(), "ks": list(self.ks),
                "random_draws": self.random_draws, "seed": self.seed}

    def config_dict(self) -> dict:
        """The manifest's description of this row (the fields of a configuration)."""
        return {"method": None, "formulation": None, "surrogate": None, "loop": None, "params": {}, "resolved": {},
                "components": {}, "fit_options": {}, "n_features": None, "backend": None,
                "baseline": self.key()}


def _record_base(label: str, split) -> dict:
    return dict(label=label, repeat=split.repeat, fold=split.fold, n_train=int(split.train.size),
                n_test=int(split.test.size), train=split.train, test=split.test)


def _guarded_cell(X, y, split, cfg, raise_errors: bool, body) -> FoldRecord:
    """A cell computed by ``body(base, Xtr, ytr, Xte, yte, t0)`` (a :class:`FoldRecord`) on the
    split's parts scaled by ``cfg.scale``, its warnings collected and a failure recorded (or
    raised with ``raise_errors``), as :func:`~fsframe.evaluation.runner._run_fold` does."""
    t0 = time.perf_counter()
    base = _record_base(cfg.label, split)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            Xtr, Xte = _scale(X[split.train], X[split.test], cfg.scale)
            rec = body(base, Xtr, y[split.train], Xte, y[split.test], t0)
        except (Exception, SystemExit) as exc:
            if raise_errors:
                raise
            rec = _failed(base, exc)
    return attrs.evolve(rec, total_seconds=time.perf_counter() - t0,
                        warnings=tuple((w.category, str(w.message)) for w in caught))


def _baseline_cell(X, y, split, cfg: BaselineConfig, raise_errors: bool) -> FoldRecord:
    def body(base, Xtr, ytr, Xte, yte, t0):
        n = Xtr.shape[1]
        y_pred = cfg.evaluator.fit_predict(Xtr, ytr, Xte)
        curve = tuple((k, float(np.mean([cfg.evaluator.accuracy(Xtr, ytr, Xte, yte, c) for c in
                                         _random_subsets(n, k, cfg.random_draws, cfg.seed, split)])))
                      for k in cfg.ks if k < n)
        return FoldRecord(**base, ok=True, **cfg.evaluator.scores(yte, y_pred),
                          n_selected=n, pct_selected=100.0, n_iter=0, seconds=time.perf_counter() - t0,
                          selected=tuple(range(n)), y_pred=y_pred, random_curve=curve)

    return _guarded_cell(X, y, split, cfg, raise_errors, body)


def _failed(base: dict, exc: BaseException) -> FoldRecord:
    return FoldRecord(**base, ok=False, error_type=type(exc).__name__, error=str(exc),
                      traceback=traceback.format_exc())


def ranks_alone(cfg, n_classes: int) -> bool:
    """Whether ``cfg``'s ranking can be asked for without its fit: its loop ranks without a model
    (``OuterLoop.ranks_without_model``) and its fit would rank once on all the labels (two
    classes, or a formulation that fits every class itself; a one-vs-rest fit ranks per class)."""
    res = resolve(cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop, **cfg.params)
    return bool(getattr(res.loop, "ranks_without_model", False)) and (
        n_classes == 2 or res.formulation.multiclass == "native")


def _ranking_cell(X, y, split, cfg, raise_errors: bool) -> FoldRecord:
    """A top-k cell of a method that ranks without a model (:func:`ranks_alone`): its loop's
    ranking on the scaled training part and the class codes :func:`fsframe.fit` would pass it
    (``±1`` for two classes, ``0 ... c-1`` for more), then the curve; no model is solved."""
    def body(base, Xtr, ytr, Xte, yte, t0):
        res = resolve(cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop, **cfg.params)
        classes = np.unique(ytr)
        codes = np.where(ytr == classes[1], 1.0, -1.0) if classes.size == 2 else np.searchsorted(classes, ytr)
        n = Xtr.shape[1]
        # the count fit() keeps when none is given (default_n_features), so the two agree
        n_keep = min(int(cfg.n_features if cfg.n_features is not None else default_n_features(res, n) or n), n)
        own = [int(j) for j in res.loop.ranking(Xtr, codes, n_keep)[0]]
        seen = set(own)  # as ranking(): the features the filter left unranked follow in index order
        order = np.asarray(own + [j for j in range(n) if j not in seen], dtype=np.intp)
        rec = FoldRecord(**base, ok=True, n_iter=0, converged=True, seconds=time.perf_counter() - t0,
                         stop_reason="ranking only", facts={"ranking_only": True})
        return cfg.extras.top_k_record(rec, order, n_keep, Xtr, ytr, Xte, yte)

    return _guarded_cell(X, y, split, cfg, raise_errors, body)


SEARCH_MEMO_SIZE = 16
"""How many bound searches a process keeps for cells that differ only in the criterion
(:func:`_shared_search`), besides the searches of the cells still running, which are kept whole
however many their fits run (one per binary problem: ORL's 40 classes one-vs-rest run 40;
:class:`~fsframe.loops.bound_memo.SearchMemo`), and those of a cell that has ended until another
cell records a search, so the next criterion's cell of the split replays every one."""

_SEARCHES = SearchMemo(SEARCH_MEMO_SIZE)


def search_memo_info() -> dict:
    """``{"hits", "misses", "partial", "refused", "size"}`` of this process's memo of bound searches
    (:func:`_shared_search`): how many searches a run replayed for a cell of another criterion, how
    many it solved (of which ``partial`` replayed their first visits), and how many lookups found
    their key kept for other data or another backend (:class:`~fsframe.loops.bound_memo.SearchMemo`)."""
    return {"hits": _SEARCHES.hits, "misses": _SEARCHES.misses, "partial": _SEARCHES.partial,
            "refused": _SEARCHES.refused, "size": len(_SEARCHES)}


def clear_search_memo() -> None:
    """Forget every kept bound search and reset the counts."""
    _SEARCHES.clear()


def _shared_search(X, y, split, cfg):
    """The context a cell's fit runs in: for 001's Algorithm 1 (the ``bound-search`` loop with
    ``search="bisection"``), the process's memo of searches keyed by what its SOCPs depend on but
    the criterion — the split's training rows of ``X`` and ``y`` by value, the scaling, the
    formulation and loop with every parameter (the loop's criterion left out), the backend and the
    fit options — so that the cells of criteria 1 and 2 of one split visit its SOCPs once
    (:func:`~fsframe.loops.bound_memo.sharing_visits`, which also compares the loop's fields and
    its slot weights; the second cell only chooses and re-solves). The surrogate is not in the key:
    the search uses only its slope at zero, compared by the memo (a search without a surrogate
    and FS-MEMPM's with ``l1`` solve the same SOCPs). Any other cell: no context."""
    import contextlib
    import hashlib
    import json

    loop = cfg.components.get("loop") or {}
    Xtr, ytr = X[split.train], np.asarray(y[split.train])
    if (loop.get("name") != "bound-search" or loop.get("search") != "bisection"
            or not isinstance(Xtr, np.ndarray) or Xtr.dtype.kind not in "biuf"):  # by value: dense numbers only
        return contextlib.nullcontext()
    h = hashlib.sha256()
    h.update(_array_bytes(Xtr))
    h.update(_array_bytes(ytr) if ytr.dtype.kind in "biuf" else repr((ytr.dtype.str, ytr.tolist())).encode())
    h.update(json.dumps({"scale": cfg.scale, "backend": cfg.backend, "fit_options": cfg.fit_options,
                         "n_features": cfg.n_features, "formulation": cfg.components.get("formulation"),
                         "kernel": cfg.components.get("kernel"),
                         "loop": {k: v for k, v in loop.items() if k != "criterion"}},
                        sort_keys=True, default=repr).encode())
    return sharing_visits(_SEARCHES, h.digest())


def study_cell(X, y, split, cfg, raise_errors: bool = False) -> FoldRecord:
    """The cell function of a study (what :func:`fsframe.evaluation.engine.execute` runs): the
    all-features row, or a method's fit — its parameters tuned first when the entry says so. The
    cells of 001's bound search that differ only in the criterion share the search's SOCPs within a
    process (:func:`_shared_search`); such a cell's ``facts["search_replayed"]`` is how many of its
    searches were replayed (their seconds are then the replay's, not the search's; one search per
    binary fit, one per binary subproblem of a multiclass fit), 0 when none."""
    if isinstance(cfg, BaselineConfig):
        return _baseline_cell(X, y, split, cfg, raise_errors)
    extras = cfg.extras
    if extras is not None and extras.ranking_only and not extras.tune:
        return _ranking_cell(X, y, split, cfg, raise_errors)
    if extras is None or not extras.tune:
        context = _shared_search(X, y, split, cfg)
        if isinstance(context, contextlib.nullcontext):
            return _run_fold(X, y, split, cfg, raise_errors)
        with context as share:
            rec = _run_fold(X, y, split, cfg, raise_errors)
        # a replayed search's seconds are the replay's, not the search's: say so in the record (this
        # cell's own searches, not the memo's process-wide count that other threads' cells move too)
        return attrs.evolve(rec, facts={**rec.facts, "search_replayed": share.replayed})
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            chosen = extras.choose(X, y, split, cfg)
        except (Exception, SystemExit) as exc:
            if raise_errors:
                raise
            rec = _failed(_record_base(cfg.label, split), exc)
            return attrs.evolve(rec, total_seconds=time.perf_counter() - t0)
    tuning = time.perf_counter() - t0
    rec = _run_fold(X, y, split, attrs.evolve(cfg, params={**cfg.params, **chosen}), raise_errors)
    inner = tuple((w.category, f"inner cross-validation: {w.message}") for w in caught)
    facts = {**rec.facts, **{f"tuned {k}": float(v) for k, v in chosen.items()}, "tuning_seconds": tuning}
    return attrs.evolve(rec, facts=facts, total_seconds=rec.total_seconds + tuning, warnings=rec.warnings + inner)


def plan_configs(protocol: Protocol, configs: list, tunes: list, *, shape: tuple, n_classes: int, n_train: int,
                 retrain, C: float, seed: int, where: str, regression: bool = False,
                 max_folds: int | None = None) -> list:
    """The study's configurations of one data set and seed with their :class:`Extras`, and the
    all-features row when the protocol asks for baselines. ``tunes`` gives each configuration's
    tuning grid (or ``None``). Every grid point is validated here, before any fit. ``regression``:
    the data set holds a real target, the rows are evaluated by least squares and R²."""
    n_samples, n_columns = shape
    ev = evaluator_of(protocol, retrain, C, n_train, regression=regression, max_folds=max_folds)
    # the folds' cap enters a cell's key only where it binds (other cells keep their keys)
    tune_cap = max_folds if max_folds is not None and folds_for(protocol.tune_folds, n_train) > max_folds else None
    if protocol.top_k and min(protocol.top_k) > n_columns:
        raise InvalidOptionError(f"{where}: top_k = {list(protocol.top_k)} but the data set has {n_columns} features")
    fixed = tuple(k for k in protocol.top_k or protocol.n_features if k is not None and k <= n_columns)
    top_k = tuple(k for k in protocol.top_k if k <= n_columns)
    out = []
    for cfg, tune in zip(configs, tunes):
        if protocol.top_k and cfg.groups == "samples":
            raise InvalidOptionError(f"{where}: {cfg.label} selects training samples (a kernel map); top_k ranks "
                                     "features")
        n_features = cfg.n_features
        if top_k and n_features is None and not resolve(
                cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate, loop=cfg.loop, **cfg.params).loop.sparse:
            n_features = max(top_k)  # a ranking method: rank at least the largest k
        for values in itertools.product(*tune.values()) if tune else ():
            point = dict(zip(tune, values))
            bad = [f"{k}={v!r}" for k, v in point.items() if isinstance(v, bool) or not isinstance(v, (int, float))]
            if bad:
                raise InvalidOptionError(f"{where}: {cfg.label}: tune grids hold numbers, got {', '.join(bad)}")
            _make_config(cfg.label, {"method": cfg.method, "formulation": cfg.formulation, "surrogate": cfg.surrogate,
                                     "loop": cfg.loop, **cfg.fit_options, **cfg.params, **point},
                         n_features=n_features, scale=cfg.scale, retrain=cfg.retrain, retrain_C=cfg.retrain_C,
                         n_columns=n_columns, n_samples=n_samples, n_classes=n_classes,
                         task="regression" if regression else "classification")
        random_k = protocol.baselines and not fixed and cfg.groups == "features"  # a kernel map selects samples
        if not (top_k or random_k or tune):
            out.append(cfg)
            continue
        extras = Extras(evaluator=ev, top_k=top_k, random_k=random_k, random_draws=protocol.random_draws,
                        seed=seed, tune=tune, tune_folds=protocol.tune_folds, max_folds=tune_cap if tune else None,
                        ranking_only=bool(top_k) and not tune and ranks_alone(cfg, n_classes),
                        sweep=bool(tune) and path_restates(cfg, [dict(zip(tune, v)) for v in
                                                                  itertools.product(*tune.values())]))
        out.append(attrs.evolve(cfg, n_features=n_features, extras=extras))
    if protocol.baselines:
        out.append(BaselineConfig(evaluator=ev, scale=protocol.scale, ks=fixed, random_draws=protocol.random_draws,
                                  seed=seed))
    return out
