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


def test_bound_search_keeps_001s_raw_rule_and_says_where_scales_change_it():
    """The bound search's NSF count and final cut are 001's footnote, ``|w_j| / max|w| > zero_tol``
    on the raw weights: kept as the paper's. On columns scaled 1e-3 .. 1e3 FS-MPM (criterion 1)
    keeps feature 1, whose weight is 1.1e-2 of the largest but whose contribution ``|w_1| ||X_1||``
    is 1.7e-4 of the largest (below ``zero_tol = 1e-3``): a DataWarning names it, and the support
    is still the raw rule's. On the same data standardised FS-MPM keeps all ten: the L1 model itself
    depends on the units, so no scale-free answer exists to compare with."""
    from fsframe.errors import DataWarning

    rng = np.random.default_rng(3)
    Z = rng.standard_normal((60, 10))
    y = np.where(Z[:, :4].sum(1) + 0.5 * rng.standard_normal(60) > 0, 1, -1)
    X = Z * 10.0 ** np.linspace(-3, 3, 10)[rng.permutation(10)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fsframe.fit(X, y, "fs-mpm", criterion=1)
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1 and "kept though they do not [1]" in said[0] and "cut though" not in said[0], said
    w = np.abs(r.coef)
    c = w * column_norms(X, centred=True)
    np.testing.assert_array_equal(r.support, support_of(w, 1e-3))  # 001's rule: the support returned
    assert r.support[1] and not support_of(c, 1e-3)[1]  # kept by it, not by its contribution
    np.testing.assert_array_equal(support_of(w, 1e-3) ^ support_of(c, 1e-3), np.arange(10) == 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # standardised: the rules agree, no warning
        fsframe.fit((X - X.mean(0)) / X.std(0), y, "fs-mpm", criterion=1)
