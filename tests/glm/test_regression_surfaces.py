"""A real target through the surfaces that load data sets (issue 23): ``Dataset(task="regression")``
and its loaders (scikit-learn's bundled ``diabetes``, a CSV or LIBSVM file read with
``task="regression"``), ``cross_validate`` and ``compare`` on such a data set, a study over it with
baselines (an all-features least-squares row, least squares on each method's k features and on k
random features) and ``FSRegressorCV``. Every score is checked against scikit-learn's on the same
split; every mismatch of a method and a data set's task is a typed error naming both."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV

import fsframe
from fsframe import Dataset
from fsframe.errors import DataError, InvalidOptionError
from fsframe.evaluation import compare, cross_validate, make_splits
from fsframe.evaluation.experiment import run_study
from fsframe.evaluation.protocols import _random_subsets
from fsframe.evaluation.study import load_study
from fsframe.io import load_csv, load_dataset, load_svmlight
from fsframe.tuning import FSRegressorCV


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


# ------------------------------------------------------------------------------- the data set
def test_regression_dataset_holds_a_real_target(diabetes):
    X, y = diabetes
    d = load_dataset("diabetes")
    assert d.task == "regression" and d.is_regression and d.classes == () and d.class_counts == {}
    np.testing.assert_array_equal(d.X, X)
    np.testing.assert_array_equal(d.y, y)
    assert d.y.dtype == np.float64 and d.feature_names[:3] == ("age", "sex", "bmi")
    assert "real target" in repr(d)
    assert not load_dataset("wine").is_regression


@pytest.mark.parametrize("y, match", [
    (np.full(6, 2.5), "constant"),
    (np.array([1.0, 2, np.nan, 4, 5, 6]), "NaN or inf"),
    (np.array(list("abcdef")), "real numbers"),
    (np.array([3.0]), "constant"),  # one sample: nothing to regress on (and n >= 2 per fold later)
])
def test_a_bad_regression_target_is_refused(y, match):
    X = np.arange(float(2 * len(y))).reshape(len(y), 2)
    with pytest.raises(DataError, match=match):
        Dataset(X=X, y=y, task="regression")


def test_task_is_validated():
    with pytest.raises(DataError, match="task='reg'"):
        Dataset(X=np.eye(4), y=[0, 0, 1, 1], task="reg")
    with pytest.raises(InvalidOptionError, match="loader option task"):
        load_dataset("diabetes", task="Regression")


def test_a_bundled_data_set_has_its_own_task():
    assert load_dataset("diabetes", task="regression").is_regression
    with pytest.raises(DataError, match="'diabetes' is a regression data set"):
        load_dataset("diabetes", task="classification")
    with pytest.raises(DataError, match="'wine' is a classification data set"):
        load_dataset("wine", task="regression")


def test_files_are_read_as_a_real_target_when_told(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = X[:, 0] + 0.5 * rng.normal(size=12)
    csv = tmp_path / "r.csv"
    csv.write_text("a,b,c,target\n" + "\n".join(",".join(repr(float(v)) for v in (*row, t)) for row, t in zip(X, y)))
    d = load_csv(csv, task="regression")
    assert d.is_regression and d.feature_names == ("a", "b", "c")
    np.testing.assert_array_equal(d.y, y)
    # not guessed: as class labels the continuous column is refused, pointing to the regression task
    with pytest.raises(DataError, match="task='regression'"):
        load_csv(csv)
    svm = tmp_path / "r.svm"
    svm.write_text("\n".join(f"{float(t)!r} " + " ".join(f"{j + 1}:{float(v)!r}" for j, v in enumerate(row))
                             for row, t in zip(X, y)) + "\n")
    s = load_svmlight(svm, task="regression")
    assert s.is_regression
    np.testing.assert_allclose(s.X.toarray(), X)
    np.testing.assert_allclose(s.y, y)
    # integer targets are a real target too (counts, scores)
    ints = tmp_path / "i.csv"
    ints.write_text("a,y\n1,3\n2,5\n3,4\n4,9\n")
    assert load_dataset(ints, task="regression").y.dtype == np.float64


# ----------------------------------------------------------------- fit, evaluation, mismatches
def test_fit_takes_a_regression_dataset_and_refuses_the_other_task(diabetes):
    X, y = diabetes
    d = load_dataset("diabetes")
    a = fsframe.fit(d, method="l1-ls", C=0.01)
    b = fsframe.fit(X, y, method="l1-ls", C=0.01)
    np.testing.assert_array_equal(a.coef, b.coef)
    with pytest.raises(InvalidOptionError, match="classification method and data set 'diabetes' holds a real target"):
        fsframe.fit(d, method="l1-svm")
    with pytest.raises(InvalidOptionError, match="regression method .* data set 'wine' holds 3 class labels"):
        fsframe.fit(load_dataset("wine"), method="l1-ls")


def test_cross_validate_and_compare_a_regression_dataset(diabetes):
    """On the Dataset: the same splits and scores as on its arrays, each fold's R² scikit-learn's."""
    X, y = diabetes
    d = load_dataset("diabetes")
    r = cross_validate(d, method="l1-ls", cv=3, C=0.01, scale="none", random_state=1)
    assert r.protocol["task"] == "regression" and r.dataset["name"] == "diabetes" and r.dataset["classes"] == []
    splits, _ = make_splits(y, 3, random_state=1, regression=True)
    for f, s in zip(r.folds, splits):
        np.testing.assert_array_equal(f.test, s.test)
        alone = fsframe.fit(X[s.train], y[s.train], method="l1-ls", C=0.01)
        assert f.r2 == pytest.approx(r2_score(y[s.test], alone.predict(X[s.test])), rel=1e-8)
    same = cross_validate(X, y, method="l1-ls", cv=3, C=0.01, scale="none", random_state=1)
    assert [f.r2 for f in same.folds] == pytest.approx([f.r2 for f in r.folds], rel=1e-12)
    c = compare(d, methods=["l1-ls", "l0-ls"], cv=3, scale="none", random_state=1, C=0.01)
    assert [f.r2 for f in c.results[0].folds] == pytest.approx([f.r2 for f in r.folds], rel=1e-9)
    assert "R²" in c.report() and "accuracy" not in c.report()
    with pytest.raises(InvalidOptionError, match=r"'l1-svm', 'fsv' are classification methods and data set"):
        compare(d, methods=["l1-svm", "fsv"], cv=3)
    with pytest.raises(InvalidOptionError, match="'l1-ls' is a regression method"):
        cross_validate(load_dataset("wine"), method="l1-ls", cv=3)


def test_a_classification_method_on_a_real_target_is_named_with_the_methods_that_take_one(diabetes):
    """``fit(regression_dataset, method="fsv")`` names 'fsv' (it said "the method") and lists
    every registered method whose formulation fits a real target; a real ``y`` given as an array
    to a classification method keeps the data's reason and adds the same."""
    from fsframe.fitting import is_regression
    from fsframe.method import list_methods, resolve

    takes = sorted(m.name for m in list_methods() if is_regression(resolve(m.name).formulation))
    assert {"l1-ls", "l0-ls", "em-ls", "log-ls"} <= set(takes) and "fsv" not in takes
    listed = f"({', '.join(takes)})"
    with pytest.raises(InvalidOptionError, match=r"^'fsv' is a classification method and data set 'diabetes'") as e:
        fsframe.fit(load_dataset("diabetes"), method="fsv")
    assert listed in str(e.value)
    with pytest.raises(InvalidOptionError, match=r"^'hinge' is a classification method"):
        fsframe.path(load_dataset("diabetes"), formulation="hinge", surrogate="l1", loop="single", C=[1.0])
    X, y = diabetes  # integer-valued real target: the data's reason, then the method and the list
    with pytest.raises(DataError, match=r"classes have fewer than 2 samples.*If y is a real target \(214 distinct "
                                        r"numbers\), 'fsv' is a classification method") as e:
        fsframe.fit(X, y, method="fsv")
    assert str(e.value).endswith(f"take a real target: {listed[1:-1]}")
    with pytest.raises(DataError, match=r"y looks continuous.*least-squares method as a real target") as e:
        fsframe.fit(X, y + 0.25, method="l1-svm")  # non-integer values: the loader's own advice, kept short
    assert "'l1-svm'" not in str(e.value)


