"""Resuming: a run killed mid-grid (a subprocess and SIGKILL) loses only the cells in flight; the
rerun recomputes only the missing cells (fits counted) and its table equals an uninterrupted
run's. A changed experiment file invalidates only the cells it changes; failed cells are retried."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import attrs
import pytest

from fsframe.evaluation import runner
from fsframe.evaluation.experiment import load_results, run_study
from fsframe.evaluation.study import load_study, study_from_dict

STUDY = """
[study]
name = "resume"
seeds = [0]

[protocol]
cv = 4

[[datasets]]
name = "wine"

[[methods]]
method = "l1-svm"
C = [0.1, 1, 10]
"""

# Runs a study in a child process; every fit appends a line to a log (the count of solver work)
# and sleeps, so that the parent can kill the child mid-grid.
CHILD = textwrap.dedent("""
    import sys, time
    from fsframe.evaluation import runner
    from fsframe.evaluation.experiment import run_study
    from fsframe.evaluation.study import load_study

    real = runner.fit
    def counted(*a, **k):
        with open(sys.argv[3], "a") as fh:
            fh.write("fit\\n")
        time.sleep(float(sys.argv[4]))
        return real(*a, **k)
    runner.fit = counted
    run_study(load_study(sys.argv[1]), sys.argv[2], n_jobs=1)
