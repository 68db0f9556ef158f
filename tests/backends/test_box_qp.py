"""The dense active-set solver of EM duals (:mod:`fsframe.backends.box_qp`), its compiled pivots
(:mod:`fsframe.backends.box_qp_jit`, numba: the ``fast`` extra; those cases skip without numba)
and the ``dense`` form of :class:`~fsframe.backends.diag_qp.DualQPSession` that uses it.

References: CVXPY with Clarabel on the same QP (objective), the KKT conditions checked on the
returned point and multipliers (no solver needed), HiGHS's dual on the same subproblem sequence."""

from __future__ import annotations

import importlib.util

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from fsframe import Status
from fsframe.backends import HighsBackend, ProblemData, SolveOptions
from fsframe.backends import box_qp
from fsframe.backends.box_qp import solve_box_qp
from fsframe.backends.diag_qp import DualQPSession

# numba is in the test extra (CI runs the compiled loop); a suite run without it skips those cases,
# but numba installed and failing to load fails test_numba_installed_means_compiled
NUMBA = importlib.util.find_spec("numba") is not None
needs_numba = pytest.mark.skipif(not NUMBA, reason="numba (the fast extra) is not installed")
# both loops: the Python one always, the compiled one where numba is installed
LOOPS = [pytest.param(False, id="python"), pytest.param(True, id="compiled", marks=needs_numba)]


def _problem(seed, m=40, q=6, pe=1, free=0, box=1.0):
    """``min 1/2 ||F'lam||^2 + f'lam  s.t.  E lam = 0, 0 <= lam <= box`` (``free`` variables
    without bounds first), the shape of a hinge EM dual."""
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((m, q))
    f = -np.ones(m) + 0.1 * rng.standard_normal(m)
    E = np.sign(rng.standard_normal((pe, m)))
    lo = np.zeros(m)
    hi = np.full(m, box)
    lo[:free], hi[:free] = -np.inf, np.inf
    return F, f, E, np.zeros(pe), lo, hi


def _cvxpy(F, f, E, e, lo, hi):
    lam = cp.Variable(F.shape[0])
    cons = [lam >= np.where(np.isfinite(lo), lo, -1e20), lam <= np.where(np.isfinite(hi), hi, 1e20)]
    if E.shape[0]:
        cons.append(E @ lam == e)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(F.T @ lam) + f @ lam), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value


def _objective(F, f, lam):
    u = F.T @ lam
    return 0.5 * float(u @ u) + float(f @ lam)


def _check_kkt(F, f, E, e, lo, hi, res, tol=1e-9):
    """Feasibility, stationarity (``r = F F' lam + f + E' nu``) and the signs of the bound
    multipliers, recomputed from the returned point."""
    lam, nu = res.lam, res.nu
    assert np.all(lam >= lo - 1e-12) and np.all(lam <= hi + 1e-12)
    if E.shape[0]:
        assert np.max(np.abs(E @ lam - e)) <= 1e-10
    r = F @ (F.T @ lam) + f + (E.T @ nu if E.shape[0] else 0.0)
    scale = max(1.0, np.abs(f).max())
    inside = (lam > lo + 1e-12) & (lam < hi - 1e-12)
    assert np.max(np.abs(r[inside]), initial=0.0) <= tol * scale
    assert np.min(r[(lam <= lo + 1e-12) & ~inside], initial=0.0) >= -tol * scale
    assert np.max(r[(lam >= hi - 1e-12) & ~inside], initial=0.0) <= tol * scale
    np.testing.assert_allclose(res.r[~inside], r[~inside], atol=tol * scale)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", [dict(m=40, q=6), dict(m=30, q=40), dict(m=25, q=3, pe=0),
                                   dict(m=30, q=5, pe=2), dict(m=30, q=8, free=3)])
