"""Issue 19's targets, measured in one process each (CPU time: the machine is shared).

(a) ``em-l0`` with exactly ``r`` = 5 and 10 features on Sonar (paper 002's protocol: stratified
    80/20 splits, standardised on the training part, ``C = 1``), per selection: fsframe as a user
    calls it (the dense EM path, ``fsframe.dense_fit``; its pivots compiled when numba, the ``fast``
    extra, is installed), the same with the Python pivots (``FSFRAME_NO_JIT=1``: must select the
    same features in as many EM iterations), the compiled path (``from_data=False``, the EM duals
    by the dense active-set method, ``qp_form="auto"``), the compiled path with the duals on HiGHS
    (``qp_form="dual"``: the code before this issue), scikit-learn's L1 logistic regression
    (liblinear) and L1 ``LinearSVC`` with ``C`` bisected to ``r`` features, and abess
    (``LogisticRegression(support_size=[r])``) — the selectors of ``benchmarks/competitors.py``.
    Both fsframe forms must select the same features with the same number of EM iterations; fsframe
    with ``early_stop=2`` (the opt-in stop of the ``em`` loop) is timed beside them, with its
    iterations and whether it selected the same features.
(b) The README's main job: every method of ``fsframe compare breast_cancer`` per fit (CPU), on the
    training parts of 10-fold CV (first 5 folds); ``em-l0`` and ``arom`` also on the compiled path
    (``from_data=False``) and on HiGHS's dual.
(c) ``l0-mpm`` at m = 200, n = 500 and 1 000 (``bench_conic.make_data``, ``delta = 0.9 delta_max``,
    ECOS): fsframe with ``working_set="auto"`` and ``False`` against the same DCA loop in
    CVXPY+ECOS (``bench_mpm.run_cvxpy_dca``), seconds per subproblem; objectives must agree.
(d) L1-MPM on Sonar against CVXPY+Clarabel (``bench_mpm.bench_sonar``).

    python benchmarks/bench_issue19.py --data-dir DIR [--reps 5] [--splits 5] [--skip-mpm]
        [--parts a,b,c,d]

``--parts`` re-measures only the parts named and keeps the others from the JSON already written
(their ``meta`` records when each part was measured, ``meta.parts``). Without ``sonar.csv`` in the
data folder, (a) and (d) are skipped the same way: their values and stamps stay as the JSON has them.

Writes ``benchmarks/results/issue19.json`` and prints the Markdown tables of docs/performance.md,
section "Issue 19 at a glance". Needs the shared data (Sonar) for (a) and (d); abess for its column.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import competitors  # noqa: E402  (the selectors and the data location, one definition)
from _common import add_data_dir, data_folder  # noqa: E402

OUT = HERE / "results" / "issue19.json"


def _cpu(fn, reps):
    """Median CPU seconds of ``fn()`` over ``reps`` calls (after one untimed call) and its last value."""
    fn()
    ts, out = [], None
    for _ in range(reps):
        c0 = time.process_time()
        out = fn()
        ts.append(time.process_time() - c0)
    return float(np.median(ts)), out


def sonar_splits(splits):
    import fsframe
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(competitors.DATA / "sonar.csv")
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    for s in range(splits):
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=s, stratify=y)
        yield np.ascontiguousarray(StandardScaler().fit(Xtr).transform(Xtr)), ytr


def em_sonar(reps, splits) -> dict:
    import fsframe

    from fsframe.working_set import WorkingSetOptions

    def fs(qp_form, r, python_pivots=False, **kw):
        # qp_form None: fit as a user calls it (the dense EM path, fsframe.dense_fit); else the
        # compiled path (from_data=False) with the HiGHS backend's QP form
        opts = {} if qp_form is None else {"backend_options": {"qp_form": qp_form},
                                           "working_set": WorkingSetOptions(from_data=False)}

        def run():
            # the dense active set's pivots: compiled when numba is installed, unless FSFRAME_NO_JIT is set
            os.environ["FSFRAME_NO_JIT"] = "1" if python_pivots else ""
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = fsframe.fit(X, y, method="em-l0", n_features=r, **opts, **kw)
            return tuple(int(j) for j in res.selected), res.n_iter, res.info.get("solver_path")
        return run

    out = {}
    for r in (5, 10):
        rows = {k: [] for k in ("fsframe", "fsframe-python-pivots", "fsframe-early-stop", "fsframe-compiled",
                                "fsframe-highs-dual", "sk-logreg-liblinear", "sk-svc-bisect", "abess")}
        iters, iters_early, same, same_early, same_python, paths = [], [], True, True, True, set()
        for X, y in sonar_splits(splits):
            t, (sel, it, path) = _cpu(fs(None, r), reps)
            paths.add(path)
            t_p, (sel_p, it_p, _) = _cpu(fs(None, r, python_pivots=True), reps)
            same_python &= sel == sel_p and it == it_p
            rows["fsframe-python-pivots"].append(t_p)
            t_e, (sel_e, it_e, _) = _cpu(fs(None, r, early_stop=2), reps)
            t_c, (sel_c, it_c, _) = _cpu(fs("auto", r), reps)
            rows["fsframe-compiled"].append(t_c)
            t_h, (sel_h, it_h, _) = _cpu(fs("dual", r), reps)
            same &= sel == sel_h and it == it_h and sel == sel_c and it == it_c
            same_early &= sel == sel_e
            iters.append(it)
            iters_early.append(it_e)
            rows["fsframe"].append(t)
            rows["fsframe-early-stop"].append(t_e)
            rows["fsframe-highs-dual"].append(t_h)
            for k in ("sk-logreg-liblinear", "sk-svc-bisect", "abess"):
                rows[k].append(_cpu(lambda k=k: competitors.SELECTORS[k](X, y, r), reps)[0])
        med = {k: float(np.median(v)) for k, v in rows.items()}
        out[str(r)] = {"cpu_median": med, "cpu": rows, "em_iterations": iters, "same_selection_and_iterations": bool(same),
                       "solver_path": sorted(p or "compiled" for p in paths),
                       "vs_compiled": med["fsframe"] / med["fsframe-compiled"],
                       "compiled_pivots": _compiled(), "python_pivots_same_selection_and_iterations": bool(same_python),
                       "em_iterations_early_stop": iters_early, "early_stop_same_selection": bool(same_early),
                       "vs_liblinear": med["fsframe"] / med["sk-logreg-liblinear"], "vs_abess": med["fsframe"] / med["abess"],
                       "vs_highs_dual": med["fsframe"] / med["fsframe-highs-dual"]}
        print(f"(a) r={r}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in med.items()) + f"; same selection: {same}"
              f" (early_stop=2: {same_early}; Python pivots: {same_python})", flush=True)
    return out


def _compiled() -> bool:
    """Whether ``fsframe`` ran the dense form's pivots compiled (numba installed: the ``fast`` extra)."""
    from fsframe.backends.box_qp import compiled_available

    os.environ["FSFRAME_NO_JIT"] = ""
    return compiled_available()


