"""``em-l0`` against liblinear per split of the competitors table's Sonar cells (issue 19, r = 5).

The competitors table (``benchmarks/competitors.py``, docs/performance.md "Against other
libraries") reports the median over 10 splits of one timed selection per split; ``bench_issue19.py
--parts a`` times splits 0-4 only. This script times the table's own selectors
(``competitors.SELECTORS["em-l0"]`` and ``["sk-logreg-liblinear"]``) on the table's own splits
(``competitors.split_data``) side by side in one process, alternately, ``--reps`` times each (CPU
time, ``time.process_time``: the machine is shared; one BLAS thread), and reports per split the
median CPU per selection of each, their ratio, and what the ``em-l0`` fit did (an untimed second
pass with the dense subproblem's solves wrapped): EM iterations, solves, pivots, which attempt
each step's answer came from, and the CPU of the cold first solve and of the re-solve on the
selected features.

    python benchmarks/bench_em_sonar_splits.py [--data-dir DIR] [--reps 41] [--r 5]
        [--splits 10] [--out benchmarks/results/em_sonar_splits.json] [--label NAME]

Sonar is read as ``fsframe run paper000`` reads it: ``sonar.csv`` in ``--data-dir``, else in the
folder ``$FSFRAME_DATA`` names (docs/papers.md); without it the script stops with exit status 2
and the study's message. Appends the run (labelled ``--label``, default the timed fsframe's
commit) to the JSON's ``runs`` (``--out``) and prints one line per split and the medians over
splits. Runs of two versions of the code made alternately in separate processes (another version
first on ``PYTHONPATH``) land in one file; each run's ``commit`` is that of the fsframe it timed
(``fsframe_from``: ``git rev-parse`` there, ``"unknown"`` outside git), ``script_commit`` this
script's.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import competitors  # noqa: E402  (the table's selectors and splits: one definition)
from _common import add_data_dir, append_run, head_commit, study_dataset  # noqa: E402

OUT = HERE / "results" / "em_sonar_splits.json"


def _timed(fn):
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def trace_fit(X, y, r) -> dict:
    """One ``em-l0`` fit with :class:`fsframe.dense_em.DenseHingeSubproblem.solve` wrapped (untimed
    pass): per solve its CPU, pivots, warm or cold, and whether it restricted to the selection."""
    import fsframe
    from fsframe import dense_em

    solves = []
    orig_solve, orig_restricted = dense_em.DenseHingeSubproblem.solve, dense_em.DenseHingeSubproblem.restricted
    state = {"restricted": False}

    def solve(self, **kw):
        warm = self._warm is not None
        p0, c0 = self.pivots, time.process_time()
        it = orig_solve(self, **kw)
        solves.append({"cpu": time.process_time() - c0, "pivots": self.pivots - p0, "warm": warm,
                       "restricted": state["restricted"], "message": it.result.message,
                       "live": int(np.isfinite(np.asarray(kw["quad"], dtype=float)).sum())})
        return it

    def restricted(self, it, keep, **kw):
        state["restricted"] = True
        try:
            return orig_restricted(self, it, keep, **kw)
        finally:
            state["restricted"] = False

    dense_em.DenseHingeSubproblem.solve, dense_em.DenseHingeSubproblem.restricted = solve, restricted
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fsframe.fit(X, y, method="em-l0", n_features=r)
    finally:
        dense_em.DenseHingeSubproblem.solve, dense_em.DenseHingeSubproblem.restricted = orig_solve, orig_restricted
    cold = [s for s in solves if not s["warm"] and not s["restricted"]]
    rest = [s for s in solves if s["restricted"]]
    return {"selected": [int(j) for j in res.selected], "em_iterations": int(res.n_iter), "solves": len(solves),
            "pivots": int(sum(s["pivots"] for s in solves)),
            "cold_cpu": float(sum(s["cpu"] for s in cold)), "cold_pivots": int(sum(s["pivots"] for s in cold)),
            "restricted_solves": len(rest), "restricted_cpu": float(sum(s["cpu"] for s in rest)),
            "restricted_pivots": int(sum(s["pivots"] for s in rest)),
            "restricted_messages": [s["message"] for s in rest],
            "not_first_attempt": [s["message"] for s in solves if "(" in s["message"]],
            "solves_cpu": float(sum(s["cpu"] for s in solves)), "solver_path": res.info.get("solver_path")}


def run(ds, reps, r, splits) -> dict:
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    em, lib = competitors.SELECTORS["em-l0"], competitors.SELECTORS["sk-logreg-liblinear"]
    out = []
    for s in range(splits):
        Xtr, _, ytr, _ = competitors.split_data(X, y, s)
        em(Xtr, ytr, r), lib(Xtr, ytr, r)  # untimed: first-call caches, compilation
        t_em, t_lib = [], []
        for _ in range(reps):  # alternately: both see the same load
            t_em.append(_timed(lambda: em(Xtr, ytr, r)))
            t_lib.append(_timed(lambda: lib(Xtr, ytr, r)))
        row = {"split": s, "em_l0_cpu": float(np.median(t_em)), "liblinear_cpu": float(np.median(t_lib)),
               "em_l0_cpu_min": float(np.min(t_em)), "liblinear_cpu_min": float(np.min(t_lib)),
               "liblinear_fits": int(lib(Xtr, ytr, r)[1]), **trace_fit(Xtr, ytr, r)}
        row["ratio"] = row["em_l0_cpu"] / row["liblinear_cpu"]
        out.append(row)
        print(f"split {s}: em-l0 {row['em_l0_cpu'] * 1e3:.2f} ms, liblinear {row['liblinear_cpu'] * 1e3:.2f} ms "
              f"({row['ratio']:.2f}x); EM {row['em_iterations']}, solves {row['solves']}, pivots {row['pivots']}, "
              f"cold {row['cold_cpu'] * 1e3:.2f} ms / {row['cold_pivots']} pivots, restricted "
              f"{row['restricted_cpu'] * 1e3:.2f} ms / {row['restricted_pivots']} pivots", flush=True)
    med_em = float(np.median([o["em_l0_cpu"] for o in out]))
    med_lib = float(np.median([o["liblinear_cpu"] for o in out]))
    print(f"median over splits: em-l0 {med_em * 1e3:.2f} ms, liblinear {med_lib * 1e3:.2f} ms "
          f"({med_em / med_lib:.2f}x)")
    return {"splits": out, "em_l0_cpu_median": med_em, "liblinear_cpu_median": med_lib, "ratio": med_em / med_lib}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--r", type=int, default=5)
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--label", default=None, help="the run's name in the JSON (default: the timed fsframe's commit)")
    add_data_dir(ap, "sonar.csv")
    args = ap.parse_args(argv)
    ds = study_dataset(ap, "paper000", "sonar", args.data_dir)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        res = run(ds, args.reps, args.r, args.splits)
    import fsframe

    timed = Path(fsframe.__file__).parent
    commit = head_commit(timed)  # the code timed (PYTHONPATH may put another checkout first), not this script's
    res["meta"] = {"label": args.label or commit, "reps": args.reps, "r": args.r, "commit": commit,
                   "script_commit": head_commit(HERE),
                   "fsframe_from": str(timed), "date": time.strftime("%Y-%m-%d %H:%M"),
                   "loadavg": os.getloadavg()[0], "python": platform.python_version(),
                   "no_jit": bool(os.environ.get("FSFRAME_NO_JIT")), "clock": "CPU (time.process_time)"}
    append_run(args.out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
