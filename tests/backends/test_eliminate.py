"""Fixed columns eliminated before a conic solver sees the problem (``conic.eliminate``): the
reduced problem has the expected size, the optimum equals CVXPY+Clarabel's on the full problem, the
multipliers mapped back certify the full problem, and a fixing that empties a violated row leaves
the problem whole (the solver reports it infeasible)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from random_problems import l1mpm_socp, l1svm_lp, reference_optimum

from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend
from fsframe.backends.certificate import certify
from fsframe.backends.conic import eliminate, prepare
from fsframe.canonical import ProblemData
from fsframe.compiler import compile_model

import cvxpy  # noqa: E402,F401  (the test extra: the reference below needs it)
BACKENDS = [EcosBackend, ClarabelBackend]


def restricted_mpm(keep_every: int = 3, n: int = 24, m: int = 40):
    """The compiled L1-MPM (u, v, w, b; split rows u - v - w = 0) with every group outside
    ``range(0, n, keep_every)`` fixed at zero through an infinite weight, as a fit's re-solve on its
    support states it."""
    from fsframe_mpm import MPMFormulation

    rng = np.random.default_rng(5)
    y = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    X = rng.standard_normal((m, n))
    X[:, :4] += 0.9 * y[:, None]
    compiled = compile_model(MPMFormulation(delta=0.3).build(X, y, frozenset({"lin"})).model)
    keep = np.zeros(n, dtype=bool)
    keep[::keep_every] = True
    keep[:4] = True
    lin = np.where(keep, 1.0, np.inf)
    return compiled, compiled.with_weights(lin=lin), keep


@pytest.mark.parametrize("backend", BACKENDS)
def test_restricted_mpm_is_solved_small_and_right(backend):
    compiled, data, keep = restricted_mpm()
    el = eliminate(data)
    n_out = int((~keep).sum())
    assert el.reduced.n == data.n - 3 * n_out  # w_j fixed by its bounds, u_j = v_j idle (cost 0, only in u_j - v_j = 0)
    assert el.idle.size == 2 * n_out and len(el.eq_rows) == data.A.shape[0] - n_out
    assert el.reduced.cones == tuple(q - n_out for q in data.cones)  # their ridge entries, always 0, are gone
    assert el.reduced.G.nnz < data.G.nnz - 2 * n_out * 20  # the dense class-factor entries of w_j with them
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(reference_optimum(data), rel=1e-6, abs=1e-9)
    x = res.x
    assert np.all(x[data.lb == data.ub] == 0.0)
    cert = certify(data, x, res.duals["y"], res.duals["z"])  # the full problem's multipliers
    assert abs(cert.gap) <= 1e-6 and cert.dual_residual <= 1e-6 and cert.primal_residual <= 1e-7
    assert res.objective == pytest.approx(_solve_unreduced(backend, data), rel=1e-7)


def _solve_unreduced(backend, data):
    import fsframe.backends.clarabel as cl
    import fsframe.backends.ecos as ec

    mod = ec if backend is EcosBackend else cl
    real = mod.prepare
    mod.prepare = lambda d, scale=True, reduce=True: real(d, scale=scale, reduce=False)
    try:
        res = backend().solve(data)
    finally:
        mod.prepare = real
    assert res.status is Status.OPTIMAL
    return res.objective


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", range(3))
def test_random_socp_and_lp_with_fixed_columns(backend, seed):
    rng = np.random.default_rng(seed)
    for data in (l1mpm_socp(seed), l1svm_lp(seed)):
        n = data.n
        lb, ub = data.lb.copy(), data.ub.copy()
        fix = rng.choice(n, size=n // 4, replace=False)
        # fix at 0 where 0 is inside the bounds (a fit's groups fixed at zero)
        fix = fix[(lb[fix] <= 0) & (ub[fix] >= 0)]
        lb[fix] = ub[fix] = 0.0
        d = data.evolve(lb=lb, ub=ub)
        assert eliminate(d) is not None and eliminate(d).reduced.n <= n - fix.size
        res = backend().solve(d)
        assert res.status is Status.OPTIMAL, res.message
        assert res.objective == pytest.approx(reference_optimum(d), rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quadratic_objective_with_fixed_columns(backend):
    """``P`` couples a fixed and a free column: the fixed value enters the reduced ``c``."""
    import cvxpy as cp

    P = sp.csc_matrix(np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    A = sp.csr_matrix(np.array([[1.0, 1.0, 1.0]]))
    data = ProblemData(c=np.array([-1.0, 0.3, -0.2]), A=A, b=np.array([1.0]), G=sp.csr_matrix((0, 3)),
                       h=np.zeros(0), l=0, lb=np.array([0.7, -np.inf, 0.0]), ub=np.array([0.7, np.inf, np.inf]), P=P)
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL, res.message
    x = cp.Variable(3)
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(x, P.toarray()) + data.c @ x),
                      [A @ x == data.b, x[0] == 0.7, x[2] >= 0])
    prob.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(prob.value, rel=1e-6)
    assert res.x == pytest.approx(x.value, abs=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fixing_that_violates_an_emptied_row_is_left_to_the_solver(backend):
    """x_0 fixed at 2 empties the row x_0 <= 1: no elimination, the solver reports infeasibility."""
    G = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, -1.0]]))
    data = ProblemData(c=np.array([0.0, 1.0]), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=G, h=np.array([1.0, 0.0]),
                       l=2, lb=np.array([2.0, -np.inf]), ub=np.array([2.0, np.inf]))
    assert eliminate(data) is None
    assert backend().solve(data).status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    # a singleton whose value leaves its column's bounds: likewise
    data2 = ProblemData(c=np.array([1.0, 1.0]), A=sp.csr_matrix(np.array([[1.0, 1.0]])), b=np.array([3.0]),
                        G=sp.csr_matrix((0, 2)), h=np.zeros(0), l=0, lb=np.array([0.0, 0.0]), ub=np.array([0.0, 1.0]))
    assert eliminate(data2) is None
    assert backend().solve(data2).status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)


def test_nothing_fixed_means_nothing_eliminated():
    data = l1mpm_socp(0)
    assert eliminate(data) is None
    assert prepare(data).elim is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_singleton_rows_get_their_multipliers_back(backend):
    """``x_0`` fixed at 0.5 leaves ``x_0 - x_1 = 0`` with the single entry ``x_1`` (so ``x_1 = 0.5``): its
    multiplier, recovered from ``x_1``'s stationarity, makes the full problem's certificate hold."""
    import cvxpy as cp

    A = sp.csr_matrix(np.array([[1.0, -1.0, 0.0, 0.0], [0.0, 1.0, -2.0, 1.0]]))
    G = sp.csr_matrix(np.array([[0.0, -1.0, -1.0, -1.0], [0.0, 0.0, -1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]))
    data = ProblemData(c=np.array([0.0, 1.0, 3.0, -1.0]), A=A, b=np.zeros(2), G=G, h=np.array([-1.0, 0.0, 4.0]),
                       l=3, lb=np.array([0.5, -np.inf, -np.inf, -np.inf]), ub=np.array([0.5, np.inf, np.inf, np.inf]))
    el = eliminate(data)
    assert [s[:2] for s in el.singletons] == [(0, 1)] and el.reduced.n == 2
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL, res.message
    cert = certify(data, res.x, res.duals["y"], res.duals["z"])
    assert cert.dual_residual <= 1e-7 and abs(cert.gap) <= 1e-7
    x = cp.Variable(4)
    prob = cp.Problem(cp.Minimize(data.c @ x), [A @ x == 0, G @ x <= data.h, x[0] == 0.5])
    prob.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(prob.value, rel=1e-7)
