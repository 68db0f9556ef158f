"""DSO-FS against its own convex model (paper 004 eq. 5 at p = 1, the bias row counted as in eq. 2),
written here independently in CVXPY: the minimal example on which Algorithm 1 as written stalls,
the exact finish, the certificate of the returned point, the hard margin when m > rank, the
least-squares substitute said aloud, and a random-instance attack at CI size (the full size is
benchmarks/dso_exact.py)."""

from __future__ import annotations

import re
import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning, DataWarning, IncompatibleComponentsError, InfeasibleParameterError
from fsframe_multiclass.convex import RowModel, kkt_certificate, reweighted_l2, solve_rows, solve_weighted
from fsframe_multiclass.dso import SOFT_MARGIN_CALL
from fsframe_multiclass.margin import MarginFormulation, label_matrix, separable_columns
from fsframe_multiclass.nullspace import NullSpace, e_update_ldp, row_norms, u_update

# ---------------------------------------------------------------------------------------- references
def _codes(y):
    return np.searchsorted(np.unique(y), y)


def cvxpy_hard(X, y):
    """``min sum_j ||W_j|| + ||b|| s.t. Y ⊙ (X W + 1 bᵀ) >= 1`` (004 eq. 5, p = 1, bias row counted):
    ``(optimum, W, b)``."""
    Y = label_matrix(_codes(y))
    m, n = X.shape
    W, b = cp.Variable((n, Y.shape[1])), cp.Variable(Y.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1)) + cp.norm(b, 2)),
                      [cp.multiply(Y, X @ W + np.ones((m, 1)) @ b[None, :]) >= 1])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, W.value, b.value


def cvxpy_substitute(X, y):
    """004 §2's least-squares substitute at p = 1: ``min sum_j ||W_j|| s.t. Xt W = P (Y + E),
    Y ⊙ E >= 0`` with ``P`` the projector on the range of ``Xt = [X, 1]`` (from an SVD here)."""
    Y = label_matrix(_codes(y))
    m, n = X.shape
    Xt = np.hstack([X, np.ones((m, 1))])
    U, s, _ = np.linalg.svd(Xt, full_matrices=False)
    B = U[:, s > 1e-10 * s[0]]
    W, E = cp.Variable((n + 1, Y.shape[1])), cp.Variable(Y.shape)
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1))),
                      [B.T @ (Xt @ W) == B.T @ (Y + E), cp.multiply(Y, E) >= 0])
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value, W.value


def fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        return fsframe.fit(X, y, method="dso-fs", **kw)


def full_W(r):
    """The returned model as 004's W: the feature rows (``formulation_coef()``, features first) and
    the bias row."""
    coef = np.asarray(r.formulation_coef(), dtype=float).reshape(r.support.size, -1)
    return np.vstack([coef, np.atleast_1d(r.intercept)[None, :]])


def margins(r, X, y):
    return label_matrix(_codes(y)) * np.asarray(r.decision_function(X)).reshape(X.shape[0], -1)


# ---------------------------------------------------------------------------------- minimal example
# Two classes, four samples, four features: [X, 1] is 4 x 5, so U is one row (feature 3 here,
# the QR's pivots are the bias and features 0-2). The optimum is a vertex with a closed form
# (w = (0, 160, 140, 0) / 43, b = 39 / 43, multipliers 71/43, 77/43, 191/43 on samples 0, 1, 3).
X4 = np.array([[-0.1, -1.3, 0.9, 0.6], [1.4, -0.6, 0.1, -0.9], [0.3, -0.1, 0.7, -0.1], [0.6, -0.5, 0.6, -0.3]])
Y4 = np.array([0, 0, 1, 1])
OPT4 = 339 / 43


def test_minimal_example_optimum_in_closed_form():
    w, b = np.array([0, 160, 140, 0]) / 43, 39 / 43
    Y = label_matrix(Y4)[:, 0]
    assert np.min(Y * (X4 @ w + b)) == pytest.approx(1.0)  # feasible, samples 0, 1 and 3 active
    lam = np.array([71, 77, 0, 191]) / 43  # a dual point: sum(lam) is a lower bound when |G_j| <= 1
    G = np.hstack([X4, np.ones((4, 1))]).T @ (lam * Y)
    assert np.all(lam >= 0) and np.max(np.abs(G)) == pytest.approx(1.0)
    assert lam.sum() == pytest.approx(OPT4) == np.abs(w).sum() + abs(b)
    assert cvxpy_hard(X4, Y4)[0] == pytest.approx(OPT4, rel=1e-7)


