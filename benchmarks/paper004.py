"""Paper 004's protocol (§5.1, Table 1, Fig. 2) on the multi-class data of ``../shared/data``.

Each dataset is z-scored (per feature, on the whole set, as 004 "normalized all the data"), split at
random 60/40 (stratified) ``--splits`` times; every method ranks the features on the training part;
a linear SVM (scikit-learn's ``LinearSVC``, ``C`` tuned by 3-fold cross-validation over
``--svm-cs``) is trained on the top ``d`` features for each ``d`` of ``--d-grid`` and scored on the
test part. Methods: DSO-FS (p in ``--ps``), RFS, ReliefF, mRMR, one-vs-rest ``l1-svm`` (ranking by
the largest normalised ``|w_j|`` over classes, as fsframe's one-vs-rest union).

Also measured: DSO-FS against the generic composition (``margin`` + ``lp`` + ``em``) on Colon (the
same ``||W||_{2,p}``? which is faster?), and time and peak memory of DSO-FS at CLL-SUB-111's size
(n = 11 340, m = 111, c = 3; synthetic data).

Full 004 protocol: ``python benchmarks/paper004.py --splits 10 --d-grid 10 20 30 40 50 60 70 80 90 100
--tune``. The defaults are the reduced run of docs/multiclass.md. Writes
``benchmarks/results/paper004.json`` and ``docs/img/paper004_accuracy.png``.
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.io as sio
from sklearn.model_selection import GridSearchCV, StratifiedKFold, train_test_split
from sklearn.svm import LinearSVC

import fsframe

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
DATASETS = {"Isolet": "Isolet.mat", "COIL20": "COIL20.mat", "ORL": "ORL.mat", "Yale": "Yale.mat",
            "Colon": "colon.mat"}
# 004 Table 1 (top 100 features): the datasets 004 and this run share none; shown for scale
TABLE1 = {"ISOLET": {"mRMR": 90.82, "ReliefF": 89.13, "L1-SVM": 93.90, "RFS": 93.72, "DSO-FS": 95.23},
          "SEMEION": {"mRMR": 88.18, "ReliefF": 86.54, "L1-SVM": 90.36, "RFS": 90.45, "DSO-FS": 90.64},
          "LUNG": {"mRMR": 94.88, "ReliefF": 94.88, "L1-SVM": 95.12, "RFS": 95.37, "DSO-FS": 95.37},
          "CLL-SUB-111": {"mRMR": 76.47, "ReliefF": 72.94, "L1-SVM": 79.41, "RFS": 75.88, "DSO-FS": 81.18},
          "UMIST": {"mRMR": 96.87, "ReliefF": 98.17, "L1-SVM": 98.17, "RFS": 98.04, "DSO-FS": 98.39},
          "AR": {"mRMR": 87.31, "ReliefF": 85.58, "L1-SVM": 87.12, "RFS": 88.85, "DSO-FS": 89.62}}


def load(name):
    d = sio.loadmat(DATA / DATASETS[name])
    X = np.asarray(d["X"], dtype=float)
    y = np.asarray(d["Y"]).ravel()
    sd = X.std(0)
    keep = sd > 0
    X = (X[:, keep] - X[:, keep].mean(0)) / sd[keep]
    return X, y


def ranking(method, X, y, p, dso_kw):
    """Feature indices, best first, computed on the training data only."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method.startswith("DSO-FS"):
            r = fsframe.fit(X, y, method="dso-fs", p=p, **dso_kw)
            return np.argsort(-np.linalg.norm(np.reshape(r.coef, (-1, X.shape[1])), axis=0), kind="stable")
        if method == "RFS":
            r = fsframe.fit(X, y, method="rfs", gamma=1.0, max_iter=50)
            return np.argsort(-np.linalg.norm(np.reshape(r.coef, (-1, X.shape[1])), axis=0), kind="stable")
        if method in ("ReliefF", "mRMR"):
            r = fsframe.fit(X, y, method=method.lower(), n_features=min(100, X.shape[1]))
            return np.asarray(r.info["ranking"])
        if method == "L1-SVM":
            r = fsframe.fit(X, y, method="l1-svm", C=1.0)
            A = np.abs(np.atleast_2d(r.coef))
            A = A / np.where(A.max(axis=1, keepdims=True) > 0, A.max(axis=1, keepdims=True), 1.0)
            return np.argsort(-A.max(axis=0), kind="stable")
    raise ValueError(method)


