"""The inner cross-validation of a tuned L1-SVM sweeps its ``C`` grid by one warm-started
``fsframe.path`` per fold (docs/papers.md, paper 004's cost): the choice, the cell's record and
every inner fit equal those of one independent ``fsframe.fit`` per grid point, each restated
point's LP is CVXPY's optimum, and only the rows whose formulation restates the tuned parameter
(the L1-SVM's ``C``; not DSO-FS's ``p`` nor RFS's ``gamma``) are swept — their cell key says so."""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.evaluation.config import _make_config
from fsframe.evaluation.protocols import Evaluator, Extras, path_restates, plan_configs, ranking, study_cell
from fsframe.evaluation.splits import make_splits
from fsframe.evaluation.study import Protocol

GRID = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]


def _data(kind):
    if kind == "wine":
        d = fsframe.load_dataset("wine")
        return np.asarray(d.X, float), np.asarray(d.y)
    rng = np.random.default_rng(7)  # 4 classes, 12 features, 3 of them informative
    y = np.repeat(np.arange(4), 15)
    X = rng.normal(size=(60, 12))
    X[:, :3] += 1.5 * np.eye(4)[y][:, :3] - 0.5 * (y == 3)[:, None]
    return X, y


def _cfg(method, X, y, tune, sweep):
    cfg = _make_config(method, {"method": method}, n_features=None, scale="standard", retrain=None, retrain_C=1.0,
                       n_columns=X.shape[1], n_samples=X.shape[0], n_classes=len(np.unique(y)))
    ext = Extras(evaluator=Evaluator(clf="linear-svc"), top_k=(2, 4, 6), tune=tune, tune_folds=3, sweep=sweep)
    return attrs.evolve(cfg, extras=ext)


@pytest.mark.parametrize("kind", ["wine", "synthetic"])
def test_swept_cell_equals_the_cell_fitted_point_by_point(kind):
    X, y = _data(kind)
    split = make_splits(y, 0.4, repeats=1, random_state=3)[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        swept = study_cell(X, y, split, _cfg("l1-svm", X, y, {"C": GRID}, True), raise_errors=True)
        plain = study_cell(X, y, split, _cfg("l1-svm", X, y, {"C": GRID}, False), raise_errors=True)
    assert swept.ok and plain.ok
    assert swept.facts["tuned C"] == plain.facts["tuned C"]
    assert swept.curve == plain.curve and swept.selected == plain.selected and swept.accuracy == plain.accuracy
    np.testing.assert_array_equal(swept.y_pred, plain.y_pred)


@pytest.mark.parametrize("kind", ["wine", "synthetic"])
def test_every_inner_fit_of_the_sweep_is_the_independent_fit(kind):
    """Point by point (in the grid's order, which the sweep must keep): the same ranking, the same
    objective, the same coefficients as an independent fit; the restated points are warm."""
    X, y = _data(kind)
    cfg = _cfg("l1-svm", X, y, {"C": GRID}, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID])
        alone = [fsframe.fit(X, y, method="l1-svm", C=c) for c in GRID]
    for c, got, want in zip(GRID, fits, alone):
        assert not isinstance(got, BaseException), got
        np.testing.assert_array_equal(ranking(got), ranking(want), err_msg=f"C={c}")
        assert got.objective == pytest.approx(want.objective, rel=1e-7), c
        np.testing.assert_allclose(np.asarray(got.coef), np.asarray(want.coef), atol=1e-7)
    assert len({got.objective for got in fits}) == len(GRID)  # each point solved its own C


def test_restated_points_are_the_lp_optimum_by_cvxpy():
    """Two classes: each point of the sweep is the L1-SVM LP's optimum at its own C (CVXPY/Clarabel)."""
    import cvxpy as cp

    X, y = _data("wine")
    keep = y != y.max()
    X, y = X[keep], np.where(y[keep] == y.min(), -1.0, 1.0)
    X = (X - X.mean(0)) / X.std(0)
    cfg = _cfg("l1-svm", X, y, {"C": GRID}, True)
    fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID])
    for c, got in zip(GRID, fits):
        w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(X.shape[0], nonneg=True)
        prob = cp.Problem(cp.Minimize(cp.norm1(w) + c * cp.sum(xi)), [cp.multiply(y, X @ w + b) >= 1 - xi])
        prob.solve(solver=cp.CLARABEL)
        assert got.objective == pytest.approx(prob.value, rel=1e-6, abs=1e-8), c
        margins = np.maximum(0.0, 1.0 - y * (X @ np.ravel(got.coef) + float(np.ravel(got.intercept)[0])))
        assert np.abs(got.coef).sum() + c * margins.sum() == pytest.approx(prob.value, rel=1e-6, abs=1e-8)


def test_a_failed_sweep_falls_back_to_one_fit_per_point(monkeypatch):
    import fsframe.paths

    X, y = _data("synthetic")
    cfg = _cfg("l1-svm", X, y, {"C": GRID}, True)

    def broken(*a, **k):
        raise fsframe.errors.SolverFailedError("planted")

    monkeypatch.setattr(fsframe.paths, "path", broken)
    fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID])
    alone = [fsframe.fit(X, y, method="l1-svm", C=c) for c in GRID]
    for got, want in zip(fits, alone):
        assert got.objective == pytest.approx(want.objective, rel=1e-9)


def test_only_restated_single_problem_grids_are_swept():
    X, y = _data("synthetic")
    prot = Protocol(name=None, cv=0.4, repeats=1, scale="standard", retrain=None, retrain_C=1.0, top_k=(2, 4),
                    tune_folds=3)
    tunes = {"l1-svm": {"C": GRID}, "dso-fs": {"p": [0.5, 1.0]}, "rfs": {"gamma": [0.1, 1.0]},
             "fsv": {"C": [0.1, 1.0]}, "mrmr": None}
    cfgs = [_make_config(m, {"method": m}, n_features=None, scale="standard", retrain=None, retrain_C=1.0,
                         n_columns=X.shape[1], n_samples=X.shape[0], n_classes=4) for m in tunes]
    out = plan_configs(prot, cfgs, list(tunes.values()), shape=X.shape, n_classes=4, n_train=36,
                       retrain=None, C=1.0, seed=0, where="test")
    sweep = {c.label: c.extras.sweep for c in out if getattr(c, "extras", None) is not None}
    assert sweep == {"l1-svm": True, "dso-fs": False, "rfs": False, "fsv": False, "mrmr": False}
    keys = {c.label: c.extras.key() for c in out if getattr(c, "extras", None) is not None}
    assert keys["l1-svm"]["inner_fits"] == "path" and all("inner_fits" not in k for m, k in keys.items()
                                                           if m != "l1-svm")
    assert not path_restates(cfgs[0], [{"C": 1.0}, {"C": 2.0, "fast": True}])  # not one parameter
