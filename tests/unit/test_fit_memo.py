"""The process-wide memo of the evaluated classifier's fits (``Evaluator.fit_predict``) shares a
fit only between calls whose predictions are the same: every input array by value (labels,
type, not only the bytes of ``X``) and every estimator parameter by value (an array in full,
never its elided ``repr``); an estimator with a parameter that has no value to compare (a
function: its ``repr`` is an address, reused once it is freed) is fitted every time. Each
prediction is checked against a fresh scikit-learn fit of the same estimator."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.svm import SVC, LinearSVC

from fsframe.evaluation.evaluator import Evaluator, _fit_key, clear_fit_memo, fit_memo_info


@pytest.fixture(autouse=True)
def _empty_memo():
    clear_fit_memo()
    yield
    clear_fit_memo()


def _fresh(est, Xtr, ytr, Xte):
    return clone(est).fit(Xtr, ytr).predict(Xte)


def _data(n=5, m=40, t=30):
    rng = np.random.default_rng(0)
    Xtr, Xte = rng.standard_normal((m, n)), rng.standard_normal((t, n))
    return Xtr, (Xtr[:, 0] > 0).astype(int), Xte


def test_same_data_other_labels_is_fitted_anew():
    Xtr, ytr, Xte = _data()
    ev = Evaluator(clf="linear-svc")
    flipped = 1 - ytr
    a = ev.fit_predict(Xtr, ytr, Xte)
    b = ev.fit_predict(Xtr, flipped, Xte)
    assert fit_memo_info() == {"hits": 0, "misses": 2, "size": 2}
    np.testing.assert_array_equal(a, _fresh(LinearSVC(), Xtr, ytr, Xte))
    np.testing.assert_array_equal(b, _fresh(LinearSVC(), Xtr, flipped, Xte))
    assert not np.array_equal(a, b)
    np.testing.assert_array_equal(ev.fit_predict(Xtr, ytr, Xte), a)  # the same labels again: shared
    assert fit_memo_info()["hits"] == 1


def test_the_arrays_type_is_part_of_the_key():
    Xtr, ytr, Xte = _data()
    ev = Evaluator(clf="linear-svc")
    ev.fit_predict(Xtr, ytr, Xte)
    ev.fit_predict(Xtr.astype(np.float32), ytr, Xte.astype(np.float32))  # the same values in float32
    assert fit_memo_info() == {"hits": 0, "misses": 2, "size": 2}
    ev.fit_predict(np.asfortranarray(Xtr), ytr, Xte)  # another memory order, the same numbers: shared
    assert fit_memo_info()["hits"] == 1
    # the same bytes and shape under another type: other numbers (200 as uint8 is -56 as int8)
    rng = np.random.default_rng(1)
    U = rng.integers(0, 256, size=(60, 3), dtype=np.uint8)
    yu = (U[:, 0] >= 128).astype(int)
    clear_fit_memo()
    got_u = ev.fit_predict(U, yu, U)
    got_s = ev.fit_predict(U.view(np.int8), yu, U.view(np.int8))
    assert fit_memo_info()["misses"] == 2
    np.testing.assert_array_equal(got_u, _fresh(LinearSVC(), U, yu, U))
    np.testing.assert_array_equal(got_s, _fresh(LinearSVC(), U.view(np.int8), yu, U.view(np.int8)))
    assert not np.array_equal(got_u, got_s)


def test_array_parameters_are_compared_in_full():
    """Two column selections of 1 200 columns that differ only in the middle (numpy's repr of
    either elides it) are two fits: the second keeps the informative column 600, the first not."""
    rng = np.random.default_rng(2)
    Xtr, Xte = rng.standard_normal((40, 1200)), rng.standard_normal((30, 1200))
    ytr = (Xtr[:, 600] > 0).astype(int)
    drop, keep = np.ones(1200, bool), np.ones(1200, bool)
    drop[600] = False
    assert repr(drop) == repr(keep)
    a_est = ColumnTransformer([("cols", "passthrough", drop)])
    b_est = ColumnTransformer([("cols", "passthrough", keep)])
    a_clf, b_clf = make_pipeline(a_est, LinearSVC()), make_pipeline(b_est, LinearSVC())
    ka, kb = _fit_key(a_clf, Xtr, ytr, Xte), _fit_key(b_clf, Xtr, ytr, Xte)
    assert ka is not None and kb is not None and ka != kb
    a = Evaluator(clf=a_clf).fit_predict(Xtr, ytr, Xte)
    b = Evaluator(clf=b_clf).fit_predict(Xtr, ytr, Xte)
    assert fit_memo_info() == {"hits": 0, "misses": 2, "size": 2}
    np.testing.assert_array_equal(a, _fresh(a_clf, Xtr, ytr, Xte))
    np.testing.assert_array_equal(b, _fresh(b_clf, Xtr, ytr, Xte))
    assert not np.array_equal(a, b)


def _scale_first(X, w):
    return X * np.r_[0.0 if w.min() < 0 else 1.0, np.ones(X.shape[1] - 1)]


def test_a_function_parameter_is_never_shared():
    """The reviewer's two cases: ``FunctionTransformer`` arguments that differ inside the elided
    middle of their repr, and callable kernels whose closures' addresses are reused."""
    Xtr, ytr, Xte = _data()
    w1, w2 = np.ones(2000), np.ones(2000)
    w2[1000] = -1.0  # zeroes the informative column 0
    p1 = make_pipeline(FunctionTransformer(_scale_first, kw_args={"w": w1}), LinearSVC())
    p2 = make_pipeline(FunctionTransformer(_scale_first, kw_args={"w": w2}), LinearSVC())
    assert _fit_key(p1, Xtr, ytr, Xte) is None  # func is a function: not kept
    a = Evaluator(clf=p1).fit_predict(Xtr, ytr, Xte)
    b = Evaluator(clf=p2).fit_predict(Xtr, ytr, Xte)
    np.testing.assert_array_equal(a, _fresh(p1, Xtr, ytr, Xte))
    np.testing.assert_array_equal(b, _fresh(p2, Xtr, ytr, Xte))
    assert not np.array_equal(a, b)

    def mk(g):
        def k(A, B):
            return np.exp(-g * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
        return k

    X2 = np.random.default_rng(0).standard_normal((40, 5))
    y2 = (X2[:, 0] * X2[:, 1] > 0).astype(int)
    T2 = np.random.default_rng(3).standard_normal((60, 5))
    assert _fit_key(SVC(kernel=mk(1e-3)), X2, y2, T2) is None
    answers = {}
    for g in [1e-3, 10.0] * 3:
        est = SVC(kernel=mk(g), C=10.0)
        got = Evaluator(clf=est).fit_predict(X2, y2, T2)
        np.testing.assert_array_equal(got, SVC(kernel=mk(g), C=10.0).fit(X2, y2).predict(T2))
        answers.setdefault(g, got)
        del est
        gc.collect()
    assert not np.array_equal(answers[1e-3], answers[10.0])
    assert fit_memo_info() == {"hits": 0, "misses": 0, "size": 0}


def test_plain_parameters_are_keyed_by_type_and_value():
    Xtr, ytr, Xte = _data()
    keys = [_fit_key(est, Xtr, ytr, Xte) for est in
            (LinearSVC(C=1), LinearSVC(C=1.0), LinearSVC(C=np.float64(1.0)), LinearSVC(C=2.0),
             LinearSVC(class_weight={0: 1.0, 1: 2.0}), LinearSVC(class_weight={1: 2.0, 0: 1.0}),
             SVC(kernel="linear"))]
    assert all(k is not None for k in keys)
    assert len(set(keys[:5])) == 5 and keys[4] == keys[5] and keys[6] not in keys[:6]
    assert _fit_key(LinearSVC(random_state=np.random.RandomState(0)), Xtr, ytr, Xte) is None
    assert _fit_key(LinearSVC(random_state=0), Xtr, ytr, Xte) != _fit_key(LinearSVC(), Xtr, ytr, Xte)
