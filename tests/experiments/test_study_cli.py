"""Experiment files (named protocols, grids, typed errors), the bundled study, and the commands
``fsframe run``, ``fsframe report``, ``fsframe compare --out`` and ``fsframe select --plot``."""

from __future__ import annotations

import io
import json

import pytest

from fsframe.cli import main
from fsframe.cli.output import ProgressPrinter
from fsframe.errors import DataFileError, InvalidOptionError
from fsframe.evaluation.records import FoldRecord, Progress
from fsframe.evaluation.study import PROTOCOLS, load_study, study_from_dict, study_to_toml


def _spec(**protocol):
    return {"protocol": protocol, "datasets": [{"name": "wine"}], "methods": [{"method": "fsv", "alpha": [1, 2]}]}


def test_named_protocols():
    p0 = study_from_dict(_spec(name="paper000")).protocol
    assert (p0.cv, p0.repeats, p0.retrain) == (10, 1, None)
    p1 = study_from_dict(_spec(name="paper001")).protocol
    assert (p1.cv, p1.repeats) == (10, 10)
    p2 = study_from_dict(_spec(name="paper002", n_features=[2, 5]))
    assert (p2.protocol.cv, p2.protocol.repeats, p2.protocol.retrain) == (0.2, 10, "svm")
    assert [c.label for c in p2.configurations()] == ["fsv alpha=1 r=2", "fsv alpha=1 r=5", "fsv alpha=2 r=2",
                                                      "fsv alpha=2 r=5"]
    p4 = study_from_dict(_spec(name="paper004", n_features=[3])).protocol
    est = p4.retrain_estimator()
    assert (p4.cv, p4.repeats, p4.scale) == (0.4, 10, "standard")
    assert type(est).__name__ == "GridSearchCV" and type(est.estimator).__name__ == "SVC"  # LIBSVM's, as 004 cites
    assert est.estimator.kernel == "linear"
    assert set(PROTOCOLS) == {"paper000", "paper001", "paper002", "paper004"}
    spelled = study_from_dict(_spec(holdout=0.3, repeats=4, scale="minmax")).protocol
    assert (spelled.cv, spelled.repeats, spelled.scale) == (0.3, 4, "minmax")


@pytest.mark.parametrize("data, words", [
    ({"datasets": [{"name": "wine"}]}, "no [[methods]]"),
    ({"methods": [{"method": "fsv"}]}, "no [[datasets]]"),
    ({**_spec(name="paper002")}, "n_features"),
    ({**_spec(name="paper999")}, "unknown protocol"),
    ({**_spec(), "extra": {}}, "unknown sections"),
    ({**_spec(), "study": {"seeds": [-1]}}, "seeds"),
    ({"datasets": [{"name": "wine"}], "methods": [{"method": "fsv"}, {"method": "fsv"}]}, "duplicate"),
    ({**_spec(cv=3, holdout=0.2)}, "cv and holdout"),
    ({**_spec(retrain="tuned-svm", retrain_C=10.0)}, "a tuned classifier takes C from retrain_grid"),
    ({**_spec(name="paper004", top_k=[2], retrain_C=0.5)}, "retrain_C = 0.5 with retrain = 'tuned-svm'"),
])
def test_bad_files_are_typed_errors(data, words):
    with pytest.raises(InvalidOptionError, match=words.replace("[", r"\[").replace("]", r"\]")):
        study_from_dict(data)


def test_file_errors(tmp_path):
    with pytest.raises(DataFileError, match="not found"):
        load_study(tmp_path / "nope.toml")
    (tmp_path / "bad.toml").write_text("[study\n")
    with pytest.raises(InvalidOptionError, match="not valid TOML"):
        load_study(tmp_path / "bad.toml")


def test_toml_round_trip_and_relative_paths(tmp_path):
    (tmp_path / "d.csv").write_text("a,b,label\n1,2,x\n2,1,y\n3,3,x\n0,1,y\n")
    (tmp_path / "s.toml").write_text('[study]\noutput = "out"\n[[datasets]]\npath = "d.csv"\n'
                                     '[[methods]]\nmethod = "l1-svm"\nC = [0.5, 2.0]\n')
    s = load_study(tmp_path / "s.toml")
    assert s.datasets[0].source == str(tmp_path / "d.csv") and s.output == str(tmp_path / "out")
    import tomllib

    again = study_from_dict(tomllib.loads(study_to_toml(s)))
    assert again.configurations() == s.configurations() and again.protocol == s.protocol


def test_bundled_study_plans_without_running():
    s = load_study("quickstart")
    assert s.datasets[0].source == "breast_cancer" and len(s.configurations()) == 4
    assert s.protocol.name == "paper000"
    from fsframe.evaluation.experiment import _plan

    assert len(_plan(s)[1]) == 40  # the cells docs/experiments.md and the file's comment announce


