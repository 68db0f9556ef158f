"""The matrix-free active set for wide hinge duals (:mod:`fsframe.backends.box_qp_pdas`) and the
dense EM path's use of it (:func:`fsframe.dense_rules.pdas_applies`).

References: CVXPY with Clarabel on the same weighted hinge subproblem (its primal: the objective,
the model), the dense active set (:func:`~fsframe.backends.box_qp.solve_box_qp`: the multipliers and
the intercept), the KKT conditions on the returned point, and the EM fit on the dense active set
alone (the same selections, iterations and objective) on kernel maps, Twonorm's among them."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
import fsframe.dense_em as de
import fsframe.dense_rules as dr
from em_fits import assert_same_fit, record_messages, twonorm_like
from fsframe.backends.box_qp import solve_box_qp
from fsframe.backends.box_qp_pdas import solve_box_qp_pdas
from fsframe.errors import InvalidOptionError
from fsframe.kernels import EmpiricalKernelMap


def _rbf_dual(seed, m, sigma, C, duplicates=0, spread=0.0, split=0.0):
    """A hinge EM dual on an RBF kernel map of ``m`` Gaussian samples in 20 dimensions: ``F =
    diag(y) K diag(1 / sqrt(2 q))`` with ``q`` spread over ``spread`` decades (an EM step's weights),
    the last ``duplicates`` samples copies of the first ones (Titanic's repeated rows); ``split``: half
    the weights ``split`` decades above the rest instead (a late EM step on a near-identity map, whose
    ``F`` has rows of norm 1 and of 1e-5: Twonorm at sigma 0.5, ``C = 10``)."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((m, 20))
    if duplicates:
        Z[-duplicates:] = Z[:duplicates]
    y = np.where(Z[:, 0] + Z[:, 1] + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    K = EmpiricalKernelMap(kernel="rbf", sigma=sigma).fit(Z).transform(Z)
    q = 0.5 * 10.0 ** rng.uniform(0.0, spread, size=m)
    q[rng.permutation(m)[: m // 2]] *= 10.0 ** split
    F = y[:, None] * K / np.sqrt(2.0 * q)
    return K, y, q, F, np.full(m, C)


def _cvxpy_primal(K, y, q, C):
    """``min C sum hinge + sum q w^2`` (the EM step's primal) by CVXPY + Clarabel: value, w, b."""
    w, b = cp.Variable(K.shape[1]), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y, K @ w + b)))
    prob = cp.Problem(cp.Minimize(C * hinge + cp.sum(cp.multiply(q, cp.square(w)))))
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value), w.value, float(b.value)


def _primal(K, y, q, C, lam, nu):
    """The primal read off a dual point: ``w = K' (y lam) / (2 q)``, ``b = nu``; its objective."""
    w = K.T @ (y * lam) / (2.0 * q)
    xi = np.maximum(0.0, 1.0 - y * (K @ w + nu))
    return C * xi.sum() + q @ w ** 2, w


@pytest.mark.parametrize(("seed", "m", "sigma", "C", "spread", "split"), [
    (0, 120, 0.5, 0.1, 0.0, 0.0), (1, 120, 0.5, 10.0, 0.0, 0.0),  # near-identity maps (Twonorm at sigma 0.5)
    (2, 150, 0.5, 10.0, 6.0, 0.0),                                # ... with the EM weights over 6 decades
    (7, 200, 0.5, 10.0, 0.0, 10.0),                               # ... half of them 1e10 times the rest
    (3, 150, 2.0, 1.0, 2.0, 0.0), (4, 100, 1.0, 10.0, 3.0, 0.0),
])
def test_the_wide_dual_against_cvxpy_and_the_dense_active_set(seed, m, sigma, C, spread, split):
    K, y, q, F, hi = _rbf_dual(seed, m, sigma, C, spread=spread, split=split)
    res = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi)
    assert res.status == "optimal"
    ref = solve_box_qp(F, -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), hi)
    assert ref.status == "optimal"
    np.testing.assert_allclose(res.lam, ref.lam, rtol=0, atol=1e-7 * C)
    assert abs(res.nu[0] - ref.nu[0]) <= 1e-7 * max(1.0, abs(ref.nu[0]))
    value, w_ref, _ = _cvxpy_primal(K, y, q, C)
    ours, w = _primal(K, y, q, C, res.lam, res.nu[0])
    assert abs(ours - value) <= 1e-6 * max(1.0, value)
    assert ours <= value + 1e-9 * max(1.0, value)  # exact: no worse than the interior point's
    np.testing.assert_allclose(w, w_ref, atol=1e-4 * max(1.0, float(np.abs(w_ref).max())))
    # KKT: the box, the equality, the bound multipliers' signs
    assert np.all(res.lam >= 0) and np.all(res.lam <= C) and abs(y @ res.lam) <= 1e-9 * C * m
    r = F @ (F.T @ res.lam) - 1.0 + y * res.nu[0]
    size = max(1.0, float(np.abs(r + 1.0).max()))
    assert np.all(r[res.lam <= 0] >= -1e-9 * size) and np.all(r[res.lam >= C] <= 1e-9 * size)
    free = (res.lam > 0) & (res.lam < C)
    assert np.abs(r[free]).max(initial=0.0) <= 1e-9 * size


