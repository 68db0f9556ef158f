"""Exponential (concave) surrogate, FSV (Bradley & Mangasarian 1998) and 000 eqs. 29-40."""

from __future__ import annotations

import attrs
import numpy as np

from ..validators import real, to_float
from .base import DCSplit, Surrogate, safe_div


MAX_ALPHA = 1e9
"""Upper limit of ``alpha``: at ``alpha * t`` beyond ~40 ``phi`` is already 1 in double precision."""


@attrs.frozen
class ExpSurrogate(Surrogate):
    r"""``phi(t) = 1 - exp(-alpha * t)`` (000 eq. 30; Bradley & Mangasarian 1998).

    DC split (000 eqs. 37-38): ``g(t) = alpha * t`` and ``h(t) = alpha * t - 1 + exp(-alpha t)``,
    so ``h'(t) = alpha * (1 - exp(-alpha t))``; on a coefficient ``w`` this is eq. 40,
    ``v = alpha * sign(w) * (1 - exp(-alpha |w|))``.

    Parameters
    ----------
    alpha : float in (0, 1e9)
        Steepness; ``alpha -> inf`` gives the indicator ``1{t > 0}``. Paper 000 uses 5
        (0.5 for Ionosphere, 10 for the synthetic data). Larger values are refused: DCA's weights
        ``alpha * w`` would overflow the solvers' range without changing the selection (surrogate
        ``l0`` is the indicator itself).
    """

    name = "exp"
    reference = "Yang & Ju, paper 000, eqs. 29-40; Bradley & Mangasarian, ICML 1998"
    alpha: float = attrs.field(default=5.0, converter=to_float, validator=real(0, MAX_ALPHA))

    def phi(self, t):
        return -np.expm1(-self.alpha * np.asarray(t, dtype=float))

    def derivative(self, t):
        return self.alpha * np.exp(-self.alpha * np.asarray(t, dtype=float))

    def dc_split(self):
        a = self.alpha
        return DCSplit(
            lin=a,
            h=lambda t: a * np.asarray(t, dtype=float) + np.expm1(-a * np.asarray(t, dtype=float)),
            grad_h=lambda t: -a * np.expm1(-a * np.asarray(t, dtype=float)),
        )

    def quad_weights(self, t):
        return safe_div(self.derivative(t), t)
