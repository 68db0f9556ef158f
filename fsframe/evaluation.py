"""Cross-validated evaluation of feature-selection methods.

:func:`cross_validate` runs one method over stratified folds (or repeated random splits) and
returns a :class:`CVResult`: one :class:`FoldRecord` per fit (accuracy, MCC, selected features,
iterations, seconds, solver statuses, or the error that stopped it), mean ± std summaries and the
stability of the selection across folds. :func:`compare` runs several methods on the *same* splits
and returns a :class:`CompareResult` (the paper-style table).

Protocols of the source papers (docs/evaluation.md):

* 000 — 10-fold CV; TSA (accuracy, eq. 59), MCC (eq. 60), PSF (% selected features), iterations:
  ``cross_validate(data, method, cv=10)``;
* 001 — 10 x 10-fold CV; number of selected features, accuracy, selection frequency / stability:
  ``cross_validate(data, method, cv=10, repeats=10)``;
* 002 — 10 random 80/20 splits; exactly ``r`` features; a standard L2 SVM retrained on them:
  ``cross_validate(data, method, cv=0.2, repeats=10, n_features=r, retrain="svm")``;
* 004 — 10 random 60/40 splits, z-scored features; a linear SVM on the top ``d`` features:
  ``cv=0.4, repeats=10, n_features=d, retrain=<any scikit-learn classifier>`` (e.g. a
  ``GridSearchCV`` over ``LinearSVC(C)`` for the paper's inner tuning of ``C``).

Every preprocessing step (standardisation, the retrained classifier) is fitted on the training
part of each split only. Splits depend only on ``y``, the protocol and ``random_state``: runs are
reproducible, and methods compared with the same seed see the same splits. Inputs are never
modified.
"""

from __future__ import annotations

import importlib.metadata as md
import math
import platform
import re
import secrets
import statistics
import time
import traceback
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .dataset import Dataset, check_Xy
from .errors import DataError, DataWarning, InvalidOptionError, SolverFailedError
from .method import FIT_OPTIONS, KERNEL_FIELDS, _fields, component_names, fit, make_options, resolve, select_backend
from .plugins import get_registry

__all__ = [
    "cross_validate",
    "compare",
    "CVResult",
    "CompareResult",
    "FoldRecord",
    "Split",
    "Progress",
    "StabilityEstimate",
    "make_splits",
    "accuracy_score",
    "mcc_score",
    "selection_frequency",
    "nogueira_stability",
    "kuncheva_index",
    "jaccard_index",
    "accepted_parameters",
    "environment_versions",
    "SCALINGS",
    "METRICS",
]

SCALINGS = ("standard", "minmax", "none")
"""``standard``: z-score with the training part's mean and (population) standard deviation;
``minmax``: map the training part's range to [0, 1]; ``none``: the data as given. A constant
training column is centred and left unscaled (divisor 1), as scikit-learn's scalers do."""

METRICS = ("accuracy", "mcc", "n_selected", "pct_selected", "n_iter", "seconds")
"""Per-fold quantities summarised by :meth:`CVResult.summary` (plus ``selector_accuracy`` and
``selector_mcc`` when a classifier is retrained on the selected features)."""

METRIC_LABELS = {
    "accuracy": "accuracy (%)",
    "mcc": "MCC",
    "n_selected": "selected features",
    "pct_selected": "selected (%)",
    "n_iter": "iterations",
    "seconds": "seconds",
    "selector_accuracy": "selector accuracy (%)",
    "selector_mcc": "selector MCC",
}


# ============================================================================== metrics
def _labels_1d(y: ArrayLike, what: str) -> NDArray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise DataError(f"{what} must be 1-D, got shape {a.shape}")
    return a