@pytest.mark.parametrize("C", [0.1, 10.0])
def test_duplicate_rows_are_solved_or_refused_never_answered_wrong(C):
    # Titanic's rows repeat: two copies of a free sample make F_N F_N' singular. An answer must be
    # the optimum (CVXPY's value); otherwise the status says why and the caller falls back
    m = 120
    K, y, q, F, hi = _rbf_dual(5, m, 1.0, C, duplicates=40)
    res = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi)
    assert res.status in {"optimal", "singular", "iteration_limit"}
    value, _, _ = _cvxpy_primal(K, y, q, C)
    if res.status == "optimal":
        ours, _ = _primal(K, y, q, C, res.lam, res.nu[0])
        assert abs(ours - value) <= 1e-6 * max(1.0, value)
    else:
        assert res.lam is None


def test_a_rank_deficient_dual_is_refused_with_a_status():
    # 100 samples, 20 columns: the first prediction frees more multipliers than F F' has rank
    rng = np.random.default_rng(0)
    F = rng.standard_normal((100, 20))
    y = np.where(rng.random(100) < 0.5, 1.0, -1.0)
    res = solve_box_qp_pdas(y[:, None] * F, -np.ones(100), y, 0.0, np.zeros(100), np.ones(100))
    assert res.status == "singular" and res.lam is None


def test_bad_bounds_are_typed_errors_and_an_unreachable_equality_is_a_status():
    F = np.eye(4)
    with pytest.raises(InvalidOptionError):
        solve_box_qp_pdas(F, -np.ones(4), np.ones(4), 0.0, np.zeros(4), np.full(4, np.inf))
    with pytest.raises(InvalidOptionError):
        solve_box_qp_pdas(F, -np.ones(4), np.ones(4), 0.0, np.ones(4), np.zeros(4))
    with pytest.raises(InvalidOptionError):  # a start or an equality row of the wrong length
        solve_box_qp_pdas(F, -np.ones(4), np.ones(4), 0.0, np.zeros(4), np.ones(4), start=np.zeros(3))
    with pytest.raises(InvalidOptionError):
        solve_box_qp_pdas(F, -np.ones(4), np.ones(5), 0.0, np.zeros(4), np.ones(4))
    # a' lam = 10 with 0 <= lam <= 1 over four variables: no feasible point
    assert solve_box_qp_pdas(F, -np.ones(4), np.ones(4), 10.0, np.zeros(4), np.ones(4)).status == "infeasible_start"


def test_the_inputs_are_not_changed_and_the_answer_is_deterministic():
    m = 100
    _, y, _, F, hi = _rbf_dual(6, m, 0.5, 1.0, spread=4.0)
    start = np.full(m, 0.5)
    copies = [a.copy() for a in (F, y, hi, start)]
    one = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi, start=start)
    two = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi, start=start)
    assert one.status == "optimal"
    assert np.array_equal(one.lam, two.lam) and np.array_equal(one.nu, two.nu)
    for a, b in zip((F, y, hi, start), copies):
        assert np.array_equal(a, b)


def _fit_both(X, y, sigma, C, monkeypatch):
    """The fit with the matrix-free attempt taken from ``m >= 100`` rows, and on the dense active
    set alone; the messages of the steps of the first."""
    messages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with monkeypatch.context() as mp:
            mp.setattr(dr, "PDAS_MIN_ROWS", 100)  # read by dense_rules.pdas_applies
            record_messages(mp, messages)
            ours = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
        with monkeypatch.context() as mp:
            mp.setattr(de, "pdas_applies", lambda *args: False)
            ref = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
    return ours, ref, messages


@pytest.mark.parametrize(("sigma", "C"), [(0.5, 10.0), (1.0, 10.0), (1.0, 0.1), (4.0, 10.0)])
def test_the_em_fit_on_a_kernel_map_is_the_active_sets(sigma, C, monkeypatch):
    X, y = twonorm_like(300)
    ours, ref, messages = _fit_both(X, y, sigma, C, monkeypatch)
    assert_same_fit(ours, ref)
    if sigma < 4:  # the near-identity maps' wide steps are the matrix-free method's
        assert any(msg.endswith("(pdas)") for msg in messages)


@pytest.mark.shared_data
@pytest.mark.parametrize(("m", "sigma", "C"), [(500, 0.5, 10.0), (600, 1.0, 10.0), (500, 4.0, 0.1)])
def test_the_em_fit_on_twonorm_is_the_active_sets(m, sigma, C, shared_file, monkeypatch):
    import pandas as pd
    from sklearn.model_selection import StratifiedKFold

    df = pd.read_csv(shared_file("twonorm.tsv.gz"), sep="\t")
    X, y = df.drop(columns="target").to_numpy(float), df["target"].to_numpy()
    train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xa, ya = X[train][:m], y[train][:m]
    ours, ref, messages = _fit_both((Xa - Xa.mean(0)) / Xa.std(0), ya, sigma, C, monkeypatch)
    assert_same_fit(ours, ref)
    if sigma < 4:
        assert any(msg.endswith("(pdas)") for msg in messages)


