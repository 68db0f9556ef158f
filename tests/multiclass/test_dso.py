"""DSO-FS (paper 004, Algorithm 1): Theorem 1 on real data, the U update against a direct least-squares
solve, the E update against CVXPY's QP optimum, Theorem 2 (p = 1) against CVXPY's convex optimum,
and the multi-output model API."""

from __future__ import annotations

import tracemalloc
import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning, DataWarning, InfeasibleParameterError
from fsframe_multiclass.margin import label_matrix
from fsframe_multiclass.nullspace import NullSpace, e_update_problem, l2p, row_norms, u_update


def _wide(seed=0, m=12, n=30, c=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = np.arange(m) % c
    return X, y


@pytest.mark.parametrize("p", [0.1, 0.5, 1.0])
def test_theorem1_l2p_non_increasing_on_colon(colon, p):
    X, y = colon
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="dso-fs", p=p, max_iter=15)
    f = np.array([h.objective for h in r.history])
    assert r.monotone
    assert np.all(np.diff(f) <= 1e-9 * f[:-1]), f
    assert f[-1] < f[0]  # it does descend


def test_u_update_is_the_direct_least_squares_solve():
    X, y = _wide()
    Y = label_matrix(y)
    m, n = X.shape
    ns = NullSpace.of(np.hstack([X, np.ones((m, 1))]), Y)
    rng = np.random.default_rng(1)
    p = 0.5
    t = rng.uniform(0.1, 2.0, n + 1)  # row norms of W^k, pivot order
    E = np.where(Y > 0, 1.0, -1.0) * rng.uniform(0, 1, Y.shape)
    K = ns.N + ns.L @ E
    U = u_update(ns, K, t, p)
    # direct: min_U || Sigma (P U + G) ||_F, P = [-M; I], G = [K; 0], Sigma = diag(t^(p/2 - 1))
    P = np.vstack([-ns.M, np.eye(ns.n0)])
    G = np.vstack([K, np.zeros((ns.n0, Y.shape[1]))])
    sig = t ** (p / 2 - 1)
    U_ls = np.linalg.lstsq(sig[:, None] * P, -sig[:, None] * G, rcond=None)[0]
    np.testing.assert_allclose(U, U_ls, rtol=1e-8, atol=1e-10)


def test_e_update_is_cvxpys_qp_optimum():
    X, y = _wide(seed=2)
    Y = label_matrix(y)
    m, n = X.shape
    ns = NullSpace.of(np.hstack([X, np.ones((m, 1))]), Y)
    p = 0.5
    rng = np.random.default_rng(3)
    U = rng.normal(size=(ns.n0, Y.shape[1]))
    E0 = np.zeros_like(Y)
    H = ns.N - ns.M @ U
    V = H + ns.L @ E0
    data = e_update_problem(ns, H, Y, V, p)
    res = fsframe.get_registry().get("backend", "clarabel")().solve(data, fsframe.SolveOptions())
    assert res.ok
    E = res.x[:m * Y.shape[1]].reshape(Y.shape[1], m).T
    lam = row_norms(V) ** (p - 2)
    Ev = cp.Variable(Y.shape)
    obj = cp.sum(cp.multiply(lam[:, None], cp.square(ns.L @ Ev + H)))
    prob = cp.Problem(cp.Minimize(obj), [cp.multiply(Y, Ev) >= 0])
    prob.solve(solver=cp.CLARABEL)
    f = lambda E: float(np.sum(lam[:, None] * (ns.L @ E + H) ** 2))  # noqa: E731
    assert f(E) == pytest.approx(prob.value, rel=1e-6)
    np.testing.assert_allclose(E, Ev.value, atol=1e-5 * max(1.0, np.abs(Ev.value).max()))
    assert np.all(Y * E >= -1e-9)