def test_algorithm1_as_written_stalls_on_the_minimal_example():
    """Algorithm 1 with exact steps (closed-form U, the E step by NNLS) settles 2.24x above the
    optimum: the bias row (a pivot row) decays geometrically, its weight 1/|b| freezes the U step
    (the null space of [X, 1] is one direction, and it moves b), and the E step moves the pivot
    rows only — so feature 3 stays at -7.65 where the optimum has 0."""
    with pytest.warns(ConvergenceWarning, match=r"finish='none'\) stopped at .*up to \d+\.\d+% above the optimum"):
        r = fsframe.fit(X4, Y4, method="dso-fs", p=1.0, finish="none", tol=1e-12, max_iter=1000)
    f = r.info["l2p_with_bias_row"]
    assert f == pytest.approx(17.6915495, rel=1e-6) and f > 2.2 * OPT4
    assert r.converged  # by its own rule: the iterates have settled
    assert abs(r.intercept) < 1e-9 and r.coef[3] == pytest.approx(-7.6493, abs=1e-3)
    # the certificate (multipliers of one reweighted-l2 step at W, scaled to be dual feasible) proves a
    # lower bound of the optimum, hence an upper bound of the distance: valid, here loose
    assert 0 < r.info["model_lower_bound"] <= OPT4
    cert = r.certificate
    assert cert["status"] == "optimal_inaccurate" and cert["gap"] >= 1 - OPT4 / f


def test_the_stall_is_a_fixed_point_of_both_exact_steps():
    """From the stalled point, one more exact U step and one more exact E step change nothing —
    blockwise optimal, yet 2.24x above the joint optimum (a non-smooth objective: the bias row is
    at zero)."""
    r = fit(X4, Y4, p=1.0, finish="none", tol=1e-12, max_iter=1000)
    W = full_W(r)
    Y = label_matrix(Y4)
    Xt = np.hstack([X4, np.ones((4, 1))])
    ns = NullSpace.of(Xt, Y)
    assert list(ns.perm[ns.m0:]) == [3]  # U is feature 3
    E = Xt @ W - Y
    t = row_norms(W)[ns.perm]
    U = u_update(ns, ns.N + ns.L @ E, t, 1.0)
    np.testing.assert_allclose(U, W[ns.perm[ns.m0:]], rtol=1e-9)
    E2 = e_update_ldp(ns, Xt, U, Y, ns.N - ns.M @ U + ns.L @ E, 1.0)
    np.testing.assert_allclose(ns.assemble(U, E2), W, atol=1e-9)


def test_default_finish_reaches_the_minimal_examples_optimum():
    r = fit(X4, Y4, p=1.0)
    assert r.info["l2p_with_bias_row"] == pytest.approx(OPT4, rel=1e-7)
    np.testing.assert_allclose(r.coef, np.array([0, 160, 140, 0]) / 43, atol=1e-7)
    assert r.intercept == pytest.approx(39 / 43, rel=1e-7)
    assert r.certificate["status"] == "optimal" and r.certificate["certifies_returned"]
    assert r.info["algorithm1_l2p"] > 2 * OPT4  # Algorithm 1 stalled; the finish made it exact


# ------------------------------------------------------------------------------ the random attack
def _wide_instances():
    """n + 1 >= m ([X, 1] of full row rank): 24 instances, 2-5 classes, mixed column scales."""
    out = []
    for i, (m, n, c) in enumerate([(20, 21, 4), (8, 9, 2), (12, 30, 3), (15, 25, 3), (10, 40, 5), (16, 18, 4)] * 4):
        rng = np.random.default_rng(100 + i)
        X = rng.normal(size=(m, n))
        if i % 2:
            X *= rng.uniform(0.01, 10.0, size=n)
        out.append(pytest.param(X, np.arange(m) % c, id=f"{m}x{n}c{c}-{i}"))
    return out


@pytest.mark.parametrize("X, y", _wide_instances())
def test_attack_p1_equals_the_convex_optimum(X, y):
    f_ref = cvxpy_hard(X, y)[0]
    r = fit(X, y, p=1.0)
    assert r.info["l2p_with_bias_row"] == pytest.approx(f_ref, rel=1e-6)
    assert r.certificate["status"] == "optimal" and r.certificate["certifies_returned"]
    assert np.min(margins(r, X, y)) >= 1 - 1e-6 and r.info["margins_broken"] == 0
    assert r.converged and r.monotone


