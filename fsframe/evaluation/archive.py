"""Cell archives: a study's finished cells in a form small and stable enough to commit, restored
into a results folder on another machine (docs/papers.md, "Resuming on a new machine").

An archive is a folder (``benchmarks/results/<study>.cells/``) with one file per data set,
``<dataset>.jsonl.gz``: one line per finished cell (failed ones included), sorted by cell key,
each the cell file's JSON with sorted keys, gzip-compressed with a zero timestamp, so that the
same cells give the same bytes and an unchanged archive does not change in git. A run of some
data sets rewrites only their files: processes running disjoint ``--datasets`` never write the
same file. A rewrite replaces the lines of the cells the run holds and keeps every other line
(cells of another study sharing the folder, or lines a restore skipped), so nothing archived is
lost by a run that does not plan it.

A line drops the cell's split indices (``record.train`` and ``record.test``, about half a cell)
and keeps ``split_sha``, a hash of them; :func:`restore_archive` re-derives both from the study's
split definition (its seed and protocol, on its data), takes them only if their hash is the
stored one, and writes the cell file with the content the run wrote (JSON keys sorted).

What a restore does with a line:

- a line whose key is a planned cell whose file exists: skipped, the cell on disk wins, unless it
  failed and the line's cell did not (a finished cell replaces a failed one);
- a line that is not JSON or not a loadable cell record: skipped with a ``RuntimeWarning`` (the
  cell is then recomputed, as for an unreadable cell file);
- a key the study does not plan (another study, or cells of code whose keys have changed): skipped,
  one ``RuntimeWarning`` per file with their number (the line stays in the archive);
- a planned key whose data set, seed, label or split differs from the plan, or whose re-derived
  split indices do not have the stored hash: :class:`~fsframe.errors.DataFileError` (the split
  definition changed without the key changing: restoring would attach the cell to other samples);
- an archive file that is not gzip: :class:`~fsframe.errors.DataFileError`.

A rewrite goes through a temporary file (``.tmp-<file>-<pid>``, then renamed): one an interrupted
rewrite left is never read (a restore reads no file whose name starts with a dot) and is removed by
the next rewrite of its data set's file. A file whose cells are unchanged is not rewritten (its
content compared decompressed: the same cells gzip-compressed elsewhere keep their bytes).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
import re
import time
import warnings
import zlib
from pathlib import Path
from typing import Iterable

import attrs
import numpy as np

from ..errors import DataFileError
from .cells import CellStore, record_from_json
from .experiment import _plan, check_results_folder
from .manifest import manifest_commits, read_manifest

__all__ = ["DROPPED", "ArchiveReport", "archive_line", "split_sha", "write_archive", "restore_archive",
           "merge_results"]

DROPPED = ("train", "test")
"""Record fields an archive line leaves out (re-derived on restore)."""

_SUFFIX = ".jsonl.gz"
_CELL_META = ("dataset", "seed", "label", "repeat", "fold")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@attrs.frozen
class ArchiveReport:
    """What :func:`restore_archive` or :func:`merge_results` did: cells ``restored`` (written),
    found ``on_disk`` (kept), ``foreign`` (keys not planned) and ``unreadable`` lines skipped;
    ``commits``, the source commits the manifests of merged results folders name (the code that
    computed their cells, which cells written before cell files named their commit do not say)."""

    restored: int = 0
    on_disk: int = 0
    foreign: int = 0
    unreadable: int = 0
    commits: tuple = ()

    def __add__(self, other: "ArchiveReport") -> "ArchiveReport":
        return ArchiveReport(*(getattr(self, f.name) + getattr(other, f.name) for f in attrs.fields(ArchiveReport)))


def split_sha(train, test) -> str:
    """SHA-256 (16 hex characters) of a cell's training and test indices."""
    h = hashlib.sha256(np.asarray(train, dtype=np.int64).tobytes())
    h.update(b"|")
    h.update(np.asarray(test, dtype=np.int64).tobytes())
    return h.hexdigest()[:16]


