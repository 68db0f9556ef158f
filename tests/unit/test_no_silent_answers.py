"""No silent wrong answer from the loops, the subproblem and the MPM/SVM plugins (issue 8 §1, §2,
§4, §6): each test fails on the code before the fix.

* the largest feasible MPM bound is certified (refined on another backend) or refused, and its
  solves are in ``FitResult.statuses``;
* the ``zero_tol`` cut is verified by a restricted re-solve and ``objective`` is that of the
  coefficients returned (recomputed in numpy here), so backends agree on model and support;
* "exactly r features" counts meaningful non-zeros, warns on collapse and on fewer than r;
* EM never hands HiGHS a weight it refuses, and solver trouble goes through ``raise_on_failure``;
* extreme feature scales, booleans and out-of-range options are typed errors naming the problem.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.backends import HighsBackend
from fsframe.backends.base import Backend, BackendSession
from fsframe.enums import ProblemClass
from fsframe.errors import (ConvergenceWarning, DataError, InvalidOptionError, SolverFailedError,
                            UnsupportedProblemError)
from fsframe.loops import select_exactly
from fsframe.plugins import get_registry

REG = get_registry()


def l1svm_objective(X, y, C, w, b):
    """``C sum_i max(0, 1 - y_i (x_i w + b)) + ||w||_1`` (001 eq. 2), in numpy."""
    return C * float(np.sum(np.maximum(0.0, 1.0 - y * (X @ w + b)))) + float(np.abs(w).sum())


# ------------------------------------------------------------------------------ largest bound
def mixed_scale_data(seed, m=35, n=111):
    """The issue's instances: Gaussian columns scaled by 10^U(-4, 4), random labels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) * 10 ** rng.uniform(-4, 4, size=n)
    y = np.where(rng.random(m) < 0.5, 1.0, -1.0)
    return X, y


def cvxpy_delta_max(X, y, rho):
    """Lanckriet et al.'s MPM stated in CVXPY from the class moments: min ||F_1'w|| + ||F_2'w||
    s.t. w'(mu_1 - mu_2) = 1; delta_max = kappa^2 / (1 + kappa^2) with kappa = 1 / optimum."""
    import cvxpy as cp
    from fsframe_mpm import class_moments

    mom = class_moments(X, y, rho)
    w = cp.Variable(mom.n)
    R1, R2 = (mom.cone_rows(k).toarray() for k in (0, 1))
    prob = cp.Problem(cp.Minimize(cp.norm(R1 @ w) + cp.norm(R2 @ w)), [(mom.mu[0] - mom.mu[1]) @ w == 1])
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL
    kappa = 1.0 / prob.value
    return kappa * kappa / (1 + kappa * kappa)


@pytest.mark.parametrize("seed", [39, 43])
def test_largest_bound_refines_an_inaccurate_solve(seed):
    """ECOS ends these bounds optimal_inaccurate (off by ~5e-6 in delta_max); the bound is refined
    on Clarabel and agrees with CVXPY, and every solve's status is kept."""
    from fsframe_mpm import DEFAULT_RHO, largest_bound
    from fsframe_mpm.bound import _CACHE

    X, y = mixed_scale_data(seed)
    _CACHE.clear()
    bound = largest_bound(X, y, backend="ecos")
    assert bound.statuses == (Status.OPTIMAL_INACCURATE, Status.OPTIMAL)
    assert bound.status is Status.OPTIMAL and bound.backend == "clarabel"
    assert bound.delta == pytest.approx(cvxpy_delta_max(X, y, DEFAULT_RHO), abs=1e-8)


def test_fit_reports_the_bound_solves():
    """The auxiliary solve is reported like every other: first in FitResult.statuses."""
    from fsframe_mpm.bound import _CACHE

    X, y = mixed_scale_data(39)
    _CACHE.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="mpm", backend="ecos", raise_on_failure=False)
        again = fsframe.fit(X, y, method="mpm", backend="ecos", raise_on_failure=False)  # the bound is cached
    for r in (res, again):
        assert r.statuses[:2] == (Status.OPTIMAL_INACCURATE, Status.OPTIMAL)
        assert r.info["delta_max_solves"] == ("ecos: optimal_inaccurate", "clarabel: optimal")
        assert r.statuses[2:2 + len(r.history)] == tuple(h.status for h in r.history)


def test_largest_bound_refused_when_nothing_certifies(monkeypatch):
    import fsframe_mpm

    X, y = mixed_scale_data(39)
    fsframe_mpm.bound._CACHE.clear()
    monkeypatch.setattr(fsframe.auxiliary, "backends_for", lambda problem_class: [])  # no other backend to refine on
    with pytest.raises(SolverFailedError, match="optimal_inaccurate.*Standardise"):
        fsframe_mpm.largest_bound(X, y, backend="ecos")
    fsframe_mpm.bound._CACHE.clear()


