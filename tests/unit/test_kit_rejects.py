"""The conformance kit can fail: each check rejects a component with one deliberate defect
(a kit that passes everything would prove nothing)."""

from __future__ import annotations

import itertools

import attrs
import numpy as np
import pyomo.environ as pyo
import pytest

from fsframe.loops import ReweightedL1
from fsframe.plugins import get_registry
from fsframe.surrogates import ExpSurrogate, LogSurrogate
from fsframe.surrogates.base import DCSplit, Surrogate
from fsframe.testing import check_formulation, check_loop, check_surrogate, hinge_loss

Hinge = get_registry().get("formulation", "hinge")


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


@pytest.mark.parametrize("sur, match", [
    (WrongDerivative(), "derivative disagrees with the central finite difference"),
    (Convex(), "not midpoint-concave"),
    (Offset(), r"phi\(0\) = 1.0"),
    (Decreasing(), "phi decreases"),
    (BadValue(), r"value\(-?w\) = "),
    (BadSplit(), "grad_h disagrees"),
    (ConcaveH(), "dc_split"),
    (BadQuad(), r"quad_weights\(t\) \* t / phi'\(t\) is not a positive constant"),
    (FiniteAtZero(), r"quad_weights\(0\) = 1000000000000.0, must be inf"),
], ids=lambda p: getattr(p, "name", None))
def test_check_surrogate_rejects(sur, match):
    with pytest.raises(AssertionError, match=match):
        check_surrogate(sur)


# ------------------------------------------------------------------------------ formulations
@attrs.frozen
class FlippedDecision(Hinge):
    """decision_function with the wrong sign."""

    name = "flipped"

    def decision_function(self, coef, intercept, X):
        return -(X @ coef + intercept)


@attrs.frozen
class TwoObjectives(Hinge):
    name = "two-objectives"

    def build(self, X, y, terms):
        built = super().build(X, y, terms)
        built.model.extra = pyo.Objective(expr=built.model.b)
        return built


@attrs.frozen
class WrongClass(Hinge):
    name = "wrong-class"

    def problem_class(self, terms):
        from fsframe import ProblemClass

        return ProblemClass.LP


@pytest.mark.parametrize("form, match", [
    (FlippedDecision(C=1.0), "decision_loss"),  # the kit knows the hinge loss only by name: passed below
    (TwoObjectives(C=1.0), "one active objective"),
    (WrongClass(C=1.0), "problem_class"),
], ids=["flipped", "two-objectives", "wrong-class"])
def test_check_formulation_rejects(form, match, binary_data):
    X, y = binary_data
    with pytest.raises(AssertionError, match=match):
        check_formulation(form, X, y, decision_loss=hinge_loss(1.0))


def test_check_formulation_rejects_a_wrong_loss(binary_data):
    X, y = binary_data
    with pytest.raises(AssertionError, match="decision_loss"):
        check_formulation(Hinge(C=2.0), X, y, decision_loss=hinge_loss(1.0))  # C forgotten


# ------------------------------------------------------------------------------ loops
@attrs.frozen
class MisreportingLoop(ReweightedL1):
    """Reports loss + 0.5 * sum phi as the objective."""

    name = "misreporting"

    def surrogate_objective(self, it, surrogate, *, raw=False):
        return it.loss + 0.5 * float(np.sum(surrogate.phi(it.t)))


@attrs.frozen
class IgnoresFailures(ReweightedL1):
    """Skips a failed subproblem and carries on."""

    name = "ignores-failures"

    def steps(self, sub, surrogate):
        gen = super().steps(sub, surrogate)
        result = None
        try:
            while True:
                step = next(gen)
                if step.iterate.ok:
                    yield step
                else:
                    return True, "pretended to converge"
        except StopIteration as stop:
            result = stop.value
        return result


_runs = itertools.count()


@attrs.frozen
class NonDeterministic(ReweightedL1):
    """Starts from different weights on every run (state outside the inputs)."""

    name = "non-deterministic"

    def steps(self, sub, surrogate):
        from fsframe.loops.base import Step

        weights = np.ones(sub.n_groups)
        weights[next(_runs) % sub.n_groups] = 1e3
        it = sub.solve(lin=weights)
        yield Step(it, self.surrogate_objective(it, surrogate) if it.ok else None)
        return True, "one step"


@pytest.mark.parametrize("loop, match", [
    (MisreportingLoop(), "reported objective"),
    (IgnoresFailures(), "did not raise SolverFailedError"),
    (NonDeterministic(), "different coefficients"),
], ids=["misreporting", "ignores-failures", "non-deterministic"])
def test_check_loop_rejects(loop, match):
    with pytest.raises(AssertionError, match=match):
        check_loop(loop, ExpSurrogate(alpha=5.0))
