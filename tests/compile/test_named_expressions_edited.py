"""A recorded block written over named expressions (:func:`fsframe.pyomo_ext.add_named_expressions`)
is used as recorded only while those expressions keep their definitions: redefined in Pyomo
afterwards, the block is read from Pyomo (reference: the general path, ``fast=False``)."""

from __future__ import annotations

import numpy as np
import pytest
import pyomo.environ as pyo
import scipy.sparse as sp

from fsframe.backends import ClarabelBackend, HighsBackend
from fsframe.compiler import compile_model
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_named_expressions, add_soc, add_sparsity_slot, var_list


def _model(terms=frozenset({"lin"}), *, named_slot=False, loss=0.0):
    """``w = u - v`` named; ``w_0 + 2 w_1 >= 1``; ``min loss * sum (u + v) + penalty`` with the
    slot's ``coef``/``magnitude`` over variables, or over the named ``w`` and ``s = u + v``."""
    m = pyo.ConcreteModel()
    m.u = pyo.Var(range(2), bounds=(0, None))
    m.v = pyo.Var(range(2), bounds=(0, None))
    uv = var_list(m.u, m.v)
    split = sp.hstack([sp.eye(2), -sp.eye(2)]).tocsr()
    total = sp.hstack([sp.eye(2), sp.eye(2)]).tocsr()
    w = add_named_expressions(m, "w", LinearMap(split, uv))
    add_linear_constraints(m, "c", LinearMap(sp.csr_matrix(np.array([[1.0, 2.0]])), w), lower=1.0)
    if named_slot:
        s = add_named_expressions(m, "s", LinearMap(total, uv))
        coef, magnitude = LinearMap(sp.eye(2, format="csr"), w), LinearMap(sp.eye(2, format="csr"), s)
    else:
        coef, magnitude = LinearMap(split, uv), LinearMap(total, uv)
    add_sparsity_slot(m, coef=coef, terms=terms, magnitude=magnitude, loss=loss * sum(uv))
    return m


def _solve(m, fast):
    return HighsBackend().solve(compile_model(m, fast=fast).with_weights(lin=np.ones(2), sync=False))


def test_unedited_named_expressions_keep_the_recorded_block():
    m = _model()
    assert compile_model(m).paths["recorded"] == 1
    assert _solve(m, True).objective == pytest.approx(0.5, abs=1e-9)  # w = (0, 1/2)
    assert _solve(m, False).objective == pytest.approx(0.5, abs=1e-9)


def test_a_redefined_named_expression_sends_its_block_to_pyomo():
    m = _model()
    m.w[1] = 4 * m.u[1] - m.v[1]  # now w_0 + 8 u_1 - 2 v_1 >= 1: optimum u_1 = 1/8
    cm = compile_model(m)
    assert cm.paths["recorded"] == 0
    fast, general = _solve(m, True), _solve(m, False)
    assert general.objective == pytest.approx(0.125, abs=1e-9)
    assert fast.objective == pytest.approx(0.125, abs=1e-9)


def _cone_model(scale):
    """``min t + 0.1 sum(u + v)`` s.t. ``||scale * w|| <= t`` with ``w = u - v + (1, -2)`` named:
    the optimum is ``w = 0``, objective ``0.1 * ||(1, -2)||_1 = 0.3``."""
    m = pyo.ConcreteModel()
    m.u = pyo.Var(range(2), bounds=(0, None))
    m.v = pyo.Var(range(2), bounds=(0, None))
    m.t = pyo.Var()
    uv = var_list(m.u, m.v)
    w = add_named_expressions(m, "w", LinearMap(sp.hstack([sp.eye(2), -sp.eye(2)]).tocsr(), uv, np.array([1.0, -2.0])))
    add_soc(m, "soc", LinearMap(scale * sp.eye(2, format="csr"), w), m.t)
    m.obj = pyo.Objective(expr=m.t + 0.1 * sum(uv))
    return m


@pytest.mark.parametrize("scale", [1.0, 2.0])  # 1.0: the cone's argument is the named expressions
@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("cone_form", ["substitute", "auxiliary"])
def test_a_cone_over_named_expressions_compiles_on_every_path(scale, fast, cone_form):
    """It raised AttributeError on the fast path (the record held the named expressions as if
    they were variables) and, over the named expressions themselves, was refused everywhere."""
    res = ClarabelBackend().solve(compile_model(_cone_model(scale), fast=fast, cone_form=cone_form).data)
    assert res.objective == pytest.approx(0.3, abs=1e-6)


@pytest.mark.parametrize("cone_form", ["substitute", "auxiliary"])
def test_a_cone_over_a_redefined_named_expression_is_read_from_pyomo(cone_form):
    m = _cone_model(2.0)
    m.w[1] = m.u[1] - m.v[1] - 2.0 + 0.0 * m.t  # same value, a new expression
    m.w[0] = 4 * m.u[0] - m.v[0] + 1.0  # optimum u_0 = 0, v_0 = 1: objective 0.1 * (1 + 2)
    fast = compile_model(m, cone_form=cone_form)
    general = compile_model(m, fast=False, cone_form=cone_form)
    assert fast.paths["recorded"] == 0
    for cm in (fast, general):
        assert ClarabelBackend().solve(cm.data).objective == pytest.approx(0.3, abs=1e-6)
    m.w[0] = 4 * m.u[0] - m.v[0] + 4.0  # u_0 = 0, v_0 = 4: objective 0.1 * (4 + 2)
    for cm in (compile_model(m, cone_form=cone_form), compile_model(m, fast=False, cone_form=cone_form)):
        assert ClarabelBackend().solve(cm.data).objective == pytest.approx(0.6, abs=1e-6)


@pytest.mark.parametrize("terms", [{"lin"}, {"lin_w"}, {"quad"}])
def test_a_slot_over_named_expressions_compiles(terms):
    """``coef=``/``magnitude=`` over named expressions (it raised AttributeError on the
    ExpressionData): the compiled objective is the one Pyomo evaluates on the synced model."""
    m = _model(terms, named_slot=True, loss=0.01)
    w = list(m.w.values())
    cm = compile_model(m)
    weights = {"lin": {"lin": [1.0, 3.0]}, "lin_w": {"lin_w": [1.0, -0.5]}, "quad": {"quad": [1.0, 3.0]}}
    data = cm.with_weights(**weights[next(iter(terms))])
    cm.sync_model()
    x = np.array([0.3, 0.7, 0.1, 0.2])
    for v, val in zip(cm.columns, x):
        v.set_value(float(val))
    assert data.objective(x) == pytest.approx(pyo.value(m.fsframe_objective), rel=1e-12)
    np.testing.assert_allclose(cm.coef(x), [pyo.value(e) for e in w], rtol=1e-12)
