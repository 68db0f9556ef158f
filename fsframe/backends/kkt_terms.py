"""The matrix and cone operations that fsframe's two checks of a backend's answer share: the
optimality certificate (:mod:`fsframe.backends.certificate`) and the check of an infeasibility or
unboundedness claim (:mod:`fsframe.backends.claims`). ``M' v`` and ``|M|' v`` with the transpose
and ``|M|`` cached by identity (a session certifies the same ``A`` and ``G`` each time), row
maxima, the projection onto the dual cone, and the columns no bound excuses. Both modules call
them through this module (``kkt_terms.rmatvec``), so a test that replaces one here replaces it for
both.
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

from .. import exp_cone
from ..canonical import ProblemData

__all__ = ["project_dual_cone", "cached", "abs_of", "rmatvec", "ABS_CACHE_LIMIT", "abs_rmatvec", "row_max",
           "csr_arrays", "inf_norm", "unexcused", "ABS_CACHE", "TRANSPOSED", "ROW_MAX"]


def project_dual_cone(data: ProblemData, z: NDArray) -> NDArray:
    """``z`` projected onto the dual of ``R_+^l x SOC(q_1) x ... x EXP^k``: the first two are
    self-dual; the exponential cones' triples onto ``K_exp*`` (:func:`fsframe.exp_cone.project_dual`)."""
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
    if data.exp:
        tail = z[k:]
        inside = exp_cone.in_dual_cone(tail)
        if not inside.all():
            z[k:] = np.where(np.repeat(inside, 3), tail, exp_cone.project_dual(tail))
    return z


ABS_CACHE: list = []  # (weak reference to a matrix, |matrix|) of the last few matrices seen
TRANSPOSED: list = []  # (weak reference to a matrix, its transpose) of the last few matrices seen
ROW_MAX: list = []  # (weak reference to a matrix, the largest |entry| of each row, its arrays)


def cached(cache: list, M, make):
    """``make(M)``, cached for a CSR or CSC ``M`` (a session certifies the same A and G each time)
    while ``M`` holds the very arrays it was made from: keyed by weak references to ``M`` and to
    its ``indptr``, ``indices`` and ``data`` (the same objects), so a matrix given new arrays
    (``M.data = ...``) or a new matrix where a deleted one lived (the same ``id``) is answered
    afresh, and the cache keeps no problem alive. Other formats (and dense arrays) are made per
    call: their conversion makes new arrays each time, nothing to check a cache entry against.
    The arrays' values are not compared: they are read-only (:func:`fsframe.backends.certificate.relative_violation`)."""
    if getattr(M, "format", None) not in ("csr", "csc"):
        return make(M)
    arrays = (M.indptr, M.indices, M.data)
    cache[:] = [entry for entry in cache if entry[0]() is not None]
    for i, (r, a, refs) in enumerate(cache):
        if r() is M:
            if all(w() is arr for w, arr in zip(refs, arrays)):
                return a
            del cache[i]
            break
    a = make(M)
    cache.insert(0, (weakref.ref(M), a, tuple(weakref.ref(arr) for arr in arrays)))
    del cache[4:]
    return a


def abs_of(M):
    """``|M|`` elementwise, cached by identity."""
    return cached(ABS_CACHE, M, abs)


def rmatvec(M, v: NDArray) -> NDArray:
    """``M' v``, the transpose cached by identity: scipy builds (and checks) a new transposed
    matrix object on every ``M.T`` (~0.1 ms at an EM dual's size, several per certificate, every
    EM step); the cached one shares ``M``'s arrays."""
    return cached(TRANSPOSED, M, lambda A: A.T) @ v


ABS_CACHE_LIMIT = 20_000_000
"""Matrices with more stored entries than this (240 MB as CSR) are not copied into ``|M|`` (a
2 000 x 40 000 LP would hold another 1 GB): :func:`abs_rmatvec` works through them in row blocks
instead (0.5 s at 8e6 entries, against 0.1 s from the cached copy)."""


def abs_rmatvec(M, v: NDArray) -> NDArray:
    """``|M|' v`` (``v >= 0``): from the cached ``|M|`` for matrices of at most
    :data:`ABS_CACHE_LIMIT` entries, else block by block of rows (a CSR matrix), so no copy of a
    large matrix is kept."""
    if M.nnz <= ABS_CACHE_LIMIT or M.format != "csr":
        return rmatvec(abs_of(M), v)
    out = np.zeros(M.shape[1])
    step = max(1, int(M.shape[0] * ABS_CACHE_LIMIT // max(M.nnz, 1)))
    for i in range(0, M.shape[0], step):
        blk = M[i:i + step]
        blk.data = np.abs(blk.data)  # the slice is a copy: M is untouched
        out += blk.T @ v[i:i + step]
    return out


def row_max(M) -> NDArray:
    """The largest ``|M_ij|`` of each row (0 for a row without entries)."""
    M = M.tocsr()
    out = np.zeros(M.shape[0])
    filled = np.flatnonzero(np.diff(M.indptr))
    if filled.size:
        out[filled] = np.maximum.reduceat(np.abs(M.data), M.indptr[filled])
    return out


def csr_arrays(M) -> tuple:
    """``(indptr, indices, data)`` of ``M`` in CSR, each row's entries in the order a scipy row
    selection keeps them: a CSR matrix's own arrays (nothing copied, nothing to cache), another
    format's converted per call."""
    Mc = M.tocsr()
    return Mc.indptr, Mc.indices, Mc.data


def inf_norm(v) -> float:
    """``max |v_i|`` (0 for an empty ``v``)."""
    return float(np.max(np.abs(v), initial=0.0)) if np.size(v) else 0.0


def unexcused(data: ProblemData, r: NDArray) -> NDArray:
    """Columns whose reduced cost ``r`` no bound excuses: positive with no lower bound, negative
    with no upper bound (the objective still decreases along them)."""
    return ((r > 0) & ~np.isfinite(data.lb)) | ((r < 0) & ~np.isfinite(data.ub))
