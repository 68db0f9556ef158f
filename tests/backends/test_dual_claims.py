"""A claim reached through HiGHS's dual forms of a QP with a diagonal Hessian
(:class:`fsframe.backends.diag_qp.DualQPSession`) carries its evidence: an unbounded dual gives the
primal's Farkas certificate (its direction of descent), an infeasible dual a direction of unbounded
descent of the primal (its Farkas certificate, mapped as the point is), and fsframe's certificate
verifies them on the primal. The instances use every kind of column the dual distinguishes: a
quadratic free one, linear ones bounded below, above or free, and a fixed one."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.diag_qp import dual_applies

INF = np.inf


def _qp(c, G, h, fixed_at: float, A=((0.0, 0.0, 0.0, 1.0, -1.0),)) -> ProblemData:
    """Columns: ``x0`` quadratic (``1/2 x0^2``) and free, ``x1 >= 0``, ``x2 <= 0``, ``x3`` free,
    ``x4`` fixed at ``fixed_at``; the equality row ``x3 = x4``."""
    return ProblemData(c=np.asarray(c, dtype=float), P=sp.diags([1.0, 0.0, 0.0, 0.0, 0.0]).tocsc(),
                       A=sp.csr_matrix(np.asarray(A, dtype=float)), b=np.zeros(len(A)),
                       G=sp.csr_matrix(np.asarray(G, dtype=float)), h=np.asarray(h, dtype=float), l=len(h),
                       lb=np.array([-INF, 0.0, -INF, -INF, fixed_at]), ub=np.array([INF, INF, 0.0, INF, fixed_at]))


def infeasible() -> ProblemData:
    """``x0 + x1 + x3 <= 1`` with ``x3 = x4 = 2`` and ``x1 >= 0`` gives ``x0 <= -1``;
    ``-x0 - x2 <= -0.5`` with ``x2 <= 0`` gives ``x0 >= 0.5``: infeasible (the certificate
    uses both bounds, the equality row and the fixed column's value)."""
    return _qp([0.0, 1.0, -1.0, 0.0, 0.0], [[1.0, 1.0, 0.0, 1.0, 0.0], [-1.0, 0.0, -1.0, 0.0, 0.0]],
               [1.0, -0.5], fixed_at=2.0)


def unbounded() -> ProblemData:
    """``min 1/2 x0^2 + x0 + 0.5 x1 + x2 - x3`` with ``x0 - x1 - x2 <= 1``, ``-x2 <= 5`` and
    ``x3 = x1 + x4``, ``x4 = 0``: unbounded along ``e1 + e3`` (the zero model is feasible)."""
    return _qp([1.0, 0.5, 1.0, -1.0, 0.0], [[1.0, -1.0, -1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.0, 0.0]],
               [1.0, 5.0], fixed_at=0.0, A=((0.0, -1.0, 0.0, 1.0, -1.0),))


def _cvxpy_status(data: ProblemData) -> str:
    import cvxpy as cp

    x = cp.Variable(data.n)
    cons = [data.A.toarray() @ x == data.b, data.G.toarray() @ x <= data.h]
    cons += [x[j] >= data.lb[j] for j in range(data.n) if np.isfinite(data.lb[j])]
    cons += [x[j] <= data.ub[j] for j in range(data.n) if np.isfinite(data.ub[j])]
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(x[:1]) + data.c @ x), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.status


@pytest.mark.parametrize("form, says", [("auto", "dense dual QP: unbounded"),  # the default: the dense form
                                        ("dual", "dual QP point infeasible")])  # HiGHS stops on the unbounded dual
def test_an_infeasibility_claim_through_the_dual_is_verified(form, says):
    data = infeasible()
    assert dual_applies(data) is None and _cvxpy_status(data) == "infeasible"
    res = HighsBackend().solve(data, SolveOptions(backend_options={"qp_form": form}))
    assert res.status is Status.INFEASIBLE and res.claim.verified, res.message
    assert res.message.startswith(says) and "the dual's ray" in res.message and "verified by fsframe: Farkas certificate" in res.message
    assert "scaled" not in res.message  # decided by the dual form, not by the forms after it
    for backend in (EcosBackend, ClarabelBackend, HighsBackend):  # HiGHS: the primal as given
        other = backend().solve(data, SolveOptions(backend_options={"qp_form": "primal"}
                                                   if backend is HighsBackend else {}))
        assert other.status is Status.INFEASIBLE and other.claim.verified, (backend.name, other.message)


