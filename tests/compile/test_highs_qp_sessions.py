"""HiGHS's QP paths (primal, scaled primal, Lagrangian dual) give the problem's answer or an honest
status: on re-solves whose data change beyond the objective, without the certificate, on
nonconvex and unbounded problems, and when HiGHS's dual QP stops at its iteration limit.
References: CVXPY with Clarabel, or closed forms."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp

from fsframe import Status
from fsframe.backends import ClarabelBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.base import SolveResult
from fsframe.compiler import compile_model
from fsframe.backends.diag_qp import DualQPSession, ScaledQPSession
from fsframe.backends.highs import HighsSession
from fsframe.errors import UnsupportedProblemError

FORMS = ["auto", "dense", "dual", "scaled", "primal"]


def _opts(form, **kw):
    return SolveOptions(backend_options={"qp_form": form}, **kw)


# ------------------------------------------------------------------ a hinge QP with free w, slacks xi
def _svm(seed=0, m=8, n=5, d=None):
    """``min 1/2 sum_j d_j w_j^2 + c_b b + c_xi' xi  s.t.  y (X w + b) + xi >= 1, xi >= 0``:
    columns ``w`` (free, quadratic), ``b`` (free, linear), ``xi`` (``>= 0``, linear)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    N = n + 1 + m
    G = sp.csr_matrix(-np.hstack([y[:, None] * X, y[:, None], np.eye(m)]))
    d = np.ones(n) if d is None else np.asarray(d, dtype=float)
    data = ProblemData(c=np.r_[np.zeros(n + 1), np.ones(m)], A=sp.csr_matrix((0, N)), b=np.zeros(0), G=G,
                       h=-np.ones(m), lb=np.r_[np.full(n + 1, -np.inf), np.zeros(m)], ub=np.full(N, np.inf), l=m,
                       P=sp.diags(np.r_[d, np.zeros(1 + m)]).tocsc())
    return data


def _cvxpy(data: ProblemData) -> float:
    """The optimum of ``data`` by CVXPY + Clarabel (linear rows and bounds only)."""
    x = cp.Variable(data.n)
    obj = data.c @ x + data.offset
    if data.has_quadratic_objective:
        obj = obj + 0.5 * cp.quad_form(x, sp.csc_matrix(data.P), assume_PSD=True)
    cons = []
    if data.A.shape[0]:
        cons.append(data.A @ x == data.b)
    if data.l:
        cons.append(data.G[: data.l] @ x <= data.h[: data.l])
    lo, up = np.isfinite(data.lb), np.isfinite(data.ub)
    if lo.any():
        cons.append(x[np.flatnonzero(lo)] >= data.lb[lo])
    if up.any():
        cons.append(x[np.flatnonzero(up)] <= data.ub[up])
    return cp.Problem(cp.Minimize(obj), cons).solve(solver="CLARABEL")


@pytest.mark.parametrize("form", FORMS)
def test_resolve_after_a_change_of_c_on_linear_columns(form):
    """The dual's constraints depend on ``c`` of the linear columns (``b``, ``xi``)."""
    d1 = _svm()
    c2 = d1.c.copy()
    c2[6:] = 5.0  # C: 1 -> 5
    d2 = d1.evolve(c=c2)
    session = HighsBackend().open(d1, _opts(form))
    assert session.solve(d1).objective == pytest.approx(_cvxpy(d1), rel=1e-6)
    res = session.solve(d2)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(_cvxpy(d2), rel=1e-6)  # 4.91850, not the stale 12.51


@pytest.mark.parametrize("form", FORMS)
def test_resolve_sequence_matches_fresh_references(form):
    """Changed ``c`` (quadratic and linear columns), then a changed Hessian, on one session."""
    rng = np.random.default_rng(3)
    m, n = 30, 10
    seq = [_svm(seed=3, m=m, n=n, d=rng.uniform(0.5, 50, n))]
    for _ in range(3):
        c = seq[-1].c.copy()
        c[:n] = rng.normal(0, 2, n)
        c[n + 1:] = rng.uniform(0.5, 3, m)
        seq.append(seq[-1].evolve(c=c))
    seq.append(seq[-1].evolve(P=sp.diags(np.r_[rng.uniform(0.5, 50, n), np.zeros(1 + m)]).tocsc()))
    seq.append(seq[-1].evolve(c=seq[1].c))
    session = HighsBackend().open(seq[0], _opts(form))
    for k, data in enumerate(seq):
        res = session.solve(data)
        assert res.status is Status.OPTIMAL, (k, res.message)
        assert res.objective == pytest.approx(_cvxpy(data), rel=1e-6, abs=1e-7), k


