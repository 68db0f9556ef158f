"""A backend's claim that a problem is infeasible or unbounded is checked like an optimum: from
the evidence it returns (a Farkas certificate, a direction of descent), on the compiled problem
(:func:`fsframe.backends.claims.judge_claim`). A verified claim raises the typed error; a claim
that fails its check is reported as not verified, with why, and put to another backend; an
infeasibility claim on a problem whose zero model is feasible is refuted."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.base import Backend, BackendSession, RawSolution
from fsframe.backends.certificate import relative_violation
from fsframe.backends.claims import check_infeasibility, check_unboundedness, feasible_point, judge_claim
from fsframe.enums import ProblemClass
from fsframe.errors import InfeasibleProblemError, SolverFailedError, UnboundedProblemError
from fsframe.testing import StandardProblems

TOL = SolveOptions().cert_tol


def _lp(c, G, h, lb, l=None, cones=()):  # noqa: E741
    G = np.atleast_2d(np.asarray(G, dtype=float))
    n = G.shape[1]
    return ProblemData(c=np.asarray(c, dtype=float), A=sp.csr_matrix((0, n)), b=np.zeros(0), G=sp.csr_matrix(G),
                       h=np.asarray(h, dtype=float), l=G.shape[0] - sum(cones) if l is None else l, cones=cones,
                       lb=np.asarray(lb, dtype=float), ub=np.full(n, np.inf))


def unbounded_socp() -> ProblemData:
    """``min -x1  s.t.  |x2| <= x1`` (the cone ``(x1, x2)``): unbounded along ``(1, 0)``."""
    return _lp([-1.0, 0.0], [[-1.0, 0.0], [0.0, -1.0]], [0.0, 0.0], [-np.inf, -np.inf], l=0, cones=(2,))


def bounded_socp() -> ProblemData:
    """``min -x1  s.t.  ||x|| <= 1``: bounded (optimum -1 at ``(1, 0)``)."""
    return _lp([-1.0, 0.0], [[0.0, 0.0], [-1.0, 0.0], [0.0, -1.0]], [1.0, 0.0, 0.0], [-np.inf, -np.inf], l=0,
               cones=(3,))


def infeasible_socp() -> ProblemData:
    """``min x1  s.t.  x1 >= 2,  ||x|| <= 1``: the cone and the row cannot both hold."""
    return _lp([1.0, 0.0], [[-1.0, 0.0], [0.0, 0.0], [-1.0, 0.0], [0.0, -1.0]], [-2.0, 1.0, 0.0, 0.0],
               [-np.inf, -np.inf], l=1, cones=(3,))


CASES = [(StandardProblems.infeasible_lp().data, Status.INFEASIBLE, (HighsBackend, EcosBackend, ClarabelBackend)),
         (StandardProblems.unbounded_lp().data, Status.UNBOUNDED, (HighsBackend, EcosBackend, ClarabelBackend)),
         (StandardProblems.infeasible_qp().data, Status.INFEASIBLE, (EcosBackend, ClarabelBackend)),
         (StandardProblems.unbounded_qp().data, Status.UNBOUNDED, (EcosBackend, ClarabelBackend)),
         (infeasible_socp(), Status.INFEASIBLE, (EcosBackend, ClarabelBackend)),
         (unbounded_socp(), Status.UNBOUNDED, (EcosBackend, ClarabelBackend))]


@pytest.mark.parametrize("data, status, backends", CASES)
def test_true_claims_are_verified_from_every_backends_evidence(data, status, backends):
    for backend in backends:
        res = backend().solve(data)
        assert res.status is status, (backend.name, res.message)
        assert res.claim is not None and res.claim.verified and not res.claim.refuted, (backend.name, res.message)
        assert "verified by fsframe" in res.message


def test_a_farkas_certificate_is_checked_not_trusted():
    data = StandardProblems.infeasible_lp().data  # x >= 1 (row -x <= -1) and x <= 0
    assert check_infeasibility(data, np.zeros(0), np.array([1.0, 1.0]), TOL)[0]
    assert check_infeasibility(data, np.zeros(0), 3 * np.array([1.0, 1.0]), TOL)[0]  # any positive multiple
    # wrong weights leave a reduced cost on the free x: the sum of the rows does not cancel it
    ok, why = check_infeasibility(data, np.zeros(0), np.array([1.0, 0.5]), TOL)
    assert not ok and "a local proof only, no feasible point with |x_k| < 2 on the 1 column" in why
    # a sign flipped (outside the dual cone, projected away): no margin left
    assert not check_infeasibility(data, np.zeros(0), np.array([-1.0, -1.0]), TOL)[0]
    # the bounds count in closed form: x >= 0 and x + y <= -1 with y >= 0, certificate z = 1
    bounded = _lp([1.0, 1.0], [[1.0, 1.0]], [-1.0], [0.0, 0.0])
    ok, why = check_infeasibility(bounded, np.zeros(0), np.ones(1), TOL)
    assert ok and "Farkas margin 1.00e+00" in why
    # a feasible problem has no certificate: x + y <= 1, x, y >= 0
    assert not check_infeasibility(_lp([1.0, 1.0], [[1.0, 1.0]], [1.0], [0.0, 0.0]), np.zeros(0), np.ones(1), TOL)[0]


def test_a_direction_of_descent_is_checked_not_trusted():
    data = StandardProblems.unbounded_lp().data  # min -x1  s.t.  x1 <= x2, x >= 0
    assert check_unboundedness(data, np.array([1.0, 1.0]), TOL)[0]
    for bad, why in [(np.array([1.0, 0.0]), "leaves the cone constraints"),
                     (np.array([-1.0, -1.0]), "does not fall"),
                     (np.array([0.0, 1.0]), "does not fall")]:
        ok, text = check_unboundedness(data, bad, TOL)
        assert not ok and why in text, text
    # a direction that leaves its cones by 1e-10 while the costs are 1e12: the fall is what the
    # violation allows (the shape of Clarabel's false claim on a logistic loss at C = 1e12)
    cone = _lp([1e12, 0.0], [[-1.0, 0.0]], [0.0], [-np.inf, -np.inf])  # min 1e12 x1  s.t.  x1 >= 0: bounded
    ok, why = check_unboundedness(cone, np.array([-1e-10, 1.0]), TOL)
    assert not ok and "within what its violation allows" in why


@pytest.mark.parametrize("data, forged", [
    (StandardProblems.infeasible_lp().data, None),
    # min -x1 s.t. x1 <= x2 <= 1 (x >= 0): bounded; the ray (1, 1) crosses the bound on x2 (a row)
    (_lp([-1.0, 0.0], [[1.0, -1.0], [0.0, 1.0]], [0.0, 1.0], [0.0, 0.0]), [1.0, 1.0]),
    (bounded_socp(), [1.0, 0.0]),  # leaves the cone
    (bounded_socp(), [1.0, 1e-3]),  # leaves it by less, still beyond rounding
])
def test_a_forged_unboundedness_claim_on_a_bounded_problem_is_not_verified(data, forged):
    """A backend calling a bounded problem unbounded, with a made-up direction (or none): the
    claim stands as the backend's, "claimed by the backend, not verified" with why; no size of
    a point counts as evidence."""
    cvx = ClarabelBackend().solve(data)
    assert cvx.status in (Status.OPTIMAL, Status.INFEASIBLE)  # bounded (or empty): never unbounded
    res = Claimant(Status.UNBOUNDED, None if forged is None else {"dx": np.array(forged)}).solve(data)
    assert res.status is Status.UNBOUNDED and not res.claim.verified and not res.claim.refuted
    assert "claimed by the backend, not verified by fsframe" in res.message
    assert ("no direction of unbounded descent was returned" if forged is None else "direction of descent: ") \
        in res.message


class Claimant(Backend):
    """A third-party backend that claims ``status`` with the evidence ``ray`` (``None``: none)."""

    name = "claimant"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def __init__(self, status=Status.INFEASIBLE, ray=None):
        self.status, self.ray = status, ray

    def open(self, data, options=SolveOptions()):
        return ClaimantSession(self, data, options)


class ClaimantSession(BackendSession):
    def _solve_raw(self, data):
        return None

    def _invert(self, data, raw):
        return RawSolution(status=self.backend.status, ray=self.backend.ray, message="no optimum!")


def test_an_infeasibility_claim_on_a_problem_whose_zero_model_is_feasible_is_refuted():
    data = StandardProblems.unbounded_lp().data  # x = 0 is feasible
    res = Claimant(Status.INFEASIBLE).solve(data)
    assert res.status is Status.NUMERICAL_ERROR and res.claim.refuted and not res.claim.verified
    assert "claimed the problem infeasible, which fsframe refutes" in res.message
    assert "zero model satisfies every constraint" in res.message
    # "infeasible or unbounded" on a feasible problem can only mean unbounded: not verified
    res = Claimant(Status.INFEASIBLE_OR_UNBOUNDED).solve(data)
    assert res.status is Status.INFEASIBLE_OR_UNBOUNDED and not res.claim.verified and not res.claim.refuted
    assert "can only mean unbounded" in res.message
    # a claim without evidence on a problem whose zero model is infeasible stands, not verified
    res = Claimant(Status.INFEASIBLE).solve(StandardProblems.infeasible_lp().data)
    assert res.status is Status.INFEASIBLE and not res.claim.verified and not res.claim.refuted
    assert "claimed by the backend, not verified by fsframe: no Farkas certificate was returned" in res.message
    # with made-up evidence: checked, and named as what failed
    res = Claimant(Status.UNBOUNDED, {"dx": np.array([-1.0, -1.0])}).solve(data)
    assert res.status is Status.UNBOUNDED and not res.claim.verified and "does not fall" in res.message
    # certify=False leaves the claim unchecked (a working set's restricted solves)
    assert Claimant(Status.INFEASIBLE).solve(data, SolveOptions(certify=False)).claim is None


def test_judge_claim_upgrades_a_verified_infeasible_or_unbounded():
    data = StandardProblems.infeasible_lp().data
    status, message, check = judge_claim(data, Status.INFEASIBLE_OR_UNBOUNDED,
                                         {"y": np.zeros(0), "z": np.ones(2)}, TOL)
    assert status is Status.INFEASIBLE and check.verified and "verified by fsframe" in message


def _separable():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 5))
    return X, np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1, -1)


def test_a_verified_claim_is_the_typed_error_and_an_unverified_one_is_not():
    """What an outer loop raises for a failed subproblem (``SolverFailedError.of``, the loops'
    ``_failed``): the typed error only when fsframe verified the claim."""
    for data, kind in [(StandardProblems.infeasible_lp().data, InfeasibleProblemError),
                       (StandardProblems.unbounded_lp().data, UnboundedProblemError)]:
        res = ClarabelBackend().solve(data)
        err = SolverFailedError.of("subproblem 0 failed", result=res)
        assert type(err) is kind and err.status is res.status
    res = Claimant(Status.INFEASIBLE).solve(StandardProblems.infeasible_lp().data)  # no evidence
    assert type(SolverFailedError.of("x", result=res)) is SolverFailedError


def test_a_refuted_claim_in_a_fit_is_answered_by_another_backend():
    """A backend that calls every problem infeasible: the hinge LP's zero model (w = 0, b = 0,
    unit slacks) refutes it, and the next backend in auto order solves the LP."""
    X, y = _separable()
    ref = fsframe.fit(X, y, "l1-svm", C=0.1)
    # the claimant's own options are not passed on (HiGHS would refuse an unknown option)
    res = fsframe.fit(X, y, "l1-svm", C=0.1, backend=Claimant(Status.INFEASIBLE),
                      backend_options={"claimant_verbosity": 2})
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    assert res.certificate["status"] == "optimal" and res.certificate["backend"] == "highs"


@pytest.mark.filterwarnings("ignore::fsframe.errors.FsframeWarning")
def test_clarabels_false_unboundedness_claim_on_a_logistic_loss_is_not_verified():
    """l1-logistic at C = 1e12 on separable data is bounded (its objective is a sum of
    nonnegative terms) and its zero model is feasible; Clarabel and ECOS both call it dual
    infeasible with directions that fall only by what their cone violations allow. The fit
    fails with a plain SolverFailedError that names both claims and why neither was verified
    (it raised the claim untested)."""
    X, y = _separable()
    with pytest.raises(SolverFailedError) as info:
        fsframe.fit(X, y, "l1-logistic", C=1e12, backend="clarabel")
    err = info.value
    assert type(err) is SolverFailedError and err.status is Status.UNBOUNDED and not err.result.claim.verified
    text = str(err)
    assert "DualInfeasible; claimed by the backend, not verified by fsframe: direction of descent" in text
    assert "within what its violation allows" in text and "a second opinion from ecos: unbounded" in text


@pytest.mark.parametrize("highs_takes, clarabel_gets", [(5.0, 1.0), (8.0, None)])
def test_a_second_opinion_gets_what_is_left_of_the_time_limit(monkeypatch, highs_takes, clarabel_gets):
    """The user's ``time_limit`` is the budget of the whole subproblem: after the first backend's
    set-up (1 s on a stub clock, counted too) and refuted claim (3 s), each other backend gets what
    is left of the 10 s, and none is asked once it is spent (they were each given the full 10 s)."""
    import fsframe.problem as problem

    now = [0.0]
    monkeypatch.setattr(problem, "_clock", lambda: now[0])
    given = {}

    def other(name, takes):
        def solve(self, data, options=SolveOptions()):
            given[name] = options.time_limit
            now[0] += takes
            return fsframe.backends.SolveResult(Status.TIME_LIMIT, None, None, name, takes, message="stub")
        return solve

    monkeypatch.setattr(HighsBackend, "solve", other("highs", highs_takes))
    monkeypatch.setattr(ClarabelBackend, "solve", other("clarabel", 1.0))

    class Slow(ClaimantSession):
        def _solve_raw(self, data):
            now[0] += 3.0
            return None

    claimant = Claimant(Status.INFEASIBLE)
    def open_slowly(data, options=SolveOptions()):
        now[0] += 1.0
        return Slow(claimant, data, options)

    claimant.open = open_slowly
    X, y = _separable()
    with pytest.raises(SolverFailedError) as info:
        fsframe.fit(X, y, "l1-svm", C=0.1, backend=claimant, time_limit=10.0)
    assert given.pop("highs") == pytest.approx(6.0)
    if clarabel_gets is None:
        assert given == {} and "clarabel: not asked, the time limit of 10 s was spent" in str(info.value)
    else:
        assert given == {"clarabel": pytest.approx(clarabel_gets)}


def _mixed_scales(small_rhs: float, big_rhs: float) -> ProblemData:
    """``1e4 x1 <= big_rhs`` (x1 free) and ``1e-4 x2 <= small_rhs`` (``x2 >= 0``): rows eight orders
    of magnitude apart."""
    return _lp([1.0, 1.0], [[1e4, 0.0], [0.0, 1e-4]], [big_rhs, small_rhs], [-np.inf, 0.0])


def _cvxpy_status(data: ProblemData) -> str:
    import cvxpy as cp

    x = cp.Variable(data.n)
    cons = [data.G.toarray() @ x <= data.h] + [x[j] >= data.lb[j] for j in range(data.n) if np.isfinite(data.lb[j])]
    prob = cp.Problem(cp.Minimize(0), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.status


def test_a_true_infeasibility_claim_on_a_badly_scaled_row_stands():
    """``1e-4 x2 <= -1e-6`` with ``x2 >= 0`` is ``x2 <= -0.01``: infeasible. The zero model violates
    it by 1e-6, which one scale for all rows (1e4, the other row's) made 1e-10 and refuted the
    true claim; each row measured against its own size, the violation is 1e-2 and the claim
    (no evidence given) stands, not verified."""
    data = _mixed_scales(-1e-6, 1e4)
    assert _cvxpy_status(data) == "infeasible"
    res = Claimant(Status.INFEASIBLE).solve(data)
    assert res.status is Status.INFEASIBLE and not res.claim.refuted and not res.claim.verified, res.message
    # the backends' own evidence proves it
    res = HighsBackend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim.verified


def test_a_wrong_infeasibility_claim_on_badly_scaled_rows_is_refuted():
    """``1e4 x1 <= -1e-9`` (x1 free) and ``1e-4 x2 <= 1e-6``: feasible (``x1 = -1e-13``). The zero
    model misses the first row by 1e-9, rounding for a row of size 1e4 (a row's size counts its
    coefficients, not only its right-hand side), so the claim is refuted."""
    data = _mixed_scales(1e-6, -1e-9)
    assert _cvxpy_status(data) == "optimal"
    res = Claimant(Status.INFEASIBLE).solve(data)
    assert res.status is Status.NUMERICAL_ERROR and res.claim.refuted, res.message
    assert "zero model satisfies every constraint to within 1.0e-13 (relative)" in res.message


def _linprog_status(data: ProblemData) -> int:
    """scipy's HiGHS-independent reading (``linprog``'s status: 0 optimal, 2 infeasible, 3 unbounded)."""
    from scipy.optimize import linprog

    bounds = [(None if np.isinf(lo) else lo, None if np.isinf(hi) else hi) for lo, hi in zip(data.lb, data.ub)]
    return linprog(data.c, A_ub=data.G.toarray(), b_ub=data.h, bounds=bounds, method="highs-ipm").status


def _far_column(fixed: bool) -> ProblemData:
    """``x0`` fixed at 1e6 (or in ``[1e6, 2e6]``), ``x1 >= 0`` with ``1e-4 x1 <= -1e-6`` (that is
    ``x1 <= -0.01``: infeasible), ``x2`` free at cost -1 (a direction of descent ``e2``)."""
    G = sp.csr_matrix([[0.0, 1e-4, 0.0]])
    return ProblemData(c=np.array([0.0, 0.0, -1.0]), A=sp.csr_matrix((0, 3)), b=np.zeros(0), G=G,
                       h=np.array([-1e-6]), l=1, lb=np.array([1e6, 0.0, -np.inf]),
                       ub=np.array([1e6 if fixed else 2e6, np.inf, np.inf]))


@pytest.mark.parametrize("fixed", [True, False])
def test_a_far_column_does_not_loosen_the_rows_it_is_not_in(fixed):
    """A column at 1e6 once counted in every row's size (``max|x|`` over the whole point): the
    row ``1e-4 x1 <= -1e-6``, missed by 1e-6 at the zero model, looked feasible to 1e-8, and the
    infeasible problem was "verified UNBOUNDED" on Clarabel and ECOS. Each row's size counts its
    own columns, and only those that can move it towards feasibility (``x1`` is at 0 and would have
    to decrease): the violation is 1 (the right-hand side's size), no backend calls the problem
    unbounded, and HiGHS's Farkas certificate proves it infeasible."""
    data = _far_column(fixed)
    assert _linprog_status(data) == 2  # infeasible
    x0, viol = feasible_point(data)
    assert x0 is None and viol == pytest.approx(1.0, rel=1e-9)
    status, _, check = judge_claim(data, Status.UNBOUNDED, {"dx": np.array([0.0, 0.0, 1.0])}, TOL)
    assert status is Status.INFEASIBLE_OR_UNBOUNDED and check.verified
    for backend in (HighsBackend, ClarabelBackend, EcosBackend):
        res = backend().solve(data)
        assert res.x is None and res.claim is not None and not res.claim.refuted, (backend.name, res.message)
        # a claim of unboundedness is at most "infeasible or unbounded" (no feasible point is known)
        assert res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED) or not res.claim.verified, \
            (backend.name, res.message)
    res = HighsBackend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim.verified, res.message


