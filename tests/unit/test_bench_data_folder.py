"""The data-folder rule of the benchmark scripts that read a shipped study's files
(``benchmarks/_common.py``: ``add_data_dir``, ``study_with_data``) or data files of their own
(``data_folder``): ``--data-dir``, else ``$FSFRAME_DATA`` (docs/papers.md), as ``fsframe run`` reads
them, else for one release the old ``$FSFRAME_SHARED_DATA`` with a FutureWarning; a file that is not
there, or no folder at all, stops the script with exit status 2 and a one-line message, before any
data is read; no folder outside the repository is tried by default."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from fsframe.errors import DataFileError
from fsframe.evaluation.study import load_study

ROOT = Path(__file__).resolve().parents[2]

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
    assert ap.parse_args(["--data-dir", "D"]).data_dir == "D"
    assert ap.parse_args(["--data", "E"]).data_dir == "E"  # argparse's prefix match: no other option starts so


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
    (tmp_path / "new").mkdir()
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "new"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new variable wins, silently
        assert common.data_folder(ap, None) == tmp_path / "new"
        assert common.data_folder(ap, str(tmp_path)) == tmp_path


@pytest.mark.parametrize("required", [True, False])
def test_a_folder_that_is_not_a_directory_stops_the_script_even_when_its_data_is_optional(
        required, common, tmp_path, monkeypatch, capsys):
    """A typo in ``--data-dir`` or ``$FSFRAME_DATA`` (no such folder, or a file) is status 2 and one
    line naming the folder and its origin, also for a script that would skip a missing file: else
    it runs nothing, says "skipped" and exits 0."""
    (tmp_path / "a-file").write_text("x")
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)
    ap = argparse.ArgumentParser(prog="bench")
    for given, env, origin in ((str(tmp_path / "typo"), None, "--data-dir"), (None, str(tmp_path / "a-file"),
                                                                             "$FSFRAME_DATA")):
        if env is None:
            monkeypatch.delenv("FSFRAME_DATA", raising=False)
        else:
            monkeypatch.setenv("FSFRAME_DATA", env)
        for files in ((), ["sonar.csv"]):
            code, err = _exit(lambda: common.data_folder(ap, given, files, required=required), capsys)
            assert code == 2 and err == f"bench: the data folder {given or env} (from {origin}) is not a directory\n"


def _parser_of(mod, monkeypatch):
    """The argument parser ``mod.main`` builds (its ``parse_args`` stops the script)."""
    class Built(Exception):
        pass

    def stop(self, *args, **kwargs):
        raise Built(self)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    with pytest.raises(Built) as exc:
        mod.main([])
    monkeypatch.undo()
    return exc.value.args[0]


DATA_DIR_SCRIPTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").glob("*.py")
                          if p.name != "_common.py" and "add_data_dir(" in p.read_text())


@pytest.mark.parametrize("script", DATA_DIR_SCRIPTS)
def test_no_script_has_a_data_alias_that_takes_datasets_for_a_folder(script, load_script, monkeypatch):
    """``--data`` is not an alias of ``--data-dir`` in any script: where another option starts with
    ``--data`` (``--datasets``), argparse calls ``--data colon`` ambiguous (it named the data sets
    before the rule) instead of taking ``colon`` as the folder; elsewhere it is ``--data-dir``."""
    ap = _parser_of(load_script(script, "bench_alias_" + script.rpartition("/")[2][:-3]), monkeypatch)
    opts = ap._option_string_actions
    assert opts["--data-dir"].dest == "data_dir"
    assert "--data" not in opts or opts["--data"].dest != "data_dir"
    others = [o for o in opts if o.startswith("--data") and o != "--data-dir"]
    if "--data" in opts:  # bench_em_dense_floor: --data names the data set
        assert ap.parse_known_args(["--data", "sonar"])[0].data_dir is None
    elif others:
        with pytest.raises(SystemExit):
            ap.parse_known_args(["--data", "colon"])
    else:
        assert ap.parse_known_args(["--data", "D"])[0].data_dir == "D"
    assert DATA_DIR_SCRIPTS.count("benchmarks/bench_tuning.py") == 1  # the review's case is in the scan


@pytest.mark.parametrize("data_dir", [None, "given"])
@pytest.mark.parametrize("env", [None, "", "from-env"])
@pytest.mark.parametrize("present", [False, True])
def test_data_folder_agrees_with_the_studies_folder_rule_and_messages(data_dir, env, present, common, tmp_path,
                                                                      monkeypatch, capsys):
    """``_common.data_folder`` (which imports no fsframe) and ``fsframe.evaluation.study_data``
    (``fsframe run``): the same folder and origin for the same ``--data-dir`` and ``$FSFRAME_DATA``,
    and the same words for no folder and for a missing file."""
    from fsframe.evaluation.study_data import DatasetSpec, data_folder, file_source

    for name in ("given", "from-env"):
        (tmp_path / name).mkdir()
        if present:
            (tmp_path / name / "sonar.csv").write_text("x")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)
    if env is None:
        monkeypatch.delenv("FSFRAME_DATA", raising=False)
    else:
        monkeypatch.setenv("FSFRAME_DATA", env)
    assert common.folder_and_origin(data_dir) == data_folder(data_dir)
    source, origin = file_source("sonar.csv", data_dir, "test")
    spec = DatasetSpec(name="sonar", source=source, file="sonar.csv", folder_origin=origin, study="s")
    ap = argparse.ArgumentParser(prog="bench")
    if present and source is not None:
        spec.check_file()
        assert common.data_folder(ap, data_dir, ["sonar.csv"]) == data_folder(data_dir)[0]
        return
    with pytest.raises(DataFileError) as want:
        spec.check_file()
    code, err = _exit(lambda: common.data_folder(ap, data_dir, ["sonar.csv"]), capsys)
    study = str(want.value)
    if source is None:
        same = study[study.index("no data folder is set"):study.index(") and ") + 1]
    else:
        same = study[study.index("needs the file"):study.index(")", study.index("(from ")) + 1]
    assert code == 2 and f"bench: {same}" in err, (study, err)


def test_bench_small_fits_asks_for_no_folder_when_its_data_sets_are_bundled(load_script, monkeypatch):
    """``--datasets wdbc`` (bundled) reads no file: no folder is asked for; the script goes on to
    time (stopped here where it instruments fsframe)."""
    mod = load_script("benchmarks/bench_small_fits.py", "bench_small_fits_bundled")
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)

    class Timing(Exception):
        pass

    monkeypatch.setattr(mod, "instrument", lambda timer: (_ for _ in ()).throw(Timing()))
    monkeypatch.setattr(sys, "path", list(sys.path))  # main() puts --src first
    with pytest.raises(Timing):
        mod.main(["--datasets", "wdbc"])
    assert mod.DATA is None


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