def svm_accuracy(Xtr, ytr, Xte, yte, cs, tune):
    if tune:
        folds = StratifiedKFold(3, shuffle=True, random_state=0)
        clf = GridSearchCV(LinearSVC(dual="auto", max_iter=5000), {"C": cs}, cv=folds)
    else:
        clf = LinearSVC(C=1.0, dual="auto", max_iter=5000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(Xtr, ytr)
    return float((clf.predict(Xte) == yte).mean())


def run_dataset(name, args):
    X, y = load(name)
    methods = [f"DSO-FS p={p}" for p in args.ps] + ["RFS", "ReliefF", "mRMR", "L1-SVM"]
    grid = [d for d in args.d_grid if d <= X.shape[1]]
    acc = {m: np.full((args.splits, len(grid)), np.nan) for m in methods}
    secs = {m: [] for m in methods}
    big = X.shape[0] * 0.6 * len(np.unique(y)) > 5000  # large E steps: BVLS, fewer iterations
    dso_kw = {"max_iter": args.dso_iter_big if big else args.dso_iter, "e_solver": "bvls" if big else "qp"}
    for s in range(args.splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, stratify=y, random_state=s)
        for m in methods:
            p = float(m.split("=")[1]) if m.startswith("DSO") else None
            t0 = time.perf_counter()
            order = ranking(m, Xtr, ytr, p, dso_kw)
            secs[m].append(time.perf_counter() - t0)
            for i, d in enumerate(grid):
                top = order[:d]
                acc[m][s, i] = svm_accuracy(Xtr[:, top], ytr, Xte[:, top], yte, args.svm_cs, args.tune)
            print(f"{name} split {s} {m}: {secs[m][-1]:.1f} s, acc@{grid[-1]} {acc[m][s, -1]:.3f}", flush=True)
    return {"shape": list(X.shape), "n_classes": int(np.unique(y).size), "d_grid": grid, "dso": dso_kw,
            "accuracy": {m: a.tolist() for m, a in acc.items()},
            "mean": {m: np.nanmean(a, axis=0).tolist() for m, a in acc.items()},
            "std": {m: np.nanstd(a, axis=0).tolist() for m, a in acc.items()},
            "rank_seconds": {m: float(np.mean(v)) for m, v in secs.items()}}


def composition_vs_dso(p=0.5):
    """DSO-FS (Algorithm 1) and margin + lp + em on Colon: ||W||_{2,p} over the feature rows, time."""
    from fsframe_multiclass.nullspace import l2p

    X, y = load("Colon")
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kw in (("dso-fs", dict(method="dso-fs", p=p)),
                         ("margin+lp+em", dict(formulation="margin", surrogate="lp", loop="em", p=p, max_iter=100))):
            t0 = time.perf_counter()
            r = fsframe.fit(X, y, **kw)
            W = np.reshape(r.formulation_coef(), (X.shape[1], -1))  # W (n, c), 004's layout
            out[name] = {"seconds": time.perf_counter() - t0, "l2p_features": l2p(W, p),
                         "l2p_with_bias": l2p(np.vstack([W, np.atleast_2d(r.intercept)]), p),
                         "n_selected": r.n_selected, "n_iter": r.n_iter, "converged": r.converged}
    return out


def large_n(m=111, n=11340, c=3, iters=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, n))
    y = np.arange(m) % c
    tracemalloc.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="dso-fs", p=0.5, max_iter=iters)
    secs = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"m": m, "n": n, "c": c, "iterations": r.n_iter, "seconds": secs, "peak_MB": peak / 1e6,
            "n_by_n_dense_MB": n * n * 8 / 1e6, "X_MB": X.nbytes / 1e6}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["datasets"])
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        r = results["datasets"][name]
        for m, mean in r["mean"].items():
            ax.plot(r["d_grid"], 100 * np.asarray(mean), marker="o", ms=3, label=m)
        ax.set_title(f"{name} {r['shape'][0]}x{r['shape'][1]}, {r['n_classes']} classes")
        ax.set_xlabel("selected features d")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--splits", type=int, default=2)
    ap.add_argument("--d-grid", type=int, nargs="+", default=[10, 25, 50, 100])
    ap.add_argument("--ps", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    ap.add_argument("--svm-cs", type=float, nargs="+", default=[1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0])
    ap.add_argument("--tune", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--dso-iter", type=int, default=30)
    ap.add_argument("--dso-iter-big", type=int, default=8)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "paper004.json"))
    ap.add_argument("--png", default=str(ROOT / "docs" / "img" / "paper004_accuracy.png"))
    ap.add_argument("--no-extras", action="store_true", help="skip the composition and large-n measurements")
    args = ap.parse_args(argv)
    out = Path(args.out)
    results = json.loads(out.read_text()) if out.exists() else {}
    results.setdefault("datasets", {})
    results["protocol"] = {k: v for k, v in vars(args).items() if k not in ("out", "png")}
    results["table1_004"] = TABLE1
    for name in args.datasets:
        results["datasets"][name] = run_dataset(name, args)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(results, indent=1))
    if not args.no_extras:
        results["composition_vs_dso_colon_p0.5"] = composition_vs_dso()
        results["large_n"] = large_n()
        out.write_text(json.dumps(results, indent=1))
    plot(results, Path(args.png))
    print(json.dumps({k: v for k, v in results.items() if k not in ("datasets",)}, indent=1))


if __name__ == "__main__":
    main()
