"""Toy data of paper 003: the "cross-planes" set (Mangasarian & Wild's example, 003 §1)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["cross_planes"]


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
