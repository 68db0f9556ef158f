"""The lazily synced Pyomo model states the problem ``with_weights`` last returned, over any
sequence of weights: infinite weights that fix groups and finite ones that free them again, terms
omitted and then present again, the model requested mid-loop and again later. References: Pyomo's
own evaluation of the model's objective, and a fresh compile of the synced model (its bounds)."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp

from fsframe.compiler import compile_model
from fsframe.errors import UnsupportedProblemError
from fsframe.plugins import get_registry
from fsframe.pyomo_ext import LinearMap, add_sparsity_slot, var_list


def _assert_model_states(cm, data, rng):
    """The model ``cm.model`` is the problem ``data``: same bounds as a fresh compile, same
    objective as Pyomo evaluates at random points that respect the fixed columns."""
    model = cm.model
    fresh = compile_model(model)
    # the same columns (a fixed variable of the loss may come later in a fresh compile's order)
    assert sorted(fresh.col_index) == sorted(cm.col_index)
    perm = [fresh.col_index[id(v)] for v in cm.columns]
    np.testing.assert_array_equal(fresh.base.lb[perm], data.lb)
    np.testing.assert_array_equal(fresh.base.ub[perm], data.ub)
    fixed = data.lb == data.ub
    assert [v.fixed for v in cm.columns] == fixed.tolist()
    for _ in range(3):
        x = rng.standard_normal(data.n)
        x[fixed] = data.lb[fixed]
        for v, val in zip(cm.columns, x.tolist()):
            if not v.fixed:
                v.set_value(val, skip_validation=True)
        np.testing.assert_allclose(pyo.value(model.fsframe_objective), data.objective(x), rtol=1e-12, atol=1e-12)


def test_random_weight_sequences_leave_the_model_stating_the_last_problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 5))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    built = get_registry().get("formulation", "hinge")(C=1.0).build(X, y, frozenset({"lin", "lin_w", "quad"}))
    cm = compile_model(built.model)
    requested = 0
    for it in range(30):
        kw = {}
        if rng.random() < 0.7:
            kw["lin"] = np.where(rng.random(5) < 0.3, np.inf, 2 * rng.random(5))
        if rng.random() < 0.5:
            kw["lin_w"] = rng.standard_normal(5)
        if rng.random() < 0.6:
            kw["quad"] = np.where(rng.random(5) < 0.3, np.inf, rng.random(5))
        data = cm.with_weights(**kw)
        if rng.random() < 0.3 or it == 29:
            _assert_model_states(cm, data, rng)
            requested += 1
    assert requested >= 5


def _fixed_model(value=0.0, bounds=(-2, 2)):
    """``min sum (x_i - 1)^2`` with a quad slot on ``x``, ``x[1]`` fixed at ``value`` (or, with
    ``value=None``, free within ``bounds``)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), bounds=(-2, 2))
    m.x[1].setlb(bounds[0])
    m.x[1].setub(bounds[1])
    if value is not None:
        m.x[1].fix(value)
    xs = var_list(m.x)
    add_sparsity_slot(m, coef=LinearMap(sp.eye(3, format="csr"), xs), terms={"quad"},
                      loss=sum((v - 1) ** 2 for v in xs))
    return m


def test_a_column_fixed_before_compiling_is_fixed_again_when_its_group_is_freed():
    """A variable the model fixed (at 0) stays fixed in the compiled bounds after an infinite
    weight fixed its group and a finite one freed it; the synced model must not free it while
    the solved problem keeps it fixed."""
    m = _fixed_model(0.0)
    cm = compile_model(m)
    rng = np.random.default_rng(1)
    j = cm.col_index[id(m.x[1])]
    assert cm.base.lb[j] == cm.base.ub[j] == 0.0
    _assert_model_states(cm, cm.with_weights(quad=[1.0, np.inf, 1.0]), rng)
    assert m.x[1].fixed
    data = cm.with_weights(quad=[1.0, 2.0, np.inf])
    assert data.lb[j] == data.ub[j] == 0.0
    _assert_model_states(cm, data, rng)
    assert m.x[1].fixed and m.x[1].value == 0.0
    assert m.x[2].fixed and not m.x[0].fixed


@pytest.mark.parametrize("value,bounds", [(0.7, (-2, 2)), (None, (0.5, 2.0)), (None, (-2.0, -0.1))])
def test_fixing_a_group_whose_bounds_exclude_zero_is_refused(value, bounds):
    """``[0, 0]`` on a column fixed at 0.7 (or bounded away from zero) would solve another problem
    (feasible where the model is not, with the loss's constant taken at 0.7): a clear error, and
    neither the compiled problem nor the model change."""
    m = _fixed_model(value, bounds)
    cm = compile_model(m)
    before = cm.with_weights(quad=[1.0, 1.0, 1.0])
    with pytest.raises(UnsupportedProblemError, match="bounds that contain zero"):
        cm.with_weights(quad=[1.0, np.inf, 1.0])
    assert cm.data is before
    cm.sync_model()
    assert m.x[1].fixed == (value is not None)
    assert [pyo.value(m.fsframe_slot.quad[k]) for k in range(3)] == [1.0, 1.0, 1.0]
    # other groups can still be fixed
    assert cm.with_weights(quad=[np.inf, 1.0, 1.0]).ub[cm.col_index[id(m.x[0])]] == 0.0
