"""Run the paper studies of docs/experiments.md with three engines and time them.

For each study file (default: ``benchmarks/studies/paper000_table3.toml`` and
``paper002_fig1.toml``): a serial run, ``--jobs 2`` (joblib) and a Dask ``LocalCluster`` of two
single-threaded workers, each into a fresh results folder; checks that the three produce the same
cells (timing fields aside), writes the report of the serial run (tables and pictures) and copies
its pictures to ``docs/img/``. Writes ``benchmarks/results/experiments_timing.json``.

    python benchmarks/experiments_timing.py --data-dir DIR [--engines serial,joblib,dask] [STUDY.toml ...]

The studies' ``file = ...`` data sets are read from the data folder (``--data-dir DIR``, else
``$FSFRAME_DATA``, as ``fsframe run``; docs/performance.md); a missing file stops the script with
exit status 2 before any run. Needs ``fsframe[dask]`` and ``fsframe[plot]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, check_data  # noqa: E402

STUDIES = [ROOT / "benchmarks" / "studies" / "paper000_table3.toml", ROOT / "benchmarks" / "studies" / "paper002_fig1.toml"]
ENGINES = {"serial": {"n_jobs": 1}, "joblib": {"n_jobs": 2}, "dask": {"n_jobs": 2, "dask": "local"}}


def cells(folder: Path) -> dict:
    out = {}
    for p in (folder / "cells").glob("*.json"):
        d = json.loads(p.read_text())
        r = d["record"]
        r.pop("seconds"), r.pop("total_seconds")
        out[d["key"]] = r
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="*", type=Path, default=STUDIES)
    ap.add_argument("--engines", default="serial,joblib,dask")
    add_data_dir(ap, "the studies' data files")
    args = ap.parse_args(argv)
    from fsframe.evaluation.experiment import run_study
    from fsframe.evaluation.pages import write_report
    from fsframe.evaluation.study import load_study

    out_json = ROOT / "benchmarks" / "results" / "experiments_timing.json"
    record = json.loads(out_json.read_text()) if out_json.exists() else {}
    studies = [check_data(ap, load_study(path, data_dir=args.data_dir)) for path in args.studies]  # else status 2
    for study in studies:
        base = Path(study.output)
        entry = {"cells": None, "seconds": {}, "load_average": {}, "identical": None,
                 "machine": f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores"}
        results = {}
        for eng in args.engines.split(","):
            folder = base if eng == "serial" else base.with_name(base.name + "_" + eng)
            if folder.exists():
                shutil.rmtree(folder)
            t0 = time.perf_counter()
            res = run_study(study, str(folder), **ENGINES[eng])
            entry["seconds"][eng] = round(time.perf_counter() - t0, 1)
            entry["load_average"][eng] = round(os.getloadavg()[1], 1)  # 5-minute load of the shared machine
            entry["cells"] = res.n_cells
            results[eng] = cells(folder)
            print(f"{study.name}: {eng} {entry['seconds'][eng]} s, {res.n_cells} cells, {res.n_failed} failed",
                  file=sys.stderr, flush=True)
            if eng == "serial":
                page = write_report(res)
                img = ROOT / "docs" / "img"
                img.mkdir(parents=True, exist_ok=True)
                for png in (folder / "img").glob("*.png"):
                    shutil.copy(png, img / f"{study.name}-{png.name}")
                print(res.report(markdown=True))
                print(f"wrote {page}", file=sys.stderr)
        first = next(iter(results.values()))
        entry["identical"] = all(r == first for r in results.values())
        record[study.name] = entry
        out_json.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
