"""ECOS and Clarabel backends: every exit status, options, infeasible/unbounded problems returned
as statuses, agreement between backends, availability, sessions, the PSD factor."""

from __future__ import annotations

import copy
import logging
import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe import ProblemClass, Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.clarabel import CLARABEL_STATUS
from fsframe.compiler import compile_model
from fsframe.linalg import psd_factor
from fsframe.backends.ecos import ECOS_STATUS
from fsframe.errors import BackendUnavailableError, InvalidOptionError, UnsupportedProblemError
from fsframe.method import select_backend

from conic_data import random_mpm_data

CONIC = [EcosBackend, ClarabelBackend]


def _data(c, *, G=None, h=None, A=None, b=None, lb=None, ub=None, cones=(), l=None, P=None):
    n = len(c)
    G = sp.csr_matrix((0, n)) if G is None else sp.csr_matrix(np.asarray(G, dtype=float))
    A = sp.csr_matrix((0, n)) if A is None else sp.csr_matrix(np.asarray(A, dtype=float))
    return ProblemData(c=np.asarray(c, dtype=float), A=A, b=np.zeros(0) if b is None else np.asarray(b, dtype=float),
                       G=G, h=np.zeros(0) if h is None else np.asarray(h, dtype=float),
                       lb=np.full(n, -np.inf) if lb is None else np.asarray(lb, dtype=float),
                       ub=np.full(n, np.inf) if ub is None else np.asarray(ub, dtype=float),
                       l=G.shape[0] - sum(cones) if l is None else l, cones=tuple(cones),
                       P=None if P is None else sp.csc_matrix(np.asarray(P, dtype=float)))


# ---------------------------------------------------------------------------- ECOS exit flags
EXPECTED_ECOS = {0: Status.OPTIMAL, 1: Status.INFEASIBLE, 2: Status.UNBOUNDED, 10: Status.OPTIMAL_INACCURATE,
                 11: Status.INFEASIBLE, 12: Status.UNBOUNDED, -1: Status.ITERATION_LIMIT,
                 -2: Status.NUMERICAL_ERROR, -3: Status.NUMERICAL_ERROR, -4: Status.ERROR, -7: Status.ERROR,
                 -87: Status.ERROR}


def test_every_ecos_exit_flag_is_mapped():
    # ecos.h: OPTIMAL 0, PINF 1, DINF 2, INACC_OFFSET 10, MAXIT -1, NUMERICS -2, OUTCONE -3,
    # SIGINT -4, FATAL -7, NOT_CONVERGED_YET -87
    assert ECOS_STATUS == EXPECTED_ECOS
    be = EcosBackend()
    for flag, status in EXPECTED_ECOS.items():
        assert be.map_status(flag) is status


def test_unknown_ecos_flag_is_unknown_and_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="fsframe.backends"):
        assert EcosBackend().map_status(99) is Status.UNKNOWN
    assert "99" in caplog.text


@pytest.fixture
def ecos_raw(small_socp):
    """A real ECOS answer on the small SOCP, to re-issue with other exit flags."""
    import ecos

    captured = {}
    real = ecos.solve

    def spy(*args, **kw):
        captured["out"] = real(*args, **kw)
        return captured["out"]

    return small_socp, real, spy, captured


@pytest.mark.parametrize("flag", sorted(set(EXPECTED_ECOS) - {-4}))
def test_ecos_session_reports_every_flag(flag, ecos_raw, monkeypatch):
    import ecos

    data, real, spy, captured = ecos_raw
    monkeypatch.setattr(ecos, "solve", spy)
    good = EcosBackend().solve(data)
    assert good.status is Status.OPTIMAL and good.certificate.ok(1e-6)
    raw = copy.deepcopy(captured["out"])
    raw["info"]["exitFlag"] = flag
    if flag in (1, 2, 11, 12):  # certificates, not points: ECOS's x is meaningless here
        raw["x"] = np.full_like(raw["x"], np.nan)
    monkeypatch.setattr(ecos, "solve", lambda *a, **k: raw)
    res = EcosBackend().solve(data)
    assert res.status is EXPECTED_ECOS[flag]
    assert res.raw["exit_flag"] == flag
    if res.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ITERATION_LIMIT):
        np.testing.assert_allclose(res.x, good.x)
        assert res.objective == pytest.approx(good.objective)
    else:
        assert res.x is None and res.objective is None
    if flag in (10, 11, 12):
        assert "inaccurate" in res.message


def _reissue(ecos_raw, monkeypatch, **changes):
    """The small SOCP's real ECOS answer, re-issued with ``changes`` (exit flag, x, z)."""
    import ecos

    data, real, spy, captured = ecos_raw
    monkeypatch.setattr(ecos, "solve", spy)
    EcosBackend().solve(data)
    raw = copy.deepcopy(captured["out"])
    if "flag" in changes:
        raw["info"]["exitFlag"] = changes.pop("flag")
    raw.update(changes)
    monkeypatch.setattr(ecos, "solve", lambda *a, **k: raw)
    return data, raw