def test_the_rule_takes_wide_duals_of_many_rows_only():
    assert dr.pdas_applies((dr.PDAS_MIN_ROWS, dr.PDAS_MIN_ROWS))
    assert not dr.pdas_applies((dr.PDAS_MIN_ROWS - 1, dr.PDAS_MIN_ROWS))   # Sonar-sized fits unchanged
    assert not dr.pdas_applies((4000, int(dr.PDAS_MIN_RATIO * 4000) - 1))  # a late, narrow EM step
    warm = np.zeros(4000)
    warm[: int(dr.PDAS_MIN_FREE * 4000)] = 0.5
    assert dr.pdas_applies((4000, 4000), warm, 1.0)
    warm[0] = 1.0  # one free multiplier fewer: a warm start the active set finishes in a few pivots
    assert not dr.pdas_applies((4000, 4000), warm, 1.0)


@pytest.mark.parametrize("seed", range(3))
def test_the_projected_cg_stays_on_the_equality_over_ten_decades_of_rows(seed):
    # a late EM step on a near-identity map: half the rows of F 1e-5 times the others, so the
    # diagonal preconditioner spans 1e10 and each direction leaves a' x = const by rounding (4e-4
    # here without the correction back onto it: the certificate then refused Twonorm's steps)
    from fsframe.backends.box_qp_pdas import _projected_cg

    rng = np.random.default_rng(seed)
    n = 300
    Z = rng.standard_normal((n, 20))
    K = EmpiricalKernelMap(kernel="rbf", sigma=0.5).fit(Z).transform(Z)
    a = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    FN = a[:, None] * K * np.where(rng.random(n) < 0.5, 1.0, 1e-5 * rng.uniform(0.5, 1.5, n))
    x_true = rng.uniform(0.0, 10.0, n)
    rhs = FN @ (FN.T @ x_true) - 0.7 * a  # stationary at x_true with the multiplier 0.7
    x0 = x_true + rng.uniform(-5.0, 5.0, n)
    x0 += a * ((a @ x_true - a @ x0) / n)
    x = _projected_cg(FN, a, rhs, x0, 1000)
    assert x is not None
    assert abs(a @ x - a @ x_true) <= 1e-12 * np.abs(x_true).sum()
    res = FN @ (FN.T @ x) - rhs
    res -= a * (a @ res) / n  # the part the multiplier cannot absorb
    assert np.linalg.norm(res) <= 1e-10 * np.linalg.norm(rhs)


@pytest.mark.parametrize(("sigma", "diagonal"), [(0.5, True), (1.0, True), (4.0, False)])
def test_a_cold_dual_is_tried_only_on_a_nearly_diagonal_hessian(sigma, diagonal):
    # the ratio ||(F F' - D) z|| / ||D z|| on a Twonorm-like map: ~1e-4 / 0.03 / 30 at these widths
    X, y = twonorm_like(400)
    K = EmpiricalKernelMap(kernel="rbf", sigma=sigma).fit(X).transform(X)
    assert dr.nearly_diagonal(np.where(y > 0, 1.0, -1.0)[:, None] * K) is diagonal


def _correlated_qp(seed, duplicates=False):
    """A small box QP whose Hessian ``F F'`` is far from an M-matrix (every row of ``F`` shares one
    random column), on which the undamped predictions cycle; ``duplicates``: its last rows copies
    of its first ones and a column or two fewer (``F F'`` singular: a prediction that frees both
    copies has no CG solution). ``F, f, a`` (``a = 0``: the box alone; else signs), the upper bound."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12)) if not duplicates else int(rng.integers(4, 14))
    k = int(rng.integers(1, n)) if duplicates else 0
    F = rng.standard_normal((n, n)) + 2.0 * rng.standard_normal((n, 1))
    if duplicates:
        F[n - k:] = F[:k] if rng.random() < 0.5 else F[n - k:]
        F = F[:, : n - int(rng.integers(0, 3))]
    f = rng.standard_normal(n) * 3
    signs = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    return F, f, signs, np.ones(n)


def _assert_the_optimum(res, F, f, a, hi):
    """``res`` is optimal: the dense active set's objective (to 1e-9) and the KKT conditions."""
    assert res.status == "optimal"
    n = f.size
    E = a[None, :] if a.any() else np.zeros((0, n))  # a = 0: the box alone
    ref = solve_box_qp(F, f, E, np.zeros(E.shape[0]), np.zeros(n), hi)
    assert ref.status == "optimal"

    def obj(x):
        return 0.5 * float(np.sum((F.T @ x) ** 2)) + float(f @ x)

    assert abs(obj(res.lam) - obj(ref.lam)) <= 1e-9 * max(1.0, abs(obj(ref.lam)))
    assert np.all(res.lam >= 0) and np.all(res.lam <= hi) and abs(a @ res.lam) <= 1e-9
    r = F @ (F.T @ res.lam) + f + a * res.nu[0]
    size = max(1.0, float(np.abs(r).max()))
    assert np.all(r[res.lam <= 0] >= -1e-9 * size) and np.all(r[res.lam >= hi] <= 1e-9 * size)
    assert np.abs(r[(res.lam > 0) & (res.lam < hi)]).max(initial=0.0) <= 1e-9 * size


# seeds whose undamped predictions cycle (found by running the method without its damped step:
# "iteration_limit" on each, with the box alone or with the equality)
@pytest.mark.parametrize(("seed", "equality"), [(9, False), (20, True), (40, True), (76, False), (94, False),
                                                (99, True), (135, False), (188, True)])
