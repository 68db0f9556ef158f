"""The compiler gives the problem the Pyomo model states, on every reading path: chained cones,
a variable repeated in one row, recorded rows edited after recording, and the slot Params, which
``with_weights`` leaves alone until the model is asked for (then they hold the last weights, and the
model written by Pyomo's LP writer has fsframe's optimum). References: CVXPY with Clarabel, HiGHS
reading the LP file, or closed forms."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import pytest
from pyomo.core.expr.numeric_expr import LinearExpression

from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend
from fsframe.compiler import compile_model
from fsframe.plugins import get_registry
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_soc, var_list

BACKENDS = [HighsBackend, EcosBackend, ClarabelBackend]
CONIC = [EcosBackend, ClarabelBackend]
PATHS = [(True, "substitute"), (True, "auxiliary"), (False, "substitute"), (False, "auxiliary")]

_G = np.array([1.0, -2.0, 0.5])


def _chain_reference() -> float:
    x, s, s2, t = cp.Variable(3), cp.Variable(), cp.Variable(), cp.Variable(nonneg=True)
    cons = [cp.norm(x - _G) <= t, t == s + 0.5, cp.norm(cp.hstack([t, x[1]])) <= s2]
    return cp.Problem(cp.Minimize(s2 + s + 0.1 * x[0]), cons).solve(solver="CLARABEL")


def _chain(plain_second: bool):
    """``||x - g|| <= a_t``, ``a_t = s + 1/2`` (an auxiliary of add_soc), then a second cone
    ``||(a_t, x1)|| <= s2`` in which ``a_t`` is the only use of the auxiliary."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3))
    m.s = pyo.Var()
    m.s2 = pyo.Var(bounds=(0, None))
    add_soc(m, "a", LinearMap(np.eye(3), var_list(m.x), -_G), LinearMap(np.array([[1.0]]), [m.s], [0.5]))
    if plain_second:  # the same cone in plain Pyomo (read by the general path)
        m.b = pyo.Constraint(expr=m.a_t**2 + m.x[1] ** 2 <= m.s2**2)
    else:
        add_soc(m, "b", [m.a_t, m.x[1]], m.s2)
    m.obj = pyo.Objective(expr=m.s2 + m.s + 0.1 * m.x[0])
    return m


@pytest.mark.parametrize("plain_second", [False, True], ids=["add_soc", "plain-pyomo"])
@pytest.mark.parametrize("fast,cone_form", PATHS)
@pytest.mark.parametrize("backend", CONIC)
def test_auxiliary_used_only_by_a_later_cone_is_kept(backend, fast, cone_form, plain_second):
    compiled = compile_model(_chain(plain_second), fast=fast, cone_form=cone_form)
    res = backend().solve(compiled.data)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(_chain_reference(), abs=1e-6)


