"""The certificate's primal residual measures each row against its own size
(:func:`fsframe.backends.certificate.relative_violation`), not every row against the largest one:
on a problem whose columns and rows span 1e-4 to 1e4, a violation that is 1 % of a small row is
caught, and every backend's correct answer passes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.certificate import certify, judge_certificate

TOL = SolveOptions().cert_tol


def mixed_scales() -> ProblemData:
    """``min -(1.5 x1 + 3 x2 + x3)`` over ``x >= 0`` with

    * the small row ``1e-4 x0 + 1e-4 x1 <= 1e-4`` (column scale 1e-4: ``x0 + x1 <= 1``),
    * the large row ``1e4 x2 + 1e4 x3 <= 2e4`` (column scale 1e4: ``x2 + x3 <= 2``),
    * ``x1 + x2 <= 1.5``.

    ``x0`` costs nothing: any ``x0`` in ``[0, 1 - x1]`` is optimal, so moving it past the small row
    changes neither the objective nor the dual value, and only the primal residual can see it.
    The optimum is ``-5`` at ``x1 = 0, x2 = 1.5, x3 = 0.5``.
    """
    G = sp.csr_matrix([[1e-4, 1e-4, 0.0, 0.0],
                       [0.0, 0.0, 1e4, 1e4],
                       [0.0, 1.0, 1.0, 0.0]])
    return ProblemData(c=np.array([0.0, -1.5, -3.0, -1.0]), A=sp.csr_matrix((0, 4)), b=np.zeros(0), G=G,
                       h=np.array([1e-4, 2e4, 1.5]), l=3, lb=np.zeros(4), ub=np.full(4, np.inf))


def _linprog(data: ProblemData):
    from scipy.optimize import linprog

    res = linprog(data.c, A_ub=data.G.toarray(), b_ub=data.h, bounds=[(0, None)] * data.n, method="highs-ipm")
    assert res.status == 0
    return res


@pytest.mark.parametrize("backend", [HighsBackend, EcosBackend, ClarabelBackend])
def test_a_correct_answer_passes_and_a_violation_of_the_small_row_is_caught(backend):
    data = mixed_scales()
    ref = _linprog(data)
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL, res.message
    assert res.objective == pytest.approx(ref.fun, rel=1e-7) and ref.fun == pytest.approx(-5.0, rel=1e-9)
    np.testing.assert_allclose(res.x[1:], ref.x[1:], atol=1e-6)
    y, z = res.duals["y"], res.duals["z"]
    cert = certify(data, res.x, y, z)
    assert cert.ok(TOL) and cert.primal_residual <= 10 * TOL
    # the small row violated by 1 % of its size (1e-6): the objective and the dual value are the
    # same, the row's own size (1e-4) shows the violation; one scale for all rows (the large row's
    # 2e4) made it 5e-11 and certified the point
    bad = res.x.copy()
    bad[0] = 1.01 - bad[1]
    assert data.max_violation(bad) == pytest.approx(1e-6, rel=1e-3)
    planted = certify(data, bad, y, z)
    assert planted.primal_residual == pytest.approx(1e-2, rel=2e-2)
    assert abs(planted.gap - cert.gap) <= 1e-9 and planted.dual_residual == cert.dual_residual
    status, message = judge_certificate(planted, TOL)
    assert status is Status.UNKNOWN and "primal residual 9.9" in message


def test_rounding_of_the_large_row_passes():
    """The large row missed by a relative 1e-9 (an absolute 2e-5, beyond ``10 * tol`` as an absolute
    measure): against its own size (2e4) rounding, and the small row's size does not tighten it."""
    data = mixed_scales()
    x = np.array([0.5, 0.0, 1.5, 0.5 * (1 + 4e-9)])
    assert data.max_violation(x) == pytest.approx(2e-5, rel=1e-3)
    z = np.array([0.0, 1e-4, 2.0])  # the optimum's multipliers: r = (0, 0, 0, 0) + bounds
    cert = certify(data, x, np.zeros(0), z)
    assert cert.primal_residual == pytest.approx(1e-9, rel=1e-3) and cert.ok(TOL)


