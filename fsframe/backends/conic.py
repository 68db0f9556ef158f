"""What the conic backends (ECOS, Clarabel) share: the elimination of fixed columns, the
bounds-as-rows layout and its inverse for multipliers, the column scaling of a quadratic objective,
and the polishing of a point from the multipliers.

Fixed columns (a fit's groups fixed at zero: the re-solve on a support, EM's zeroed weights) are
taken out before the solver sees the problem (:func:`eliminate`): ECOS and Clarabel have no warm
start, and the cost of an interior-point step grows with the columns and the dense cone entries, so
a re-solve on a few features of thousands costs a few features' solve.

Both solvers take no variable bounds, so a session folds them into the ``R_+`` block with
:meth:`ProblemData.bounds_as_rows` (fixed columns become equality rows). The solver's multipliers
then live on the expanded rows; :class:`RowsLayout` maps them back to the rows of the original
``ProblemData`` so that :func:`~fsframe.backends.certificate.certify` checks the problem as compiled
(bounds handled in closed form), exactly as it does for HiGHS.
"""

from __future__ import annotations

import importlib

import attrs
import numpy as np
from numpy.typing import NDArray

from .._lazy import lazy_module
from ..canonical import ProblemData

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["RowsLayout", "expand_bounds", "Elimination", "eliminate", "Prepared", "prepare", "polish_separable",
           "module_version"]


@attrs.frozen(eq=False)
class RowsLayout:
    """A problem with its bounds as rows, and where the original rows sit in it.

    ``rows`` is ``data.bounds_as_rows()``: its equality rows are the ``p`` original rows followed
    by one row per fixed column; its ``G`` is ``[G[:l]; -I_lo; I_up; G[l:]]``.
    """

    rows: ProblemData
    p: int  # original equality rows
    l: int  # noqa: E741 - original R_+ rows
    n_lo: int
    n_up: int

    def split_duals(self, y: NDArray, z: NDArray) -> tuple[NDArray, NDArray]:
        """Multipliers of the original ``A x = b`` and ``G x <=_K h`` rows, from those of the
        expanded problem (the bound rows' multipliers are dropped: ``certify`` recovers them in
        closed form as reduced costs)."""
        y = np.asarray(y, dtype=float)
        z = np.asarray(z, dtype=float)
        k = self.l + self.n_lo + self.n_up
        return y[: self.p], np.concatenate([z[: self.l], z[k : k + (self.rows.G.shape[0] - k)]])


def expand_bounds(data: ProblemData) -> RowsLayout:
    """:meth:`ProblemData.bounds_as_rows` plus the bookkeeping to map multipliers back."""
    rows = data.bounds_as_rows()
    n_lo_up = rows.l - data.l
    fixed = data.lb == data.ub
    n_lo = int(np.count_nonzero(np.isfinite(data.lb) & ~fixed))
    return RowsLayout(rows=rows, p=int(data.A.shape[0]), l=int(data.l), n_lo=n_lo, n_up=int(n_lo_up - n_lo))


