"""Adversarial tests of the working sets (fsframe.working_set): the answer equals the full
problem's on hard data (mixed scales, duplicates, n >> m, degenerate LPs, kernels, one-vs-rest,
exactly-r re-solves, every backend, equality rows, bound searches, greedy masks, EM), against
independent references (CVXPY + Clarabel, SciPy's linprog), and the certificate never reports more
than the full problem certifies. Each defect found by the review has its regression test here."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.backends.base import SolveOptions
from fsframe.backends.certificate import reduced_cost_violations
from fsframe.backends.highs import HighsBackend, HighsSession
from fsframe.canonical import ProblemData
from fsframe.enums import Status
from fsframe.errors import IncompatibleComponentsError, InvalidOptionError, UnknownComponentError
from fsframe.method import resolve, select_backend
from fsframe.problem import Subproblem
from fsframe.working_set import WorkingSetOptions
from test_working_set import _data as _ws_data  # tests/unit is on sys.path (pytest's rootdir-relative import)

# small initial sets and batches: many pricing rounds, late entries, carried working sets
WS = WorkingSetOptions(mode=True, initial=5, batch=5)


def _data(m=30, n=300, k=4, seed=1, noise=0.5):
    return _ws_data(m=m, n=n, k=k, seed=seed, noise=noise)  # larger defaults than test_working_set's


def _both(X, y, method, ws=WS, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, method, working_set=False, **kw)
        part = fsframe.fit(X, y, method, working_set=ws, **kw)
    return full, part


def _l1svm_objective(X, y, C, coef, intercept):
    """||w||_1 + C sum_i max(0, 1 - y_i (x_i'w + b)), in numpy."""
    margins = y * (X @ np.ravel(coef) + intercept)
    return float(np.abs(coef).sum() + C * np.maximum(0.0, 1.0 - margins).sum())


def _linprog_l1svm(X, y, C):
    """The L1-SVM LP in SciPy's linprog: variables (u, v, b, xi), w = u - v."""
    from scipy.optimize import linprog

    m, n = X.shape
    c = np.concatenate([np.ones(2 * n), [0.0], np.full(m, C)])
    Yx = y[:, None] * X
    A_ub = np.hstack([-Yx, Yx, -y[:, None], -np.eye(m)])
    bounds = [(0, None)] * (2 * n) + [(None, None)] + [(0, None)] * m
    r = linprog(c, A_ub=A_ub, b_ub=-np.ones(m), bounds=bounds, method="highs-ipm",
                options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert r.status == 0
    return float(r.fun)


# -- finding 1: pricing measured against one scale shared by all columns ----------------------
def test_large_C_does_not_hide_a_violating_feature():
    """At C = 1e6 the slacks' reduced-cost terms are of size 1e6; measured against that one
    scale, a feature with reduced cost -5e-4 against its weight 1 stayed out and the fit ended
    5e-6 above the optimum, reported optimal (max_violation 5e-10)."""
    X, y = _data()
    full, part = _both(X, y, "l1-svm", C=1e6)
    ref = _linprog_l1svm(X, y.astype(float), 1e6)
    # the objective of the returned model: HiGHS's full solve holds the hinge rows to 5e-13, which
    # its slacks absorb and the model's own hinge charges C = 1e6 times (2.4e-7 above the LP optimum)
    assert full.objective == pytest.approx(_l1svm_objective(X, y, 1e6, full.coef, full.intercept), rel=1e-9)
    assert full.objective == pytest.approx(ref, rel=1e-6)
    assert part.objective == pytest.approx(ref, rel=1e-8)
    assert part.objective == pytest.approx(_l1svm_objective(X, y, 1e6, part.coef, part.intercept), rel=1e-8)
    assert part.certificate["max_violation"] <= 1e-9 and part.certificate["working_set"] < 300


def test_pricing_scale_is_per_column():
    # column 0: terms of size 1 with reduced cost -1e-3; column 1: terms of size 1e6, r = 0
    data = ProblemData(c=np.array([1.0, 1e6]), A=sp.csr_matrix((0, 2)), b=np.zeros(0),
                       G=sp.csr_matrix(np.array([[-1.0, -1.0]])), h=np.array([-1.0]),
                       lb=np.zeros(2), ub=np.full(2, np.inf), l=1)
    x, z = np.zeros(2), np.array([1e6])
    viol, col = reduced_cost_violations(data, x, np.zeros(0), z, per_column=True)
    np.testing.assert_allclose(viol, [1e6 - 1.0, 0.0])
    np.testing.assert_allclose(col, [1e6, 1e6])
    z = np.array([1.001])
    viol, col = reduced_cost_violations(data, x, np.zeros(0), z, per_column=True)
    np.testing.assert_allclose(viol / col, [1e-3 / 1.001, 0.0], rtol=1e-12)
    _, glob = reduced_cost_violations(data, x, np.zeros(0), z)
    assert glob == 1e6  # the shared scale would call column 0's violation 1e-9


# -- finding 2: a live HiGHS model appended to after its old columns changed ----------------------
def test_restated_constraints_are_reloaded_not_appended(monkeypatch):
    """``Subproblem.set_bounds`` restates the compiled problem's matrices; the working set kept
    claiming "the last problem with columns appended", HiGHS kept the old matrix, and the
    restricted solve ended unknown (then a full solve: correct, but only by the fallback)."""
    X, y = _data()
    res = resolve("l1-svm", C=1.0)
    sub = Subproblem(res.formulation, X, y.astype(float), res.terms, HighsBackend(), working_set=WS)
    sub.solve(lin=1.0)
    loads = []
    orig = HighsSession._load
    monkeypatch.setattr(HighsSession, "_load", lambda self, data: (loads.append(data.n), orig(self, data))[1])
    base = sub.compiled.base
    sub.compiled.base = base.evolve(G=(base.G * 3.0).tocsr())  # what set_bounds may do
    it = sub.solve(lin=1.0)
    ref = HighsBackend().solve(sub.compiled.with_weights(lin=1.0, sync=False), SolveOptions())
    assert sub.last_report.used and not sub.last_report.fallback
    assert loads, "the restated problem must be loaded, not appended to"
    assert it.status is Status.OPTIMAL and it.objective == pytest.approx(ref.objective, rel=1e-9)
    sub.close()


# -- finding 3: time limits per round, then a full solve with a fresh limit ------------------------
def test_time_limit_bounds_all_pricing_rounds_together():
    rng = np.random.default_rng(0)
    m, n = 200, 3000
    X = rng.standard_normal((m, n))
    y = np.where(X[:, :10].sum(1) + rng.standard_normal(m) > 0, 1.0, -1.0)
    res = resolve("l1-svm", C=1.0)
    limit = 0.05
    sub = Subproblem(res.formulation, X, y, res.terms, HighsBackend(), SolveOptions(time_limit=limit),
                     working_set=WorkingSetOptions(mode=True, initial=5, batch=5, max_rounds=500))
    sub.compiled  # noqa: B018  (build outside the timed solve)
    t0 = time.perf_counter()
    it = sub.solve(lin=1.0)
    elapsed = time.perf_counter() - t0
    sub.close()
    # the full problem at this size needs far more than 0.05 s of rounds: no answer, said so
    assert it.status is Status.TIME_LIMIT and it.x is None
    assert "time limit" in sub.last_report.fallback
    # not a timing assertion on the machine's speed: a round started after the limit would be
    # one of ~60 needed, so a limit applied per round would run them all (seconds) instead
    assert sub.last_report.rounds < 60
    assert elapsed < 60 * limit


# -- finding 4: verify= checked only after the fit ---------------------------------------------
@pytest.mark.parametrize("verify,method,error", [("nosuch", "l1-svm", UnknownComponentError),
                                                 ("highs", "l1-mpm", IncompatibleComponentsError)])
def test_verify_backend_is_checked_before_the_fit(verify, method, error):
    X, y = _data(n=40)
    calls = []
    with pytest.raises(error, match="verify"):
        fsframe.fit(X, y, method, verify=verify, callback=lambda rec, it: calls.append(rec))
    assert calls == []  # refused before any subproblem was solved


def test_verify_one_vs_rest_and_exactly_r():
    X, y = _data(n=60)
    y3 = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    res = fsframe.fit(X, y3, "l1-svm", verify="clarabel", working_set=WS)
    for c in res.certificate["per_class"]:
        assert c["verify"]["status"] == "optimal" and abs(c["verify"]["objective_gap"]) < 1e-6
        assert _left_out(c)
    res = fsframe.fit(X, y, "fsv", verify="clarabel", n_features=3, max_iter=5, working_set=WS)
    assert res.certificate["verify"]["status"] == "optimal" and abs(res.certificate["verify"]["objective_gap"]) < 1e-6
    assert res.certificate["certifies_returned"] and _left_out(res.certificate)


# -- finding 5: a certificate of a point other than the one returned -----------------------------
def test_certificate_says_when_the_returned_coefficients_are_not_the_certified_point():
    """l1-mpm with n_features=3: the re-solve on the 3 features is infeasible (MPM's bound), the
    loop returns the uncut iterate cut to 3 features and no objective; the certificate said
    "optimal" for the uncut point."""
    X, y = _data(n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, "l1-mpm", n_features=3, working_set=WS)
    assert res.objective is None
    cert = res.certificate
    assert cert["status"] == "cut" and cert["certified_status"] == "optimal"
    assert not cert["certifies_returned"] and cert["cut_distance"] > 1e-3
    assert _left_out(cert)  # the certified (uncut) point was solved on a working set
    ok = fsframe.fit(X, y, "l1-svm", n_features=3, working_set=WS)
    assert ok.certificate["certifies_returned"] and ok.certificate["status"] == "optimal"
    assert ok.certificate["cut_distance"] == 0.0 and _left_out(ok.certificate)


# -- equality with the full problem on hard data ------------------------------------------------
def _left_out(cert) -> bool:
    """The certificate's solve was on a working set that left groups out (priced, not solved)."""
    return cert["working_set"] is not None and cert["working_set"] < cert["n_groups"]


def _same(full, part, rel=1e-7, support=True):
    assert part.objective == pytest.approx(full.objective, rel=rel, abs=1e-9)
    if support:
        assert np.array_equal(full.support, part.support)
    assert full.certificate.get("working_set") is None
    cert = part.certificate
    for c in cert.get("per_class", (cert,)):
        assert c["status"] == "optimal" and c["max_violation"] <= 1e-9
        assert _left_out(c), "the comparison must be with a fit on a working set"


def test_mixed_column_scales():
    X, y = _data()
    rng = np.random.default_rng(7)
    Xs = X * np.logspace(-4, 4, X.shape[1])[rng.permutation(X.shape[1])]
    full, part = _both(Xs, y, "l1-svm")
    _same(full, part)
    assert part.objective == pytest.approx(_linprog_l1svm(Xs, y.astype(float), 1.0), rel=1e-7)


def test_duplicate_and_constant_features_same_optimum():
    X, y = _data()
    Xd = np.hstack([X, X[:, :10], np.ones((30, 5)), np.zeros((30, 5))])
    full, part = _both(Xd, y, "l1-svm")
    # duplicated features make the LP's optimum non-unique: the same value, not the same support
    _same(full, part, support=False)
    assert not part.support[310:].any()  # constant and zero features never enter


def test_n_much_larger_than_m_against_cvxpy_clarabel():
    import cvxpy as cp
    X, y = _data(m=20, n=3000, seed=2)
    full, part = _both(X, y, "l1-svm")
    _same(full, part)
    w, b = cp.Variable(3000), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b)))))
    prob.solve(solver="CLARABEL")
    assert part.objective == pytest.approx(prob.value, rel=1e-6)
    assert part.certificate["working_set"] < 3000 / 10