def test_a_cycling_prediction_is_damped_to_the_optimum(seed, equality):
    F, f, signs, hi = _correlated_qp(seed)
    a = signs if equality else np.zeros(f.size)
    _assert_the_optimum(solve_box_qp_pdas(F, f, a, 0.0, np.zeros(f.size), hi), F, f, a, hi)


@pytest.mark.parametrize(("seed", "equality"), [(10, False), (130, False), (88, True)])
def test_a_repeated_prediction_reuses_its_solve(seed, equality, monkeypatch):
    # seeds whose damped run predicts the same bounds again: the CG runs once per distinct
    # prediction (4 / 4 / 3 solves in 9 / 7 / 5 sweeps), and the answer is still the optimum
    import fsframe.backends.box_qp_pdas as pdas

    F, f, signs, hi = _correlated_qp(seed)
    a = signs if equality else np.zeros(f.size)
    solves, cg = [], pdas._projected_cg
    monkeypatch.setattr(pdas, "_projected_cg", lambda *args: solves.append(1) or cg(*args))
    res = solve_box_qp_pdas(F, f, a, 0.0, np.zeros(f.size), hi)
    _assert_the_optimum(res, F, f, a, hi)
    assert len(solves) < res.iterations


# seeds on which a later prediction frees both copies of a row: its CG fails ("singular" at once
# before), and a projected-gradient step goes on from the last point
@pytest.mark.parametrize(("seed", "equality"), [(0, True), (22, False), (53, True), (80, False), (136, True)])
def test_a_later_singular_prediction_is_passed_by_a_gradient_step(seed, equality, monkeypatch):
    import fsframe.backends.box_qp_pdas as pdas

    F, f, signs, hi = _correlated_qp(seed, duplicates=True)
    a = signs if equality else np.zeros(f.size)
    calls = []
    damped = pdas._damped_step

    def recording(*args):
        calls.append(args[8] is None)  # no prediction's point: the gradient step alone
        return damped(*args)

    monkeypatch.setattr(pdas, "_damped_step", recording)
    _assert_the_optimum(solve_box_qp_pdas(F, f, a, 0.0, np.zeros(f.size), hi), F, f, a, hi)
    assert any(calls)


def test_a_damped_step_is_feasible_and_lowers_the_objective():
    # from a feasible point, towards a point whose projection is worse: the step lands on the box
    # and the equality, below the starting objective (checked here, not by the step's own test)
    from fsframe.backends.box_qp_pdas import _damped_step

    F, f, signs, hi = _correlated_qp(9)
    n = f.size
    a = signs
    rng = np.random.default_rng(1)
    lam = np.clip(rng.uniform(0.2, 0.8, n), 0, 1)
    lam -= a * (a @ lam) / n  # on the equality, inside the box
    assert np.all((lam > 0) & (lam < 1))

    def obj(x):
        return 0.5 * float(np.sum((F.T @ x) ** 2)) + float(f @ x)

    far = lam + 50.0 * rng.standard_normal(n)
    out = _damped_step(F, f, a, 0.0, np.zeros(n), hi, lam, obj(lam), far, 0.0)
    assert out is not None
    point, value = out
    assert np.all(point >= 0) and np.all(point <= hi) and abs(a @ point) <= 1e-12 * n
    assert value == pytest.approx(obj(point), rel=1e-12, abs=1e-12)
    assert value < obj(lam)


@pytest.mark.timeout(20)
def test_an_equality_at_the_feasibility_tolerance_beyond_the_box_ends():
    # a' lam = 4 + 1e-13 over four multipliers in [0, 1]: within the feasibility tolerance, so it is
    # solved; the equality's multiplier search once grew its bracket without end here. The answer is
    # the box's corner, where the closed form lam = 1 holds
    res = solve_box_qp_pdas(np.eye(4), -np.ones(4), np.ones(4), 4.0 + 1e-13, np.zeros(4), np.ones(4))
    assert res.status == "optimal"
    assert np.array_equal(res.lam, np.ones(4))


def test_optimal_needs_stationarity_on_the_free_set(monkeypatch):
    # a CG answer off the free set's optimum (here: its own answer moved along the equality's null
    # space) keeps every bound multiplier's sign, so only the free set's reduced gradient shows it
    import fsframe.backends.box_qp_pdas as bp

    m = 60
    _, y, _, F, hi = _rbf_dual(3, m, 0.5, 1.0)
    good = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi)
    ref = solve_box_qp(F, -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), hi)
    assert good.status == ref.status == "optimal" and np.allclose(good.lam, ref.lam, atol=1e-9)
    free = (good.lam > 1e-6) & (good.lam < hi - 1e-6)
    assert free.sum() >= 2
    cg = bp._projected_cg

    def spoilt(FN, aN, rhs, x0, max_iter):
        x = cg(FN, aN, rhs, x0, max_iter)
        d = np.zeros_like(x)
        d[:2] = [aN[1], -aN[0]]  # a_N' d = 0: the equality still holds
        return x + 1e-7 * d

    monkeypatch.setattr(bp, "_projected_cg", spoilt)
    res = solve_box_qp_pdas(F, -np.ones(m), y, 0.0, np.zeros(m), hi, start=good.lam)
    assert res.status == "not_stationary" and res.lam is None


def _linear_wide(m=1000, n=600):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((m, n))
    return X, np.where(X[:, :5].sum(1) + rng.standard_normal(m) > 0, 1.0, -1.0)


