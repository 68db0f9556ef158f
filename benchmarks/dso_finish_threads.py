"""DSO-FS's convex finish on one Clarabel thread against Clarabel's own thread count: one
``fsframe.fit`` per ``p`` on split 0's training part of a ``paper004`` data set (z-scored as the
study does, :func:`dso_paper004_fit.training_part`), ``finish_threads=0`` (Clarabel's choice)
against ``1`` (DSO-FS's default), in the same process: CPU seconds of the fit and of its finish's
SOCP solves (all threads' CPU), and whether the answers agree (the selected rows in their order,
the objective, the certificate's status).

    OMP_NUM_THREADS=1 nice -n 5 python benchmarks/dso_finish_threads.py --data-dir DIR \
        [--datasets yale] [--p 0.1 0.5 1.0] [--repeat 1]

The data folder: ``--data-dir``, else ``$FSFRAME_DATA``; without a data set's file the script stops
with exit status 2 before any fit (``benchmarks/_common.py``).

Writes ``benchmarks/results/dso_finish_threads.json``. CPU time (``time.process_time``), one BLAS
thread, so the machine's load changes the numbers less than wall time (wall time recorded too).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_dir, study_with_data  # noqa: E402
from dso_paper004_fit import ROOT, training_part  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "dso_finish_threads.json"
THREADS = (0, 1)


def one_fit(X, y, p: float, threads: int) -> dict:
    """One DSO-FS fit with the finish on ``threads`` Clarabel threads: CPU seconds, the finish's solves and the answer."""
    import fsframe
    import fsframe_multiclass.convex as convex
    import fsframe_multiclass.margin as margin_mod

    margin_mod._SEPARABLE.clear()  # every fit decides separability itself, as a new inner fold does
    solves = []
    solve_rows = convex.solve_rows

    def timed(*args, **kwargs):
        c0 = time.process_time()
        out = solve_rows(*args, **kwargs)
        solves.append((len(args[1]), time.process_time() - c0))
        return out

    convex.solve_rows = timed
    try:
        c0, w0 = time.process_time(), time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, method="dso-fs", p=p, finish_threads=threads)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    finally:
        convex.solve_rows = solve_rows
    norms = np.linalg.norm(np.atleast_2d(np.asarray(r.coef, dtype=float)).reshape(X.shape[1], -1), axis=1)
    return {"cpu_seconds": round(cpu, 3), "wall_seconds": round(wall, 3), "finish_solves": len(solves),
            "finish_cpu_seconds": round(sum(s for _, s in solves), 3), "finish_rows": [n for n, _ in solves],
            "objective": float(r.objective), "certificate": (r.certificate or {}).get("status"),
            "order": np.argsort(-norms, kind="stable")[:int(r.n_selected)].tolist(), "n_selected": int(r.n_selected)}


def _answer(run: dict) -> tuple:
    """What a fit answers: the selected rows in their order and the objective (bit for bit)."""
    return run["order"], run["objective"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(ap)
    ap.add_argument("--datasets", nargs="+", default=["yale"])
    ap.add_argument("--p", nargs="+", type=float, default=[0.1, 0.5, 1.0])
    ap.add_argument("--repeat", type=int, default=1, help="fits per (p, threads), alternating the thread counts")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    study_with_data(ap, "paper004", args.data_dir, args.datasets)  # stops at once (status 2) when a file is absent
    rows = []
    for name in args.datasets:
        X, y = training_part(name, args.data_dir)
        for p in args.p:
            runs = {t: [] for t in THREADS}
            for _ in range(args.repeat):
                for t in THREADS:
                    runs[t].append(one_fit(X, y, p, t))
            a, b = runs[0][0], runs[1][0]
            row = {"dataset": name, "shape": list(X.shape), "p": p, "load_average": list(os.getloadavg()),
                   **{f"threads_{t}_cpu_seconds": [r["cpu_seconds"] for r in runs[t]] for t in THREADS},
                   **{f"threads_{t}_wall_seconds": [r["wall_seconds"] for r in runs[t]] for t in THREADS},
                   **{f"threads_{t}_finish_cpu_seconds": [r["finish_cpu_seconds"] for r in runs[t]] for t in THREADS},
                   "finish_rows": {t: runs[t][0]["finish_rows"] for t in THREADS},
                   "same_order": a["order"] == b["order"], "n_selected": [a["n_selected"], b["n_selected"]],
                   "objective_rel_diff": abs(a["objective"] - b["objective"]) / max(abs(a["objective"]), 1e-300),
                   "certificates": [a["certificate"], b["certificate"]],
                   "repeats_identical": all(_answer(r) == _answer(runs[t][0]) for t in THREADS for r in runs[t])
                   if args.repeat > 1 else None}
            print(json.dumps(row), flush=True)
            rows.append(row)
    args.out.write_text(json.dumps({"fits": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