@pytest.mark.parametrize("form", ["auto", "dual"])
def test_an_unboundedness_claim_through_the_dual_is_verified(form):
    """The dual is infeasible (``x1``'s sign row ``K_1'lam <= -1`` and the others cannot hold
    together): HiGHS's dual says so (the default goes there too: the dense form does not apply),
    and the dual's Farkas certificate, mapped to the primal, is the direction ``e1``. No other
    backend verifies this claim (ECOS fails numerically, Clarabel's direction moves ``x0``): CVXPY's
    status is the independent reading."""
    data = unbounded()
    assert dual_applies(data) is None and _cvxpy_status(data) == "unbounded"
    res = HighsBackend().solve(data, SolveOptions(backend_options={"qp_form": form}))
    assert res.status is Status.UNBOUNDED and res.claim.verified, res.message
    assert "dual QP: Infeasible; verified by fsframe" in res.message
    assert "descent c'dx -0.5 (3.33e-01 of its terms)" in res.message


def test_the_evidence_maps_to_the_primal():
    """The rays themselves, checked by hand: the Farkas certificate's reduced costs ``K'(y, z)``
    vanish on the quadratic and free columns and have the sign their bound excuses; the direction
    is ``e1 + e3`` scaled (the only descent the rows allow: ``x2`` is held by ``-x2 <= 5``)."""
    from fsframe.backends.highs import HighsSession

    data = infeasible()
    session = HighsBackend().open(data, SolveOptions(backend_options={"qp_form": "dual"}))
    assert session.__class__.__name__ == "DualQPSession" and session.make_inner is HighsSession
    ray = session._dual_ray(data)
    y, z = ray["y"], ray["z"]
    assert np.all(z >= 0) and z.max() > 0
    r = data.A.T @ y + data.G.T @ z
    assert abs(r[0]) <= 1e-12 and abs(r[3]) <= 1e-12 and r[1] >= 0 and r[2] <= 0
    margin = r[1] * 0.0 + r[2] * 0.0 + r[4] * 2.0 - data.b @ y - data.h @ z
    assert margin > 0.1
    session.close()
    data = unbounded()
    session = HighsBackend().open(data, SolveOptions(backend_options={"qp_form": "dual"}))
    dx = session._primal_ray(data)["dx"]
    session.close()
    np.testing.assert_allclose(dx / np.abs(dx).max(), [0.0, 1.0, 0.0, 1.0, 0.0], atol=1e-12)


@pytest.mark.parametrize("form", ["auto", "dual"])
def test_descent_along_an_upper_bounded_column_is_verified(form):
    """``min x0^2 / 2 + x1 + x2`` with ``x2 <= 0`` (an upper-bounded linear column), ``x0 + x1 <= 1``,
    ``x0 <= 5``, ``x1 >= 0``: unbounded along ``-e2``. The dual's certificate maps to ``dx`` with the
    upper-bounded column's entry negated (``dx[R_ub] = -z``); with the sign flipped the direction
    would climb and the claim stay unverified. CVXPY's status is the independent reading."""
    data = ProblemData(c=np.array([0.0, 1.0, 1.0]), P=sp.diags([1.0, 0.0, 0.0]).tocsc(), A=sp.csr_matrix((0, 3)),
                       b=np.zeros(0), G=sp.csr_matrix([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), h=np.array([1.0, 5.0]),
                       l=2, lb=np.array([-np.inf, 0.0, -np.inf]), ub=np.array([np.inf, np.inf, 0.0]))
    assert _cvxpy_status(data) == "unbounded"
    res = HighsBackend().solve(data, SolveOptions(backend_options={"qp_form": form}))
    assert res.status is Status.UNBOUNDED and res.claim.verified, res.message
    assert "descent c'dx -1" in res.message
