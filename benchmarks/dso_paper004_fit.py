"""DSO-FS on paper 004's data as the study fits it: split 0 of ``paper004`` (its 60 % training
part, z-scored with that part's statistics), one fit per ``p`` of the study's grid, timed in CPU
seconds, on today's path and — in the same process — on the path without its shortcuts (NNLS on
every margin for every least distance program, an LP per class column for separability, the U
step's solve when ``n0 = 0``), with the selection and objective of both compared.

    python benchmarks/dso_paper004_fit.py --data-dir DIR [--datasets isolet semeion]
                                          [--p 0.1 0.5 1.0] [--compare-p 0.5]

Writes ``benchmarks/results/dso_paper004_fit.json`` and ``.md``. One BLAS thread (as the study's
cells run). The estimate per split is the study's tuning (grid x inner folds, each fit on
``(f - 1)/f`` of the samples: counted as a whole fit, an over-estimate) plus the final fit.
"""

from __future__ import annotations

import argparse
import functools
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
from _common import add_data_dir, study_with_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "dso_paper004_fit"
GRID = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)


def training_part(name: str, data_dir: str):
    """Split 0's training part of ``name`` in the ``paper004`` study, z-scored as the study does."""
    from fsframe.evaluation.experiment import _plan
    from fsframe.evaluation.preprocess import scale_fit_transform
    from fsframe.evaluation.study import load_study

    data, tasks, metas, _ = _plan(load_study("paper004", data_dir=data_dir))
    i = next(i for i, m in enumerate(metas) if m["dataset"] == name)
    X, y = data[tasks[i].data]
    tr = tasks[i].split.train
    return scale_fit_transform(np.asarray(X)[tr], "standard"), np.asarray(y)[tr]


def _without_shortcuts():
    """Context: the path without the shortcuts (NNLS on all margins, the LPs, the U solve)."""
    import contextlib

    import fsframe_multiclass.dso as dso_mod
    import fsframe_multiclass.margin as margin_mod
    import fsframe_multiclass.nullspace as ns_mod

    @contextlib.contextmanager
    def ctx():
        saved = ns_mod.ldp_rows, margin_mod._separable_by_ldp, dso_mod.u_update
        ns_mod.ldp_rows = lambda G, h, hint=None: ns_mod.ldp(G, h)
        margin_mod._separable_by_ldp = lambda *a: None
        dso_mod.u_update = functools.partial(ns_mod.u_update, skip_empty=False)  # no n0 = 0 shortcut
        margin_mod._SEPARABLE.clear()
        try:
            yield
        finally:
            ns_mod.ldp_rows, margin_mod._separable_by_ldp, dso_mod.u_update = saved
            margin_mod._SEPARABLE.clear()

    return ctx()


def one_fit(X, y, p: float) -> dict:
    import fsframe
    import fsframe_multiclass.margin as margin_mod

    margin_mod._SEPARABLE.clear()  # each fit of a tuning grid sees new data: no cached answer
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="dso-fs", p=p)
    cpu = time.process_time() - c0
    return {"cpu_seconds": cpu, "iterations": r.info["algorithm1_iterations"], "objective": float(r.objective),
            "l2p_with_bias_row": r.info["l2p_with_bias_row"], "support": np.flatnonzero(r.support).tolist()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap)
    ap.add_argument("--datasets", nargs="+", default=["semeion", "isolet"])
    ap.add_argument("--p", nargs="+", type=float, default=list(GRID))
    ap.add_argument("--compare-p", nargs="+", type=float, default=[0.5],
                    help="the p at which the path without shortcuts is run too")
    args = ap.parse_args(argv)
    study_with_data(ap, "paper004", args.data_dir, args.datasets)  # stops at once (status 2) when a file is absent
    out = {"load_average": os.getloadavg(), "rows": []}
    for name in args.datasets:
        X, y = training_part(name, args.data_dir)
        for p in args.p:
            fast = one_fit(X, y, p)
            row = {"dataset": name, "shape": list(X.shape), "classes": int(np.unique(y).size), "p": p, "fast": fast}
            if p in args.compare_p:
                with _without_shortcuts():
                    slow = one_fit(X, y, p)
                row["without_shortcuts"] = slow
                row["speed_up"] = slow["cpu_seconds"] / fast["cpu_seconds"]
                row["same_support"] = fast["support"] == slow["support"]
                row["objective_rel_diff"] = abs(fast["objective"] - slow["objective"]) / abs(slow["objective"])
            out["rows"].append(row)
            print(json.dumps({k: v for k, v in row.items() if k not in ("fast", "without_shortcuts")}),
                  f"fast {fast['cpu_seconds']:.1f} s, {fast['iterations']} it", flush=True)
            OUT.with_suffix(".json").write_text(json.dumps(out, indent=1) + "\n")
    OUT.with_suffix(".md").write_text(markdown(out))


def markdown(out: dict) -> str:
    lines = [f"DSO-FS on split 0 of `paper004` (training part, z-scored), CPU seconds per fit, one BLAS thread; "
             f"load average {out['load_average'][1]:.1f}. Produced by `benchmarks/dso_paper004_fit.py`.", "",
             "| data set | m x n, classes | p | iterations | CPU s | CPU s without shortcuts | speed-up | same support "
             "| objective rel. diff | 49 fits per split (h) |", "|---|---|--:|--:|--:|--:|--:|---|--:|--:|"]
    for r in out["rows"]:
        f, s = r["fast"], r.get("without_shortcuts")
        lines.append(f"| {r['dataset']} | {r['shape'][0]} x {r['shape'][1]}, {r['classes']} | {r['p']:g} | "
                     f"{f['iterations']} | {f['cpu_seconds']:.1f} | {s['cpu_seconds']:.1f} | {r['speed_up']:.1f}x | "
                     f"{r['same_support']} | {r['objective_rel_diff']:.1e} | {49 * f['cpu_seconds'] / 3600:.2f} |"
                     if s else
                     f"| {r['dataset']} | {r['shape'][0]} x {r['shape'][1]}, {r['classes']} | {r['p']:g} | "
                     f"{f['iterations']} | {f['cpu_seconds']:.1f} | | | | | {49 * f['cpu_seconds'] / 3600:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
