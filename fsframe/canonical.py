"""The canonical form of a compiled convex subproblem: what every backend reads.

``ProblemData`` is ECOS's form plus variable bounds::

    minimise    1/2 x'Px + c'x + offset
    subject to  A x = b
                G x <=_K h,   K = R_+^l x SOC(q_1) x ... x SOC(q_r)
                lb <= x <= ub

Bounds are kept apart because HiGHS takes them natively (as column bounds); conic backends
fold them into the ``R_+`` block (:meth:`ProblemData.bounds_as_rows`). This module depends on
numpy and scipy only: backends import it, never the compiler that produces it.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from ._lazy import lazy_module
from .enums import ProblemClass

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["ProblemData"]


@attrs.frozen(eq=False)
class ProblemData:
    """A compiled convex problem (see the module docstring for the form).

    Arrays are not copied; treat them as read-only. Make changed copies with ``evolve``
    (backends then push only the changed parts, detected by identity).
    """

    c: NDArray
    A: sp.csr_matrix
    b: NDArray
    G: sp.csr_matrix
    h: NDArray
    lb: NDArray
    ub: NDArray
    l: int  # noqa: E741 - ECOS's name for the size of the R_+ block
    cones: tuple = ()
    P: sp.csc_matrix | None = None
    offset: float = 0.0
    appended_to: "ProblemData | None" = attrs.field(default=None, repr=False)
    """The problem this one extends by appending columns (same rows, its columns first, then
    new ones): a backend holding that problem live may add the columns instead of reloading
    (:mod:`fsframe.working_set`). ``None``: no such relation is claimed."""

    def __attrs_post_init__(self):
        n = self.c.shape[0]
        for name, M, rhs in (("A", self.A, self.b), ("G", self.G, self.h)):
            if M.shape[1] != n or M.shape[0] != rhs.shape[0]:
                raise ValueError(f"ProblemData: {name} has shape {M.shape}, rhs {rhs.shape}, n={n}")
        if self.l + sum(self.cones) != self.G.shape[0]:
            raise ValueError("ProblemData: l + sum(cones) must equal the rows of G")
        if self.P is not None and self.P.shape != (n, n):
            raise ValueError(f"ProblemData: P has shape {self.P.shape}, expected {(n, n)}")
        old = self.appended_to
        if old is not None and (old.n > n or old.A.shape[0] != self.A.shape[0] or old.G.shape[0] != self.G.shape[0]
                                or old.l != self.l or old.cones != self.cones):
            raise ValueError("ProblemData: appended_to names a problem with other rows or more columns")

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def has_quadratic_objective(self) -> bool:
        return self.P is not None and self.P.nnz > 0

    @property
    def problem_class(self) -> ProblemClass:
        return ProblemClass.of(self.has_quadratic_objective, bool(self.cones))

    def evolve(self, **changes) -> "ProblemData":
        """A changed copy (the claim :attr:`appended_to` is dropped unless restated)."""
        changes.setdefault("appended_to", None)
        return attrs.evolve(self, **changes)

    def objective(self, x: NDArray) -> float:
        val = float(self.c @ x) + self.offset
        if self.has_quadratic_objective:
            val += 0.5 * float(x @ (self.P @ x))
        return val

    def max_violation(self, x: NDArray) -> float:
        """Largest violation of any constraint or bound at ``x`` (absolute)."""
        viol = [0.0]
        if self.A.shape[0]:
            viol.append(float(np.max(np.abs(self.A @ x - self.b))))
        if self.G.shape[0]:
            s = self.h - self.G @ x
            if self.l:
                viol.append(float(np.max(-s[: self.l], initial=0.0)))
            k = self.l
            for q in self.cones:
                viol.append(max(0.0, float(np.linalg.norm(s[k + 1 : k + q]) - s[k])))
                k += q
        viol.append(float(np.max(self.lb - x, initial=0.0)))
        viol.append(float(np.max(x - self.ub, initial=0.0)))
        return max(viol)

    def bounds_as_rows(self) -> "ProblemData":
        """The same problem with finite bounds moved into the ``R_+`` block of ``G`` (for conic
        solvers that take no bounds). Fixed variables (``lb == ub``) become equality rows."""
        n = self.n
        fixed = np.flatnonzero(self.lb == self.ub)
        lo = np.flatnonzero(np.isfinite(self.lb) & (self.lb != self.ub))
        up = np.flatnonzero(np.isfinite(self.ub) & (self.lb != self.ub))
        E = sp.csr_matrix((np.ones(fixed.size), (np.arange(fixed.size), fixed)), shape=(fixed.size, n))
        Glo = sp.csr_matrix((-np.ones(lo.size), (np.arange(lo.size), lo)), shape=(lo.size, n))
        Gup = sp.csr_matrix((np.ones(up.size), (np.arange(up.size), up)), shape=(up.size, n))
        G = sp.vstack([self.G[: self.l], Glo, Gup, self.G[self.l :]], format="csr")
        h = np.concatenate([self.h[: self.l], -self.lb[lo], self.ub[up], self.h[self.l :]])
        A = sp.vstack([self.A, E], format="csr")
        b = np.concatenate([self.b, self.lb[fixed]])
        return attrs.evolve(self, appended_to=None, A=A, b=b, G=G, h=h, l=self.l + lo.size + up.size,
                            lb=np.full(n, -np.inf), ub=np.full(n, np.inf))
