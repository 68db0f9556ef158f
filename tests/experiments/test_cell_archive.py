"""The committed cell archive of ``benchmarks/run_paper.py`` (fsframe.evaluation.archive): a run
writes it, a fresh results folder restored from it holds the same cell files (split indices
re-derived and checked), a resumed run does no fit and renders the same digest, corrupt and
foreign lines are skipped with a warning, a wrong split is refused, and ``--merge`` of two
disjoint ``--datasets`` runs equals one run. On paper 003's reduced study (bundled data, two data
sets, 45 cells)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fsframe.evaluation.experiment as experiment
from fsframe.errors import DataFileError, InvalidOptionError
from fsframe.evaluation.archive import archive_line, restore_archive, split_sha, write_archive
from fsframe.evaluation.cells import record_from_json
from fsframe.evaluation.study import load_study

ROOT = Path(__file__).resolve().parents[2]
STUDY = "paper003"
RUN_FIELDS = ("started", "finished", "wall_seconds", "engine", "run_datasets", "commits", "interrupted")


def _run_paper():
    spec = importlib.util.spec_from_file_location("run_paper", ROOT / "benchmarks" / "run_paper.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _main(tmp, name, *extra, archive=True):
    """run_paper.py on the reduced study into ``tmp/name``, its digest and page beside it."""
    args = [STUDY, "--reduced", "--data-dir", str(tmp / "no-data"), "--out", str(tmp / name), "--no-plots",
            "--digest", str(tmp / f"{name}.json"), "--page", str(tmp / f"{name}.md")]
    args += ["--archive", str(tmp / "archive")] if archive else ["--no-archive"]
    return _run_paper().main(args + list(extra))


def _study(tmp):
    return load_study(STUDY, reduced=True, data_dir=tmp / "no-data")


@pytest.fixture(scope="module")
def full(tmp_path_factory):
    """One run of the whole reduced study, with its archive."""
    tmp = tmp_path_factory.mktemp("archive")
    assert _main(tmp, "full") == 0
    return tmp


@pytest.fixture
def fits(monkeypatch):
    """The number of cells computed in this process (``--jobs 1``)."""
    count = [0]
    real = experiment.study_cell

    def counted(*a, **k):
        count[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(experiment, "study_cell", counted)
    return count


def _digest(path, *, timing=False):
    """A digest without what differs between runs of the same cells (and, ``timing``, the fits' seconds)."""
    d = json.loads(Path(path).read_text())
    for k in RUN_FIELDS:
        d.pop(k)
    if timing:
        for t in d["tables"]:
            for r in t["rows"]:
                for f in r["folds"]:
                    f.pop("seconds")
    return d


def _page(path):
    return re.sub(r"finished [^;]+; [^.]+\.", "", Path(path).read_text())


def _lines(tmp):
    return {p.name: gzip.decompress(p.read_bytes()).decode().splitlines()
            for p in sorted((tmp / "archive").glob("*.jsonl.gz"))}


def _rewrite(path, lines):
    path.write_bytes(gzip.compress("".join(line + "\n" for line in lines).encode(), mtime=0))


def test_archive_is_compact_sorted_and_has_every_cell(full, cells):
    lines = _lines(full)
    assert sorted(lines) == ["cross-planes.jsonl.gz", "wdbc.jsonl.gz"]
    found = cells.read(full / "full")
    keys = [json.loads(x)["key"] for f in lines.values() for x in f]
    assert sorted(keys) == sorted(found) and len(found) == 45
    for f in lines.values():
        assert [json.loads(x)["key"] for x in f] == sorted(json.loads(x)["key"] for x in f)
        for x in f:
            d = json.loads(x)
            rec = found[d["key"]]["record"]
            assert "train" not in d["record"] and "test" not in d["record"]
            assert d["split_sha"] == split_sha(rec["train"], rec["test"])
    # gzip with a zero timestamp: rewriting the same cells gives the same bytes
    before = {p.name: p.read_bytes() for p in (full / "archive").glob("*.jsonl.gz")}
    assert all(b[4:8] == b"\0\0\0\0" for b in before.values())
    write_archive(full / "full", full / "again")
    assert {p.name: p.read_bytes() for p in (full / "again").glob("*.jsonl.gz")} == before


def test_restored_cells_are_the_original_files(full, tmp_path, cells):
    got = restore_archive(_study(full), tmp_path / "fresh", full / "archive")
    assert (got.restored, got.on_disk, got.foreign, got.unreadable) == (45, 0, 0, 0)
    original, restored = cells.read(full / "full"), cells.read(tmp_path / "fresh")
    assert restored == original  # split indices re-derived: every field of every cell file is the run's
    for k, d in restored.items():
        a, b = record_from_json(d), record_from_json(original[k])
        assert json.dumps(a.as_dict(arrays=True), sort_keys=True) == json.dumps(b.as_dict(arrays=True), sort_keys=True)


def test_resume_from_the_archive_fits_nothing_and_renders_the_same(full, fits, cells):
    # a new machine: no results folder, only the committed archive
    assert _main(full, "resumed") == 0
    assert fits[0] == 0
    assert cells.read(full / "resumed") == cells.read(full / "full")
    assert _digest(full / "resumed.json") == _digest(full / "full.json")
    assert _page(full / "resumed.md") == _page(full / "full.md")


def test_cells_on_disk_win(full, tmp_path):
    out = tmp_path / "out"
    restore_archive(_study(full), out, full / "archive")
    p = sorted((out / "cells").glob("*.json"))[0]
    d = json.loads(p.read_text())
    d["record"]["n_iter"] = 99
    p.write_text(json.dumps(d))
    got = restore_archive(_study(full), out, full / "archive")
    assert (got.restored, got.on_disk) == (0, 45)
    assert json.loads(p.read_text())["record"]["n_iter"] == 99


def test_corrupt_and_foreign_lines_are_skipped_with_a_warning(full, tmp_path, cells):
    arch = tmp_path / "archive"
    lines = _lines(full)["wdbc.jsonl.gz"]
    broken = json.loads(lines[1])
    broken["record"]["bogus"] = 1  # not a record's field
    foreign = json.loads(lines[2])
    foreign["key"] = "0" * 24
    arch.mkdir()
    _rewrite(arch / "wdbc.jsonl.gz", [lines[0][:40], json.dumps(broken), json.dumps(foreign)] + lines[3:])
    with pytest.warns(RuntimeWarning) as caught:
        got = restore_archive(_study(full), tmp_path / "out", arch)
    assert (got.restored, got.foreign, got.unreadable) == (len(lines) - 3, 1, 2)
    text = " ".join(str(w.message) for w in caught)
    assert "line 1" in text and "line 2" in text and "1 cells are not cells of this study" in text
    # the skipped cells are recomputed by the next run
    assert len(cells.read(tmp_path / "out")) == len(lines) - 3


def test_a_wrong_split_or_cell_is_refused(full, tmp_path):
    lines = _lines(full)["wdbc.jsonl.gz"]
    for field, value in (("split_sha", "0" * 16), ("fold", 7)):
        arch = tmp_path / field
        arch.mkdir()
        d = json.loads(lines[0])
        d[field] = value
        _rewrite(arch / "wdbc.jsonl.gz", [json.dumps(d)])
        with pytest.raises(DataFileError, match="line 1"):
            restore_archive(_study(full), tmp_path / f"out-{field}", arch)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "wdbc.jsonl.gz").write_text("not gzip")
    with pytest.raises(DataFileError, match="not a readable gzip"):
        restore_archive(_study(full), tmp_path / "out-bad", tmp_path / "bad")