@pytest.mark.parametrize("status", ["singular", "no_descent"])
def test_the_warm_crash_follows_a_failed_matrix_free_attempt(status, monkeypatch):
    # 1 000 samples, 600 columns: the first warm step is both the matrix-free method's (forced here:
    # the rule below refuses it) and the warm crash's; the method fails (forced too: from a warm start
    # its gradient steps now pass the first free set, larger than F F''s rank 600, and may succeed),
    # and the crash once never ran after a matrix-free attempt. The answer is checked against the cold
    # dense active set's. Without SMO's start (which would follow the failed attempt and replace the
    # crash: tested in test_svm_start.py). Either failure is named in the step's message
    from fsframe.backends.box_qp import BoxQPResult

    monkeypatch.setattr(de, "svm_start_applies", lambda *args, **kw: False)
    monkeypatch.setattr(de, "nearly_diagonal", lambda F: True)
    monkeypatch.setattr(de, "solve_box_qp_pdas", lambda *args, **kw: BoxQPResult(status, iterations=1))
    X, y = _linear_wide()
    m = X.shape[0]
    sub = de.DenseHingeSubproblem(X, y, 1.0)
    sub.solve(quad=0.5)
    q = np.minimum(0.5 / np.maximum(np.abs(sub.solve(quad=0.5).coef), 1e-8), 1e6)
    sub.solve(quad=0.5)  # the warm start of the step below: this dual's multipliers
    it = sub.solve(quad=q)
    assert "warm crashed" in it.result.message and f"pdas: {status.replace('_', ' ')}" in it.result.message
    ref = solve_box_qp(y[:, None] * X / np.sqrt(2 * q), -np.ones(m), y[None, :], np.zeros(1), np.zeros(m),
                       np.ones(m))
    assert ref.status == "optimal"
    assert np.allclose(it.coef, (y[:, None] * X / (2 * q)).T @ ref.lam, atol=1e-7)


def test_a_rank_deficient_warm_step_is_not_tried():
    # fewer live columns than samples of similar norms: F F' has rank q < m and is far from its
    # diagonal (on its null space (F F' - D) z = -D z), and the warm step goes to the active set without a "pdas:"
    # failure (a 2 000 x 1 200 fit: 61 s of CPU with the failing attempts, 52 s without)
    X, y = _linear_wide()
    F = y[:, None] * X
    assert dr.pdas_applies(F.shape) and not dr.nearly_diagonal(F)
    dup = np.vstack([X[:500], X[:500]])
    assert not dr.nearly_diagonal(dup)  # duplicate samples: rank 500 of 1 000
    sub = de.DenseHingeSubproblem(X, y, 1.0)
    coef = sub.solve(quad=0.5).coef
    it = sub.solve(quad=np.minimum(0.5 / np.maximum(np.abs(coef), 1e-8), 1e6))
    assert it.status.name == "OPTIMAL" and "pdas" not in it.result.message


def test_a_cold_wide_rbf_step_goes_to_the_active_set():
    # sigma 4 on a Twonorm-like map of 1 000 samples: every rule but nearly_diagonal takes the cold
    # step, whose CG would meet a nearly singular F_N F_N'; the step is the active set's, certified
    X, y = twonorm_like(1000)
    K = EmpiricalKernelMap(kernel="rbf", sigma=4.0).fit(X).transform(X)
    ypm = np.where(y > 0, 1.0, -1.0)
    assert dr.pdas_applies(K.shape)
    it = de.DenseHingeSubproblem(K, ypm, 10.0).solve(quad=0.5)
    assert it.status.name == "OPTIMAL" and "pdas" not in it.result.message


def test_every_multiplier_at_a_bound_reports_the_midpoint_nu():
    # F = 0.1 I, all four multipliers at their upper bound 1 (y' lam = 0 holds there); each bound
    # allows an interval of nu: r_i = 0.01 + f_i + y_i nu <= 0 gives -2.99 <= nu <= 4.99, whose
    # midpoint, 1.0, is the dense active set's nu too
    F, y = 0.1 * np.eye(4), np.array([1.0, 1.0, -1.0, -1.0])
    f = np.array([-10.0, -5.0, -10.0, -3.0])
    res = solve_box_qp_pdas(F, f, y, 0.0, np.zeros(4), np.ones(4))
    ref = solve_box_qp(F, f, y[None, :], np.zeros(1), np.zeros(4), np.ones(4))
    assert res.status == ref.status == "optimal"
    assert np.array_equal(res.lam, np.ones(4))
    assert res.nu[0] == pytest.approx(1.0, abs=1e-12) and res.nu[0] == pytest.approx(ref.nu[0], abs=1e-12)


