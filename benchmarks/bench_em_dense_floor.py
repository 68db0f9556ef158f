"""A prototype of the dense EM path for ``em-l0`` (issue 19): what it costs, measured, not a library path.

The ``em-l0`` subproblem is the weighted L2-regularised hinge QP (paper 002 eq. 7)::

    min  sum_j q_j w_j^2 + C sum_i xi_i   s.t.  y_i (x_i w + b) >= 1 - xi_i,  xi >= 0

whose dual over the live groups (``q_j`` finite) is, with ``F = diag(y) X_live diag(1/sqrt(2 q))``,
``min 1/2 ||F' lam||^2 - 1' lam  s.t.  y' lam = 0, 0 <= lam <= C``; then ``w_live = F' lam / sqrt(2 q)``
and ``b`` is the equality's multiplier (:class:`fsframe.backends.box_qp.BoxQPResult`: ``r = F F' lam
+ f + y nu``, so a free multiplier sits on its margin ``y_i (x_i w + nu) = 1``). :class:`DenseHinge`
solves it on arrays — no Pyomo model, no compiled ``ProblemData``, no sparse matrix per step — with
the compiled active set warm-started from the previous step's multipliers, and judges each answer
from products with ``X``: the duality gap ``sum q w^2 + C sum xi - (1' lam - 1/2 ||F' lam||^2)``
(relative), ``|y' lam|`` and the box. It offers what :meth:`fsframe.loops.em.EM.steps` reads of a
subproblem (``solve(quad=)``, ``n_groups``, ``group_norms``, the data's column magnitudes), so
**the EM loop's own steps run unchanged** on it (weights, zeros, ties, stop rule); :func:`run_dense`
applies the base loop's ``n_features`` rule and paper 002's selection and re-solves the L2 SVM on the
``r`` selected features, as ``fit`` does.

Per Sonar split (paper 002's protocol, ``bench_issue19.sonar_splits``) and ``r`` in {5, 10}: the
CPU of ``fsframe.fit(..., method="em-l0", n_features=r)``, of the prototype, and of liblinear's
bisection (``competitors.SELECTORS["sk-logreg-liblinear"]``), fastest of ``--reps`` after one
untimed run, BLAS on one thread; and whether the prototype's selection, EM iterations and model
equal the fit's.

    FSFRAME_SHARED_DATA=/path/to/shared/data python benchmarks/bench_em_dense_floor.py [--reps 5] [--splits 5]

Writes ``benchmarks/results/em_dense_floor.json`` and prints the Markdown table of
docs/performance.md ("Issue 19 at a glance", eighth pass).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_issue19  # noqa: E402  (Sonar's splits and the CPU timer, one definition)
import competitors  # noqa: E402

OUT = HERE / "results" / "em_dense_floor.json"
GAP_TOL = 1e-9  # the relative duality gap an answer must reach (the compiled path's certificate: 1e-6 * 10)


class DenseHinge:
    """The weighted hinge QP on arrays, solved in its dual (module docstring); the subset of
    :class:`fsframe.problem.Subproblem` that :meth:`fsframe.loops.em.EM.steps` reads."""

    is_built = False  # nothing to build: group_scale and the identical-columns search treat it so

    def __init__(self, X, y_pm, C: float):
        from fsframe.backends.box_qp import solve_box_qp

        self._solve_box_qp = solve_box_qp
        self.X = np.ascontiguousarray(X, dtype=float)
        self.y = np.asarray(y_pm, dtype=float)
        self.C = float(C)
        m, n = self.X.shape
        self.YX = self.y[:, None] * self.X
        self.n_groups = n
        self.warm = None
        self.E = self.y[None, :]
        self.lo, self.hi, self.f = np.zeros(m), np.full(m, self.C), -np.ones(m)
        # group_magnitudes reads the largest |entry| of each group's columns from A and G
        self.compiled = SimpleNamespace(
            base=SimpleNamespace(c=np.zeros(n), A=sp.csr_matrix((0, n)), G=sp.csr_matrix(np.abs(self.X))),
            slot=SimpleNamespace(group_cols=[np.array([j]) for j in range(n)], groups=np.arange(n)))
        self.pivots = 0
        self.solves = 0

    def group_norms(self, coef):
        return np.abs(coef)

    def solve(self, *, quad):
        from fsframe.enums import Status
        from fsframe.problem import Iterate

        t0 = time.perf_counter()
        q = np.asarray(quad, dtype=float)
        live = np.isfinite(q)
        s = 1.0 / np.sqrt(2.0 * q[live])
        F = self.YX[:, live] * s
        res = self._solve_box_qp(F, self.f, self.E, np.zeros(1), self.lo, self.hi, start=self.warm,
                                 crash=8 if self.warm is None and 4 * F.shape[1] >= F.shape[0] else 0)
        self.pivots += res.iterations
        self.solves += 1
        n = self.n_groups
        if res.status != "optimal":
            self.warm = None
            return Iterate.computed(np.zeros(n), 0.0, np.zeros(n), groups=np.arange(n), loss=None, objective=None,
                                    seconds=time.perf_counter() - t0, backend="dense-em",
                                    status=Status.NUMERICAL_ERROR)
        lam, b = res.lam, float(res.nu[0])
        v = F.T @ lam
        w = np.zeros(n)
        w[live] = s * v
        xi = np.maximum(0.0, 1.0 - self.y * (self.X[:, live] @ w[live] + b))
        loss = self.C * float(xi.sum())
        primal = loss + float(q[live] @ (w[live] ** 2))
        dual = float(lam.sum()) - 0.5 * float(v @ v)
        ok = (primal - dual <= GAP_TOL * max(1.0, abs(primal)) and abs(float(self.y @ lam)) <= 1e-9 * max(1.0, self.C)
              and lam.min() >= -1e-12 and lam.max() <= self.C * (1 + 1e-12))
        self.warm = res.lam if ok else None
        return Iterate.computed(w, b, np.abs(w), groups=np.arange(n), loss=loss, objective=primal,
                                seconds=time.perf_counter() - t0, backend="dense-em",
                                status=Status.OPTIMAL if ok else Status.NUMERICAL_ERROR)


def run_dense(X, y_pm, r: int, C: float = 1.0):
    """``em-l0`` with ``n_features=r`` on :class:`DenseHinge`: the EM loop's own steps, the base
    loop's ``n_features`` stop and paper 002's selection, then the L2 SVM on the selected features.
    Returns ``(selected, n_iter, coef, intercept, sub)``."""
    import fsframe.method
    from fsframe.loops.selection import select_exactly, support_of

    res = fsframe.method.resolve("em-l0", C=C)
    loop, surrogate = res.loop, res.surrogate
    sub = DenseHinge(X, y_pm, C)
    gen = loop.steps(sub, surrogate, SimpleNamespace(n_features=r, aux=None, info={}))
    iterates, scale = [], 0.0
    for step in gen:
        it = step.iterate
        if not it.ok:
            raise RuntimeError(f"dense EM: subproblem {len(iterates)} not certified")
        iterates.append(it)
        scale = max(scale, float(np.max(it.t, initial=0.0)))
        if int(support_of(it.t, loop.zero_tol, scale).sum()) <= r:
            gen.close()
            break
    mask = select_exactly(iterates, r, loop.zero_tol).mask
    quad = np.where(mask, 1.0, np.inf)
    sub.warm = None  # the re-solve is another problem (the fit's restricted session starts it afresh too)
    final = sub.solve(quad=quad)
    if not final.ok:
        raise RuntimeError("dense EM: the re-solve on the selected features was not certified")
    return np.flatnonzero(mask), len(iterates), final.coef, float(final.intercept[0]), sub


def measure(reps: int, splits: int) -> dict:
    import fsframe

    out = {}
    for r in (5, 10):
        rows = []
        for s, (X, y) in enumerate(bench_issue19.sonar_splits(splits)):
            def fit():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return fsframe.fit(X, y, method="em-l0", n_features=r)

            ref = fit()
            y_pm = np.where(y == ref.classes[1], 1.0, -1.0)
            sel, n_iter, coef, b, sub = run_dense(X, y_pm, r)
            same = {"selected": bool(np.array_equal(sel, np.sort(ref.selected))),
                    "em_iterations": bool(n_iter == ref.n_iter),
                    "coef_max_diff": float(np.max(np.abs(coef - np.asarray(ref.coef).ravel()))),
                    "intercept_diff": abs(b - float(np.ravel(ref.intercept)[0]))}
            fit_cpu = bench_issue19._cpu(fit, reps)[0]
            dense_cpu = bench_issue19._cpu(lambda: run_dense(X, y_pm, r), reps)[0]
            lib = bench_issue19._cpu(lambda: competitors.SELECTORS["sk-logreg-liblinear"](X, y, r), reps)[0]
            rows.append({"split": s, "fit_cpu": fit_cpu, "dense_cpu": dense_cpu, "liblinear_cpu": lib,
                         "em_iterations": int(ref.n_iter), "dense_em_iterations": n_iter, "solves": sub.solves,
                         "pivots": sub.pivots, **same})
            print(f"r={r} split {s}: {rows[-1]}", flush=True)
        med = {k: float(np.median([row[k] for row in rows])) for k in ("fit_cpu", "dense_cpu", "liblinear_cpu")}
        out[str(r)] = {"rows": rows, "median": med}
    return out


def markdown(res: dict) -> str:
    lines = ["| r | `fit` (ms CPU) | dense prototype (ms CPU) | liblinear (ms CPU) | fit / liblinear "
             "| dense / liblinear | same selection, EM iterations | largest coefficient difference |",
             "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in ("5", "10"):
        d = res["em_sonar"][r]
        m, rows = d["median"], d["rows"]
        same = sum(row["selected"] and row["em_iterations"] for row in rows)
        lines.append(f"| {r} | {m['fit_cpu'] * 1e3:.1f} | {m['dense_cpu'] * 1e3:.1f} | {m['liblinear_cpu'] * 1e3:.1f} "
                     f"| {m['fit_cpu'] / m['liblinear_cpu']:.1f}x | {m['dense_cpu'] / m['liblinear_cpu']:.2f}x "
                     f"| {same} of {len(rows)} | {max(row['coef_max_diff'] for row in rows):.1e} |")
    lines += ["", f"Medians over Sonar splits 0-{len(res['em_sonar']['5']['rows']) - 1}, fastest of "
              f"{res['meta']['reps']} runs each. Commit {res['meta']['commit']}, load {res['meta']['load_average']:.1f}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--splits", type=int, default=5)
    args = ap.parse_args(argv)
    if not (competitors.DATA / "sonar.csv").exists():
        print(f"Sonar is absent ({competitors.DATA}); set FSFRAME_SHARED_DATA", file=sys.stderr)
        return 1
    from threadpoolctl import threadpool_limits

    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "load_average": os.getloadavg()[0], "reps": args.reps, "splits": args.splits,
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                     cwd=HERE).stdout.strip()}
    with threadpool_limits(limits=1):
        res = {"meta": meta, "em_sonar": measure(args.reps, args.splits)}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2, default=float))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
