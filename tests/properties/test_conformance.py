"""Every registered component through the public conformance kit (``fsframe.testing``), with a
few parameter values each, and the guard that fails when a registered component is missing here.

Expected values come from the kit: finite differences and the definition of a concave penalty
for surrogates, hand-solved :class:`~fsframe.testing.StandardProblems` for backends, Pyomo's own
evaluation of the model for formulations, numpy recomputation of loss and penalty for loops.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import fsframe
from fsframe.backends.base import SolveOptions
from fsframe.plugins import get_registry
from fsframe.testing import KitHinge, check_backend, check_formulation, check_loop, check_surrogate, kit_data

# kind -> name -> parameter sets. Components from the example plugin are skipped when it is
# not installed; a registered component missing here fails test_all_components_checked.
CONFORMANCE = {
    "surrogate": {
        "exp": [{"alpha": 0.5}, {"alpha": 5.0}, {"alpha": 50.0}],
        "log": [{"eps": 1e-3}, {"eps": 0.1}, {"eps": 1.0}],
        "lp": [{"p": 0.0}, {"p": 0.1}, {"p": 0.5}, {"p": 1.0}, {"p": 0.1, "eps": 1e-3}, {"p": 0.5, "eps": 0.1},
               {"p": 1.0, "eps": 1.0}],
        "l0": [{}],
        "l1": [{}],
        "scad": [{"lam": 1.0, "a": 3.7}, {"lam": 0.1, "a": 2.5}],
    },
    "loop": {
        "single": [{}, {"penalty": "l2"}],
        "reweighted-l1": [{}, {"init": "zero"}],
        "dca": [{}, {"init": "zero"}],
        "em": [{}],
        "bound-search": [{}, {"criterion": 1}, {"criterion": "log", "delta_pos_step": 0.1}],
        "greedy": [{"sigma": 0.01}],
        # closed algorithms that never solve the slot's subproblem sequence (check_loop does not apply):
        # value-checked in tests/multiclass (Theorem 1 descent, U/E updates vs direct solves, CVXPY optima)
        "dso": None,
        "rfs": None,
        # filters: one solve on the ranked features, through the kit
        "relieff": [{}],
        "mrmr": [{}],
    },
    "backend": {
        "highs": [{}, {"qp_form": "dense"}, {"qp_form": "dual"}, {"qp_form": "scaled"}, {"qp_form": "primal"}],
        "ecos": [{}],
        "clarabel": [{}],
    },
    "formulation": {
        "hinge": [{"C": 1.0}, {"C": 10.0}],
        "mpm": [{"delta": 0.5}],
        "mpm-max": [{}],
        "mempm": [{"delta_pos": 0.4, "delta_neg": 0.3}],
        "mpm-equal": [{"delta": 0.3}],
        "twsvm": [{"c11": 0.5, "c22": 2.0}, {"kernel": "rbf"}],
        "margin": [{"C": 1.0}, {"C": 10.0}],
        "l21-regression": [{"gamma": 1.0}],
        "least-squares": [{"C": 1.0}, {"C": 10.0}],
        "logistic": [{"C": 1.0}, {"C": 10.0}],
        "multinomial": [{"C": 1.0}, {"C": 10.0}],
    },
    # methods: run and value-checked in tests/unit/test_composition.py
    "method": {name: [{}] for name in ("l1-svm", "fsv", "em-l0", "arom", "svm-weights", "scad-svm",
                                       "mpm", "l1-mpm", "l0-mpm", "fs-mempm", "fs-mpm", "l1-twsvm", "ftsvm",
                                       "rtsvm", "greedy-l1-svm", "dso-fs", "rfs", "relieff", "mrmr",
                                       "l1-ls", "lasso", "l0-ls", "em-ls", "log-ls", "l1-logistic", "l0-logistic",
                                       "em-logistic", "log-logistic", "l1-multinomial", "l0-multinomial",
                                       "em-multinomial", "log-multinomial")},
}


def _cases(kind):
    return [pytest.param(name, params, id=f"{name}-{params}") for name, ps in CONFORMANCE[kind].items()
            for params in (ps or ())]


def _component(kind, name, params):
    reg = get_registry()
    if name not in reg.names(kind):
        pytest.skip(f"{kind} {name!r} is not registered (plugin not installed)")
    return reg.get(kind, name)(**params)


def test_all_components_checked():
    reg = get_registry()
    missing = {kind: sorted(set(reg.names(kind)) - set(CONFORMANCE[kind])) for kind in CONFORMANCE}
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"registered components without conformance parameters in {__file__}: {missing}"


def test_guard_sees_a_new_component(add_components):
    """The guard above fails when a plugin adds a component this file does not list."""
    import attrs

    from fsframe.surrogates.base import Surrogate

    @attrs.frozen
    class Unlisted(Surrogate):
        name = "unlisted-for-guard"

        def phi(self, t):
            return np.minimum(np.asarray(t, dtype=float), 1.0)

    add_components(surrogates=[Unlisted])
    with pytest.raises(AssertionError, match="unlisted-for-guard"):
        test_all_components_checked()


# ------------------------------------------------------------------------------ surrogates
points = arrays(np.float64, st.integers(1, 40),
                elements=st.one_of(st.floats(0.0, 1e3), st.floats(0.0, 2.0), st.floats(0.0, 1e-3),
                                  st.floats(1e-300, 1e-200)))


@pytest.mark.parametrize("name, params", _cases("surrogate"))
def test_surrogate_conformance_grid(name, params):
    ran = check_surrogate(_component("surrogate", name, params))
    assert "midpoint-concave" in ran


@pytest.mark.parametrize("name, params", _cases("surrogate"))
@given(t=points)
# every example hypothesis ever found, kept (derandomised draws change with hypothesis's version):
# t = 1e-12 failed lp(p=0.1, eps=1e-3) ("phi on scalars differs from phi on an array": its
# (t + eps)**p - eps**p cancelled every digit, numpy's scalar and array powers differently)
@example(t=np.array([1e-12]))
def test_surrogate_conformance_random_points(name, params, t):
    sur = _component("surrogate", name, params)
    ran = check_surrogate(sur, t)
    caps = sur.capabilities()
    # a check runs exactly for the capabilities the instance declares
    assert ("derivative=fd" in ran) == ("derivative" in caps)
    assert ("dc g-h=phi" in ran) == ("dc_split" in caps)
    assert ("quad_weights finite, non-increasing" in ran) == ("quad_weights" in caps)


# ------------------------------------------------------------------------------ backends
@pytest.mark.parametrize("name, params", _cases("backend"))
def test_backend_conformance(name, params):
    be = _component("backend", name, {})
    ran = check_backend(be, options=SolveOptions(backend_options=params))
    assert "l1svm_separable(weights=(1.0, 1.0), fixed=())" in ran
    assert "unknown option rejected" in ran


# ------------------------------------------------------------------------------ formulations
@pytest.mark.parametrize("name, params", _cases("formulation"))
def test_formulation_conformance(name, params, toy, binary_data):
    f = _component("formulation", name, params)
    solvable = [t for t in f.slot_terms if t != "lin_w"]
    # separable and balanced (hand-solvable), then non-separable: the kit's default data and another
    # the twin SVM's loss is no function of its decision values (a distance difference): its
    # objective is checked against CVXPY in tests/twsvm/test_lps.py
    kw = {"decision_loss": False} if name == "twsvm" else {}
    for X, y in (toy, kit_data(), binary_data):
        ran = check_formulation(f, X, y, **kw)
        # every combination of slot terms with "lin" or "quad" was solved
        assert len([r for r in ran if r.startswith("weights+solve")]) == 2 ** len(f.slot_terms) - 2 ** (
            len(f.slot_terms) - len(solvable))


# ------------------------------------------------------------------------------ loops
@pytest.mark.parametrize("name, params", _cases("loop"))
def test_loop_conformance(name, params):
    loop = _component("loop", name, params)
    if loop.formulation_missing(KitHinge()):  # a bound search: on the registered formulations it runs on
        ran = []
        for f in (e.obj() for e in get_registry().all("formulation")):
            if not loop.formulation_missing(f) and f.multiclass != "native":
                ran += check_loop(loop, formulation=f)
        assert ran, f"no registered formulation provides {loop.formulation_requires}"
    else:
        ran = check_loop(loop)  # on the kit's own formulation: no plugin needed
    assert any(r.startswith("iterations") for r in ran)
    assert "failure raises" in ran


def test_em_oracle_models_the_capped_per_group_floor():
    """The kit's EM model floors each group of the check step at ``c / ||X_j||`` capped at
    ``FLOOR_RATIO`` times the largest norm (docs/testing.md, EM's rule): a column of norm ~6e-9
    puts ``c / ||X_j||`` above the cap, so a loop without the cap (or with one common floor ``c``)
    gives the check step other weights and fails the ``weights`` check."""
    from fsframe.loops import EM
    from fsframe.surrogates.lp import L1Surrogate

    X, y = kit_data()
    X = X.copy()
    X[:, 5] *= 1e-9
    ran = check_loop(EM(tol=1e-3), L1Surrogate(), X=X, y=y)
    assert "weights l1() (quad = phi'(t_k) / (2 t_k))" in ran
