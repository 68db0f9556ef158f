"""What the benchmark scripts of the data-folder rule (docs/performance.md) do with the folder once
they have it, measured nowhere: every measuring function is replaced by a recorder, every path the
scripts write (``ROOT``, ``OUT``, ``DOC``) points into ``tmp_path``, so nothing under
``benchmarks/results/`` or ``docs/`` is touched.

* ``competitors.py``: a folder that does not exist, or holds none of its data files, stops the run
  with status 2 before anything is written (the old JSON and doc section stay byte for byte); with
  Sonar in the folder its normal path runs Sonar's cells on that file and lists the others as
  skipped.
* the scripts whose data part is optional (``bench_tuning.py``, ``bench_mpm.py``,
  ``bench_issue19.py``, ``bench_em_selection_changes.py``): without a folder, one line on stderr
  and the part skipped; with the file, the part reads it. ``bench_issue19.py`` keeps a skipped
  part's values and stamps, ``bench_mpm.py`` too (each (a) size a part of its own);
  ``bench_tuning.py`` says nothing when no part reads a file.
"""

from __future__ import annotations

import json

import pytest

SKIP_LINE = "no data folder is set: give one with --data-dir DIR"
SONAR = "".join(f"{i}.0,{(i * 7) % 5}.5,{(i * 3) % 4}.25,{'RM'[i % 2]}\n" for i in range(12))  # a 12 x 3 stand-in


@pytest.fixture
def no_folder(monkeypatch):
    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)


def _sonar_folder(tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "sonar.csv").write_text(SONAR)
    return folder


# --------------------------------------------------------------------------- competitors.py
@pytest.fixture
def competitors(load_script, tmp_path, monkeypatch):
    mod = load_script("benchmarks/competitors.py", "bench_competitors_runs")
    monkeypatch.setattr(mod, "ROOT", tmp_path / "root")
    monkeypatch.setattr(mod, "DOC", tmp_path / "root" / "docs" / "performance.md")
    mod.DOC.parent.mkdir(parents=True)
    mod.DOC.write_text(f"# Performance\n\n{mod.HEADING}\n\n{mod.BEGIN}\nthe last run's tables\n{mod.END}\n")
    return mod


