"""LIBSVM's SMO as a start for the hinge dual (:mod:`fsframe.backends.svm_start`) and the dense EM
path's use of it (:func:`fsframe.dense_rules.svm_start_applies`, the ``smo`` attempt of
:class:`~fsframe.dense_em.DenseHingeSubproblem`).

References: CVXPY with Clarabel and the dense active set (:func:`~fsframe.backends.box_qp.solve_box_qp`)
on the same soft-margin duals (the objective), the box and the equality checked on the point itself,
and the EM fit without the SMO start (the same selections, iterations and objective) on a generated
Twonorm of 1 000 samples (Breiman's generator: no shared data needed)."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
import fsframe.backends.svm_start as ss
import fsframe.dense_em as de
import fsframe.dense_rules as dr
from fsframe.backends.box_qp import compiled_available, solve_box_qp
from fsframe.backends.svm_start import svm_start
from em_fits import assert_same_fit, record_messages, twonorm_like


def _dual(seed, m, q, positive=0.5):
    """A soft-margin dual's factor ``F = diag(y) X`` (``X`` Gaussian, labels +1 with probability
    ``positive``, a separating direction plus noise) and its labels."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(m) < positive, 1.0, -1.0)
    y[:2] = [1.0, -1.0]  # both labels present
    X = rng.standard_normal((m, q)) / np.sqrt(q)
    X[:, 0] += 0.5 * y
    return y[:, None] * X, y


def _objective(F, lam):
    return 0.5 * float(np.sum((F.T @ lam) ** 2)) - float(lam.sum())


def _cvxpy_dual(F, y, C):
    lam = cp.Variable(F.shape[0])
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(F.T @ lam) - cp.sum(lam)),
                      [y @ lam == 0, lam >= 0, lam <= C])
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize(("seed", "m", "q", "C", "positive"), [
    (0, 150, 300, 0.1, 0.5),   # wide, C small: most multipliers at C
    (1, 150, 300, 100.0, 0.5),  # wide, C large: separable, few at C
    (2, 200, 20, 0.1, 0.5),    # tall (rank 20 Gram)
    (3, 200, 20, 10.0, 0.5),
    (4, 200, 40, 1.0, 0.15),   # unbalanced labels
    (5, 150, 300, 1.0, 0.85),
])
def test_the_start_is_the_duals_optimum_to_about_1e_6(seed, m, q, C, positive):
    F, y = _dual(seed, m, q, positive)
    lam = svm_start(F, y, C)
    assert lam is not None and lam.shape == (m,)
    assert np.all(lam >= 0.0) and np.all(lam <= C)  # in the box, exactly
    assert abs(y @ lam) <= 1e-9 * C * m
    ours = _objective(F, lam)
    ref = _cvxpy_dual(F, y, C)
    assert abs(ours - ref) <= 1e-6 * max(1.0, abs(ref))
    if q >= m:  # the dense active set on the full-rank duals: the certified optimum
        res = solve_box_qp(F, -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), np.full(m, C))
        assert res.status == "optimal"
        exact = _objective(F, res.lam)
        assert exact <= ours + 1e-12 * max(1.0, abs(exact))  # SMO's is a start, not better than the optimum
        assert ours - exact <= 1e-6 * max(1.0, abs(exact))


def test_no_convergence_within_the_budget_is_none(monkeypatch):
    F, y = _dual(0, 150, 300)
    assert svm_start(F, y, 1.0) is not None
    monkeypatch.setattr(ss, "SMO_MAX_ITER", 5)
    assert svm_start(F, y, 1.0) is None


def test_the_inputs_are_not_changed_and_the_answer_is_deterministic():
    F, y = _dual(2, 200, 20)
    F0, y0 = F.copy(), y.copy()
    first = svm_start(F, y, 10.0)
    again = svm_start(F, y, 10.0)
    assert np.array_equal(F, F0) and np.array_equal(y, y0)
    assert np.array_equal(first, again)