def test_archive_line_drops_only_the_split_indices(full, cells):
    d = next(iter(cells.read(full / "full").values()))
    line = json.loads(archive_line(d))
    assert set(line) == set(d) | {"split_sha"}
    assert set(line["record"]) == set(d["record"]) - {"train", "test"}


def test_merge_of_two_disjoint_runs_equals_one_run(full, fits, cells):
    assert _main(full, "a", "--datasets", "wdbc", archive=False) == 0
    assert _main(full, "b", "--datasets", "cross-planes", archive=False) == 0
    assert fits[0] == 45
    assert _main(full, "merged", "--merge", str(full / "a"), str(full / "b"), archive=False) == 0
    assert fits[0] == 45  # the merge computed nothing
    merged = cells.read(full / "merged")
    assert merged == {**cells.read(full / "a"), **cells.read(full / "b")} and len(merged) == 45
    # one run's cells, apart from the time the fits took
    strip = lambda cells: {k: {**d, "record": {f: v for f, v in d["record"].items()  # noqa: E731
                                               if f not in ("seconds", "total_seconds")}} for k, d in cells.items()}
    assert strip(merged) == strip(cells.read(full / "full"))
    assert _digest(full / "merged.json", timing=True) == _digest(full / "full.json", timing=True)


def test_merge_of_a_part_computes_nothing(full, fits, cells):
    if not (full / "a").is_dir():
        assert _main(full, "a", "--datasets", "wdbc", archive=False) == 0
    before = fits[0]
    assert _main(full, "part", "--merge", str(full / "a"), archive=False) == 0
    assert fits[0] == before  # the cross-planes cells stay missing: the digest counts wdbc's of 45
    part = cells.read(full / "part")
    assert part == cells.read(full / "a") and {d["dataset"] for d in part.values()} == {"wdbc"}
    d = json.loads((full / "part.json").read_text())
    assert (d["n_finished"], d["n_cells"]) == (len(part), 45)