def archive_line(cell: dict) -> str:
    """A cell file's content as one archive line: without its split indices, with their hash."""
    rec = {k: v for k, v in cell["record"].items() if k not in DROPPED}
    line = {**cell, "record": rec, "split_sha": split_sha(cell["record"]["train"], cell["record"]["test"])}
    return json.dumps(line, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _file_name(dataset: str) -> str:
    return _SAFE.sub("_", dataset) + _SUFFIX


def write_archive(results: str | os.PathLike, directory: str | os.PathLike,
                  datasets: Iterable[str] | None = None) -> dict[str, int]:
    """Write the finished cells of the results folder ``results`` (those its manifest plans) into
    the archive folder ``directory``, one file per data set (only ``datasets``' with it), each
    atomically and only if its bytes change; returns ``{dataset: cells archived}``."""
    results, directory = Path(results), Path(directory)
    manifest = read_manifest(results)
    store = CellStore(results)
    by_dataset: dict[str, list[str]] = {}
    for key, meta in manifest["cells"].items():
        by_dataset.setdefault(meta["dataset"], []).append(key)
    _check_file_names(by_dataset)
    chosen = list(by_dataset) if datasets is None else [d for d in datasets if d in by_dataset]
    counts = {}
    for ds in chosen:
        cells = store.finished(sorted(by_dataset[ds]), retry_failed=False)
        counts[ds] = len(cells)
        if not cells:
            continue
        lines = {**_kept_lines(directory / _file_name(ds)), **{k: archive_line(c) for k, c in cells.items()}}
        _replace(directory / _file_name(ds), "".join(lines[k] + "\n" for k in sorted(lines)).encode("utf-8"))
    return counts


def _check_file_names(datasets: Iterable[str]) -> None:
    """A :class:`~fsframe.errors.DataFileError` if two data sets would share an archive file (names
    equal once unsafe characters are replaced and case is ignored, as some file systems do)."""
    seen: dict[str, str] = {}
    for ds in datasets:
        other = seen.setdefault(_file_name(ds).casefold(), ds)
        if other != ds:
            raise DataFileError(f"data sets {other!r} and {ds!r} would share the cell archive file "
                                f"{_file_name(ds)!r}: rename one of them")


def _kept_lines(path: Path) -> dict[str, str]:
    """``{key: line}`` of the archive file ``path`` (none if absent): a rewrite keeps the lines of
    cells the writing run does not hold (another study's, or ones a restore skipped), replacing only
    the cells it has; lines without a key are dropped (a restore warned about them)."""
    if not path.is_file():
        return {}
    kept = {}
    for line in _read_lines(path):
        try:
            key = json.loads(line)["key"]
        except (ValueError, KeyError, TypeError):
            continue
        if isinstance(key, str):
            kept[key] = line
    return kept


def _replace(path: Path, text: bytes) -> None:
    """Write ``text`` gzip-compressed (zero timestamp) to ``path`` atomically, unless ``path`` holds
    it already (compared decompressed); first remove the temporary files of ``path`` that an
    interrupted rewrite left (see :func:`_left_over`)."""
    try:
        for stale in path.parent.glob(f".tmp-{glob.escape(path.name)}-*"):
            if _left_over(stale):
                stale.unlink(missing_ok=True)
        if path.is_file() and _decompressed(path) == text:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}-{os.getpid()}")
        with open(tmp, "wb") as fh:
            fh.write(gzip.compress(text, compresslevel=9, mtime=0))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        raise DataFileError(f"cannot write the cell archive {path}: {exc.strerror or exc}") from exc


#: A temporary archive file older than this (seconds) is an interrupted rewrite's whatever its pid
#: (a rewrite takes seconds; the pid may have been reused, or be another machine's).
STALE_SECONDS = 3600.0


def _left_over(tmp: Path) -> bool:
    """Whether the temporary file ``tmp`` (``.tmp-<file>-<pid>``) was left by an interrupted
    rewrite: its process is gone, or it is older than :data:`STALE_SECONDS`. A live process's is
    in flight (two runs may rewrite the same file: the last one's content stays) and is kept; so is
    a name without a pid, which this module never writes."""
    pid = tmp.name.rpartition("-")[2]
    if not pid.isdigit():
        return False
    try:
        if time.time() - tmp.stat().st_mtime > STALE_SECONDS:
            return True
    except FileNotFoundError:  # its rewrite just ended
        return False
    try:
        os.kill(int(pid), 0)
    except PermissionError:  # alive, another user's
        return False
    except (ProcessLookupError, OverflowError):  # gone; no such pid
        return True
    return False


def _decompressed(path: Path) -> bytes | None:
    """The decompressed content of the archive file ``path``, ``None`` if it is not gzip."""
    try:
        return gzip.decompress(path.read_bytes())
    except (EOFError, zlib.error, gzip.BadGzipFile):
        return None


def _plan_splits(study) -> dict[str, tuple[dict, object]]:
    """``{key: (cell meta, split)}`` of every cell ``study`` plans."""
    _, tasks, metas, _ = _plan(study)
    return {m["key"]: (m, t.split) for m, t in zip(metas, tasks)}


def _read_lines(path: Path) -> list[str]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return fh.read().splitlines()
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise DataFileError(f"cell archive {path} is not a readable gzip file ({exc}): restore it from git or "
                            "move it away (its cells are then recomputed)") from None


