"""Outer loops: descent (recomputed in numpy from every iterate), convergence to a known sparse
answer, the "exactly r features" rule of 002 §3.1, and failure handling."""

from __future__ import annotations

import types
import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.working_set import WorkingSetOptions
from fsframe import Status
from fsframe.backends import HighsBackend
from fsframe.errors import ConvergenceWarning, SolverFailedError
from fsframe.loops import select_exactly
from fsframe.plugins import get_registry
from fsframe.problem import Subproblem
from fsframe.testing import FailingBackend, hinge_loss

REG = get_registry()
Hinge = REG.get("formulation", "hinge")


def synthetic(m=40, n=20, seed=1):
    ds = fsframe.make_synthetic(m, n, 4, random_state=seed)
    return (ds.X - ds.X.mean(0)) / ds.X.std(0), ds.y.astype(float)


def run(loop, surrogate, X, y, C=1.0, backend=None):
    """Run ``loop`` directly and return its outcome and every iterate's (coef, intercept)."""
    sub = Subproblem(Hinge(C=C), X, y, loop.terms(surrogate), backend or HighsBackend())
    seen = []
    try:
        out = loop.run(sub, surrogate, callback=lambda rec, it: seen.append((it.coef.copy(), float(it.intercept[0]))))
    finally:
        sub.close()
    return out, seen


def objective(X, y, C, surrogate, w, b, factor=1.0):
    return hinge_loss(C)(X @ w + b, y) + factor * float(np.sum(surrogate.phi(np.abs(w))))


DESCENT = [("exp", {"alpha": 5.0}), ("exp", {"alpha": 0.5}), ("log", {"eps": 0.1}), ("l1", {})]


@pytest.mark.parametrize("loop_name, init", [("dca", "l1"), ("dca", "zero"), ("reweighted-l1", "l1"),
                                             ("reweighted-l1", "zero")])
@pytest.mark.parametrize("sur, params", DESCENT, ids=[f"{s}{p}" for s, p in DESCENT])
def test_descent(loop_name, init, sur, params):
    """DCA (000 Thm. 1) and successive linearisation decrease loss + sum phi at every iteration."""
    X, y = synthetic()
    surrogate = REG.get("surrogate", sur)(**params)
    loop = REG.get("loop", loop_name)(init=init, max_iter=30)
    out, seen = run(loop, surrogate, X, y)
    f = np.array([objective(X, y, 1.0, surrogate, w, b) for w, b in seen])
    assert np.all(np.diff(f) <= 1e-7 * (1 + np.abs(f[:-1]))), f
    assert out.monotone and out.converged
    assert [r.objective for r in out.history] == pytest.approx(f.tolist(), rel=1e-9)


@pytest.mark.parametrize("weights, factor", [("paper", 2.0), ("majorizer", 1.0)])
@pytest.mark.parametrize("sur, params", [("exp", {"alpha": 5.0}), ("log", {"eps": 0.01}), ("l1", {})])
def test_em_majorise_minimise_descent(sur, params, weights, factor):
    """phi(t) <= phi(t_k) + phi'(t_k)/(2 t_k) (t^2 - t_k^2): EM with the weights phi'(t)/t of the
    papers (``weights="paper"``) makes loss + 2 sum phi non-increasing after the L2 start, with the
    majoriser's phi'(t)/(2t) (default) loss + sum phi itself. EM's check of its zeroed groups at the
    floor's weight (phi'(0) is finite here) and the step after it, the last two, are no descent steps."""
    X, y = synthetic()
    surrogate = REG.get("surrogate", sur)(**params)
    out, seen = run(REG.get("loop", "em")(max_iter=40, weights=weights), surrogate, X, y)
    steps = seen[1:-2] if "checked" in out.reason else seen[1:]
    f = np.array([objective(X, y, 1.0, surrogate, w, b, factor=factor) for w, b in steps])
    assert np.all(np.diff(f) <= 1e-6 * (1 + np.abs(f[:-1]))), f
    assert out.monotone