@pytest.mark.parametrize("free_column", [False, True])
def test_a_zero_model_within_the_tolerance_but_not_feasible_proves_nothing(free_column):
    """``x1 + x2 <= -5e-6`` with ``x >= 0`` is infeasible by 5e-6: the zero model is "feasible to
    within 10 tol" but not feasible. It neither refutes an infeasibility claim (once it did:
    ``NUMERICAL_ERROR``, the true claim called wrong) nor makes a direction of descent verify
    unboundedness (with a free column at cost -1 it did: "verified UNBOUNDED")."""
    G = [[1.0, 1.0, 0.0]] if free_column else [[1.0, 1.0]]
    lb = [0.0, 0.0, -np.inf] if free_column else [0.0, 0.0]
    c = [1.0, 1.0, -1.0] if free_column else [1.0, 1.0]
    data = _lp(c, G, [-5e-6], lb)
    assert _linprog_status(data) == 2  # infeasible
    x0, viol = feasible_point(data)
    # no column can decrease the row (both at their lower bound 0): it is sized by its right-hand side
    assert x0 is None and viol == pytest.approx(1.0, rel=1e-9)
    status, message, check = judge_claim(data, Status.INFEASIBLE, None, TOL)
    assert status is Status.INFEASIBLE and not check.refuted and not check.verified, message
    assert "not verified by fsframe: no Farkas certificate was returned" in message
    if free_column:
        status, message, check = judge_claim(data, Status.UNBOUNDED, {"dx": np.array([0.0, 0.0, 1.0])}, TOL)
        assert status is Status.INFEASIBLE_OR_UNBOUNDED and check.verified, message
        assert "no feasible point is known" in message
    # infeasible by 5e-14 with every column stuck at its bound: still infeasible, the claim stands;
    # with x1 free (it can decrease) the same miss is rounding for a row of size 1: refuted
    data = _lp(c, G, [-5e-14], lb)
    assert judge_claim(data, Status.INFEASIBLE, None, TOL)[0] is Status.INFEASIBLE
    data = _lp(c, G, [-5e-14], [-np.inf] + lb[1:])
    assert judge_claim(data, Status.INFEASIBLE, None, TOL)[0] is Status.NUMERICAL_ERROR