def test_ecos_interrupt_flag_raises_keyboard_interrupt(ecos_raw, monkeypatch):
    """Ctrl-C inside ECOS returns exit flag -4 (ECOS_SIGINT): the run must stop, not fail a solve."""
    data, _ = _reissue(ecos_raw, monkeypatch, flag=-4)
    with pytest.raises(KeyboardInterrupt):
        EcosBackend().solve(data)


@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
def test_non_finite_optimal_point_is_a_numerical_error(backend, ecos_raw, monkeypatch):
    """An "optimal" answer holding NaN or inf is NUMERICAL_ERROR without a point (the base's
    finiteness check), for both conic backends."""
    data = ecos_raw[0]
    if backend == "ecos":
        _, raw = _reissue(ecos_raw, monkeypatch)
        raw["x"] = np.where(np.arange(raw["x"].size) == 0, np.nan, raw["x"])
        res = EcosBackend().solve(data)
    else:
        import clarabel

        session = ClarabelBackend().open(data)
        real = session.solve(data)
        assert real.status is Status.OPTIMAL
        sol = session._solver.solve()
        x = list(sol.x)
        x[0] = np.inf
        fake = types.SimpleNamespace(status=clarabel.SolverStatus.Solved, x=x, z=list(sol.z), s=list(sol.s),
                                     iterations=3)
        session._solver = types.SimpleNamespace(solve=lambda: fake, is_data_update_allowed=lambda: True,
                                                update=lambda **k: None)
        res = session.solve(data)
    assert res.status is Status.NUMERICAL_ERROR and res.x is None and res.objective is None
    assert "non-finite" in res.message


def test_ecos_optimal_that_fails_the_certificate_is_not_optimal(ecos_raw, monkeypatch):
    """Multipliers that certify nothing (zero): the base's one rule refuses the answer (UNKNOWN:
    the reduced costs of free columns do not vanish), whatever ECOS's exit flag says; multipliers
    off by 1e-3 relative give a failed certificate of an inaccurate optimum."""
    data, raw = _reissue(ecos_raw, monkeypatch)
    good_z = raw["z"].copy()
    raw["z"] = np.zeros_like(good_z)
    res = EcosBackend().solve(data)
    assert res.status is Status.UNKNOWN
    assert "certificate failed" in res.message and not res.certificate.ok(1e-6)
    raw["z"] = good_z * (1 + 1e-3)
    res = EcosBackend().solve(data)
    assert res.status is Status.OPTIMAL_INACCURATE and not res.certificate.ok(1e-6)


def test_ecos_exception_becomes_error_status(small_socp, monkeypatch):
    import ecos

    def boom(*a, **k):
        raise ValueError("dims do not match")

    monkeypatch.setattr(ecos, "solve", boom)
    res = EcosBackend().solve(small_socp)
    assert res.status is Status.ERROR and "dims do not match" in res.message and res.x is None


# ---------------------------------------------------------------------------- Clarabel statuses
def test_every_clarabel_status_is_mapped():
    import clarabel

    members = {s for s in dir(clarabel.SolverStatus) if not s.startswith("_")}
    assert members == set(CLARABEL_STATUS)
    be = ClarabelBackend()
    for name, status in CLARABEL_STATUS.items():
        assert be.map_status(getattr(clarabel.SolverStatus, name)) is status


@pytest.mark.parametrize("name", sorted(CLARABEL_STATUS))
def test_clarabel_session_reports_every_status(name, small_socp):
    import clarabel

    # Clarabel's own tolerances, given: its word on each status stands (no re-solve at 1e-8 after a
    # stall at fsframe's 1e-9, no AlmostSolved taken as solved: tested below)
    session = ClarabelBackend().open(small_socp, SolveOptions(backend_options={"tol_feas": 1e-8}))
    good = session.solve(small_socp)
    assert good.status is Status.OPTIMAL
    real = session._solver.solve()
    fake = types.SimpleNamespace(status=getattr(clarabel.SolverStatus, name), x=list(real.x), z=list(real.z),
                                 s=list(real.s), iterations=7)
    session._solver = types.SimpleNamespace(solve=lambda: fake, is_data_update_allowed=lambda: True,
                                            update=lambda **k: None)
    res = session.solve(small_socp)
    assert res.status is CLARABEL_STATUS[name]
    assert res.iterations == 7
    if res.status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ITERATION_LIMIT, Status.TIME_LIMIT):
        np.testing.assert_allclose(res.x, good.x)
    else:
        assert res.x is None


# ---------------------------------------------------------------------------- real problems
INFEASIBLE_SOCP = _data([1.0, 0.0], G=[[-1, 0], [0, 0], [-1, 0], [0, -1]], h=[-2.0, 1.0, 0, 0], cones=(3,), l=1)
"""||x|| <= 1 and x1 >= 2 (the R_+ row first, then the cone)."""
UNBOUNDED_SOCP = _data([0.0, 0.0, -1.0], G=[[0, 0, -1], [-1, 0, 0], [0, -1, 0]], h=[0.0, 0.0, 0.0], cones=(3,), l=0)
"""min -t s.t. ||(x1, x2)|| <= t."""


