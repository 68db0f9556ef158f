"""The conformance kit can fail, surrogates: ``check_surrogate`` rejects a surrogate with one
deliberate defect (value, derivative, DC split, EM weights), accepts a one-sided derivative at a
kink and nothing else there, and uses a registered EM convention. (Formulations, loops, backends
and fit results: ``test_kit_rejects.py``.)"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from fsframe.surrogates import ExpSurrogate, L0Surrogate, LogSurrogate, LpSurrogate
from fsframe.surrogates.base import DCSplit, Surrogate, safe_div
from fsframe.testing import check_surrogate, register_em_weights


@attrs.frozen
class WrongDerivative(ExpSurrogate):
    name = "wrong-derivative"

    def derivative(self, t):
        return 1.01 * super().derivative(t)


@attrs.frozen
class Convex(Surrogate):
    name = "convex"

    def phi(self, t):
        return np.asarray(t, dtype=float) ** 2


@attrs.frozen
class Offset(Surrogate):
    name = "offset"

    def phi(self, t):
        return 1.0 + np.asarray(t, dtype=float)


@attrs.frozen
class Decreasing(Surrogate):
    name = "decreasing"

    def phi(self, t):
        t = np.asarray(t, dtype=float)
        return np.where(t > 0, 1.0 / (1.0 + t), 0.0)


@attrs.frozen
class BadValue(ExpSurrogate):
    name = "bad-value"

    def value(self, w):
        return float(np.sum(self.phi(np.asarray(w, dtype=float))))  # forgets |w|


@attrs.frozen
class BadSplit(ExpSurrogate):
    name = "bad-split"

    def dc_split(self):
        a = self.alpha
        return DCSplit(lin=a, h=lambda t: a * np.asarray(t) + np.expm1(-a * np.asarray(t)),
                       grad_h=lambda t: a * np.ones_like(np.asarray(t, dtype=float)))  # wrong h'


@attrs.frozen
class ConcaveH(LogSurrogate):
    """g = 0, h = -phi: g - h == phi, but h is concave."""

    name = "concave-h"

    def dc_split(self):
        return DCSplit(lin=0.0, h=lambda t: -self.phi(t), grad_h=lambda t: -self.derivative(t))


@attrs.frozen
class BadQuad(ExpSurrogate):
    name = "bad-quad"

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        out = np.full(t.shape, np.inf)
        np.divide(self.derivative(t), t * t, out=out, where=t > 0)  # phi'/t^2, not phi'/t
        return out


@attrs.frozen
class FiniteAtZero(ExpSurrogate):
    name = "finite-at-zero"

    def quad_weights(self, t):
        return np.minimum(super().quad_weights(t), 1e12)


@attrs.frozen
class SlightlyWrongDerivative(LogSurrogate):
    """phi' scaled by 1.0001: inside the old 1e-4 finite-difference tolerance."""

    name = "slightly-wrong-derivative"

    def derivative(self, t):
        return 1.0001 * super().derivative(t)

    def quad_weights(self, t):
        return LogSurrogate.quad_weights(self, t)


@attrs.frozen
class SqrtFiniteAtZero(Surrogate):
    """phi = sqrt(t): phi'(0+) = inf, but derivative(0) claims 5000."""

    name = "sqrt-finite-at-0"

    def phi(self, t):
        return np.sqrt(np.asarray(t, dtype=float))

    def derivative(self, t):
        t = np.asarray(t, dtype=float)
        out = np.full(t.shape, 5000.0)
        np.divide(0.5, np.sqrt(t), out=out, where=t > 0)
        return out


@attrs.frozen
class WrongSlopeAtZero(ExpSurrogate):
    """derivative(0) = 1.01 alpha: still non-increasing, not the right derivative."""

    name = "wrong-slope-at-0"

    def derivative(self, t):
        d = super().derivative(t)
        return np.where(np.asarray(t) == 0, 1.01 * self.alpha, d)