@attrs.frozen(eq=False)
class Elimination:
    """Columns whose value the constraints fix, taken out before the solver sees the problem.

    A column is fixed by its bounds (``lb == ub``: a fit's groups fixed at zero, e.g. the
    re-solve on a support), by an equality row with a single entry among the columns left
    (``a x_j = r``), or set to 0 as *idle* (:func:`_idle_columns`: cost 0 and only in rows of
    such columns, e.g. MPM's ``u_j - v_j = 0`` once ``w_j`` is fixed). Fixed
    values move into the right-hand sides; rows left empty are dropped (equality rows, ``R_+``
    rows, and second-order cone entries other than a cone's first whose value is then exactly
    zero: an entry that is always 0 changes neither the cone nor its dual; exponential cones stay
    whole). The solver sees only the rest, so a
    re-solve on a small support costs a small solve.

    Multipliers map back exactly: dropped rows get 0, a singleton row the value that makes its
    column's reduced cost vanish (in reverse order of elimination, so every other row of that
    column already has its multiplier), and the fixed-by-bounds columns' reduced costs are the
    bound multipliers :func:`~fsframe.backends.certificate.certify` recovers in closed form. The
    certificate is computed on the full problem, as always.
    """

    full: ProblemData
    keep: NDArray  # bool per column: still a column of the reduced problem
    values: NDArray  # the fixed values (0 on kept columns)
    eq_rows: NDArray  # kept equality rows (indices)
    g_rows: NDArray  # kept G rows (indices)
    singletons: tuple  # ((row, column, coefficient), ...) in order of elimination
    reduced: ProblemData
    idle: NDArray = attrs.field(factory=lambda: np.zeros(0, dtype=np.int64))  # set to 0 for having cost 0

    def valid_for(self, data: ProblemData) -> bool:
        """Whether this elimination still holds for ``data`` (same structure and bounds, new
        ``c``): the idle columns must still cost nothing."""
        return not self.idle.size or not np.any(np.asarray(data.c)[self.idle] != 0.0)

    def c(self, data: ProblemData) -> NDArray:
        """The reduced objective vector for ``data`` (same structure and bounds as :attr:`full`)."""
        c = np.asarray(data.c, dtype=float)
        if data.has_quadratic_objective:
            c = c + data.P @ self.values
        return c[self.keep]

    def x(self, v: NDArray) -> NDArray:
        out = self.values.copy()
        out[self.keep] = v
        return out

    def duals(self, data: ProblemData, x: NDArray, y: NDArray, z: NDArray, *,
              ray: bool = False) -> tuple[NDArray, NDArray]:
        """Multipliers of the full problem's rows from the reduced problem's; with ``ray``, of a
        Farkas certificate (homogeneous: no objective gradient enters the singleton rows')."""
        full = self.full
        yy = np.zeros(full.A.shape[0])
        yy[self.eq_rows] = y
        zz = np.zeros(full.G.shape[0])
        zz[self.g_rows] = z
        if self.singletons:
            grad = np.zeros(full.n) if ray else \
                np.asarray(data.c, dtype=float) + (data.P @ x if data.has_quadratic_objective else 0.0)
            Ac = sp.csc_matrix(full.A)
            Gtz = full.G.T @ zz if full.G.shape[0] else np.zeros(full.n)
            for i, j, a in reversed(self.singletons):
                lo, hi = Ac.indptr[j], Ac.indptr[j + 1]
                rows, vals = Ac.indices[lo:hi], Ac.data[lo:hi]
                yy[i] = 0.0
                yy[i] = -(grad[j] + vals @ yy[rows] + Gtz[j]) / a
        return yy, zz


def eliminate(data: ProblemData, *, tol: float = 1e-12) -> Elimination | None:
    """The :class:`Elimination` of ``data``'s fixed columns, or ``None`` when nothing is fixed, or
    when the fixed values leave an empty row violated or a singleton's value outside its column's
    bounds (an infeasible problem: the solver, given it whole, says so)."""
    fixed = data.lb == data.ub
    if not fixed.any():
        return None
    n = data.n
    values = np.where(fixed, data.lb, 0.0)
    A = sp.csr_matrix(data.A)
    Ac = sp.csc_matrix(A)
    live = ~fixed
    eq_live = np.ones(A.shape[0], dtype=bool)
    singletons = []
    while A.shape[0]:
        counts = np.asarray((abs(A) > 0) @ live.astype(np.int64)).ravel()
        cand = np.flatnonzero(eq_live & (counts == 1))
        if not cand.size:
            break
        progress = False
        for i in cand:
            lo, hi = A.indptr[i], A.indptr[i + 1]
            cols, vals = A.indices[lo:hi], A.data[lo:hi]
            on = live[cols] & (vals != 0)
            if np.count_nonzero(on) != 1:
                continue  # an earlier singleton of this pass fixed its column
            j, a = int(cols[on][0]), float(vals[on][0])
            v = (data.b[i] - float(vals[~on] @ values[cols[~on]])) / a
            if not (data.lb[j] - tol * (1 + abs(v)) <= v <= data.ub[j] + tol * (1 + abs(v))):
                return None
            values[j], live[j], eq_live[i] = v, False, False
            singletons.append((int(i), j, a))
            progress = True
        if not progress:
            break
    idle = _idle_columns(data, A, live, eq_live, values, tol)
    values[idle] = 0.0
    live &= ~idle
    keep = live
    gone = ~keep
    # equality rows: drop the empty ones (their residual must vanish)
    if A.shape[0]:
        res_b = data.b - Ac[:, gone] @ values[gone]
        nnz_live = np.asarray((abs(A) > 0) @ keep.astype(np.int64)).ravel()
        empty = eq_live & (nnz_live == 0)
        if np.any(np.abs(res_b[empty]) > tol * (1.0 + np.abs(data.b[empty]))):
            return None
        eq_rows = np.flatnonzero(eq_live & ~empty)
    else:
        res_b, eq_rows = data.b, np.arange(0)
    G = sp.csr_matrix(data.G)
    res_h = data.h - sp.csc_matrix(G)[:, gone] @ values[gone]
    g_nnz = np.asarray((abs(G) > 0) @ keep.astype(np.int64)).ravel()
    keep_g = np.ones(G.shape[0], dtype=bool)
    lin_empty = np.flatnonzero(g_nnz[: data.l] == 0)
    if np.any(res_h[lin_empty] < -tol * (1.0 + np.abs(data.h[lin_empty]))):
        return None
    keep_g[lin_empty] = False
    cones, start = [], data.l
    for q in data.cones:
        idx = np.arange(start + 1, start + q)
        drop = idx[(g_nnz[idx] == 0) & (res_h[idx] == 0.0)]
        if q - drop.size < 2:
            drop = drop[: max(q - 2, 0)]
        keep_g[drop] = False
        cones.append(int(q - drop.size))
        start += q
    g_rows = np.flatnonzero(keep_g)
    P = data.P
    reduced = ProblemData(
        c=np.asarray(data.c, dtype=float)[keep], A=sp.csr_matrix(A[eq_rows][:, keep]), b=res_b[eq_rows],
        G=sp.csr_matrix(G[g_rows][:, keep]), h=res_h[g_rows], lb=data.lb[keep], ub=data.ub[keep],
        l=int(np.count_nonzero(keep_g[: data.l])), cones=tuple(cones),
        P=None if P is None else sp.csc_matrix(sp.csr_matrix(P)[keep][:, keep]), offset=data.offset, exp=data.exp)
    return Elimination(full=data, keep=keep, values=values, eq_rows=eq_rows, g_rows=g_rows,
                       singletons=tuple(singletons), reduced=reduced, idle=np.flatnonzero(idle))