def near_parallel(e: float, bound: float = np.inf, h0: float = -1.0) -> ProblemData:
    """``x1 + x2 <= h0`` and ``-x1 - (1 - e) x2 <= 0`` (``x`` free, or ``|x2| <= bound``; ``h0 < 0``):
    their sum is ``e x2 <= h0``, so the problem is feasible, but only with ``x2 <= h0/e``. The
    certificate ``z = (1, 1)`` leaves the reduced cost ``e`` on the free ``x2``: it proves only
    that no point has ``|x2| < |h0|/e``."""
    G = sp.csr_matrix([[1.0, 1.0], [-1.0, -(1.0 - e)]])
    return ProblemData(c=np.zeros(2), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=G, h=np.array([h0, 0.0]), l=2,
                       lb=np.array([-np.inf, -bound]), ub=np.array([np.inf, bound]))


@pytest.mark.parametrize("e", [1e-9, 1e-7])
def test_a_local_farkas_proof_is_not_a_verification(e):
    """The unexcused reduced cost ``e`` is within ``10 tol`` of the terms and the radius ``1/e``
    beyond ``1 / (10 tol)``: the certificate was "verified" although the problem is feasible
    (at ``e = 1e-7`` ECOS claims it infeasible, HiGHS and SciPy's linprog find a point). It proves
    no point within the radius, which the message says; the claim is not verified."""
    data = near_parallel(e)
    ok, why = check_infeasibility(data, np.zeros(0), np.ones(2), TOL)
    assert not ok and f"a local proof only, no feasible point with |x_k| < {1 / e:.3g} on the 1 column" in why
    status, message, check = judge_claim(data, Status.INFEASIBLE, {"y": np.zeros(0), "z": np.ones(2)}, TOL)
    assert status is Status.INFEASIBLE and not check.verified and not check.refuted
    assert "not verified by fsframe" in message and "beyond that radius it proves nothing" in message
    if e == 1e-7:
        from scipy.optimize import linprog

        ref = linprog(np.zeros(2), A_ub=data.G.toarray(), b_ub=data.h, bounds=[(None, None)] * 2, method="highs")
        assert ref.status == 0 and ref.x[1] <= -1 / e * (1 - 1e-6)  # feasible, beyond the radius
        assert np.all(data.G @ ref.x - data.h <= 1e-6)
        res = EcosBackend().solve(data)
        assert res.status is Status.INFEASIBLE and not res.claim.verified, res.message
        assert "a local proof only" in res.message
        assert HighsBackend().solve(data).status is Status.OPTIMAL


