"""DSO-FS (paper 004) against its own convex model at p = 1 — the random-instance attack at full
size, the shipped data sets, and the m > rank cases — with Algorithm 1 as written beside it.

The model: ``min sum_j ||W_j||_2 + ||b||_2 s.t. Y ⊙ (X W + 1 bᵀ) >= 1`` (004 eq. 5 with the bias
absorbed as in eq. 2, its row counted), ``Y`` the one-vs-rest label matrix of
``fsframe_multiclass.label_matrix``. For each instance, in one process:

* ``cvxpy``   the model in CVXPY on Clarabel (the reference optimum ``f*``);
* ``raw``     Clarabel on the prebuilt matrices of the whole model (``RowModel.data`` on all rows);
* ``dso``     ``fsframe.fit(X, y, method="dso-fs", p=1.0)``: Algorithm 1, then the convex finish;
* ``alg1``    the same with ``finish="none"``: Algorithm 1 as written (and, for its certificate,
              one solve of the model).

Reported: ``||W||_{2,1}`` (bias row counted) over ``f*`` minus 1, the certificate's status, seconds.

Usage::

    python benchmarks/dso_exact.py [--instances 50] [--shipped colon,Yale,ORL] [--no-reference ORL]
                                   [--no-tall] [--quick] [--render]

``--shipped`` reads the data folder (``--data-dir DIR``, else ``$FSFRAME_DATA``, as ``fsframe run``;
docs/performance.md); sets whose file is absent, or all of them without a folder, are skipped and
named on stderr. ``--no-reference`` names the sets run without CVXPY and raw Clarabel (ORL's split: the
SOCP does not end in hours here); their distance is bounded by the certificate's lower bound. Writes ``benchmarks/results/dso_exact.json`` and ``benchmarks/results/dso_exact.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))
from _common import add_data_dir, data_folder  # noqa: E402


def codes(y):
    return np.searchsorted(np.unique(y), y)


def cvxpy_model(X, y):
    import cvxpy as cp

    from fsframe_multiclass import label_matrix

    Y = label_matrix(codes(y))
    m, n = X.shape
    t0 = time.perf_counter()
    W, b = cp.Variable((n, Y.shape[1])), cp.Variable(Y.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1)) + cp.norm(b, 2)),
                      [cp.multiply(Y, X @ W + np.ones((m, 1)) @ b[None, :]) >= 1])
    prob.solve(solver=cp.CLARABEL)
    return {"objective": float(prob.value), "status": prob.status, "seconds": time.perf_counter() - t0}


def raw_clarabel(X, y):
    """Clarabel on the prebuilt matrices of the whole model (every row)."""
    import clarabel
    import scipy.sparse as sp

    from fsframe_multiclass import label_matrix
    from fsframe_multiclass.convex import RowModel

    Y = label_matrix(codes(y))
    m, n = X.shape
    model = RowModel(np.hstack([X, np.ones((m, 1))]), Y)
    data = model.data(np.arange(n + 1), np.ones(n + 1))
    t0 = time.perf_counter()
    cones = [clarabel.NonnegativeConeT(data.l)] + [clarabel.SecondOrderConeT(q) for q in data.cones]
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    sol = clarabel.DefaultSolver(sp.csc_matrix((data.n, data.n)), data.c, sp.csc_matrix(data.G), data.h, cones,
                                 settings).solve()
    return {"objective": float(sol.obj_val), "status": str(sol.status), "seconds": time.perf_counter() - t0}


def dso(X, y, **kw):
    import fsframe

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fsframe.fit(X, y, method="dso-fs", p=1.0, **kw)
    seconds = time.perf_counter() - t0
    said = sorted({type(w.message).__name__ + ": " + str(w.message).split(";")[0][:90] for w in caught
                   if "much larger than n_samples" not in str(w.message) and "identical features" not in str(w.message)
                   and "smallest class" not in str(w.message)})
    return {"objective": float(r.info["l2p_with_bias_row"]), "certificate": r.certificate.get("status"),
            "gap": r.certificate.get("gap"), "model_lower_bound": r.info.get("model_lower_bound"),
            "finish": r.info["finish"], "algorithm1_iterations": r.info["algorithm1_iterations"],
            "algorithm1_l2p": r.info["algorithm1_l2p"], "margin": r.info["margin"],
            "margins_broken": r.info["margins_broken"], "n_selected": int(r.n_selected),
            "finish_rows": r.info.get("finish_rows"), "seconds": seconds, "warnings": said}


def random_instances(count: int, seed: int = 2024):
    """``count`` instances with ``n + 1 >= m`` ([X, 1] of full row rank): m in 8-40, n in m-4m,
    2-6 classes (at least two samples each), every second one with column scales spread over 1e-2
    to 1e1."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        m = int(rng.integers(8, 41))
        n = int(rng.integers(m, 4 * m + 1))
        c = int(rng.integers(2, min(6, m // 2) + 1))  # at least two samples per class
        X = rng.normal(size=(m, n))
        if i % 2:
            X *= rng.uniform(0.01, 10.0, size=n)
        out.append((f"random-{i:02d}", X, np.arange(m) % c))
    return out


def shipped(names, base: Path | None):
    """The sets ``names`` read from the data folder ``base`` (``None``: none), absent ones skipped."""
    import scipy.io as sio
    from sklearn.model_selection import train_test_split

    out = []
    for name in names if base is not None else ():
        path = base / ("colon.mat" if name == "colon" else f"{name}.mat")
        if not path.exists():
            print(f"skipping {name}: {path} is absent", file=sys.stderr)
            continue
        d = sio.loadmat(path)
        X, y = d["X"].astype(float), d["Y"].ravel()
        label = f"{name} (all {X.shape[0]})"
        if name != "colon":  # 004's protocol: a 60 % training split
            X, _, y, _ = train_test_split(X, y, train_size=0.6, stratify=y, random_state=0)
            label = f"{name} (60 % split, seed 0)"
        sd = X.std(0)
        out.append((label, (X - X.mean(0)) / np.where(sd > 0, sd, 1.0), y))
    return out


def tall_cases():
    """m > rank [X, 1]: wine (separable), iris (not), a 50-class set (separable)."""
    from sklearn.datasets import load_iris, load_wine

    Xw, yw = load_wine(return_X_y=True)
    Xi, yi = load_iris(return_X_y=True)
    rng = np.random.default_rng(7)
    return [("wine", (Xw - Xw.mean(0)) / Xw.std(0), yw), ("iris", Xi, yi),
            ("50 classes, 150 x 40", rng.normal(size=(150, 40)), np.arange(150) % 50)]


def run_case(label, X, y, *, reference=True):
    """One instance; without ``reference`` (a model too large for CVXPY here) the distance is
    bounded by the certificate's lower bound instead (``above`` is then an upper bound)."""
    row = {"instance": label, "shape": list(X.shape), "classes": int(len(np.unique(y))), "reference": reference}
    if reference:
        row["cvxpy"] = cvxpy_model(X, y)
        row["raw"] = raw_clarabel(X, y)
    row["dso"] = dso(X, y)
    row["alg1"] = dso(X, y, finish="none")
    f = row["cvxpy"]["objective"] if reference else row["alg1"]["model_lower_bound"]
    for k in ("dso", "alg1"):
        row[k]["above"] = row[k]["objective"] / f - 1.0
    print(f"{label:28s} dso {row['dso']['above']:+.2e} ({row['dso']['certificate']}, {row['dso']['seconds']:.1f} s)  "
          f"Algorithm 1 {row['alg1']['above']:+.2e} ({row['alg1']['certificate']})", flush=True)
    return row


def run_tall(label, X, y):
    from fsframe_multiclass import label_matrix
    from fsframe_multiclass.margin import separable_columns

    sep = bool(separable_columns(X, label_matrix(codes(y))).all())
    row = {"instance": label, "shape": list(X.shape), "separable": sep, "dso": dso(X, y),
           "substitute": dso(X, y, margin="least-squares"), "paper": dso(X, y, margin="least-squares", finish="none")}
    if sep:
        row["cvxpy"] = cvxpy_model(X, y)
        row["dso"]["above"] = row["dso"]["objective"] / row["cvxpy"]["objective"] - 1.0
    import fsframe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, kw in (("dso", {}), ("paper", {"margin": "least-squares", "finish": "none"})):
            r = fsframe.fit(X, y, method="dso-fs", p=1.0, **kw)
            row[key]["train_accuracy"] = float((r.predict(X) == y).mean())
    print(f"{label:28s} separable={sep} default: {row['dso']['margin']}, broken {row['dso']['margins_broken']}, "
          f"acc {row['dso']['train_accuracy']:.2f}; 004 as written: broken {row['paper']['margins_broken']}, "
          f"acc {row['paper']['train_accuracy']:.2f}", flush=True)
    return row


def markdown(out: dict) -> str:
    lines = ["# DSO-FS against its convex model (p = 1)", "",
             f"{out['date']}, fsframe {out['fsframe']}, {out['machine']}; load average at the start "
             f"{out['load_average']}. `python benchmarks/dso_exact.py` (its docstring says what each column is).", ""]
    rand = out["random"]
    if rand:
        above = np.array([r["dso"]["above"] for r in rand])
        a1 = np.array([r["alg1"]["above"] for r in rand])
        ok = sum(r["dso"]["certificate"] == "optimal" for r in rand)
        lines += [f"## {len(rand)} random instances with n + 1 >= m", "",
                  "| | largest above f* | median above f* | certificate optimal | total s |", "|---|---|---|---|---|",
                  f"| dso-fs (finish='convex') | {above.max():.2e} | {np.median(above):.2e} | {ok} of {len(rand)} | "
                  f"{sum(r['dso']['seconds'] for r in rand):.1f} |",
                  f"| Algorithm 1 as written | {a1.max():.2%} | {np.median(a1):.2%} | "
                  f"{sum(r['alg1']['certificate'] == 'optimal' for r in rand)} of {len(rand)} | "
                  f"{sum(r['alg1']['seconds'] for r in rand):.1f} |",
                  f"| CVXPY (Clarabel) | reference | | | {sum(r['cvxpy']['seconds'] for r in rand):.1f} |",
                  f"| raw Clarabel, whole model | {max(r['raw']['objective'] / r['cvxpy']['objective'] - 1 for r in rand):.2e} "
                  f"| | | {sum(r['raw']['seconds'] for r in rand):.1f} |", ""]
    if out["shipped"]:
        lines += ["## Shipped data sets", "",
                  "| data | m x n, classes | dso-fs (finish) above f* | certificate | s | Algorithm 1 above f* | s | "
                  "CVXPY s | raw s |", "|---|---|---|---|---|---|---|---|---|"]
        for r in out["shipped"]:
            ref = r["reference"]
            le = "" if ref else "≤ "
            lines.append(f"| {r['instance']} | {r['shape'][0]} x {r['shape'][1]}, {r['classes']} | {le}{r['dso']['above']:.2e}"
                         f"{'' if r['dso']['finish'] == 'convex' else ' (finish skipped)'} | {r['dso']['certificate']} | "
                         f"{r['dso']['seconds']:.1f} | {le}{r['alg1']['above']:.2%} | {r['alg1']['seconds']:.1f} | "
                         f"{r['cvxpy']['seconds'] if ref else '-':{'.1f' if ref else ''}} | "
                         f"{r['raw']['seconds'] if ref else '-':{'.1f' if ref else ''}} |")
        lines += ["", "Without a CVXPY reference (`-`: the model is too large to solve here), the distance is bounded by "
                  "the certificate's lower bound of the optimum (`≤`).", ""]
    if out["tall"]:
        lines += ["## m > rank [X, 1]", "",
                  "| data | m x n | separable (LP) | default: model, finish, margins broken, train acc. | above f* | "
                  "004 as written (substitute, finish='none'): margins broken, train acc. |", "|---|---|---|---|---|---|"]
        for r in out["tall"]:
            d, p = r["dso"], r["paper"]
            lines.append(f"| {r['instance']} | {r['shape'][0]} x {r['shape'][1]} | {r['separable']} | {d['margin']}, "
                         f"{d['finish']}, {d['margins_broken']}, {d['train_accuracy']:.3f} | "
                         f"{d.get('above', float('nan')):.1e} | {p['margins_broken']}, {p['train_accuracy']:.3f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", type=int, default=50)
    ap.add_argument("--shipped", default="colon,Yale,ORL")
    ap.add_argument("--no-tall", action="store_true")
    ap.add_argument("--no-reference", default="ORL", help="shipped sets run without CVXPY and raw Clarabel")
    ap.add_argument("--quick", action="store_true", help="5 instances, colon only")
    ap.add_argument("--render", action="store_true", help="rewrite the Markdown from the saved JSON only")
    add_data_dir(ap, "the --shipped sets' .mat files (skipped without them)")
    a = ap.parse_args(argv)
    if a.render:
        (RESULTS / "dso_exact.md").write_text(markdown(json.loads((RESULTS / "dso_exact.json").read_text())) + "\n")
        return
    import fsframe

    if a.quick:
        a.instances, a.shipped = 5, "colon"
    no_ref = {s for s in a.no_reference.split(",") if s}
    names = [s for s in a.shipped.split(",") if s]
    base = data_folder(ap, a.data_dir, required=False) if names else None  # status 2: a folder that is not one
    out = {"date": _dt.date.today().isoformat(), "fsframe": fsframe.__version__,
           "machine": f"{platform.machine()}, {os.cpu_count()} cores", "load_average": round(os.getloadavg()[0], 1),
           "random": [run_case(*case) for case in random_instances(a.instances)],
           "shipped": [run_case(*case, reference=case[0].split()[0] not in no_ref)
                       for case in shipped(names, base)],
           "tall": [] if a.no_tall else [run_tall(*case) for case in tall_cases()]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dso_exact.json").write_text(json.dumps(out, indent=1, default=str))
    md = markdown(out)
    (RESULTS / "dso_exact.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    main()
