"""Positive semidefinite checks and factors of symmetric sparse matrices (the Hessians of convex
quadratic objectives): :func:`check_psd` refuses a nonconvex objective with a typed error naming its
most negative eigenvalue, :func:`psd_factor` returns ``F`` with ``F'F = P`` (the epigraph form of a
quadratic objective for conic solvers). Both work block by block on the connected components of
the sparsity graph of ``P``, so a diagonal or block-diagonal Hessian costs ``O(nnz)``.
"""

from __future__ import annotations

import numpy as np

from ._lazy import lazy_module
from .errors import UnsupportedProblemError

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["PSD_RTOL", "check_psd", "psd_factor"]


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
    from scipy.sparse.csgraph import connected_components

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
    from scipy.sparse.csgraph import connected_components

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