@pytest.mark.parametrize("C", [1e-6, 1e4])
def test_degenerate_lps(C):
    X, y = _data()
    if C > 1:
        y = np.where(X[:, 0] > 0, 1, -1)  # separable
    full, part = _both(X, y, "l1-svm", C=C)
    _same(full, part)
    if C < 1:
        assert not part.support.any()  # w = 0 is optimal


def test_kernel_groups_are_samples():
    X, y = _data(m=40, n=20)
    full, part = _both(X, y, "l1-svm", ws=WorkingSetOptions(mode=True, initial=3, batch=3), kernel="rbf")
    _same(full, part)


def test_one_vs_rest_three_classes():
    X, y = _data()
    y3 = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    full, part = _both(X, y3, "fsv", max_iter=4)
    _same(full, part, rel=1e-9)


# EM's quadratic penalty leaves no group to price (docs/working-sets.md): DCA takes its place
@pytest.mark.parametrize("method,kw", [("fsv", {}), ("l1-svm", {}),
                                       (None, {"formulation": "hinge", "surrogate": "log", "loop": "dca"})],
                         ids=["fsv", "l1-svm", "dca-log"])
def test_exactly_r_re_solves(method, kw):
    X, y = _data()
    full, part = _both(X, y, method, n_features=3, max_iter=5, **kw)
    _same(full, part)
    assert part.support.sum() == 3