def test_a_reduced_cost_at_rounding_must_still_leave_no_room_near_zero():
    """``z = (1, 1)`` on ``x1 + x2 <= -1e-12``, ``-x1 - (1 - 1e-15) x2 <= 0`` leaves the reduced
    cost ``1.1e-15`` on ``x2``, below the rounding of its sum (``4 eps`` of 2), so it counted as
    zero and the proof as global: but the margin is ``1e-12``, the radius ``1e3``, and
    ``x = (2048 - 1.6e-12, -2048)`` is feasible in exact arithmetic. Written times ``1e12``, ECOS
    claims the problem infeasible and that claim was verified; HiGHS solves the rows unscaled. A radius
    short of ``1 / (10 tol)`` is a local proof whatever the reduced costs' size (with the margin 1,
    ``h0 = -1``, the radius is ``9e14``: see the next test)."""
    from fractions import Fraction

    data = near_parallel(1e-15, h0=-1e-12)
    ok, why = check_infeasibility(data, np.zeros(0), np.ones(2), TOL)
    assert not ok and "a local proof only, no feasible point with |x_k| < 1e+03 on the 1 column" in why, why
    x = [Fraction(v) for v in (2047.9999999999984, -2048.0)]
    G = [[Fraction(v) for v in row] for row in data.G.toarray()]
    assert all(sum(g * v for g, v in zip(row, x)) <= Fraction(h) for row, h in zip(G, data.h))  # exactly feasible
    scaled = data.evolve(G=data.G * 1e12, h=np.array([-1.0, 0.0]))
    res = EcosBackend().solve(scaled)
    assert res.status is not Status.OPTIMAL and res.claim is not None and not res.claim.verified, res.message
    assert HighsBackend().solve(data).status is Status.OPTIMAL  # the rows as first written


