"""What a full run of each shipped paper study costs: one split of every (data set, configuration)
is run serially (the all-features row included) and timed; the estimate multiplies each cell's
time by the number of splits of its row. The cells are timed as a study runs them (one BLAS
thread), so ``--jobs 2`` divides the estimate by at most 2.

    python benchmarks/paper_study_cost.py --data-dir DIR [paper000 paper001 ...] [--json OUT]

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


def estimate(name: str, data_dir: str) -> dict:
    from fsframe.evaluation.engine import execute
    from fsframe.evaluation.experiment import _plan
    from fsframe.evaluation.protocols import study_cell
    from fsframe.evaluation.study import load_study

    study = load_study(name, data_dir=data_dir)
    data, tasks, metas, groups = _plan(study)
    first = {}
    for i, m in enumerate(metas):
        first.setdefault((m["dataset"], m["label"]), i)
    n_splits = {(m["dataset"], m["label"]): 0 for m in metas}
    for m in metas:
        n_splits[(m["dataset"], m["label"])] += 1
    picked = sorted(first.values())
    rows = []

    def done(j, rec, clock):
        m = metas[picked[j]]
        key = (m["dataset"], m["label"])
        rows.append({"dataset": m["dataset"], "label": m["label"], "seconds": rec.total_seconds, "ok": rec.ok,
                     "splits": n_splits[key], "estimated_seconds": rec.total_seconds * n_splits[key],
                     "error": None if rec.ok else f"{rec.error_type}: {rec.error}"[:200]})
        print(f"{name} {m['dataset']} {m['label']}: {rec.total_seconds:.1f} s x {n_splits[key]}", flush=True)

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        execute(study_cell, data, [tasks[i] for i in picked], n_jobs=1, on_done=done)
    total = sum(r["estimated_seconds"] for r in rows)
    return {"study": name, "cells": len(metas), "sampled_cells": len(picked), "sample_seconds": time.perf_counter() - t0,
            "estimated_serial_hours": total / 3600, "estimated_hours_jobs2": total / 3600 / 2,
            "load_average": os.getloadavg(), "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="*", default=["paper000", "paper001", "paper002", "paper002-dual", "paper003",
                                                   "paper004"])
    ap.add_argument("--data-dir", default=os.environ.get("FSFRAME_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--json", type=Path, default=OUT)
    args = ap.parse_args(argv)
    out = json.loads(args.json.read_text()) if args.json.exists() else {}
    for name in args.studies:
        out[name] = estimate(name, args.data_dir)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{name}: {out[name]['cells']} cells, about {out[name]['estimated_serial_hours']:.1f} h serially "
              f"(load {out[name]['load_average'][1]:.1f})", flush=True)


if __name__ == "__main__":
    main()