def accuracy_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Fraction of correct predictions: ``(TP + TN) / (TP + FN + TN + FP)`` for two classes
    (paper 000 eq. 59, "TSA" on a test set)."""
    t, p = _labels_1d(y_true, "y_true"), _labels_1d(y_pred, "y_pred")
    if t.shape != p.shape or t.size == 0:
        raise DataError(f"y_true and y_pred must be non-empty and of equal length, got {t.shape} and {p.shape}")
    return float(np.mean(t == p))


def mcc_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    r"""Matthews correlation coefficient.

    Two classes: paper 000 eq. 60,
    ``(TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))`` (symmetric in which class is
    "positive"). More classes: Gorodkin's R_K statistic (Comput. Biol. Chem. 28, 2004), the
    generalisation scikit-learn's ``matthews_corrcoef`` computes: with the confusion matrix ``C``,
    ``t_k`` true and ``p_k`` predicted counts of class ``k``, ``c = trace(C)``, ``s = sum(C)``,
    ``(c·s − Σ p_k t_k) / sqrt((s² − Σ p_k²)(s² − Σ t_k²))`` — equal to eq. 60 for two classes.
    A zero denominator (all predictions, or all labels, in one class) gives 0.
    """
    t, p = _labels_1d(y_true, "y_true"), _labels_1d(y_pred, "y_pred")
    if t.shape != p.shape or t.size == 0:
        raise DataError(f"y_true and y_pred must be non-empty and of equal length, got {t.shape} and {p.shape}")
    labels, inv = np.unique(np.concatenate([t, p]), return_inverse=True)
    k = labels.size
    ti, pi = inv[: t.size], inv[t.size:]
    C = np.zeros((k, k), dtype=np.float64)
    np.add.at(C, (ti, pi), 1.0)
    tk, pk = C.sum(axis=1), C.sum(axis=0)
    c, s = float(np.trace(C)), float(C.sum())
    cov_tp = c * s - float(tk @ pk)
    cov_pp = s * s - float(pk @ pk)
    cov_tt = s * s - float(tk @ tk)
    if cov_pp * cov_tt == 0.0:
        return 0.0
    return float(cov_tp / math.sqrt(cov_pp * cov_tt))


# ============================================================================== stability
def _selection_matrix(Z: ArrayLike) -> NDArray:
    Z = np.asarray(Z)
    if Z.ndim != 2:
        raise DataError(f"the selection matrix must be 2-D (n_sets, n_features), got shape {Z.shape}")
    if Z.dtype != bool:
        if not np.isin(Z, (0, 1)).all():
            raise DataError("the selection matrix must hold 0/1 or booleans (row i: features selected in run i)")
        Z = Z.astype(bool)
    return Z


def selection_frequency(Z: ArrayLike) -> NDArray:
    """Fraction of the runs (rows of ``Z``) that select each feature (column) — the quantity
    plotted by paper 001, Fig. 1."""
    Z = _selection_matrix(Z)
    if Z.shape[0] == 0:
        return np.full(Z.shape[1], np.nan)
    return Z.mean(axis=0)


@attrs.frozen
class StabilityEstimate:
    """Nogueira, Sechidis & Brown's stability estimate with its variance and an asymptotic
    ``1 - alpha`` confidence interval (JMLR 18(174), 2018, eqs. 4 and Theorem 9)."""

    value: float | None
    variance: float | None
    ci_low: float | None
    ci_high: float | None
    alpha: float
    n_sets: int
    note: str = ""


def nogueira_stability(Z: ArrayLike, alpha: float = 0.05) -> StabilityEstimate:
    r"""Stability of a feature-selection procedure from ``M`` selected subsets of ``d`` features.

    ``Z`` is the binary ``M x d`` selection matrix (row ``i``: the features run ``i`` selected).
    With ``p_f`` the selection frequency of feature ``f``, ``s_f² = M/(M−1) p_f (1 − p_f)`` its
    unbiased variance and ``k̄`` the mean subset size,

    .. math:: \hat\Phi = 1 - \frac{\frac1d \sum_f s_f^2}{\frac{\bar k}{d}\left(1 - \frac{\bar k}{d}\right)}

    (Nogueira, Sechidis & Brown, JMLR 18(174):1-54, 2018, eq. 4). It is 1 when every run selects
    the same subset, about 0 for random subsets of the same sizes, accepts subsets of different
    sizes (which embedded L0 methods produce) and is corrected for chance. Its variance follows
    their Theorem 9; the interval is ``value ± z_{1−alpha/2} sqrt(variance)``.
    Undefined (``value=None``) for fewer than two runs, or when every run selects no feature or
    every feature.
    """
    Z = _selection_matrix(Z)
    M, d = Z.shape
    if M < 2 or d == 0:
        return StabilityEstimate(None, None, None, None, alpha, M, "needs at least two selected subsets")
    Zf = Z.astype(np.float64)
    k = Zf.sum(axis=1)
    kbar = float(k.mean())
    p = Zf.mean(axis=0)
    q = kbar / d
    denom = q * (1.0 - q)
    if denom <= 0.0:
        what = "no feature" if kbar == 0 else "every feature"
        return StabilityEstimate(None, None, None, None, alpha, M, f"undefined: every run selected {what}")
    s2 = M / (M - 1) * p * (1.0 - p)
    value = float(1.0 - s2.mean() / denom)
    # Theorem 9: per-run contributions phi_i, variance 4/M^2 sum (phi_i - mean)^2
    pe = 1.0 - 2.0 * q * (1.0 - q)
    pa_i = 1.0 - k / d - q + (2.0 / d) * (Zf @ p)
    pe_i = (1.0 - value) * (q * (k / d) + (1.0 - q) * (1.0 - k / d))
    phi_i = (pa_i - pe_i) / (1.0 - pe)
    variance = float(4.0 / M**2 * np.sum((phi_i - phi_i.mean()) ** 2))
    z = statistics.NormalDist().inv_cdf(1.0 - alpha / 2.0)
    half = z * math.sqrt(max(variance, 0.0))
    return StabilityEstimate(value, variance, value - half, value + half, alpha, M)


def kuncheva_index(Z: ArrayLike) -> float | None:
    r"""Kuncheva's consistency index averaged over all pairs of runs (Kuncheva, AIA 2007):
    for two subsets of equal size ``k`` out of ``d`` features sharing ``r``,
    ``(r·d − k²) / (k (d − k))``. Defined only when every run selects the same number
    ``0 < k < d`` of features (e.g. with ``n_features=k``); otherwise ``None``."""
    Z = _selection_matrix(Z)
    M, d = Z.shape
    if M < 2:
        return None
    k = Z.sum(axis=1)
    if not np.all(k == k[0]) or k[0] == 0 or k[0] == d:
        return None
    k0 = float(k[0])
    Zf = Z.astype(np.float64)
    R = Zf @ Zf.T
    iu = np.triu_indices(M, 1)
    return float(np.mean((R[iu] * d - k0 * k0) / (k0 * (d - k0))))


def jaccard_index(Z: ArrayLike) -> float | None:
    """Mean pairwise Jaccard similarity ``|A ∩ B| / |A ∪ B|`` of the runs' subsets (two empty
    subsets count as identical). Not corrected for chance; reported because many papers use it.
    ``None`` for fewer than two runs."""
    Z = _selection_matrix(Z)
    M = Z.shape[0]
    if M < 2:
        return None
    Zf = Z.astype(np.float64)
    inter = Zf @ Zf.T
    k = Zf.sum(axis=1)
    union = k[:, None] + k[None, :] - inter
    iu = np.triu_indices(M, 1)
    u, i = union[iu], inter[iu]
    return float(np.mean(np.where(u > 0, i / np.where(u > 0, u, 1.0), 1.0)))


# ============================================================================== splits
@attrs.frozen(eq=False)
class Split:
    """One train/test split: repeat and fold numbers (0-based) and sample indices."""

    repeat: int
    fold: int
    train: NDArray = attrs.field(repr=lambda a: f"<{a.size} samples>")
    test: NDArray = attrs.field(repr=lambda a: f"<{a.size} samples>")


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidOptionError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def make_splits(y: ArrayLike, cv: Any = 10, *, repeats: int = 1, random_state: int | None = 0,
                X: ArrayLike | None = None) -> tuple[list[Split], dict]:
    """The splits of a protocol and its description.

    ``cv`` is

    * an int ``k >= 2``: stratified ``k``-fold CV, shuffled with ``random_state``, repeated
      ``repeats`` times (scikit-learn's ``RepeatedStratifiedKFold``; the first repeat of a
      10 x 10 run is the 1 x 10 run with the same seed);
    * a float in (0, 1): ``repeats`` stratified random splits with this test fraction
      (``StratifiedShuffleSplit``; papers 002 and 004);
    * a scikit-learn splitter (anything with ``split(X, y)``), or an iterable of
      ``(train_indices, test_indices)`` pairs (then ``repeats`` must be 1).

    Returns ``(splits, protocol)`` where ``protocol`` is a JSON-serialisable description.
    """
    y = np.asarray(y)
    n = y.shape[0]
    repeats = _check_int("repeats", repeats, 1)
    if random_state is not None:
        random_state = _check_int("random_state", random_state, 0)
    _, counts = np.unique(y, return_counts=True)
    smallest = int(counts.min())
    if isinstance(cv, bool):
        raise InvalidOptionError(f"cv must be an int (folds), a float in (0, 1) (test fraction) or a splitter, got {cv!r}")
    if isinstance(cv, (int, np.integer)):
        k = int(cv)
        if k < 2:
            raise InvalidOptionError(f"cv={k}: k-fold cross-validation needs at least 2 folds")
        if k > n:
            raise DataError(f"cv={k} folds but only {n} samples")
        if k > smallest:
            warnings.warn(f"the smallest class has {smallest} samples, fewer than cv={k} folds: some test "
                          "folds will miss that class", DataWarning, stacklevel=3)
        from sklearn.model_selection import RepeatedStratifiedKFold

        splitter = RepeatedStratifiedKFold(n_splits=k, n_repeats=repeats, random_state=random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # sklearn's version of the warning above
            pairs = list(splitter.split(np.zeros((n, 1)), y))
        splits = [Split(i // k, i % k, tr, te) for i, (tr, te) in enumerate(pairs)]
        protocol = {"kind": "k-fold", "stratified": True, "n_splits": k, "repeats": repeats,
                    "test_size": None, "random_state": random_state}
    elif isinstance(cv, (float, np.floating)):
        frac = float(cv)
        if not 0.0 < frac < 1.0:
            raise InvalidOptionError(f"cv={cv!r}: a float cv is the test fraction of random splits and must lie in (0, 1)")
        from sklearn.model_selection import StratifiedShuffleSplit

        n_test = math.ceil(frac * n)
        if n_test < len(counts) or n - n_test < len(counts):
            raise DataError(f"cv={frac}: {n_test} test and {n - n_test} training samples cannot both hold "
                            f"all {len(counts)} classes")
        splitter = StratifiedShuffleSplit(n_splits=repeats, test_size=frac, random_state=random_state)
        pairs = list(splitter.split(np.zeros((n, 1)), y))
        splits = [Split(i, 0, tr, te) for i, (tr, te) in enumerate(pairs)]
        protocol = {"kind": "holdout", "stratified": True, "n_splits": 1, "repeats": repeats,
                    "test_size": frac, "random_state": random_state}
    else:
        if repeats != 1:
            raise InvalidOptionError("repeats applies to cv=<int> or cv=<float>; a splitter or explicit splits "
                                     "carry their own repetitions")
        if hasattr(cv, "split"):
            Xs = np.zeros((n, 1)) if X is None else X
            pairs = list(cv.split(Xs, y))
            desc = type(cv).__name__
        else:
            try:
                pairs = [(np.asarray(tr), np.asarray(te)) for tr, te in cv]
            except (TypeError, ValueError) as exc:
                raise InvalidOptionError(
                    f"cv must be an int, a float in (0, 1), a splitter with split(X, y) or an iterable of "
                    f"(train, test) index pairs, got {type(cv).__name__}") from exc
            desc = "explicit"
        if not pairs:
            raise InvalidOptionError("cv produced no splits")
        k = None
        if hasattr(cv, "n_repeats") and isinstance(getattr(cv, "cvargs", None), dict) and "n_splits" in cv.cvargs:
            k = int(cv.cvargs["n_splits"])
        splits = []
        for i, (tr, te) in enumerate(pairs):
            tr, te = _check_indices(tr, n, i, "train"), _check_indices(te, n, i, "test")
            splits.append(Split(i // k if k else 0, i % k if k else i, tr, te))
        protocol = {"kind": desc, "stratified": None, "n_splits": len(pairs), "repeats": 1,
                    "test_size": None, "random_state": random_state}
    return splits, protocol


def _check_indices(idx, n: int, i: int, what: str) -> NDArray:
    a = np.asarray(idx)
    if a.dtype == bool:
        if a.shape != (n,):
            raise InvalidOptionError(f"split {i}: boolean {what} mask has shape {a.shape}, expected ({n},)")
        a = np.flatnonzero(a)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
        raise InvalidOptionError(f"split {i}: {what} indices must be a non-empty 1-D integer array")
    if a.min() < 0 or a.max() >= n:
        raise InvalidOptionError(f"split {i}: {what} indices out of range for {n} samples")
    return a.astype(np.intp)


# ============================================================================== scaling
def _scale(Xtr: NDArray, Xte: NDArray, kind: str) -> tuple[NDArray, NDArray]:
    if kind == "none":
        return Xtr, Xte
    if kind == "standard":
        shift = Xtr.mean(axis=0)
        div = Xtr.std(axis=0)
    else:  # minmax
        shift = Xtr.min(axis=0)
        div = Xtr.max(axis=0) - shift
    tiny = div < 10 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(shift))
    div = np.where(tiny, 1.0, div)
    return (Xtr - shift) / div, (Xte - shift) / div


def scale_fit_transform(X: ArrayLike, kind: str = "standard") -> NDArray:
    """``X`` scaled with its own statistics (see :data:`SCALINGS`); a new array."""
    if kind not in SCALINGS:
        raise InvalidOptionError(f"scale={kind!r}; use one of {list(SCALINGS)}")
    Xa = np.array(X, dtype=np.float64)
    return _scale(Xa, Xa[:0], kind)[0]


# ============================================================================== configuration
def accepted_parameters(method: str | None = None, *, formulation: str | None = None, surrogate: str | None = None,
                        loop: str | None = None) -> dict[str, list[str]]:
    """The parameters a method (or component triple) accepts, by owner: ``formulation``,
    ``surrogate``, ``loop``, ``kernel`` and ``fit`` (options of :func:`fsframe.fit`)."""
    reg = get_registry()
    formulation, surrogate, loop = component_names(method, formulation, surrogate, loop)
    out: dict[str, list[str]] = {}
    for kind, name in (("formulation", formulation), ("surrogate", surrogate), ("loop", loop)):
        if name not in (None, "", "none"):
            out[kind] = sorted(_fields(reg.get(kind, name)))
    out["kernel"] = list(KERNEL_FIELDS)
    out["fit"] = [o for o in FIT_OPTIONS if o != "n_features"]
    return out


def _accepts(acc: Mapping[str, list[str]], key: str) -> bool:
    if "__" in key:
        kind, name = key.split("__", 1)
        return name in acc.get(kind, ())
    return any(key in names for names in acc.values())


@attrs.frozen
class _Config:
    """One method configuration: what :func:`fsframe.fit` receives in every fold."""

    label: str
    method: str | None
    formulation: str | None
    surrogate: str | None
    loop: str | None
    params: dict  # component parameters
    fit_options: dict  # backend, time_limit, ...
    n_features: int | None
    scale: str
    retrain: Any
    retrain_C: float
    groups: str  # "features" or "samples" (kernel map)
    resolved_params: dict
    components: dict
    backend: str


def _make_config(label, spec: Mapping[str, Any], *, n_features, scale, retrain, retrain_C, n_columns, n_samples
                 ) -> _Config:
    spec = dict(spec)
    method = spec.pop("method", None)
    formulation = spec.pop("formulation", None)
    surrogate = spec.pop("surrogate", None)
    loop = spec.pop("loop", None)
    if "n_features" in spec:
        nf = spec.pop("n_features")
        if n_features is not None and nf != n_features:
            raise InvalidOptionError(f"{label}: n_features given twice ({nf} and {n_features})")
        n_features = nf
    fit_options = {k: spec.pop(k) for k in list(spec) if k in FIT_OPTIONS}
    if fit_options.pop("keep_model", False):
        raise InvalidOptionError("keep_model=True is not supported in cross-validation (models are not returned)")
    res = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop, **spec)
    options = make_options(time_limit=fit_options.get("time_limit"), verbose=fit_options.get("verbose", False),
                           backend_options=fit_options.get("backend_options"))
    backend = select_backend(fit_options.get("backend", "auto"), res.problem_class, quadratic="quad" in res.terms,
                             time_limit=fit_options.get("time_limit"))
    backend.check_options(options)
    groups = "samples" if res.kernel is not None else "features"
    if n_features is not None:
        n_features = _check_int("n_features", n_features, 1)
        limit = n_columns if groups == "features" else n_samples
        if n_features > limit:
            raise InvalidOptionError(f"n_features={n_features} exceeds the {limit} available {groups}")
    if retrain is not None and groups == "samples":
        raise InvalidOptionError("retrain= needs selected features, but a kernel map selects training samples")
    components = {"formulation": component_dict(res.formulation), "surrogate": component_dict(res.surrogate),
                  "loop": component_dict(res.loop), "kernel": component_dict(res.kernel)}
    return _Config(label=label, method=method, formulation=formulation, surrogate=surrogate, loop=loop, params=spec,
                   fit_options=fit_options, n_features=n_features, scale=scale, retrain=retrain,
                   retrain_C=retrain_C, groups=groups, resolved_params=dict(res.params), components=components,
                   backend=backend.name)


def component_dict(obj) -> dict | None:
    """``{"name": ..., <every init parameter>: value}`` of a component instance (attrs class)."""
    if obj is None:
        return None
    out = {"name": getattr(obj, "name", None) or getattr(obj, "kernel", None) or type(obj).__name__}
    if attrs.has(type(obj)):
        for f in attrs.fields(type(obj)):
            v = getattr(obj, f.name)
            if f.init and f.repr and not f.name.startswith("_") and _is_parameter(v):
                out[f.name] = _jsonable(v)
    return out


def _is_parameter(v) -> bool:
    """Scalars and short lists of scalars are parameters; arrays (a fitted map's training data) are not."""
    scalar = (str, int, float, bool, type(None), np.generic)
    if isinstance(v, scalar):
        return True
    if isinstance(v, (list, tuple)) and len(v) <= 16:
        return all(isinstance(x, scalar) for x in v)
    return isinstance(v, Mapping)


_LOOP_ALWAYS = ("max_iter", "tol")


def format_components(components: Mapping[str, dict | None], *, defaults: bool = False) -> str:
    """``hinge(C=1.0) + exp(alpha=5.0) + reweighted-l1(max_iter=20, tol=1e-05)``: formulation
    and surrogate with every parameter; the loop with ``max_iter``, ``tol`` and the parameters
    that differ from its defaults (all of them with ``defaults=True``)."""
    reg = get_registry()
    parts = []
    for kind in ("formulation", "surrogate", "loop", "kernel"):
        c = components.get(kind)
        if c is None:
            continue
        items = {k: v for k, v in c.items() if k != "name"}
        if kind == "loop" and not defaults:
            try:
                cls = reg.get("loop", c["name"])
                dflt = {f.name: f.default for f in attrs.fields(cls) if f.init}
            except Exception:
                dflt = {}
            items = {k: v for k, v in items.items() if k in _LOOP_ALWAYS or dflt.get(k, object()) != v}
        if kind == "kernel":
            parts.append("kernel " + c["name"] + "(" + ", ".join(f"{k}={v!r}" for k, v in items.items() if k != "kernel") + ")")
            continue
        parts.append(f"{c['name']}(" + ", ".join(f"{k}={v!r}" for k, v in items.items()) + ")")
    return " + ".join(parts)


def _retrain_estimator(retrain, C: float):
    if isinstance(retrain, str):
        if retrain == "svm":
            from sklearn.svm import SVC

            return SVC(kernel="linear", C=C)
        if retrain == "linear-svc":
            from sklearn.svm import LinearSVC

            return LinearSVC(C=C)
        raise InvalidOptionError(f"retrain={retrain!r}; use 'svm' (SVC(kernel='linear')), 'linear-svc' "
                                 "(LinearSVC) or a scikit-learn classifier")
    if not (hasattr(retrain, "fit") and hasattr(retrain, "predict")):
        raise InvalidOptionError(f"retrain must be 'svm', 'linear-svc' or a classifier with fit/predict, got {retrain!r}")
    from sklearn.base import clone

    return clone(retrain)


# ============================================================================== records
@attrs.frozen(eq=False)
class FoldRecord:
    """The outcome of one fit on one split.

    A failed fit has ``ok=False``, ``error_type``/``error`` (and ``solver_status`` for a
    :class:`~fsframe.errors.SolverFailedError`) and ``None`` metrics; it is counted, never dropped.

    Attributes
    ----------
    accuracy, mcc : float
        Of the evaluated classifier on the test part: the selector's own model, or the classifier
        retrained on the selected features (``retrain=``).
    selector_accuracy, selector_mcc : float
        Of the selector's own sparse model (equal to the above without ``retrain``).
    n_selected, pct_selected : int, float
        Selected features (training samples for a kernel map) and their percentage.
    n_iter, converged, monotone, objective, stop_reason, statuses
        From the :class:`~fsframe.FitResult`.
    seconds : float
        The selector's fit (``FitResult.info["seconds"]``); ``total_seconds`` also counts scaling,
        retraining and prediction.
    selected : tuple of int
        Selected feature indices (original sample indices for a kernel map).
    warnings : tuple of (category, message)
        Warnings raised during this fold.
    train, test, y_pred : arrays
        The split and the evaluated classifier's test predictions.
    """

    label: str
    repeat: int
    fold: int
    n_train: int
    n_test: int
    ok: bool
    accuracy: float | None = None
    mcc: float | None = None
    selector_accuracy: float | None = None
    selector_mcc: float | None = None
    n_selected: int | None = None
    pct_selected: float | None = None
    n_iter: int | None = None
    converged: bool | None = None
    monotone: bool | None = None
    objective: float | None = None
    stop_reason: str | None = None
    statuses: tuple = ()
    seconds: float | None = None
    total_seconds: float = 0.0
    selected: tuple = ()
    backend_version: str | None = None
    error_type: str | None = None
    error: str | None = None
    solver_status: str | None = None
    traceback: str | None = attrs.field(default=None, repr=False)
    warnings: tuple = attrs.field(default=(), repr=False)
    train: NDArray | None = attrs.field(default=None, repr=False)
    test: NDArray | None = attrs.field(default=None, repr=False)
    y_pred: NDArray | None = attrs.field(default=None, repr=False)

    @property
    def status(self) -> str:
        return "ok" if self.ok else "failed"

    def as_dict(self, *, arrays: bool = False) -> dict:
        """JSON-serialisable fields (the index and prediction arrays only with ``arrays=True``)."""
        out = {}
        for f in attrs.fields(FoldRecord):
            v = getattr(self, f.name)
            if f.name in ("train", "test", "y_pred"):
                if not arrays:
                    continue
                v = None if v is None else v.tolist()
            elif f.name == "warnings":
                v = [f"{c.__name__}: {m}" for c, m in v]
            out[f.name] = _jsonable(v)
        out["status"] = self.status
        return out


@attrs.frozen
class Progress:
    """Passed to the ``progress`` callback after each fit: ``done`` of ``total`` fits finished;
    ``record`` is the fold just finished."""

    done: int
    total: int
    record: FoldRecord


def _run_fold(X: NDArray, y: NDArray, split: Split, cfg: _Config, raise_errors: bool = False) -> FoldRecord:
    """One fit and its evaluation. A failure becomes the record's error, or propagates with
    ``raise_errors``."""
    t0 = time.perf_counter()
    base = dict(label=cfg.label, repeat=split.repeat, fold=split.fold, n_train=int(split.train.size),
                n_test=int(split.test.size), train=split.train, test=split.test)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            Xtr, Xte = _scale(X[split.train], X[split.test], cfg.scale)
            ytr, yte = y[split.train], y[split.test]
            res = fit(Xtr, ytr, method=cfg.method, formulation=cfg.formulation, surrogate=cfg.surrogate,
                      loop=cfg.loop, n_features=cfg.n_features, **cfg.fit_options, **cfg.params)
            sel_pred = np.asarray(res.predict(Xte))
            sel_acc, sel_mcc = accuracy_score(yte, sel_pred), mcc_score(yte, sel_pred)
            y_pred = sel_pred
            if cfg.retrain is not None:
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
                **base, ok=True, accuracy=accuracy_score(yte, y_pred), mcc=mcc_score(yte, y_pred),
                selector_accuracy=sel_acc, selector_mcc=sel_mcc, n_selected=res.n_selected,
                pct_selected=100.0 * res.n_selected / n_groups if n_groups else 0.0, n_iter=int(res.n_iter),
                converged=bool(res.converged), monotone=bool(res.monotone),
                objective=None if res.objective is None else float(res.objective),
                stop_reason=res.info.get("stop_reason", res.per_class[0].info.get("stop_reason") if res.per_class else None),
                statuses=tuple(getattr(s, "value", str(s)) for s in res.statuses),
                seconds=float(res.info.get("seconds", float("nan"))),
                selected=tuple(int(j) for j in selected),
                backend_version=_backend_version(res), y_pred=y_pred)
        except Exception as exc:  # recorded, counted and reported; never dropped
            if raise_errors:
                raise
            status = None
            if isinstance(exc, SolverFailedError) and exc.status is not None:
                status = getattr(exc.status, "value", str(exc.status))
            rec = FoldRecord(**base, ok=False, error_type=type(exc).__name__, error=str(exc), solver_status=status,
                             traceback=traceback.format_exc())
    rec = attrs.evolve(rec, total_seconds=time.perf_counter() - t0,
                       warnings=tuple((w.category, str(w.message)) for w in caught))
    return rec


