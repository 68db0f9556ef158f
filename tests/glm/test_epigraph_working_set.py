"""Working sets on groups whose magnitude is an epigraph of their own rows (issue 23): the
multinomial's row norms ``s_j >= ||W_j||_2`` (one second-order cone per feature, ``W_j`` free)
and the logistic's free ``w_j`` with ``s_j >= |w_j|`` (two rows). Left out at zero, such a group's
rows hold with equality and their multipliers are the pricing's to choose: the group may stay out
exactly when ``||r_W|| <= r_s`` (the group lasso's test). Checked against the full problem
(objective, support, certificate), the closed-form optimality conditions and CVXPY."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe.working_set import WorkingSetOptions
from fsframe_glm import MultinomialFormulation


def _classes(m=90, n=60, seed=3, K=3):
    """``K`` classes driven by features 0-3 (scores ``X[:, :4] B``), the rest noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    B = np.array([[2.0, 0.0, -2.0], [0.0, 2.0, -2.0], [1.5, -1.5, 0.0], [-1.0, 1.0, 1.0]])[:, :K]
    y = np.argmax(X[:, :4] @ B + rng.gumbel(size=(m, K)), axis=1)
    return X, y


def _fit(X, y, method, ws, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method=method, working_set=ws, **kw)


def _softmax_gradient(X, y, W, b, C):
    """``C Xᵀ(P - Y)``: the multinomial loss's gradient in ``W`` (``n x K``)."""
    F = X @ W + b
    P = np.exp(F - F.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    return C * X.T @ (P - np.eye(W.shape[1])[y])


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_multinomial_engages_and_prices_a_feature_back(backend):
    """A start of 2 features cannot hold the support of 4: the row-norm cones' multipliers must
    price the others in, over several rounds, to the full problem's answer."""
    X, y = _classes()
    C = 4.0 / MultinomialFormulation().empty_model_threshold(X, y)
    on = _fit(X, y, "l1-multinomial", WorkingSetOptions(mode=True, initial=2, batch=1), C=C, backend=backend)
    off = _fit(X, y, "l1-multinomial", False, C=C, backend=backend)
    cert = on.certificate
    assert off.certificate["working_set"] is None
    assert cert["working_set"] is not None and cert["working_set"] < X.shape[1]
    assert len(off.selected) > 2
    assert cert["rounds"] >= 2 and cert["added"] >= len(off.selected) - 2
    assert cert["status"] == "optimal" and cert["max_violation"] <= 1e-9
    assert abs(cert["gap"]) < 1e-7 and cert["dual_residual"] < 1e-7
    assert on.objective == pytest.approx(off.objective, rel=1e-8)
    assert on.selected.tolist() == off.selected.tolist()
    # the group lasso's optimality in closed form: ||C (Xᵀ(P - Y))_j|| <= 1 on every feature at
    # zero (the weight of ||W_j||), = 1 on the support
    W = on.formulation_coef().reshape(X.shape[1], -1)
    g = np.linalg.norm(_softmax_gradient(X, y, W, np.asarray(on.intercept), C), axis=1)
    zero = np.linalg.norm(W, axis=1) == 0.0
    assert zero.sum() > X.shape[1] // 2
    assert g[zero].max() <= 1.0 + 1e-6
    assert np.allclose(g[~zero], 1.0, atol=1e-5)


def test_multinomial_default_start_and_auto_rule():
    """Many features on few samples: ``True`` engages (a start smaller than the whole), and the
    answer is the full problem's."""
    X, y = _classes(m=40, n=400, seed=5)
    C = 3.0 / MultinomialFormulation().empty_model_threshold(X, y)
    on = _fit(X, y, "l1-multinomial", True, C=C)
    off = _fit(X, y, "l1-multinomial", False, C=C)
    assert on.certificate["working_set"] is not None and on.certificate["working_set"] < 400
    assert on.objective == pytest.approx(off.objective, rel=1e-7)
    assert on.selected.tolist() == off.selected.tolist()


@pytest.mark.parametrize("method", ["l0-multinomial", "log-multinomial"])
def test_multinomial_loops_on_working_sets(method):
    """DCA (row norms plus a signed linear term on ``W``) and reweighted l1 on working sets take
    the same steps as on the full problems."""
    X, y = _classes(m=60, n=80, seed=7)
    C = 4.0 / MultinomialFormulation().empty_model_threshold(X, y)
    kw = dict(C=C, max_iter=8)
    on = _fit(X, y, method, WorkingSetOptions(mode=True, initial=3, batch=2), **kw)
    off = _fit(X, y, method, False, **kw)
    assert on.certificate["working_set"] is not None
    assert on.selected.tolist() == off.selected.tolist()
    assert on.objective == pytest.approx(off.objective, rel=1e-6)


def test_logistic_free_w_groups_are_priced():
    """The logistic's ``lin`` term is a free ``w`` with ``s_j >= |w_j|`` (two rows): every group
    is priceable, a small start grows to the full problem's answer, and the certificate holds
    on the full problem (the excluded groups' rows carry the multipliers the pricing chose)."""
    rng = np.random.default_rng(11)
    X = rng.normal(size=(80, 150))
    y = np.where(X[:, :5] @ np.array([1.5, -1.5, 1.0, -1.0, 1.0]) + rng.logistic(size=80) > 0, 1, -1)
    on = _fit(X, y, "l1-logistic", WorkingSetOptions(mode=True, initial=2, batch=1), C=0.3)
    off = _fit(X, y, "l1-logistic", False, C=0.3)
    cert = on.certificate
    assert cert["working_set"] is not None and cert["rounds"] >= 2
    assert cert["status"] == "optimal" and abs(cert["gap"]) < 1e-7 and cert["dual_residual"] < 1e-7
    assert on.objective == pytest.approx(off.objective, rel=1e-8)
    assert on.selected.tolist() == off.selected.tolist()
