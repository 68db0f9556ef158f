"""``l_p`` quasi-norm surrogates (002 Prop. 3; 004 eq. 10), the zero-norm and ``l1``."""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import and_, ge, instance_of, le

from ..validators import to_float

from .base import DCSplit, Surrogate, safe_div


@attrs.frozen
class LpSurrogate(Surrogate):
    r"""``phi(t) = t**p`` for ``0 <= p <= 1``, with ``0**0 := 0`` so ``p = 0`` is ``1{t > 0}``.

    EM weights follow 002 Prop. 3 with ``gamma = 1`` and 004 eq. 10:
    ``q(t) = t**(p - 2)`` (``= phi'(t) / (p t)``; we drop the constant ``p`` so that ``p = 0``
    gives the zero-norm weights ``1/t^2`` of 002 eq. 9 — a constant factor on the penalty that
    the loss weight ``C`` absorbs). ``phi'(t) = p t**(p-1)`` is infinite at 0 for ``p < 1``, so
    no linear ``g`` dominates ``phi`` and there is no DC split; the derivative exists for
    ``p > 0`` only.

    Parameters
    ----------
    p : float in [0, 1]
        0 is the zero-norm, 1 the l1 norm. Paper 004 uses p in (0, 1].
    """

    name = "lp"
    em_majorizes = False  # EM weights t^(p-2) (002 Prop. 3), not phi'(t)/t
    reference = "Huang, King & Lyu, paper 002, Prop. 3; Peng & Fan, paper 004, eq. 10"
    p: float = attrs.field(default=0.5, converter=to_float, validator=and_(instance_of(float), ge(0.0), le(1.0)))

    def phi(self, t):
        t = np.asarray(t, dtype=float)
        if self.p == 0:
            return (t > 0).astype(float)
        return t**self.p

    def derivative(self, t):
        t = np.asarray(t, dtype=float)
        if self.p == 1:
            return np.ones_like(t)
        return self.p * safe_div(np.ones_like(t), t ** (1.0 - self.p))

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(np.ones_like(t), t ** (2.0 - self.p))

    def capabilities(self):
        caps = {"quad_weights"}
        if self.p > 0:
            caps.add("derivative")
        return frozenset(caps)


@attrs.frozen
class L0Surrogate(Surrogate):
    r"""The zero-norm itself, ``phi(t) = 1{t > 0}``: only its EM model exists,
    weights ``1/t^2`` (002 eqs. 5 and 9). Same as ``lp`` with ``p = 0``."""

    name = "l0"
    em_majorizes = False  # EM weights 1/t^2 (002 eq. 9)
    reference = "Huang, King & Lyu, paper 002, eqs. 5, 7-9"

    def phi(self, t):
        return (np.asarray(t, dtype=float) > 0).astype(float)

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(np.ones_like(t), t * t)


@attrs.frozen
class L1Surrogate(Surrogate):
    r"""``phi(t) = t``: the convex baseline (L1-SVM, L1-MPM). Every model is exact:
    derivative 1, DC split ``g = t, h = 0``, EM weights ``1/t`` (002 Prop. 3, ``p = 1``)."""

    name = "l1"
    reference = "Bhattacharyya, JMLR 5:1417-1433, 2004 (L1-MPM); paper 001 eq. 2 (L1-SVM)"

    def phi(self, t):
        return np.asarray(t, dtype=float).copy()

    def derivative(self, t):
        return np.ones_like(np.asarray(t, dtype=float))

    def dc_split(self):
        return DCSplit(lin=1.0, h=lambda t: np.zeros_like(np.asarray(t, dtype=float)),
                       grad_h=lambda t: np.zeros_like(np.asarray(t, dtype=float)))

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(np.ones_like(t), t)
