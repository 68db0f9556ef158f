"""Paper 001 on Pima: how much its unstated ``theta`` decides the accuracy of MEMPM (eq. 5) and of
FS-MEMPM with criterion 1 (docs/paper001.md, the reason of Pima's rows).

001 calls ``theta`` (the weight of class x's worst-case accuracy ``alpha`` in ``theta alpha +
(1 - theta) beta``) "a constant within [0, 1]"; the study runs 0.5. MEMPM's own paper takes it as
the prior probability of class x, which on Pima (268 of 768 positive) is about 0.35. Here both rows
run at ``theta = 0.5`` and at ``theta`` = the training part's share of class 1, on the same splits:
repeated stratified 10-fold CV (``--repeats``, seed 0), standardised on each training part, as the
study ``paper001`` does (its own splits are not these: compare the two thetas here with each other,
and with 001's 74.5 and 76.4 %).

    python benchmarks/paper001_theta.py --data-dir DIR [--repeats 3]

Writes ``benchmarks/results/paper001_theta.json``; ``markdown()`` renders the table of
docs/paper001.md (tests/docs checks it). Times are CPU seconds (``time.process_time``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "paper001_theta.json"
BEGIN, END = "<!-- paper001_theta:begin -->", "<!-- paper001_theta:end -->"
ROWS = {"MEMPM (no FS)": dict(formulation="mempm", loop="single"),   # 001 eq. 5: theta is mempm_theta
        "FS-MEMPM c1": dict(method="fs-mempm", criterion=1, eps=1e-3)}  # Algorithm 1: theta is the loop's
PAPER = {"MEMPM (no FS)": 74.5, "FS-MEMPM c1": 76.4}  # 001 Table 2, Pima


def fit_row(row: str, theta: float, X, y):
    import fsframe

    key = "mempm_theta" if row == "MEMPM (no FS)" else "theta"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, **ROWS[row], **{key: theta})


def run(X, y, repeats: int) -> dict:
    from sklearn.model_selection import RepeatedStratifiedKFold
    from sklearn.preprocessing import StandardScaler

    cells = []
    splits = RepeatedStratifiedKFold(n_splits=10, n_repeats=repeats, random_state=0).split(X, y)
    for i, (tr, te) in enumerate(splits):
        sc = StandardScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        prior = float(np.mean(y[tr] == 1))
        for row in ROWS:
            for name, theta in (("0.5", 0.5), ("prior", prior)):
                t0 = time.process_time()
                m = fit_row(row, theta, Xtr, y[tr])
                cells.append({"repeat": i // 10, "fold": i % 10, "row": row, "theta": name, "theta_value": theta,
                              "accuracy": float(np.mean(m.predict(Xte) == y[te])),
                              "n_selected": int(m.n_selected), "cpu_seconds": time.process_time() - t0})
    return {"repeats": repeats, "cells": cells}


def summary(res: dict) -> list[dict]:
    """Per row and theta: the mean accuracy (%) and its spread over the repeats' means."""
    out = []
    for row in ROWS:
        for name in ("0.5", "prior"):
            cs = [c for c in res["cells"] if c["row"] == row and c["theta"] == name]
            means = [100 * np.mean([c["accuracy"] for c in cs if c["repeat"] == r]) for r in range(res["repeats"])]
            out.append({"row": row, "theta": name, "accuracy": float(np.mean(means)),
                        "repeat_std": float(np.std(means, ddof=1)) if len(means) > 1 else None,
                        "theta_mean": float(np.mean([c["theta_value"] for c in cs])),
                        "n_selected": float(np.mean([c["n_selected"] for c in cs])),
                        "cpu_seconds": float(sum(c["cpu_seconds"] for c in cs))})
    return out


def markdown(res: dict) -> str:
    head = ["| row | theta | accuracy (%) | std over repeats | NSF | 001 (Table 2) | CPU s |",
            "|---|---|--:|--:|--:|--:|--:|"]
    for s in summary(res):
        theta = "0.5" if s["theta"] == "0.5" else f"training prior ({s['theta_mean']:.3f})"
        sd = "-" if s["repeat_std"] is None else f"{s['repeat_std']:.2f}"
        head.append(f"| {s['row']} | {theta} | {s['accuracy']:.2f} | {sd} | {s['n_selected']:.2f} | "
                    f"{PAPER[s['row']]} | {s['cpu_seconds']:.0f} |")
    return "\n".join(head)


def main(argv=None):
    import fsframe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    add_data_dir(ap, "pima-indians-diabetes.csv")
    args = ap.parse_args(argv)
    data = data_folder(ap, args.data_dir, ["pima-indians-diabetes.csv"])  # status 2 without it
    d = fsframe.load_dataset(data / "pima-indians-diabetes.csv", label_column=-1)
    res = run(np.asarray(d.X, dtype=float), np.asarray(d.y), args.repeats)
    res["fsframe"] = fsframe.__version__
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(markdown(res))


if __name__ == "__main__":
    main()
