"""fsframe.path: every point equals an independent fit; warm starts happen; bad grids are refused."""

import json
import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import InvalidOptionError, UnknownComponentError
from fsframe.working_set import WorkingSetOptions

RTOL = 1e-7


def data(m=50, n=300, seed=0, k=5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, :k].sum(axis=1) + 0.3 * rng.standard_normal(m) > 0, 1, -1)
    return X, y


def assert_matches_fits(P, X, y, fixed, name):
    for p in P.points:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, **fixed, **{name: p.value})
        assert p.objective == pytest.approx(r.objective, rel=RTOL, abs=RTOL), p.value
        np.testing.assert_array_equal(p.support, r.support)
        assert p.n_selected == int(r.support.sum())


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_fsv_alpha_path_equals_fits_and_keeps_one_model(highs_loads):
    X, y = data()
    X0, y0 = X.copy(), y.copy()
    P = fsframe.path(X, y, "fsv", alpha=[1.0, 3.0, 5.0, 10.0])
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)
    loads_path = len(highs_loads)
    assert [p.warm for p in P.points] == ["cold", "same", "same", "same"]
    assert P.n_subproblems == 1
    del highs_loads[:]
    assert_matches_fits(P, X, y, {"method": "fsv"}, "alpha")
    # one live HiGHS model for the whole path; every independent fit loads its own
    assert loads_path < len(highs_loads)
    assert loads_path <= len(highs_loads) / 4 + 1


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_l1svm_C_path_restates_c_and_matches_cvxpy():
    X, y = data(seed=1)
    grid = [0.05, 0.2, 1.0, 4.0]
    P = fsframe.path(X, y, "l1-svm", C=grid)
    assert [p.warm for p in P.points] == ["cold", "restated", "restated", "restated"]
    assert P.n_subproblems == 1
    assert_matches_fits(P, X, y, {"method": "l1-svm"}, "C")
    import cvxpy as cp
    w, b, xi = cp.Variable(X.shape[1]), cp.Variable(), cp.Variable(X.shape[0])
    Cp = cp.Parameter(nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + Cp * cp.sum(xi)),
                      [cp.multiply(y, X @ w + b) >= 1 - xi, xi >= 0])
    for p in P.points:
        Cp.value = p.value
        prob.solve(solver=cp.CLARABEL)
        assert p.objective == pytest.approx(prob.value, rel=1e-6)


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_em_l0_C_path_equals_fits():
    X, y = data(seed=2, n=250)
    P = fsframe.path(X, y, "em-l0", C=[0.5, 2.0, 8.0])
    assert P.points[1].warm == "restated"
    assert_matches_fits(P, X, y, {"method": "em-l0"}, "C")


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_l1_mpm_delta_path_seeds_the_working_set(monkeypatch):
    from fsframe.working_set import WorkingSet

    seeds = []
    orig = WorkingSet.seed

    def recording(self, groups):
        seeds.append(np.flatnonzero(np.asarray(groups)).tolist())
        return orig(self, groups)

    monkeypatch.setattr(WorkingSet, "seed", recording)
    X, y = data(m=60, n=200, seed=3)
    ws = WorkingSetOptions(mode=True, initial=10, batch=10)
    P = fsframe.path(X, y, "l1-mpm", delta=[0.3, 0.4, 0.5], working_set=ws)
    assert [p.warm for p in P.points] == ["cold", "seeded", "seeded"]
    assert P.n_subproblems == 3
    # each new subproblem started from the previous point's working set, which holds its support
    assert len(seeds) == 2
    for prev, seed in zip(P.points[:-1], seeds):
        assert set(np.flatnonzero(prev.support)) <= set(seed)
    for p in P.points:
        assert p.certificate["working_set"] is not None and p.certificate["max_violation"] <= 1e-9
    assert_matches_fits(P, X, y, {"method": "l1-mpm", "working_set": ws}, "delta")