""")


def _child(tmp_path, out, log, delay):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "study.toml"), str(out), str(log),
                             str(delay)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _rows(res):
    return [(r.label, [(f.repeat, f.fold, f.accuracy, f.mcc, f.selected, f.n_iter, f.objective) for f in r.folds])
            for t in res.tables for r in t.results]


def test_kill_mid_grid_then_resume(tmp_path, cells, monkeypatch):
    read_cells = cells.read
    (tmp_path / "study.toml").write_text(STUDY)
    out, log = tmp_path / "run", tmp_path / "fits.log"
    proc = _child(tmp_path, out, log, 0.2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (out / "cells").is_dir() and len(list((out / "cells").glob("*.json"))) >= 4:
            break
        if proc.poll() is not None:
            pytest.fail(f"the child ended before it was killed: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    kept = read_cells(out)
    total = 3 * 4
    assert 4 <= len(kept) < total  # killed mid-grid; the finished cells survived the kill
    first_fits = len(log.read_text().splitlines())
    assert first_fits - len(kept) <= 1  # at most the cell in flight was lost

    calls = []
    real = runner.fit
    monkeypatch.setattr(runner, "fit", lambda *a, **k: calls.append(1) or real(*a, **k))
    rerun = run_study(load_study(tmp_path / "study.toml"), out)
    assert len(calls) == rerun.n_computed == total - len(kept)  # finished cells not recomputed
    assert rerun.n_skipped == len(kept)
    monkeypatch.undo()
    for k, d in kept.items():  # and left untouched
        assert read_cells(out)[k] == d

    resumed = load_results(out)
    fresh = run_study(load_study(tmp_path / "study.toml"), tmp_path / "fresh")
    assert resumed.n_finished == fresh.n_finished == total
    assert _rows(resumed) == _rows(fresh)
    strip = lambda t: [line.rsplit("|", 3)[0] for line in t.table(markdown=True).splitlines()]  # noqa: E731
    assert [strip(t) for t in resumed.tables] == [strip(t) for t in fresh.tables]


def test_changed_file_invalidates_only_changed_cells(tmp_path, monkeypatch, small_spec):
    SMALL = small_spec
    calls = []
    real = runner.fit
    monkeypatch.setattr(runner, "fit", lambda *a, **k: calls.append(k.get("method")) or real(*a, **k))
    first = run_study(study_from_dict(SMALL), tmp_path)
    assert first.n_computed == 9 and len(calls) == 9
    again = run_study(study_from_dict(SMALL), tmp_path)
    assert (again.n_skipped, again.n_computed, len(calls)) == (9, 0, 9)
    changed = {**SMALL, "methods": [{"method": "l1-svm"}, {"method": "fsv", "alpha": [0.5, 5, 20]}]}
    third = run_study(study_from_dict(changed), tmp_path)
    assert (third.n_skipped, third.n_computed) == (9, 3) and calls[9:] == ["fsv"] * 3
    seed = {**SMALL, "study": {"seeds": [4]}}
    fourth = run_study(study_from_dict(seed), tmp_path)
    assert fourth.n_computed == 9  # other splits: every cell is new


def test_failed_cells_are_retried(tmp_path, monkeypatch, small_spec, cells):
    SMALL, read_cells = small_spec, cells.read
    real = runner.fit

    def flaky(*a, **k):
        if k.get("alpha") == 5:
            raise RuntimeError("boom")
        return real(*a, **k)

    monkeypatch.setattr(runner, "fit", flaky)
    res = run_study(study_from_dict(SMALL), tmp_path)
    assert res.n_failed == 3
    failed = [d for d in read_cells(tmp_path).values() if not d["record"]["ok"]]
    assert len(failed) == 3 and all(d["record"]["error"] == "boom" for d in failed)
    monkeypatch.setattr(runner, "fit", real)
    kept = run_study(study_from_dict(SMALL), tmp_path, retry_failed=False)
    assert kept.n_computed == 0 and kept.n_failed == 3
    again = run_study(study_from_dict(SMALL), tmp_path)
    assert again.n_computed == 3 and again.n_failed == 0


def test_missing_method_on_worker_says_so(small_study):
    from fsframe.evaluation.executor import run_cell
    from fsframe.evaluation.experiment import _plan

    data, tasks, *_ = _plan(small_study)
    t = tasks[0]
    cfg = attrs.evolve(t.cfg, method="not-installed-method")
    _, rec = run_cell(runner._run_fold, 0, *data[0], t.split, cfg, False)
    assert not rec.ok and rec.error_type == "UnknownComponentError"
    assert "not-installed-method" in rec.error and "not installed on worker" in rec.error and "pip install" in rec.error


def test_interrupted_manifest_and_temp_files(tmp_path, small_spec):
    SMALL = small_spec
    (tmp_path / "cells").mkdir()
    (tmp_path / "cells" / ".tmp-abc-1").write_text("{half")
    res = run_study(study_from_dict(SMALL), tmp_path)
    assert not list((tmp_path / "cells").glob(".tmp-*"))
    assert res.manifest["finished"] and res.manifest["interrupted"] is False
    assert Path(tmp_path / "study.toml").read_text() == ""  # the text given (none here)


def test_changed_fit_option_recomputes_exactly_those_cells(tmp_path, monkeypatch, small_spec):
    """A fit option (``time_limit``, ``backend_options``, ...) is part of a cell's identity: a
    rerun with one added to one [[methods]] entry recomputes that entry's cells and no other."""
    calls = []
    real = runner.fit
    monkeypatch.setattr(runner, "fit", lambda *a, **k: calls.append((k.get("method"), k.get("time_limit"))) or
                        real(*a, **k))
    first = run_study(study_from_dict(small_spec), tmp_path)
    assert first.n_computed == 9 and len(calls) == 9
    changed = {**small_spec, "methods": [{"method": "l1-svm", "time_limit": 600.0},
                                         {"method": "fsv", "alpha": [0.5, 5]}]}
    second = run_study(study_from_dict(changed), tmp_path)
    assert (second.n_skipped, second.n_computed) == (6, 3)
    assert calls[9:] == [("l1-svm", 600.0)] * 3
    options = [r.fit_options for t in second.tables for r in t.results if r.method == "l1-svm"]
    assert options == [{"time_limit": 600.0}]


