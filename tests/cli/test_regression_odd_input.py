"""The command line and the data checks on a real target as a demanding user meets them: a file
of real targets read without ``--task regression`` for a least-squares method, class labels given
as a real target, test parts of one sample (issue 23)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fsframe import Dataset
from fsframe.errors import DataWarning
from fsframe.evaluation import make_splits


@pytest.fixture
def real_csv(tmp_path):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 4))
    y = 2 * X[:, 0] - X[:, 1] + 0.1 * rng.standard_normal(40)
    path = tmp_path / "real.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,c,d,target", comments="", fmt="%.6g")
    return path


def test_a_real_target_file_without_task_names_the_flag_for_least_squares_methods(cli, real_csv):
    r = cli("select", real_csv, "--method", "l1-ls")
    assert r.code != 0 and "y looks continuous" in r.err
    assert "'l1-ls' takes a real target: add --task regression" in r.err
    r = cli("compare", real_csv, "--methods", "l1-ls,l0-ls", "--cv", "3")
    assert "'l1-ls', 'l0-ls' take a real target: add --task regression" in r.err
    r = cli("path", real_csv, "--formulation", "least-squares", "--surrogate", "l1", "--loop", "single")
    assert "'least-squares' takes a real target" in r.err
    for args in (("select", real_csv, "--method", "l1-svm"), ("compare", real_csv, "--methods", "l1-ls,fsv")):
        r = cli(*args)  # a classification method among them: the loader's own advice only
        assert "y looks continuous" in r.err and "add --task regression" not in r.err
    r = cli("select", real_csv, "--method", "l1-ls", "--task", "regression")
    assert r.code == 0, r.err


def test_class_labels_given_as_a_real_target_warn():
    """Two values in a real target: legal (least squares on 0/1), but usually class labels."""
    X = np.arange(24.0).reshape(12, 2) % 7
    y = np.array([0, 1] * 6)
    with pytest.warns(DataWarning, match=r"the real target holds only two values \(0 and 1\); if they are class labels"):
        Dataset(X=X, y=y, task="regression")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Dataset(X=X, y=np.arange(12) % 3, task="regression")  # three values: no warning


def _two_value_warnings(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "holds only two values" in str(w.message)]


@pytest.mark.parametrize("how", ["cross_validate", "cross_validate n_jobs=2", "compare", "FSRegressorCV",
                                 "FSRegressorCV n_jobs=2"])
def test_a_two_valued_real_target_warns_once_per_call_not_per_fold(how):
    """It warned once more per fold (cross_validate and compare: the data check, then every fold's
    fit, re-issued as one "[in 3 of 3 fits]"; FSRegressorCV: the grid, each fold's path and the
    refit, five times): the user sees the one warning that names the problem, each call."""
    import fsframe

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = (X[:, 0] > 0).astype(float)
    jobs = 2 if how.endswith("n_jobs=2") else 1
    run = {"cross_validate": lambda: fsframe.cross_validate(X, y, method="l1-ls", cv=3, n_jobs=jobs),
           "compare": lambda: fsframe.compare(X, y, methods=["l1-ls", "l0-ls"], cv=3),
           "FSRegressorCV": lambda: fsframe.FSRegressorCV("l1-ls", cv=3, n_jobs=jobs).fit(X, y)}[how.split()[0]]
    for _ in range(2):  # and again on the next call
        assert _two_value_warnings(run) == [
            "data: the real target holds only two values (0 and 1); if they are class labels, fit a classification "
            "method on them (task='classification'; command line: without --task regression): least squares "
            "regresses on the two codes"]


def test_one_sample_test_parts_of_a_real_target_warn_that_r2_is_undefined():
    y = np.arange(5.0)
    with pytest.warns(DataWarning, match=r"cv=5 folds of 5 samples: 5 of 5 test parts hold one sample, where R² "
                                         r"is undefined.*use at most 2 folds"):
        make_splits(y, 5, regression=True)
    with pytest.warns(DataWarning, match=r"cv=0.2 of 5 samples: 2 of 2 test parts hold one sample"):
        make_splits(y, 0.2, repeats=2, regression=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_splits(y, 2, regression=True)
        make_splits(np.arange(6.0), 3, regression=True)


@pytest.mark.parametrize("name", ["FSSelector", "FSSelectorCV"])
def test_a_selector_for_a_classifier_on_a_real_target_names_the_method_and_the_way_out(name):
    """It said scikit-learn's "Unknown label type: continuous"; now the method and FSRegressor
    with the methods that take a real target."""
    import fsframe
    from fsframe.errors import DataError
    from fsframe.fitting import task_methods

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 5))
    y = 2 * X[:, 0] + 0.1 * rng.standard_normal(30)
    with pytest.raises(DataError, match=rf"^{name}: y is a real target .*'l1-svm' is a classification method: "
                                        r"select for a real target with FSRegressor") as e:
        getattr(fsframe, name)("l1-svm").fit(X, y)
    assert str(e.value).endswith(f"({', '.join(task_methods(True))})") and "l1-ls" in task_methods(True)
    assert fsframe.FSSelector("l1-svm").fit(X, (y > 0).astype(int)).n_features_in_ == 5  # labels: fitted
    with pytest.raises(DataError, match=r"'[a-z0-9-]+' with formulation='hinge', surrogate='l1', loop='single' is a "
                                        r"classification method"):  # the components as given, not the default 'fsv'
        getattr(fsframe, name)(formulation="hinge", surrogate="l1", loop="single").fit(X, y)


def test_methods_says_which_target_each_method_takes(cli):
    import json

    from fsframe.fitting import task_methods

    r = cli("methods", "l1-ls")
    assert "  target: a real target (regression; a data file needs --task regression)" in r.out
    assert "  target: class labels" in cli("methods", "fsv").out
    r = cli("methods", "--json")
    tasks = {m["name"]: m["task"] for m in json.loads(r.out)["methods"]}
    assert sorted(k for k, t in tasks.items() if t == "regression") == sorted(task_methods(True))
    assert tasks["fsv"] == "classification"



def test_bounds_in_advice_are_rounded_up():
    """Advice says "above x": x rounded down (1/9 as 0.111) would still hold out one sample."""
    from fsframe.evaluation.splits import round_up

    assert round_up(1 / 9) == "0.112" and round_up(1.5 / 442) == "0.0034" and round_up(0.5) == "0.5"
