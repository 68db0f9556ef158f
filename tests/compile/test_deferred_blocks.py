"""Deferred constraint blocks (``add_linear_constraints(..., defer=True)``): the Pyomo rows are
created only when the model is asked for, the compiler reads the record meanwhile, and the model
obtained afterwards states the problem that was solved.

References: the general path (``compile_model(fast=False)``, which reads every row from Pyomo),
and CVXPY with Clarabel for the L1-SVM optimum."""

from __future__ import annotations

import numpy as np
import pytest
import pyomo.environ as pyo
import scipy.sparse as sp

import fsframe
from fsframe.compiler import compile_model
from fsframe.errors import UnsupportedProblemError
from fsframe.pyomo_ext import (LinearMap, add_linear_constraints, add_named_expressions, add_sparsity_slot,
                               annotations, materialize, var_list)
from fsframe_svm import HingeFormulation, _margin_matrix


def _data(m=12, n=30, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _same(cm1, cm2, d1=None, d2=None):
    """The same problem, entry for entry (bit-identical values), once ``cm2``'s columns are put in
    ``cm1``'s order (the general path numbers columns in order of appearance in Pyomo's rows)."""
    d1 = cm1.data if d1 is None else d1
    d2 = cm2.data if d2 is None else d2
    assert len(cm1.columns) == len(cm2.columns)
    perm = np.array([cm2.col_index[id(v)] for v in cm1.columns])
    for name in ("c", "lb", "ub"):
        np.testing.assert_array_equal(getattr(d1, name), getattr(d2, name)[perm], err_msg=name)
    for name in ("b", "h"):
        np.testing.assert_array_equal(getattr(d1, name), getattr(d2, name), err_msg=name)
    for name in ("A", "G", "P"):
        M1, M2 = getattr(d1, name), getattr(d2, name)
        if M1 is None or M2 is None:
            assert M1 is None and M2 is None, name
            continue
        M1, M2 = M1.tocsr(), M2.tocsc()[:, perm].tocsr()
        if name == "P":
            M2 = M2.tocsc()[perm, :].tocsr()
        for M in (M1, M2):
            M.sum_duplicates()
        assert M1.shape == M2.shape, name
        np.testing.assert_array_equal(M1.indptr, M2.indptr, err_msg=name)
        np.testing.assert_array_equal(M1.indices, M2.indices, err_msg=name)
        np.testing.assert_array_equal(M1.data, M2.data, err_msg=name)
    assert (d1.l, d1.cones, d1.offset) == (d2.l, d2.cones, d2.offset)


@pytest.mark.parametrize("terms", [{"lin"}, {"lin_w", "lin"}, {"quad"}])
def test_hinge_margin_rows_are_read_from_the_record_and_created_on_request(terms):
    X, y = _data()
    built = HingeFormulation(C=0.7).build(X, y, frozenset(terms))
    margin = built.model.margin
    assert len(margin) == 0  # deferred: no Pyomo rows yet
    fast = compile_model(built.model)
    assert len(margin) == 0 and fast.paths["recorded"] == X.shape[0]
    general = compile_model(built.model, fast=False)  # materialises, then reads Pyomo
    assert len(margin) == X.shape[0] and general.paths["recorded"] == 0
    _same(fast, general)
    again = compile_model(built.model)  # materialised and intact: the record again
    assert again.paths["recorded"] == X.shape[0]
    _same(fast, again)


def test_margin_matrix_equals_the_stacked_blocks_with_zeros_in_X():
    X, y = _data(9, 7)
    X[X < -0.5] = 0.0
    want = sp.hstack([sp.csr_matrix(y[:, None] * X), sp.csr_matrix(y[:, None]), sp.identity(9)], format="csr")
    got = _margin_matrix(X, y)
    assert got.shape == want.shape and got.nnz == want.nnz
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)


def _cvxpy_l1svm(X, y, C):
    import cvxpy as cp
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + C * cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b)))))
    prob.solve(solver="CLARABEL")
    return prob.value


