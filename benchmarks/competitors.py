"""fsframe against what a user would pick instead, on paper 002's protocol (issue 13).

Paper 002's protocol (Huang, King & Lyu, §3.1; the study ``paper002``, docs/paper002.md): for each of 10
random stratified 80/20 splits, standardise on the training part, select exactly ``r`` features,
train a linear L2 SVM on them (``C`` by 3-fold CV) and report the test error. The selectors:

* fsframe's ``em-l0``, ``fsv`` and ``l1-svm`` with ``n_features=r`` (``C = 1``);
* ``abess``: ``abess.LogisticRegression(support_size=[r])`` (best-subset splicing, one size);
* ``skglm-mcp``: ``skglm.GeneralizedLinearEstimator(Logistic(), MCPenalty(alpha, gamma=3),
  AndersonCD())``, ``alpha`` bisected (log scale) below ``alpha_max = ||X^T y||_inf / (2 m)``
  until the fit has ``r`` non-zeros;
* ``sk-svc-bisect``, ``sk-logreg-liblinear``, ``sk-logreg-saga``: scikit-learn's
  ``LinearSVC(penalty="l1", dual=False)`` and L1 ``LogisticRegression``, ``C`` bisected (log
  scale) upwards from ``l1_min_c`` (no feature) until the fit has ``r`` non-zeros;
* ``sk-svc-path``: ``l1_min_c`` and a path of 30 values of ``C`` over three decades above it
  (``LinearSVC`` L1), stopped at the first ``C`` with at least ``r`` non-zeros.

A bisection that cannot hit ``r`` exactly (the count jumps over it) ends at the smallest count
above ``r`` it saw and keeps the ``r`` largest ``|coef|`` — paper 002's rule, the one fsframe's
``n_features`` uses. The selection time is the CPU time (``time.process_time``: this process, all
its threads) of the whole procedure (every fit of a bisection or path) — on a shared machine the
fairer clock; the wall time is kept in the JSON (``wall_seconds_median``) — on one BLAS thread,
after one untimed warm-up of every selector per data set (skglm compiles its numba kernels on
first use: seconds, once per process).

    python benchmarks/competitors.py [--quick] [--splits 10] [--datasets sonar colon] [--render]
    python benchmarks/competitors.py --profile     # where one em-l0 fit on Sonar (r = 5) spends its time

Resumable: ``benchmarks/results/competitors.json`` (``competitors_quick.json`` with ``--quick``) is a
store of cells, one per (data set, split, selector) with every ``r`` of the grid, written as each
cell finishes. A cell is stamped with everything that determines it — the data file's digest, the
grid, the protocol (the split, the scaling and the evaluation classifier, by their source and
scikit-learn's version) and the selector's version (its source, settings and packages; for
fsframe's methods a digest of fsframe's and the plugins' source) — and a run with the same command
keeps every cell whose stamp matches and runs the others (a stale cell is run again). The data sets
run smallest first, each over all its splits before the next. At the end (or with ``--render``, any
time) the Markdown section shows, per data set, the splits every selector finished, and says which,
when and at what commit; a full run rewrites the section "Against other libraries" of
``docs/performance.md`` between its markers.
Reads the data folder given by ``--data-dir``, else ``$FSFRAME_DATA`` (as ``fsframe run``; the old
``$FSFRAME_SHARED_DATA`` for one more release, with a deprecation message) and exits with status 2
when none is set, when it is not a directory, or when it holds none of the files of the data sets
asked for (a run that ran nothing rewrites neither the JSON nor the doc); a data set whose file is
absent is skipped and listed as such; abess and skglm
come with the ``bench`` extra (``pip install -e .[bench]``), a selector whose package is missing is
skipped and listed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_dir, data_folder, write_section  # noqa: E402  (one writer of the docs sections)


def retrain_error(Xtr, ytr, Xte, yte, seed):
    """002's evaluation classifier: a linear SVC, ``C`` from {0.01, ..., 100} by stratified 3-fold CV."""
    from sklearn.model_selection import GridSearchCV, StratifiedKFold
    from sklearn.svm import SVC

    grid = GridSearchCV(SVC(kernel="linear"), {"C": [0.01, 0.1, 1, 10, 100]},
                        cv=StratifiedKFold(3, shuffle=True, random_state=seed))
    grid.fit(Xtr, ytr)
    return float(np.mean(grid.predict(Xte) != yte))


ROOT = Path(__file__).resolve().parents[1]
DATA: Path | None = None  # the data folder: main() sets it (data_folder), as do the scripts that use these loaders
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- competitors:begin -->", "<!-- competitors:end -->"
HEADING = "## Against other libraries"  # of the section, when the doc lacks it

