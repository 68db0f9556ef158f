"""L1-TWSVM's two LPs (003 eqs. 7-8 and 13-14) against CVXPY + Clarabel; prediction rule;
the two coefficient blocks carried by the core (coef (2, n), support = union)."""

import numpy as np
import pytest

import fsframe
from fsframe_twsvm import TwinL1Formulation, rbf_kernel, twin_distances
from fsframe.testing import check_formulation, kit_data

import cvxpy as cp  # noqa: E402

PARAMS = dict(c11=0.7, c12=1.3, c21=0.4, c22=2.0)


def cvxpy_block(own, other, c_fit, c_hinge, sign):
    """eq. 7 (sign=-1: other class below the surface) or eq. 8 (sign=+1), by CVXPY + Clarabel."""
    w, b = cp.Variable(own.shape[1]), cp.Variable()
    xi = cp.pos(1 - sign * (other @ w + b))
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + c_fit * cp.norm1(own @ w + b) + c_hinge * cp.sum(xi)))
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def block_objectives(M, y, coef, intercept, p):
    """The objectives of eqs. 7 and 8 at the two returned surfaces."""
    pos = y > 0
    w1, w2 = coef
    b1, b2 = intercept
    one = (np.abs(w1).sum() + p["c11"] * np.abs(M[pos] @ w1 + b1).sum()
           + p["c12"] * np.maximum(1 + M[~pos] @ w1 + b1, 0).sum())
    two = (np.abs(w2).sum() + p["c21"] * np.abs(M[~pos] @ w2 + b2).sum()
           + p["c22"] * np.maximum(1 - M[pos] @ w2 - b2, 0).sum())
    return one, two


def random_data(m=60, n=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = np.where(X[:, 0] - X[:, 2] + 0.5 * rng.normal(size=m) > 0, 1, -1)
    return X, y


def check_against_cvxpy(X, y, kernel="linear", width=None):
    r = fsframe.fit(X, y, "l1-twsvm", kernel=kernel, width=width, **PARAMS)
    M = X if kernel == "linear" else rbf_kernel(X, X, r.info["width"])
    pos = y > 0
    one, two = block_objectives(M, y, r.coef, r.intercept, PARAMS)
    ref1 = cvxpy_block(M[pos], M[~pos], PARAMS["c11"], PARAMS["c12"], -1.0)
    ref2 = cvxpy_block(M[~pos], M[pos], PARAMS["c21"], PARAMS["c22"], 1.0)
    assert one == pytest.approx(ref1, rel=1e-6, abs=1e-7)
    assert two == pytest.approx(ref2, rel=1e-6, abs=1e-7)
    # the joint LP is separable: its optimum is the sum of both
    assert r.objective == pytest.approx(ref1 + ref2, rel=1e-6)
    return r


def test_linear_lps_equal_cvxpy_random():
    check_against_cvxpy(*random_data())


def test_linear_lps_equal_cvxpy_sonar(sonar):
    r = check_against_cvxpy(*sonar)
    assert r.coef.shape == (2, 60)


def test_kernel_lps_equal_cvxpy():
    X, y = random_data(m=40, n=5, seed=3)
    r = check_against_cvxpy(X, y, kernel="rbf", width=1.5)
    assert r.coef.shape == (2, 40)
    # predictions go through K(x, A) (the formulation's own transform)
    d = twin_distances(r.coef, r.intercept, rbf_kernel(X, X, 1.5))
    assert np.array_equal(r.predict(X), np.where(d[:, 0] < d[:, 1], 1, -1))


def test_two_blocks_and_union_support():
    X, y = random_data(n=12, seed=5)
    r = fsframe.fit(X, y, "l1-twsvm", c11=0.3, c21=0.3, c12=0.2, c22=0.2)
    assert r.coef.shape == (2, 12) and np.shape(r.intercept) == (2,)
    union = (np.abs(r.coef) > 1e-9).any(axis=0)
    assert np.array_equal(r.support, union)


def test_prediction_by_the_nearer_surface():
    X, y = random_data(seed=7)
    r = fsframe.fit(X, y, "l1-twsvm")
    w1, w2 = r.coef
    b1, b2 = r.intercept
    d1 = np.abs(X @ w1 + b1) / np.linalg.norm(w1)
    d2 = np.abs(X @ w2 + b2) / np.linalg.norm(w2)
    assert np.allclose(r.decision_function(X), d2 - d1)
    assert np.array_equal(r.predict(X), np.where(d1 < d2, 1, -1))
    assert (r.predict(X) == y).mean() > 0.8


def test_linear_kernel_agrees_with_linear_surfaces():
    """With a linear kernel, the kernel surface K(x E, A E) u + g is the linear surface
    x E w + g with w = E A'u: eq. 24 and the decision agree through the two paths."""
    from fsframe.loops.greedy import LinearMaskEvaluator
    from fsframe_twsvm import twin_loss

    X, y = random_data(m=30, n=6, seed=2)
    rng = np.random.default_rng(0)
    U, b = rng.normal(size=(30, 2)), rng.normal(size=2)
    mask = np.array([1, 0, 1, 1, 0, 1], dtype=bool)
    loss = twin_loss(y > 0, **PARAMS, lam=0.3)
    Xe = X * mask
    kernel_value = float(loss(Xe @ Xe.T @ U + b))  # K(A E, A E) = A E A'
    W = X.T @ U  # the weights every feature carries, masked or not
    ev = LinearMaskEvaluator(X, W, b, mask, loss)
    assert ev.value == pytest.approx(kernel_value, rel=1e-12)
    assert np.allclose(twin_distances(U.T, b, Xe @ Xe.T), twin_distances(W.T * mask, b, Xe)
                       * np.linalg.norm(W.T * mask, axis=1) / np.linalg.norm(U.T, axis=1))


def test_conformance():
    X, y = kit_data()
    for f in (TwinL1Formulation(**PARAMS), TwinL1Formulation(kernel="rbf")):
        ran = check_formulation(f, X, y, decision_loss=False)
        assert "weights+solve ['lin']" in ran


def test_one_class_is_a_data_error():
    X, y = random_data()
    f = TwinL1Formulation()
    with pytest.raises(fsframe.errors.DataError, match="both classes"):
        f.validate(X, np.ones_like(y))


def test_rbf_one_vs_rest_is_refused():
    X, _ = random_data()
    y3 = np.arange(X.shape[0]) % 3
    with pytest.raises(fsframe.errors.UnsupportedProblemError, match="one-vs-rest"):
        fsframe.fit(X, y3, "l1-twsvm", kernel="rbf")
    r = fsframe.fit(X, y3, "l1-twsvm")  # linear: one-vs-rest over (2, n) blocks
    assert r.coef.shape == (3, 2, X.shape[1]) and r.predict(X).shape == (X.shape[0],)
