"""How the MPM's covariance ridge ``rho`` was chosen: accuracy for a grid of ``rho`` on data with
more samples than features (where the ridge should not matter), on Madelon-like data with more
features than samples (where an unregularised MPM fits noise), on Colon (62 x 2000) and with an
RBF kernel map (features = training samples, every class covariance singular).

* UCI sets (from the data folder: ``--data-dir DIR``, else ``$FSFRAME_DATA``, as ``fsframe run``;
  docs/performance.md; a missing file stops the script with exit status 2 before any fit): 5-fold stratified CV (seed 0), standardised within folds.
* Madelon-like: Guyon's generator as scikit-learn's ``make_classification`` with Madelon's
  structure (500 features, 5 informative, 15 linear combinations, 16 clusters per class,
  ``flip_y=0.01``), ``class_sep=1`` (linear models reach about 60-65 %, like on Madelon);
  200 training and 2000 test samples, seeds 0-2.
* Colon and Sonar with ``kernel="rbf"`` (``sigma=8``): 5-fold CV as above.

Usage: ``python benchmarks/mpm_rho.py --data-dir DIR`` (prints a Markdown table; a few minutes).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402

RHOS = (0.0, 0.01, 0.1, 1.0)
FILES = {"sonar": ("sonar.csv", {"label_column": -1}), "ionosphere": ("ionosphere.data", {"label_column": -1}),
         "wdbc": ("wdbc.data", {"label_column": 1, "drop_columns": [0]}),
         "pima": ("pima-indians-diabetes.csv", {"label_column": -1}), "colon": ("colon.mat", {})}


def standardise(Xtr, Xte):
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return (Xtr - mu) / sd, (Xte - mu) / sd


def cv(X, y, method, rho, **kw):
    import fsframe
    from sklearn.model_selection import StratifiedKFold

    accs, dmax = [], []
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=0).split(X, y):
        Xtr, Xte = standardise(X[tr], X[te])
        r = fsframe.fit(Xtr, y[tr], method=method, rho=rho, **kw)
        accs.append(np.mean(r.predict(Xte) == y[te]))
        dmax.append(r.info["delta_max"])
    return float(np.mean(accs)), float(np.mean(dmax))


def madelon_like(seed):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=2200, n_features=500, n_informative=5, n_redundant=15, n_repeated=0,
                               n_clusters_per_class=16, flip_y=0.01, class_sep=1.0, random_state=seed)
    Xtr, Xte = standardise(X[:200], X[200:])
    return Xtr, y[:200], Xte, y[200:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, ", ".join(f for f, _ in FILES.values()))
    data = data_folder(ap, ap.parse_args(argv).data_dir, [f for f, _ in FILES.values()])  # else status 2
    import fsframe

    warnings.simplefilter("ignore")
    rows = []
    for name in ("sonar", "ionosphere", "wdbc", "pima", "colon"):
        f, kw = FILES[name]
        ds = fsframe.load_dataset(data / f, **kw)
        X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
        for method in ("mpm", "l1-mpm"):
            cells = [cv(X, y, method, rho) for rho in RHOS]
            rows.append((f"{name} {X.shape[0]}x{X.shape[1]}", method, cells))
        if name == "sonar":
            for method in ("mpm", "l1-mpm"):
                cells = [cv(X, y, method, rho, kernel="rbf", sigma=8.0) for rho in RHOS]
                rows.append(("sonar, rbf sigma=8", method, cells))
    for method in ("mpm", "l1-mpm"):
        per = []
        for rho in RHOS:
            accs, dm = [], []
            for seed in range(3):
                Xtr, ytr, Xte, yte = madelon_like(seed)
                r = fsframe.fit(Xtr, ytr, method=method, rho=rho)
                accs.append(np.mean(r.predict(Xte) == yte))
                dm.append(r.info["delta_max"])
            per.append((float(np.mean(accs)), float(np.mean(dm))))
        rows.append(("Madelon-like 200x500 (test 2000)", method, per))
    print("| data | method | " + " | ".join(f"rho={r}" for r in RHOS) + " |")
    print("|---|---|" + "---|" * len(RHOS))
    for data, method, cells in rows:
        print(f"| {data} | {method} | " + " | ".join(f"{100 * a:.1f} ({d:.3f})" for a, d in cells) + " |")
    print("\nCells: accuracy in % (mean delta_max).")


if __name__ == "__main__":
    main()