def test_a_free_set_larger_than_the_columns_is_refused_without_a_cg(monkeypatch):
    # 100 samples, 20 columns: F_N F_N' has rank 20, and a predicted free set of more than 21
    # multipliers (20 + the equality's) is singular on a_N' d = 0; it is refused by its size, the CG
    # (up to CG_MAX_ITER products with F_N, ~8 s at Twonorm's size) never runs on it
    import fsframe.backends.box_qp_pdas as pdas

    rng = np.random.default_rng(0)
    F = rng.standard_normal((100, 20))
    y = np.where(rng.random(100) < 0.5, 1.0, -1.0)
    sizes, cg = [], pdas._projected_cg
    monkeypatch.setattr(pdas, "_projected_cg", lambda FN, *args: sizes.append(FN.shape[0]) or cg(FN, *args))
    res = solve_box_qp_pdas(y[:, None] * F, -np.ones(100), y, 0.0, np.zeros(100), np.ones(100))
    assert res.status == "singular" and res.lam is None
    assert sizes == []
    # at the bound itself (21 free multipliers with the equality, 20 without) the CG still runs
    none = np.zeros(21, bool)
    pdas._predicted_point(F[:21], -np.ones(21), y[:21], 0.0, np.zeros(21), np.ones(21), np.zeros(21), none, none,
                          np.arange(21), 50)
    assert sizes == [21]


@pytest.mark.parametrize("seed", [3, 7, 20])
def test_the_merit_evaluations_of_a_call_are_bounded(seed, monkeypatch):
    # QPs whose predictions cycle (damped steps: 6, 5 and 7 merit evaluations on seeds 3, 7, 20):
    # with the budget at 3, 4 or 6 the call spends at most that many (the halvings inside a damped
    # step included) and, short of what it needs, ends "iteration_limit" without an answer; with
    # the default budget the same call reaches the dense active set's optimum
    import fsframe.backends.box_qp_pdas as pdas

    F, f, signs, hi = _correlated_qp(seed)
    n = f.size
    calls, merit = [], pdas._merit
    monkeypatch.setattr(pdas, "_merit", lambda *args: calls.append(1) or merit(*args))
    _assert_the_optimum(solve_box_qp_pdas(F, f, signs, 0.0, np.zeros(n), hi), F, f, signs, hi)
    needed = len(calls)
    assert 4 < needed <= pdas.MAX_MERIT_EVALS
    for budget in (3, 4, 6):
        calls.clear()
        monkeypatch.setattr(pdas, "MAX_MERIT_EVALS", budget)
        res = solve_box_qp_pdas(F, f, signs, 0.0, np.zeros(n), hi)
        assert len(calls) <= budget
        if budget < needed:
            assert res.status == "iteration_limit" and res.lam is None
        else:
            _assert_the_optimum(res, F, f, signs, hi)


def test_a_warm_start_whose_first_cg_fails_goes_on_by_a_gradient_step(monkeypatch):
    # duplicate-row QPs from random warm starts: a first prediction that frees both copies of a row
    # has no CG solution; cold that is the caller's (a wide map), warm the gradient step goes on as
    # after a later prediction. Every answer is the dense active set's optimum, and some runs whose
    # first CG failed end optimal (each was "singular" at sweep 1 before)
    import fsframe.backends.box_qp_pdas as pdas

    failed, predicted = [], pdas._predicted_point

    def recording(*args):
        point = predicted(*args)
        failed.append(point is None)
        return point

    monkeypatch.setattr(pdas, "_predicted_point", recording)
    rescued = 0
    for seed in range(40):
        F, f, signs, hi = _correlated_qp(seed, duplicates=True)
        n = f.size
        start = np.random.default_rng(seed).uniform(0.0, 1.0, n)
        failed.clear()
        res = solve_box_qp_pdas(F, f, signs, 0.0, np.zeros(n), hi, start=start)
        if res.status == "optimal":
            _assert_the_optimum(res, F, f, signs, hi)
            rescued += failed[0]
        else:
            assert res.status in {"singular", "iteration_limit"} and res.lam is None
    assert rescued >= 1


def test_a_failed_prediction_is_not_solved_again_and_failed_solves_are_bounded(monkeypatch):
    # the duplicate-row QPs from random warm starts (up to 60 predictions a call, 51 of them a failed
    # CG made again without the cache): a prediction's CG runs at most once per call, whether it
    # converged or not, and no call runs more than MAX_FAILED_SOLVES failing CGs (some reach it and
    # end "iteration_limit"); every answer is still the dense active set's optimum
    import fsframe.backends.box_qp_pdas as pdas

    keys, cgs = [], []
    predicted, cg = pdas._predicted_point, pdas._projected_cg

    def recording(*args):
        before = len(cgs)
        point = predicted(*args)
        if len(cgs) > before:  # a CG ran for these bounds
            keys.append(args[7].tobytes() + args[8].tobytes())
        return point

    def counting(*args):
        x = cg(*args)
        cgs.append(x is None)
        return x

    monkeypatch.setattr(pdas, "_predicted_point", recording)
    monkeypatch.setattr(pdas, "_projected_cg", counting)
    limited = 0
    for seed in range(40):
        F, f, signs, hi = _correlated_qp(seed, duplicates=True)
        n = f.size
        keys.clear()
        cgs.clear()
        res = solve_box_qp_pdas(F, f, signs, 0.0, np.zeros(n), hi, start=np.random.default_rng(seed).uniform(0.0, 1.0, n))
        assert len(keys) == len(set(keys))
        assert sum(cgs) <= pdas.MAX_FAILED_SOLVES
        if res.status == "optimal":
            _assert_the_optimum(res, F, f, signs, hi)
        else:
            assert res.status in {"singular", "iteration_limit"} and res.lam is None
            limited += sum(cgs) == pdas.MAX_FAILED_SOLVES
    assert limited >= 1


