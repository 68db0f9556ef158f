"""Sparsity chosen by cross-validation, without a hand-made grid (issue 22): fsframe's
``FSSelectorCV`` against abess's cross-validated support size and scikit-learn's
``LogisticRegressionCV(penalty="l1")``, on breast cancer (UCI WDBC, 569 x 30) and Colon (62 x 2000).

The protocol, the same for every tuner: ``--splits`` random stratified 70/30 splits of the data;
on each, standardise on the training part; the tuner chooses its sparsity by 5-fold stratified
cross-validation on the training part — **the same five folds for every tuner**
(``fsframe.evaluation.make_splits(y_train, 5, random_state=split)``, handed to abess as
``cv_fold_id`` and to scikit-learn as ``cv=``) — and refits on the whole training part; we report
the held-out accuracy of its model, the number of selected features and the wall time of the whole
tuning (every fit of every fold and the refit), on one BLAS thread, after an untimed warm-up.

* ``fsframe l1-svm`` / ``l1-svm 1se``: ``FSSelectorCV("l1-svm")``, the automatic grid of ``C``
  (from where the first feature enters, 4 points a decade, until the support stops growing), the
  best mean accuracy / the one-standard-error rule toward fewer features;
* ``fsframe em-l0``: ``FSSelectorCV("em-l0")``, the number of features over log-spaced integers
  from 1 (002's protocol selects exactly ``r``);
* ``abess``: ``abess.LogisticRegression(cv=5, thread=1).fit(..., cv_fold_id=..., is_normal=False)`` (the
  data is standardised already): best-subset splicing
  over its default support sizes, the size chosen by its default CV score (``roc_auc``);
* ``sklearn LR-CV l1``: ``LogisticRegressionCV(penalty="l1", solver="liblinear", Cs=10,
  cv=folds)`` (accuracy).

    python benchmarks/bench_tuning.py [--quick] [--splits 10] [--render] [--datasets colon]

Writes ``benchmarks/results/tuning.json`` (``tuning_quick.json`` with ``--quick``), prints the
Markdown table and, on a full run, rewrites the section between the ``tuning`` markers of
``docs/performance.md`` (``--render`` re-renders it from the JSON). Colon is read from
``colon.mat`` in the data folder (``--data-dir``, else ``$FSFRAME_DATA``; the old
``$FSFRAME_SHARED_DATA`` for one more release) and skipped (listed) when absent; abess comes with the ``bench`` extra.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_data_dir, data_folder, write_section  # noqa: E402  (one writer of the docs sections)

ROOT = Path(__file__).resolve().parents[1]
DATA: Path | None = None  # the data folder: main() sets it (_common.data_folder; None: Colon is skipped)
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- tuning:begin -->", "<!-- tuning:end -->"
TUNERS = ["fsframe l1-svm", "fsframe l1-svm 1se", "fsframe em-l0", "abess", "sklearn LR-CV l1"]
FOLDS = 5


def folds_of(y, seed):
    from fsframe.evaluation.splits import make_splits

    splits, _ = make_splits(np.unique(y, return_inverse=True)[1], FOLDS, random_state=seed)
    return splits


def tune(name, Xtr, ytr, Xte, yte, seed):
    """``(held-out accuracy, selected features, seconds, chosen value)`` of one tuner."""
    splits = folds_of(ytr, seed)
    t0 = time.perf_counter()
    if name.startswith("fsframe"):
        from fsframe.tuning import FSSelectorCV

        method = name.split()[1]
        est = FSSelectorCV(method, cv=FOLDS, random_state=seed, rule="1se" if name.endswith("1se") else "best",
                           progress=False).fit(Xtr, ytr)
        secs = time.perf_counter() - t0
        failed = int(np.isnan(est.cv_results_["mean_test_score"]).sum())  # points with solver trouble
        chosen = {**est.best_params_, **({"points_failed": failed} if failed else {})}
        return float(est.score(Xte, yte)), int(est.support_.sum()), secs, chosen
    if name == "abess":
        import abess

        fold_id = np.zeros(len(ytr), dtype=int)
        for k, s in enumerate(splits):
            fold_id[s.test] = k
        classes = np.unique(ytr)
        model = abess.LogisticRegression(cv=FOLDS, thread=1)
        # the data is standardised already; abess's own normalisation refuses a column constant on the
        # training part (Colon has some), so it is switched off
        model.fit(Xtr, (ytr == classes[1]).astype(float), cv_fold_id=fold_id, is_normal=False)
        secs = time.perf_counter() - t0
        pred = classes[(np.asarray(model.predict(Xte)) > 0.5).astype(int)]
        nnz = int(np.count_nonzero(model.coef_))
        return float(np.mean(pred == yte)), nnz, secs, {"support_size": nnz}
    if name == "sklearn LR-CV l1":
        from sklearn.linear_model import LogisticRegressionCV

        model = LogisticRegressionCV(penalty="l1", solver="liblinear", Cs=10, cv=[(s.train, s.test) for s in splits],
                                     max_iter=1000)
        model.fit(Xtr, ytr)
        secs = time.perf_counter() - t0
        return float(model.score(Xte, yte)), int(np.count_nonzero(model.coef_)), secs, {"C": float(model.C_[0])}
    raise ValueError(name)


def datasets(names):
    import fsframe

    out = {}
    if "breast_cancer" in names:
        out["breast_cancer"] = fsframe.load_dataset("breast_cancer")
    if "colon" in names:
        out["colon"] = None if DATA is None else fsframe.load_dataset(DATA / "colon.mat")
    return out


def run(splits: int, tuners, names=("breast_cancer", "colon")) -> dict:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    warnings.simplefilter("ignore")
    results: dict = {"splits": splits, "folds": FOLDS, "tuners": tuners, "data": {}, "skipped": []}
    warm = False
    for dname, ds in datasets(names).items():
        if ds is None:
            results["skipped"].append(dname)
            continue
        X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
        rows = {t: {"accuracy": [], "selected": [], "seconds": [], "chosen": []} for t in tuners}
        for s in range(splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=s, stratify=y)
            sc = StandardScaler().fit(Xtr)
            Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
            with threadpool_limits(limits=1):
                if not warm:  # untimed warm-up, once per process (imports, first-call caches)
                    for t in tuners:
                        tune(t, Xtr, ytr, Xte, yte, s)
                    warm = True
                for t in tuners:
                    acc, nsel, secs, chosen = tune(t, Xtr, ytr, Xte, yte, s)
                    for k, v in (("accuracy", acc), ("selected", nsel), ("seconds", secs), ("chosen", chosen)):
                        rows[t][k].append(v)
                    print(f"{dname} split {s} {t}: acc {acc:.3f}, {nsel} features, {secs:.2f} s, {chosen}",
                          file=sys.stderr)
        results["data"][dname] = {"shape": list(X.shape), "rows": rows}
    import abess
    import sklearn

    import fsframe

    results["environment"] = {"python": platform.python_version(), "fsframe": fsframe.__version__,
                              "scikit-learn": sklearn.__version__, "abess": abess.__version__,
                              "machine": platform.machine()}
    return results


def render(res: dict) -> str:
    lines = [f"{res['splits']} random stratified 70/30 splits; on each, the tuner chooses by the same "
             f"{res['folds']}-fold stratified CV of the training part and refits on it; mean ± std over the splits "
             "(held-out accuracy, selected features, wall seconds of the whole tuning on one thread). "
             f"Versions: {', '.join(f'{k} {v}' for k, v in res['environment'].items())}.", "",
             "| data | tuner | test accuracy | selected features | seconds | ratio to sklearn LR-CV |",
             "|---|---|---|---|---|---|"]
    for dname, d in res["data"].items():
        base = np.mean(d["rows"]["sklearn LR-CV l1"]["seconds"]) if "sklearn LR-CV l1" in d["rows"] else None
        for t, r in d["rows"].items():
            acc, sel, sec = (np.asarray(r[k], dtype=float) for k in ("accuracy", "selected", "seconds"))
            ratio = "-" if base is None else f"{sec.mean() / base:.1f}×"
            lines.append(f"| {dname} {d['shape'][0]}×{d['shape'][1]} | {t} | {100 * acc.mean():.1f} ± "
                         f"{100 * acc.std(ddof=1) if acc.size > 1 else 0:.1f}% | {sel.mean():.1f} ± "
                         f"{sel.std(ddof=1) if sel.size > 1 else 0:.1f} | {sec.mean():.2f} | {ratio} |")
    if res["skipped"]:
        lines += ["", f"Skipped (data absent): {', '.join(res['skipped'])}."]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 splits")
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--render", action="store_true", help="re-render the docs section from the JSON")
    ap.add_argument("--datasets", nargs="+", default=["breast_cancer", "colon"],
                    help="run these only and merge them into the existing JSON")
    add_data_dir(ap, "colon.mat (skipped without it)")
    args = ap.parse_args(argv)
    global DATA
    if not args.render and "colon" in args.datasets:  # the only part that reads a file
        DATA = data_folder(ap, args.data_dir, ["colon.mat"], required=False)
    out = ROOT / "benchmarks" / "results" / ("tuning_quick.json" if args.quick else "tuning.json")
    if args.render:
        res = json.loads(out.read_text())
    else:
        res = run(2 if args.quick else args.splits, TUNERS, args.datasets)
        if out.exists() and set(args.datasets) != {"breast_cancer", "colon"}:
            old = json.loads(out.read_text())
            if old.get("splits") == res["splits"]:
                res["data"] = {**old["data"], **res["data"]}
                res["skipped"] = [d for d in old["skipped"] if d not in res["data"]] + res["skipped"]
        out.write_text(json.dumps(res, indent=1, default=float))
    text = render(res)
    print(text)
    if not args.quick:
        write_section(DOC, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