# ---------------------------------------------------------------------------------- studies
STUDY = """
[study]
name = "diabetes-ls"
seeds = [0]

[protocol]
cv = 3
scale = "none"
baselines = true
random_draws = 3

[[datasets]]
name = "diabetes"

[[methods]]
method = "l1-ls"
C = 0.002

[[methods]]
method = "em-ls"
n_features = 4
"""


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("regression-study")
    (root / "study.toml").write_text(STUDY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = run_study(load_study(root / "study.toml"), root / "out")
        again = run_study(load_study(root / "study.toml"), root / "out")
    cells = [json.loads(p.read_text()) for p in sorted((root / "out" / "cells").glob("*.json"))]
    return first, again, cells


def test_a_study_over_a_regression_dataset_runs_resumes_and_reports(study, diabetes):
    first, again, cells = study
    X, y = diabetes
    assert first.n_computed == 9 and again.n_computed == 0 and again.n_skipped == 9
    (table,) = again.tables
    assert table.protocol["task"] == "regression" and table.protocol["stratified"] is False
    text = again.report()
    assert "real target" in text and "| R² |" in text and "accuracy" not in text
    for c in cells:
        rec = c["record"]
        tr, te = np.asarray(rec["train"]), np.asarray(rec["test"])
        if c["label"] == "all features":  # ordinary least squares on every feature, scikit-learn's R²
            pred = LinearRegression().fit(X[tr], y[tr]).predict(X[te])
            assert rec["r2"] == pytest.approx(r2_score(y[te], pred), rel=1e-9)
            continue
        params = {"C": 0.002} if c["label"] == "l1-ls" else {"n_features": 4}
        alone = fsframe.fit(X[tr], y[tr], method=c["label"], **params)
        assert rec["selected"] == alone.selected.tolist()
        assert rec["r2"] == pytest.approx(r2_score(y[te], alone.predict(X[te])), rel=1e-6)
        # least squares on the k selected and on k random features (the draws the study made);
        # every fit has them, one that kept all features too (its one draw is every feature)
        own = LinearRegression().fit(X[tr][:, rec["selected"]], y[tr]).predict(X[te][:, rec["selected"]])
        assert rec["reference_r2"] == pytest.approx(r2_score(y[te], own), rel=1e-9)
        split = type("S", (), {"repeat": rec["repeat"], "fold": rec["fold"]})
        rnd = [r2_score(y[te], LinearRegression().fit(X[tr][:, s], y[tr]).predict(X[te][:, s]))
               for s in _random_subsets(X.shape[1], len(rec["selected"]), 3, 0, split)]
        assert rec["random_r2"] == pytest.approx(np.mean(rnd), rel=1e-9)
    assert "l1-ls: least squares on k random features" in text and "l1-ls: least squares on its k features" in text
    assert "\n| all features |" in text


def test_every_baseline_row_averages_the_fits_its_footer_counts_when_a_method_keeps_every_feature(tmp_path, diabetes):
    """``l1-ls`` with a large ``C`` keeps all 10 features in every fold: least squares on its k
    features and on k random features are then least squares on every feature, so both rows
    equal the all-features row over the same 3 fits the footer names (they used to average
    none of them, and a method keeping all features in some folds only averaged the others)."""
    X, y = diabetes
    text = STUDY.split("[[methods]]")[0] + '[[methods]]\nmethod = "l1-ls"\nC = 10.0\n'
    (tmp_path / "s.toml").write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_study(load_study(tmp_path / "s.toml"), tmp_path / "out")
    (table,) = res.tables
    row = next(r for r in table.results if r.label == "l1-ls")
    assert [f.n_selected for f in row.ok_folds] == [10, 10, 10]
    full = [r2_score(y[f.test], LinearRegression().fit(X[f.train], y[f.train]).predict(X[f.test])) for f in row.ok_folds]
    assert [f.random_r2 for f in row.ok_folds] == pytest.approx(full, rel=1e-9)
    assert [f.reference_r2 for f in row.ok_folds] == pytest.approx(full, rel=1e-9)
    report = table.report(markdown=True)
    assert "mean ± std over 3 fits on the same splits" in report and "| fits |" not in report
    from fsframe.evaluation.report import fmt

    mean = fmt(float(np.mean(full)), "r2") + " ± "
    for label in ("all features", "l1-ls: least squares on its k features", "l1-ls: least squares on k random features"):
        line = next(x for x in report.splitlines() if x.startswith(f"| {label} |"))
        assert line.split(" | ")[1].startswith(mean), line


def test_a_baseline_row_over_fewer_fits_says_how_many(study):
    """Records without the baseline R² in some fits (written by an older fsframe, say) make the
    table show each row's count in a column 'fits' and the footer say so."""
    import attrs

    (table,) = study[1].tables
    row = next(r for r in table.results if r.label == "em-ls")
    folds = list(row.folds)
    folds[0] = attrs.evolve(folds[0], random_r2=None, reference_r2=None)
    results = [attrs.evolve(r, folds=tuple(folds)) if r is row else r for r in table.results]
    report = attrs.evolve(table, results=tuple(results)).report(markdown=True)
    head = next(x for x in report.splitlines() if x.startswith("| method |")).split(" | ")
    assert head[-1].rstrip(" |") == "fits"
    lines = {x.split(" | ")[0][2:]: x for x in report.splitlines() if x.startswith("| ")}
    assert lines["em-ls: least squares on k random features"].rstrip(" |").endswith("| 2")
    assert lines["em-ls"].rstrip(" |").endswith("| 3") and lines["all features"].rstrip(" |").endswith("| 3")
    assert "(a least-squares row below a method: over the fits of column 'fits')" in report


def test_a_regression_study_over_a_fixed_k_reports_random_features_and_draws_r2(tmp_path, diabetes):
    """``n_features = [2, 4]`` with baselines: least squares on k random features below the
    all-features row (the R² of the draws the study made), and the picture of R² against k."""
    X, y = diabetes
    text = STUDY.split("[[methods]]")[0].replace("random_draws = 3", "random_draws = 2\nn_features = [2, 4]")
    (tmp_path / "s.toml").write_text(text + '[[methods]]\nmethod = "em-ls"\n')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = run_study(load_study(tmp_path / "s.toml"), tmp_path / "out")
    (table,) = res.tables
    base = next(r for r in table.results if r.label == "all features")
    for f in base.ok_folds:
        split = type("S", (), {"repeat": f.repeat, "fold": f.fold})
        tr, te = f.train, f.test
        for k, v in f.random_curve:
            rnd = [r2_score(y[te], LinearRegression().fit(X[tr][:, s], y[tr]).predict(X[te][:, s]))
                   for s in _random_subsets(X.shape[1], k, 2, 0, split)]
            assert v == pytest.approx(np.mean(rnd), rel=1e-9)
    report = table.report(markdown=True)
    assert "| least squares on 2 random features |" in report and "| least squares on 4 random features |" in report
    from fsframe.evaluation.plots import accuracy_vs_features_data

    (d,) = accuracy_vs_features_data(table).values()
    assert d["score_label"] == "test R²" and d["r"] == [2, 4]
    for r, mean in zip(d["r"], d["accuracy"]):
        row = next(x for x in table.results if x.label == f"em-ls r={r}")
        assert mean == pytest.approx(np.mean([f.r2 for f in row.ok_folds]), rel=1e-12)


def test_a_study_refuses_a_classifier_retrain_on_a_real_target(tmp_path):
    (tmp_path / "s.toml").write_text(STUDY.replace("baselines = true", 'retrain = "svm"'))
    with pytest.raises(InvalidOptionError, match="holds a real target; retrain = 'svm'"):
        run_study(load_study(tmp_path / "s.toml"), tmp_path / "out")


# ------------------------------------------------------------------------------ FSRegressorCV
def test_fsregressorcv_scores_equal_gridsearchcv_on_the_same_folds(diabetes):
    """Each grid point's fold scores are the R² of a separate FSRegressor fit (GridSearchCV with
    the regressor's own score), the choice the best mean, the refit FSRegressor at it."""
    X, y = diabetes
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    est = FSRegressorCV("l1-ls", cv=3, max_points=8, random_state=2).fit(X, y)
    grid = est.grid_["C"]
    splits, _ = make_splits(y, 3, random_state=2, regression=True)
    gs = GridSearchCV(fsframe.FSRegressor("l1-ls"), {"C": grid}, cv=[(s.train, s.test) for s in splits]).fit(X, y)
    np.testing.assert_allclose(est.cv_results_["mean_test_score"], gs.cv_results_["mean_test_score"], rtol=1e-6)
    assert est.best_params_["C"] == gs.best_params_["C"]
    refit = fsframe.FSRegressor("l1-ls", C=est.best_params_["C"]).fit(X, y)
    np.testing.assert_allclose(est.coef_, refit.coef_, rtol=1e-7, atol=1e-10)
    assert est.score(X, y) == pytest.approx(r2_score(y, refit.predict(X)), rel=1e-9)
    assert est.coef_.shape == (X.shape[1],) and isinstance(est.intercept_, float)
    twin = clone(est)
    assert twin.get_params() == est.get_params() and not hasattr(twin, "coef_")


def test_fsregressorcv_refuses_what_fsregressor_refuses():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    with pytest.raises(InvalidOptionError, match="FSRegressorCV needs a regression method"):
        FSRegressorCV("l1-svm", cv=2).fit(X, X[:, 0])
    with pytest.raises(DataError, match="training part of fold .* constant target"):
        FSRegressorCV("l1-ls", cv=[(np.arange(10), np.arange(10, 20)), (np.arange(10, 20), np.arange(10))],
                      grid={"C": [1.0]}).fit(X, np.r_[np.zeros(10), np.arange(10.0)])


def test_fsregressorcv_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    expected = {"check_regressors_train": "alpha is the exp surrogate's, not a penalty weight (as FSRegressor)"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(FSRegressorCV(cv=3, max_points=3), expected_failed_checks=expected, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:300]) for r in results if r["status"] == "failed"]
    assert failed == []
    assert sum(r["status"] == "passed" for r in results) >= 40


