"""Working sets on least squares (issue 23): the residual rows ``r_i = y_i - x_i w - b`` define
their columns, so the automatic rule does not count them against the groups (a hinge's margin rows
still count), the first working set is the features most correlated with ``y`` (the pricing's own
test at the empty model), and the answer is the full problem's — objective, support, certificate —
against the full QP and CVXPY."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe_glm import LeastSquaresFormulation


def _data(m=150, n=500, seed=0):
    """``n`` between ``min_groups`` (200) and ``min_ratio * m`` (600): the rule counting the ``m``
    residual rows kept working sets off here."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[rng.choice(n, 8, replace=False)] = rng.choice([-1.0, 1.0], 8)
    y = X @ beta + 0.5 * rng.normal(size=m) + 1.0
    return X, y


def _cvxpy_lasso(X, y, C):
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + C / 2 * cp.sum_squares(y - X @ w - b)))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
    return prob.value, np.asarray(w.value)


@pytest.mark.parametrize("fraction", [5.0, 1.5])
def test_auto_working_set_engages_and_equals_the_full_problem(fraction):
    X, y = _data()
    C = fraction / LeastSquaresFormulation().empty_model_threshold(X, y)
    auto = fsframe.fit(X, y, method="l1-ls", C=C)
    full = fsframe.fit(X, y, method="l1-ls", C=C, working_set=False)
    ref, w_ref = _cvxpy_lasso(X, y, C)
    cert = auto.certificate
    assert cert["working_set"] is not None and cert["working_set"] < X.shape[1]  # engaged by the auto rule
    assert cert["rounds"] == 1  # the first guess (|Xᵀ y| at the empty model) held the support
    assert cert["max_violation"] <= 1e-9 and cert["gap"] <= 1e-6
    assert full.certificate["working_set"] is None
    assert auto.objective == pytest.approx(full.objective, rel=1e-9)
    assert auto.objective == pytest.approx(ref, rel=1e-7)
    assert auto.selected.tolist() == full.selected.tolist() == np.flatnonzero(np.abs(w_ref) > 1e-6).tolist()
    assert np.allclose(auto.coef, w_ref, atol=1e-5 * np.abs(w_ref).max())


def test_dca_on_working_sets_equals_the_full_problem():
    """``l0-ls``: every DCA subproblem on a working set, the run equal to the full-QP run."""
    X, y = _data(seed=1)
    C = 5.0 / LeastSquaresFormulation().empty_model_threshold(X, y)
    auto = fsframe.fit(X, y, method="l0-ls", C=C)
    full = fsframe.fit(X, y, method="l0-ls", C=C, working_set=False)
    assert auto.certificate["working_set"] is not None
    assert auto.n_iter == full.n_iter and auto.selected.tolist() == full.selected.tolist()
    assert auto.objective == pytest.approx(full.objective, rel=1e-8)
    assert np.allclose(auto.coef, full.coef, atol=1e-6 * np.abs(full.coef).max())


def test_tall_least_squares_stays_on_the_full_problem():
    """Each round keeps every residual row: with more samples than features (n >= min_groups)
    the rule stays off (a working set was measured slower there); forced on, the same answer."""
    X, y = _data(m=450, n=300, seed=2)
    C = 5.0 / LeastSquaresFormulation().empty_model_threshold(X, y)
    auto = fsframe.fit(X, y, method="l1-ls", C=C)
    forced = fsframe.fit(X, y, method="l1-ls", C=C, working_set=True)
    assert auto.certificate["working_set"] is None
    assert forced.certificate["working_set"] is not None
    assert auto.objective == pytest.approx(forced.objective, rel=1e-9)


def test_hinge_rows_still_count():
    """The margin rows of ``l1-svm`` define no column: at the same shape the rule stays off."""
    X, y = _data()
    r = fsframe.fit(X, np.where(y > np.median(y), 1, -1), method="l1-svm", C=1.0)
    assert r.certificate["working_set"] is None


@pytest.mark.parametrize("method", ["l1-ls", "l0-ls"])
def test_csr_input_equals_dense(method, monkeypatch):
    """Least squares takes a CSR ``X`` as it is (its residual rows ``[I, X, 1]`` stay sparse): the
    same answer as the dense matrix, on a working set, and never an ``m x n`` dense copy."""
    import scipy.sparse as sp

    rng = np.random.default_rng(2)
    X = sp.random(150, 500, density=0.05, random_state=3, format="csr")
    beta = np.zeros(500)
    beta[[1, 5, 9, 40]] = [2.0, -2.0, 1.5, -1.0]
    y = X @ beta + 0.1 * rng.normal(size=150) + 0.5
    C = 5.0 / LeastSquaresFormulation().empty_model_threshold(X, y)
    Xd = X.toarray()
    dense = fsframe.fit(Xd, y, method=method, C=C)
    real_toarray = sp.csr_matrix.toarray

    def no_dense_copy(self, *args, **kwargs):
        assert self.shape != X.shape, "the CSR X was densified"
        return real_toarray(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", no_dense_copy)
    monkeypatch.setattr(sp.csr_array, "toarray", no_dense_copy, raising=False)
    r = fsframe.fit(X, y, method=method, C=C)
    assert r.certificate["working_set"] is not None
    assert r.selected.tolist() == dense.selected.tolist()
    assert r.objective == pytest.approx(dense.objective, rel=1e-9)
    assert np.allclose(r.coef, dense.coef, atol=1e-9 * np.abs(dense.coef).max())
    if method == "l1-ls":
        ref, _ = _cvxpy_lasso(Xd, y, C)
        assert r.objective == pytest.approx(ref, rel=1e-7)
