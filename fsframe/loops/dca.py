"""The DC algorithm (paper 000, §2.2 and Algorithm 1)."""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import in_

from .base import OuterLoop


@attrs.frozen
class DCA(OuterLoop):
    r"""DCA for ``min loss + sum_j phi(||w_(j)||)`` with ``phi = g - h`` (000 eqs. 37-41).

    Iteration ``k`` solves the convex program (000 eq. 41, as the SOCP/LP 42-46)::

        min  loss + sum_j g(s_j) - grad_h(w^k) . w,    s_j >= ||w_(j)||

    where, per coefficient, ``grad_h(w^k)_i = h'(t_j^k) * w_i^k / t_j^k`` (000 eq. 40 for
    scalar groups: ``alpha * sign(w) * (1 - exp(-alpha |w|))``) and 0 where ``t_j^k = 0``.
    Starting point (Algorithm 1 step 1 asks for any ``x^0`` in the feasible set): ``init="l1"``
    (default) is the L1 solution, ``min loss + sum_j ||w_(j)||`` — for MPM the L1-MPM solution, as
    the paper's experiments start; ``init="zero"`` is the DCA step from ``x = 0``, i.e. the minimiser
    of ``loss + g``. (With ``log`` and a small ``eps``, ``g = t/eps`` makes that step ``w = 0``, a
    fixed point of DCA.) The DC objective decreases from either start.

    Stopping rule (Algorithm 1, step 4): stop when ``||x^{k+1} - x^k|| < tol`` or
    ``f(x^{k+1}) >= f(x^k) - tol`` with ``x = (w, b)`` and ``f = g - h + loss``; both tolerances are
    relative (scaled by ``max(1, |.|)``). Theorem 1: ``f`` decreases monotonically — a rise larger
    than ``tol`` is reported. ``n_iter`` counts every convex solve, the starting one included.
    """

    name = "dca"
    reference = "Yang & Ju, paper 000, Algorithm 1; Pham Dinh & Le Thi 1997"
    requires = ("dc_split",)
    init: str = attrs.field(default="l1", validator=in_(("l1", "zero")))

    def terms(self, surrogate):
        split = surrogate.dc_split()
        return frozenset({"lin", "lin_w", "quad"} if split.quad else {"lin", "lin_w"})

    def _solve(self, sub, split, it):
        quad = np.full(sub.n_groups, split.quad) if split.quad else None
        if it is None:
            lin_w = np.zeros(sub.n_coef)
        else:
            groups = sub.compiled.slot.groups
            t = it.t
            scale = np.zeros_like(t)
            np.divide(split.grad_h(t), t, out=scale, where=t > 0)
            lin_w = -scale[groups] * it.coef
        return sub.solve(lin=np.full(sub.n_groups, split.lin), lin_w=lin_w, quad=quad)

    def steps(self, sub, surrogate, run):
        split = surrogate.dc_split()
        if self.init == "l1":
            it = sub.solve(lin=np.ones(sub.n_groups), lin_w=np.zeros(sub.n_coef),
                           quad=np.zeros(sub.n_groups) if split.quad else None)
        else:
            it = self._solve(sub, split, None)
        return (yield from self.descend(it, lambda prev: self._solve(sub, split, prev), surrogate))