@pytest.mark.parametrize("backend", CONIC)
def test_infeasible_and_unbounded_socp_are_statuses(backend):
    r = backend().solve(INFEASIBLE_SOCP)
    assert r.status is Status.INFEASIBLE and r.x is None
    r = backend().solve(UNBOUNDED_SOCP)
    assert r.status is Status.UNBOUNDED and r.x is None


@pytest.mark.parametrize("backend", CONIC)
def test_infeasible_mpm_subproblem_is_a_status(backend):
    """An L1-MPM with delta above delta_max, built directly (no validate): INFEASIBLE, no exception."""
    from fsframe_mpm import MPMFormulation, largest_bound

    X, y = random_mpm_data()
    dmax = largest_bound(X, y).delta
    built = MPMFormulation(delta=min(0.999, dmax + 0.5 * (1 - dmax))).build(X, y, frozenset({"lin"}))
    data = compile_model(built.model).with_weights(lin=np.ones(X.shape[1]), sync=False)
    r = backend().solve(data)
    assert r.status is Status.INFEASIBLE and not r.ok


@pytest.mark.parametrize("backend, options", [(EcosBackend, {"max_iters": 2}), (ClarabelBackend, {"max_iter": 2})])
def test_iteration_limit(backend, options, small_socp):
    r = backend().solve(small_socp, SolveOptions(backend_options=options))
    assert r.status is Status.ITERATION_LIMIT and r.iterations == 2 and r.x is not None


# ---------------------------------------------------------------------------- options
@pytest.mark.parametrize("backend, options", [
    (EcosBackend, {"no_such": 1}), (EcosBackend, {"max_iters": 1.5}), (EcosBackend, {"feastol": -1e-8}),
    (EcosBackend, {"reltol": "tight"}), (EcosBackend, {"max_iters": True}), (EcosBackend, {"bool_vars_idx": [0]}),
    (ClarabelBackend, {"no_such": 1}), (ClarabelBackend, {"max_iter": "many"}), (ClarabelBackend, {"max_iter": -1}),
    (ClarabelBackend, {"direct_solve_method": "nonsense"}),
])
def test_bad_options_raise(backend, options, small_socp):
    with pytest.raises(InvalidOptionError):
        backend().solve(small_socp, SolveOptions(backend_options=options))


def test_ecos_refuses_a_time_limit_clarabel_honours_it(small_socp):
    with pytest.raises(InvalidOptionError, match="max_iters"):
        EcosBackend().solve(small_socp, SolveOptions(time_limit=10.0))
    assert ClarabelBackend().solve(small_socp, SolveOptions(time_limit=10.0)).status is Status.OPTIMAL
    assert ClarabelBackend().solve(small_socp, SolveOptions(time_limit=0.0)).status is Status.TIME_LIMIT


def test_ecos_tolerances_take_effect(small_socp):
    loose = EcosBackend().solve(small_socp, SolveOptions(backend_options={"feastol": 1e-3, "abstol": 1e-3,
                                                                          "reltol": 1e-3}, certify=False))
    tight = EcosBackend().solve(small_socp)
    assert loose.iterations < tight.iterations
    assert loose.objective == pytest.approx(tight.objective, rel=1e-2)


# ---------------------------------------------------------------------------- agreement
def _compiled(method, X, y, **params):
    from fsframe.method import resolve

    res = resolve(method, **params)
    built = res.formulation.build(X, y, res.terms)
    compiled = compile_model(built.model)
    n = X.shape[1]
    weights = {"lin": np.ones(n)} if "lin" in res.terms else {"quad": np.ones(n)}
    return compiled.with_weights(**weights, sync=False)


def registered_backends(problem_class):
    """The registered backends (built-in and plugins) that support ``problem_class``, split into
    the available ones and ``{name: reason}`` for the unavailable ones."""
    usable, unavailable = [], {}
    for entry in fsframe.plugins.get_registry().all("backend"):
        B = entry.obj
        if problem_class not in B.supports:
            continue
        avail = B.available()
        if avail:
            usable.append(B)
        else:
            unavailable[B.name] = avail.reason
    return usable, unavailable


def agree_on(data):
    """Solve ``data`` on every registered, available backend that supports its class: each is
    optimal, reports the objective of the point it returns, feasible to 1e-6 (HiGHS's QP stops
    at a primal violation of 1e-7), and all optima agree to 1e-6 relative. Returns the names
    solved."""
    backends, unavailable = registered_backends(data.problem_class)
    assert len(backends) >= 2, f"nothing to compare: {[B.name for B in backends]}, unavailable {unavailable}"
    results = {B.name: B().solve(data) for B in backends}
    for name, r in results.items():
        assert r.status is Status.OPTIMAL, (name, r.message)
        assert data.objective(r.x) == pytest.approx(r.objective, rel=1e-9, abs=1e-9), name
        assert data.max_violation(r.x) <= 1e-6, name
    best = min(r.objective for r in results.values())
    for name, r in results.items():
        assert r.objective == pytest.approx(best, rel=1e-6), (name, {k: v.objective for k, v in results.items()})
    return sorted(results)


