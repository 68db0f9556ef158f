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

    FSFRAME_SHARED_DATA=/path/to/shared/data python benchmarks/bench_em_early_stop.py

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

OUT = HERE / "results" / "em_early_stop.json"
PLAN = [("sonar", "sonar.csv", 20), ("ionosphere", "ionosphere.data", 20), ("colon", "colon.mat", 10)]
KS = (1, 2, 3, 4, 6, 8)
RATIOS = (1.0, 2.0, 5.0, 10.0)


class _It:
    def __init__(self, t):
        self.t = t


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
                norms = []
                c0 = time.process_time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = fsframe.fit(Xtr, ytr, method="em-l0", n_features=r,
                                      callback=lambda rec, it: norms.append(np.array(it.t, dtype=float)))
                out.append({"data": name, "split": s, "r": r, "norms": norms, "cpu": time.process_time() - c0,
                            "selected": sorted(int(j) for j in res.selected)})
        print(f"{name}: recorded", flush=True)
    return out


def evaluate(runs: list) -> list:
    from fsframe.loops.em import top_settled
    from fsframe.loops.selection import select_exactly

    rows = []
    for K in KS:
        for rho in RATIOS:
            changed, early, saved, total, which = 0, 0, 0, 0, []
            for run in runs:
                norms, r = run["norms"], run["r"]
                total += len(norms)
                full = select_exactly([_It(t) for t in norms], r, 1e-6).mask
                k = next((k for k in range(1, len(norms)) if top_settled(norms[: k + 1], r, K, rho)), None)
                if k is None or k == len(norms) - 1:
                    continue
                early += 1
                saved += len(norms) - k - 1
                got = select_exactly([_It(t) for t in norms[: k + 1]], r, 1e-6).mask
                if not np.array_equal(got, full):
                    changed += 1
                    which.append(f"{run['data']}-{run['split']}-r{run['r']}")
            rows.append({"K": K, "ratio": rho, "changed": changed, "stopped_early": early,
                         "iterations_saved": saved, "iterations": total, "changed_instances": which[:5]})
    return rows


def markdown(res: dict) -> str:
    n = len(res["instances"])
    lines = [f"| `early_stop` K | ratio | selections changed (of {n}) | runs stopped early | EM iterations saved |",
             "|--:|--:|--:|--:|--:|"]
    for row in res["rules"]:
        lines.append(f"| {row['K']} | {row['ratio']:g} | {row['changed']} | {row['stopped_early']} | "
                     f"{row['iterations_saved']} of {row['iterations']} ({100 * row['iterations_saved'] / row['iterations']:.1f} %) |")
    return "\n".join(lines)


def main() -> int:
    from threadpoolctl import threadpool_limits

    if not all((competitors.DATA / f).exists() for _, f, _ in PLAN):
        print(f"needs {[f for _, f, _ in PLAN]} in {competitors.DATA} (set FSFRAME_SHARED_DATA)")
        return 2
    with threadpool_limits(limits=1):
        runs = record()
    res = {"meta": {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "load_average": os.getloadavg()[0],
                    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                             cwd=HERE).stdout.strip(),
                    "cpu_seconds_full_runs": float(sum(r["cpu"] for r in runs))},
           "instances": [{k: v for k, v in r.items() if k != "norms"} | {"iterations": len(r["norms"])} for r in runs],
           "rules": evaluate(runs)}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
