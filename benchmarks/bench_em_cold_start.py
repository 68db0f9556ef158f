"""EM's cold first solve on the competitors table's Sonar splits: the crash from zero against the crash
from the classes' balanced point (issue 19, docs/performance.md "Issue 19 at a glance", sixteenth pass).

Every ``em-l0`` fit starts with the hinge dual at equal weights (``quad = 1``), solved cold by
:class:`fsframe.dense_em.DenseHingeSubproblem`: the crash (``box_qp_jit.crash``) and then the compiled
pivots. This script times, per split (``competitors.split_data``: the table's own splits), that cold
solve (the subproblem made and solved once) with the crash from zero and 8 sweeps (the rule before
``dense_rules.cold_crash_from``, by patching it to ``None`` on ``fsframe.dense_em``) and from the
balanced point at each of ``--sweeps`` (``dense_rules.COLD_CRASH_SWEEPS`` patched), in rounds that
alternate the variants (``--rounds``, ``--reps`` solves each; CPU time, ``time.process_time``: the
machine is shared; one BLAS thread). Per variant it also times its parts on the same dual: the
crash's sweeps alone and the pivots from the crash's point (``box_qp._pivots``), with the pivots'
count.

    python benchmarks/bench_em_cold_start.py [--data-dir DIR] [--reps 40] [--rounds 3]
        [--sweeps 3,4,5,6,8] [--splits 10] [--out benchmarks/results/em_cold_start.json]

Sonar is read as ``fsframe run paper000`` reads it (``--data-dir``, else ``$FSFRAME_DATA``); without
it the script stops with exit status 2 and the study's message. Appends the run to the JSON's
``runs`` and prints the medians over splits.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import competitors  # noqa: E402  (the table's splits: one definition)
from _common import add_data_dir, append_run, head_commit, study_dataset  # noqa: E402

OUT = HERE / "results" / "em_cold_start.json"
ZERO = "zero, 8 sweeps"


def _cpu(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        c0 = time.process_time()
        fn()
        out.append(time.process_time() - c0)
    return out


def _variant(name: str):
    """Set the rule for one variant: ``ZERO`` (no balanced point) or ``"balanced, k sweeps"``."""
    from fsframe import dense_em, dense_rules

    if name == ZERO:
        dense_em.cold_crash_from = lambda *a: None
    else:
        dense_em.cold_crash_from = dense_rules.cold_crash_from
        dense_rules.COLD_CRASH_SWEEPS = int(name.split(", ")[1].split()[0])


def _parts(F, y, name: str, reps: int) -> dict:
    """The crash's sweeps and the pivots after them on the dual ``F`` (box ``[0, 1]``, ``y' lam = 0``)."""
    from fsframe.backends import box_qp, box_qp_jit
    from fsframe.dense_rules import cold_crash_from

    m = F.shape[0]
    f, E, e, lo, hi = -np.ones(m), y[None, :], np.zeros(1), np.zeros(m), np.ones(m)
    origin = np.zeros(m) if name == ZERO else cold_crash_from(y, 1.0, F.shape, F.shape[1])
    sweeps = 8 if name == ZERO else int(name.split(", ")[1].split()[0])
    run, H = box_qp_jit.compiled_crash(), F @ F.T
    Ht = np.ascontiguousarray(H.T)

    def crash():
        lam = origin.copy()
        for _ in range(sweeps):
            run(F, Ht, True, f, y, True, lo, hi, lam, m, box_qp.CRASH_TOL)
        return lam

    lam = crash()
    res = box_qp._pivots(F, f, E, e, lo, hi, lam, True, 10 * m + 100, True, H)
    return {"crash_cpu": float(np.median(_cpu(crash, reps))),
            "pivots_cpu": float(np.median(_cpu(lambda: box_qp._pivots(F, f, E, e, lo, hi, lam, True, 10 * m + 100,
                                                                        True, H), reps))),
            "pivots": int(res.iterations), "free_after_crash": int(np.count_nonzero((lam > lo) & (lam < hi)))}


def run(ds, reps: int, rounds: int, sweeps: list[int], splits: int) -> dict:
    from fsframe import dense_em, dense_rules

    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    names = [ZERO] + [f"balanced, {k} sweeps" for k in sweeps]
    data = []
    for s in range(splits):
        Xtr, _, ytr, _ = competitors.split_data(X, y, s)
        data.append((Xtr, np.where(ytr == np.unique(ytr)[1], 1.0, -1.0)))
    times = {n: [[] for _ in data] for n in names}
    pivots = {n: [0] * len(data) for n in names}
    kept = dense_em.cold_crash_from, dense_rules.COLD_CRASH_SWEEPS
    try:
        for _ in range(rounds):
            for name in names:  # alternately: every variant sees the same load
                _variant(name)
                for s, (Xs, ys) in enumerate(data):
                    q = np.ones(Xs.shape[1])
                    dense_em.DenseHingeSubproblem(Xs, ys, 1.0).solve(quad=q)  # untimed: first-call caches

                    def one():
                        sub = dense_em.DenseHingeSubproblem(Xs, ys, 1.0)
                        sub.solve(quad=q)
                        pivots[name][s] = sub.pivots

                    times[name][s] += _cpu(one, reps)
        out = {}
        for name in names:
            per = [float(np.median(t)) for t in times[name]]
            parts = [_parts(np.ascontiguousarray(ys[:, None] * Xs / np.sqrt(2.0)), ys, name, reps)
                     for Xs, ys in data]
            out[name] = {"cold_solve_cpu": per, "pivots_in_solve": pivots[name], "parts": parts,
                         "cold_solve_cpu_median": float(np.median(per))}
            print(f"{name}: cold solve {np.median(per) * 1e3:.3f} ms (median over splits; "
                  f"{min(per) * 1e3:.3f}-{max(per) * 1e3:.3f}), crash {np.median([p['crash_cpu'] for p in parts]) * 1e3:.3f}"
                  f" ms, pivots {np.median([p['pivots_cpu'] for p in parts]) * 1e3:.3f} ms "
                  f"({min(p['pivots'] for p in parts)}-{max(p['pivots'] for p in parts)} pivots)", flush=True)
    finally:
        dense_em.cold_crash_from, dense_rules.COLD_CRASH_SWEEPS = kept
    return {"variants": out}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sweeps", default="3,4,5,6,8", help="the balanced point's sweep counts, comma-separated")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--out", type=Path, default=OUT)
    add_data_dir(ap, "sonar.csv")
    args = ap.parse_args(argv)
    ds = study_dataset(ap, "paper000", "sonar", args.data_dir)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        res = run(ds, args.reps, args.rounds, [int(k) for k in args.sweeps.split(",")], args.splits)
    import fsframe

    timed = Path(fsframe.__file__).parent
    res["meta"] = {"reps": args.reps, "rounds": args.rounds, "commit": head_commit(timed),
                   "script_commit": head_commit(HERE), "date": time.strftime("%Y-%m-%d %H:%M"),
                   "loadavg": os.getloadavg()[0], "python": platform.python_version(),
                   "clock": "CPU (time.process_time)", "weights": "quad = 1 (EM's first dual), C = 1"}
    append_run(args.out, res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