def _tall_instances():
    """m > rank [X, 1]: separable blobs (the hard margin is feasible)."""
    out = []
    for i, (m, n, c) in enumerate([(66, 28, 6), (40, 10, 4), (30, 6, 3), (50, 12, 5)]):
        rng = np.random.default_rng(200 + i)
        y = np.arange(m) % c
        X = rng.normal(scale=3.0, size=(c, n))[y] + rng.normal(size=(m, n))
        out.append(pytest.param(X, y, id=f"{m}x{n}c{c}"))
    return out


@pytest.mark.parametrize("X, y", _tall_instances())
def test_attack_m_above_rank_keeps_the_hard_margin(X, y):
    assert separable_columns(X, label_matrix(_codes(y))).all()
    f_ref = cvxpy_hard(X, y)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # no substitute, nothing to say
        r = fsframe.fit(X, y, method="dso-fs", p=1.0)
    assert r.info["margin"] == "hard" and r.info["margins_broken"] == 0
    assert np.min(margins(r, X, y)) >= 1 - 1e-6
    assert r.info["l2p_with_bias_row"] == pytest.approx(f_ref, rel=1e-6)
    assert r.certificate["status"] == "optimal"
    assert (r.predict(X) == y).all()  # every margin holds: the argmax is the class


@pytest.mark.parametrize("e_solver", ["ldp", "qp"])
def test_algorithm1_keeps_the_hard_margin_when_m_above_rank(e_solver):
    """Algorithm 1 itself (finish='none') on m > rank separable data: from a feasible E^0, each E
    step keeps Y + E in the range of [X, 1] (the QP by its rows Q2ᵀ (Y + E) = 0, the LDP by its
    parametrisation), so every iterate meets the margins."""
    X, y = _tall_instances()[2].values
    r = fit(X, y, p=1.0, finish="none", e_solver=e_solver, max_iter=15)
    assert r.info["margin"] == "hard"
    assert np.min(margins(r, X, y)) >= 1 - 1e-6 and r.info["margins_broken"] == 0


@pytest.mark.shared_data
def test_colon_p1_equals_the_convex_optimum(colon):
    """Colon (62 x 2000, binary): Algorithm 1 as written stops 2.9 % above the optimum; dso-fs is
    CVXPY's optimum, certified (the working set priced over 2 001 rows)."""
    X, y = colon
    f_ref = cvxpy_hard(X, y)[0]
    r = fit(X, y, p=1.0)
    assert r.info["l2p_with_bias_row"] == pytest.approx(f_ref, rel=1e-6)
    assert r.certificate["status"] == "optimal" and r.info["margins_broken"] == 0
    assert r.info["algorithm1_l2p"] == pytest.approx(1.029 * f_ref, rel=2e-3)


# ------------------------------------------------------------------ m > rank: hard, or said aloud
@pytest.fixture(scope="module")
def wine():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


def test_wine_hard_margin_by_default_and_the_substitute_said_aloud(wine):
    X, y = wine
    r = fit(X, y, p=1.0)
    assert r.info["margin"] == "hard" and r.info["margins_broken"] == 0
    assert r.info["l2p_with_bias_row"] == pytest.approx(cvxpy_hard(X, y)[0], rel=1e-6)
    with pytest.warns(DataWarning, match=r"least-squares substitute.*breaks (\d+) of the 534 margins"):
        s = fsframe.fit(X, y, method="dso-fs", p=1.0, margin="least-squares")
    broken = int(np.count_nonzero(margins(s, X, y) < 1 - 1e-6))
    assert s.info["margin"] == "least-squares" and s.info["margins_broken"] == broken > 0
    assert s.info["largest_margin_violation"] == pytest.approx(1 - margins(s, X, y).min())
    assert s.info["l2p_with_bias_row"] == pytest.approx(cvxpy_substitute(X, y)[0], rel=1e-6)


def test_the_paper_as_written_stays_reachable(wine):
    """margin='least-squares', finish='none' is 004's Algorithm 1 with its §2 substitute: E^0 = 0,
    no range constraint, the point where the alternation stops."""
    X, y = wine
    with pytest.warns(DataWarning, match="breaks"):
        r = fsframe.fit(X, y, method="dso-fs", p=1.0, margin="least-squares", finish="none")
    assert r.info["margin"] == "least-squares" and r.info["finish"] == "none"
    f_sub = cvxpy_substitute(X, y)[0]
    assert f_sub <= r.info["l2p_with_bias_row"] <= 1.01 * f_sub
    assert r.info["l2p_with_bias_row"] == r.history[r.info["algorithm1_iterations"] - 1].objective


