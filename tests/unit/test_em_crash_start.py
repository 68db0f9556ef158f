"""The crash start of the dense EM dual (:func:`fsframe.backends.box_qp.solve_box_qp`'s ``crash``;
docs/backends.md, "Crash start"): sweeps of dual coordinate descent (SMO's maximal violating pair
under the intercept's equality) before the active-set method on a cold dual.

* The crash itself descends: from a feasible start each step keeps the box and the equality and
  does not raise the dual objective, and enough sweeps come within 1e-3 of the optimum that
  CVXPY finds (a wrong sign in the gradient's update fails both).
* Polished by the active-set method, the answer is the cold start's: the same primal point
  ``F' lam`` (unique: the weighted L2 part is strictly convex) on seeded duals with and without the
  equality, and against CVXPY on one.
* A crash that leaves more free multipliers than the Hessian can hold is not taken.
* In ``em-l0`` fits: the same selections, EM iterations and models (1e-8) as without the crash on
  seeded instances and on Sonar's training parts (paper 002's protocol; skipped without the
  shared data), and the crash is taken there (fewer pivots on the cold dual).
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import fsframe
from fsframe.backends import box_qp, box_qp_jit, diag_qp
from fsframe.working_set import WorkingSetOptions

COMPILED = WorkingSetOptions(from_data=False)  # these fits test the compiled path's dual (diag_qp)

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba (the fast extra) is not installed")


def _dual(seed, m=80, q=12, C=1.0, equality=True):
    """A weighted L2-SVM dual: ``F = diag(y) X D^{-1/2}``, ``f = -1``, ``0 <= lam <= C``,
    ``y' lam = 0`` (with ``equality``)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, q))
    y = np.where(X[:, 0] + 0.8 * rng.normal(size=m) > 0, 1.0, -1.0)
    d = rng.uniform(0.2, 5.0, size=q)
    F = y[:, None] * X / np.sqrt(d)
    E = y[None, :] if equality else np.zeros((0, m))
    e = np.zeros(E.shape[0])
    return F, -np.ones(m), E, e, np.zeros(m), np.full(m, C)


def _objective(F, f, lam):
    w = F.T @ lam
    return 0.5 * float(w @ w) + float(f @ lam)


def _run_crash(F, f, E, lo, hi, lam, steps):
    run = box_qp_jit.compiled_crash()
    assert run is not None
    pairs = E.shape[0] == 1
    a = np.ascontiguousarray(E[0] if pairs else np.ones(F.shape[0]))
    out = lam.copy()
    F = np.ascontiguousarray(F)
    taken = run(F, np.ascontiguousarray((F @ F.T).T), True, f, a, pairs, lo, hi, out, steps, 0.0)  # its transpose
    return out, taken


def _cvxpy_dual(F, f, E, e, lo, hi):
    import cvxpy as cp
    lam = cp.Variable(F.shape[0])
    cons = [lam >= lo, lam <= hi] + ([E @ lam == e] if E.shape[0] else [])
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(F.T @ lam) + f @ lam), cons)
    prob.solve(solver="CLARABEL")
    return prob.value, np.asarray(lam.value)