def test_the_paper_report_refuses_a_regression_study(study, tmp_path):
    """``fsframe report --paper`` renders the papers' accuracy tables: a real target is a typed
    refusal naming the data set, not an internal TypeError."""
    from fsframe.evaluation.paper import digest

    _, again, _ = study
    with pytest.raises(InvalidOptionError, match="diabetes.*real target.*without --paper"):
        digest(again)


def test_progress_lines_show_r2_for_a_real_target(diabetes, capsys):
    """The CLI's progress line (on by default on a terminal and for ``fsframe run``) prints R² for
    a regression fit (it multiplied the missing accuracy before)."""
    from fsframe.cli.__init__ import main

    assert main(["select", "diabetes", "--method", "l1-ls", "--set", "C=0.002", "--cv", "3", "--progress",
                 "--retrain", "ls"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "fold" in ln]
    assert len(lines) == 3 and all(" R² 0." in ln for ln in lines), err


def test_one_sample_test_folds_are_refused_by_fsregressorcv():
    """R² of one test sample is undefined (scikit-learn's ``r2_score`` gives NaN): no score of 0
    is made up for it; a typed error names the fold."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    with pytest.raises(DataError, match="test part of fold .* 1 sample"):
        FSRegressorCV("l1-ls", cv=6).fit(X, y)
