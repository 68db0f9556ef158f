"""EM steps of ``logistic`` and ``least-squares`` solved from ``X`` by Newton's method
(:mod:`fsframe.ridge`, the ``quad_from_data`` protocol, :class:`fsframe.quad_path.QuadFromDataSubproblem`):
one step against CVXPY, the certificate's bound against the true distance to the optimum, whole
EM fits equal to the cone path (Clarabel and ECOS) — iterations, selections, models — and the
options that force either path."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe.enums import Status
from fsframe.errors import UnsupportedProblemError
from fsframe.quad_path import QuadFromDataSubproblem
from fsframe.ridge import _certify, ridge_glm
from fsframe.working_set import WorkingSetOptions
from fsframe_glm import LeastSquaresFormulation, LogisticFormulation, MultinomialFormulation

CONE = WorkingSetOptions(from_data=False)
FORCE = WorkingSetOptions(from_data=True)


def _data(m, n, seed, task):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    w0 = np.zeros(n)
    w0[:4] = [2.0, -1.5, 1.0, 0.8]
    f = X @ w0 + 0.4
    if task == "squared":
        return X, f + 0.3 * rng.normal(size=m)
    return X, np.where(f + 0.6 * rng.normal(size=m) > 0, 1.0, -1.0)


def _cvxpy_step(loss, X, y, C, q):
    """The step by CVXPY (Clarabel, tight): ``(objective, w, b)``."""
    n = X.shape[1]
    w, b = cp.Variable(n), cp.Variable()
    z = X @ w + b
    fit = C * cp.sum(cp.logistic(-cp.multiply(y, z))) if loss == "logistic" else 0.5 * C * cp.sum_squares(y - z)
    free = np.isfinite(q)
    cons = [w[~free] == 0] if (~free).any() else []
    prob = cp.Problem(cp.Minimize(fit + cp.sum(cp.multiply(np.where(free, q, 0.0), cp.square(w)))), cons)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, w.value, float(b.value)


# ---------------------------------------------------------------------------- one step
@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("m, n", [(50, 12), (25, 60)])  # the (n+1)-square Cholesky, and Woodbury (n > m)
def test_step_equals_cvxpy(loss, m, n):
    X, y = _data(m, n, 3, loss)
    rng = np.random.default_rng(4)
    q = rng.uniform(0.05, 4.0, n)
    q[[1, 7]] = np.inf  # fixed at zero
    sol = ridge_glm(loss, X, y, 1.7, q)
    ref, w, b = _cvxpy_step(loss, X, y, 1.7, q)
    assert sol.status is Status.OPTIMAL and sol.certificate.gap <= 1e-12
    assert sol.objective == pytest.approx(ref, rel=1e-9)
    # CVXPY's logistic goes through exponential cones, accurate to about 1e-6 in the coefficients
    # and intercept (its objective to 1e-9 above; its gradient there 1e-5, Newton's 1e-12 at n = 60):
    # Newton's certificate bounds our own distance to the optimum
    rel = 1e-6 if loss == "squared" else 1e-5
    assert np.abs(sol.coef - w).max() <= rel * np.abs(w).max() and sol.distance_bound <= 1e-6
    assert sol.intercept == pytest.approx(b, rel=rel, abs=1e-8 if loss == "squared" else 1e-5)
    assert sol.coef[1] == 0.0 and sol.coef[7] == 0.0
    assert sol.objective <= ref + 1e-9 * ref  # never above CVXPY's optimum beyond its accuracy


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("m, n", [(50, 12), (25, 60)])
def test_certificate_bounds_the_true_gap_and_distance(loss, m, n):
    """Stopped before any Newton step (``w = 0``, ``b`` polished) the point is not optimal: its
    certified bounds must still hold against the optimum, and the status must say it is not
    OPTIMAL. And at the optimum's ``w`` with ``b`` moved off ``b*(w)`` the bound's intercept term
    must cover the excess."""
    X, y = _data(m, n, 5, loss)
    q = np.random.default_rng(6).uniform(0.2, 2.0, n)
    best = ridge_glm(loss, X, y, 2.0, q)
    rough = ridge_glm(loss, X, y, 2.0, q, max_iter=0)
    gap = rough.objective - best.objective
    assert gap > 1e-3  # a real gap to bound
    assert gap <= rough.gap_bound
    assert np.linalg.norm(rough.coef - best.coef) <= rough.distance_bound
    assert rough.status is Status.OPTIMAL_INACCURATE and rough.certificate.gap > 1e-6
    for shift in (1e-6, 1e-3):
        F, _, bound, dist, _, cert, status = _certify(loss, X, y, 2.0, q, best.coef, best.intercept + shift,
                                                      float(np.linalg.norm(X)), 1e-6)
        assert 0 < F - best.objective <= bound and np.isfinite(bound)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_certificate_is_tight_where_it_can_be(loss):
    """Where the bound is attained it must not undercut the gap: a feature that is all zeros
    (``w_0`` curved by ``q_0`` alone, the least weight: ``G - G* = q_0 w_0^2`` exactly, the bound
    ``(2 q_0 w_0)^2 / (2 mu)`` equal to it with ``mu = 2 min q``), and an intercept off its optimum
    with every feature fixed (the bound ``|g_b| delta`` is 2 (squared) or about 4 (logistic)
    times the gap, an undercut by a factor 10 shows)."""
    X, y = _data(40, 4, 9, loss)
    X = X[:, :2].copy()
    X[:, 0] = 0.0
    q = np.array([0.01, 100.0])
    best = ridge_glm(loss, X, y, 1.0, q)
    rough = ridge_glm(loss, X, y, 1.0, q, start=(best.coef + [1.0, 0.0], best.intercept), max_iter=0)
    gap = rough.objective - best.objective
    assert gap == pytest.approx(0.01, rel=1e-6)
    assert gap <= rough.gap_bound <= 1.01 * gap
    assert np.linalg.norm(rough.coef - best.coef) <= rough.distance_bound <= 1.01
    fixed = np.array([np.inf, np.inf])
    best = ridge_glm(loss, X, y, 1.0, fixed)
    for shift in (1e-4, 1e-2):
        F, _, bound, *_ = _certify(loss, X[:, :0], y, 1.0, np.zeros(0), np.zeros(0), best.intercept + shift,
                                   0.0, 1e-6)
        assert F - best.objective <= bound <= 5.0 * (F - best.objective)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_certificate_covers_an_intercept_that_hides_the_gradient(loss):
    """``w`` off the optimum by 0.05 and ``b`` moved (about 0.1) to where ``grad_w F(w, b) = 0``:
    the gradient in ``w`` says nothing, and every bit of ``||grad G(w)||`` must come from the
    intercept's term ``||Q^(-1/2) X'||_F C L2 sqrt(m) delta``. One feature, nearly constant (so the
    profile's curvature is ``2 q`` and, for least squares, the distance bound is attained within
    1 %): the term dropped, or ``delta`` halved, undercuts the true distance."""
    import scipy.optimize as so

    from fsframe.ridge import _derivs

    X, y = _data(40, 4, 21, loss)
    X = 2.0 + 0.01 * X[:, :1]
    q = np.array([0.3])
    best = ridge_glm(loss, X, y, 1.0, q, tol=1e-14)
    w = best.coef + 0.05
    b = so.brentq(lambda b: (X.T @ _derivs(loss, y, X @ w + b, 1.0)[1] + 2.0 * q * w)[0],
                  best.intercept - 3.0, best.intercept + 3.0, xtol=1e-14)
    assert 0.09 < abs(b - best.intercept) < 0.11
    F, _, bound, dist, _, cert, status = _certify(loss, X, y, 1.0, q, w, b, float(np.linalg.norm(X)), 1e-6)
    assert np.linalg.norm(w - best.coef) == pytest.approx(0.05) and np.linalg.norm(w - best.coef) <= dist
    assert 0 < F - best.objective <= bound
    assert status is Status.OPTIMAL_INACCURATE
    if loss == "squared":
        assert dist <= 1.01 * 0.05 and bound <= 1.05 * (F - best.objective)


@pytest.mark.parametrize("m, n", [(30, 12), (12, 30)])  # the scaled (n+1)-square Cholesky, and Woodbury
def test_newton_direction_solves_the_full_system(m, n):
    """The Newton direction against a dense solve of ``H = [X' D X + diag(q2), X' d; d' X, sum d]``
    with features and weights of mixed scales (a Schur complement off by any factor, or a scaling
    not undone, moves ``db`` and with it ``dw``)."""
    from fsframe.ridge import _newton_direction

    rng = np.random.default_rng(22)
    X = rng.normal(size=(m, n)) * np.logspace(-2, 2, n)
    d = rng.uniform(0.05, 1.0, m)
    q2 = np.logspace(-3, 3, n)
    gw, gb = rng.normal(size=n), 0.7
    Xa = np.hstack([X, np.ones((m, 1))])
    H = Xa.T @ (d[:, None] * Xa) + np.diag(np.append(q2, 0.0))
    ref = -np.linalg.solve(H, np.append(gw, gb))
    dw, db = _newton_direction(X, d, q2, gw, gb)
    assert np.abs(dw - ref[:n]).max() <= 1e-8 * np.abs(ref).max() and db == pytest.approx(ref[n], rel=1e-8)


def test_declines_without_strong_convexity():
    X, y = _data(30, 5, 0, "logistic")
    assert ridge_glm("logistic", X, y, 1.0, np.array([1.0, 0.0, 1.0, 1.0, 1.0])) is None
    assert ridge_glm("logistic", X, np.ones(30), 1.0, np.ones(5)) is None  # one class: no optimum


def test_logistic_curvature_keeps_its_digits_far_out():
    """``l''(z) = sigma(z) sigma(-z)`` where ``sigma(-z)`` is tiny (``z`` = 40): computed as ``s (1 -
    s)`` it rounds to 0 (``1 - s`` loses ``s``'s digits), the true value is ``exp(-40)``."""
    from fsframe.ridge import _derivs

    _, g, h = _derivs("logistic", np.array([-1.0, 1.0]), np.array([40.0, 40.0]), 1.0)
    assert h[0] == pytest.approx(np.exp(-40.0), rel=1e-12) and h[1] == pytest.approx(np.exp(-40.0), rel=1e-12)
    assert g[1] == pytest.approx(-np.exp(-40.0), rel=1e-12) and g[0] == pytest.approx(1.0, rel=1e-15)


def test_the_protocol_is_offered_by_the_binary_losses_only():
    assert "quad_from_data" in LogisticFormulation().provides()
    assert "quad_from_data" in LeastSquaresFormulation().provides()
    assert "quad_from_data" not in MultinomialFormulation().provides()


@pytest.mark.parametrize("form, loss", [(LogisticFormulation(C=1.3), "logistic"),
                                        (LeastSquaresFormulation(C=0.8), "squared")])
def test_subproblem_step_reads_back_as_cvxpy(form, loss):
    """The subproblem writes Newton's answer into the compiled model's columns: its loss (the
    settled epigraph / residuals) and objective are CVXPY's."""
    from fsframe.backends import ClarabelBackend

    X, y = _data(40, 9, 8, loss)
    q = np.linspace(0.3, 2.0, 9)
    sub = QuadFromDataSubproblem(form, X, y, frozenset({"quad"}), ClarabelBackend())
    it = sub.solve(quad=q)
    ref, w, b = _cvxpy_step(loss, X, y, form.C, q)
    assert it.result.backend == "newton" and it.status is Status.OPTIMAL
    assert it.objective == pytest.approx(ref, rel=1e-9)
    assert np.allclose(it.coef, w, rtol=1e-6, atol=1e-8) and float(it.intercept[0]) == pytest.approx(b, abs=1e-7)
    assert it.t == pytest.approx(np.abs(w), rel=1e-6, abs=1e-8)
    # the next solve starts from this one (EM's warm start) and reads the new weights
    it2 = sub.solve(quad=2.0 * q)
    ref2 = _cvxpy_step(loss, X, y, form.C, 2.0 * q)[0]
    assert it2.objective == pytest.approx(ref2, rel=1e-9)
    sub.close()


# ---------------------------------------------------------------------------- whole EM fits
TIGHT = {"clarabel": {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11}, "ecos": {}}
"""The cone path as the reference, Clarabel at tight tolerances: at its default 1e-8 its EM
iterates drift 2e-6 (relative) from ECOS's and Newton's, and one EM run stopped one iteration
later (the step rule ``tol = 1e-5`` read through that noise)."""


def _fit(X, y, method, backend, ws=WorkingSetOptions(), **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        opts = TIGHT[backend] if ws.from_data is False else None
        return fsframe.fit(X, y, method=method, backend=backend, working_set=ws, backend_options=opts, **kw)


def _same_fit(a, b, rel=1e-6):
    assert a.n_iter == b.n_iter
    assert a.selected.tolist() == b.selected.tolist()
    scale = np.abs(b.coef).max()
    assert np.abs(np.asarray(a.coef) - np.asarray(b.coef)).max() <= rel * scale
    assert np.allclose(a.intercept, b.intercept, rtol=rel, atol=rel * scale)
    assert a.objective == pytest.approx(b.objective, rel=rel)


CASES = [("em-logistic", "logistic", 70, 15, 0), ("em-logistic", "logistic", 40, 90, 1),
         ("em-ls", "squared", 60, 15, 2), ("em-ls", "squared", 30, 70, 3)]


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
@pytest.mark.parametrize("method, task, m, n, seed", CASES)
def test_em_fit_equals_the_cone_path(method, task, m, n, seed, backend):
    X, y = _data(m, n, seed, task)
    if task == "logistic":
        y = (y > 0).astype(int)
    newton = _fit(X, y, method, backend)
    cone = _fit(X, y, method, backend, CONE)
    assert newton.certificate["backend"] == "newton" and newton.certificate["status"] == "optimal"
    assert cone.certificate["backend"] == backend and newton.info["quad_fallbacks"] == ()
    _same_fit(newton, cone)
    assert 0 < newton.selected.size < n and newton.n_iter > 3  # a real EM run, not an empty or dense model


@pytest.mark.parametrize("case", ["mixed scales", "large y, n > m"])
def test_em_ls_hard_steps_are_certified_and_equal_the_cone_path(case):
    """Least squares where the Newton system is badly scaled: features spanning eight orders of
    magnitude (the unscaled Cholesky stalled at max_iter, its step 1e-6 off), and ``y`` of size
    1e3 with n > m (Woodbury; EM's weights reach 1e-5). Every step certified by Newton (no
    fallback), the fit the cone path's."""
    rng = np.random.default_rng(3 if case != "mixed scales" else 0)
    if case == "mixed scales":
        X = rng.normal(size=(80, 30))
        y = 2 * X[:, 0] - 1.5 * X[:, 1] + X[:, 2] + 0.3 + 0.3 * rng.normal(size=80)
        X = X * np.logspace(-4, 4, 30)
    else:
        X = rng.normal(size=(40, 120))
        y = 1e3 * (2 * X[:, 0] - 1.5 * X[:, 1] + X[:, 2]) + 300.0 * rng.normal(size=40)
    newton = _fit(X, y, "em-ls", "clarabel")
    cone = _fit(X, y, "em-ls", "clarabel", CONE)
    assert newton.certificate["backend"] == "newton" and newton.certificate["status"] == "optimal"
    assert newton.info["quad_fallbacks"] == () and newton.info["quad_solves"] == newton.n_iter
    assert newton.selected.tolist() == cone.selected.tolist() and newton.n_iter == cone.n_iter
    assert newton.objective == pytest.approx(cone.objective, rel=1e-6)


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_em_logistic_n_features_and_one_vs_rest_equal_the_cone_path(backend):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(90, 12))
    y = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(90, 3)), axis=1)
    ovr = _fit(X, y, "em-logistic", backend)
    _same_fit(ovr, _fit(X, y, "em-logistic", backend, CONE))
    # the classes' Newton steps, summed (one-vs-rest's info keeps them as a binary fit's does)
    assert ovr.info["quad_solves"] == sum(r.info["quad_solves"] for r in ovr.per_class) >= 3
    assert ovr.info["quad_fallbacks"] == ()
    Xb, yb = _data(60, 20, 12, "logistic")
    _same_fit(_fit(Xb, yb, "em-logistic", backend, n_features=2),
              _fit(Xb, yb, "em-logistic", backend, CONE, n_features=2))