def test_em_finds_the_known_sparse_answer():
    """Feature 0 alone separates the classes with margin; the others are noise. The zero-norm
    solution is w = (w0, 0, ..., 0) with the hard-margin w0 = 1 / min |x_0|: EM (002) finds it."""
    rng = np.random.default_rng(5)
    m, n = 60, 12
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((m, n))
    X[:, 0] = y * (2.0 + rng.random(m))
    X[:, 0] -= 0.0  # the margin is symmetric: min |x_0| = 2 + min u on each side
    res = fsframe.fit(X, y, method="em-l0", C=10.0)
    assert res.selected.tolist() == [0]
    # hard margin on feature 0 only: y (w0 x0 + b) >= 1 for all i, minimal |w0| via the two closest
    pos, neg = X[y > 0, 0].min(), X[y < 0, 0].max()
    w0 = 2.0 / (pos - neg)
    assert res.coef[0] == pytest.approx(w0, rel=1e-5)
    assert res.intercept == pytest.approx(1.0 - w0 * pos, abs=1e-5)
    assert res.converged


# ------------------------------------------------------------------------------ exactly r features
@attrs.frozen
class FakeIterate:
    t: np.ndarray


@pytest.mark.parametrize("r, k, kept", [
    (3, 2, [0, 1, 2]),      # the first iterate with at most r non-zeros has exactly r
    (2, 2, [0, 1]),         # the first with <= 2 has 1 (< r): step back to the last with more, keep 2
    (5, 0, [0, 1, 2, 3, 4]),  # the first with <= 5 has 4: step back to iterate 0 (6 non-zeros)
    (1, 3, [0]),            # reached exactly
])
def test_select_exactly_rule(r, k, kept):
    """002 §3.1: stop at the last iteration with ||w||_0 <= r and keep the r largest features
    (fsframe.loops.select_exactly's reading, documented there)."""
    its = [FakeIterate(np.array(t, dtype=float)) for t in (
        [6, 5, 4, 3, 2, 1],
        [6, 5, 4, 3, 0, 0],
        [6, 5, 4, 0, 0, 0],
        [6, 0, 0, 0, 0, 0],
    )]
    idx, mask = select_exactly(its, r, 1e-6)
    assert idx == k
    assert np.flatnonzero(mask).tolist() == kept


def test_select_exactly_never_reached():
    its = [FakeIterate(np.array([3.0, 2.0, 1.0, 0.5]))] * 2
    idx, mask = select_exactly(its, 2, 1e-6)
    assert idx == 1 and np.flatnonzero(mask).tolist() == [0, 1]


@pytest.mark.parametrize("method", ["fsv", "em-l0", "arom", "svm-weights", "l1-svm"])
@pytest.mark.parametrize("r", [1, 2, 3])
def test_n_features_gives_exactly_r(method, r):
    X, y = synthetic(40, 15)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # fsv collapses below r=2, 3 here (warned)
        res = fsframe.fit(X, y, method=method, n_features=r)
    assert res.n_selected == r
    assert np.count_nonzero(res.coef) == r
    k = res.info["n_features_iterate"]
    assert res.history[k].n_nonzero == r + res.info["n_features_dropped"]
    # the coefficients are the chosen iterate's subproblem re-solved on the r features, and the
    # objective reported is that of the coefficients returned (recomputed in numpy)
    assert res.info.get("zero_tol_cut_verified") is not False  # absent: nothing to cut
    C = res.formulation.C
    w, b = np.asarray(res.coef), float(res.intercept)
    if res.surrogate is None:  # svm-weights: the L2 SVM's objective
        expected = hinge_loss(C)(X @ w + b, y) + float(w @ w)
    elif method == "l1-svm":
        expected = hinge_loss(C)(X @ w + b, y) + float(np.abs(w).sum())
    else:
        expected = objective(X, y, C, res.surrogate, w, b)
    assert res.objective == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_svm_weights_keeps_the_largest_l2_weights():
    """svm-weights with n_features=r is the L2 SVM's r largest |w_j| (002 footnote 5)."""
    X, y = synthetic(40, 15)
    full = fsframe.fit(X, y, method="svm-weights", n_features=X.shape[1])  # every feature: the plain L2 SVM
    assert full.n_selected == X.shape[1]
    top = fsframe.fit(X, y, method="svm-weights", n_features=3)
    assert set(top.selected) == set(np.argsort(-np.abs(full.coef))[:3])
    # the returned model is the L2 SVM on those 3 features (an independent fit on the columns)
    alone = fsframe.fit(X[:, top.selected], y, method="svm-weights", n_features=3)
    np.testing.assert_allclose(top.coef[top.support], alone.coef, rtol=1e-5, atol=1e-7)
    assert top.objective == pytest.approx(alone.objective, rel=1e-7)


