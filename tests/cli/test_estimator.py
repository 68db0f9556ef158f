"""FSSelector: scikit-learn conformance (check_estimator), Pipeline + GridSearchCV, parameter
handling (explicit, ``params`` dict, ``params__key``), fitted attributes and errors."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError as SkNotFittedError
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import fsframe
from fsframe.errors import FsframeError, FsframeWarning, InvalidOptionError
from fsframe.errors import NotFittedError as FsNotFittedError
from fsframe.estimator import FSSelector

# Checks expected to fail, with the reason (sklearn's expected_failed_checks mechanism). None
# today: every check that runs passes. (check_classifier_data_not_an_array is skipped without
# pandas; check_array_api_input without SCIPY_ARRAY_API — both by scikit-learn itself.)
EXPECTED_FAILED_CHECKS: dict[str, str] = {}


@pytest.mark.parametrize("estimator", [FSSelector(), FSSelector("l1-svm")], ids=["fsv", "l1-svm"])
def test_check_estimator(estimator):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FsframeWarning)
        results = check_estimator(estimator, expected_failed_checks=EXPECTED_FAILED_CHECKS, on_fail=None,
                                  on_skip=None)
    failed = {r["check_name"]: repr(r["exception"]) for r in results if r["status"] == "failed"}
    assert not failed
    assert sum(r["status"] == "passed" for r in results) >= 55


REGRESSOR_EXPECTED_FAILED = {
    # scikit-learn's regressor check sets alpha=0.01 on any regressor with an ``alpha`` parameter
    # (Ridge's penalty); FSRegressor's ``alpha`` is the exp surrogate's (l0-ls), which the lasso has
    # none of, and the refusal is typed (InvalidOptionError naming the accepted parameters)
    "check_regressors_train": "alpha is the exp surrogate's, not a penalty weight",
}


def test_check_estimator_regressor():
    """FSRegressor: scikit-learn's checks for a regressor (no decision_function, R^2 score, a
    dense-only sparse tag with a typed SparseInputError), bad input typed (DataError)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FsframeWarning)
        results = check_estimator(fsframe.FSRegressor("lasso"), expected_failed_checks=REGRESSOR_EXPECTED_FAILED,
                                  on_fail=None, on_skip=None)
    failed = {r["check_name"]: repr(r["exception"]) for r in results if r["status"] == "failed"}
    assert not failed
    assert sum(r["status"] == "passed" for r in results) >= 40
    assert not hasattr(fsframe.FSRegressor(), "decision_function")
    import scipy.sparse as sp

    X = np.random.default_rng(0).normal(size=(20, 4))
    with pytest.raises(fsframe.errors.SparseInputError, match="dense X"):
        fsframe.FSRegressor("lasso").fit(sp.csr_matrix(X), X[:, 0])
    with pytest.raises(fsframe.errors.DataError, match="1d array"):
        fsframe.FSRegressor("lasso").fit(X, X[:, :2])


@pytest.mark.parametrize("bad", ["nan", "continuous"])
def test_estimator_bad_input_is_typed(bad):
    X = np.random.default_rng(1).normal(size=(20, 4))
    y = (X[:, 0] > 0).astype(float)
    if bad == "nan":
        y[0] = np.nan
    else:
        y = X[:, 0]
    for est in (FSSelector("l1-svm"), fsframe.FSSelectorCV("l1-svm", cv=2)):
        with pytest.raises(fsframe.errors.DataError, match="NaN" if bad == "nan" else "continuous"):
            est.fit(X, y)


