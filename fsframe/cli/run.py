"""``fsframe run STUDY`` (an experiment file, resumable) and ``fsframe report RESULTS`` (tables and
pictures rebuilt from a results folder)."""

from __future__ import annotations

import sys

from ..evaluation.experiment import load_results, run_study
from ..evaluation.pages import write_report
from ..evaluation.study import load_study
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, PROG, UsageError
from .output import ProgressPrinter


def cmd_run(args, argv) -> int:
    study = load_study(args.study, data_dir=args.data_dir, reduced=args.reduced)
    out = args.out or study.output
    prog = ProgressPrinter(sys.stderr, args.progress or "on")  # a line on a terminal, plain lines elsewhere
    try:
        res = run_study(study, out, n_jobs=args.jobs, dask=args.dask, progress=prog,
                        retry_failed=not args.keep_failed)
    finally:
        prog.close()
    return finish_run(res, markdown=args.markdown)


def finish_run(res, *, markdown: bool) -> int:
    """Print a study's tables and what happened; the exit status."""
    print(res.report(markdown=markdown))
    print(f"{res.n_cells} cells: {res.n_skipped} finished earlier (skipped), {res.n_computed} computed now; "
          f"results in {res.root} ('{PROG} report {res.root}' draws the tables and pictures)", file=sys.stderr)
    if res.interrupted:
        print(f"{PROG}: interrupted; the {res.n_finished} finished cells are kept, rerun the same command to "
              f"finish the {res.n_cells - res.n_finished} others (exit status {EXIT_INTERRUPTED})", file=sys.stderr)
        return EXIT_INTERRUPTED
    if res.n_failed:
        print(f"{PROG}: {res.n_failed} of {res.n_cells} cells failed (their errors are in the cell files and the "
              "report); a rerun retries them (exit status 1)", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def cmd_report(args, argv) -> int:
    if args.page and not args.paper:
        raise UsageError("--page goes with --paper")
    if args.paper:
        from ..evaluation.paper import write_paper_report

        page, _ = write_paper_report(args.results, args.page, plots=not args.no_plots)
        print(page.read_text(encoding="utf-8"))
        print(f"wrote {page}", file=sys.stderr)
        return EXIT_OK
    res = load_results(args.results)
    page = write_report(res, fmt="html" if args.html else "md", plots=not args.no_plots)
    print(res.report(markdown=True))
    print(f"wrote {page}", file=sys.stderr)
    return EXIT_OK
