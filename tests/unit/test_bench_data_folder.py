"""The data-folder rule of the benchmark scripts that read a shipped study's files
(``benchmarks/_common.py``: ``add_data_dir``, ``study_with_data``): ``--data-dir``, else
``$FSFRAME_DATA`` (docs/papers.md), as ``fsframe run`` reads them; a file that is not there, or no
folder at all, stops the script with exit status 2 and the study's one-line message, before any data
is read; no folder outside the repository is tried by default."""

from __future__ import annotations

import argparse

import pytest

from fsframe.errors import DataFileError
from fsframe.evaluation.study import load_study

SCRIPTS = {  # script -> the arguments that keep its run to paper004's ISOLET, or paper000 for gap3
    "benchmarks/paper_study_cost.py": ["paper004", "--datasets", "isolet", "--store", "none"],
    "benchmarks/paper004_isolet_size.py": [],
    "benchmarks/paper004_cell_cpu.py": [],
    "benchmarks/paper004_inner_sweep.py": ["--dataset", "isolet"],
    "benchmarks/dso_paper004_fit.py": ["--datasets", "isolet"],
    "benchmarks/paper000_gap3.py": [],
    "benchmarks/bench_em_sonar_splits.py": ["--out", "/nonexistent/never-written.json"],
}
FILE = {"benchmarks/paper000_gap3.py": "sonar.csv", "benchmarks/bench_em_sonar_splits.py": "sonar.csv"}  # the others: paper004's Isolet.mat


@pytest.fixture(scope="module")
def common(load_script):
    return load_script("benchmarks/_common.py", "bench_common")


def _exit(fn, capsys) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        fn()
    err = capsys.readouterr().err
    return exc.value.code, err


def test_the_option_defaults_to_none_and_takes_a_folder(common):
    ap = argparse.ArgumentParser()
    common.add_data_dir(ap)
    assert ap.parse_args([]).data_dir is None  # the study then reads $FSFRAME_DATA
    assert ap.parse_args(["--data-dir", "D"]).data_dir == "D" and ap.parse_args(["--data", "E"]).data_dir == "E"


def test_study_with_data_checks_the_named_files_and_reads_none(common, tmp_path, monkeypatch, capsys):
    """Sonar present (a file that is not a CSV: nothing is read), Pima and Ionosphere absent: the
    study comes back when only Sonar is asked for, and paper000's own message for Pima, with status
    2, when every data set is; the folder from $FSFRAME_DATA when --data-dir is not given."""
    (tmp_path / "sonar.csv").write_text("not a csv\x00")
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "elsewhere"))
    ap = argparse.ArgumentParser(prog="bench")
    study = common.study_with_data(ap, "paper000", str(tmp_path), ["sonar"])
    assert study.name == "paper000" and [d.name for d in study.datasets][:1] == ["sonar"]
    code, err = _exit(lambda: common.study_with_data(ap, "paper000", str(tmp_path)), capsys)
    with pytest.raises(DataFileError) as want:  # the study's own message, as `fsframe run` gives it
        next(d for d in load_study("paper000", data_dir=str(tmp_path)).datasets if d.name == "pima").load()
    assert code == 2 and err == f"bench: {want.value}\n" and "(from --data-dir)" in err
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path))
    assert common.study_with_data(ap, "paper000", None, ["sonar", "wdbc"]).name == "paper000"  # wdbc: bundled
    code, err = _exit(lambda: common.study_with_data(ap, "paper000", None, ["ionosphere"]), capsys)
    assert code == 2 and f"not in the data folder {tmp_path} (from $FSFRAME_DATA)" in err
    assert "archive.ics.uci.edu" in err and err.count("\n") == 1


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_each_script_stops_with_status_2_without_its_file(script, load_script, tmp_path, monkeypatch, capsys):
    """Every script of the rule: no folder set (no default outside the repository), then a folder
    without the file, named by --data-dir: status 2 and one line, before any fit."""
    mod = load_script(script, "bench_" + script.rpartition("/")[2][:-3])
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    code, err = _exit(lambda: mod.main(SCRIPTS[script]), capsys)
    assert code == 2 and "no data folder is set: give one with --data-dir" in err and err.count("\n") == 1
    code, err = _exit(lambda: mod.main(SCRIPTS[script] + ["--data-dir", str(tmp_path)]), capsys)
    assert code == 2 and f"needs the file {FILE.get(script, 'Isolet.mat')!r}" in err
    assert f"not in the data folder {tmp_path} (from --data-dir)" in err and err.count("\n") == 1
