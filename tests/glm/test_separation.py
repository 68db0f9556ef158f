"""DCA and IRL1 on a loss that vanishes only at infinity (logistic, multinomial): where an iterate
separates the training classes and the linearised penalty no longer charges for scaling the
model up, the next subproblem has no minimiser within a solver's reach, and the loop stops with a
:class:`~fsframe.errors.SeparationWarning` (``fsframe.loops.separation.separated``) instead of handing it to the
solver. Checked against CVXPY's solves of the same DCA subproblems (paper 000 eq. 41 with the exp
surrogate's eq. 40 subgradient), on ECOS and Clarabel."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe.enums import Status
from fsframe.errors import SeparationWarning, SolverWarning

ALPHA = 5.0


def _wine_class0():
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    return StandardScaler().fit_transform(X), np.where(y == 0, 1, -1)


def _cvxpy_dca_step(X, y, w_prev, C=1.0, alpha=ALPHA):
    """One DCA subproblem in CVXPY: ``C loss + sum_j alpha |w_j| - h'(w_prev) . w`` (000 eqs. 40-41)."""
    grad_h = alpha * np.sign(w_prev) * -np.expm1(-alpha * np.abs(w_prev))
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    obj = C * cp.sum(cp.logistic(-cp.multiply(y, X @ w + b))) + alpha * cp.norm1(w) - grad_h @ w
    cp.Problem(cp.Minimize(obj)).solve(solver=cp.CLARABEL)
    return w.value, float(b.value)


