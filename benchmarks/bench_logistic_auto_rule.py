"""Where a working set pays on the logistic loss: one ``l1-logistic`` fit with ``working_set=True``
against ``working_set=False`` per size and backend (issue 23), the measurement behind
``WorkingSetOptions.min_ratio_exp`` (``working_set="auto"`` on exponential-cone problems).

Data: Gaussian ``X`` (``m x n``), 8 true features with coefficients ``+-1.5``, labels from the
logistic model with intercept 0.3, seed 0; ``C`` five times the ``C`` at which the first feature
enters. Per row: CPU seconds of each fit (``time.process_time``, one process, after the imports),
their objectives and supports, the working set's final size and rounds.

    OMP_NUM_THREADS=1 nice python benchmarks/bench_logistic_auto_rule.py 200x150 200x400 500x1000

Writes ``benchmarks/results/logistic_auto_rule.json`` (rows appended per run) and prints the
Markdown table of docs/performance.md, "Logistic: the automatic working-set rule".
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "logistic_auto_rule.json"


def data(m: int, n: int, seed: int = 0, k: int = 8):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[rng.choice(n, k, replace=False)] = rng.choice([-1.5, 1.5], k)
    y = np.where(rng.random(m) < 1.0 / (1.0 + np.exp(-(X @ beta + 0.3))), 1, -1)
    return X, y


def measure(m: int, n: int, backend: str) -> dict:
    import fsframe
    from fsframe_glm import LogisticFormulation

    X, y = data(m, n)
    C = 5.0 / LogisticFormulation().empty_model_threshold(X, y)
    row = {"m": m, "n": n, "backend": backend, "load": os.getloadavg()[0]}
    for ws in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            r = fsframe.fit(X, y, method="l1-logistic", C=C, working_set=ws, backend=backend)
            row[f"cpu_{ws}"] = time.process_time() - t0
        row[f"obj_{ws}"] = r.objective
        row[f"support_{ws}"] = r.selected.tolist()
        row[f"n_selected_{ws}"] = len(r.selected)
        if ws:
            row["working_set"], row["rounds"] = r.certificate["working_set"], r.certificate["rounds"]
    row["full_over_ws"] = row["cpu_False"] / row["cpu_True"]
    row["obj_rel"] = (row["obj_True"] - row["obj_False"]) / abs(row["obj_False"])
    return row


def table(rows: list) -> str:
    out = ["| m x n | backend | working set / full (CPU s) | ratio | objective rel. | supports (ws / full) |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['m']} x {r['n']} | {r['backend']} | {r['cpu_True']:.2f} / {r['cpu_False']:.2f} | "
                   f"{r['full_over_ws']:.2f} | {r['obj_rel']:.1e} | {r['n_selected_True']} / {r['n_selected_False']} |")
    return "\n".join(out)


def main(argv: list) -> int:
    import fsframe

    sizes = [tuple(int(v) for v in a.split("x")) for a in (argv or ["200x150", "200x200", "200x300", "200x400",
                                                                      "500x500", "500x1000"])]
    fsframe.fit(*data(30, 40), method="l1-logistic")  # the imports, outside the timings
    res = json.loads(OUT.read_text()) if OUT.exists() else {"rows": []}
    res["meta"] = {"python": platform.python_version(), "machine": platform.machine()}
    for m, n in sizes:
        for backend in ("clarabel", "ecos"):
            row = measure(m, n, backend)
            print(json.dumps({k: v for k, v in row.items() if not k.startswith("support")}), flush=True)
            res["rows"].append(row)
            OUT.write_text(json.dumps(res, indent=1))
    print(table(res["rows"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