@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris

    return load_iris(return_X_y=True)


def test_inseparable_data_runs_the_substitute_with_a_warning(iris):
    X, y = iris
    with pytest.warns(DataWarning, match=r"class column\(s\) \[1, 2\] cannot be separated.*breaks \d+ of the 450"):
        r = fsframe.fit(X, y, method="dso-fs", p=1.0)
    assert r.info["margin"] == "least-squares" and r.info["margins_broken"] > 0
    assert r.info["inseparable_columns"] == [1, 2]
    # the zero_tol cut (a row of 1e-6 of the largest, re-solved without it) cost 2e-6 with Clarabel
    # at its own tolerance 1e-8; at fsframe's 1e-9 the uncut answer is within 3e-8 of the re-solved
    # one (either side: the cut costs nothing the solvers can resolve)
    assert r.info["l2p_with_bias_row"] == pytest.approx(cvxpy_substitute(X, y)[0], rel=1e-5)
    assert abs(r.info["zero_tol_cut_rise"]) < 1e-5


def test_margin_hard_refuses_and_its_advice_runs(iris):
    X, y = iris
    with pytest.raises(InfeasibleParameterError, match="margin='auto'") as exc:
        fsframe.fit(X, y, method="dso-fs", margin="hard")
    assert SOFT_MARGIN_CALL in str(exc.value)
    _advised_calls_run(str(exc.value), X, y)


def test_soft_margin_advice_is_not_a_circle(iris):
    """Issue 17: dso-fs's advice said formulation__C=1.0, which then said to leave C unset. A soft
    margin lacks the trait ``hard_margin`` that loop ``dso`` requires: refused before anything runs,
    the advice a call that runs."""
    X, y = iris
    with pytest.raises(IncompatibleComponentsError,
                       match=r"must provide the hard multi-class margin .*\(hard_margin\).*with C unset") as exc:
        fsframe.fit(X, y, method="dso-fs", formulation__C=1.0)
    msg = str(exc.value)
    assert "formulation__C" not in msg and SOFT_MARGIN_CALL in msg
    _advised_calls_run(msg, X, y)
    with warnings.catch_warnings():  # leaving C unset: runs (the substitute, said aloud)
        warnings.simplefilter("ignore", DataWarning)
        assert fsframe.fit(X, y, method="dso-fs").coef.shape == (3, 4)


def _advised_calls_run(msg, X, y):
    calls = re.findall(r"fsframe\.(fit\([^)]*\))", msg)
    assert calls, msg
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            r = eval("fsframe." + call, {"fsframe": fsframe, "X": X, "y": y})
        assert r.coef.shape == (3, 4)


def test_an_infeasible_margin_is_explained_to_a_generic_loop_and_decided_by_dso(iris):
    """The hard margin on inseparable data (iris: columns 1 and 2): a generic loop's first subproblem
    is infeasible and the fit raises the formulation's explanation (``explain_failure``), which names
    the soft margin — and that advice runs; dso-fs never solves that model, decides itself (one LP per
    column) and runs 004 §2's substitute, reporting the columns."""
    X, y = iris
    codes = _codes(y)
    assert MarginFormulation().validate(X, codes) == {"n_classes": 3}  # validate no longer decides it
    with pytest.raises(InfeasibleParameterError, match=r"class column\(s\) \[1, 2\].*C=1\.0") as exc:
        fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=0.5)
    assert "dso" not in str(exc.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        soft = fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=0.5, C=1.0)  # the advice
    assert soft.coef.shape == (3, 4) and soft.objective is not None
    with pytest.warns(DataWarning, match=r"class column\(s\) \[1, 2\] cannot be separated"):
        r = fsframe.fit(X, y, method="dso-fs", p=1.0)
    assert r.info["inseparable_columns"] == [1, 2] and r.info["margin"] == "least-squares"


def test_fifty_classes_m_above_rank_train_accuracy():
    """A 50-class set with m > rank [X, 1]: the hard margin holds, so every training sample is
    classified right (the substitute had 2 % here)."""
    rng = np.random.default_rng(7)
    m, n, c = 150, 40, 50
    y = np.arange(m) % c
    X = rng.normal(size=(m, n))
    assert separable_columns(X, label_matrix(y)).all() and np.linalg.matrix_rank(np.hstack([X, np.ones((m, 1))])) < m
    r = fit(X, y, p=1.0, max_iter=20)
    assert r.info["margin"] == "hard" and r.info["margins_broken"] == 0
    assert (r.predict(X) == y).mean() == 1.0


