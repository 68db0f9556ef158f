"""HiGHS's restart after a working set appends columns (``append_restart``, fsframe/backends/highs.py):
a large batch is solved by a cold dual simplex, a small one by the primal simplex from the kept
basis; every choice reaches the full LP's optimum (checked against CVXPY on the same LP)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.backends import highs
from fsframe.backends.highs import COLD_APPEND_FRACTION, HighsBackend, HighsSession
from fsframe.errors import InvalidOptionError
from fsframe.method import resolve
from fsframe.problem import Subproblem
from fsframe.working_set import WorkingSetOptions

pytestmark = pytest.mark.filterwarnings("ignore:n_features=.*much larger:fsframe.errors.DataWarning")


def _data(m=50, n=600, seed=7):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    w = np.zeros(n)
    w[:5] = rng.standard_normal(5)
    y = np.where(X @ w + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _cvxpy_l1svm(X, y, C=1.0):
    import cvxpy as cp

    m, n = X.shape
    u, v = cp.Variable(n, nonneg=True), cp.Variable(n, nonneg=True)
    b, xi = cp.Variable(), cp.Variable(m, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum(u) + cp.sum(v) + C * cp.sum(xi)),
                      [cp.multiply(y, X @ (u - v) + b) + xi >= 1])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(prob.value)


@pytest.fixture
def appends(monkeypatch):
    """Every HiGHS session's record of its appends, and per run: whether it was to start cold,
    whether the basis was dropped (``clearSolver``) and the simplex strategy left set after it."""
    sessions, runs = [], []
    orig_init, orig_run = HighsSession.__init__, HighsSession._solve_raw

    class Recorder:  # the live highspy model, with its clearSolver calls counted
        def __init__(self, h):
            self._h, self.cleared = h, 0

        def clearSolver(self):
            self.cleared += 1
            return self._h.clearSolver()

        def __getattr__(self, name):
            return getattr(self._h, name)

    def init(self, *a, **k):
        orig_init(self, *a, **k)
        self.h = Recorder(self.h)
        sessions.append(self)

    def run(self, data):
        cold, before = self._cold_next, self.h.cleared
        out = orig_run(self, data)
        runs.append((cold, self.h.cleared > before, self.h.getOptionValue("simplex_strategy")[1]))
        return out

    monkeypatch.setattr(HighsSession, "__init__", init)
    monkeypatch.setattr(HighsSession, "_solve_raw", run)
    return sessions, runs


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("restart", ["auto", "warm", "cold"])
def test_every_restart_reaches_the_full_lp_optimum(appends, restart, sparse):
    X, y = _data()
    Xin = sp.csr_matrix(X) if sparse else X
    ws = WorkingSetOptions(mode=True, initial=30, batch=40)
    res = fsframe.fit(Xin, y, "l1-svm", working_set=ws, backend_options={"append_restart": restart})
    sessions, runs = appends
    kinds = [k for s in sessions for (_, _, k) in s.appends]
    assert res.certificate["rounds"] >= 3 and len(kinds) >= 2
    if restart == "cold":
        assert set(kinds) == {"cold"}
    elif restart == "warm":
        assert set(kinds) == {"warm"}
    # a cold run starts from no basis and leaves the primal simplex set for the next warm re-solve
    assert [c for c, _, _ in runs[1:]] == [k == "cold" for k in kinds]
    assert [dropped for _, dropped, _ in runs] == [c for c, _, _ in runs]
    assert all(strategy == 4 for _, _, strategy in runs[1:])
    full = fsframe.fit(X, y, "l1-svm", working_set=False)
    ref = _cvxpy_l1svm(X, y)
    assert res.objective == pytest.approx(ref, rel=1e-7)
    assert res.objective == pytest.approx(full.objective, rel=1e-9)
    np.testing.assert_array_equal(res.support, full.support)
    cert = res.certificate
    assert cert["status"] == "optimal" and cert["max_violation"] == 0.0 and abs(cert["gap"]) < 1e-8


@pytest.mark.parametrize("min_rows", [10, 41])
def test_auto_restarts_cold_exactly_for_large_batches_on_many_rows(appends, monkeypatch, min_rows):
    monkeypatch.setattr(highs, "COLD_MIN_ROWS", min_rows)  # 500 in use: too large for a fast test
    X, y = _data(m=40, n=800, seed=3)
    res = resolve("l1-svm", C=1.0)
    # a small start and a large batch first, then the pricing's few violators
    sub = Subproblem(res.formulation, X, y, res.terms, HighsBackend(),
                     working_set=WorkingSetOptions(mode=True, initial=10, batch=60))
    it = sub.solve(lin=np.ones(800))
    sessions, runs = appends
    (session,) = sessions
    assert it.ok and len(session.appends) >= 2
    for n0, added, kind in session.appends:
        assert kind == ("cold" if added >= COLD_APPEND_FRACTION * n0 and 40 >= min_rows else "warm")
    if min_rows <= 40:
        assert {k for _, _, k in session.appends} == {"cold", "warm"}, "the case must exercise both restarts"
    assert [dropped for _, dropped, _ in runs[1:]] == [k == "cold" for _, _, k in session.appends]
    sub.close()
    full = fsframe.fit(X, y, "l1-svm", working_set=False)
    assert it.objective == pytest.approx(full.objective, rel=1e-9)


def test_a_user_simplex_strategy_is_never_overridden(appends):
    X, y = _data()
    ws = WorkingSetOptions(mode=True, initial=30, batch=200)
    res = fsframe.fit(X, y, "l1-svm", working_set=ws, backend_options={"simplex_strategy": 1})
    sessions, runs = appends
    assert all(k == "warm" for s in sessions for (_, _, k) in s.appends)
    assert all(strategy == 1 for _, _, strategy in runs)
    full = fsframe.fit(X, y, "l1-svm", working_set=False)
    assert res.objective == pytest.approx(full.objective, rel=1e-9)


@pytest.mark.parametrize("bad", ["hot", 1, None])
def test_append_restart_is_checked_up_front(bad):
    X, y = _data(m=20, n=50)
    with pytest.raises(InvalidOptionError, match="append_restart"):
        fsframe.fit(X, y, "l1-svm", backend_options={"append_restart": bad})


def _grown_lp(rows=30, n0=10, n=40, seed=0):
    """``min c'x  s.t.  G x <= 1, 0 <= x <= 1`` on ``n0`` columns, and the same LP with ``n - n0``
    columns appended (``appended_to``): a working set's round as HiGHS receives it."""
    from fsframe.backends import ProblemData

    rng = np.random.default_rng(seed)
    G, c = rng.standard_normal((rows, n)), -rng.random(n)

    def lp(k, appended_to=None):
        return ProblemData(c=c[:k], A=sp.csr_matrix((0, k)), b=np.zeros(0), G=sp.csr_matrix(G[:, :k]),
                           h=np.ones(rows), l=rows, lb=np.zeros(k), ub=np.ones(k), appended_to=appended_to)

    small = lp(n0)
    return small, lp(n, appended_to=small)