@attrs.frozen
class L0WrongWeights(L0Surrogate):
    """Zero-norm whose EM weights are 1/t (the L1 weights), not 1/t^2 (002 eq. 9)."""

    name = "l0-wrong"

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(np.ones_like(t), t)


@attrs.frozen
class LpWrongWeights(LpSurrogate):
    """lp with weights phi'(t)/t, not the declared t^(p-2) = phi'(t)/(p t)."""

    name = "lp-wrong"

    def quad_weights(self, t):
        return safe_div(self.derivative(t), np.asarray(t, dtype=float))


@attrs.frozen
class LogScaledQuad(LogSurrogate):
    """EM weights 100 phi'(t)/t: EM's monitored potential loss + 2 sum phi assumes the factor 1."""

    name = "log-scaled"

    def quad_weights(self, t):
        return 100.0 * super().quad_weights(t)


@attrs.frozen
class Step0(Surrogate):
    """A scaled zero-norm without a derivative: EM weights must be phi(0+)/t^2 = 2/t^2."""

    name = "step0"
    wrong: bool = False

    def phi(self, t):
        return 2.0 * (np.asarray(t, dtype=float) > 0)

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(np.full(t.shape, 1.0 if self.wrong else 2.0), t * t)


@attrs.frozen
class LogNoDerivative(Surrogate):
    """log1p(t) without a derivative: EM weights must be phi'(t)/t = 1/(t (1 + t)) (by finite differences)."""

    name = "log-no-derivative"
    factor: float = 1.0

    def phi(self, t):
        return np.log1p(np.asarray(t, dtype=float))

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(self.factor / (1.0 + t), t)


@pytest.mark.parametrize("sur, match", [
    (WrongDerivative(), "derivative disagrees with the central finite difference"),
    (SlightlyWrongDerivative(eps=0.1), "derivative disagrees with the central finite difference"),
    (SqrtFiniteAtZero(), r"derivative\(0\) = 5000.0 is not the right derivative"),
    (WrongSlopeAtZero(), r"derivative\(0\) = 5.05 is not the right derivative"),
    (L0WrongWeights(), r"EM convention 'quad_weights = 1/t\^2 \(l0 convention\)'"),
    (LpWrongWeights(p=0.5), r"EM convention 'quad_weights = t\^\(p-2\) \(lp convention\)'"),
    (LogScaledQuad(eps=0.1), "EM convention \"quad_weights = phi'\\(t\\)/t\""),
    (Step0(wrong=True), r"zero-norm limit"),
    (LogNoDerivative(factor=1.01), r"quad_weights\(t\) \* t disagrees with the central finite difference"),
    (Convex(), "not midpoint-concave"),
    (Offset(), r"phi\(0\) = 1.0"),
    (Decreasing(), "phi decreases"),
    (BadValue(), r"value\(-?w\) = "),
    (BadSplit(), "grad_h disagrees"),
    (ConcaveH(), "dc_split"),
    (BadQuad(), "quad_weights disagrees with the EM convention"),
    (FiniteAtZero(), r"quad_weights\(0\) = 1000000000000.0, must be inf"),
], ids=lambda p: getattr(p, "name", None))
def test_check_surrogate_rejects(sur, match):
    with pytest.raises(AssertionError, match=match):
        check_surrogate(sur)


@pytest.mark.parametrize("sur, name", [
    (LpSurrogate(p=0.0), "quad_weights = t^(p-2) (lp convention)"),
    (LpSurrogate(p=0.5), "quad_weights = t^(p-2) (lp convention)"),
    (L0Surrogate(), "quad_weights = 1/t^2 (l0 convention)"),
    (LogSurrogate(eps=0.1), "quad_weights = phi'(t)/t"),
    (Step0(), "quad_weights = phi(0+)/t^2 (zero-norm limit)"),
    (LogNoDerivative(), "quad_weights = phi'(t)/t (finite differences)"),
], ids=lambda p: getattr(p, "name", None) if isinstance(p, Surrogate) else None)
def test_check_surrogate_names_the_em_rule(sur, name):
    """The rule the EM weights were checked against is named in the returned checks."""
    assert name in check_surrogate(sur)