def test_a_cell_write_interrupted_mid_dump_leaves_no_cell_file(tmp_path, monkeypatch):
    """Cells are written to a temporary file and renamed: a write that dies mid-dump (disk full,
    Ctrl-C) leaves no cell file, or the previous one intact, never half a file a rerun would
    have to discard; the failed write's temporary file is removed."""
    import json

    from fsframe.evaluation.cells import CellStore, record_to_json
    from fsframe.evaluation.records import FoldRecord

    def cell(key, ok):  # a real cell's content (a record that loads), large enough to cut mid-dump
        rec = FoldRecord(label="fsv", repeat=0, fold=1, n_train=9, n_test=1, ok=ok, accuracy=1.0 if ok else None,
                         n_selected=2, selected=tuple(range(50)) if ok else ())
        return record_to_json(rec, {"key": key})

    store = CellStore(tmp_path)
    good = cell("k1", True)
    store.write("k1", good)
    real = json.dump

    def dies_half_way(obj, fh, **kw):
        text = json.dumps(obj, **kw)
        fh.write(text[: len(text) // 2])
        fh.flush()
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(json, "dump", dies_half_way)
    with pytest.raises(OSError):
        store.write("k2", cell("k2", True))
    with pytest.raises(OSError):
        store.write("k1", cell("k1", False))
    monkeypatch.setattr(json, "dump", real)
    assert not store.path("k2").exists() and store.read("k2") is None
    assert store.read("k1") == good  # the previous cell file, untouched
    assert sorted(p.name for p in store.dir.iterdir() if not p.name.startswith(".tmp-")) == ["k1.json"]
    # a failed write removes its temporary file at once (clean_temporary() at a run's start is for a
    # process killed mid-write, which cannot)
    assert not list(store.dir.glob(".tmp-*")) and store.clean_temporary() == 0


def test_every_seed_gets_its_own_splits(tmp_path, cells):
    """``seeds = [0, 1]``: each seed's cells are fitted on the splits ``make_splits`` draws with
    that seed (a table per seed), and the two seeds' splits differ."""
    import numpy as np

    from fsframe.evaluation.splits import make_splits
    from fsframe.io import load_dataset

    spec = {"study": {"name": "two-seeds", "seeds": [0, 1]}, "protocol": {"cv": 3},
            "datasets": [{"name": "wine"}], "methods": [{"method": "l1-svm"}]}
    res = run_study(study_from_dict(spec), tmp_path)
    assert res.n_cells == 6 and [t.protocol["random_state"] for t in res.tables] == [0, 1]
    y = load_dataset("wine").y
    trains = {}
    for d in cells.read(tmp_path).values():
        trains[(d["seed"], d["fold"])] = np.asarray(d["record"]["train"])
    for seed in (0, 1):
        splits, _ = make_splits(y, 3, random_state=seed)
        for s in splits:
            np.testing.assert_array_equal(np.sort(trains[(seed, s.fold)]), np.sort(s.train))
    assert any(not np.array_equal(np.sort(trains[(0, f)]), np.sort(trains[(1, f)])) for f in range(3))
    for table, seed in zip(res.tables, (0, 1)):
        folds = table.results[0].folds
        splits, _ = make_splits(y, 3, random_state=seed)
        for f, s in zip(sorted(folds, key=lambda f: f.fold), splits):
            np.testing.assert_array_equal(np.sort(f.train), np.sort(s.train))


def test_a_bumped_cell_version_recomputes_that_components_cells_only(tmp_path, monkeypatch, small_spec):
    """A component class's ``cell_version`` (a plugin bumps it when a fix changes its results) is
    part of the keys of the cells that use it: the rerun recomputes exactly those; at 0 it adds
    nothing, so the keys computed before the attribute existed still match."""
    from fsframe.method import resolve

    calls = []
    real = runner.fit
    monkeypatch.setattr(runner, "fit", lambda *a, **k: calls.append(k.get("method")) or real(*a, **k))
    first = run_study(study_from_dict(small_spec), tmp_path)
    assert first.n_computed == 9
    fsv_loop = type(resolve("fsv").loop)
    monkeypatch.setattr(fsv_loop, "cell_version", 1, raising=False)
    bumped = run_study(study_from_dict(small_spec), tmp_path)
    assert (bumped.n_skipped, bumped.n_computed) == (3, 6) and calls[9:] == ["fsv"] * 6
    monkeypatch.setattr(fsv_loop, "cell_version", 0)
    back = run_study(study_from_dict(small_spec), tmp_path)
    assert back.n_computed == 0  # the cells computed at version 0 are found again


def test_relieff_cells_carry_its_cell_version():
    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.experiment import _config_dict

    common = dict(n_features=5, scale="standard", retrain=None, retrain_C=1.0, n_columns=13, n_samples=178,
                  n_classes=3)
    relieff = _config_dict(_make_config("relieff", {"method": "relieff"}, **common))
    mrmr = _config_dict(_make_config("mrmr", {"method": "mrmr"}, **common))
    assert relieff["cell_versions"] == {"loop": 1} and "cell_versions" not in mrmr


def test_datasets_restrict_the_run_split_by_split_and_the_rest_follows(tmp_path, monkeypatch, small_spec):
    """``run_study(datasets=...)`` computes only those data sets' cells, split by split (every row
    of split 0 before any row of split 1), keeps the whole plan in the manifest, and a later run
    without it computes exactly the rest; the finished study equals an unrestricted run's."""
    from fsframe.errors import InvalidOptionError

    two = {**small_spec, "datasets": [{"name": "wine"}, {"name": "breast_cancer"}]}
    order = []
    real = runner.fit
    monkeypatch.setattr(runner, "fit", lambda *a, **k: order.append((a[0].shape, k.get("method"), k.get("alpha")))
                        or real(*a, **k))
    seen = []
    first = run_study(study_from_dict(two), tmp_path / "run", datasets=["breast_cancer"],
                      progress=lambda p: seen.append((p.done, p.total, p.run_done, p.run_total)))
    assert (first.n_cells, first.n_computed, first.n_finished) == (18, 9, 9)
    assert seen == [(j, 18, j, 9) for j in range(1, 10)]  # of the plan's 18, and this run's j of 9
    assert first.manifest["run_datasets"] == ["breast_cancer"] and len(first.manifest["cells"]) == 18
    from fsframe.evaluation.pages import write_report
    from fsframe.evaluation.paper import digest, run_status

    said = "partial: 9 of 18 cells; the last run (data sets breast_cancer) ended "
    assert run_status(digest(first)).startswith(said)
    assert said in write_report(first, plots=False).read_text()  # fsframe report's page says the same
    assert {shape[1] for shape, *_ in order} == {30}  # breast_cancer's 30 features, never wine's 13
    # split by split: the three rows (l1-svm, fsv 0.5, fsv 5) of one split, then the next split's
    rows = [(m, a) for _, m, a in order]
    assert rows == [("l1-svm", None), ("fsv", 0.5), ("fsv", 5)] * 3
    sizes = [shape[0] for shape, *_ in order]
    assert sizes[0] == sizes[1] == sizes[2]  # one split's training part for the three rows
    seen.clear()
    rest = run_study(study_from_dict(two), tmp_path / "run", progress=lambda p: seen.append((p.done, p.run_total)))
    assert (rest.n_skipped, rest.n_computed) == (9, 9)
    assert seen == [(j, None) for j in range(10, 19)]  # this run covers all that was left: no second count
    assert rest.manifest["run_datasets"] is None
    monkeypatch.undo()
    fresh = run_study(study_from_dict(two), tmp_path / "fresh")
    assert _rows(rest) == _rows(fresh)
    with pytest.raises(InvalidOptionError, match=r"\['iris'\] are not data sets of this study"):
        run_study(study_from_dict(two), tmp_path / "bad", datasets=["iris"])
    with pytest.raises(InvalidOptionError, match="non-empty list"):
        run_study(study_from_dict(two), tmp_path / "bad", datasets="wine")
    with pytest.raises(InvalidOptionError, match="non-empty list"):
        run_study(study_from_dict(two), tmp_path / "bad", datasets=3)
