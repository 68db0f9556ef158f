"""What the conic backends (ECOS, Clarabel) share: the bounds-as-rows layout and its inverse for
multipliers, a PSD factor of a Hessian (for ECOS's rotated-cone epigraph), and the final check
of an optimal answer against fsframe's own certificate.

Both solvers take no variable bounds, so a session folds them into the ``R_+`` block with
:meth:`ProblemData.bounds_as_rows` (fixed columns become equality rows). The solver's multipliers
then live on the expanded rows; :class:`RowsLayout` maps them back to the rows of the original
``ProblemData`` so that :func:`~fsframe.backends.base.certify` checks the problem as compiled
(bounds handled in closed form), exactly as it does for HiGHS.
"""

from __future__ import annotations

import importlib

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from ..enums import Status
from ..errors import UnsupportedProblemError
from .base import Certificate, SolveOptions, certify
from ..canonical import ProblemData

__all__ = ["RowsLayout", "expand_bounds", "Prepared", "prepare", "psd_factor", "check_psd", "polish_separable",
           "certify_optimal", "module_version"]


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
class Prepared:
    """A problem as a conic backend receives it: columns rescaled by ``scale`` (``x = scale * v``;
    ``None`` when not rescaled) and the bounds folded into rows."""

    layout: RowsLayout
    scale: NDArray | None

    def c(self, data: ProblemData) -> NDArray:
        """The objective vector of ``data`` in the rescaled columns."""
        c = np.asarray(data.c, dtype=float)
        return c if self.scale is None else c * self.scale

    def x(self, v: NDArray) -> NDArray:
        """A solution in the original columns."""
        return v if self.scale is None else v * self.scale


def prepare(data: ProblemData, *, scale: bool = True) -> Prepared:
    """Rescale the columns with large curvature, then fold the bounds into rows.

    With a quadratic objective, column ``j`` with ``P_jj > 1`` is replaced by
    ``v_j = sqrt(P_jj) x_j`` (Jacobi scaling ``x = D v``, ``D = diag(1/sqrt(max(P_jj, 1)))``):
    ``P -> DPD``, ``c -> Dc``, ``A -> AD``, ``G -> GD``, bounds ``/ D``. The problem is the same
    (row multipliers are unchanged); it is better conditioned when the weights span orders of
    magnitude, as EM's ``phi'(t)/t`` do. Measured on an MPM + exp + EM subproblem (Sonar, weights
    2.6 to 7.4e3): Clarabel stopped with ``InsufficientProgress`` and ECOS's answer failed
    fsframe's certificate; rescaled, both solved it to ``OPTIMAL``. Columns with ``P_jj <= 1``
    are left alone (never amplified). ``scale=False`` folds the bounds only.
    """
    factors = None
    if scale and data.has_quadratic_objective:
        d = np.asarray(data.P.diagonal(), dtype=float)
        if np.any(d > 1.0):
            factors = 1.0 / np.sqrt(np.maximum(d, 1.0))
            D = sp.diags(factors)
            data = data.evolve(c=data.c * factors, A=sp.csr_matrix(data.A @ D), G=sp.csr_matrix(data.G @ D),
                               P=sp.csc_matrix(D @ data.P @ D), lb=data.lb / factors, ub=data.ub / factors)
    return Prepared(layout=expand_bounds(data), scale=factors)


PSD_RTOL = 1e-9
"""Relative tolerance of the convexity checks: an eigenvalue below ``-PSD_RTOL * max|P_ij|``
makes a Hessian nonconvex (:func:`psd_factor`, :func:`check_psd`)."""


def _not_convex(lam_min: float, bound: bool = False) -> UnsupportedProblemError:
    what = f"an eigenvalue <= {lam_min:.3g}" if bound else f"eigenvalue {lam_min:.3g}"
    return UnsupportedProblemError(
        f"the quadratic objective is not convex (P has {what}); fsframe solves convex problems only")


