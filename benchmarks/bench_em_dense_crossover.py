"""Where ``fit``'s dense EM path stops paying: ``em-l0`` (exactly 5 features) per fit, CPU time in one
process, the dense path (``from_data=True``) against the compiled path (``from_data=False``), with
the active set's pivots compiled (numba) and in Python (``FSFRAME_NO_JIT=1``), on generated data of
growing size and on breast cancer; both must select the same features in as many EM iterations.
This is the measurement behind ``fsframe.dense_fit.DENSE_EM_MAX_ROWS`` (docs/performance.md,
issue 19's ninth pass).

    python benchmarks/bench_em_dense_crossover.py [--reps 2]

Writes ``benchmarks/results/em_dense_crossover.json`` and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "results" / "em_dense_crossover.json"


def data_sets():
    from sklearn.datasets import load_breast_cancer

    rng = np.random.default_rng(0)
    for m, n in ((80, 20), (1500, 40), (3000, 20)):
        X = rng.normal(size=(m, n))
        yield f"generated {m} x {n}", X, np.where(X[:, 0] + X[:, 1] + (rng.normal(size=m) if m > 100 else 0) > 0, 1, -1)
    X, y = load_breast_cancer(return_X_y=True)
    yield "breast cancer 569 x 30", (X - X.mean(0)) / X.std(0), y


def cpu(X, y, from_data, reps):
    import fsframe
    from fsframe.working_set import WorkingSetOptions

    ts, res = [], None
    for _ in range(reps + 1):  # the first call untimed (numba's cache load, Pyomo's first build)
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fsframe.fit(X, y, method="em-l0", n_features=5, working_set=WorkingSetOptions(from_data=from_data))
        ts.append(time.process_time() - c0)
    return float(np.median(ts[1:])), tuple(int(j) for j in res.selected), res.n_iter


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args(argv)
    rows = []
    for name, X, y in data_sets():
        row = {"data": name}
        for pivots in ("compiled", "python"):
            os.environ["FSFRAME_NO_JIT"] = "1" if pivots == "python" else ""
            d, sel_d, it_d = cpu(X, y, True, args.reps)
            c, sel_c, it_c = cpu(X, y, False, args.reps)
            if sel_d != sel_c or it_d != it_c:
                raise AssertionError(f"{name}: the dense path selected {sel_d} in {it_d} iterations, compiled {sel_c} in {it_c}")
            row[pivots] = {"dense": d, "compiled": c, "ratio": d / c}
        rows.append(row)
        print(f"| {name} | " + " | ".join(f"{row[p]['dense'] * 1e3:.1f} / {row[p]['compiled'] * 1e3:.1f} ms "
                                          f"({row[p]['ratio']:.2f}x)" for p in ("compiled", "python")) + " |", flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    OUT.write_text(json.dumps({"meta": {"reps": args.reps, "load": load}, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