def test_model_kept_after_a_fit_states_the_problem_solved():
    X, y = _data(20, 40, seed=5)
    res = fsframe.fit(X, y, method="l1-svm", C=0.5, keep_model=True)
    model, compiled = res.info["model"], res.info["compiled"]
    assert len(model.margin) == X.shape[0]  # materialised when the model was asked for
    ref = _cvxpy_l1svm(X, y, 0.5)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    # the Pyomo model, read entirely from Pyomo, is the problem solved (the weights are its Params)
    again = compile_model(model, fast=False)
    _same(compiled, again, compiled.base, again.base)
    lin = np.array([pyo.value(model.fsframe_slot.lin[j]) for j in range(X.shape[1])])
    _same(compiled, again, compiled.data, again.with_weights(lin=lin, sync=False))
    # at the fit's (w, b) with the optimal slacks, Pyomo evaluates the objective as the optimum
    # and every margin row holds
    w, b = res.coef, float(res.intercept)
    for j in range(X.shape[1]):
        model.u[j].set_value(max(w[j], 0.0))
        model.v[j].set_value(max(-w[j], 0.0))
    model.b.set_value(b)
    for i, xi in enumerate(np.maximum(0.0, 1.0 - y * (X @ w + b))):
        model.xi[i].set_value(float(xi))
    assert pyo.value(model.fsframe_objective) == pytest.approx(ref, rel=1e-6)
    assert all(pyo.value(c.body) >= 1.0 - 1e-7 for c in model.margin.values())


def _toy(defer):
    """Rows ``x0 + 2 w0 >= 1`` (eager), ``3 w1 - x1 == 0.5`` (deferred or not), ``x0 + x1 <= 4``
    (eager) with ``w = u - v`` named: the deferred block sits between the other two."""
    m = pyo.ConcreteModel()
    m.u = pyo.Var(range(2), bounds=(0, None))
    m.v = pyo.Var(range(2), bounds=(0, None))
    m.x = pyo.Var(range(2), bounds=(-5, 5))
    uv = var_list(m.u, m.v)
    w = add_named_expressions(m, "w", LinearMap(sp.hstack([sp.eye(2), -sp.eye(2)]).tocsr(), uv))
    xs = var_list(m.x)
    add_linear_constraints(m, "first", LinearMap(np.array([[1.0, 2.0]]), [xs[0], w[0]]), lower=1.0)
    add_linear_constraints(m, "mid", LinearMap(np.array([[3.0, -1.0], [1.0, 1.0]]), [w[1], xs[1]]),
                           lower=[0.5, -np.inf], upper=[0.5, 2.0], defer=defer)
    add_linear_constraints(m, "last", LinearMap(np.array([[1.0, 1.0]]), xs), upper=4.0)
    add_sparsity_slot(m, coef=LinearMap(sp.hstack([sp.eye(2), -sp.eye(2)]).tocsr(), uv),
                      magnitude=LinearMap(sp.hstack([sp.eye(2), sp.eye(2)]).tocsr(), uv), terms={"lin"},
                      loss=0.1 * (m.x[0] - m.x[1]))
    return m


def test_a_deferred_block_keeps_its_place_among_the_rows():
    eager_model = _toy(False)
    eager = compile_model(eager_model)
    model = _toy(True)
    deferred = compile_model(model)
    # same columns in the same order, so the same matrices
    assert [v.name for v in eager.columns] == [v.name for v in deferred.columns]
    eager.col_index = {id(v): j for j, v in enumerate(deferred.columns)}
    _same(deferred, eager)
    assert len(model.mid) == 0
    materialize(model)
    materialize(model)  # idempotent
    assert len(model.mid) == 2
    _same(deferred, compile_model(model, fast=False))


def test_rows_added_by_hand_to_a_deferred_component_are_refused():
    model = _toy(True)
    model.mid[0] = model.x[0] >= -1.0
    with pytest.raises(UnsupportedProblemError, match="materialize"):
        compile_model(model)


def test_a_named_expression_redefined_before_materialising_is_read_from_pyomo():
    model = _toy(True)
    model.w[1] = 2 * model.u[1] - model.v[1]  # the deferred rows are over w: 6 u1 - 3 v1 - x1 == 0.5
    fast = compile_model(model)
    assert len(model.mid) == 2  # materialised to be read from Pyomo
    G = fast.data.A.toarray()
    row = G[0]
    assert row[fast.col_index[id(model.u[1])]] == 6.0 and row[fast.col_index[id(model.v[1])]] == -3.0
    _same(fast, compile_model(model, fast=False))


