"""The inner cross-validation of a tuned L1-SVM sweeps its ``C`` grid by one warm-started
``fsframe.path`` per fold (docs/papers.md, paper 004's cost): the choice, the cell's record and
every inner fit equal those of one independent ``fsframe.fit`` per grid point on these data
(non-degenerate LPs), each restated point's LP is CVXPY's optimum, and only the rows whose formulation restates the tuned parameter
(the L1-SVM's ``C``; not DSO-FS's ``p`` nor RFS's ``gamma``) are swept — their cell key says so.

What is guaranteed in general is less: on a degenerate LP (duplicate or constant columns, discrete
values) the warm path can stop at another optimal vertex than a cold fit — the same objective,
another support — so the ranking and the tuned ``C`` can differ from the point-by-point cell.
Every swept point is certified optimal at its own ``C`` with the cold fit's objective
(:func:`test_degenerate_lp_sweep_is_optimal_not_necessarily_the_same_vertex`)."""

from __future__ import annotations

import functools
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


def _swept_and_alone(X, y, grid):
    """One inner fold's swept fits at ``grid`` (each checked a result, not an exception) and one
    independent ``fsframe.fit`` per point."""
    cfg = _cfg("l1-svm", X, y, {"C": grid}, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in grid])
        alone = [fsframe.fit(X, y, method="l1-svm", C=c) for c in grid]
    for got in fits:
        assert not isinstance(got, BaseException), got
    return fits, alone


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
    fits, alone = _swept_and_alone(X, y, GRID)
    for c, got, want in zip(GRID, fits, alone):
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


def test_fit_options_the_path_does_not_take_fit_each_point_without_trying_it(monkeypatch):
    """``verify=`` is a fit option ``fsframe.path`` does not take: the fold's points are fitted one by
    one from the start (the sweep is not tried and its error swallowed), with ``fsframe.fit``'s answers."""
    import fsframe.paths

    X, y = _data("synthetic")
    cfg = _cfg("l1-svm", X, y, {"C": GRID[:3]}, True)
    cfg = attrs.evolve(cfg, fit_options={**cfg.fit_options, "verify": "clarabel"})
    called = []
    real = fsframe.paths.path

    @functools.wraps(real)  # the same signature as the path's
    def recording(*a, **k):
        called.append(k)
        return real(*a, **k)

    monkeypatch.setattr(fsframe.paths, "path", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID[:3]])
        alone = [fsframe.fit(X, y, method="l1-svm", C=c, verify="clarabel") for c in GRID[:3]]
    assert called == []
    for got, want in zip(fits, alone):
        assert not isinstance(got, BaseException), got
        assert got.objective == pytest.approx(want.objective, rel=1e-9)
    # with options the path takes, the same fold is swept by one path
    cfg = _cfg("l1-svm", X, y, {"C": GRID[:3]}, True)
    cfg = attrs.evolve(cfg, fit_options={**cfg.fit_options, "backend": "highs", "working_set": "auto"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID[:3]])
    assert len(called) == 1