def test_check_surrogate_takes_a_declared_em_form():
    """A surrogate with another convention declares it; the declaration is what is checked."""
    ran = check_surrogate(LogScaledQuad(eps=0.1), quad_weights=lambda t: 100.0 / (t * (0.1 + t)))
    assert "quad_weights = declared form" in ran
    with pytest.raises(AssertionError, match="declared form"):
        check_surrogate(LogScaledQuad(eps=0.1), quad_weights=lambda t: 1.0 / (t * (0.1 + t)))


# ------------------------------------------------------------------------------ kinks
@attrs.frozen
class Capped(Surrogate):
    """min(t / a, 1) (capped L1): phi' jumps from 1/a to 0 at t = a. ``at_kink`` is what the
    derivative returns at t = a exactly; ``switch`` where it drops to 0."""

    name = "capped-test"
    a: float = 0.1
    at_kink: float | None = None
    switch: float | None = None

    def phi(self, t):
        return np.minimum(np.asarray(t, dtype=float) / self.a, 1.0)

    def derivative(self, t):
        t = np.asarray(t, dtype=float)
        d = np.where(t < (self.switch or self.a), 1.0 / self.a, 0.0)
        return d if self.at_kink is None else np.where(t == self.a, self.at_kink, d)


@pytest.mark.parametrize("a", [0.1, 0.05, 1.0 / 3.0, 2.0])
@pytest.mark.parametrize("at_kink", [None, 0.0, 0.5, 1.0], ids=["right", "0", "mid", "left"])
def test_check_surrogate_accepts_a_one_sided_derivative_at_a_kink(a, at_kink):
    """At t = a any value between the right (0) and the left (1/a) derivative is a supergradient;
    points just beside the kink must have the derivative of their own side."""
    sur = Capped(a=a, at_kink=None if at_kink is None else at_kink / a)
    near = a * (1.0 + np.array([0.0, 1e-16, -1e-16, 1e-12, -1e-12, 1e-9, -1e-9, 1e-7, -1e-7, 4e-7, -4e-7,
                                1e-6, -1e-6, 1e-5, -1e-5]))
    assert "derivative=fd" in check_surrogate(sur, t=near)
    assert "derivative=fd" in check_surrogate(sur)


@pytest.mark.parametrize("sur, at", [
    (Capped(a=0.1, at_kink=20.0), 0.1),    # 2/a: above the left derivative
    (Capped(a=0.1, at_kink=-1.0), 0.1),    # below the right derivative (also < 0)
    (Capped(a=0.1, switch=0.1 * (1 + 1e-6)), 0.1 * (1 + 5e-7)),  # the drop 1e-6 a late: 1/a right of the kink
    (Capped(a=0.1, switch=0.1 * (1 - 1e-6)), 0.1 * (1 - 5e-7)),  # the drop 1e-6 a early
], ids=["above-left", "below-right", "late-drop", "early-drop"])
def test_check_surrogate_rejects_a_wrong_derivative_at_or_beside_a_kink(sur, at):
    with pytest.raises(AssertionError, match="derivative"):
        check_surrogate(sur, t=[at])


# ------------------------------------------------------------------------------ EM conventions
@attrs.frozen
class CubeWeights(LogSurrogate):
    """A log surrogate with the EM convention phi'(t)/t^2 (em_majorizes=False), registered."""

    name = "cube-weights"
    em_majorizes = False

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        return safe_div(self.derivative(t), t * t)


register_em_weights(CubeWeights, lambda s: ("quad_weights = phi'(t)/t^2 (registered)",
                                            lambda x: 1.0 / ((s.eps + x) * x * x)))


def test_a_registered_em_convention_is_used():
    assert "quad_weights = phi'(t)/t^2 (registered)" in check_surrogate(CubeWeights(eps=0.1))
    with pytest.raises(AssertionError, match="register_em_weights"):
        check_surrogate(BadQuad())  # phi'/t^2 without a registration: off the phi'(t)/t convention
