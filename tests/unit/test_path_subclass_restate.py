"""A subclass of a restatable formulation that rebuilds the model (its own ``build``) but inherits
``restate`` is not restated: ``fsframe.path`` fits it point by point and equals cold fits; a
subclass that changes neither (a new name only) still restates."""

import types
import warnings

import attrs
import numpy as np
import pytest
from fsframe_svm import HingeFormulation
from pyomo.core.expr.numeric_expr import LinearExpression

import fsframe
from fsframe import MethodSpec
from fsframe.evaluation.protocols import path_restates
from fsframe.pyomo_ext import var_list

GRID = [10.0, 1.0, 0.1, 0.01]
POS = 5.0


def _weights(y, C):
    return np.where(np.asarray(y) > 0, POS, 1.0) * C


@attrs.frozen
class CWHinge(HingeFormulation):
    """Class-weighted hinge: the positive class's slacks cost ``POS * C``; inherits ``restate``."""

    name = "cw-hinge-test"

    def build(self, X, y, terms):
        b = super().build(X, y, terms)
        xis = var_list(b.model.xi)
        b.model.fsframe_slot.loss.set_value(LinearExpression(
            constant=0.0, linear_coefs=[float(v) for v in _weights(y, self.C)], linear_vars=xis))
        return b


@attrs.frozen
class RenamedHinge(HingeFormulation):
    """Only renames: build and restate both come from HingeFormulation, so it still restates."""

    name = "renamed-hinge-test"


@attrs.frozen
class LoggedRestateHinge(HingeFormulation):
    """Defines ``restate`` only (calling ``super()``), not ``build``: its ``restate`` is written
    for the parent's model, which it knows, so it restates."""

    name = "logged-restate-hinge-test"
    calls = []  # class-level: the frozen instance has no room for a counter

    def restate(self, built, base, compiled, params):
        LoggedRestateHinge.calls.append(dict(params))
        return super().restate(built, base, compiled, params)


class _OwnBuild:
    def build(self, X, y, terms):
        return super().build(X, y, terms)


@attrs.frozen
class MixedInBuildHinge(_OwnBuild, HingeFormulation):
    """Its ``build`` comes through a mixin (not a subclass of the class defining ``restate``)."""

    name = "mixed-in-build-hinge-test"


def data(seed=3, m=60, n=30):
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(m) % 3 == 0, 1, -1)
    X = rng.standard_normal((m, n))
    X[:, :3] += 0.6 * y[:, None]
    return X, y


@pytest.fixture
def plugin(add_components):
    add_components(name="cw-test", formulations=[CWHinge, RenamedHinge, LoggedRestateHinge], methods=[
        MethodSpec("cw-l1-svm-test", formulation="cw-hinge-test", surrogate="l1", loop="single",
                   defaults={"C": 1.0}),
        MethodSpec("renamed-l1-svm-test", formulation="renamed-hinge-test", surrogate="l1", loop="single",
                   defaults={"C": 1.0}),
        MethodSpec("logged-l1-svm-test", formulation="logged-restate-hinge-test", surrogate="l1", loop="single",
                   defaults={"C": 1.0})])


def cfg(method):
    return types.SimpleNamespace(method=method, formulation=None, surrogate=None, loop=None, params={})


def weighted_objective(r, X, y, C):
    w, b = np.ravel(r.coef), float(np.ravel(r.intercept)[0])
    return np.abs(w).sum() + C * (_weights(y, 1.0) * np.maximum(0.0, 1 - y * (X @ w + b))).sum()


def test_subclass_with_own_build_is_fitted_point_by_point(plugin):
    X, y = data()
    assert "restate" not in CWHinge(C=1.0).provides()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = fsframe.path(X, y, "cw-l1-svm-test", C=GRID, progress=False)
        cold = [fsframe.fit(X, y, method="cw-l1-svm-test", C=c) for c in GRID]
    assert [p.warm for p in P.points][1:] == ["new"] * (len(GRID) - 1)
    for c, p, r in zip(GRID, P.points, cold):
        # the subclass's own objective (positive slacks cost 5 C), computed from the coefficients
        assert p.objective == pytest.approx(weighted_objective(p.result, X, y, c), rel=1e-7, abs=1e-9)
        assert p.objective == pytest.approx(r.objective, rel=1e-7, abs=1e-9), c
        np.testing.assert_array_equal(p.support, r.support)
    assert not path_restates(cfg("cw-l1-svm-test"), [{"C": c} for c in GRID])


def test_subclass_that_only_renames_still_restates(plugin):
    X, y = data()
    assert "restate" in RenamedHinge(C=1.0).provides()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = fsframe.path(X, y, "renamed-l1-svm-test", C=GRID, progress=False)
        cold = [fsframe.fit(X, y, method="renamed-l1-svm-test", C=c) for c in GRID]
    assert "restated" in [p.warm for p in P.points]
    for c, p, r in zip(GRID, P.points, cold):
        assert p.objective == pytest.approx(r.objective, rel=1e-7, abs=1e-9), c
    assert path_restates(cfg("renamed-l1-svm-test"), [{"C": c} for c in GRID])


def test_subclass_with_own_restate_only_still_restates(plugin):
    """A subclass that wraps ``restate`` (calling ``super()``) without its own ``build`` lost the
    protocol (the path fitted it point by point); it restates, through its own ``restate``, and
    equals cold fits. A ``build`` from a mixin is the parent's rule broken: no protocol."""
    assert "restate" in LoggedRestateHinge(C=1.0).provides()
    assert "restate" not in MixedInBuildHinge(C=1.0).provides()
    X, y = data()
    LoggedRestateHinge.calls.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = fsframe.path(X, y, "logged-l1-svm-test", C=GRID, progress=False)
        cold = [fsframe.fit(X, y, method="logged-l1-svm-test", C=c) for c in GRID]
    assert [p.warm for p in P.points][1:] == ["restated"] * (len(GRID) - 1)
    assert [c["C"] for c in LoggedRestateHinge.calls] == GRID[1:]
    for c, p, r in zip(GRID, P.points, cold):
        assert p.objective == pytest.approx(r.objective, rel=1e-7, abs=1e-9), c
        np.testing.assert_array_equal(p.support, r.support)
    assert path_restates(cfg("logged-l1-svm-test"), [{"C": c} for c in GRID])


def test_restate_refusal_names_the_owners():
    """``Subproblem.restate`` on a subclass whose own ``build`` sits below the inherited
    ``restate`` says which class defines which and how to comply."""
    from fsframe.backends.base import SolveOptions
    from fsframe.errors import IncompatibleComponentsError
    from fsframe.method import select_backend
    from fsframe.problem import Subproblem

    X, y = data(n=8)
    sub = Subproblem(CWHinge(), X, y, frozenset({"lin"}), select_backend("highs", fsframe.ProblemClass.LP),
                     SolveOptions())
    sub.solve(lin=np.ones(X.shape[1]))
    with pytest.raises(IncompatibleComponentsError, match="'restate' protocol") as err:
        sub.restate(C=2.0)
    assert ("`restate` comes from HingeFormulation while `build` comes from CWHinge; define `restate` in CWHinge "
            "(a `super()` wrapper suffices" in str(err.value))
