"""The ``bounds`` protocol (``bound_params`` + ``with_bounds``) holds only where ``with_bounds`` is
written for the model ``build`` makes, as the ``restate`` protocol does: a subclass that overrides
``build`` but inherits ``with_bounds`` would have its bounds restated by the parent's rule (here:
the floor moved onto the wrong feature), so it has no ``bounds`` protocol — ``fsframe.path`` fits
it point by point, ``Subproblem.set_bounds`` and the ``bound-search`` loop refuse it."""

import warnings

import attrs
import numpy as np
import pytest
from fsframe_svm import HingeFormulation

import fsframe
from fsframe import MethodSpec
from fsframe.errors import IncompatibleComponentsError
from test_path_subclass_restate import _OwnBuild, data  # tests/unit is on sys.path (rootdir-relative import)

FLOORS = [0.0, 2.0]


@attrs.frozen
class FlooredHinge(HingeFormulation):
    """The hinge with a bound parameter ``floor``: ``u_6 >= floor`` (the positive part of the
    weight of feature 6, noise), stated by ``build`` and restated by ``with_bounds`` (numpy and
    Pyomo alike)."""

    name = "floored-hinge-bounds-test"
    bound_params = ("floor",)
    floor: float = 0.0

    def build(self, X, y, terms):
        built = super().build(X, y, terms)
        built.model.u[6].setlb(self.floor)
        return built

    def with_bounds(self, built, base, compiled, bounds):
        lb = np.array(base.lb, dtype=float)
        lb[compiled.cols([built.model.u[6]])[0]] = float(bounds["floor"])
        built.model.u[6].setlb(float(bounds["floor"]))
        return base.evolve(lb=lb)


@attrs.frozen
class FloorOnSecond(FlooredHinge):
    """Its own ``build`` puts the floor on feature 7; ``with_bounds`` is inherited (feature 6's)."""

    name = "floor-on-second-bounds-test"

    def build(self, X, y, terms):
        built = HingeFormulation.build(self, X, y, terms)
        built.model.u[7].setlb(self.floor)
        return built


@attrs.frozen
class RenamedFloored(FlooredHinge):
    """A new name only: ``build`` and ``with_bounds`` both come from :class:`FlooredHinge`."""

    name = "renamed-floored-bounds-test"


@attrs.frozen
class WrapsWithBounds(FlooredHinge):
    """Wraps ``with_bounds`` (calling ``super()``) and leaves ``build`` alone: it knows the model."""

    name = "wraps-with-bounds-test"

    def with_bounds(self, built, base, compiled, bounds):
        return super().with_bounds(built, base, compiled, bounds)


@attrs.frozen
class MixedInBuild(_OwnBuild, FlooredHinge):
    """Its ``build`` comes through a mixin, not from a class ``with_bounds``'s owner derives from."""

    name = "mixed-in-build-bounds-test"


@pytest.fixture
def plugin(add_components):
    forms = [FlooredHinge, FloorOnSecond, RenamedFloored]
    add_components(name="floor-bounds-test", formulations=forms, methods=[
        MethodSpec(f"{f.name}-l1", formulation=f.name, surrogate="l1", loop="single", defaults={"C": 1.0})
        for f in forms])


def test_provides_bounds_only_where_with_bounds_knows_the_build():
    assert "bounds" in FlooredHinge().provides()
    assert "bounds" in RenamedFloored().provides()
    assert "bounds" in WrapsWithBounds().provides()
    assert "bounds" not in FloorOnSecond().provides()
    assert "bounds" not in MixedInBuild().provides()
    loop = fsframe.plugins.get_registry().get("loop", "bound-search")()
    assert loop.formulation_missing(FlooredHinge()) == []
    assert loop.formulation_missing(FloorOnSecond()) == [
        "bound parameters to search (bound_params and with_bounds), but `with_bounds` comes from FlooredHinge while "
        "`build` comes from FloorOnSecond; define `with_bounds` in FloorOnSecond (a `super()` wrapper suffices; "
        "docs/plugins.md)"]
    assert "`build` comes from _OwnBuild; define `with_bounds` in MixedInBuild (a" in loop.formulation_missing(
        MixedInBuild())[0]


@attrs.frozen
class NoBounds(HingeFormulation):
    """Has ``with_bounds`` (inherited) but no ``bound_params``: the attributes are missing, not the
    method's owner at fault, and the refusal says only that."""

    name = "no-bounds-test"


def test_refusal_names_the_protocol_alone_when_attributes_are_missing():
    loop = fsframe.plugins.get_registry().get("loop", "bound-search")()
    assert loop.formulation_missing(NoBounds()) == ["bound parameters to search (bound_params and with_bounds)"]


def test_set_bounds_refuses_an_inherited_with_bounds():
    from fsframe.backends.base import SolveOptions
    from fsframe.method import select_backend
    from fsframe.problem import Subproblem

    X, y = data(n=8)
    be = select_backend("highs", fsframe.ProblemClass.LP)
    sub = Subproblem(FloorOnSecond(), X, y, frozenset({"lin"}), be, SolveOptions())
    sub.solve(lin=np.ones(X.shape[1]))
    with pytest.raises(IncompatibleComponentsError, match="'bounds' protocol") as err:
        sub.set_bounds(floor=0.5)
    assert ("`with_bounds` comes from FlooredHinge while `build` comes from FloorOnSecond; define `with_bounds` in "
            "FloorOnSecond (a `super()` wrapper suffices" in str(err.value))


@pytest.mark.parametrize("form, restates", [(FloorOnSecond, False), (FlooredHinge, True), (RenamedFloored, True)])
def test_a_path_over_a_bound_restates_only_with_the_protocol(plugin, form, restates):
    """Each point of the path equals a cold fit at its floor (the floor where the formulation's own
    ``build`` puts it); the parent's ``with_bounds`` on :class:`FloorOnSecond` moved it to feature
    6 (``u_6`` raised to 2, ``u_7`` left free: an objective not the subclass's)."""
    X, y = data(n=8)
    method = f"{form.name}-l1"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = fsframe.path(X, y, method, floor=FLOORS, progress=False)
        cold = [fsframe.fit(X, y, method=method, floor=f) for f in FLOORS]
    assert [p.warm for p in P.points][1:] == (["restated"] if restates else ["new"])
    for f, p, r in zip(FLOORS, P.points, cold):
        assert p.objective == pytest.approx(r.objective, rel=1e-7, abs=1e-9), f
    assert P.points[1].objective > P.points[0].objective + 1e-3  # the floor binds
