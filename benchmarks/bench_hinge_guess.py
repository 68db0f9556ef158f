"""The first LP's guess of ``solve_l1_hinge`` (issue 19): how each start does on dense
``bench_scale.make_data(m, n)`` at ``C = 1``, in one process per size, CPU seconds.

For each ``--guesses`` entry (``none``: the correlation start, top ``max(100, m // 2)`` features by
``|X'y|`` and every sample; ``prox``: the first-order guess; ``svc``: scikit-learn's ``LinearSVC``
with the squared hinge; ``subsample``: the LP on a fifth of the samples), ``--repeat`` times
alternating: the whole solve's CPU, the guess's own CPU, rounds, simplex pivots, each round's LP
CPU, the objective, the final support and how many guessed features it holds (``hits``).

Usage::

    python benchmarks/bench_hinge_guess.py --sizes 500x5000,1000x10000 [--guesses none,prox,svc,subsample]
                                           [--repeat 2]

Run it under ``nice -n 10``. Writes ``benchmarks/results/hinge_guess.json`` (cases accumulate; a
size run again replaces its entries) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_scale import make_data  # noqa: E402


def run_size(m: int, n: int, guesses: list, repeat: int) -> list:
    from fsframe.backends.hinge_generation import solve_l1_hinge

    X, y = make_data(m, n)
    for g in ("svc", "prox"):  # imports (scikit-learn, threadpoolctl) outside the timings
        solve_l1_hinge(X[:60, :300], y[:60], 1.0, guess=g)
    out = []
    for rep in range(repeat):
        for g in guesses:
            c0 = time.process_time()
            r = solve_l1_hinge(X, y, 1.0, guess=None if g == "none" else g)
            cpu = time.process_time() - c0
            first, last = r.rounds[0]["guess"], r.rounds[-1]["guess"]
            out.append({"m": m, "n": n, "guess": g, "repeat": rep, "cpu_s": cpu, "guess_s": first["seconds"],
                        "rounds": len(r.rounds), "pivots": sum(x["simplex_iterations"] for x in r.rounds),
                        "lp_s": [x["lp_seconds"] for x in r.rounds], "objective": r.objective,
                        "support": int(np.count_nonzero(r.coef)), "guessed_features": first["features"],
                        "guessed_samples": first["samples"], "hits": last["hits"],
                        "status": r.certificate["status"], "gap": r.certificate["gap"]})
            print(json.dumps(out[-1]), file=sys.stderr, flush=True)
    return out


def markdown(rows: list) -> str:
    lines = ["| m × n | guess | CPU (whole solve) | of it the guess | rounds | pivots | guessed features / samples "
             "| final support / of it guessed | objective |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["m"], r["n"], r["guess"], r["repeat"])):
        lines.append(f"| {r['m']} × {r['n']} | {r['guess']} | {r['cpu_s']:.2f} s | {r['guess_s']:.2f} s | {r['rounds']} "
                     f"| {r['pivots']} | {r['guessed_features']} / {r['guessed_samples']} | {r['support']} / {r['hits']} "
                     f"| {r['objective']:.12f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="500x5000")
    p.add_argument("--guesses", default="none,prox,svc,subsample")
    p.add_argument("--repeat", type=int, default=1)
    a = p.parse_args(argv)
    path = ROOT / "benchmarks" / "results" / "hinge_guess.json"
    res = json.loads(path.read_text()) if path.exists() else {"cases": []}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    stamp = {"commit": commit, "date": _dt.datetime.now().isoformat(timespec="seconds")}
    for size in filter(None, a.sizes.split(",")):
        m, n = (int(v) for v in size.lower().split("x"))
        rows = [{**r, **stamp} for r in run_size(m, n, a.guesses.split(","), a.repeat)]
        res["cases"] = [r for r in res["cases"] if (r["m"], r["n"]) != (m, n)] + rows
        path.write_text(json.dumps(res, indent=1) + "\n")
    print(markdown(res["cases"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
