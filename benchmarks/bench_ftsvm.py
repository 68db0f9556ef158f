"""FTSVM speed (issue 10): one full FTSVM fit (003 Algorithm 1) against the same algorithm
written naively, in the same process.

* ``fsframe``: ``fsframe.fit(X, y, "ftsvm", ...)`` — the model is built and compiled once; a mask
  change fixes columns by bounds (linear) or rewrites the kernel entries of the compiled problem
  (RBF) and re-solves in the same HiGHS session; the flip sweep updates eq. 24 incrementally
  (O(m) per flip linear, O(m^2) kernel factor per flip RBF).
* ``naive``: the same algorithm (same initial mask, same sweep order, same acceptance rule, same
  stopping rule), but every solve builds and compiles a new model on the masked data, and every
  flip recomputes eq. 24 from scratch (``X[:, E] W`` linear; the whole kernel ``K(A E, A E)`` RBF).

Both must end with the same mask (checked). Data: m = 200 seeded Gaussian samples, 5 informative
features, n in {60, 500, 2000}. Reports LPs solved, flips evaluated, seconds and the ratio.

Usage::

    python benchmarks/bench_ftsvm.py [--sizes 60,500,2000] [--kernels linear,rbf] [--naive-max-rbf 500] [--write-docs]

Writes ``benchmarks/results/ftsvm.json``. The naive RBF run at n = 2000 recomputes a 200 x 200
kernel over up to 2000 features for each of thousands of flips; it is skipped above
``--naive-max-rbf`` (default 500) and reported as such.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
import sys
from pathlib import Path

import numpy as np

import fsframe
from fsframe.backends import HighsBackend
from fsframe.problem import Subproblem
from fsframe_twsvm import TwinL1Formulation, rbf_kernel, twin_loss
from fsframe_twsvm.toy import k_informative

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_section  # noqa: E402  (one writer of the docs sections)

OUT = Path(__file__).parent / "results" / "ftsvm.json"
PARAMS = dict(c11=1.0, c12=1.0, c21=1.0, c22=1.0, lam=0.5)
SIGMA, TOL, MAX_ITER, MAX_SWEEPS = 0.01, 1e-6, 20, 50


def data(m: int, n: int, k: int = 5, seed: int = 0):
    X, y = k_informative(m, n, k, seed=seed)
    return X, y.astype(float)


def naive_ftsvm(X, y, kernel: str, width: float | None):
    """Algorithm 1 with a rebuild per mask and eq. 24 from scratch per flip."""
    m, n = X.shape
    loss = twin_loss(y > 0, **{k: PARAMS[k] for k in ("c11", "c12", "c21", "c22", "lam")})
    counts = dict(lps_solved=0, flips_evaluated=0, sweep_seconds=0.0)

    def solve(mask):
        f = TwinL1Formulation(**PARAMS, kernel=kernel, width=width)
        sub = Subproblem(f, X[:, mask], y, frozenset({"lin"}), HighsBackend())
        it = sub.solve(lin=np.ones(sub.n_groups))
        sub.close()
        counts["lps_solved"] += 2
        blocks = it.coef.reshape(2, -1).T
        if kernel == "linear":
            W = np.zeros((n, 2))
            W[mask] = blocks
        else:
            W = blocks
        return it, W, np.asarray(it.intercept).reshape(2)

    def eq24(mask, W, b):
        if kernel == "linear":
            return float(loss(X[:, mask] @ W[mask] + b))
        return float(loss(rbf_kernel(X[:, mask], X[:, mask], width) @ W + b))

    def values(W, b):
        if kernel == "linear":
            return np.array([float(loss(X[:, [i]] @ W[[i]] + b)) for i in range(n)])
        return np.array([float(loss(rbf_kernel(X[:, [i]], X[:, [i]], width) @ W + b)) for i in range(n)])

    mask = np.ones(n, dtype=bool)
    it, W, b = solve(mask)
    v = values(W, b)
    scores = v / v.sum()
    mask = scores <= 1.0 / n
    if not mask.any():
        mask[np.argmin(scores)] = True
    it, W, b = solve(mask)
    F = SIGMA * mask.sum() + it.objective
    for _ in range(2, MAX_ITER):
        t_sweep = time.perf_counter()
        cur = SIGMA * mask.sum() + eq24(mask, W, b)
        kept = False
        for _ in range(MAX_SWEEPS):
            drop = 0.0
            for j in range(n):
                if mask[j] and mask.sum() == 1:
                    continue
                mask[j] = ~mask[j]
                new = SIGMA * mask.sum() + eq24(mask, W, b)
                counts["flips_evaluated"] += 1
                if cur - new > TOL:
                    drop += cur - new
                    cur = new
                    kept = True
                else:
                    mask[j] = ~mask[j]
            if drop <= TOL:
                break
        counts["sweep_seconds"] += time.perf_counter() - t_sweep
        if not kept:
            break
        it, W, b = solve(mask)
        F_new = SIGMA * mask.sum() + it.objective
        if F_new >= F - TOL * max(1.0, abs(F)):
            break
        F = F_new
    return mask, counts


def run(n: int, kernel: str, naive_max_rbf: int) -> dict:
    X, y = data(200, n)
    width = float(np.sqrt(n * X.var() / 2.0)) if kernel == "rbf" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        r = fsframe.fit(X, y, "ftsvm", kernel=kernel, width=width, sigma=SIGMA, tol=TOL, max_iter=MAX_ITER,
                        max_sweeps=MAX_SWEEPS, zero_tol=1e-12, **PARAMS)
        fast = time.perf_counter() - t0
    row = dict(n=n, kernel=kernel, m=200, fsframe_seconds=fast, lps_solved=r.info["lps_solved"],
               flips_evaluated=r.info["flips_evaluated"], sweep_seconds=r.info["sweep_seconds"],
               n_selected=r.n_selected, build_seconds=r.info["build_seconds"],
               compile_seconds=r.info["compile_seconds"], solve_seconds=r.info["solve_seconds"])
    if kernel == "rbf" and n > naive_max_rbf:
        row["naive"] = f"skipped (n > --naive-max-rbf {naive_max_rbf})"
        return row
    t0 = time.perf_counter()
    mask, counts = naive_ftsvm(X, y, kernel, width)
    slow = time.perf_counter() - t0
    row.update(naive_seconds=slow, naive_lps_solved=counts["lps_solved"],
               naive_flips_evaluated=counts["flips_evaluated"], naive_sweep_seconds=counts["sweep_seconds"],
               ratio=slow / fast, sweep_ratio=counts["sweep_seconds"] / max(r.info["sweep_seconds"], 1e-12),
               same_mask=bool(np.array_equal(mask, r.transform.mask if r.transform is not None else r.support)))
    return row


DOC = Path(__file__).resolve().parents[1] / "docs" / "twsvm.md"
BEGIN, END = "<!-- bench_ftsvm:begin -->", "<!-- bench_ftsvm:end -->"


def table(rows: list) -> str:
    """The docs table: per fit, LPs solved, flips evaluated, seconds (sweep seconds) and the ratios."""
    out = ["| kernel | n | selected | LPs | flips | fsframe s (sweeps s) | naive s (sweeps s) | ratio (sweeps) |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        fast = f"{r['fsframe_seconds']:.2f} ({r['sweep_seconds']:.2f})"
        if "naive_seconds" in r:
            slow = f"{r['naive_seconds']:.2f} ({r['naive_sweep_seconds']:.2f})"
            ratio = f"{r['ratio']:.1f}x ({r['sweep_ratio']:.1f}x)" + ("" if r["same_mask"] else ", masks differ")
        else:
            slow, ratio = r["naive"], "-"
        out.append(f"| {r['kernel']} | {r['n']} | {r['n_selected']} | {r['lps_solved']} | {r['flips_evaluated']} "
                   f"| {fast} | {slow} | {ratio} |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="60,500,2000")
    ap.add_argument("--kernels", default="linear,rbf")
    ap.add_argument("--naive-max-rbf", type=int, default=500)
    ap.add_argument("--write-docs", action="store_true", help="write the table into docs/twsvm.md")
    ap.add_argument("--render", action="store_true", help="only write the docs table from the results JSON")
    args = ap.parse_args(argv)
    if args.render:
        write_section(DOC, BEGIN, END, table(json.loads(OUT.read_text())["rows"]))
        return
    rows = []
    for kernel in args.kernels.split(","):
        for n in map(int, args.sizes.split(",")):
            row = run(n, kernel, args.naive_max_rbf)
            print(json.dumps(row), flush=True)
            rows.append(row)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"rows": rows, "highs": HighsBackend.version()}, indent=1))
    if args.write_docs:
        write_section(DOC, BEGIN, END, table(rows))


if __name__ == "__main__":
    main()