def test_p1_equals_cvxpys_l21_optimum_and_algorithm1_stalls_above_it():
    """Theorem 2 says Algorithm 1's limit is the global optimum for p = 1; on this instance the
    alternating U/E updates stall 3.4 % above CVXPY's optimum (converged to tol 1e-9; the minimal
    example is in test_dso_exact.py). The default finish solves the convex model: CVXPY's optimum,
    certified; finish='none' keeps Algorithm 1's point and its certificate says how far off it is."""
    X, y = _wide(seed=4, m=15, n=25)
    Y = label_matrix(y)
    W = cp.Variable((X.shape[1], Y.shape[1]))
    b = cp.Variable(Y.shape[1])
    # 004 eq. 5 with the bias absorbed in W (eq. 2): its row counts in the norm
    obj = cp.sum(cp.norm(W, 2, axis=1)) + cp.norm(b, 2)
    prob = cp.Problem(cp.Minimize(obj), [cp.multiply(Y, X @ W + np.ones((X.shape[0], 1)) @ b[None, :]) >= 1])
    prob.solve(solver=cp.CLARABEL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, method="dso-fs", p=1.0)
        a1 = fsframe.fit(X, y, method="dso-fs", p=1.0, finish="none", max_iter=300, tol=1e-9)
    assert r.info["l2p_with_bias_row"] == pytest.approx(prob.value, rel=1e-6)
    assert r.certificate["status"] == "optimal"
    assert np.min(Y * r.decision_function(X)) >= 1 - 1e-6  # the margin holds at the returned model
    f = a1.history[-1].objective  # ||W||_{2,1} with the bias row (Theorem 1 quantity)
    assert f == pytest.approx(1.034 * prob.value, rel=2e-3)
    assert a1.certificate["status"] == "optimal_inaccurate" and a1.certificate["gap"] > 0.03
    assert np.min(Y * a1.decision_function(X)) >= 1 - 1e-6


def test_composition_p1_reaches_cvxpys_l21_optimum():
    X, y = _wide(seed=5, m=15, n=25)
    Y = label_matrix(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=1.0, max_iter=300, tol=1e-10,
                        backend="clarabel")
    W = cp.Variable((X.shape[1], Y.shape[1]))
    b = cp.Variable(Y.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1))),
                      [cp.multiply(Y, X @ W + np.ones((X.shape[0], 1)) @ b[None, :]) >= 1])
    prob.solve(solver=cp.CLARABEL)
    got = float(np.sum(row_norms(r.formulation_coef())))
    assert got == pytest.approx(prob.value, rel=2e-3)
    assert r.coef.shape == (3, 25)  # classes first (fsframe.results.result_coef)
    np.testing.assert_array_equal(r.formulation_coef(), r.coef.T)


def test_multi_output_model_api(iris3):
    X, y = iris3
    r = fsframe.fit(X, y, method="dso-fs", p=0.5, n_features=4)
    assert r.coef.shape == (3, 20) and np.shape(r.intercept) == (3,)
    assert r.support.shape == (20,) and r.n_selected == 4
    assert np.all(r.coef[:, ~r.support] == 0)
    d = r.decision_function(X)
    assert d.shape == (60, 3)
    np.testing.assert_array_equal(r.predict(X), np.asarray(r.classes)[np.argmax(d, axis=1)])
    assert (r.predict(X) == y).mean() > 0.6  # chance is 1/3; the 4 rows kept were not re-fitted


def test_dso_and_ovr_l1svm_keep_the_informative_features(iris3):
    """004 as written (the least-squares substitute: m = 60 > rank [X, 1] = 21, Algorithm 1's point)
    puts its weight on three informative features; its fourth pick carries a near-zero weight
    (5e-5 of the largest), and which feature that is depends on the solver's accuracy (feature 0
    at Clarabel's 1e-8, a noise feature at fsframe's 1e-9). (The hard margin, which these separable
    classes admit and dso-fs now keeps by default, meets all 180 margins with a noise feature among
    its top four: test_dso_exact.py checks that model against CVXPY.)"""
    X, y = iris3
    informative = set(range(4))
    with pytest.warns(DataWarning, match="breaks"):
        dso = fsframe.fit(X, y, method="dso-fs", p=0.5, n_features=4, margin="least-squares", finish="none")
    norms = np.linalg.norm(dso.coef, axis=0)
    assert set(np.argsort(-norms)[:3].tolist()) < informative
    assert np.sort(norms)[-4] < 1e-3 * norms.max()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        l1 = fsframe.fit(X, y, method="l1-svm", C=1.0, n_features=4)
    assert set(l1.selected.tolist()) == informative