def test_formulation_receives_the_fit_solver_by_declaration():
    """MPM declares the trait ``aux_solver``: its validate/build get the fit's auxiliary solver
    (the fit's backend) as ``aux``; the hinge declares none and is called without it."""
    from fsframe_mpm.bound import _CACHE

    assert "aux_solver" in REG.get("formulation", "mpm")().provides()
    assert "aux_solver" not in REG.get("formulation", "hinge")().provides()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = np.where(X[:, 0] > 0, 1, -1)
    _CACHE.clear()
    res = fsframe.fit(X, y, method="l1-mpm", backend="clarabel")
    assert res.info["delta_max_solves"] == ("clarabel: optimal",)
    assert res.statuses[0] is Status.OPTIMAL and res.statuses[1:1 + len(res.history)] == (Status.OPTIMAL,)


# ------------------------------------------------------------------------------ zero_tol cut
def degenerate_l1svm(seed):
    """Random L1-SVMs with m < n (degenerate LPs: interior-point answers carry tiny non-zeros),
    column scales over 10^[-1, 1] and C up to 100."""
    rng = np.random.default_rng(seed)
    m, n = rng.integers(20, 60), rng.integers(30, 110)
    X = rng.standard_normal((m, n)) * 10 ** rng.uniform(-1, 1, size=n)
    y = np.where(X[:, :3].sum(1) + rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y, float(10 ** rng.uniform(-1, 2))


@pytest.mark.parametrize("seed", [0, 1, 6, 9, 13, 19])
def test_l1svm_objective_is_that_of_the_returned_model(seed):
    """On every backend: reported objective = objective of the returned (w, b) in numpy, the
    backends agree on it (1e-6 relative) and on the support."""
    X, y, C = degenerate_l1svm(seed)
    supports, objectives = [], []
    for backend in ("highs", "ecos", "clarabel"):
        res = fsframe.fit(X, y, method="l1-svm", C=C, backend=backend)
        true = l1svm_objective(X, y, C, np.asarray(res.coef), float(res.intercept))
        assert res.objective == pytest.approx(true, rel=1e-7, abs=1e-9), backend
        supports.append(res.selected.tolist())
        objectives.append(true)
    assert max(objectives) - min(objectives) <= 1e-6 * max(1.0, abs(objectives[0]))
    assert supports[0] == supports[1] == supports[2]


def test_a_cut_that_raises_the_optimum_is_refused():
    """zero_tol=0.5 would cut groups the optimum needs: the restricted re-solve shows the rise, the
    uncut point is kept (with a warning) and its objective is the one reported."""
    X, y, C = degenerate_l1svm(1)
    with pytest.warns(ConvergenceWarning, match="returning the uncut solution"):
        res = fsframe.fit(X, y, method="l1-svm", C=C, zero_tol=0.5)
    assert res.info["zero_tol_cut_verified"] is False and res.info["zero_tol_cut_rise"] > 0
    full = fsframe.fit(X, y, method="l1-svm", C=C)
    assert res.n_selected == full.n_selected
    assert res.objective == pytest.approx(l1svm_objective(X, y, C, np.asarray(res.coef), float(res.intercept)),
                                          rel=1e-9)


@pytest.mark.parametrize("zero_tol", [1.0, 2.0, 0.0, -1e-3, float("nan"), float("inf"), True])
def test_zero_tol_out_of_range_is_a_typed_error(zero_tol):
    X, y, _ = degenerate_l1svm(0)
    with pytest.raises(InvalidOptionError, match="'zero_tol' must"):
        fsframe.fit(X, y, method="l1-svm", zero_tol=zero_tol)


# ------------------------------------------------------------------------------ options
@pytest.mark.parametrize("method, params, name", [
    ("fsv", {"max_iter": True}, "max_iter"),
    ("fsv", {"tol": True}, "tol"),
    ("fsv", {"C": True}, "C"),
    ("fsv", {"alpha": True}, "alpha"),
    ("em-l0", {"p": True}, "p"),
    ("arom", {"eps": False}, "eps"),
    ("l1-mpm", {"rho": True}, "rho"),
    ("l0-mpm", {"alpha": 1e300}, "alpha"),
])
def test_bad_options_are_refused_at_construction(method, params, name):
    """Booleans are not numbers here, and weights that would overflow the subproblem are refused
    before anything is solved, naming the option."""
    X, y, _ = degenerate_l1svm(0)
    with pytest.raises(InvalidOptionError, match=f"'{name}' must"):
        fsframe.resolve(method, **params)
    with pytest.raises(InvalidOptionError, match=f"'{name}' must"):
        fsframe.fit(X, y, method=method, **params)


# ------------------------------------------------------------------------------ exactly r
class FakeIterate:
    def __init__(self, t):
        self.t = np.asarray(t, dtype=float)


def test_select_exactly_ignores_a_collapsed_iterate():
    """Iterates collapsing 6 -> 4 -> (all ~1e-9): the last still has relative non-zeros but none
    that count on the run's scale, so the 3 features come from the iterate with 4."""
    its = [FakeIterate(t) for t in ([6, 5, 4, 3, 2, 1], [6, 5, 4, 3, 0, 0], [3e-9, 2e-9, 1e-9, 0, 0, 0])]
    sel = select_exactly(its, 3, 1e-6)
    assert sel.counts == (6, 4, 0)
    assert sel.index == 1 and np.flatnonzero(sel.mask).tolist() == [0, 1, 2] and sel.collapsed
    sel = select_exactly(its, 5, 1e-6)
    assert sel.index == 0 and sel.mask.sum() == 5 and sel.collapsed
    # fewer than r everywhere: the richest iterate, all its meaningful groups
    sel = select_exactly(its[1:], 5, 1e-6)
    assert sel.index == 0 and sel.mask.sum() == 4


def informative_data(seed=0, m=80, n=12):
    """y = sign(3 x_7 + 2 x_2 + x_10 + noise): features 7, 2, 10 are informative, in that order."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, [7, 2, 10]] @ np.array([3.0, 2.0, 1.0]) + 0.3 * rng.standard_normal(m) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("method", ["l1-svm", "fsv", "em-l0", "arom", "svm-weights"])
def test_n_features_keeps_the_informative_features_in_order(method):
    """End to end: n_features = r keeps the r strongest informative features (a known ranking)."""
    X, y = informative_data()
    for r, expected in ((1, [7]), (2, [2, 7]), (3, [2, 7, 10])):
        res = fsframe.fit(X, y, method=method, n_features=r)
        assert sorted(res.selected.tolist()) == expected, (method, r)


def test_n_features_infeasible_restriction_is_said():
    """MPM's chance constraints cannot hold on 2 of 12 features here: the selection is returned with
    a warning and no objective (the old code reported the objective of a different model)."""
    X, y = informative_data()
    with pytest.warns(ConvergenceWarning, match="no model on these features satisfies"):
        res = fsframe.fit(X, y, method="l1-mpm", n_features=2)
    assert sorted(res.selected.tolist()) == [2, 7] and res.objective is None


@pytest.fixture
def colon(shared_file):
    from fsframe.io import load_mat

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_mat(shared_file("colon.mat"))


def test_em_l0_on_colon_takes_r_meaningful_features(colon):
    """em-l0 --n-features 10 on Colon: the iterates collapse; the 10 features come from the last
    iterate with 10 meaningful non-zeros, said in a warning, and their weights are not noise."""
    X = (colon.X - colon.X.mean(0)) / colon.X.std(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fsframe.fit(X, colon.y, method="em-l0", n_features=10)
    assert res.n_selected == 10
    assert any("collapsed below n_features=10" in str(w.message) for w in caught)
    w = np.abs(res.coef[res.support])
    assert w.min() > 1e-2 * w.max()
    k = res.info["n_features_iterate"]
    assert res.history[k].n_nonzero >= 10 and res.history[-1].n_nonzero < 10
    # the model on the 10 features is the base L2 SVM re-solved on them, not the collapsed iterate's
    # heavy EM weights (that one predicted the majority class: training accuracy 0.645)
    assert (res.predict(X) == colon.y).mean() > 0.9


def test_fsv_on_colon_says_it_returns_fewer_than_r(colon):
    X = (colon.X - colon.X.mean(0)) / colon.X.std(0)
    with pytest.warns(ConvergenceWarning, match=r"n_features=50 asked, (\d+) selected") as rec:
        res = fsframe.fit(X, colon.y, method="fsv", n_features=50)
    assert res.n_selected < 50
    assert any(f"50 asked, {res.n_selected} selected" in str(w.message) for w in rec)


# ------------------------------------------------------------------------------ EM stability
def middle_class(seed):
    """40 x 6, the middle of three classes against the rest: no hyperplane separates it, the L2
    start is ~1e-8 and EM's weights 1/t^2 reached 1e16-1e24 (HiGHS refused them)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, 6))
    y = np.digitize(X[:, 0] + 0.3 * rng.standard_normal(40), [-0.5, 0.5])
    return X, y


@pytest.mark.parametrize("seed", [2, 8])
@pytest.mark.parametrize("kw", [{"method": "em-l0"}, {"formulation": "hinge", "surrogate": "exp", "loop": "em"}],
                         ids=["em-l0", "hinge-exp-em"])
def test_em_survives_a_collapse_on_highs(seed, kw):
    X, y = middle_class(seed)
    ym = np.where(y == 1, 1, -1)
    res = fsframe.fit(X, ym, **kw)  # raised UnsupportedProblemError ("not PSD?") before
    ref = fsframe.fit(X, ym, **kw, backend="clarabel")
    assert all(s.ok for s in res.statuses)
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    # the optimum is w = 0 (the constant classifier): HiGHS returns it exactly, Clarabel within 1e-7
    assert res.n_selected == 0 and np.abs(ref.coef).max() * np.abs(X).max() < 1e-6


def test_em_l0_three_classes_on_highs():
    X, y = middle_class(2)
    res = fsframe.fit(X, y, method="em-l0")
    assert all(s.ok for s in res.statuses) and res.n_selected >= 1


def test_em_l0_on_colon_split_2(colon):
    from sklearn.model_selection import StratifiedShuffleSplit
    from sklearn.preprocessing import StandardScaler

    train, _ = list(StratifiedShuffleSplit(10, test_size=0.2, random_state=0).split(colon.X, colon.y))[2]
    X = StandardScaler().fit_transform(colon.X[train])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, colon.y[train], method="em-l0")
        top = fsframe.fit(X, colon.y[train], method="em-l0", n_features=10)
    assert all(s.ok for s in res.statuses + top.statuses)
    assert top.n_selected == 10


