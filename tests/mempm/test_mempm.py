"""FS-MEMPM and FS-MPM (paper 001): the MEMPM formulation (eq. 6) against CVXPY (Clarabel), the
bound search (Algorithm 1) against an independent largest-feasible-bound SOCP, the criteria's
ordering, the infeasible start, and that a search never rebuilds the Pyomo model."""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import fsframe
from fsframe.errors import IncompatibleComponentsError, InfeasibleParameterError, InvalidOptionError

import cvxpy as cp  # noqa: E402  (the test extra: a missing CVXPY is a broken install, not a skip)

# the shared data folder as tests/conftest.py finds it ($FSFRAME_SHARED_DATA, else shared/data beside the checkout)
SHARED = os.environ.get("FSFRAME_SHARED_DATA") or Path(__file__).resolve().parents[3] / "shared" / "data"
SONAR = Path(SHARED) / "sonar.csv"
RHO = 0.01


def _kappa(d):
    return math.sqrt(d / (1 - d))


def _delta(k):
    return k * k / (1 + k * k)


@pytest.fixture(scope="module")
def data():
    """A seeded 60 x 8 problem, overlapping classes of different spreads."""
    rng = np.random.default_rng(3)
    m, n = 60, 8
    y = np.where(np.arange(m) < 25, 1.0, -1.0)
    X = rng.standard_normal((m, n)) * np.where(y[:, None] > 0, 0.7, 1.4)
    X[:, :3] += 0.9 * y[:, None]
    return X, y


def _moments(X, y):
    """Class means and Cholesky factors of ``Sigma_k + ridge I`` computed directly (not by the plugin):
    the ML covariance, the ridge ``rho`` times the mean within-class feature variance."""
    m, n = X.shape
    mus, covs, ss = [], [], 0.0
    for lab in (1.0, -1.0):
        Xk = X[y == lab]
        mu = Xk.mean(0)
        Xc = Xk - mu
        ss += float(np.sum(Xc ** 2))
        mus.append(mu)
        covs.append(Xc.T @ Xc / Xk.shape[0])
    ridge = RHO * ss / (m * n)
    Ls = [np.linalg.cholesky(S + ridge * np.eye(n)) for S in covs]
    return mus, Ls, covs, ridge


def cvxpy_mempm(X, y, a, b):
    """001 eq. 6 in CVXPY: min ||w||_1 with the two bound constraints and the margins."""
    (mu1, mu2), (L1, L2), _, _ = _moments(X, y)
    w, c = cp.Variable(X.shape[1]), cp.Variable()
    cons = [w @ mu1 - c >= _kappa(a) * cp.norm(L1.T @ w), c - w @ mu2 >= _kappa(b) * cp.norm(L2.T @ w),
            w @ mu1 - c >= 1, c - w @ mu2 >= 1]
    prob = cp.Problem(cp.Minimize(cp.norm1(w)), cons)
    prob.solve(solver=cp.CLARABEL)
    return prob.value, w.value, c.value


def cvxpy_largest_delta_neg(X, y, a):
    """The largest feasible delta_neg for delta_pos = a: ``1 / min ||L_2'w||`` over
    ``w'(mu_1 - mu_2) - kappa(a) ||L_1'w|| >= 1``."""
    (mu1, mu2), (L1, L2), _, _ = _moments(X, y)
    w = cp.Variable(X.shape[1])
    prob = cp.Problem(cp.Minimize(cp.norm(L2.T @ w)), [w @ (mu1 - mu2) - _kappa(a) * cp.norm(L1.T @ w) >= 1])
    prob.solve(solver=cp.CLARABEL)
    if prob.status in ("infeasible", "infeasible_inaccurate"):
        return 0.0
    return _delta(1.0 / prob.value)


def fit(X, y, method=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method=method, **kw)


