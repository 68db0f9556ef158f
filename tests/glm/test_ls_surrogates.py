"""The L0 surrogates on least squares differ from L1 (issue 23): ``l0-ls`` is paper 000's DCA and
``log-ls`` reweighted l1, iterate by iterate against the same loops written by hand in CVXPY (the
surrogate's parameters reach the loop: another ``alpha`` or ``eps`` gives other iterates, equal to
the hand-written loop's with it), and their supports differ from ``l1-ls``'s. With ``n_features``
every method returns the L1 model (the run's first weights) re-solved on the features it selected
(``fsframe.loops.settle.settle``): where the selections agree the models are the same — why the support-
recovery benchmark's ``n_features = k`` rows of ``l1-ls``, ``l0-ls`` and ``log-ls`` are equal
(every one of them selects the true ``k`` there)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe_glm import LeastSquaresFormulation


def _data():
    rng = np.random.default_rng(3)
    m, n = 80, 40
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[[0, 3, 7, 12, 20]] = [1.0, -0.8, 0.6, -0.5, 0.4]
    y = X @ beta + 0.5 * rng.normal(size=m) + 0.3
    return X, y, 5.0 / LeastSquaresFormulation().empty_model_threshold(X, y)  # L1 weight lambda_max / 5


def _by_hand(X, y, C, weights_of, n_iter, fixed_zero=None):
    """``n_iter`` solves of ``min sum_j lin_j |w_j| - v . w + C/2 ||y - X w - b||^2`` in CVXPY,
    ``(lin, v) = weights_of(previous w)`` (``None``: the L1 start, ``lin = 1``, ``v = 0``)."""
    n = X.shape[1]
    w, b = cp.Variable(n), cp.Variable()
    out, prev = [], None
    for _ in range(n_iter):
        lin, v = (np.ones(n), np.zeros(n)) if prev is None else weights_of(prev)
        cons = [w[fixed_zero] == 0] if fixed_zero is not None and fixed_zero.any() else []
        prob = cp.Problem(cp.Minimize(lin @ cp.abs(w) - v @ w + C / 2 * cp.sum_squares(y - X @ w - b)), cons)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)
        prev = np.asarray(w.value)
        out.append(prev.copy())
    return out


def _iterates(X, y, method, **params):
    its = []
    r = fsframe.fit(X, y, method=method, callback=lambda rec, it: its.append(np.array(it.coef, dtype=float)), **params)
    return r, its


@pytest.mark.parametrize("alpha", [5.0, 2.0])
def test_l0_ls_is_dca_by_hand(alpha):
    """Paper 000 eq. 41 on least squares: from the L1 start, ``lin = alpha``, ``v = alpha sign(w)
    (1 - exp(-alpha |w|))`` (eq. 40); every iterate equals CVXPY's."""
    X, y, C = _data()
    r, its = _iterates(X, y, "l0-ls", C=C, alpha=alpha)
    ref = _by_hand(X, y, C, lambda w: (np.full(w.size, alpha), alpha * np.sign(w) * -np.expm1(-alpha * np.abs(w))),
                   len(its))
    assert len(its) >= 3  # the loop goes on past its L1 start
    for k, (mine, theirs) in enumerate(zip(its, ref)):
        assert np.allclose(mine, theirs, atol=1e-6 * np.abs(theirs).max()), k
    assert r.selected.tolist() == np.flatnonzero(np.abs(ref[-1]) > 1e-6).tolist()
    l1 = fsframe.fit(X, y, method="l1-ls", C=C)
    assert l1.selected.tolist() == [0, 3, 7, 12, 13, 20]  # the L1 start: one false positive (13)
    assert len(r.selected) < len(l1.selected)  # the surrogate prunes what L1 keeps


@pytest.mark.parametrize("eps", [1e-3, 0.3])
def test_log_ls_is_reweighted_l1_by_hand(eps):
    """Candes, Wakin & Boyd's reweighting with the log surrogate: from weights 1, ``lin = 1 /
    (eps + |w|)``; every iterate equals CVXPY's."""
    X, y, C = _data()
    r, its = _iterates(X, y, "log-ls", C=C, eps=eps)
    ref = _by_hand(X, y, C, lambda w: (1.0 / (eps + np.abs(w)), np.zeros(w.size)), len(its))
    assert len(its) >= 3
    for k, (mine, theirs) in enumerate(zip(its, ref)):
        assert np.allclose(mine, theirs, atol=1e-6 * np.abs(theirs).max()), k
    assert r.selected.tolist() == np.flatnonzero(np.abs(ref[-1]) > 1e-6).tolist()
    assert r.selected.tolist() != [0, 3, 7, 12, 13, 20]  # not the L1 support


def test_n_features_returns_the_l1_model_on_the_selection():
    """With ``n_features=r`` a run stops at its first iterate with at most ``r`` features; when
    that iterate has fewer (the surrogate pruned past ``r``), the ``r`` largest of the last iterate
    with at least ``r`` are kept — here the L1 start, for every method. The model returned is the
    L1 problem (the run's first weights) re-solved on the selection, whatever the surrogate. So
    asked for 5 features, ``l0-ls`` and ``log-ls`` (whose first step keeps 3 and 2) select
    ``l1-ls``'s five and return its model: CVXPY's L1 model with the other features fixed at zero."""
    X, y, C = _data()
    sel = [0, 3, 7, 12, 13]  # the five largest L1 weights (13 a false positive, 20 left out)
    ref = _by_hand(X, y, C, None, 1, fixed_zero=~np.isin(np.arange(X.shape[1]), sel))[0]
    for m, counts in (("l1-ls", [6]), ("l0-ls", [6, 3]), ("log-ls", [6, 2])):
        r, its = _iterates(X, y, m, C=C, n_features=5)
        assert [int(np.count_nonzero(np.abs(w) > 1e-6)) for w in its] == counts, m  # features per iterate
        assert r.selected.tolist() == sel, m
        assert np.allclose(r.coef, ref, atol=1e-6 * np.abs(ref).max()), m
    # l0-ls asked for 3: its first step keeps exactly 3, chosen there, and re-solved with the L1
    # weights (not that step's DCA weights)
    r, its = _iterates(X, y, "l0-ls", C=C, n_features=3)
    assert len(its) == 2 and r.selected.tolist() == [0, 3, 7]
    ref = _by_hand(X, y, C, None, 1, fixed_zero=~np.isin(np.arange(X.shape[1]), [0, 3, 7]))[0]
    assert np.allclose(r.coef, ref, atol=1e-6 * np.abs(ref).max())
    assert not np.allclose(its[1], ref, atol=1e-3 * np.abs(ref).max())  # the DCA step's own model differs
