"""The cold EM dual's crash from the classes' balanced point (:func:`fsframe.dense_rules.cold_crash_from`,
``COLD_CRASH_SWEEPS`` sweeps; ``solve_box_qp(crash_from=...)``) against the crash from zero it replaces:

* the point is feasible (in the box, ``y' lam = 0``), the smaller class at ``C``, and only where
  :func:`~fsframe.dense_rules.warm_crash_applies` (a kernel map keeps the crash from zero);
* ``solve_box_qp``'s ``crash_from`` reaches the cold start's optimum (the same primal ``F' lam``;
  CVXPY on one dual), is ignored when off the equality (bitwise the crash from the pivots' start),
  refuses a wrong shape, and leaves its input as it was;
* the cold EM solve from it: the same model, intercept and objective as from zero, and its crash
  taken, also on duals where the crash from zero was discarded (more free multipliers
  than the Hessian holds), and on the competitors table's 10 Sonar splits (skipped without the shared
  data); whole ``em-l0`` fits with it equal to those without (the same selections and EM iterations,
  models within 1e-9).

Skipped without numba (the crash is compiled only)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
import fsframe.dense_em as dense_em
from fsframe import dense_rules
from fsframe.backends import box_qp, box_qp_jit
from fsframe.backends.box_qp import compiled_available, solve_box_qp
from fsframe.dense_em import DenseHingeSubproblem
from test_em_warm_crash import assert_same_dense_fit
from fsframe.dense_rules import cold_crash_from
from fsframe.errors import InvalidOptionError

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the crash is compiled only (numba: the fast extra)")


def _mixed(seed, m=120, n=40):
    """Columns on scales 1e-2 ... 1e2: the crash from zero leaves more free multipliers than the
    Hessian holds on these (it is discarded, the cold pivots run from zero)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * np.logspace(-2, 2, n)[rng.permutation(n)]
    y = np.where(X[:, :3].sum(1) / np.abs(X[:, :3]).sum(1).mean() + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("n_pos, n_neg", [(30, 70), (70, 30), (50, 50), (1, 99)])
@pytest.mark.parametrize("C", [1.0, 0.3, 25.0])
def test_the_start_is_feasible_with_the_smaller_class_at_C(n_pos, n_neg, C):
    y = np.random.default_rng(n_pos).permutation(np.r_[np.ones(n_pos), -np.ones(n_neg)])
    m = y.size
    lam = cold_crash_from(y, C, (m, m // 2), m // 2)
    assert lam.shape == (m,) and np.all(lam >= 0.0) and np.all(lam <= C)
    assert abs(float((y[None, :] @ lam)[0])) <= box_qp_jit.START_TOL  # solve_box_qp's check of a start (e = 0)
    small = y > 0 if n_pos <= n_neg else y < 0
    assert np.all(lam[small] == C)
    # the larger class at C * small / large, one entry of it taking y' lam's rounding
    assert np.count_nonzero(lam[~small] != lam[~small][-1]) <= 1
    assert lam[~small] == pytest.approx(C * min(n_pos, n_neg) / max(n_pos, n_neg), rel=1e-12)


@pytest.mark.parametrize("m, C", [(166, 1e5), (400, 1e5), (1000, 1e5)])
def test_the_start_is_exact_to_the_solvers_check_at_large_C(m, C):
    # C * small / large summed over the larger class rounds by ~C eps sqrt(m): one of its entries
    # takes the leftover, so solve_box_qp takes the point (|y' lam| <= START_TOL, absolute) on every
    # label draw, the smaller class at C. Planted (no correction): 18 of 50 draws at m = 400, C = 1e5
    # are off by more. (From C ~ 1e6 the sum's own rounding can pass START_TOL, whatever the entries:
    # 3 of these 50 draws at m = 166, C = 1e6; the next test)
    rng = np.random.default_rng(m)
    for _ in range(50):
        n_pos = int(rng.integers(1, m))
        y = rng.permutation(np.r_[np.ones(n_pos), -np.ones(m - n_pos)])
        lam = cold_crash_from(y, C, (m, m // 2), m // 2 - 1)
        assert lam is not None and np.all(lam >= 0.0) and np.all(lam <= C)
        assert abs(float((y[None, :] @ lam)[0])) <= box_qp_jit.START_TOL
        small = y > 0 if n_pos <= m - n_pos else y < 0
        assert np.all(lam[small] == C)
        assert np.count_nonzero(lam[~small] != lam[~small][-1]) <= 1  # the one corrected entry


def test_a_point_the_solver_would_ignore_is_none_the_plain_rule():
    # where the rounding of y' lam cannot be taken up within START_TOL (C * m ~ 1e11: the sum's own
    # rounding is ~1e-5), no point: the subproblem then crashes from zero with CRASH_SWEEPS, not
    # COLD_CRASH_SWEEPS from a point solve_box_qp would ignore. Planted (the point returned anyway): fails
    rng = np.random.default_rng(5)
    y = rng.permutation(np.r_[np.ones(313), -np.ones(687)])
    assert cold_crash_from(y, 1e8, (1000, 500), 499) is None


def test_only_where_the_warm_crash_rule_applies():
    y = np.r_[np.ones(80), -np.ones(86)]
    assert cold_crash_from(y, 1.0, (166, 60), 60) is not None
    assert cold_crash_from(y, 1.0, (166, 41), 60) is None  # fewer than CRASH_MIN_RATIO columns per row
    assert cold_crash_from(y, 1.0, (166, 166), 166) is None  # a kernel map: the crash from zero
    assert cold_crash_from(y, 1.0, (166, 100), 166) is None
    assert cold_crash_from(np.ones(166), 1.0, (166, 60), 60) is None  # one class: no balanced point


def _dual(seed):
    """EM's first dual of :func:`_mixed`'s instance (the weights ``quad = 1``: ``F = diag(y) X / sqrt(2)``)."""
    X, y = _mixed(seed)
    m = y.size
    return (np.ascontiguousarray(y[:, None] * X / np.sqrt(2.0)), -np.ones(m), y[None, :], np.zeros(1), np.zeros(m),
            np.ones(m)), y


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_crash_from_reaches_the_cold_optimum(seed, monkeypatch):
    args, y = _dual(seed)
    F = args[0]
    cold = solve_box_qp(*args)
    origin = cold_crash_from(y, 1.0, F.shape, F.shape[1])
    kept = origin.copy()
    taken = _watch_crash(monkeypatch)
    res = solve_box_qp(*args, crash=dense_rules.COLD_CRASH_SWEEPS, crash_from=origin)
    assert taken == [True]  # the crash gave the pivots' start
    assert np.array_equal(origin, kept)  # the input is not changed
    assert cold.status == res.status == "optimal"
    w0, w1 = F.T @ cold.lam, F.T @ res.lam
    np.testing.assert_allclose(w1, w0, rtol=0, atol=1e-9 * max(1.0, float(np.abs(w0).max())))
    assert float(res.nu[0]) == pytest.approx(float(cold.nu[0]), rel=1e-8, abs=1e-9)
    if seed == 1:  # the optimum itself, from CVXPY
        import cvxpy as cp

        lam = cp.Variable(F.shape[0])
        prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(F.T @ lam) - cp.sum(lam)),
                          [lam >= 0, lam <= 1, y @ lam == 0])
        prob.solve(solver="CLARABEL")
        objective = 0.5 * float(w1 @ w1) - float(res.lam.sum())
        assert objective == pytest.approx(prob.value, rel=1e-6)


def test_crash_from_is_clipped_not_changed_ignored_off_the_equality_and_refused_misshapen(monkeypatch):
    args, y = _dual(1)  # a dual whose crash from zero is taken
    m = y.size
    taken = _watch_crash(monkeypatch)
    plain = solve_box_qp(*args, crash=4)
    assert taken == [True]
    off = np.where(y > 0, 1.0, 0.0)  # in the box, off y' lam = 0: the crash from zero, as without it
    ignored = solve_box_qp(*args, crash=4, crash_from=off)
    assert ignored.iterations == plain.iterations and np.array_equal(ignored.lam, plain.lam)
    origin = cold_crash_from(y, 1.0, args[0].shape, args[0].shape[1])
    outside = origin + (origin == 1.0)  # the box's upper bound passed by 1: clipped back to origin
    kept = outside.copy()
    clipped = solve_box_qp(*args, crash=4, crash_from=outside)
    assert np.array_equal(outside, kept)  # the input is not changed
    from_origin = solve_box_qp(*args, crash=4, crash_from=origin)
    assert clipped.iterations == from_origin.iterations and np.array_equal(clipped.lam, from_origin.lam)
    assert not np.array_equal(from_origin.lam, plain.lam)  # another start than zero's
    for bad, why in ((np.zeros(m - 1), "shape"), (np.full(m, np.nan), "finite"), (["a"] * m, "numbers")):
        with pytest.raises(InvalidOptionError, match=f"crash_from must .*{why}"):
            solve_box_qp(*args, crash=4, crash_from=bad)


@pytest.mark.parametrize("seed", [0, 7, 8])
def test_a_discarded_crash_from_the_point_leaves_the_pivots_starting_from_zero(seed):
    # duals whose crash from the balanced point ends with more free multipliers than the Hessian
    # holds (box_qp._crashed gives it up): the pivots run from the cold start, as with no crash at
    # all, bitwise (the same multipliers and pivots). Planted (the pivots starting from the balanced
    # point after a discarded crash): 66 -> 325 pivots on seed 0, fails
    args, y = _dual(seed)
    origin = cold_crash_from(y, 1.0, args[0].shape, args[0].shape[1])
    assert box_qp._crashed(*args, origin, dense_rules.COLD_CRASH_SWEEPS, box_qp_jit.START_TOL)[0] is None
    crashed = solve_box_qp(*args, crash=dense_rules.COLD_CRASH_SWEEPS, crash_from=origin)
    plain = solve_box_qp(*args)
    assert crashed.status == plain.status == "optimal"
    assert crashed.iterations == plain.iterations and np.array_equal(crashed.lam, plain.lam)


_CRASHED = box_qp._crashed


def _watch_crash(monkeypatch) -> list:
    """A list that records, for each crash ``solve_box_qp`` runs from now on, whether it gave a start."""
    taken = []
    monkeypatch.setattr(box_qp, "_crashed", lambda *a: (lambda out: taken.append(out[0] is not None) or out)(
        _CRASHED(*a)))
    return taken


def _cold(X, y, balanced: bool, monkeypatch):
    """EM's cold L2 start (equal weights), from the balanced point or from zero: the iterate, its
    pivots and whether each crash was taken (``box_qp._crashed`` gave a start)."""
    monkeypatch.setattr(dense_em, "cold_crash_from", cold_crash_from if balanced else (lambda *a: None))
    taken = _watch_crash(monkeypatch)
    sub = DenseHingeSubproblem(X, y, 1.0)
    it = sub.solve(quad=np.ones(X.shape[1]))  # EM's first weights
    return it, sub.pivots, taken


def _same_cold(X, y, monkeypatch):
    zero, p0, t0 = _cold(X, y, False, monkeypatch)
    balanced, p1, t1 = _cold(X, y, True, monkeypatch)
    assert zero.ok and balanced.ok and balanced.result.message == "dense hinge dual: optimal"
    scale = max(1.0, float(np.abs(zero.coef).max()))
    np.testing.assert_allclose(balanced.coef, zero.coef, rtol=0, atol=1e-10 * scale)
    assert float(balanced.intercept[0]) == pytest.approx(float(zero.intercept[0]), rel=1e-9, abs=1e-10)
    assert balanced.objective == pytest.approx(zero.objective, rel=1e-9)  # the certificate's GAP_TOL
    assert t1 == [True]  # one crash, from the balanced point, taken
    return p0, p1, t0


@pytest.mark.parametrize("seed", [2, 3, 5])  # of seeds 0-9, from zero it was kept on 1, 4 and 6, neither on 0, 7-9
def test_the_cold_em_solve_takes_the_crash_the_zero_start_lost(seed, monkeypatch):
    X, y = _mixed(seed)
    _, _, t0 = _same_cold(X, y, monkeypatch)
    assert t0 == [False]  # from zero: more free multipliers than the Hessian holds, the cold pivots


def _sonar_split(shared_file, split):
    """Split ``split`` of the competitors table (``benchmarks/competitors.py``'s ``split_data``:
    stratified 80/20, standardised on the training part), labels in ``{-1, +1}``."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    return StandardScaler().fit(Xtr).transform(Xtr), np.where(ytr == np.unique(ytr)[1], 1.0, -1.0)


@pytest.mark.parametrize("split", range(10))
def test_sonar_cold_solves_take_the_crash_from_the_balanced_point(split, shared_file, monkeypatch):
    X, y = _sonar_split(shared_file, split)
    p0, p1, t0 = _same_cold(X, y, monkeypatch)
    # both crashes taken (5 sweeps instead of 8), and few pivots after them: 2-15 measured (1-13 after
    # the 8 sweeps from zero); without the crash the cold pivots take ~150
    assert t0 == [True] and p1 <= 20


def _fit(X, y, balanced, monkeypatch, **kw):
    monkeypatch.setattr(dense_em, "cold_crash_from", cold_crash_from if balanced else (lambda *a: None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, **kw)


def _same_fits(X, y, monkeypatch, **kw):
    zero = _fit(X, y, False, monkeypatch, **kw)
    balanced = _fit(X, y, True, monkeypatch, **kw)
    assert_same_dense_fit(balanced, zero)


@pytest.mark.parametrize("seed", [0, 2, 4])  # 0: neither crash is taken (the cold pivots from zero)
def test_em_fits_from_the_balanced_point_equal_those_from_zero(seed, monkeypatch):
    X, y = _mixed(seed)
    _same_fits(X, y, monkeypatch, method="em-l0", n_features=3)


@pytest.mark.parametrize("split, r, method", [(0, 5, "em-l0"), (5, 5, "em-l0"), (3, 10, "em-l0"), (1, 5, "arom")])
def test_sonar_fits_from_the_balanced_point_equal_those_from_zero(split, r, method, shared_file, monkeypatch):
    X, y = _sonar_split(shared_file, split)
    _same_fits(X, y, monkeypatch, method=method, n_features=r)
