"""The warm EM step of :class:`~fsframe.dense_em.DenseHingeSubproblem` in one compiled call
(:func:`fsframe.backends.box_qp_jit.hinge_warm_step`) against the general path it replaces: every
warm step of EM runs replayed on a fresh subproblem through ``solve_box_qp`` and
:meth:`~fsframe.dense_em.DenseHingeSubproblem.certificate` — the same multipliers (bitwise: the
same pivots), the same model and intercept (the intercept's midpoint rule when no multiplier is
free included), the same certificate measures, the same decision; a step the compiled call
defers (an infeasible start, a free set the new Hessian cannot hold) is the general path's.
Skipped without numba (the ``fast`` extra)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe.method
from fsframe.backends import box_qp_jit
from fsframe.backends.box_qp import compiled_available
from fsframe.dense_em import GAP_TOL, DenseHingeSubproblem, run_dense_em

pytestmark = pytest.mark.skipif(not compiled_available(), reason="the compiled pivots need numba (the fast extra)")


def _instance(seed, m=120, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    X[:, 1::3] += 0.5 * X[:, ::3][:, : X[:, 1::3].shape[1]]
    w = np.zeros(n)
    w[rng.choice(n, 4, replace=False)] = rng.normal(size=4) + np.sign(rng.normal(size=4))
    y = np.where(X @ w + 0.5 * rng.normal(size=m) > 0, 1.0, -1.0)
    return (X - X.mean(0)) / X.std(0), y


def _recorded_run(X, y_pm, r, method, monkeypatch):
    """An EM run on the dense subproblem, each warm step's ``(q, start)`` and the compiled call's
    answer (``None``: deferred) recorded."""
    steps = []
    solve, warm_step = DenseHingeSubproblem.solve, DenseHingeSubproblem._warm_step

    def spy_solve(self, **kw):
        start = None if self._warm is None else self._warm.copy()
        steps.append({"q": np.array(kw["quad"], dtype=float), "start": start})
        it = solve(self, **kw)
        steps[-1]["it"] = it
        return it

    def spy_step(self, *args, **kw):
        out = warm_step(self, *args, **kw)
        steps[-1]["fast"] = out
        steps[-1]["used"] = args[4].copy()  # the start the compiled call took (a crashed one where it applies)
        return out

    monkeypatch.setattr(DenseHingeSubproblem, "solve", spy_solve)
    monkeypatch.setattr(DenseHingeSubproblem, "_warm_step", spy_step)
    res = fsframe.method.resolve(method)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = run_dense_em(res.loop, res.surrogate, X, y_pm, res.formulation.C, n_features=r)
    monkeypatch.setattr(DenseHingeSubproblem, "solve", solve)
    monkeypatch.setattr(DenseHingeSubproblem, "_warm_step", lambda self, *args, **kw: None)  # the general path
    return out, steps


@pytest.mark.parametrize(("seed", "r", "method", "decades"),
                         [(0, 3, "em-l0", 0), (1, 5, "em-l0", 0), (2, 4, "arom", 0), (3, 2, "em-l0", 0),
                          (0, 3, "em-l0", 3)])
def test_every_warm_step_equals_the_general_path(seed, r, method, decades, monkeypatch):
    # standardised columns, and columns on scales 1e-3..1e3 (decades = 3), where the model's and
    # objective's agreement is what the certificate holds them to (1e-9), not rounding's 1e-13
    X, y_pm = _instance(seed)
    if decades:
        X = X * np.logspace(-decades, decades, X.shape[1])[np.random.default_rng(50 + seed).permutation(X.shape[1])]
    tol = 1e-9 if decades else 1e-13
    out, steps = _recorded_run(X, y_pm, r, method, monkeypatch)
    warm = [s for s in steps if s["start"] is not None]
    fast = [s for s in warm if s.get("fast") is not None]
    assert len(fast) >= len(warm) - 2 and len(fast) >= 5  # the compiled call took the steps
    for s in warm:
        sub = DenseHingeSubproblem(X, y_pm, 1.0)
        sub._warm = s.get("used", s["start"]).copy()
        ref = sub.solve(quad=s["q"])  # the general path: solve_box_qp from the same start
        it = s["it"]
        assert it.ok and ref.ok
        lam, lam_ref = it.result.duals["lam"], ref.result.duals["lam"]
        assert it.result.iterations == ref.result.iterations  # the same pivots
        np.testing.assert_array_equal(lam, lam_ref)
        np.testing.assert_allclose(it.coef, ref.coef, rtol=0, atol=tol * max(1.0, float(np.abs(ref.coef).max())))
        assert abs(float(it.intercept[0] - ref.intercept[0])) <= 10 * tol * max(1.0, abs(float(ref.intercept[0])))
        np.testing.assert_allclose(it.x[X.shape[1] + 1:], ref.x[X.shape[1] + 1:], rtol=0, atol=10 * tol)
        assert it.objective == pytest.approx(ref.objective, rel=tol)
        c, c_ref = it.result.certificate, ref.result.certificate
        for name in ("gap", "primal_residual", "dual_residual"):
            assert abs(getattr(c, name) - getattr(c_ref, name)) <= tol, name
        assert c.dual_bound == pytest.approx(c_ref.dual_bound, rel=tol)
        # the measures the compiled call returned are those of the Python certificate at its answer
        judged = sub.certificate(s["q"], it.coef, float(it.intercept[0]), lam)
        assert judged["optimal"] and abs(judged["gap"] - c.gap) <= tol


def test_the_intercept_without_a_free_multiplier_is_the_midpoint(monkeypatch):
    # balanced classes and a heavy weight on the one live column: every sample inside its margin,
    # every multiplier at C, none free; the intercept is the midpoint of its optimal interval
    # (box_qp._canonical_nu), found by the compiled call as by the general path
    X, y_pm = _instance(7, m=60, n=12)
    y_pm = np.where(np.arange(60) % 2 == 0, 1.0, -1.0)
    q = np.full(12, np.inf)
    q[3] = 1e4
    live = np.isfinite(q)
    s = 1 / np.sqrt(2 * q[live])
    monkeypatch.setattr(DenseHingeSubproblem, "_warm_step", lambda self, *args, **kw: None)
    ref = DenseHingeSubproblem(X, y_pm, 1.0)
    first = ref.solve(quad=q)  # cold, the general path
    ref._warm = first.result.duals["lam"].copy()
    again = ref.solve(quad=q)  # warm, the general path
    monkeypatch.undo()
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    fast = sub._warm_step(sub._YX[:, live] * s, q, live, s, first.result.duals["lam"])
    assert fast is not None
    lam, w, b, cert, pivots = fast
    assert np.all(lam == 1.0) and cert["optimal"] and pivots == again.result.iterations
    np.testing.assert_array_equal(lam, again.result.duals["lam"])
    assert b == pytest.approx(float(again.intercept[0]), rel=1e-12, abs=1e-13)
    # the midpoint: the interval of intercepts that keep every sample inside its margin (all
    # multipliers at C) is (-1 - min_i y_i u_i, 1 - max_i y_i u_i) over each class, u = X w
    u = X @ w
    pos, neg = u[y_pm > 0], u[y_pm < 0]
    interval = (float(np.max(-1.0 - neg)), float(np.min(1.0 - pos)))  # y_i (u_i + b) <= 1 for every i
    assert interval[0] < interval[1]
    assert b == pytest.approx(0.5 * (interval[0] + interval[1]), rel=1e-9, abs=1e-12)


def test_a_start_off_the_equality_is_deferred_to_the_general_path():
    X, y_pm = _instance(4, m=50, n=10)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    q = np.ones(10)
    live = np.isfinite(q)
    s = 1 / np.sqrt(2 * q)
    start = np.zeros(50)
    start[np.flatnonzero(y_pm > 0)[0]] = 0.5  # y'lam = 0.5: not a feasible start
    assert sub._warm_step(sub._YX * s, q, live, s, start) is None
    start[np.flatnonzero(y_pm < 0)[0]] = 0.5
    assert sub._warm_step(sub._YX * s, q, live, s, start) is not None
    assert box_qp_jit.compiled_hinge() is not None


def test_a_step_numba_cannot_compile_leaves_the_general_path(monkeypatch):
    # numba refusing the step on its first call (a typing error) is warned once and the warm steps
    # run through solve_box_qp: the same run as with the step, no error out of solve
    from numba.core.errors import TypingError

    X, y_pm = _instance(5, m=80, n=20)
    res = fsframe.method.resolve("em-l0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = run_dense_em(res.loop, res.surrogate, X, y_pm, res.formulation.C, n_features=3)
    monkeypatch.setattr(box_qp_jit, "_HINGE", [None])  # the module's state restored after the test

    def refused(*args):
        raise TypingError("planted: cannot type the step")

    init = DenseHingeSubproblem.__init__

    def with_refused_step(self, *args, **kw):
        init(self, *args, **kw)
        self._compiled_step = refused

    monkeypatch.setattr(DenseHingeSubproblem, "__init__", with_refused_step)
    with pytest.warns(RuntimeWarning, match="could not compile the hinge dual's warm step"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", category=UserWarning)
            out = run_dense_em(res.loop, res.surrogate, X, y_pm, res.formulation.C, n_features=3)
    assert box_qp_jit.compiled_hinge() is None  # dropped: the general path from now on
    assert np.array_equal(out.support, ref.support) and out.n_iter == ref.n_iter
    np.testing.assert_allclose(out.coef, ref.coef, rtol=0, atol=1e-12)


def test_a_strided_label_vector_keeps_the_compiled_step(monkeypatch):
    # a column of a label matrix (Y[:, 0], strided) is legal y_pm: the compiled step runs on it (no
    # warning, not dropped for the process) and answers as on the contiguous labels
    monkeypatch.setattr(box_qp_jit, "_HINGE", [None])  # the module's state restored after the test
    X, y_pm = _instance(6, m=60, n=10)
    Y = np.stack([y_pm, -y_pm], axis=1)
    assert not Y[:, 0].flags.c_contiguous
    runs = []
    for y in (Y[:, 0], y_pm):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            sub = DenseHingeSubproblem(X, y, 1.0)
            sub.solve(quad=np.ones(10))
            runs.append(sub.solve(quad=np.full(10, 2.0)))
    assert box_qp_jit.compiled_hinge() is not None
    assert runs[0].result.message == "dense hinge dual: optimal"  # the compiled warm step certified it
    np.testing.assert_array_equal(runs[0].coef, runs[1].coef)
    np.testing.assert_array_equal(runs[0].result.duals["lam"], runs[1].result.duals["lam"])


def _kernel_cert(kernel, sub, q, w, b, lam):
    live = np.flatnonzero(np.isfinite(q))
    xi, measures = np.empty(sub.y.size), np.empty(6)
    ok = kernel(sub.X, sub._YX, sub.y, live, q[live], sub.C, lam, w[live].copy(), float(b), GAP_TOL, xi, measures)
    names = ("gap", "equality", "box", "stationarity", "primal", "dual")
    return dict(zip(names, measures.tolist()), xi=xi, optimal=bool(ok))


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_the_step_certificate_refuses_perturbed_answers_as_certificate_does(compiled):
    # the compiled step's measures (box_qp_jit.hinge_measures, compiled and its Python body) on
    # answers each perturbed to break one measure (the intercept moved: the gap alone): that measure above the tolerance, the answer
    # refused, every measure as DenseHingeSubproblem.certificate reads it
    kernel = box_qp_jit.compiled_measures() if compiled else box_qp_jit.hinge_measures
    X, y_pm = _instance(3, m=90, n=25)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    q = np.linspace(0.5, 3.0, 25)
    q[[2, 7]] = np.inf
    it = sub.solve(quad=q)
    lam, w, b = it.result.duals["lam"], it.coef, float(it.intercept[0])
    free = np.flatnonzero((lam > 1e-6) & (lam < 1.0 - 1e-6))
    at_c = np.flatnonzero(lam == 1.0)
    i, k = free[0], at_c[0]
    kf = free[y_pm[free] == y_pm[k]][0]  # moved with k, so that y'lam stays 0
    off, over = lam.copy(), lam.copy()
    off[i] += 1e-6  # off the equality
    over[k] += 1e-6  # out of the box, on the equality
    over[kf] -= 1e-6
    w2 = w.copy()
    w2[0] += 1e-6  # the model off the dual's: stationarity
    cases = {"own": (w, b, lam, None), "gap": (w, b + 1e-6, lam, "gap"), "equality": (w, b, off, "equality"),
             "box": (w, b, over, "box"), "stationarity": (w2, b, lam, "stationarity")}
    for name, (wc, bc, lc, broken) in cases.items():
        got, ref = _kernel_cert(kernel, sub, q, wc, bc, lc), sub.certificate(q, wc, bc, lc)
        assert got["optimal"] == ref["optimal"] == (broken is None), name
        if broken is not None:
            assert abs(got[broken]) > 10 * GAP_TOL, name
        for measure in ("gap", "equality", "box", "stationarity", "primal", "dual"):
            assert got[measure] == pytest.approx(ref[measure], rel=1e-9, abs=1e-13), (name, measure)
        np.testing.assert_allclose(got["xi"], ref["xi"], rtol=0, atol=1e-12)


def test_a_warm_step_whose_pivots_fail_reports_their_status_without_repeating_them(monkeypatch):
    # the compiled step's pivots ending at their limit (a limit of 2 planted into the call) are
    # reported as solve_box_qp would report them from that start, and the step goes on cold:
    # solve_box_qp runs once (the cold attempt), not again from the warm start
    import fsframe.dense_em as dense_em
    import fsframe.dense_rules as dense_rules

    X, y_pm = _instance(7, m=80, n=19)  # fewer than CRASH_MIN_RATIO columns per row: no crash of the warm start
    assert not dense_rules.warm_crash_applies(X.shape, X.shape[1])
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    assert sub.solve(quad=np.ones(19)).ok
    step = sub._compiled_step
    sub._compiled_step = lambda *a: step(*a[:8], 2, *a[9:])  # max_iter: 2 pivots
    calls = []
    solve_box_qp = dense_em.solve_box_qp
    monkeypatch.setattr(dense_em, "solve_box_qp", lambda *a, **kw: calls.append(kw) or solve_box_qp(*a, **kw))
    it = sub.solve(quad=np.linspace(0.2, 5.0, 19))
    assert len(calls) == 1 and calls[0]["start"] is None  # the cold attempt only
    cold = DenseHingeSubproblem(X, y_pm, 1.0).solve(quad=np.linspace(0.2, 5.0, 19))
    assert it.ok and it.result.message == "dense hinge dual: optimal (cold; warm: iteration limit)"
    assert it.result.iterations == 2 + cold.result.iterations
    np.testing.assert_array_equal(it.result.duals["lam"], cold.result.duals["lam"])


def test_the_step_forms_the_scaled_columns_as_numpy_does(monkeypatch):
    # the compiled step fills its buffer F with YX[:, live] * s itself (form_f=True): each entry
    # numpy's product, bitwise, and the step's answer bitwise the one from numpy's F (form_f=False)
    X, y_pm = _instance(8, m=90, n=30)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    q = np.linspace(0.3, 4.0, 30)
    q[[0, 5, 17]] = np.inf  # columns out: F's columns are the live ones
    start = sub.solve(quad=1.5 * q).result.duals["lam"]  # a start the new Hessian holds (no deferral)
    live = np.isfinite(q)
    s = 1.0 / np.sqrt(2.0 * q[live])
    step = box_qp_jit.compiled_hinge()
    outs = []
    for form in (True, False):
        F = np.empty((90, s.size)) if form else sub._YX[:, live] * s
        bufs = np.empty(90), np.empty(s.size), np.empty(90), np.empty(6)
        code, its, b, _ = step(F, sub._no_h, False, sub._f, sub.y, sub._lo, sub._hi, start, 1000, sub.X, sub._YX,
                               np.flatnonzero(live), s, q[live], sub.C, GAP_TOL, 1e-10, *bufs, form)
        outs.append((F, code, its, b, bufs))
    (F1, *a1, bufs1), (F0, *a0, bufs0) = outs
    assert np.array_equal(F1, F0) and a1[0] == box_qp_jit.HINGE_CERTIFIED and a1 == a0
    for u, v in zip(bufs1, bufs0):
        assert np.array_equal(u, v)
    # solve's warm step on a fresh subproblem from the same start (not crashed): the same answer again
    import fsframe.dense_em as dense_em

    monkeypatch.setattr(dense_em, "warm_crash_applies", lambda shape, n: False)
    again = DenseHingeSubproblem(X, y_pm, 1.0)
    again._warm = start.copy()
    it = again.solve(quad=q)
    assert it.result.message == "dense hinge dual: optimal"
    assert np.array_equal(it.result.duals["lam"], bufs0[0]) and float(it.intercept[0]) == a0[2]


def _nudged_warm_step(n, monkeypatch):
    """``(X, y, q, ref, moved, it)``: a warm step ``it`` (quad ``q``, after a cold one) whose compiled
    warm answer was moved along the equality on two free multipliers (planted into its result, the
    moved point's certificate appended to ``moved``), and ``ref`` the unplanted subproblem's step."""
    import fsframe.dense_em as dense_em

    monkeypatch.setattr(dense_em, "warm_crash_applies", lambda shape, n: False)  # the start as it is
    X, y_pm = _instance(9, m=60, n=n)
    q0, q = np.ones(n), np.linspace(0.5, 2.0, n)
    clean = DenseHingeSubproblem(X, y_pm, 1.0)
    assert clean.solve(quad=q0).ok
    ref = clean.solve(quad=q)
    assert ref.result.message == "dense hinge dual: optimal"  # the compiled step, certified as it is
    warm_step = DenseHingeSubproblem._warm_step
    moved = []

    def nudged(self, F, q, live, s, warm, form=False, **kw):
        lam, w, b, cert, its = warm_step(self, F, q, live, s, warm, form=form, **kw)
        free = np.flatnonzero((lam > 1e-6) & (lam < self.C - 1e-6))
        i, j = free[0], free[np.flatnonzero(y_pm[free] != y_pm[free[0]])[0]]  # y' lam kept: +t on both
        t = 0.3 * min(lam[i], self.C - lam[i], lam[j], self.C - lam[j])
        lam = lam.copy()
        lam[[i, j]] += t
        w = np.zeros(self.n_groups)
        w[live] = s * ((self._YX[:, live] * s).T @ lam)
        moved.append(self.certificate(q, w, b, lam))
        return lam, w, b, moved[-1], its

    monkeypatch.setattr(DenseHingeSubproblem, "_warm_step", nudged)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    assert sub.solve(quad=q0).result.message == "dense hinge dual: optimal" and not moved  # cold: no warm step
    it = sub.solve(quad=q)
    assert not moved[-1]["optimal"] and moved[-1]["gap"] > 1e3 * GAP_TOL  # the planted point is refused
    return X, y_pm, q, ref, moved, it


@pytest.mark.parametrize("n", [20, 90])
def test_a_refused_compiled_warm_point_is_refined_on_its_free_set(n, monkeypatch):
    # the compiled warm step's answer moved along the equality on two free multipliers (planted into
    # its result): refused by the certificate, then one Newton step on its free set (the step
    # DenseHingeSubproblem._refined takes for the general path's points) lands on the optimum, which
    # the certificate passes: "warm: refined", the model the unplanted step gives and CVXPY's
    # objective. n = 90 > 60 samples: the step reads the Hessian and leaves solve's buffer for F
    # unfilled, so the refinement must form F itself
    import cvxpy as cp

    X, y_pm, q, ref, _, it = _nudged_warm_step(n, monkeypatch)
    assert it.ok and it.result.message == "dense hinge dual: optimal (warm; warm: refined)"
    assert it.result.certificate.gap <= GAP_TOL
    np.testing.assert_allclose(it.result.duals["lam"], ref.result.duals["lam"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(it.coef, ref.coef, rtol=0, atol=1e-9 * np.abs(ref.coef).max())
    assert float(it.intercept[0]) == pytest.approx(float(ref.intercept[0]), abs=1e-8)
    w, b = cp.Variable(n), cp.Variable()
    primal = cp.Problem(cp.Minimize(cp.sum(cp.pos(1 - cp.multiply(y_pm, X @ w + b))) + q @ cp.square(w)))
    primal.solve(solver=cp.CLARABEL)
    assert it.objective == pytest.approx(primal.value, rel=1e-7)


@pytest.mark.parametrize("n", [20, 90])
def test_a_refused_compiled_warm_point_that_no_refinement_certifies_is_not_returned(n, monkeypatch):
    # as above, with the refinement failing (_refined: None): the refused point is dropped, a later
    # attempt certifies the step, and the answer is the unplanted step's (with the refused point kept,
    # the step said optimal at gaps 0.34 and 0.19 here)
    monkeypatch.setattr(DenseHingeSubproblem, "_refined", lambda self, *args: None)
    _, _, _, ref, moved, it = _nudged_warm_step(n, monkeypatch)
    assert it.ok and it.result.certificate.gap <= GAP_TOL and it.result.certificate.gap < moved[-1]["gap"]
    message = it.result.message
    assert message.startswith("dense hinge dual: optimal (") and "warm: not certified (gap" in message
    assert not message.startswith("dense hinge dual: optimal (warm;")  # a later attempt certified it
    np.testing.assert_allclose(it.coef, ref.coef, rtol=0, atol=1e-7 * np.abs(ref.coef).max())
    assert it.objective == pytest.approx(ref.objective, rel=1e-9)


def _doubled(seed, scales):
    """Every sample twice, columns on the scales ``scales`` (degenerate duals: the shrinking's
    null spaces have several dimensions)."""
    rng = np.random.default_rng(1000 + seed)
    X = rng.normal(size=(60, 48))
    X = np.vstack([X, X]) * scales
    w = np.zeros(48)
    w[:4] = 1.0
    return X, np.where(X @ w + 0.3 * rng.normal(size=120) > 0, 1.0, -1.0)


@pytest.mark.parametrize("seed, scaled", [(5, True), (3, False)])
def test_fits_on_duplicated_samples_stay_on_the_dense_path_as_with_the_python_pivots(seed, scaled, monkeypatch):
    """Duplicated samples, C = 100: the compiled pivots hand a free set the new Hessian cannot hold
    to the Python ``_regularize`` (a compiled twin chose its null vectors by rounding and this fit
    then fell back from ``dense_em``, "not certified"); the fit is the Python pivots' (FSFRAME_NO_JIT):
    the same selection and EM iterations, on ``dense_em`` with no fallback, models within 1e-9."""
    import fsframe

    X, y = _doubled(seed, np.logspace(-2, 2, 48) if scaled else 1.0)
    fits = []
    for no_jit in (False, True):
        if no_jit:
            monkeypatch.setenv("FSFRAME_NO_JIT", "1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(fsframe.fit(X, y, method="em-l0", n_features=5, C=100.0))
    jit, py = fits
    for res in fits:
        assert res.info.get("solver_path") == "dense_em" and not res.info.get("dense_em_fallback")
    assert list(jit.selected) == list(py.selected) and jit.n_iter == py.n_iter
    scale = max(1.0, float(np.abs(py.coef).max()))
    np.testing.assert_allclose(np.asarray(jit.coef), np.asarray(py.coef), rtol=0, atol=1e-9 * scale)


def test_solves_warm_step_is_the_compiled_call_on_its_own_bit_for_bit(monkeypatch):
    # solve hands the compiled call the live columns' indices and weights it found once
    # (_warm_step's cols) and fills the iterate's x in place of a concatenate: the same answer as
    # the compiled call finding them itself on numpy's F, bit for bit, and x the parts it is made of
    import fsframe.dense_em as dense_em

    monkeypatch.setattr(dense_em, "warm_crash_applies", lambda shape, n: False)  # the start as it is
    X, y_pm = _instance(9, m=80, n=16)
    q0 = np.ones(16)
    q = np.linspace(0.4, 3.0, 16)
    q[[0, 5, 6]] = np.inf  # fixed groups: the live columns are not a prefix
    live = np.isfinite(q)
    s = 1 / np.sqrt(2 * q[live])
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    start = sub.solve(quad=q0).result.duals["lam"].copy()
    it = sub.solve(quad=q)
    assert it.result.message == "dense hinge dual: optimal"  # the compiled step, certified as it is
    other = DenseHingeSubproblem(X, y_pm, 1.0)
    fast = other._warm_step(other._YX[:, live] * s, q, live, s, start)
    assert fast is not None  # not deferred: the compiled call answered both
    lam, w, b, cert, pivots = fast
    assert cert["optimal"] and pivots == it.result.iterations
    np.testing.assert_array_equal(it.result.duals["lam"], lam)
    np.testing.assert_array_equal(it.coef, w)
    assert float(it.intercept[0]) == b and np.all(w[~live] == 0.0)
    np.testing.assert_array_equal(it.x, np.concatenate([w, [b], cert["xi"]]))
    assert it.x.shape == (16 + 1 + 80,)


def test_the_crashed_start_clips_the_previous_multipliers_into_the_box(monkeypatch):
    # _crashed_start clips the previous multipliers into [0, C] before the crash (np.clip's values,
    # by np.minimum/np.maximum): a start a hair outside the box crashes from its clipped point
    import fsframe.dense_em as dense_em

    seen = []

    def spy(F, f, E, e, lo, hi, lam, sweeps):
        seen.append(lam.copy())
        return None

    monkeypatch.setattr(dense_em, "crash_start", spy)
    X, y_pm = _instance(12, m=40, n=30)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    live = np.ones(30, dtype=bool)
    s = np.full(30, 0.5)
    assert dense_em.warm_crash_applies((40, 30), sub.n_groups)
    pos, neg = np.flatnonzero(y_pm > 0), np.flatnonzero(y_pm < 0)
    warm = np.zeros(40)
    warm[pos[:3]] = [0.2, 1.0 + 1e-13, 0.5]
    warm[neg[:3]] = [0.7, 1.0, -1e-13]  # y' warm = 0 up to 2e-13 (within the start's tolerance)
    assert sub._crashed_start((40, 30), live, s, warm) is None
    np.testing.assert_array_equal(seen[0], np.clip(warm, 0.0, 1.0))
    assert seen[0][pos[1]] == 1.0 and seen[0][neg[2]] == 0.0
