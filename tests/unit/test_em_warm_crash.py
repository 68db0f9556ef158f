"""The crash start of a warm EM step (:class:`fsframe.dense_em.DenseHingeSubproblem`: the previous
step's multipliers after ``WARM_CRASH_SWEEPS`` sweeps of ``box_qp_jit.crash`` on the new dual, where
:func:`~fsframe.dense_rules.warm_crash_applies`) against the plain warm start it replaces: the same
optimum (the model, the intercept, the objective; CVXPY on one dual), certified at the first
attempt, in fewer pivots; and whole ``em-l0`` / ``arom`` fits with it equal to those without (the
same selections and EM iterations, models within 1e-9). Skipped without numba (the crash is compiled
only)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
import fsframe.dense_em as dense_em
from fsframe.backends.box_qp import compiled_available
from fsframe.dense_em import DenseHingeSubproblem
from fsframe.dense_rules import warm_crash_applies

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the crash is compiled only (numba: the fast extra)")


def _instance(seed, m=120, n=48):
    rng = np.random.default_rng(900 + seed)
    X = rng.normal(size=(m, n))
    X[:, 1::4] += 0.6 * X[:, ::4][:, : X[:, 1::4].shape[1]]
    w = np.zeros(n)
    w[rng.choice(n, 5, replace=False)] = rng.normal(size=5) + np.sign(rng.normal(size=5))
    y = np.where(X @ w + 0.6 * rng.normal(size=m) > 0, 1.0, -1.0)
    return (X - X.mean(0)) / X.std(0), y


def test_the_rule_is_the_cold_crash_rule_on_data_narrower_than_tall():
    assert warm_crash_applies((166, 60), 60) and warm_crash_applies((166, 42), 60)
    assert warm_crash_applies((1000, 999), 999)
    assert not warm_crash_applies((166, 41), 60)  # fewer than CRASH_MIN_RATIO columns per row
    # a kernel map (one column per sample), even where EM has left fewer live columns than rows
    assert not warm_crash_applies((166, 100), 166) and not warm_crash_applies((50, 200), 200)
    assert not warm_crash_applies((1001, 600), 600)  # beyond CRASH_MAX_ROWS: F F' not formed


def test_a_kernel_maps_warm_steps_are_not_crashed(monkeypatch):
    X, y = _instance(3, m=60, n=12)
    taken = []
    crash_start = dense_em.crash_start
    monkeypatch.setattr(dense_em, "crash_start", lambda *a: taken.append(1) or crash_start(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", kernel="linear", n_features=4)
    assert res.info.get("solver_path") == "dense_em" and res.n_iter > 2 and not taken


def _first_warm_step(X, y, crash: bool, monkeypatch):
    """EM's cold L2 start, then the first reweighted dual from its multipliers; with the warm
    crash or without it (the plain warm start)."""
    monkeypatch.setattr(dense_em, "warm_crash_applies", warm_crash_applies if crash else (lambda shape, n: False))
    sub = DenseHingeSubproblem(X, y, 1.0)
    first = sub.solve(quad=np.ones(X.shape[1]))
    q = 1.0 / np.maximum(np.asarray(first.t) ** 2, 1e-12)  # EM's zero-norm weights
    pivots = sub.pivots
    it = sub.solve(quad=q)
    return q, it, sub.pivots - pivots


def _cvxpy_primal(X, y, q, C=1.0):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    xi = cp.pos(1 - cp.multiply(y, X @ w + b))
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(q, cp.square(w))) + C * cp.sum(xi)))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, w.value


@pytest.mark.parametrize("seed", range(4))
def test_a_crashed_warm_step_reaches_the_plain_warm_steps_optimum_in_fewer_pivots(seed, monkeypatch):
    X, y = _instance(seed)
    assert warm_crash_applies(X.shape, X.shape[1])
    q, plain, p_plain = _first_warm_step(X, y, False, monkeypatch)
    q2, crashed, p_crashed = _first_warm_step(X, y, True, monkeypatch)
    assert np.array_equal(q, q2)
    # certified at the first attempt (no fallback in the message): the crashed start's own answer
    assert plain.ok and crashed.ok and crashed.result.message == "dense hinge dual: optimal"
    scale = max(1.0, float(np.abs(plain.coef).max()))
    np.testing.assert_allclose(crashed.coef, plain.coef, rtol=0, atol=1e-10 * scale)
    assert float(crashed.intercept[0]) == pytest.approx(float(plain.intercept[0]), rel=1e-9, abs=1e-10)
    assert crashed.objective == pytest.approx(plain.objective, rel=1e-12)
    assert p_crashed < p_plain
    if seed == 0:  # the optimum itself, from CVXPY on the primal
        value, w = _cvxpy_primal(X, y, q)
        assert crashed.objective == pytest.approx(value, rel=1e-6)
        np.testing.assert_allclose(crashed.coef, w, atol=1e-4 * scale)


def _fit(X, y, crash, monkeypatch, **kw):
    monkeypatch.setattr(dense_em, "warm_crash_applies", warm_crash_applies if crash else (lambda shape, n: False))
    taken = []
    crash_start = dense_em.crash_start
    monkeypatch.setattr(dense_em, "crash_start", lambda *a: (lambda out: taken.append(out is not None) or out)(
        crash_start(*a)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, **kw)
    return res, sum(taken)


def _same(X, y, monkeypatch, **kw):
    plain, n0 = _fit(X, y, False, monkeypatch, **kw)
    crashed, n1 = _fit(X, y, True, monkeypatch, **kw)
    assert n0 == 0 and n1 >= 1  # the warm crash taken in the one run only
    assert_same_dense_fit(crashed, plain)
    assert crashed.certificate["status"] == "optimal"


def assert_same_dense_fit(got, ref):
    """Two fits on the dense EM path with the same answer: selection, EM iterations, supports per
    step, coefficients and intercept within 1e-9 (of the largest coefficient), objective within 1e-9
    relative (another start of the same QPs: rounding only)."""
    assert got.info.get("solver_path") == ref.info.get("solver_path") == "dense_em"
    assert list(got.selected) == list(ref.selected) and got.n_iter == ref.n_iter
    assert [h.n_nonzero for h in got.history] == [h.n_nonzero for h in ref.history]
    scale = max(1.0, float(np.abs(ref.coef).max()))
    np.testing.assert_allclose(np.asarray(got.coef), np.asarray(ref.coef), rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(got.intercept, ref.intercept, rtol=1e-9, atol=1e-9)
    assert got.objective == pytest.approx(ref.objective, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("method", ["em-l0", "arom"])
def test_fits_with_the_warm_crash_equal_those_without(seed, method, monkeypatch):
    X, y = _instance(10 + seed, m=100 + 10 * seed, n=40)
    _same(X, y, monkeypatch, method=method, n_features=(3, 5)[seed % 2])


@pytest.mark.shared_data
@pytest.mark.parametrize("split", [0, 5])
@pytest.mark.parametrize("r", [5, 10])
def test_sonar_fits_with_the_warm_crash_equal_those_without(split, r, shared_file, monkeypatch):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    _same(StandardScaler().fit(Xtr).transform(Xtr), ytr, monkeypatch, method="em-l0", n_features=r)


def test_a_crashed_warm_step_that_fails_is_followed_by_the_plain_warm_start(monkeypatch):
    """The crashed attempt's pivots capped at 2 (iteration_limit): the message names the crashed
    attempt's failure, and the answer is the plain warm start's (the general path from the previous
    multipliers themselves, not the next attempt)."""
    X, y = _instance(0)
    q, plain, _ = _first_warm_step(X, y, False, monkeypatch)
    monkeypatch.setattr(dense_em, "warm_crash_applies", warm_crash_applies)
    sub = DenseHingeSubproblem(X, y, 1.0)
    sub.solve(quad=np.ones(X.shape[1]))
    step, caps = sub._compiled_step, []

    def capped(*a):
        caps.append(a[8])
        return step(*a[:8], 2, *a[9:])

    sub._compiled_step = capped
    it = sub.solve(quad=q)
    assert caps and caps[0] > 2  # the crashed attempt ran, capped
    # the answer from the plain "warm" attempt, after the crashed one's failure
    assert it.ok and it.result.message == "dense hinge dual: optimal (warm; warm crashed: iteration limit)"
    scale = max(1.0, float(np.abs(plain.coef).max()))  # the general path's BLAS against the compiled loop's sums
    np.testing.assert_allclose(it.coef, plain.coef, rtol=0, atol=1e-12 * scale)
    assert float(it.intercept[0]) == pytest.approx(float(plain.intercept[0]), rel=1e-12, abs=1e-12)
    assert it.objective == pytest.approx(plain.objective, rel=1e-13)


def test_the_crashed_warm_step_adds_no_compiled_specialisation(monkeypatch):
    """The crash's F (numpy's ``YX[:, live] * s``, F-ordered) reaches the compiled warm step
    C-ordered, the layout its buffer and its warm-up compile: no second specialisation (its
    compilation cost ~19 s CPU on the first fit). Judged on the arrays the step receives, not on
    the dispatcher's signatures, which other tests of the same process may have added to."""
    from fsframe.backends import box_qp_jit

    step = box_qp_jit.compiled_hinge()
    if step is None:
        pytest.skip("the compiled loop is not in use")
    layouts = []

    def spy(*a):
        layouts.append([x.flags.c_contiguous for x in a if isinstance(x, np.ndarray) and x.ndim == 2])
        return step(*a)

    monkeypatch.setattr(box_qp_jit, "compiled_hinge", lambda: spy)
    X, y = _instance(1)
    taken = []
    crash_start = dense_em.crash_start
    monkeypatch.setattr(dense_em, "crash_start", lambda *a: (lambda out: taken.append(out is not None) or out)(
        crash_start(*a)))
    _first_warm_step(X, y, True, monkeypatch)
    assert any(taken) and layouts
    assert all(all(c) for c in layouts), layouts