def test_a_sweep_failing_part_way_falls_back_to_one_fit_per_point(monkeypatch):
    """``restate`` raising on its 3rd call (mid-path, after two restated points): the fold's fits
    are the independent fits, every one, and the cell's choice is the point-by-point cell's."""
    import fsframe_svm

    X, y = _data("synthetic")
    split = make_splits(y, 0.4, repeats=1, random_state=3)[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = study_cell(X, y, split, _cfg("l1-svm", X, y, {"C": GRID}, False), raise_errors=True)
        alone = [fsframe.fit(X, y, method="l1-svm", C=c) for c in GRID]
    real, calls = fsframe_svm.HingeFormulation.restate, {"n": 0}

    def flaky(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 3:
            raise fsframe.errors.SolverFailedError("planted part-way failure")
        return real(self, *a, **k)

    monkeypatch.setattr(fsframe_svm.HingeFormulation, "restate", flaky)
    cfg = _cfg("l1-svm", X, y, {"C": GRID}, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID])
        swept = study_cell(X, y, split, cfg, raise_errors=True)
    assert calls["n"] >= 3  # the sweep did restate, and failed part-way
    for c, got, want in zip(GRID, fits, alone):
        assert not isinstance(got, BaseException), got
        assert got.objective == pytest.approx(want.objective, rel=1e-9), c
        np.testing.assert_array_equal(ranking(got), ranking(want), err_msg=f"C={c}")
    assert swept.ok and swept.facts["tuned C"] == plain.facts["tuned C"] and swept.curve == plain.curve


def test_degenerate_lp_sweep_is_optimal_not_necessarily_the_same_vertex():
    """Duplicate, doubled and constant columns of small integers (a degenerate LP): every swept
    point is certified optimal and attains the cold fit's objective at its own ``C`` (to 1e-9);
    its support need not be the cold fit's."""
    rng = np.random.default_rng(2)
    m, k = 24, 4
    y = np.arange(m) % k
    B = rng.integers(0, 3, size=(m, 20)).astype(float)
    B[:, :3] += y[:, None]
    X = np.hstack([B, B[:, :10], np.ones((m, 3)), 2 * B[:, :5]])
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    grid = GRID + [1000.0]
    fits, alone = _swept_and_alone(X, y, grid)
    for c, got, want in zip(grid, fits, alone):
        assert [cls["status"] for cls in got.certificate["per_class"]] == ["optimal"] * k, c
        assert got.objective == pytest.approx(want.objective, rel=1e-9, abs=1e-9), c


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


def _fake(coef):
    """A fit's result as ``Extras.choose`` reads it: coefficients and their support."""
    from types import SimpleNamespace

    coef = np.asarray(coef, float)
    return SimpleNamespace(coef=coef, info={}, n_selected=int(np.count_nonzero(np.linalg.norm(coef, axis=0))))


def test_empty_model_does_not_win_the_grid_on_its_index_order_fill(monkeypatch):
    """An empty model's ranking is every feature in index order; scored on its top ``max(top_k)``
    it used the first columns, so a grid point whose model is empty won when feature 0 happened to
    be informative (r28c). The inner score uses the ranked features only: the empty point scores
    the majority class and the point that chose a useful feature (column 2) wins."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 30)
    X = rng.normal(size=(60, 3))
    X[:, 0] += 4.0 * (2 * y - 1)            # separates the classes: what index order puts first
    X[:, 2] += 1.0 * (2 * y - 1)            # informative: what the non-empty point selects
    cfg = _cfg("l1-svm", X, y, {"C": [0.001, 1.0]}, False)
    cfg = attrs.evolve(cfg, extras=attrs.evolve(cfg.extras, top_k=(1,)))
    fakes = {0.001: _fake(np.zeros((1, 3))), 1.0: _fake([[0.0, 0.0, 0.7]])}
    monkeypatch.setattr(Extras, "_fold_fits", lambda self, Xa, ya, cfg, points: [fakes[p["C"]] for p in points])
    split = make_splits(y, 0.4, repeats=1, random_state=0)[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = cfg.extras.choose(X, y, split, cfg)
        empty = cfg.extras._score(fakes[0.001], X[:36], y[:36], X[36:], y[36:], cfg)
    assert chosen == {"C": 1.0}
    # the empty model predicts the training part's majority class (0: the first 30 samples are 0)
    assert empty == pytest.approx(np.mean(y[36:] == 0))
    assert cfg.extras.key()["inner_cols"] == "support"


def test_a_real_empty_fit_scores_the_majority_class():
    """The L1-SVM at C = 0.001 on these data selects nothing (checked): its grid point's inner score
    is the majority class's accuracy, not a classifier on the first ``max(top_k)`` columns."""
    X, y = _data("synthetic")
    cfg = _cfg("l1-svm", X, y, {"C": [0.001]}, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X[:40], y[:40], method="l1-svm", C=0.001)
    assert res.n_selected == 0
    score = cfg.extras._score(res, X[:40], y[:40], X[40:], y[40:], cfg)
    majority = np.bincount(y[:40]).argmax()
    assert score == pytest.approx(np.mean(y[40:] == majority))