def test_a_deactivated_deferred_component_is_left_out_like_any_other():
    model = _toy(True)
    model.mid.deactivate()
    cm = compile_model(model)
    assert cm.data.A.shape[0] == 0 and cm.data.G.shape[0] == 2
    _same(cm, compile_model(model, fast=False))
    assert len(model.mid) == 2 and not model.mid.active


def test_compiling_never_changes_a_record():
    """The compiler negates its own copy of lower-bounded rows in place, never the record's."""
    model = _toy(False)
    blocks = list(annotations(model).linear.values())
    before = [(b.atoms.matrix.data.copy(), b.atoms.const.copy()) for b in blocks]
    _same(compile_model(model), compile_model(model))
    for b, (data, const) in zip(blocks, before):
        np.testing.assert_array_equal(b.atoms.matrix.data, data)
        np.testing.assert_array_equal(b.atoms.const, const)


def _toy_named(defer_named, defer_rows):
    m = pyo.ConcreteModel()
    m.u = pyo.Var(range(2), bounds=(0, None))
    m.v = pyo.Var(range(2), bounds=(0, None))
    uv = var_list(m.u, m.v)
    split = sp.hstack([sp.eye(2), -sp.eye(2)]).tocsr()
    w = add_named_expressions(m, "w", LinearMap(split, uv), defer=defer_named)
    add_linear_constraints(m, "c", LinearMap(np.array([[1.0, 2.0]]), w), lower=1.0, defer=defer_rows)
    add_sparsity_slot(m, coef=LinearMap(split, uv), magnitude=LinearMap(sp.hstack([sp.eye(2), sp.eye(2)]).tocsr(), uv),
                      terms={"lin"})
    return m


def test_deferred_named_expressions_are_defined_before_any_row_uses_them():
    eager = _toy_named(True, False)  # an eager block over deferred names defines them first
    assert eager.w[0].expr is not None and len(eager.c) == 1
    lazy = _toy_named(True, True)
    assert lazy.w[0].expr is None and len(lazy.c) == 0
    cm = compile_model(lazy)
    assert cm.paths["recorded"] == 1 and lazy.w[0].expr is None
    materialize(lazy)
    assert lazy.w[0].expr is not None and len(lazy.c) == 1
    _same(cm, compile_model(lazy, fast=False))
    x = np.zeros(len(cm.columns))
    x[cm.col_index[id(lazy.u[1])]] = 0.5  # w = (0, 1/2): the row holds with equality
    cm.load_solution(x)
    assert pyo.value(lazy.c[0].body) == pytest.approx(1.0) and pyo.value(lazy.w[1]) == pytest.approx(0.5)


def test_a_deferred_named_expression_defined_by_hand_is_refused():
    m = _toy_named(True, True)
    m.w[0] = 3 * m.u[0]
    with pytest.raises(UnsupportedProblemError, match="materialize"):
        compile_model(m)


@pytest.mark.parametrize("case", ["same order", "orders differ", "ragged"])
def test_rows_sorted_by_one_permutation_equal_a_row_by_row_sort(case):
    from fsframe.compiler.assembly import _sort_rows

    rng = np.random.default_rng(7)
    m, k = 9, 6
    base = np.array([10, 3, 7, 0, 5, 1])
    idx = np.tile(base, (m, 1))
    idx[:, 0] = 10 + np.arange(m)  # the largest column of each row differs, its rank does not
    if case == "orders differ":
        idx[4] = [2, 3, 7, 0, 5, 1]  # row 4's largest entry is elsewhere
    data = rng.standard_normal((m, k))
    if case == "ragged":
        R = sp.csr_matrix((data.ravel()[:-1], idx.ravel()[:-1], np.r_[np.arange(0, m * k, k), m * k - 1]),
                          shape=(m, 20))
    else:
        R = sp.csr_matrix((data.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, 20))
    want = R.copy()
    want.sort_indices()
    _sort_rows(R)
    assert R.has_sorted_indices
    np.testing.assert_array_equal(R.indices, want.indices)
    np.testing.assert_array_equal(R.data, want.data)
    np.testing.assert_array_equal(R.toarray(), want.toarray())
