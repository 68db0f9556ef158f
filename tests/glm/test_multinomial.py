"""The ``multinomial`` formulation (plugin ``fsframe_glm``): softmax logistic regression with one
row group ``||W_j||_2`` per feature, against CVXPY's group-lasso multinomial model, the
conformance kit, the binary logistic model (two classes) and fits on both sides of the empty
model's threshold; every loop keeps or drops a feature for all classes at once."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import fsframe
from fsframe.testing import check_formulation
from fsframe_glm import MultinomialFormulation


def _three_classes(m=60, n=6, seed=4, noise=0.6):
    """Three classes driven by features 0 and 1 (the others noise), overlapping (not separable)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = np.argmax(np.column_stack([X[:, 0], X[:, 1], -X[:, 0] - X[:, 1]]) + noise * rng.normal(size=(m, 3)), axis=1)
    return X, y


def _objective(X, y, W, b, C):
    """``sum_j ||W_j||_2 + C sum_i [log sum_k exp(F_ik) - F_{i,y_i}]`` in numpy, ``F = X W + b``."""
    F = X @ W + b
    return float(np.linalg.norm(W, axis=1).sum() + C * np.sum(np.logaddexp.reduce(F, axis=1) - F[np.arange(len(y)), y]))


def _cvxpy_group_multinomial(X, y, C):
    m, n = X.shape
    K = int(y.max()) + 1
    W, b = cp.Variable((n, K)), cp.Variable(K)
    F = X @ W + np.ones((m, 1)) @ cp.reshape(b, (1, K), order="C")
    Y = np.eye(K)[y]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1))
                                  + C * (cp.sum(cp.log_sum_exp(F, axis=1)) - cp.sum(cp.multiply(Y, F)))))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, W.value


@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
def test_l1_multinomial_equals_cvxpy_group_lasso(backend):
    X, y = _three_classes()
    C = 0.4
    r = fsframe.fit(X, y, method="l1-multinomial", C=C, backend=backend)
    ref, W_ref = _cvxpy_group_multinomial(X, y, C)
    assert r.objective == pytest.approx(ref, rel=1e-6)
    assert r.coef.shape == (3, X.shape[1]) and np.shape(r.intercept) == (3,)  # W transposed, scikit-learn's layout
    W = r.formulation_coef().reshape(X.shape[1], 3)
    assert np.allclose(W, W_ref, atol=1e-4)
    assert np.array_equal(np.asarray(r.coef), W.T)
    # the objective reported is the one the returned model attains
    assert _objective(X, y, W, np.asarray(r.intercept), C) == pytest.approx(r.objective, rel=1e-9)
    # one group per feature: a feature is in or out for every class
    assert r.selected.tolist() == np.flatnonzero(np.linalg.norm(W_ref, axis=1) > 1e-5).tolist()
    assert np.all(W[np.setdiff1d(np.arange(X.shape[1]), r.selected)] == 0.0)
    assert np.array_equal(r.predict(X), np.argmax(X @ W + r.intercept, axis=1))


def test_multinomial_refuses_highs():
    X, y = _three_classes(m=30, n=3)
    with pytest.raises(fsframe.errors.IncompatibleComponentsError, match="EXP"):
        fsframe.fit(X, y, method="l1-multinomial", backend="highs")


@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
def test_conformance_kit_multinomial(backend):
    X, y = _three_classes(m=30, n=4)
    names = check_formulation(MultinomialFormulation(C=0.7), X, y, backend=backend)
    assert "decision_loss ['lin']" in names and "decision_loss ['lin_w', 'quad']" in names


def test_two_classes_are_the_binary_logistic_model():
    X, y = _three_classes()
    y2 = (y == 1).astype(int)
    mn = fsframe.fit(X, y2, method="l1-multinomial", C=0.5)
    lg = fsframe.fit(X, y2, method="l1-logistic", C=0.5)
    assert np.shape(mn.coef) == np.shape(lg.coef) == (X.shape[1],)
    assert mn.objective == pytest.approx(lg.objective, rel=1e-9)
    assert np.allclose(mn.coef, lg.coef, atol=1e-7)