@pytest.mark.parametrize("method", ["l1-svm", "svm-weights"])
def test_same_lp_qp_optimum_on_every_backend(method):
    X, y = random_mpm_data(m=60, n=12, seed=5)
    data = _compiled(method, X, y)
    assert data.problem_class is (ProblemClass.LP if method == "l1-svm" else ProblemClass.QP)
    solved = agree_on(data)
    # the built-in backends all solve LPs and QPs; none may drop out silently
    assert {"highs", "ecos", "clarabel"} <= set(solved) | set(registered_backends(data.problem_class)[1])


def test_agreement_covers_a_new_backend(add_components):
    """A backend registered by a plugin joins the comparison above without editing this file: one
    that reports a slightly wrong optimum fails it."""
    import attrs

    class Drifting(ClarabelBackend):
        name = "drifting"

        def solve(self, data, options=SolveOptions()):
            r = super().solve(data, options)
            return attrs.evolve(r, objective=r.objective * (1 + 1e-4), backend=self.name)

    X, y = random_mpm_data(m=60, n=12, seed=5)
    data = _compiled("l1-svm", X, y)
    assert "drifting" not in agree_on(data)
    add_components(backends=[Drifting])
    with pytest.raises(AssertionError, match="drifting"):
        agree_on(data)


def test_same_socp_optimum_on_ecos_and_clarabel(mpm_data):
    _, X, y = mpm_data
    data = _compiled("l1-mpm", X, y, delta=0.4)
    re, rc = EcosBackend().solve(data), ClarabelBackend().solve(data)
    assert re.status is rc.status is Status.OPTIMAL
    assert re.objective == pytest.approx(rc.objective, rel=1e-6)
    assert re.certificate.ok(1e-6) and rc.certificate.ok(1e-6)


@pytest.mark.parametrize("backend", CONIC)
def test_duals_are_on_the_compiled_rows(backend, small_socp):
    r = backend().solve(small_socp)
    assert r.duals["y"].shape == (small_socp.A.shape[0],)
    assert r.duals["z"].shape == (small_socp.G.shape[0],)
    # stationarity: c + A'y + G'z is a reduced cost, non-negative on the u, v >= 0 columns
    rc = small_socp.c + small_socp.A.T @ r.duals["y"] + small_socp.G.T @ r.duals["z"]
    free = ~np.isfinite(small_socp.lb) & ~np.isfinite(small_socp.ub)
    assert np.max(np.abs(rc[free])) < 1e-6
    assert np.min(rc[~free]) > -1e-6


def test_ecos_qp_through_the_rotated_cone_matches_highs():
    """min (x1-1)^2 + 2 (x2-1)^2 + x3^2 s.t. x1 + x2 + x3 = 1, x3 >= 0.1: a dense 2x2 block and a
    diagonal entry in P (both factor shapes)."""
    P = np.array([[2.0, 0.5, 0.0], [0.5, 4.0, 0.0], [0.0, 0.0, 2.0]])
    data = _data([-2.0, -4.0, 0.0], A=[[1.0, 1.0, 1.0]], b=[1.0], G=[[0.0, 0.0, -1.0]], h=[-0.1], P=P)
    rh, re = HighsBackend().solve(data), EcosBackend().solve(data)
    assert re.status is Status.OPTIMAL
    assert re.objective == pytest.approx(rh.objective, rel=1e-7)
    np.testing.assert_allclose(re.x, rh.x, atol=1e-6)


# ---------------------------------------------------------------------------- sessions
@pytest.mark.parametrize("backend", CONIC)
def test_session_resolves_equal_fresh_solves(backend, small_socp):
    rng = np.random.default_rng(0)
    n = small_socp.n
    session = backend().open(small_socp)
    datas = [small_socp]
    for _ in range(3):  # new objective (a DCA step), then new bounds, then a quadratic term
        datas.append(small_socp.evolve(c=small_socp.c + 0.3 * rng.random(n)))
    datas.append(datas[-1].evolve(ub=np.where(np.isfinite(small_socp.lb), 5.0, np.inf)))
    datas.append(datas[-1].evolve(P=sp.diags(np.r_[np.ones(8), np.zeros(n - 8)] * 3.0).tocsc()))
    datas.append(datas[1])
    try:
        for d in datas:
            again, fresh = session.solve(d), backend().solve(d)
            assert again.status is fresh.status is Status.OPTIMAL
            assert again.objective == pytest.approx(fresh.objective, rel=1e-7)
    finally:
        session.close()


def test_ecos_session_keeps_its_matrices_when_only_c_changes(small_socp):
    session = EcosBackend().open(small_socp)
    session.solve(small_socp)
    stacked = session._form.stacked
    session.solve(small_socp.evolve(c=small_socp.c * 2.0))
    assert session._form.stacked is stacked
    session.solve(small_socp.evolve(lb=small_socp.lb.copy()))
    assert session._form.stacked is not stacked


