"""Where one DSO-FS fit of the ``paper004`` study spends its time: split 0's training part of a data
set (z-scored as the study does, :func:`dso_paper004_fit.training_part`), one ``fsframe.fit`` at
each ``p`` under cProfile, the seconds of Algorithm 1 (its ``E`` steps: least distance programs by
NNLS), of the convex finish and of its SOCP solves (how many, on which backend), and the rest.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/dso_fit_profile.py --data-dir DIR \
        [--datasets yale semeion] [--p 0.1 0.5 1.0]

The data folder: ``--data-dir``, else ``$FSFRAME_DATA``; without a data set's file the script stops
with exit status 2 before any fit (``benchmarks/_common.py``).

Prints one line per fit (wall seconds; read them with the machine's load, printed too) and
writes ``benchmarks/results/dso_fit_profile.json``.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
import warnings
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_dir, study_with_data  # noqa: E402
from dso_paper004_fit import ROOT, training_part  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "dso_fit_profile.json"
PARTS = {"algorithm 1": ("dso.py", "_algorithm1"), "E steps (LDP)": ("nullspace.py", "e_update_ldp"),
         "convex finish": ("dso.py", "_finish"), "SOCP solves (Clarabel)": ("~", "DefaultSolver"),
         "separability check": ("margin.py", "separable_columns")}


def _cumulative(stats: pstats.Stats) -> dict:
    """``{part: {"calls", "seconds"}}`` of :data:`PARTS` (cumulative seconds, primitive calls)."""
    out = {}
    for (path, _line, fn), (_cc, nc, _tt, ct, _callers) in stats.stats.items():
        for part, (file, name) in PARTS.items():
            if Path(path).name == file and (fn == name or (file == "~" and name in fn and "solve" in fn)):
                out[part] = {"calls": nc, "seconds": round(ct, 3)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(ap)
    ap.add_argument("--datasets", nargs="+", default=["yale", "semeion"])
    ap.add_argument("--p", nargs="+", type=float, default=[0.1, 0.5, 1.0])
    args = ap.parse_args(argv)
    study_with_data(ap, "paper004", args.data_dir, args.datasets)  # stops at once (status 2) when a file is absent
    import fsframe

    rows = []
    for name in args.datasets:
        X, y = training_part(name, args.data_dir)
        for p in args.p:
            prof = cProfile.Profile()
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prof.enable()
                res = fsframe.fit(X, y, method="dso-fs", p=p)
                prof.disable()
            row = {"dataset": name, "shape": list(X.shape), "p": p, "seconds": round(time.perf_counter() - t0, 3),
                   "load_average": list(os.getloadavg()), "n_selected": int(res.n_selected),
                   "objective": float(res.objective), "finish": res.info.get("finish"),
                   "finish_rows": res.info.get("finish_rows"), "algorithm1_iterations": res.info.get("algorithm1_iterations"),
                   "backend_version": res.info.get("backend_version"), "parts": _cumulative(pstats.Stats(prof))}
            print(json.dumps(row), flush=True)
            rows.append(row)
    OUT.write_text(json.dumps({"fits": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
