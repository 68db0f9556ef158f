"""``em-l0`` on an RBF kernel map of Twonorm with and without the matrix-free active set for wide
duals (``fsframe.backends.box_qp_pdas``; docs/paper002-dual.md, "The wide duals without an m x m
factorisation"): one fit's CPU on each path, and whether both select the same samples.

    nice -n 5 python benchmarks/bench_twonorm_pdas.py --data-dir DIR --rows 1000 2000 3947 \\
        [--points 0.5,0.1 1,10 ...] [--cpu-limit 300] [--json PATH] [--append] [--measured NOTE]

Each fit runs in its own process (its peak memory is its own ``ru_maxrss``), with one BLAS thread
and at most ``--cpu-limit`` seconds of CPU (``RLIMIT_CPU``: a fit over it is recorded as such, not
waited for). Paths: ``pdas`` (``fit``'s default now) and ``active-set`` (the same fit with
``dense_em.pdas_applies`` returning ``False``: the dense path as before). The data: the first
training fold of Twonorm (5-fold stratified, seed 0), standardised on it, its first ``m`` rows
(``bench_twonorm_kernel_em._fold``). CPU seconds by ``time.process_time`` (the machine is shared).
Writes ``--json`` (default ``benchmarks/results/twonorm_pdas.json``) and prints one JSON line a fit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402

NOTE = ("one em-l0 RBF fit of Twonorm's first training fold (its first m rows) per process, CPU s by process_time, "
        "one BLAS thread, nice -n 5, shared 2-core machine (load_average per row); path 'pdas' is fit's default, "
        "'active-set' the same code with dense_em.pdas_applies returning False; 'error' = stopped at the CPU cap")
"""The results file's ``note`` when it is written afresh (``--append`` keeps the file's own)."""

POINTS = [(s, c) for s in (0.5, 1.0, 4.0) for c in (0.1, 10.0)]


def _child(data_dir: str, m: int, sigma: float, C: float, path: str) -> dict:
    """One fit in this process (the child): CPU, EM iterations, support, objective, the path."""
    import time
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_twonorm_kernel_em import _fold

    import fsframe
    import fsframe.dense_em as de

    if path == "active-set":
        de.pdas_applies = lambda *args: False
    X, y = _fold(Path(data_dir), m)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c0 = time.process_time()
        r = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
        cpu = time.process_time() - c0
    return {"m": m, "sigma": sigma, "C": C, "path": path, "cpu_seconds": round(cpu, 3), "n_iter": r.n_iter,
            "n_sv": int(np.count_nonzero(r.coef)), "support": np.flatnonzero(r.coef).tolist(),
            "objective": float(r.objective), "solver_path": r.info.get("solver_path"),
            "dense_em_fallback": r.info.get("dense_em_fallback"),
            "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def _run(data_dir: Path, m: int, sigma: float, C: float, path: str, cpu_limit: int) -> dict:
    def limit():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_limit, cpu_limit + 5))

    code = (f"import json, sys; sys.path.insert(0, {str(ROOT / 'benchmarks')!r}); import bench_twonorm_pdas as b; "
            f"print('RESULT ' + json.dumps(b._child({str(data_dir)!r}, {m}, {sigma}, {C}, {path!r})))")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, preexec_fn=limit, env=env)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    return {"m": m, "sigma": sigma, "C": C, "path": path, "cpu_seconds": None,
            "error": f"over {cpu_limit} s of CPU" if proc.returncode in (-24, -9) else proc.stderr[-400:]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, "twonorm.tsv.gz")
    ap.add_argument("--rows", type=int, nargs="+", default=[1000])
    ap.add_argument("--points", nargs="+", metavar="SIGMA,C", help="these (sigma, C) only (default: 0.5, 1, 4 x 0.1, 10)")
    ap.add_argument("--paths", nargs="+", default=["pdas", "active-set"])
    ap.add_argument("--cpu-limit", type=int, default=300)
    ap.add_argument("--append", action="store_true", help="add the rows to those already in --json")
    ap.add_argument("--measured", help="a note stored in each new row's 'measured' (when, at which change)")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "twonorm_pdas.json")
    args = ap.parse_args(argv)
    args.data_dir = data_folder(ap, args.data_dir, ["twonorm.tsv.gz"])  # status 2 without the file
    points = [tuple(map(float, p.split(","))) for p in args.points] if args.points else POINTS
    old = json.loads(args.json.read_text()) if args.append and args.json.exists() else {}
    rows, note = old.get("rows", []), old.get("note", NOTE)
    for m in args.rows:
        for sigma, C in points:
            for path in args.paths:
                rec = _run(args.data_dir, m, sigma, C, path, args.cpu_limit)
                rec["load_average"] = os.getloadavg()[0]
                if args.measured:
                    rec["measured"] = args.measured
                rows.append(rec)
                print(json.dumps({k: v for k, v in rec.items() if k != "support"}), flush=True)
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps({"note": note, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