def test_competitors_stops_before_writing_when_its_folder_is_a_typo_or_holds_none_of_its_files(
        competitors, tmp_path, monkeypatch, capsys):
    """The review's reproduction: ``$FSFRAME_DATA`` naming a folder that is not there ran every data
    set as "skipped", exited 0 and rewrote ``competitors.json`` and the doc section. Now status 2,
    and both files are left as they were; an existing but empty folder likewise."""
    out = competitors.ROOT / "benchmarks" / "results" / "competitors.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps({"format": competitors.STORE_FORMAT, "skipped_datasets": {}, "env": {"date": "old"}}))
    before = (out.read_text(), competitors.DOC.read_text())
    monkeypatch.delenv("FSFRAME_SHARED_DATA", raising=False)
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "typo"))
    with pytest.raises(SystemExit) as exc:
        competitors.main([])
    assert exc.value.code == 2
    assert f"the data folder {tmp_path / 'typo'} (from $FSFRAME_DATA) is not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit) as exc:
        competitors.main(["--data-dir", str(tmp_path / "empty"), "--datasets", "sonar", "colon"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert f"none of the data sets' files (sonar.csv, colon.mat) is in the data folder {tmp_path / 'empty'}" in err
    assert (out.read_text(), competitors.DOC.read_text()) == before


def test_competitors_normal_run_measures_the_sets_whose_file_is_in_the_folder(competitors, tmp_path, monkeypatch,
                                                                               no_folder):
    """The path without ``--profile``: Sonar's cells run on the folder's ``sonar.csv`` (the cells
    themselves recorded, not run), the three others are listed as skipped in the JSON, the profile
    is taken because Sonar is there, and the doc section is rewritten from the store."""
    folder = _sonar_folder(tmp_path)
    cells, profiled = [], []
    monkeypatch.setattr(competitors, "run_dataset_cells",
                        lambda store, name, path, methods, grid, splits, save=None: cells.append((name, path)) or 0)
    monkeypatch.setattr(competitors, "_safe_profile", lambda: profiled.append(competitors.DATA) or {"stand-in": 1})
    monkeypatch.setattr(competitors, "markdown", lambda store: f"skipped: {sorted(store['skipped_datasets'])}")
    assert competitors.main(["--data-dir", str(folder), "--methods", "em-l0"]) == 0
    assert cells == [("sonar", folder / "sonar.csv")] and profiled == [folder]
    store = json.loads((competitors.ROOT / "benchmarks" / "results" / "competitors.json").read_text())
    assert sorted(store["skipped_datasets"]) == ["colon", "prostate", "spambase"]
    assert "skipped: ['colon', 'prostate', 'spambase']" in competitors.DOC.read_text()
    assert "the last run's tables" not in competitors.DOC.read_text()


# --------------------------------------------------------------------------- bench_issue19.py
@pytest.fixture
def issue19(load_script, tmp_path, monkeypatch):
    mod = load_script("benchmarks/bench_issue19.py", "bench_issue19_runs")
    import bench_mpm  # the module bench_issue19.main imports (its directory is on sys.path now)

    calls = {"a": [], "d": []}
    monkeypatch.setattr(mod, "OUT", tmp_path / "issue19.json")
    monkeypatch.setattr(mod, "markdown", lambda res: "")
    monkeypatch.setattr(mod, "readme_job", lambda reps: {"measured": "b"})
    monkeypatch.setattr(mod, "mpm_dca", lambda sizes: [{"measured": "c"}])
    monkeypatch.setattr(mod, "em_sonar", lambda reps, splits: calls["a"].append(mod.competitors.DATA) or {"new": "a"})
    monkeypatch.setattr(bench_mpm, "bench_sonar", lambda reps: calls["d"].append(bench_mpm.sonar()) or {"new": "d"})
    old_stamp = {k: {"date": f"2026-01-0{i + 1}", "commit": f"old{k}"} for i, k in enumerate("abcd")}
    mod.OUT.write_text(json.dumps({"meta": {"date": "2026-01-01", "commit": "olda", "parts": old_stamp},
                                   "em_sonar": {"old": "a"}, "readme_job": {"old": "b"}, "mpm_dca": [{"old": "c"}],
                                   "sonar_l1_mpm": {"old": "d"}}))
    return mod, calls, old_stamp


def test_issue19_without_sonar_keeps_the_sonar_parts_and_their_stamps(issue19, no_folder, capsys):
    """A default run (all four parts) without a data folder: (b) and (c) are measured and
    restamped; (a) and (d) are skipped, their values and their date and commit are the JSON's."""
    mod, calls, old_stamp = issue19
    assert mod.main([]) == 0
    assert SKIP_LINE in capsys.readouterr().err
    res = json.loads(mod.OUT.read_text())
    assert calls == {"a": [], "d": []}
    assert res["em_sonar"] == {"old": "a"} and res["sonar_l1_mpm"] == {"old": "d"}
    assert res["readme_job"] == {"measured": "b"} and res["mpm_dca"] == [{"measured": "c"}]
    parts = res["meta"]["parts"]
    assert parts["a"] == old_stamp["a"] and parts["d"] == old_stamp["d"]
    assert parts["b"]["date"] != old_stamp["b"]["date"] and parts["c"]["date"] == parts["b"]["date"]


def test_issue19_with_sonar_measures_its_parts_on_the_folders_file(issue19, tmp_path, no_folder, capsys):
    mod, calls, old_stamp = issue19
    folder = _sonar_folder(tmp_path)
    assert mod.main(["--parts", "a,d", "--data-dir", str(folder)]) == 0
    assert capsys.readouterr().err == ""
    assert calls["a"] == [folder]
    ((X, y),) = calls["d"]  # bench_mpm.sonar() read the stand-in: 12 x 3, labels +-1
    assert X.shape == (12, 3) and sorted(set(y)) == [-1.0, 1.0]
    res = json.loads(mod.OUT.read_text())
    assert res["em_sonar"] == {"new": "a"} and res["sonar_l1_mpm"] == {"new": "d"}
    assert res["readme_job"] == {"old": "b"} and res["meta"]["parts"]["b"] == old_stamp["b"]
    assert res["meta"]["parts"]["a"]["date"] != old_stamp["a"]["date"]


# --------------------------------------------------------------------------- bench_tuning.py
@pytest.fixture
def tuning(load_script, tmp_path, monkeypatch):
    """bench_tuning with ``run`` replaced by one that loads the data sets as the real one does
    (its ``datasets``), with ``fsframe.load_dataset`` recording what it is asked to read."""
    import fsframe

    mod = load_script("benchmarks/bench_tuning.py", "bench_tuning_runs")
    monkeypatch.setattr(mod, "ROOT", tmp_path / "root")
    (mod.ROOT / "benchmarks" / "results").mkdir(parents=True)
    monkeypatch.setattr(fsframe, "load_dataset", lambda source, **kw: f"read {source}")
    monkeypatch.setattr(mod, "run", lambda splits, tuners, names: {"data": mod.datasets(names), "splits": splits,
                                                                   "skipped": []})
    monkeypatch.setattr(mod, "render", lambda res: json.dumps(res["data"]))
    return mod


def test_tuning_reads_colon_from_the_folder_and_skips_it_with_one_line_without(tuning, tmp_path, no_folder, capsys):
    assert tuning.main(["--quick"]) == 0
    out, err = capsys.readouterr()
    assert SKIP_LINE in err and err.endswith(" holding colon.mat; the parts that read it are skipped\n")
    assert err.count("\n") == 1
    assert json.loads(out) == {"breast_cancer": "read breast_cancer", "colon": None}
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "colon.mat").write_bytes(b"stand-in")
    assert tuning.main(["--quick", "--data-dir", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["colon"] == f"read {folder / 'colon.mat'}"


def test_tuning_says_nothing_about_colon_when_no_part_reads_it(tuning, no_folder, capsys):
    """``--datasets breast_cancer`` and ``--render`` read no file: no "skipped" line."""
    assert tuning.main(["--quick", "--datasets", "breast_cancer"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out) == {"breast_cancer": "read breast_cancer"}
    assert tuning.main(["--quick", "--render"]) == 0  # from the JSON the run above wrote
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- bench_mpm.py, bench_em_selection_changes.py
def test_mpm_part_b_reads_the_folders_sonar_and_is_skipped_with_one_line_without(load_script, tmp_path, monkeypatch,
                                                                                  no_folder, capsys):
    mod = load_script("benchmarks/bench_mpm.py", "bench_mpm_runs")
    monkeypatch.setattr(mod, "ROOT", tmp_path / "root")
    monkeypatch.setattr(mod, "bench_dca", lambda sizes, reps, save: save([]))
    monkeypatch.setattr(mod, "markdown", lambda res, source: "")
    read = []
    monkeypatch.setattr(mod, "bench_sonar", lambda reps: read.append(mod.sonar()))
    mod.main(["--quick"])
    assert read == [None] and SKIP_LINE in capsys.readouterr().err
    mod.main(["--quick", "--data-dir", str(_sonar_folder(tmp_path))])
    assert capsys.readouterr().err == "" and read[1][0].shape == (12, 3)


@pytest.fixture
def mpm_runs(load_script, tmp_path, monkeypatch):
    """bench_mpm with ``ROOT`` in ``tmp_path``, a results file of the layout before per-part stamps
    there (one ``meta``; (b) and (a) rows at n = 500 and 1 000), (a) replaced by one row per size
    asked for (``{"n", "run"}``) and (b), when Sonar is found, by ``{"run"}``: nothing is solved."""
    mod = load_script("benchmarks/bench_mpm.py", "bench_mpm_merge")
    monkeypatch.setattr(mod, "ROOT", tmp_path / "root")
    out = mod.ROOT / "benchmarks" / "results" / "mpm.json"
    out.parent.mkdir(parents=True)
    old_meta = {"date": "2026-11-26", "python": "3.11.7", "ecos": "2.0.14", "clarabel": "0.11.1", "cvxpy": "1.9.3",
                "cpus": 2, "load": "9.3 / 8.9 / 6.9", "reps": 3, "sonar_reps": 15, "argv": []}
    out.write_text(json.dumps({"meta": old_meta, "sonar": {"run": "old"},
                               "dca": [{"n": 500, "run": "old"}, {"n": 1000, "run": "old"}]}))
    run = {"run": 0}  # which run this is: the test counts
    monkeypatch.setattr(mod, "bench_dca", lambda sizes, reps, save: save([{"n": n, **run} for n in sizes]))
    monkeypatch.setattr(mod, "bench_sonar", lambda reps: mod.sonar() and {**run})
    monkeypatch.setattr(mod, "markdown", lambda res, source: "")
    return mod, out, old_meta, run


def test_mpm_run_keeps_the_parts_it_did_not_measure_each_with_its_own_stamp(mpm_runs, tmp_path, no_folder, capsys):
    """A run without Sonar once wrote ``"sonar": null`` over (b), and a run of some sizes dropped the
    others' rows, under one stamp for the file. Now each part keeps the stamp of the run that
    measured it, and the tables' first line names which part was measured when."""
    mod, out, old_meta, run = mpm_runs
    run["run"] = 1
    mod.main(["--sizes", "500", "--reps", "1"])  # no data folder: (b) not measured
    assert SKIP_LINE in capsys.readouterr().err
    res = json.loads(out.read_text())
    first = res["last_run"]
    assert res["format"] == mod.FORMAT and first["argv"] == ["--sizes", "500", "--reps", "1"]
    assert first["date"] != old_meta["date"] and first["commit"]
    assert res["sonar"] == {"run": "old", "measured": old_meta}
    assert res["dca"] == [{"n": 500, "run": 1, "measured": first}, {"n": 1000, "run": "old", "measured": old_meta}]
    when = mod.measured_when(res)
    assert when.startswith(f"(a) n = 500 on {first['date']} at `{first['commit']}`, arguments `--sizes 500 --reps 1` (")
    assert "; (a) n = 1000 and (b) on 2026-11-26 (Python 3.11.7" in when

    run["run"] = 2
    mod.main(["--sizes", "1000,2000", "--reps", "1", "--data-dir", str(_sonar_folder(tmp_path))])
    res = json.loads(out.read_text())
    second = res["last_run"]
    assert second != first and res["sonar"] == {"run": 2, "measured": second}
    assert res["dca"] == [{"n": 500, "run": 1, "measured": first}, {"n": 1000, "run": 2, "measured": second},
                          {"n": 2000, "run": 2, "measured": second}]
    assert mod.measured_when(res).count(" on ") == 2 and "(a) n = 1000, 2000 and (b) on " in mod.measured_when(res)


def test_mpm_tables_name_the_file_the_run_wrote(load_script, tmp_path, monkeypatch, no_folder):
    """A ``--quick`` run writes ``mpm-quick.json``, and its tables named ``mpm.json`` as their raw data."""
    mod = load_script("benchmarks/bench_mpm.py", "bench_mpm_source")
    assert "Raw data: `benchmarks/results/mpm-quick.json`." in mod.markdown({}, "benchmarks/results/mpm-quick.json")
    monkeypatch.setattr(mod, "ROOT", tmp_path / "root")
    monkeypatch.setattr(mod, "bench_dca", lambda sizes, reps, save: save([]))
    monkeypatch.setattr(mod, "bench_sonar", lambda reps: None)
    tables = []
    monkeypatch.setattr(mod, "markdown", lambda res, source: tables.append(source) or "")
    mod.main(["--quick"])
    mod.main(["--sizes", "500", "--reps", "1"])
    assert tables == ["benchmarks/results/mpm-quick.json", "benchmarks/results/mpm.json"]
    assert all((mod.ROOT / name).is_file() for name in tables)
    report = str(mod.ROOT / "benchmarks" / "results" / "mpm-quick.json")
    mod.main(["--report", report])
    assert tables[-1] == report


def test_mpm_merge_changes_neither_input(load_script):
    mod = load_script("benchmarks/bench_mpm.py", "bench_mpm_pure")
    old = {"format": mod.FORMAT, "last_run": {"date": "a"}, "sonar": {"x": 1, "measured": {"date": "a"}},
           "dca": [{"n": 1, "measured": {"date": "a"}}]}
    rows = [{"n": 1, "y": 2}]
    before = json.dumps([old, rows])
    res = mod.merged(old, {"date": "b"}, {"x": 3}, rows)
    assert json.dumps([old, rows]) == before
    assert res["dca"] == [{"n": 1, "y": 2, "measured": {"date": "b"}}]
    assert res["sonar"] == {"x": 3, "measured": {"date": "b"}}


def test_selection_changes_reads_the_folders_sonar_and_skips_its_splits_with_one_line_without(
        load_script, tmp_path, monkeypatch, no_folder, capsys):
    mod = load_script("benchmarks/bench_em_selection_changes.py", "bench_selection_changes_runs")
    monkeypatch.setattr(mod, "OUT", tmp_path / "out.json")
    monkeypatch.setattr(mod, "markdown", lambda rows: "")
    seen = []
    monkeypatch.setattr(mod, "measure", lambda splits, generated: seen.append(mod.competitors.find_data("sonar")) or [])
    assert mod.main(["--splits", "1", "--generated", "0"]) == 0
    assert seen == [None] and SKIP_LINE in capsys.readouterr().err
    folder = _sonar_folder(tmp_path)
    assert mod.main(["--splits", "1", "--generated", "0", "--data-dir", str(folder)]) == 0
    assert capsys.readouterr().err == "" and seen[1] == folder / "sonar.csv"
