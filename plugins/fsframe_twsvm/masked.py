"""The twin SVM's mask space for the greedy loop (paper 003 eqs. 19-24): linear and RBF.

* eq. 24's loss at fixed surfaces, as a function of the two surfaces' outputs
  ``R = (f_1, f_2)`` at every training sample (:func:`twin_loss`), shared by both kernels;
* linear: :class:`fsframe.loops.greedy.LinearMaskSpace` (columns fixed at zero by bounds,
  ``R`` updated in O(m) per flip);
* RBF (:class:`RBFMaskSpace`): ``E`` acts inside the kernel ``K(A E, A E)`` (eq. 19), so a mask
  changes the LP's kernel rows. They are rewritten in the compiled problem in numpy (same
  sparsity pattern; no Pyomo rebuild, no recompile). The flip sweep keeps ``K`` and updates it
  per flip by the factor ``exp(-/+ (x_ij - x_kj)^2 / (2 width^2))`` (O(m^2), never the whole
  kernel from the data).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from fsframe.errors import UnsupportedProblemError
from fsframe.loops.greedy import LinearMaskSpace, MaskEvaluator, MaskSpace, check_mask

from .kernel import MaskedRBF, rbf_kernel

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from fsframe.problem import Iterate, Subproblem

__all__ = ["twin_loss", "twin_objective", "TwinLinearMaskSpace", "RBFMaskEvaluator", "RBFMaskSpace",
           "twin_mask_space"]


def twin_objective(space, it: Iterate, mask: NDArray, R: NDArray) -> float:
    """eq. 21 without ``sigma tr E``: ``lam ||u1||_1 + (1 - lam) ||u2||_1 + twin_loss(R)`` at the
    surfaces' outputs ``R`` (shape ``(m, 2)``) under ``mask``."""
    lam = space.sub.formulation.lam
    reg = np.abs(it.coef.reshape(2, -1)).sum(axis=1)
    return float(lam * reg[0] + (1.0 - lam) * reg[1] + space.loss(R))


class TwinLinearMaskSpace(LinearMaskSpace):
    """:class:`~fsframe.loops.greedy.LinearMaskSpace` with eq. 21's ``lam`` weighting."""

    def objective(self, it, mask):
        W, b = self.blocks(it)
        return twin_objective(self, it, mask, self.X[:, mask] @ W[mask] + b)


def twin_loss(pos: NDArray, c11: float, c12: float, c21: float, c22: float, lam: float):
    """eq. 24 without ``sigma tr E``: ``loss(R)`` for ``R`` of shape ``(..., m, 2)``::

        lam (c11 ||f1(A1)||_1 + c12 ||(e + f1(A2))_+||_1) + (1 - lam) (c21 ||f2(A2)||_1 + c22 ||(e - f2(A1))_+||_1)
    """
    pos = np.asarray(pos, dtype=bool)
    neg = ~pos

    def loss(R):
        f1, f2 = R[..., 0], R[..., 1]
        one = c11 * np.abs(f1[..., pos]).sum(-1) + c12 * np.maximum(1.0 + f1[..., neg], 0.0).sum(-1)
        two = c21 * np.abs(f2[..., neg]).sum(-1) + c22 * np.maximum(1.0 - f2[..., pos], 0.0).sum(-1)
        return lam * one + (1.0 - lam) * two

    return loss


class RBFMaskEvaluator(MaskEvaluator):
    """eq. 24's loss of the kernel surfaces ``R = K(A E, A E) U + b``, with ``K`` updated per flip
    by ``K *= exp(-/+ (x_ij - x_kj)^2 / (2 width^2))``."""

    def __init__(self, X: NDArray, width: float, U: NDArray, b: NDArray, mask: NDArray, loss):
        self.X, self.width, self.U, self.b, self.loss = X, width, U, np.asarray(b, dtype=float).reshape(1, -1), loss
        self.mask = np.array(mask, dtype=bool)
        self.K = rbf_kernel(X[:, self.mask], X[:, self.mask], width)
        self.value = float(loss(self.K @ U + self.b))
        self._pending = None

    def _factor(self, j: int) -> NDArray:
        d = self.X[:, j, None] - self.X[None, :, j]
        e = d * d / (2.0 * self.width**2)
        return np.exp(e if self.mask[j] else -e)  # removing j divides out its factor, adding multiplies it in

    def trial(self, j):
        K = self.K * self._factor(j)
        self._pending = (j, K)
        return float(self.loss(K @ self.U + self.b))

    def commit(self, j):
        if self._pending is None or self._pending[0] != j:
            self.trial(j)
        self.K = self._pending[1]
        self.mask[j] = ~self.mask[j]
        self.value = float(self.loss(self.K @ self.U + self.b))
        self._pending = None

    def scratch(self, mask):
        mask = np.asarray(mask, dtype=bool)
        return float(self.loss(rbf_kernel(self.X[:, mask], self.X[:, mask], self.width) @ self.U + self.b))