def test_from_data_options_force_either_path(monkeypatch):
    calls = []
    real = LogisticFormulation.solve_quad_from_data

    def counted(self, *a, **k):
        calls.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(LogisticFormulation, "solve_quad_from_data", counted)
    X, y = _data(40, 6, 13, "logistic")
    r = _fit(X, y, "em-logistic", "clarabel", FORCE)
    assert calls and r.certificate["backend"] == "newton"
    calls.clear()
    r = _fit(X, y, "em-logistic", "clarabel", CONE)
    assert not calls and r.certificate["backend"] == "clarabel"
    # forced where a step cannot be taken (a free group with weight 0): a typed error, not a silent cone solve
    from fsframe.backends import ClarabelBackend

    sub = QuadFromDataSubproblem(LogisticFormulation(), X, y, frozenset({"quad"}), ClarabelBackend(), force=True)
    with pytest.raises(UnsupportedProblemError, match="declined"):
        sub.solve(quad=np.array([1.0, 0.0, 1.0, 1.0, 1.0, 1.0]))
    sub.close()


def test_a_hinge_em_is_not_forced_onto_the_quad_path():
    """The hinge has no ``quad_from_data``: forced, its EM takes its own from-data path (the dense
    hinge dual, docs/backends.md), never the Newton steps of the smooth losses."""
    X, y = _data(40, 6, 14, "logistic")
    r = _fit(X, y, "em-l0", "highs", FORCE)
    assert r.info["solver_path"] == "dense_em" and "quad_solves" not in r.info
    assert r.certificate["backend"] == "dense-hinge"