def _backend_version(res) -> str | None:
    info = res.info if not res.per_class else res.per_class[0].info
    v = info.get("backend_version")
    return None if v is None else str(v)


# ============================================================================== results
def _jsonable(v):
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)


def _stats(values: Sequence[float]) -> dict:
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if a.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else None,
            "min": float(a.min()), "max": float(a.max()), "n": int(a.size)}


def environment_versions(extra: Mapping[str, str] | None = None) -> dict:
    """Versions of Python, fsframe and the numerical / solver packages (those installed)."""
    out = {"python": platform.python_version()}
    for dist in ("fsframe", "numpy", "scipy", "scikit-learn", "pyomo", "highspy", "ecos", "clarabel", "pluggy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    if extra:
        out.update(extra)
    return out


_NUM = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def _group_warnings(folds: Sequence[FoldRecord]) -> list[dict]:
    """Warnings of all folds, grouped by category and message shape (numbers masked)."""
    groups: dict[tuple, dict] = {}
    for r in folds:
        seen = set()
        for cat, msg in r.warnings:
            key = (cat, _NUM.sub("#", msg))
            if key in seen:
                continue
            seen.add(key)
            g = groups.setdefault(key, {"category": cat, "message": msg, "folds": 0})
            g["folds"] += 1
    return list(groups.values())


@attrs.frozen(eq=False)
class CVResult:
    """The outcome of :func:`cross_validate`: every fold and the summaries derived from them.

    Attributes
    ----------
    label : str
        The method name (or ``formulation+surrogate+loop``), or the label given to :func:`compare`.
    method : str or None
    components : dict
        The formulation, surrogate, loop and kernel map with every parameter value.
    params : dict
        The parameters as resolved (method defaults plus user values), and ``fit_options``.
    protocol : dict
        Splitting (kind, folds, repeats, test size, seed), scaling, retraining, ``n_features``.
    dataset : dict
        Name, shape, classes and class counts, feature names.
    folds : tuple of FoldRecord
        In split order (repeat, fold).
    seconds : float
        Wall time of the whole evaluation.
    versions : dict
        Python, fsframe, numpy, scipy, scikit-learn, pyomo, the solver packages, and the solver
        version reported by the backend.
    """

    label: str
    method: str | None
    components: dict
    params: dict
    fit_options: dict
    backend: str
    protocol: dict
    dataset: dict
    folds: tuple
    seconds: float
    versions: dict

    # -- folds ------------------------------------------------------------------------------
    @property
    def ok_folds(self) -> list[FoldRecord]:
        return [f for f in self.folds if f.ok]

    @property
    def failed_folds(self) -> list[FoldRecord]:
        return [f for f in self.folds if not f.ok]

    @property
    def n_folds(self) -> int:
        return len(self.folds)

    @property
    def n_failed(self) -> int:
        return len(self.failed_folds)

    def values(self, metric: str) -> NDArray:
        """The per-fold values of ``metric`` over the successful folds."""
        if metric not in attrs.fields_dict(FoldRecord):
            raise InvalidOptionError(f"unknown metric {metric!r}; metrics are {list(METRICS)}")
        return np.array([getattr(f, metric) for f in self.ok_folds], dtype=np.float64)

    # -- summaries ------------------------------------------------------------------------------
    @property
    def metrics(self) -> tuple[str, ...]:
        extra = ("selector_accuracy", "selector_mcc") if self.protocol.get("retrain") is not None else ()
        return METRICS + extra

    def summary(self) -> dict:
        """``{metric: {mean, std, min, max, n}}`` over the successful folds (``std`` with
        ``ddof=1``). With repeated k-fold CV each entry also has ``repeat_std``: the standard
        deviation of the per-repeat means."""
        out = {}
        repeats = self.protocol.get("repeats", 1)
        for m in self.metrics:
            vals = [getattr(f, m) for f in self.ok_folds]
            s = _stats(vals)
            if self.protocol.get("kind") == "k-fold" and repeats > 1:
                per = [_stats([getattr(f, m) for f in self.ok_folds if f.repeat == r])["mean"] for r in range(repeats)]
                s["repeat_std"] = _stats(per)["std"]
            out[m] = s
        return out

    # -- selection stability ----------------------------------------------------------------------
    @property
    def selection_matrix(self) -> NDArray | None:
        """Boolean ``(n_ok_folds, n_features)``: row ``i`` marks the features fold ``i`` selected
        (``None`` for a kernel map, whose "features" are training samples)."""
        if self.protocol.get("groups") == "samples":
            return None
        d = self.dataset["n_features"]
        Z = np.zeros((len(self.ok_folds), d), dtype=bool)
        for i, f in enumerate(self.ok_folds):
            Z[i, list(f.selected)] = True
        return Z

    @property
    def frequency(self) -> NDArray | None:
        """Fraction of the successful folds that selected each feature (001, Fig. 1)."""
        Z = self.selection_matrix
        return None if Z is None else selection_frequency(Z)

    def stability(self, alpha: float = 0.05) -> dict:
        """Nogueira et al.'s estimate with its ``1 - alpha`` confidence interval (the headline),
        Kuncheva's index (when every fold selected the same number of features) and the mean
        pairwise Jaccard index, over the successful folds."""
        Z = self.selection_matrix
        if Z is None:
            return {"nogueira": None, "note": "a kernel map selects training samples; stability across folds "
                    "is not defined", "n_sets": len(self.ok_folds)}
        est = nogueira_stability(Z, alpha=alpha)
        return {"nogueira": est.value, "nogueira_variance": est.variance, "nogueira_ci": [est.ci_low, est.ci_high],
                "alpha": alpha, "kuncheva": kuncheva_index(Z), "jaccard": jaccard_index(Z), "n_sets": est.n_sets,
                "note": est.note}

    def selected_in_all(self) -> list[int]:
        f = self.frequency
        return [] if f is None or not self.ok_folds else np.flatnonzero(f == 1.0).tolist()

    @property
    def warnings(self) -> list[dict]:
        """Warnings raised in the folds, grouped: ``{category, message (first seen), folds}``."""
        return _group_warnings(self.folds)

    # -- export --------------------------------------------------------------------------------
    def to_dict(self, *, arrays: bool = False) -> dict:
        """Everything, JSON-serialisable: parameters, protocol, dataset, versions, summary,
        stability, per-feature frequencies and every fold."""
        freq = self.frequency
        names = self.dataset.get("feature_names")
        return _jsonable({
            "label": self.label, "method": self.method, "components": self.components, "params": self.params,
            "fit_options": self.fit_options, "backend": self.backend, "protocol": self.protocol,
            "dataset": self.dataset, "versions": self.versions, "seconds": self.seconds,
            "n_folds": self.n_folds, "n_failed": self.n_failed, "summary": self.summary(),
            "stability": self.stability(),
            "frequency": None if freq is None else {str(names[j]) if names else str(j): float(freq[j])
                                                   for j in range(freq.size)},
            "warnings": [{"category": w["category"].__name__, "message": w["message"], "folds": w["folds"]}
                         for w in self.warnings],
            "folds": [f.as_dict(arrays=arrays) for f in self.folds],
        })

    FOLD_COLUMNS = ("label", "repeat", "fold", "status", "n_train", "n_test", "accuracy", "mcc", "selector_accuracy",
                    "selector_mcc", "n_selected", "pct_selected", "n_iter", "converged", "objective", "seconds",
                    "total_seconds", "selected", "error_type", "error", "solver_status")

    def fold_rows(self) -> list[dict]:
        """One flat row per fold (the CSV layout): ``selected`` joined with spaces."""
        rows = []
        for f in self.folds:
            d = f.as_dict()
            d["selected"] = " ".join(str(j) for j in f.selected)
            rows.append({c: d.get(c) for c in self.FOLD_COLUMNS})
        return rows

    # -- text ----------------------------------------------------------------------------------
    def describe_protocol(self) -> str:
        return _describe_protocol(self.protocol)

    def report(self, *, top: int = 10) -> str:
        """A readable multi-line report (what ``fsframe select --cv`` prints)."""
        ds = self.dataset
        lines = [f"{self.label} on {ds['name']} ({ds['n_samples']} samples x {ds['n_features']} features, "
                 f"{len(ds['classes'])} classes)"]
        lines += _wrap(f"protocol: {self.describe_protocol()}", 110)
        solver = self.versions.get("solver") or self.backend
        lines += _wrap(f"model: {format_components(self.components)}; backend {solver}", 110)
        lines.append("")
        lines.extend(_summary_table(self))
        lines.append("")
        st = self.stability()
        Z = self.selection_matrix
        if st.get("nogueira") is not None:
            lo, hi = st["nogueira_ci"]
            extra = f"; Kuncheva {st['kuncheva']:.3f}" if st.get("kuncheva") is not None else ""
            lines.append(f"  stability (Nogueira et al. 2018): {st['nogueira']:.3f}, "
                         f"{100 * (1 - st['alpha']):.0f}% CI [{lo:.3f}, {hi:.3f}] over {st['n_sets']} feature sets"
                         f"{extra}; mean Jaccard {st['jaccard']:.3f}")
        elif Z is not None:
            lines.append(f"  stability: {st.get('note') or 'undefined'}")
        else:
            lines.append(f"  stability: {st['note']}")
        if Z is not None and Z.shape[0]:
            names = ds["feature_names"]
            freq = selection_frequency(Z)
            always = np.flatnonzero(freq == 1.0)
            if always.size:
                shown = ", ".join(names[j] for j in always[:top])
                more = f", ... ({always.size - top} more)" if always.size > top else ""
                lines.extend(_wrap(f"selected in every fold ({always.size}): {shown}{more}"))
            some = [j for j in np.argsort(-freq, kind="stable") if 0 < freq[j] < 1.0]
            if some:
                shown = ", ".join(f"{names[j]} {100 * freq[j]:.0f}%" for j in some[:top])
                more = f", ... ({len(some) - top} more)" if len(some) > top else ""
                lines.extend(_wrap(f"selected in some folds ({len(some)}): {shown}{more}"))
            never = int(np.count_nonzero(freq == 0))
            if never:
                lines.append(f"  never selected: {never} of {freq.size} features")
        failed = self.failed_folds
        lines.append(f"  {len(failed)} of {self.n_folds} fits failed; total {self.seconds:.1f} s")
        for f in failed[:5]:
            lines.append(f"    repeat {f.repeat} fold {f.fold}: {f.error_type}: {_first_line(f.error)}")
        if len(failed) > 5:
            lines.append(f"    ... {len(failed) - 5} more (see the JSON output)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()


def _wrap(text: str, width: int = 100, indent: str = "  ") -> list[str]:
    import textwrap

    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "    " if indent else "",
                         break_on_hyphens=False) or [""]


def _first_line(s: str | None, width: int = 160) -> str:
    s = (s or "").strip().splitlines()[0] if s else ""
    return s if len(s) <= width else s[: width - 3] + "..."


def _describe_protocol(p: dict) -> str:
    if p["kind"] == "k-fold":
        rep = f"{p['repeats']} x " if p["repeats"] > 1 else ""
        text = f"{rep}{p['n_splits']}-fold stratified CV"
    elif p["kind"] == "holdout":
        tr = round(100 * (1 - p["test_size"]))
        text = f"{p['repeats']} stratified random {tr}/{100 - tr} split{'s' if p['repeats'] > 1 else ''}"
    else:
        text = f"{p['n_splits']} splits ({p['kind']})"
    text += f", seed {p['random_state']}"
    scale = p.get("scale", "none")
    text += {"standard": ", standardised on each training part", "minmax": ", min-max scaled on each training part",
             "none": ", unscaled"}[scale]
    if p.get("n_features") is not None:
        text += f", exactly {p['n_features']} features"
    if p.get("retrain") is not None:
        text += f", {p['retrain']} retrained on the selected features"
    return text


def _fmt(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind in ("accuracy", "selector_accuracy"):
        return f"{100 * v:.2f}"
    if kind in ("mcc", "selector_mcc"):
        return f"{v:.3f}"
    if kind == "seconds":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if kind in ("n_selected", "n_iter"):
        return f"{v:.1f}"
    return f"{v:.1f}"


def _fmt_mm(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind in ("n_selected", "n_iter"):
        return f"{v:g}"
    return _fmt(v, kind)


def _summary_table(res: CVResult) -> list[str]:
    summ = res.summary()
    rows = [("", "mean", "std", "min", "max")]
    for m in res.metrics:
        s = summ[m]
        rows.append((METRIC_LABELS[m], _fmt(s["mean"], m), _fmt(s["std"], m), _fmt_mm(s["min"], m), _fmt_mm(s["max"], m)))
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    out = []
    for i, r in enumerate(rows):
        pm = "±" if i else " "
        out.append(f"  {r[0]:<{w[0]}}  {r[1]:>{w[1]}} {pm} {r[2]:<{w[2]}}   {r[3]:>{w[3]}}  {r[4]:>{w[4]}}".rstrip())
    return out


# ============================================================================== drivers
def _as_data(data_or_X, y) -> tuple[NDArray, NDArray, dict]:
    if isinstance(data_or_X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        d = data_or_X
        X, yy, names, name = np.array(d.X, dtype=np.float64), np.array(d.y), list(d.feature_names), d.name
    else:
        if y is None:
            raise InvalidOptionError("y is required when the data is an array (or pass a fsframe.Dataset)")
        cols = getattr(data_or_X, "columns", None)
        X, yy = check_Xy(data_or_X, y)
        names = [str(c) for c in cols] if cols is not None and len(cols) == X.shape[1] else \
            [f"x{j}" for j in range(X.shape[1])]
        name = "data"
    classes, counts = np.unique(yy, return_counts=True)
    info = {"name": name, "n_samples": int(X.shape[0]), "n_features": int(X.shape[1]),
            "classes": _jsonable(classes.tolist()),
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


def _execute(X, y, splits, configs, n_jobs, progress, on_error) -> list[list[FoldRecord]]:
    tasks = [(ci, si) for ci in range(len(configs)) for si in range(len(splits))]
    out: list[list[FoldRecord | None]] = [[None] * len(splits) for _ in configs]
    total = len(tasks)
    raise_errors = on_error == "raise"
    done = 0

    def record(ci, si, rec):
        nonlocal done
        done += 1
        out[ci][si] = rec
        if progress is not None:
            progress(Progress(done, total, rec))

    if n_jobs == "auto":
        # time the first fit of every configuration here, then decide from the estimated rest
        for ci in range(len(configs)):
            record(ci, 0, _run_fold(X, y, splits[0], configs[ci], raise_errors))
        tasks = [(ci, si) for ci, si in tasks if si > 0]
        rest = sum(out[ci][0].total_seconds for ci, _ in tasks)
        from joblib import cpu_count

        cores = cpu_count()
        n_jobs = min(cores, len(tasks)) if rest > AUTO_PARALLEL_SECONDS and cores > 1 else 1
    if n_jobs != 1 and len(tasks) > 1:
        local = _runtime_components(configs)
        if local:
            warnings.warn(f"{', '.join(local)} come from plugins registered at run time (fsframe.plugins.register), "
                          "which worker processes do not have; running the fits serially. Install the plugin as a "
                          "package (entry point) to run them in parallel", RuntimeWarning, stacklevel=4)
            n_jobs = 1
    if n_jobs == 1 or len(tasks) <= 1:
        results = (_run_fold(X, y, splits[si], configs[ci], raise_errors) for ci, si in tasks)
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_run_fold)(X, y, splits[si], configs[ci], raise_errors) for ci, si in tasks)
    for (ci, si), rec in zip(tasks, results):
        record(ci, si, rec)
    return out  # type: ignore[return-value]


def _runtime_components(configs) -> list[str]:
    """Components of ``configs`` provided by plugins registered in this process only."""
    from . import plugins as _plugins

    runtime = set(_plugins._runtime_plugins)
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


def _run(data_or_X, y, entries, *, cv, repeats, scale, n_jobs, random_state, n_features, retrain, retrain_C,
         progress, on_error) -> tuple[list[CVResult], dict]:
    t0 = time.perf_counter()
    C = _check_common(scale, n_jobs, on_error, retrain, retrain_C)
    X, yy, dsinfo = _as_data(data_or_X, y)
    if random_state is None:
        random_state = secrets.randbelow(2**31)  # drawn, recorded, reproducible afterwards
    configs = [_make_config(label, spec, n_features=n_features, scale=scale, retrain=retrain, retrain_C=C,
                            n_columns=X.shape[1], n_samples=X.shape[0]) for label, spec in entries]
    labels = [c.label for c in configs]
    dup = sorted({lab for lab in labels if labels.count(lab) > 1})
    if dup:
        raise InvalidOptionError(f"duplicate labels {dup}; give each configuration its own label")
    splits, protocol = make_splits(yy, cv, repeats=repeats, random_state=random_state, X=X)
    retrain_desc = None
    if retrain is not None:
        retrain_desc = (f"SVC(kernel='linear', C={C:g})" if retrain == "svm" else
                        f"LinearSVC(C={C:g})" if retrain == "linear-svc" else repr(retrain))
    per = _execute(X, yy, splits, configs, n_jobs, progress, on_error)
    seconds = time.perf_counter() - t0
    results = []
    for cfg, folds in zip(configs, per):
        solver = next((f.backend_version for f in folds if f.ok and f.backend_version), None)
        versions = environment_versions({"solver": f"{cfg.backend} {solver}" if solver else cfg.backend})
        prot = dict(protocol, scale=scale, n_features=cfg.n_features, retrain=retrain_desc, groups=cfg.groups)
        results.append(CVResult(label=cfg.label, method=cfg.method, components=cfg.components,
                                params=_jsonable(cfg.resolved_params), fit_options=_jsonable(cfg.fit_options),
                                backend=cfg.backend, protocol=prot, dataset=dsinfo, folds=tuple(folds),
                                seconds=seconds, versions=versions))
    return results, dict(protocol, scale=scale, n_features=n_features, retrain=retrain_desc)


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
    scale : {"standard", "minmax", "none"}
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

    Warnings raised inside the folds are collected per fold (``FoldRecord.warnings``) and
    re-issued once per kind with the number of fits they occurred in.
    """
    spec = dict(params, method=method, formulation=formulation, surrogate=surrogate, loop=loop)
    label = _label_for(method, formulation, surrogate, loop)
    results, _ = _run(data_or_X, y, [(label, spec)], cv=cv, repeats=repeats, scale=scale, n_jobs=n_jobs,
                      random_state=random_state, n_features=n_features, retrain=retrain, retrain_C=retrain_C,
                      progress=progress, on_error=on_error)
    _emit_warnings(results)
    return results[0]


# ============================================================================== comparison
@attrs.frozen(eq=False)
class CompareResult:
    """Several configurations cross-validated on the same splits (see :func:`compare`)."""

    results: tuple
    protocol: dict
    dataset: dict
    seconds: float

    def __getitem__(self, label: str) -> CVResult:
        for r in self.results:
            if r.label == label:
                return r
        raise KeyError(f"no result labelled {label!r}; labels are {[r.label for r in self.results]}")

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.results]

    COLUMNS = ("accuracy", "mcc", "n_selected", "pct_selected", "n_iter", "seconds")

    def rows(self) -> list[dict]:
        """One flat row per configuration: mean and std of every metric, stability, failures."""
        rows = []
        for r in self.results:
            s = r.summary()
            st = r.stability()
            row = {"label": r.label, "method": r.method}
            for m in r.metrics:
                row[f"{m}_mean"] = s[m]["mean"]
                row[f"{m}_std"] = s[m]["std"]
            row.update(stability=st.get("nogueira"), stability_ci_low=(st.get("nogueira_ci") or [None, None])[0],
                       stability_ci_high=(st.get("nogueira_ci") or [None, None])[1], n_fits=r.n_folds,
                       n_failed=r.n_failed, params=" ".join(f"{k}={v}" for k, v in r.params.items()))
            rows.append(_jsonable(row))
        return rows

    def table(self, *, markdown: bool = False) -> str:
        """The paper-style table: one row per configuration, mean ± std over the fits."""
        retrain = self.protocol.get("retrain") is not None
        head = ["method", "accuracy (%)", "MCC", "features", "features (%)", "iterations", "seconds", "stability"]
        if retrain:
            head.insert(3, "selector acc. (%)")
        if any(r.n_failed for r in self.results):
            head.append("failed")
        body = []
        for r in self.results:
            s = r.summary()

            def ms(m, r=r, s=s):
                if s[m]["mean"] is None:
                    return "-"
                std = s[m]["std"]
                return _fmt(s[m]["mean"], m) + ("" if std is None else f" ± {_fmt(std, m)}")

            st = r.stability().get("nogueira")
            row = [r.label, ms("accuracy"), ms("mcc"), ms("n_selected"), ms("pct_selected"), ms("n_iter"),
                   _fmt(s["seconds"]["mean"], "seconds"), "-" if st is None else f"{st:.2f}"]
            if retrain:
                row.insert(3, ms("selector_accuracy"))
            if "failed" in head:
                row.append(f"{r.n_failed}/{r.n_folds}")
            body.append(row)
        if markdown:
            lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "--:" for i in range(len(head))) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in body]
            return "\n".join(lines)
        w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        fmt = lambda row: "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(row)).rstrip()
        return "\n".join([fmt(head), "  ".join("-" * x for x in w)] + [fmt(row) for row in body])

    def report(self, *, markdown: bool = False) -> str:
        ds = self.dataset
        title = f"{ds['name']} ({ds['n_samples']} samples x {ds['n_features']} features, {len(ds['classes'])} classes)"
        prot = f"protocol: {_describe_protocol(self.protocol)}"
        solvers = sorted({r.versions.get("solver", r.backend) for r in self.results})
        undefined = [r.label for r in self.results if r.stability().get("nogueira") is None]
        foot = (f"mean ± std over {self.results[0].n_folds} fits on the same splits; MCC: paper 000 eq. 60"
                f"{' (multi-class: Gorodkin R_K)' if len(ds['classes']) > 2 else ''}; stability: Nogueira et al. 2018"
                f"{' (-: undefined, every fit selected all or no features)' if undefined else ''}; "
                f"solver {', '.join(solvers)}; total {self.seconds:.1f} s")
        if markdown:
            return f"**{title}**; {prot}\n\n{self.table(markdown=True)}\n\n{foot}"
        return "\n".join([title, *_wrap(prot, 110, ""), "", self.table(), "", *_wrap(foot, 110, "")])

    def to_dict(self, *, arrays: bool = False) -> dict:
        return _jsonable({"protocol": self.protocol, "dataset": self.dataset, "seconds": self.seconds,
                          "rows": self.rows(), "results": [r.to_dict(arrays=arrays) for r in self.results]})

    def __str__(self) -> str:
        return self.report()


def _entries(methods) -> list[tuple[str, dict]]:
    reg = get_registry()
    if methods is None:
        return [(n, {"method": n}) for n in reg.names("method")]
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    out = []
    items = methods.items() if isinstance(methods, Mapping) else methods
    for item in items:
        if isinstance(item, str):
            out.append((item, {"method": item}))
            continue
        try:
            label, spec = item
        except (TypeError, ValueError):
            raise InvalidOptionError(f"methods entries are names, (label, params) pairs or a mapping "
                                     f"label -> params; got {item!r}") from None
        spec = dict(spec or {})
        if not any(k in spec for k in ("method", "formulation", "loop")):
            spec["method"] = label
        out.append((str(label), spec))
    if not out:
        raise InvalidOptionError("no methods to compare")
    return out


def compare(
    data_or_X: Dataset | ArrayLike,
    y: ArrayLike | None = None,
    methods: Iterable | Mapping | str | None = None,
    *,
    cv: Any = 10,
    repeats: int = 1,
    scale: str = "standard",
    n_jobs: int = 1,
    random_state: int | None = 0,
    n_features: int | None = None,
    retrain: Any = None,
    retrain_C: float = 1.0,
    progress: Callable[[Progress], None] | None = None,
    on_error: str = "record",
    **params,
) -> CompareResult:
    """Cross-validate several configurations on the same splits (a paired comparison).

    ``methods`` is a list of method names (``None``: every registered method), a comma-separated
    string, or labelled configurations — ``[("fsv a=1", {"method": "fsv", "alpha": 1}), ...]`` or
    a mapping label -> parameters (a label that is a method name needs no ``"method"`` key).
    ``**params`` apply to every configuration that accepts them (``alpha`` reaches ``fsv`` but
    not ``l1-svm``); a parameter no configuration accepts is an error. Other arguments as in
    :func:`cross_validate`; all fits of all configurations share one pool of ``n_jobs`` workers.
    """
    entries = _entries(methods)
    if params:
        accepted = {label: accepted_parameters(spec.get("method"), formulation=spec.get("formulation"),
                                               surrogate=spec.get("surrogate"), loop=spec.get("loop"))
                    for label, spec in entries}
        nobody = [k for k in params if not any(_accepts(acc, k) for acc in accepted.values())]
        if nobody:
            raise InvalidOptionError(f"parameter(s) {nobody} are accepted by none of {[e[0] for e in entries]}")
        entries = [(label, {**{k: v for k, v in params.items() if _accepts(accepted[label], k) and k not in spec},
                            **spec}) for label, spec in entries]
    t0 = time.perf_counter()
    results, protocol = _run(data_or_X, y, entries, cv=cv, repeats=repeats, scale=scale, n_jobs=n_jobs,
                             random_state=random_state, n_features=n_features, retrain=retrain,
                             retrain_C=retrain_C, progress=progress, on_error=on_error)
    _emit_warnings(results)
    return CompareResult(results=tuple(results), protocol=protocol, dataset=results[0].dataset,
                         seconds=time.perf_counter() - t0)
