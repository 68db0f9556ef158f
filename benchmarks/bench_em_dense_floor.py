"""The dense EM path for ``em-l0`` (issue 19, :mod:`fsframe.dense_em`) against ``fit`` and liblinear on Sonar.

The EM subproblem of ``em-l0`` (the weighted L2-regularised hinge QP, paper 002 eq. 7) solved in its
dual on the arrays of ``X`` and certified by the duality gap from products with ``X``
(:class:`fsframe.dense_em.DenseHingeSubproblem`), the EM loop's steps and the base loop's
``n_features`` rule, selection and re-solve unchanged (:func:`fsframe.dense_em.run_dense_em`).

Per Sonar split (paper 002's protocol, ``bench_issue19.sonar_splits``) and ``r`` in {5, 10}: the
CPU of ``fsframe.fit(..., method="em-l0", n_features=r)``, of the dense path, and of liblinear's
bisection (``competitors.SELECTORS["sk-logreg-liblinear"]``), fastest of ``--reps`` after one
untimed run, BLAS on one thread; and whether the dense path's selection, EM iterations and model
equal the fit's.

    python benchmarks/bench_em_dense_floor.py --data-dir DIR [--reps 5] [--splits 5]
    python benchmarks/bench_em_dense_floor.py --data breast_cancer   # the README's set (569 x 30), 90 % parts

Writes ``benchmarks/results/em_dense_floor.json`` (``em_dense_floor_breast_cancer.json``) and prints
the Markdown table of docs/performance.md ("Issue 19 at a glance", eighth pass).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_issue19  # noqa: E402  (Sonar's splits and the CPU timer, one definition)
import competitors  # noqa: E402
from _common import add_data_dir, data_folder  # noqa: E402

OUT = HERE / "results" / "em_dense_floor.json"


def run_dense(X, y_pm, r: int, C: float = 1.0):
    """``em-l0`` with ``n_features=r`` on :class:`fsframe.dense_em.DenseHingeSubproblem` (the EM loop and
    the base's rules unchanged: :func:`fsframe.dense_em.run_dense_em`). Returns the outcome."""
    import fsframe.method
    from fsframe.dense_em import run_dense_em

    res = fsframe.method.resolve("em-l0", C=C)
    with warnings.catch_warnings():  # as the fit's (a collapse below r is warned about on both paths)
        warnings.simplefilter("ignore")
        return run_dense_em(res.loop, res.surrogate, X, y_pm, C, n_features=r)


def breast_cancer_splits(splits: int):
    """The README's breast-cancer (WDBC) set: 90 % stratified parts, standardised on the part."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_breast_cancer(return_X_y=True)
    for s in range(splits):
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.1, random_state=s, stratify=y)
        yield StandardScaler().fit(Xtr).transform(Xtr), ytr


def measure(reps: int, splits: int, data: str = "sonar") -> dict:
    import fsframe

    out = {}
    source = bench_issue19.sonar_splits if data == "sonar" else breast_cancer_splits
    for r in (5, 10):
        rows = []
        for s, (X, y) in enumerate(source(splits)):
            def fit():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return fsframe.fit(X, y, method="em-l0", n_features=r)

            ref = fit()
            y_pm = np.where(y == ref.classes[1], 1.0, -1.0)
            dense = run_dense(X, y_pm, r)
            n_iter = dense.n_iter
            same = {"selected": bool(np.array_equal(np.flatnonzero(dense.support), np.sort(ref.selected))),
                    "em_iterations": bool(n_iter == ref.n_iter),
                    "coef_max_diff": float(np.max(np.abs(dense.coef - np.asarray(ref.coef).ravel()))),
                    "intercept_diff": abs(float(dense.iterate.intercept[0]) - float(np.ravel(ref.intercept)[0])),
                    "objective_diff": abs(float(dense.objective) - float(ref.objective))}
            fit_cpu = bench_issue19._cpu(fit, reps)[0]
            dense_cpu = bench_issue19._cpu(lambda: run_dense(X, y_pm, r), reps)[0]
            lib = bench_issue19._cpu(lambda: competitors.SELECTORS["sk-logreg-liblinear"](X, y, r), reps)[0]
            rows.append({"split": s, "fit_cpu": fit_cpu, "dense_cpu": dense_cpu, "liblinear_cpu": lib,
                         "em_iterations": int(ref.n_iter), "dense_em_iterations": n_iter, **same})
            print(f"r={r} split {s}: {rows[-1]}", flush=True)
        med = {k: float(np.median([row[k] for row in rows])) for k in ("fit_cpu", "dense_cpu", "liblinear_cpu")}
        out[str(r)] = {"rows": rows, "median": med}
    return out


def markdown(res: dict) -> str:
    lines = ["| r | `fit` (ms CPU) | dense path (ms CPU) | liblinear (ms CPU) | fit / liblinear "
             "| dense / liblinear | same selection, EM iterations | largest coefficient difference |",
             "|--:|--:|--:|--:|--:|--:|--:|--:|"]
    key = "em_sonar" if "em_sonar" in res else "em_breast_cancer"
    for r in ("5", "10"):
        d = res[key][r]
        m, rows = d["median"], d["rows"]
        same = sum(row["selected"] and row["em_iterations"] for row in rows)
        lines.append(f"| {r} | {m['fit_cpu'] * 1e3:.1f} | {m['dense_cpu'] * 1e3:.1f} | {m['liblinear_cpu'] * 1e3:.1f} "
                     f"| {m['fit_cpu'] / m['liblinear_cpu']:.1f}x | {m['dense_cpu'] / m['liblinear_cpu']:.2f}x "
                     f"| {same} of {len(rows)} | {max(row['coef_max_diff'] for row in rows):.1e} |")
    lines += ["", f"Medians over {key[3:]} splits 0-{len(res[key]['5']['rows']) - 1}, fastest of "
              f"{res['meta']['reps']} runs each. Commit {res['meta']['commit']}, "
              f"load {res['meta']['load_average']:.1f}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--data", choices=("sonar", "breast_cancer"), default="sonar")
    add_data_dir(ap, "sonar.csv (--data sonar)")  # --data names the data set here
    args = ap.parse_args(argv)
    if args.data == "sonar":  # status 2 without the file
        competitors.DATA = data_folder(ap, args.data_dir, ["sonar.csv"])
    from threadpoolctl import threadpool_limits

    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "load_average": os.getloadavg()[0], "reps": args.reps, "splits": args.splits,
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                     cwd=HERE).stdout.strip()}
    with threadpool_limits(limits=1):
        res = {"meta": meta, f"em_{args.data}": measure(args.reps, args.splits, args.data)}
    out = OUT if args.data == "sonar" else OUT.with_name(f"em_dense_floor_{args.data}.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=2, default=float))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
