"""Least squares at the support-recovery benchmark's sizes: one ``l1-ls`` fit against
scikit-learn's ``Lasso`` and CVXPY + Clarabel on the same problem, in one process (issue 23).

The data are ``support_recovery.make_data("regression", rho, SNR 5, seed 0, p)`` (n = 500 samples,
k = 10 true features) and ``C`` is that benchmark's: five times the ``C`` at which the first
feature enters, ``C = 5 / ||Xᵀ(y - ȳ)||_inf``. scikit-learn's ``Lasso(alpha)`` minimises
``1/(2n) ||r||^2 + alpha ||w||_1``; with ``alpha = 1 / (n C)`` that is fsframe's objective
``||w||_1 + C/2 ||r||^2`` times ``alpha`` (same coefficients; the intercept is unpenalised in
both). CVXPY states fsframe's objective as written. Each contender's objective is computed in numpy
from its returned ``(w, b)``; the table gives it relative to the smallest, and the support (weights
above 1e-6 of the largest) against CVXPY's.

fsframe runs with ``working_set="auto"`` (the default), ``True`` and ``False`` (the full QP):
its answer is certified on the full problem either way. Times are medians of ``--reps`` runs,
wall clock and the process's CPU time (BLAS on one thread), the contenders interleaved, after
one untimed warm-up fit of each (imports, first calls).

    nice python benchmarks/bench_ls.py [--reps 3] [--p 1000 --p 5000]

Resumable: each ``(p, rho)`` block is written to ``benchmarks/results/ls.json`` when it ends and
skipped on a rerun. Renders the section between ``<!-- ls_speed:begin -->`` and
``<!-- ls_speed:end -->`` of ``docs/performance.md``.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import head_commit, write_section  # noqa: E402
from support_recovery import K, N, make_data  # noqa: E402  (the same data as the support-recovery run)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "ls.json"
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- ls_speed:begin -->", "<!-- ls_speed:end -->"


def _fsframe(ws):
    def fit(X, y, C):
        import fsframe

        r = fsframe.fit(X, y, method="l1-ls", C=C, working_set=ws)
        cert = r.certificate or {}
        info = {k: cert.get(k) for k in ("working_set", "n_groups", "rounds", "max_violation", "gap")}
        return np.asarray(r.coef, dtype=float), float(r.intercept), info
    return fit


def _lasso(X, y, C):
    from sklearn.linear_model import Lasso

    m = Lasso(alpha=1.0 / (X.shape[0] * C), tol=1e-10, max_iter=200_000).fit(X, y)
    return m.coef_.copy(), float(m.intercept_), None


def _cvxpy(X, y, C):
    import cvxpy as cp

    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + C / 2 * cp.sum_squares(y - X @ w - b)))
    prob.solve(solver=cp.CLARABEL)
    return np.asarray(w.value), float(b.value), None


CONTENDERS = {"fsframe auto": _fsframe("auto"), "fsframe working set": _fsframe(True),
              "fsframe full QP": _fsframe(False), "sklearn Lasso": _lasso, "cvxpy+clarabel": _cvxpy}


def objective(X, y, C, w, b) -> float:
    r = y - X @ w - b
    return float(np.abs(w).sum() + 0.5 * C * r @ r)


def support(w) -> list:
    return np.flatnonzero(np.abs(w) > 1e-6 * max(np.abs(w).max(), 1e-300)).tolist()


def run(ps, rhos, reps) -> dict:
    """Every ``(p, rho)`` block not yet in the JSON; each block is written as soon as it ends
    (a run cut short keeps the blocks it finished; ``meta.blocks`` records each one's reps,
    commit and load average)."""
    from fsframe_glm import LeastSquaresFormulation

    res = json.loads(OUT.read_text()) if OUT.exists() else {"meta": {"n": N, "k": K, "blocks": {}}, "cells": []}
    done = set(res["meta"]["blocks"])
    Xw, yw, *_ = make_data("regression", 0.5, 5.0, 1, 300, n=100)  # warm-up: imports and first calls untimed
    for fit in CONTENDERS.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit(Xw, yw, 5.0 / LeastSquaresFormulation().empty_model_threshold(Xw, yw))
    for p in ps:
        for rho in rhos:
            if f"{p}|{rho}" in done:
                continue
            cells = []
            X, y, *_ = make_data("regression", rho, 5.0, 0, p)
            C = 5.0 / LeastSquaresFormulation().empty_model_threshold(X, y)
            times = {name: [] for name in CONTENDERS}
            answers = {}
            for _ in range(reps):
                for name, fit in CONTENDERS.items():
                    t0, c0 = time.perf_counter(), time.process_time()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        w, b, info = fit(X, y, C)
                    times[name].append((time.perf_counter() - t0, time.process_time() - c0))
                    answers[name] = (w, b, info)
            objs = {name: objective(X, y, C, w, b) for name, (w, b, _) in answers.items()}
            best = min(objs.values())
            ref_support = support(answers["cvxpy+clarabel"][0])
            for name in CONTENDERS:
                wall = float(np.median([t[0] for t in times[name]]))
                cpu = float(np.median([t[1] for t in times[name]]))
                cells.append({"p": p, "rho": rho, "C": C, "contender": name, "wall": wall, "cpu": cpu,
                              "objective": objs[name], "objective_rel": (objs[name] - best) / best,
                              "n_selected": len(support(answers[name][0])),
                              "same_support": support(answers[name][0]) == ref_support,
                              "working_set": answers[name][2]})
                print(cells[-1], flush=True)
            res["cells"] += cells
            res["meta"]["blocks"][f"{p}|{rho}"] = {"reps": reps, "python": platform.python_version(),
                                                   "load_average": list(os.getloadavg()), "commit": _commit()}
            OUT.write_text(json.dumps(res, indent=1))
    return res


def _commit() -> str:
    return head_commit(ROOT)


def markdown(res: dict) -> str:
    meta = res["meta"]
    runs = "; ".join(f"p = {key.split('|')[0]}, rho = {key.split('|')[1]}: medians of {b['reps']} at commit "
                     f"`{b['commit']}`, load average {', '.join(f'{v:.1f}' for v in b['load_average'])}"
                     + (f" ({b['note']})" if b.get("note") else "") for key, b in meta["blocks"].items())
    lines = [f"`l1-ls` at n = {meta['n']} (support-recovery data, SNR 5, seed 0, `C` = 5 / the entry threshold); "
             f"{runs}. Objective: fsframe's `||w||_1 + C/2 ||r||^2` "
             "of each returned `(w, b)`, relative to the smallest; support against CVXPY's.", "",
             "| p | rho | contender | wall s | CPU s | CPU / sklearn Lasso | CPU / CVXPY | objective rel. | selected | same support |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for c in res["cells"]:
        by[(c["p"], c["rho"], c["contender"])] = c
    for c in res["cells"]:
        sk = by[(c["p"], c["rho"], "sklearn Lasso")]["cpu"]
        cv = by[(c["p"], c["rho"], "cvxpy+clarabel")]["cpu"]
        lines.append(f"| {c['p']} | {c['rho']:g} | {c['contender']} | {c['wall']:.3f} | {c['cpu']:.3f} | "
                     f"{c['cpu'] / sk:.1f} | {c['cpu'] / cv:.2f} | {c['objective_rel']:.1e} | {c['n_selected']} | "
                     f"{'yes' if c['same_support'] else 'no'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--p", type=int, action="append")
    ap.add_argument("--rho", type=float, action="append")
    ap.add_argument("--render", action="store_true", help="only re-render the section from the JSON")
    args = ap.parse_args(argv)
    res = json.loads(OUT.read_text()) if args.render else run(args.p or [1000, 5000], args.rho or [0.5], args.reps)
    text = markdown(res)
    print(text)
    write_section(DOC, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
