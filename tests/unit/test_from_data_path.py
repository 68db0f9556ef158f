"""``fit`` solving the L1-SVM straight from ``X`` (the formulation's ``from_data`` protocol: the
hinge's column and row generation, ``fsframe.backends.hinge_generation``) against the compiled
Pyomo path on the same data, the certificate refusing a planted bad answer, and the choice of path
(``WorkingSetOptions.from_data``, the size rule, the options only the compiled path has)."""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.working_set import WorkingSetOptions
from fsframe.backends import hinge_generation
from fsframe.errors import ConvergenceWarning, SolverWarning, UnsupportedProblemError
from fsframe.loops.single import SingleSolve
from fsframe.testing import check_fit_result
from fsframe_svm import HingeFormulation

FORCED = WorkingSetOptions(from_data=True)
COMPILED = WorkingSetOptions(from_data=False)


def instance(m=80, n=400, seed=3):
    """Features 0-4 carry the label (noise 0.5); ``n > 100`` so that the first LP holds a part of
    them, and the margins leave room for samples to leave the LP and come back."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, :5].sum(axis=1) + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture
def rounds_seen(monkeypatch):
    """The rounds of every ``solve_l1_hinge`` the fits below run."""
    seen = []
    real = hinge_generation.solve_l1_hinge

    def spy(*args, **kw):
        res = real(*args, **kw)
        seen.append(res.rounds)
        return res

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", spy)
    return seen


def test_from_data_equals_the_compiled_path_with_a_column_and_a_sample_brought_back(rounds_seen):
    X, y = instance()
    X0, y0 = X.copy(), y.copy()
    direct = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=FORCED)
    compiled = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=COMPILED)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    (rounds,) = rounds_seen
    # the premise: pricing brought back a feature and a sample that had left the LP
    assert sum(r["returned_features"] for r in rounds) > 0
    assert sum(r["returned_samples"] for r in rounds) > 0
    assert direct.info["solver_path"] == "from_data" and direct.certificate["path"] == "from_data"
    assert "solver_path" not in compiled.info
    assert direct.certificate["status"] == "optimal" and direct.certificate["certifies_returned"]
    assert abs(direct.certificate["gap"]) < 1e-9
    assert direct.objective == pytest.approx(compiled.objective, rel=1e-8)
    np.testing.assert_array_equal(direct.support, compiled.support)
    np.testing.assert_allclose(direct.coef, compiled.coef, atol=1e-7)
    # the objective recomputed in numpy from the coefficients (the kit), and the history
    check_fit_result(direct, X, y)
    (rec,) = direct.history
    assert rec.objective == direct.objective and rec.n_nonzero == direct.n_selected
    hinge = np.maximum(0.0, 1.0 - y * (X @ direct.coef + direct.intercept)).sum()
    assert rec.loss == pytest.approx(hinge, rel=1e-9)
    assert direct.info["from_data_rounds"] == rounds


def test_a_perturbed_weight_is_refused_by_the_certificate(monkeypatch):
    """Plant a bad answer: one non-zero weight of the generation's result moved by 1 %; the fit's
    certificate (from products with X on the full LP) must not call it optimal."""
    X, y = instance()
    real = hinge_generation.solve_l1_hinge

    def planted(*args, **kw):
        res = real(*args, **kw)
        w = res.coef.copy()
        j = int(np.flatnonzero(w)[0])
        w[j] *= 1.01
        return attrs.evolve(res, coef=w)

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", planted)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    said = [str(w.message) for w in caught if issubclass(w.category, SolverWarning)]
    assert len(said) == 1 and "solved from X is certified only" in said[0]  # once, by the fit
    assert r.certificate["status"] == "optimal_inaccurate"
    assert r.statuses[-1].value == "optimal_inaccurate"
    assert max(abs(r.certificate["gap"]), r.certificate["primal_residual"], r.certificate["dual_residual"]) > 1e-6


def test_auto_takes_the_path_only_at_size(monkeypatch, rounds_seen):
    X, y = instance(m=40, n=200)
    small = fsframe.fit(X, y, "l1-svm")
    assert "solver_path" not in small.info and not rounds_seen  # below from_data_min_rows: compiled
    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 40)
    at = fsframe.fit(X, y, "l1-svm")
    assert at.info["solver_path"] == "from_data" and len(rounds_seen) == 1
    assert at.objective == pytest.approx(small.objective, rel=1e-8)
    assert "solver_path" not in fsframe.fit(X, y, "l1-svm", working_set=False).info  # the full problem
    assert "solver_path" not in fsframe.fit(X, y, "l1-svm", working_set=COMPILED).info
    assert "solver_path" not in fsframe.fit(X, y, "l1-svm", time_limit=100.0).info  # a time limit: compiled
    assert "solver_path" not in fsframe.fit(X, y, "l1-svm", n_features=3).info
    assert "solver_path" not in fsframe.fit(X, y, "fsv").info  # an outer loop of several solves
    assert len(rounds_seen) == 1


def test_a_negligible_weight_is_cut_and_the_cut_point_certified(monkeypatch):
    """A weight of 1e-12 on a feature at zero (below the loop's zero_tol): cut from the support,
    the cut point judged again on the full LP (certified: the duals still prove it), the objective
    the cut point's."""
    X, y = instance()
    real = hinge_generation.solve_l1_hinge
    zero = []

    def tiny_weight(*args, **kw):
        res = real(*args, **kw)
        w = res.coef.copy()
        zero.append(int(np.flatnonzero(w == 0)[0]))
        w[zero[0]] = 1e-12 * np.abs(w).max()
        return attrs.evolve(res, coef=w)

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", tiny_weight)
    r = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    monkeypatch.undo()
    clean = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    assert r.info["zero_tol_cut"] == 1 and not r.support[zero[0]] and r.coef[zero[0]] == 0.0
    assert r.certificate["status"] == "optimal" and r.certificate["certifies_returned"]
    np.testing.assert_array_equal(r.support, clean.support)
    assert r.objective == pytest.approx(clean.objective, rel=1e-12)
    check_fit_result(r, X, y)


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
@pytest.mark.parametrize("kw, match", [
    (dict(method="l1-svm", n_features=3), "n_features"),
    (dict(method="l1-svm", keep_model=True), "keep_model"),
    (dict(method="l1-svm", verify="clarabel"), "verify"),
    (dict(method="l1-svm", backend="clarabel"), "HiGHS"),
    (dict(method="fsv"), "one convex solve"),
    (dict(method="svm-weights"), "one convex solve"),
    (dict(method="l1-mpm"), "from_data protocol"),
    (dict(method="l1-svm", callback=lambda record, iterate: None), "callback"),
])
def test_forced_path_names_what_it_cannot_do(kw, match):
    X, y = instance(m=30, n=40)
    with pytest.raises(UnsupportedProblemError, match=match):
        fsframe.fit(X, y, working_set=FORCED, **kw)


def test_forced_path_one_vs_rest_and_sparse_input():
    """Three classes run one-vs-rest, each class from X; a CSR X gives the same answer as dense."""
    import scipy.sparse as sp

    rng = np.random.default_rng(5)
    X = rng.standard_normal((60, 150))
    y = np.argmax(X[:, :3] + 0.3 * rng.standard_normal((60, 3)), axis=1)
    direct = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    compiled = fsframe.fit(X, y, "l1-svm", working_set=COMPILED)
    assert all(p.info["solver_path"] == "from_data" for p in direct.per_class)
    for a, b in zip(direct.per_class, compiled.per_class):
        assert a.objective == pytest.approx(b.objective, rel=1e-8)
        np.testing.assert_array_equal(a.support, b.support)
    check_fit_result(direct, X, y)
    Xs = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    s_direct = fsframe.fit(Xs, y, "l1-svm", working_set=FORCED)
    s_dense = fsframe.fit(Xs.toarray(), y, "l1-svm", working_set=FORCED)
    np.testing.assert_allclose(s_direct.coef, s_dense.coef, atol=1e-9)


def test_the_path_prints_nothing(capfd):
    """HiGHS's banner goes to file descriptor 1 when its model is made: a fit from X (the command
    line's ``--json -`` writes there) keeps it quiet, as the backend does."""
    X, y = instance(m=30, n=60)
    capfd.readouterr()
    fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    out, _ = capfd.readouterr()
    assert out == ""


@pytest.mark.parametrize("answer, match", [(None, "declined with force=True"), ({"coef": 0}, "returned dict")])
def test_a_formulation_breaking_the_protocol_is_a_plugin_error(monkeypatch, answer, match):
    """A third-party ``solve_from_data`` must return a FromDataSolution (or None when not forced)."""
    monkeypatch.setattr(HingeFormulation, "solve_from_data", lambda self, *a, **kw: answer)
    X, y = instance(m=30, n=60)
    with pytest.raises(fsframe.errors.PluginError, match=match):
        fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    if answer is None:  # not forced: a decline is the compiled path
        assert "solver_path" not in fsframe.fit(X, y, "l1-svm").info


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_from_data_takes_auto_true_or_false_only(value):
    with pytest.raises(fsframe.errors.InvalidOptionError, match="from_data"):
        WorkingSetOptions(from_data=value)
    assert WorkingSetOptions(from_data=np.bool_(True)).from_data is True


def _uneven(self, surrogate, n_groups):
    """Slot weights 0.5 .. 2 over the features (a reweighting's weights): the same on both paths."""
    return {"lin": np.linspace(0.5, 2.0, n_groups)}


@pytest.mark.parametrize("case", ["exp", "uneven"])
def test_from_data_solves_the_loops_weights(monkeypatch, case):
    """The weights reach the LP: ``surrogate="exp"`` (``phi'(0) = alpha``, not 1) and weights that
    differ by feature give the compiled path's answer (a path that solved with weight 1 would not)."""
    X, y = instance()
    kw = dict(surrogate="exp", alpha=3.0) if case == "exp" else {}
    if case == "uneven":
        monkeypatch.setattr(SingleSolve, "convex_weights", _uneven)
    direct = fsframe.fit(X, y, "l1-svm", working_set=FORCED, **kw)
    compiled = fsframe.fit(X, y, "l1-svm", working_set=COMPILED, **kw)
    assert direct.info["solver_path"] == "from_data" and direct.certificate["status"] == "optimal"
    assert direct.objective == pytest.approx(compiled.objective, rel=1e-8)
    np.testing.assert_array_equal(direct.support, compiled.support)
    np.testing.assert_allclose(direct.coef, compiled.coef, atol=1e-7)
    lin = direct.info["penalty_weights"]["lin"]
    hinge = np.maximum(0.0, 1.0 - y * (X @ direct.coef + direct.intercept)).sum()
    assert direct.objective == pytest.approx(np.sum(lin * np.abs(direct.coef)) + hinge, rel=1e-9)
    assert not np.allclose(lin, 1.0)


@pytest.mark.parametrize("raw_units", [True, False])
def test_a_cut_the_duals_do_not_prove_is_settled_as_the_compiled_path_does(raw_units):
    """``zero_tol=0.3`` cuts 54 of the 57 groups (55 of 58 with column 0 in raw units), and the model needs them: the cut point is not
    certified, the re-solve without them is far worse, so the fit keeps the uncut solution with
    the compiled path's ConvergenceWarning: both paths return the same objective, support and
    status. With column 0 in raw units (x 1e7, its weight ~1e-7) the same holds: its contribution
    ``|w_0| ||X_0||`` is among the largest, so it is never proposed for the cut (relative to the
    largest raw weight it was)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 300))
    y = np.where(X[:, :3].sum(axis=1) + 0.3 * rng.standard_normal(80) > 0, 1.0, -1.0)
    if raw_units:
        X[:, 0] *= 1e7
    fits = []
    for ws in (FORCED, COMPILED):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fits.append(fsframe.fit(X, y, "l1-svm", working_set=ws, zero_tol=0.3))
        said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
        assert len(said) == 1 and "returning the uncut solution" in said[0]
        assert f"cutting {55 if raw_units else 54} small groups" in said[0]
    direct, compiled = fits
    assert direct.info["solver_path"] == "from_data"
    assert direct.support[0] and compiled.support[0]
    assert direct.objective == pytest.approx(compiled.objective, rel=1e-8)
    np.testing.assert_array_equal(direct.support, compiled.support)
    assert direct.certificate["status"] == compiled.certificate["status"] == "optimal"
    assert direct.info["zero_tol_cut_verified"] is False and direct.info["zero_tol_cut_rise"] > 1.0
    assert (direct.predict(X) == y).mean() == (compiled.predict(X) == y).mean()
    check_fit_result(direct, X, y)


def _plant_a_tiny_weight(monkeypatch, inexact_re_solve: bool) -> list:
    """The first solve from X gets a weight of 1e-12 on a feature at zero and duals halved (so its
    cut point is not certified); the re-solve comes as it is, or with its duals halved too (its
    objective the clean optimum, its certificate failed). Returns the list of solves."""
    real = hinge_generation.solve_l1_hinge
    calls = []

    def planted(*args, **kw):
        res = real(*args, **kw)
        calls.append(res)
        w = res.coef.copy()
        if len(calls) == 1:
            w[int(np.flatnonzero(w == 0)[0])] = 1e-12 * np.abs(w).max()
        elif not inexact_re_solve:
            return res
        return attrs.evolve(res, coef=w, duals=res.duals * 0.5)

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", planted)
    return calls


def test_a_cut_taken_after_the_re_solve(monkeypatch):
    """A weight of 1e-12 planted on a feature at zero, with the duals perturbed so that the cut
    point is not certified: the re-solve with the feature fixed at zero (``restricted``) has the
    clean optimum, and is taken."""
    X, y = instance()
    calls = _plant_a_tiny_weight(monkeypatch, inexact_re_solve=False)
    r = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    monkeypatch.undo()
    clean = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    assert len(calls) == 2 and r.info["zero_tol_cut_resolved"] and r.info["zero_tol_cut_verified"]
    assert r.certificate["status"] == "optimal"
    np.testing.assert_array_equal(r.support, clean.support)
    assert r.objective == pytest.approx(clean.objective, rel=1e-9)
    check_fit_result(r, X, y)


def test_an_inexact_re_solve_within_tol_does_not_settle_the_cut(monkeypatch):
    """As :func:`test_a_cut_taken_after_the_re_solve`, but the re-solve's certificate fails too
    (OPTIMAL_INACCURATE) while its objective is the clean optimum, within ``tol``. As on the
    compiled path's working sets, only a certified OPTIMAL re-solve settles the cut: the fit keeps
    the uncut solution and says so (it took the uncertified re-solve before)."""
    X, y = instance()
    calls = _plant_a_tiny_weight(monkeypatch, inexact_re_solve=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    monkeypatch.undo()
    clean = fsframe.fit(X, y, "l1-svm", working_set=FORCED)
    assert len(calls) == 2 and r.info["zero_tol_cut_resolved"]
    assert r.objective == pytest.approx(clean.objective, rel=1e-9)  # the re-solve was within tol
    assert r.info["zero_tol_cut_verified"] is False
    assert r.info["zero_tol_cut_rise"] == pytest.approx(0.0, abs=1e-8)
    said = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(said) == 1 and "returning the uncut solution" in said[0]
    assert r.certificate["status"] == "optimal_inaccurate"


@pytest.mark.parametrize("options", [{"append_restart": "cold"}, {"qp_form": "auto"}])
def test_fsframes_own_backend_options_stay_out_of_highs(options):
    """``qp_form`` and ``append_restart`` steer fsframe's HiGHS backend; the path from X drops
    them instead of handing HiGHS an option it does not know."""
    X, y = instance()
    direct = fsframe.fit(X, y, "l1-svm", working_set=FORCED, backend_options=options)
    compiled = fsframe.fit(X, y, "l1-svm", working_set=COMPILED, backend_options=options)
    assert direct.info["solver_path"] == "from_data"
    assert direct.objective == pytest.approx(compiled.objective, rel=1e-8)


def test_a_callback_keeps_auto_on_the_compiled_path(monkeypatch):
    """A user's callback takes the loop's iterate: under ``"auto"`` the fit stays compiled at any
    size (the callback sees the coefficients); a progress bar alone does not stop the path."""
    X, y = instance(m=40, n=200)
    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 40)
    seen = []
    r = fsframe.fit(X, y, "l1-svm", callback=lambda record, it: seen.append(np.array(it.coef)))
    assert "solver_path" not in r.info and len(seen) == 1
    np.testing.assert_allclose(seen[0], r.coef, atol=1e-9)
    assert fsframe.fit(X, y, "l1-svm", progress=True).info["solver_path"] == "from_data"


def test_a_penalty_of_solver_noise_is_proposed_the_empty_support(monkeypatch):
    """Balanced classes, C = 1e-3: ``w = 0`` is optimal (objective ``20 C``). Weights of 1e-9
    planted on three features are all "large" to the relative ``zero_tol`` rule, but their whole
    penalty is within ``tol`` of the objective: the empty support is proposed, solved again from
    X, and taken, as the compiled loop does."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 30))
    y = np.r_[np.ones(10), -np.ones(10)]
    real = hinge_generation.solve_l1_hinge
    calls = []

    def noisy(*args, **kw):
        res = real(*args, **kw)
        calls.append(res)
        if len(calls) > 1:
            return res
        w = res.coef.copy()
        w[:3] = 1e-9
        return attrs.evolve(res, coef=w)

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", noisy)
    r = fsframe.fit(X, y, "l1-svm", C=1e-3, working_set=FORCED)
    assert len(calls) == 2 and r.n_selected == 0 and not r.coef.any()
    assert r.info["zero_tol_cut"] == 3 and r.info["zero_tol_cut_verified"]
    assert r.objective == pytest.approx(20e-3, rel=1e-9) and r.certificate["status"] == "optimal"


def test_a_subclass_is_never_solved_as_the_plain_hinge():
    """A subclass of HingeFormulation may change the model (here: feature 0's weight held at or
    below zero through its build); the from-X LP is the plain hinge's, so the inherited
    ``solve_from_data`` declines for a subclass (``fit`` then builds the subclass's model) and,
    forced, refuses naming why; the plain hinge's own call solves."""
    from fsframe.backends.base import SolveOptions

    @attrs.frozen
    class NonPositiveFirst(HingeFormulation):
        name = "non-positive-first-hinge"

        def build(self, X, y, terms):
            built = super().build(X, y, terms)
            built.model.u[0].setub(0.0)  # w_0 = u_0 - v_0 <= 0
            return built

    X, y = instance(m=40, n=120)
    args = (X, np.where(y > 0, 1.0, -1.0), frozenset({"lin"}), {"lin": np.ones(X.shape[1])})
    kw = dict(backend="highs", options=SolveOptions())
    assert NonPositiveFirst(C=10.0).solve_from_data(*args, **kw) is None
    assert NonPositiveFirst(C=10.0).solve_from_data(*args, **kw, force=False) is None
    with pytest.raises(UnsupportedProblemError, match="subclass of HingeFormulation"):
        NonPositiveFirst(C=10.0).solve_from_data(*args, **kw, force=True)
    assert HingeFormulation(C=10.0).solve_from_data(*args, **kw, force=True) is not None


def test_the_first_lps_guess_is_taken_in_fit_and_recorded(rounds_seen):
    """Above ``GUESS_FROM`` entries the fit's generation starts from the first-order guess (every
    round records it in ``info["from_data_rounds"]``) and ends where the compiled path does."""
    X, y = instance(m=120, n=600, seed=5)
    assert X.size >= hinge_generation.GUESS_FROM
    direct = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=FORCED)
    compiled = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=COMPILED)
    (rounds,) = rounds_seen
    assert all(r["guess"]["how"] == "prox" for r in direct.info["from_data_rounds"])
    assert rounds[-1]["guess"]["hits"] >= 0.8 * direct.n_selected > 0
    assert direct.objective == pytest.approx(compiled.objective, rel=1e-8)
    # equal supports assume a unique optimum (Gaussian X, no tied columns): among tied optima,
    # e.g. duplicate columns, the support depends on the start (docs/working-sets.md, "Many rows")
    np.testing.assert_array_equal(direct.support, compiled.support)
