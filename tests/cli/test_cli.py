"""The command line end to end through ``fsframe.cli.main`` (and once through a subprocess):
listings, select with and without CV, compare, JSON/CSV contents, exit codes and messages."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import types

import numpy as np
import pytest

import fsframe
import fsframe.cli.select as cli_select
import fsframe.evaluation as ev
import fsframe.evaluation.runner as runner
from fsframe.cli import UsageError, parse_assignment, parse_value
from fsframe.errors import SolverFailedError


# ------------------------------------------------------------------------------------ parsing
@pytest.mark.parametrize("text, value", [
    ("1", 1), ("-3", -3), ("0.5", 0.5), ("1e-3", 1e-3), ("true", True), ("No", False), ("none", None),
    ("null", None), ("rbf", "rbf"), ("'l1'", "l1"), ('{"presolve": "off"}', {"presolve": "off"}), ("[1, 2]", [1, 2]),
])
def test_parse_value(text, value):
    out = parse_value(text)
    assert out == value and type(out) is type(value)


def test_parse_assignment():
    assert parse_assignment("C=0.5") == (None, "C", 0.5)
    assert parse_assignment("loop__tol=1e-6") == (None, "loop__tol", 1e-6)
    assert parse_assignment("fsv:alpha=3", allow_prefix=True) == ("fsv", "alpha", 3)
    for bad in ("C", "=1", "1x=2", "a b=1"):
        with pytest.raises(UsageError):
            parse_assignment(bad)
    with pytest.raises(UsageError, match="--n-features"):
        parse_assignment("n_features=3")
    with pytest.raises(UsageError, match="NaN"):
        parse_value("nan")


# ------------------------------------------------------------------------------------ listings
def test_methods_text_and_json(cli):
    r = cli("methods")
    assert r.code == 0
    for name in ("fsv", "l1-svm", "em-l0", "arom", "svm-weights"):
        assert f"\n  {name} " in r.out
    assert "Bradley & Mangasarian" in r.out and "svm (fsframe" in r.out
    r = cli("methods", "--json")
    data = json.loads(r.out)
    fsv = next(m for m in data["methods"] if m["name"] == "fsv")
    assert fsv["formulation"] == "hinge" and fsv["surrogate"] == "exp" and fsv["loop"] == "reweighted-l1"
    assert fsv["defaults"] == {"C": 1.0, "alpha": 5.0} and fsv["plugin"] == "svm" and fsv["distribution"] == "fsframe"
    assert "alpha" in fsv["parameters"]["surrogate"] and "max_iter" in fsv["parameters"]["loop"]
    assert data["broken"] == [] and data["conflicts"] == []


def test_methods_detail(cli):
    r = cli("methods", "fsv")
    assert r.code == 0 and "    surrogate exp:\n      alpha = 5.0   [" in r.out
    assert "    loop reweighted-l1:\n      max_iter = 20   [" in r.out
    assert json.loads(cli("methods", "fsv", "--json").out)["name"] == "fsv"
    r = cli("methods", "nope")
    assert r.code == 2 and "unknown method 'nope'" in r.err and "Traceback" not in r.err


def test_listings_survive_broken_plugins_and_conflicts(cli, add_components):
    mod = types.ModuleType("fsframe_broken_probe")

    def boom():
        raise RuntimeError("kaboom")

    mod.fsframe_register_methods = fsframe.hookimpl(boom)
    fsframe.plugins.register(mod, name="broken-probe")
    try:
        # two third-party providers of one name (a built-in name would be refused instead)
        for name in ("dup-probe", "dup-probe-2"):
            add_components(name=name, methods=[fsframe.MethodSpec("twice", formulation="hinge", loop="single",
                                                                  surrogate="l1")])
        r = cli("methods")
        assert r.code == 0
        assert "broken-probe" in r.out and "kaboom" in r.out
        assert "method 'twice'" in r.out and "dup-probe" in r.out
        assert "\n  l1-svm " in r.out  # the rest still listed
        data = json.loads(cli("methods", "--json").out)
        assert [b["plugin"] for b in data["broken"]] == ["broken-probe"]
        assert data["conflicts"][0]["name"] == "twice"
        assert {p["plugin"] for p in data["conflicts"][0]["providers"]} == {"dup-probe", "dup-probe-2"}
        r = cli("plugins")
        assert r.code == 0 and "kaboom" in r.out and "[CONFLICT]" in r.out
        r = cli("select", "iris", "--method", "twice")
        assert r.code == 2 and "more than one plugin" in r.err
    finally:
        fsframe.plugins.unregister("broken-probe")


def test_plugins_text_and_json(cli):
    r = cli("plugins")
    assert r.code == 0 and "fsframe_register_methods" in r.out and "method: arom, em-l0, fsv" in r.out
    data = json.loads(cli("plugins", "--json").out)
    by = {p["name"]: p for p in data["plugins"]}
    assert by["svm"]["distribution"] == "fsframe" and by["svm"]["version"] == fsframe.__version__
    assert "fsframe_register_formulations" in by["svm"]["hooks"]
    assert {"kind": "formulation", "name": "hinge"} in by["svm"]["components"]
    assert {"kind": "surrogate", "name": "exp"} in by["fsframe.surrogates"]["components"]


def test_python_dash_m_subprocess():
    # -X importtime: listing methods must not import the heavy modules only fits and CV need
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "fsframe", "methods", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "fsv" in {m["name"] for m in json.loads(out.stdout)["methods"]}
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    for heavy in ("sklearn.svm", "sklearn.model_selection", "joblib", "cvxpy"):
        assert heavy not in imported


# ------------------------------------------------------------------------------------ select
def test_select_once(cli, tmp_path):
    jp, cp = tmp_path / "r.json", tmp_path / "r.csv"
    r = cli("select", "breast_cancer", "--method", "fsv", "--set", "alpha=3", "--json", jp, "--csv", cp)
    assert r.code == 0, r.err
    assert "fsv on breast_cancer: 569 samples x 30 features" in r.out
    assert "selected " in r.out and "objective" in r.out and "converged: yes" in r.out and "training accuracy" in r.out
    data = json.loads(jp.read_text())
    assert data["command"] == "select" and data["params"]["alpha"] == 3 and data["params"]["C"] == 1.0
    assert data["dataset"]["name"] == "breast_cancer" and data["dataset"]["n_samples"] == 569
    assert data["versions"]["fsframe"] == fsframe.__version__ and data["versions"]["solver"].startswith("highs")
    # the JSON's selection is what fit() returns on the standardised data
    X = fsframe.load_dataset("breast_cancer").X
    ref = fsframe.fit((X - X.mean(0)) / X.std(0), fsframe.load_dataset("breast_cancer").y, method="fsv", alpha=3)
    assert data["result"]["selected"] == ref.selected.tolist()
    for name in data["selected_names"]:
        assert f" {name} " in r.out
    rows = list(csv.DictReader(cp.open()))
    assert len(rows) == 30 and sum(row["selected"] == "True" for row in rows) == ref.n_selected
    assert float(rows[ref.selected[0]]["weight"]) == pytest.approx(ref.coef[ref.selected[0]])


def test_select_names_what_solved_a_fit_without_a_backend(cli, small_csv):
    """em-l0 on the dense EM path has no solver backend (``result.backend`` is None): the model
    line names what solved it, from its certificate, as compare's footer does. Planted (select
    passing no certificate's solver): the line says "no solver backend" alone."""
    r = cli("select", small_csv, "--drop-columns", "id", "--label-column", "class", "--method", "em-l0")
    assert r.code == 0, r.err
    data = fsframe.load_dataset(str(small_csv), drop_columns=["id"], label_column="class")
    ref = fsframe.fit((data.X - data.X.mean(0)) / data.X.std(0), data.y, method="em-l0")
    assert ref.backend is None and ref.certificate["backend"] == "dense-hinge"
    assert "; solved by dense-hinge (fsframe's own, no solver backend)" in r.out


