"""The conformance kit can fail: each check rejects a component with one deliberate defect
(a kit that passes everything would prove nothing). Formulations, loops, backends, fit results
and the default data here; surrogates in ``test_kit_surrogates.py``."""

from __future__ import annotations

import itertools

import math
import warnings

import attrs
import numpy as np
import pyomo.environ as pyo
import pytest

import fsframe
from fsframe.backends import ClarabelBackend, SolveOptions
from fsframe.loops import DCA, ReweightedL1
from fsframe.loops.base import OuterLoop, Step
from fsframe.plugins import get_registry
from fsframe.surrogates import ExpSurrogate
from fsframe.formulation import Formulation
from fsframe.testing import (
    LoopModel,
    StandardProblems,
    check_backend,
    check_fit_result,
    check_formulation,
    check_loop,
    hinge_loss,
    kit_data,
    parametrize_with_checks,
    register_decision_check,
    register_decision_loss,
    register_loop_oracle,
    toy_data,
)

Hinge = get_registry().get("formulation", "hinge")


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
    (FlippedDecision(C=1.0), "decision_loss"),
    (TwoObjectives(C=1.0), "one active objective"),
    (WrongClass(C=1.0), "problem_class"),
], ids=["flipped", "two-objectives", "wrong-class"])
def test_check_formulation_rejects(form, match, binary_data):
    X, y = binary_data
    with pytest.raises(AssertionError, match=match):
        check_formulation(form, X, y, decision_loss=hinge_loss(1.0))


MPM = get_registry().get("formulation", "mpm")
MPMMax = get_registry().get("formulation", "mpm-max")


@attrs.frozen
class FlippedMPM(MPM):
    name = "flipped-mpm"

    def decision_function(self, coef, intercept, X):
        return -super().decision_function(coef, intercept, X)


@attrs.frozen
class FlippedMPMMax(MPMMax):
    name = "flipped-mpm-max"

    def decision_function(self, coef, intercept, X):
        return -super().decision_function(coef, intercept, X)


@attrs.frozen
class FlippedHingeRenamed(Hinge):
    """A hinge-like formulation not named "hinge": the kit still knows its loss (a subclass)."""

    name = "my-hinge"

    def decision_function(self, coef, intercept, X):
        return -(X @ coef + intercept)


@pytest.mark.parametrize("form, match", [
    (FlippedMPM(delta=0.5), r"decision_loss\(decision_function\(...\)\) = 4"),
    (FlippedMPMMax(), "mpm-max decision values"),
    (FlippedHingeRenamed(C=1.0), "decision_loss"),
], ids=["flipped-mpm", "flipped-mpm-max", "renamed-hinge"])
def test_check_formulation_rejects_a_flipped_decision_by_default(form, match, binary_data):
    X, y = binary_data
    with pytest.raises(AssertionError, match=match):
        check_formulation(form, X, y)


@attrs.frozen
class Unknown(Formulation):
    """A formulation the kit has no loss for (not a subclass of a registered one)."""

    name = "unknown"
    slot_terms = frozenset({"lin"})

    def problem_class(self, terms):
        return Hinge(C=1.0).problem_class(terms)

    def build(self, X, y, terms):
        return Hinge(C=1.0).build(X, y, terms)


def test_check_formulation_skips_the_decision_check_only_when_told(binary_data):
    X, y = binary_data
    with pytest.raises(ValueError, match="decision_loss=False"):
        check_formulation(Unknown(), X, y)
    ran = check_formulation(Unknown(), X, y, decision_loss=False)
    assert "decision_loss skipped (decision_loss=False) ['lin']" in ran
    assert "decision_loss ['lin']" in check_formulation(Unknown(), X, y, decision_loss=hinge_loss(1.0))


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

    def steps(self, sub, surrogate, run):
        gen = super().steps(sub, surrogate, run)
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

    def steps(self, sub, surrogate, run):
        from fsframe.loops.base import Step

        weights = np.ones(sub.n_groups)
        weights[next(_runs) % sub.n_groups] = 1e3
        it = sub.solve(lin=weights)
        yield Step(it, self.surrogate_objective(it, surrogate) if it.ok else None)
        return True, "one step"