@pytest.mark.parametrize("counts", [(20, 20, 20), (30, 8, 14)])
def test_empty_model_threshold_is_where_the_first_feature_enters(counts):
    """With the group penalty of weight 1, the first feature enters at ``C0 = 1 / threshold(C=1)``
    (none just below, one just above), on balanced and unbalanced classes (the empty model's
    intercepts are the log class shares)."""
    rng = np.random.default_rng(6)
    y = np.repeat([0, 1, 2], counts)
    X = rng.normal(size=(y.size, 5)) * np.array([0.1, 1.0, 2.0, 1.0, 5.0])
    X[y == 1, 1] += 0.8
    X[y == 2, 2] -= 1.0
    c0 = 1.0 / MultinomialFormulation(C=1.0).empty_model_threshold(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        below = fsframe.fit(X, y, method="l1-multinomial", C=0.98 * c0)
        above = fsframe.fit(X, y, method="l1-multinomial", C=1.05 * c0)
    assert below.n_selected == 0 and above.n_selected >= 1
    assert fsframe.get_registry().get("method", "l1-multinomial").sparsity == "C"


@pytest.mark.parametrize("method", ["em-multinomial", "log-multinomial"])
def test_surrogate_loops_select_whole_features(method):
    """The two informative features, whole rows, and a classifier as good as scikit-learn's
    (nearly unpenalised) multinomial model on those two features."""
    X, y = _three_classes(m=90, n=8, seed=7)
    r = fsframe.fit(X, y, method=method, C=0.5)
    assert r.selected.tolist() == [0, 1]
    W = r.formulation_coef().reshape(X.shape[1], 3)
    assert np.all(W[2:] == 0.0) and np.all(np.linalg.norm(W[:2], axis=1) > 0.1)
    sk = LogisticRegression(C=1e4).fit(X[:, :2], y)
    assert (r.predict(X) == y).mean() >= sk.score(X[:, :2], y)


def test_intercepts_sum_to_zero_and_agree_across_backends():
    """Softmax is invariant to one constant added to every ``b_k``: the formulation fixes
    ``sum_k b_k = 0``, so ECOS and Clarabel return the same ``b`` and the optimum is CVXPY's
    unconstrained one (its ``b`` centred gives ours). Without the row each interior-point solver
    returns its own shift (sums of 1e-8 to 1e-5 here)."""
    X, y = _three_classes(m=80, seed=7)
    y[(y == 2) & (np.arange(80) % 3 == 0)] = 0  # unequal class counts: intercepts well away from zero
    C = 0.4
    ref, W_ref = _cvxpy_group_multinomial(X, y, C)
    for method in ("l1-multinomial", "em-multinomial", "log-multinomial"):
        bs = {}
        for backend in ("ecos", "clarabel"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fsframe.fit(X, y, method=method, C=C, backend=backend)
            b = np.asarray(r.intercept, dtype=float)
            assert abs(b.sum()) <= 1e-10 * (1.0 + np.abs(b).max()), (method, backend, b)
            if method == "l1-multinomial":  # the optimum is the unconstrained one, attained by (W, b)
                W = r.formulation_coef().reshape(X.shape[1], 3)
                assert _objective(X, y, W, b, C) == pytest.approx(r.objective, rel=1e-9)
                assert r.objective == pytest.approx(ref, rel=1e-6)
                assert np.allclose(W, W_ref, atol=1e-4)
            bs[backend] = b
        assert np.allclose(bs["ecos"], bs["clarabel"], atol=1e-5), (method, bs)


def test_empty_model_intercepts_are_the_centred_log_shares():
    """Below the empty-model threshold ``W = 0`` and the intercepts are the log class shares,
    centred (closed form): ``b_k = log p_k - mean_l log p_l``."""
    X, y = _three_classes(m=60)
    y[:12] = 0
    counts = np.bincount(y, minlength=3)
    C = 0.5 / MultinomialFormulation(C=1.0).empty_model_threshold(X, y)
    logp = np.log(counts / counts.sum())
    for backend in ("ecos", "clarabel"):
        r = fsframe.fit(X, y, method="l1-multinomial", C=C, backend=backend)
        assert r.selected.size == 0
        assert np.allclose(np.asarray(r.intercept), logp - logp.mean(), atol=5e-5), (backend, r.intercept - logp + logp.mean())