@pytest.mark.parametrize("coef", [1.0, 1e4, 1e6])
def test_a_large_coefficient_on_a_column_at_zero_does_not_hide_the_rows_other_terms(coef):
    """``min -x2`` with ``coef x0 + x1 <= 1``, ``x2 <= 1``, ``x >= 0``: at ``x0 = 0`` the row's size
    is not ``coef`` (a unit move of ``x0``), so ``x1 = 1.01`` (1 %) and ``x1 = 2`` (100 %) are
    refused; with the row's largest coefficient uncapped, ``coef = 1e6`` certified both."""
    G = sp.csr_matrix([[coef, 1.0, 0.0], [0.0, 0.0, 1.0]])
    data = ProblemData(c=np.array([0.0, 0.0, -1.0]), A=sp.csr_matrix((0, 3)), b=np.zeros(0), G=G,
                       h=np.array([1.0, 1.0]), l=2, lb=np.zeros(3), ub=np.full(3, np.inf))
    z = np.array([0.0, 1.0])
    assert judge_certificate(certify(data, np.array([0.0, 1.0, 1.0]), np.zeros(0), z), TOL)[0] is Status.OPTIMAL
    for x1, residual in ((1.01, 0.01 / 1.01), (2.0, 0.5)):
        cert = certify(data, np.array([0.0, x1, 1.0]), np.zeros(0), z)
        assert cert.primal_residual == pytest.approx(residual, rel=1e-9)
        assert judge_certificate(cert, TOL)[0] is Status.UNKNOWN
    # x0 a hair above its bound moves the row by at most coef * 1e-10, not by coef
    cert = certify(data, np.array([1e-10, 1.5, 1.0]), np.zeros(0), z)
    assert cert.primal_residual > 0.3 and judge_certificate(cert, TOL)[0] is Status.UNKNOWN


@pytest.mark.parametrize("coef", [1e6, 1e8])
def test_a_column_at_the_bound_it_would_cross_does_not_make_the_zero_model_feasible(coef):
    """``coef x0 + x1 <= -1e-7`` with ``x >= 0`` is infeasible; the zero model misses it by 1e-7,
    which the row's largest coefficient made "rounding" (1e-13 of 1e6), so a true infeasibility
    claim would have been refuted. ``x0`` cannot decrease below 0: only ``|rhs|`` sizes the row."""
    from fsframe.backends.claims import feasible_point

    data = ProblemData(c=np.array([0.0, -1.0]), A=sp.csr_matrix((0, 2)), b=np.zeros(0),
                       G=sp.csr_matrix([[coef, 1.0]]), h=np.array([-1e-7]), l=1, lb=np.zeros(2),
                       ub=np.full(2, np.inf))
    x, violation = feasible_point(data)
    assert x is None and violation == pytest.approx(1.0)
    free = ProblemData(c=data.c, A=data.A, b=data.b, G=data.G, h=data.h, l=1, lb=np.array([-np.inf, 0.0]),
                       ub=data.ub)  # x0 free: a move of 1e-7 / coef fixes the row, rounding
    assert feasible_point(free)[0] is not None


def _with_empty_rows(h_empty: float, b_empty: float | None = None) -> ProblemData:
    """``min x0 + 2 x1`` over ``x >= 0`` with ``x0 + x1 >= 1`` and a row without entries,
    ``0 <= h_empty`` (and, with ``b_empty``, the equality ``0 = b_empty``). The optimum is
    ``x = (1, 0)``, objective 1."""
    G = sp.csr_matrix(np.array([[-1.0, -1.0], [0.0, 0.0]]))
    A, b = (sp.csr_matrix((0, 2)), np.zeros(0)) if b_empty is None else (sp.csr_matrix((1, 2)), np.array([b_empty]))
    return ProblemData(c=np.array([1.0, 2.0]), A=A, b=b, G=G, h=np.array([-1.0, h_empty]), l=2, lb=np.zeros(2),
                       ub=np.full(2, np.inf))


@pytest.mark.parametrize("backend, b_empty", [(HighsBackend, None), (EcosBackend, None), (ClarabelBackend, None),
                                              (HighsBackend, 1e-13), (ClarabelBackend, -1e-13)])