@pytest.mark.parametrize("loop, match, kw", [
    (MisreportingLoop(), "reported objective", {}),
    (IgnoresFailures(), "did not raise SolverFailedError", {}),
    (NonDeterministic(), "slot weights lin", {}),
    # its first weights are off the model; with that check off the second run gives it away
    (NonDeterministic(), "different coefficients", {"expected_weights": False}),
], ids=["misreporting", "ignores-failures", "non-deterministic", "non-deterministic-runs"])
def test_check_loop_rejects(loop, match, kw):
    with pytest.raises(AssertionError, match=match):
        check_loop(loop, ExpSurrogate(alpha=5.0), **kw)


@attrs.frozen
class NeverReweights(ReweightedL1):
    """Weights always 1: FSV degenerates to the L1-SVM."""

    name = "never-reweights"

    def steps(self, sub, surrogate, run):
        yield self.surrogate_step(sub.solve(lin=np.ones(sub.n_groups)), surrogate)
        yield self.surrogate_step(sub.solve(lin=np.ones(sub.n_groups)), surrogate)
        return True, "step below tol"


@attrs.frozen
class StaleDCA(DCA):
    """Linearises at the starting point forever."""

    name = "stale-dca"

    def steps(self, sub, surrogate, run):
        split = surrogate.dc_split()
        it0 = sub.solve(lin=np.ones(sub.n_groups), lin_w=np.zeros(sub.n_coef))
        yield self.surrogate_step(it0, surrogate)
        prev = it0
        for _ in range(1, self.max_iter):
            new = self._solve(sub, split, it0)
            yield self.surrogate_step(new, surrogate)
            if self.small_step(new, prev)[0]:
                return True, "step below tol"
            prev = new
        return False, "max_iter"


@attrs.frozen
class RisingHidden(ReweightedL1):
    """Weights that grow tenfold per step (the penalty rises) and monitored=None, so the loop's
    own descent check sees nothing."""

    name = "rising-hidden"

    def steps(self, sub, surrogate, run):
        w = np.full(sub.n_groups, 0.01)
        for _ in range(4):
            it = sub.solve(lin=w)
            yield Step(it, self.surrogate_objective(it, surrogate) if it.ok else None, monitored=None)
            w = w * 10.0
        return True, "done"


@pytest.mark.parametrize("loop, match", [
    (NeverReweights(), r"iteration 1: slot weights lin = "),
    (StaleDCA(), r"iteration 2: slot weights lin_w = "),
    (RisingHidden(), r"iteration 0: slot weights lin = "),
], ids=["never-reweights", "stale-dca", "rising-hidden"])
def test_check_loop_rejects_weights_off_the_model(loop, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match=match):
            check_loop(loop, ExpSurrogate(alpha=5.0))


