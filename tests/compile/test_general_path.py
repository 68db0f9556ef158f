"""A formulation written in plain Pyomo (rule-based constraints, no fsframe bulk helpers) compiles
through the general path and gives the same answers as the built-in fast path."""

from __future__ import annotations

import attrs
import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp

import fsframe
import fsframe.plugins
from fsframe import BuiltModel, Formulation, ProblemClass, hookimpl
from fsframe.compiler import compile_model
from fsframe.pyomo_ext import LinearMap, add_sparsity_slot, var_list


@attrs.frozen
class PlainHinge(Formulation):
    """The hinge SVM of ``fsframe_svm``, stated the way a Pyomo user would write it."""

    name = "plain-hinge"
    C: float = 1.0

    def problem_class(self, terms):
        return ProblemClass.QP if "quad" in terms else ProblemClass.LP

    def build(self, X, y, terms):
        m, n = X.shape
        M = pyo.ConcreteModel()
        M.F = pyo.RangeSet(0, n - 1)
        M.S = pyo.RangeSet(0, m - 1)
        M.u = pyo.Var(M.F, within=pyo.NonNegativeReals)
        M.v = pyo.Var(M.F, within=pyo.NonNegativeReals)
        M.b = pyo.Var()
        M.xi = pyo.Var(M.S, within=pyo.NonNegativeReals)

        def margin(M, i):
            return float(y[i]) * (sum(float(X[i, j]) * (M.u[j] - M.v[j]) for j in M.F) + M.b) + M.xi[i] >= 1

        M.margin = pyo.Constraint(M.S, rule=margin)
        uv = var_list(M.u, M.v)
        slot = add_sparsity_slot(
            M, coef=LinearMap(sp.hstack([sp.identity(n), -sp.identity(n)]), uv),
            magnitude=LinearMap(sp.hstack([sp.identity(n), sp.identity(n)]), uv),
            terms=terms, loss=self.C * pyo.quicksum(M.xi[i] for i in M.S))
        return BuiltModel(model=M, slot=slot, intercept=LinearMap(np.ones((1, 1)), [M.b]), coef_shape=(n,))


class _Plugin:
    @hookimpl
    def fsframe_register_formulations(self):
        return [PlainHinge]


@pytest.fixture
def plain_hinge():
    name = fsframe.plugins.register(_Plugin(), name="plain-hinge-test")
    yield
    fsframe.plugins.unregister(name)


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((40, 12))
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.standard_normal(40) > 0, 1, -1)
    return X, y


def test_plain_pyomo_model_uses_general_path(data):
    X, y = data
    built = PlainHinge().build(X, y.astype(float), frozenset({"lin"}))
    compiled = compile_model(built.model)
    assert compiled.paths["recorded"] == 0
    assert compiled.paths["direct"] + compiled.paths["general"] == X.shape[0]


@pytest.mark.parametrize("surrogate,loop", [("l1", "single"), ("exp", "reweighted-l1"), ("log", "dca")])
def test_plain_formulation_matches_builtin(plain_hinge, data, surrogate, loop):
    X, y = data
    a = fsframe.fit(X, y, formulation="plain-hinge", surrogate=surrogate, loop=loop)
    b = fsframe.fit(X, y, formulation="hinge", surrogate=surrogate, loop=loop)
    assert a.objective == pytest.approx(b.objective, rel=1e-7, abs=1e-8)
    np.testing.assert_array_equal(a.support, b.support)
    np.testing.assert_allclose(a.coef, b.coef, atol=1e-6)
    assert a.n_iter == b.n_iter


@pytest.mark.parametrize("terms", [{"lin"}, {"lin", "lin_w"}, {"quad"}])
def test_general_and_fast_compile_agree_on_builtin(data, terms):
    """The recorded matrices of the built-in hinge equal what reading the Pyomo model gives:
    same columns (by variable identity), same constraint set, same optimum for random weights."""
    from fsframe.backends.highs import HighsBackend
    from fsframe_svm import HingeFormulation

    X, y = data
    built = HingeFormulation(C=0.7).build(X, y.astype(float), frozenset(terms))
    fast = compile_model(built.model, fast=True)
    slow = compile_model(built.model, fast=False)
    assert fast.paths["recorded"] == X.shape[0] and slow.paths["recorded"] == 0
    perm = np.array([slow.col_index[id(v)] for v in fast.columns])  # fast column j -> slow column
    rng = np.random.default_rng(1)
    kw = {}
    if "lin" in terms:
        kw["lin"] = rng.uniform(0.1, 2.0, X.shape[1])
    if "lin_w" in terms:
        kw["lin_w"] = rng.normal(0, 0.3, X.shape[1])
    if "quad" in terms:
        kw["quad"] = rng.uniform(0.5, 2.0, X.shape[1])
    df, ds = fast.with_weights(**kw), slow.with_weights(**kw)
    np.testing.assert_allclose(df.c, ds.c[perm])
    np.testing.assert_allclose(df.lb, ds.lb[perm])
    np.testing.assert_allclose(df.ub, ds.ub[perm])
    # the same rows up to order: compare sorted dense rows of [G | h]
    def rows(d, order):
        M = sp.hstack([d.G[:, order], sp.csr_matrix(d.h[:, None])]).toarray()
        return M[np.lexsort(M.T[::-1])]
    np.testing.assert_allclose(rows(df, np.arange(df.n)), rows(ds, perm), atol=1e-12)
    rf, rs = HighsBackend().solve(df), HighsBackend().solve(ds)
    assert rf.status.ok and rs.status.ok
    assert rf.objective == pytest.approx(rs.objective, rel=1e-8, abs=1e-9)