def test_the_archive_is_written_during_the_run(tmp_path, monkeypatch):
    """``--archive-minutes 0``: rewritten after every cell, so a killed run keeps all it finished."""
    seen, real = [], experiment.study_cell

    def watched(*a, **k):  # what a kill before this cell would leave in the archive
        files = (tmp_path / "archive").glob("*.jsonl.gz")
        seen.append(sum(len(gzip.decompress(p.read_bytes()).splitlines()) for p in files))
        return real(*a, **k)

    monkeypatch.setattr(experiment, "study_cell", watched)
    args = ["paper000", "--reduced", "--data-dir", str(tmp_path / "no-data"), "--out", str(tmp_path / "out"),
            "--no-plots", "--digest", str(tmp_path / "d.json"), "--page", str(tmp_path / "p.md"),
            "--archive", str(tmp_path / "archive"), "--archive-minutes", "0"]
    assert _run_paper().main(args) == 0
    assert seen == list(range(len(seen))) and len(seen) == 12


def test_a_rewrite_keeps_the_lines_of_cells_the_run_does_not_hold(full, tmp_path):
    """Another study sharing the folder (or a line a restore skipped): its lines survive a save."""
    arch = tmp_path / "archive"
    lines = _lines(full)["wdbc.jsonl.gz"]
    other = json.loads(lines[0])
    other["key"] = "0" * 24  # a cell this study does not plan
    arch.mkdir()
    _rewrite(arch / "wdbc.jsonl.gz", [json.dumps(other, sort_keys=True, separators=(",", ":"))])
    with pytest.warns(RuntimeWarning, match="kept in the archive"):
        restore_archive(_study(full), tmp_path / "out", arch)
    write_archive(full / "full", arch)
    now = _lines(tmp_path)["wdbc.jsonl.gz"]
    assert [json.loads(x)["key"] for x in now] == sorted(["0" * 24] + [json.loads(x)["key"] for x in lines])
    assert json.loads(now[0]) == other and now[1:] == lines


def test_the_digest_names_the_commits_that_computed_restored_and_merged_cells(tmp_path, monkeypatch):
    """A run that computes nothing (a resume from the archive, a ``--merge``) still names the code
    that computed its cells: each cell file carries its commit, and the archive keeps it."""
    def run(commit, name, *extra, archive=True):
        monkeypatch.setattr(experiment, "source_commit", lambda: commit)
        args = ["paper000", "--reduced", "--data-dir", str(tmp_path / "no-data"), "--out", str(tmp_path / name),
                "--no-plots", "--digest", str(tmp_path / f"{name}.json"), "--page", str(tmp_path / f"{name}.md")]
        args += ["--archive", str(tmp_path / "archive")] if archive else ["--no-archive"]
        assert _run_paper().main(args + list(extra)) == 0
        return json.loads((tmp_path / f"{name}.json").read_text())["commits"]

    a, b, c = "a" * 40, "b" * 40, "c" * 40
    assert run(a, "computed") == [a]
    assert run(b, "resumed") == [a, b]  # a new machine, the committed archive only
    assert run(c, "part", "--datasets", "wdbc", archive=False) == [c]
    assert run(b, "merged", "--merge", str(tmp_path / "part"), archive=False) == [c, b]
    assert "at commit cccccccccccc, bbbbbbbbbbbb" in (tmp_path / "merged.md").read_text()


