"""Working sets (issue 13): one L1-SVM fit and full FSV / EM runs, with and without working sets,
against raw HiGHS on the full LP and CVXPY, in the same process.

For dense random data (seeded, ``bench_core.make_data``: m = 200, 10 informative features):

* ``raw``      highspy on prebuilt matrices for the full L1-SVM LP (u/v split): hand-over + solve;
* ``full``     ``fsframe.fit(X, y, "l1-svm", working_set=False)``: build, compile, one full LP;
* ``ws``       the same with ``working_set=True``: restricted LPs grown by pricing (same objective,
               same support; checked);
* ``cvxpy``    the split LP in CVXPY on Clarabel (``--no-cvxpy`` skips; at n = 20 000 it is slow);
* ``fsv`` / ``em-l0`` full runs, ``working_set=False`` vs ``True`` (same support; objectives compared).

Usage::

    python benchmarks/bench_working_set.py [--sizes 1000,5000,20000] [--reps 3] [--loops-sizes 5000,20000]
                                           [--loop-reps 1] [--no-cvxpy] [--quick] [--before-tree PATH]

Writes ``benchmarks/results/working_set.json`` and prints the Markdown tables of
docs/performance.md ("Working sets"). Medians over ``--reps`` interleaved repetitions.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_core import make_data, median, raw_highs  # noqa: E402


def fit(X, y, method, ws, **kw):
    import fsframe

    gc.collect()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method, working_set=ws, **kw)
    total = time.perf_counter() - t0
    cert = r.certificate
    return {"total": total, "build": r.info["build_seconds"], "compile": r.info["compile_seconds"],
            "solve": r.info["solve_seconds"], "objective": r.objective, "n_iter": r.n_iter,
            "support": np.flatnonzero(r.support).tolist(), "working_set": cert.get("working_set"),
            "rounds": cert.get("rounds"), "gap": cert.get("gap"), "max_violation": cert.get("max_violation")}


def cvxpy_l1svm(X, y, C=1.0):
    import cvxpy as cp

    m, n = X.shape
    t0 = time.perf_counter()
    u, v = cp.Variable(n, nonneg=True), cp.Variable(n, nonneg=True)
    b, xi = cp.Variable(), cp.Variable(m, nonneg=True)
    YX = y[:, None] * X
    prob = cp.Problem(cp.Minimize(cp.sum(u) + cp.sum(v) + C * cp.sum(xi)),
                      [YX @ (u - v) + y * b + xi >= 1])
    prob.solve(solver=cp.CLARABEL)
    return {"total": time.perf_counter() - t0, "objective": float(prob.value), "status": prob.status}


def warm_up():
    """One small fit of each kind first: the lazy imports (Pyomo, SciPy, the solvers) are paid
    once per process, not by the first timed contender."""
    X, y = make_data(300)
    for method in ("l1-svm", "em-l0"):
        fit(X, y, method, True)
    raw_highs(X, y)


def l1svm_rows(sizes, reps, use_cvxpy):
    rows = []
    for n in sizes:
        X, y = make_data(n)
        runs = {"raw": [], "full": [], "ws": [], "cvxpy": []}
        for _ in range(reps):
            runs["raw"].append(raw_highs(X, y))
            runs["ws"].append(fit(X, y, "l1-svm", True))
            runs["full"].append(fit(X, y, "l1-svm", False))
            if use_cvxpy:
                runs["cvxpy"].append(cvxpy_l1svm(X, y))
        raw = median([r["handover"] + r["solve"] for r in runs["raw"]])
        ws, full = runs["ws"][0], runs["full"][0]
        row = {"n": n, "raw": raw, "raw_solve": median([r["solve"] for r in runs["raw"]]),
               "full": median([r["total"] for r in runs["full"]]), "ws": median([r["total"] for r in runs["ws"]]),
               "ws_solve": median([r["solve"] for r in runs["ws"]]),
               "ws_build_compile": median([r["build"] + r["compile"] for r in runs["ws"]]),
               "cvxpy": median([r["total"] for r in runs["cvxpy"]]) if use_cvxpy else None,
               "working_set": ws["working_set"], "rounds": ws["rounds"],
               "objective_rel_diff": abs(ws["objective"] - runs["raw"][0]["objective"]) / abs(runs["raw"][0]["objective"]),
               "same_support": ws["support"] == full["support"], "gap": ws["gap"], "runs": runs}
        rows.append(row)
        print(f"l1-svm n={n}: raw {raw:.3f}s, full {row['full']:.3f}s, ws {row['ws']:.3f}s "
              f"({row['ws'] / raw:.2f}x raw), |WS|={row['working_set']}, rounds {row['rounds']}", flush=True)
    return rows


def loop_rows(sizes, reps, methods=("fsv", "em-l0")):
    rows = []
    for n in sizes:
        X, y = make_data(n)
        for method in methods:
            runs = {"full": [], "ws": []}
            for _ in range(reps):
                runs["ws"].append(fit(X, y, method, True))
                runs["full"].append(fit(X, y, method, False))
            ws, full = runs["ws"][0], runs["full"][0]
            row = {"n": n, "method": method, "full": median([r["total"] for r in runs["full"]]),
                   "ws": median([r["total"] for r in runs["ws"]]), "n_iter": (full["n_iter"], ws["n_iter"]),
                   "support": len(ws["support"]), "same_support": ws["support"] == full["support"],
                   "objective_rel_diff": abs(ws["objective"] - full["objective"]) / max(abs(full["objective"]), 1e-12),
                   "working_set": ws["working_set"], "runs": runs}
            rows.append(row)
            print(f"{method} n={n}: full {row['full']:.2f}s, ws {row['ws']:.2f}s ({row['ws'] / row['full']:.2f}x), "
                  f"support {row['support']} same={row['same_support']}", flush=True)
    return rows


BEFORE_SCRIPT = r"""
import sys, time, warnings, json
tree = sys.argv[1]
sys.path[:0] = [tree, tree + "/plugins", tree + "/benchmarks"]
import fsframe
from bench_core import make_data
assert fsframe.__file__.startswith(tree), fsframe.__file__
for n in [int(v) for v in sys.argv[2].split(",")]:
    X, y = make_data(n)
    for method in ("em-l0", "fsv"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter(); r = fsframe.fit(X, y, method); dt = time.perf_counter() - t
        print(json.dumps({"n": n, "method": method, "seconds": dt, "n_iter": r.n_iter,
                          "support": int(r.support.sum()), "objective": r.objective}), flush=True)
"""


def before_rows(tree: str, sizes) -> list:
    """The same ``fsv`` / ``em-l0`` runs on another checkout (e.g. ``git worktree add /tmp/before 8fe8dee``:
    the code before working sets), in a subprocess whose ``sys.path`` starts with it."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", BEFORE_SCRIPT, tree, ",".join(map(str, sizes))],
                         capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    for r in rows:
        print(f"before {r['method']} n={r['n']}: {r['seconds']:.2f}s", flush=True)
    return rows


