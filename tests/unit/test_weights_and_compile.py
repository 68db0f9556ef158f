"""CompiledModel.with_weights and ProblemData: the compiled objective equals Pyomo's own
evaluation of the model at random points, infinite weights fix groups in both, bad weights and
bad models raise typed errors, and moving bounds into rows keeps the optimum."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest

from fsframe.backends import HighsBackend, SolveOptions
from fsframe.canonical import ProblemData
from fsframe.compiler import compile_model
from fsframe.errors import UnsupportedProblemError
from fsframe.plugins import get_registry
from fsframe.testing import StandardProblems

Hinge = get_registry().get("formulation", "hinge")
ALL = frozenset({"lin", "lin_w", "quad"})


@pytest.fixture
def compiled(binary_data):
    X, y = binary_data
    built = Hinge(C=1.5).build(X, y, ALL)
    return built, compile_model(built.model)


def test_objective_equals_pyomo_evaluation(compiled):
    """At random points x and random weights, 1/2 x'Px + c'x + offset equals the value Pyomo
    computes from the model's expression with the Params synced by ``load_solution``."""
    built, comp = compiled
    rng = np.random.default_rng(0)
    n_groups = comp.slot.n_groups
    for _ in range(5):
        w = dict(lin=rng.uniform(0, 3, n_groups), lin_w=rng.normal(size=comp.slot.W.shape[0]),
                 quad=rng.uniform(0, 3, n_groups))
        data = comp.with_weights(**w)
        x = rng.normal(size=data.n)
        comp.load_solution(x)
        assert data.objective(x) == pytest.approx(pyo.value(built.slot.objective), rel=1e-12)
        assert comp.loss(x) == pytest.approx(pyo.value(built.slot.block.loss), rel=1e-12)
        np.testing.assert_allclose([pyo.value(built.slot.block.lin[j]) for j in range(n_groups)], w["lin"])


def test_infinite_weight_fixes_the_group_and_unfixes_it_again(compiled):
    built, comp = compiled
    n = comp.slot.n_groups
    lin = np.ones(n)
    lin[[1, 4]] = np.inf
    data = comp.with_weights(lin=lin, quad=np.ones(n))
    fixed_cols = np.flatnonzero(data.lb == data.ub)
    names = sorted(comp.columns[j].name for j in fixed_cols)
    assert names == ["u[1]", "u[4]", "v[1]", "v[4]"]
    assert np.all(data.lb[fixed_cols] == 0.0)
    assert not any(v.fixed for v in comp.columns)  # the model is brought up to date on request only
    comp.sync_model()
    assert sorted(v.name for v in comp.columns if v.fixed) == names  # the Pyomo model agrees
    assert pyo.value(built.slot.block.lin[1]) == 0.0  # the fixed group's weight is neutralised
    quad = np.ones(n)
    quad[2] = np.inf
    data = comp.with_weights(lin=np.ones(n), quad=quad)
    comp.sync_model()
    assert sorted(v.name for v in comp.columns if v.fixed) == ["u[2]", "v[2]"]
    data = comp.with_weights(lin=np.ones(n))
    comp.sync_model()
    assert not any(v.fixed for v in comp.columns) and np.all(data.lb < data.ub)


def test_weights_change_only_the_objective(compiled):
    """Constraint matrices are shared between iterations (no recompilation)."""
    _, comp = compiled
    n = comp.slot.n_groups
    a = comp.with_weights(lin=np.ones(n))
    b = comp.with_weights(lin=np.full(n, 2.0), quad=np.ones(n))
    assert a.A is b.A and a.G is b.G and a.h is b.h
    assert a.lb is comp.base.lb  # no group fixed: bounds shared too


def test_unsynced_weights_change_neither_data_nor_model(compiled):
    """``sync=False`` computes a problem aside: ``data`` and the model keep the synced weights."""
    built, comp = compiled
    n = comp.slot.n_groups
    synced = comp.with_weights(lin=np.full(n, 2.0))
    lin = np.ones(n)
    lin[0] = np.inf
    aside = comp.with_weights(lin=lin, sync=False)
    assert comp.data is synced and aside.ub[comp.slot.group_cols[0]].max() == 0.0
    model = comp.model
    assert [pyo.value(model.fsframe_slot.lin[j]) for j in range(n)] == [2.0] * n
    assert not any(v.fixed for v in comp.columns)
    np.testing.assert_allclose(synced.c - comp.base.c, comp.slot.S.T @ np.full(n, 2.0))


def test_bad_weights(compiled):
    _, comp = compiled
    n = comp.slot.n_groups
    with pytest.raises(ValueError, match="lin slot weights must be >= 0"):
        comp.with_weights(lin=-np.ones(n))
    with pytest.raises(ValueError, match="quad slot weights must be >= 0"):
        comp.with_weights(quad=np.full(n, np.nan))
    with pytest.raises(ValueError, match="lin_w slot weights must be finite"):
        comp.with_weights(lin=np.ones(n), lin_w=np.full(comp.slot.W.shape[0], np.inf))