def test_a_finished_cell_replaces_a_failed_one(full, tmp_path):
    out = tmp_path / "out"
    restore_archive(_study(full), out, full / "archive")
    p = sorted((out / "cells").glob("*.json"))[0]
    good = json.loads(p.read_text())
    p.write_text(json.dumps({**good, "record": {**good["record"], "ok": False}}))  # a failed copy on disk
    got = restore_archive(_study(full), out, full / "archive")
    assert (got.restored, got.on_disk) == (1, 44)
    assert json.loads(p.read_text()) == good
    # and not the other way round: a failed archived cell does not replace a finished one
    arch = tmp_path / "failed"
    arch.mkdir()
    name, line = next((n, json.loads(x)) for n, f in _lines(full).items() for x in f if json.loads(x)["key"] == p.stem)
    line["record"]["ok"] = False
    _rewrite(arch / name, [json.dumps(line)])
    assert restore_archive(_study(full), out, arch).on_disk == 1
    assert json.loads(p.read_text()) == good


@pytest.mark.parametrize("names", [("a b", "a_b"), ("a/b", "a_b"), ("Wdbc", "wdbc")])
def test_data_sets_sharing_an_archive_file_are_refused(full, tmp_path, names):
    out = tmp_path / "out"
    shutil.copytree(full / "full", out)
    man = json.loads((out / "manifest.json").read_text())
    for i, meta in enumerate(man["cells"].values()):  # the study's cells under two data set names
        meta["dataset"] = names[i % 2]
    (out / "manifest.json").write_text(json.dumps(man))
    with pytest.raises(DataFileError, match="would share the cell archive file"):
        write_archive(out, tmp_path / "archive")
    assert not (tmp_path / "archive").exists()


@pytest.mark.parametrize("extra, error", [(("--archive-minutes", "nan"), InvalidOptionError),
                                          (("--archive-minutes", "-1"), InvalidOptionError),
                                          ((), DataFileError)])
def test_a_bad_archive_option_is_refused_at_start(tmp_path, fits, extra, error):
    (tmp_path / "archive").write_text("a file, not a folder")
    with pytest.raises(error, match="archive"):
        _main(tmp_path, "out", *extra)
    assert fits[0] == 0 and not (tmp_path / "out").exists()


def test_a_changed_test_index_is_refused(full, tmp_path):
    """The test half of ``split_sha``: the same training indices with other test indices are refused."""
    from types import SimpleNamespace

    from fsframe.evaluation.archive import _plan_splits

    plan = _plan_splits(_study(full))
    key = json.loads(_lines(full)["wdbc.jsonl.gz"][0])["key"]
    meta, split = plan[key]
    plan[key] = (meta, SimpleNamespace(train=split.train, test=split.test[:-1]))
    with pytest.raises(DataFileError, match=f"cell {key}"):
        restore_archive(_study(full), tmp_path / "out", full / "archive", plan=plan)


def test_a_datasets_run_rewrites_only_its_own_files(tmp_path):
    """Two ``--datasets`` runs sharing one archive: the second leaves the first one's file alone."""
    assert _main(tmp_path, "a", "--datasets", "wdbc") == 0
    wdbc = tmp_path / "archive" / "wdbc.jsonl.gz"
    text = gzip.decompress(wdbc.read_bytes())
    wdbc.write_bytes(gzip.compress(text, mtime=1))  # the same cells, other bytes: a rewrite would change them
    before = wdbc.read_bytes()
    assert _main(tmp_path, "b", "--datasets", "cross-planes") == 0
    assert wdbc.read_bytes() == before
    assert sorted(_lines(tmp_path)) == ["cross-planes.jsonl.gz", "wdbc.jsonl.gz"]