# ------------------------------------------------------------------ a variable repeated in a row
def _dup_model(via_map: bool):
    """``min x0 + x1/2  s.t.  3 x0 + x1 >= 6,  2 x0 + x1 <= 8,  0 <= x <= 10``, with ``x0``
    listed twice in each row: optimum 2 at ``x = (2, 0)``."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2), bounds=(0, 10))
    if via_map:
        add_linear_constraints(m, "r", LinearMap(np.array([[1.0, 1.0, 2.0]]), [m.x[0], m.x[1], m.x[0]]), lower=6.0)
    else:
        m.r = pyo.Constraint(expr=LinearExpression(constant=0.0, linear_coefs=[1.0, 1.0, 2.0],
                                                   linear_vars=[m.x[0], m.x[1], m.x[0]]) >= 6)
    m.c2 = pyo.Constraint(expr=m.x[0] + m.x[1] + m.x[0] <= 8)
    m.obj = pyo.Objective(expr=m.x[0] + 0.5 * m.x[1])
    return m


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("via_map", [False, True], ids=["pyomo-row", "linear-map"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_repeated_variable_in_a_row_is_summed(backend, via_map, fast):
    data = compile_model(_dup_model(via_map), fast=fast).data
    for M in (data.A, data.G):
        assert M.has_canonical_format  # no duplicate entries left for a solver to misread
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(2.0, abs=1e-7)
    np.testing.assert_allclose(res.x, [2.0, 0.0], atol=1e-6)


@pytest.mark.parametrize("backend", [HighsBackend, EcosBackend])
def test_duplicate_entries_in_hand_made_data_are_summed(backend):
    """A ``ProblemData`` made by hand with duplicate (row, column) entries: the backends sum them."""
    import scipy.sparse as sp

    from fsframe.backends import ProblemData

    G = sp.csr_matrix((np.array([-1.0, -1.0, -2.0, 1.0, 1.0, 1.0]), np.array([0, 1, 0, 0, 1, 0]),
                       np.array([0, 3, 6])), shape=(2, 2))
    assert not G.has_canonical_format
    data = ProblemData(c=np.array([1.0, 0.5]), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=G, h=np.array([-6.0, 8.0]),
                       lb=np.zeros(2), ub=np.full(2, 10.0), l=2)
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL and res.objective == pytest.approx(2.0, abs=1e-7)


def test_ecos_runtime_error_becomes_error_status(monkeypatch):
    import ecos

    def boom(*a, **k):
        raise RuntimeError("Internal problem occurred in ECOS while setting up the problem.")

    monkeypatch.setattr(ecos, "solve", boom)
    res = EcosBackend().solve(compile_model(_dup_model(False)).data)
    assert res.status is Status.ERROR and res.x is None and "Internal problem" in res.message


# ------------------------------------------------------------------ recorded rows edited in Pyomo
def test_recorded_row_edited_in_place_is_read_from_pyomo():
    """``con[0].set_value`` after add_linear_constraints: the record is stale; min x0 + 2 x1 with
    x0 + x1 >= 4, x0 - x1 >= -5, x >= 0 has optimum 4 at (4, 0)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2), bounds=(0, None))
    con = add_linear_constraints(m, "rows", LinearMap(np.array([[1.0, 1.0], [1.0, -1.0]]), var_list(m.x)),
                                 lower=[1.0, -5.0])
    m.obj = pyo.Objective(expr=m.x[0] + 2 * m.x[1])
    intact = compile_model(m)
    assert intact.paths["recorded"] == 2
    con[0].set_value(m.x[0] + m.x[1] >= 4)
    for fast in (True, False):
        compiled = compile_model(m, fast=fast)
        assert compiled.paths["recorded"] == 0
        res = HighsBackend().solve(compiled.data)
        assert res.status is Status.OPTIMAL and res.objective == pytest.approx(4.0)


