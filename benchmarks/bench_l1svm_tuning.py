"""Paper 004's tuned ``l1-svm`` on COIL20 (issues 19 and 21): the inner cross-validation's sweep
over ``C``, before and after the sweep solves from ``X``, and whether every answer is the same.

Runs, for the inner folds of one split of the shipped study ``paper004`` (its ``coil20`` l1-svm
cell as the study plans it: the training part z-scored, 8 stratified folds, each fold's 756 x 1 024
part z-scored again), the study's own sweep (``Extras._fold_fits``: one ``fsframe.path`` per fold
over the grid ``C = 1e-3 ... 1e3``, 20 one-vs-rest LPs per point) twice:

* ``before``: the compiled path (``working_set=WorkingSetOptions(from_data=False)``: the Pyomo
  model of each class built once, ``C`` restated in place, HiGHS warm from the previous point's
  basis, the grid from its largest ``C``) — what the study ran before this change;
* ``after``: the default, column and row generation from ``X`` along the path
  (``HingeFormulation.from_data_path_min_ratio``), each point from the previous point's support
  and margin rows, the grid from its smallest ``C``.

CPU seconds (``time.process_time``, one BLAS thread; run it under ``nice -n 5``) per fold and per
grid point, HiGHS's share of them, and per point the largest relative objective difference, the
classes whose support differs, whether the top-100 ranking over the classes differs (what the
study scores) and every class's certificate status. Exits 1 when any answer differs (a support, a
ranking, an objective beyond 1e-7 relative, a certificate not optimal), 2 without the data.

    nice -n 5 python benchmarks/bench_l1svm_tuning.py --data-dir DIR [--split 0] [--folds 8] \\
        [--json benchmarks/results/l1svm_tuning.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared helpers
from _common import add_data_dir, head_commit, study_with_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RTOL = 1e-7
TOP = 100  # the study ranks the top 100 features (paper 004's Table 1)


def _cell(ap, args):
    from fsframe.evaluation.experiment import _plan

    study = study_with_data(ap, "paper004", args.data_dir, ["coil20"])
    data, tasks, metas, _ = _plan(study)
    (i,) = [i for i, m in enumerate(metas) if m["dataset"] == "coil20" and m["label"] == "l1-svm"
            and m["repeat"] == args.split]
    X, y = data[tasks[i].data]
    return X, y, tasks[i].split, tasks[i].cfg


def _folds(X, y, split, cfg):
    """The inner folds as ``Extras.choose`` makes them: ``(Xa, ya)`` of each."""
    from sklearn.model_selection import StratifiedKFold

    from fsframe.evaluation.preprocess import _scale
    from fsframe.evaluation.study import folds_for

    Xtr, _ = _scale(X[split.train], X[split.test][:0], cfg.scale)
    ytr = y[split.train]
    k = folds_for(cfg.extras.tune_folds, ytr.size)
    for itr, iva in StratifiedKFold(k, shuffle=True, random_state=cfg.extras.seed).split(np.zeros((ytr.size, 1)), ytr):
        yield _scale(Xtr[itr], Xtr[iva], cfg.scale)[0], ytr[itr]


def _sweep(cfg, Xa, ya, points, fit_options):
    """The study's sweep of one fold with ``fit_options``: the fits, CPU seconds per grid point
    (by the point fitted) and HiGHS's CPU seconds in all."""
    import attrs

    from fsframe import paths
    from fsframe.backends import hinge_generation, highs

    cpu, solver = {}, [0.0]
    real_fit, real_run, real_lp = paths.fit_resolved, highs.HighsSession._solve_raw, hinge_generation._LiveLP.solve

    def fit_resolved(res, *a, **k):
        c0 = time.process_time()
        try:
            return real_fit(res, *a, **k)
        finally:
            cpu[res.formulation.C] = cpu.get(res.formulation.C, 0.0) + time.process_time() - c0

    def timed(real):
        def run(self, *a, **k):
            c0 = time.process_time()
            try:
                return real(self, *a, **k)
            finally:
                solver[0] += time.process_time() - c0
        return run

    paths.fit_resolved, highs.HighsSession._solve_raw = fit_resolved, timed(real_run)
    hinge_generation._LiveLP.solve = timed(real_lp)
    try:
        c0 = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits = cfg.extras._fold_fits(Xa, ya, attrs.evolve(cfg, fit_options=fit_options), points)
        total = time.process_time() - c0
    finally:
        paths.fit_resolved, highs.HighsSession._solve_raw = real_fit, real_run
        hinge_generation._LiveLP.solve = real_lp
    return fits, total, cpu, solver[0]


