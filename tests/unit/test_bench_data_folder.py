"""The data-folder rule of the benchmark scripts that read a shipped study's files
(``benchmarks/_common.py``: ``add_data_dir``, ``study_with_data``) or data files of their own
(``data_folder``): ``--data-dir``, else ``$FSFRAME_DATA`` (docs/papers.md), as ``fsframe run`` reads
them, else for one release the old ``$FSFRAME_SHARED_DATA`` with a FutureWarning; a file that is not
there, or no folder at all, stops the script with exit status 2 and a one-line message, before any
data is read; no folder outside the repository is tried by default."""

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
    "benchmarks/dso_fit_profile.py": ["--datasets", "isolet"],
    "benchmarks/dso_finish_threads.py": ["--datasets", "isolet", "--out", "/nonexistent/never-written.json"],
    # the scripts that read data files themselves (_common.data_folder)
    "benchmarks/competitors.py": ["--profile", "--out", "/nonexistent/never-written.json"],
    "benchmarks/bench_em_dense_floor.py": [],
    "benchmarks/bench_em_dense_threads.py": [],
    "benchmarks/bench_em_early_stop.py": [],
    "benchmarks/bench_em_qp_share.py": [],
    "benchmarks/bench_small_fits.py": ["--datasets", "wdbc,colon"],
    "benchmarks/bench_twonorm_kernel_em.py": ["--json", "/nonexistent/never-written.json"],
    "benchmarks/bench_twonorm_pdas.py": ["--json", "/nonexistent/never-written.json"],
    "benchmarks/dso_extras.py": [],
    "benchmarks/mpm_rho.py": [],
    "benchmarks/twsvm_report.py": ["--datasets", "Sonar", "--out", "/nonexistent/never-written.json"],
    "benchmarks/paper001_criterion2.py": [],
    "benchmarks/paper001_theta.py": [],
    "benchmarks/experiments_timing.py": ["--engines", "serial"],  # the study's own message
}
FILE = {  # the file the script stops on; the others: paper004's Isolet.mat
    **dict.fromkeys(["benchmarks/paper000_gap3.py", "benchmarks/bench_em_sonar_splits.py", "benchmarks/competitors.py",
                     "benchmarks/bench_em_dense_floor.py", "benchmarks/bench_em_dense_threads.py",
                     "benchmarks/bench_em_early_stop.py", "benchmarks/bench_em_qp_share.py"], "sonar.csv"),
    **dict.fromkeys(["benchmarks/mpm_rho.py", "benchmarks/twsvm_report.py", "benchmarks/paper001_criterion2.py",
                     "benchmarks/experiments_timing.py"], "sonar.csv"),
    "benchmarks/bench_small_fits.py": "colon.mat", "benchmarks/dso_extras.py": "colon.mat",
    "benchmarks/paper001_theta.py": "pima-indians-diabetes.csv",
    "benchmarks/bench_twonorm_kernel_em.py": "twonorm.tsv.gz", "benchmarks/bench_twonorm_pdas.py": "twonorm.tsv.gz",
}


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
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)  # the old variable: test_the_old_variable_...
    code, err = _exit(lambda: mod.main(SCRIPTS[script]), capsys)
    assert code == 2 and "no data folder is set: give one with --data-dir" in err and err.count("\n") == 1
    code, err = _exit(lambda: mod.main(SCRIPTS[script] + ["--data-dir", str(tmp_path)]), capsys)
    assert code == 2 and f"needs the file {FILE.get(script, 'Isolet.mat')!r}" in err
    assert f"not in the data folder {tmp_path} (from --data-dir)" in err and err.count("\n") == 1