def test_select_cv_report_json_csv(cli, tmp_path, small_csv):
    jp, cp = tmp_path / "cv.json", tmp_path / "cv.csv"
    r = cli("select", small_csv, "--drop-columns", "id", "--label-column", "class", "--method", "l1-svm",
            "--cv", "3", "--seed", "4", "--set", "C=0.5", "--json", jp, "--csv", cp)
    assert r.code == 0, r.err
    assert r.out.startswith("l1-svm on small (60 samples x 8 features, 2 classes)\n"
                            "  protocol: 3-fold stratified CV, seed 4, standardised on each training part")
    for label in ("accuracy (%)", "MCC", "selected features", "iterations", "seconds", "stability (Nogueira"):
        assert label in r.out
    assert "0 of 3 fits failed" in r.out
    data = json.loads(jp.read_text())
    assert data["protocol"]["n_splits"] == 3 and data["protocol"]["random_state"] == 4
    assert data["params"]["C"] == 0.5 and data["dataset"]["feature_names"][0] == "f0"
    assert data["dataset"]["classes"] == ["neg", "pos"]
    ds = fsframe.load_dataset(small_csv, drop_columns=["id"], label_column="class")
    ref = ev.cross_validate(ds, method="l1-svm", cv=3, random_state=4, C=0.5)
    assert data["summary"]["accuracy"]["mean"] == pytest.approx(ref.summary()["accuracy"]["mean"])
    rows = list(csv.DictReader(cp.open()))
    assert [int(x["fold"]) for x in rows] == [0, 1, 2]
    assert [float(x["accuracy"]) for x in rows] == pytest.approx([f.accuracy for f in ref.folds])
    assert rows[0]["selected"] == " ".join(map(str, ref.folds[0].selected))