def test_cone_definition_edited_in_place_is_read_from_pyomo():
    """``||x|| <= a_t`` with ``a_t = s + 1`` edited to ``a_t = s + 3``: min s with ``x`` free
    gives ``s = -3`` (fast path must not use the recorded ``a_t = s + 1``)."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(2))
    m.s = pyo.Var()
    add_soc(m, "a", [m.x[0], m.x[1]], LinearMap(np.array([[1.0]]), [m.s], [1.0]))
    m.obj = pyo.Objective(expr=m.s)
    m.a_tdef[0].set_value(m.a_t - m.s == 3)
    for fast, form in PATHS:
        res = ClarabelBackend().solve(compile_model(m, fast=fast, cone_form=form).data)
        assert res.status is Status.OPTIMAL and res.objective == pytest.approx(-3.0, abs=1e-6)


# ------------------------------------------------------------------ slot Params after with_weights
def test_sync_zeroes_the_params_of_omitted_terms():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 4))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    built = get_registry().get("formulation", "hinge")(C=1.0).build(X, y, frozenset({"lin", "lin_w"}))
    cm = compile_model(built.model)
    cm.with_weights(lin=np.ones(4), lin_w=np.full(4, 0.5))
    assert cm.sync_model() is built.model
    assert [pyo.value(built.model.fsframe_slot.lin_w[k]) for k in range(4)] == [0.5] * 4
    data = cm.with_weights(lin=np.ones(4))  # lin_w omitted: no lin_w term in the solved problem
    res = HighsBackend().solve(data)
    cm.load_solution(res.x)  # brings the model up to date first
    assert pyo.value(built.model.fsframe_objective) == pytest.approx(res.objective, rel=1e-9)
    assert [pyo.value(built.model.fsframe_slot.lin_w[k]) for k in range(4)] == [0.0] * 4
    assert [pyo.value(built.model.fsframe_slot.lin[k]) for k in range(4)] == [1.0] * 4


class _Writes:
    """Counts the Pyomo writes the slot sync can make: Param.store_values and VarData.fix/unfix."""

    def __init__(self, monkeypatch, param, var_type):
        self.n = 0
        for cls, name in ((type(param), "store_values"), (var_type, "fix"), (var_type, "unfix")):
            monkeypatch.setattr(cls, name, self._counted(getattr(cls, name)))

    def _counted(self, method):
        def wrapper(*args, **kwargs):
            self.n += 1
            return method(*args, **kwargs)
        return wrapper


def _logistic_like_data(seed=3, m=40, n=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.filterwarnings("ignore::fsframe.errors.ConvergenceWarning")
@pytest.mark.parametrize("loop,surrogate,term", [("reweighted-l1", "lp", "lin"), ("em", "l0", "quad")])
def test_the_model_is_written_once_when_asked_for_not_per_iteration(monkeypatch, loop, surrogate, term):
    """A multi-iteration loop makes no Pyomo write; asking for the model afterwards writes the last
    iteration's weights (infinite ones as fixed columns and a zero Param), once."""
    from fsframe.problem import Subproblem

    reg = get_registry()
    X, y = _logistic_like_data()
    sub = Subproblem(reg.get("formulation", "hinge")(C=1.0), X, y, frozenset({term}), HighsBackend())
    cm = sub.compiled
    writes = _Writes(monkeypatch, sub.built.slot.block.component(term), type(cm.columns[0]))
    calls = []
    with_weights = cm.with_weights
    monkeypatch.setattr(cm, "with_weights", lambda **kw: calls.append(kw) or with_weights(**kw))
    surr = reg.get("surrogate", surrogate)(**({"p": 0.5} if surrogate == "lp" else {}))
    out = reg.get("loop", loop)(max_iter=6).run(sub, surr)
    sub.close()
    assert len(calls) >= 3 and out.n_iter >= 3
    assert writes.n == 0  # no per-iteration write into the Pyomo model
    last = np.asarray(calls[-1][term], dtype=float)
    assert np.isinf(last).any() and np.isfinite(last).any()  # the last weights fix some groups
    model = cm.model
    assert writes.n > 0
    params = np.array([pyo.value(model.fsframe_slot.component(term)[j]) for j in range(last.size)])
    np.testing.assert_array_equal(params, np.where(np.isinf(last), 0.0, last))
    fixed_groups = sorted({int(c.name[2:-1]) for c in cm.columns if c.fixed})
    assert fixed_groups == np.flatnonzero(np.isinf(last)).tolist()
    n_writes = writes.n
    assert cm.sync_model() is model and writes.n == n_writes  # up to date: nothing written again
    # the model, solved by Pyomo's own evaluation at the loop's last solution, has its objective
    cm.load_solution(out.iterate.x)
    assert pyo.value(model.fsframe_objective) == pytest.approx(out.iterate.objective, rel=1e-9, abs=1e-9)


def test_the_synced_model_written_by_pyomos_lp_writer_has_the_same_optimum(tmp_path):
    """The model, once requested, is a plain Pyomo model of the problem fsframe solved: written
    by Pyomo's LP writer and read back by HiGHS, it has the same optimum (weights of the last call,
    one group fixed by an infinite weight)."""
    import highspy
    X, y = _logistic_like_data(seed=5, m=30, n=6)
    built = get_registry().get("formulation", "hinge")(C=1.0).build(X, y, frozenset({"lin"}))
    cm = compile_model(built.model)
    cm.with_weights(lin=np.full(6, 3.0))
    lin = np.linspace(0.1, 0.6, 6)
    lin[2] = np.inf
    data = cm.with_weights(lin=lin)
    res = HighsBackend().solve(data)
    assert res.status is Status.OPTIMAL
    path = tmp_path / "model.lp"
    cm.model.write(str(path), io_options={"symbolic_solver_labels": True})
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(res.objective, rel=1e-7, abs=1e-9)
    # without the request the file would state the first call's weights: check they differ
    assert HighsBackend().solve(cm.with_weights(lin=np.full(6, 3.0), sync=False)).objective != pytest.approx(res.objective)