def test_transform_with_the_wrong_feature_count_is_typed():
    """SelectorMixin.transform's feature-count check raised scikit-learn's plain ValueError: a
    DataError (still a ValueError) naming both counts, for every estimator."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 5))
    y = (X[:, 0] + 0.3 * rng.normal(size=30) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FsframeWarning)
        fitted = [FSSelector("l1-svm").fit(X, y), fsframe.FSSelectorCV("l1-svm", cv=2).fit(X, y),
                  fsframe.FSRegressor("lasso").fit(X, X[:, 0] + 0.1 * X[:, 1])]
    for est in fitted:
        assert est.transform(X).shape == (30, int(est.get_support().sum()))
        with pytest.raises(fsframe.errors.DataError, match=r"X has 3 features, but \w+ is expecting 5"):
            est.transform(X[:, :3])


def test_pipeline_and_grid_search(small_binary):
    X, y = small_binary
    pipe = make_pipeline(StandardScaler(), FSSelector("fsv"))
    grid = {"fsselector__C": [0.1, 1.0], "fsselector__alpha": [1.0, 5.0]}
    gs = GridSearchCV(pipe, grid, cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(X, y)
    assert set(gs.best_params_) == set(grid)
    assert gs.best_score_ > 0.75
    sel = gs.best_estimator_[-1]
    assert {0, 1} <= set(np.flatnonzero(sel.get_support()).tolist())  # the informative features
    assert gs.best_estimator_.score(X, y) > 0.8
    # the selector as a transformer in front of another classifier
    from sklearn.svm import SVC

    two = make_pipeline(StandardScaler(), FSSelector("l1-svm", n_features=2), SVC(kernel="linear")).fit(X, y)
    assert two[1].get_support().sum() == 2 and two.score(X, y) > 0.8


@pytest.mark.filterwarnings("ignore::fsframe.errors.ConvergenceWarning")
def test_params_dict_and_nested_set_params(small_binary):
    X, y = small_binary
    est = FSSelector("arom", params={"eps": 1e-2})
    est.set_params(params__eps=1e-3, params__max_iter=5, C=0.5)
    assert est.params == {"eps": 1e-3, "max_iter": 5} and est.C == 0.5
    c = clone(est)
    assert c.params == est.params and c.params is not est.params
    est.fit(X, y)
    assert est.result_.params["eps"] == 1e-3 and est.result_.params["C"] == 0.5 and est.n_iter_ <= 5
    gs = GridSearchCV(FSSelector("arom"), {"params__eps": [1e-3, 1e-1]}, cv=3).fit(X, y)
    assert gs.best_params_["params__eps"] in (1e-3, 1e-1)


def test_fitted_attributes_binary_and_multiclass():
    data = fsframe.load_dataset("wine")
    X = StandardScaler().fit_transform(data.X)
    labels = np.array(["barolo", "grignolino", "barbera"])[data.y]
    est = FSSelector("fsv").fit(X, labels)
    assert list(est.classes_) == ["barbera", "barolo", "grignolino"]
    assert est.coef_.shape == (3, 13) and est.intercept_.shape == (3,)
    assert est.decision_function(X).shape == (178, 3)
    assert set(est.predict(X)) <= set(labels) and est.score(X, labels) > 0.8
    np.testing.assert_array_equal(est.get_support(), est.result_.support)
    assert est.transform(X).shape == (178, est.support_.sum())
    yb = (data.y == 0).astype(int)
    b = FSSelector("l1-svm").fit(X, yb)
    assert b.coef_.shape == (1, 13) and b.intercept_.shape == (1,)
    d = b.decision_function(X)
    np.testing.assert_array_equal(b.predict(X), (d > 0).astype(int))
    np.testing.assert_allclose(d, X @ b.coef_[0] + b.intercept_[0])
    assert pickle.loads(pickle.dumps(b)).score(X, yb) == b.score(X, yb)


def test_feature_names_out(small_binary):
    X, y = small_binary
    est = FSSelector("l1-svm", n_features=2).fit(X, y)
    assert list(est.get_feature_names_out()) == [f"x{j}" for j in np.flatnonzero(est.support_)]
    names = np.array([f"f{j}" for j in range(X.shape[1])], dtype=object)
    assert list(est.get_feature_names_out(names)) == list(names[est.support_])


def test_errors_and_warnings(small_binary):
    X, y = small_binary
    with pytest.raises(SkNotFittedError) as info:
        FSSelector().predict(X)
    assert isinstance(info.value, FsNotFittedError) and isinstance(info.value, FsframeError)
    with pytest.raises(InvalidOptionError, match="both"):
        FSSelector(C=1.0, params={"C": 2.0}).fit(X, y)
    with pytest.raises(InvalidOptionError, match="kernel"):
        FSSelector("l1-svm", params={"kernel": "rbf"}).fit(X, y)
    with pytest.raises(InvalidOptionError, match="alpha"):
        FSSelector("l1-svm", alpha=3.0).fit(X, y)  # l1-svm has no alpha
    with pytest.raises(InvalidOptionError, match="n_features"):
        FSSelector(params={"n_features": 2}).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        FSSelector().fit(X, np.zeros(len(y)))
    with pytest.warns(FsframeWarning, match="selected no feature") as rec:
        est = FSSelector("l1-svm", C=1e-4).fit(X, y)
    assert est.support_.sum() == 0
    # the hint names what l1-svm has (C), not an alpha it lacks
    msg = str(rec[0].message)
    assert "a larger C" in msg and "alpha" not in msg


def test_fit_does_not_mutate_inputs(small_binary):
    X, y = small_binary
    X0, y0 = X.copy(), y.copy()
    FSSelector("l1-svm").fit(X, y)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
