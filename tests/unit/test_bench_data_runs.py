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
  part's values and stamps; ``bench_tuning.py`` says nothing when no part reads a file.
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
    monkeypatch.setattr(mod, "markdown", lambda res: "")
    read = []
    monkeypatch.setattr(mod, "bench_sonar", lambda reps: read.append(mod.sonar()))
    mod.main(["--quick"])
    assert read == [None] and SKIP_LINE in capsys.readouterr().err
    mod.main(["--quick", "--data-dir", str(_sonar_folder(tmp_path))])
    assert capsys.readouterr().err == "" and read[1][0].shape == (12, 3)


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
