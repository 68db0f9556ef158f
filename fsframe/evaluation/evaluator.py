"""The *evaluated classifier* of a study's protocol (:class:`Evaluator`): the model trained on a
cell's features to score them — the protocol's retrained classifier, or the reference (a
retrained classifier's name, any scikit-learn estimator, or a method fitted on the features;
:func:`evaluator_of`) — a least-squares regressor scored by R² on a real target.

Its fits are kept in a process-wide memo keyed exactly by value (the estimator's class and every
parameter, the three arrays' contents: :func:`_fit_key`), so the cells of one split whose top
``k`` columns are the same share one fit (:func:`fit_memo_info` counts them). What the protocols
compute with it — top-k curves, random-feature baselines, tuning — is
:mod:`~fsframe.evaluation.protocols`.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import attrs
import numpy as np

from ..fitting import fit
from .metrics import accuracy_score, mae_score, mcc_score, mse_score, r2_score
from .preprocess import _retrain_estimator
from .study import RETRAINS, Protocol

__all__ = ["Evaluator", "evaluator_of", "fit_memo_info", "clear_fit_memo", "FIT_MEMO_SIZE"]


@attrs.frozen(eq=False)
class Evaluator:
    """The model a protocol evaluates features with: ``clf`` a retrained-classifier name, a
    scikit-learn estimator, or ``method`` a registered method fitted on the features. With
    ``regression`` (a real target) it is a regressor (``clf="ls"``: ordinary least squares with
    an intercept) and it scores R² (:meth:`score`) instead of accuracy."""

    clf: Any = None
    C: float = 1.0
    method: str | None = None
    regression: bool = False

    def describe(self) -> str:
        if self.method is not None:
            return f"method {self.method}"
        return self.clf if isinstance(self.clf, str) else type(self.clf).__name__

    def fit_predict(self, Xtr, ytr, Xte, *, untuned: bool = False):
        """Train on ``Xtr`` (every column is used) and predict ``Xte``; with no column, the
        training part's majority class. ``untuned`` replaces a ``GridSearchCV`` by its estimator."""
        if Xtr.shape[1] == 0:
            if self.regression:  # no feature: the training part's mean
                return np.full(Xte.shape[0], float(np.mean(ytr)))
            vals, cnt = np.unique(ytr, return_counts=True)
            return np.full(Xte.shape[0], vals[np.argmax(cnt)], dtype=ytr.dtype)
        if self.method is not None:
            return np.asarray(fit(Xtr, ytr, method=self.method).predict(Xte))
        est = _retrain_estimator(self.clf, self.C)
        if untuned and hasattr(est, "estimator") and hasattr(est, "param_grid"):
            from sklearn.base import clone

            est = clone(est.estimator)
        key = _fit_key(est, Xtr, ytr, Xte)
        if key is None:
            est.fit(Xtr, ytr)
            return np.asarray(est.predict(Xte))
        if key in _FITS:
            _FITS_COUNT["hits"] += 1
            _FITS.move_to_end(key)
            y_pred, said = _FITS[key]
        else:
            with warnings.catch_warnings(record=True) as caught:  # kept with the prediction, said again
                warnings.simplefilter("always")
                est.fit(Xtr, ytr)
                y_pred = np.asarray(est.predict(Xte))
            said = tuple((w.category, str(w.message)) for w in caught)
            _FITS_COUNT["misses"] += 1
            _FITS[key] = (y_pred.copy(), said)
            while len(_FITS) > FIT_MEMO_SIZE:
                _FITS.popitem(last=False)
        for category, message in said:  # a shared fit's warnings (ConvergenceWarning) reach every cell
            warnings.warn(message, category, stacklevel=2)
        return y_pred.copy()

    def accuracy(self, Xtr, ytr, Xte, yte, cols, **kw) -> float:
        """The test score of the model trained on the columns ``cols``: accuracy, or R² for a
        regression (named ``accuracy`` for the classification protocols that came first)."""
        return self.score(yte, self.fit_predict(Xtr[:, cols], ytr, Xte[:, cols], **kw))

    def score(self, y_true, y_pred) -> float:
        """Accuracy, or R² for a regression (NaN on a constant test target, where it is undefined)."""
        if not self.regression:
            return accuracy_score(y_true, y_pred)
        r2 = r2_score(y_true, y_pred)
        return float("nan") if r2 is None else r2

    def scores(self, y_true, y_pred) -> dict:
        """The record's fields of the predictions ``y_pred``: accuracy and MCC, or R², MSE, MAE."""
        if self.regression:
            return {"r2": r2_score(y_true, y_pred), "mse": mse_score(y_true, y_pred), "mae": mae_score(y_true, y_pred)}
        return {"accuracy": accuracy_score(y_true, y_pred), "mcc": mcc_score(y_true, y_pred)}


FIT_MEMO_SIZE = 4096
"""How many predictions of the evaluated classifier :meth:`Evaluator.fit_predict` keeps in a
process (least recently used dropped first; a prediction is ``n_test`` labels), each with the
warnings its fit emitted, which a shared fit emits again (a cell records the same warnings)."""

