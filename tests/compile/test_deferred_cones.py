"""Deferred second-order cones (``add_soc(..., defer=True)``, used by the MPM, MEMPM and bound
models): the cone constraint ``sum z_i^2 - t^2 <= 0`` is left empty and the compiler reads the
record; the expression is made when the model is asked for, and a cone read from Pyomo (a record
no longer intact) is materialised first, never left out.

References: ``scipy.sparse.hstack`` for the definition rows written directly, and the optimum of
the problem compiled from Pyomo (general path) on ECOS for the compiled cones."""

from __future__ import annotations

import numpy as np
import pytest
import pyomo.environ as pyo
import scipy.sparse as sp

from fsframe.backends.ecos import EcosBackend
from fsframe.compiler import compile_model
from fsframe.errors import UnsupportedProblemError
from fsframe.pyomo_ext import LinearMap, _eye_minus, annotations, materialize
from fsframe_mpm import MPMFormulation


@pytest.mark.parametrize("case", ["sparse with empty rows", "dense one row", "no columns", "unsorted indices"])
def test_definition_rows_equal_hstack(case):
    rng = np.random.default_rng(4)
    if case == "sparse with empty rows":
        M = sp.random(9, 7, density=0.3, random_state=1, format="csr")
        M = sp.csr_matrix(M.multiply(np.arange(9)[:, None] % 3 != 0))  # rows 0, 3, 6 empty
    elif case == "dense one row":
        M = rng.standard_normal((1, 5))
    elif case == "no columns":
        M = sp.csr_matrix((4, 0))
    else:
        M = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 1]), np.array([0, 2, 3])), shape=(2, 3))
    got = _eye_minus(M)
    want = sp.hstack([sp.identity(M.shape[0]), -sp.csr_matrix(M)]).tocsr()
    assert got.shape == want.shape and got.nnz == want.nnz
    np.testing.assert_array_equal(got.toarray(), want.toarray())


def _mpm_data(seed=2, m=50, n=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _built():
    X, y = _mpm_data()
    return MPMFormulation(delta=0.3).build(X, y, frozenset({"lin"}))


def _optimum(cm):
    data = cm.with_weights(lin=np.ones(12), sync=False)
    res = EcosBackend().open(data).solve(data)
    assert res.status.value == "optimal"
    return res.objective


def test_mpm_cones_are_read_from_the_record_and_made_on_request():
    built = _built()
    model = built.model
    assert len(model.cone1) == 0 and len(model.cone2) == 0  # deferred: no expression yet
    fast = compile_model(model)
    _, y = _mpm_data()
    sizes = (1 + int(np.sum(y > 0)) + 12, 1 + int(np.sum(y < 0)) + 12)  # (t, F_k'w): 1 + m_k + n entries
    assert len(model.cone1) == 0 and fast.data.cones == sizes
    general = compile_model(model, fast=False)  # materialises, then reads Pyomo
    assert len(model.cone1) == 1 and len(model.cone2) == 1
    z, t = model.cone1_z, model.cone1_t
    want = sum(z[i] ** 2 for i in z) - t ** 2
    assert str(model.cone1.body) == str(want) and pyo.value(model.cone1.upper) == 0
    assert _optimum(general) == pytest.approx(_optimum(fast), rel=1e-7)
    again = compile_model(model)  # materialised and intact: the record again
    assert again.data.cones == fast.data.cones
    np.testing.assert_array_equal(again.data.G.toarray(), fast.data.G.toarray())
    materialize(model)  # idempotent
    assert len(model.cone1) == 1


def test_a_pending_cone_whose_definition_was_edited_is_read_from_pyomo():
    """The definition rows edited by hand: the record is no longer intact, so the cone is read
    from Pyomo, materialised first (an empty component read as it is would drop the cone)."""
    built = _built()
    model = built.model
    ref = compile_model(_built().model)
    annotations(model).linear[id(model.cone1_zdef)].materialize()  # the definitions only
    assert len(model.cone1) == 0 and len(model.cone1_zdef) > 0
    row = model.cone1_zdef[0]
    row.set_value(row.body == pyo.value(row.upper))  # the same row, a new expression
    cm = compile_model(model)
    assert len(model.cone1) == 1  # materialised to be read
    assert len(cm.data.cones) == 2
    assert _optimum(cm) == pytest.approx(_optimum(ref), rel=1e-7)


def test_a_deferred_cone_given_an_expression_by_hand_is_refused():
    model = _built().model
    model.cone1.set_value(sum(model.cone1_z[i] ** 2 for i in model.cone1_z) <= model.cone1_t ** 2)
    with pytest.raises(UnsupportedProblemError, match="materialize"):
        compile_model(model)


def test_the_model_kept_after_a_fit_states_its_cones():
    """``materialize`` (what ``keep_model=True`` and ``CompiledModel.sync_model`` call) gives the
    cones their expressions; the kept model, read entirely from Pyomo, has the fit's optimum."""
    import fsframe

    model = _built().model
    materialize(model)
    assert len(model.cone1) == 1 and len(model.cone2) == 1
    X, y = _mpm_data()
    res = fsframe.fit(X, y, method="l1-mpm", delta=0.3, backend="ecos", keep_model=True)
    kept = res.info["model"]
    assert len(kept.cone1) == 1 and len(kept.cone2) == 1
    general = compile_model(kept, fast=False)
    assert len(general.data.cones) == 2
    assert _optimum(general) == pytest.approx(res.objective, rel=1e-6)


@pytest.mark.parametrize("same_vars", [True, False])
def test_substituted_cone_rows_equal_the_stacked_maps(same_vars):
    """The compiler's cone rows ``(rhs, lhs)`` over one variable list, written directly, equal
    the ``vstack`` of the maps put over it with ``hstack`` (the form they replaced)."""
    from fsframe.compiler.cones import _substituted
    from fsframe.pyomo_records import ConeRecord

    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(4))
    m.s = pyo.Var(range(2))
    xs, ss = list(m.x.values()), list(m.s.values())
    lhs = LinearMap(sp.random(5, 4, density=0.5, random_state=3, format="csr"), xs, np.arange(5.0))
    rhs = LinearMap(np.array([[1.0, 0.0, -2.0, 0.5]]), xs, [0.25]) if same_vars else \
        LinearMap(np.array([[3.0, -1.0]]), ss, [0.25])
    got = _substituted(ConeRecord(None, lhs, rhs, (), None, ()))
    if same_vars:
        want = sp.vstack([rhs.matrix, lhs.matrix], format="csr")
        assert got.vars == tuple(xs)
    else:
        want = sp.vstack([sp.hstack([rhs.matrix, sp.csr_matrix((1, 4))]),
                          sp.hstack([sp.csr_matrix((5, 2)), lhs.matrix])], format="csr")
        assert list(got.vars) == ss + xs
    assert got.matrix.shape == want.shape and got.matrix.nnz == want.nnz
    np.testing.assert_array_equal(got.matrix.toarray(), want.toarray())
    np.testing.assert_array_equal(got.const, np.concatenate([[0.25], np.arange(5.0)]))