@pytest.mark.parametrize("backend", ["highs", "ecos", "clarabel"])
def test_every_backend(backend):
    X, y = _data()
    full, part = _both(X, y, "l1-svm", backend=backend)
    ref = _linprog_l1svm(X, y.astype(float), 1.0)
    assert part.objective == pytest.approx(ref, rel=1e-7)
    assert full.objective == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize("method,kw", [("l1-mpm", {}), ("fs-mpm", {}), ("fs-mempm", {})])
def test_equality_rows_and_bound_searches(method, kw):
    X, y = _data(n=60 if method != "l1-mpm" else 300)
    full, part = _both(X, y, method, **kw)
    _same(full, part, rel=1e-7)


@pytest.mark.parametrize("method", ["greedy-l1-svm", "l1-twsvm", "ftsvm"])
def test_greedy_mask_spaces(method):
    X, y = _data(n=60)
    full, part = _both(X, y, method)
    _same(full, part, rel=1e-9)


def test_groups_fixed_at_zero_mid_run():
    """Reweighted L1 on ``lp`` (p = 0.5): the weight ``p t^(p-1)`` of a group at zero is infinite,
    so every group the previous solve zeroed is fixed at zero for the next (23, then 13, 10, 9
    groups left): the working set keeps those columns at bounds [0, 0] and prices the rest.
    (EM fixes groups the same way, but its quadratic penalty leaves none to price: its
    subproblems are solved in full, see test_working_set.py.)"""
    X, y = _data(m=30, n=300, seed=4)
    kw = dict(formulation="hinge", surrogate="lp", loop="reweighted-l1", p=0.5, max_iter=8)
    fixed = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, working_set=False, **kw)
        part = fsframe.fit(X, y, working_set=WS, **kw,
                           callback=lambda rec, it: fixed.append(int(np.isinf(it.weights["lin"]).sum())))
    _same(full, part)
    assert fixed[0] == 0 and fixed[1] > 0 and fixed == sorted(fixed)  # fixed mid-run, for good