def _idle_columns(data: ProblemData, A, live: NDArray, eq_live: NDArray, values: NDArray, tol: float) -> NDArray:
    """Live columns that can be set to 0 without changing the optimum: cost 0, no curvature, 0
    within their bounds, no entry in ``G``, and every equality row they enter holds only such
    columns and is satisfied by them at 0 (the residual of the fixed columns is 0). Such a block
    is decoupled from the rest and costs nothing at any feasible point, and 0 is one: e.g. MPM's
    ``u_j - v_j = 0`` once ``w_j`` is fixed, which an interior point would otherwise chase along
    the free ray ``u_j = v_j``."""
    n = data.n
    cand = live & (np.asarray(data.c) == 0.0) & (data.lb <= 0.0) & (data.ub >= 0.0)
    if data.G.shape[0]:
        cand &= np.diff(sp.csc_matrix(data.G).indptr) == 0
    if data.has_quadratic_objective:
        cand &= np.diff(sp.csc_matrix(data.P).indptr) == 0
    if not cand.any() or not A.shape[0]:
        return cand
    absA = (abs(A) > 0).astype(np.int64)
    Ac = sp.csc_matrix(A)
    res = data.b - Ac[:, ~live] @ values[~live] if (~live).any() else np.asarray(data.b, dtype=float)
    zero_res = np.abs(res) <= tol * (1.0 + np.abs(data.b))
    while True:
        others = np.asarray(absA @ (live & ~cand).astype(np.int64)).ravel()  # live non-candidates per row
        closed = eq_live & (others == 0) & zero_res
        bad_rows = eq_live & ~closed
        touched = np.asarray(absA.T @ bad_rows.astype(np.int64)).ravel() > 0
        new = cand & ~touched
        if np.array_equal(new, cand):
            return cand
        cand = new