@pytest.mark.parametrize("backend", [HighsBackend, EcosBackend, ClarabelBackend])
def test_a_radius_short_of_the_datas_scale_is_a_local_proof(backend):
    """``near_parallel(1e-15)`` (margin 1) is feasible at ``x = (2^50 - 1, -2^50)``, exactly and by
    the feasibility check; ``z = (1, 1)`` leaves the reduced cost ``1.1e-15`` on ``x2``, at rounding,
    and a radius of ``9e14``. A fixed reach of ``1 / (10 tol)`` took that for a global proof and every
    backend's claim was "verified infeasible"; the reach sized to the data (``d / (eps sum c_k)``,
    ``2.3e15`` here) leaves it local: infeasible for ``|x_k| < 1e15`` only, the claim not verified."""
    data = near_parallel(1e-15)
    x = np.array([2.0 ** 50 - 1, -2.0 ** 50])
    assert relative_violation(data, x) == 0.0 and np.all(data.G @ x <= data.h)  # feasible beyond the radius
    ok, why = check_infeasibility(data, np.zeros(0), np.ones(2), TOL)
    assert not ok and "a local proof only, no feasible point with |x_k| < 1e+15" in why, why
    res = backend().solve(data)  # each backend claims it infeasible (the claim stands, unverified)
    assert res.status is Status.INFEASIBLE and not res.claim.verified and not res.claim.refuted, res.message
    assert "a local proof only" in res.message and "beyond that radius it proves nothing" in res.message
    # the same rows with 1 - 1e-15 rounded to 1 (1 - 1e-17) are infeasible: z = (1, 1) proves it for every x
    ok, why = check_infeasibility(near_parallel(1e-17), np.zeros(0), np.ones(2), TOL)
    assert ok and "unexcused reduced costs 0.00e+00" in why, why


