"""Toy data: the "cross-planes" set of paper 003 (Mangasarian & Wild's example, 003 §1) and a
linear problem with ``k`` known informative features."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["cross_planes", "k_informative"]


def cross_planes(m: int = 200, n_noise: int = 8, *, noise: float = 0.1, seed: int = 0) -> tuple[NDArray, NDArray]:
    """Two classes on two crossing lines in the first two features, plus ``n_noise`` pure-noise
    features: class ``+1`` near ``x2 = x1``, class ``-1`` near ``x2 = -x1`` (``x1`` uniform on
    ``[-1, 1]``, Gaussian offsets of standard deviation ``noise``). No single hyperplane separates
    the classes; two fitting planes do (the motivating example of TWSVM).

    Returns ``X`` of shape ``(m, 2 + n_noise)`` and ``y`` in ``{-1, +1}`` (informative features
    0 and 1)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(m) % 2 == 0, 1, -1)
    x1 = rng.uniform(-1.0, 1.0, m)
    x2 = y * x1 + noise * rng.standard_normal(m)
    X = np.column_stack([x1, x2, rng.uniform(-1.0, 1.0, (m, n_noise))])
    return X, y


def k_informative(m: int = 120, n: int = 20, k: int = 4, *, noise: float = 0.3, seed: int = 1) -> tuple[NDArray, NDArray]:
    """``y = sign(X beta + noise e)`` for Gaussian ``X`` (m, n), ``beta`` non-zero (alternating signs,
    magnitudes 2 down to 1) on the first ``k`` features only."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[:k] = np.linspace(2.0, 1.0, k) * np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    y = np.where(X @ beta + noise * rng.normal(size=m) > 0, 1, -1)
    return X, y
