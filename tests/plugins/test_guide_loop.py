"""A new loop written from docs/plugins.md ("The OuterLoop template") alone: the adaptive lasso
(Zou 2006) on any formulation with a ``lin`` term — an L1 start, then one re-solve with weights
``1 / (t_j + eps)^gamma`` — registered at run time, run through ``fsframe.fit`` and the conformance
kit, and checked against the same two LPs written in CVXPY."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import fsframe
import fsframe.plugins
from fsframe import OuterLoop, hookimpl
from fsframe.loops import Step
from fsframe.testing import check_loop, kit_data
from fsframe.validators import real, to_float

import cvxpy as cp


@attrs.frozen
class AdaptiveLasso(OuterLoop):
    """Zou's adaptive lasso in two solves: unit L1 weights, then ``1 / (t_j + eps)^gamma`` at the
    first solution's group norms. It minimises no surrogate, so it takes none."""

    name = "adaptive-lasso"
    needs_surrogate = False
    takes_surrogate = False
    monotone = False  # the second problem is another problem, not a descent step
    gamma: float = attrs.field(default=1.0, converter=to_float, validator=real(0))
    eps: float = attrs.field(default=1e-3, converter=to_float, validator=real(0))

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        first = sub.solve(lin=np.ones(sub.n_groups))
        yield Step(first, first.objective, monitored=None)
        if not first.ok:
            return False, "the L1 start failed"
        second = sub.solve(lin=1.0 / (first.t + self.eps) ** self.gamma)
        run.info["first_nnz"] = int(np.count_nonzero(first.t > 1e-9 * first.t.max()))
        yield Step(second, second.objective, monitored=None)
        return True, "two solves"


class GuidePlugin:
    @hookimpl
    def fsframe_register_loops(self):
        return [AdaptiveLasso]


@pytest.fixture
def registered(fresh_registry):
    fsframe.plugins.register(GuidePlugin(), name="guide-loop")
    yield
    fsframe.plugins.unregister("guide-loop")


def _cvxpy_hinge(X, y, C, weights):
    """``min sum_j weights_j |w_j| + C sum_i max(0, 1 - y_i (x_i w + b))`` (Clarabel)."""
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(weights @ cp.abs(w) + C * cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b)))))
    prob.solve(solver=cp.CLARABEL)
    return w.value, prob.value


def test_the_guide_loop_runs_and_agrees_with_cvxpy(registered):
    X, y = kit_data(n_samples=60, n_features=10, n_positive=25)
    r = fsframe.fit(X, y, formulation="hinge", loop="adaptive-lasso", C=1.0, gamma=1.0)
    assert r.n_iter == 2 and r.converged and r.info["first_nnz"] >= r.n_selected
    w1, _ = _cvxpy_hinge(X, y, 1.0, np.ones(10))
    _, opt = _cvxpy_hinge(X, y, 1.0, 1.0 / (np.abs(w1) + 1e-3))
    assert r.objective == pytest.approx(opt, rel=1e-5)  # the second LP's optimum (needs_surrogate False)


def test_the_guide_loop_passes_the_kit(registered):
    """The kit's own formulation; the weights rule stated independently (``expected_weights``)."""
    def rule(k, prev, surrogate, sub):
        return {"lin": np.ones(sub.n_groups) if k == 0 else 1.0 / (prev.t + 1e-3)}

    ran = check_loop(AdaptiveLasso(), expected_weights=rule)
    assert {"iterations None", "weights None (expected_weights)", "support None", "failure raises"} <= set(ran)


@attrs.frozen
class MisreportingLasso(AdaptiveLasso):
    """The guide loop reporting an objective 1 % above its model's (a plugin's bookkeeping bug)."""

    name = "misreporting-lasso"

    def steps(self, sub, surrogate, run):
        first = sub.solve(lin=np.ones(sub.n_groups))
        yield Step(first, first.objective, monitored=None)
        second = sub.solve(lin=1.0 / (first.t + self.eps) ** self.gamma)
        yield Step(second, 1.01 * second.objective, monitored=None)
        return True, "two solves"


def test_check_fit_result_recomputes_a_plugin_loops_objective_from_its_recorded_weights(registered):
    """A surrogate-free loop with weights of its own: check_fit_result assumed unit L1 weights
    (and failed on a correct result); it now recomputes loss + penalty at the weights the result
    records (info["penalty_weights"]), so a misreported objective is caught."""
    from fsframe.testing import check_fit_result

    X, y = kit_data(n_samples=60, n_features=10, n_positive=25)
    r = fsframe.fit(X, y, formulation="hinge", loop="adaptive-lasso", C=1.0, gamma=1.0)
    w1, _ = _cvxpy_hinge(X, y, 1.0, np.ones(10))
    pw = r.info["penalty_weights"]
    assert pw["lin"] == pytest.approx(1.0 / (np.abs(w1) + 1e-3), rel=1e-3, abs=1e-3)  # the second LP's weights
    assert {"objective recomputed", "penalty at the recorded weights"} <= set(check_fit_result(r, X, y))
    fsframe.plugins.register(type("P", (), {"fsframe_register_loops": hookimpl(lambda self: [MisreportingLasso])})(),
                             name="misreporting")
    try:
        bad = fsframe.fit(X, y, formulation="hinge", loop="misreporting-lasso", C=1.0, gamma=1.0)
    finally:
        fsframe.plugins.unregister("misreporting")
    assert bad.objective == pytest.approx(1.01 * r.objective)
    with pytest.raises(AssertionError, match="objective .* recomputed loss \\+ penalty"):
        check_fit_result(bad, X, y)


def test_the_guide_loop_refuses_a_surrogate(registered):
    X, y = kit_data()
    with pytest.raises(fsframe.errors.IncompatibleComponentsError, match="takes no surrogate"):
        fsframe.fit(X, y, formulation="hinge", surrogate="exp", loop="adaptive-lasso")
