"""``delta_max`` only when a fit needs it (issue 13): an absolute, feasible ``delta`` costs no
largest-bound SOCP; an infeasible one is found by the first subproblem and still raises the typed
error naming ``delta_max``; the selection is the one the up-front check gave (checked against CVXPY
with Clarabel and against the ``delta_fraction`` fit at the same ``delta``)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from conic_data import random_mpm_data

import fsframe
import fsframe_mpm as mpm
import fsframe_mpm.bound as mpm_bound
from fsframe import Status
from fsframe.errors import InfeasibleParameterError

import cvxpy as cp  # noqa: E402
pytestmark = pytest.mark.filterwarnings("ignore:MPM. the covariance:fsframe.errors.DataWarning")


@pytest.fixture
def count_bounds(monkeypatch):
    """Count the largest-bound SOCPs actually solved (an empty cache: nothing is remembered)."""
    calls = []
    real = mpm_bound._solve_bound

    def counting(*args, **kwargs):
        calls.append(args[4].name)
        return real(*args, **kwargs)

    monkeypatch.setattr(mpm_bound, "_CACHE", OrderedDict())
    monkeypatch.setattr(mpm_bound, "_solve_bound", counting)
    return calls


def cvxpy_l1_mpm(X, y, rho, delta):
    """L1-MPM (000 eqs. 12-15 with 43-45) written out in CVXPY, solved by Clarabel."""
    n, parts, ss = X.shape[1], [], 0.0
    for label in (1.0, -1.0):
        Xk = X[y == label]
        mu = Xk.mean(0)
        D = Xk - mu
        ss += float((D * D).sum())
        parts.append((mu, D / np.sqrt(len(Xk))))
    ridge = rho * ss / X.size
    (mu1, C1), (mu2, C2) = parts
    F1, F2 = (np.vstack([C, np.sqrt(ridge) * np.eye(n)]) for C in (C1, C2))
    kappa = np.sqrt(delta / (1 - delta))
    w, b = cp.Variable(n), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w)), [mu1 @ w - b >= kappa * cp.norm(F1 @ w),
                                                 b - mu2 @ w >= kappa * cp.norm(F2 @ w),
                                                 mu1 @ w - b >= 1, b - mu2 @ w >= 1])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == "optimal"
    return prob.value


@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
@pytest.mark.parametrize("method", ["l1-mpm", "l0-mpm"])
def test_feasible_delta_solves_no_largest_bound(count_bounds, method, backend):
    X, y = random_mpm_data(m=60, n=80, seed=4)
    r = fsframe.fit(X, y, method=method, delta=0.3, backend=backend)
    assert count_bounds == []
    assert "delta_max" not in r.info and r.info["delta"] == 0.3
    assert r.info["kappa"] == pytest.approx(np.sqrt(0.3 / 0.7))
    assert all(s is Status.OPTIMAL for s in r.statuses)


def test_feasible_delta_gives_the_same_fit_as_checking_first(count_bounds):
    """The lazy fit equals the ``delta_fraction`` fit at the same ``delta`` (that one computes
    ``delta_max`` first) and, for L1-MPM, CVXPY's optimum."""
    X, y = random_mpm_data(m=80, n=40, seed=2)
    dmax = mpm.largest_bound(X, y).delta
    count_bounds.clear()
    delta = 0.6 * dmax
    for method in ("l1-mpm", "l0-mpm"):
        lazy = fsframe.fit(X, y, method=method, delta=delta)
        first = fsframe.fit(X, y, method=method, delta_fraction=0.6)
        assert first.info["delta"] == pytest.approx(delta, rel=1e-12)
        assert lazy.objective == pytest.approx(first.objective, rel=1e-7)
        assert np.array_equal(lazy.support, first.support)
        assert lazy.n_iter == first.n_iter
    assert count_bounds == []  # the fraction fits reuse the bound computed above (cache); the lazy ones need none
    ref = cvxpy_l1_mpm(X, y, mpm.DEFAULT_RHO, delta)
    assert fsframe.fit(X, y, method="l1-mpm", delta=delta).objective == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
@pytest.mark.parametrize("method", ["l1-mpm", "l0-mpm"])
def test_infeasible_delta_still_names_delta_max(count_bounds, method, backend):
    X, y = random_mpm_data(m=80, n=40, seed=2)
    dmax = mpm.largest_bound(X, y, backend=backend).delta
    count_bounds.clear()
    for delta in (min(0.999, dmax + 0.02), 0.99):
        with pytest.raises(InfeasibleParameterError) as info:
            fsframe.fit(X, y, method=method, delta=delta, backend=backend)
        err = info.value
        assert (err.parameter, err.value) == ("delta", delta)
        assert err.limit == pytest.approx(dmax, rel=1e-8)
        assert f"delta_max={dmax:.4f}" in str(err) and "delta_fraction" in str(err)
    assert count_bounds == []  # the bound computed above was reused from the cache


def test_infeasible_delta_is_found_by_the_first_subproblem(count_bounds, monkeypatch):
    """The bound is solved after the first subproblem failed, and only then."""
    X, y = random_mpm_data(m=80, n=40, seed=2)
    order = []
    real = fsframe.problem.Subproblem.solve

    def solve(self, **kw):
        it = real(self, **kw)
        order.append(("subproblem", it.status))
        return it

    monkeypatch.setattr(fsframe.problem.Subproblem, "solve", solve)
    with pytest.raises(InfeasibleParameterError, match="delta_max="):
        fsframe.fit(X, y, method="l0-mpm", delta=0.95)
    assert order == [("subproblem", Status.INFEASIBLE)] and count_bounds == ["ecos"]


def test_feasible_delta_with_solver_trouble_keeps_the_solver_error(count_bounds, monkeypatch):
    """A first subproblem that fails for another reason at a feasible delta is solver trouble: the
    bound is computed to tell the two apart, and the SolverFailedError stands."""
    X, y = random_mpm_data(m=80, n=40, seed=2)
    real = fsframe.problem.Subproblem.solve

    def failing(self, **kw):
        it = real(self, **kw)
        res = fsframe.backends.base.SolveResult(Status.ERROR, None, None, it.result.backend, 0.0, message="lie")
        return fsframe.problem.Iterate(res.status, None, None, None, None, None, None, 0.0, res)

    monkeypatch.setattr(fsframe.problem.Subproblem, "solve", failing)
    with pytest.raises(fsframe.errors.SolverFailedError, match="status error"):
        fsframe.fit(X, y, method="l1-mpm", delta=0.2)
    assert count_bounds == ["ecos"]