def test_restricted_resolves_with_a_grown_live_model():
    """``Subproblem.restricted`` fixes groups at zero (bounds [0, 0]) that already joined the
    live HiGHS model; releasing them again must price them like any other."""
    X, y = _data()
    res = resolve("l1-svm", C=1.0)
    sub = Subproblem(res.formulation, X, y.astype(float), res.terms, HighsBackend(), working_set=WS)
    it = sub.solve(lin=1.0)
    joined = np.flatnonzero(sub.working_set.active)
    keep = np.ones(300, dtype=bool)
    keep[joined[:3]] = False  # groups inside the live model, now fixed
    re = sub.restricted(it, keep)
    back = sub.solve(lin=1.0)
    sub.close()
    ref_be = HighsBackend()
    w = np.ones(300)
    w[~keep] = np.inf
    ref_re = ref_be.solve(fsframe.problem.Subproblem(res.formulation, X, y.astype(float), res.terms, ref_be,
                                                     working_set=WorkingSetOptions(mode=False))
                          .compiled.with_weights(lin=w, sync=False), SolveOptions())
    assert re.ok and re.objective == pytest.approx(ref_re.objective, rel=1e-9)
    assert np.all(re.t[~keep] == 0)
    assert back.objective == pytest.approx(it.objective, rel=1e-9)


def test_working_set_carried_across_very_different_weights():
    X, y = _data(m=20, n=3000, seed=2)
    full, part = _both(X, y, "fsv", alpha=50.0, max_iter=6)
    _same(full, part, rel=1e-7)


def test_deterministic_bit_identical():
    X, y = _data()
    a = fsframe.fit(X, y, "fsv", working_set=WS, max_iter=5)
    b = fsframe.fit(X, y, "fsv", working_set=WS, max_iter=5)
    assert np.array_equal(a.coef, b.coef) and a.objective == b.objective and a.intercept == b.intercept
    assert a.certificate == b.certificate


# -- finding 6: options that made the pricing loop spin ------------------------------------------
@pytest.mark.parametrize("kw", [dict(batch=0), dict(batch=-1), dict(initial=-5), dict(initial=True),
                                dict(tol=float("nan")), dict(tol=-1.0), dict(max_rounds=0), dict(min_groups=-1),
                                dict(initial=5.5), dict(mode="yes"), dict(min_ratio_exp=-1.0),
                                dict(min_ratio_exp=float("inf"))])
def test_working_set_options_are_checked(kw):
    """``batch=-1`` took all violators but one each round (none when one violated: rounds spent
    until max_rounds, then a full solve); ``initial=-5`` took all groups but 5."""
    with pytest.raises(InvalidOptionError, match=next(iter(kw))):
        WorkingSetOptions(**kw)