class RaisingBackend(Backend):
    """HiGHS whose session raises (as HiGHS's passHessian did) from solve number ``at`` on."""

    name = "raising"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def __init__(self, at):
        self.at = at

    def open(self, data, options=None):
        return _RaisingSession(self, data, options)


class _RaisingSession(BackendSession):
    def __init__(self, backend, data, options):
        super().__init__(backend, data, options)
        self.inner = HighsBackend().open(data, options) if options is not None else HighsBackend().open(data)
        self.count = 0

    def solve(self, data=None):
        self.count += 1
        if self.count >= self.backend.at:
            raise UnsupportedProblemError("highs: passHessian rejected the quadratic objective (not PSD?)")
        return self.inner.solve(data)


def test_solver_trouble_goes_through_raise_on_failure():
    X, y = informative_data()
    with pytest.raises(SolverFailedError, match="set raise_on_failure=False"):
        fsframe.fit(X, y, method="em-l0", backend=RaisingBackend(3))
    with pytest.warns(ConvergenceWarning, match="returning the last good iterate"):
        res = fsframe.fit(X, y, method="em-l0", backend=RaisingBackend(3), raise_on_failure=False)
    assert res.statuses[-1] is Status.ERROR and res.n_iter == 2 and not res.converged


# ------------------------------------------------------------------------------ scales
@pytest.mark.parametrize("factor", [1e-150, 1e-12, 1e12, 1e300])
@pytest.mark.parametrize("method", ["mpm", "l1-mpm"])
def test_mpm_extreme_scale_is_said(method, factor):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    y = np.where(X[:, 0] + rng.normal(size=30) > 0, 1, -1)
    with pytest.raises(DataError, match="largest magnitude.*Standardise"):
        fsframe.fit(X * factor, y, method=method)
    ok = fsframe.fit(X * 1e3, y, method=method)  # inside the range: the same bound as unscaled
    assert ok.info["delta_max"] == pytest.approx(fsframe.fit(X, y, method=method).info["delta_max"], rel=1e-6)


