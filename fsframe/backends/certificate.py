"""fsframe's own check of an optimal answer, the same for every backend: a weak-duality
certificate of the returned point from the returned multipliers (:func:`certify`: objective,
residuals and gap recomputed from them, never taken from the solver) and the one rule that turns
it into a status (:func:`judge_certificate`). :class:`~fsframe.backends.base.BackendSession` applies both to
every candidate answer a backend returns, so no backend can report an uncertified ``OPTIMAL``.

Every measure is relative to the size of the terms it is made of, not to ``1 + |objective|``: a
problem whose optimum is ``1e-4`` is checked to the same relative precision as one whose optimum
is ``1e4``.
"""

from __future__ import annotations

import weakref

import attrs
import numpy as np
from numpy.typing import NDArray

from ..canonical import ProblemData
from ..enums import Status

__all__ = ["Certificate", "certify", "judge_certificate", "reduced_costs", "unexcused_at", "reduced_cost_violations",
           "GAP_FLOOR", "LAGRANGIAN_RTOL"]

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

    ``primal_residual``: largest constraint or bound violation of ``x``, relative to
    ``max(1, |b|, |h|, |Ax|, |Gx|)`` (infinity norms); ``dual_residual``: the larger of the
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


def _project_dual_cone(data: ProblemData, z: NDArray) -> NDArray:
    """``z`` projected onto ``R_+^l x SOC(q_1) x ...`` (self-dual)."""
    z = np.array(z, dtype=float, copy=True)
    if data.l:
        z[: data.l] = np.maximum(z[: data.l], 0.0)
    k = data.l
    for q in data.cones:
        t, v = z[k], z[k + 1 : k + q]
        nv = float(np.linalg.norm(v))
        if nv > t:
            if nv <= -t:
                z[k : k + q] = 0.0
            else:
                a = 0.5 * (t + nv)
                z[k] = a
                z[k + 1 : k + q] = a * v / nv
        k += q
    return z


_ABS: list = []  # (weak reference to a matrix, |matrix|) of the last few matrices seen


def _abs(M):
    """``|M|`` elementwise, cached by identity (a session certifies the same A and G each time;
    weak references, so the cache keeps no problem alive)."""
    _ABS[:] = [(r, a) for r, a in _ABS if r() is not None]
    for r, a in _ABS:
        if r() is M:
            return a
    a = abs(M)
    _ABS.insert(0, (weakref.ref(M), a))
    del _ABS[4:]
    return a


ABS_CACHE_LIMIT = 20_000_000
"""Matrices with more stored entries than this (240 MB as CSR) are not copied into ``|M|`` (a
2 000 x 40 000 LP would hold another 1 GB): :func:`_abs_rmatvec` works through them in row blocks
instead (0.5 s at 8e6 entries, against 0.1 s from the cached copy)."""


def _abs_rmatvec(M, v: NDArray) -> NDArray:
    """``|M|' v`` (``v >= 0``): from the cached ``|M|`` for matrices of at most
    :data:`ABS_CACHE_LIMIT` entries, else block by block of rows (a CSR matrix), so no copy of a
    large matrix is kept."""
    if M.nnz <= ABS_CACHE_LIMIT or M.format != "csr":
        return _abs(M).T @ v
    out = np.zeros(M.shape[1])
    step = max(1, int(M.shape[0] * ABS_CACHE_LIMIT // max(M.nnz, 1)))
    for i in range(0, M.shape[0], step):
        blk = M[i:i + step]
        blk.data = np.abs(blk.data)  # the slice is a copy: M is untouched
        out += blk.T @ v[i:i + step]
    return out


def _inf(v) -> float:
    return float(np.max(np.abs(v), initial=0.0)) if np.size(v) else 0.0


def _gradient_terms(data: ProblemData, x: NDArray, y: NDArray, z_raw: NDArray):
    """``(grad, Px, A'y, G'z, z)`` at ``x``: the objective's gradient, the multipliers' terms of
    the Lagrangian's gradient, with ``z`` projected onto the dual cone."""
    grad = np.asarray(data.c, dtype=float).copy()
    Px = None
    if data.has_quadratic_objective:
        Px = data.P @ x
        grad = grad + Px
    z = _project_dual_cone(data, z_raw)
    Aty = data.A.T @ y if data.A.shape[0] else np.zeros(data.n)
    Gtz = data.G.T @ z if data.G.shape[0] else np.zeros(data.n)
    return grad, Px, Aty, Gtz, z


def _unexcused(data: ProblemData, r: NDArray) -> NDArray:
    """Columns whose reduced cost ``r`` no bound excuses: positive with no lower bound, negative
    with no upper bound (the objective still decreases along them)."""
    return ((r > 0) & ~np.isfinite(data.lb)) | ((r < 0) & ~np.isfinite(data.ub))


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
    grad_scale = max(_inf(grad), _inf(Aty), _inf(Gtz), GAP_FLOOR)
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
    bad = _unexcused(data, r)
    t_lb, t_ub = float(r[ok_pos] @ data.lb[ok_pos]), float(r[ok_neg] @ data.ub[ok_neg])
    t_bad = float(r[bad] @ x[bad])
    bound = data.offset - 0.5 * xPx - by - hz + t_lb + t_ub + t_bad
    obj = data.objective(x)
    # the size of every product in L(x, y, z), in absolute values: what rounding errors scale with
    ax, ay, az = np.abs(x), np.abs(y), np.abs(z)
    mags = np.abs(data.c) + (_abs_rmatvec(data.A, ay) if data.A.shape[0] else 0.0) \
        + (_abs_rmatvec(data.G, az) if data.G.shape[0] else 0.0)
    lagrangian = float(ax @ mags) + float(np.abs(data.b) @ ay) + float(np.abs(data.h) @ az) + abs(data.offset) + xPx
    Gtz_raw = Gtz if np.array_equal(z, z_raw) else data.G.T @ z_raw
    grad_scale = max(_inf(grad), _inf(Aty), _inf(Gtz), _inf(Gtz_raw), GAP_FLOOR)
    size = max(lagrangian, grad_scale * _inf(x))
    scale = max(abs(float(data.c @ x)), xPx, abs(data.offset), abs(by), abs(hz), abs(t_lb), abs(t_ub),
                LAGRANGIAN_RTOL * size, GAP_FLOOR)
    # reduced costs the bounds do not excuse, and the part of G'z carried by z outside its cone
    dual_res = max(_inf(r[bad]), _inf(Gtz_raw - Gtz)) / grad_scale
    row_scale = max(1.0, _inf(data.b), _inf(data.h), _inf(data.A @ x) if data.A.shape[0] else 0.0,
                    _inf(data.G @ x) if data.G.shape[0] else 0.0)
    # the gap compares the objective with the dual value; the charge of the reduced costs the
    # bounds do not excuse (t_bad) is what the dual residual measures, so it is left out here
    gap = (obj - (bound - t_bad)) / scale
    return Certificate(primal_residual=data.max_violation(x) / row_scale, dual_residual=float(dual_res),
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