# ---------------------------------------------------------------------------- availability
def test_auto_picks_highs_for_lp_qp_and_ecos_for_socp():
    assert select_backend("auto", ProblemClass.LP).name == "highs"
    assert select_backend("auto", ProblemClass.QP).name == "highs"
    assert select_backend("auto", ProblemClass.SOCP).name == "ecos"


def test_a_missing_module_makes_a_backend_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "ecos", None)  # import ecos now raises ImportError
    avail = EcosBackend.available()
    assert not avail and "ecos" in avail.reason
    assert select_backend("auto", ProblemClass.SOCP).name == "clarabel"
    with pytest.raises(BackendUnavailableError, match="ecos"):
        select_backend("ecos", ProblemClass.SOCP)
    monkeypatch.setitem(sys.modules, "clarabel", None)
    with pytest.raises(BackendUnavailableError, match="SOCP"):
        select_backend("auto", ProblemClass.SOCP)
    assert select_backend("auto", ProblemClass.LP).name == "highs"
    assert "ecos" in [c["name"] for c in fsframe.list_components("backend")]


# ---------------------------------------------------------------------------- PSD factor
@pytest.mark.parametrize("case", ["diagonal", "uv-pairs", "dense", "mixed", "zero"])
def test_psd_factor(case):
    rng = np.random.default_rng(2)
    W = sp.hstack([sp.identity(4), -sp.identity(4)])
    B = rng.standard_normal((5, 3))
    P = {"diagonal": sp.diags([1.0, 0.0, 4.0, 9.0]),
         "uv-pairs": W.T @ sp.diags([2.0, 3.0, 0.0, 1.0]) @ W,
         "dense": sp.csr_matrix(B @ B.T),
         "mixed": sp.block_diag([sp.diags([0.5, 0.0]), W.T @ sp.diags([1.0, 2.0, 3.0, 4.0]) @ W, B @ B.T]),
         "zero": sp.csr_matrix((3, 3))}[case]
    F = psd_factor(P)
    np.testing.assert_allclose((F.T @ F).toarray(), P.toarray(), atol=1e-12)
    rank = np.linalg.matrix_rank(P.toarray()) if P.nnz else 0
    assert F.shape == (rank, P.shape[0])


def test_psd_factor_refuses_an_indefinite_matrix():
    with pytest.raises(UnsupportedProblemError, match="not convex"):
        psd_factor(sp.csr_matrix(np.array([[1.0, 2.0], [2.0, 1.0]])))


def _clarabel_stub(data):
    """A Clarabel session on ``data`` after one true solve (``good``, Clarabel's own solution
    ``real``), whose solver then returns what ``answer(status, **fields)`` builds (Clarabel's
    solution with those fields changed); ``made`` records the ``tol_feas`` of every solver the
    session's re-solves build (``_make``)."""
    import clarabel

    stub = types.SimpleNamespace(data=data, made=[])
    stub.session = ClarabelBackend().open(data)
    stub.good = stub.session.solve(data)
    real = stub.real = stub.session._solver.solve()

    def answer(status, **fields):
        base = dict(status=getattr(clarabel.SolverStatus, status), x=list(real.x), z=list(real.z), s=list(real.s),
                    iterations=7, solve_time=0.01, obj_val=real.obj_val, obj_val_dual=real.obj_val - 1e-3,
                    r_prim=1e-4, r_dual=1e-4)
        fake = types.SimpleNamespace(**{**base, **fields})
        stub.session._solver = types.SimpleNamespace(solve=lambda: fake, is_data_update_allowed=lambda: True,
                                                     update=lambda **k: None)
        return fake

    stub.answer = answer
    real_make = stub.session._make
    stub.session._make = lambda data, prep, settings: stub.made.append(settings.tol_feas) or real_make(data, prep,
                                                                                                    settings)
    return stub


@pytest.fixture
def clarabel_stub(small_socp):
    return _clarabel_stub(small_socp)


def test_clarabel_answer_failing_the_certificate_is_solved_again_tighter(clarabel_stub):
    """A Clarabel answer whose multipliers are off by 1e-3 fails the certificate; the session
    solves once more at RETRY_TOLERANCE and that answer, judged by the same rule, is OPTIMAL."""
    from fsframe.backends.clarabel import RETRY_TOLERANCE

    stub = clarabel_stub
    fake = stub.answer("Solved", z=list(np.asarray(stub.real.z) * (1 + 1e-3)), iterations=5)
    res = stub.session.solve(stub.data)
    assert res.status is Status.OPTIMAL and res.certificate.ok(1e-6)
    assert f"re-solved at tolerance {RETRY_TOLERANCE:g}" in res.message
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-7)
    assert res.iterations > 5  # both candidates counted
    strict = ClarabelBackend().open(stub.data, SolveOptions(backend_options={"tol_gap_abs": 1e-8}))
    strict.solve(stub.data)
    strict._solver = types.SimpleNamespace(solve=lambda: fake, is_data_update_allowed=lambda: True,
                                           update=lambda **k: None)
    assert strict.solve(stub.data).status is Status.OPTIMAL_INACCURATE  # explicit tolerances: no retry


