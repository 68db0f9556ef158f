"""The twin-SVM report of ``docs/twsvm.md`` (issue 10): L1-TWSVM, FTSVM (linear and RBF) and
RTSVM top-r next to ``l1-svm`` and ``l0-mpm``, one ``fsframe.compare`` run per data set (every
method on the same stratified folds, standardised on each training part).

Data: Sonar, Ionosphere, Pima, WDBC (from the data folder: ``--data-dir DIR``, else ``$FSFRAME_DATA``,
as ``fsframe run``; docs/performance.md; a missing file stops the script with exit status 2) and the cross-planes toy set
(``fsframe_twsvm.toy.cross_planes``: 200 samples, 2 informative + 8 noise features). Every method
runs at its defaults (``c11 = c12 = c21 = c22 = 1``, ``sigma = 1e-3``, RBF width by the scale
rule; ``C = 1``; L0-MPM ``alpha = 5``); RTSVM keeps ``r = max(2, round(0.2 n))`` features. On
cross-planes FTSVM RBF also runs with ``c11 = c21 = 8`` (a tighter fit of each class's surface).
Columns: 10-fold (or ``--cv K``) accuracy, number of selected features (NSF), LPs solved per fit
(a twin-SVM subproblem is its two LPs; L0-MPM's subproblems are SOCPs, counted in the same
column), and seconds per fit.

Usage::

    python benchmarks/twsvm_report.py --data-dir DIR [--cv 10] [--datasets Sonar,Ionosphere,Pima,WDBC,cross-planes]
                                      [--jobs 1] [--write-docs]

Writes ``benchmarks/results/twsvm_report.json``; with ``--write-docs`` the table between the
markers in ``docs/twsvm.md``.

The shipped study ``paper003`` (``fsframe run paper003``, docs/paper003.md) is this protocol with
the all-features and random-features baselines; this script stays only as the generator of the
table docs/twsvm.md keeps until the study's full run is committed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import fsframe
from fsframe_twsvm.toy import cross_planes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402

DATA: Path | None = None  # the data folder: main() sets it (_common.data_folder)
OUT = ROOT / "benchmarks" / "results" / "twsvm_report.json"
DOC = ROOT / "docs" / "twsvm.md"
BEGIN, END = "<!-- twsvm_report:begin -->", "<!-- twsvm_report:end -->"

FILES = {
    "Sonar": ("sonar.csv", {"label_column": -1}),
    "Ionosphere": ("ionosphere.data", {"label_column": -1}),
    "Pima": ("pima-indians-diabetes.csv", {"label_column": -1}),
    "WDBC": ("wdbc.data", {"label_column": 1, "drop_columns": [0]}),
}


def load(name: str):
    if name == "cross-planes":
        X, y = cross_planes(200, 8, seed=0)
        return X, y
    fname, kw = FILES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = fsframe.load_dataset(DATA / fname, **kw)
    return np.asarray(ds.X, dtype=float), np.asarray(ds.y)


def configs(name: str, n: int) -> dict:
    r = max(2, round(0.2 * n))
    extra = {"ftsvm rbf c11=c21=8": {"method": "ftsvm", "kernel": "rbf", "c11": 8.0, "c21": 8.0}} \
        if name == "cross-planes" else {}
    return extra | {
        "l1-twsvm": {"method": "l1-twsvm"},
        "ftsvm linear": {"method": "ftsvm"},
        "ftsvm rbf": {"method": "ftsvm", "kernel": "rbf"},
        f"rtsvm top-{r}": {"method": "rtsvm", "n_features": r},
        "l1-svm": {"method": "l1-svm"},
        "l0-mpm": {"method": "l0-mpm"},
    }


def lps_of(rec) -> int:
    f = rec.facts or {}
    if "lps_solved" in f:
        return int(f["lps_solved"])
    return int(rec.n_iter) * int(f.get("n_lps", 1))


def run(name: str, cv: int, jobs: int) -> dict:
    X, y = load(name)
    cfg = configs(name, X.shape[1])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.compare(X, y, [(label, spec) for label, spec in cfg.items()], cv=cv, n_jobs=jobs)
    rows = []
    for r in res.results:
        ok = [rec for rec in r.folds if rec.ok]
        rows.append(dict(
            label=r.label, n_fits=len(r.folds), n_failed=len(r.folds) - len(ok),
            accuracy=float(np.mean([rec.accuracy for rec in ok])) if ok else None,
            accuracy_std=float(np.std([rec.accuracy for rec in ok])) if ok else None,
            nsf=float(np.mean([rec.n_selected for rec in ok])) if ok else None,
            lps=float(np.mean([lps_of(rec) for rec in ok])) if ok else None,
            seconds=float(np.mean([rec.seconds for rec in ok])) if ok else None,
            kept_informative=(float(np.mean([{0, 1} <= set(rec.selected) for rec in ok]))
                              if name == "cross-planes" and ok else None)))
    return dict(dataset=name, shape=list(X.shape), cv=cv, seconds=time.perf_counter() - t0, rows=rows)


def table(runs: list) -> str:
    lines = ["| data (m x n) | method | accuracy (%) | NSF | LPs | seconds |", "|---|---|---|---|---|---|"]
    for d in runs:
        for row in d["rows"]:
            acc = "-" if row["accuracy"] is None else f"{100 * row['accuracy']:.1f} ± {100 * row['accuracy_std']:.1f}"
            nsf = "-" if row["nsf"] is None else f"{row['nsf']:.1f}"
            lps = "-" if row["lps"] is None else f"{row['lps']:.1f}"
            sec = "-" if row["seconds"] is None else f"{row['seconds']:.2f}"
            fail = f" ({row['n_failed']} failed)" if row["n_failed"] else ""
            lines.append(f"| {d['dataset']} ({d['shape'][0]} x {d['shape'][1]}, {d['cv']}-fold) | {row['label']}{fail} "
                         f"| {acc} | {nsf} | {lps} | {sec} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", type=int, default=10)
    ap.add_argument("--datasets", default="Sonar,Ionosphere,Pima,WDBC,cross-planes")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--write-docs", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT, help="results JSON (rows of other data sets are kept)")
    add_data_dir(ap, ", ".join(f for f, _ in FILES.values()))
    args = ap.parse_args(argv)
    global DATA
    needed = [FILES[d][0] for d in args.datasets.split(",") if d in FILES]
    DATA = data_folder(ap, args.data_dir, needed) if needed else None  # status 2 without them; cross-planes: none
    out = args.out
    runs = []
    if out.exists():  # keep the other data sets' rows from earlier runs
        runs = [d for d in json.loads(out.read_text())["runs"] if d["dataset"] not in args.datasets.split(",")]
    for name in args.datasets.split(","):
        d = run(name, args.cv, args.jobs)
        print(json.dumps(d), flush=True)
        runs.append(d)
    order = ["Sonar", "Ionosphere", "Pima", "WDBC", "cross-planes"]
    runs.sort(key=lambda d: order.index(d["dataset"]) if d["dataset"] in order else 99)
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"runs": runs, "fsframe": fsframe.__version__}, indent=1))
    print(table(runs))
    if args.write_docs:
        text = DOC.read_text()
        i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
        DOC.write_text(text[:i] + "\n" + table(runs) + "\n" + text[j:])


if __name__ == "__main__":
    main()