def check_psd(P: sp.spmatrix, *, diagonal_only: bool = False) -> None:
    """Raise :class:`UnsupportedProblemError` unless the symmetric ``P`` is positive semidefinite
    (to :data:`PSD_RTOL`), naming its most negative eigenvalue.

    A diagonal ``P`` (every EM subproblem) is checked by sign. Otherwise ``P`` is split into the
    connected components of its sparsity graph, as in :func:`psd_factor`, and each block is
    Cholesky-factored after a shift of ``PSD_RTOL * max|P_ij|`` (components of equal size in one
    batched call); eigenvalues are computed only when a factorisation fails, for the message.
    ``diagonal_only`` checks the diagonal's signs only (a necessary condition, ``O(nnz)``: for
    re-solves, where a full check per iteration would cost too much).
    """
    P = sp.csr_matrix(P, dtype=float)
    scale = float(np.max(np.abs(P.data), initial=0.0))
    if scale == 0.0:
        return
    tol = PSD_RTOL * scale
    d = P.diagonal()
    diagonal = P.nnz == np.count_nonzero(d)
    if diagonal or diagonal_only:
        if d.min() < -tol:
            raise _not_convex(float(d.min()), bound=not diagonal)
        return
    P = ((P + P.T) * 0.5).tocsr()
    P.eliminate_zeros()
    active = np.flatnonzero(np.diff(P.indptr) > 0)
    sub = P[active][:, active].tocoo()
    n_comp, label = connected_components(sub, directed=False)
    sizes = np.bincount(label, minlength=n_comp)
    order = np.argsort(label, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    pos = np.empty(active.size, dtype=np.int64)
    pos[order] = np.arange(active.size) - bounds[label[order]]
    for s in np.unique(sizes).tolist():
        comps = np.flatnonzero(sizes == s)
        slot = np.full(n_comp, -1)
        slot[comps] = np.arange(comps.size)
        mine = slot[label[sub.row]] >= 0
        blocks = np.zeros((comps.size, s, s))
        blocks[slot[label[sub.row[mine]]], pos[sub.row[mine]], pos[sub.col[mine]]] = sub.data[mine]
        blocks[:, np.arange(s), np.arange(s)] += tol
        try:
            np.linalg.cholesky(blocks)
        except np.linalg.LinAlgError:
            raise _not_convex(float(np.linalg.eigvalsh(blocks).min()) - tol) from None


def psd_factor(P: sp.spmatrix, *, rtol: float = 1e-12) -> sp.csr_matrix:
    """A factor ``F`` (``k x n``, sparse) with ``F'F = P`` for a symmetric PSD ``P``.

    ``P`` is split into the connected components of its sparsity graph; a 1x1 component is a
    square root, a larger one an eigendecomposition ``V diag(lam) V'`` of that dense block (so
    the factor of ``W' diag(d) W`` with ``W = [I, -I]`` costs ``n`` 2x2 problems, not one
    ``2n x 2n``). Components of equal size are factored in one batched ``numpy.linalg.eigh``.
    Eigenvalues below ``rtol * max|lam|`` are dropped (rows of ``F`` only for the range of ``P``).

    Raises
    ------
    UnsupportedProblemError
        if ``P`` has an eigenvalue below ``-PSD_RTOL * max|P_ij|``: the objective is not convex.
    """
    P = sp.csr_matrix(P, dtype=float)
    n = P.shape[0]
    P = ((P + P.T) * 0.5).tocsr()
    P.eliminate_zeros()
    scale = float(np.max(np.abs(P.data), initial=0.0))
    if scale == 0.0:
        return sp.csr_matrix((0, n))
    active = np.flatnonzero(np.diff(P.indptr) > 0)
    sub = P[active][:, active].tocoo()
    n_comp, label = connected_components(sub, directed=False)
    order = np.argsort(label, kind="stable")
    bounds = np.searchsorted(label[order], np.arange(n_comp + 1))
    sizes = np.diff(bounds)
    pos = np.empty(active.size, dtype=np.int64)  # position of each active column in its block
    pos[order] = np.arange(active.size) - bounds[label[order]]
    rows_i, rows_j, rows_v = [], [], []  # COO of F
    n_rows = 0
    for s in np.unique(sizes).tolist():
        comps = np.flatnonzero(sizes == s)
        slot = np.full(n_comp, -1)
        slot[comps] = np.arange(comps.size)
        members = order[bounds[comps][:, None] + np.arange(s)[None, :]]  # (k, s) local column ids
        blocks = np.zeros((comps.size, s, s))
        mine = slot[label[sub.row]] >= 0
        blocks[slot[label[sub.row[mine]]], pos[sub.row[mine]], pos[sub.col[mine]]] = sub.data[mine]
        lam, V = np.linalg.eigh(blocks)  # block = V diag(lam) V'
        if np.any(lam < -PSD_RTOL * scale):
            raise _not_convex(float(lam.min()))
        bb, ee = np.nonzero(lam > rtol * scale)
        r = bb.size
        # row of F: sqrt(lam_e) * V[:, e]' on the block's columns
        rows_v.append((np.sqrt(lam[bb, ee])[:, None] * V[bb, :, ee]).ravel())
        rows_j.append(active[members[bb]].ravel())
        rows_i.append(np.repeat(n_rows + np.arange(r), s))
        n_rows += r
    if not n_rows:
        return sp.csr_matrix((0, n))
    F = sp.csr_matrix((np.concatenate(rows_v), (np.concatenate(rows_i), np.concatenate(rows_j))), shape=(n_rows, n))
    F.eliminate_zeros()
    return F


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


def certify_optimal(status: Status, data: ProblemData, x: NDArray, y: NDArray, z: NDArray, objective: float,
                    options: SolveOptions) -> tuple[Status, Certificate | None, str]:
    """Run :func:`certify` on an ``OPTIMAL`` answer; return the (possibly downgraded) status, the
    certificate and a message suffix (empty when the check passed or did not run)."""
    if status is not Status.OPTIMAL or not options.certify:
        return status, None, ""
    cert = certify(data, x, y, z, objective)
    if cert.ok(options.cert_tol):
        return status, cert, ""
    return Status.OPTIMAL_INACCURATE, cert, (
        f"; fsframe certificate failed (primal residual {cert.primal_residual:.2e}, dual residual "
        f"{cert.dual_residual:.2e}, gap {cert.gap:.2e})")
