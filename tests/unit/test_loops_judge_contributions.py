"""Loops that fix or count groups at ``zero_tol`` judge each group's contribution ``||w_(j)|| ||X_j||``
(``fsframe.loops.selection.contribution``), as the base's cut does, not its raw norm: on features in
mixed units (column norms 1e-4 .. 1e4) a feature in small units has a large column and a small
weight that the model uses."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning
from fsframe.loops.selection import column_norms, contribution, support_of

from test_zero_tol_scale import cvxpy_l1_svm, mixed_scales


def test_em_keeps_a_feature_in_small_units_of_its_convex_optimum():
    """EM with ``lp`` at ``p = 1`` on the hinge is IRLS of the L1-SVM: it reaches the optimum of
    ``sum_j |w_j| + C sum_i xi_i`` (CVXPY's). Column 26 of ``mixed_scales(1)`` (norm 6.9e4) has
    weight 5.3e-7 there, 1e-8 of the largest weight: fixed at zero on the raw rule (``zero_tol =
    1e-6``), and EM returned a model without it, 1.7e-4 above the optimum, with no warning. On
    contributions it stays: CVXPY's support and optimum."""
    X, y = mixed_scales(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        r = fsframe.fit(X, y, formulation="hinge", surrogate="lp", loop="em", C=100.0, p=1.0)
    w_ref, f_ref = cvxpy_l1_svm(X, y, np.ones(X.shape[1]), 100.0)
    assert r.objective == pytest.approx(f_ref, rel=1e-7)
    ref_support = support_of(contribution(np.abs(w_ref), column_norms(X, centred=True)), 1e-6)
    np.testing.assert_array_equal(r.support, ref_support)
    assert r.support[26] and abs(w_ref[26]) < 1e-6 * np.max(np.abs(w_ref))  # the raw rule's victim
    assert r.coef[26] == pytest.approx(w_ref[26], rel=1e-3)


def test_greedy_counts_its_non_zero_groups_by_contribution():
    """``info["n_nonzero_groups"]`` of the greedy loop counts the last solve's groups as the base's
    cut does: contribution above ``zero_tol`` of the run's largest. On ``mixed_scales(2)`` the raw
    count (weights against the largest weight) missed the features in small units — recomputed
    here from every solve's coefficients and the centred column norms."""
    X, y = mixed_scales(2)
    cols = column_norms(X, centred=True)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, "greedy-l1-svm", C=100.0, callback=lambda rec, it: seen.append(np.abs(it.coef)))
    contrib = [w * cols for w in seen]
    scale = max(float(c.max()) for c in contrib)
    want = int(support_of(contrib[-1], 1e-6, scale).sum())
    raw = int(support_of(seen[-1], 1e-6, max(float(w.max()) for w in seen)).sum())
    assert raw < want  # the instance tells the rules apart
    assert r.info["n_nonzero_groups"] == want
