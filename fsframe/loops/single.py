"""One convex solve: the convex baselines (L1-SVM, L1-MPM, the L2 SVM of ``svm-weights``)."""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import in_

from .base import OuterLoop, Step


@attrs.frozen
class SingleSolve(OuterLoop):
    """Solve the convex model of the penalty once.

    ``penalty="l1"``: weights ``phi'(0)`` on the group norms (1 without a surrogate, or for
    ``l1``), i.e. ``loss + sum_j phi'(0) ||w_(j)||`` — L1-SVM (001 eq. 2), L1-MPM (000 eqs.
    12-15). ``penalty="l2"``: ``loss + sum_j ||w_(j)||^2`` — the standard SVM whose largest
    weights ``svm-weights`` keeps (002 §3, footnote 5). The reported objective is the
    subproblem's, attained by the returned model (its loss at the least slacks plus the penalty
    of its coefficients).
    """

    name = "single"
    sparse_input = True  # reaches the data only through sub.solve
    reference = "paper 001 eq. 2; paper 000 eqs. 12-15"
    needs_surrogate = False
    monotone = False
    penalty: str = attrs.field(default="l1", validator=in_(("l1", "l2")))

    @property
    def sparse(self) -> bool:  # type: ignore[override]
        """``penalty="l2"`` has no sparsity of its own: its weights rank the features."""
        return self.penalty == "l1"

    @property
    def requires(self):  # type: ignore[override]
        return ("derivative", "slope_at_zero") if self.penalty == "l1" else ()

    def terms(self, surrogate):
        return frozenset({"lin"}) if self.penalty == "l1" else frozenset({"quad"})

    def convex_weights(self, surrogate, n_groups: int) -> dict | None:
        """The slot weights of the one convex subproblem this loop solves with ``penalty="l1"``
        (``{"lin": phi'(0)}`` on every group), for a fit that solves it without a Pyomo model
        (the formulation's ``from_data`` protocol, :func:`fsframe.fit`); ``None`` for ``"l2"``."""
        if self.penalty != "l1":
            return None
        w0 = 1.0 if surrogate is None else float(surrogate.derivative(np.zeros(1))[0])
        return {"lin": np.full(n_groups, w0)}

    def steps(self, sub, surrogate, run):
        weights = self.convex_weights(surrogate, sub.n_groups)
        if weights is not None:
            it = sub.solve(**weights)
        else:
            it = sub.solve(quad=np.ones(sub.n_groups))
        yield Step(it, it.objective, monitored=None)
        return True, "single solve"