def test_select_holdout_retrain_and_json_stdout(cli):
    r = cli("select", "wine", "--method", "l1-svm", "--holdout", "0.3", "--repeats", "2", "--n-features", "3",
            "--retrain", "svm", "--json", "-")
    assert r.code == 0, r.err
    data = json.loads(r.out)  # only JSON on stdout
    assert data["protocol"]["kind"] == "holdout" and data["protocol"]["test_size"] == 0.3
    assert data["protocol"]["retrain"].startswith("SVC(kernel='linear'")
    assert all(f["n_selected"] == 3 for f in data["folds"])


def test_select_custom_triple(cli):
    r = cli("select", "iris", "--formulation", "hinge", "--surrogate", "log", "--loop", "reweighted-l1", "--cv", "3")
    assert r.code == 0, r.err
    assert "hinge+log+reweighted-l1 on iris" in r.out


@pytest.mark.parametrize("args, message", [
    (["select", "no/such/file.csv", "--method", "fsv"], "data file not found"),
    (["select", "iris", "--method", "nope"], "unknown method 'nope'"),
    (["select", "iris", "--method", "fsv", "--set", "bogus=1"], "unknown parameter 'bogus'"),
    (["select", "iris", "--method", "fsv", "--set", "C"], "expected key=value"),
    (["select", "iris", "--method", "fsv", "--set", "C=-1"], "C"),
    (["select", "iris", "--method", "fsv", "--cv", "3", "--holdout", "0.2"], "not both"),
    (["select", "iris", "--method", "fsv", "--label-column", "3"], "takes no loader options"),
    (["select", "iris"], "give --method"),
    (["select", "iris", "--method", "fsv", "--retrain", "svm"], "--retrain needs --cv"),
    (["select", "iris", "--method", "fsv", "--n-features", "9"], "n_features=9"),
    (["select", "iris", "--method", "fsv", "--set", "kernel=rbf", "--set", "sigma=0"], "'sigma' must be > 0"),
    (["select", "iris", "--method", "fsv", "--set", "time_limit=-1"], "'time_limit' must be >= 0"),
    (["select", "iris", "--method", "fsv", "--cv", "3", "--set", 'backend_options={"bogus_option": 1}'],
     "bogus_option"),
    (["compare", "iris", "--methods", "fsv,nope"], "unknown method 'nope'"),
    (["compare", "iris", "--methods", "l1-svm", "--set", "alpha=2"], "accepted by none"),
    (["compare", "iris", "--methods", "l1-svm", "--set", "fsv:alpha=2"], "not among the compared"),
])
def test_bad_input_exits_2_with_one_clear_line(cli, args, message):
    r = cli(*args)
    assert r.code == 2
    assert message in r.err and "Traceback" not in r.err
    assert r.err.startswith("fsframe: error:") and len(r.err.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["select", "iris", "--cv", "1", "--method", "fsv"], ["select"],
                                  ["select", "iris", "--method", "fsv", "--jobs", "0"], ["frobnicate"]])
