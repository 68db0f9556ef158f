"""The :class:`Surrogate` base: a concave, non-decreasing ``phi`` on ``[0, inf)`` with
``phi(0) = 0`` that approximates the indicator ``1{t > 0}``, and its convex models.

A surrogate is pure numpy: it never sees a solver. Outer loops turn its models into the
weights of the subproblem's sparsity slot (see :mod:`fsframe.formulation`):

========================  ================================  ==============================
capability                 model of ``phi`` around ``t^k``    used by
========================  ================================  ==============================
``derivative(t)``          ``phi'(t^k) * t`` (tangent)        ``reweighted-l1``, ``single``
``dc_split()``             ``g(t) - h'(t^k) * t`` (DCA)       ``dca`` (000 Alg. 1)
``quad_weights(t)``        ``phi'(t^k)/t^k * t^2``            ``em`` (002 eqs. 7-9)
========================  ================================  ==============================

Subclasses implement ``phi`` and whichever models they can; :meth:`Surrogate.capabilities`
reports which models an *instance* supports, :meth:`Surrogate.provides` adds what follows from
them or from its parameters (:data:`PROVIDES`), and loops refuse a surrogate that lacks what they
require (``OuterLoop.requires``) before anything is solved.
"""

from __future__ import annotations

import abc
from typing import Callable, ClassVar

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Surrogate", "DCSplit", "CAPABILITIES", "PROVIDES"]

CAPABILITIES = ("derivative", "dc_split", "quad_weights")
"""The optional models a surrogate may implement (methods of the same names)."""

PROVIDES = {
    "derivative": "derivative",
    "dc_split": "dc_split",
    "quad_weights": "quad_weights",
    "slope_at_zero": "a finite derivative at 0 (slope_at_zero)",
    "lp_norm": "phi(t) = t**p exactly, 0 < p <= 1, with the exponent as attribute p (lp_norm)",
}
"""What a loop may require of a surrogate (``OuterLoop.requires``), and how a refusal names it:
the three models, ``slope_at_zero`` (``phi'(0)`` finite: the L1 weight of ``single``, of a bound
search, of ``reweighted-l1`` from ``init="zero"``) and ``lp_norm`` (the ``l_{2,p}`` norm DSO-FS
minimises). A third party may add names of its own; they are matched as declared."""


@attrs.frozen
class DCSplit:
    """``phi(t) = g(t) - h(t)`` on ``t >= 0``.

    ``g(t) = lin * t + quad * t**2`` is convex and expressible in every subproblem (a linear
    weight on the group-norm epigraph, a quadratic weight on the group's squared norm);
    ``h`` is convex, non-decreasing and differentiable with ``h(0) = 0`` and derivative
    ``grad_h``. Composed with a group norm ``t = ||w_(j)||`` both stay convex in ``w``,
    which is what DCA (000 §2.2, eq. 11) needs.
    """

    lin: float
    h: Callable[[NDArray], NDArray] = attrs.field(repr=False)
    grad_h: Callable[[NDArray], NDArray] = attrs.field(repr=False)
    quad: float = 0.0

    def g(self, t: ArrayLike) -> NDArray:
        t = np.asarray(t, dtype=float)
        return self.lin * t + self.quad * t * t


@attrs.frozen
class Surrogate(abc.ABC):
    """Base class of L0-norm surrogates ``phi``.

    Subclasses are frozen attrs classes whose fields are the surrogate's parameters
    (validated on construction) and set the class variables below.
    """

    name: ClassVar[str]
    """Registry key, lower case (``"exp"``)."""
    reference: ClassVar[str] = ""
    """Where the formula comes from (paper and equation)."""
    em_majorizes: ClassVar[bool] = True
    """Whether :meth:`quad_weights` is ``phi'(t)/t``, so that the EM loop is a
    majorise-minimise scheme whose potential ``loss + 2 sum_j phi(t_j)`` must not rise (the loop
    checks it). ``False`` for a surrogate with another EM convention (``lp``/``l0``: 002's
    ``t^(p-2)``, Prop. 3), whose EM iterations are judged by their step size only."""

    # -- the function -------------------------------------------------------------------
    @abc.abstractmethod
    def phi(self, t: NDArray) -> NDArray:
        """``phi`` elementwise on ``t >= 0``."""

    def value(self, w: ArrayLike) -> float:
        """``sum_j phi(|w_j|)``: the surrogate of ``||w||_0``."""
        return float(np.sum(self.phi(np.abs(np.asarray(w, dtype=float)))))

    # -- convex models (optional capabilities) ---------------------------------------------
    def derivative(self, t: NDArray) -> NDArray:
        """``phi'(t)`` for ``t >= 0`` (right derivative at 0; may be ``inf`` there)."""
        raise NotImplementedError

    def dc_split(self) -> DCSplit:
        """A DC decomposition ``phi = g - h`` (see :class:`DCSplit`)."""
        raise NotImplementedError

    def quad_weights(self, t: NDArray) -> NDArray:
        """Weights ``q(t)`` of the reweighted-quadratic (EM) model ``q(t^k) * t**2``;
        ``inf`` where ``t == 0`` (the coefficient is then fixed at zero)."""
        raise NotImplementedError

    def capabilities(self) -> frozenset[str]:
        """The optional models this instance provides (a subset of :data:`CAPABILITIES`).

        The default is every method the subclass overrides; parameter-dependent gaps
        (``lp`` with ``p = 0`` has no usable derivative) are removed by overriding this.
        """
        return frozenset(
            cap for cap in CAPABILITIES if getattr(type(self), cap) is not getattr(Surrogate, cap)
        )

    def provides(self, asked=None) -> frozenset[str]:
        """What this instance offers the loops (:data:`PROVIDES`): :meth:`capabilities`, plus
        ``slope_at_zero`` when ``derivative(0)`` is finite. ``asked``: the names a loop requires;
        a property computed by evaluating the surrogate (``slope_at_zero``) is computed only when
        asked for (``None``: always). Override it (calling ``super()``) to declare a property of
        the parameters, as ``lp`` declares ``lp_norm`` for ``eps = 0``."""
        caps = set(self.capabilities())
        if ("derivative" in caps and (asked is None or "slope_at_zero" in asked)
                and np.all(np.isfinite(self.derivative(np.zeros(1))))):
            caps.add("slope_at_zero")
        return frozenset(caps)

    @property
    def params(self) -> dict:
        return attrs.asdict(self)

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})"


def safe_div(num: NDArray, t: NDArray) -> NDArray:
    """``num / t`` with ``inf`` where ``t == 0`` (no warnings)."""
    t = np.asarray(t, dtype=float)
    out = np.full(np.broadcast(num, t).shape, np.inf)
    np.divide(num, t, out=out, where=t > 0)
    return out
