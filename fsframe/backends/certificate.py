"""fsframe's own check of an optimal answer, the same for every backend: a weak-duality
certificate of the returned point from the returned multipliers (:func:`certify`: objective,
residuals and gap recomputed from them, never taken from the solver) and the one rule that turns
it into a status (:func:`judge_certificate`). :class:`~fsframe.backends.base.BackendSession` applies both to
every candidate answer a backend returns, so no backend can report an uncertified ``OPTIMAL``.

Every measure is relative to the size of the terms it is made of, not to ``1 + |objective|``: a
problem whose optimum is ``1e-4`` is checked to the same relative precision as one whose optimum
is ``1e4``.

The check of a claim that a problem is infeasible or unbounded is :mod:`fsframe.backends.claims`.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from .. import exp_cone
from ..canonical import ProblemData
from ..enums import Status
from . import kkt_terms as kt

__all__ = ["Certificate", "certify", "judge_certificate", "reduced_costs", "unexcused_at", "reduced_cost_violations",
           "GAP_FLOOR", "LAGRANGIAN_RTOL", "relative_violation"]

GAP_FLOOR = 1e-12
"""Smallest normaliser of the gap and the residuals (they are relative to the sizes of the terms
they compare; this only avoids dividing by zero when every term vanishes)."""
LAGRANGIAN_RTOL = 1e-5
"""The gap is never measured more finely than this fraction of the problem's size: the larger of
the Lagrangian's absolute size ``|x|'(|c| + |A'||y| + |G'||z|) + |b|'|y| + |h|'|z| + |offset| +
x'Px`` (what rounding errors scale with) and ``max|x| * max(|∇f|, |A'y|, |G'z|)``. An optimum of
0 (every term vanishing, the multipliers rounding noise) is then checked to an absolute precision
of that size, not to a relative precision no arithmetic has."""


@attrs.frozen
class Certificate:
    """fsframe's independent check of an optimal answer (KKT residuals by weak duality).

    ``primal_residual``: largest constraint or bound violation of ``x``, each relative to its own
    size (:func:`relative_violation`: a row's against its right-hand side and its own terms
    ``sum_j |a_ij x_j|``, ``max_j |a_ij| max(1, |x_j|)`` over its own columns; a bound's against
    ``max(1, |bound|)``); ``dual_residual``: the larger of the
    largest reduced cost with the wrong sign for its bound and the part of ``G'z`` carried by ``z``
    outside its cone (both relative to the largest of ``|∇f(x)|``, ``|A'y|``, ``|G'z|``); ``dual_bound``: the Lagrangian lower bound from the multipliers (the reduced costs that
    no bound excuses charged at ``x``); ``gap``: ``(objective - dual value) / scale``, the dual value
    being ``dual_bound`` without that charge (its size is what the dual residual measures), where ``scale`` is the largest magnitude among the terms of
    the objective and of the bound (``|c'x|``, ``x'Px``, ``|offset|``, ``|b'y|``, ``|h'z|`` and the
    bound terms of the reduced costs), at least :data:`LAGRANGIAN_RTOL` times the Lagrangian's
    absolute size and :data:`GAP_FLOOR`.
    """

    primal_residual: float
    dual_residual: float
    dual_bound: float
    gap: float

    def ok(self, tol: float) -> bool:
        """Whether every measure is within ``10 * tol``."""
        lim = 10 * tol
        return self.primal_residual <= lim and self.dual_residual <= lim and -lim <= self.gap <= lim


def _gradient_terms(data: ProblemData, x: NDArray, y: NDArray, z_raw: NDArray):
    """``(grad, Px, A'y, G'z, z)`` at ``x``: the objective's gradient, the multipliers' terms of
    the Lagrangian's gradient, with ``z`` projected onto the dual cone."""
    grad = np.asarray(data.c, dtype=float).copy()
    Px = None
    if data.has_quadratic_objective:
        Px = data.P @ x
        grad = grad + Px
    z = kt.project_dual_cone(data, z_raw)
    Aty = kt.rmatvec(data.A, y) if data.A.shape[0] else np.zeros(data.n)
    Gtz = kt.rmatvec(data.G, z) if data.G.shape[0] else np.zeros(data.n)
    return grad, Px, Aty, Gtz, z


