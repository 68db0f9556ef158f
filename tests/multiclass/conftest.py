"""Data of the multi-class tests: iris-like synthetic classes with known informative features."""

from __future__ import annotations

import numpy as np
import pytest


def iris_like(seed=0, m_per=20, n_inf=4, n_noise=16, c=3, shift=3.0):
    """``c`` Gaussian classes that differ only in the first ``n_inf`` features (class ``k`` has mean
    ``shift * e_k``-like offsets there); ``n_noise`` pure-noise features follow."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=shift, size=(c, n_inf))
    X, y = [], []
    for k in range(c):
        X.append(np.hstack([centers[k] + rng.normal(size=(m_per, n_inf)), rng.normal(size=(m_per, n_noise))]))
        y += [k] * m_per
    return np.vstack(X), np.array(y)


@pytest.fixture
def make_iris():
    return iris_like


@pytest.fixture
def iris3():
    return iris_like()


@pytest.fixture
def colon(shared_file):
    import scipy.io as sio

    d = sio.loadmat(shared_file("colon.mat"))
    X = d["X"].astype(float)
    return (X - X.mean(0)) / X.std(0), d["Y"].ravel()