def test_same_seed_same_result_and_input_untouched(iris3):
    X, y = iris3
    X0, y0 = X.copy(), y.copy()
    a = fsframe.fit(X, y, method="dso-fs", p=0.5)
    b = fsframe.fit(X, y, method="dso-fs", p=0.5)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_hard_margin_on_non_separable_data_names_the_soft_margin(make_iris):
    X, y = make_iris(seed=1, shift=0.2)  # overlapping classes, m > n: no hyperplane separates
    with pytest.raises(InfeasibleParameterError, match=r"soft margin.*C=1.0"):
        fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=0.5)
    # the explanation is the formulation's (explain_failure), asked when the first subproblem fails
    hard = fsframe.get_registry().get("formulation", "margin")()
    assert isinstance(hard.explain_failure(X, y, fsframe.Status.INFEASIBLE, None), InfeasibleParameterError)
    assert hard.explain_failure(X, y, fsframe.Status.OPTIMAL, None) is None
    assert fsframe.get_registry().get("formulation", "margin")(C=1.0).explain_failure(
        X, y, fsframe.Status.INFEASIBLE, None) is None
    r = fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=0.5, C=1.0)
    assert r.coef.shape == (3, 20)


def test_large_n_stays_tractable_without_n_by_n():
    rng = np.random.default_rng(0)
    m, n = 100, 11000
    X = rng.normal(size=(m, n))
    y = np.arange(m) % 3
    tracemalloc.start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="dso-fs", p=0.5, max_iter=3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert r.coef.shape == (3, n)
    assert peak < 250e6  # an n x n float matrix alone is 968 MB


def _margin_objective(X, Y, C, W, b, phi):
    """The soft-margin objective at ``(W, b)``, from the data alone: ``C sum_ik max(0, 1 - Y_ik
    (x_i W_k + b_k)) + sum_j phi(||W_j||_2)`` (004 §6, the row norms of eq. 1)."""
    hinge = np.maximum(0.0, 1.0 - Y * (X @ W + b[None, :])).sum()
    return float(C * hinge + np.sum(phi(np.linalg.norm(W, axis=1))))


@pytest.mark.parametrize("kw, phi", [
    ({"loop": "single"}, lambda t: t),
    ({"surrogate": "exp", "loop": "reweighted-l1", "alpha": 1.0}, lambda t: 1.0 - np.exp(-t)),
    ({"surrogate": "lp", "loop": "em", "p": 0.5}, np.sqrt),
], ids=["single", "exp-irl1", "lp-em"])
def test_three_class_margin_objective_is_the_row_l2_norms(make_iris, kw, phi):
    """A 3-class soft-margin fit: the reported objective is the one recomputed from the returned
    ``(W, b)`` with the rows' *Euclidean* norms, and the single solve (the ``l_{2,1}`` problem)
    reaches CVXPY's optimum. Row norms computed as l1 norms move each of them (7.0 against 14.9
    on one seed of the mutation probe)."""
    X, y = make_iris(seed=2, m_per=15, n_inf=3, n_noise=5, shift=1.0)
    Y = label_matrix(y)
    C = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, formulation="margin", C=C, **kw)
    W, b = np.asarray(r.formulation_coef()), np.asarray(r.intercept)  # the model's W, (features, classes)
    assert W.shape == (8, 3) and b.shape == (3,)
    recomputed = _margin_objective(X, Y, C, W, b, phi)
    assert r.objective == pytest.approx(recomputed, rel=1e-6)  # the solvers meet the margin rows to ~1e-8
    assert np.min(Y * r.decision_function(X)) < 1  # not separable: the loss counts
    if kw["loop"] == "single":
        Wv, bv = cp.Variable(W.shape), cp.Variable(3)
        loss = cp.sum(cp.pos(1 - cp.multiply(Y, X @ Wv + np.ones((X.shape[0], 1)) @ bv[None, :])))
        prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(Wv, 2, axis=1)) + C * loss))
        prob.solve(solver=cp.CLARABEL)
        assert r.objective == pytest.approx(prob.value, rel=1e-6)
