"""The re-solve on the selected features (:meth:`fsframe.dense_em.DenseHingeSubproblem.restricted`)
from the last EM step's multipliers held to what the smaller dual can take
(:func:`fsframe.dense_em._held_start`):

* the held start is feasible (box and equality), has at most ``hold`` free multipliers, is the
  input itself when that already has no more, and leaves its input unchanged;
* the re-solve's model against CVXPY's solve of the same ``r``-column problem and against the
  re-solve from the plain warm start (the Python pivots, the free set shrunk by
  ``box_qp._regularize``), on generated instances and on Sonar (skipped without the shared data),
  with the precondition checked (the warm start has more free multipliers than the dual holds);
* the re-solve runs no Python shrinking (counted) and no more pivots than a cold start;
* a start planted wrong (the equality broken, a multiplier out of its box) is refused before any
  pivot: the cold start's answer and pivots, no failed attempt in the message.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe.method
from fsframe import dense_em
from fsframe.backends import box_qp
from fsframe.dense_em import DenseHingeSubproblem, _held_start, run_dense_em
from test_dense_em import _instance


def _feasible_point(seed, m=40, C=1.0):
    """A point of the hinge dual's feasible set with many free multipliers: the negative class's
    multipliers a permutation of the positive class's (``y' lam = 0`` exactly), some at a bound."""
    rng = np.random.default_rng(seed)
    half = rng.uniform(0.0, C, size=m // 2)
    half[rng.choice(m // 2, m // 6, replace=False)] = rng.choice([0.0, C], size=m // 6)
    y = np.repeat([1.0, -1.0], m // 2)
    lam = np.concatenate([half, rng.permutation(half)])
    perm = rng.permutation(m)
    return lam[perm], y[perm]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("hold", [1, 3, 6])
def test_the_held_start_is_feasible_with_at_most_hold_free(seed, hold):
    C = (1.0, 0.3, 7.0)[seed % 3]
    lam, y = _feasible_point(seed, C=C)
    before = lam.copy()
    n_free = int(np.count_nonzero((lam > 0) & (lam < C)))
    assert n_free > hold  # the case the helper is for
    out = _held_start(lam, y, C, hold)
    np.testing.assert_array_equal(lam, before)  # the input unchanged
    assert out is not lam
    assert np.all((out >= 0.0) & (out <= C))
    assert abs(float(y @ out)) <= 1e-12 * max(1.0, C)
    assert int(np.count_nonzero((out > 0) & (out < C))) <= hold
    # a multiplier not free before is where it was; a free one moved off only to make room
    at_bound = (lam == 0.0) | (lam == C)
    np.testing.assert_array_equal(out[at_bound], lam[at_bound])


def test_the_held_start_is_the_input_when_it_has_no_more_free():
    lam, y = _feasible_point(3)
    n_free = int(np.count_nonzero((lam > 0) & (lam < 1.0)))
    assert _held_start(lam, y, 1.0, n_free) is lam


def test_the_held_start_sends_the_free_multipliers_nearest_a_bound_to_it():
    """By hand (C = 1, hold 3): the four free multipliers nearest a bound (0.02, 0.95, 0.1, 0.3 at
    index 3 before the tie at index 6) go to it, and the equality's residual (0.6) is taken up by
    the first still free in the same order (index 6: 0.3 -> 0.9). Planted: the farthest sent to a
    bound, or the residual spread from the other end, gives another point."""
    lam = np.array([0.1, 0.5, 0.95, 0.3, 0.02, 0.6, 0.3])
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0])
    out = _held_start(lam, y, 1.0, 3)
    np.testing.assert_allclose(out, [0.0, 0.5, 1.0, 0.0, 0.0, 0.6, 0.9], rtol=0, atol=1e-15)
    assert abs(float(y @ out)) <= 1e-15


def test_the_held_start_is_the_input_when_the_residual_cannot_be_taken_up():
    """Three +1 multipliers at 0.6 and four -1 at 0.45, one held free: the six sent to a bound leave
    a residual the one still free cannot take within its box, so the input itself is returned
    (planted: the feasibility check removed, an infeasible start with y'lam = 2 returned)."""
    lam = np.array([0.6, 0.6, 0.6, 0.45, 0.45, 0.45, 0.45])
    y = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0])
    assert _held_start(lam, y, 1.0, 1) is lam