def reduced_costs(data: ProblemData, x: NDArray, y: NDArray, z: NDArray,
                  per_column: bool = False) -> tuple[NDArray, NDArray | float]:
    """The reduced costs ``r = ∇f(x) + A'y + G'z`` (``z`` projected onto the dual cone) and the
    scale to measure them against: the gradient's size ``max(|∇f|, |A'y|, |G'z|)`` over all
    columns (the certificate's), or with ``per_column`` the size of the terms that make up each
    column's own reduced cost, ``max(|∇f_k|, |(A'y)_k|, |(G'z)_k|)`` (at least ``GAP_FLOOR`` times
    the gradient's size). Pricing needs the latter: one column of large terms (an L1-SVM's slacks
    at ``C = 1e6``) must not make a reduced cost of ``-5e-4`` on a weight-1 feature look like noise."""
    x = np.asarray(x, dtype=float)
    grad, _, Aty, Gtz, _ = _gradient_terms(data, x, np.asarray(y, dtype=float), np.asarray(z, dtype=float))
    r = grad + Aty + Gtz
    grad_scale = max(kt.inf_norm(grad), kt.inf_norm(Aty), kt.inf_norm(Gtz), GAP_FLOOR)
    if not per_column:
        return r, grad_scale
    col = np.maximum(np.maximum(np.abs(grad), np.abs(Aty)), np.abs(Gtz))
    return r, np.maximum(col, GAP_FLOOR * grad_scale)


def unexcused_at(data: ProblemData, x: NDArray, r: NDArray) -> NDArray:
    """Per column, the size of the reduced cost ``r`` that the column's bounds do not excuse *at*
    ``x`` (0 where they do): at ``x_k`` on its lower bound ``r_k >= 0`` is excused, on its upper
    bound ``r_k <= 0``; strictly between (or with no bound on the improving side) ``r_k`` should
    vanish. This is the pricing test of :mod:`fsframe.working_set` (columns left out at zero)."""
    x = np.asarray(x, dtype=float)
    return np.where(r > 0, np.where(x <= data.lb, 0.0, r), np.where(x >= data.ub, 0.0, -r))


def reduced_cost_violations(data: ProblemData, x: NDArray, y: NDArray, z: NDArray,
                            per_column: bool = False) -> tuple[NDArray, NDArray | float]:
    """:func:`unexcused_at` of the :func:`reduced_costs` at ``(x, y, z)``, and their scale."""
    r, scale = reduced_costs(data, x, y, z, per_column)
    return unexcused_at(data, x, r), scale


