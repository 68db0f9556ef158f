"""Logarithmic surrogate of AROM (Weston, Elisseeff, Schölkopf & Tipping 2003)."""

from __future__ import annotations

import attrs
import numpy as np

from ..validators import real, to_float
from .base import DCSplit, Surrogate, safe_div


@attrs.frozen
class LogSurrogate(Surrogate):
    r"""``phi(t) = log(eps + t) - log(eps) = log1p(t / eps)``.

    Paper 002 §1 quotes AROM's ``sum_i ln(eps + |w_i|)`` with ``0 < eps << 1``; we subtract the
    constant ``log(eps)`` so that ``phi(0) = 0`` (minimisers are unchanged).
    ``phi'(t) = 1 / (eps + t)``. DC split: ``g(t) = t / eps``, ``h(t) = t/eps - log1p(t/eps)``
    (convex: ``h'' = 1/(eps+t)^2``). EM weights ``phi'(t)/t = 1 / (t (eps + t))``, which tend to
    the zero-norm weights ``1/t^2`` of 002 eq. 9 as ``eps -> 0``.

    Parameters
    ----------
    eps : float > 0
        Smoothing; smaller is closer to ``log t`` and sparser. Default 1e-3.
    """

    name = "log"
    reference = "Weston et al., JMLR 3:1439-1461, 2003 (AROM); quoted in paper 002 §1"
    eps: float = attrs.field(default=1e-3, converter=to_float, validator=real(0))

    def phi(self, t):
        return np.log1p(np.asarray(t, dtype=float) / self.eps)

    def derivative(self, t):
        return 1.0 / (self.eps + np.asarray(t, dtype=float))

    def dc_split(self):
        e = self.eps
        return DCSplit(
            lin=1.0 / e,
            h=lambda t: np.asarray(t, dtype=float) / e - np.log1p(np.asarray(t, dtype=float) / e),
            grad_h=lambda t: 1.0 / e - 1.0 / (e + np.asarray(t, dtype=float)),
        )

    def quad_weights(self, t):
        return safe_div(self.derivative(t), t)