def test_e_step_ldp_keeps_the_range_and_equals_cvxpy():
    """The exact E step (NNLS) on m > rank data: Y + E stays in the range of [X, 1] (the hard
    margin), and its weighted objective is CVXPY's optimum of the same block problem."""
    rng = np.random.default_rng(3)
    m, n, c = 30, 6, 3
    y = np.arange(m) % c
    X = rng.normal(scale=3.0, size=(c, n))[y] + rng.normal(size=(m, n))
    Y = label_matrix(y)
    Xt = np.hstack([X, np.ones((m, 1))])
    ns = NullSpace.of(Xt, Y)
    assert not ns.consistent
    U = rng.normal(size=(ns.n0, c))
    V = rng.normal(size=(ns.m0, c))  # any weights
    E = e_update_ldp(ns, Xt, U, Y, V, 0.5)
    W = ns.assemble(U, E)
    np.testing.assert_allclose(Xt @ W, Y + E, atol=1e-9)  # in the range: X W = Y + E exactly
    assert np.all(Y * E >= -1e-12)
    lam = row_norms(V) ** (0.5 - 2)
    X1, X2 = Xt[:, ns.perm[:ns.m0]], Xt[:, ns.perm[ns.m0:]]
    W1 = cp.Variable((ns.m0, c))
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(lam[:, None], cp.square(W1)))),
                      [cp.multiply(Y, X1 @ W1 + X2 @ U) >= 1])
    prob.solve(solver=cp.CLARABEL)
    got = float(np.sum(lam[:, None] * W[ns.perm[:ns.m0]] ** 2))
    assert got == pytest.approx(prob.value, rel=1e-6)


# ------------------------------------------------------------------------------------ certificates
def test_certificate_judges_the_returned_point():
    """The certificate is computed at the point given, not at the solver's: a feasible W 10 % above
    the optimum, checked with the optimum's multipliers, shows a gap of 1/11."""
    X, y = X4, Y4
    Y = label_matrix(y)
    model = RowModel(np.hstack([X, np.ones((4, 1))]), Y)
    be = fsframe.get_registry().get("backend", "clarabel")()
    sol = solve_rows(model, np.arange(5), np.ones(5), lambda d: be.solve(d, fsframe.SolveOptions()))
    status, cert, _ = kkt_certificate(model, sol.W, None, sol, tol=1e-6)
    assert status.value == "optimal" and abs(cert.gap) < 1e-7
    status, cert, msg = kkt_certificate(model, 1.1 * sol.W, None, sol, tol=1e-6)
    assert status.value == "optimal_inaccurate" and cert.gap == pytest.approx(0.1 / 1.1, rel=1e-6)
    assert cert.primal_residual == 0.0  # 1.1 W is feasible; it is just not optimal


def test_certificate_prices_the_rows_left_out():
    """A row at zero whose multiplier norm exceeds 1 fails the certificate, though the point is
    optimal on the rows it uses (the optimum of X4 without feature 2 is higher and uses feature 0)."""
    Y = label_matrix(Y4)
    model = RowModel(np.hstack([X4, np.ones((4, 1))]), Y)
    be = fsframe.get_registry().get("backend", "clarabel")()
    sol = solve_rows(model, np.array([0, 1, 3, 4]), np.ones(5), lambda d: be.solve(d, fsframe.SolveOptions()))
    assert row_norms(sol.W).sum() > OPT4 * 1.01
    status, cert, _ = kkt_certificate(model, sol.W, None, sol, tol=1e-6)
    assert status.value != "optimal" and cert.gap > 1e-3


def test_cheap_certificate_proves_the_closed_form_optimum():
    """The multipliers of one reweighted-l2 step (NNLS, no SOCP) certify the minimal example's
    closed-form optimum, pricing its two zero rows."""
    Y = label_matrix(Y4)
    model = RowModel(np.hstack([X4, np.ones((4, 1))]), Y)
    W = np.array([0, 160, 140, 0, 39])[:, None] / 43
    sol = reweighted_l2(model, W, np.ones(5))
    np.testing.assert_allclose(sol.W, W, atol=1e-12)  # a fixed point
    status, cert, _ = kkt_certificate(model, W, None, sol, tol=1e-6)
    assert status.value == "optimal" and abs(cert.gap) < 1e-12
    assert cert.dual_bound == pytest.approx(OPT4, rel=1e-12)


