"""Stability of the selected subsets across folds: Nogueira et al.'s estimate with its confidence
interval, Kuncheva's index, the mean pairwise Jaccard index and the selection frequencies."""

from __future__ import annotations

import math
import statistics

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DataError

__all__ = ["StabilityEstimate", "selection_frequency", "nogueira_stability", "kuncheva_index", "jaccard_index"]


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