class RBFMaskSpace(MaskSpace):
    """The RBF twin SVM under a feature mask (eqs. 19-20): the kernel entries of the compiled
    problem (constraint rows and the ``c11 e'K(A1, A) u`` objective terms of eq. 11) are
    rewritten for ``K(A E, A E)``; the problem is then solved in the same session."""

    lps_per_solve = 2

    def __init__(self, sub: Subproblem, loss):
        f = sub.formulation
        self.sub, self.loss = sub, loss
        self.X = np.asarray(sub.X, dtype=float)
        m, self.n_features = self.X.shape
        self.width = float(sub.built.info["width"])
        pos = np.asarray(sub.y) > 0
        model, comp = sub.built.model, sub.compiled
        d = m
        # where the kernel enters the compiled problem: columns of p, q (block k, sample index i)
        pc, qc = comp.cols(list(model.p.values())), comp.cols(list(model.q.values()))
        ncol = comp.base.n
        kcol = np.full(ncol, -1)
        kcol[pc] = np.arange(2 * d) % d
        kcol[qc] = np.arange(2 * d) % d
        kblock = np.full(ncol, -1)
        kblock[pc] = np.arange(2 * d) // d
        kblock[qc] = np.arange(2 * d) // d
        # the sample each row belongs to: the one slack (t or xi) column it holds
        sample = np.full(ncol, -1)
        idx_pos, idx_neg = np.flatnonzero(pos), np.flatnonzero(~pos)
        for name, rows in (("t1", idx_pos), ("xi1", idx_neg), ("t2", idx_neg), ("xi2", idx_pos)):
            sample[comp.cols(list(getattr(model, name).values()))] = rows
        base = comp.base
        if base.A.shape[0] and np.any(kcol[base.A.indices] >= 0):
            raise UnsupportedProblemError("twsvm rbf: kernel entries in equality rows (unexpected compiled form)")
        G = base.G.tocsr()
        G.sort_indices()
        row_of = np.repeat(np.arange(G.shape[0]), np.diff(G.indptr))
        has = sample[G.indices] >= 0
        row_sample = np.full(G.shape[0], -1)
        row_sample[row_of[has]] = sample[G.indices[has]]
        self._G = G
        self._entries = np.flatnonzero(kcol[G.indices] >= 0)
        self._er, self._ec = row_sample[row_of[self._entries]], kcol[G.indices[self._entries]]
        if np.any(self._er < 0):
            raise UnsupportedProblemError("twsvm rbf: a kernel row without its slack (unexpected compiled form)")
        K0 = rbf_kernel(self.X, self.X, self.width)
        self._ratio = G.data[self._entries] / K0[self._er, self._ec]
        self._cc = np.flatnonzero(kcol >= 0)
        own = [pos, ~pos]
        colsum0 = np.stack([K0[own[0]].sum(0), K0[own[1]].sum(0)])
        self._cblock, self._ci = kblock[self._cc], kcol[self._cc]
        self._cratio = base.c[self._cc] / colsum0[self._cblock, self._ci]
        self._own = own
        self._base = base

    def install(self, mask: NDArray) -> None:
        """Rewrite the compiled problem's kernel entries for ``K(A E, A E)`` (no rebuild)."""
        K = rbf_kernel(self.X[:, mask], self.X[:, mask], self.width)
        G = self._G.copy()
        G.data[self._entries] = self._ratio * K[self._er, self._ec]
        c = self._base.c.copy()
        colsum = np.stack([K[self._own[0]].sum(0), K[self._own[1]].sum(0)])
        c[self._cc] = self._cratio * colsum[self._cblock, self._ci]
        self.sub.compiled.base = self._base.evolve(G=G, c=c)

    def solve(self, mask):
        mask = check_mask(mask, self.n_features)
        self.install(mask)
        return self.sub.solve(lin=np.ones(self.sub.n_groups))

    def _blocks(self, it: Iterate):
        return it.coef.reshape(2, -1).T, np.asarray(it.intercept, dtype=float).reshape(2)

    def evaluator(self, it, mask):
        U, b = self._blocks(it)
        return RBFMaskEvaluator(self.X, self.width, U, b, check_mask(mask, self.n_features), self.loss)

    def feature_values(self, it, chunk: int = 16):
        U, b = self._blocks(it)
        out = np.empty(self.n_features)
        for s in range(0, self.n_features, chunk):
            x = self.X[:, s:s + chunk]  # (m, c)
            D = x[:, None, :] - x[None, :, :]  # (m, m, c): feature i alone
            K = np.exp(-(D * D) / (2.0 * self.width**2)).transpose(2, 0, 1)
            out[s:s + chunk] = self.loss(K @ U + b)
        return out

    def objective(self, it, mask):
        U, b = self._blocks(it)
        return twin_objective(self, it, mask, rbf_kernel(self.X[:, mask], self.X[:, mask], self.width) @ U + b)

    def transform(self, mask):
        return MaskedRBF(self.X, np.array(mask, dtype=bool), self.width, support_of="features")


def twin_mask_space(sub: Subproblem) -> MaskSpace:
    """The greedy loop's mask space of a fitted twin-SVM subproblem (linear or RBF)."""
    f = sub.formulation
    loss = twin_loss(np.asarray(sub.y) > 0, f.c11, f.c12, f.c21, f.c22, f.lam)
    if f.kernel == "rbf":
        return RBFMaskSpace(sub, loss)
    return TwinLinearMaskSpace(sub, loss, lps_per_solve=2)
