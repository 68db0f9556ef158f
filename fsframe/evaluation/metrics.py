"""Per-fold classification metrics: accuracy (paper 000 eq. 59) and MCC (eq. 60)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DataError

__all__ = ["accuracy_score", "mcc_score", "METRICS", "METRIC_LABELS"]

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

