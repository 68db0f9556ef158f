"""What a full run of each shipped paper study costs: one split of every (data set, configuration)
is run serially (the all-features row included) and timed; the estimate multiplies each cell's
time by the number of splits of its row. The cells are timed as a study runs them (one BLAS
thread), so ``--jobs 2`` divides the estimate by at most 2.

    python benchmarks/paper_study_cost.py --data-dir DIR [paper000 paper001 ...] [--json OUT]

The sampled cells are kept in the study's results folder (``results/<study>``, the folder
``run_paper.py`` and ``fsframe run`` use; ``--store none`` keeps none), exactly as a run writes
them: the full run that follows skips them, and a cell already finished there is not run again
(its recorded seconds are used).

Writes ``benchmarks/results/paper_study_cost.json``: per study and data set, the sampled cells'
seconds (wall) and CPU seconds (``time.process_time``, every thread of the process; a quick row's:
the probe's own CPU, whose grid fits, run once, count once per inner fold) and the estimated
serial hours of the full protocol. A reused cell (already finished in the results folder) has
recorded wall seconds but no CPU seconds: its row's ``estimated_cpu_seconds`` is ``None``, and so is
the study's ``estimated_cpu_hours`` when any sampled cell was reused. Read the numbers with the machine's
load (recorded): on a shared machine the same cell takes several times longer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared helpers
from _common import add_data_dir, check_data

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "paper_study_cost.json"


def _grid_fits(X, y, split, cfg) -> list:
    """One inner fold's worth of a tuned row's fits, timed: every grid point fitted on the scaled
    training part as the inner cross-validation fits a fold (:meth:`Extras._fold_fits`; a grid the
    study sweeps by one path, the L1-SVM's ``C``, as that one path). Returns per group of points
    (each point alone, or the swept grid) its wall and CPU seconds and its failures."""
    import itertools

    from fsframe.evaluation.preprocess import _scale
    from fsframe.evaluation.protocols import path_restates

    extras = cfg.extras
    Xa = _scale(X[split.train], X[split.test][:0], cfg.scale)[0]
    ya = y[split.train]
    points = [dict(zip(extras.tune, v)) for v in itertools.product(*extras.tune.values())]
    swept = extras.sweep and len(points) > 1 and path_restates(cfg, points)
    _forget_fold_caches()
    out = []
    for group in ([points] if swept else [[pt] for pt in points]):
        w0, c0 = time.perf_counter(), time.process_time()
        fits = extras._fold_fits(Xa, ya, cfg, group)
        out.append({"points": group, "seconds": time.perf_counter() - w0, "cpu_seconds": time.process_time() - c0,
                    "failed": sum(isinstance(f, BaseException) for f in fits)})
    return out


def _forget_fold_caches() -> None:
    """Empty the answers kept by data value, so that the grid's first fit pays for them as a new
    inner fold's first fit does (the cell's fit on the same training part filled them): DSO-FS's
    separability check (``fsframe_multiclass.margin._SEPARABLE``, shared across the ``p`` grid of
    one fold)."""
    margin = sys.modules.get("fsframe_multiclass.margin")
    if margin is not None:
        margin._SEPARABLE.clear()


def _inner_folds(y, split, cfg) -> int:
    """The inner folds of a tuned cell, as :meth:`Extras.choose` counts them (capped by the
    smallest class of the training part)."""
    from fsframe.evaluation.study import capped_folds, folds_for

    extras = cfg.extras
    rule = folds_for(extras.tune_folds, int(split.train.size))
    if extras.evaluator.regression:
        return rule
    return capped_folds(min(rule, extras.max_folds or rule), y[split.train], cfg.label)[0]


def _quick_cell(X, y, split, cfg, raise_errors=False):
    """A tuned row's cell estimated from one fit per grid point: the cell (fit and evaluation) at
    the grid's middle point on the whole training part, plus the inner cross-validation's fits
    (every grid point fitted once on the training part, :func:`_grid_fits`, times the inner
    folds). Those fits see (f - 1)/f of the samples, so this over-estimates them a little; their
    scoring by an untuned classifier is not counted. Every point is timed because their costs
    differ: DSO-FS at ``p = 1`` (the convex finish's SOCPs) costs several times its ``p = 0.5``,
    the middle point, which alone under-estimated Yale's DSO-FS."""
    import attrs

    from fsframe.evaluation.protocols import study_cell

    extras = getattr(cfg, "extras", None)
    if extras is None or not extras.tune:
        return study_cell(X, y, split, cfg, raise_errors)
    point = {k: v[(len(v) - 1) // 2] for k, v in extras.tune.items()}
    folds = _inner_folds(y, split, cfg)
    rec = study_cell(X, y, split, attrs.evolve(cfg, params={**cfg.params, **point},
                                               extras=attrs.evolve(extras, tune=None)), raise_errors)
    if not rec.ok:
        return rec
    grid = _grid_fits(X, y, split, cfg)
    n_points = sum(len(g["points"]) for g in grid)
    inner = folds * sum(g["seconds"] for g in grid)
    return attrs.evolve(rec, total_seconds=rec.total_seconds + inner,
                        facts={**rec.facts, "quick_fits": 1 + folds * n_points, "quick_point": point,
                               "quick_cell_seconds": rec.total_seconds, "quick_fit_seconds": rec.seconds,
                               "quick_folds": folds, "quick_grid": grid})


def _grid_json(grid: list) -> list:
    """:func:`_grid_fits`'s groups for the JSON file (seconds rounded)."""
    return [{"points": g["points"], "seconds": round(g["seconds"], 3), "cpu_seconds": round(g["cpu_seconds"], 3),
             "failed": g["failed"]} for g in grid]


def estimate(study, store_root: Path | None = None, quick: bool = False, datasets=None, labels=None) -> dict:
    """Time one split of every row of ``study`` (a loaded :class:`~fsframe.evaluation.study.Study`),
    keeping the cells in the results folder ``store_root`` (``None``: nowhere). ``quick``: a tuned
    row is estimated from one fit (:func:`_quick_cell`) and not kept. ``datasets``: sample the rows
    of those data sets only (the estimate then covers them alone and says so); ``labels``: of
    the rows of those labels only (likewise)."""
    from fsframe.evaluation.cells import CellStore, record_from_json, record_to_json
    from fsframe.evaluation.engine import execute
    from fsframe.evaluation.experiment import _plan
    from fsframe.evaluation.protocols import study_cell

    name = study.name
    data, tasks, metas, groups = _plan(study)
    first = {}
    for i, m in enumerate(metas):
        first.setdefault((m["dataset"], m["label"]), i)
    n_splits = {(m["dataset"], m["label"]): 0 for m in metas}
    for m in metas:
        n_splits[(m["dataset"], m["label"])] += 1
    picked = sorted(i for i in first.values() if (datasets is None or metas[i]["dataset"] in datasets)
                    and (labels is None or metas[i]["label"] in labels))
    store = CellStore(store_root) if store_root is not None else None
    kept = store.finished([metas[i]["key"] for i in picked], retry_failed=True) if store is not None else {}
    todo = [i for i in picked if metas[i]["key"] not in kept]
    rows = []
    cpu = []  # each cell's CPU seconds, in the order the serial run finishes them

    def timed_cell(X, y, split, cfg, raise_errors=False):
        c0 = time.process_time()
        try:
            return (_quick_cell if quick else study_cell)(X, y, split, cfg, raise_errors)
        finally:
            cpu.append(time.process_time() - c0)

    def row(i, rec, reused):
        m = metas[i]
        key = (m["dataset"], m["label"])
        one_fit = rec.facts.get("quick_fits")
        cell_cpu = None if reused else cpu[-1]
        grid_cpu = sum(g["cpu_seconds"] for g in rec.facts["quick_grid"]) if one_fit else 0.0
        rows_cpu = None if reused else cell_cpu + ((rec.facts["quick_folds"] - 1) * grid_cpu if one_fit else 0.0)
        rows.append({"dataset": m["dataset"], "label": m["label"], "seconds": rec.total_seconds, "ok": rec.ok,
                     "cpu_seconds": rows_cpu,
                     "splits": n_splits[key], "estimated_seconds": rec.total_seconds * n_splits[key],
                     "estimated_cpu_seconds": None if reused else rows_cpu * n_splits[key],
                     "error": None if rec.ok else f"{rec.error_type}: {rec.error}"[:200], "reused": reused,
                     **({"from_one_fit": {"fits": one_fit, "point": rec.facts["quick_point"],
                                          "cell_seconds": rec.facts["quick_cell_seconds"],
                                          "fit_seconds": rec.facts["quick_fit_seconds"],
                                          "folds": rec.facts["quick_folds"],
                                          "grid": _grid_json(rec.facts["quick_grid"]),
                                          "cell_cpu_seconds": cell_cpu}} if one_fit else {})})
        print(f"{name} {m['dataset']} {m['label']}: {rec.total_seconds:.1f} s"
              f"{'' if reused else f' ({rows_cpu:.1f} CPU s)'} x {n_splits[key]}"
              f"{' (kept cell)' if reused else ''}{f' (one fit x {one_fit})' if one_fit else ''}", flush=True)

    def done(j, rec, clock):
        i = todo[j]
        tuned = getattr(tasks[i].cfg, "extras", None) is not None and bool(tasks[i].cfg.extras.tune)
        if store is not None and not (quick and tuned):  # as run_study writes it: the full run skips it
            meta = dict(metas[i], backend=rec.backend if rec.ok else metas[i]["backend"],
                        backend_version=rec.backend_version, ok=rec.ok)
            store.write(meta["key"], record_to_json(rec, meta))
        row(i, rec, False)

    for i in picked:
        if metas[i]["key"] in kept:
            row(i, record_from_json(kept[metas[i]["key"]]), True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        execute(timed_cell, data, [tasks[i] for i in todo], n_jobs=1, on_done=done)
    rows.sort(key=lambda r: (r["dataset"], r["label"]))
    total = sum(r["estimated_seconds"] for r in rows)
    return {"study": name, "cells": len(metas), "sampled_cells": len(picked), "sample_seconds": time.perf_counter() - t0,
            "estimated_serial_hours": total / 3600, "estimated_hours_jobs2": total / 3600 / 2,
            "estimated_cpu_hours": None if any(r["estimated_cpu_seconds"] is None for r in rows) else
            sum(r["estimated_cpu_seconds"] for r in rows) / 3600,
            "load_average": os.getloadavg(), "quick": quick,
            "datasets": sorted({r["dataset"] for r in rows}) if datasets is not None else "all",
            **({"only_rows": sorted(labels)} if labels is not None else {}), "rows": rows}


def markdown(out: dict) -> str:
    """The cost table of docs/papers.md: per study its estimate, each data set's share of it and
    its costliest row."""
    lines = ["| study | cells | serial hours (estimated) | with `--jobs 2` | load average | share per data set | "
             "costliest row (s per split x splits) |", "|---|--:|--:|--:|--:|---|---|"]
    for name, est in sorted(out.items()):
        rows = est["rows"]
        total = sum(r["estimated_seconds"] for r in rows) or 1.0
        per = {}
        for r in rows:
            per[r["dataset"]] = per.get(r["dataset"], 0.0) + r["estimated_seconds"]
        shares = ", ".join(f"{d} {100 * v / total:.0f} %" for d, v in sorted(per.items(), key=lambda kv: -kv[1]))
        top = max(rows, key=lambda r: r["estimated_seconds"])
        part = "" if est.get("datasets", "all") == "all" else f" (only {', '.join(est['datasets'])})"
        if est.get("only_rows"):
            part += f" (rows {', '.join(est['only_rows'])} only)"
        lines.append(f"| `{name}` | {est['cells']} | {est['estimated_serial_hours']:.1f}{part} | "
                     f"{est['estimated_hours_jobs2']:.1f} | {est['load_average'][1]:.1f} | {shares} | "
                     f"{top['dataset']} {top['label']}: {top['seconds']:.0f} s x {top['splits']} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    from fsframe.evaluation.study import load_study

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="*", default=["paper000", "paper001", "paper002", "paper002-dual", "paper003",
                                                   "paper004"])
    add_data_dir(ap, "the studies' data files")
    ap.add_argument("--json", type=Path, default=OUT)
    ap.add_argument("--quick", action="store_true",
                    help="a tuned row from one cell at its grid's middle point + one fit of every grid point x "
                         "inner folds; not kept")
    ap.add_argument("--datasets", nargs="+", help="sample only these data sets' rows (a partial estimate)")
    ap.add_argument("--rows", nargs="+", help="sample only the rows of these labels (a partial estimate)")
    ap.add_argument("--markdown", action="store_true", help="print the cost table of the JSON file, run nothing")
    ap.add_argument("--store", default=str(ROOT / "results"),
                    help="keep the sampled cells in STORE/<study> for the full run to skip ('none': keep none)")
    args = ap.parse_args(argv)
    out = json.loads(args.json.read_text()) if args.json.exists() else {}
    if args.markdown:
        print(markdown(out), end="")
        return
    studies = [load_study(name, data_dir=args.data_dir) for name in args.studies]
    if args.datasets:  # a name no study has: a typo, or a study name after --datasets; one study's: kept
        names = {study.name: [d.name for d in study.datasets] for study in studies}
        unknown = [d for d in args.datasets if not any(d in have for have in names.values())]
        if unknown:
            ap.error(f"no study has the data set(s) {unknown} (they have {names}); --datasets takes every word "
                     "after it: name the studies first")
    for study in studies:  # every file the sample reads is there, before any study runs
        check_data(ap, study, args.datasets)
    for study in studies:
        name = study.name
        if args.datasets and not any(d.name in args.datasets for d in study.datasets):
            print(f"{name}: none of {args.datasets}, skipped (its estimate is left as it was)", flush=True)
            continue
        store = None if args.store == "none" else Path(args.store) / name
        out[name] = estimate(study, store, quick=args.quick, datasets=args.datasets, labels=args.rows)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{name}: {out[name]['cells']} cells, about {out[name]['estimated_serial_hours']:.1f} h serially "
              f"(load {out[name]['load_average'][1]:.1f})", flush=True)


if __name__ == "__main__":
    main()