# ------------------------------------------------------------------------------ failures
def test_time_limit_failure_raises_with_status(binary_data):
    X, y = binary_data
    for raise_on_failure in (True, False):  # no good iterate: raises either way
        with pytest.raises(SolverFailedError, match="time_limit.*no solution was found") as exc:
            fsframe.fit(X, y, method="fsv", time_limit=0.0, raise_on_failure=raise_on_failure)
        assert exc.value.status is Status.TIME_LIMIT
        assert exc.value.result.x is None


@attrs.frozen
class InfeasibleHinge(Hinge):
    """The hinge model plus the contradictory rows b >= 1 and b <= -1."""

    name = "infeasible-hinge"

    def build(self, X, y, terms):
        import pyomo.environ as pyo

        built = super().build(X, y, terms)
        built.model.b_up = pyo.Constraint(expr=built.model.b >= 1)
        built.model.b_down = pyo.Constraint(expr=built.model.b <= -1)
        return built


def test_infeasible_formulation_raises_with_status(binary_data, add_components):
    """Regression for the EM QP: HiGHS stopped at a huge point of the unbounded dual and called
    it optimal; the recovered primal point violated the rows by 1.0 and was used as a solution."""
    add_components(formulations=[InfeasibleHinge])
    X, y = binary_data
    with pytest.raises(SolverFailedError, match="status infeasible") as exc:
        fsframe.fit(X, y, formulation="infeasible-hinge", surrogate="l1", loop="single")
    assert exc.value.status is Status.INFEASIBLE
    for qp_form in ("auto", "dense", "dual", "scaled", "primal"):
        with pytest.raises(SolverFailedError) as exc:
            fsframe.fit(X, y, formulation="infeasible-hinge", surrogate="l0", loop="em",
                        backend_options={"qp_form": qp_form})
        assert exc.value.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)


@pytest.mark.parametrize("method", ["fsv", "em-l0"])
def test_failure_keeps_the_last_good_iterate(binary_data, method):
    """A subproblem failing at solve 3: raise_on_failure=True raises with the status and a partial
    result; False returns iterate 2 — the same coefficients as a run stopped at max_iter=2."""
    X, y = binary_data
    failing = FailingBackend(HighsBackend(), fail_at=3, status=Status.NUMERICAL_ERROR)
    with pytest.raises(SolverFailedError, match="subproblem 2 ended with status numerical_error.*raise_on_failure=False") as exc:
        fsframe.fit(X, y, method=method, backend=failing)
    assert exc.value.status is Status.NUMERICAL_ERROR
    loop, history, last_good = exc.value.partial
    assert len(history) == 3 and last_good is not None
    with pytest.warns(ConvergenceWarning, match="returning the last good iterate"):
        soft = fsframe.fit(X, y, method=method, backend=failing, raise_on_failure=False)
    assert not soft.converged and soft.n_iter == 2
    assert soft.statuses[-1] is Status.NUMERICAL_ERROR
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        # the failing backend keeps the fit on the compiled path (the dense EM path needs HiGHS): so does this one
        two = fsframe.fit(X, y, method=method, max_iter=2, working_set=WorkingSetOptions(from_data=False))
    np.testing.assert_array_equal(soft.coef, two.coef)


