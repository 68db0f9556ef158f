"""Synthetic data with known informative features, for the twin-SVM tests."""

from fsframe_twsvm.toy import k_informative


def informative_data(m=120, n=20, k=4, seed=1):
    """``y = sign(X beta + noise)`` with ``beta`` non-zero on the first ``k`` features."""
    return k_informative(m, n, k, seed=seed)
