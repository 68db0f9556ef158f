"""Filter scores: ReliefF (skrebate) and mRMR (Peng, Long & Ding 2005) on scikit-learn's mutual
information. Pure numpy / scikit-learn: no model, no solver."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["relieff_scores", "discretize", "mutual_info_with", "mrmr_order"]


def relieff_scores(X: NDArray, y: NDArray, *, n_neighbors: int = 10) -> NDArray:
    """ReliefF feature weights (Kononenko 1994; Kira & Rendell 1992), computed by skrebate's
    ``ReliefF`` (Urbanowicz et al. 2018), single process. Larger is more relevant. ``y`` holds
    class labels, however many: skrebate is told so (``label_type``), since by default it takes
    more than 10 distinct labels for a real target and scores RReliefF's regression weights."""
    from skrebate import ReliefF

    X = np.asarray(X, dtype=float)
    classes, counts = np.unique(y, return_counts=True)
    k = int(min(n_neighbors, max(1, np.min(counts) - 1)))
    est = ReliefF(n_neighbors=k, n_jobs=1, label_type="binary" if classes.size == 2 else "multiclass")
    est.fit(X, np.asarray(y))
    return np.asarray(est.feature_importances_, dtype=float)


def discretize(X: NDArray, zcut: float = 1.0) -> NDArray:
    """Three states per feature, ``-1/0/1`` below ``mean - zcut * std``, between, above
    ``mean + zcut * std`` (Peng, Long & Ding 2005, §4.1: "mean ± alpha·std", alpha 0.5 or 1), as
    codes ``0, 1, 2``."""
    X = np.asarray(X, dtype=float)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    return (X > mu - zcut * sd).astype(np.int64) + (X > mu + zcut * sd).astype(np.int64)


def _onehot(D: NDArray, k: int = 3) -> NDArray:
    m, n = D.shape
    out = np.zeros((m, n * k))
    out[np.repeat(np.arange(m), n), (np.arange(n) * k)[None, :].repeat(m, 0).ravel() + D.ravel()] = 1.0
    return out


def mutual_info_with(D: NDArray, j: int, onehot: NDArray | None = None, k: int = 3) -> NDArray:
    """``I(d_i; d_j)`` in nats for every column ``i`` of the discretised ``D`` against column ``j``
    (the plug-in estimate of ``sklearn.metrics.mutual_info_score``, all columns in one product)."""
    m, n = D.shape
    H = _onehot(D, k) if onehot is None else onehot
    joint = (H.T @ H[:, j * k:(j + 1) * k]).reshape(n, k, k) / m
    pi = joint.sum(axis=2, keepdims=True)
    pj = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log(joint / (pi * pj)), 0.0)
    return terms.sum(axis=(1, 2))


def mrmr_order(X: NDArray, y: NDArray, n_select: int, *, criterion: str = "mid", zcut: float = 1.0,
               seed: int = 0) -> tuple[NDArray, NDArray]:
    """The first ``n_select`` features of mRMR's incremental search (Peng, Long & Ding 2005, eqs.
    6-8): relevance ``I(x_j; y)`` (scikit-learn's ``mutual_info_classif`` on the discretised
    features), redundancy the mean ``I(x_j; x_s)`` over the features ``s`` already chosen; MID
    maximises relevance - redundancy, MIQ relevance / redundancy. Returns ``(order, relevance)``."""
    from sklearn.feature_selection import mutual_info_classif  # imported on use: `import fsframe` stays light

    D = discretize(X, zcut)
    rel = mutual_info_classif(D, np.asarray(y), discrete_features=True, random_state=seed)
    H = _onehot(D)
    n = D.shape[1]
    chosen = [int(np.argmax(rel))]
    red_sum = np.zeros(n)
    avail = np.ones(n, dtype=bool)
    avail[chosen[0]] = False
    while len(chosen) < min(n_select, n):
        red_sum += mutual_info_with(D, chosen[-1], H)
        red = red_sum / len(chosen)
        score = rel - red if criterion == "mid" else rel / np.maximum(red, 1e-12)
        score = np.where(avail, score, -np.inf)
        j = int(np.argmax(score))
        chosen.append(j)
        avail[j] = False
    return np.asarray(chosen, dtype=np.int64), rel