@pytest.mark.parametrize("form", ["auto", "dense", "dual", "scaled"])
@pytest.mark.parametrize("what", ["quadratic-column-bound", "two-bounds-on-a-linear-column", "off-diagonal"])
def test_resolve_with_data_the_dual_cannot_take(form, what):
    """New bounds on quadratic columns, two finite bounds on a linear column, or an off-diagonal
    Hessian arrive on a re-solve: the answer is still the problem's."""
    d1 = _svm()
    n, N = 5, d1.n
    if what == "quadratic-column-bound":
        ub = d1.ub.copy()
        ub[:n] = 0.05
        d2 = d1.evolve(ub=ub)
    elif what == "two-bounds-on-a-linear-column":
        ub = d1.ub.copy()
        ub[n + 1:] = 0.2
        d2 = d1.evolve(ub=ub)
    else:
        P = d1.P.toarray()
        P[0, 1] = P[1, 0] = 0.5
        d2 = d1.evolve(P=sp.csc_matrix(P))
    session = HighsBackend().open(d1, _opts(form))
    session.solve(d1)
    res = session.solve(d2)
    assert res.status is Status.OPTIMAL, res.message
    assert d2.max_violation(res.x) <= 1e-7
    assert res.objective == pytest.approx(_cvxpy(d2), rel=1e-6)
    assert N == d2.n
    # and back to data the dual takes: the dual answers again
    res = session.solve(d1)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(d1), rel=1e-6)


@pytest.mark.parametrize("certify", [True, False])
def test_infeasible_primal_is_not_optimal_without_the_certificate(certify):
    """Rows ``b >= 5`` and ``b <= -5``: HiGHS stops at a huge finite point of the unbounded dual."""
    d1 = _svm()
    N, n = d1.n, 5
    rows = np.zeros((2, N))
    rows[0, n], rows[1, n] = -1.0, 1.0
    bad = d1.evolve(G=sp.vstack([d1.G, sp.csr_matrix(rows)], format="csr"), h=np.r_[d1.h, -5.0, -5.0], l=d1.l + 2)
    res = HighsBackend().solve(bad, _opts("dual", certify=certify))
    assert res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED), res.message
    assert res.x is None


# ------------------------------------------------------------------ convexity
def _nonconvex_model():
    """``P`` has eigenvalue -0.951; the global minimum on the box (grid) is 1.5, HiGHS's
    active-set solver stopped at a stationary point with 7.0."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), bounds=(-2, 4))
    m.c = pyo.Constraint(expr=m.x[0] + m.x[1] + m.x[2] == 1)
    m.obj = pyo.Objective(expr=m.x[0] * m.x[1] + m.x[0] ** 2 + 2 * m.x[1] ** 2 + 0.5 * m.x[2] ** 2
                          + 3 * m.x[1] * m.x[2] - m.x[0] + 7)
    return compile_model(m).data


@pytest.mark.parametrize("form", ["auto", "primal"])
def test_highs_refuses_a_nonconvex_qp(form):
    data = _nonconvex_model()
    lam = np.linalg.eigvalsh(data.P.toarray()).min()
    assert lam == pytest.approx(-0.951255, abs=1e-6)
    with pytest.raises(UnsupportedProblemError, match=r"not convex.*-0\.951"):
        HighsBackend().solve(data, _opts(form))


def test_highs_refuses_a_negative_diagonal():
    d = _svm()
    P = d.P.copy().tolil()
    P[0, 0] = -1.0
    with pytest.raises(UnsupportedProblemError, match="not convex"):
        HighsBackend().solve(d.evolve(P=P.tocsc()))


def test_highs_refuses_a_nonconvex_hessian_on_resolve():
    d = _svm()
    session = HighsBackend().open(d, _opts("primal"))
    assert session.solve(d).status is Status.OPTIMAL
    with pytest.raises(UnsupportedProblemError, match="not convex"):
        session.solve(d.evolve(P=sp.diags(np.r_[-np.ones(5), np.zeros(d.n - 5)]).tocsc()))


def test_psd_semidefinite_hessian_is_accepted():
    """``P = a a'`` (rank one, singular) is convex: the check must not refuse it."""
    a = np.array([1.0, -2.0, 0.5])
    P = sp.csc_matrix(np.outer(a, a))
    data = ProblemData(c=np.array([1.0, 0.0, 0.0]), A=sp.csr_matrix(np.ones((1, 3))), b=np.array([1.0]),
                       G=sp.csr_matrix((0, 3)), h=np.zeros(0), lb=np.full(3, -1.0), ub=np.full(3, 1.0), l=0, P=P)
    res = HighsBackend().solve(data)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(data), abs=1e-7)