def test_clarabel_tolerances_are_fsframes_unless_given():
    """fsframe asks Clarabel for 1e-9 (DEFAULT_TOLERANCE) on the gap and feasibility; a tolerance
    given in backend_options leaves the others at Clarabel's own defaults."""
    from fsframe.backends.clarabel import CLARABEL_TOLERANCE, DEFAULT_TOLERANCE, clarabel_settings

    s = clarabel_settings(SolveOptions())
    assert (s.tol_gap_abs, s.tol_gap_rel, s.tol_feas) == (DEFAULT_TOLERANCE,) * 3 == (1e-9,) * 3
    s = clarabel_settings(SolveOptions(backend_options={"tol_gap_rel": 1e-7}))
    assert (s.tol_gap_abs, s.tol_gap_rel, s.tol_feas) == (CLARABEL_TOLERANCE, 1e-7, CLARABEL_TOLERANCE)


@pytest.mark.parametrize("reached, given, expected", [
    (5e-9, False, Status.OPTIMAL),  # within Clarabel's own 1e-8: what its defaults call Solved
    (5e-8, False, Status.OPTIMAL_INACCURATE),  # beyond it: inaccurate, as Clarabel says
    (5e-9, True, Status.OPTIMAL_INACCURATE),  # the user's tolerances: Clarabel's word stands
])
def test_clarabel_almost_solved_within_its_default_tolerance(clarabel_stub, reached, given, expected):
    """An AlmostSolved answer at fsframe's 1e-9 whose residuals and gap (as Clarabel reports them)
    meet Clarabel's default 1e-8 is OPTIMAL, then certified like any answer; the exact point with
    reported measures above 1e-8, or under tolerances the user chose, stays OPTIMAL_INACCURATE."""
    stub = clarabel_stub
    obj = stub.real.obj_val
    fake = stub.answer("AlmostSolved", obj_val_dual=obj + reached * max(1.0, abs(obj)) * 0.5,
                       r_prim=reached, r_dual=reached)
    session = stub.session
    if given:
        session = ClarabelBackend().open(stub.data, SolveOptions(backend_options={"tol_gap_abs": 1e-9}))
        session.solve(stub.data)
        session._solver = stub.session._solver
    session._retries = lambda data, tried: iter(())  # judge the one answer
    res = session.solve(stub.data)
    # the answer judged is the stub's (its status, its iteration count), not a re-solve's
    assert res.raw["status"] is fake.status and res.iterations == fake.iterations == 7
    assert res.status is expected
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-7)
    if expected is Status.OPTIMAL:
        assert "within Clarabel's default" in res.message and res.certificate.ok(1e-6)


@pytest.mark.parametrize("name", ["InsufficientProgress", "NumericalError", "AlmostSolved"])
def test_a_clarabel_stall_at_fsframes_tolerance_is_solved_again_at_clarabels(name, clarabel_stub):
    """A solve Clarabel does not call solved at fsframe's 1e-9 (a stall: an interior point pushed
    past what the conditioning allows can end further from the optimum than where Clarabel's own
    1e-8 stops; seen on MPM + lp + EM) is solved again with Clarabel's own tolerances, and that
    answer, judged by the same rule, is returned; a MaxIterations stop (the user's cap) is not."""
    from fsframe.backends.clarabel import CLARABEL_TOLERANCE

    stub = clarabel_stub
    stub.answer(name)
    res = stub.session.solve(stub.data)
    assert stub.made[0] == CLARABEL_TOLERANCE
    assert res.status is Status.OPTIMAL and "re-solved at Clarabel's default tolerance" in res.message
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-7) and res.iterations > 7
    stub.answer("MaxIterations")
    stub.made.clear()
    assert stub.session.solve(stub.data).status is Status.ITERATION_LIMIT and stub.made == []


def test_an_almost_solved_stop_at_the_users_cap_is_not_solved_again(clarabel_stub):
    """Clarabel calls a stop at ``max_iter`` ``AlmostSolved`` when its loose tolerances hold: that
    is the user's cap, not a stall, so it is not solved again at Clarabel's own tolerance."""
    stub = clarabel_stub
    fake = stub.answer("AlmostSolved", iterations=stub.session.settings.max_iter)
    res = stub.session.solve(stub.data)
    assert stub.made == [] and "re-solved at Clarabel's default tolerance" not in res.message
    fake.iterations = 7  # below the cap: a stall, solved again
    assert "re-solved at Clarabel's default tolerance" in stub.session.solve(stub.data).message and stub.made


