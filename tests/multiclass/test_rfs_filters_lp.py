"""RFS (descent, CVXPY optimum, the SOCP composition), the filters (ReliefF = skrebate's scores; mRMR's
mutual information = scikit-learn's; the incremental search by brute force) and the smoothed lp
(DC split exact and convex, error bound, DCA / IRL1 through the kit)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.metrics import mutual_info_score

import fsframe
from fsframe.surrogates.lp import LpSurrogate
from fsframe.testing import check_loop, check_surrogate
from fsframe_filters.scores import discretize, mrmr_order, mutual_info_with
from fsframe_filters.scores import relieff_scores as fsframe_relieff
from fsframe_multiclass.margin import label_matrix
from fsframe_multiclass.rfs import rfs_objective


def _cvxpy_rfs(X, Y, gamma):
    W = cp.Variable((X.shape[1], Y.shape[1]))
    obj = cp.sum(cp.norm(X @ W - Y, 2, axis=1)) + gamma * cp.sum(cp.norm(W, 2, axis=1))
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def test_rfs_non_increasing_and_reaches_cvxpys_optimum(iris3):
    X, y = iris3
    Y = label_matrix(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # every row kept: the RFS optimum itself (a ranking keeps the better half by default)
        r = fsframe.fit(X, y, method="rfs", gamma=2.0, max_iter=500, tol=1e-10, n_features=X.shape[1])
    f = np.array([h.objective for h in r.history])
    assert r.monotone and np.all(np.diff(f) <= 1e-9 * f[:-1])
    assert rfs_objective(X, Y, np.asarray(r.coef).T, 2.0) / 2.0 == pytest.approx(f[-1], rel=1e-9)
    assert 2.0 * f[-1] == pytest.approx(_cvxpy_rfs(X, Y, 2.0), rel=1e-4)


def test_l21_regression_formulation_single_solve_is_rfs(iris3):
    X, y = iris3
    X, y = X[::2], y[::2]
    Y = label_matrix(y)
    r = fsframe.fit(X, y, formulation="l21-regression", surrogate=None, loop="single", gamma=2.0, backend="clarabel")
    # its objective is RFS / gamma
    assert r.objective * 2.0 == pytest.approx(_cvxpy_rfs(X, Y, 2.0), rel=1e-5)


def test_relieff_scores_are_skrebates(iris3):
    from skrebate import ReliefF

    X, y = iris3
    r = fsframe.fit(X, y, method="relieff", n_features=4)
    ref = ReliefF(n_neighbors=10, n_jobs=1).fit(X, y).feature_importances_
    np.testing.assert_allclose(r.info["scores"], ref, rtol=1e-12)
    assert r.n_selected == 4 and set(r.selected.tolist()) == set(np.argsort(-ref)[:4].tolist())
    assert set(r.selected.tolist()) == {0, 1, 2, 3}
    assert (r.predict(X) == y).mean() > 0.9  # the soft-margin model on the 4 features


def test_relieff_scores_more_than_ten_classes_as_classes():
    """ReliefF on 12 classes scores them as classes (skrebate's multi-class ReliefF, misses
    weighted by the class priors), not as a real target: skrebate takes more than 10 distinct
    labels for a regression target by default (RReliefF), which ranks the features otherwise."""
    from skrebate import ReliefF

    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(12), 8)
    X = rng.normal(size=(y.size, 6))
    X[:, 0] += (y % 3) * 1.5  # informative about the class, not monotone in the label's value
    X[:, 1] += 0.4 * y  # monotone in the label's value
    s = fsframe_relieff(X, y)
    ref = ReliefF(n_neighbors=7, n_jobs=1, label_type="multiclass").fit(X, y).feature_importances_
    np.testing.assert_allclose(s, ref, rtol=1e-12)
    as_real = ReliefF(n_neighbors=7, n_jobs=1).fit(X, y).feature_importances_  # skrebate's default
    assert np.max(np.abs(s - as_real)) > 1e-3
    r = fsframe.fit(X, y, method="relieff", n_features=2)
    np.testing.assert_allclose(r.info["scores"], ref, rtol=1e-12)


def test_mrmr_mutual_information_is_sklearns_and_search_is_greedy(iris3):
    X, y = iris3
    D = discretize(X)
    mi = mutual_info_with(D, 5)
    ref = [mutual_info_score(D[:, i], D[:, 5]) for i in range(D.shape[1])]
    np.testing.assert_allclose(mi, ref, rtol=1e-10, atol=1e-12)
    order, rel = mrmr_order(X, y, 5)
    ref_rel = np.array([mutual_info_score(D[:, i], y) for i in range(D.shape[1])])
    np.testing.assert_allclose(rel, ref_rel, rtol=1e-10, atol=1e-12)
    chosen = [int(np.argmax(ref_rel))]  # brute-force MID (Peng et al. 2005 eq. 8)
    while len(chosen) < 5:
        score = [ref_rel[j] - np.mean([mutual_info_score(D[:, j], D[:, s]) for s in chosen]) if j not in chosen
                 else -np.inf for j in range(D.shape[1])]
        chosen.append(int(np.argmax(score)))
    assert order.tolist() == chosen
    r = fsframe.fit(X, y, method="mrmr", n_features=4)
    assert r.info["ranking"].tolist() == chosen[:4] and r.n_selected == 4


@pytest.mark.parametrize("p, eps", [(0.1, 1e-3), (0.5, 0.1), (0.5, 1.0), (1.0, 0.5)])
def test_smoothed_lp_split_and_error_bound(p, eps):
    s = LpSurrogate(p=p, eps=eps)
    assert {"derivative", "dc_split", "quad_weights"} <= s.capabilities()
    check_surrogate(s)  # DC split exact, g and h convex, h' non-decreasing, derivative = finite differences
    t = np.concatenate([[0.0], np.logspace(-8, 4, 200)])
    err = t**p - s.phi(t)
    assert np.all(err >= -1e-12) and np.all(err <= eps**p + 1e-12)
    split = s.dc_split()
    np.testing.assert_allclose(split.g(t) - split.h(t), s.phi(t), rtol=1e-9, atol=1e-12)


def test_smoothed_lp_needs_positive_p():
    with pytest.raises(ValueError, match="p > 0"):
        LpSurrogate(p=0.0, eps=0.1)
    assert "dc_split" not in LpSurrogate(p=0.5).capabilities()


@pytest.mark.parametrize("loop", ["dca", "reweighted-l1"])
def test_smoothed_lp_composes_with_dca_and_irl1(loop):
    lp = fsframe.get_registry().get("loop", loop)()
    ran = check_loop(lp, LpSurrogate(p=0.5, eps=0.1))
    assert any(r.startswith("iterations") for r in ran)
    X, y = np.random.default_rng(0).normal(size=(40, 6)), np.repeat([0, 1], 20)
    X[y == 1, :2] += 2.0
    r = fsframe.fit(X, y, formulation="hinge", surrogate="lp", loop=loop, p=0.5, eps=0.1)
    assert r.monotone