@pytest.mark.parametrize("equality", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_crash_steps_stay_feasible_and_descend(seed, equality):
    F, f, E, e, lo, hi = _dual(seed, equality=equality)
    box_qp_jit.compiled()
    lam0 = np.zeros(F.shape[0])
    prev = _objective(F, f, lam0)
    for steps in (1, 2, 5, 10, 40, 160):
        lam, taken = _run_crash(F, f, E, lo, hi, lam0, steps)
        assert taken == steps
        assert np.all(lam >= lo) and np.all(lam <= hi)
        if equality:
            assert abs(float(E[0] @ lam)) <= 1e-12
        obj = _objective(F, f, lam)
        assert obj <= prev + 1e-12
        prev = obj
    opt, _ = _cvxpy_dual(F, f, E, e, lo, hi)
    lam, _ = _run_crash(F, f, E, lo, hi, lam0, 200 * F.shape[0])
    assert _objective(F, f, lam) == pytest.approx(opt, rel=1e-3)


def _crash_reference(F, Ht, f, a, pairs, lo, hi, lam, steps):
    """The crash's steps from ``lam = 0`` spelled out in Python (box_qp_jit.crash's documented
    rule, each quotient g_k / a_k divided and each gradient term tested): the maximal violating
    pair (one variable without ``pairs``), its exact clipped step, the gradient updated from rows
    of ``Ht``."""
    m, q = F.shape
    assert not lam.any()  # from lam = 0 the gradient is f (the compiled start adds exact zeros)
    g = np.array(f, dtype=float)
    for step in range(steps):
        i_up = j_dn = -1
        g_up, g_dn = np.inf, -np.inf
        for k in range(m):
            ak = a[k] if pairs else 1.0
            gk = g[k] / ak
            up = lam[k] < hi[k] if ak > 0 else lam[k] > lo[k]
            dn = lam[k] > lo[k] if ak > 0 else lam[k] < hi[k]
            if up and gk < g_up:
                g_up, i_up = gk, k
            if dn and gk > g_dn:
                g_dn, j_dn = gk, k
        if pairs:
            ai, aj = a[i_up], a[j_dn]
            v = F[i_up] / ai - F[j_dn] / aj
            slope = g_up - g_dn
            smax_i = (hi[i_up] - lam[i_up]) * ai if ai > 0 else (lo[i_up] - lam[i_up]) * ai
            smax_j = (lam[j_dn] - lo[j_dn]) * aj if aj > 0 else (lam[j_dn] - hi[j_dn]) * aj
        elif -g_up >= g_dn:
            ai, aj, slope, smax_i, smax_j, v = 1.0, 0.0, g_up, hi[i_up] - lam[i_up], np.inf, F[i_up].copy()
        else:
            ai, aj, slope, smax_i, smax_j, v = 0.0, 1.0, -g_dn, np.inf, lam[j_dn] - lo[j_dn], -F[j_dn]
        kappa = 0.0
        for c in range(q):
            kappa += v[c] * v[c]
        s = -slope / kappa
        hit_i = smax_i <= s
        if hit_i:
            s = smax_i
        hit_j = smax_j <= s
        if hit_j:
            s, hit_i = smax_j, smax_i <= smax_j
        if ai != 0.0:
            lam[i_up] = (hi[i_up] if ai > 0 else lo[i_up]) if hit_i else lam[i_up] + s / ai
        if aj != 0.0:
            lam[j_dn] = (lo[j_dn] if aj > 0 else hi[j_dn]) if hit_j else lam[j_dn] - s / aj
        ci = s / ai if ai != 0.0 else 0.0
        cj = -s / aj if aj != 0.0 else 0.0
        for k in range(m):
            g[k] += (Ht[i_up, k] * ci if ci != 0.0 else 0.0) + (Ht[j_dn, k] * cj if cj != 0.0 else 0.0)
    return lam


@pytest.mark.parametrize("row", ["labels", "scaled", "none"])
def test_compiled_crash_takes_the_spelled_out_steps_bitwise(row):
    # the compiled crash takes shortcuts (a product for g_k / a_k when every a_k is +-1, a pair's
    # gradient update without a test per entry): the same steps and bits as the rule spelled out,
    # on the hinge dual's labels, an equality row of other entries, and none
    F, f, E, e, lo, hi = _dual(5, m=60, q=9, C=2.0, equality=row != "none")
    if row == "scaled":
        E = E * np.random.default_rng(1).uniform(0.5, 2.0, size=E.shape)
    run = box_qp_jit.compiled_crash()
    pairs = E.shape[0] == 1
    a = np.ascontiguousarray(E[0] if pairs else np.ones(F.shape[0]))
    F = np.ascontiguousarray(F)
    Ht = np.ascontiguousarray((F @ F.T).T)
    for steps in (1, 7, 3 * F.shape[0]):
        got = np.zeros(F.shape[0])
        assert run(F, Ht, True, f, a, pairs, lo, hi, got, steps, 0.0) == steps
        ref = _crash_reference(F, Ht, f, a, pairs, lo, hi, np.zeros(F.shape[0]), steps)
        assert np.array_equal(got, ref) and np.count_nonzero(got) >= (2 if pairs or steps > 1 else 1)


@pytest.mark.parametrize("seed, equality", [(0, True), (1, True), (3, True), (0, False)])
def test_polished_crash_equals_the_cold_start(seed, equality):
    F, f, E, e, lo, hi = _dual(10 + seed, m=120, q=60, C=(0.5, 1.0, 4.0, 20.0)[seed], equality=equality)
    cold = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True)
    warm = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True, crash=8)
    assert cold.status == warm.status == "optimal"
    assert warm.iterations < cold.iterations  # the crash was taken
    np.testing.assert_allclose(F.T @ warm.lam, F.T @ cold.lam, atol=1e-10)
    assert _objective(F, f, warm.lam) == pytest.approx(_objective(F, f, cold.lam), rel=1e-12, abs=1e-12)
    if seed == 0:
        opt, lam = _cvxpy_dual(F, f, E, e, lo, hi)
        assert _objective(F, f, warm.lam) == pytest.approx(opt, rel=1e-6)
        np.testing.assert_allclose(F.T @ warm.lam, F.T @ lam, atol=1e-4)


