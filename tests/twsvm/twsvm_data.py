"""Synthetic data with known informative features, for the twin-SVM tests."""

import numpy as np


def informative_data(m=120, n=20, k=4, seed=1):
    """``y = sign(X beta + noise)`` with ``beta`` non-zero on the first ``k`` features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[:k] = np.linspace(2.0, 1.0, k) * np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    y = np.where(X @ beta + 0.3 * rng.normal(size=m) > 0, 1, -1)
    return X, y
