"""Two measurements of DSO-FS (docs/multiclass.md) that a study file cannot express: DSO-FS
(004 Algorithm 1) against the generic composition ``margin`` + ``lp`` + ``em`` on Colon (which
reaches the smaller ``||W||_{2,p}``, which is faster), and time and peak memory of DSO-FS at
CLL-SUB-111's size (n = 11 340, m = 111, c = 3; synthetic data). 004's protocol itself is the
shipped study ``paper004`` (docs/paper004.md).

    python benchmarks/dso_extras.py --data-dir DIR

Colon (``colon.mat``) is read from the data folder: ``--data-dir DIR``, else ``$FSFRAME_DATA``, as
``fsframe run`` (docs/performance.md); without it the script stops with exit status 2.

Writes ``benchmarks/results/dso_extras.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import scipy.io as sio

import fsframe

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402
OUT = ROOT / "benchmarks" / "results" / "dso_extras.json"


def load_colon(data: Path):
    d = sio.loadmat(data / "colon.mat")
    X = np.asarray(d["X"], dtype=float)
    y = np.asarray(d["Y"]).ravel()
    sd = X.std(0)
    keep = sd > 0
    return (X[:, keep] - X[:, keep].mean(0)) / sd[keep], y


def composition_vs_dso(data: Path, p=0.5):
    """DSO-FS (Algorithm 1) and margin + lp + em on Colon: ||W||_{2,p} over the feature rows, time."""
    from fsframe_multiclass.nullspace import l2p

    X, y = load_colon(data)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, kw in (("dso-fs", dict(method="dso-fs", p=p)),
                         ("dso-fs finish=none", dict(method="dso-fs", p=p, finish="none")),
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, "colon.mat")
    args = ap.parse_args(argv)
    data = data_folder(ap, args.data_dir, ["colon.mat"])  # status 2 without it, before any fit
    out = {"composition_vs_dso_colon_p0.5": composition_vs_dso(data), "large_n": large_n(),
           "fsframe": fsframe.__version__}
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
