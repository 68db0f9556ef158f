"""Successive linearisation / iteratively reweighted L1 (FSV, IRL1)."""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import in_

from .base import OuterLoop


@attrs.frozen
class ReweightedL1(OuterLoop):
    r"""Minimise ``loss + sum_j phi(||w_(j)||)`` by successive linearisation of the concave
    ``phi`` (Bradley & Mangasarian 1998's SLA for FSV; Candès, Wakin & Boyd 2008's IRL1).

    Iteration ``k`` solves ``loss + sum_j phi'(t_j^k) s_j`` with ``s_j >= ||w_(j)||``. The
    tangent majorises the concave ``phi``, so ``loss + sum phi`` does not increase
    (checked). Stops when the step ``||(w,b)^{k+1} - (w,b)^k||`` or the decrease of the
    objective falls below ``tol`` (relative). An infinite weight (``lp`` at ``t = 0``) fixes the
    group at zero.

    ``init="l1"`` (default) starts from the L1 solution (unit weights; Candès et al.'s IRL1
    start); ``"zero"`` from the tangent at ``t = 0`` (weights ``phi'(0)``, which must be finite).
    With ``log`` and a small ``eps``, ``phi'(0) = 1/eps`` zeroes every coefficient at once and the
    loop never leaves ``w = 0``; the L1 start avoids that. Descent holds from either start.
    """

    name = "reweighted-l1"
    reference = "Bradley & Mangasarian, ICML 1998 (FSV); Candes, Wakin & Boyd, JFAA 14, 2008"
    init: str = attrs.field(default="l1", validator=in_(("l1", "zero")))

    @property
    def requires(self):  # type: ignore[override]
        return ("derivative", "slope_at_zero") if self.init == "zero" else ("derivative",)

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        if self.init == "zero":
            w0 = surrogate.derivative(np.zeros(sub.n_groups))
        else:
            w0 = np.ones(sub.n_groups)
        it = sub.solve(lin=w0)
        return (yield from self.descend(it, lambda prev: sub.solve(lin=surrogate.derivative(prev.t)), surrogate))
