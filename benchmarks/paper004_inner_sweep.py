"""Paper 004's tuned L1-SVM: the inner cross-validation's fits of one fold, one cold
``fsframe.fit`` per grid point against one warm-started ``fsframe.path`` over the grid (largest
``C`` first, as the study's cells run it: ``fsframe.evaluation.protocols``), in the same process.

    python benchmarks/paper004_inner_sweep.py --data-dir DIR [--dataset semeion] [--folds 1] [--out STEM]

CPU seconds of the whole (``time.process_time``, one BLAS thread: the load of a shared machine stretches the
wall time, not these), and per grid point whether the two agree: the ranking's top 100 (what the
inner score reads), the objective (relative difference) and the coefficients. Prints the rows and
the table; with ``--out STEM`` also writes ``STEM.json`` and ``STEM.md`` (the committed results are
``--out benchmarks/results/paper004_inner_sweep``: written only when asked for).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared helpers
from _common import add_data_dir, study_with_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GRID = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]  # the study's C grid (004 §5.1)


def main(argv=None):
    import fsframe
    from sklearn.model_selection import StratifiedKFold

    from fsframe.evaluation.preprocess import _scale
    from fsframe.evaluation.protocols import ranking
    from fsframe.evaluation.runner import _as_data
    from fsframe.evaluation.splits import make_splits
    from fsframe.evaluation.study import folds_for

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap)
    ap.add_argument("--dataset", default="semeion")
    ap.add_argument("--folds", type=int, default=1, help="inner folds of split 0 timed (of 8)")
    ap.add_argument("--out", type=Path, default=None,
                    help="write STEM.json and STEM.md (the committed: benchmarks/results/paper004_inner_sweep)")
    args = ap.parse_args(argv)
    study = study_with_data(ap, "paper004", args.data_dir, [args.dataset])
    spec = next(d for d in study.datasets if d.name == args.dataset)
    X, y, _ = _as_data(spec.load(), None, "standard")
    split = make_splits(y, 0.4, repeats=10, random_state=0, X=X)[0][0]
    Xtr, _ = _scale(X[split.train], X[split.test][:0], "standard")
    ytr = y[split.train]
    k = folds_for(study.protocol.tune_folds, ytr.size)
    folds = list(StratifiedKFold(k, shuffle=True, random_state=0).split(np.zeros((ytr.size, 1)), ytr))
    rows = []
    warnings.simplefilter("ignore")
    for f, (itr, iva) in enumerate(folds[: args.folds]):
        Xa, _ = _scale(Xtr[itr], Xtr[iva], "standard")
        ya = ytr[itr]
        t0 = time.process_time()
        cold = [fsframe.fit(Xa, ya, method="l1-svm", C=c) for c in GRID]
        t_cold = time.process_time() - t0
        t0 = time.process_time()
        swept = fsframe.path(Xa, ya, "l1-svm", C=GRID[::-1], progress=False)
        t_path = time.process_time() - t0
        points = swept.points[::-1]
        rows.append({
            "dataset": args.dataset, "fold": f, "shape": list(Xa.shape), "classes": int(np.unique(ya).size),
            "cold_cpu_seconds": t_cold, "path_cpu_seconds": t_path, "ratio": t_cold / t_path,
            "points": [{"C": c, "n_selected": int(a.n_selected), "same_top100": bool(np.array_equal(
                ranking(a)[:100], ranking(p.result)[:100])),
                "objective_rel_diff": abs(a.objective - p.objective) / max(abs(a.objective), 1e-300),
                "max_coef_diff": float(np.max(np.abs(np.asarray(a.coef) - np.asarray(p.coef)))),
                "path_point_wall_seconds": p.seconds, "warm": p.warm} for c, a, p in zip(GRID, cold, points)]})
        print(json.dumps(rows[-1]), flush=True)
    out = {"load_average": os.getloadavg(), "grid": GRID, "rows": rows}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    lines = ["| data set | fold | m x n, classes | 7 cold fits (CPU s) | one path, largest C first (CPU s) | ratio | "
             "same top 100 at every C | largest objective difference (relative) |", "|---|--:|---|--:|--:|--:|---|--:|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['fold']} | {r['shape'][0]} x {r['shape'][1]}, {r['classes']} | "
                     f"{r['cold_cpu_seconds']:.1f} | {r['path_cpu_seconds']:.1f} | {r['ratio']:.2f} | "
                     f"{all(p['same_top100'] for p in r['points'])} | "
                     f"{max(p['objective_rel_diff'] for p in r['points']):.1e} |")
    if args.out is not None:
        args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
