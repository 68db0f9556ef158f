"""Render the pictures shown in ``docs/pictures.md`` into ``docs/img/pictures-*.png``.

    python docs/gen_pictures.py

Every kind of picture fsframe draws (``fsframe report``, ``fsframe select --plot``, ``fsframe path
--plot``), on the bundled breast-cancer data (UCI WDBC, its 30 feature names), so that a reader sees
what each looks like. ``tests/unit/test_pictures.py`` checks the same properties on the figures.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

IMG = Path(__file__).resolve().parent / "img"


def main() -> None:
    import fsframe
    from fsframe.evaluation import compare
    from fsframe.evaluation.plots import draw, figures_for, path_data, trace_data

    warnings.simplefilter("ignore")
    ds = fsframe.load_dataset("breast_cancer")
    half = fsframe.Dataset(X=ds.X[::2], y=ds.y[::2], feature_names=ds.feature_names, name="wdbc")
    out = []
    # a study of two methods, each over its own parameter: the sweep and frequency pictures of a report
    sweep = compare(half, methods={**{f"l1-svm C={c:g}": {"method": "l1-svm", "C": c} for c in (0.03, 0.3, 3.0)},
                                   **{f"fsv alpha={a:g}": {"method": "fsv", "alpha": a} for a in (1.0, 3.0, 10.0)}},
                    cv=3, random_state=0)
    for kind, data in figures_for(sweep):
        out += draw(kind, data, IMG / f"pictures-{kind}", title=f"wdbc: {kind.replace('_', ' ')}")
    # exactly r features: accuracy against r
    avf = compare(half, methods={f"{m} r={r}": {"method": m, "n_features": r} for m in ("em-l0", "svm-weights")
                                 for r in (2, 5, 10)}, cv=3, random_state=0)
    out += draw("accuracy_vs_features", dict(figures_for(avf))["accuracy_vs_features"],
                IMG / "pictures-accuracy_vs_features", title="wdbc: accuracy against r")
    # one fit's iterations: a loop that monitors its objective, and one that has none to monitor
    X = (ds.X - ds.X.mean(axis=0)) / ds.X.std(axis=0)
    for method in ("fsv", "em-l0"):
        r = fsframe.fit(X, ds.y, method)
        out += draw("trace", trace_data(r), IMG / f"pictures-trace-{method}", title=f"{method} on breast_cancer")
    # a path over the automatic grid of C, with validation accuracy
    rng = np.random.default_rng(0)
    val = np.zeros(len(ds.y), dtype=bool)
    val[rng.permutation(len(ds.y))[:170]] = True
    p = fsframe.path(X[~val], ds.y[~val], "l1-svm", validation=(X[val], ds.y[val]))
    out += draw("path", path_data(p), IMG / "pictures-path", title="l1-svm over the automatic grid of C")
    for f in out:
        if f.suffix == ".svg":
            f.unlink()  # the docs show the PNGs
    print("\n".join(str(f) for f in out if f.suffix == ".png"))


if __name__ == "__main__":
    main()