def test_terms_not_built(binary_data):
    X, y = binary_data
    comp = compile_model(Hinge().build(X, y, frozenset({"quad"})).model)
    with pytest.raises(UnsupportedProblemError, match=r"no \['lin'\] term\(s\); it was built with \['quad'\]"):
        comp.with_weights(lin=np.ones(X.shape[1]))


def _model():
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2))
    m.obj = pyo.Objective(expr=m.x[0] + m.x[1])
    return m


def test_models_the_compiler_refuses():
    m = _model()
    m.k = pyo.Var(within=pyo.Integers)
    m.c = pyo.Constraint(expr=m.k + m.x[0] >= 0)
    with pytest.raises(UnsupportedProblemError, match="variable k is Integers"):
        compile_model(m)
    m = _model()
    m.c = pyo.Constraint(expr=pyo.exp(m.x[0]) <= 1)
    with pytest.raises(UnsupportedProblemError, match="constraint c is nonlinear"):
        compile_model(m)
    m = _model()
    m.c = pyo.Constraint(expr=m.x[0] * m.x[1] <= 1)
    with pytest.raises(UnsupportedProblemError, match="not a second-order cone"):
        compile_model(m)
    m = _model()
    m.obj.sense = pyo.maximize
    with pytest.raises(UnsupportedProblemError, match="fsframe minimises"):
        compile_model(m)
    m = _model()
    m.obj2 = pyo.Objective(expr=m.x[0])
    with pytest.raises(UnsupportedProblemError, match="exactly one active objective, found 2"):
        compile_model(m)
    with pytest.raises(UnsupportedProblemError, match="no sparsity slot"):
        compile_model(_model()).with_weights(lin=1.0)


def test_replaced_objective_is_refused(binary_data):
    X, y = binary_data
    built = Hinge().build(X, y, frozenset({"lin"}))
    built.slot.objective.deactivate()
    built.model.mine = pyo.Objective(expr=built.model.b)
    with pytest.raises(UnsupportedProblemError, match="put extra objective terms into the slot's loss="):
        compile_model(built.model)


def test_problem_data_validates_shapes():
    p = StandardProblems.qp_equality().data
    with pytest.raises(ValueError, match="A has shape"):
        p.evolve(b=np.zeros(3))
    with pytest.raises(ValueError, match="l \\+ sum\\(cones\\) must equal the rows of G"):
        p.evolve(l=1)


@pytest.mark.parametrize("prob", [StandardProblems.l1svm_separable(), StandardProblems.l1svm_separable(fixed=(0,)),
                                  StandardProblems.lp_equality_bounds(), StandardProblems.em_qp_fixed()],
                         ids=lambda p: p.name)
def test_bounds_as_rows_keeps_the_optimum(prob):
    """Bounds moved into G (fixed columns into A) for solvers without bounds: same answer."""
    rows = prob.data.bounds_as_rows()
    assert np.all(np.isinf(rows.lb)) and np.all(np.isinf(rows.ub))
    assert rows.G.shape[0] > prob.data.G.shape[0]
    # HiGHS's QP as given: its dual form would see only free linear columns (equality rows in
    # the dual), where its multipliers are accurate to ~1e-4 only (the certificate says so)
    prob.check(HighsBackend().solve(rows, SolveOptions(backend_options={"qp_form": "primal"})))


def test_quadratic_weights_fill_the_hessian_as_the_sparse_product(binary_data):
    """The EM Hessian ``2 W' diag(quad[groups]) W`` is filled straight into CSC (no sparse product
    per iteration): equal to the product, zeros not stored (a zero weight everywhere is no QP), and
    the cached pattern survives a solve with zero weights (regression: pruning the zeros in place
    corrupted the pattern of every later iteration)."""
    import scipy.sparse as sp

    X, y = binary_data
    comp = compile_model(Hinge(C=1.0).build(X, y, frozenset({"quad"})).model)
    slot = comp.slot
    n = slot.n_groups
    rng = np.random.default_rng(1)
    for quad in (rng.uniform(0, 3, n), np.where(np.arange(n) % 2 == 0, 0.0, 2.0), np.zeros(n), rng.uniform(0, 3, n)):
        P = comp.with_weights(quad=quad).P
        ref = (slot.W.T @ sp.diags(2.0 * quad[slot.groups]) @ slot.W).tocsc()
        ref.eliminate_zeros()
        if not ref.nnz:
            assert P is None or P.nnz == 0
            continue
        assert P.nnz == ref.nnz and np.array_equal(P.indices, ref.indices) and np.array_equal(P.indptr, ref.indptr)
        np.testing.assert_array_equal(P.data, ref.data)


def test_columns_of_groups_in_any_order(compiled):
    _, comp = compiled
    slot = comp.slot
    for groups in ([1, 3, 4], [4, 1], [2], []):
        expect = np.concatenate([slot.group_cols[j] for j in groups]) if groups else np.zeros(0)
        np.testing.assert_array_equal(slot.columns_of(np.array(groups, dtype=np.int64)), expect)
