"""``l_p`` quasi-norm surrogates (002 Prop. 3; 004 eq. 10), the zero-norm and ``l1``."""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np
from attrs.validators import and_, ge, instance_of, le

from ..validators import to_float

from .base import DCSplit, Surrogate, safe_div


def _eps_needs_p(instance, attribute, value):
    if value > 0 and instance.p == 0:
        raise ValueError("lp: eps > 0 needs p > 0 ((t + eps)**0 - eps**0 is identically 0); use p=0 with eps=0 "
                         "(the zero-norm) or a p in (0, 1]")


@attrs.frozen
class LpSurrogate(Surrogate):
    r"""``phi(t) = t**p`` for ``0 <= p <= 1``, with ``0**0 := 0`` so ``p = 0`` is ``1{t > 0}``;
    with ``eps > 0`` the smoothed form ``phi(t) = (t + eps)**p - eps**p``.

    EM weights follow 002 Prop. 3 with ``gamma = 1`` and 004 eq. 10:
    ``q(t) = t**(p - 2)`` (``= phi'(t) / (p t)``; we drop the constant ``p`` so that ``p = 0``
    gives the zero-norm weights ``1/t^2`` of 002 eq. 9 — a constant factor on the penalty that
    the loss weight ``C`` absorbs). ``phi'(t) = p t**(p-1)`` is infinite at 0 for ``p < 1``, so
    no linear ``g`` dominates ``phi`` and there is no DC split; the derivative exists for
    ``p > 0`` only.

    The smoothed form (``eps > 0``, ``p > 0``) has the finite slope ``phi'(0) = p eps**(p-1)``
    and the exact DC split ``g(t) = p eps**(p-1) t``, ``h(t) = g(t) - phi(t)`` (convex because
    ``phi`` is concave, non-decreasing because ``phi' <= phi'(0)``, ``h(0) = 0``), so ``lp``
    composes with ``dca`` and ``reweighted-l1`` like ``exp`` and ``log``. Its EM weights keep
    the convention above: ``q(t) = (t + eps)**(p-1) / t`` (``= phi'(t) / (p t)``). Approximation
    error (subadditivity of ``t**p``): ``0 <= t**p - phi(t) <= eps**p`` for every ``t >= 0``,
    and ``phi(t) -> t**p`` as ``eps -> 0``.

    Parameters
    ----------
    p : float in [0, 1]
        0 is the zero-norm, 1 the l1 norm. Paper 004 uses p in (0, 1].
    eps : float >= 0
        Smoothing (default 0: the exact ``t**p``); needs ``p > 0`` when positive.
    """

    name = "lp"
    em_majorizes = False  # EM weights t^(p-2) (002 Prop. 3), not phi'(t)/t
    reference = "Huang, King & Lyu, paper 002, Prop. 3; Peng & Fan, paper 004, eq. 10"
    p: float = attrs.field(default=0.5, converter=to_float, validator=and_(instance_of(float), ge(0.0), le(1.0)))
    eps: float = attrs.field(default=0.0, converter=to_float,
                             validator=and_(instance_of(float), ge(0.0), le(1e6), _eps_needs_p))

    def phi(self, t):
        t = np.asarray(t, dtype=float)
        if self.eps > 0 and self.p == 1:
            return t.copy()  # (t + eps) - eps, exactly
        if self.eps > 0:
            # eps**p ((1 + t/eps)**p - 1) through log1p/expm1: the difference of two powers near
            # eps**p lost every digit below eps**p's rounding (t = 1e-12, p = 0.1, eps = 1e-3:
            # a relative error of 1e-6, which moreover differed between numpy's scalar and
            # array power)
            return self.eps**self.p * np.expm1(self.p * np.log1p(t / self.eps))
        if self.p == 0:
            return (t > 0).astype(float)
        return t**self.p

    def derivative(self, t):
        t = np.asarray(t, dtype=float)
        if self.p == 1:
            return np.ones_like(t)
        if self.eps > 0:
            return self.p * (t + self.eps) ** (self.p - 1.0)
        return self.p * safe_div(np.ones_like(t), t ** (1.0 - self.p))

    def dc_split(self):
        if not self.eps > 0:
            raise NotImplementedError("lp has a DC split only when smoothed (eps > 0): t**p has an infinite slope at 0")
        p, eps = self.p, self.eps
        lin = p * eps ** (p - 1.0)

        def h(t):
            t = np.asarray(t, dtype=float)
            return lin * t - self.phi(t)

        def grad_h(t):
            return lin - p * (np.asarray(t, dtype=float) + eps) ** (p - 1.0)

        return DCSplit(lin=lin, h=h, grad_h=grad_h)

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        if self.eps > 0:
            return safe_div((t + self.eps) ** (self.p - 1.0), t)
        return safe_div(np.ones_like(t), t ** (2.0 - self.p))

    def capabilities(self):
        caps = {"quad_weights"}
        if self.p > 0:
            caps.add("derivative")
        if self.eps > 0:
            caps.add("dc_split")
        return frozenset(caps)

    def provides(self, asked=None):
        """Adds ``lp_norm`` for the exact ``t**p`` (``eps = 0``, ``0 < p <= 1``)."""
        extra = {"lp_norm"} if self.eps == 0 and 0 < self.p <= 1 else set()
        return super().provides(asked) | extra


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
    p: ClassVar[float] = 1.0  # the exponent of ``lp_norm``: phi(t) = t**1

    def provides(self, asked=None):
        return super().provides(asked) | {"lp_norm"}

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
