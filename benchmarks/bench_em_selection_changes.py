"""How many of an ``em-l0`` run's EM iterations change its selection (issue 19, "fewer EM steps").

With ``n_features=r`` the answer of an ``em-l0`` run is paper 002's selection
(:func:`fsframe.loops.selection.select_exactly`: the ``r`` largest groups of the last iterate
that still has ``r`` meaningful non-zeros) followed by a re-solve on those ``r`` features. A run
stopped after iterate ``k`` returns the selection of its first ``k + 1`` iterates (the iterates
before a stop are the full run's), so one full run per instance, its iterates' group norms recorded
(``callback``), tells for every ``k`` what a stop there would have selected. Per instance:

* ``iterates``: the recorded iterates (the L2 start, the EM steps, check steps);
* ``changes``: how many ``k >= 1`` select another set than ``k - 1`` does (each prefix's selection);
* ``settled_at``: the first ``k`` from which every later prefix selects the full run's set — an
  oracle stop there returns the full run's answer (the same ``r`` features, hence the same
  re-solve and model); ``iterates - 1 - settled_at`` iterates are the most any answer-preserving
  stop rule could save on that instance.

Instances: paper 002's protocol on Sonar (``bench_issue19.sonar_splits``: stratified 80/20
splits, standardised on the training part, needs ``sonar.csv`` in the data folder; skipped without it),
the README's breast-cancer (WDBC) set (90 % parts, standardised) and ``bench_em_early_stop``'s
seeded generated instances; ``r`` in {5, 10}.

    python benchmarks/bench_em_selection_changes.py --data-dir DIR

Writes ``benchmarks/results/em_selection_changes.json`` and prints the Markdown table of
docs/performance.md ("Issue 19 at a glance", eighth pass).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_em_early_stop as early  # noqa: E402  (the recording and the generated instances, one definition)
import bench_issue19  # noqa: E402  (Sonar's splits)
import competitors  # noqa: E402
from _common import add_data_dir, data_folder  # noqa: E402

OUT = HERE / "results" / "em_selection_changes.json"
RS = (5, 10)


def analyse(norms: list, r: int) -> dict:
    """Per recorded run: its iterates, how many prefixes change the selection, where it settles."""
    from fsframe.loops.selection import select_exactly

    masks = [select_exactly([early._It(t) for t in norms[: k + 1]], r, 1e-6).mask for k in range(len(norms))]
    changes = sum(not np.array_equal(masks[k], masks[k - 1]) for k in range(1, len(masks)))
    settled = len(masks) - 1
    while settled > 0 and np.array_equal(masks[settled - 1], masks[-1]):
        settled -= 1
    return {"iterates": len(norms), "changes": int(changes), "settled_at": int(settled),
            "saveable": int(len(norms) - 1 - settled)}


def instances(splits: int, generated: int):
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if competitors.DATA is not None:
        for s, (X, y) in enumerate(bench_issue19.sonar_splits(splits)):
            yield "sonar", s, X, y
    Xb, yb = load_breast_cancer(return_X_y=True)
    for s in range(splits):
        Xtr, _, ytr, _ = train_test_split(Xb, yb, test_size=0.1, random_state=s, stratify=yb)
        yield "breast_cancer", s, StandardScaler().fit(Xtr).transform(Xtr), ytr
    for seed in range(generated):
        X, y = early.make_generated(seed)
        yield "generated", seed, X, y


def measure(splits: int, generated: int) -> list:
    rows = []
    for data, s, X, y in instances(splits, generated):
        for r in RS:
            run = early._record_one(X, y, r, {"data": data, "split": s})
            rows.append({"data": data, "split": s, "r": r, **analyse(run["norms"], r)})
    return rows


def markdown(rows: list) -> str:
    lines = ["| data | r | instances | iterates (median) | selection changes per run (median, max) "
             "| settled at iterate (median) | iterates an oracle stop saves (sum of all) |",
             "|---|--:|--:|--:|--:|--:|--:|"]
    for data in dict.fromkeys(row["data"] for row in rows):
        for r in RS:
            sel = [row for row in rows if row["data"] == data and row["r"] == r]
            if not sel:
                continue
            its = [row["iterates"] for row in sel]
            ch = [row["changes"] for row in sel]
            lines.append(f"| {data} | {r} | {len(sel)} | {np.median(its):.0f} | {np.median(ch):.0f}, {max(ch)} "
                         f"| {np.median([row['settled_at'] for row in sel]):.0f} "
                         f"| {sum(row['saveable'] for row in sel)} of {sum(its)} "
                         f"({100 * sum(row['saveable'] for row in sel) / sum(its):.0f} %) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    import argparse

    from threadpoolctl import threadpool_limits

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--generated", type=int, default=30)
    add_data_dir(ap, "sonar.csv (its splits are skipped without it)")
    args = ap.parse_args(argv)
    competitors.DATA = data_folder(ap, args.data_dir, ["sonar.csv"], required=False)
    with threadpool_limits(limits=1):
        rows = measure(args.splits, args.generated)
    res = {"meta": {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                    "load_average": os.getloadavg()[0], "splits": args.splits, "generated": args.generated,
                    "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                             cwd=HERE).stdout.strip()},
           "instances": rows}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(res, indent=1))
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
