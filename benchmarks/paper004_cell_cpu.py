"""Where a paper 004 cell's CPU goes, and whether a change of the code changed its answer.

Runs the cells of one split of the shipped study ``paper004`` (``--rows``, default every row) as a
study runs them (:func:`~fsframe.evaluation.protocols.study_cell` under one BLAS thread) and
splits each cell's CPU seconds (``time.process_time``: every thread of the process, so a solver's
helper threads count) into the inner cross-validation (``Extras.choose``), the evaluation (the
tuned linear SVM at every ``k``: ``Extras.top_k_record``, or the all-features row's body) and the
rest (the final fit); the LinearSVC and SVC fits (also by ``C``) and Clarabel's solves are counted and timed
on their own wherever they run.

``--fixed`` runs a tuned row at its grid's middle point without the inner cross-validation (the
final fit and the evaluation only: what ``paper_study_cost.py --quick`` runs for the cell).
``--clarabel-threads N`` runs every Clarabel solve on ``N`` threads (``max_threads``, docs/backends.md;
DSO-FS's finish included, whatever its ``finish_threads``);
``--answers FILE`` writes each cell's answer (selection, ranking's curve, predictions, tuned
point) and ``--compare FILE`` checks this run's answers against that file's, bit for bit;
``--cells DIR`` compares them with the stored records of the same cells (a study folder's
``cells``, written by a run of another commit); a difference exits with status 1. ``--json FILE``
appends the costs to the file's ``cells_cpu`` list (``benchmarks/results/paper004_row_cost.json``): it
reads the file, extends the list and writes it back, unlocked, so two runs given the same file at
once can lose one's rows (run them one after the other, or give each its own file).

    nice -n 5 python benchmarks/paper004_cell_cpu.py --data-dir DIR --datasets semeion --rows mrmr dso-fs \\
        --cells results/paper004/cells --json benchmarks/results/paper004_row_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared helpers
from _common import add_data_dir, study_with_data

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "paper004_row_cost.json"


SVM_FITS = ("linear_svc_fit", "svc_fit")
"""The evaluated classifiers' fits, timed also by ``C``: liblinear's ``LinearSVC`` (the
``tuned-linear-svc`` protocol) and LIBSVM's ``SVC`` (``tuned-svm``, paper 004's since it cites LIBSVM)."""


class Clock:
    """CPU seconds spent inside each wrapped callable (outermost call only) and its call count."""

    def __init__(self):
        self.cpu: dict = {}
        self.calls: dict = {}
        self._depth: dict = {}

    def wrap(self, owner, attr: str, name: str):
        inner = getattr(owner, attr)

        def timed(*args, **kwargs):
            if name in SVM_FITS:  # also by the fit's C (args[0]: the estimator)
                return self._by_c(name, inner, args, kwargs)
            return self._timed(name, inner, args, kwargs)

        setattr(owner, attr, timed)
        return inner

    def _by_c(self, fit, inner, args, kwargs):
        c0 = time.process_time()
        try:
            return self._timed(fit, inner, args, kwargs)
        finally:
            name = f"C={args[0].C:g}"
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0
            self.calls[name] = self.calls.get(name, 0) + 1

    def _timed(self, name, inner, args, kwargs):
        depth = self._depth.get(name, 0)
        self._depth[name] = depth + 1
        c0 = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            self._depth[name] = depth
            if depth == 0:
                self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0
                self.calls[name] = self.calls.get(name, 0) + 1

    def reset(self):
        self.cpu.clear()
        self.calls.clear()


@contextmanager
def instrumented(clock: Clock):
    """The study's evaluation steps and scikit-learn's LinearSVC and SVC fits timed by ``clock``."""
    from sklearn.svm import SVC, LinearSVC

    from fsframe.backends.clarabel import ClarabelSession
    from fsframe.evaluation import protocols

    spots = [(protocols.Extras, "choose", "tuning"), (protocols.Extras, "top_k_record", "evaluation"),
             (protocols, "_baseline_cell", "evaluation"), (LinearSVC, "fit", "linear_svc_fit"), (SVC, "fit", "svc_fit"),
             (ClarabelSession, "_solve_raw", "clarabel_solve")]
    saved = [(owner, attr, clock.wrap(owner, attr, name)) for owner, attr, name in spots]
    try:
        yield clock
    finally:
        for owner, attr, inner in saved:
            setattr(owner, attr, inner)


def clarabel_threads(n: int):
    """Every Clarabel solve of the process on ``n`` threads (``max_threads``; 0: Clarabel's own
    choice): its default :data:`fsframe.backends.clarabel.DEFAULT_THREADS`, and also where a method
    sets ``max_threads`` itself (DSO-FS's ``finish_threads`` writes it into its finish's options,
    which a changed default alone would not reach)."""
    from fsframe.backends import clarabel

    settings = clarabel.clarabel_settings
    if getattr(settings, "threads_of_the_run", None) is not None:  # a second call replaces the first's count
        settings = settings.__wrapped__

    def with_threads(options):
        s = settings(options)
        s.max_threads = n
        return s

    with_threads.__wrapped__, with_threads.threads_of_the_run = settings, n
    clarabel.DEFAULT_THREADS = n
    clarabel.clarabel_settings = with_threads


def answer(rec) -> dict:
    """What a cell answers, as the cell record stores it: status, selection, curve, scores,
    predictions, tuned point and support."""
    import numpy as np

    return {"ok": rec.ok, "error": rec.error, "selected": [int(j) for j in rec.selected or ()],
            "curve": [[int(k), float(a)] for k, a in (rec.curve or ())],
            "accuracy": None if rec.accuracy is None else float(rec.accuracy),
            "mcc": None if rec.mcc is None else float(rec.mcc),
            "y_pred": None if rec.y_pred is None else np.asarray(rec.y_pred).tolist(),
            "random_curve": [list(map(float, r)) for r in getattr(rec, "random_curve", None) or ()],
            "facts": {k: v for k, v in rec.facts.items() if k.startswith("tuned ") or k in ("support",)}}


ANSWER_FIELDS = ("ok", "selected", "curve", "random_curve", "accuracy", "mcc", "selector_accuracy", "selector_mcc",
                 "n_selected", "n_iter", "objective", "statuses", "y_pred")
"""The fields of a stored cell record that :func:`compare_cells` compares, bit for bit."""


def compare_cells(rows: list, cells: Path) -> list:
    """The cells of ``rows`` (run without ``--fixed``) whose answer differs from the record of the
    same cell (same key) in the study folder's ``cells`` directory, a run of another commit; a
    cell that folder has not (yet) finished is skipped."""
    diff, compared = [], 0
    for r in rows:
        path = cells / f"{r['key']}.json"
        if r["fixed_point"] is not None or not path.exists():
            continue
        stored = json.loads(path.read_text())["record"]
        mine = r["record"]
        fields = [k for k in ANSWER_FIELDS + tuple(k for k in stored["facts"] if k.startswith("tuned ") or k == "support")
                  if (stored.get(k, stored["facts"].get(k)) != mine.get(k, mine["facts"].get(k)))]
        compared += 1
        if fields:
            diff.append(f"{r['dataset']} {r['label']} split {r['split']}: {fields}")
    print(f"{compared} cell(s) compared with {cells}")
    return diff


def run(study, rows, split_index: int, fixed: bool) -> list:
    import attrs

    from fsframe.evaluation.executor import run_cell
    from fsframe.evaluation.experiment import _plan
    from fsframe.evaluation.protocols import clear_fit_memo, study_cell

    data, tasks, metas, _ = _plan(study)
    picked = [i for i, m in enumerate(metas) if m["repeat"] == split_index and (rows is None or m["label"] in rows)]
    out = []
    clock = Clock()
    with instrumented(clock):
        for i in picked:
            task, meta = tasks[i], metas[i]
            cfg = task.cfg
            extras = getattr(cfg, "extras", None)
            point = None
            if fixed and extras is not None and extras.tune:
                point = {k: v[(len(v) - 1) // 2] for k, v in extras.tune.items()}
                cfg = attrs.evolve(cfg, params={**cfg.params, **point}, extras=attrs.evolve(extras, tune=None))
            X, y = data[task.data]
            clear_fit_memo()  # every cell pays for its own classifier fits
            clock.reset()
            c0, w0 = time.process_time(), time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, rec = run_cell(study_cell, i, X, y, task.split, cfg, False)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            tuning, evaluation = clock.cpu.get("tuning", 0.0), clock.cpu.get("evaluation", 0.0)
            row = {"dataset": meta["dataset"], "label": meta["label"], "split": split_index, "fixed_point": point,
                   "cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3),
                   "tuning_cpu_seconds": round(tuning, 3), "evaluation_cpu_seconds": round(evaluation, 3),
                   "fit_cpu_seconds": round(cpu - tuning - evaluation, 3),
                   **{f"{fit}s": clock.calls.get(fit, 0) for fit in SVM_FITS},
                   **{f"{fit[:-4]}_cpu_seconds": round(clock.cpu.get(fit, 0.0), 3) for fit in SVM_FITS},
                   "svm_cpu_seconds_by_C": {k: round(v, 3) for k, v in clock.cpu.items() if k.startswith("C=")},
                   "clarabel_solves": clock.calls.get("clarabel_solve", 0),
                   "clarabel_cpu_seconds": round(clock.cpu.get("clarabel_solve", 0.0), 3),
                   "load_average": os.getloadavg(), "answer": answer(rec), "key": meta["key"],
                   "record": json.loads(json.dumps(rec.as_dict(arrays=True)))}
            print(f"{row['dataset']} {row['label']}{' at ' + str(point) if point else ''}: {cpu:.1f} CPU s "
                  f"(tuning {tuning:.1f}, evaluation {evaluation:.1f}, fit {cpu - tuning - evaluation:.1f}; "
                  f"LinearSVC {row['linear_svc_fits']} fits {row['linear_svc_cpu_seconds']:.1f} s, SVC {row['svc_fits']} fits "
                  f"{row['svc_cpu_seconds']:.1f} s; Clarabel "
                  f"{row['clarabel_solves']} solves {row['clarabel_cpu_seconds']:.1f} s), wall {wall:.1f}; "
                  f"ok {rec.ok}", flush=True)
            out.append(row)
    return out


def compare(rows: list, before: list) -> list:
    """The cells of ``rows`` whose answer differs from the same cell's in ``before``."""
    old = {(r["dataset"], r["label"], r["split"], json.dumps(r["fixed_point"])): r["answer"] for r in before}
    diff = []
    for r in rows:
        key = (r["dataset"], r["label"], r["split"], json.dumps(r["fixed_point"]))
        if key in old and old[key] != r["answer"]:
            fields = sorted(k for k in r["answer"] if r["answer"][k] != old[key][k])
            diff.append(f"{key}: {fields}")
        elif key not in old:
            diff.append(f"{key}: not in the earlier run")
    return diff


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap)
    ap.add_argument("--datasets", nargs="+", default=["isolet"])
    ap.add_argument("--rows", nargs="+", help="row labels (default: every row)")
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--fixed", action="store_true", help="tuned rows at their grid's middle point, untuned")
    ap.add_argument("--clarabel-threads", type=int, help="Clarabel's max_threads for every solve of this run (DSO-FS's finish included)")
    ap.add_argument("--answers", type=Path, help="write the cells' answers and costs here")
    ap.add_argument("--compare", type=Path, help="compare the answers with this earlier --answers file")
    ap.add_argument("--cells", type=Path, help="compare the answers with the cell records in this folder")
    ap.add_argument("--json", type=Path, help=f"append the costs to this file's 'cells_cpu' (e.g. {OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if args.clarabel_threads is not None:
        clarabel_threads(args.clarabel_threads)
    study = study_with_data(ap, "paper004", args.data_dir, args.datasets)
    import attrs

    study = attrs.evolve(study, datasets=[d for d in study.datasets if d.name in args.datasets])
    rows = run(study, args.rows, args.split, args.fixed)
    for r in rows:
        r["clarabel_threads"] = args.clarabel_threads
    if args.answers:
        args.answers.write_text(json.dumps([{k: v for k, v in r.items() if k != "record"} for r in rows]) + "\n")
    if args.compare:
        diff = compare(rows, json.loads(args.compare.read_text()))
        print("answers identical to " + str(args.compare) if not diff else "answers differ:\n" + "\n".join(diff))
        if diff:
            sys.exit(1)
    if args.cells:
        diff = compare_cells(rows, args.cells)
        print("answers identical to the stored cells" if not diff else "answers differ:\n" + "\n".join(diff))
        if diff:
            sys.exit(1)
    if args.json:  # appended to the file's "cells_cpu" list
        kept = json.loads(args.json.read_text()) if args.json.exists() else {}
        kept.setdefault("cells_cpu", []).extend({k: v for k, v in r.items() if k not in ("answer", "record")}
                                                for r in rows)
        args.json.write_text(json.dumps(kept, indent=1) + "\n")


if __name__ == "__main__":
    main()