@pytest.mark.parametrize("compiled", LOOPS)
def test_cold_solve_is_optimal(seed, shape, compiled):
    prob = _problem(seed, **shape)
    res = solve_box_qp(*prob, compiled=compiled)
    assert res.status == "optimal"
    _check_kkt(*prob, res)
    ref = _cvxpy(*prob)
    assert _objective(prob[0], prob[1], res.lam) == pytest.approx(ref, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("compiled", LOOPS)
def test_warm_start_after_a_change_gives_the_new_optimum(seed, compiled, monkeypatch):
    """The EM pattern: the next dual has a rescaled factor with fewer live columns; warm-started
    from the previous solution (its free set too large for the new rank: the start is regularised
    first) it reaches the new optimum, in fewer pivots than a cold start."""
    shrink = []
    regularize = box_qp._regularize
    monkeypatch.setattr(box_qp, "_regularize", lambda *a: shrink.append(1) or regularize(*a))
    F, f, E, e, lo, hi = _problem(seed, m=60, q=12)
    first = solve_box_qp(F, f, E, e, lo, hi, compiled=compiled)
    rng = np.random.default_rng(100 + seed)
    F2 = F[:, :4] * rng.uniform(0.2, 3.0, 4)  # EM fixed 8 features at zero and rescaled the rest
    warm = solve_box_qp(F2, f, E, e, lo, hi, start=first.lam, compiled=compiled)
    assert shrink  # the warm start's free set was too large: the compiled loop hands it back to Python
    cold = solve_box_qp(F2, f, E, e, lo, hi, compiled=compiled)
    assert warm.status == cold.status == "optimal"
    _check_kkt(F2, f, E, e, lo, hi, warm)
    assert _objective(F2, f, warm.lam) == pytest.approx(_objective(F2, f, cold.lam), rel=1e-10, abs=1e-12)
    assert _objective(F2, f, warm.lam) == pytest.approx(_cvxpy(F2, f, E, e, lo, hi), rel=1e-7)
    again = solve_box_qp(F2, f, E, e, lo, hi, start=warm.lam, compiled=compiled)
    assert again.status == "optimal" and again.iterations <= 1


@pytest.mark.parametrize("compiled", LOOPS)
def test_statuses_for_what_it_cannot_solve(compiled):
    F, f, E, e, lo, hi = _problem(0, m=10, q=2, free=10)  # free variables, rank-2 Hessian: unbounded below
    assert solve_box_qp(F, f, np.zeros((0, 10)), np.zeros(0), lo, hi,
                        compiled=compiled).status in ("unbounded", "singular")
    F, f, E, e, lo, hi = _problem(0, m=10, q=2)
    assert solve_box_qp(F, f, E, np.ones(1), lo, hi, compiled=compiled).status == "infeasible_start"
    res = solve_box_qp(F, f, E, e, lo, hi, max_iter=1, compiled=compiled)
    assert res.status == "iteration_limit" and res.lam is None


@needs_numba
@pytest.mark.parametrize("seed", range(6))
def test_compiled_and_python_loops_reach_the_same_optimum(seed):
    """The compiled pivots against the Python loop on the EM pattern (a cold dual, then warm duals
    on fewer, rescaled columns): the same status and optimum, the same multipliers (the dual's
    solution is unique where the Hessian restricted to the free set is regular), pivots within a
    few of each other (ties may break differently: sums in another order)."""
    F, f, E, e, lo, hi = _problem(seed, m=80, q=15, pe=1, box=0.5 + seed)
    rng = np.random.default_rng(seed)
    start = {False: None, True: None}
    for k, q in enumerate((15, 9, 5, 2)):
        Fk = F[:, :q] * rng.uniform(0.5, 2.0, q) if k else F
        res = {c: solve_box_qp(Fk, f, E, e, lo, hi, start=start[c], compiled=c) for c in (False, True)}
        assert res[False].status == res[True].status == "optimal"
        _check_kkt(Fk, f, E, e, lo, hi, res[True])
        a, b = _objective(Fk, f, res[False].lam), _objective(Fk, f, res[True].lam)
        assert b == pytest.approx(a, rel=1e-12, abs=1e-12)
        np.testing.assert_allclose(res[True].lam, res[False].lam, atol=1e-9)
        np.testing.assert_allclose(res[True].nu, res[False].nu, atol=1e-9)
        assert abs(res[True].iterations - res[False].iterations) <= max(3, res[False].iterations // 10)
        start = {c: res[c].lam for c in (False, True)}


@needs_numba
def test_numba_installed_means_compiled(monkeypatch):
    """With numba installed the compiled loop loads (a broken install fails here, not as skips)."""
    monkeypatch.delenv("FSFRAME_NO_JIT", raising=False)
    assert box_qp.compiled_available()


def test_compiled_needs_numba(monkeypatch):
    """``compiled=True`` without numba is an ImportError naming the extra, and the default runs the
    Python loop; ``FSFRAME_NO_JIT`` turns the compiled loop off for the default only."""
    calls = []
    loop = box_qp._active_set
    monkeypatch.setattr(box_qp, "_active_set", lambda *a: calls.append(1) or loop(*a))
    with monkeypatch.context() as mp:
        mp.setattr(box_qp.box_qp_jit, "_BUILT", [None])  # as without numba
        assert not box_qp.compiled_available()
        with pytest.raises(ImportError, match=r"fsframe\[fast\]"):
            solve_box_qp(*_problem(0), compiled=True)
        assert solve_box_qp(*_problem(0)).status == "optimal" and len(calls) == 1
    monkeypatch.setenv("FSFRAME_NO_JIT", "1")
    assert not box_qp.compiled_available()
    assert solve_box_qp(*_problem(0)).status == "optimal" and len(calls) == 2
    if NUMBA:  # an explicit request still compiles
        assert solve_box_qp(*_problem(0), compiled=True).status == "optimal" and len(calls) == 2


# ------------------------------------------------------------------ the dense form of the EM dual
def _svm(seed=0, m=30, n=6):
    """The hinge EM subproblem ``min sum_j d_j w_j^2 / 2 + C sum xi``, ``y (X w + b) + xi >= 1``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] + 1.5 * rng.standard_normal(m) > 0, 1.0, -1.0)  # noisy: some margins violated
    N = n + 1 + m
    G = sp.csr_matrix(-np.hstack([y[:, None] * X, y[:, None], np.eye(m)]))
    return ProblemData(c=np.r_[np.zeros(n + 1), np.ones(m)], A=sp.csr_matrix((0, N)), b=np.zeros(0), G=G,
                       h=-np.ones(m), lb=np.r_[np.full(n + 1, -np.inf), np.zeros(m)], ub=np.full(N, np.inf), l=m,
                       P=sp.diags(np.r_[np.ones(n), np.zeros(1 + m)]).tocsc())


def _with_d(data, d):
    n = d.size
    P = sp.diags(np.r_[d, np.zeros(data.n - n)]).tocsc()
    P.eliminate_zeros()
    lb, ub = data.lb.copy(), data.ub.copy()
    fixed = ~np.isfinite(d)
    P = sp.diags(np.r_[np.where(fixed, 0.0, d), np.zeros(data.n - n)]).tocsc()
    lb[:n][fixed] = ub[:n][fixed] = 0.0
    return data.evolve(P=P, lb=lb, ub=ub)


def test_dense_form_follows_an_em_sequence_as_highs_dual_does():
    """A sequence of EM-like subproblems (weights spreading apart, features fixed at zero) in one
    session: the dense form answers every one ``OPTIMAL`` (certified on the primal) at the same
    optimum as HiGHS's dual and CVXPY, and its warm starts take fewer pivots than the first."""
    base = _svm()
    rng = np.random.default_rng(3)
    d = np.ones(6)
    dense = HighsBackend().open(base, SolveOptions(backend_options={"qp_form": "dense"}))
    highs = HighsBackend().open(base, SolveOptions(backend_options={"qp_form": "dual"}))
    assert isinstance(dense, DualQPSession) and dense.forms[0] == "dense"
    pivots = []
    for k in range(6):
        data = _with_d(base, d)
        a, b = dense.solve(data), highs.solve(data)
        assert a.status is Status.OPTIMAL and b.status is Status.OPTIMAL, (a.message, b.message)
        assert a.message.startswith("dense dual QP: optimal"), a.message
        assert a.objective == pytest.approx(b.objective, rel=1e-6)
        x = cp.Variable(data.n)
        P = data.P.toarray()
        cp.Problem(cp.Minimize(0.5 * cp.sum(cp.multiply(np.diag(P), cp.square(x))) + data.c @ x),
                   [data.G @ x <= data.h, x >= np.where(np.isfinite(data.lb), data.lb, -1e20),
                    x <= np.where(np.isfinite(data.ub), data.ub, 1e20)]).solve(solver="CLARABEL")
        assert a.objective == pytest.approx(data.objective(x.value), rel=1e-6)
        pivots.append(a.iterations)
        assert np.any(a.x[7:] > 1e-6)  # slacks in use: multipliers at their upper bound C map to them
        w = a.x[:6]
        d = np.where(np.abs(w) < 1e-3 * np.abs(w).max(), np.inf, 1.0 / np.maximum(w * w, 1e-300))
        d *= rng.uniform(0.9, 1.1, 6)
    assert max(pivots[1:]) < pivots[0]


def test_dense_form_failure_falls_back_to_highs_dual(monkeypatch):
    import fsframe.backends.diag_qp as diag_qp
    from fsframe.backends.box_qp import BoxQPResult

    monkeypatch.setattr(diag_qp, "solve_box_qp", lambda *a, **k: BoxQPResult("iteration_limit", iterations=7))
    data = _svm()
    res = HighsBackend().solve(data, SolveOptions(backend_options={"qp_form": "dense"}))
    assert res.status is Status.OPTIMAL
    assert "dense dual QP failed (iteration_limit" in res.message and "solved the dual QP" in res.message


def test_a_broken_numba_falls_back_to_the_python_pivots(monkeypatch):
    """numba installed but unusable (an import that fails with another error, or a compile error
    on the first call): one RuntimeWarning, then the Python loop with the same answer — not an
    exception on every solve."""
    ref = solve_box_qp(*_problem(0), compiled=False)
    jit = box_qp.box_qp_jit
    monkeypatch.delenv("FSFRAME_NO_JIT", raising=False)
    # an import that raises something other than ImportError
    monkeypatch.setattr(jit, "_BUILT", [])
    import builtins
    real_import = builtins.__import__

    def broken(name, *a, **k):
        if name == "numba":
            raise AttributeError("numpy has no attribute 'long'")
        return real_import(name, *a, **k)

    with monkeypatch.context() as mp:
        mp.setattr(builtins, "__import__", broken)
        with pytest.warns(RuntimeWarning, match="numba is installed but unusable"):
            assert not box_qp.compiled_available()
    res = solve_box_qp(*_problem(0))
    assert res.status == "optimal" and np.allclose(res.lam, ref.lam, atol=1e-10)

    # a compile error on the first call of the compiled loop
    class FakeNumbaError(Exception):
        pass

    FakeNumbaError.__module__ = "numba.core.errors"

    def failing(*a, **k):
        raise FakeNumbaError("lowering failed")

    monkeypatch.setattr(jit, "_BUILT", [failing])
    with pytest.warns(RuntimeWarning, match="unusable.*lowering failed"):
        res = solve_box_qp(*_problem(0))
    assert res.status == "optimal" and np.allclose(res.lam, ref.lam, atol=1e-10)
    assert jit._BUILT == [None]


@pytest.mark.parametrize("compiled", LOOPS)
def test_the_midpoint_interval_has_one_definition(compiled, monkeypatch):
    """With no free variable the equality multiplier is the midpoint of its optimal interval; the
    interval comes from ``box_qp._nu_interval``: ``box_qp_jit.nu_interval``, the function the
    compiled warm EM step calls too (tests/unit/test_dense_em_warm_step.py holds the two paths to
    the same intercept), or its numpy form (test below). A hinge dual with every multiplier at
    ``C`` (balanced classes, a tiny ``F``): the Python rule asks it once, and ``nu`` is the
    midpoint of the interval written out here from the sign conditions ``r_i = g_i + a_i nu <= 0``
    at the upper bounds. Planted (the interval's lower end as ``nu``): both this and the
    warm-step test fail."""
    from fsframe.backends import box_qp as box_qp_module

    rng = np.random.default_rng(7)
    m = 40
    a = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    F = 1e-2 * (a[:, None] * rng.normal(size=(m, 1)))
    f, lo, hi = -np.ones(m), np.zeros(m), np.ones(m)
    calls, real = [], box_qp_module._nu_interval
    monkeypatch.setattr(box_qp_module, "_nu_interval", lambda *args: calls.append(1) or real(*args))
    res = solve_box_qp(F, f, a[None, :], np.zeros(1), lo, hi, compiled=compiled)
    assert res.status == "optimal" and np.all(res.lam == 1.0) and calls == [1]
    g = F @ (F.T @ res.lam) + f
    L, U = np.max(-g[a < 0] / a[a < 0]), np.min(-g[a > 0] / a[a > 0])  # a_i nu <= -g_i at each upper bound
    assert L < U
    assert res.nu[0] == pytest.approx(0.5 * (L + U), rel=1e-12, abs=1e-14)
    assert np.all(res.r <= 0)  # the bound multipliers of the upper bounds have their sign


@pytest.mark.parametrize("seed", range(4))
def test_the_numpy_midpoint_interval_is_the_compiled_one(seed, monkeypatch):
    """``box_qp._nu_interval`` without the compiled helper (numba absent, ``FSFRAME_NO_JIT``,
    before the first compile) is a numpy form of ``box_qp_jit.nu_interval``'s loop: the same
    ``(L, U)`` bit for bit as the Python loop and the compiled function, on rows with fixed
    variables, zero coefficients and (seed 3) only one side bounded (an infinite end). Planted
    (the fixed variables not left out; the side test flipped): it fails."""
    from fsframe.backends import box_qp as box_qp_module
    from fsframe.backends import box_qp_jit

    rng = np.random.default_rng(seed)
    m = 300
    g, a = rng.normal(size=m), rng.choice([-2.0, -1.0, 0.0, 0.5, 1.0], size=m)
    lo = np.zeros(m)
    hi = np.where(rng.random(m) < 0.1, 0.0, 1.0)  # a tenth fixed
    at_lo = rng.random(m) < 0.5
    if seed == 3:
        at_lo = a > 0  # every bounding variable below: U stays +inf
    compiled = box_qp_jit.compiled()  # loads the compiled helper (None without numba)
    loop = getattr(box_qp_jit.nu_interval, "py_func", box_qp_jit.nu_interval)
    monkeypatch.setattr(box_qp_jit, "nu_interval", loop)  # not compiled: the numpy form
    got = box_qp_module._nu_interval(g, a, lo, hi, at_lo)
    assert got == tuple(map(float, loop(g, a, lo, hi, at_lo))) and np.isfinite(got[0])
    assert (seed == 3) == (got[1] == np.inf)
    if compiled is not None:
        monkeypatch.undo()
        assert hasattr(box_qp_jit.nu_interval, "py_func")  # the compiled one answers now
        assert box_qp_module._nu_interval(g, a, lo, hi, at_lo) == got
