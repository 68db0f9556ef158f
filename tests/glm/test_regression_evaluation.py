"""Cross-validation and comparison of regression methods (``Formulation.task == "regression"``)
on a real target, scikit-learn's bundled ``diabetes`` data: the splits are scikit-learn's
shuffled k-fold, every fold's R², MSE and MAE equal scikit-learn's metrics of ``fsframe.fit`` on
that fold (and of a ``LinearRegression`` refit on the selected features with ``retrain="ls"``),
and the report and table show them instead of accuracy."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.model_selection import RepeatedKFold, ShuffleSplit
from sklearn.preprocessing import StandardScaler

import fsframe
from fsframe.errors import DataError, InvalidOptionError
from fsframe.evaluation import compare, cross_validate


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


def _fold_fit(X, y, tr, te, method, **params):
    sc = StandardScaler().fit(X[tr])
    Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
    return fsframe.fit(Xtr, y[tr], method=method, **params), Xtr, Xte


def test_cross_validate_scores_a_regression_by_r2_mse_mae(diabetes):
    X, y = diabetes
    r = cross_validate(X, y, "l1-ls", cv=4, C=0.05, random_state=3)
    assert r.protocol["task"] == "regression" and r.protocol["stratified"] is False
    assert r.metrics[:3] == ("r2", "mse", "mae") and r.dataset["task"] == "regression"
    pairs = list(RepeatedKFold(n_splits=4, n_repeats=1, random_state=3).split(X))
    assert len(r.folds) == 4
    for f, (tr, te) in zip(r.folds, pairs):
        assert f.ok and np.array_equal(f.train, tr) and np.array_equal(f.test, te)
        alone, _, Xte = _fold_fit(X, y, tr, te, "l1-ls", C=0.05)
        pred = alone.predict(Xte)
        assert f.r2 == pytest.approx(r2_score(y[te], pred), rel=1e-6)
        assert f.mse == pytest.approx(mean_squared_error(y[te], pred), rel=1e-6)
        assert f.mae == pytest.approx(mean_absolute_error(y[te], pred), rel=1e-6)
        assert f.accuracy is None and f.mcc is None and f.selected == tuple(alone.selected.tolist())
    s = r.summary()
    assert s["r2"]["mean"] == pytest.approx(np.mean([f.r2 for f in r.folds]), rel=1e-12) and "accuracy" not in s
    text = r.report()
    assert "real target" in text and "R²" in text and "MAE" in text and "accuracy" not in text
    assert "4-fold CV" in text and "stratified" not in text
    assert r.fold_columns[6:9] == ("r2", "mse", "mae") and r.fold_rows()[0]["r2"] == r.folds[0].r2


def test_retrain_ls_refits_least_squares_on_the_selected_features(diabetes):
    X, y = diabetes
    r = cross_validate(X, y, "log-ls", cv=0.3, repeats=2, retrain="ls", C=0.05, random_state=1)
    assert r.protocol["kind"] == "holdout" and "selector_r2" in r.metrics
    pairs = list(ShuffleSplit(n_splits=2, test_size=0.3, random_state=1).split(X))
    for f, (tr, te) in zip(r.folds, pairs):
        assert np.array_equal(f.test, te)
        alone, Xtr, Xte = _fold_fit(X, y, tr, te, "log-ls", C=0.05)
        cols = alone.selected
        ols = LinearRegression().fit(Xtr[:, cols], y[tr]).predict(Xte[:, cols])
        assert f.r2 == pytest.approx(r2_score(y[te], ols), rel=1e-6)
        assert f.selector_r2 == pytest.approx(r2_score(y[te], alone.predict(Xte)), rel=1e-6)
        assert f.mse == pytest.approx(mean_squared_error(y[te], ols), rel=1e-6)


def test_compare_regression_methods(diabetes):
    X, y = diabetes
    c = compare(X, y, ["l1-ls", "em-ls"], cv=3, C=0.05)
    table = c.table()
    assert table.splitlines()[0].split()[:4] == ["method", "R²", "MSE", "MAE"]
    assert "accuracy" not in c.report() and "real target" in c.report()
    rows = c.rows()
    assert rows[0]["r2_mean"] == pytest.approx(c["l1-ls"].summary()["r2"]["mean"])


def test_regression_evaluation_refusals(diabetes):
    X, y = diabetes
    with pytest.raises(InvalidOptionError, match="separately"):
        compare(X, y, ["l1-ls", "l1-svm"], cv=3)
    with pytest.raises(InvalidOptionError, match="retrain='svm' is for classification"):
        cross_validate(X, y, "l1-ls", cv=3, retrain="svm")
    with pytest.raises(InvalidOptionError, match="retrain='ls' is for regression"):
        cross_validate(X, np.where(y > y.mean(), 1, -1), "l1-svm", cv=3, retrain="ls")
    with pytest.raises(DataError, match="real numbers"):
        cross_validate(X, np.where(y > y.mean(), "a", "b"), "l1-ls", cv=3)
    with pytest.raises(InvalidOptionError, match="'l1-ls' is a regression method .* data set 'iris' holds 3 class"):
        cross_validate(fsframe.load_dataset("iris"), None, "l1-ls", cv=3)