def test_finish_auto_skips_a_model_too_large_and_says_so(monkeypatch):
    import fsframe_multiclass.dso as dso_module

    monkeypatch.setattr(dso_module, "FINISH_MAX_MARGINS", 3)
    with pytest.warns(ConvergenceWarning, match=r"convex finish is skipped: .* m c = 4 margins"):
        r = fsframe.fit(X4, Y4, method="dso-fs", p=1.0)
    assert r.info["finish"] == "none" and r.certificate["status"] == "optimal_inaccurate"
    assert r.certificate["backend"] == "scipy-nnls"
    r = fit(X4, Y4, p=1.0, finish="convex")  # forced
    assert r.info["l2p_with_bias_row"] == pytest.approx(OPT4, rel=1e-7)


def test_certificate_of_a_cut_to_n_features_says_cut():
    X, y = X4, Y4
    r = fit(X, y, p=1.0, n_features=1)
    assert r.n_selected == 1 and r.certificate["status"] == "cut"
    assert r.certificate["certified_status"] == "optimal"


@pytest.mark.parametrize("p", [0.5, 0.1])
def test_p_below_one_returns_a_kkt_point(p):
    """For p < 1 the finish's certificate is that of the last reweighted-l1 subproblem, and the
    returned W is a KKT point of 004 eq. 6 to the stopping rule's tolerance: a fixed point of the
    reweighted step — checked with CVXPY on its support at its own weights, within ``tol`` (1e-4)
    — and the finish only lowers sum ||W_j||^p below Algorithm 1's."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(12, 30))
    y = np.arange(12) % 3
    r, a1 = fit(X, y, p=p), fit(X, y, p=p, finish="none")
    assert r.certificate["status"] == "optimal"
    W = full_W(r)
    t = row_norms(W)
    S = t > 0
    assert np.sum(t ** p) <= np.sum(row_norms(full_W(a1)) ** p) * (1 + 1e-9)
    Y = label_matrix(y)
    Xt = np.hstack([X, np.ones((12, 1))])[:, S]
    omega = t[S] ** (p - 1)
    V = cp.Variable((int(S.sum()), Y.shape[1]))
    prob = cp.Problem(cp.Minimize(omega @ cp.norm(V, 2, axis=1)), [cp.multiply(Y, Xt @ V) >= 1])
    prob.solve(solver=cp.CLARABEL)
    assert prob.value <= float(omega @ t[S]) <= prob.value * (1 + 1e-4)


def test_working_set_prices_in_the_rows_the_start_missed():
    """Started on a few rows that admit a feasible but worse point, the working set is priced over
    all rows until none violates: CVXPY's optimum of the whole model."""
    rng = np.random.default_rng(9)
    m, n, c = 10, 120, 3
    X = rng.normal(size=(m, n))
    y = np.arange(m) % c
    Y = label_matrix(y)
    model = RowModel(np.hstack([X, np.ones((m, 1))]), Y)
    be = fsframe.get_registry().get("backend", "clarabel")()
    start = np.zeros(n + 1, dtype=bool)
    start[:m] = True  # ten features: [X_S, 1] has full row rank, so the margins can be met
    rounds = []
    sol, added = solve_weighted(model, np.ones(n + 1), start, lambda d: be.solve(d, fsframe.SolveOptions()),
                                on_round=rounds.append)
    assert len(rounds) >= 2 and added > 0
    assert row_norms(rounds[0].W).sum() > 1.01 * row_norms(sol.W).sum()
    assert row_norms(sol.W).sum() == pytest.approx(cvxpy_hard(X, y)[0], rel=1e-6)
    status, cert, _ = kkt_certificate(model, sol.W, None, sol, tol=1e-6)
    assert status.value == "optimal"


# ------------------------------------------------------------------------------------ n_features
def test_fewer_features_than_asked_is_said():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 60))
    y = np.arange(12) % 3
    with pytest.warns(ConvergenceWarning, match=r"n_features=50 asked, (\d+) returned") as rec:
        r = fsframe.fit(X, y, method="dso-fs", p=0.5, n_features=50)
    got = int(re.search(r"asked, (\d+) returned", str(rec[-1].message)).group(1))
    assert r.n_selected == got < 50 and r.info["n_features_missing"] == 50 - got
    assert got == int(np.count_nonzero(np.linalg.norm(r.formulation_coef(), axis=1)))
