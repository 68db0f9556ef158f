"""Paper 001's criterion 2 on Sonar: the best point the bound search (Algorithm 1) finds against
the best point of the criterion on the box (docs/paper001.md, "Gap 2").

Criterion 2 chooses the feasible ``(alpha, beta)`` (fsframe's ``delta_pos``, ``delta_neg``) with the
largest ``(theta alpha + (1 - theta) beta) / NSF``. Algorithm 1 steps alpha and *bisects* beta on
``[0, 1]`` from the midpoint 0.5: whenever 0.5 is feasible it never looks below it. Here the
L1-MEMPM SOCP (001 eq. 6) is solved at every point of a grid of the box (step ``--step``), its NSF
counted as Algorithm 1 counts it (``|w_j| / max |w| > 0.001``), and the criterion's best grid
point is compared with the search's choice. The data set is all of Sonar, standardised, as one fit
of the study sees a training part.

Also draws the search itself (``--search-png``, docs/img/mempm_search.png of docs/mempm.md): the
visited ``(delta_pos, delta_neg)``, feasible or not, and bound against NSF with the choices of
criteria 1, 2 and ``t = log``.

    python benchmarks/paper001_criterion2.py --data-dir DIR [--step 0.05] [--redraw | --searches-only]

Sonar (``sonar.csv``) is read from the data folder: ``--data-dir DIR``, else ``$FSFRAME_DATA``, as
``fsframe run`` (docs/performance.md); without it the script stops with exit status 2 (``--redraw``
reads no data).

The searches are Algorithm 1 (criteria 1, ``log`` and 2) and the bound search's ``search="grid"``
(criteria 1 and 2: the box's best point found by a coarse grid refined by bisection).

Writes ``benchmarks/results/paper001_criterion2.json``, ``docs/img/paper001-criterion2.png`` and
``docs/img/mempm_search.png``. Needs matplotlib.
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

OUT = ROOT / "benchmarks" / "results" / "paper001_criterion2.json"
THETA, NSF_TOL = 0.5, 1e-3


def load(data: Path):
    import fsframe

    d = fsframe.load_dataset(data / "sonar.csv", label_column=-1)
    X = np.asarray(d.X, dtype=float)
    return (X - X.mean(0)) / X.std(0), np.asarray(d.y)


def grid(X, y, step: float) -> list[dict]:
    """The L1-MEMPM SOCP at every (delta_pos, delta_neg) of the grid: feasible, NSF, criterion 2."""
    import fsframe
    from fsframe.errors import FsframeError

    pts = np.round(np.arange(step, 1.0, step), 10)
    out = []
    for a in pts:
        for b in pts:
            row = {"delta_pos": float(a), "delta_neg": float(b), "feasible": False, "nsf": None, "score": None}
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = fsframe.fit(X, y, formulation="mempm", surrogate="l1", loop="single", delta_pos=float(a),
                                    delta_neg=float(b), zero_tol=NSF_TOL)
                w = np.abs(np.asarray(r.coef, dtype=float)).ravel()
                nsf = int((w / w.max() > NSF_TOL).sum()) if w.max() > 0 else 0
                bound = THETA * a + (1 - THETA) * b
                row.update(feasible=True, nsf=nsf, bound=float(bound), score=float(bound / nsf) if nsf else None)
            except FsframeError as exc:  # an infeasible pair of bounds is refused before or by the solve
                row["why"] = type(exc).__name__
            out.append(row)
    return out


def searched(X, y) -> dict:
    import fsframe

    out = {}
    for search, crit in (("bisection", 1), ("bisection", "log"), ("bisection", 2), ("grid", 1), ("grid", 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            r = fsframe.fit(X, y, method="fs-mempm", criterion=crit, search=search)
        ch = r.history[r.info["chosen_socp"]]
        out[str(crit) if search == "bisection" else f"grid {crit}"] = {"delta_pos": r.info["delta_pos"], "delta_neg": r.info["delta_neg"],
                          "bound": r.info["bound"], "nsf": int(ch.n_nonzero), "score": r.info["score"],
                          "socps": r.info["n_socps"], "seconds": time.perf_counter() - t0,
                          "visited": [{"delta_pos": h.params["delta_pos"], "delta_neg": h.params["delta_neg"],
                                       "feasible": bool(h.params["feasible"]), "nsf": h.n_nonzero,
                                       "bound": h.params.get("bound")} for h in r.history]}
    return out


def draw(res: dict, path: Path, search_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = res["grid"]
    feas = [p for p in g if p["feasible"] and p["score"] is not None]
    fig, ax = plt.subplots(figsize=(6.6, 5.2))
    sc = ax.scatter([p["delta_pos"] for p in feas], [p["delta_neg"] for p in feas], c=[p["score"] for p in feas],
                    cmap="viridis", s=40, marker="s")
    fig.colorbar(sc, ax=ax, label="criterion 2: bound / NSF")
    inf = [p for p in g if not p["feasible"]]
    ax.scatter([p["delta_pos"] for p in inf], [p["delta_neg"] for p in inf], marker="x", c="0.6", s=12,
               label="infeasible")
    vis = res["search"]["2"]["visited"]
    ax.scatter([v["delta_pos"] for v in vis], [v["delta_neg"] for v in vis], facecolors="none", edgecolors="tab:red",
               s=22, label="visited by Algorithm 1")
    best = res["grid_best"]
    ch = res["search"]["2"]
    ax.plot([ch["delta_pos"]], [ch["delta_neg"]], "D", mfc="none", mec="k", ms=11,
            label=f"Algorithm 1's choice: {ch['score']:.3f} (NSF {ch['nsf']})")
    ax.plot([best["delta_pos"]], [best["delta_neg"]], "*", color="tab:orange", ms=15, mec="k",
            label=f"best grid point: {best['score']:.3f} (NSF {best['nsf']})")
    if "grid 2" in res["search"]:
        gs = res["search"]["grid 2"]
        ax.plot([gs["delta_pos"]], [gs["delta_neg"]], "o", mfc="none", mec="tab:blue", ms=13, mew=2,
                label=f"search='grid' choice: {gs['score']:.3f} (NSF {gs['nsf']}, {gs['socps']} SOCPs)")
    first = vis[0]["delta_neg"]
    ax.axhline(first, color="tab:red", ls=":", lw=1, label=f"first midpoint of the bisection ({first:.2f})")
    ax.set(xlabel="delta_pos (001's alpha)", ylabel="delta_neg (001's beta)",
           title="Sonar: criterion 2 on the box and where the bisection looks")
    ax.legend(fontsize=7, loc="upper right", framealpha=0.95)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4))
    hist = res["search"]["1"]["visited"]
    f = [h for h in hist if h["feasible"]]
    i = [h for h in hist if not h["feasible"]]
    sc = a1.scatter([h["delta_pos"] for h in f], [h["delta_neg"] for h in f], c=[h["nsf"] for h in f], cmap="viridis",
                    s=18, label="feasible (colour: NSF)")
    a1.scatter([h["delta_pos"] for h in i], [h["delta_neg"] for h in i], marker="x", c="tab:red", s=14,
               label="infeasible")
    fig.colorbar(sc, ax=a1, label="NSF")
    a1.set(xlabel="delta_pos (001's alpha)", ylabel="delta_neg (001's beta)",
           title=f"Sonar: the {len(hist)} SOCPs of one FS-MEMPM search")
    a1.legend(loc="lower left", fontsize=8)
    a2.scatter([h["bound"] for h in f], [h["nsf"] for h in f], s=14, c="0.5", label="feasible points")
    for c, mk in (("1", "o"), ("log", "s"), ("2", "D")):
        r = res["search"][c]
        a2.scatter([r["bound"]], [r["nsf"]], s=90, marker=mk, facecolors="none", edgecolors="k", linewidths=1.5,
                   label=f"criterion {c}: NSF {r['nsf']}, bound {r['bound']:.3f}")
    a2.set(xlabel="bound = 0.5 delta_pos + 0.5 delta_neg", ylabel="NSF (|w_j| / max|w| > 0.001)",
           title="bound vs number of selected features")
    a2.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(search_path, dpi=110)
    plt.close(fig)


def main(argv=None):
    import fsframe

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(ap, "sonar.csv")
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--png", type=Path, default=ROOT / "docs" / "img" / "paper001-criterion2.png")
    ap.add_argument("--search-png", type=Path, default=ROOT / "docs" / "img" / "mempm_search.png")
    ap.add_argument("--redraw", action="store_true", help="only draw the pictures from the results file")
    ap.add_argument("--searches-only", action="store_true",
                    help="run the searches again, keep the grid of the results file")
    args = ap.parse_args(argv)
    if args.redraw:
        draw(json.loads(OUT.read_text()), args.png, args.search_png)
        return
    X, y = load(data_folder(ap, args.data_dir, ["sonar.csv"]))  # status 2 without it
    t0 = time.perf_counter()
    if args.searches_only:
        old = json.loads(OUT.read_text())
        g, grid_seconds, args.step = old["grid"], old["grid_seconds"], old["step"]
    else:
        g = grid(X, y, args.step)
        grid_seconds = time.perf_counter() - t0
    scored = [p for p in g if p["score"] is not None]
    best = max(scored, key=lambda p: p["score"])
    res = {"step": args.step, "grid": g, "grid_seconds": grid_seconds, "grid_best": best,
           "search": searched(X, y), "fsframe": fsframe.__version__,
           "grid_best_below_half": max((p for p in scored if p["delta_neg"] < 0.5), key=lambda p: p["score"]),
           "grid_best_at_or_above_half": max((p for p in scored if p["delta_neg"] >= 0.5), key=lambda p: p["score"],
                                             default=None)}
    ch = res["search"]["2"]
    res["ratio_grid_best_to_search"] = best["score"] / ch["score"]
    res["search_ever_below_half"] = any(v["delta_neg"] < 0.5 for v in ch["visited"])
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    draw(res, args.png, args.search_png)
    print(json.dumps({k: v for k, v in res.items() if k not in ("grid", "search")}, indent=1))
    print(json.dumps({c: {k: v for k, v in s.items() if k != "visited"} for c, s in res["search"].items()}, indent=1))


if __name__ == "__main__":
    main()