def test_check_loop_recomputes_descent():
    """With the weights check off, the hidden rise is still found: the kit recomputes loss + sum phi."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match="iteration 3: the objective theory says decreases.*rose"):
            check_loop(RisingHidden(), ExpSurrogate(alpha=5.0), expected_weights=False)


@attrs.frozen
class PlainIRL1(OuterLoop):
    """A correct reweighted-L1 loop that is no subclass of a built-in loop."""

    name = "plain-irl1"
    requires = ("derivative",)

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        it = sub.solve(lin=np.ones(sub.n_groups))
        yield self.surrogate_step(it, surrogate)
        for _ in range(1, self.max_iter):
            new = sub.solve(lin=surrogate.derivative(it.t))
            yield self.surrogate_step(new, surrogate)
            if self.small_step(new, it)[0]:
                return True, "step below tol"
            it = new
        return False, "max_iter reached"


def test_check_loop_names_what_it_skips_for_an_unknown_loop():
    sur = ExpSurrogate(alpha=5.0)
    ran = check_loop(PlainIRL1(), sur)
    assert (f"weights {sur}: skipped (the kit has no model of loop 'plain-irl1'; pass expected_weights= "
            "or register_loop_oracle)") in ran
    assert any(r.startswith(f"descent {sur}: the loop's own monitored values") for r in ran)

    def irl1(k, prev, surrogate, sub):
        return {"lin": np.ones(sub.n_groups) if prev is None else surrogate.derivative(prev.t)}

    assert f"weights {sur} (expected_weights)" in check_loop(PlainIRL1(), sur, expected_weights=irl1)
    with pytest.raises(AssertionError, match="iteration 1: slot weights lin"):
        check_loop(PlainIRL1(), sur, expected_weights=lambda k, prev, s, sub: {"lin": np.ones(sub.n_groups)})


# ------------------------------------------------------------------------------ backends
def _broken_clarabel(name, fix):
    class Broken(ClarabelBackend):
        def open(self, data, options=SolveOptions()):
            session = super().open(fix(data), options)
            inner = session.solve
            session.solve = lambda d=None: inner(None if d is None else fix(d))
            return session

    Broken.name = name
    return Broken()


def _drop_linear_rows(d):
    if not d.cones or d.l == 0:
        return d
    return attrs.evolve(d, G=d.G[d.l:], h=d.h[d.l:], l=0)


def _merge_cones(d):
    return d if len(d.cones) < 2 else attrs.evolve(d, cones=(sum(d.cones),))


@pytest.mark.parametrize("backend, match", [
    (_broken_clarabel("drops-linear-rows-with-cones", _drop_linear_rows), "on socp_disc_halfplane: objective"),
    (_broken_clarabel("merges-cones", _merge_cones), "on socp_two_cones: status infeasible"),
], ids=["drops-linear-rows", "merges-cones"])
def test_check_backend_rejects_socp_bugs(backend, match):
    with pytest.raises(AssertionError, match=match):
        check_backend(backend, problems=[p for p in StandardProblems.all() if p.name.startswith("socp")])


@pytest.mark.parametrize("prob, value", [
    (StandardProblems.socp_disc_halfplane(), -0.5 - math.sqrt(0.75)),
    (StandardProblems.socp_two_cones(), -math.sqrt(2) - 6.0),
    (StandardProblems.socp_cone_equality(), math.sqrt(3.0)),
    (StandardProblems.socp_quadratic(), 9.0 - 4.0 * math.sqrt(2)),
], ids=lambda p: getattr(p, "name", None))
def test_socp_answers_satisfy_their_constraints(prob, value):
    """The hand-derived points are feasible and attain the stated optimum (the values were also
    checked with CVXPY + Clarabel when the problems were written)."""
    assert prob.objective == pytest.approx(value, rel=1e-15)
    assert prob.data.max_violation(prob.x) <= 1e-12
    assert prob.data.objective(prob.x) == pytest.approx(value, rel=1e-12)
    assert prob.data.l == {"socp_disc_halfplane": 1}.get(prob.name, 0)


# ------------------------------------------------------------------------------ fit results
@pytest.mark.parametrize("params, extra", [
    ({}, 0.5),
    ({}, 3.8),  # inside the old allowance of (#zeroed groups) x phi(cut) = 4 for the zero-norm
    ({"n_features": 1}, 0.5),
    ({"n_features": 1}, 4.75),
], ids=["em-l0+0.5", "em-l0+3.8", "n_features+0.5", "n_features+4.75"])
def test_check_fit_result_rejects_an_inflated_objective(params, extra, binary_data):
    X, y = binary_data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", **params)
    ran = check_fit_result(res, X, y)
    assert "objective recomputed" in ran
    with pytest.raises(AssertionError, match="objective"):
        check_fit_result(attrs.evolve(res, objective=res.objective + extra), X, y)


# ------------------------------------------------------------------------------ the default data can fail
@attrs.frozen
class ScaledC(Hinge):
    """Builds its model with factor x C while its C (and so the hinge's loss) says C."""

    name = "scaled-c"
    factor: float = 2.0

    def build(self, X, y, terms):
        return Hinge.build(attrs.evolve(self, C=self.factor * self.C), X, y, terms)


@attrs.frozen
class SilentlyBalanced(Hinge):
    """Weights the slacks of class k by m / (2 m_k) ("balanced" class weights) while claiming
    the plain hinge: identical to it when the classes have equal sizes."""

    name = "silently-balanced"

    def build(self, X, y, terms):
        built = super().build(X, y, terms)
        counts = {1.0: float(np.sum(y > 0)), -1.0: float(np.sum(y < 0))}
        w = [y.size / (2.0 * counts[float(v)]) for v in y]
        built.slot.block.loss.set_value(sum(self.C * w[i] * built.model.xi[i] for i in range(y.size)))
        return built


def _zero(f, y):
    return 0.0


def test_kit_data_is_imbalanced_and_not_separable():
    X, y = kit_data()
    assert X.shape == (40, 6) and np.sum(y > 0) == 12 and np.sum(y < 0) == 28
    np.testing.assert_array_equal(X, kit_data()[0])  # seeded
    # the last -1 sample is the midpoint of two +1 samples: any affine f has hinge loss >= 2 on them
    np.testing.assert_allclose(X[-1], 0.5 * (X[0] + X[1]))
    rng = np.random.default_rng(0)
    for _ in range(200):
        w, b = rng.standard_normal(6) * rng.uniform(0.1, 100), rng.standard_normal() * 10
        f = X[[0, 1, -1]] @ w + b
        assert hinge_loss(1.0)(f, y[[0, 1, -1]]) >= 2.0 - 1e-9


def _check_of(mark, i=0, name="terms lin"):
    """The check ``name`` of the i-th component of a parametrize_with_checks mark."""
    params = [p for p in mark.args[1] if p.id.endswith(f":{name}")]
    return params[i].values[1]


@pytest.mark.parametrize("form, given", [
    (ScaledC(C=1.0), None),
    (SilentlyBalanced(C=1.0), None),
    (Hinge(C=1.0), _zero),
], ids=["wrong-C", "silently-balanced", "zero-loss"])
def test_default_data_rejects_what_toy_data_lets_pass(form, given):
    """On the balanced, separable toy set each planted bug passes (zero loss at every optimum,
    equal class sizes); on the kit's default data each is rejected."""
    X, y = toy_data()
    assert "decision_loss ['lin']" in check_formulation(form, X, y, decision_loss=given)
    mark = parametrize_with_checks([form], decision_loss=given)
    with pytest.raises(AssertionError, match=r"decision_loss\(decision_function\(...\)\) = "):
        _check_of(mark)(form)


def test_parametrize_with_checks_takes_options_per_component():
    hinge, unknown = Hinge(C=1.0), Unknown()
    mark = parametrize_with_checks([hinge, (unknown, {"decision_loss": hinge_loss(1.0)}),
                                    (Hinge(C=2.0), {"decision_loss": _zero})])
    assert "decision_loss ['lin']" in _check_of(mark, 0)(hinge)
    assert "decision_loss ['lin']" in _check_of(mark, 1)(unknown)  # unknown alone raises ValueError
    with pytest.raises(AssertionError, match="decision_loss"):
        _check_of(mark, 2)(Hinge(C=2.0))
    with pytest.raises(TypeError, match="options"):
        parametrize_with_checks([(hinge, "decision_loss")])


def test_parametrize_with_checks_gives_one_test_per_component_and_check():
    """scikit-learn's shape: a test per (component, check), and ``expected_failed_checks`` marks a
    known gap xfail(strict) with its reason; naming a check the component does not run is refused."""
    from fsframe.loops import ReweightedL1
    from fsframe.surrogates import ExpSurrogate
    from fsframe.testing import LOOP_CHECKS, checks_of

    loop, sur = ReweightedL1(max_iter=3), ExpSurrogate()
    mark = parametrize_with_checks([loop, sur, Hinge(C=1.0)],
                                   expected_failed_checks=lambda c: {"deterministic": "known"} if c is loop else {})
    ids = [p.id for p in mark.args[1]]
    assert ids[:len(LOOP_CHECKS)] == [f"ReweightedL1:{loop}:{name}" for name in LOOP_CHECKS]
    assert f"ExpSurrogate:{sur}:dc_split" in ids and "HingeFormulation:hinge(C=1.0):terms lin+quad" in ids
    assert len(ids) == len(checks_of(loop)) + len(checks_of(sur)) + len(checks_of(Hinge(C=1.0)))
    xfail = [p for p in mark.args[1] if p.marks]
    assert [p.id for p in xfail] == [f"ReweightedL1:{loop}:deterministic"]
    assert xfail[0].marks[0].kwargs == {"reason": "known", "strict": True}
    # each test runs its check alone
    ran = [p for p in mark.args[1] if p.id.endswith(":weights")][0].values[1](loop)
    assert ran and all(r.startswith("weights") for r in ran)
    with pytest.raises(ValueError, match="does not run"):
        parametrize_with_checks([loop], expected_failed_checks=lambda c: {"no-such-check": "x"})


# ------------------------------------------------------------------------------ oracles by class
@attrs.frozen
class ZeroLossHinge(Hinge):
    name = "zero-loss-hinge"


@attrs.frozen
class HalfCHinge(ScaledC):
    """Builds with C / 2; its registered oracle knows it."""

    name = "half-c-hinge"
    factor: float = 0.5


@attrs.frozen
class HalfCChild(HalfCHinge):
    name = "half-c-child"


register_decision_loss(ZeroLossHinge, lambda f: _zero)
register_decision_loss(f"{__name__}:HalfCHinge", lambda f: hinge_loss(0.5 * f.C))


def test_a_registered_decision_loss_is_used_and_can_fail():
    X, y = kit_data()
    # the nearest registered class wins: ZeroLossHinge's zero loss, not the hinge's
    with pytest.raises(AssertionError, match=r"decision_loss\(decision_function\(...\)\) = 0.0"):
        check_formulation(ZeroLossHinge(C=1.0), X, y)
    with pytest.raises(AssertionError, match="subproblem optimum"):
        check_loop(ReweightedL1(max_iter=2), ExpSurrogate(alpha=5.0), formulation=ZeroLossHinge(C=1.0))
    # a 'module:QualName' key resolves at the first lookup; subclasses inherit it
    for form in (HalfCHinge(C=1.0), HalfCChild(C=1.0)):
        assert "decision_loss ['lin']" in check_formulation(form, X, y)
    with pytest.raises(AssertionError, match="decision_loss"):
        check_formulation(HalfCChild(C=1.0), X, y, decision_loss=hinge_loss(1.0))


@attrs.frozen
class ValuesOnly(Unknown):
    name = "values-only"


register_decision_check(ValuesOnly, lambda f: lambda v, y, loss: None if np.mean(v[y > 0]) > np.mean(v[y < 0])
                        else "class +1 below class -1")


@attrs.frozen
class FlippedValuesOnly(ValuesOnly):
    name = "flipped-values-only"

    def decision_function(self, coef, intercept, X):
        return -(X @ coef + intercept)


def test_a_registered_decision_check_is_used():
    X, y = kit_data()
    assert "decision values ['lin']" in check_formulation(ValuesOnly(), X, y)
    with pytest.raises(AssertionError, match="class \\+1 below class -1"):
        check_formulation(FlippedValuesOnly(), X, y)


@attrs.frozen
class OracleIRL1(PlainIRL1):
    """PlainIRL1 with a registered oracle (its weights phi'(t_k), first 1)."""

    name = "oracle-irl1"


@attrs.frozen
class OracleIRL1Child(OracleIRL1):
    name = "oracle-irl1-child"

    def steps(self, sub, surrogate, run):  # never reweights: off its parent's oracle
        it = sub.solve(lin=np.ones(sub.n_groups))
        yield self.surrogate_step(it, surrogate)
        yield self.surrogate_step(sub.solve(lin=np.ones(sub.n_groups)), surrogate)
        return True, "done"


def _irl1_oracle(loop, surrogate, sub):
    def weights(k, prev):
        return {"lin": np.ones(sub.n_groups) if prev is None else surrogate.derivative(prev.t)}
    return LoopModel(weights, lambda k, it, loss: loss + float(np.sum(surrogate.phi(it.t))), "irl1 oracle")


register_loop_oracle(OracleIRL1, _irl1_oracle)


def test_a_registered_loop_oracle_is_used_and_inherited():
    sur = ExpSurrogate(alpha=5.0)
    ran = check_loop(OracleIRL1(), sur)
    assert f"weights {sur} (irl1 oracle)" in ran and f"descent {sur} (recomputed)" in ran
    with pytest.raises(AssertionError, match=r"iteration 1: slot weights lin = .*\(irl1 oracle\)"):
        check_loop(OracleIRL1Child(), sur)
