"""Exponential cones through the whole path: the cone's geometry (:mod:`fsframe.exp_cone`) against
CVXPY's projection, Pyomo records and recognised constraints compiled into ``ProblemData.exp``,
ECOS (which orders a triple ``(r, t, s)``) and Clarabel against CVXPY on small exp-cone problems,
HiGHS refusing them, ``backend="auto"`` skipping it, and the certificate judging exp-cone answers."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pyomo.environ as pyo
import pytest
import scipy.sparse as sp

from fsframe import ProblemClass, Status, exp_cone
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend, ProblemData
from fsframe.backends.certificate import certify
from fsframe.backends.ecos import _exp_order
from fsframe.compiler import compile_model
from fsframe.errors import IncompatibleComponentsError, UnsupportedProblemError
from fsframe.plugins import select_backend
from fsframe.pyomo_ext import LinearMap, add_exp_cones, add_log_sum_exp, add_linear_constraints, var_list

CONIC = [EcosBackend, ClarabelBackend]


def _points(k=40, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.normal(scale=2.0, size=(k, 3))
    V[:5, 1] = 0.0  # on the plane s = 0, where the face lies
    V[5:8] = [[-1.0, 0.0, 2.0], [0.5, 1.0, np.e ** 0.5], [3.0, 0.5, 0.1]]
    return V


# ---------------------------------------------------------------------------- the cone's geometry
def test_projection_equals_cvxpy():
    for v in _points():
        x = cp.Variable(3)
        # CVXPY's ExpCone(x, y, z): y exp(x / y) <= z, fsframe's order
        cp.Problem(cp.Minimize(cp.sum_squares(x - v)), [cp.constraints.ExpCone(x[0], x[1], x[2])]).solve(
            solver=cp.CLARABEL)
        ours = exp_cone.project(v)
        # ours is in the cone and no farther than CVXPY's (an interior-point answer, 1e-4 off near the face;
        # the exactness of ours is the Moreau test below)
        assert exp_cone.in_cone(ours, tol=1e-9).all()
        assert np.linalg.norm(ours - v) <= np.linalg.norm(x.value - v) + 1e-7, v
        assert np.allclose(ours, x.value, atol=1e-3), (v, ours, x.value)
        assert exp_cone.distance(v)[0] == pytest.approx(np.linalg.norm(ours - v), abs=1e-12)


def test_moreau_decomposition_and_membership():
    V = _points(seed=1).ravel()
    p, q = exp_cone.project(V), exp_cone.project_dual(-V)
    # v = P_K(v) - P_K*(-v), the two parts orthogonal, each in its cone
    assert np.allclose(p - q, V, atol=1e-9)
    assert np.allclose(np.einsum("ij,ij->i", p.reshape(-1, 3), q.reshape(-1, 3)), 0.0, atol=1e-7)
    assert exp_cone.in_cone(p, tol=1e-9).all()
    assert exp_cone.in_dual_cone(q, tol=1e-9).all()
    # the dual cone: (u, v, w) with u < 0, -u exp(v/u) <= e w; (-1, 0, 1/e) on its boundary
    assert exp_cone.in_dual_cone([-1.0, 0.0, np.exp(-1.0)], tol=1e-15).all()
    assert not exp_cone.in_dual_cone([-1.0, 0.0, 0.99 * np.exp(-1.0)]).any()
    assert not exp_cone.in_dual_cone([1.0, 1.0, 1.0]).any()
    assert exp_cone.in_cone([-3.0, 0.0, 0.0]).all() and not exp_cone.in_cone([1.0, 0.0, 5.0]).any()
    with pytest.raises(ValueError, match="triples"):
        exp_cone.project([1.0, 2.0])


# ---------------------------------------------------------------------------- problems vs CVXPY
def _logistic(m=30, n=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    w0 = np.zeros(n)
    w0[:2] = [2.0, -1.5]
    y = np.where(X @ w0 + 0.5 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X, y


def _pyomo_l1_logistic(X, y, lam, *, quad=0.0, defer=False):
    """``min sum_i log(1 + exp(-y_i (x_i w + b))) + lam ||w||_1 (+ quad/2 ||w||^2)`` built from
    :func:`add_log_sum_exp` (the margin a map over ``w``, ``b``) and ``|w_j| <= s_j``."""
    m, n = X.shape
    model = pyo.ConcreteModel()
    model.w = pyo.Var(range(n))
    model.b = pyo.Var()
    model.s = pyo.Var(range(n), bounds=(0, None))
    w, s = var_list(model.w), var_list(model.s)
    margin = LinearMap(sp.csr_matrix(np.column_stack([-y[:, None] * X, -y])), w + [model.b])
    t = add_log_sum_exp(model, "loss", [None, margin], defer=defer)
    eye = sp.identity(n)
    add_linear_constraints(model, "abs", LinearMap(sp.bmat([[eye, -eye], [-eye, -eye]]).tocsr(), w + s), upper=0.0)
    obj = sum(t) + lam * sum(s)
    if quad:
        obj = obj + 0.5 * quad * sum(v * v for v in w)
    model.obj = pyo.Objective(expr=obj)
    return model


def _cvxpy_l1_logistic(X, y, lam, quad=0.0):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    obj = cp.sum(cp.logistic(-cp.multiply(y, X @ w + b))) + lam * cp.norm1(w) + 0.5 * quad * cp.sum_squares(w)
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, w.value


@pytest.mark.parametrize("backend", CONIC)
@pytest.mark.parametrize("quad", [0.0, 0.7])
def test_l1_logistic_through_the_compiler_equals_cvxpy(backend, quad):
    X, y = _logistic()
    compiled = compile_model(_pyomo_l1_logistic(X, y, 0.8, quad=quad))
    data = compiled.data
    assert data.exp == 2 * X.shape[0] and data.problem_class is ProblemClass.EXP
    assert compiled.paths["exp_cones"] == 2 * X.shape[0]
    res = backend().solve(data)
    if res.status is not Status.OPTIMAL:
        # ECOS with the epigraph cones of a quadratic objective stops at its own reduced
        # tolerances here (exit flag 10, "close to optimal"): fsframe says so, it does not
        # upgrade the answer (backend="auto" sends quadratic objectives to Clarabel)
        assert backend is EcosBackend and quad and res.raw["exit_flag"] == 10, res.message
        assert res.status is Status.OPTIMAL_INACCURATE
    ref, w_ref = _cvxpy_l1_logistic(X, y, 0.8, quad)
    assert res.objective == pytest.approx(ref, rel=1e-6)
    w = res.x[compiled.cols(var_list(compiled.model.w))]
    assert np.allclose(w, w_ref, atol=1e-4)
    # the certificate is fsframe's own: recomputed here from the point and multipliers returned
    cert = certify(data, res.x, res.duals["y"], res.duals["z"])
    assert cert.ok(1e-6 if res.status is Status.OPTIMAL else 1e-5), cert
    z = res.duals["z"][data.exp_start:]
    assert exp_cone.in_dual_cone(z, tol=1e-7).all()


def test_deferred_record_compiles_to_the_same_problem():
    X, y = _logistic(m=12, n=4, seed=2)
    a = compile_model(_pyomo_l1_logistic(X, y, 0.5)).data
    model = _pyomo_l1_logistic(X, y, 0.5, defer=True)
    assert len(model.loss_cone1) == 0  # nothing built in Pyomo yet
    b = compile_model(model).data
    assert b.exp == a.exp and np.allclose(b.G.toarray(), a.G.toarray()) and np.allclose(b.h, a.h)
    # the general path recognises the materialised constraints as the same cones
    g = compile_model(model, fast=False)
    assert len(model.loss_cone1) == X.shape[0]
    assert g.data.exp == a.exp
    r1, r2 = ClarabelBackend().solve(a), ClarabelBackend().solve(g.data)
    assert r1.objective == pytest.approx(r2.objective, rel=1e-7)


def test_recognised_constraint_forms_equal_cvxpy():
    """Plain Pyomo constraints ``exp(a) <= t``, ``c exp(a) <= t`` and the perspective
    ``s exp(r / s) <= t`` are recognised; a relative-entropy-like problem against CVXPY."""
    model = pyo.ConcreteModel()
    model.x = pyo.Var(range(3))
    model.t = pyo.Var(range(3))
    model.s = pyo.Var(bounds=(0.5, 2.0))
    model.c0 = pyo.Constraint(expr=pyo.exp(model.x[0] - 1.0) <= model.t[0])
    model.c1 = pyo.Constraint(expr=3.0 * pyo.exp(model.x[1]) <= model.t[1] + 1.0)
    model.c2 = pyo.Constraint(expr=model.s * pyo.exp((model.x[2] + 0.5) / model.s) <= model.t[2])
    model.obj = pyo.Objective(expr=sum(model.t[i] for i in range(3)) - 2.0 * model.x[0] - model.x[1]
                              - 1.5 * model.x[2] - 0.3 * model.s)
    data = compile_model(model).data
    assert data.exp == 3
    x, t, s = cp.Variable(3), cp.Variable(3), cp.Variable()
    cons = [cp.exp(x[0] - 1) <= t[0], 3 * cp.exp(x[1]) <= t[1] + 1,
            cp.constraints.ExpCone(x[2] + 0.5, s, t[2]), s >= 0.5, s <= 2.0]
    prob = cp.Problem(cp.Minimize(cp.sum(t) - 2 * x[0] - x[1] - 1.5 * x[2] - 0.3 * s), cons)
    prob.solve(solver=cp.CLARABEL)
    for backend in CONIC:
        res = backend().solve(data)
        assert res.status is Status.OPTIMAL, res.message
        assert res.objective == pytest.approx(prob.value, rel=1e-6, abs=1e-7)


def test_unrecognised_nonlinear_constraint_is_refused():
    model = pyo.ConcreteModel()
    model.x = pyo.Var()
    model.t = pyo.Var()
    model.c = pyo.Constraint(expr=pyo.exp(model.x) >= model.t)  # not convex: exp on the wrong side
    model.obj = pyo.Objective(expr=model.t)
    with pytest.raises(UnsupportedProblemError, match="not an exponential cone"):
        compile_model(model)
    model.c.deactivate()
    model.d = pyo.Constraint(expr=pyo.log(model.x) <= model.t)
    with pytest.raises(UnsupportedProblemError, match="add_exp_cones"):
        compile_model(model)


def test_add_exp_cones_rejects_bad_input():
    model = pyo.ConcreteModel()
    model.x = pyo.Var(range(2))
    r = LinearMap.identity(var_list(model.x))
    with pytest.raises(ValueError, match="positive"):
        add_exp_cones(model, "bad", r, 0.0, r)
    with pytest.raises(ValueError, match="rows"):
        add_exp_cones(model, "bad2", r, 1.0, LinearMap(np.ones((1, 2)), var_list(model.x)))


# ---------------------------------------------------------------------------- ordering, refusal, selection
def test_ecos_cone_order_is_permuted():
    """ECOS's triple is ``(r, t, s)``: the permutation swaps the last two entries of each triple and
    is its own inverse."""
    p = _exp_order(2)
    assert p.tolist() == [0, 2, 1, 3, 5, 4]
    assert (p[p] == np.arange(6)).all()


def _tiny_exp():
    """``min -x + t  s.t. exp(x - 1) <= t``: optimum ``x = t = 1``, objective 0 (shifted by 1 to
    give a scale)."""
    G = sp.csr_matrix(np.array([[-1.0, 0.0], [0.0, 0.0], [0.0, -1.0]]))
    return ProblemData(c=np.array([-1.0, 1.0]), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=G,
                       h=np.array([-1.0, 1.0, 0.0]), lb=np.full(2, -np.inf), ub=np.full(2, np.inf), l=0, cones=(),
                       exp=1, offset=1.0)


@pytest.mark.parametrize("backend", CONIC)
def test_tiny_problem_and_its_multipliers(backend):
    data = _tiny_exp()
    res = backend().solve(data)
    assert res.status is Status.OPTIMAL
    # the objective is flat to second order at the optimum: x to about the root of the gap
    assert np.allclose(res.x, [1.0, 1.0], atol=1e-3) and res.objective == pytest.approx(1.0, abs=1e-7)
    # KKT by hand: c + G'z = 0 gives z = (-1, ., 1) (fsframe's order); the dual value
    # offset - h'z = 1 - (1 + z_2) equals the optimum 1 at z_2 = -1, on the dual cone's boundary
    # (-u exp(v/u - 1) = 1 = w); ECOS's (u, w, v) order permuted back
    assert np.allclose(res.duals["z"], [-1.0, -1.0, 1.0], atol=1e-4)


def test_highs_refuses_and_auto_skips_it():
    data = _tiny_exp()
    with pytest.raises(UnsupportedProblemError, match="EXP"):
        HighsBackend().solve(data)
    with pytest.raises(IncompatibleComponentsError, match="EXP"):
        select_backend("highs", ProblemClass.EXP)
    # ECOS solves them when named; auto passes it over (auto_skips: numerical errors on reweighted
    # logistic subproblems that Clarabel solves, tests/surfaces)
    assert EcosBackend.auto_skips == {ProblemClass.EXP}
    assert select_backend("auto", ProblemClass.EXP).name == "clarabel"
    assert select_backend("auto", ProblemClass.EXP, quadratic=True).name == "clarabel"
    assert select_backend("auto", ProblemClass.SOCP).name == "ecos"


def test_certificate_judges_exp_cones():
    data = _tiny_exp()
    x, y, z = np.array([1.0, 1.0]), np.zeros(0), np.array([-1.0, -1.0, 1.0])
    assert certify(data, x, y, z).ok(1e-12)
    # primal: t below exp(x - 1) is outside the cone
    bad = certify(data, np.array([1.0, 0.9]), y, z)
    assert bad.primal_residual > 1e-3
    # dual: a multiplier outside the dual cone (-u exp(v/u - 1) = e^4 > w) is projected onto it, and
    # what G'z loses by that counts (here c + G'z = 0 before the projection: only it reveals z)
    out = np.array([-1.0, -5.0, 1.0])
    assert not exp_cone.in_dual_cone(out).any()
    bad = certify(data, x, y, out)
    assert bad.dual_residual > 1e-2 and not bad.ok(1e-6)
    assert certify(data, x, y, np.array([-1.0, -1.0, 0.5])).dual_residual > 1e-3
    # complementarity: multipliers in the dual cone that are not complementary to x
    assert certify(data, x, y, np.array([-1.0, -2.0, 1.0])).gap < -1e-2
    # complementarity: a feasible point off the optimum shows a gap
    assert certify(data, np.array([0.0, 1.0]), y, z).gap > 1e-2
