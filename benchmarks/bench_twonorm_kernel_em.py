"""``em-l0`` on an RBF kernel map of Twonorm (paper 002-dual's cells): what one fit costs on each
path, and whether the paths and an independent solver agree (docs/paper002-dual.md, "What a fit
costs").

    python benchmarks/bench_twonorm_kernel_em.py --data-dir DIR --rows 500 1000 [--paths dense no-warm-scale compiled]

The first training fold of Twonorm (5-fold stratified, seed 0), standardised on it, its first
``m`` rows; every point of the study's grid (C in {0.1, 1, 10} x sigma in {0.5, 1, 2, 4}). Paths:
``dense`` (``fit``'s default for a kernel map), ``no-warm-scale`` (the dense path without the
warm start on the scaled dual, as before it: ``dense_em.warm_scale`` returning ``None``),
``compiled`` (``from_data=False``, HiGHS). For the dense path the returned model is checked
against CVXPY (Clarabel) on the same weighted subproblem: the hinge QP at the weights the model
was certified at (``info["penalty_weights"]``), its optimal value against the certified objective.
CPU seconds by ``time.process_time`` with one BLAS thread (the machine is shared: wall time says
little); peak memory by ``ru_maxrss`` of the process so far. Writes
``benchmarks/results/twonorm_kernel_em.json`` (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402

GRID = [(s, c) for s in (0.5, 1.0, 2.0, 4.0) for c in (0.1, 1.0, 10.0)]


def _fold(data_dir: Path, m: int):
    import pandas as pd
    from sklearn.model_selection import StratifiedKFold

    df = pd.read_csv(data_dir / "twonorm.tsv.gz", sep="\t")
    X, y = df.drop(columns="target").to_numpy(float), df["target"].to_numpy()
    train, _ = next(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
    Xa, ya = X[train][:m], y[train][:m]
    return (Xa - Xa.mean(0)) / Xa.std(0), ya


def _cvxpy_value(K, y_pm, C, quad) -> float:
    """The optimal value of ``min C sum hinge + sum q w^2`` over the groups with ``q > 0`` (the
    others fixed at zero: ``penalty_weights`` writes a fixed group's weight as 0)."""
    import cvxpy as cp

    live = quad > 0
    w, b = cp.Variable(int(live.sum())), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y_pm, K[:, live] @ w + b)))
    prob = cp.Problem(cp.Minimize(C * hinge + cp.sum(cp.multiply(quad[live], cp.square(w)))))
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


def _one(X, y, sigma, C, path, reference=True) -> dict:
    import fsframe
    import fsframe.dense_em as de
    from fsframe.errors import FsframeError
    from fsframe.kernels import EmpiricalKernelMap
    from fsframe.working_set import WorkingSetOptions

    ws = WorkingSetOptions(from_data=False) if path == "compiled" else "auto"
    saved = de.warm_scale
    if path == "no-warm-scale":
        de.warm_scale = lambda F: None
    c0 = time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C, working_set=ws)
    except FsframeError as exc:  # a path that fails is a finding, recorded with its message
        return {"sigma": sigma, "C": C, "path": path, "cpu_seconds": time.process_time() - c0,
                "error": f"{type(exc).__name__}: {exc}"[:400]}
    finally:
        de.warm_scale = saved
    cpu = time.process_time() - c0
    out = {"sigma": sigma, "C": C, "path": path, "solver_path": r.info.get("solver_path", "compiled"),
           "cpu_seconds": cpu, "n_iter": r.n_iter, "n_sv": int(np.count_nonzero(r.coef)),
           "support": np.flatnonzero(r.coef).tolist(), "objective": float(r.objective),
           "certified_objective": r.certificate.get("objective"), "pivots": r.info.get("dense_em_pivots"),
           "stop_reason": r.info.get("stop_reason"), "dense_em_fallback": r.info.get("dense_em_fallback")}
    if reference and path == "dense" and out["certified_objective"] is not None:
        K = EmpiricalKernelMap(kernel="rbf", sigma=sigma).fit(X).transform(X)
        y_pm = np.where(y == r.classes[1], 1.0, -1.0)
        ref = _cvxpy_value(K, y_pm, C, np.asarray(r.info["penalty_weights"]["quad"], dtype=float))
        out["cvxpy_objective"] = ref
        out["cvxpy_rel_diff"] = (out["certified_objective"] - ref) / max(1.0, abs(ref))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, "twonorm.tsv.gz")
    ap.add_argument("--rows", type=int, nargs="+", default=[500, 1000])
    ap.add_argument("--paths", nargs="+", default=["dense", "no-warm-scale", "compiled"])
    ap.add_argument("--points", nargs="+", metavar="SIGMA,C", help="these grid points only (default: the grid)")
    ap.add_argument("--no-reference", action="store_true", help="skip the CVXPY check (large m)")
    ap.add_argument("--append", action="store_true", help="add the rows to those already in --json")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "twonorm_kernel_em.json")
    args = ap.parse_args(argv)
    args.data_dir = data_folder(ap, args.data_dir, ["twonorm.tsv.gz"])  # status 2 without the file
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(limits=1):
        for m in args.rows:
            X, y = _fold(args.data_dir, m)
            points = [tuple(map(float, p.split(","))) for p in args.points] if args.points else GRID
            for sigma, C in points:
                for path in args.paths:
                    rec = _one(X, y, sigma, C, path, reference=not args.no_reference)
                    rec.update(m=m, maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
                    rows.append(rec)
                    print(json.dumps({k: v for k, v in rec.items() if k != "support"}), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(args.json.read_text())["rows"] if args.append and args.json.exists() else []
    args.json.write_text(json.dumps({"load_average": os.getloadavg(), "rows": old + rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
