"""How much paper 004's linear SVM on ISOLET depends on the size of the training part.

004 reads ISOLET's 7 797 samples (a 60/40 split: about 4 678 training samples, 180 per class); the
study reads the ASU subset of 1 560 (936 training samples, 36 per class). 004 reports no accuracy
on all features, so the subset cannot be compared with the full set directly; this measures the
slope instead: the evaluated classifier of the ``paper004`` protocol (``SVC(kernel="linear")``, C
tuned over 004's grid by 8-fold CV, 3-fold below 200 training samples) on all 617 features, trained
on each split's whole training part and on a stratified half of it, scored on the same test part.
Prints the accuracies; ``--json FILE`` writes them (``benchmarks/results/paper004_isolet_size.json``).

    nice -n 5 python benchmarks/paper004_isolet_size.py --data-dir DIR --splits 0 1 --json benchmarks/results/paper004_isolet_size.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the scripts' shared helpers
from _common import add_data_dir, study_with_data  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    from sklearn.model_selection import train_test_split
    from threadpoolctl import threadpool_limits

    from fsframe.evaluation.experiment import _plan

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, "isolet.csv")
    ap.add_argument("--splits", nargs="+", type=int, default=[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    import attrs

    study = study_with_data(ap, "paper004", args.data_dir, ["isolet"])
    study = attrs.evolve(study, datasets=[d for d in study.datasets if d.name == "isolet"])
    data, tasks, metas, _ = _plan(study)
    rows = []
    for task, meta in zip(tasks, metas):
        if meta["repeat"] not in args.splits or meta["label"] != "all features":
            continue
        X, y = data[task.data]
        tr, te = task.split.train, task.split.test
        half, _ = train_test_split(tr, train_size=0.5, stratify=y[tr], random_state=meta["repeat"])
        for name, part in (("training part", tr), ("half of it", np.sort(half))):
            mu, sd = X[part].mean(0), X[part].std(0)
            sd = np.where(sd > 0, sd, 1.0)
            est = study.protocol.retrain_estimator(part.size)
            c0 = time.process_time()
            with threadpool_limits(limits=1):
                est.fit((X[part] - mu) / sd, y[part])
                acc = float(np.mean(est.predict((X[te] - mu) / sd) == y[te]))
            row = {"split": meta["repeat"], "train": name, "n_train": int(part.size), "n_test": int(te.size),
                   "folds": est.cv, "C": float(est.best_params_["C"]), "accuracy": round(100 * acc, 2),
                   "cpu_seconds": round(time.process_time() - c0, 2), "load_average": os.getloadavg()}
            print(row, flush=True)
            rows.append(row)
    if args.json:
        args.json.write_text(json.dumps({"note": __doc__.splitlines()[0] + " (CPU seconds: time.process_time)",
                                         "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
