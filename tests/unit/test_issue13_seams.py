"""Defects at the seams between issue 13's parts (working sets, certificates, paths, lazy imports,
deferred rows, one-vs-rest), each found in review and fixed; one test per finding."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe


def _data(m=60, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    w = np.zeros(n)
    w[:5] = [3.0, -2.0, 2.0, 1.5, -1.0]
    y = np.sign(X @ w + 0.3 * rng.standard_normal(m))
    return X, y


# -- finding 1: one-vs-rest's cross-class cut left the per-class certificates "optimal" -----------
def test_one_vs_rest_union_cut_marks_the_per_class_certificates_cut():
    """With ``n_features=r`` one-vs-rest keeps the r features of the union that score highest and
    zeroes the others in every class's coefficients without re-solving (objective None): those
    coefficients are no longer the certified subproblem answers, so the per-class certificate must
    say so (``status == "cut"``, ``certifies_returned`` False, ``cut_distance`` the change), as the
    binary fit's certificate does for its own cut."""
    X, _ = _data()
    rng = np.random.default_rng(3)
    y3 = rng.integers(0, 3, X.shape[0])
    X = X.copy()
    X[:, 0] += y3
    X[:, 1] -= y3
    full = fsframe.fit(X, y3, "l1-svm")
    res = fsframe.fit(X, y3, "l1-svm", n_features=3)
    assert res.n_selected == 3
    n_cut = 0
    for c, (pc, cert) in enumerate(zip(res.per_class, res.certificate["per_class"])):
        assert cert is pc.certificate
        if pc.info["n_features_union_cut"]:
            n_cut += 1
            assert pc.objective is None
            assert cert["status"] == "cut" and cert["certified_status"] == "optimal"
            assert cert["certifies_returned"] is False
            assert cert["cut_distance"] > 1e-6
        else:
            assert cert["certifies_returned"] is True and cert["status"] == "optimal"
    assert n_cut >= 1  # the data make the union of the classes' supports exceed 3
    # the uncut fits are unaffected
    for cert in full.certificate["per_class"]:
        assert cert["certifies_returned"] is True and cert["status"] == "optimal"
