"""The empty-model threshold of each GLM form is the dual norm of the loss's gradient in the
coefficients at the empty model, for the norm that form's slot ``lin`` weighs: the split forms
``w = u - v`` (binary logistic, least squares) weigh ``|w_j| = u_j + v_j``, whose dual norm is the
largest entry; the multinomial weighs the row norms ``||W_j||_2`` (second-order cones), whose dual
norm is the largest row 2-norm. Checked against CVXPY on the same problem: at the threshold the
model is empty (to the solver's accuracy at the kink), 1 % below it is not; and the other norm
would be wrong (for the multinomial, the largest entry lies below the threshold, where the model
is not empty)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from fsframe_glm import LeastSquaresFormulation, LogisticFormulation, MultinomialFormulation

TIGHT = dict(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)


def _data(counts=(20, 30, 10), seed=6):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(len(counts)), counts)
    X = rng.normal(size=(y.size, 5)) * np.array([0.1, 1.0, 2.0, 1.0, 5.0])
    X[y == 1, 1] += 0.8
    X[y == 2, 2] -= 1.0
    return X, y


def _multinomial_norms(X, y, lam):
    K = int(y.max()) + 1
    Y = np.eye(K)[y]
    W, b = cp.Variable((X.shape[1], K)), cp.Variable(K)
    F = X @ W + np.ones((X.shape[0], 1)) @ b[None, :]
    loss = cp.sum(cp.log_sum_exp(F, axis=1)) - cp.sum(cp.multiply(Y, F))
    cp.Problem(cp.Minimize(lam * cp.sum(cp.norm(W, 2, axis=1)) + loss)).solve(**TIGHT)
    return np.linalg.norm(W.value, axis=1)


def _binary_norms(X, t, lam, loss):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    f = X @ w + b
    value = cp.sum(cp.logistic(-cp.multiply(t, f))) if loss == "logistic" else 0.5 * cp.sum_squares(t - f)
    cp.Problem(cp.Minimize(lam * cp.norm1(w) + value)).solve(**TIGHT)
    return np.abs(w.value)


def test_the_multinomial_threshold_is_the_largest_row_2_norm():
    X, y = _data()
    thr = MultinomialFormulation(C=1.0).empty_model_threshold(X, y)
    Y = np.eye(3)[y]
    grad = X.T @ (Y.mean(axis=0) - Y)  # the loss's gradient in W at the empty model
    assert thr == pytest.approx(np.linalg.norm(grad, axis=1).max(), rel=1e-12)
    at, below = _multinomial_norms(X, y, thr), _multinomial_norms(X, y, 0.99 * thr)
    assert at.max() < 1e-6 and below.max() > 1e-4
    # the largest entry (the dual norm of an entrywise L1) is no threshold of this form: below the
    # threshold, the model is not empty there
    entry = float(np.abs(grad).max())
    assert entry < 0.9 * thr and _multinomial_norms(X, y, entry).max() > 1e-3


@pytest.mark.parametrize("loss", ["logistic", "least-squares"])
def test_the_split_forms_threshold_is_the_largest_gradient_entry(loss):
    X, y = _data(counts=(25, 35))
    if loss == "logistic":
        t = np.where(y == 1, 1.0, -1.0)
        thr = LogisticFormulation(C=1.0).empty_model_threshold(X, t)
    else:
        t = X @ np.array([0.0, 1.0, -0.5, 0.0, 0.1]) + np.random.default_rng(1).normal(size=y.size)
        thr = LeastSquaresFormulation(C=1.0).empty_model_threshold(X, t)
    at, below = _binary_norms(X, t, thr, loss), _binary_norms(X, t, 0.99 * thr, loss)
    assert at.max() < 1e-5 and below.max() > max(1e-4, 100 * at.max())