# ------------------------------------------------------------------ unbounded
@pytest.mark.parametrize("form", FORMS)
def test_unbounded_qp_is_not_reported_usable(form):
    """``min 1/2 x1^2 + x1 - x2  s.t.  x1 <= 1``: unbounded along ``x2`` (Clarabel agrees). HiGHS's
    QP solver stops at its internal bound 1e7 and calls it optimal."""
    d = ProblemData(c=np.array([1.0, -1.0]), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=sp.csr_matrix([[1.0, 0.0]]),
                    h=np.array([1.0]), lb=np.full(2, -np.inf), ub=np.full(2, np.inf), l=1,
                    P=sp.csc_matrix(np.diag([1.0, 0.0])))
    assert ClarabelBackend().solve(d).status is Status.UNBOUNDED
    res = HighsBackend().solve(d, _opts(form))
    assert not res.ok, (res.status, res.message)
    assert res.status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED, Status.UNKNOWN)


# ------------------------------------------------------------------ iteration limit of the dual
def test_dual_iteration_limit_falls_back_to_the_scaled_primal(monkeypatch):
    d = _svm()
    real_solve = HighsSession.solve
    calls = []

    def limited_first(self, data=None):
        calls.append(data)
        res = real_solve(self, data)
        if len(calls) == 1:  # the dual's inner solve: pretend HiGHS stopped at its iteration limit
            return SolveResult(status=Status.ITERATION_LIMIT, x=res.x, objective=-1803.8, backend="highs",
                               solve_time=0.0, message="Iteration limit reached", duals=res.duals)
        return res

    monkeypatch.setattr(HighsSession, "solve", limited_first)
    session = HighsBackend().open(d, _opts("dual"))
    assert isinstance(session, DualQPSession)
    res = session.solve(d)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(_cvxpy(d), rel=1e-6)
    assert "iteration_limit" in res.message and "solved the scaled primal" in res.message


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::fsframe.errors.SolverWarning")  # a few optimal_inaccurate steps are fine
def test_hinge_exp_em_fits_breast_cancer_on_highs():
    """z-scored WDBC: EM weights phi'(t)/t span 1e-10..1e6; HiGHS's dual QP, then its scaled
    primal, hit the iteration limit from EM iteration 4 on. The fit must match Clarabel's. (These
    are the papers' weights, ``weights="paper"``; with the majoriser's, half of them, HiGHS's
    primal QP ends 1.5e-2 off its certificate at iteration 12 — a typed SolverFailedError.)"""
    import fsframe

    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    X, y = datasets.load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    fits = {be: fsframe.fit(X, y, formulation="hinge", surrogate="exp", loop="em", weights="paper", backend=be)
            for be in ("highs", "clarabel")}
    h, c = fits["highs"], fits["clarabel"]
    assert all(st.ok for st in h.statuses), [st.value for st in h.statuses]
    np.testing.assert_array_equal(h.support, c.support)
    assert h.objective == pytest.approx(c.objective, rel=1e-4)


