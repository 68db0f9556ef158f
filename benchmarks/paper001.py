"""Paper 001 §4 (Tables 2-4, Fig. 1) with fsframe: FS-MEMPM and FS-MPM with criteria 1 and 2, FS-SVM
(= ``l1-svm``, 001 eq. 2, C tuned by 10-fold CV on test accuracy as 001 §4.1 says), the MPM before
feature selection, on Sonar, Ionosphere, Pima and WDBC; stratified k-fold CV standardised on the
training folds (``fsframe.evaluation.compare``); NSF, accuracy, SOCPs and seconds per fit, and the
selection stability (Nogueira et al.'s estimator, ``CVResult.stability``).

    python benchmarks/paper001.py                      # 001's protocol: 10 trials of 10-fold CV
    python benchmarks/paper001.py --repeats 1          # what docs/mempm.md reports (one trial)
    python benchmarks/paper001.py --plot docs/img/mempm_search.png   # also the search picture
    python benchmarks/paper001.py --datasets Sonar --json a.json ...; python benchmarks/paper001.py --merge a.json ...

Writes ``benchmarks/results/paper001.json`` and prints the markdown tables of docs/mempm.md.
The picture needs matplotlib (``pip install matplotlib``; the library itself does not).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "benchmarks" / "results" / "paper001.json"

DATASETS = {
    "Sonar": ("sonar.csv", {"label_column": -1}),
    "Ionosphere": ("ionosphere.data", {"label_column": -1}),
    "Pima": ("pima-indians-diabetes.csv", {"label_column": -1}),
    "WDBC": ("wdbc.data", {"label_column": 1, "drop_columns": [0]}),
}

# 001 Tables 2-4: (accuracy before FS, NSF c1, acc c1, NSF c2, acc c2); FS-SVM (before, NSF, acc)
PAPER = {
    "FS-MEMPM": {"Sonar": (74.7, 57.97, 74.9, 13.69, 74.8), "Ionosphere": (88.5, 32.58, 87.6, 6.5, 86.7),
                 "Pima": (74.5, 7.04, 76.4, 2.1, 73.2), "WDBC": (97.0, 24.66, 94.6, 1.0, 90.7)},
    "FS-MPM": {"Sonar": (75.3, 56.59, 75.4, 34.59, 74.6), "Ionosphere": (84.7, 31.5, 84.8, 9.96, 83.6),
               "Pima": (75.6, 6.68, 75.7, 3.3, 73.1), "WDBC": (97.0, 24.37, 97.0, 1.0, 90.1)},
    "FS-SVM": {"Sonar": (76.0, 16.3, 74.3), "Ionosphere": (87.3, 18.01, 87.5), "Pima": (77.1, 3.95, 75.9),
               "WDBC": (97.4, 4.0, 95.2)},
}
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def load(name):
    import fsframe

    fname, kw = DATASETS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.load_dataset(DATA / fname, **kw)


def tune_C(data, folds):
    """001 §4.1: C of the SVM "tuned by ten-cross validation to maximize the test accuracy"."""
    from fsframe.evaluation import compare

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare(data, methods={f"C={C:g}": {"method": "l1-svm", "C": C} for C in C_GRID}, cv=folds)
    acc = {C: res[f"C={C:g}"].summary()["accuracy"]["mean"] for C in C_GRID}
    return max(acc, key=lambda C: (acc[C], -C)), acc


def run(name, folds, repeats, step, eps):
    from fsframe.evaluation import compare

    data = load(name)
    C, c_acc = tune_C(data, folds)
    search = {"delta_pos_step": step, "eps": eps}
    methods = {
        "MPM (no FS)": {"method": "mpm"},
        "FS-MPM c1": {"method": "fs-mpm", "criterion": 1, **search},
        "FS-MPM c2": {"method": "fs-mpm", "criterion": 2, **search},
        "FS-MEMPM c1": {"method": "fs-mempm", "criterion": 1, **search},
        "FS-MEMPM c2": {"method": "fs-mempm", "criterion": 2, **search},
        "FS-MEMPM log": {"method": "fs-mempm", "criterion": "log", **search},
        "FS-SVM": {"method": "l1-svm", "C": C},
    }
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare(data, methods=methods, cv=folds, repeats=repeats)
    rows = {}
    for label in methods:
        r = res[label]
        s = r.summary()
        ok = [f for f in r.folds if f.ok]
        socps = [f.facts.get("n_socps", f.n_iter) for f in ok]
        stab = r.stability()
        rows[label] = {
            "accuracy": 100.0 * s["accuracy"]["mean"], "accuracy_std": 100.0 * (s["accuracy"]["std"] or 0.0),
            "nsf": s["n_selected"]["mean"], "nsf_std": s["n_selected"]["std"] or 0.0,
            "seconds": float(np.mean([f.seconds for f in ok])), "socps": float(np.mean(socps)),
            "failed": len(r.folds) - len(ok),
            "stability": None if stab["nogueira"] is None else float(getattr(stab["nogueira"], "value",
                                                                           stab["nogueira"])),
            "frequency": [float(v) for v in r.frequency],
            "delta_pos": _mean(ok, "delta_pos"), "delta_neg": _mean(ok, "delta_neg"), "delta": _mean(ok, "delta"),
        }
    return {"dataset": name, "shape": list(np.asarray(data.X).shape), "C": C, "C_accuracy": c_acc,
            "seconds": time.perf_counter() - t0, "rows": rows}


def _mean(folds, key):
    vals = [f.facts[key] for f in folds if key in f.facts]
    return float(np.mean(vals)) if vals else None


def markdown(results, meta) -> str:
    out = [f"Protocol: {meta['repeats']} trial(s) of stratified {meta['folds']}-fold CV (seed 0), features "
           f"standardised on each training fold; search step {meta['step']}, eps {meta['eps']}, "
           "delta_pos0 = 0.05, delta_neg0 = 0, theta = 0.5, NSF threshold 0.001.", ""]
    for fam, crit in (("FS-MEMPM", "Table 2"), ("FS-MPM", "Table 3")):
        out += [f"**{fam}** (001 {crit}; ours / paper)", "",
                "| | " + " | ".join(r["dataset"] for r in results) + " |",
                "|---|" + "---|" * len(results)]
        before = []
        for r in results:
            p = PAPER[fam][r["dataset"]]
            b = r["rows"]["MPM (no FS)"]["accuracy"] if fam == "FS-MPM" else None
            before.append(f"{b:.1f} / {p[0]}" if b is not None else f"— / {p[0]}")
        out.append("| accuracy before FS (%) | " + " | ".join(before) + " |")
        for c, i in (("c1", 1), ("c2", 3)):
            row_n, row_a, row_s, row_t, row_d = [], [], [], [], []
            for r in results:
                x, p = r["rows"][f"{fam} {c}"], PAPER[fam][r["dataset"]]
                row_n.append(f"{x['nsf']:.2f} / {p[i]}")
                row_a.append(f"{x['accuracy']:.1f} / {p[i + 1]}")
                row_s.append(f"{x['socps']:.0f}")
                row_t.append(f"{x['seconds']:.2f}")
                if fam == "FS-MEMPM":
                    row_d.append(f"{x['delta_pos']:.3f}, {x['delta_neg']:.3f}")
                else:
                    row_d.append(f"{x['delta']:.3f}")
            k = c[-1]
            out += [f"| NSF, criterion {k} | " + " | ".join(row_n) + " |",
                    f"| accuracy (%), criterion {k} | " + " | ".join(row_a) + " |",
                    f"| chosen bound(s), criterion {k} (mean) | " + " | ".join(row_d) + " |",
                    f"| SOCPs per fit, criterion {k} | " + " | ".join(row_s) + " |",
                    f"| seconds per fit, criterion {k} | " + " | ".join(row_t) + " |"]
        out.append("")
    out += ["**Table 4 and stability** (criterion 2 for FS-MPM and FS-MEMPM, as 001 §4.2.2; NSF / accuracy % "
            "ours (paper); stability = Nogueira et al.'s estimator over the folds)", "",
            "| data set | FS-SVM | FS-MPM | FS-MEMPM | FS-MEMPM, t = log | stability SVM / MPM / MEMPM | "
            "C of FS-SVM |", "|---|---|---|---|---|---|---|"]
    for r in results:
        d = r["dataset"]
        cells = []
        for label, fam, i in (("FS-SVM", "FS-SVM", 1), ("FS-MPM c2", "FS-MPM", 3), ("FS-MEMPM c2", "FS-MEMPM", 3)):
            x, p = r["rows"][label], PAPER[fam][d]
            cells.append(f"{x['nsf']:.2f} / {x['accuracy']:.1f} ({p[i]} / {p[i + 1]})")
        lg = r["rows"]["FS-MEMPM log"]
        cells.append(f"{lg['nsf']:.2f} / {lg['accuracy']:.1f}")
        st = " / ".join("—" if r["rows"][k]["stability"] is None else f"{r['rows'][k]['stability']:.2f}"
                        for k in ("FS-SVM", "FS-MPM c2", "FS-MEMPM c2"))
        out.append(f"| {d} | " + " | ".join(cells) + f" | {st} | {r['C']:g} |")
    return "\n".join(out)


def plot_search(path: Path) -> dict:
    """One FS-MEMPM fit on all of Sonar (standardised): the visited (delta_pos, delta_neg), feasible or
    not, and bound vs NSF of the feasible ones with the choices of criteria 1, 2 and t = log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import fsframe

    data = load("Sonar")
    X = np.asarray(data.X, dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in (1, "log", 2):
            fits[c] = fsframe.fit(X, data.y, method="fs-mempm", criterion=c)
    hist = fits[1].history
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4))
    feas = [h for h in hist if h.params["feasible"]]
    inf = [h for h in hist if not h.params["feasible"]]
    sc = a1.scatter([h.params["delta_pos"] for h in feas], [h.params["delta_neg"] for h in feas],
                    c=[h.n_nonzero for h in feas], cmap="viridis", s=18, label="feasible (colour: NSF)")
    a1.scatter([h.params["delta_pos"] for h in inf], [h.params["delta_neg"] for h in inf], marker="x", c="tab:red",
               s=14, label="infeasible")
    fig.colorbar(sc, ax=a1, label="NSF")
    a1.set_xlabel("delta_pos (001's alpha)")
    a1.set_ylabel("delta_neg (001's beta)")
    a1.set_title(f"Sonar: the {len(hist)} SOCPs of one FS-MEMPM search")
    a1.legend(loc="lower left", fontsize=8)
    a2.scatter([h.params["bound"] for h in feas], [h.n_nonzero for h in feas], s=14, c="0.5", label="feasible points")
    for c, mk in ((1, "o"), ("log", "s"), (2, "D")):
        r = fits[c]
        ch = r.history[r.info["chosen_socp"]]
        a2.scatter([ch.params["bound"]], [ch.n_nonzero], s=90, marker=mk, facecolors="none", edgecolors="k",
                   linewidths=1.5, label=f"criterion {c}: NSF {ch.n_nonzero}, bound {ch.params['bound']:.3f}")
    a2.set_xlabel("bound = 0.5 delta_pos + 0.5 delta_neg")
    a2.set_ylabel("NSF (|w_j| / max|w| > 0.001)")
    a2.set_title("bound vs number of selected features")
    a2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return {str(c): {"nsf": int(f.history[f.info["chosen_socp"]].n_nonzero), "bound": f.info["bound"],
                     "delta_pos": f.info["delta_pos"], "delta_neg": f.info["delta_neg"], "socps": f.info["n_socps"],
                     "seconds": f.info["seconds"]} for c, f in fits.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--folds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--step", type=float, default=0.05, help="delta_pos_step (001's alpha_step)")
    ap.add_argument("--eps", type=float, default=1e-3)
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--plot", type=Path, default=None)
    ap.add_argument("--json", type=Path, default=OUT, help=f"where to write the results (default {OUT})")
    ap.add_argument("--merge", type=Path, nargs="*", default=None,
                    help="merge result files of runs on separate data sets (e.g. run in parallel) into --json")
    args = ap.parse_args(argv)
    if args.merge is not None:
        parts = [json.loads(p.read_text()) for p in args.merge]
        out = {"meta": parts[0]["meta"], "results": [r for p in parts for r in p["results"]]}
        for p in parts:
            out.update({k: v for k, v in p.items() if k not in ("meta", "results")})
    else:
        if not DATA.exists():
            raise SystemExit(f"{DATA} not found (the shared UCI files)")
        meta = {"folds": args.folds, "repeats": args.repeats, "step": args.step, "eps": args.eps}
        results = []
        for name in [d for d in args.datasets.split(",") if d]:
            r = run(name, args.folds, args.repeats, args.step, args.eps)
            print(f"{name}: {r['seconds']:.0f} s", flush=True)
            results.append(r)
        out = {"meta": meta, "results": results}
        if args.plot is not None:
            out["search_plot"] = plot_search(args.plot)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))
    if out["results"]:
        print(markdown(out["results"], out["meta"]))


if __name__ == "__main__":
    main()