def test_cli_run_then_report(tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text('[study]\nseeds = [1]\n[protocol]\ncv = 3\n[[datasets]]\nname = "wine"\n'
                     '[[methods]]\nmethod = "l1-svm"\nC = [0.1, 1]\n')
    out = tmp_path / "res"
    assert main(["run", str(study), "--out", str(out), "--markdown", "--progress"]) == 0
    cap = capsys.readouterr()
    assert "| l1-svm C=0.1 |" in cap.out and "6 cells: 0 finished earlier" in cap.err
    assert "[6/6]" in cap.err and "ETA" in cap.err
    assert main(["run", str(study), "--out", str(out), "--no-progress"]) == 0
    assert "6 finished earlier (skipped), 0 computed now" in capsys.readouterr().err
    man = json.loads((out / "manifest.json").read_text())
    assert man["study_text"] == study.read_text() and man["seeds"] == [1]
    assert {"python", "platform", "blas", "versions"} <= set(man["environment"])
    assert all(c["backend"] == "highs" and c["backend_version"] for c in man["cells"].values())
    assert man["started"] and man["finished"]
    assert main(["report", str(out), "--no-plots"]) == 0
    assert "| l1-svm C=1 |" in (out / "report.md").read_text()
    assert main(["run", str(tmp_path / "missing.toml")]) == 2


def test_cli_compare_out_is_a_study(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = ["compare", "wine", "--methods", "l1-svm", "--cv", "3", "--out", str(out), "--markdown"]
    assert main(args) == 0
    first = capsys.readouterr()
    assert main(args) == 0
    assert "3 finished earlier (skipped), 0 computed now" in capsys.readouterr().err
    assert (out / "study.toml").read_text().startswith("[study]")
    assert main(["compare", "wine", "--methods", "l1-svm", "--cv", "3", "--markdown", "--jobs", "1"]) == 0
    plain = capsys.readouterr().out
    row = lambda t: [x.rsplit("|", 3)[0] for x in t.splitlines() if x.startswith("| l1-svm")]  # noqa: E731
    assert row(first.out) == row(plain) and row(plain)


def test_select_plot_trace(tmp_path, capsys):
    import matplotlib  # noqa: F401
    from fsframe import fit
    from fsframe.evaluation import scale_fit_transform
    from fsframe.evaluation.plots import trace_data
    from fsframe.io import load_dataset

    target = tmp_path / "trace.png"
    assert main(["select", "breast_cancer", "--method", "fsv", "--plot", str(target), "--progress"]) == 0
    err = capsys.readouterr().err
    assert target.stat().st_size > 1000 and (tmp_path / "trace.svg").stat().st_size > 1000
    assert "iteration 0: objective" in err
    d = load_dataset("breast_cancer")
    res = fit(scale_fit_transform(d.X), d.y, method="fsv")
    data = trace_data(res)["series"][0]
    assert data["n_nonzero"] == [h.n_nonzero for h in res.history]
    assert data["objective"] == [h.objective for h in res.history]
    assert len(data["iteration"]) == res.n_iter and err.count("iteration ") >= res.n_iter


def test_progress_line_has_eta_and_slowest():
    buf = io.StringIO()
    p = ProgressPrinter(buf, "on")
    rec = FoldRecord(label="fsv", repeat=0, fold=1, n_train=9, n_test=1, ok=True, accuracy=1.0, n_selected=2,
                     seconds=0.5)
    p(Progress(3, 10, rec, eta=75.0, slowest=("wine / fsv / seed 0 split 0.4", 12.0), skipped=2))
    line = buf.getvalue()
    assert "[ 3/10]" in line and "ETA 1m15s" in line and "slowest running: wine / fsv" in line
    assert "2 finished earlier" in line and "this run" not in line
    # a run of some data sets: the plan's count and this run's; no ETA once this run's last cell is done
    for run_done, eta in ((2, True), (9, False)):
        buf = io.StringIO()
        ProgressPrinter(buf, "on")(Progress(50 + run_done, 360, rec, eta=75.0, skipped=50, run_done=run_done,
                                            run_total=9))
        line = buf.getvalue()
        assert f"[{50 + run_done:>3}/360] (this run: {run_done} of 9) fsv" in line and ("ETA" in line) is eta


def test_plot_extra_missing_message(hide_module):
    from fsframe.errors import BackendUnavailableError
    from fsframe.evaluation import plots

    hide_module("matplotlib")
    with pytest.raises(BackendUnavailableError, match=r"fsframe\[plot\]"):
        plots._pyplot()


def test_dask_extra_missing_and_bad_address(hide_module):
    from fsframe.errors import BackendUnavailableError
    from fsframe.evaluation.distributed import dask_client

    with pytest.raises(InvalidOptionError, match="dask must be"):
        with dask_client(3):
            pass
    hide_module("distributed")
    with pytest.raises(BackendUnavailableError, match=r"fsframe\[dask\]"):
        with dask_client("local"):
            pass
