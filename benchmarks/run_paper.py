"""One paper's study, end to end: run it (resumably), keep its digest under ``benchmarks/results/``
and regenerate its page under ``docs/`` from that digest (docs/papers.md).

    python benchmarks/run_paper.py paper002 --data-dir DIR --jobs 2       # the paper's protocol
    python benchmarks/run_paper.py paper004 --reduced                     # the small version
    python benchmarks/run_paper.py paper004 --data-dir DIR --datasets semeion isolet   # these first

``--datasets`` runs only those data sets' cells, in that order and split by split (every row of
split 0, then split 1, ...); the digest and the page still count every planned cell, so they say
how far the run got. The run goes to ``results/<study>`` (``--out``); interrupted, the same
command resumes it. The
page is the study's ``docs/`` page (:data:`PAGES`); only the part between its ``paper-report``
markers is rewritten, the hand-written reading around it stays. ``tests/experiments`` checks that
every committed page equals what its committed digest renders.

Resuming on another machine: the finished cells are also kept in a committed *cell archive*,
``benchmarks/results/<study>.cells/<dataset>.jsonl.gz`` (:mod:`fsframe.evaluation.archive`; one
sorted line per cell, without its split indices, which a restore re-derives and checks against a
stored hash). A run first restores the archive into ``--out`` (cells already there win), then
rewrites the files of the data sets it runs every ``--archive-minutes`` minutes (atomically) and at
its end, so a killed run loses at most that much work. ``--no-archive`` does neither; a ``--reduced``
run keeps an archive only with ``--archive DIR``.

A ``--reduced`` run writes its digest and page into its results folder (``digest.json``,
``paper.md``), not over the committed full ones, unless ``--digest`` / ``--page`` say where; a
reduced digest is never written over a full one (an :class:`~fsframe.errors.InvalidOptionError`)
without ``--overwrite-full``, neither at ``--digest`` nor in ``--out``; and no reduced run writes into a
results folder holding a full run, nor a full run into a reduced one's (an InvalidOptionError).

Merging runs: processes that ran disjoint ``--datasets`` into different ``--out`` folders are folded
into one digest, page and archive, computing nothing::

    python benchmarks/run_paper.py paper001 --data-dir DIR --merge results/a results/b

(``--merge`` takes results folders or archive folders; the cells go into ``--out``.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"paper000": "docs/paper000-table3.md", "paper001": "docs/paper001.md", "paper002": "docs/paper002.md",
         "paper002-dual": "docs/paper002-dual.md", "paper003": "docs/paper003.md", "paper004": "docs/paper004.md"}


def main(argv=None) -> int:
    from fsframe.errors import DataFileError, InvalidOptionError
    from fsframe.evaluation.archive import merge_results, restore_archive, write_archive
    from fsframe.evaluation.experiment import run_study
    from fsframe.evaluation.paper import write_paper_report
    from fsframe.evaluation.protocols import fit_memo_info, search_memo_info
    from fsframe.evaluation.study import load_study

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", choices=sorted(PAGES))
    ap.add_argument("--data-dir", help="the data folder (default: $FSFRAME_DATA)")
    ap.add_argument("--reduced", action="store_true")
    ap.add_argument("--jobs", type=int, default=1, help="joblib processes (the machine's cores at most)")
    ap.add_argument("--out", type=Path, help="results folder (default: results/<study>[-reduced])")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--datasets", nargs="+", metavar="NAME",
                    help="run only these data sets' cells, in this order, split by split (the page counts all)")
    ap.add_argument("--merge", nargs="+", type=Path, metavar="DIR",
                    help="fold these results (or archive) folders into --out and report, computing no cell")
    ap.add_argument("--archive", type=Path, metavar="DIR",
                    help="the cell archive folder (default: benchmarks/results/<study>.cells; none with --reduced)")
    ap.add_argument("--no-archive", action="store_true", help="neither restore nor write the cell archive")
    ap.add_argument("--archive-minutes", type=float, default=10.0,
                    help="rewrite the archive of the running data sets this often (default 10)")
    ap.add_argument("--digest", type=Path, help="the digest to write (default: benchmarks/results/<study>.json; "
                                                "with --reduced, digest.json in --out)")
    ap.add_argument("--page", type=Path, help="the page to write (default: the study's docs/ page; with --reduced, "
                                              "paper.md in --out)")
    ap.add_argument("--overwrite-full", action="store_true",
                    help="let a --reduced run write its digest over a full run's digest")
    args = ap.parse_args(argv)
    if not args.archive_minutes >= 0:  # NaN too
        raise InvalidOptionError(f"--archive-minutes must be a number of minutes >= 0, got {args.archive_minutes}")
    study = load_study(args.study, data_dir=args.data_dir, reduced=args.reduced)
    out = args.out or ROOT / "results" / study.name
    digest = args.digest or (Path(out) / "digest.json" if args.reduced else
                             ROOT / "benchmarks" / "results" / f"{args.study}.json")
    page = args.page or (Path(out) / "paper.md" if args.reduced else ROOT / PAGES[args.study])
    for written in dict.fromkeys([Path(digest), Path(out) / "digest.json"]):  # the results folder's is written too
        if args.reduced and not args.overwrite_full and _is_full_digest(written):
            raise InvalidOptionError(f"{_shown(written)} is a full run's digest: a --reduced run does not write over "
                                     "it; give --out, --digest and --page elsewhere, or --overwrite-full to replace it")
    # a reduced run takes minutes: it keeps an archive only where --archive says
    archive = None if args.no_archive or (args.reduced and not args.archive) else \
        args.archive or ROOT / "benchmarks" / "results" / f"{study.name}.cells"
    if archive is not None and archive.exists() and not archive.is_dir():
        raise DataFileError(f"the cell archive {archive} is a file, not a folder: give --archive a folder")
    if archive is not None:
        got = restore_archive(study, out, archive)
        print(f"archive {archive}: {got.restored} cells restored, {got.on_disk} already in {out}"
              + (f", {got.foreign} not of this study, {got.unreadable} unreadable" if got.foreign or got.unreadable
                 else ""), file=sys.stderr)
    merged_commits = ()
    if args.merge:
        got = merge_results(study, out, args.merge)
        merged_commits = got.commits  # the code that computed the merged cells, for the digest
        print(f"merged {got.restored} cells into {out} ({got.on_disk} already there)", file=sys.stderr)
    last_saved = time.monotonic()

    def save():  # the data sets this run computes (a concurrent run of others writes theirs)
        nonlocal last_saved
        if archive is not None and (Path(out) / "manifest.json").is_file():
            write_archive(out, archive, None if args.merge else args.datasets)
        last_saved = time.monotonic()

    def progress(p):
        memo = fit_memo_info()  # this process's: a serial run's (--jobs 1) shared classifier fits
        searches = search_memo_info()  # 001's bound searches shared by the cells of criteria 1 and 2
        shared = (f"; classifier fits {memo['misses']}, shared {memo['hits']}"
                  + (f"; bound searches {searches['misses']}, shared {searches['hits']}"
                     if searches["misses"] else "")) if args.jobs == 1 else ""
        print(f"{p.done}/{p.total} {p.record.label} split {p.record.repeat}.{p.record.fold} "
              f"{p.record.total_seconds:.1f} s{shared}", file=sys.stderr, flush=True)
        if time.monotonic() - last_saved >= 60 * args.archive_minutes:
            save()

    try:
        res = run_study(study, str(out), n_jobs=args.jobs, datasets=args.datasets, progress=progress,
                        compute=not args.merge, commits=merged_commits)
    finally:
        save()
    page, _ = write_paper_report(out, page, plots=not args.no_plots)
    if Path(digest).resolve() != (Path(out) / "digest.json").resolve():
        shutil.copyfile(Path(out) / "digest.json", digest)
    write_paper_report(digest, page, plots=not args.no_plots)  # the page exactly as the committed digest renders it
    print(f"{res.n_cells} cells ({res.n_failed} failed); wrote {_shown(digest)} and {_shown(page)}"
          + ("" if archive is None else f" and the archive {_shown(archive)}"), file=sys.stderr)
    return 1 if res.interrupted else 0


def _is_full_digest(path: Path) -> bool:
    """Whether ``path`` holds the digest of a full (not ``--reduced``) run."""
    import json

    try:
        return json.loads(Path(path).read_text(encoding="utf-8")).get("reduced") is False
    except (OSError, ValueError, AttributeError):
        return False


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