def _compare(points, before, after) -> list:
    from fsframe.evaluation.protocols import ranking

    rows = []
    for p, b, a in zip(points, before, after):
        if isinstance(b, BaseException) or isinstance(a, BaseException):
            rows.append({"C": p["C"], "error": repr(b if isinstance(b, BaseException) else a)})
            continue
        sb, sa = np.asarray(b.coef) != 0, np.asarray(a.coef) != 0
        rows.append({"C": p["C"], "objective": a.objective,
                     "objective_rel_diff": abs(a.objective - b.objective) / max(1.0, abs(b.objective)),
                     "classes_other_support": int(np.any(sb != sa, axis=1).sum()),
                     "support": int(sa.any(axis=0).sum()),
                     "ranking_differs": bool(not np.array_equal(ranking(b)[:TOP], ranking(a)[:TOP])),
                     "paths": sorted({r.info.get("solver_path", "compiled") for r in a.per_class}),
                     "all_optimal": all(r.certificate.get("status") == "optimal"
                                        for r in (*a.per_class, *b.per_class))})
    return rows


def _differs(row) -> bool:
    return "error" in row or row["objective_rel_diff"] > RTOL or row["classes_other_support"] or \
        row["ranking_differs"] or not row["all_optimal"]


def main(argv=None) -> int:
    from fsframe.working_set import WorkingSetOptions

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_dir(ap, "COIL20.mat")
    ap.add_argument("--split", type=int, default=0)
    ap.add_argument("--folds", type=int, default=8, help="the first N inner folds (default: all 8)")
    ap.add_argument("--json", type=Path, help="write the measurements here")
    args = ap.parse_args(argv)
    X, y, split, cfg = _cell(ap, args)
    points = [{"C": c} for c in cfg.extras.tune["C"]]
    runs, bad = [], 0
    for f, (Xa, ya) in enumerate(_folds(X, y, split, cfg)):
        if f >= args.folds:
            break
        fb, tb, cb, hb = _sweep(cfg, Xa, ya, points, {"working_set": WorkingSetOptions(from_data=False)})
        fa, ta, ca, ha = _sweep(cfg, Xa, ya, points, {})
        rows = _compare(points, fb, fa)
        bad += sum(map(_differs, rows))
        runs.append({"fold": f, "shape": list(Xa.shape), "before_cpu": tb, "after_cpu": ta, "before_solver_cpu": hb,
                     "after_solver_cpu": ha, "before_cpu_by_C": cb, "after_cpu_by_C": ca, "points": rows})
        print(f"fold {f} {Xa.shape}: before {tb:.1f} s CPU (HiGHS {hb:.1f}), after {ta:.1f} s (HiGHS {ha:.1f}); "
              f"differing points {sum(map(_differs, rows))}", flush=True)
        for r in rows:
            print(f"  C={r['C']:g} {json.dumps({k: v for k, v in r.items() if k != 'C'})}")
    tb, ta = sum(r["before_cpu"] for r in runs), sum(r["after_cpu"] for r in runs)
    print(f"{len(runs)} fold(s): before {tb:.1f} s CPU, after {ta:.1f} s ({ta / tb:.2f}x); differing points: {bad}")
    if args.json:
        args.json.write_text(json.dumps({"commit": head_commit(ROOT), "split": args.split, "load": os.getloadavg(),
                                         "before_cpu": tb, "after_cpu": ta, "folds": runs}, indent=1, default=float))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