def test_a_reduced_run_keeps_off_the_full_digest_and_page(tmp_path, fits):
    """``--reduced`` writes its digest and page into its results folder by default (the committed
    full ones keep their bytes), and refuses to write over a full run's digest unless
    ``--overwrite-full`` (before computing anything). Planted (the old defaults, the committed
    digest and page): their bytes change."""
    committed = [ROOT / "benchmarks" / "results" / "paper000.json", ROOT / _run_paper().PAGES["paper000"]]
    before = [p.read_bytes() for p in committed]
    out = tmp_path / "out"
    args = ["paper000", "--reduced", "--data-dir", str(tmp_path / "no-data"), "--out", str(out), "--no-plots",
            "--no-archive"]
    try:
        assert _run_paper().main(args) == 0
    finally:
        after = [p.read_bytes() for p in committed]
        for p, b in zip(committed, before):
            p.write_bytes(b)  # (restored whatever happened: a planted run must not leave them changed)
    assert after == before
    assert json.loads((out / "digest.json").read_text())["reduced"] is True and (out / "paper.md").is_file()
    n = fits[0]
    assert n == 12
    full = tmp_path / "full.json"
    full.write_bytes(before[0])
    assert json.loads(before[0])["reduced"] is False
    with pytest.raises(InvalidOptionError, match="full run's digest.*--overwrite-full"):
        _run_paper().main(args + ["--digest", str(full), "--page", str(tmp_path / "p.md")])
    assert full.read_bytes() == before[0] and fits[0] == n and not (tmp_path / "p.md").exists()
    assert _run_paper().main(args + ["--digest", str(full), "--page", str(tmp_path / "p.md"), "--overwrite-full"]) == 0
    assert json.loads(full.read_text())["reduced"] is True and fits[0] == n  # (resumed: nothing computed)


def test_a_reduced_run_into_a_full_runs_results_folder_is_refused(full, tmp_path, fits):
    """A full run's results folder (its manifest and digest say so) given as a reduced run's
    ``--out`` with ``--digest`` elsewhere, as the full-digest error advises: refused before any
    cell is written, even with ``--overwrite-full`` (the folder's manifest is not the digest); a
    restore, a merge and ``run_study`` into it are refused the same way.
    Planted (only the ``--digest`` target checked, no folder check): the folder's digest and
    manifest are rewritten as reduced."""
    out = tmp_path / "full-results"
    shutil.copytree(full / "full", out)
    shutil.rmtree(out / "cells")
    for name, study in (("digest.json", None), ("manifest.json", STUDY)):
        d = json.loads((out / name).read_text())
        (out / name).write_text(json.dumps({**d, "reduced": False, **({"study": study} if study else {})}))
    shutil.copytree(full / "archive", tmp_path / "archive")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    args = [STUDY, "--reduced", "--data-dir", str(tmp_path / "no-data"), "--out", str(out), "--no-plots",
            "--archive", str(tmp_path / "archive"), "--digest", str(tmp_path / "d.json"), "--page", str(tmp_path / "p.md")]
    for extra in ([], ["--overwrite-full"], ["--overwrite-full", "--merge", str(full / "full")]):
        with pytest.raises(InvalidOptionError, match=f"full-results.*{STUDY}' \\(full\\)"
                           if extra else "full-results.digest.json is a full run's digest"):
            _run_paper().main(args + extra)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before and fits[0] == 0
    with pytest.raises(InvalidOptionError, match="holds a run of study 'paper003' \\(full\\), not of "
                       "'paper003-reduced' \\(reduced\\)"):
        experiment.run_study(_study(full), str(out))
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def _dead_pid():
    """The pid of a process that has ended."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_temporary_file_is_never_read_and_a_left_over_one_is_cleaned_by_the_next_rewrite(full, tmp_path):
    """A rewrite writes ``.tmp-<file>-<pid>``: a restore reads none, nor any dot file named like an
    archive file (``._wdbc.jsonl.gz``, what macOS writes beside a file on a foreign disk). The next
    rewrite of that file removes the temporary files whose process is gone or that are older than
    an hour, and keeps a live process's (in flight: removing it failed that process's rewrite).
    Planted: without the dot filter the restore reads the garbage (DataFileError); without the
    cleanup the dead process's file stays; the cleanup of every pid removes the live one."""
    arch = tmp_path / "archive"
    shutil.copytree(full / "archive", arch)
    tmp = arch / ".tmp-wdbc.jsonl.gz-"
    # a live process's written two hours ago (this one's: the unchanged file is not rewritten here)
    dead, live, old = (Path(f"{tmp}{pid}") for pid in (_dead_pid(), os.getppid(), os.getpid()))
    dot = arch / "._wdbc.jsonl.gz"
    for p in (dead, live, old, dot):
        p.write_bytes(b"half a gzip file")
    hours_ago = time.time() - 2 * 3600
    os.utime(old, (hours_ago, hours_ago))
    got = restore_archive(_study(full), tmp_path / "out", arch)
    assert (got.restored, got.unreadable) == (45, 0)
    wdbc = (arch / "wdbc.jsonl.gz").read_bytes()
    write_archive(full / "full", arch, ["wdbc"])
    assert (arch / "wdbc.jsonl.gz").read_bytes() == wdbc
    assert sorted(p.name for p in arch.iterdir()) == sorted([dot.name, live.name, "cross-planes.jsonl.gz",
                                                             "wdbc.jsonl.gz"])