def markdown(l1, loops) -> str:
    out = ["| n | raw HiGHS (full LP) | fsframe full | fsframe working set | ratio to raw | CVXPY+Clarabel | "
           "working set / rounds | same support | objective vs raw |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in l1:
        cv = "-" if r["cvxpy"] is None else f"{r['cvxpy']:.2f} s"
        out.append(f"| {r['n']} | {r['raw']:.2f} s | {r['full']:.2f} s | {r['ws']:.2f} s | {r['ws'] / r['raw']:.2f} | {cv} | "
                   f"{r['working_set']} / {r['rounds']} | {r['same_support']} | {r['objective_rel_diff']:.1e} |")
    out += ["", "| method | n | full-set run | working-set run | ratio | iterations (full, ws) | support | same support | objective rel. diff |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in loops:
        out.append(f"| {r['method']} | {r['n']} | {r['full']:.2f} s | {r['ws']:.2f} s | {r['ws'] / r['full']:.2f} | "
                   f"{r['n_iter'][0]}, {r['n_iter'][1]} | {r['support']} | {r['same_support']} | {r['objective_rel_diff']:.1e} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,5000,20000")
    ap.add_argument("--loops-sizes", default="5000,20000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--loop-reps", type=int, default=1, help="repetitions of the fsv / em-l0 runs")
    ap.add_argument("--no-cvxpy", action="store_true")
    ap.add_argument("--before-tree", metavar="PATH",
                    help="also time fsv / em-l0 on this checkout (the code before; see before_rows)")
    ap.add_argument("--quick", action="store_true", help="n = 1000 and 2000, one repetition, no file written")
    a = ap.parse_args(argv)
    if a.quick:
        a.sizes, a.loops_sizes, a.reps = "1000", "2000", 1
    sizes = [int(s) for s in a.sizes.split(",") if s]
    warm_up()
    l1 = l1svm_rows(sizes, a.reps, not a.no_cvxpy)
    loops = loop_rows([int(s) for s in a.loops_sizes.split(",") if s], a.loop_reps)
    before = before_rows(a.before_tree, [int(v) for v in a.loops_sizes.split(",") if v]) if a.before_tree else []
    table = markdown(l1, loops)
    print(table)
    if not a.quick:
        out = HERE / "results" / "working_set.json"
        out.write_text(json.dumps({"date": _dt.datetime.now().isoformat(timespec="seconds"), "l1svm": l1,
                                   "loops": loops, "before": before, "table": table}, indent=1, default=str))
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