def test_mpm_equal_bound_path_restates_in_place():
    X, y = data(m=40, n=12, seed=4, k=3)
    fixed = {"formulation": "mpm-equal", "surrogate": "l1", "loop": "single"}
    P = fsframe.path(X, y, **fixed, delta=[0.2, 0.3, 0.4])
    assert [p.warm for p in P.points] == ["cold", "restated", "restated"]
    assert P.n_subproblems == 1
    assert_matches_fits(P, X, y, fixed, "delta")


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_n_features_validation_and_outputs():
    X, y = data(seed=5)
    Xv, yv = data(seed=6)
    P = fsframe.path(X, y, "fsv", alpha=np.array([2.0, 5.0]), n_features=4, validation=(Xv, yv))
    assert_matches_fits(P, X, y, {"method": "fsv", "n_features": 4}, "alpha")
    for p in P.points:
        assert p.n_selected == 4
        assert p.accuracy == pytest.approx(float(np.mean(p.result.predict(Xv) == yv)))
    d = json.loads(json.dumps(P.to_dict()))
    assert d["parameter"] == "alpha" and [q["value"] for q in d["points"]] == [2.0, 5.0]
    table = P.as_table().splitlines()
    assert len(table) == 4 and "accuracy" in table[0]
    sw = P.sweep_data()
    assert sw["value"] == [2.0, 5.0] and sw["n_selected"] == [4, 4]
    assert sw["accuracy"] == [100 * p.accuracy for p in P.points]


@pytest.mark.parametrize("kwargs, words", [
    ({"alpha": []}, "empty"),
    ({"alpha": [1.0, 2.0], "C": [1.0, 2.0]}, "one parameter per call"),
    ({"alpha": 2.0}, "as a list"),
    ({}, "as a list"),
    ({"alpha": [1.0, float("nan")]}, "non-finite"),
    ({"alpha": [1.0, np.inf]}, "non-finite"),
    ({"alpha": [1.0, "2"]}, "numbers only"),
    ({"alpah": [1.0, 2.0]}, "unknown parameter 'alpah'"),
    ({"alpha": [1.0, -2.0]}, "alpha"),
])
def test_bad_grids_are_typed_errors(kwargs, words):
    X, y = data(m=20, n=10)
    with pytest.raises(InvalidOptionError, match=words):
        fsframe.path(X, y, "fsv", **kwargs)


def test_bad_validation_and_method():
    X, y = data(m=20, n=10)
    with pytest.raises(InvalidOptionError, match="validation"):
        fsframe.path(X, y, "fsv", alpha=[1.0], validation=X)
    with pytest.raises(InvalidOptionError, match="features"):
        fsframe.path(X, y, "fsv", alpha=[1.0], validation=(X[:, :5], y))
    with pytest.raises(UnknownComponentError):
        fsframe.path(X, y, "no-such-method", alpha=[1.0])


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_plot_path_data_and_files(tmp_path):
    from fsframe.evaluation.plots import path_data, plot_path

    X, y = data(m=30, n=40, seed=7)
    P = fsframe.path(X, y, "l1-svm", C=[1.0, 0.1, 0.5], validation=(X, y))
    d = path_data(P)
    assert d["value"] == [0.1, 0.5, 1.0]
    by_value = {p.value: p for p in P.points}
    assert d["n_selected"] == [by_value[v].n_selected for v in d["value"]]
    assert d["accuracy"] == [100 * by_value[v].accuracy for v in d["value"]]
    import matplotlib  # noqa: F401
    files = plot_path(P, tmp_path / "path", title="l1-svm")
    assert [f.suffix for f in files] == [".png", ".svg"] and all(f.stat().st_size > 0 for f in files)


def test_fsframe_path_stays_the_function_after_its_module_is_imported():
    """The module is ``fsframe.paths``: importing it must not shadow the function ``fsframe.path``
    (a submodule named like a lazily exported function replaces it on the package)."""
    import importlib

    importlib.import_module("fsframe.paths")
    assert callable(fsframe.path) and fsframe.path.__module__ == "fsframe.paths"