def test_an_unchanged_archive_is_not_rewritten_whatever_its_gzip_header(full, tmp_path):
    """The same cells compressed with another header (a timestamp) or level: the content is
    compared decompressed, so the file keeps its bytes. Planted (compressed bytes compared): it is
    rewritten."""
    arch = tmp_path / "archive"
    shutil.copytree(full / "archive", arch)
    p = arch / "wdbc.jsonl.gz"
    other = gzip.compress(gzip.decompress(p.read_bytes()), compresslevel=1, mtime=12345)
    p.write_bytes(other)
    write_archive(full / "full", arch)
    assert p.read_bytes() == other
    _rewrite(p, _lines(full)["wdbc.jsonl.gz"][1:])  # one cell fewer: rewritten
    write_archive(full / "full", arch)
    assert gzip.decompress(p.read_bytes()).decode().splitlines() == _lines(full)["wdbc.jsonl.gz"]


def test_a_merge_carries_its_sources_commits_into_the_digest_and_stamps_no_cell(tmp_path, monkeypatch):
    """Cells whose files name no commit (written by old code, or by a run without git): a merged
    results folder's manifest names every run into it, also one that resumed it and computed
    nothing, so the digest names its commits as "computed by one of these" and no cell is given
    one. Planted (a manifest naming one commit gives it to the cells): the resumed run's commit is
    stamped on cells it did not compute; planted (the sources' manifests ignored): the digest
    names only the merging run's commit."""
    def run(commit, name, *extra):
        monkeypatch.setattr(experiment, "source_commit", lambda: commit)
        args = [STUDY, "--reduced", "--data-dir", str(tmp_path / "no-data"), "--out", str(tmp_path / name),
                "--no-plots", "--digest", str(tmp_path / f"{name}.json"), "--page", str(tmp_path / f"{name}.md")]
        assert _run_paper().main(args + list(extra)) == 0
        return json.loads((tmp_path / f"{name}.json").read_text())["commits"]

    def unnamed(name, commits):  # the cells as old code wrote them: no commit in the cell files
        for p in (tmp_path / name / "cells").glob("*.json"):
            d = json.loads(p.read_text())
            d.pop("commit")
            p.write_text(json.dumps(d))
        man = json.loads((tmp_path / name / "manifest.json").read_text())
        (tmp_path / name / "manifest.json").write_text(json.dumps({**man, "commits": commits}))

    a, b, c, m = "a" * 40, "b" * 40, "c" * 40, "f" * 40
    assert run(None, "one", "--datasets", "wdbc", "--no-archive") == []  # no git: the cells name no commit
    assert run(a, "one", "--datasets", "wdbc", "--no-archive") == [a]  # resumed: computes nothing
    run(b, "two", "--datasets", "cross-planes", "--no-archive")
    unnamed("two", [b, c])
    assert run(m, "merged", "--merge", str(tmp_path / "one"), str(tmp_path / "two"),
               "--archive", str(tmp_path / "archive")) == [a, b, c, m]
    lines = {n: [json.loads(x) for x in f] for n, f in _lines(tmp_path).items()}
    assert {d.get("commit") for n in lines for d in lines[n]} == {None}
    assert {json.loads(p.read_text()).get("commit") for p in (tmp_path / "merged" / "cells").glob("*.json")} == {None}
    assert run(m, "again", "--merge", str(tmp_path / "merged"), "--no-archive") == [a, b, c, m]
    assert {json.loads(p.read_text()).get("commit") for p in (tmp_path / "again" / "cells").glob("*.json")} == {None}


def test_run_study_reads_commits_given_as_a_generator_once(full, tmp_path, fits):
    """``run_study(commits=...)`` takes any iterable of commit names: a generator is read once, its
    commits named by the manifest. Planted (checked with ``all()`` before use): the generator is
    spent and the commits dropped."""
    shutil.copytree(full / "full", tmp_path / "out")
    d = "d" * 40
    res = experiment.run_study(_study(full), str(tmp_path / "out"), compute=False, commits=(c for c in [d]))
    assert d in res.manifest["commits"] and fits[0] == 0