# ------------------------------------------------------------------------------ the formulation
def _sonar():
    if not SONAR.exists():
        pytest.skip("shared data absent")
    ds = fsframe.load_dataset(SONAR, label_column=-1)
    X = np.asarray(ds.X, dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(np.asarray(ds.y) == ds.classes[1], 1.0, -1.0)


@pytest.mark.parametrize("source", ["random", "sonar"])
def test_mempm_subproblem_equals_cvxpy(data, source):
    X, y = data if source == "random" else _sonar()
    a, b = (0.5, 0.3) if source == "random" else (0.55, 0.4)
    res = fit(X, y, formulation="mempm", surrogate="l1", loop="single", delta_pos=a, delta_neg=b)
    opt, w, c = cvxpy_mempm(X, y, a, b)
    assert res.objective == pytest.approx(opt, rel=1e-5)
    assert float(np.sum(np.abs(res.coef))) == pytest.approx(opt, rel=1e-5)
    assert (res.info["delta_pos"], res.info["delta_neg"]) == (a, b)


def test_equal_bounds_are_the_mpm(data):
    X, y = data
    mempm = fit(X, y, formulation="mempm", surrogate="l1", loop="single", delta_pos=0.4, delta_neg=0.4)
    equal = fit(X, y, formulation="mpm-equal", surrogate="l1", loop="single", delta=0.4)
    mpm = fit(X, y, method="l1-mpm", delta=0.4)
    for r in (mempm, equal):
        assert r.objective == pytest.approx(mpm.objective, rel=1e-6)
        np.testing.assert_allclose(r.coef, mpm.coef, atol=1e-5 * np.max(np.abs(mpm.coef)))


def test_set_bounds_restates_without_rebuilding(data):
    """Restating the compiled problem for new bounds in numpy equals a fresh build at them, and
    the Pyomo model's kappa Params follow."""
    from fsframe.problem import Subproblem
    from fsframe.plugins import get_registry

    X, y = data
    MEMPM = get_registry().get("formulation", "mempm")
    be = fsframe.select_backend("clarabel", fsframe.ProblemClass.SOCP)
    sub = Subproblem(MEMPM(delta_pos=0.2, delta_neg=0.2), X, y, frozenset({"lin"}), be)
    model = sub.built.model
    sub.set_bounds(delta_pos=0.5, delta_neg=0.3)
    it = sub.solve(lin=np.ones(X.shape[1]))
    fresh = Subproblem(MEMPM(delta_pos=0.5, delta_neg=0.3), X, y, frozenset({"lin"}), be)
    ref = fresh.solve(lin=np.ones(X.shape[1]))
    assert sub.built.model is model
    assert it.objective == pytest.approx(ref.objective, rel=1e-7)
    assert model.kappa[0].value == pytest.approx(_kappa(0.5)) and model.kappa[1].value == pytest.approx(_kappa(0.3))
    A1, A2 = sub.compiled.base.A, fresh.compiled.base.A
    assert abs(A1 - A2).max() < 1e-12 and (sub.compiled.base.G != fresh.compiled.base.G).nnz == 0


def test_infeasible_pair_names_the_limit(data):
    X, y = data
    top = cvxpy_largest_delta_neg(X, y, 0.5)
    with pytest.raises(InfeasibleParameterError) as exc:
        fit(X, y, formulation="mempm", surrogate="l1", loop="single", delta_pos=0.5, delta_neg=min(0.99, top + 0.02))
    assert exc.value.parameter == "delta_neg"
    assert exc.value.limit == pytest.approx(top, abs=1e-5)
    assert f"{top:.4f}" in str(exc.value)


# ------------------------------------------------------------------------------ the search
@pytest.fixture(scope="module")
def searched(data):
    X, y = data
    return {c: fit(X, y, method="fs-mempm", criterion=c, delta_pos_step=0.1) for c in (1, 2, "log")}


def test_bisection_finds_the_boundary_within_eps(data, searched):
    X, y = data
    res = searched[1]
    eps = res.loop.eps
    per_alpha: dict = {}
    for rec in res.history:
        p = rec.params
        per_alpha.setdefault(round(p["delta_pos"], 12), []).append(p)
    checked = 0
    for a, visits in per_alpha.items():
        feas = [v["delta_neg"] for v in visits if v["feasible"]]
        if not feas:
            continue
        top = cvxpy_largest_delta_neg(X, y, a)
        found = max(feas)
        assert found <= top + 1e-6, (a, found, top)
        assert top - found <= eps + 1e-6, (a, found, top)
        infeas = [v["delta_neg"] for v in visits if not v["feasible"]]
        assert all(q > top - 1e-6 for q in infeas), (a, infeas, top)
        checked += 1
    assert checked >= 3


def test_history_and_info(data, searched):
    res = searched[2]
    assert res.n_iter == len(res.history) and res.info["n_socps"] >= res.n_iter
    assert res.info["n_feasible"] + res.info["n_infeasible"] == res.n_iter
    assert [r.k for r in res.history] == list(range(res.n_iter))
    for rec in res.history:
        assert set(rec.params) >= {"delta_pos", "delta_neg", "feasible", "bound"}
        assert rec.params["bound"] == pytest.approx(0.5 * rec.params["delta_pos"] + 0.5 * rec.params["delta_neg"])
        assert (rec.n_nonzero is not None) == rec.params["feasible"]
    # the chosen point is the best score among the feasible records (criterion 2: bound / NSF)
    feas = [r for r in res.history if r.params["feasible"]]
    best = max(r.params["bound"] / r.n_nonzero for r in feas)
    assert res.info["score"] == pytest.approx(best)
    chosen = res.history[res.info["chosen_socp"]]
    assert (res.info["delta_pos"], res.info["delta_neg"]) == (chosen.params["delta_pos"], chosen.params["delta_neg"])
    assert res.n_selected <= chosen.n_nonzero
    # the step grid of Algorithm 1
    alphas = sorted({round(r.params["delta_pos"], 9) for r in res.history})
    np.testing.assert_allclose(np.diff(alphas), 0.1, atol=1e-9)
    assert alphas[0] == pytest.approx(0.05)


def test_returned_model_satisfies_eq6_at_the_chosen_bounds(data, searched):
    X, y = data
    (mu1, mu2), (L1, L2), _, _ = _moments(X, y)
    for res in searched.values():
        w, b = np.asarray(res.coef), -float(res.intercept)
        a, c = res.info["delta_pos"], res.info["delta_neg"]
        tol = 1e-6 * max(1.0, float(np.abs(w).sum()))
        assert w @ mu1 - b >= _kappa(a) * np.linalg.norm(L1.T @ w) - tol
        assert b - w @ mu2 >= _kappa(c) * np.linalg.norm(L2.T @ w) - tol
        assert w @ mu1 - b >= 1 - tol and b - w @ mu2 >= 1 - tol
        assert res.objective == pytest.approx(float(np.abs(w).sum()), rel=1e-9)


def test_criterion_2_never_selects_more_than_criterion_1_and_t_lies_between(searched):
    nsf = {c: r.history[r.info["chosen_socp"]].n_nonzero for c, r in searched.items()}
    assert nsf[2] <= nsf["log"] <= nsf[1]
    assert nsf[2] < nsf[1]
    assert searched[1].info["bound"] >= searched["log"].info["bound"] >= searched[2].info["bound"]
    # criterion 1 is the largest theta*alpha + (1-theta)*beta visited
    assert searched[1].info["bound"] == pytest.approx(max(r.params["bound"] for r in searched[1].history
                                                          if r.params["feasible"]))



def test_theta_weighs_the_first_bound(data):
    """001 eq. 5: ``bound = theta alpha + (1 - theta) beta``. At theta = 0.5 the two weights are
    equal, so a swap of theta and 1 - theta is invisible; at theta = 0.2 every record, the choice
    (criterion 1: the largest bound visited) and the reported bound follow the formula."""
    X, y = data
    res = fit(X, y, method="fs-mempm", criterion=1, theta=0.2, delta_pos_step=0.1)
    feas = [r for r in res.history if r.params["feasible"]]
    assert len({(r.params["delta_pos"], r.params["delta_neg"]) for r in feas}) >= 10
    for rec in res.history:
        p = rec.params
        assert p["bound"] == pytest.approx(0.2 * p["delta_pos"] + 0.8 * p["delta_neg"], rel=1e-12)
    best = max(feas, key=lambda r: 0.2 * r.params["delta_pos"] + 0.8 * r.params["delta_neg"])
    assert res.info["chosen_socp"] == best.k
    assert res.info["bound"] == pytest.approx(0.2 * res.info["delta_pos"] + 0.8 * res.info["delta_neg"], rel=1e-12)
    # the weight matters here: the other weighting would choose another point
    other = max(feas, key=lambda r: 0.8 * r.params["delta_pos"] + 0.2 * r.params["delta_neg"])
    assert other.k != best.k


def test_ties_on_score_and_bound_go_to_fewer_features(data):
    """With theta = 1 the bound is delta_pos alone, so under criterion 1 every feasible point of the
    last step's bisection over delta_neg ties on score and bound; they differ in their feature
    counts (4 at the smallest delta_neg, 7 above), and the search keeps the fewest (001 §3.2)."""
    X, y = data
    res = fit(X, y, method="fs-mempm", criterion=1, theta=1.0, delta_pos_step=0.2)
    feas = [r for r in res.history if r.params["feasible"]]
    top = max(r.params["score"] for r in feas)
    tied = [r for r in feas if r.params["score"] == top]
    assert len({r.params["bound"] for r in tied}) == 1
    counts = sorted({r.n_nonzero for r in tied})
    assert len(counts) >= 2, f"the instance must tie points with different feature counts, got {counts}"
    chosen = res.history[res.info["chosen_socp"]]
    assert chosen in tied and chosen.n_nonzero == counts[0]
    assert res.n_selected <= counts[0]

def test_fs_mpm_one_bound(data):
    X, y = data
    r1 = fit(X, y, method="fs-mpm", criterion=1)
    lim = r1.info["delta_max"]
    assert lim - r1.loop.eps - 1e-6 <= r1.info["delta"] < lim
    r2 = fit(X, y, method="fs-mpm", criterion=2)
    assert r2.history[r2.info["chosen_socp"]].n_nonzero <= r1.history[r1.info["chosen_socp"]].n_nonzero
    assert all(rec.params["feasible"] == (rec.params["delta"] < lim) for rec in r1.history
               if abs(rec.params["delta"] - lim) > 1e-6)


def test_infeasible_start_states_the_largest_bound(data):
    X, y = data
    (mu1, mu2), (L1, _), _, _ = _moments(X, y)
    d = mu1 - mu2
    z = np.linalg.solve(L1, d)
    lim = _delta(float(np.linalg.norm(z)))  # sqrt(d' S_1^-1 d): the largest delta_pos as delta_neg -> 0
    with pytest.raises(InfeasibleParameterError) as exc:
        fit(X, y, method="fs-mempm", delta_pos0=min(0.999, lim + 0.01))
    assert exc.value.limit == pytest.approx(lim, rel=1e-6)
    assert f"{lim:.4f}" in str(exc.value)
    r = fit(X, y, method="fs-mpm", criterion=1)
    with pytest.raises(InfeasibleParameterError) as exc:
        fit(X, y, method="fs-mpm", delta_pos0=min(0.999, r.info["delta_max"] + 0.01))
    assert exc.value.limit == pytest.approx(r.info["delta_max"])


def test_search_builds_and_compiles_once(data, monkeypatch):
    import fsframe.problem as problem
    X, y = data
    calls = []
    real = problem.compile_model
    monkeypatch.setattr(problem, "compile_model", lambda *a, **k: calls.append(1) or real(*a, **k))
    res = fit(X, y, method="fs-mempm", delta_pos_step=0.2)
    assert len(calls) == 1 and res.n_iter > 10


def test_same_seed_same_result_and_input_untouched(data):
    X, y = data
    X0 = X.copy()
    a = fit(X, y, method="fs-mempm", delta_pos_step=0.2)
    b = fit(X, y, method="fs-mempm", delta_pos_step=0.2)
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(X, X0)


def test_refusals(data):
    X, y = data
    with pytest.raises(IncompatibleComponentsError, match="bound parameters"):
        fsframe.fit(X, y, formulation="hinge", surrogate="l1", loop="bound-search")
    with pytest.raises(InvalidOptionError, match="n_features"):
        fit(X, y, method="fs-mempm", n_features=2)
    with pytest.raises(InvalidOptionError, match="criterion"):
        fit(X, y, method="fs-mempm", criterion=3)
    with pytest.raises(InvalidOptionError):
        fit(X, y, method="fs-mempm", eps=0.0)


def test_callable_t_and_kit(data):
    X, y = data
    r = fit(X, y, method="fs-mempm", criterion=np.sqrt, delta_pos_step=0.2)
    chosen = r.history[r.info["chosen_socp"]]
    t = min(max(math.sqrt(chosen.n_nonzero), 1.0), chosen.n_nonzero)
    assert r.info["score"] == pytest.approx(chosen.params["bound"] / t)
