""":class:`fsframe.tuning.FSSelectorCV` (issue 22): scikit-learn conformance, the same scores as
GridSearchCV fitting every point separately, the rules, pipelines and searches, engines, sparse
input."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MaxAbsScaler, StandardScaler

from fsframe.errors import InvalidOptionError
from fsframe.estimator import FSSelector
from fsframe.evaluation.splits import make_splits
from fsframe.tuning import FSSelectorCV

pytestmark = pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning",
                                        "ignore::fsframe.errors.FsframeWarning")


@pytest.fixture(scope="module")
def wdbc():
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[::3], y[::3]  # 190 samples: fast
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def tuned(wdbc):
    X, y = wdbc
    return FSSelectorCV("l1-svm", cv=4, max_points=12).fit(X, y)


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(FSSelectorCV(cv=3, max_points=3), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert failed == []


def test_scores_equal_gridsearchcv_fitting_every_point_separately(wdbc, tuned):
    """Each fold's warm path gives, point by point, the held-out accuracy of separate fits."""
    X, y = wdbc
    grid = tuned.grid_["C"]
    assert len(grid) >= 5 and tuned.grid_rule_.entry is not None
    splits, _ = make_splits(np.unique(y, return_inverse=True)[1], 4, random_state=0)
    gs = GridSearchCV(FSSelector("l1-svm"), {"C": grid}, cv=[(s.train, s.test) for s in splits]).fit(X, y)
    np.testing.assert_allclose(tuned.cv_results_["mean_test_score"], gs.cv_results_["mean_test_score"], atol=1e-12)
    for k in range(4):
        np.testing.assert_allclose(tuned.cv_results_[f"split{k}_test_score"], gs.cv_results_[f"split{k}_test_score"],
                                   atol=1e-12)
    assert tuned.best_score_ == pytest.approx(gs.best_score_, abs=1e-12)
    # GridSearchCV's keys, and the refitted model is the fit at the chosen point
    for key in ("params", "param_C", "mean_test_score", "std_test_score", "rank_test_score", "mean_fit_time",
                "std_fit_time", "split0_test_score"):
        assert key in tuned.cv_results_
    assert tuned.cv_results_["params"] == [{"C": c} for c in grid]
    assert tuned.cv_results_["rank_test_score"][tuned.best_index_] == 1
    one = FSSelector("l1-svm", C=tuned.best_params_["C"]).fit(X, y)
    np.testing.assert_allclose(tuned.coef_, one.coef_, atol=1e-9)
    np.testing.assert_array_equal(tuned.support_, one.support_)
    assert tuned.C is None  # the refit leaves the parameters as given


def test_one_standard_error_rule_takes_the_fewest_features_within_one_se(wdbc, tuned):
    X, y = wdbc
    se = FSSelectorCV("l1-svm", cv=4, max_points=12, rule="1se").fit(X, y)
    r = se.cv_results_
    mean, std, nsel = r["mean_test_score"], r["std_test_score"], r["mean_n_selected"]
    b = tuned.best_index_
    within = np.flatnonzero(mean >= mean[b] - std[b] / 2.0)  # sqrt(4 folds) = 2
    assert se.best_index_ in within and nsel[se.best_index_] == nsel[within].min()
    assert se.support_.sum() <= tuned.support_.sum()
    np.testing.assert_array_equal(r["mean_test_score"], tuned.cv_results_["mean_test_score"])  # same folds


def test_rules_on_known_scores():
    """The rules on hand-made results: 4 folds, so one standard error is std / 2."""
    from fsframe.tuning import _choose

    r = {"mean_test_score": np.array([0.92, 0.95, 0.94, 0.93, 0.95]),
         "std_test_score": np.array([0.02, 0.04, 0.04, 0.02, 0.06]),
         "mean_n_selected": np.array([2.0, 10.0, 6.0, 4.0, 12.0])}
    assert _choose(r, "best", 4) == 1  # 0.95 twice: the one with fewer features
    assert _choose(r, "1se", 4) == 3  # within 0.95 - 0.04 / 2 = 0.93: rows 1-4, the fewest features is row 3


def test_in_a_pipeline_and_a_grid_search(wdbc):
    X, y = wdbc
    pipe = make_pipeline(StandardScaler(), FSSelectorCV("l1-svm", cv=3, max_points=6))
    gs = GridSearchCV(pipe, {"fsselectorcv__rule": ["best", "1se"]}, cv=2).fit(X, y)
    assert gs.best_params_["fsselectorcv__rule"] in ("best", "1se")
    assert gs.best_estimator_[-1].transform(X).shape[1] == gs.best_estimator_[-1].support_.sum() > 0


def test_n_features_and_both_tuned(wdbc):
    X, y = wdbc
    r = FSSelectorCV("svm-weights", cv=3).fit(X, y)  # declares n_features
    assert r.tuned_ == ("n_features",) and r.grid_["n_features"] == [1, 2, 3, 5, 10, 17, 30]
    assert r.support_.sum() == r.best_params_["n_features"]
    both = FSSelectorCV("l1-svm", tune=("n_features", "C"), grid={"C": [0.05, 1.0], "n_features": [2, 5]},
                        cv=3).fit(X, y)
    assert both.cv_results_["params"] == [{"C": 0.05, "n_features": 2}, {"C": 1.0, "n_features": 2},
                                          {"C": 0.05, "n_features": 5}, {"C": 1.0, "n_features": 5}]
    assert both.support_.sum() <= both.best_params_["n_features"]