def test_scaled_session_is_the_one_opened_for_scaled():
    assert isinstance(HighsBackend().open(_svm(), _opts("scaled")), ScaledQPSession)


def test_a_failed_form_is_skipped_for_the_rest_of_the_session(monkeypatch):
    """The dual fails, then the scaled primal: the primal as given answers, and the next solve of
    the session goes to it directly."""
    d = _svm()
    real_solve = HighsSession.solve
    calls = []

    def fail_twice(self, data=None):
        calls.append(data)
        if len(calls) <= 2:  # the dual's inner solve, then the scaled primal's
            return SolveResult(status=Status.NUMERICAL_ERROR, x=None, objective=None, backend="highs",
                               solve_time=0.0, message="Solve error")
        return real_solve(self, data)

    monkeypatch.setattr(HighsSession, "solve", fail_twice)
    session = HighsBackend().open(d, _opts("dual"))
    res = session.solve(d)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(d), rel=1e-6)
    assert "dual QP failed" in res.message and "scaled QP failed" in res.message
    assert "solved the primal QP" in res.message
    c2 = d.c.copy()
    c2[:5] = 0.3
    d2 = d.evolve(c=c2)
    res = session.solve(d2)
    assert len(calls) == 4  # one HiGHS solve: the primal's
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(d2), rel=1e-6)
    assert "failed earlier" in res.message


@pytest.mark.parametrize("status, retried", [(Status.NUMERICAL_ERROR, True), (Status.ITERATION_LIMIT, False)])
def test_a_numerical_error_is_forgotten_when_the_hessian_changes(monkeypatch, status, retried):
    """A form that failed with a numerical error (a singular dense dual, a Hessian HiGHS refuses)
    is tried again once the Hessian changes (EM's next weights), and skipped while it is the same;
    one that ran out of iterations stays skipped for the session (a failure that costs seconds)."""
    d = _svm()
    real_solve = HighsSession.solve
    calls = []

    def fail_first(self, data=None):
        calls.append(data)
        if len(calls) == 1:  # the dual's inner solve
            return SolveResult(status=status, x=None, objective=None, backend="highs",
                               solve_time=0.0, message="Solve error")
        return real_solve(self, data)

    monkeypatch.setattr(HighsSession, "solve", fail_first)
    session = HighsBackend().open(d, _opts("dual"))
    res = session.solve(d)
    assert res.status is Status.OPTIMAL and "dual QP failed" in res.message
    c2 = d.c.copy()
    c2[:5] = 0.3
    res = session.solve(d.evolve(c=c2))  # the same Hessian: the dual is skipped either way
    assert "dual QP failed earlier" in res.message
    d3 = _svm(d=np.full(5, 4.0))  # EM's next weights: another Hessian
    res = session.solve(d3)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(d3), rel=1e-6)
    assert ("failed earlier" not in res.message) is retried
    assert ("solved the scaled primal" in res.message) is not retried


@pytest.mark.parametrize("form", FORMS)
def test_resolve_with_new_right_hand_sides(form):
    """Same rows, other ``h`` (HiGHS changes the row bounds in place)."""
    d1 = _svm()
    d2 = d1.evolve(h=d1.h * 2.0)
    session = HighsBackend().open(d1, _opts(form))
    session.solve(d1)
    res = session.solve(d2)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(d2), rel=1e-6)
    # an LP: |w|, |b| <= 0.1, so the slacks carry the margins
    lb, ub = d1.lb.copy(), d1.ub.copy()
    lb[:6], ub[:6] = -0.1, 0.1
    lp = d1.evolve(P=None, lb=lb, ub=ub)
    lp2 = lp.evolve(h=lp.h * 2.0)
    lp_session = HighsBackend().open(lp)
    assert lp_session.solve(lp).objective == pytest.approx(_cvxpy(lp), rel=1e-7)
    res = lp_session.solve(lp2)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(_cvxpy(lp2), rel=1e-7)
    assert _cvxpy(lp2) > _cvxpy(lp) + 1.0
