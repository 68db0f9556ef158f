"""Per-fold metrics: for classification accuracy (paper 000 eq. 59) and MCC (eq. 60); for a
regression method (a real target) R², mean squared and mean absolute error."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DataError

__all__ = ["accuracy_score", "mcc_score", "r2_score", "mse_score", "mae_score", "METRICS", "REGRESSION_METRICS",
           "METRIC_LABELS"]

METRICS = ("accuracy", "mcc", "n_selected", "pct_selected", "n_iter", "seconds")
"""Per-fold quantities summarised by :meth:`CVResult.summary` (plus ``selector_accuracy`` and
``selector_mcc`` when a classifier is retrained on the selected features)."""

REGRESSION_METRICS = ("r2", "mse", "mae", "n_selected", "pct_selected", "n_iter", "seconds")
"""What :meth:`CVResult.summary` reports for a regression method (plus ``selector_r2``,
``selector_mse``, ``selector_mae`` when a regressor is refitted on the selected features)."""

METRIC_LABELS = {
    "r2": "R²",
    "mse": "MSE",
    "mae": "MAE",
    "selector_r2": "selector R²",
    "selector_mse": "selector MSE",
    "selector_mae": "selector MAE",
    "accuracy": "accuracy (%)",
    "mcc": "MCC",
    "n_selected": "selected features",
    "pct_selected": "selected (%)",
    "n_iter": "iterations",
    "seconds": "seconds",
    "selector_accuracy": "selector accuracy (%)",
    "selector_mcc": "selector MCC",
}



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



def _real_pair(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[NDArray, NDArray]:
    t = np.asarray(_labels_1d(y_true, "y_true"), dtype=np.float64)
    p = np.asarray(_labels_1d(y_pred, "y_pred"), dtype=np.float64)
    if t.shape != p.shape or t.size == 0:
        raise DataError(f"y_true and y_pred must be non-empty and of equal length, got {t.shape} and {p.shape}")
    return t, p


def r2_score(y_true: ArrayLike, y_pred: ArrayLike) -> float | None:
    """Coefficient of determination ``1 - sum (y - p)^2 / sum (y - mean y)^2`` on the test part
    (scikit-learn's ``r2_score``); ``None`` when ``y_true`` is constant (undefined)."""
    t, p = _real_pair(y_true, y_pred)
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    return None if ss_tot == 0.0 else 1.0 - float(np.sum((t - p) ** 2)) / ss_tot


def mse_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean squared error ``mean (y - p)^2``."""
    t, p = _real_pair(y_true, y_pred)
    return float(np.mean((t - p) ** 2))


def mae_score(y_true: ArrayLike, y_pred: ArrayLike) -> float:
    """Mean absolute error ``mean |y - p|``."""
    t, p = _real_pair(y_true, y_pred)
    return float(np.mean(np.abs(t - p)))