_FITS: "OrderedDict[bytes, tuple]" = OrderedDict()  # key: (prediction, the fit's warnings)
_FITS_COUNT = {"hits": 0, "misses": 0}


def _fit_key(est, Xtr, ytr, Xte) -> bytes | None:
    """What determines the predictions of a scikit-learn estimator trained on ``(Xtr, ytr)`` and
    applied to ``Xte``, exactly: its class and every parameter (``get_params(deep=True)``: a
    ``GridSearchCV``'s grid, folds and inner estimator with its ``C``), each by value, and the
    three arrays' contents, shapes and types — so two cells of one split whose top ``k`` are the
    same columns in the same order (the same numbers after scaling) share one fit, and nothing
    coarser (the set of columns without their order, the column indices without the data) ever
    does. ``None`` (not kept) for an input that is not a dense numeric array, or an estimator with
    a parameter that has no value to compare (:func:`_param_bytes`): a function (a callable
    kernel, a ``FunctionTransformer``'s ``func``, a scorer), a generator object as
    ``random_state`` (its state is not part of the key), any other object. With
    ``random_state=None`` LinearSVC draws liblinear's seed from numpy's global generator; the
    primal solver it uses with more samples than features (every curve of 004's protocol) does not
    use it, and the dual one (more features than samples) only orders its coordinates, which a
    converged fit of this strictly convex problem does not depend on."""
    import hashlib

    arrays = (Xtr, ytr, Xte)
    if not all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" for a in arrays):
        return None
    try:
        params = est.get_params(deep=True)
    except Exception:  # not a scikit-learn estimator: not kept
        return None
    h = hashlib.sha256()
    h.update(f"{type(est).__module__}.{type(est).__qualname__}|".encode())
    for k in sorted(params):
        value = _param_bytes(params[k])
        if value is None:
            return None
        h.update(f"|{k}=".encode() + value)
    for a in arrays:
        h.update(_array_bytes(a))
    return h.digest()


def _array_bytes(a: np.ndarray) -> bytes:
    """A numeric array by value: type, shape and every element (not numpy's repr, which elides the
    middle of a large array)."""
    a = np.ascontiguousarray(a)
    return f"|{a.dtype.str}{a.shape}|".encode() + a.tobytes()


def _param_bytes(v) -> bytes | None:
    """An estimator parameter by value, tagged with its type (``1``, ``1.0`` and ``True`` differ),
    or ``None`` when it has none to compare: a function or any other object whose ``repr`` is not
    its value (a closure's is its address, reused once it is freed). A nested estimator (a
    pipeline's step, a grid search's ``estimator``) stands for its class: its parameters are
    entries of ``get_params(deep=True)`` of their own."""
    if v is None or isinstance(v, (bool, int, float, str, np.bool_, np.integer, np.floating)):
        return f"{type(v).__name__}:{v!r}".encode()
    if isinstance(v, np.ndarray):
        return _array_bytes(v) if v.dtype.kind in "biufc" else None
    if isinstance(v, (list, tuple, set, frozenset)):
        parts = [_param_bytes(x) for x in v]
        if any(p is None for p in parts):
            return None
        if isinstance(v, (set, frozenset)):
            parts.sort()
        return f"{type(v).__name__}[{len(parts)}](".encode() + b",".join(len(p).to_bytes(8, "little") + p
                                                                      for p in parts) + b")"
    if isinstance(v, dict):
        items = [(_param_bytes(k), _param_bytes(x)) for k, x in v.items()]
        if any(k is None or x is None for k, x in items):
            return None
        return f"dict[{len(items)}](".encode() + b",".join(
            len(k).to_bytes(8, "little") + k + len(x).to_bytes(8, "little") + x for k, x in sorted(items)) + b")"
    if hasattr(v, "get_params") and not isinstance(v, type):
        return f"estimator:{type(v).__module__}.{type(v).__qualname__}".encode()
    return None


def fit_memo_info() -> dict:
    """``{"hits", "misses", "size"}`` of this process's memo of the evaluated classifier's fits
    (:meth:`Evaluator.fit_predict`): how many fits a run shared between the cells of a split."""
    return {**_FITS_COUNT, "size": len(_FITS)}


def clear_fit_memo() -> None:
    """Forget every kept prediction and reset the counts."""
    _FITS.clear()
    _FITS_COUNT.update(hits=0, misses=0)


def evaluator_of(protocol: Protocol, retrain, C: float, n_train: int, *, regression: bool = False,
                 max_folds: int | None = None) -> Evaluator:
    """The classifier the protocol evaluates features with: its retrained one, else the reference.
    A regression's is least squares (``retrain = "ls"``, or none: the reference regressor)."""
    if regression:
        return Evaluator(clf="ls", regression=True)
    if retrain is not None:
        return Evaluator(clf=retrain, C=C)
    if protocol.reference in RETRAINS:
        tuned = protocol.reference.startswith("tuned-")
        ref = attrs.evolve(protocol, retrain=protocol.reference).retrain_estimator(n_train, max_folds) if tuned else \
            protocol.reference
        return Evaluator(clf=ref, C=C)
    return Evaluator(method=protocol.reference)
