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
seconds and the estimated serial hours of the full protocol. Read the numbers with the machine's
load (recorded): on a shared machine the same cell takes several times longer.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "paper_study_cost.json"


def estimate(study, store_root: Path | None = None) -> dict:
    """Time one split of every row of ``study`` (a loaded :class:`~fsframe.evaluation.study.Study`),
    keeping the cells in the results folder ``store_root`` (``None``: nowhere)."""
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
    picked = sorted(first.values())
    store = CellStore(store_root) if store_root is not None else None
    kept = store.finished([metas[i]["key"] for i in picked], retry_failed=True) if store is not None else {}
    todo = [i for i in picked if metas[i]["key"] not in kept]
    rows = []

    def row(i, rec, reused):
        m = metas[i]
        key = (m["dataset"], m["label"])
        rows.append({"dataset": m["dataset"], "label": m["label"], "seconds": rec.total_seconds, "ok": rec.ok,
                     "splits": n_splits[key], "estimated_seconds": rec.total_seconds * n_splits[key],
                     "error": None if rec.ok else f"{rec.error_type}: {rec.error}"[:200], "reused": reused})
        print(f"{name} {m['dataset']} {m['label']}: {rec.total_seconds:.1f} s x {n_splits[key]}"
              f"{' (kept cell)' if reused else ''}", flush=True)

    def done(j, rec, clock):
        i = todo[j]
        if store is not None:  # as run_study writes a cell, so that the full run skips it
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
        execute(study_cell, data, [tasks[i] for i in todo], n_jobs=1, on_done=done)
    rows.sort(key=lambda r: (r["dataset"], r["label"]))
    total = sum(r["estimated_seconds"] for r in rows)
    return {"study": name, "cells": len(metas), "sampled_cells": len(picked), "sample_seconds": time.perf_counter() - t0,
            "estimated_serial_hours": total / 3600, "estimated_hours_jobs2": total / 3600 / 2,
            "load_average": os.getloadavg(), "rows": rows}


def main(argv=None):
    from fsframe.evaluation.study import load_study

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="*", default=["paper000", "paper001", "paper002", "paper002-dual", "paper003",
                                                   "paper004"])
    ap.add_argument("--data-dir", default=os.environ.get("FSFRAME_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--json", type=Path, default=OUT)
    ap.add_argument("--store", default=str(ROOT / "results"),
                    help="keep the sampled cells in STORE/<study> for the full run to skip ('none': keep none)")
    args = ap.parse_args(argv)
    out = json.loads(args.json.read_text()) if args.json.exists() else {}
    for name in args.studies:
        store = None if args.store == "none" else Path(args.store) / name
        out[name] = estimate(load_study(name, data_dir=args.data_dir), store)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{name}: {out[name]['cells']} cells, about {out[name]['estimated_serial_hours']:.1f} h serially "
              f"(load {out[name]['load_average'][1]:.1f})", flush=True)


if __name__ == "__main__":
    main()