# -- HiGHS's live model: a failure mid-path, close() and re-open ----------------------------------
def test_highs_failure_mid_path_reloads_and_close_reopens(monkeypatch):
    from fsframe.backends.base import SolveFailure

    X, y = _data()
    res = resolve("l1-svm", C=1.0)
    ref = fsframe.fit(X, y, "l1-svm", working_set=False)
    calls = {"n": 0}
    orig = HighsSession._solve_raw

    def flaky(self, data):
        calls["n"] += 1
        if calls["n"] == 3:  # the third restricted solve: columns were appended twice already
            raise SolveFailure(Status.NUMERICAL_ERROR, "injected failure")
        return orig(self, data)

    monkeypatch.setattr(HighsSession, "_solve_raw", flaky)
    sub = Subproblem(res.formulation, X, y.astype(float), res.terms, HighsBackend(), working_set=WS)
    it = sub.solve(lin=1.0)
    assert calls["n"] >= 3
    assert "numerical_error" in sub.last_report.fallback  # the full problem was solved instead
    assert it.status is Status.OPTIMAL and it.objective == pytest.approx(ref.objective, rel=1e-9)
    it2 = sub.solve(lin=1.0)  # the session reloads the (appended-to) restricted problem whole
    assert sub.last_report.used and not sub.last_report.fallback
    assert it2.objective == pytest.approx(ref.objective, rel=1e-9)
    sub.close()
    assert sub.session is None and sub._full_session is None
    it3 = sub.solve(lin=1.0)  # a closed subproblem opens a new session on the next solve
    assert it3.objective == pytest.approx(ref.objective, rel=1e-9)
    sub.close()


def test_infeasible_restricted_problem_is_reported_infeasible_not_optimal():
    """MPM's normalisation ``w'(mu_1 - mu_2) = 1`` with every feature fixed at zero: no working
    set can satisfy it, and neither can the full problem; the status must say so."""
    X, y = _data(n=300)
    res = resolve("l1-mpm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sub = Subproblem(res.formulation, X, y.astype(float), res.terms, select_backend("ecos", res.problem_class),
                         working_set=WS)
        it = sub.solve(lin=1.0)
        assert it.ok and sub.last_report.used
        re = sub.restricted(it, np.zeros(300, dtype=bool))
    sub.close()
    assert re.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert re.x is None and not re.ok


@pytest.mark.parametrize("initial", [5, 1000])  # pricing rounds; every group in the first set
def test_an_inaccurate_restricted_solve_is_never_reported_optimal(monkeypatch, initial):
    import attrs

    orig = Subproblem._solve_restricted
    monkeypatch.setattr(Subproblem, "_solve_restricted",
                        lambda self, data: attrs.evolve(orig(self, data), status=Status.OPTIMAL_INACCURATE))
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, "l1-svm", working_set=WorkingSetOptions(mode=True, initial=initial, batch=5))
    assert res.certificate["status"] == "optimal_inaccurate"
    assert res.statuses[-1] is Status.OPTIMAL_INACCURATE


# -- finding 7: a rebuilt working set forgot the groups it fixed ----------------------------------
@pytest.mark.parametrize("backend", ["clarabel", "highs"])
def test_fixed_groups_stay_in_the_working_set_for_when_they_are_released(backend):
    """The loops' ``settle`` first tries the empty support (every group fixed), then the
    support: a rebuilt (non-HiGHS) working set had dropped every fixed group, so the second
    re-solve priced the support back in, 10 groups a round (13 rounds here instead of 1)."""
    X, y = _data(m=60, n=2000, seed=0)
    res = resolve("l1-svm", C=1.0)
    sub = Subproblem(res.formulation, X, y.astype(float), res.terms, select_backend(backend, res.problem_class),
                     working_set=WorkingSetOptions(mode=True, initial=10, batch=10))
    it = sub.solve(lin=1.0)
    assert sub.last_report.rounds > 3
    zero = sub.restricted(it, np.zeros(2000, dtype=bool))
    assert zero.ok and not np.any(zero.t) and sub.last_report.size == 0
    keep = it.t > 1e-6 * it.t.max()
    re = sub.restricted(it, keep)
    assert sub.last_report.rounds == 1  # the kept groups were still in the working set
    again = sub.solve(lin=1.0)
    sub.close()
    assert re.objective == pytest.approx(it.objective, rel=1e-7)
    assert again.objective == pytest.approx(it.objective, rel=1e-7)
