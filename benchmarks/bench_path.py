"""Parameter paths (issue 13): ``fsframe.path`` against independent ``fsframe.fit`` calls at the
same grid points, in the same process.

For dense random data (seeded, ``bench_core.make_data``: m = 200, 10 informative features):

* ``fsv`` over 10 values of ``alpha`` (a surrogate parameter: one subproblem for the whole path);
* ``l1-svm`` over 10 values of ``C`` (a restatable formulation parameter: the slack costs change
  in the compiled LP and in the live HiGHS model, no rebuild).

Every point of the path is checked against its independent fit (objective to 1e-7 relative, same
support); the script fails loudly if one differs.

Usage::

    python benchmarks/bench_path.py [--sizes 1000,5000] [--reps 3] [--points 10] [--quick]

Writes ``benchmarks/results/path.json`` and prints the Markdown table of docs/performance.md
("Parameter paths"). Medians over ``--reps`` interleaved repetitions.
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
from bench_core import make_data, median  # noqa: E402

GRIDS = {"fsv": ("alpha", lambda k: np.geomspace(0.5, 20.0, k)),
         "l1-svm": ("C", lambda k: np.geomspace(0.01, 1.0, k))}


def run_path(X, y, method, name, grid):
    import fsframe

    gc.collect()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        P = fsframe.path(X, y, method, **{name: list(grid)})
    total = time.perf_counter() - t0
    build = sum(p.result.info["build_seconds"] + p.result.info["compile_seconds"]
                for p, w in zip(P.points, [p.warm for p in P.points]) if w in ("cold", "seeded", "new"))
    solve = sum(p.result.info["solve_seconds"] for p in P.points)
    return {"total": total, "build_compile": build, "solve": solve, "n_subproblems": P.n_subproblems,
            "n_iter": sum(p.n_iter for p in P.points), "warm": [p.warm for p in P.points],
            "objective": [p.objective for p in P.points],
            "support": [np.flatnonzero(p.support).tolist() for p in P.points],
            "n_selected": [p.n_selected for p in P.points]}


def run_fits(X, y, method, name, grid):
    import fsframe

    gc.collect()
    out = {"total": 0.0, "build_compile": 0.0, "solve": 0.0, "n_iter": 0, "objective": [], "support": []}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for v in grid:
            r = fsframe.fit(X, y, method, **{name: float(v)})
            out["build_compile"] += r.info["build_seconds"] + r.info["compile_seconds"]
            out["solve"] += r.info["solve_seconds"]
            out["n_iter"] += r.n_iter
            out["objective"].append(r.objective)
            out["support"].append(np.flatnonzero(r.support).tolist())
    out["total"] = time.perf_counter() - t0
    return out


def check_same(path, fits, label):
    for k, (a, b) in enumerate(zip(path["objective"], fits["objective"])):
        if abs(a - b) > 1e-7 * max(1.0, abs(b)) or path["support"][k] != fits["support"][k]:
            raise SystemExit(f"{label}: point {k} differs from its independent fit: objective {a!r} vs {b!r}, "
                             f"support sizes {len(path['support'][k])} vs {len(fits['support'][k])}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--points", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="n = 1000, one repetition, 4 points")
    ap.add_argument("--out", default=str(HERE / "results" / "path.json"))
    args = ap.parse_args(argv)
    sizes = [1000] if args.quick else [int(s) for s in args.sizes.split(",")]
    reps, points = (1, 4) if args.quick else (args.reps, args.points)
    rows = []
    for n in sizes:
        X, y = make_data(n)
        for method, (name, grid_of) in GRIDS.items():
            grid = grid_of(points)
            runs_p, runs_f = [], []
            for _ in range(reps):  # interleaved
                runs_p.append(run_path(X, y, method, name, grid))
                runs_f.append(run_fits(X, y, method, name, grid))
                check_same(runs_p[-1], runs_f[-1], f"{method} n={n}")
            row = {"method": method, "parameter": name, "grid": grid.tolist(), "m": X.shape[0], "n": n,
                   "path": {k: median([r[k] for r in runs_p]) for k in ("total", "build_compile", "solve")},
                   "fits": {k: median([r[k] for r in runs_f]) for k in ("total", "build_compile", "solve")},
                   "n_subproblems": runs_p[0]["n_subproblems"], "warm": runs_p[0]["warm"],
                   "n_iter_path": runs_p[0]["n_iter"], "n_iter_fits": runs_f[0]["n_iter"],
                   "n_selected": runs_p[0]["n_selected"], "reps": reps}
            for part in (row["path"], row["fits"]):  # a subproblem builds on its first solve: keep them apart
                part["solve"] -= part["build_compile"]
            row["ratio"] = row["path"]["total"] / row["fits"]["total"]
            rows.append(row)
            print(f"{method} n={n}: path {row['path']['total']:.2f} s, fits {row['fits']['total']:.2f} s, "
                  f"ratio {row['ratio']:.2f}", file=sys.stderr)
    import fsframe

    result = {"benchmark": "path", "date": _dt.date.today().isoformat(), "fsframe": fsframe.__version__,
              "command": "python benchmarks/bench_path.py " + " ".join(argv if argv is not None else sys.argv[1:]),
              "rows": rows}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(table(rows))


def table(rows) -> str:
    head = ("| method | grid | n | path (s) | independent fits (s) | ratio | build+compile path / fits (s) "
            "| solve path / fits (s, build excluded) | subproblems built | outer iterations path / fits |")
    out = [head, "|---" * 10 + "|"]
    for r in rows:
        p, f = r["path"], r["fits"]
        out.append(f"| {r['method']} | {len(r['grid'])} x {r['parameter']} | {r['n']} | {p['total']:.2f} | "
                   f"{f['total']:.2f} | {r['ratio']:.2f} | {p['build_compile']:.2f} / {f['build_compile']:.2f} | "
                   f"{p['solve']:.2f} / {f['solve']:.2f} | {r['n_subproblems']} | "
                   f"{r['n_iter_path']} / {r['n_iter_fits']} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