def test_a_crash_whose_free_set_the_hessian_cannot_hold_is_not_taken():
    """One sweep leaves more free multipliers than ``rank(F F') + 1``: the cold start instead (its
    pivots, bitwise its answer), not a warm start the Python method would first have to shrink."""
    F, f, E, e, lo, hi = _dual(3, m=120, q=4, C=50.0)
    cold = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True)
    lam, _ = _run_crash(F, f, E, lo, hi, np.zeros(120), 120)
    assert np.count_nonzero((lam > lo) & (lam < hi)) > 4 + 1
    one = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True, crash=1)
    assert one.iterations == cold.iterations and np.array_equal(one.lam, cold.lam)


def _fit(X, y, r, monkeypatch, sweeps):
    monkeypatch.setattr(diag_qp, "CRASH_SWEEPS", sweeps)
    pivots = []
    inner = diag_qp.solve_box_qp
    monkeypatch.setattr(diag_qp, "solve_box_qp", lambda *a, **k: (lambda res: pivots.append(res.iterations)
                                                                   or res)(inner(*a, **k)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", n_features=r, working_set=COMPILED)
    monkeypatch.setattr(diag_qp, "solve_box_qp", inner)
    return res, pivots


def _same_fits(X, y, r, monkeypatch):
    monkeypatch.delenv("FSFRAME_NO_JIT", raising=False)
    plain, p0 = _fit(X, y, r, monkeypatch, 0)
    crashed, p1 = _fit(X, y, r, monkeypatch, 8)
    assert list(crashed.selected) == list(plain.selected)
    assert crashed.n_iter == plain.n_iter
    np.testing.assert_allclose(np.asarray(crashed.coef), np.asarray(plain.coef), atol=1e-8)
    np.testing.assert_allclose(crashed.intercept, plain.intercept, atol=1e-8)
    assert crashed.objective == pytest.approx(plain.objective, rel=1e-9, abs=1e-12)
    return p0, p1


@pytest.mark.parametrize("seed", range(5))
def test_em_fits_with_the_crash_equal_those_without(seed, monkeypatch):
    rng = np.random.default_rng(700 + seed)
    m = int(rng.integers(60, 120))
    n = int(rng.integers(m // 3, m // 2))  # at least CRASH_MIN_RATIO features per sample: the crash applies
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[: 2 + seed] = rng.normal(size=2 + seed)
    y = np.where(X @ beta + 0.7 * rng.normal(size=m) > 0, 1, -1)
    p0, p1 = _same_fits(X, y, (3, 5, 10)[seed % 3], monkeypatch)
    assert p1[0] <= p0[0]  # taken (fewer pivots) or left (a free set too large: the cold start's)


@pytest.mark.shared_data
@pytest.mark.parametrize("split", range(3))
@pytest.mark.parametrize("r", [5, 10])
def test_sonar_fits_with_the_crash_equal_those_without(split, r, shared_file, monkeypatch):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    p0, p1 = _same_fits(StandardScaler().fit(Xtr).transform(Xtr), ytr, r, monkeypatch)
    assert p1[0] < p0[0] / 2  # the cold L2 start: the crash taken (~165 pivots -> 1-30)


@pytest.mark.parametrize("rule", ["rows", "ratio"])
def test_the_dense_form_crashes_only_where_it_was_measured_to_pay(rule, monkeypatch):
    """The dense form passes ``crash`` on a cold dual only with at least ``CRASH_MIN_RATIO``
    features alive per sample and at most ``CRASH_MAX_ROWS`` samples; the warm duals never."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 40))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=80) > 0, 1, -1)
    asked = []
    inner = diag_qp.solve_box_qp
    monkeypatch.setattr(diag_qp, "solve_box_qp", lambda *a, **k: asked.append(k.get("crash", 0)) or inner(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsframe.fit(X, y, method="em-l0", n_features=5, working_set=COMPILED)
    assert asked[0] == diag_qp.CRASH_SWEEPS and not any(asked[1:])  # 40 features per 80 samples
    asked.clear()
    monkeypatch.setattr(diag_qp, *(("CRASH_MAX_ROWS", 79) if rule == "rows" else ("CRASH_MIN_RATIO", 0.51)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsframe.fit(X, y, method="em-l0", n_features=5, working_set=COMPILED)
    assert not any(asked)


@pytest.mark.parametrize("compiled", [False, True])
def test_intercept_is_the_midpoint_when_no_multiplier_is_free(compiled):
    # every lam_i at C: any nu in an interval is optimal, the cold start ended at one end (+1) and
    # the crash at the other (-1); both now give the interval's midpoint
    m = 40
    y = np.where(np.arange(m) % 2, 1.0, -1.0)
    F = y[:, None] * np.ones((m, 20))
    args = (F, -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), np.ones(m))
    cold = box_qp.solve_box_qp(*args, compiled=compiled)
    crashed = box_qp.solve_box_qp(*args, compiled=True, crash=8)
    for res in (cold, crashed):
        assert res.status == "optimal"
        np.testing.assert_array_equal(res.lam, np.ones(m))
    # F'lam = 0 at lam = 1, so g = -1 and r_i = -1 + y_i nu <= 0 (every lam_i at its upper bound):
    # nu in [-1, 1], midpoint 0; r = -1
    assert abs(cold.nu[0]) <= 1e-12 and abs(crashed.nu[0]) <= 1e-12
    np.testing.assert_allclose(cold.r, -np.ones(m), atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_intercept_with_every_multiplier_at_c_is_the_closed_form_midpoint(seed):
    # a tiny C holds every multiplier at C: at an upper bound r_i = g_i + y_i nu <= 0, so the
    # optimal nu are [max_{y=-1} g_i, min_{y=+1} -g_i]
    rng = np.random.default_rng(seed)
    y = np.repeat([1.0, -1.0], 30)  # balanced: lam = C keeps y'lam = 0
    F = y[:, None] * rng.normal(size=(60, 30))
    f, E, e, lo, hi = -np.ones(60), y[None, :], np.zeros(1), np.zeros(60), np.full(60, 1e-6)
    for crash in (0, 8):
        res = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True, crash=crash)
        assert res.status == "optimal"
        np.testing.assert_array_equal(res.lam, hi)
        g = F @ (F.T @ hi) + f
        mid = 0.5 * (g[y < 0].max() + (-g[y > 0]).min())
        assert abs(res.nu[0] - mid) <= 1e-12


def test_fits_with_the_crash_predict_as_those_without_on_a_degenerate_dual(monkeypatch):
    # C = 1e-4 holds every multiplier at C: the intercept was -0.989 cold, +0.990 crashed, and
    # every training prediction flipped
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 40))
    y = np.repeat([1, -1], 40)
    X[:, 0] += 0.8 * y
    out = []
    for sweeps in (0, 8):
        monkeypatch.setattr(diag_qp, "CRASH_SWEEPS", sweeps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, method="em-l0", n_features=5, C=1e-4, working_set=COMPILED)
        b = float(np.ravel(r.intercept)[0])
        out.append((b, np.sign(X @ np.asarray(r.coef).ravel() + b)))
    assert abs(out[0][0] - out[1][0]) <= 1e-9
    np.testing.assert_array_equal(out[0][1], out[1][1])
    assert np.mean(out[0][1] == y) > 0.7  # the midpoint, not the end that predicts one class


@pytest.mark.parametrize("C", [1e2, 1e4])
def test_a_crash_that_ends_other_than_optimal_is_rerun_from_the_cold_start(C):
    # columns of scale 1e-4..1e4: the crashed start took ~1 300 pivots to an iteration limit where
    # the cold start says "singular" at once; the cold start's outcome is what is reported
    rng = np.random.default_rng(1)
    X = rng.normal(size=(80, 40))
    y = np.where(X[:, 0] + X[:, 1] + 0.5 * rng.normal(size=80) > 0, 1.0, -1.0)
    F = y[:, None] * X * 10.0 ** np.linspace(-4, 4, 40)
    args = (F, -np.ones(80), y[None, :], np.zeros(1), np.zeros(80), np.full(80, C))
    cold = box_qp.solve_box_qp(*args, compiled=True)
    crashed = box_qp.solve_box_qp(*args, compiled=True, crash=8)
    assert cold.status != "optimal"
    assert (crashed.status, crashed.iterations) == (cold.status, cold.iterations)


@pytest.mark.parametrize("crash", [np.inf, -1, -0.5, np.nan, "8"])
def test_crash_must_be_a_finite_number_of_sweeps(crash):
    from fsframe.errors import InvalidOptionError
    F, f, E, e, lo, hi = _dual(0, m=20, q=5)
    with pytest.raises(InvalidOptionError, match="crash"):
        box_qp.solve_box_qp(F, f, E, e, lo, hi, crash=crash)


def test_a_hopeless_crash_is_given_up_after_one_sweep_and_its_hessian_reused(monkeypatch):
    # rank-4 Hessian, 16 free after one sweep: given up after m steps (not 8 m) and the cold start's
    # answer returned; the F F' the crash formed is the one the active set uses (q > m: it needs it)
    F, f, E, e, lo, hi = _dual(3, m=120, q=4, C=50.0)
    inner = box_qp_jit.compiled_crash()
    taken = []
    monkeypatch.setattr(box_qp_jit, "compiled_crash", lambda: lambda *a: taken.append(inner(*a)) or taken[-1])
    cold = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True)
    crashed = box_qp.solve_box_qp(F, f, E, e, lo, hi, compiled=True, crash=8)
    assert sum(taken) == 120
    assert crashed.iterations == cold.iterations and np.array_equal(crashed.lam, cold.lam)
    # q > m: the crash's Hessian goes to the active set, not formed again
    F2, f2, E2, e2, lo2, hi2 = _dual(1, m=30, q=90, C=1.0)
    seen = []
    active = box_qp._active_set_compiled
    monkeypatch.setattr(box_qp, "_active_set_compiled", lambda *a: seen.append(a[-1]) or active(*a))
    taken.clear()
    res = box_qp.solve_box_qp(F2, f2, E2, e2, lo2, hi2, compiled=True, crash=8)
    assert res.status == "optimal" and taken and seen[0] is not None
    np.testing.assert_allclose(seen[0], F2 @ F2.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sweeps", [np.inf, -1, -0.5, np.nan, "1"])
def test_crash_start_sweeps_must_be_a_finite_number(sweeps):
    # as solve_box_qp(crash=...): nan once raised ValueError, inf OverflowError, -1 returned None
    from fsframe.errors import InvalidOptionError
    F, f, E, e, lo, hi = _dual(0, m=20, q=5)
    with pytest.raises(InvalidOptionError, match="crash_start: sweeps"):
        box_qp.crash_start(F, f, E, e, lo, hi, np.zeros(20), sweeps)


def test_crash_start_that_numba_cannot_compile_is_no_start(monkeypatch):
    # numba refusing the crash on its first call: no start (the caller's plain warm start) and the
    # compiled loop dropped, as solve_box_qp does; not an error out of crash_start
    from numba.core.errors import TypingError

    def refused(*args):
        raise TypingError("planted: cannot type the crash")

    dropped = []
    monkeypatch.setattr(box_qp_jit, "compiled_crash", lambda: refused)
    monkeypatch.setattr(box_qp_jit, "disable", dropped.append)  # the process's compiled loop kept
    F, f, E, e, lo, hi = _dual(0, m=20, q=5)
    lam = np.zeros(20)
    assert box_qp.crash_start(F, f, E, e, lo, hi, lam, 1) is None
    assert len(dropped) == 1 and isinstance(dropped[0], TypingError) and not lam.any()