@pytest.mark.parametrize("seed", [49, 56])
def test_the_corrections_keep_a_cancelled_reduced_cost_at_zero(seed):
    """ECOS's certificates of two of the random infeasible rows (margin 1): a correction cancels
    the unexcused reduced costs, but moves an excused one at rounding across zero, unexcused; the
    next correction cancels that and brings back the first ones (seed 49: column 3, then 5, then
    3 ...). Three rounds left both local (radius 3e11, 1e11), the true claims unverified. Each
    round now also cancels the reduced costs of the columns unexcused in an earlier round: the
    claims are verified within three rounds."""
    import re

    from scipy.optimize import linprog

    data, bounds = _contradicted_rows(seed, 1.0)
    assert linprog(np.zeros(data.n), A_ub=data.G.toarray(), b_ub=data.h, bounds=bounds, method="highs").status == 2
    res = EcosBackend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim.verified, res.message
    rounds = re.search(r"after (\d+) least-norm correction", res.message)
    assert rounds is not None and int(rounds.group(1)) <= 3, res.message


def test_finite_bounds_make_the_proof_global():
    """With ``|x2| <= 1e3`` the reduced cost ``1e-7`` on ``x2`` is excused by its bound: the box
    gives ``r'x >= -1e-4``, the margin ``1 - 1e-4`` (``5e-4`` of its terms, ``|h|'z + 2e3``), and
    the proof holds for every ``x`` the bounds allow."""
    data = near_parallel(1e-7, bound=1e3)
    ok, why = check_infeasibility(data, np.zeros(0), np.ones(2), TOL)
    assert ok and why.startswith("Farkas margin 5.00e-04 (relative), unexcused reduced costs 0.00e+00"), why
    from scipy.optimize import linprog

    ref = linprog(np.zeros(2), A_ub=data.G.toarray(), b_ub=data.h, bounds=[(None, None), (-1e3, 1e3)], method="highs")
    assert ref.status == 2  # infeasible