# candidate file names per data set (the first present is read with fsframe.load_dataset)
DATASETS = {
    "sonar": ["sonar.csv"],
    "spambase": ["spambase.csv", "spambase.data", "spambase.csv.gz"],
    "colon": ["colon.mat"],
    "prostate": ["Prostate_GE.mat", "prostate.mat", "Prostate.mat"],
}
GRID = {"sonar": [2, 5, 10, 20, 30, 40], "spambase": [2, 5, 10, 20, 30, 40],
        "colon": [2, 5, 10, 20, 50, 100], "prostate": [2, 5, 10, 20, 50, 100]}
QUICK_GRID = {"sonar": [5, 20], "spambase": [5, 20], "colon": [5, 20], "prostate": [5, 20]}
FSFRAME = ["em-l0", "fsv", "l1-svm"]
OTHERS = ["abess", "skglm-mcp", "sk-svc-bisect", "sk-svc-path", "sk-logreg-liblinear", "sk-logreg-saga"]
TARGET_METHODS = ["em-l0", "fsv"]
SK_L1 = ["sk-svc-bisect", "sk-svc-path"]  # "scikit-learn's L1 path" of the target
ABESS_FACTOR = 5.0
MAX_FITS = 40  # per bisection


# --------------------------------------------------------------------------- selectors
def _nnz(coef) -> int:
    return int(np.count_nonzero(np.abs(np.ravel(coef)) > 1e-12))


def _top(coef, r) -> np.ndarray:
    c = np.abs(np.ravel(coef))
    keep = np.argsort(-c, kind="stable")[:r]
    return np.sort(keep[c[keep] > 1e-12])


def bisect_to_r(fit, lo, hi, r, *, max_fits=MAX_FITS):
    """Bisect ``log(t)`` in ``[lo, hi]`` for a fit with ``r`` non-zeros (the count grows with ``t``).

    ``fit(t)`` returns coefficients. Returns ``(selected indices, number of fits)``: the exact
    support when a fit has ``r`` non-zeros, else the ``r`` largest ``|coef|`` of the fit with the
    smallest count above ``r`` seen."""
    fits = 0
    over = None  # (count, coef) of the smallest count > r seen
    coef = fit(hi)
    fits += 1
    while _nnz(coef) < r and fits < max_fits:  # widen until r features enter
        lo, hi = hi, hi * 10.0
        coef = fit(hi)
        fits += 1
    if _nnz(coef) == r:
        return _top(coef, r), fits
    if _nnz(coef) > r:
        over = (_nnz(coef), coef)
    while fits < max_fits and hi / lo > 1.0 + 1e-6:
        mid = float(np.sqrt(lo * hi))
        coef = fit(mid)
        fits += 1
        k = _nnz(coef)
        if k == r:
            return _top(coef, r), fits
        if k < r:
            lo = mid
        else:
            hi = mid
            if over is None or k < over[0]:
                over = (k, coef)
    return (_top(over[1], r) if over is not None else _top(coef, r)), fits


def sel_fsframe(method):
    def select(X, y, r):
        import fsframe

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fsframe.fit(X, y, method=method, n_features=r)
        return np.asarray(res.selected), 1
    return select


def sel_abess(X, y, r):
    import abess

    yb = (y == np.unique(y)[1]).astype(float)
    model = abess.LogisticRegression(support_size=[r])
    model.fit(X, yb)
    return _top(model.coef_, r), 1