def certify(data: ProblemData, x: NDArray, y: NDArray, z: NDArray) -> Certificate:
    """Weak-duality certificate in the conic form (bounds included).

    ``y`` are multipliers of ``A x = b`` and ``z`` of ``G x <=_K h``, both in the convention
    ``L = f(x) + y'(Ax - b) + z'(Gx - h)``; ``z`` is projected onto the dual cone (what ``G'z`` loses
    by it counts in the dual residual). For a quadratic objective the bound is taken on its
    linearisation at ``x`` (valid because ``f`` is convex). Bounds on ``x`` are handled in closed
    form; a reduced cost whose bound on the improving side is infinite should vanish: its size is
    the dual residual, and it is charged at ``x`` in the bound (exact when the residual is zero).
    The objective is ``data.objective(x)``, recomputed from the point judged: what a solver
    claims about it is never evidence (a point 1 % above the optimum, with the optimum's
    multipliers, shows a gap of 1e-2 whatever objective the solver reports).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    z_raw = np.asarray(z, dtype=float)
    grad, Px, Aty, Gtz, z = _gradient_terms(data, x, y, z_raw)
    xPx = 0.0 if Px is None else float(x @ Px)
    r = grad + Aty + Gtz
    by, hz = float(data.b @ y), float(data.h @ z)
    # min over lb <= x <= ub of r'x: finite where the bound on the improving side is finite;
    # the rest of r is dual infeasibility, measured and charged at x
    lb_fin, ub_fin = np.isfinite(data.lb), np.isfinite(data.ub)
    pos, neg = r > 0, r < 0
    ok_pos, ok_neg = pos & lb_fin, neg & ub_fin
    bad = kt.unexcused(data, r)
    t_lb, t_ub = float(r[ok_pos] @ data.lb[ok_pos]), float(r[ok_neg] @ data.ub[ok_neg])
    t_bad = float(r[bad] @ x[bad])
    bound = data.offset - 0.5 * xPx - by - hz + t_lb + t_ub + t_bad
    obj = data.objective(x)
    # the size of every product in L(x, y, z), in absolute values: what rounding errors scale with
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    mags = np.abs(data.c) + (kt.abs_rmatvec(data.A, ay) if data.A.shape[0] else 0.0) \
        + (kt.abs_rmatvec(data.G, az) if data.G.shape[0] else 0.0)
    lagrangian = float(ax @ mags) + float(np.abs(data.b) @ ay) + float(np.abs(data.h) @ az) + abs(data.offset) + xPx
    Gtz_raw = Gtz if np.array_equal(z, z_raw) else kt.rmatvec(data.G, z_raw)
    grad_scale = max(kt.inf_norm(grad), kt.inf_norm(Aty), kt.inf_norm(Gtz), kt.inf_norm(Gtz_raw), GAP_FLOOR)
    size = max(lagrangian, grad_scale * kt.inf_norm(x))
    scale = max(abs(float(data.c @ x)), xPx, abs(data.offset), abs(by), abs(hz), abs(t_lb), abs(t_ub),
                LAGRANGIAN_RTOL * size, GAP_FLOOR)
    # reduced costs the bounds do not excuse, and the part of G'z carried by z outside its cone
    dual_res = max(kt.inf_norm(r[bad]), kt.inf_norm(Gtz_raw - Gtz)) / grad_scale
    # the gap compares the objective with the dual value; the charge of the reduced costs the
    # bounds do not excuse (t_bad) is what the dual residual measures, so it is left out here
    gap = (obj - (bound - t_bad)) / scale
    # each row's violation against its own size (relative_violation): one scale for all rows
    # would let a row of size 1e4 hide the violation of one of size 1e-4
    return Certificate(primal_residual=relative_violation(data, x), dual_residual=float(dual_res),
                       dual_bound=float(bound), gap=float(gap))


def judge_certificate(cert: Certificate, tol: float) -> tuple[Status, str]:
    """The one rule: the status an ``OPTIMAL`` answer keeps after its certificate, and a message
    suffix.

    * every measure within ``10 * tol``: ``OPTIMAL``;
    * the primal or the dual residual above ``max(sqrt(tol), 1e-3)``: ``UNKNOWN`` — the point is
      infeasible, or the objective still decreases along a direction its bounds do not block, so
      it is no optimum to any accuracy (seen with HiGHS's QP solver, which stops at an internal
      bound of 1e7 on an unbounded QP and calls it optimal; a tiny ``tol`` asks for precision, not
      for refusing answers, hence the ``1e-3`` floor);
    * otherwise (small residuals, or only the gap too large: a feasible point whose objective is
      not proven optimal): ``OPTIMAL_INACCURATE`` — loops use it, with a warning.
    """
    if cert.ok(tol):
        return Status.OPTIMAL, ""
    message = (f"; fsframe certificate failed (primal residual {cert.primal_residual:.2e}, "
               f"dual residual {cert.dual_residual:.2e}, gap {cert.gap:.2e})")
    big = max(float(np.sqrt(tol)), 1e-3)
    if cert.dual_residual > big or cert.primal_residual > big:
        return Status.UNKNOWN, message + (
            f"; a residual above {big:.0e} is no inaccurate optimum: the point is infeasible or the "
            "solver stopped short of an optimum (is the problem unbounded?)")
    return Status.OPTIMAL_INACCURATE, message


def _row_sizes(M, rhs: NDArray, x: NDArray, Mx: NDArray, need: NDArray, lb: NDArray, ub: NDArray) -> NDArray:
    """Per row of ``M x`` against ``rhs``, the size its violation at ``x`` is measured against: the
    largest of ``|rhs_i|``, the row's terms ``sum_j |M_ij x_j|`` and its largest
    ``|M_ij| min(max(1, |x_j|), room_j)`` over the columns that can move the row towards
    feasibility (what the row's left side moves by when such a column moves by one unit, or by its
    own size, but no further than its bound in that direction: ``room_j``), at least
    :data:`GAP_FLOOR`. ``Mx`` is ``M x`` (the caller has it). ``need`` says per row which way: ``+1`` the row's ``M_i x`` must decrease,
    ``-1`` increase, ``0`` unknown (a cone's rows, a row that is not violated): then every column
    counts, its coefficient capped by the problem's scale ``max(1, |rhs|, |M x|)``.

    A column at a bound that it would have to cross does not count: at ``x0 = 0 <= x0`` the row
    ``1e6 x0 + x1 <= 1`` has size 2 at ``x1 = 2`` (not 1e6, which hid a 100 % violation), and
    ``1e6 x0 + x1 <= -1e-7`` is not "satisfied to rounding" by the zero model (it is infeasible).
    Only the row's own columns count: a column far from zero elsewhere (a bound excluding 0, a
    column fixed at 1e6, a residual of size ``y``) does not loosen a row it is not in. Invariant
    to scaling the row: a row ``1e-4 x <= -1e-6`` is ``x <= -0.01``. A row without entries (or
    with zero coefficients only) is the constant ``0`` against ``rhs_i``: it is sized like a bound,
    ``max(1, |rhs_i|)``, so ``0 <= -1e-13`` is rounding and ``0 <= -1`` a violation of 1."""
    xa = np.abs(x)
    terms = kt.abs_of(M) @ xa if M.nnz <= kt.ABS_CACHE_LIMIT else abs(M) @ xa  # a large |M| is not kept
    # unknown direction: the row's largest coefficient (cached), capped by the problem's scale
    row_max = kt.cached(kt.ROW_MAX, M, kt.row_max)
    big = np.minimum(row_max, max(1.0, kt.inf_norm(rhs), kt.inf_norm(Mx)))
    rows = np.flatnonzero(need)
    if rows.size:  # violated rows (few at a solver's answer): only the columns that can help
        # the rows' entries gathered from the CSR arrays (a scipy row selection and a new matrix
        # per call cost ~1 ms per EM step, two certificates a step)
        indptr, indices, data = kt.csr_arrays(M)
        starts = indptr[rows]
        lens = indptr[rows + 1] - starts
        offs = np.cumsum(lens) - lens  # where each row's entries begin in the gathered arrays
        idx = np.arange(int(lens.sum())) + np.repeat(starts - offs, lens)
        cols = indices[idx]
        v = data[idx]
        down = np.repeat(need[rows] > 0, lens)  # the row's M_i x must decrease
        # the column moves down when (down, a_ij > 0) or (up, a_ij < 0), else up; by at most its room
        # to the bound that way (x0 = 1e-10 >= 0 lowers 1e6 x0 by 1e-4, not by 1e6)
        room = np.where(down == (v > 0), x[cols] - lb[cols], ub[cols] - x[cols])
        move = np.minimum(np.maximum(1.0, xa[cols]), np.maximum(room, 0.0))
        most = np.zeros(rows.size)  # each row's largest |M_ij| move_j (0 for a row without entries)
        filled = lens > 0
        if filled.any():
            most[filled] = np.maximum.reduceat(np.abs(v) * move, offs[filled])
        big[rows] = most
    # a row without entries (a constant, 0 against its right-hand side) is sized like a bound,
    # by max(1, |rhs|): 0 <= -1e-13 is rounding, not a violation of 10 % of GAP_FLOOR
    big[row_max == 0] = 1.0
    return np.maximum(np.maximum(np.abs(rhs), terms), np.maximum(big, GAP_FLOOR))


def relative_violation(data: ProblemData, x: NDArray) -> float:
    """The largest violation at ``x`` of a constraint or bound, each relative to its own size:
    an equality or ``R_+`` row's violation over :func:`_row_sizes`; a cone's distance (the
    second-order cone's ``||s_1..|| - s_0``, an exponential triple's distance to ``K_exp``) over
    the largest size among its rows; a bound's over ``max(1, |bound|)``. One scale for all rows
    (the largest) would hide a row of size ``1e-4`` next to one of size ``1e4``: an
    infeasibility claim on such a problem would be refuted by a point that violates it.

    ``data``'s matrices are read-only here, as everywhere in a ``ProblemData``: ``|M|``, its
    transpose and the rows' largest entries are cached per CSR / CSC matrix (checked against the
    identity of its ``indptr``, ``indices`` and ``data`` arrays, so a matrix given new arrays is
    sized afresh), and a change made in place to those arrays' values is not seen."""
    ratios = [0.0]
    if data.A.shape[0]:
        Ax = data.A @ x
        r = Ax - data.b
        ratios.append(kt.inf_norm(r / _row_sizes(data.A, data.b, x, Ax, np.sign(r), data.lb, data.ub)))
    if data.G.shape[0]:
        Gx = data.G @ x
        s = data.h - Gx
        need = np.zeros(s.size)  # the R_+ rows violated (s < 0) must decrease G x; cone rows: unknown
        need[: data.l] = (s[: data.l] < 0).astype(float)
        size = _row_sizes(data.G, data.h, x, Gx, need, data.lb, data.ub)
        if data.l:
            ratios.append(float(np.max(-s[: data.l] / size[: data.l], initial=0.0)))
        k = data.l
        for q in data.cones:
            ratios.append(max(0.0, float(np.linalg.norm(s[k + 1 : k + q]) - s[k])) / float(np.max(size[k : k + q])))
            k += q
        if data.exp:
            dist = exp_cone.distance(s[k:])
            ratios.append(float(np.max(dist / size[k:].reshape(-1, 3).max(axis=1), initial=0.0)))
    for gap, bound in ((data.lb - x, data.lb), (x - data.ub, data.ub)):
        finite = np.isfinite(bound)
        if finite.any():
            ratios.append(float(np.max(gap[finite] / np.maximum(1.0, np.abs(bound[finite])), initial=0.0)))
    return max(ratios)