def test_a_fallback_without_a_point_does_not_replace_the_first_answer(clarabel_stub):
    """When the solve at fsframe's 1e-9 stalled with a point and the fallback at Clarabel's own
    tolerance ends without one, the first (inaccurate) point is what is reported."""
    import clarabel

    stub = clarabel_stub
    stub.answer("AlmostSolved")
    stalled = types.SimpleNamespace(status=clarabel.SolverStatus.NumericalError, x=[float("nan")] * len(stub.real.x),
                                    z=list(stub.real.z), s=list(stub.real.s), iterations=3, solve_time=0.01)
    stub.session._make = lambda data, prep, settings: types.SimpleNamespace(solve=lambda: stalled)
    res = stub.session.solve(stub.data)
    assert res.x is not None and res.status is Status.OPTIMAL_INACCURATE
    assert ("kept: the answer of the first solve; the re-solve at Clarabel's default tolerance ended numerical_error "
            "without a point") in res.message


def test_a_refused_fallback_keeps_the_first_point_and_runs_the_other_retries(small_socp):
    """Clarabel refusing the fallback at its own tolerance (a ``SolveFailure`` inside the re-solve)
    is one failed candidate: the first (inaccurate) point is kept with its status, the message
    says what the fallback ended with, and the re-solve of the problem without its elimination of
    fixed columns still runs (the failure ended every retry after it)."""
    import attrs

    from fsframe.backends.base import SolveFailure

    lb, ub = small_socp.lb.copy(), small_socp.ub.copy()
    lb[0] = ub[0] = 0.0  # a fixed column: the session eliminates it
    stub = _clarabel_stub(attrs.evolve(small_socp, lb=lb, ub=ub))
    assert stub.session._prep.elim is not None
    stub.answer("AlmostSolved")
    real_make = stub.session._make

    def refuse_the_fallback(data, prep, settings):
        if prep.elim is not None:
            raise SolveFailure(Status.ERROR, "Clarabel rejected the problem: stub")
        return real_make(data, prep, settings)

    stub.session._make = refuse_the_fallback
    res = stub.session.solve(stub.data)
    # the whole problem, solved at Clarabel's own tolerance after the refusal, is the answer
    assert stub.made == [1e-8] and res.status is Status.OPTIMAL
    assert "re-solved without eliminating the fixed columns" in res.message
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-7)
    # when every re-solve is refused, the first (inaccurate) point is kept with what happened
    stub.session._make = lambda data, prep, settings: refuse_the_fallback(data, types.SimpleNamespace(elim=1), settings)
    res = stub.session.solve(stub.data)
    assert res.x is not None and res.status is Status.OPTIMAL_INACCURATE
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-5)
    assert ("kept: the answer of the first solve; the re-solve at Clarabel's default tolerance ended error without "
            "a point") in res.message
    assert "Clarabel rejected the problem: stub" in res.message


def _with_a_fixed_column(data):
    import attrs

    lb, ub = data.lb.copy(), data.ub.copy()
    lb[0] = ub[0] = 0.0  # a fixed column: the session eliminates it
    return attrs.evolve(data, lb=lb, ub=ub)


def _fake_solution(status, sol, **fields):
    import clarabel

    base = dict(status=getattr(clarabel.SolverStatus, status), x=list(sol.x), z=list(sol.z), s=list(sol.s),
                iterations=9, solve_time=0.01, obj_val=sol.obj_val, obj_val_dual=sol.obj_val - 1e-3,
                r_prim=1e-4, r_dual=1e-4)
    return types.SimpleNamespace(**{**base, **fields})


def test_a_point_from_any_re_solve_is_kept(small_socp):
    """The first solve ends ``Unsolved`` (no point); the re-solve of the whole problem (after the
    elimination of a fixed column) ends ``AlmostSolved`` at the optimum: that point is the answer,
    ``OPTIMAL_INACCURATE`` at ECOS's optimum, and the message says what the first solve ended
    with (it was lost: ``ERROR`` without a point, only the first and the 1e-8 fallback compared)."""
    data = _with_a_fixed_column(small_socp)
    stub = _clarabel_stub(data)
    assert stub.session._prep.elim is not None
    stub.answer("Unsolved", x=[], z=[], s=[], iterations=3)
    real_make = stub.session._make

    def almost(data, prep, settings):
        return types.SimpleNamespace(solve=lambda: _fake_solution("AlmostSolved", real_make(data, prep,
                                                                                            settings).solve()))

    stub.session._make = almost
    res = stub.session.solve(data)
    ref = EcosBackend().solve(data)
    assert ref.status is Status.OPTIMAL
    assert res.status is Status.OPTIMAL_INACCURATE and res.x is not None
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    assert "kept: the answer of the re-solve without eliminating the fixed columns; the first solve ended error " \
           "without a point (Unsolved)" in res.message