def test_the_rule_takes_wide_or_warm_free_duals_from_1000_to_6000_rows():
    lo, hi, ratio = dr.SVM_START_MIN_ROWS, dr.SVM_START_MAX_ROWS, dr.PDAS_MIN_RATIO
    assert (lo, hi) == (1000, 6000)
    assert dr.svm_start_applies((lo, int(np.ceil(ratio * lo))))
    assert not dr.svm_start_applies((lo - 1, lo - 1))  # small duals: the active sets as before
    assert dr.svm_start_applies((hi, hi))
    assert not dr.svm_start_applies((hi + 1, hi + 1))  # the m x m Gram: no second array of that size
    m = 4000
    narrow = (m, int(np.ceil(ratio * m)) - 1)
    assert not dr.svm_start_applies(narrow)  # a late, narrow step, cold
    warm = np.zeros(m)
    warm[: int(np.ceil(dr.PDAS_MIN_FREE * m))] = 0.5
    assert dr.svm_start_applies(narrow, warm, 1.0)
    warm[0] = 1.0  # one free multiplier fewer than the fraction
    assert not dr.svm_start_applies(narrow, warm, 1.0)
    assert not dr.svm_start_applies((hi + 1, 10), np.full(hi + 1, 0.5), 1.0)  # the cap before the fraction


@pytest.mark.parametrize(("sigma", "C"), [(1.0, 0.1), (4.0, 0.1), (1.0, 10.0)])
def test_the_em_fit_through_smo_is_the_fit_without_it(sigma, C, monkeypatch):
    X, y = twonorm_like(1000)
    messages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with monkeypatch.context() as mp:
            record_messages(mp, messages)
            ours = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
        with monkeypatch.context() as mp:
            mp.setattr(de, "svm_start_applies", lambda *args, **kw: False)
            mp.setattr(de, "svm_start_fallback", lambda shape: False)
            ref = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
    assert any(msg.endswith("(smo)") for msg in messages)
    assert_same_fit(ours, ref)


def test_the_fallback_takes_any_width_from_1000_to_6000_rows():
    lo, hi = dr.SVM_START_MIN_ROWS, dr.SVM_START_MAX_ROWS
    assert dr.svm_start_fallback((lo, 1)) and dr.svm_start_fallback((hi, 5))
    assert not dr.svm_start_fallback((lo - 1, 1)) and not dr.svm_start_fallback((hi + 1, 1))


@pytest.mark.skipif(not compiled_available(), reason="the fallback follows the compiled warm attempt (numba)")
@pytest.mark.parametrize("compiled_outcome", [(None, None, None, "iteration_limit", 7), None],
                         ids=["failed", "handed-back"])
def test_a_failed_warm_step_the_first_rule_left_goes_to_smo_before_the_other_attempts(compiled_outcome, monkeypatch):
    # a narrow dual (30 live columns of 1 000 samples: SMO's first rule says no, cold or warm with
    # few free multipliers) whose compiled warm attempt fails (forced: an iteration limit, as on
    # Twonorm's late EM steps at 3 946 samples) or hands the step back to the general path uncertified
    # (None: box_qp_jit.HINGE_DEFER): SMO's start is tried next, and the step's answer is the one
    # without any of it
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1000, 30))
    y = np.where(X[:, :3].sum(1) + 0.5 * rng.standard_normal(1000) > 0, 1.0, -1.0)
    q = np.linspace(0.5, 3.0, 30)

    def two_steps(sub):
        sub.solve(quad=0.5)
        return sub.solve(quad=q)

    ref = two_steps(de.DenseHingeSubproblem(X, y, 1.0))
    calls = []
    smo = de.svm_start
    monkeypatch.setattr(de, "svm_start", lambda F, yy, C: calls.append(F.shape) or smo(F, yy, C))
    sub = de.DenseHingeSubproblem(X, y, 1.0)
    sub.solve(quad=0.5)
    assert calls == []  # cold and narrow: neither rule, the warm attempt does not run
    monkeypatch.setattr(de.DenseHingeSubproblem, "_warm_step", lambda self, *args, **kw: compiled_outcome)
    assert not dr.svm_start_applies((1000, 30), sub._warm, 1.0)
    it = sub.solve(quad=q)
    assert calls == [(1000, 30)]
    assert ("warm: iteration limit" in it.result.message) == (compiled_outcome is not None)
    assert it.result.certificate.gap <= de.GAP_TOL * max(1.0, abs(it.objective))
    assert np.allclose(it.coef, ref.coef, rtol=0, atol=1e-8) and abs(it.intercept[0] - ref.intercept[0]) <= 1e-8