def _fit(X, y, backend, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fsframe.fit(X, y, "l0-logistic", backend=backend, **kw)
    return res, [w for w in caught if issubclass(w.category, (SeparationWarning, SolverWarning))]


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_dca_stops_at_separation_with_cvxpy_iterate(backend):
    """Wine, class 0 against the rest: the L1 start and the first DCA step equal CVXPY's; that step
    separates the classes (loss < log 2) with its five features' exp surrogate saturated
    (``sum_j phi'(t_j) t_j`` ~ 1e-8), where the next step's minimiser is out of reach (the
    solvers returned ``optimal_inaccurate`` points with a certificate gap of -2e-3 before). DCA
    stops there: every solve optimal, the iterate CVXPY's, a SeparationWarning, no SolverWarning."""
    X, y = _wine_class0()
    res, caught = _fit(X, y, backend)
    assert [w.category for w in caught] == [SeparationWarning]
    assert "separates the training classes" in str(caught[0].message) and "lower C" in str(caught[0].message)
    assert all(s is Status.OPTIMAL for s in res.statuses) and not res.converged
    assert res.n_iter == 2 and "separated" in res.info["stop_reason"]

    w0 = fsframe.fit(X, y, "l1-logistic", C=1.0, backend=backend).coef     # DCA's start (init="l1")
    w1, b1 = _cvxpy_dca_step(X, y, w0)
    support = np.flatnonzero(np.abs(w1) > 1e-6 * np.abs(w1).max())
    assert res.selected.tolist() == support.tolist()
    assert np.allclose(res.coef, np.where(np.isin(np.arange(w1.size), support), w1, 0.0), rtol=1e-5, atol=1e-5)
    # the stop condition, computed independently from CVXPY's iterate
    margins = y * (X @ w1 + b1)
    assert margins.min() > 0 and np.logaddexp(0, -margins).sum() < np.log(2)
    t = np.abs(w1[support])
    rho = float(np.sum(ALPHA * np.exp(-ALPHA * t) * t))
    f = np.logaddexp(0, -margins).sum() + np.sum(-np.expm1(-ALPHA * t))
    assert rho <= 1e-5 * f


def test_wine_three_classes_one_vs_rest_all_solves_optimal():
    """`fsframe select wine --method l0-logistic --n-features 3` (one-vs-rest, standardised): each
    class's DCA stops at separation; no subproblem is inaccurate, and ECOS and Clarabel agree."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    fits = {b: _fit(X, y, b, n_features=3) for b in ("clarabel", "ecos")}
    for res, caught in fits.values():
        assert {w.category for w in caught} == {SeparationWarning} and len(caught) == 3
        assert all(s is Status.OPTIMAL for s in res.statuses)
        assert len(res.selected) == 3 and np.mean(res.predict(X) == y) > 0.9
    (a, _), (b, _) = fits.values()
    assert a.selected.tolist() == b.selected.tolist()
    assert np.allclose(a.coef, b.coef, rtol=1e-5, atol=1e-5)


def test_no_stop_where_the_iterate_does_not_separate():
    """Overlapping classes and a steep surrogate (alpha = 200: on every iterate ``sum_j phi'(t_j)
    t_j`` is below ``tol * f``, the penalty holds no scale): the loss stays above ``C log 2``
    (misclassified samples), so the loss itself bounds the model and DCA runs to its own rule."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 8))
    y = np.where(X[:, 0] - X[:, 1] + 1.0 * rng.normal(size=120) > 0, 1, -1)
    iterates = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fsframe.fit(X, y, "l0-logistic", alpha=200.0, callback=lambda rec, it: iterates.append(it))
    assert [w for w in caught if issubclass(w.category, SeparationWarning)] == []
    assert res.converged and "separated" not in res.info["stop_reason"] and len(iterates) == 3
    for it in iterates:
        t = it.t[it.t > 1e-6 * it.t.max()]
        f = it.loss + np.sum(-np.expm1(-200.0 * t))
        assert np.sum(200.0 * np.exp(-200.0 * t) * t) <= 1e-5 * f   # the penalty holds no scale...
        assert it.loss > np.log(2)                                   # ...but the classes overlap
    assert (y * res.decision_function(X)).min() < 0


def test_reweighted_l1_with_exp_stops_too():
    """The rule lives in the descent tail DCA and IRL1 share: IRL1 with the exp surrogate (weights
    ``phi'(t_j)``) stops at the same kind of iterate."""
    X, y = _wine_class0()
    res, caught = _fit(X, y, "clarabel", loop="reweighted-l1")
    assert [w.category for w in caught] == [SeparationWarning]
    assert all(s is Status.OPTIMAL for s in res.statuses)


def test_separated_iterates_whose_penalty_holds_the_scale_run_on():
    """Wine class 0 with a gentle surrogate (alpha = 0.5): from iteration 5 on the iterates separate
    the classes (loss < log 2), but ``sum_j phi'(t_j) t_j`` stays near 1, so the penalty bounds
    the model: DCA runs to its own stopping rule, every solve optimal, no SeparationWarning."""
    X, y = _wine_class0()
    iterates = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fsframe.fit(X, y, "l0-logistic", alpha=0.5, callback=lambda rec, it: iterates.append(it))
    assert [w for w in caught if issubclass(w.category, (SeparationWarning, SolverWarning))] == []
    assert res.converged and res.info["stop_reason"] == "objective decrease below tol"
    assert all(s is Status.OPTIMAL for s in res.statuses)
    separated = [it for it in iterates if it.loss < np.log(2)]
    assert len(separated) >= 3
    for it in separated:
        assert np.sum(0.5 * np.exp(-0.5 * it.t) * it.t) > 0.5


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_a_subproblem_lost_after_separation_is_explained(backend):
    """alpha = 1: the iterates separate the classes and grow slowly (``|w|`` 10 -> 20 -> 30, the
    penalty's ``sum phi'(t) t`` still 0.04 > tol f), and the exponential cones at margins of ~100
    defeat the solvers at iteration 5 (Clarabel: InsufficientProgress; ECOS: optimal_inaccurate).
    The failure or the inaccurate answer comes with a SeparationWarning saying why and what to do."""
    from fsframe.errors import SolverFailedError

    X, y = _wine_class0()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fsframe.fit(X, y, "l0-logistic", alpha=1.0, backend=backend)
            failed = False
        except SolverFailedError:
            failed = True
    kinds = {w.category for w in caught}
    assert failed or SolverWarning in kinds
    sep = [str(w.message) for w in caught if w.category is SeparationWarning]
    assert sep and all("after an iterate that separates the training classes" in m and "lower C" in m for m in sep)


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_multinomial_separation_stop_returns_the_support_its_warning_names(backend):
    """Wine, three classes, ``l0-multinomial``: DCA stops at separation on an iterate with 7 groups
    above ``zero_tol`` (and 5 at ~1e-10). The cut's verification would re-solve the very
    subproblem the stop found out of reach (it ends ``optimal_inaccurate`` and rejects the cut,
    returning 12 groups); after the stop the iterate is cut as the warning names it. The returned
    coefficients are zero outside the 7 groups and the objective is theirs: the multinomial loss
    computed here from the decision values plus the exp surrogate of the group norms. Both
    backends that take the formulation return the same 7 groups (Clarabel's ~1e-10 norms were
    reported as selected)."""
    import re

    from scipy.special import logsumexp
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fsframe.fit(X, y, "l0-multinomial", backend=backend)
    stop = [str(w.message) for w in caught if w.category is SeparationWarning and "stopped before" in str(w.message)]
    assert len(stop) == 1 and "separated" in res.info["stop_reason"]
    named = int(re.search(r"scale of its (\d+) selected groups", stop[0]).group(1))
    norms = np.linalg.norm(res.coef, axis=0)
    assert named == 7 and len(res.selected) == named and np.count_nonzero(norms) == named
    assert res.selected.tolist() == np.flatnonzero(norms).tolist() == [0, 2, 3, 6, 9, 10, 12]
    D = res.decision_function(X)
    loss = float(np.sum(logsumexp(D, axis=1) - D[np.arange(y.size), y]))
    assert res.objective == pytest.approx(loss + np.sum(-np.expm1(-ALPHA * norms)), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_separation_with_a_loss_above_c_log_2_is_named(backend):
    """Iris, setosa against the rest: the L1 start separates the classes (every margin positive,
    checked here from the L1 fit's decision values) but its loss is above ``C log 2``, so the loss
    test alone misses it. The next subproblem is lost, and the user is told why: the margins
    themselves (protocol ``margins``) give the SeparationWarning, with what to do."""
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    from fsframe.errors import SolverFailedError

    X, y = load_iris(return_X_y=True)
    X, y = StandardScaler().fit_transform(X), np.where(y == 0, 1, -1)
    start = fsframe.fit(X, y, "l1-logistic", C=1.0, backend=backend)
    margins = y * start.decision_function(X)
    assert margins.min() > 0 and np.logaddexp(0, -margins).sum() > np.log(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fsframe.fit(X, y, "l0-logistic", backend=backend)
        except SolverFailedError:
            res = None
    sep = [str(w.message) for w in caught if w.category is SeparationWarning]
    assert sep and all("every margin positive" in m and "lower C" in m for m in sep)
    if res is not None:
        assert (y * res.decision_function(X)).min() > 0


def test_margins_protocol_equals_the_decision_values():
    """``margins`` of the logistic and multinomial formulations against numpy on a fitted model's
    decision values: ``y f(x)``, and the own class's score minus the best other class's."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from fsframe.method import resolve

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():  # the protocol's arithmetic is checked, not the solve's accuracy
        warnings.simplefilter("ignore", SolverWarning)
        res = fsframe.fit(X, y, "l1-multinomial", C=0.5)
    form = resolve("l1-multinomial", C=0.5).formulation
    D = res.decision_function(X)
    other = np.where(np.arange(3) == y[:, None], -np.inf, D).max(axis=1)
    got = form.margins(X, y, res.coef.T, res.intercept)  # the built model's coef_shape (n, K)
    np.testing.assert_allclose(got, D[np.arange(y.size), y] - other, rtol=1e-12, atol=1e-12)
    yb = np.where(y == 0, 1, -1)
    rb = fsframe.fit(X, yb, "l1-logistic", C=0.5)
    lform = resolve("l1-logistic", C=0.5).formulation
    np.testing.assert_allclose(lform.margins(X, yb.astype(float), rb.coef, rb.intercept),
                               yb * rb.decision_function(X), rtol=1e-12, atol=1e-12)


def test_a_large_zero_tol_after_the_separation_stop_does_not_drop_a_group_the_margins_need():
    """Wine class 1 against the rest, standardised, ``l0-logistic`` at C = 1: the separation stop
    names 5 groups at the default ``zero_tol``; at ``zero_tol = 0.3`` the unchecked cut dropped a
    group of norm ~10 (objective 5.22 -> 23.3, three training errors). The cut is checked at the
    iterate: refused with a ConvergenceWarning, the uncut groups kept, the objective the model's."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from fsframe.errors import ConvergenceWarning

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = np.where(y == 1, 1, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeparationWarning)
        small = fsframe.fit(X, y, "l0-logistic", C=1.0)
        with pytest.warns(ConvergenceWarning, match="after the separation stop raises the objective"):
            large = fsframe.fit(X, y, "l0-logistic", C=1.0, zero_tol=0.3)
    assert len(small.selected) == 5 and len(large.selected) > 5
    assert large.objective == pytest.approx(small.objective, rel=1e-6)
    margins = y * large.decision_function(X)
    assert margins.min() > 0  # still separates, as the stop's iterate does
    assert large.info["zero_tol_cut_verified"] is False