def test_a_better_status_from_the_tighter_re_solve_beats_an_unknown_first_point(clarabel_stub):
    """The first answer is "Solved" with multipliers 50 % off: the certificate refutes it
    (``UNKNOWN``, a point kept). The re-solve at RETRY_TOLERANCE ends ``AlmostSolved`` at the true
    optimum (``OPTIMAL_INACCURATE``): the better status wins, though it is not the fallback at
    Clarabel's own tolerance (which alone could replace the first point), and the message names
    the first answer's status."""
    stub = clarabel_stub
    stub.answer("Solved", z=list(np.asarray(stub.real.z) * 1.5))
    real_make = stub.session._make
    stub.session._make = lambda data, prep, settings: types.SimpleNamespace(
        solve=lambda: _fake_solution("AlmostSolved", real_make(data, prep, settings).solve()))
    res = stub.session.solve(stub.data)
    assert stub.made == [1e-11]
    assert res.status is Status.OPTIMAL_INACCURATE and res.certificate.ok(1e-6)
    assert res.objective == pytest.approx(stub.good.objective, rel=1e-7)
    assert "kept: the answer of the re-solve at tolerance 1e-11; the first solve ended unknown with a point" \
        in res.message


@pytest.mark.parametrize("status", ["MaxTime", "MaxIterations"])
def test_no_re_solve_after_a_stop_at_the_users_limit(small_socp, status):
    """A first solve that stopped at the user's ``time_limit`` or ``max_iter`` is the user's cap:
    no re-solve runs, not even that of the whole problem after an elimination (it ran)."""
    data = _with_a_fixed_column(small_socp)
    stub = _clarabel_stub(data)
    assert stub.session._prep.elim is not None
    stub.answer(status, solve_time=5.0)
    res = stub.session.solve(data)
    expected = {"MaxTime": Status.TIME_LIMIT, "MaxIterations": Status.ITERATION_LIMIT}[status]
    assert stub.made == [] and res.status is expected
    assert "re-solved" not in res.message


def test_a_re_solve_gets_what_is_left_of_the_time_limit(small_socp, monkeypatch):
    """With ``time_limit=10``: a first solve that stalls after 4 s (a stub clock) leaves each
    re-solve what is left of the 10 s since the first solve began (6 s, then 6 - 1.5 s); once
    the time is spent no re-solve starts and the message says so."""
    import fsframe.backends.clarabel as clarabel_module

    now = [0.0]
    monkeypatch.setattr(clarabel_module, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    data = _with_a_fixed_column(small_socp)
    session = ClarabelBackend().open(data, SolveOptions(time_limit=10.0))
    session.solve(data)
    real = session._solver.solve()
    fake = _fake_solution("InsufficientProgress", real, solve_time=4.0)

    def stall():
        now[0] += 4.0
        return fake

    session._solver = types.SimpleNamespace(solve=stall, is_data_update_allowed=lambda: True, update=lambda **k: None)
    given = []

    def make(data, prep, settings):
        given.append(settings.time_limit)
        now[0] += 1.5
        return types.SimpleNamespace(solve=lambda: fake)  # stalls again: every re-solve runs

    session._make = make
    res = session.solve(data)
    assert given == [pytest.approx(6.0), pytest.approx(4.5)]
    assert res.status is Status.NUMERICAL_ERROR and "not started" not in res.message
    fake.solve_time = 0.5  # the set-up took the time: not the solver's stop at the limit
    now[0] = 0.0

    def slow_stall():
        now[0] += 11.0
        return fake

    session._solver = types.SimpleNamespace(solve=slow_stall, is_data_update_allowed=lambda: True,
                                            update=lambda **k: None)
    given.clear()
    res = session.solve(data)
    assert given == []
    assert ("the re-solve at Clarabel's default tolerance and any after it not started: the time limit of 10 s "
            "was spent") in res.message


@pytest.mark.parametrize("error", ["SolveFailure", "ValueError"])
def test_a_failing_preparation_of_the_whole_problem_is_one_failed_candidate(small_socp, monkeypatch, error):
    """The re-solve of the whole problem prepares it (``prepare(data, reduce=False)``) inside its
    candidate: when that preparation fails (a SolveFailure, or any other exception), the re-solve
    at RETRY_TOLERANCE after it still runs and its answer (the optimum, certified) is returned
    (the failure once ended every retry after it)."""
    import fsframe.backends.clarabel as clarabel_module
    from fsframe.backends.base import SolveFailure

    data = _with_a_fixed_column(small_socp)
    stub = _clarabel_stub(data)
    assert stub.session._prep.elim is not None
    stub.answer("Solved", z=list(np.asarray(stub.real.z) * (1 + 1e-3)))  # fails the certificate
    real_prepare = clarabel_module.prepare

    def prepare(data, reduce=True):
        if not reduce:
            raise SolveFailure(Status.ERROR, "stub refusal") if error == "SolveFailure" else ValueError("stub refusal")
        return real_prepare(data, reduce=reduce)

    monkeypatch.setattr(clarabel_module, "prepare", prepare)
    res = stub.session.solve(data)
    assert stub.made == [1e-11] and res.status is Status.OPTIMAL and res.certificate.ok(1e-6)
    assert res.objective == pytest.approx(EcosBackend().solve(data).objective, rel=1e-6)
    assert "re-solved at tolerance 1e-11 after the certificate failed" in res.message