def test_data_folder_takes_the_option_then_the_variable_and_reads_nothing(common, tmp_path, monkeypatch, capsys):
    """``--data-dir`` before ``$FSFRAME_DATA`` (the variable ``fsframe run`` reads), each named as
    the folder's origin when a file is missing; with the files present the folder comes back (a file
    that is not a CSV: nothing is read); ``required=False`` gives None instead of stopping."""
    from fsframe.evaluation.study_data import DATA_ENV

    assert common.DATA_ENV == DATA_ENV  # one variable for the studies and the scripts
    (tmp_path / "a" / "sonar.csv").parent.mkdir()
    (tmp_path / "a" / "sonar.csv").write_text("not a csv\x00")
    (tmp_path / "b").mkdir()
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "b"))
    ap = argparse.ArgumentParser(prog="bench")
    assert common.data_folder(ap, str(tmp_path / "a"), ["sonar.csv"]) == tmp_path / "a"
    code, err = _exit(lambda: common.data_folder(ap, None, ["sonar.csv"]), capsys)
    assert code == 2 and err == (f"bench: needs the file 'sonar.csv', which is not in the data folder {tmp_path / 'b'} "
                                 "(from $FSFRAME_DATA)\n")
    assert common.data_folder(ap, None, ["sonar.csv"], required=False) is None
    assert capsys.readouterr().err == (f"bench: needs the file 'sonar.csv', which is not in the data folder "
                                       f"{tmp_path / 'b'} (from $FSFRAME_DATA); the parts that read it are skipped\n")
    assert common.data_folder(ap, None) == tmp_path / "b"  # no file asked for: the folder as set
    monkeypatch.delenv("FSFRAME_DATA")
    assert common.data_folder(ap, None, ["sonar.csv"], required=False) is None
    assert "no data folder is set" in capsys.readouterr().err
    code, err = _exit(lambda: common.data_folder(ap, None), capsys)
    assert code == 2 and err.startswith("bench: no data folder is set: give one with --data-dir DIR")
    assert err.count("\n") == 1


def test_the_old_variable_names_the_folder_for_one_release_with_a_warning(common, tmp_path, monkeypatch, capsys):
    """``$FSFRAME_SHARED_DATA`` (the scripts' variable before the rule) is read only when neither
    ``--data-dir`` nor ``$FSFRAME_DATA`` is given, with a FutureWarning naming the new ways."""
    (tmp_path / "sonar.csv").write_text("x")
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    monkeypatch.setenv("FSFRAME_SHARED_DATA", str(tmp_path))
    ap = argparse.ArgumentParser(prog="bench")
    with pytest.warns(FutureWarning, match=r"--data-dir DIR or \$FSFRAME_DATA"):
        assert common.data_folder(ap, None, ["sonar.csv"]) == tmp_path
    with pytest.warns(FutureWarning), pytest.raises(SystemExit):
        common.data_folder(ap, None, ["colon.mat"])
    assert "(from $FSFRAME_SHARED_DATA)" in capsys.readouterr().err
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "new"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new variable wins, silently
        assert common.data_folder(ap, None) == tmp_path / "new"
        assert common.data_folder(ap, str(tmp_path)) == tmp_path


def test_dso_exact_skips_its_shipped_sets_with_one_line_without_a_folder(load_script, tmp_path, monkeypatch, capsys):
    """``--shipped`` sets are optional: without a folder one line, and ``shipped`` gets no folder
    (reads none); with a folder lacking a set's file, that set's line."""
    mod = load_script("benchmarks/dso_exact.py", "bench_dso_exact_shipped")
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)
    real, got = mod.shipped, []

    class Read(Exception):
        pass

    monkeypatch.setattr(mod, "random_instances", lambda n: [])
    monkeypatch.setattr(mod, "shipped", lambda names, base: got.append((names, base)) or (_ for _ in ()).throw(Read()))
    with pytest.raises(Read):
        mod.main(["--instances", "0", "--shipped", "colon"])
    assert "no data folder is set" in capsys.readouterr().err and got == [(["colon"], None)]
    assert real(["colon"], None) == [] and capsys.readouterr().err == ""
    with pytest.raises(Read):
        mod.main(["--instances", "0", "--shipped", "colon", "--data-dir", str(tmp_path)])
    assert got[1] == (["colon"], tmp_path) and real(["colon"], tmp_path) == []
    assert f"skipping colon: {tmp_path / 'colon.mat'} is absent" in capsys.readouterr().err