def sel_skglm_mcp(X, y, r):
    from skglm import GeneralizedLinearEstimator
    from skglm.datafits import Logistic
    from skglm.penalties import MCPenalty
    from skglm.solvers import AndersonCD

    ypm = np.where(y == np.unique(y)[1], 1.0, -1.0)
    alpha_max = float(np.max(np.abs(X.T @ ypm)) / (2 * len(ypm)))

    def fit(t):  # t = alpha_max / alpha: grows as alpha shrinks
        est = GeneralizedLinearEstimator(Logistic(), MCPenalty(alpha_max / t, 3.0), AndersonCD(fit_intercept=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, ypm)
        return est.coef_
    return bisect_to_r(fit, 1.0, 10.0, r)


def _svc(C):
    from sklearn.svm import LinearSVC

    return LinearSVC(penalty="l1", dual=False, C=C, max_iter=5000)


def _fit_coef(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning at large C: the count is what matters
        est.fit(X, y)
    return est.coef_


def sel_sk_svc_bisect(X, y, r):
    from sklearn.svm import l1_min_c

    c0 = float(l1_min_c(X, y, loss="squared_hinge"))
    return bisect_to_r(lambda C: _fit_coef(_svc(C), X, y), c0, 10.0 * c0, r)


def sel_sk_svc_path(X, y, r):
    from sklearn.svm import l1_min_c

    c0 = float(l1_min_c(X, y, loss="squared_hinge"))
    coef, fits = None, 0
    for C in c0 * np.logspace(0, 3, 30):
        coef = _fit_coef(_svc(C), X, y)
        fits += 1
        if _nnz(coef) >= r:
            break
    return _top(coef, r), fits


def sel_sk_logreg(solver):
    def select(X, y, r):
        from sklearn.linear_model import LogisticRegression
        from sklearn.svm import l1_min_c

        c0 = float(l1_min_c(X, y, loss="log"))
        return bisect_to_r(lambda C: _fit_coef(LogisticRegression(penalty="l1", solver=solver, C=C), X, y),
                           c0, 10.0 * c0, r)
    return select


SELECTORS = {**{m: sel_fsframe(m) for m in FSFRAME}, "abess": sel_abess, "skglm-mcp": sel_skglm_mcp,
             "sk-svc-bisect": sel_sk_svc_bisect, "sk-svc-path": sel_sk_svc_path,
             "sk-logreg-liblinear": sel_sk_logreg("liblinear"), "sk-logreg-saga": sel_sk_logreg("saga")}
NEEDS = {"abess": "abess", "skglm-mcp": "skglm"}


def available(methods):
    import importlib.util

    ok, missing = [], {}
    for m in methods:
        pkg = NEEDS.get(m)
        if pkg is not None and importlib.util.find_spec(pkg) is None:
            missing[m] = f"{pkg} not installed (pip install -e .[bench])"
        else:
            ok.append(m)
    return ok, missing


# --------------------------------------------------------------------------- protocol
def find_data(name):
    if DATA is None:
        return None
    for f in DATASETS[name]:
        if (DATA / f).exists():
            return DATA / f
    return None


STORE_FORMAT = 2
PROTOCOL = "paper002: stratified 80/20 split (random_state = split), standardised on the training part"
ALL = "_all"  # the cell of a split's all-features error


def _digest(*parts) -> str:
    import hashlib

    h = hashlib.sha1()
    for part in parts:
        h.update(repr(part).encode() if not isinstance(part, bytes) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


_CODE: dict = {}


def fsframe_code() -> str:
    """A digest of fsframe's and its bundled plugins' source as it is on disk (edits not yet
    committed included): an fsframe selector's cells are reused only by the same code."""
    if "fsframe" not in _CODE:
        files = sorted(p for d in ("fsframe", "plugins") for p in (ROOT / d).rglob("*.py"))
        _CODE["fsframe"] = _digest(*[(str(f.relative_to(ROOT)), f.read_bytes()) for f in files])
    return _CODE["fsframe"]


def _version_of(pkg):
    import importlib.metadata as md

    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return None


def selector_version(method) -> str:
    """What determines a selector's cell besides its data, split and grid: the source of the
    selector and of the helpers it runs, its settings, and the packages it calls (for fsframe's
    methods, fsframe's whole source and HiGHS's version). A stored cell whose version differs is
    stale and is run again."""
    import inspect

    fn = SELECTORS[method]
    own = fn if method not in FSFRAME else sel_fsframe
    parts = [method, inspect.getsource(own), _version_of("numpy"), _version_of("scipy")]
    if method in FSFRAME:
        parts += [fsframe_code(), _version_of("highspy")]
    elif fn.__module__ == __name__:  # this script's selectors: their helpers and settings
        parts += [inspect.getsource(f) for f in (bisect_to_r, _nnz, _top, _svc, _fit_coef)]
        parts += [MAX_FITS, _version_of("scikit-learn"), _version_of(NEEDS.get(method, "scikit-learn"))]
    return _digest(*parts)


def protocol_version() -> str:
    """What every cell of a split shares: the split, the scaling and the evaluation classifier."""
    import inspect

    return _digest(PROTOCOL, inspect.getsource(split_data), inspect.getsource(retrain_error),
                   _version_of("scikit-learn"))


def split_data(X, y, s):
    """Split ``s`` of paper 002's protocol: stratified 80/20, standardised on the training part."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=s, stratify=y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xte), ytr, yte


def new_store(splits_planned, quick=False) -> dict:
    """An empty cell store: ``cells`` maps ``"dataset/split/method"`` to one finished cell."""
    return {"format": STORE_FORMAT, "quick": quick, "splits_planned": splits_planned, "cells": {},
            "datasets": {}, "skipped_datasets": {}, "skipped_methods": {}, "env": {}}


def load_store(path: Path, splits_planned, quick=False) -> dict:
    """The store at ``path`` to resume (a store of the old one-summary format is not resumable:
    a new store replaces it)."""
    if path.exists():
        store = json.loads(path.read_text())
        if store.get("format") == STORE_FORMAT:
            store["splits_planned"] = max(int(store.get("splits_planned", 0)), splits_planned)
            return store
    return new_store(splits_planned, quick)


def save_store(store: dict, path: Path) -> None:
    """Written whole to a temporary file, then renamed: a run killed while saving keeps the last store."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(store, indent=1))
    os.replace(tmp, path)


def _cell_key(name, s, method) -> str:
    return f"{name}/{s}/{method}"


def _fresh(cell, stamp) -> bool:
    return cell is not None and all(cell.get(k) == v for k, v in stamp.items())


def _run_cell(method, Xtr, ytr, Xte, yte, grid, s) -> dict:
    """Every ``r`` of the grid for one selector on one split (its first-call warm-up is the caller's)."""
    out = {t: {} for t in ("err", "secs", "wall", "fits", "size")}
    for r in grid:
        t0, c0 = time.perf_counter(), time.process_time()
        sel, n_fits = SELECTORS[method](Xtr, ytr, r)
        out["secs"][str(r)] = time.process_time() - c0
        out["wall"][str(r)] = time.perf_counter() - t0
        out["fits"][str(r)] = int(n_fits)
        out["size"][str(r)] = int(len(sel))
        out["err"][str(r)] = retrain_error(Xtr[:, sel], ytr, Xte[:, sel], yte, s) if len(sel) else 0.5
    return out


def run_dataset_cells(store, name, path, methods, grid, splits, save=None) -> int:
    """Paper 002's protocol on one data set, cell by cell (split ``s``, selector): a cell already in
    ``store`` with the same stamp (data, grid, protocol and selector version) is kept, every other
    one is run and stored, then ``save(store)`` is called. A selector is warmed up (one untimed
    call) before its first timed cell in this process; one that raises is recorded as failed for
    the data set and left out. Returns the number of cells run."""
    import fsframe

    ds = fsframe.load_dataset(path)
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    data = _digest(Path(path).read_bytes())
    proto = protocol_version()
    store["datasets"][name] = {"file": Path(path).name, "shape": list(X.shape), "grid": list(grid)}
    base = {"data": data, "grid": list(grid), "protocol": proto}
    stamps = {m: {**base, "version": selector_version(m)} for m in methods}
    stamps[ALL] = base
    warmed, ran = set(), 0
    for s in range(splits):
        todo = [m for m in [ALL, *methods] if not _fresh(store["cells"].get(_cell_key(name, s, m)), stamps[m])]
        failed = {m for m in methods if any(_fresh(c, stamps[m]) and "failed" in c
                                            for k, c in store["cells"].items() if k.startswith(f"{name}/")
                                            and k.endswith(f"/{m}"))}
        todo = [m for m in todo if m not in failed]
        if not todo:
            continue
        Xtr, Xte, ytr, yte = split_data(X, y, s)
        for m in todo:
            info = {**stamps[m], "commit": _commit(), "date": time.strftime("%Y-%m-%d %H:%M"),
                    "loadavg": round(os.getloadavg()[0], 1)}
            if m == ALL:
                cell = {**info, "err": retrain_error(Xtr, ytr, Xte, yte, s)}
            else:
                try:
                    if m not in warmed:  # untimed warm-up: imports, numba compilation, first-call caches
                        SELECTORS[m](Xtr, ytr, grid[0])
                        warmed.add(m)
                    cell = {**info, **_run_cell(m, Xtr, ytr, Xte, yte, grid, s)}
                except Exception as exc:  # noqa: BLE001 - reported in the table, not hidden
                    cell = {**info, "failed": f"{type(exc).__name__}: {exc}"[:300]}
                    print(f"{name}: {m} failed on split {s}, left out: {cell['failed']}", file=sys.stderr)
            store["cells"][_cell_key(name, s, m)] = cell
            ran += 1
            if save is not None:
                save(store)
        print(f"{name}: split {s + 1} done", file=sys.stderr, flush=True)
    return ran


def summarize(store: dict) -> dict:
    """The tables' input from a cell store: per data set, the splits every selector finished (a
    selector run at several versions shows its newest only; a failed one is listed, not shown)."""
    out = {k: store.get(k) for k in ("quick", "skipped_datasets", "skipped_methods", "env", "profile")}
    out["splits_planned"] = store.get("splits_planned", 0)
    out["datasets"] = {}
    for name, meta in store.get("datasets", {}).items():
        cells = {}
        for key, cell in store["cells"].items():
            ds, s, m = key.rsplit("/", 2)
            if ds == name:
                cells.setdefault(m, {})[int(s)] = cell
        if ALL not in cells:
            continue
        failed, by_method = {}, {}
        for m, per in cells.items():
            if m == ALL:
                continue
            newest = max(per.values(), key=lambda c: c["date"])["version"]
            per = {s: c for s, c in per.items() if c["version"] == newest}
            bad = [c["failed"] for c in per.values() if "failed" in c]
            if bad:
                failed[m] = bad[0]
            else:
                by_method[m] = per
        methods = [m for m in FSFRAME + OTHERS if m in by_method] + sorted(set(by_method) - set(FSFRAME + OTHERS))
        done = sorted(set(cells[ALL]).intersection(*(set(per) for per in by_method.values())))
        partial = sorted(set().union(*(set(per) for per in by_method.values()), set(cells[ALL])) - set(done))
        if not done:
            continue
        grid = meta["grid"]
        used = [cells[ALL][s] for s in done] + [by_method[m][s] for m in methods for s in done]

        def per_r(table, fn):
            return {m: {str(r): fn([by_method[m][s][table][str(r)] for s in done]) for r in grid} for m in methods}
        full = [cells[ALL][s]["err"] for s in done]
        out["datasets"][name] = {
            "file": meta["file"], "shape": meta["shape"], "grid": grid, "splits": done, "partial_splits": partial,
            "full_error": [float(np.mean(full)), float(np.std(full))],
            "error": per_r("err", lambda v: [float(np.mean(v)), float(np.std(v))]),
            "seconds_median": per_r("secs", lambda v: float(np.median(v))),
            "seconds": per_r("secs", lambda v: [float(x) for x in v]),
            "wall_seconds_median": per_r("wall", lambda v: float(np.median(v))),
            "clock": "cpu",
            "fits_median": per_r("fits", lambda v: float(np.median(v))),
            "selected_min": per_r("size", lambda v: int(min(v))),
            "failed": failed,
            "commits": sorted({c["commit"] for c in used}),
            "dates": [min(c["date"] for c in used), max(c["date"] for c in used)],
            "loadavg": [min(c["loadavg"] for c in used), max(c["loadavg"] for c in used)],
        }
    done = [len(d["splits"]) for d in out["datasets"].values()]
    out["splits"] = min(done) if done else 0
    return out


def run_dataset(name, path, methods, grid, splits):
    """Paper 002's protocol on one data set in a fresh store: its summary (see :func:`summarize`)."""
    store = new_store(splits)
    run_dataset_cells(store, name, path, methods, grid, splits)
    return summarize(store)["datasets"][name]


def dataset_order(datasets):
    """The data sets present, smallest (samples x features) first, and the absent ones with why."""
    present, skipped = [], {}
    for name in datasets:
        path = find_data(name)
        if path is None:
            skipped[name] = f"none of {DATASETS[name]} in the data folder"
            print(f"{name}: skipped (no file)", file=sys.stderr)
            continue
        import fsframe

        shape = fsframe.load_dataset(path).X.shape
        present.append((shape[0] * shape[1], name, path))
    return [(name, path) for _, name, path in sorted(present)], skipped


def run(store, datasets, methods, splits, quick, save=None):
    """The protocol on every data set present, smallest first, each over its ``splits`` splits
    before the next, resuming ``store`` (:func:`run_dataset_cells`). Returns the cells run."""
    from threadpoolctl import threadpool_limits

    order, skipped = dataset_order(datasets)
    store["skipped_datasets"] = skipped
    ran = 0
    with threadpool_limits(limits=1):
        for name, path in order:
            ran += run_dataset_cells(store, name, path, methods, QUICK_GRID[name] if quick else GRID[name],
                                     splits, save=save)
    return ran


# --------------------------------------------------------------------------- profile
def profile(repeats=5):
    """Where one ``em-l0`` fit on Sonar (split 0, r = 5) spends its time: medians over ``repeats``."""
    import cProfile
    import io
    import pstats

    import fsframe
    from fsframe.loops import base as loop_base
    from fsframe.problem import Subproblem
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(DATA / "sonar.csv")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
    Xtr = StandardScaler().fit(Xtr).transform(Xtr)
    acc = {}
    state = {"settle": False}
    solve0, settle0 = Subproblem.solve, loop_base.settle

    def solve(self, **kw):
        t0 = time.perf_counter()
        it = solve0(self, **kw)
        key = "settle solves" if state["settle"] else "loop solves"
        acc[key] = acc.get(key, 0.0) + time.perf_counter() - t0
        acc[key + " (n)"] = acc.get(key + " (n)", 0) + 1
        for k, v in self.last_timings.items():
            acc["  " + k] = acc.get("  " + k, 0.0) + v
        return it

    def settle(loop, *a, **kw):
        state["settle"] = True
        try:
            return settle0(loop, *a, **kw)
        finally:
            state["settle"] = False

    rows = []
    Subproblem.solve, loop_base.settle = solve, settle
    try:
        fsframe.fit(Xtr, ytr, method="em-l0", n_features=5)  # warm-up
        for _ in range(repeats):
            acc.clear()
            t0 = time.perf_counter()
            res = fsframe.fit(Xtr, ytr, method="em-l0", n_features=5)
            total = time.perf_counter() - t0
            row = {"total": total, "build": res.info.get("build_seconds", 0.0),
                   "compile": res.info.get("compile_seconds", 0.0),
                   **acc, "iterations": res.n_iter}
            row["other (fit driver, loop, result)"] = total - row["build"] - row["compile"] \
                - acc.get("loop solves", 0.0) - acc.get("settle solves", 0.0)
            rows.append(row)
        pr = cProfile.Profile()
        pr.enable()
        fsframe.fit(Xtr, ytr, method="em-l0", n_features=5)
        pr.disable()
    finally:
        Subproblem.solve, loop_base.settle = solve0, settle0
    buf = io.StringIO()
    pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(15)
    keys = list(rows[0])
    return {"median": {k: float(np.median([r.get(k, 0.0) for r in rows])) for k in keys},
            "cprofile_top_tottime": buf.getvalue().splitlines()[:45], "repeats": repeats}


# --------------------------------------------------------------------------- report
def _ratio_cells(d, m, others):
    med = d["seconds_median"]
    return [med[m][str(r)] / max(min(med[o][str(r)] for o in others), 1e-12) for r in d["grid"]]


def _clock(res: dict) -> str:
    """``"CPU "`` for results timed by process time, ``""`` for the older ones timed by the wall clock."""
    clocks = {d.get("clock", "wall") for d in res.get("datasets", {}).values()}
    return "CPU " if clocks == {"cpu"} else ""


def _size(res: dict) -> str:
    """How many splits the results hold, and of how many planned when the run stopped early."""
    done, planned = res["splits"], res.get("splits_planned", res["splits"])
    per = {name: len(d["splits"]) for name, d in res.get("datasets", {}).items() if "splits" in d}
    if per:  # a cell store: each data set over the splits it finished
        if min(per.values()) >= planned:
            return f"{planned} random stratified 80/20 splits"
        return (f"{planned} random stratified 80/20 splits, of which each data set shows those every selector "
                "finished (" + ", ".join(f"{name}: {k}" for name, k in per.items()) + "; the run is resumable "
                "and was stopped to end in time)")
    text = f"{done} random stratified 80/20 split{'s' if done != 1 else ''}"
    return text if done >= planned else (f"{text} (of the protocol's {planned}: the run was stopped after "
                                         f"{done} to end in time; every data set has the same {done})")


def _splits_line(d: dict, planned: int) -> list:
    """Under a data set's heading: which splits its tables average, when and at what commit they ran."""
    if "splits" not in d:
        return []
    k = len(d["splits"])
    text = (f"Splits {', '.join(str(s) for s in d['splits'])} ({k} of {planned}"
            + (f"; split(s) {', '.join(str(s) for s in d['partial_splits'])} partly run, not shown" if d["partial_splits"]
               else "") + f"), run {d['dates'][0]}"
            + (f" to {d['dates'][1]}" if d["dates"][1] != d["dates"][0] else "")
            + f" at commit{'s' if len(d['commits']) > 1 else ''} " + ", ".join(f"`{c}`" for c in d["commits"])
            + f", load average {d['loadavg'][0]:g}" + (f"-{d['loadavg'][1]:g}" if d["loadavg"][1] != d["loadavg"][0] else "")
            + " (one run's selectors take turns split by split, so a ratio compares cells run minutes apart).")
    return [text, ""]


def markdown(res: dict) -> str:
    if "cells" in res:  # a cell store (this script's JSON): its finished splits
        res = summarize(res)
    cmd = "python benchmarks/competitors.py" + (" --quick" if res.get("quick") else "")
    lines = [f"Generated by `{cmd}` (do not edit by hand; `--render` rewrites it from "
             "`benchmarks/results/competitors.json`). Paper 002's protocol: "
             f"{_size(res)}, standardised on the training part, exactly `r` "
             "features, then a linear L2 SVM (C by 3-fold CV) on them. Test error in % (mean ± std); "
             f"selection time in {_clock(res)}seconds, median over splits, whole procedure (every fit of a bisection or path), "
             "one BLAS thread, after one untimed warm-up per selector. fsframe methods: `n_features=r`, C = 1. "
             "`abess`: `LogisticRegression(support_size=[r])`; `skglm-mcp`: logistic + MCP (gamma 3, AndersonCD; its ProxNewton "
             "took 6-10 s per fit with MCP here), "
             "alpha bisected to r non-zeros; `sk-svc-bisect` / `sk-logreg-liblinear` / `sk-logreg-saga`: "
             "`LinearSVC(penalty='l1', dual=False)` / L1 `LogisticRegression`, C bisected from `l1_min_c` to r "
             "non-zeros (defaults otherwise: saga stops at max_iter=100, unconverged on Colon); `sk-svc-path`: `l1_min_c` × 30 values over 3 decades, first C with ≥ r non-zeros. "
             "A count that jumps over r keeps the r largest |coef|.", ""]
    for name, why in res.get("skipped_datasets", {}).items():
        lines.append(f"* **{name}: not run** — {why}.")
    for m, why in res.get("skipped_methods", {}).items():
        lines.append(f"* **`{m}`: not run** — {why}.")
    if res.get("skipped_datasets") or res.get("skipped_methods"):
        lines.append("")
    verdicts = []
    for name, d in res["datasets"].items():
        grid = [str(r) for r in d["grid"]]
        methods = list(d["error"])
        head = "| method | " + " | ".join(f"r={r}" for r in grid) + " |"
        rule = "|---|" + "---|" * len(grid)
        lines += [f"#### {name} ({d['shape'][0]} x {d['shape'][1]}; all features: "
                  f"{100 * d['full_error'][0]:.1f} ± {100 * d['full_error'][1]:.1f} % error)", ""]
        lines += _splits_line(d, res.get("splits_planned", res.get("splits", 0)))
        lines += [f"* **`{m}` failed** (left out): {why}" for m, why in d.get("failed", {}).items()]
        lines += ["Test error (%):", "", head, rule] if not d.get("failed") else ["", "Test error (%):", "", head, rule]
        short = False
        for m in methods:
            cells = []
            for r in grid:
                k = d.get("selected_min", {}).get(m, {}).get(r, int(r))
                short |= k < int(r)
                cells.append(f"{100 * d['error'][m][r][0]:.1f} ± {100 * d['error'][m][r][1]:.1f}"
                             + (f" ‡{k}" if k < int(r) else ""))
            lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
        if short:
            lines += ["", "‡k: on some split the selector returned only k < r features (an L1 solution with "
                      "fewer non-zeros than r: fsframe's `fsv` / `l1-svm` at C = 1 stop there; `sk-svc-path` "
                      "when its 3 decades of C end first; `abess` when some of its r coefficients are 0)."]
        lines += ["", f"Selection time ({_clock(res)}s, median; fits per selection in brackets when more than one):", "",
                  head, rule]
        for m in methods:
            cells = []
            for r in grid:
                f = d["fits_median"][m][r]
                cells.append(f"{d['seconds_median'][m][r]:.4f}" + (f" [{f:g}]" if f > 1 else ""))
            lines.append(f"| `{m}` | " + " | ".join(cells) + " |")
        sk = [o for o in SK_L1 if o in methods]
        if "abess" in methods and sk:
            lines += ["", f"Target (issue 13): time ≤ the faster scikit-learn L1 route ({', '.join(sk)}) and ≤ "
                      f"{ABESS_FACTOR:g}× abess. Ratios (fsframe / competitor, same process):", "",
                      "| method | vs | " + " | ".join(f"r={r}" for r in grid) + " | met |", "|---|---|" + "---|" * (len(grid) + 1)]
            for m in [t for t in TARGET_METHODS if t in methods]:
                rs, ra = _ratio_cells(d, m, sk), _ratio_cells(d, m, ["abess"])
                ok_s, ok_a = sum(x <= 1.0 for x in rs), sum(x <= ABESS_FACTOR for x in ra)
                lines.append(f"| `{m}` | sklearn L1 | " + " | ".join(f"{x:.1f}" for x in rs)
                             + f" | {ok_s}/{len(rs)} |")
                lines.append(f"| `{m}` | abess | " + " | ".join(f"{x:.0f}" for x in ra) + f" | {ok_a}/{len(ra)} |")
                verdicts.append((name, m, ok_s, ok_a, len(rs), max(rs), max(ra)))
        lines.append("")
    if verdicts:
        met = all(v[2] == v[4] and v[3] == v[4] for v in verdicts)
        lines += [f"**Target {'met' if met else 'not met'}.** " + "; ".join(
            f"{n} `{m}`: ≤ sklearn L1 at {s}/{k} values of r (worst {ws:.1f}×), ≤ {ABESS_FACTOR:g}× abess at "
            f"{a}/{k} (worst {wa:.0f}×)" for n, m, s, a, k, ws, wa in verdicts) + ".", ""]
    prof = res.get("profile")
    if prof:
        med = prof["median"]
        lines += [f"Where one `em-l0` fit on Sonar (split 0, r = 5) spends its time (`--profile`, median of "
                  f"{prof['repeats']}):", "", "| part | seconds | share |", "|---|---|---|"]
        for k, v in med.items():
            if k in ("total", "iterations") or k.endswith("(n)"):
                continue
            lines.append(f"| {k.strip() if not k.startswith('  ') else '… ' + k.strip()} | {v:.4f} | "
                         f"{100 * v / med['total']:.0f} % |")
        lines += [f"| **total** ({med.get('iterations', 0):g} loop iterations, "
                  f"{med.get('loop solves (n)', 0):g} + {med.get('settle solves (n)', 0):g} solves) | "
                  f"{med['total']:.4f} | 100 % |", "",
                  "(The `…` rows split the solves: weights update, backend hand-over (`open`), backend call "
                  "(`backend`, of which the solver's own time is `solver`), read-back.)", ""]
    env = res.get("env", {})
    if env:
        lines += [f"{'Last run' if 'cells' in res or any('splits' in d for d in res['datasets'].values()) else 'Run'} "
                  f"on {env.get('date', '?')} at commit `{env.get('commit', '?')}`: Python {env.get('python')}, "
                  f"fsframe {env.get('fsframe')}, " + ", ".join(f"{k} {v}" for k, v in env.get("versions", {}).items())
                  + f"; {env.get('cores')} cores shared, load average {env.get('loadavg', [0])[0]:.1f} at start.", ""]
    return "\n".join(lines)


def _commit() -> str:
    """The short commit the work tree is at (``"?"`` outside git), with ``+`` when fsframe's or the
    plugins' source differs from it."""
    import subprocess

    if "commit" not in _CODE:
        try:
            head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                  text=True, check=True).stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--", "fsframe", "plugins", "benchmarks/competitors.py"],
                                   cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
            _CODE["commit"] = head + ("+" if dirty else "")
        except (OSError, subprocess.CalledProcessError):
            _CODE["commit"] = "?"
    return _CODE["commit"]


def _env():
    import fsframe

    versions = {pkg: v for pkg in ("scikit-learn", "abess", "skglm", "highspy") if (v := _version_of(pkg)) is not None}
    return {"python": platform.python_version(), "fsframe": fsframe.__version__, "versions": versions,
            "date": time.strftime("%Y-%m-%d"), "commit": _commit(), "cores": os.cpu_count(),
            "loadavg": list(os.getloadavg())}


def _safe_profile():
    """:func:`profile` on one BLAS thread; ``None`` (and a message) if fsframe's internals it wraps moved."""
    from threadpoolctl import threadpool_limits

    try:
        with threadpool_limits(limits=1):
            return profile()
    except (AttributeError, KeyError, TypeError) as exc:
        print(f"profile skipped: {type(exc).__name__}: {exc} (fsframe's Subproblem.solve or "
              "the loop template's settle step changed; update profile())", file=sys.stderr)
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="2 splits, r in {5, 20}, no doc update")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--methods", nargs="+", default=FSFRAME + OTHERS, choices=FSFRAME + OTHERS)
    ap.add_argument("--profile", action="store_true", help="only profile one em-l0 fit on Sonar (r = 5)")
    ap.add_argument("--render", action="store_true",
                    help="only rewrite the doc section from the JSON (the cells finished so far)")
    ap.add_argument("--out", type=Path, default=None, help="JSON path (default benchmarks/results/competitors.json)")
    add_data_dir(ap, "the data sets' files (" + ", ".join(f[0] for f in DATASETS.values()) + ")")
    args = ap.parse_args(argv)
    results = ROOT / "benchmarks" / "results"
    out = args.out or results / ("competitors_quick.json" if args.quick else "competitors.json")
    if args.render:
        text = markdown(json.loads(out.read_text()))
        if not args.quick and args.out is None:
            write_section(DOC, BEGIN, END, text, heading=HEADING)
        print(text)
        return 0
    global DATA
    DATA = data_folder(ap, args.data_dir, ["sonar.csv"] if args.profile else ())  # status 2 without a folder
    if not args.profile and all(find_data(name) is None for name in args.datasets):
        ap.exit(2, f"{ap.prog}: none of the data sets' files ({', '.join(f for n in args.datasets for f in DATASETS[n])}) "
                   f"is in the data folder {DATA}; nothing is run, {out.name} and the doc are left as they are\n")
    if args.profile:
        prof = _safe_profile()
        if prof is None:
            return 1
        print("\n".join(prof["cprofile_top_tottime"]))
        print(json.dumps(prof["median"], indent=2))
        if out.exists():  # attach to the last run's results so the doc section shows it
            res = json.loads(out.read_text())
            res["profile"] = prof
            save_store(res, out)
        return 0
    methods, missing = available(args.methods)
    splits = 2 if args.quick else args.splits
    out.parent.mkdir(parents=True, exist_ok=True)
    store = load_store(out, splits, args.quick)
    store["skipped_methods"] = missing
    store["env"] = _env()
    ran = run(store, args.datasets, methods, splits, args.quick, save=lambda st: save_store(st, out))
    print(f"{ran} cell(s) run, the others kept from {out}", file=sys.stderr)
    if ran or not store.get("profile"):
        store["profile"] = _safe_profile() if find_data("sonar") is not None else None
    save_store(store, out)
    text = markdown(store)
    if not args.quick and args.out is None:
        write_section(DOC, BEGIN, END, text, heading=HEADING)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