@attrs.frozen(eq=False)
class Prepared:
    """A problem as a conic backend receives it: fixed columns eliminated (``elim``; ``None``
    when none is fixed), columns rescaled by ``scale`` (``x = scale * v``; ``None`` when not
    rescaled) and the bounds folded into rows."""

    layout: RowsLayout
    scale: NDArray | None
    elim: Elimination | None = None

    @property
    def n(self) -> int:
        """Columns the solver sees (before any epigraph columns a backend adds)."""
        return self.layout.rows.n

    def c(self, data: ProblemData) -> NDArray:
        """The objective vector of ``data`` in the solver's (reduced, rescaled) columns."""
        c = np.asarray(data.c, dtype=float) if self.elim is None else self.elim.c(data)
        return c if self.scale is None else c * self.scale

    def x(self, v: NDArray) -> NDArray:
        """A solution in the original columns."""
        v = v if self.scale is None else v * self.scale
        return v if self.elim is None else self.elim.x(v)

    def duals(self, data: ProblemData, x: NDArray, y: NDArray, z: NDArray) -> tuple[NDArray, NDArray]:
        """Multipliers of ``data``'s rows from the solver's (``x`` from :meth:`x`)."""
        y, z = self.layout.split_duals(y, z)
        return (y, z) if self.elim is None else self.elim.duals(data, x, y, z)

    def ray(self, data: ProblemData, v: NDArray | None = None, y: NDArray | None = None,
            z: NDArray | None = None) -> dict:
        """The evidence of a claim of infeasibility or unboundedness in ``data``'s columns and rows
        (:attr:`~fsframe.backends.base.RawSolution.ray`): a direction ``v`` of the solver's columns
        as ``"dx"`` (rescaled; eliminated columns do not move), and a Farkas certificate ``(y, z)``
        of the solver's rows as ``"y"``, ``"z"`` (the bound rows' multipliers dropped: the check
        takes the bounds in closed form)."""
        out = {}
        if v is not None:
            v = np.asarray(v, dtype=float)
            v = v if self.scale is None else v * self.scale
            if self.elim is not None:
                full = np.zeros(self.elim.values.size)
                full[self.elim.keep] = v
                v = full
            out["dx"] = v
        if y is not None and z is not None:
            y, z = self.layout.split_duals(y, z)
            if self.elim is not None:
                y, z = self.elim.duals(data, np.zeros(data.n), y, z, ray=True)
            out["y"], out["z"] = y, z
        return out


def prepare(data: ProblemData, *, scale: bool = True, reduce: bool = True) -> Prepared:
    """Eliminate the fixed columns (:func:`eliminate`, unless ``reduce=False``), rescale the
    columns with large curvature, then fold the bounds into rows.

    With a quadratic objective, column ``j`` with ``P_jj > 1`` is replaced by
    ``v_j = sqrt(P_jj) x_j`` (Jacobi scaling ``x = D v``, ``D = diag(1/sqrt(max(P_jj, 1)))``):
    ``P -> DPD``, ``c -> Dc``, ``A -> AD``, ``G -> GD``, bounds ``/ D``. The problem is the same
    (row multipliers are unchanged); it is better conditioned when the weights span orders of
    magnitude, as EM's ``phi'(t)/t`` do (docs/performance.md). Columns with ``P_jj <= 1`` are left
    alone (never amplified). ``scale=False`` folds the bounds only.
    """
    elim = eliminate(data) if reduce else None
    if elim is not None:
        data = elim.reduced
    factors = None
    if scale and data.has_quadratic_objective:
        d = np.asarray(data.P.diagonal(), dtype=float)
        if np.any(d > 1.0):
            factors = 1.0 / np.sqrt(np.maximum(d, 1.0))
            D = sp.diags(factors)
            data = data.evolve(c=data.c * factors, A=sp.csr_matrix(data.A @ D), G=sp.csr_matrix(data.G @ D),
                               P=sp.csc_matrix(D @ data.P @ D), lb=data.lb / factors, ub=data.ub / factors)
    return Prepared(layout=expand_bounds(data), scale=factors, elim=elim)


def polish_separable(data: ProblemData, x: NDArray, y: NDArray, z: NDArray) -> NDArray | None:
    """``x`` with stationarity restored exactly on the free columns whose curvature is separable.

    For a free column ``j`` (no finite bound) on which ``P`` has only its diagonal entry
    ``P_jj > 0``, the KKT condition ``c_j + P_jj x_j + (A'y + G'z)_j = 0`` gives ``x_j`` from the
    multipliers: ``x_j -= r_j / P_jj`` with ``r = c + Px + A'y + G'z``. Returns ``None`` when no
    column qualifies. The caller keeps the polished point only if it passes the certificate.
    """
    if not data.has_quadratic_objective:
        return None
    P = sp.csr_matrix(data.P)
    diag = P.diagonal()
    offdiag = np.diff(P.indptr) - (diag != 0)
    cols = ~np.isfinite(data.lb) & ~np.isfinite(data.ub) & (diag > 0) & (offdiag == 0)
    if not cols.any():
        return None
    r = data.c + P @ x + (data.A.T @ y if data.A.shape[0] else 0.0) + (data.G.T @ z if data.G.shape[0] else 0.0)
    out = np.array(x, dtype=float, copy=True)
    out[cols] -= r[cols] / diag[cols]
    return out


def module_version(module: str) -> str:
    """``module.__version__``, or ``""`` when it does not import (``available()`` says why)."""
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:  # pragma: no cover - reported by available()
        return ""
