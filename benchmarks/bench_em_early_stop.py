"""EM's opt-in early stop with ``n_features`` (issue 19): which rules keep every selection.

For 200 seeded instances — stratified 80/20 training parts of Sonar (20 splits), Ionosphere (20)
and Colon (10), standardised (paper 002's protocol), ``r`` in {2, 5, 10, 20} — one ``em-l0`` run
with ``n_features=r`` records every iterate's group norms (``callback``). Each rule
``early_stop=K``, ``early_stop_ratio=rho`` (:func:`fsframe.loops.em.top_settled`) is then applied
to the recorded run: the run is cut at the first iterate where it holds, and paper 002's
selection (:func:`fsframe.loops.selection.select_exactly`) of the cut run is compared with the
full run's. The cut is exact — the iterates before an early stop are the full run's — so this
measures what ``early_stop`` would return without a second run per rule. Also: what the full runs
cost (CPU) and how many EM iterations each rule saves.

    python benchmarks/bench_em_early_stop.py --data-dir DIR
    python benchmarks/bench_em_early_stop.py --plan generated   # 60 generated instances + breast cancer

``--plan generated`` records 60 seeded instances of generated data (``make_generated``: 100-200
samples, 20-80 features of which 3-8 informative, seeds 0-59, ``r`` in {2, 5, 10}) and the
README's breast-cancer set (90 % parts, 5 seeds, ``r`` in {2, 5, 10}), written to
``benchmarks/results/em_early_stop_generated.json``. Both plans also evaluate the rule issue 19
names, "support unchanged ``K`` iterates and the weights' change below a tolerance"
(``rule: "step"``): the ``r`` largest groups the same at ``K + 1`` iterates and the relative change
of the group norms ``||t_k - t_(k-1)|| / ||t_k||`` at most ``tol``.

Writes ``benchmarks/results/em_early_stop.json`` and prints the Markdown table of
docs/performance.md, section "EM iterations" (under "Issue 19 at a glance").
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

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import competitors  # noqa: E402  (the data location, one definition)
from _common import add_data_dir, data_folder  # noqa: E402

OUT = HERE / "results" / "em_early_stop.json"
OUT_GENERATED = HERE / "results" / "em_early_stop_generated.json"
PLAN = [("sonar", "sonar.csv", 20), ("ionosphere", "ionosphere.data", 20), ("colon", "colon.mat", 10)]
KS = (1, 2, 3, 4, 6, 8)
RATIOS = (1.0, 2.0, 5.0, 10.0)
STEP_TOLS = (1e-1, 1e-2, 1e-3)


class _It:
    def __init__(self, t):
        self.t = t


def _record_one(X, y, r, tag: dict) -> dict:
    import fsframe

    norms = []
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", n_features=r,
                          callback=lambda rec, it: norms.append(np.array(it.t, dtype=float)))
    return {**tag, "r": r, "norms": norms, "cpu": time.process_time() - c0,
            "selected": sorted(int(j) for j in res.selected)}


def make_generated(seed: int):
    """One seeded generated instance: ``(X, y)`` standardised, sizes drawn from the seed."""
    rng = np.random.default_rng(seed)
    m, n, k = int(rng.integers(100, 201)), int(rng.integers(20, 81)), int(rng.integers(3, 9))
    X = rng.normal(size=(m, n))
    X[:, 1::3] += 0.5 * X[:, ::3][:, : X[:, 1::3].shape[1]]  # correlated columns
    w = np.zeros(n)
    w[rng.choice(n, k, replace=False)] = rng.normal(size=k) + np.sign(rng.normal(size=k))
    y = np.where(X @ w + 0.5 * rng.normal(size=m) > 0, 1, -1)
    return (X - X.mean(0)) / X.std(0), y


def record_generated() -> list:
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    out = []
    for seed in range(60):
        X, y = make_generated(seed)
        for r in (2, 5, 10):
            out.append(_record_one(X, y, r, {"data": "generated", "split": seed}))
    print("generated: recorded", flush=True)
    Xb, yb = load_breast_cancer(return_X_y=True)
    for s in range(5):
        Xtr, _, ytr, _ = train_test_split(Xb, yb, test_size=0.1, random_state=s, stratify=yb)
        Xtr = StandardScaler().fit(Xtr).transform(Xtr)
        for r in (2, 5, 10):
            out.append(_record_one(Xtr, ytr, r, {"data": "breast_cancer", "split": s}))
    print("breast_cancer: recorded", flush=True)
    return out


def record() -> list:
    import fsframe
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    out = []
    for name, file, splits in PLAN:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = fsframe.load_dataset(competitors.DATA / file)
        X0, y0 = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
        X0 = X0[:, X0.std(axis=0) > 0]
        for s in range(splits):
            Xtr, _, ytr, _ = train_test_split(X0, y0, test_size=0.2, random_state=s, stratify=y0)
            Xtr = StandardScaler().fit(Xtr).transform(Xtr)
            for r in (2, 5, 10, 20):
                out.append(_record_one(Xtr, ytr, r, {"data": name, "split": s}))
        print(f"{name}: recorded", flush=True)
    return out


def step_settled(norms: list, r: int, K: int, tol: float) -> bool:
    """Issue 19's rule: the ``r`` largest groups the same at the last ``K + 1`` iterates (ratio 1
    of :func:`top_settled`) and the relative change of the norms at the last iterate below ``tol``."""
    from fsframe.loops.em import top_settled

    if not top_settled(norms, r, K, 1.0):
        return False
    a, b = np.asarray(norms[-1], dtype=float), np.asarray(norms[-2], dtype=float)
    return bool(np.linalg.norm(a - b) <= tol * np.linalg.norm(a))


def evaluate(runs: list) -> list:
    from fsframe.loops.em import top_settled
    from fsframe.loops.selection import select_exactly

    rules = [("ratio", K, rho, lambda n, r, K=K, rho=rho: top_settled(n, r, K, rho)) for K in KS for rho in RATIOS]
    rules += [("step", K, tol, lambda n, r, K=K, tol=tol: step_settled(n, r, K, tol)) for K in KS for tol in STEP_TOLS]
    rows = []
    for kind, K, rho, holds in rules:
        changed, early, saved, total, which = 0, 0, 0, 0, []
        for run in runs:
            norms, r = run["norms"], run["r"]
            total += len(norms)
            full = select_exactly([_It(t) for t in norms], r, 1e-6).mask
            k = next((k for k in range(1, len(norms)) if holds(norms[: k + 1], r)), None)
            if k is None or k == len(norms) - 1:
                continue
            early += 1
            saved += len(norms) - k - 1
            got = select_exactly([_It(t) for t in norms[: k + 1]], r, 1e-6).mask
            if not np.array_equal(got, full):
                changed += 1
                which.append(f"{run['data']}-{run['split']}-r{run['r']}")
        rows.append({"rule": kind, "K": K, ("ratio" if kind == "ratio" else "tol"): rho, "changed": changed, "stopped_early": early,
                     "iterations_saved": saved, "iterations": total, "changed_instances": which[:5]})
    return rows


def markdown(res: dict) -> str:
    n = len(res["instances"])
    lines = [f"| rule | K | ratio / tol | selections changed (of {n}) | runs stopped early | EM iterations saved |",
             "|---|--:|--:|--:|--:|--:|"]
    for row in res["rules"]:
        kind = row.get("rule", "ratio")
        lines.append(f"| {kind} | {row['K']} | {row.get('ratio', row.get('tol')):g} | {row['changed']} | {row['stopped_early']} | "
                     f"{row['iterations_saved']} of {row['iterations']} ({100 * row['iterations_saved'] / row['iterations']:.1f} %) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser()
    ap.add_argument("--plan", choices=("shared", "generated"), default="shared")
    add_data_dir(ap, ", ".join(f for _, f, _ in PLAN) + " (--plan shared)")
    args = ap.parse_args(argv)
    out = OUT
    if args.plan == "generated":
        out = OUT_GENERATED
        with threadpool_limits(limits=1):
            runs = record_generated()
    else:
        competitors.DATA = data_folder(ap, args.data_dir, [f for _, f, _ in PLAN])  # status 2 without them
        with threadpool_limits(limits=1):
            runs = record()
    res = {"meta": {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "load_average": os.getloadavg()[0],
                    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                             cwd=HERE).stdout.strip(),
                    "cpu_seconds_full_runs": float(sum(r["cpu"] for r in runs))},
           "instances": [{k: v for k, v in r.items() if k != "norms"} | {"iterations": len(r["norms"])} for r in runs],
           "rules": evaluate(runs)}
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