def test_an_empty_row_within_rounding_of_feasible_does_not_make_the_answer_unknown(backend, b_empty):
    """A row without entries and a right-hand side of ``-1e-13`` (rounding left in a constant row)
    was sized by ``GAP_FLOOR`` (1e-12): a violation of 10 %, so every backend's optimum was judged
    ``UNKNOWN``. It is sized like a bound, by ``max(1, |rhs|)``; ``0 <= -1`` stays a violation of 1.
    (ECOS rejects an equality row without entries: not asked with ``b_empty``.)"""
    data = _with_empty_rows(-1e-13, b_empty)
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-7)
    assert res.objective == pytest.approx(1.0, rel=1e-7)
    cert = certify(data, np.array([1.0, 0.0]), np.zeros(data.A.shape[0]), np.array([1.0, 0.0]))
    assert cert.primal_residual == pytest.approx(1e-13, rel=1e-9) and cert.ok(TOL)
    bad = certify(_with_empty_rows(-1.0, b_empty), np.array([1.0, 0.0]), np.zeros(data.A.shape[0]),
                  np.array([1.0, 0.0]))
    assert bad.primal_residual == pytest.approx(1.0) and judge_certificate(bad, TOL)[0] is Status.UNKNOWN
    big = certify(_with_empty_rows(-1e6, b_empty), np.array([1.0, 0.0]), np.zeros(data.A.shape[0]),
                  np.array([1.0, 0.0]))
    assert big.primal_residual == pytest.approx(1.0)  # against |rhs|: 0 <= -1e6 is missed by all of it


@pytest.mark.parametrize("h_empty, b_empty, y, z", [(-1e-13, None, [], [0.0, 1.0]), (-1e-9, None, [], [0.0, 1.0]),
                                                    (-1e-7, None, [], [0.0, 1.0]), (0.0, 1e-9, [-1.0], [0.0, 0.0])])
def test_an_empty_row_is_sized_alike_for_a_point_and_for_a_farkas_margin(h_empty, b_empty, y, z):
    """``0 <= -1e-13`` (or ``0 = 1e-9``) is rounding when a point is judged (sized ``max(1, |rhs|)``:
    the optimum is certified ``OPTIMAL``), but the Farkas margin sized it by ``|h_i| z_i`` alone,
    so ``z`` on that row alone (margin ``1e-13`` of terms ``1e-13``) verified the same problem
    infeasible, for ``h = -1e-13, -1e-9, -1e-7``. The margin sizes it as the point does: one
    problem is never both; ``0 <= -1`` is still proved infeasible, and its point refused."""
    from fsframe.backends.claims import check_infeasibility

    data = _with_empty_rows(h_empty, b_empty)
    y, z = np.array(y), np.array(z)
    cert = certify(data, np.array([1.0, 0.0]), np.zeros(data.A.shape[0]), np.array([1.0, 0.0]))
    assert judge_certificate(cert, TOL)[0] is Status.OPTIMAL
    ok, why = check_infeasibility(data, y, z, TOL)
    assert not ok and why.endswith("the margin is not positive beyond rounding"), why
    if b_empty is None:
        res = HighsBackend().solve(data)
        assert res.status is Status.OPTIMAL and res.objective == pytest.approx(1.0, rel=1e-7), res.message
    # the other side: a miss of 1 in the same row proves infeasibility, and no point is certified
    far = _with_empty_rows(-1.0 if b_empty is None else 0.0, None if b_empty is None else 1.0)
    ok, why = check_infeasibility(far, y, z, TOL)
    assert ok and why.startswith("Farkas margin 1.00e+00"), why
    cert = certify(far, np.array([1.0, 0.0]), np.zeros(far.A.shape[0]), np.array([1.0, 0.0]))
    assert judge_certificate(cert, TOL)[0] is Status.UNKNOWN


def test_no_problem_with_an_empty_row_is_both_certified_feasible_and_verified_infeasible():
    """Over ``0 <= h`` for ``h`` from ``-1e-14`` to ``-1``: the point ``(1, 0)`` certified and the
    certificate ``z = (0, 1)`` verified never both, and one of them always (they meet at ``10 tol``)."""
    from fsframe.backends.claims import check_infeasibility

    for h in -np.logspace(-14, 0, 57):
        data = _with_empty_rows(float(h))
        feasible = certify(data, np.array([1.0, 0.0]), np.zeros(0), np.array([1.0, 0.0])).ok(TOL)
        infeasible = check_infeasibility(data, np.zeros(0), np.array([0.0, 1.0]), TOL)[0]
        assert feasible != infeasible, (h, feasible, infeasible)