def test_an_uncertified_step_goes_to_the_backend(monkeypatch):
    """A Newton step whose bound misses ``cert_tol`` is not taken: the backend solves that step
    (``info["quad_fallbacks"]`` says why); forced, a typed error."""
    import attrs

    import fsframe.ridge as ridge

    real = ridge.ridge_glm

    def loose(*a, **k):
        sol = real(*a, **k)
        return attrs.evolve(sol, status=Status.OPTIMAL_INACCURATE, message="planted: " + sol.message)

    X, y = _data(40, 6, 15, "logistic")
    exact = _fit(X, y, "em-logistic", "clarabel")
    assert exact.info["quad_solves"] == exact.n_iter and exact.info["quad_fallbacks"] == ()
    monkeypatch.setattr(ridge, "ridge_glm", loose)
    r = _fit(X, y, "em-logistic", "clarabel")
    assert r.certificate["backend"] == "clarabel" and r.info["quad_solves"] == 0
    assert len(r.info["quad_fallbacks"]) == r.n_iter and r.info["quad_fallbacks"][0].startswith("planted")
    assert r.selected.tolist() == exact.selected.tolist()
    with pytest.raises(UnsupportedProblemError, match="not certified within cert_tol"):
        _fit(X, y, "em-logistic", "clarabel", FORCE)


