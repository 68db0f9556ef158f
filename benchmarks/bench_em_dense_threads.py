"""``fit``'s dense EM path with and without its own one-thread BLAS hold
(``fsframe.dense_fit`` runs the dense run inside ``fsframe.backends.diag_qp._one_blas_thread``),
in a process with the default BLAS threads and inside ``threadpool_limits(limits=1)`` (how
``bench_issue19.py`` measures parts (a) and (b)): ``em-l0``, exactly 5 features, Sonar's first
stratified 80/20 split (standardised), CPU and wall time per fit, the four cells alternated round
by round in one process, the first call untimed; "unheld" replaces the hold with a null context.
The hold's reason: docs/performance.md, issue 19's ninth pass ("How the figures were measured").

    python benchmarks/bench_em_dense_threads.py [--rounds 5 --reps 5]

Reads ``sonar.csv`` from the data folder (``--data-dir``, else ``$FSFRAME_DATA``; status 2 without
it); writes ``benchmarks/results/em_dense_threads.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_dir, data_folder  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "em_dense_threads.json"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    add_data_dir(ap, "sonar.csv")
    args = ap.parse_args(argv)
    import threadpoolctl
    from threadpoolctl import threadpool_limits

    import bench_issue19
    import competitors

    competitors.DATA = data_folder(ap, args.data_dir, ["sonar.csv"])  # status 2 without the file
    import fsframe
    import fsframe.dense_fit as dense_fit

    warnings.simplefilter("ignore")
    X, y = next(bench_issue19.sonar_splits(1))
    fsframe.fit(X, y, method="em-l0", n_features=5)  # untimed: numba's cache, imports
    held = dense_fit._one_blas_thread
    cells = [(limit, hold) for limit in ("default", "limit 1") for hold in ("held", "unheld")]
    times = {c: [] for c in cells}
    selected = set()
    try:
        for _ in range(args.rounds):
            for limit, hold in cells:
                dense_fit._one_blas_thread = held if hold == "held" else contextlib.nullcontext
                with threadpool_limits(limits=1) if limit == "limit 1" else contextlib.nullcontext():
                    for _ in range(args.reps):
                        c0, w0 = time.process_time(), time.perf_counter()
                        r = fsframe.fit(X, y, method="em-l0", n_features=5)
                        times[(limit, hold)].append((time.process_time() - c0, time.perf_counter() - w0))
                        assert r.info["solver_path"] == "dense_em"
                        selected.add(tuple(r.selected))
    finally:
        dense_fit._one_blas_thread = held
    rows = []
    for (limit, hold), v in times.items():
        a = np.array(v) * 1e3
        rows.append({"blas": limit, "hold": hold, "n": len(a),
                     "cpu_ms": {k: float(q) for k, q in zip(("q25", "median", "q75"), np.percentile(a[:, 0], [25, 50, 75]))},
                     "wall_ms": {k: float(q) for k, q in zip(("q25", "median", "q75"), np.percentile(a[:, 1], [25, 50, 75]))}})
    out = {"meta": {"load_average": os.getloadavg()[0], "cpus": os.cpu_count(),
                    "blas": [(d["internal_api"], d["num_threads"]) for d in threadpoolctl.threadpool_info()],
                    "same_selection": len(selected) == 1},
           "rows": rows}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"load {out['meta']['load_average']:.1f}, BLAS {out['meta']['blas']}, same selection: {len(selected) == 1}")
    print("| process BLAS | dense run | CPU per fit, median (q25-q75) | wall per fit, median (q25-q75) |")
    print("|---|---|--:|--:|")
    for r in rows:
        c, w = r["cpu_ms"], r["wall_ms"]
        print(f"| {r['blas']} | {r['hold']} | {c['median']:.1f} ms ({c['q25']:.1f}-{c['q75']:.1f}) | "
              f"{w['median']:.1f} ms ({w['q25']:.1f}-{w['q75']:.1f}) |")
    return out


if __name__ == "__main__":
    main()
