"""How much of an ``em-l0`` fit on Sonar is the QP: the floor a dedicated dense EM path could reach.

Issue 19 asks for ``em-l0`` with exactly ``r`` = 5 and 10 features on Sonar at no more CPU than
scikit-learn's L1 logistic regression with ``C`` bisected to ``r`` features (liblinear,
``competitors.SELECTORS["sk-logreg-liblinear"]``). A dense EM path that keeps the weighted L2-SVM
dual as arrays between steps removes the framework around each QP, not the QP itself. This
measures, per fit (paper 002's protocol: stratified 80/20 splits of Sonar, standardised on the
training part, ``C = 1``; CPU time, BLAS on one thread, fastest of ``--reps`` fits after one
untimed fit):

* the whole fit (``fsframe.fit(..., method="em-l0", n_features=r)``, ``qp_form="auto"``: the
  dense active-set method, its pivots compiled when numba is installed);
* the CPU inside :func:`fsframe.backends.box_qp.solve_box_qp` (every EM dual and the re-solve on
  the ``r`` features; timed by wrapping the function the dense form calls), its calls and pivots;
* the EM iterations (``n_iter``) and the subproblems;
* liblinear's bisection in the same process.

The QP's share is the floor: a fit cannot cost less than its QPs unless it solves fewer of them
or solves them faster.

    python benchmarks/bench_em_qp_share.py --data-dir DIR [--reps 5] [--splits 5]

Writes ``benchmarks/results/em_qp_share.json`` and ``em_qp_share.md`` (the table docs/performance.md
quotes, "Issue 19 at a glance", sixth pass).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_issue19  # noqa: E402  (Sonar's splits and the CPU timer, one definition)
import competitors  # noqa: E402
from _common import add_data_dir, data_folder  # noqa: E402

OUT = HERE / "results" / "em_qp_share.json"


class _QPClock:
    """Wraps the dense form's :func:`solve_box_qp` and sums its CPU time, calls and pivots."""

    def __init__(self):
        import fsframe.backends.diag_qp as dq

        self.module, self.inner = dq, dq.solve_box_qp
        self.reset()

    def reset(self):
        self.cpu, self.calls, self.pivots = 0.0, 0, 0

    def __call__(self, *args, **kwargs):
        c0 = time.process_time()
        res = self.inner(*args, **kwargs)
        self.cpu += time.process_time() - c0
        self.calls += 1
        self.pivots += int(res.iterations or 0)
        return res

    def __enter__(self):
        self.module.solve_box_qp = self
        return self

    def __exit__(self, *exc):
        self.module.solve_box_qp = self.inner


def measure(reps: int, splits: int) -> dict:
    import fsframe

    out = {}
    with _QPClock() as clock:
        for r in (5, 10):
            rows = []
            for s, (X, y) in enumerate(bench_issue19.sonar_splits(splits)):
                def fit():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        return fsframe.fit(X, y, method="em-l0", n_features=r)

                fit()
                best = None
                for _ in range(reps):
                    clock.reset()
                    c0 = time.process_time()
                    res = fit()
                    t = time.process_time() - c0
                    if best is None or t < best["fit_cpu"]:
                        best = {"fit_cpu": t, "qp_cpu": clock.cpu, "qp_calls": clock.calls, "pivots": clock.pivots}
                liblinear = bench_issue19._cpu(lambda: competitors.SELECTORS["sk-logreg-liblinear"](X, y, r), reps)[0]
                rows.append({"split": s, **best, "em_iterations": int(res.n_iter), "liblinear_cpu": liblinear,
                             "selected": [int(j) for j in res.selected]})
                print(f"r={r} split {s}: {rows[-1]}", flush=True)
            med = {k: float(np.median([row[k] for row in rows]))
                   for k in ("fit_cpu", "qp_cpu", "qp_calls", "pivots", "em_iterations", "liblinear_cpu")}
            out[str(r)] = {"rows": rows, "median": med, "fit_vs_liblinear": med["fit_cpu"] / med["liblinear_cpu"],
                           "qp_vs_liblinear": med["qp_cpu"] / med["liblinear_cpu"],
                           "qp_share": med["qp_cpu"] / med["fit_cpu"]}
    return out


def markdown(res: dict) -> str:
    lines = ["| r | fit (ms CPU) | QP alone (ms CPU) | QP share | liblinear (ms CPU) | fit / liblinear | QP / liblinear "
             "| QPs per fit | pivots per fit | EM iterations |",
             "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in ("5", "10"):
        d = res["em_sonar"][r]
        m = d["median"]
        lines.append(f"| {r} | {m['fit_cpu'] * 1e3:.1f} | {m['qp_cpu'] * 1e3:.1f} | {d['qp_share']:.0%} "
                     f"| {m['liblinear_cpu'] * 1e3:.1f} | {d['fit_vs_liblinear']:.1f}x | {d['qp_vs_liblinear']:.2f}x "
                     f"| {m['qp_calls']:.0f} | {m['pivots']:.0f} | {m['em_iterations']:.0f} |")
    its = {r: [row["em_iterations"] for row in res["em_sonar"][r]["rows"]] for r in ("5", "10")}
    lines += ["", f"Medians over Sonar splits 0-{len(its['5']) - 1}; EM iterations per split: r = 5 {its['5']}, "
              f"r = 10 {its['10']}. Commit {res['meta']['commit']}, load {res['meta']['load_average']:.1f}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--splits", type=int, default=5)
    add_data_dir(ap, "sonar.csv")
    args = ap.parse_args(argv)
    competitors.DATA = data_folder(ap, args.data_dir, ["sonar.csv"])  # status 2 without the file
    from threadpoolctl import threadpool_limits

    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "load_average": os.getloadavg()[0],
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                     cwd=HERE).stdout.strip(),
            "compiled_pivots": bench_issue19._compiled(), "reps": args.reps, "splits": args.splits}
    with threadpool_limits(limits=1):
        res = {"meta": meta, "em_sonar": measure(args.reps, args.splits)}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2, default=float))
    table = markdown(res)
    OUT.with_suffix(".md").write_text(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