def _stuck_at_the_minimiser(monkeypatch, prediction, evals):
    """solve_box_qp_pdas warm at the interior minimiser of the box alone (0.5 everywhere), each
    prediction forced to ``prediction`` and the merit budget to ``evals`` evaluations."""
    import fsframe.backends.box_qp_pdas as pdas

    rng = np.random.default_rng(4)
    n = 6
    F = rng.standard_normal((n, n)) + 3.0 * np.eye(n)
    f = -F @ (F.T @ np.full(n, 0.5))  # the unconstrained minimiser: 0.5 everywhere, inside [0, 1]
    monkeypatch.setattr(pdas, "_predicted_point", lambda *args: prediction)
    monkeypatch.setattr(pdas, "MAX_MERIT_EVALS", evals)
    return solve_box_qp_pdas(F, f, np.zeros(n), 0.0, np.zeros(n), np.ones(n), start=np.full(n, 0.5))


@pytest.mark.parametrize(("evals", "status"), [(32, "singular"), (31, "iteration_limit")])
def test_no_descent_after_a_failed_prediction_is_singular_unless_the_merit_budget_ran_out(evals, status,
                                                                                          monkeypatch):
    # the prediction failing (as a singular CG): the gradient step has no descent, after its base
    # point and MAX_HALVINGS = 30 halvings (31 merit evaluations, one more spent before the loop).
    # A budget of 32 is used up by that last halving and the failure is still "singular"; at 31 the
    # budget runs out first: "iteration_limit"
    res = _stuck_at_the_minimiser(monkeypatch, None, evals)
    assert (res.status, res.iterations, res.lam) == (status, 1, None)


@pytest.mark.parametrize(("evals", "status"), [(63, "no_descent"), (62, "iteration_limit")])
def test_no_descent_after_a_rejected_prediction_is_no_descent_unless_the_merit_budget_ran_out(evals, status,
                                                                                           monkeypatch):
    # the prediction a point outside the box whose projection, the box's corner, has a higher merit:
    # it is rejected, and neither its projected path nor the gradient (zero there) lowers the merit.
    # That is no descent, not an iteration limit (the loop stopped at its first sweep, its merit
    # budget unspent; the dense hinge dual's attempt chain names it: the warm-crash test above). The
    # spending: the full step's merit, the damped step's base point, 30 halvings along each
    # direction, one more spent before the loop: 63 evaluations; with 62 the last halving finds none
    # left: "iteration_limit"
    res = _stuck_at_the_minimiser(monkeypatch, (np.full(6, 5.0), 1.0), evals)
    assert (res.status, res.iterations, res.lam) == (status, 1, None)