@pytest.mark.parametrize("noise", [1e-8, 1e-11])
def test_a_certificate_off_by_its_solvers_tolerance_is_corrected(noise):
    """``x >= 1`` and ``x <= 0`` (x free) with ``z = (1, 1 + noise)``, as an interior-point solver
    returns it: the reduced cost ``noise`` on the free ``x`` is above rounding, so the proof alone
    is local; its least-norm correction cancels it and proves infeasibility for every ``x``."""
    data = StandardProblems.infeasible_lp().data
    ok, why = check_infeasibility(data, np.zeros(0), np.array([1.0, 1.0 + noise]), TOL)
    assert ok and "after 1 least-norm correction of the certificate" in why and "unexcused reduced costs 0.00e+00" in why
    # a certificate far from one (the reduced cost 1e-2 of its terms) is not corrected into one
    ok, why = check_infeasibility(data, np.zeros(0), np.array([1.0, 1.02]), TOL)
    assert not ok and "correction" not in why and "a local proof only" in why


def _contradicted_rows(seed: int, margin: float) -> tuple[ProblemData, list]:
    """Random rows ``G x <= h`` (columns scaled over 1e-4..1e4, half of them free, the others
    bounded below) feasible at a point ``x0``, plus the negated sum of two of them (weights in
    ``[0.5, 2]``) tightened by ``margin`` of its right-hand side's terms: infeasible. Returns the
    problem and SciPy's bounds for it."""
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(4, 15)), int(rng.integers(3, 12))
    G = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-4, 4, n)
    x0 = rng.standard_normal(n) / 10.0 ** rng.uniform(-4, 4, n)
    h = G @ x0 + rng.uniform(0, 1, m)
    k, w = rng.choice(m, 2, replace=False), rng.uniform(0.5, 2, 2)
    row = -(w[0] * G[k[0]] + w[1] * G[k[1]])
    h_row = -(w[0] * h[k[0]] + w[1] * h[k[1]]) - margin * (abs(w[0] * h[k[0]]) + abs(w[1] * h[k[1]]))
    free = rng.random(n) < 0.5
    lb = np.where(free, -np.inf, np.minimum(x0, 0) - 1.0 / 10.0 ** rng.uniform(-4, 4, n))
    data = ProblemData(c=rng.standard_normal(n), A=sp.csr_matrix((0, n)), b=np.zeros(0),
                       G=sp.csr_matrix(np.vstack([G, row])), h=np.append(h, h_row), l=m + 1, lb=lb,
                       ub=np.full(n, np.inf))
    return data, [(None if f else lo, None) for f, lo in zip(free, lb)]


