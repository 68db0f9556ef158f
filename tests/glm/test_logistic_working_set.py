"""Working sets on the logistic loss (issue 23): the first working set counts a sample's margin
once (the loss's epigraph has five rows per sample, only the margin row holds features), so it is
a small set of features, not all of them; the pricing through the exponential cones' multipliers
brings back what the start missed, and the answer is the full problem's — objective, support,
certificate — against the full problem and CVXPY."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe.working_set import WorkingSetOptions
from fsframe_glm import LogisticFormulation


def _data(m=200, n=400, seed=0, k=8):
    """``n`` at most ``2.5 m``: the old start, half of the five loss rows per sample, took every
    feature here."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[rng.choice(n, k, replace=False)] = rng.choice([-1.5, 1.5], k)
    y = np.where(rng.random(m) < 1.0 / (1.0 + np.exp(-(X @ beta + 0.3))), 1, -1)
    return X, y


def _cvxpy_l1_logistic(X, y, C):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + C * cp.sum(cp.logistic(-cp.multiply(y, X @ w + b)))))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return prob.value, np.asarray(w.value)


def _fit(X, y, C, ws, backend="clarabel"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method="l1-logistic", C=C, working_set=ws, backend=backend)


@pytest.mark.parametrize("seed", [0, 1])
def test_start_is_small_and_the_answer_is_the_full_problems(seed):
    X, y = _data(seed=seed)
    C = 5.0 / LogisticFormulation().empty_model_threshold(X, y)
    on = _fit(X, y, C, True)
    off = _fit(X, y, C, False)
    ref, w_ref = _cvxpy_l1_logistic(X, y, C)
    cert = on.certificate
    # the start is max(100, 200 // 2) = 100 features, the pricing may add a few: never all 400
    assert cert["working_set"] is not None and cert["working_set"] < X.shape[1] // 2
    assert cert["max_violation"] <= 1e-9 and cert["status"] == "optimal"
    assert off.certificate["working_set"] is None
    assert on.objective == pytest.approx(off.objective, rel=1e-8)
    assert on.objective == pytest.approx(ref, rel=1e-7)
    support = np.flatnonzero(np.abs(w_ref) > 1e-5 * np.abs(w_ref).max())
    assert on.selected.tolist() == off.selected.tolist() == support.tolist()
    assert np.allclose(on.coef, w_ref, atol=1e-4 * np.abs(w_ref).max())


def test_pricing_brings_back_what_the_start_missed():
    """A start of 3 features cannot hold the support: the cones' multipliers must price the rest
    in (``|x_jᵀ λ|`` against the weight of ``w_j``), over several rounds, to the full answer."""
    X, y = _data(m=80, n=150, seed=2)
    C = 5.0 / LogisticFormulation().empty_model_threshold(X, y)
    on = _fit(X, y, C, WorkingSetOptions(mode=True, initial=3, batch=2))
    off = _fit(X, y, C, False)
    cert = on.certificate
    assert len(off.selected) > 3
    assert cert["rounds"] >= 2 and cert["added"] >= len(off.selected) - 3
    assert cert["max_violation"] <= 1e-9
    assert on.objective == pytest.approx(off.objective, rel=1e-8)
    assert on.selected.tolist() == off.selected.tolist()
    # the optimality conditions in closed form: the loss's gradient C Xᵀ(y σ(-y f)) is at most the
    # L1 weight 1 on every feature left at zero, and equal to it on the support
    f = X @ on.coef + float(np.ravel(on.intercept)[0])
    grad = C * np.abs(X.T @ (y / (1.0 + np.exp(y * f))))
    zero = np.abs(on.coef) <= 1e-6 * np.abs(on.coef).max()
    assert grad[zero].max() <= 1.0 + 1e-5
    assert np.allclose(grad[~zero], 1.0, atol=1e-5)


def test_ecos_agrees():
    X, y = _data(m=120, n=300, seed=3)
    C = 5.0 / LogisticFormulation().empty_model_threshold(X, y)
    on = _fit(X, y, C, True, backend="ecos")
    off = _fit(X, y, C, False, backend="clarabel")
    assert on.certificate["working_set"] < X.shape[1]
    assert on.objective == pytest.approx(off.objective, rel=1e-7)
    assert on.selected.tolist() == off.selected.tolist()


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_auto_rule_counts_a_samples_margin_once(backend):
    """``working_set="auto"`` on the logistic loss compares the priceable features with the rows
    that hold a feature (one margin per sample), not with the five rows of each sample's epigraph:
    400 features on 200 samples engage (the rule that counted 1 000 cone rows left this whole),
    and the answer is the full problem's; 300 features on 400 samples stay whole."""
    X, y = _data(m=200, n=400, seed=4)
    C = 5.0 / LogisticFormulation().empty_model_threshold(X, y)
    auto = _fit(X, y, C, "auto", backend=backend)
    full = _fit(X, y, C, False, backend=backend)
    cert = auto.certificate
    assert cert["working_set"] is not None and cert["working_set"] < X.shape[1]
    assert cert["max_violation"] <= 1e-9 and cert["status"] == "optimal"
    assert auto.objective == pytest.approx(full.objective, rel=1e-8)
    assert auto.selected.tolist() == full.selected.tolist()
    X, y = _data(m=400, n=300, seed=4)
    tall = _fit(X, y, 5.0 / LogisticFormulation().empty_model_threshold(X, y), "auto", backend=backend)
    assert tall.certificate["working_set"] is None