# ------------------------------------------------------------------------------ hints
def test_empty_selection_hint_names_the_methods_own_parameters():
    from fsframe.cli.select import pressure_hint as _pressure_hint

    X, y = informative_data()
    hint = _pressure_hint(fsframe.fit(X, y, method="em-l0"))
    assert "C=" in hint and "p=" in hint and "alpha" not in hint
    assert "alpha=" in _pressure_hint(fsframe.fit(X, y, method="fsv"))


def test_non_finite_weights_go_through_raise_on_failure():
    """A surrogate whose weights overflow makes a failed step (status error), not a ValueError."""
    from fsframe.loops import ReweightedL1
    from fsframe.problem import Subproblem

    class Overflowing(type(REG.get("surrogate", "exp")())):
        def derivative(self, t):
            return np.full(np.shape(t), np.nan) if np.any(np.asarray(t) > 0) else super().derivative(t)

    X, y = informative_data()
    sur = Overflowing()
    for raise_on_failure in (True, False):
        loop = ReweightedL1(raise_on_failure=raise_on_failure)
        sub = Subproblem(REG.get("formulation", "hinge")(), X, y, loop.terms(sur), HighsBackend())
        try:
            if raise_on_failure:
                with pytest.raises(SolverFailedError, match="slot weights rejected"):
                    loop.run(sub, sur)
            else:
                with pytest.warns(ConvergenceWarning, match="slot weights rejected"):
                    out = loop.run(sub, sur)
                assert out.statuses == (Status.OPTIMAL, Status.ERROR) and out.n_iter == 1
        finally:
            sub.close()