def test_argparse_usage_errors_exit_2(cli, args):
    assert cli(*args).code == 2


def test_debug_shows_traceback(cli):
    r = cli("select", "iris", "--method", "nope", "--debug")
    assert r.code == 2 and "Traceback" in r.err


def test_bad_csv_content_exits_2(cli, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("a,b,label\n1,x,0\n2,3,1\n")
    r = cli("select", p, "--method", "fsv")
    assert r.code == 2 and "non-numeric" in r.err


def test_solver_failure_exits_1(cli, monkeypatch):
    def fail(*a, **kw):
        raise SolverFailedError("simulated: subproblem 0 ended with status infeasible")

    monkeypatch.setattr(cli_select, "fit", fail)
    r = cli("select", "iris", "--method", "fsv")
    assert r.code == 1 and "simulated" in r.err and "Traceback" not in r.err
    monkeypatch.setattr(runner, "fit", fail)
    r = cli("select", "iris", "--method", "l1-svm", "--cv", "3")
    assert r.code == 1
    assert "3 of 3 fits failed" in r.out and "3 of 3 fits failed" in r.err


def test_warnings_shown_once(cli, tmp_path):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    X[:, 2] = 5.0
    y = (X[:, 0] > 0).astype(int)
    p = tmp_path / "const.csv"
    np.savetxt(p, np.column_stack([X, y]), delimiter=",", fmt="%.6f")
    r = cli("select", p, "--method", "l1-svm", "--cv", "4", "--scale", "none")
    assert r.code == 0, r.err
    lines = [ln for ln in r.err.splitlines() if "constant feature" in ln]
    assert 1 <= len(lines) <= 2 and all(ln.startswith("fsframe: warning: DataWarning:") for ln in lines)


# ------------------------------------------------------------------------------------ compare
def test_compare_table_markdown_json_csv(cli, tmp_path):
    jp, cp = tmp_path / "c.json", tmp_path / "c.csv"
    r = cli("compare", "iris", "--methods", "l1-svm,fsv", "--cv", "3", "--set", "fsv:alpha=2", "--json", jp,
            "--csv", cp)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "iris (150 samples x 4 features, 3 classes)"
    assert lines[1].startswith("protocol: 3-fold stratified CV, seed 0")
    assert any(ln.startswith("l1-svm ") for ln in lines) and any(ln.startswith("fsv ") for ln in lines)
    data = json.loads(jp.read_text())
    assert [x["label"] for x in data["results"]] == ["l1-svm", "fsv"]
    assert data["results"][1]["params"]["alpha"] == 2 and "alpha" not in data["results"][0]["params"]
    rows = list(csv.DictReader(cp.open()))
    assert [x["label"] for x in rows] == ["l1-svm", "fsv"]
    assert float(rows[1]["accuracy_mean"]) == pytest.approx(data["results"][1]["summary"]["accuracy"]["mean"])
    md = cli("compare", "iris", "--methods", "l1-svm", "--cv", "3", "--markdown")
    assert md.code == 0 and "| method | accuracy (%) |" in md.out and "|---|" in md.out


def test_compare_feature_sweep(cli, tmp_path):
    cp = tmp_path / "sweep.csv"
    r = cli("compare", "wine", "--methods", "l1-svm,svm-weights", "--n-features", "2,4", "--holdout", "0.25",
            "--repeats", "2", "--retrain", "svm", "--csv", cp)
    assert r.code == 0, r.err
    rows = list(csv.DictReader(cp.open()))
    assert [x["label"] for x in rows] == ["l1-svm r=2", "l1-svm r=4", "svm-weights r=2", "svm-weights r=4"]
    assert [float(x["n_selected_mean"]) for x in rows] == [2, 4, 2, 4]
    assert "selector acc. (%)" in r.out
    one = cli("compare", "wine", "--methods", "l1-svm", "--n-features", "3", "--cv", "3", "--csv", cp)
    assert one.code == 0 and list(csv.DictReader(cp.open()))[0]["label"] == "l1-svm"
    assert cli("compare", "wine", "--n-features", "2,x").code == 2