def test_a_subclass_with_its_own_build_is_not_solved_as_its_parent():
    """A subclass that overrides ``build`` (every positive sample counted 20 times) but inherits
    ``solve_quad_from_data`` has no ``quad_from_data`` protocol (it would minimise the parent's
    loss); and if the protocol is claimed anyway, the compiled model's loss at the Newton point
    differs from the one Newton minimised: the step goes to the backend (forced: a typed error)."""
    import attrs

    @attrs.frozen
    class PosWeighted(LogisticFormulation):
        name = "pos-weighted-logistic-test"

        def build(self, X, y, terms):
            y = np.asarray(y, float)
            idx = np.concatenate([np.arange(len(y))] + [np.flatnonzero(y > 0)] * 19)
            return super().build(X[idx], y[idx], terms)

    assert "quad_from_data" in LogisticFormulation().provides()
    assert "quad_from_data" not in PosWeighted().provides()

    @attrs.frozen
    class Claims(PosWeighted):  # claims the protocol with the parent's solver: the loss check catches it
        def solve_quad_from_data(self, X, y, quad, *, start=None, tol=1e-6):
            return LogisticFormulation.solve_quad_from_data(self, X, y, quad, start=start, tol=tol)

    from fsframe.backends import ClarabelBackend

    X, y = _data(60, 6, 17, "logistic")
    q = np.full(6, 0.5)
    cone = QuadFromDataSubproblem(Claims(), X, y, frozenset({"quad"}), ClarabelBackend())
    cone_it = cone.solve(quad=q)
    assert cone_it.result.backend == "clarabel" and cone.quad_solves == 0
    assert len(cone.fallbacks) == 1 and "is not the loss" in cone.fallbacks[0]
    # the fallback is the weighted problem's optimum, not the unweighted Newton point
    plain = ridge_glm("logistic", X, y, 1.0, q, tol=1e-10)
    assert abs(cone_it.objective - plain.objective) > 1.0
    cone.close()
    forced = QuadFromDataSubproblem(Claims(), X, y, frozenset({"quad"}), ClarabelBackend(), force=True)
    with pytest.raises(UnsupportedProblemError, match="is not the loss"):
        forced.solve(quad=q)
    forced.close()


