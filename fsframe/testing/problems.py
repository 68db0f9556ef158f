"""Tiny problems solvable by hand, reused per backend (CVXPY's ``StandardTestLPs`` idea):
:class:`StandardProblem` (a problem, its derived answer and how to check a result against it)
and the collection :class:`StandardProblems`."""

from __future__ import annotations

import math

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..backends.base import Backend, SolveResult
from ..canonical import ProblemData
from ..enums import ProblemClass, Status
from ._util import fail as _fail
from .data import toy_data

__all__ = ["StandardProblem", "StandardProblems"]


def _problem(c, *, A=None, b=None, G=None, h=None, lb=None, ub=None, P=None, offset=0.0, cones=()) -> ProblemData:
    c = np.asarray(c, dtype=float)
    n = c.size
    A = sp.csr_matrix((0, n)) if A is None else sp.csr_matrix(np.asarray(A, dtype=float))
    G = sp.csr_matrix((0, n)) if G is None else sp.csr_matrix(np.asarray(G, dtype=float))
    return ProblemData(
        c=c, A=A, b=np.zeros(0) if b is None else np.asarray(b, dtype=float),
        G=G, h=np.zeros(0) if h is None else np.asarray(h, dtype=float),
        lb=np.full(n, -np.inf) if lb is None else np.asarray(lb, dtype=float),
        ub=np.full(n, np.inf) if ub is None else np.asarray(ub, dtype=float),
        l=G.shape[0] - int(sum(cones)), cones=tuple(cones),
        P=None if P is None else sp.csc_matrix(np.asarray(P, dtype=float)), offset=float(offset))


@attrs.frozen(eq=False)
class StandardProblem:
    """A small problem with a hand-derived answer.

    ``statuses`` are the acceptable statuses (the first is the exact one); ``objective`` and ``x``
    the optimum (``nan`` entries of ``x`` are not unique and not compared); ``coef`` are the
    columns holding the model coefficients ``w`` and ``support`` the expected non-zeros of
    ``w``. ``derivation`` says how the answer was obtained.
    """

    name: str
    data: ProblemData
    statuses: tuple
    objective: float | None = None
    x: NDArray | None = None
    coef: tuple = ()
    support: tuple | None = None
    derivation: str = ""

    @property
    def problem_class(self) -> ProblemClass:
        return self.data.problem_class

    def check(self, result: SolveResult, *, who: str = "", rtol: float = 1e-6, atol: float = 1e-6) -> None:
        """Raise :class:`AssertionError` unless ``result`` is this problem's answer."""
        who = f"{who or result.backend} on {self.name}"
        if result.status not in self.statuses:
            _fail(who, f"status {result.status.value}, expected {[s.value for s in self.statuses]} ({result.message})")
        if self.objective is None:
            if result.ok:
                _fail(who, f"status {result.status.value} on a problem without a solution")
            return
        if result.x is None or result.objective is None:
            _fail(who, "an optimal result without x or objective")
        if not math.isclose(result.objective, self.objective, rel_tol=rtol, abs_tol=atol):
            _fail(who, f"objective {result.objective!r}, expected {self.objective!r} ({self.derivation})")
        x = np.asarray(result.x, dtype=float)
        viol = self.data.max_violation(x)
        if viol > 1e2 * atol:
            _fail(who, f"solution violates a constraint or bound by {viol:.3g}")
        if not math.isclose(self.data.objective(x), result.objective, rel_tol=rtol, abs_tol=atol):
            _fail(who, f"reported objective {result.objective!r} is not the objective at x, {self.data.objective(x)!r}")
        if self.x is not None:
            known = ~np.isnan(self.x)
            if not np.allclose(x[known], self.x[known], rtol=1e3 * rtol, atol=1e3 * atol):
                _fail(who, f"x = {np.round(x, 6).tolist()}, expected {self.x.tolist()}")
        if self.support is not None:
            w = x[list(self.coef)]
            got = tuple(np.flatnonzero(np.abs(w) > 1e-4 * max(1.0, float(np.max(np.abs(w))))).tolist())
            if got != tuple(self.support):
                _fail(who, f"support {got}, expected {tuple(self.support)}")