def test_the_correction_is_relative_to_each_column_and_multiplier():
    """ECOS's certificate of a problem infeasible by 1e-3 (columns 1e-4..1e4, 3 free) leaves
    reduced costs of 1.4e-9 on the free columns. The plain least-norm correction left the small
    columns above their rounding (a local proof, radius 6.8e7, the true claim unverified); the
    correction relative to each multiplier and each column's terms proves it."""
    from scipy.optimize import linprog

    data, bounds = _contradicted_rows(5, 1e-3)
    assert linprog(np.zeros(data.n), A_ub=data.G.toarray(), b_ub=data.h, bounds=bounds, method="highs").status == 2
    res = EcosBackend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim.verified, res.message
    assert "least-norm correction" in res.message and "(they were 1.37e-09)" in res.message


@pytest.mark.parametrize("k", [52, 51])
@pytest.mark.parametrize("backend", [HighsBackend, EcosBackend, ClarabelBackend])
def test_a_verified_claim_states_the_radius_it_proves(backend, k):
    """``near_parallel(2^-k)`` is feasible at ``x = (2^(k+1) - 1, -2^(k+1))``, exactly; the reduced
    cost ``2^-k`` is at rounding and every backend's claim passes the check, but no fixed threshold
    separates it from a global proof. In exact arithmetic the certificate proves infeasibility for
    ``|x|_inf < R`` only: the claim is never called global and its ``R`` is below the feasible
    point's norm."""
    from fractions import Fraction

    data = near_parallel(2.0 ** -k)
    x = np.array([2.0 ** (k + 1) - 1, -2.0 ** (k + 1)])
    G = [[Fraction(v) for v in row] for row in data.G.toarray()]
    assert all(sum(g * Fraction(v) for g, v in zip(row, x)) <= Fraction(h) for row, h in zip(G, data.h))
    res = backend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim is not None
    if res.claim.verified:
        assert res.claim.radius < np.abs(x).max(), res.claim
        assert f"for every x with |x|_inf < {res.claim.radius:.6g} (not globally)" in res.message
    else:
        assert res.claim.radius == np.inf and "not verified by fsframe" in res.message


def test_the_exact_radius_is_the_hand_computed_one():
    """``z = (1, 1)`` on ``x1 + x2 <= -3``, ``-x1 - (1 - 2^-40) x2 <= 0``: ``r = (0, 2^-40)``, the
    margin ``d = 3``, so ``R = 3 * 2^40`` exactly; ``z = (1, 1/2)`` leaves both columns unexcused
    (``R = 3 / (1 + 2^-41)``); a margin that is not positive proves nothing (``R = 0``); with
    ``|x2| <= 2^40`` the reduced cost is excused (``d = 3 - 1``) and the proof global (``R = inf``)."""
    from fractions import Fraction

    from fsframe.backends.claims import farkas_radius

    assert farkas_radius(near_parallel(2.0 ** -40, h0=-3.0), np.zeros(0), np.ones(2)) == 3 * 2.0 ** 40
    # z = (1, 1/2): r = (1/2, 1/2 + 2^-41), both unexcused, d = 3: R = 3 / (1 + 2^-41), rounded down
    R = farkas_radius(near_parallel(2.0 ** -40, h0=-3.0), np.zeros(0), np.array([1.0, 0.5]))
    exact = Fraction(3) / (1 + Fraction(1, 2 ** 41))
    assert Fraction(R) <= exact and R == pytest.approx(float(exact), rel=1e-15)
    assert farkas_radius(near_parallel(2.0 ** -40, h0=-3.0), np.zeros(0), np.array([0.0, 1.0])) == 0.0  # d = 0
    assert farkas_radius(near_parallel(2.0 ** -40, bound=2.0 ** 40, h0=-3.0), np.zeros(0), np.ones(2)) == np.inf
    ok, why, R = check_infeasibility(near_parallel(2.0 ** -40, h0=-3.0), np.zeros(0), np.ones(2), TOL,
                                     with_radius=True)
    assert not ok and R == 0.0  # 3 * 2^40 is short of the reach: not verified, no radius claimed


@pytest.mark.parametrize("backend", [HighsBackend, EcosBackend, ClarabelBackend])
def test_a_true_infeasibility_with_margin_stays_global(backend):
    """``x1 + x2 <= -1``, ``-x1 - x2 <= 0`` (``near_parallel(0)``): the certificate ``z = (1, 1)``
    cancels exactly and every backend's claim is verified globally (``R = inf``)."""
    data = near_parallel(0.0)
    ok, why, R = check_infeasibility(data, np.zeros(0), np.ones(2), TOL, with_radius=True)
    assert ok and R == np.inf and "|x|_inf <" not in why
    res = backend().solve(data)
    assert res.status is Status.INFEASIBLE and res.claim.verified, res.message
    assert res.claim.radius == np.inf and "not globally" not in res.message
