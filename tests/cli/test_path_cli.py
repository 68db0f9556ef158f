"""``fsframe path``: the table, the JSON, and usage errors."""

import json

import numpy as np

import fsframe
from fsframe.evaluation.preprocess import scale_fit_transform
from fsframe.io import load_dataset


def test_path_command_prints_and_writes_the_points(cli, small_csv, tmp_path):
    out = tmp_path / "p.json"
    r = cli("path", small_csv, "--drop-columns", "id", "--method", "l1-svm", "--C", "0.05,0.5", "--json", out)
    assert r.code == 0, r.err
    assert "| C | selected |" in r.out and "restated" in r.out
    d = json.loads(out.read_text())
    assert d["parameter"] == "C" and [p["value"] for p in d["points"]] == [0.05, 0.5]
    data = load_dataset(str(small_csv), drop_columns=["id"])
    X = scale_fit_transform(data.X, "standard")
    for p in d["points"]:
        fit = fsframe.fit(X, data.y, "l1-svm", C=p["value"])
        assert abs(fit.objective - p["objective"]) <= 1e-7 * max(1.0, abs(fit.objective))
        assert p["support"] == np.flatnonzero(fit.support).tolist()


def test_path_command_validation_column(cli, small_csv):
    r = cli("path", small_csv, "--drop-columns", "id", "--method", "fsv", "--alpha", "2,5", "--validation", "0.3")
    assert r.code == 0, r.err
    assert "accuracy" in r.out.splitlines()[1] and "validation: 18 samples" in r.out


def test_path_command_without_a_grid_uses_the_automatic_one(cli, small_csv):
    r = cli("path", small_csv, "--method", "fsv")  # fsv declares C: its automatic grid
    assert r.code == 0 and "fsv over C on" in r.out and "automatic grid: C where the first feature enters" in r.out
    r = cli("path", small_csv, "--method", "svm-weights", "--grid", "n_features=1,2")
    assert r.code == 0 and "svm-weights over n_features" in r.out


def test_path_command_usage_errors(cli, small_csv):
    r = cli("path", small_csv, "--method", "fsv", "--alpha", "1,2", "--C", "1,2")
    assert r.code == 2 and "at most one grid" in r.err
    r = cli("path", small_csv, "--method", "fs-mpm")  # no grid, and no sparsity parameter to grid
    assert r.code == 2 and "declares no sparsity parameter" in r.err
    r = cli("path", small_csv, "--method", "fsv", "--alpha", "1,2", "--set", "alpha=3")
    assert r.code == 2 and "both swept and set" in r.err
    r = cli("path", small_csv, "--method", "fsv", "--grid", "alpah=1,2")
    assert r.code == 2 and "alpah" in r.err