def test_without_the_compiled_pivots_a_warm_step_is_not_sent_to_smo_before_its_warm_attempt(monkeypatch):
    # SMO's fallback follows the compiled warm attempt; without the compiled pivots (FSFRAME_NO_JIT
    # when the subproblem is made, as without numba) a warm step SMO's first rule left to the pivots
    # is the general path's warm attempt, as the compiled step would be: SMO is not called, and the
    # step's answer is the dual's optimum (CVXPY)
    monkeypatch.setenv("FSFRAME_NO_JIT", "1")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((1000, 30))
    y = np.where(X[:, :3].sum(1) + 0.5 * rng.standard_normal(1000) > 0, 1.0, -1.0)
    q = np.linspace(0.5, 3.0, 30)
    calls = []
    smo = de.svm_start
    monkeypatch.setattr(de, "svm_start", lambda F, yy, C: calls.append(F.shape) or smo(F, yy, C))
    sub = de.DenseHingeSubproblem(X, y, 1.0)
    assert sub._compiled_step is None
    sub.solve(quad=0.5)
    assert not dr.svm_start_applies((1000, 30), sub._warm, 1.0) and dr.svm_start_fallback((1000, 30))
    it = sub.solve(quad=q)
    assert calls == [] and it.result.message == "dense hinge dual: optimal"
    assert it.result.certificate.gap <= de.GAP_TOL * max(1.0, abs(it.objective))
    F = y[:, None] * X / np.sqrt(2.0 * q)  # the step's dual, against CVXPY's optimum
    assert _objective(F, it.result.duals["lam"]) == pytest.approx(_cvxpy_dual(F, y, 1.0), rel=1e-6)


@pytest.mark.skipif(not compiled_available(), reason="the reference is the fit with the compiled pivots (numba)")
def test_an_em_fit_without_the_compiled_pivots_takes_the_compiled_fits_attempts(monkeypatch):
    # Twonorm-like, 1 000 samples, sigma 2, C = 10: 5 of the 50 EM steps through SMO's first rule,
    # the others warm. Before SMO's fallback waited for the compiled warm attempt, every one of them
    # went to SMO without numba (51 steps through SMO, 3.6x the CPU); now the two fits' steps say
    # the same, and the fits are alike
    X, y = twonorm_like(1000, seed=1000)
    fits, messages = [], ([], [])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for no_jit, msgs in zip(("", "1"), messages):
            with monkeypatch.context() as mp:
                mp.setenv("FSFRAME_NO_JIT", no_jit)
                record_messages(mp, msgs)
                fits.append(fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=2.0, C=10.0))
    assert messages[0] == messages[1]
    assert sum(msg.endswith("(smo)") for msg in messages[1]) == 5 and len(messages[1]) == 51
    assert_same_fit(fits[1], fits[0])


