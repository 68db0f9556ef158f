"""The separation stop of the descent loops (DCA, IRL1:
:meth:`~fsframe.loops.base.OuterLoop.descend`): on a loss that vanishes only at infinity
(logistic, multinomial), an iterate that separates the training classes (:func:`separating`) and a
penalty that no longer holds its scale (:func:`separated`) leave the next subproblem without a
minimiser within the solvers' reach, so the loop stops there with the reason
:data:`SEPARATION_STOP` (docs/glm.md, "Separated classes")."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..surrogates.base import Surrogate
from .selection import contribution, group_scale, support_of

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["SEPARATION_STOP", "separated", "separating"]

SEPARATION_STOP = "separated classes, saturated surrogate"  # the stop reason of the separation stop


def separated(loop, it: Iterate, surrogate: Surrogate, sub: Subproblem | None) -> str | None:
    """Why the subproblem linearised at ``it`` has no minimiser within reach, or ``None``.

    For a formulation whose loss vanishes only at infinity (protocol ``separating_loss``:
    logistic, multinomial): ``it``'s loss below ``separating_loss()`` means every training
    sample has a positive margin (a term with a margin at most 0 is at least ``C log 2``), so
    along ``it``'s own direction, ``s (w, b)`` with ``s -> inf``, the loss tends to 0. The
    linearised penalty (DCA's ``g' - h'`` and IRL1's weight are both ``phi'(t_j)``) charges
    ``rho = sum_j phi'(t_j) t_j`` per unit of ``s``. When ``rho <= tol * max(1, f)`` (``f``
    the loop's objective at ``it``) the next subproblem's minimiser lies where the loss is
    below what a solver resolves (margins near ``log(C m / rho)``), and with ``rho = 0`` in
    double precision (exp: ``alpha t_j > 36`` on every selected group) there is none: solvers
    stall (``optimal_inaccurate``, or a failure). Paper 000's convergence result assumes
    bounded iterates; on separated classes they are not."""
    evidence = separating(it, sub)
    support = support_of(contribution(it.t, group_scale(sub)), loop.zero_tol)
    if evidence is None or not support.any() or "derivative" not in surrogate.provides(("derivative",)):
        return None
    t = it.t[support]
    rho = float(np.sum(np.asarray(surrogate.derivative(t), dtype=float) * t))
    f = loop.surrogate_objective(it, surrogate, raw=True)
    if not rho <= loop.tol * max(1.0, abs(f)):
        return None
    return (f"the iterate separates the training classes ({evidence}) and the penalty no longer holds the "
            f"scale of its {int(support.sum())} selected groups "
            f"(sum_j phi'(t_j) t_j = {rho:.3g} <= tol * f): the next subproblem's loss vanishes only at "
            "infinity, so its minimiser is out of the solvers' reach or does not exist. The support is this "
            "iterate's; the coefficients' scale is arbitrary. The classes are (nearly) separable at this C: "
            "for a bounded model lower C (or the surrogate's alpha), or use an EM or log method")


def separating(it: Iterate, sub: Subproblem | None) -> str | None:
    """Why ``it`` separates the training classes (every margin positive), or ``None`` (also
    without the protocols): its loss below the formulation's ``separating_loss()`` (every
    margin positive then), or else the formulation's ``margins(X, y, coef, intercept)`` all
    positive — a loss above ``C log 2`` can still separate (many small positive margins)."""
    form = getattr(sub, "formulation", None)
    bound = getattr(form, "separating_loss", None)
    if bound is None or it.loss is None:
        return None
    limit = float(bound())
    if it.loss < limit:
        return f"loss {it.loss:.3g} < {limit:.3g}: every margin positive"
    margins = getattr(form, "margins", None)
    if margins is None or it.coef is None:
        return None
    coef = np.asarray(it.coef, dtype=float)
    if sub.is_built:  # the model's shape (BuiltModel.coef_shape: a row per class for multinomial)
        coef = coef.reshape(sub.built.coef_shape)
    m = np.asarray(margins(sub.X, sub.y, coef, it.intercept), dtype=float)
    if m.size and np.all(m > 0):
        return f"every margin positive, the smallest {float(m.min()):.3g}; loss {it.loss:.3g}"
    return None
