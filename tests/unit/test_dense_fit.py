"""``fit``'s dense EM path (:mod:`fsframe.dense_fit`): taken by ``from_data="auto"`` for the hinge
EM family, equal to the compiled path (``from_data=False``) to 1e-8 in selections, EM iterations,
models, objectives, histories and the ``zero_tol`` cut's record; its certificate judged on the
returned model (recomputed here from ``X``); a step that is not certified falls back to the
compiled path with a record; forced with what it cannot honour, a typed error.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
import fsframe.dense_fit
from fsframe.backends.base import SolveOptions
from fsframe.dense_em import DenseHingeSubproblem
from fsframe.enums import Status
from fsframe.errors import UnsupportedProblemError
from fsframe.fitting import fit_resolved
from fsframe.loops.em import EM
from fsframe.method import resolve
from fsframe.plugins import select_backend
from fsframe.working_set import WorkingSetOptions

COMPILED = WorkingSetOptions(from_data=False)
DENSE = WorkingSetOptions(from_data=True)


def _instance(seed, m=None, n=None, classes=2):
    rng = np.random.default_rng(seed)
    m = m or int(rng.integers(60, 140))
    n = n or int(rng.integers(15, 40))
    X = rng.normal(size=(m, n))
    X[:, 1::3] += 0.5 * X[:, ::3][:, : X[:, 1::3].shape[1]]  # correlated columns
    W = rng.normal(size=(n, classes)) * (rng.random((n, classes)) < 0.2)
    score = X @ W + 0.5 * rng.normal(size=(m, classes))
    y = np.where(score[:, 0] > 0, 1, -1) if classes == 2 else np.argmax(score, axis=1)
    return (X - X.mean(0)) / X.std(0), y


def _fit(X, y, method, ws=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method=method, **kw, **({} if ws is None else {"working_set": ws}))


def _hinge_objective(X, y_pm, C, coef, b, quad):
    xi = np.maximum(0.0, 1.0 - y_pm * (X @ coef + b))
    return C * xi.sum() + float(quad @ (coef ** 2))


def _assert_same(dense, ref):
    assert dense.info["solver_path"] == "dense_em" and dense.certificate["path"] == "dense_em"
    assert "solver_path" not in ref.info
    assert np.array_equal(dense.selected, ref.selected) and dense.n_iter == ref.n_iter
    assert [h.n_nonzero for h in dense.history] == [h.n_nonzero for h in ref.history]
    assert [h.objective for h in dense.history] == pytest.approx([h.objective for h in ref.history], rel=1e-9)
    np.testing.assert_allclose(dense.coef, ref.coef, rtol=0, atol=1e-8)
    assert abs(dense.intercept - ref.intercept) <= 1e-8
    assert abs(dense.objective - ref.objective) <= 1e-8 * max(1.0, abs(ref.objective))
    assert dense.certificate["status"] == ref.certificate["status"] == "optimal"
    assert dense.certificate["certifies_returned"] and ref.certificate["certifies_returned"]
    for key in ("stop_reason", "zero_tol_cut", "zero_tol_cut_resolved", "zero_tol_cut_verified",
                "n_features_iterate", "n_features_dropped"):
        assert dense.info.get(key) == ref.info.get(key), key
    np.testing.assert_allclose(dense.info["penalty_weights"]["quad"], ref.info["penalty_weights"]["quad"], rtol=1e-9)


def _assert_certificate_is_of_the_returned_model(r, X, y):
    # the certified objective recomputed from X at the returned model and the weights it was solved at
    y_pm = np.where(y == r.classes[1], 1.0, -1.0)
    C = fsframe.method.resolve("em-l0").formulation.C
    P = _hinge_objective(X, y_pm, C, r.coef, r.intercept, r.info["penalty_weights"]["quad"])
    assert r.certificate["objective"] == pytest.approx(P, rel=1e-10, abs=1e-10)
    assert r.certificate["gap"] <= 1e-9


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["em-l0", "arom"])
def test_fit_takes_the_dense_path_and_equals_the_compiled_one(seed, method):
    X, y = _instance(seed)
    r = (3, 5, None)[seed % 3]
    dense, ref = _fit(X, y, method, n_features=r), _fit(X, y, method, COMPILED, n_features=r)
    _assert_same(dense, ref)
    assert dense.backend is None and ref.backend == "highs"  # no registered backend solved it
    assert dense.certificate["backend"] == "dense-hinge"
    if method == "em-l0":
        _assert_certificate_is_of_the_returned_model(dense, X, y)


def test_one_vs_rest_takes_the_dense_path_per_class():
    X, y = _instance(7, m=120, n=20, classes=3)
    C = fsframe.method.resolve("em-l0").formulation.C
    dense, ref = _fit(X, y, "em-l0", n_features=4), _fit(X, y, "em-l0", COMPILED, n_features=4)
    assert np.array_equal(dense.selected, ref.selected)
    np.testing.assert_allclose(dense.coef, ref.coef, rtol=0, atol=1e-8)
    assert dense.objective == pytest.approx(ref.objective, rel=1e-9)
    for d, c in zip(dense.per_class, ref.per_class):
        assert d.info["solver_path"] == "dense_em" and "solver_path" not in c.info
        assert d.n_iter == c.n_iter and np.array_equal(d.selected, c.selected)
        assert d.info.get("union_cut_resolved") == c.info.get("union_cut_resolved")
        assert d.certificate["status"] == c.certificate["status"] == "optimal"
        assert d.certificate["gap"] <= 1e-9
        # a class re-solved after the union cut keeps the dense path's record: its certified objective
        # recomputed from X at the returned model (the cut groups at zero) and its weights
        assert d.certificate["path"] == "dense_em"
        y_pm = np.where(y == d.classes[1], 1.0, -1.0)
        P = _hinge_objective(X, y_pm, C, d.coef, d.intercept, np.where(d.support, d.info["penalty_weights"]["quad"], 0.0))
        assert d.certificate["objective"] == pytest.approx(P, rel=1e-10)
    assert any(d.info.get("union_cut_resolved") for d in dense.per_class)  # the union cut re-solved a class


def _failing_at(monkeypatch, step, kind="failed"):
    """DenseHingeSubproblem.solve failing at its ``step``-th call: without a solution
    (``kind="failed"``, NUMERICAL_ERROR), or with one whose status is OPTIMAL_INACCURATE
    (``"inaccurate"``: the loop goes on, the step is not certified)."""
    real = DenseHingeSubproblem.solve
    calls = []

    def solve(self, **kw):
        calls.append(1)
        it = real(self, **kw)
        if len(calls) != step:
            return it
        if kind == "failed":
            return self._failed(it.weights["quad"], "dense hinge dual: not certified (planted)", 0, 0.0)
        result = attrs.evolve(it.result, status=Status.OPTIMAL_INACCURATE, message="dense hinge dual: inaccurate (planted)")
        return attrs.evolve(it, status=Status.OPTIMAL_INACCURATE, result=result)

    monkeypatch.setattr(DenseHingeSubproblem, "solve", solve)
    return calls


@pytest.mark.parametrize("raise_on_failure", [True, False])
@pytest.mark.parametrize("step", [1, 3])
def test_a_failed_step_falls_back_to_the_compiled_path(monkeypatch, step, raise_on_failure):
    X, y = _instance(2)
    ref = _fit(X, y, "em-l0", COMPILED, n_features=3, raise_on_failure=raise_on_failure)
    calls = _failing_at(monkeypatch, step)
    for ws in (None, DENSE):  # taken automatically, and forced: both fall back
        calls.clear()
        r = _fit(X, y, "em-l0", ws, n_features=3, raise_on_failure=raise_on_failure)
        assert len(calls) == step  # the dense run stopped at the failed step
        # the record names the failed step (0-based) and its own message, not the last good one's
        assert f"subproblem {step - 1} ended with status numerical_error" in r.info["dense_em_fallback"]
        assert "not certified (planted)" in r.info["dense_em_fallback"]
        assert "solver_path" not in r.info and r.backend == "highs" and "path" not in r.certificate
        np.testing.assert_allclose(r.coef, ref.coef, rtol=0, atol=1e-12)
        assert np.array_equal(r.selected, ref.selected) and r.n_iter == ref.n_iter and r.converged == ref.converged


@pytest.mark.parametrize("raise_on_failure", [True, False])
def test_an_uncertified_step_with_a_solution_falls_back(monkeypatch, raise_on_failure):
    # the loop goes on past an OPTIMAL_INACCURATE step (it has a solution): the run ends, then falls back
    X, y = _instance(2)
    ref = _fit(X, y, "em-l0", COMPILED, n_features=3, raise_on_failure=raise_on_failure)
    calls = _failing_at(monkeypatch, 2, kind="inaccurate")
    r = _fit(X, y, "em-l0", n_features=3, raise_on_failure=raise_on_failure)
    assert len(calls) > 2
    assert r.info["dense_em_fallback"] == "step 1 not certified optimal (dense hinge dual: inaccurate (planted))"
    assert "solver_path" not in r.info and r.backend == "highs"
    np.testing.assert_allclose(r.coef, ref.coef, rtol=0, atol=1e-12)


def test_forced_with_what_it_cannot_honour_is_an_error():
    X, y = _instance(1, m=50, n=10)
    for kw in ({"keep_model": True}, {"verify": "clarabel"}, {"callback": lambda rec, it: None},
               {"time_limit": 5.0}, {"backend_options": {"presolve": "off"}}):
        with pytest.raises(UnsupportedProblemError, match="from_data=True"):
            _fit(X, y, "em-l0", DENSE, n_features=3, **kw)
        r = _fit(X, y, "em-l0", n_features=3, **kw)  # auto: the compiled path
        assert "solver_path" not in r.info
    with pytest.raises(UnsupportedProblemError, match="sparse"):
        _fit(sp.csr_matrix(X), y, "em-l0", DENSE, n_features=3)
    assert "solver_path" not in _fit(sp.csr_matrix(X), y, "em-l0", n_features=3).info


def test_auto_keeps_the_compiled_path_for_a_chosen_backend_many_rows_or_working_set_false(monkeypatch):
    X, y = _instance(4, m=80, n=12)
    assert "solver_path" not in _fit(X, y, "em-l0", n_features=3, backend="clarabel").info
    assert _fit(X, y, "em-l0", DENSE, n_features=3, backend="clarabel").info["solver_path"] == "dense_em"
    assert "solver_path" not in _fit(X, y, "em-l0", False, n_features=3).info
    monkeypatch.setattr(fsframe.dense_fit, "DENSE_EM_MAX_ROWS", 79)
    assert "solver_path" not in _fit(X, y, "em-l0", n_features=3).info
    assert _fit(X, y, "em-l0", DENSE, n_features=3).info["solver_path"] == "dense_em"
    # other methods never take it (l1-svm's from_data is its own path)
    assert _fit(X, y, "l1-svm").info.get("solver_path") != "dense_em"


def test_auto_takes_the_dense_path_for_a_kernel_map_above_the_row_limit(monkeypatch):
    # a kernel map's X is m x m (square): "auto" takes the dense path up to DENSE_EM_WIDE_MAX_ROWS rows
    # even above DENSE_EM_MAX_ROWS, with the compiled path's answer; a tall X above the row limit does not
    X, y = _instance(6, m=90, n=12)
    monkeypatch.setattr(fsframe.dense_fit, "DENSE_EM_MAX_ROWS", 50)
    kw = dict(kernel="rbf", sigma=3.0, n_features=4)
    dense, ref = _fit(X, y, "em-l0", **kw), _fit(X, y, "em-l0", COMPILED, **kw)
    _assert_same(dense, ref)
    assert "solver_path" not in _fit(X, y, "em-l0", n_features=4).info  # 90 x 12 above 50 rows
    monkeypatch.setattr(fsframe.dense_fit, "DENSE_EM_WIDE_MAX_ROWS", 89)
    assert "solver_path" not in _fit(X, y, "em-l0", **kw).info
    takes = fsframe.dense_fit.dense_em_takes_rows
    assert takes((89, 89), kernel=True) and not takes((90, 90), kernel=True)
    assert takes((50, 1)) and not takes((51, 1)) and not takes((51, 51)) and not takes((51, 400))


def test_auto_keeps_a_wide_linear_X_above_the_row_limit_on_the_compiled_path(monkeypatch):
    # the wider row limit is a kernel map's: a wide linear X (n >= m, no kernel) above
    # DENSE_EM_MAX_ROWS keeps the compiled path (unmeasured there); at the limit it takes the dense one
    X, y = _instance(6, m=60, n=80)
    monkeypatch.setattr(fsframe.dense_fit, "DENSE_EM_MAX_ROWS", 59)
    assert "solver_path" not in _fit(X, y, "em-l0", n_features=4).info
    monkeypatch.setattr(fsframe.dense_fit, "DENSE_EM_MAX_ROWS", 60)
    assert _fit(X, y, "em-l0", n_features=4).info["solver_path"] == "dense_em"


@pytest.mark.parametrize("mode", [True, False])
def test_an_explicit_working_set_keeps_auto_on_the_compiled_path(mode):
    # working_set=True asks for the compiled path's working set and False for none: "auto"'s dense
    # path honours both (only WorkingSetOptions(from_data=True) forces it), with the same answer
    X, y = _instance(3, m=60, n=300)
    fit = _fit(X, y, "em-l0", mode, n_features=3)
    assert "solver_path" not in fit.info
    assert fit.certificate.get("path") != "dense_em"
    _assert_same(_fit(X, y, "em-l0", n_features=3), fit)


def test_inputs_are_not_modified():
    X, y = _instance(5, m=70, n=15)
    X0, y0 = X.copy(), y.copy()
    _fit(X, y, "em-l0", n_features=3)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


@pytest.mark.shared_data
@pytest.mark.parametrize("split", range(2))
@pytest.mark.parametrize("r", [5, 10])
def test_fit_on_sonar_takes_the_dense_path_with_the_compiled_answer(split, r, shared_file):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    Xtr = StandardScaler().fit(Xtr).transform(Xtr)
    dense, ref = _fit(Xtr, ytr, "em-l0", n_features=r), _fit(Xtr, ytr, "em-l0", COMPILED, n_features=r)
    _assert_same(dense, ref)
    _assert_certificate_is_of_the_returned_model(dense, Xtr, ytr)


def _scale_instance():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 12))
    return X, np.where(X[:, :3].sum(1) + 0.5 * rng.normal(size=90) > 0, 1, -1)


@pytest.mark.parametrize("r", [3, None])
def test_fit_on_columns_scaled_by_1e3_stays_on_the_dense_path(r):
    # the first step's unscaled pivots end "singular"; the scaled dual certifies it (no fallback)
    X, y = _scale_instance()
    dense, ref = _fit(X * 1e3, y, "em-l0", n_features=r), _fit(X * 1e3, y, "em-l0", COMPILED, n_features=r)
    assert dense.info["solver_path"] == "dense_em" and "dense_em_fallback" not in dense.info
    assert np.array_equal(dense.selected, ref.selected) and dense.n_iter == ref.n_iter
    np.testing.assert_allclose(dense.coef, ref.coef, rtol=0, atol=1e-6 * np.abs(ref.coef).max())
    assert dense.objective == pytest.approx(ref.objective, rel=1e-7)  # both optimal to 1e-9 per QP
    assert dense.certificate["status"] == "optimal" and dense.certificate["gap"] <= 1e-9


def test_fit_where_the_dense_solve_runs_out_is_the_compiled_paths(monkeypatch):
    # columns spread over 1e-3.5..1e3.5 and no refinement of a refused point (REFINE_MAX_FREE 0; the
    # refinement certifies this fit: the next test): no attempt certifies the first step (each named
    # in the record); the fit is the compiled path's, exactly (seed 23, which falls back both with the
    # cold crash from zero alone and with the crash from the classes' balanced point before it; seed 6,
    # which this test used, is certified since the merges of session 29, seed 3 since the balanced
    # point, each with the compiled path's selection and iterations)
    monkeypatch.setattr(fsframe.dense_em, "REFINE_MAX_FREE", 0)
    X, y = _instance(23, m=100, n=25)
    X = X * np.logspace(-3.5, 3.5, 25)[np.random.default_rng(23).permutation(25)]
    auto, ref = _fit(X, y, "em-l0", n_features=3), _fit(X, y, "em-l0", COMPILED, n_features=3)
    why = auto.info["dense_em_fallback"]
    assert "subproblem 0" in why and "scaled: not certified" in why
    assert "cold: not certified" in why and "cold from zero: not certified" in why
    assert "solver_path" not in auto.info and auto.backend == "highs"
    assert np.array_equal(auto.coef, ref.coef) and auto.objective == ref.objective
    assert np.array_equal(auto.selected, ref.selected) and auto.n_iter == ref.n_iter


def test_the_refinement_certifies_the_mixed_scale_fit_on_the_dense_path():
    # the instance above with the refinement of refused points (DenseHingeSubproblem._refined): the
    # dense path certifies every step, and the fit is the compiled path's (selection, EM iterations,
    # objective to 1e-12, weights to 1e-9 of the largest). Planted (no refinement): the fit falls back
    X, y = _instance(23, m=100, n=25)
    X = X * np.logspace(-3.5, 3.5, 25)[np.random.default_rng(23).permutation(25)]
    auto, ref = _fit(X, y, "em-l0", n_features=3), _fit(X, y, "em-l0", COMPILED, n_features=3)
    assert auto.info.get("solver_path") == "dense_em" and "dense_em_fallback" not in auto.info
    assert np.array_equal(auto.selected, ref.selected) and auto.n_iter == ref.n_iter
    assert auto.objective == pytest.approx(ref.objective, rel=1e-12)
    np.testing.assert_allclose(auto.coef, ref.coef, rtol=0, atol=1e-9 * np.abs(ref.coef).max())


@pytest.mark.parametrize("seed", [7, 25, 39])
def test_a_cold_step_the_balanced_crash_leaves_uncertified_is_tried_from_zero_on_the_dense_path(seed):
    # the mixed-scale instances above whose first step the cold attempt from the classes' balanced
    # point (dense_rules.cold_crash_from) does not certify, nor "scaled", and the cold attempt from
    # zero (the crash from zero, CRASH_SWEEPS) does: the fit stays on the dense path (on 40 such
    # seeds 40 with it, 35 without), with the compiled path's selection and EM iterations.
    # Planted (no "cold from zero" attempt): each falls back to the compiled path
    X, y = _instance(seed, m=100, n=25)
    X = X * np.logspace(-3.5, 3.5, 25)[np.random.default_rng(seed).permutation(25)]
    auto, ref = _fit(X, y, "em-l0", n_features=3), _fit(X, y, "em-l0", COMPILED, n_features=3)
    assert auto.info.get("solver_path") == "dense_em" and "dense_em_fallback" not in auto.info
    assert np.array_equal(auto.selected, ref.selected) and auto.n_iter == ref.n_iter
    assert auto.objective == pytest.approx(ref.objective, rel=1e-9)


def test_a_fallback_where_the_accuracy_runs_out_is_said_in_info_not_warned(monkeypatch):
    """A step whose accuracy runs out (mixed column scales, no refinement) falls back by design to the
    certified compiled answer: said in ``info``, no SolverWarning (the one the user cannot act on);
    only a fallback because the run raised is warned of (below). Planted (every fallback warned): fails."""
    monkeypatch.setattr(fsframe.dense_em, "REFINE_MAX_FREE", 0)
    X, y = _instance(23, m=100, n=25)
    X = X * np.logspace(-3.5, 3.5, 25)[np.random.default_rng(23).permutation(25)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", fsframe.errors.SolverWarning)
        auto = fsframe.fit(X, y, method="em-l0", n_features=3)
    assert "subproblem 0" in auto.info["dense_em_fallback"]


def test_fit_on_columns_scaled_by_1e4_falls_back_to_the_compiled_path_and_is_scale_invariant():
    # beyond the dense solve's accuracy: the fallback, whose HiGHS session tries its dense dual again
    # after the L2 start's singular one (the Hessian changed), gives the unit scale's answer
    X, y = _scale_instance()
    unit = _fit(X, y, "em-l0", COMPILED)
    auto, ref = _fit(X * 1e4, y, "em-l0"), _fit(X * 1e4, y, "em-l0", COMPILED)
    assert "subproblem 0" in auto.info["dense_em_fallback"] and "solver_path" not in auto.info
    assert np.array_equal(auto.coef, ref.coef) and auto.objective == ref.objective
    assert list(ref.selected) == list(unit.selected) == [0, 1, 2]
    assert ref.objective == pytest.approx(unit.objective, rel=1e-9)
    assert all(st.ok for st in ref.statuses)


def test_the_zero_tol_cut_resolve_equals_the_compiled_one():
    # tol=0.1: EM's last iterate keeps a group below zero_tol, the cut is re-solved on both paths;
    # penalty_weights are those the cut was made from (not the inf that fixed the cut groups)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 25))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=90) > 0, 1, -1)
    dense, ref = _fit(X, y, "em-l0", tol=0.1), _fit(X, y, "em-l0", COMPILED, tol=0.1)
    assert ref.info["zero_tol_cut"] >= 1 and ref.info["zero_tol_cut_resolved"]
    _assert_same(dense, ref)
    assert dense.certificate["certified_on"] == ref.certificate["certified_on"] == "cut problem"
    assert np.all(np.isfinite(dense.info["penalty_weights"]["quad"]))


def _fit_resolved(res, X, y, ws, **kw):
    backend = select_backend("auto", res.problem_class, quadratic=True, time_limit=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_resolved(res, X, y, None, backend, SolveOptions(), ws=ws, **kw)


@attrs.frozen
class _NoInterceptHinge(type(resolve("em-l0").formulation)):
    """A subclass of the hinge changing its model (the intercept fixed at 0)."""

    def build(self, X, y, terms):
        bm = super().build(X, y, terms)
        bm.model.b.fix(0.0)
        return bm


def test_a_subclass_of_the_hinge_keeps_the_compiled_path():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 15)) + 2.0
    y = np.where(X[:, 0] + X[:, 1] > 4.3, 1, -1)
    res = resolve("em-l0")
    sub = attrs.evolve(res, formulation=_NoInterceptHinge(C=res.formulation.C))
    auto, ref = _fit_resolved(sub, X, y, WorkingSetOptions(), n_features=3), _fit_resolved(sub, X, y, COMPILED,
                                                                                           n_features=3)
    assert "solver_path" not in auto.info and "dense_em_fallback" not in auto.info
    assert auto.intercept == ref.intercept == 0.0  # the subclass's model, not the plain hinge's
    assert auto.objective == pytest.approx(ref.objective, rel=1e-12)
    with pytest.raises(UnsupportedProblemError, match="_NoInterceptHinge, not the registered hinge"):  # forced
        _fit_resolved(sub, X, y, DENSE, n_features=3)


@attrs.frozen
class _CompiledEM(EM):
    """A subclass of EM reading what only the compiled subproblem has."""

    def run(self, sub, surrogate, **kw):
        assert sub.compiled.base.b is not None
        return super().run(sub, surrogate, **kw)


def test_a_subclass_of_em_keeps_the_compiled_path():
    X, y = _instance(3, m=80, n=15)
    res = attrs.evolve(resolve("em-l0"), loop=_CompiledEM())
    auto, ref = _fit_resolved(res, X, y, WorkingSetOptions(), n_features=3), _fit_resolved(res, X, y, COMPILED,
                                                                                           n_features=3)
    assert "solver_path" not in auto.info and "dense_em_fallback" not in auto.info
    assert np.array_equal(auto.selected, ref.selected) and auto.objective == pytest.approx(ref.objective, rel=1e-12)
    with pytest.raises(UnsupportedProblemError, match="_CompiledEM, a subclass of EM"):  # forced
        _fit_resolved(res, X, y, DENSE, n_features=3)


def _needs_compiled_only(self, **kw):  # asks the dense subproblem for what only the compiled one has
    return self.model_loss(None)


def _raises_unsupported(self, **kw):
    raise UnsupportedProblemError("planted")


@pytest.mark.parametrize("solve, why", [(_needs_compiled_only, "AttributeError: 'DenseHingeSubproblem' object has "
                                         "no attribute 'model_loss'"), (_raises_unsupported, "UnsupportedProblemError: "
                                                                                           "planted")])
def test_auto_falls_back_when_the_dense_run_cannot_go_on(monkeypatch, solve, why):
    """What the fallback is for — the run needs what only the compiled subproblem has — falls back,
    visibly: a SolverWarning naming it and info["dense_em_fallback"]."""
    X, y = _instance(3, m=80, n=15)
    ref = _fit(X, y, "em-l0", COMPILED, n_features=3)
    monkeypatch.setattr(DenseHingeSubproblem, "solve", solve)
    with pytest.warns(fsframe.errors.SolverWarning, match="fell back to the compiled path"):
        r = fsframe.fit(X, y, method="em-l0", n_features=3)
    assert r.info["dense_em_fallback"] == f"the dense run raised {why}"
    assert "solver_path" not in r.info and np.array_equal(r.selected, ref.selected)
    with pytest.raises((AttributeError, UnsupportedProblemError)):  # forced: raised as it is
        _fit(X, y, "em-l0", DENSE, n_features=3)


def test_auto_does_not_hide_an_attribute_error_of_the_dense_run(monkeypatch):
    """An AttributeError that is not the dense subproblem's missing attribute is a bug in the dense
    path: raised, not hidden behind a silent compiled re-run. Planted (the old catch of every
    AttributeError): the fit falls back and returns."""
    X, y = _instance(3, m=80, n=15)

    def solve(self, **kw):
        return None.weights  # a bug inside the dense run

    monkeypatch.setattr(DenseHingeSubproblem, "solve", solve)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'weights'"):
        _fit(X, y, "em-l0", n_features=3)
