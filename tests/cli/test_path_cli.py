"""``fsframe path``: the table, the JSON, and usage errors."""

import json

import numpy as np
import pytest

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


def test_path_plot_of_a_real_target_has_a_validation_r2_panel(cli, tmp_path):
    """``--plot`` with ``--validation`` on a regression: a third panel, the validation R² of each
    point, equal to scikit-learn's R² of that point's fit on the same split."""
    import matplotlib

    matplotlib.use("Agg")
    from sklearn.metrics import r2_score

    from fsframe.cli.path import _split
    from fsframe.evaluation.plots import figure, path_data
    from fsframe.evaluation.preprocess import _scale

    out, stem = tmp_path / "p.json", tmp_path / "p"
    r = cli("path", "diabetes", "--method", "l1-ls", "--C", "0.001,0.01", "--validation", "0.3", "--json", out,
            "--plot", stem)
    assert r.code == 0, r.err
    assert (tmp_path / "p.png").exists() and (tmp_path / "p.svg").exists()
    d = load_dataset("diabetes")
    tr, va = _split(d.y, 0.3, 0, regression=True)
    Xtr, Xva = _scale(d.X[tr], d.X[va], "standard")
    points = json.loads(out.read_text())["points"]
    for p in points:
        fit = fsframe.fit(Xtr, d.y[tr], method="l1-ls", C=p["value"])
        assert p["r2"] == pytest.approx(r2_score(d.y[va], fit.predict(Xva)), rel=1e-6)
    res = fsframe.path(Xtr, d.y[tr], method="l1-ls", C=[0.001, 0.01], validation=(Xva, d.y[va]), progress=False)
    data = path_data(res)
    assert data["r2"] == pytest.approx([p["r2"] for p in points], rel=1e-9)
    fig = figure("path", data)
    assert [ax.get_ylabel() for ax in fig.axes] == ["selected features", "objective", "validation R²"]
    np.testing.assert_allclose(fig.axes[2].lines[0].get_ydata(), data["r2"], rtol=1e-12)


def test_path_validation_part_without_samples_is_a_usage_error_naming_the_fix(cli, small_csv):
    r = cli("path", "diabetes", "--method", "l1-ls", "--C", "0.01", "--validation", "0.001")
    assert r.code == 2 and "--validation 0.001" in r.err and "0 of the 442 samples" in r.err
    assert "give a larger fraction (above 0.0034)" in r.err and "Traceback" not in r.err
    r = cli("path", "diabetes", "--method", "l1-ls", "--C", "0.01", "--validation", "0.003")
    assert r.code == 2 and "holds out one of the 442 samples, where R² is undefined" in r.err
    assert "above 0.0034" in r.err
    r = cli("path", small_csv, "--drop-columns", "id", "--method", "fsv", "--alpha", "2", "--validation", "0.001")
    assert r.code == 2 and "of each class (rounded per class): 0 of the 60 samples" in r.err
    r = cli("path", "diabetes", "--method", "l1-ls", "--C", "0.01", "--validation", "0.999")
    assert r.code == 2 and "only 0 training sample(s) of the 442; give a smaller fraction" in r.err
    r = cli("path", "wine", "--method", "fsv", "--alpha", "1", "--validation", "0.99")
    assert r.code == 2 and "no training sample of class(es) [2]" in r.err


def test_path_validation_part_of_a_constant_target_or_a_lone_training_sample_is_a_usage_error(cli, tmp_path):
    """A validation part whose real target is constant (R² undefined there: the R² and MSE columns
    used to vanish without a word), and a class left with one training sample (the error came from
    fit and blamed the data, not --validation)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12, 3))
    ties = tmp_path / "ties.csv"
    np.savetxt(ties, np.c_[X, np.r_[[1.0] * 10, 2.0, 3.0]], delimiter=",", header="a,b,c,t", comments="")
    r = cli("path", str(ties), "--task", "regression", "--method", "l1-ls", "--validation", "0.2", "--seed", "0")
    assert r.code == 2 and "target is constant (1)" in r.err and "R² is undefined" in r.err
    assert "another --seed" in r.err and "Traceback" not in r.err
    cls = tmp_path / "cls.csv"
    X = rng.normal(size=(20, 3))
    np.savetxt(cls, np.c_[X, np.r_[[0] * 18, [1] * 2]], delimiter=",", header="a,b,c,label", comments="")
    r = cli("path", str(cls), "--method", "l1-svm", "--validation", "0.5")
    assert r.code == 2 and "leaves one training sample of class(es) [1]" in r.err
    assert "give a smaller fraction" in r.err


def test_a_regression_sweep_picture_title_keeps_r2_upper_case():
    """The report's picture titles lower-case the caption's first letter ("Test R²" -> "test R²")
    but not a leading symbol: the sweep of a real target is "R² and support size ..." (was "r²")."""
    from types import SimpleNamespace

    from fsframe.evaluation.pages import _caption, _lower_first

    reg = SimpleNamespace(protocol={"task": "regression"})
    assert _lower_first(_caption("sweep", reg).split(" (")[0]) == "R² and support size against the swept parameter"
    assert _lower_first(_caption("accuracy_vs_features", reg)).startswith("test R² against")
    assert _lower_first(_caption("sweep", SimpleNamespace(protocol={}))).startswith("accuracy and support size")