def _captured_restricted(X, y_pm, r, monkeypatch):
    """Run ``em-l0`` with ``n_features=r`` on :class:`DenseHingeSubproblem` and capture its re-solve
    on the selected features: ``(sub, warm, q, keep, iterate)``, ``warm`` the multipliers it started
    from before :func:`_held_start`."""
    got = {}
    orig = DenseHingeSubproblem.restricted

    def restricted(self, it, keep, **kw):
        got.update(sub=self, warm=self._warm.copy(), q=np.array(it.weights["quad"], dtype=float),
                   keep=np.asarray(keep, dtype=bool).copy())
        got["it"] = orig(self, it, keep, **kw)
        return got["it"]

    monkeypatch.setattr(DenseHingeSubproblem, "restricted", restricted)
    res = fsframe.method.resolve("em-l0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_dense_em(res.loop, res.surrogate, X, y_pm, res.formulation.C, n_features=r)
    monkeypatch.setattr(DenseHingeSubproblem, "restricted", orig)
    return got["sub"], got["warm"], got["q"], got["keep"], got["it"]


def _against_independent_solves(sub, warm, q, keep, it):
    """The re-solve's model against CVXPY (Clarabel) on the ``r`` kept columns and against the
    plain warm start's re-solve by the Python pivots (``box_qp._regularize`` shrinking its free
    set); the precondition: that start has more free multipliers than the dual holds."""
    import cvxpy as cp

    C, X, y = sub.C, sub.X, sub.y
    qk = q[keep]
    assert int(np.count_nonzero((warm > 0) & (warm < C))) > int(keep.sum()) + 1
    assert it.ok and np.all(np.asarray(it.coef)[~keep] == 0.0)
    w, b = cp.Variable(int(keep.sum())), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, X[:, keep] @ w + b)))
    prob = cp.Problem(cp.Minimize(C * hinge + cp.sum(cp.multiply(qk, w ** 2))))
    prob.solve(solver=cp.CLARABEL)
    np.testing.assert_allclose(np.asarray(it.coef)[keep], w.value, atol=1e-6)
    assert abs(it.objective - prob.value) <= 1e-6 * max(1.0, prob.value)
    assert it.objective <= prob.value + 1e-9 * max(1.0, prob.value)  # certified: no worse than CVXPY's
    # the same dual from the plain warm start, in Python: the free set shrunk first, other pivots
    s = 1.0 / np.sqrt(2.0 * qk)
    F = (y[:, None] * X[:, keep]) * s
    m = y.size
    plain = box_qp.solve_box_qp(F, -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), np.full(m, C),
                                start=warm, compiled=False)
    assert plain.status == "optimal"
    w_plain = s * (F.T @ plain.lam)
    np.testing.assert_allclose(np.asarray(it.coef)[keep], w_plain, rtol=0,
                               atol=1e-10 * max(1.0, float(np.abs(w_plain).max())))
    assert abs(float(it.intercept[0]) - float(plain.nu[0])) <= 1e-9 * max(1.0, abs(float(plain.nu[0])))


@pytest.mark.parametrize("seed", [0, 3, 8, 11])
def test_the_re_solve_against_cvxpy_and_the_plain_warm_start(seed, monkeypatch):
    X, y = _instance(seed)
    _against_independent_solves(*_captured_restricted(X, np.where(y > 0, 1.0, -1.0), 2, monkeypatch))


def _count_shrinking(monkeypatch):
    calls = []
    orig = box_qp._regularize

    def counted(st, tol):
        calls.append(int(st.free.sum()))
        return orig(st, tol)

    monkeypatch.setattr(box_qp, "_regularize", counted)
    return calls


def _cold_pivots(sub, q):
    sub._warm = None
    return int(sub.solve(quad=q).result.iterations)


def _assert_no_shrinking(sub, warm, q, keep, monkeypatch):
    """The re-solve from ``warm`` again, counting the Python shrinking: none, the first attempt
    certified, no more pivots than a cold start."""
    assert int(np.count_nonzero((warm > 0) & (warm < sub.C))) > int(keep.sum()) + 1
    calls = _count_shrinking(monkeypatch)
    sub._warm = warm.copy()
    it = sub.restricted(_Weights(q), keep)
    assert it.ok and calls == []
    assert it.result.message == "dense hinge dual: optimal"  # the first attempt, from the held start
    qk = q.copy()
    qk[~keep] = np.inf
    assert it.result.iterations <= _cold_pivots(sub, qk)


@pytest.mark.parametrize("seed", [0, 4, 9])
def test_the_re_solve_runs_no_python_shrinking(seed, monkeypatch):
    X, y = _instance(seed)
    sub, warm, q, keep, _ = _captured_restricted(X, np.where(y > 0, 1.0, -1.0), 2, monkeypatch)
    _assert_no_shrinking(sub, warm, q, keep, monkeypatch)


class _Weights:
    """What :meth:`DenseHingeSubproblem.restricted` reads of an iterate: its weights."""

    def __init__(self, q):
        self.weights = {"quad": q}


@pytest.mark.parametrize("plant", ["equality", "box"])
def test_a_start_planted_wrong_is_refused_before_any_pivot(plant, monkeypatch):
    X, y = _instance(8)
    sub, warm, q, keep, ref = _captured_restricted(X, np.where(y > 0, 1.0, -1.0), 2, monkeypatch)

    def wrong(lam, y_, C, hold):
        out = _held_start(lam, y_, C, hold).copy()  # the module's own, not the patch
        i = int(np.flatnonzero((out > 0) & (out < C))[0])
        out[i] += 0.5 * C if plant == "equality" else -2.0 * C  # clipped to 0: the equality broken too
        return out

    monkeypatch.setattr(dense_em, "_held_start", wrong)
    sub._warm = warm.copy()
    it = sub.restricted(_Weights(q), keep)
    assert it.ok and it.result.message == "dense hinge dual: optimal"
    np.testing.assert_allclose(it.coef, ref.coef, rtol=0, atol=1e-10 * float(np.abs(ref.coef).max()))
    qk = q.copy()
    qk[~keep] = np.inf
    assert it.result.iterations == _cold_pivots(sub, qk)  # the cold start's pivots, none from the wrong one


@pytest.mark.shared_data
@pytest.mark.parametrize("split", [0, 2, 5])  # splits whose last EM step leaves more than 6 free
def test_the_re_solve_on_sonar_against_cvxpy_and_the_plain_warm_start(split, shared_file, monkeypatch):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    Xtr = StandardScaler().fit(Xtr).transform(Xtr)
    y_pm = np.where(ytr == np.unique(ytr)[1], 1.0, -1.0)
    sub, warm, q, keep, it = _captured_restricted(Xtr, y_pm, 5, monkeypatch)
    _against_independent_solves(sub, warm, q, keep, it)
    _assert_no_shrinking(sub, warm, q, keep, monkeypatch)