def _wide_cold_dual():
    """A cold dual SMO's first rule takes (1 000 samples, 600 live columns) and the matrix-free
    attempt does not (``F F'`` of rank 600: far from its diagonal)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((1000, 600)) / np.sqrt(600)
    y = np.where(X[:, :5].sum(1) + 0.3 * rng.standard_normal(1000) > 0, 1.0, -1.0)
    return X, y


def _failed_polish(monkeypatch):
    from fsframe.backends.box_qp import BoxQPResult

    monkeypatch.setattr(de, "solve_box_qp_pdas", lambda *args, **kw: BoxQPResult("singular", iterations=1))


def test_the_attempt_from_smos_start_is_named_for_it(monkeypatch):
    # SMO's polish failing (forced), the next attempt starts from SMO's multipliers, not from a
    # previous step's (there is none: a cold dual), and the message says so; its answer is the
    # dual's optimum (CVXPY)
    _failed_polish(monkeypatch)
    X, y = _wide_cold_dual()
    assert dr.svm_start_applies(X.shape) and not dr.nearly_diagonal(y[:, None] * X)
    it = de.DenseHingeSubproblem(X, y, 1.0).solve(quad=0.5)
    assert it.result.message == "dense hinge dual: optimal (warm from smo; smo: singular)"
    F = y[:, None] * X  # q = 1/2: F = diag(y) X
    assert _objective(F, it.result.duals["lam"]) == pytest.approx(_cvxpy_dual(F, y, 1.0), rel=1e-6)


def test_the_scaled_attempt_from_smos_start_is_scaled(monkeypatch):
    # without the compiled pivots, "warm from smo" failing (forced: an iteration limit) is followed
    # by "warm scaled from smo": the dual scaled by warm_scale's a (forced to 2), from SMO's start
    monkeypatch.setenv("FSFRAME_NO_JIT", "1")
    _failed_polish(monkeypatch)
    monkeypatch.setattr(de, "warm_scale", lambda F: 2.0)
    from fsframe.backends.box_qp import BoxQPResult

    calls = []

    def first_fails(F, f, *args, **kw):
        calls.append((float(np.abs(F).max()), float(f[0]), kw.get("start") is not None))
        return BoxQPResult("iteration_limit", iterations=1) if len(calls) == 1 else solve_box_qp(F, f, *args, **kw)

    monkeypatch.setattr(de, "solve_box_qp", first_fails)
    X, y = _wide_cold_dual()
    it = de.DenseHingeSubproblem(X, y, 1.0).solve(quad=0.5)
    assert it.result.message == ("dense hinge dual: optimal (warm scaled from smo; smo: singular; "
                                 "warm from smo: iteration limit)")
    (top, f1, warm1), (top2, f2, warm2) = calls
    assert warm1 and warm2 and top2 == pytest.approx(top / 2, rel=1e-15) and (f1, f2) == (-1.0, -0.25)
    F = y[:, None] * X
    assert _objective(F, it.result.duals["lam"]) == pytest.approx(_cvxpy_dual(F, y, 1.0), rel=1e-6)


def test_a_polish_the_certificate_refuses_is_the_start_of_the_attempts_after_it(monkeypatch):
    # the matrix-free polish ending optimal by its own test but refused by the certificate (forced:
    # it returns the optimum with two free multipliers moved along the equality): the attempts after it start
    # from its point, not from SMO's (a late Twonorm step: from SMO's the active set ran into its
    # iteration limit, from the polish's it certified in one pivot); the answer is the optimum (CVXPY)
    from fsframe.backends.box_qp import BoxQPResult

    X, y = _wide_cold_dual()
    F = y[:, None] * X  # q = 1/2: F = diag(y) X
    ref = solve_box_qp(F, -np.ones(y.size), y[None, :], np.zeros(1), np.zeros(y.size), np.ones(y.size))
    monkeypatch.setenv("FSFRAME_NO_JIT", "1")  # the attempt after the polish on the general path
    polished = ref.lam.copy()  # two free multipliers moved along the equality: feasible, gap ~7e-4
    i, j = np.flatnonzero((ref.lam > 1e-9) & (ref.lam < 1 - 1e-9))[:2]
    step = 0.5 * min(polished[i], 1 - polished[i], polished[j], 1 - polished[j])
    polished[i] += step
    polished[j] -= step * y[i] * y[j]
    monkeypatch.setattr(de, "solve_box_qp_pdas",
                        lambda *args, **kw: BoxQPResult("optimal", lam=polished.copy(), nu=ref.nu, iterations=1))
    starts = []
    monkeypatch.setattr(de, "solve_box_qp", lambda *a, **kw: starts.append(kw.get("start")) or solve_box_qp(*a, **kw))
    monkeypatch.setattr(de, "REFINE_MAX_FREE", 0)  # no refinement of the refused point (the test below)
    it = de.DenseHingeSubproblem(X, y, 1.0).solve(quad=0.5)
    assert it.result.message.startswith("dense hinge dual: optimal (warm from smo; smo: not certified (gap")
    assert np.array_equal(starts[0], polished)
    assert _objective(F, it.result.duals["lam"]) == pytest.approx(_cvxpy_dual(F, y, 1.0), rel=1e-6)


def test_a_refused_optimal_point_is_refined_on_its_free_set_and_certified(monkeypatch):
    # the polish's point off the optimum along the equality (forced, as above): one Newton step on
    # its free set's KKT system (least squares) lands on the optimum, which the certificate passes;
    # the step says so, and the answer is the dense active set's and CVXPY's
    from fsframe.backends.box_qp import BoxQPResult

    X, y = _wide_cold_dual()
    F = y[:, None] * X
    ref = solve_box_qp(F, -np.ones(y.size), y[None, :], np.zeros(1), np.zeros(y.size), np.ones(y.size))
    polished = ref.lam.copy()
    i, j = np.flatnonzero((ref.lam > 1e-9) & (ref.lam < 1 - 1e-9))[:2]
    step = 0.5 * min(polished[i], 1 - polished[i], polished[j], 1 - polished[j])
    polished[i] += step
    polished[j] -= step * y[i] * y[j]
    monkeypatch.setattr(de, "solve_box_qp_pdas",
                        lambda *args, **kw: BoxQPResult("optimal", lam=polished.copy(), nu=ref.nu + 1e-3, iterations=1))
    it = de.DenseHingeSubproblem(X, y, 1.0).solve(quad=0.5)
    assert it.result.message == "dense hinge dual: optimal (smo; smo: refined)"
    assert np.allclose(it.result.duals["lam"], ref.lam, rtol=0, atol=1e-9)
    assert it.intercept[0] == pytest.approx(float(ref.nu[0]), abs=1e-9)
    assert it.result.certificate.gap <= 1e-10
    assert _objective(F, it.result.duals["lam"]) == pytest.approx(_cvxpy_dual(F, y, 1.0), rel=1e-6)