def test_parallel_folds_give_the_same_results(wdbc, tuned):
    X, y = wdbc
    par = FSSelectorCV("l1-svm", cv=4, max_points=12, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(par.cv_results_["mean_test_score"], tuned.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(par.cv_results_["mean_n_selected"], tuned.cv_results_["mean_n_selected"])


def test_sparse_input(wdbc):
    X, y = wdbc
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    a = FSSelectorCV("l1-svm", cv=3, max_points=6).fit(MaxAbsScaler().fit_transform(Xs), y)
    b = FSSelectorCV("l1-svm", cv=3, max_points=6).fit(MaxAbsScaler().fit_transform(Xs.toarray()), y)
    np.testing.assert_array_equal(a.support_, b.support_)
    np.testing.assert_allclose(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])


def test_a_fold_that_cannot_be_fitted_is_named():
    from fsframe.errors import DataError

    X = np.random.default_rng(0).standard_normal((8, 3))
    with pytest.raises(DataError, match=r"the training part of fold \d has 1 sample of a class .* use fewer folds"):
        FSSelectorCV("l1-svm", cv=2).fit(X, [0] * 6 + [1] * 2)


@pytest.mark.parametrize("kwargs, words", [
    ({"tune": "C", "C": 1.0}, r"'C' is tuned and also fixed"),
    ({"grid": {"alpha": [1.0]}}, r"grid names \['alpha'\], which are not tuned"),
    ({"rule": "max"}, r"rule must be one of"),
    ({"tune": ("C", "alpha")}, r"tune two parameters only as a parameter and 'n_features'"),
    ({"method": "fs-mpm"}, r"method 'fs-mpm' declares no sparsity parameter"),
    ({"n_jobs": 0}, r"n_jobs must be a non-zero integer"),
])
def test_bad_options_are_typed_errors(wdbc, kwargs, words):
    X, y = wdbc
    kwargs = {"method": "l1-svm", **kwargs}
    with pytest.raises(InvalidOptionError, match=words):
        FSSelectorCV(**kwargs).fit(X[:40], y[:40])


def test_select_tune_on_the_command_line(cli, small_csv):
    r = cli("select", small_csv, "--drop-columns", "0", "--method", "l1-svm", "--tune", "--tune-folds", "3",
            "--rule", "1se")
    assert r.code == 0, r.err
    assert "tuning C by 3-fold cross-validation (rule '1se'" in r.out and "<- chosen" in r.out
    chosen = float(r.out.split("chosen: C=")[1].split()[0])  # then the one fit, at that C
    fitted = float(r.out.split("model: hinge(C=")[1].split(")")[0])
    assert fitted == pytest.approx(chosen, rel=1e-5)
    r = cli("select", small_csv, "--drop-columns", "0", "--method", "svm-weights", "--tune", "n_features",
            "--tune-folds", "3")
    assert r.code == 0 and "tuning n_features" in r.out
    r = cli("select", small_csv, "--method", "l1-svm", "--tune", "--cv", "3")
    assert r.code == 2 and "nested cross-validation is not offered" in r.err


def test_methods_command_names_the_sparsity_parameter(cli):
    r = cli("methods", "l1-svm")
    assert "sparsity parameter: C" in r.out and "first feature enters" in r.out
    r = cli("methods", "fs-mpm")
    assert "sparsity parameter: none declared" in r.out


def test_a_failing_grid_point_scores_error_score(wdbc, monkeypatch):
    """Solver trouble at one point of one fold: that point scores NaN and is never chosen, the others
    keep their scores (GridSearchCV's error_score); error_score='raise' propagates it."""
    import fsframe.tuning as tuning
    from fsframe.errors import ConvergenceWarning, SolverFailedError

    X, y = wdbc
    real = tuning.path

    def flaky(Xtr, ytr, method, **kw):
        if 10.0 in kw["C"] and len(ytr) < 150:  # the folds' training parts, not the refit
            raise SolverFailedError("planted: iteration limit")
        return real(Xtr, ytr, method, **kw)

    monkeypatch.setattr(tuning, "path", flaky)
    grid = {"C": [0.1, 1.0, 10.0]}
    with pytest.warns(ConvergenceWarning, match=r"3 fit\(s\) of grid points failed .* C=10: planted"):
        est = FSSelectorCV("l1-svm", cv=3, grid=grid).fit(X, y)
    r = est.cv_results_
    assert np.isnan(r["mean_test_score"][2]) and np.isfinite(r["mean_test_score"][:2]).all()
    assert est.best_params_["C"] in (0.1, 1.0)
    monkeypatch.setattr(tuning, "path", real)
    clean = FSSelectorCV("l1-svm", cv=3, grid=grid).fit(X, y)
    np.testing.assert_array_equal(r["mean_test_score"][:2], clean.cv_results_["mean_test_score"][:2])
    monkeypatch.setattr(tuning, "path", flaky)
    with pytest.raises(SolverFailedError, match="planted"):
        FSSelectorCV("l1-svm", cv=3, grid=grid, error_score="raise").fit(X, y)