def test_a_newton_system_that_cannot_be_factored_is_not_an_untyped_error(monkeypatch):
    """n > m (Woodbury's branch) with a matrix that Cholesky rejects: ``ridge_glm`` stops with a
    non-certified status instead of raising ``LinAlgError``; the subproblem falls back to the
    backend (forced: a typed error), and a ``LinAlgError`` escaping a plugin's method is handled
    the same way."""
    import fsframe.ridge as ridge

    X, y = _data(20, 40, 18, "logistic")

    def singular(*a, **k):
        raise np.linalg.LinAlgError("planted: not positive definite")

    monkeypatch.setattr(ridge.sla, "cho_factor", singular)
    sol = ridge_glm("logistic", X, y, 1.0, np.full(40, 1e-6), tol=1e-12)
    assert sol.status is not Status.OPTIMAL and "could not be factored" in sol.message
    monkeypatch.undo()

    from fsframe.backends import ClarabelBackend

    monkeypatch.setattr(LogisticFormulation, "solve_quad_from_data", lambda self, *a, **k: singular())
    q = np.full(40, 0.5)
    sub = QuadFromDataSubproblem(LogisticFormulation(), X, y, frozenset({"quad"}), ClarabelBackend())
    it = sub.solve(quad=q)
    assert it.result.backend == "clarabel" and it.status is Status.OPTIMAL
    assert "could not be factored" in sub.fallbacks[0]
    sub.close()
    forced = QuadFromDataSubproblem(LogisticFormulation(), X, y, frozenset({"quad"}), ClarabelBackend(), force=True)
    with pytest.raises(UnsupportedProblemError, match="could not be factored"):
        forced.solve(quad=q)
    forced.close()


@pytest.mark.parametrize("method, task, second", [("em-logistic", "logistic", "ecos"), ("em-ls", "squared", "highs")])
def test_verify_and_keep_model_read_the_newton_answer(method, task, second):
    """The answer is written into the compiled model's columns: ``verify=`` re-solves that last
    subproblem on a backend and finds the same optimum; ``keep_model`` returns the Pyomo model."""
    X, y = _data(60, 12, 16, task)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method=method, verify=second, keep_model=True)
    v = r.certificate["verify"]
    assert r.certificate["backend"] == "newton" and v["backend"] == second and v["status"] == "optimal"
    assert abs(v["objective_gap"]) <= 1e-7 and v["coef_distance"] <= 1e-5
    assert r.info["model"] is not None