def test_the_gradient_step_is_the_exact_step_along_the_gradient_projected_on_the_equality():
    # far inside a wide box, no prediction: the damped step's gradient direction is g projected on
    # a' d = 0 and its first trial the exact minimiser along it, so the step lands on the closed form
    # lam - t P g, t = |P g|^2 / |F' P g|^2, P = I - a a' / a'a (unprojected, -g leaves the equality and
    # the merit's projection moves the point elsewhere)
    from fsframe.backends.box_qp_pdas import _damped_step

    rng = np.random.default_rng(3)
    n = 8
    F = rng.standard_normal((n, n)) + 3.0 * np.eye(n)
    a = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    f = rng.standard_normal(n) + 5.0 * a - F @ (F.T @ np.full(n, 50.0))  # the unconstrained minimiser near 50
    lam = 50.0 + rng.uniform(-1.0, 1.0, n)
    lam -= a * (a @ lam - 3.0) / n  # a' lam = 3, far from the bounds 0 and 100
    g = F @ (F.T @ lam) + f
    pg = g - a * (a @ g) / (a @ a)
    assert abs(a @ g) > 0.1 * np.linalg.norm(g)  # the projection matters here
    expected = lam - (pg @ pg) / np.sum((F.T @ pg) ** 2) * pg
    assert np.all((expected > 1.0) & (expected < 99.0))  # inside the box: no clipping
    point, _ = _damped_step(F, f, a, 3.0, np.zeros(n), np.full(n, 100.0), lam, np.inf, None, 0.0)
    assert np.allclose(point, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("flip", [False, True])
def test_samples_repeated_with_the_other_label_are_not_nearly_diagonal(flip):
    # a narrow RBF map (sigma 0.5, its ratio ~1e-4) of 400 samples, 5 of them repeated: F F' is
    # singular either way. With the other label (flip: the rows opposite) the dual is unbounded along
    # each pair on a free set holding both, and the matrix-free attempt is not made; with the same
    # label (equal rows) the singular system is consistent, and the method is tried and reaches the
    # dense active set's optimum
    X, y = twonorm_like(400)
    ypm = np.where(y > 0, 1.0, -1.0)
    K = EmpiricalKernelMap(kernel="rbf", sigma=0.5).fit(X).transform(X)
    assert dr.nearly_diagonal(ypm[:, None] * K)
    X2, y2 = X.copy(), ypm.copy()
    X2[-5:] = X2[:5]
    y2[-5:] = -y2[:5] if flip else y2[:5]
    K2 = EmpiricalKernelMap(kernel="rbf", sigma=0.5).fit(X2).transform(X2)
    F2 = y2[:, None] * K2
    assert np.linalg.matrix_rank(F2 @ F2.T) < 400  # the closed form: five rank-one repeats
    assert dr.nearly_diagonal(F2) is not flip
    if not flip:
        f, hi = -np.ones(400), np.full(400, 10.0)
        _assert_the_optimum(solve_box_qp_pdas(F2, f, y2, 0.0, np.zeros(400), hi), F2, f, y2, hi)


def _opposite_pair_by_brute_force(F):
    """Whether some ``F_j = -F_i`` (``i != j``), every pair compared: the rule's reference."""
    return any(np.array_equal(F[i], -F[j]) for i in range(len(F)) for j in range(i + 1, len(F)))


def test_an_opposite_pair_is_found_when_a_third_row_ties_on_the_product():
    # rows a, b, -a with b g = a g for the rule's own Gaussian g: the three tie on |F g|, a sort by it
    # may place b between a and -a, and comparing neighbours only then missed the pair (a, -a)
    g = np.random.default_rng(1).standard_normal(5)
    a = np.random.default_rng(7).standard_normal(5)
    b = a.copy()
    b[0] += 1e-3
    b[1] -= 1e-3 * g[0] / g[1]
    assert abs(b @ g) == abs(a @ g) and not np.array_equal(b, a)  # the tie this test is about
    for rows in ([a, b, -a], [b, a, -a], [-a, b, a], [a, -a, b]):
        F = np.array(rows)
        assert _opposite_pair_by_brute_force(F) and dr._repeated_rows(F)
    F = np.array([a, b, a])  # equal rows, not opposite
    assert not _opposite_pair_by_brute_force(F) and not dr._repeated_rows(F)


@pytest.mark.parametrize("seed", range(6))
def test_opposite_rows_agree_with_every_pair_compared(seed):
    # random rows with planted copies (equal and opposite), zeros leading some rows (the sign is read
    # off the first non-zero entry), -0.0 entries, and ties of |F g| as above
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((40, 6))
    F[rng.random(F.shape) < 0.3] = 0.0
    src, dst, tie = rng.choice(40, size=(3, 3), replace=False)
    F[dst] = F[src] * (-1.0 if seed % 2 else 1.0)  # opposite copies on odd seeds, equal ones on even
    g = np.random.default_rng(1).standard_normal(6)
    F[tie] = F[src] + 1e-2 * (g[1] * np.eye(6)[0] - g[0] * np.eye(6)[1])  # within the plane g' x = g' F[src]
    F[F == 0.0] = np.where(rng.random(np.count_nonzero(F == 0.0)) < 0.5, -0.0, 0.0)
    assert dr._repeated_rows(F) is _opposite_pair_by_brute_force(F) is bool(seed % 2)


@pytest.mark.parametrize("zeros", [(0.0, 0.0), (0.0, -0.0), (-0.0, -0.0)])
@pytest.mark.parametrize("seed", range(2))
def test_two_zero_rows_are_opposite(seed, zeros):
    # a zero row is its own opposite: two of them (of either signed zero) are an opposite pair, one alone is not
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((12, 4))
    F[3] = zeros[0]
    assert not dr._repeated_rows(F) and not _opposite_pair_by_brute_force(F)
    F[9] = zeros[1]
    assert _opposite_pair_by_brute_force(F) and dr._repeated_rows(F) and dr._opposite_rows(F)


@pytest.mark.parametrize("m", [7, 22, 39])
def test_opposite_rows_whose_products_round_apart_are_found(m):
    # rows 0 and m - 1 (m % 4 != 0: the product's blocks round them differently) opposite: |F_0 g| and
    # |F_{m-1} g| differ by rounding in many instances, and the pair is found within the product's bound
    rng = np.random.default_rng(m)
    apart = 0
    for n in rng.integers(3, 200, size=40):
        F = rng.standard_normal((m, n))
        F[-1] = -F[0]
        h = np.abs(F @ np.random.default_rng(1).standard_normal(n))
        apart += h[0] != h[-1]
        assert dr._repeated_rows(F)
    assert apart > 0  # the case this test is about


@pytest.mark.parametrize("scale", [1e-170, 1e-300, 2.0**-1060, 1e170])
def test_the_rules_on_rows_far_from_unit_scale(scale):
    # squared row norms underflow below ~1e-154 (and overflow above ~1e154): opposite rows are still
    # found (a rounding bound from squared norms was 0 there: 53 of 100 pairs missed at 1e-170), and the
    # ratio of nearly_diagonal answers as at unit scale (at 1e-170 its off and D z both underflowed to 0,
    # and every F passed)
    for seed in range(20):
        F = np.random.default_rng(seed).standard_normal((7, 50)) * scale
        assert not dr._repeated_rows(F)
        F[6] = -F[0]
        assert dr._repeated_rows(F) and not dr.nearly_diagonal(F)
    rng = np.random.default_rng(0)
    diagonal = np.diag(rng.uniform(1.0, 2.0, 30)) + 1e-3 * rng.standard_normal((30, 30))
    parallel = np.ones((30, 5)) + 1e-2 * rng.standard_normal((30, 5))  # F F' ~ 5 * ones: far from diagonal
    assert dr.nearly_diagonal(diagonal) and not dr.nearly_diagonal(parallel)
    assert dr.nearly_diagonal(diagonal * scale) and not dr.nearly_diagonal(parallel * scale)