def test_a_failed_append_plans_no_cold_restart_for_the_reloaded_model(appends, monkeypatch):
    """HiGHS refusing the appended columns fails that solve; the session then reloads the model,
    and that reload is solved as a new model (the solver's own strategy, its basis not dropped
    again): the cold restart planned for the refused batch, and the primal simplex kept for the
    old model's basis, do not outlive it."""
    import highspy

    monkeypatch.setattr(highs, "COLD_MIN_ROWS", 10)
    small, grown = _grown_lp()
    session = HighsBackend().open(small)
    assert session.solve(small).status.value == "optimal"
    sessions, runs = appends
    real = session.h._h

    class Refusing:  # HiGHS refusing the appended columns, once
        def addCols(self, *a):
            return highspy.HighsStatus.kError

        def __getattr__(self, name):
            return getattr(real, name)

    session.h._h = Refusing()
    before = list(session.appends)
    res = session.solve(grown)
    assert res.status.value == "error" and "rejected the appended columns" in res.message
    # the refused batch is neither planned (a cold restart set before addCols) nor recorded
    assert session._cold_next is False and session.appends == before
    session.h._h = real
    fresh = HighsBackend().solve(grown)
    runs.clear()
    res = session.solve(grown)
    assert res.status.value == "optimal" and res.objective == pytest.approx(fresh.objective, rel=1e-12)
    ((cold, dropped, strategy),) = runs
    assert not cold and not dropped and strategy == 1  # HiGHS's own (dual) simplex on the new model


def test_a_reloaded_model_drops_the_restart_planned_for_the_old_one(appends, monkeypatch):
    """A reload (``_load``) starts a new model: a cold restart still planned for the old model's
    appended columns is dropped, and the solver's own simplex strategy is restored (the primal
    simplex continued the old model's basis). Guards ``_load``'s reset apart from the ordering
    in ``_append`` (a failed append plans nothing in the first place)."""
    monkeypatch.setattr(highs, "COLD_MIN_ROWS", 10)
    small, grown = _grown_lp()
    session = HighsBackend().open(small)
    session.solve(small)
    assert session.solve(grown).status.value == "optimal" and session.appends  # an append: strategy 4 left set
    sessions, runs = appends
    assert session.h.getOptionValue("simplex_strategy")[1] == 4
    fresh = HighsBackend().solve(grown)
    session._cold_next = True  # a restart planned for the old model
    session._loaded = None  # the next solve reloads (as after a failure)
    runs.clear()
    res = session.solve(grown)
    assert res.status.value == "optimal" and res.objective == pytest.approx(fresh.objective, rel=1e-12)
    ((cold, dropped, strategy),) = runs
    assert not cold and not dropped and strategy == 1