def _restore_lines(lines: Iterable[str], where: str, plan: dict, store: CellStore) -> ArchiveReport:
    restored = on_disk = foreign = unreadable = 0
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            key, rec, sha = d["key"], d["record"], d.pop("split_sha")
            if not isinstance(rec, dict) or not isinstance(key, str):
                raise TypeError("no cell record")
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            _warn(f"{where}, line {n}, is not an archived cell ({type(exc).__name__}: {exc}); skipped (the cell "
                  "is recomputed)")
            unreadable += 1
            continue
        if key not in plan:
            foreign += 1
            continue
        held = store.read(key)
        if held is not None and (held["record"].get("ok") or not rec.get("ok")):  # an OK cell replaces a failed one
            on_disk += 1
            continue
        meta, split = plan[key]
        if any(d.get(k) != meta[k] for k in _CELL_META):
            raise DataFileError(f"{where}, line {n}: cell {key} is "
                                f"{ {k: d.get(k) for k in _CELL_META} } there and "
                                f"{ {k: meta[k] for k in _CELL_META} } in the study's plan")
        if split_sha(split.train, split.test) != sha:
            raise DataFileError(f"{where}, line {n}: the split re-derived for cell {key} ({meta['dataset']}, seed "
                                f"{meta['seed']}, split {meta['repeat']}.{meta['fold']}) is not the one it ran on "
                                "(its indices' hash differs): the split definition changed while the cell key did "
                                "not; refusing to restore it")
        cell = {**d, "record": {**rec, "train": split.train.tolist(), "test": split.test.tolist()}}
        try:
            record_from_json(cell)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            _warn(f"{where}, line {n}: cell {key}'s record does not load ({type(exc).__name__}: {exc}); skipped "
                  "(the cell is recomputed)")
            unreadable += 1
            continue
        store.write(key, cell)
        restored += 1
    if foreign:
        _warn(f"{where}: {foreign} cells are not cells of this study's plan (another study, or cells of code whose "
              "cell keys have changed); skipped here and kept in the archive")
    return ArchiveReport(restored, on_disk, foreign, unreadable)


def _warn(text: str) -> None:
    warnings.warn(text, RuntimeWarning, stacklevel=4)


def restore_archive(study, results: str | os.PathLike, directory: str | os.PathLike, *,
                    plan: dict | None = None) -> ArchiveReport:
    """Write the archived cells of ``study`` in the archive folder ``directory`` into the results
    folder ``results`` (created if absent), re-deriving their split indices; a cell whose file
    exists there is kept. A missing archive folder restores nothing; a results folder holding
    a run of the other of full and reduced is refused (:func:`~fsframe.evaluation.experiment.check_results_folder`)."""
    check_results_folder(study, results)
    directory = Path(directory)
    store = CellStore(results)
    files = _archive_files(directory)
    report = ArchiveReport()
    if not files:
        return report
    plan = _plan_splits(study) if plan is None else plan
    for path in files:
        report += _restore_lines(_read_lines(path), f"cell archive {path}", plan, store)
    return report


def _archive_files(directory: Path) -> list[Path]:
    """The archive files of ``directory``, sorted; never a temporary one (a name starting with a
    dot: an interrupted rewrite's)."""
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob(f"*{_SUFFIX}") if not p.name.startswith("."))


def merge_results(study, results: str | os.PathLike, sources: Iterable[str | os.PathLike]) -> ArchiveReport:
    """Fold the cells of other runs of ``study`` into the results folder ``results``: each source
    is a results folder (its ``cells/``) or an archive folder (``*.jsonl.gz``). Every cell goes
    through the checks of :func:`restore_archive` (planned key, split hash); cells already in
    ``results`` are kept (and a ``results`` holding a run of the other of full and reduced is refused). A cell keeps the commit its file names, and none if it names none: a
    manifest lists every run into its folder, also one that resumed it and computed nothing, so it
    does not say which run computed a cell. The report's ``commits`` are the commits the manifests
    of the folders that gave cells name, as "computed by one of these" (for the digest:
    ``run_study(commits=...)``)."""
    check_results_folder(study, results)
    plan = _plan_splits(study)
    store = CellStore(results)
    report = ArchiveReport()
    for src in map(Path, sources):
        if (src / "cells").is_dir():
            source = CellStore(src)
            cells = (source.read(p.stem) for p in sorted((src / "cells").glob("*.json")))
            got = _restore_lines([archive_line(d) for d in cells if d is not None], f"results folder {src}", plan,
                                 store)
            report += attrs.evolve(got, commits=tuple(manifest_commits(src)) if got.restored else ())
        elif _archive_files(src):
            report += restore_archive(study, results, src, plan=plan)
        else:
            raise DataFileError(f"{src} is neither a results folder (with cells/) nor a cell archive folder "
                                f"(with *{_SUFFIX} files)")
    return report