def readme_job(reps) -> dict:
    import fsframe
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import StratifiedKFold

    from fsframe.working_set import WorkingSetOptions

    X, y = load_breast_cancer(return_X_y=True)
    folds = list(StratifiedKFold(10, shuffle=True, random_state=0).split(X, y))[:5]
    out = {}
    for method in ("l1-svm", "fsv", "em-l0", "arom", "svm-weights"):
        # None: fit as a user calls it (em-l0 and arom: the dense EM path); "auto" / "dual": their
        # compiled path with the HiGHS backend's QP form
        for form in ((None, "auto", "dual") if method in ("em-l0", "arom") else (None,)):
            opts = {} if form is None else {"backend_options": {"qp_form": form},
                                            "working_set": WorkingSetOptions(from_data=False)}
            ts = []
            for tr, _ in folds:
                def run(tr=tr):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        return fsframe.fit(X[tr], y[tr], method=method, **opts).n_iter
                ts.append(_cpu(run, reps)[0])
            key = method if form is None else f"{method} (compiled)" if form == "auto" else f"{method} (HiGHS dual)"
            out[key] = float(np.median(ts))
            print(f"(b) {key}: {out[key]:.3f} s CPU per fit", flush=True)
    return out


def mpm_dca(sizes) -> list:
    """One child process per contender and size (bench_mpm's child: clean memory, one BLAS thread)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for n in sizes:
        row = {"n": n}
        for contender in ("fsframe", "fsframe-full", "cvxpy-ecos"):
            code = (f"import sys, json; sys.path.insert(0, {str(HERE)!r}); import bench_issue19 as b; "
                    f"print(json.dumps(b._mpm_child({contender!r}, {n})))")
            proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            row[contender] = json.loads(proc.stdout.strip().splitlines()[-1])
        f, c = row["fsframe"], row["cvxpy-ecos"]
        if f["iterations"] != c["iterations"] or abs(f["objective"] - c["objective"]) > 1e-5 * max(1.0, abs(c["objective"])):
            raise AssertionError(f"l0-mpm n={n}: fsframe {f} and CVXPY {c} disagree")
        row["per_subproblem_ratio"] = (f["cpu"] / f["iterations"]) / (c["cpu"] / c["iterations"])
        print(f"(c) n={n}: fsframe {f['cpu']:.2f} s, full {row['fsframe-full']['cpu']:.2f} s, "
              f"CVXPY+ECOS {c['cpu']:.2f} s CPU ({f['iterations']} DCA steps): {row['per_subproblem_ratio']:.2f}x", flush=True)
        rows.append(row)
    return rows


def _mpm_child(contender: str, n: int) -> dict:
    import bench_mpm
    import fsframe
    import fsframe_mpm as mpm
    from bench_conic import DELTA_FRACTION, make_data, phi

    X, y = make_data(n)
    delta = DELTA_FRACTION * mpm.largest_bound(X, y, mpm.DEFAULT_RHO).delta
    if contender == "cvxpy-ecos":
        r = bench_mpm.run_cvxpy_dca(X, y, mpm.DEFAULT_RHO, mpm.kappa_of(delta))
        return {k: r[k] for k in ("cpu", "seconds", "iterations", "objective")}
    c0, t0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="l0-mpm", delta=delta, backend="ecos",
                          working_set="auto" if contender == "fsframe" else False)
    return {"cpu": time.process_time() - c0, "seconds": time.perf_counter() - t0, "iterations": res.n_iter,
            "objective": phi(np.asarray(res.coef)), "working_set": res.certificate.get("working_set")}


def markdown(res: dict) -> str:
    lines = []
    a = res.get("em_sonar") or {}
    if a:
        lines += ["| r | fsframe `em-l0` | same, Python pivots | same, `early_stop=2` | compiled path | same, EM duals on "
                  "HiGHS | sk L1 logistic (liblinear), bisection | sk L1 LinearSVC, bisection | abess | fsframe / liblinear | "
                  "fsframe / abess | EM iterations (median; `early_stop=2`) |", "|---|" + "--:|" * 11]
        for r, d in a.items():
            m = d["cpu_median"]
            early = (f"{m['fsframe-early-stop'] * 1e3:.1f} ms" if "fsframe-early-stop" in m else "–")
            it_e = (f"; {np.median(d['em_iterations_early_stop']):g}" if "em_iterations_early_stop" in d else "")
            py = (f"{m['fsframe-python-pivots'] * 1e3:.1f} ms" if "fsframe-python-pivots" in m else "–")
            comp = (f"{m['fsframe-compiled'] * 1e3:.1f} ms" if "fsframe-compiled" in m else "–")
            lines.append(f"| {r} | {m['fsframe'] * 1e3:.1f} ms | {py} | {early} | {comp} | {m['fsframe-highs-dual'] * 1e3:.1f} ms | "
                         f"{m['sk-logreg-liblinear'] * 1e3:.1f} ms | {m['sk-svc-bisect'] * 1e3:.1f} ms | {m['abess'] * 1e3:.1f} ms | "
                         f"{d['vs_liblinear']:.1f}x | {d['vs_abess']:.1f}x | {np.median(d['em_iterations']):g}{it_e} |")
        lines.append("")
    b = res.get("readme_job") or {}
    if b:
        lines += ["| method (breast cancer, per fit) | CPU |", "|---|--:|"]
        lines += [f"| `{k}` | {v:.3f} s |" for k, v in b.items()]
        lines.append("")
    c = res.get("mpm_dca") or []
    if c:
        lines += ["| n (m = 200) | fsframe (working set) | fsframe (full) | CVXPY+ECOS | DCA steps | per subproblem, fsframe / CVXPY |",
                  "|---|--:|--:|--:|--:|--:|"]
        for row in c:
            lines.append(f"| {row['n']} | {row['fsframe']['cpu']:.2f} s | {row['fsframe-full']['cpu']:.2f} s | "
                         f"{row['cvxpy-ecos']['cpu']:.2f} s | {row['fsframe']['iterations']} | {row['per_subproblem_ratio']:.2f}x |")
        lines.append("")
    d = res.get("sonar_l1_mpm")
    if d:
        med = d["median"]
        lines += ["| L1-MPM on Sonar | CPU (median) | / CVXPY+Clarabel |", "|---|--:|--:|"]
        for k, v in med.items():
            lines.append(f"| {k} | {v['cpu'] * 1e3:.1f} ms | {v['cpu'] / med['cvxpy-clarabel']['cpu']:.2f}x |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--sizes", default="500,1000")
    ap.add_argument("--skip-mpm", action="store_true")
    ap.add_argument("--parts", default="a,b,c,d", help="which of (a)-(d) to measure; the others are kept from the JSON")
    add_data_dir(ap, "sonar.csv ((a) and (d) are skipped without it)")
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    import bench_mpm

    competitors.DATA = bench_mpm.SHARED = data_folder(ap, args.data_dir, ["sonar.csv"], required=False)

    parts = set(args.parts.split(","))
    if args.skip_mpm:
        parts -= {"c", "d"}
    if competitors.DATA is None:  # Sonar's parts are skipped: they keep the JSON's values and stamps
        parts -= {"a", "d"}
    meta = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "load_average": os.getloadavg()[0],
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                     cwd=HERE).stdout.strip()}
    res = {"meta": meta}
    if parts != {"a", "b", "c", "d"} and OUT.exists():
        res = json.loads(OUT.read_text())
        old = res.get("meta", {})
        res["meta"] = {**meta, "parts": {**old.get("parts", {k: old for k in "abcd"}), **{k: meta for k in parts}}}
    with threadpool_limits(limits=1):
        if "a" in parts:
            res["em_sonar"] = em_sonar(args.reps, args.splits)
        if "b" in parts:
            res["readme_job"] = readme_job(max(1, args.reps // 2))
        if "d" in parts:
            res["sonar_l1_mpm"] = bench_mpm.bench_sonar(max(3, args.reps))
    if "c" in parts:
        res["mpm_dca"] = mpm_dca([int(s) for s in args.sizes.split(",")])
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(res, indent=2, default=float))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