def test_max_iter_warns_and_is_not_converged(binary_data):
    X, y = binary_data
    with pytest.warns(ConvergenceWarning, match="stopped at max_iter=1"):
        res = fsframe.fit(X, y, method="em-l0", max_iter=1)
    assert not res.converged and res.n_iter == 1


def test_history_records(binary_data):
    X, y = binary_data
    res = fsframe.fit(X, y, method="fsv")
    assert [r.k for r in res.history] == list(range(res.n_iter))
    assert all(r.status is Status.OPTIMAL for r in res.history)
    assert res.history[-1].n_nonzero >= res.n_selected
    assert all(r.seconds >= 0 for r in res.history)
    assert res.history[0].step is None and all(r.step >= 0 for r in res.history[1:])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fsframe.fit(X, y, method="fsv")  # a clean run warns about nothing


def test_zero_norm_objective_counts_the_returned_support():
    """The reported objective applies the support rule: a group at 8e-11 (below zero_tol times the
    largest, zeroed in coef) does not cost 1 under the zero-norm."""
    ds = fsframe.load_dataset("wine")
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    y = np.where(ds.y == 1, 1.0, -1.0)
    res = fsframe.fit(X, y, method="em-l0")
    assert res.objective == pytest.approx(hinge_loss(1.0)(X @ res.coef + res.intercept, y) + res.n_selected,
                                          rel=1e-6)


# ------------------------------------------------------------------------------ a rising objective
@attrs.frozen
class DetourLoop(fsframe.OuterLoop):
    """A loop that claims descent (``monotone = True``) but solves ``loss + s ||w||_1`` for the
    scales ``s`` given, reporting ``loss + ||w||_1``: any ``s != 1`` is worse than the L1 solution."""

    name = "detour"
    requires = ("derivative",)
    monotone = True  # the base class's default, stated: the run checks this loop's descent
    scales: tuple = (100.0, 1.0, 3.0, 1.0)

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        for s in self.scales:
            yield self.surrogate_step(sub.solve(lin=np.full(sub.n_groups, s)), surrogate)
        return True, "detour done"


def test_a_rising_objective_is_reported(binary_data, add_components):
    """OuterLoop.run checks the monitored objective of a loop that guarantees descent against the
    previous iterate's: a rise is a ConvergenceWarning naming both values and ``monotone=False`` in
    the result, and the history shows it. The detour: w ~ 0 (scale 100), the L1 solution, scale 3 —
    a rise from the L1 optimum, though still below the first objective — and back to L1."""
    add_components(loops=[DetourLoop])
    X, y = binary_data
    rise = r"detour: monitored objective rose from \S+ to \S+ at iteration 2 "
    with pytest.warns(ConvergenceWarning, match=rise) as rec:
        res = fsframe.fit(X, y, formulation="hinge", surrogate="l1", loop="detour")
    assert res.monotone is False and res.converged and res.n_iter == 4
    f = [r.objective for r in res.history]
    assert f[0] > f[2] > f[1] + 0.1 and f[3] == pytest.approx(f[1], rel=1e-9)
    assert f[1] == pytest.approx(fsframe.fit(X, y, method="l1-svm").objective, rel=1e-9)
    rises = [str(w.message) for w in rec if "rose from" in str(w.message)]
    assert len(rises) == 1  # only the step from the L1 optimum up to scale 3's point
    before, after = (float(v) for v in rises[0].split("rose from ")[1].split(" at ")[0].split(" to "))
    assert (before, after) == (pytest.approx(f[1], rel=1e-7), pytest.approx(f[2], rel=1e-7))


def test_no_detour_no_warning(binary_data, add_components):
    """The same loop without a detour (a decrease, then equal L1 solves) is monotone and warns
    about nothing."""
    add_components(loops=[DetourLoop])
    X, y = binary_data
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = fsframe.fit(X, y, formulation="hinge", surrogate="l1", loop="detour", scales=(3.0, 1.0, 1.0))
    assert res.monotone is True and res.n_iter == 3


