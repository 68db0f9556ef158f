"""The dense EM dual of a kernel map (``F`` square: one column per training sample) starts from a
crash at any size (:func:`fsframe.dense_rules.crash_applies`), and its answer is the primal QP's
optimum, checked against CVXPY (Clarabel)."""

import cvxpy as cp
import numpy as np
import pytest

import fsframe.dense_em as dense_em
import fsframe.dense_rules as dense_rules
from fsframe.backends.box_qp import compiled_available
from fsframe.backends.diag_qp import CRASH_MAX_ROWS
from fsframe.dense_em import DenseHingeSubproblem
from fsframe.dense_rules import crash_applies
from fsframe.kernels import EmpiricalKernelMap


def test_crash_rule_square_or_wider_at_any_size():
    m = CRASH_MAX_ROWS + 1
    assert crash_applies((m, m)) and crash_applies((m, 2 * m))  # the kernel map's duals
    assert not crash_applies((m, m - 1))  # beyond the cap, a narrower F keeps the cold start
    assert crash_applies((CRASH_MAX_ROWS, CRASH_MAX_ROWS // 4))  # the compiled path's rule, unchanged
    assert not crash_applies((CRASH_MAX_ROWS, CRASH_MAX_ROWS // 4 - 1))


def _kernel_problem(m=40, sigma=0.5, seed=3):
    """An RBF map narrow enough to be near the identity (the widths whose cold duals were dear)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 5))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    K = EmpiricalKernelMap(kernel="rbf", sigma=sigma).fit(X).transform(X)
    return K, y


def _cvxpy_primal(K, y, C, q):
    m, n = K.shape
    beta, b, xi = cp.Variable(n), cp.Variable(), cp.Variable(m)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(q, cp.square(beta))) + C * cp.sum(xi)),
                      [cp.multiply(y, K @ beta + b) >= 1 - xi, xi >= 0])
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    assert prob.status == "optimal"
    return prob.value, beta.value


@pytest.mark.skipif(not compiled_available(), reason="the crash runs with the compiled pivots (numba)")
@pytest.mark.parametrize("C, sigma", [(0.1, 0.5), (1.0, 1.0), (10.0, 2.0)])
def test_square_kernel_dual_crashes_above_the_cap_and_matches_cvxpy(monkeypatch, C, sigma):
    K, y = _kernel_problem(sigma=sigma)
    m = K.shape[0]
    # a cap below this dual's rows: only the square-F clause can start it from the crash
    monkeypatch.setattr(dense_rules, "CRASH_MAX_ROWS", m // 4)  # where crash_applies reads it
    crashes = []
    real = dense_em.solve_box_qp

    def recording(*args, **kwargs):
        crashes.append(kwargs.get("crash", 0))
        return real(*args, **kwargs)

    monkeypatch.setattr(dense_em, "solve_box_qp", recording)
    rng = np.random.default_rng(0)
    for q in (np.ones(m), rng.uniform(0.2, 5.0, m)):
        sub = DenseHingeSubproblem(K, y, C)  # a fresh subproblem: a cold dual
        it = sub.solve(quad=q)
        assert crashes[-1] > 0, "the square kernel dual above the cap was not started from the crash"
        assert it.status.value == "optimal"
        value, beta = _cvxpy_primal(K, y, C, q)
        assert it.objective == pytest.approx(value, rel=1e-7, abs=1e-9)
        np.testing.assert_allclose(it.coef, beta, atol=1e-5 * max(1.0, np.abs(beta).max()))