def _toy_hinge(C: float, *, split: bool, fixed: tuple = ()) -> tuple:
    """The hinge problem on :func:`toy_data` with columns ``[u, v, b, xi]`` (split) or ``[w, b, xi]``:
    rows ``-(y_i x_i'(u - v) + y_i b + xi_i) <= -1``; fixed coefficient groups get bounds [0, 0]."""
    X, y = toy_data()
    m, n = X.shape
    YX = y[:, None] * X
    wblock = np.hstack([YX, -YX]) if split else YX
    nw = wblock.shape[1]
    G = -np.hstack([wblock, y[:, None], np.eye(m)])
    lb = np.r_[np.zeros(nw) if split else np.full(nw, -np.inf), -np.inf, np.zeros(m)]
    ub = np.full(lb.size, np.inf)
    for j in fixed:
        cols = [j, n + j] if split else [j]
        lb[cols] = ub[cols] = 0.0
    c = np.r_[np.zeros(nw + 1), np.full(m, C)]
    return G, -np.ones(m), lb, ub, c, nw


class StandardProblems:
    """Tiny problems solvable by hand, reused per backend (CVXPY's ``StandardTestLPs`` idea).

    The hinge problems live on :func:`toy_data` (``C = 10``): every one reduces to the single
    constraint ``2 w_1 + w_2 >= 1`` with ``b = 0`` and zero slack, so ``min sum_j r_j |w_j|`` is
    solved at the vertex with the smaller ``r_j / a_j`` and ``min sum_j q_j w_j^2`` at
    ``w_j = (a_j / q_j) / sum_k (a_k^2 / q_k)`` with optimum ``1 / sum_k (a_k^2 / q_k)``, ``a = (2, 1)``.
    (``C = 10`` exceeds every multiplier: 0.25 for L1, 0.2 for L2, at most 1.5 for the EM steps.)
    """

    C = 10.0

    @classmethod
    def l1svm_separable(cls, weights=(1.0, 1.0), fixed: tuple = ()) -> StandardProblem:
        """L1-SVM LP (001 eq. 2) with the ``u, v`` split and weights ``r`` on ``|w_j|``."""
        G, h, lb, ub, c, nw = _toy_hinge(cls.C, split=True, fixed=fixed)
        r = np.asarray(weights, dtype=float)
        c[:nw] = np.r_[r, r]
        live = [j for j in range(2) if j not in fixed]
        best = min(live, key=lambda j: r[j] / (2.0, 1.0)[j])
        w = np.zeros(2)
        w[best] = 1.0 / (2.0, 1.0)[best]
        x = np.r_[np.maximum(w, 0), np.maximum(-w, 0), 0.0, np.zeros(10)]
        return StandardProblem(
            f"l1svm_separable(weights={tuple(r.tolist())}, fixed={fixed})",
            _problem(c, G=G, h=h, lb=lb, ub=ub), (Status.OPTIMAL,), objective=float(r[best] * w[best]), x=x,
            coef=(0, 1), support=(best,),
            derivation="min r'|w| s.t. 2 w1 + w2 >= 1: the vertex with the smaller r_j / a_j")

    @classmethod
    def quad_hinge(cls, q=(1.0, 1.0), name: str = "l2svm_separable") -> StandardProblem:
        """``min sum_j q_j w_j^2 + C sum xi`` (free ``w``); ``q_j = inf`` fixes ``w_j = 0`` (the EM
        subproblem, 002 eq. 7, with weights ``1/|w|^2``)."""
        q = np.asarray(q, dtype=float)
        fixed = tuple(int(j) for j in np.flatnonzero(np.isinf(q)))
        G, h, lb, ub, c, nw = _toy_hinge(cls.C, split=False, fixed=fixed)
        a = np.array([2.0, 1.0])
        inv = np.where(np.isinf(q), 0.0, a * a / np.where(np.isinf(q), 1.0, q))
        w = np.where(np.isinf(q), 0.0, a / np.where(np.isinf(q), 1.0, q)) / inv.sum()
        P = np.zeros((c.size, c.size))
        P[:2, :2] = np.diag(2.0 * np.where(np.isinf(q), 0.0, q))
        return StandardProblem(
            f"{name}(q={tuple(q.tolist())})", _problem(c, G=G, h=h, lb=lb, ub=ub, P=P), (Status.OPTIMAL,),
            objective=float(1.0 / inv.sum()), x=np.r_[w, 0.0, np.zeros(10)], coef=(0, 1),
            support=tuple(np.flatnonzero(w > 0).tolist()),
            derivation="min sum q_j w_j^2 s.t. a'w = 1: w = (a/q) / sum(a^2/q), optimum 1/sum(a^2/q)")

    @classmethod
    def em_qp(cls) -> StandardProblem:
        """The EM zero-norm step after the L2 start ``w = (0.4, 0.2)``: ``q = 1/w^2 = (6.25, 25)``,
        optimum ``1/0.68``, ``w = (0.4706, 0.0588)`` (Hessian diagonal on free columns: the
        dual form applies)."""
        return cls.quad_hinge((6.25, 25.0), name="em_qp")

    @classmethod
    def em_qp_fixed(cls) -> StandardProblem:
        """EM step with ``q = (1, inf)``: ``w_2`` fixed at zero, ``w = (0.5, 0)``, optimum 0.25."""
        return cls.quad_hinge((1.0, np.inf), name="em_qp_fixed")

    @classmethod
    def lp_equality_bounds(cls) -> StandardProblem:
        """``min -x1 - 2 x2 s.t. x1 + x2 = 1, 0 <= x <= 0.8``: ``x = (0.2, 0.8)``, optimum -1.8."""
        return StandardProblem("lp_equality_bounds", _problem([-1.0, -2.0], A=[[1.0, 1.0]], b=[1.0], lb=[0, 0],
                                                              ub=[0.8, 0.8]),
                               (Status.OPTIMAL,), objective=-1.8, x=np.array([0.2, 0.8]),
                               derivation="x2 at its upper bound, x1 from the equality")

    @classmethod
    def qp_equality(cls) -> StandardProblem:
        """``min (x1-1)^2 + 2 (x2-1)^2 s.t. x1 + x2 = 1``: KKT gives ``y = 4/3``, ``x = (1/3, 2/3)``,
        optimum 2/3."""
        return StandardProblem("qp_equality", _problem([-2.0, -4.0], A=[[1.0, 1.0]], b=[1.0], P=np.diag([2.0, 4.0]),
                                                       offset=3.0),
                               (Status.OPTIMAL,), objective=2.0 / 3.0, x=np.array([1.0 / 3.0, 2.0 / 3.0]),
                               derivation="KKT: 2(x1-1) + y = 0, 4(x2-1) + y = 0, x1 + x2 = 1")

    @classmethod
    def qp_halfspace(cls) -> StandardProblem:
        """``min ||x - (1, 2)||^2 s.t. x1 + x2 <= 1``: the projection ``(0, 1)``, optimum 2."""
        return StandardProblem("qp_halfspace", _problem([-2.0, -4.0], G=[[1.0, 1.0]], h=[1.0], P=2 * np.eye(2),
                                                        offset=5.0),
                               (Status.OPTIMAL,), objective=2.0, x=np.array([0.0, 1.0]),
                               derivation="projection of (1, 2) onto the half-space")

    @classmethod
    def socp_disc(cls) -> StandardProblem:
        """``min x1 + x2 s.t. ||x|| <= 1``: ``x = -(1, 1)/sqrt(2)``, optimum ``-sqrt(2)``."""
        return StandardProblem("socp_disc", _problem([1.0, 1.0], G=[[0, 0], [-1, 0], [0, -1]], h=[1.0, 0, 0],
                                                     cones=(3,)),
                               (Status.OPTIMAL,), objective=-math.sqrt(2), x=-np.ones(2) / math.sqrt(2),
                               derivation="the unit disc's point farthest along -(1, 1)")

    @classmethod
    def socp_disc_halfplane(cls) -> StandardProblem:
        """A linear row before the cone (``l = 1``): ``min x1 + x2 s.t. ||x|| <= 1, x1 >= -0.5``.

        Without the row the optimum is ``-(1, 1)/sqrt(2)``, where ``x1 = -0.707 < -0.5``; so the
        row is active, ``x1 = -0.5``, and ``x2`` is the lowest point of the circle above it,
        ``-sqrt(1 - 0.25) = -sqrt(0.75)``: optimum ``-0.5 - sqrt(0.75) = -1.3660``. KKT: with
        ``mu`` on the cone and ``nu`` on the row, ``1 + mu x2 = 0`` gives ``mu = 1/sqrt(0.75) > 0``
        and ``1 + mu x1 - nu = 0`` gives ``nu = 1 - 0.5/sqrt(0.75) = 0.42 > 0``."""
        return StandardProblem(
            "socp_disc_halfplane",
            _problem([1.0, 1.0], G=[[-1, 0], [0, 0], [-1, 0], [0, -1]], h=[0.5, 1.0, 0, 0], cones=(3,)),
            (Status.OPTIMAL,), objective=-0.5 - math.sqrt(0.75), x=np.array([-0.5, -math.sqrt(0.75)]),
            derivation="the half-plane row x1 >= -0.5 is active; x2 = -sqrt(1 - 0.25) on the circle")

    @classmethod
    def socp_two_cones(cls) -> StandardProblem:
        """Two cones of different sizes, 3 then 4:
        ``min x1 + x2 + x3 + 2 x4 + 2 x5 s.t. ||(x1, x2)|| <= 1, ||(x3, x4, x5)|| <= 2``.

        Separable: ``min c'v s.t. ||v|| <= r`` is ``-r ||c||`` at ``v = -r c / ||c||``, so the
        optimum is ``-sqrt(2) - 2 ||(1, 2, 2)|| = -sqrt(2) - 6`` at
        ``(-1/sqrt(2), -1/sqrt(2), -2/3, -4/3, -4/3)``. Read as one cone of size 7,
        ``||(x1, x2, 2, x3, x4, x5)|| <= 1`` has no solution."""
        G = np.zeros((7, 5))
        G[1:3, 0:2] = -np.eye(2)
        G[4:7, 2:5] = -np.eye(3)
        r = 1.0 / math.sqrt(2)
        return StandardProblem(
            "socp_two_cones", _problem([1.0, 1.0, 1.0, 2.0, 2.0], G=G, h=[1.0, 0, 0, 2.0, 0, 0, 0], cones=(3, 4)),
            (Status.OPTIMAL,), objective=-math.sqrt(2) - 6.0, x=np.array([-r, -r, -2 / 3, -4 / 3, -4 / 3]),
            derivation="separable cones: min c'v over ||v|| <= r is -r ||c||")

    @classmethod
    def socp_cone_equality(cls) -> StandardProblem:
        """A cone with an equality row: ``min x2 + 2 x3 s.t. ||(x1, x2)|| <= x3, x1 = 1``.

        With ``x3 = sqrt(1 + x2^2)`` at the optimum, ``d/dx2 (x2 + 2 sqrt(1 + x2^2)) = 0`` gives
        ``x2 / sqrt(1 + x2^2) = -1/2``, ``x2 = -1/sqrt(3)``, ``x3 = 2/sqrt(3)``: optimum
        ``-1/sqrt(3) + 4/sqrt(3) = sqrt(3)``. Without the equality (``x1 = 0``) it would be 0."""
        s3 = math.sqrt(3.0)
        return StandardProblem(
            "socp_cone_equality",
            _problem([0.0, 1.0, 2.0], A=[[1.0, 0.0, 0.0]], b=[1.0], G=[[0, 0, -1], [-1, 0, 0], [0, -1, 0]],
                     h=[0.0, 0.0, 0.0], cones=(3,)),
            (Status.OPTIMAL,), objective=s3, x=np.array([1.0, -1.0 / s3, 2.0 / s3]),
            derivation="x1 = 1 fixed by the equality; x2 minimises x2 + 2 sqrt(1 + x2^2)")

    @classmethod
    def socp_quadratic(cls) -> StandardProblem:
        """A cone with a quadratic objective: ``min ||x - (2, 2)||^2 s.t. ||x|| <= 1`` (ECOS takes
        the objective through its rotated-cone epigraph).

        The projection of ``(2, 2)`` onto the unit disc is ``(1, 1)/sqrt(2)``; the optimum is
        ``2 (2 - 1/sqrt(2))^2 = 9 - 4 sqrt(2) = 3.3431``."""
        r = 1.0 / math.sqrt(2)
        return StandardProblem(
            "socp_quadratic",
            _problem([-4.0, -4.0], G=[[0, 0], [-1, 0], [0, -1]], h=[1.0, 0, 0], P=2 * np.eye(2), offset=8.0,
                     cones=(3,)),
            (Status.OPTIMAL,), objective=9.0 - 4.0 * math.sqrt(2), x=np.array([r, r]),
            derivation="projection of (2, 2) onto the unit disc")

    @classmethod
    def infeasible_lp(cls) -> StandardProblem:
        """``min x s.t. x >= 1, x <= 0``."""
        return StandardProblem("infeasible_lp", _problem([1.0], G=[[-1.0], [1.0]], h=[-1.0, 0.0]),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def unbounded_lp(cls) -> StandardProblem:
        """``min -x1 s.t. x1 - x2 <= 0, x >= 0``."""
        return StandardProblem("unbounded_lp", _problem([-1.0, 0.0], G=[[1.0, -1.0]], h=[0.0], lb=[0.0, 0.0]),
                               (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def infeasible_qp(cls) -> StandardProblem:
        """``min x1^2 s.t. x2 >= 1, x2 <= 0, x2 >= 0``."""
        return StandardProblem("infeasible_qp", _problem([0.0, 0.0], G=[[0.0, -1.0], [0.0, 1.0]], h=[-1.0, 0.0],
                                                         P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def infeasible_qp_free(cls) -> StandardProblem:
        """``min x1^2 s.t. x2 >= 1, x2 <= -1`` with ``x2`` free: the Lagrangian dual is unbounded
        along a direction the Hessian does not see (HiGHS's QP solver stops there, "optimal")."""
        return StandardProblem("infeasible_qp_free", _problem([0.0, 0.0], G=[[0.0, -1.0], [0.0, 1.0]], h=[-1.0, -1.0],
                                                              P=np.diag([2.0, 0.0])),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def unbounded_qp(cls) -> StandardProblem:
        """``min x1^2 - x2 s.t. x2 >= 0`` (no rows)."""
        return StandardProblem("unbounded_qp", _problem([0.0, -1.0], P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def qp_no_rows(cls) -> StandardProblem:
        """``min x1^2 - 2 x1 + x2 s.t. x2 >= 0`` (no rows: its dual has no variables):
        ``x = (1, 0)``, optimum -1."""
        return StandardProblem("qp_no_rows", _problem([-2.0, 1.0], P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.OPTIMAL,), objective=-1.0, x=np.array([1.0, 0.0]),
                               derivation="separable: x1 minimises x1^2 - 2 x1, x2 sits at its bound")

    @classmethod
    def all(cls) -> list[StandardProblem]:
        """Every standard problem."""
        return [
            cls.l1svm_separable(), cls.l1svm_separable(weights=(10.0, 1.0)), cls.l1svm_separable(fixed=(0,)),
            cls.quad_hinge(), cls.em_qp(), cls.em_qp_fixed(), cls.lp_equality_bounds(), cls.qp_equality(),
            cls.qp_halfspace(), cls.qp_no_rows(), cls.socp_disc(), cls.socp_disc_halfplane(),
            cls.socp_two_cones(), cls.socp_cone_equality(), cls.socp_quadratic(), cls.infeasible_lp(),
            cls.unbounded_lp(), cls.infeasible_qp(), cls.infeasible_qp_free(), cls.unbounded_qp(),
        ]

    @classmethod
    def for_backend(cls, backend: Backend | type) -> list[StandardProblem]:
        """The standard problems whose class ``backend`` supports."""
        return [p for p in cls.all() if p.problem_class in backend.supports]

    @classmethod
    def resolve_sequences(cls) -> list[tuple[str, list[StandardProblem]]]:
        """Problem sequences sharing one constraint structure, solved on one session: changed
        objective (the next outer-loop iteration), changed bounds (a fixed group) and changed
        Hessian (the next EM step)."""
        return [
            ("lp: objective, bounds", [cls.l1svm_separable(), cls.l1svm_separable(weights=(10.0, 1.0)),
                                       cls.l1svm_separable(), cls.l1svm_separable(fixed=(0,)),
                                       cls.l1svm_separable()]),
            ("qp: Hessian, bounds", [cls.quad_hinge(), cls.em_qp(), cls.em_qp_fixed(), cls.quad_hinge()]),
        ]