def _sweeps_seen(X, y, monkeypatch):
    seen = []
    crash_start = dense_em.crash_start
    monkeypatch.setattr(dense_em, "crash_start", lambda *a: seen.append(a[-1]) or crash_start(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", n_features=3)
    return res, seen


def test_the_warm_crash_reads_its_sweep_count_on_dense_rules(monkeypatch):
    # WARM_CRASH_SWEEPS is read on fsframe.dense_rules at each call, as the docs say: a patch there
    # changes the sweeps the warm crash runs (a name imported into dense_em would ignore it)
    import fsframe.dense_rules as dense_rules
    X, y = _instance(10, m=100, n=40)
    plain, seen = _sweeps_seen(X, y, monkeypatch)
    assert seen and set(seen) == {dense_rules.WARM_CRASH_SWEEPS}
    monkeypatch.setattr(dense_rules, "WARM_CRASH_SWEEPS", dense_rules.WARM_CRASH_SWEEPS + 2)
    swept, seen = _sweeps_seen(X, y, monkeypatch)
    assert seen and set(seen) == {dense_rules.WARM_CRASH_SWEEPS}
    assert list(swept.selected) == list(plain.selected) and swept.certificate["status"] == "optimal"
    assert swept.objective == pytest.approx(plain.objective, rel=1e-9)