def test_em_floor_follows_the_runs_scale_on_a_collapsing_run(monkeypatch):
    """EM's floor is ``zero_tol * T`` with ``T`` the largest group norm of the run so far (the L2
    start's), not of the current iterate. A scripted run whose iterates collapse towards zero
    (every norm shrinks 100-fold per solve after the start, 100): a group below ``zero_tol * 100``
    is fixed at zero (weight inf, for good) and every finite weight stays below
    ``q(zero_tol * 100)``. A floor relative to the current iterate follows the collapse down: it
    keeps a group at 1e-5 (a ten-millionth of the start) alive with the weight 1e10."""
    import fsframe.loops.em as em_mod
    from fsframe.loops import EM
    from fsframe.surrogates import L0Surrogate

    start = np.array([100.0, 50.0, 20.0, 1e-3])
    iterates = [start * 1e-2 ** k for k in range(6)]  # 100, 1, 1e-2, ... for the largest group
    quads = []

    class Scripted:
        n_groups = start.size

        def solve(self, quad):
            quads.append(np.asarray(quad, dtype=float).copy())
            t = iterates[len(quads) - 1]
            return types.SimpleNamespace(ok=True, t=t, loss=0.0, point=np.concatenate([t, [0.0]]))

    monkeypatch.setattr(em_mod, "group_magnitudes", lambda sub: np.ones(start.size))
    loop = EM(max_iter=len(iterates), tol=1e-300)
    sur = L0Surrogate()
    list(loop.steps(Scripted(), sur, None))  # EM reads nothing of the run's context
    assert len(quads) == len(iterates)
    np.testing.assert_array_equal(quads[0], np.ones(start.size))  # the L2 start
    floor = loop.zero_tol * 100.0  # T: the start's largest norm, never the current iterate's
    fixed = np.zeros(start.size, dtype=bool)
    for t_prev, q in zip(iterates, quads[1:]):
        fixed |= t_prev <= floor  # absorbing
        expect = np.where(fixed, np.inf, 1.0 / np.where(fixed, 1.0, t_prev) ** 2)
        np.testing.assert_array_equal(q, expect)
        assert np.all(q[np.isfinite(q)] <= 1.0 / floor**2)
    assert fixed.all() and np.isinf(quads[-1]).all()


def test_em_weight_cap_is_read_in_the_units_of_each_groups_data(monkeypatch):
    # the cap fixes a group whose weight q_j exceeds MAX_WEIGHT * max(1, a_j)^2 (a_j its largest
    # |entry|: loops.em.MAX_WEIGHT's rule), formed once per run: with a_j = 10 a weight of 5e13 stays
    # (5e13 / 10^2 = 5e11 <= 1e12), 2e14 is fixed; with a_j <= 1 the bound is 1e12 itself
    import fsframe.loops.em as em_mod
    from fsframe.loops import EM
    from fsframe.surrogates import L0Surrogate

    assert em_mod.MAX_WEIGHT == 1e12
    q_wanted = np.array([5e13, 2e14, 5e11, 2e12])  # l0's weights 1/t^2 of the first step
    start = 1.0 / np.sqrt(q_wanted)
    mags = np.array([10.0, 10.0, 0.5, 0.5])
    quads = []

    class Scripted:
        n_groups = start.size

        def solve(self, quad):
            quads.append(np.asarray(quad, dtype=float).copy())
            return types.SimpleNamespace(ok=True, t=start, loss=0.0, point=np.concatenate([start, [0.0]]))

    monkeypatch.setattr(em_mod, "group_magnitudes", lambda sub: mags)
    loop = EM(max_iter=2, tol=1e-300, zero_tol=1e-300)
    list(loop.steps(Scripted(), L0Surrogate(), None))
    q = quads[1]
    np.testing.assert_allclose(q[[0, 2]], q_wanted[[0, 2]], rtol=1e-12)
    assert np.isinf(q[1]) and np.isinf(q[3])
