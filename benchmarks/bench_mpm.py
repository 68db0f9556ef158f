"""MPM family benchmark (issue 13): ``l0-mpm`` against the same DCA loop in CVXPY+ECOS, and one
L1-MPM fit on Sonar against CVXPY+Clarabel.

(a) ``l0-mpm`` full fit, m = 200, n in {500, 1000, 5000}, dense seeded Gaussian data (the first 10
    features shifted by 0.8 y; :func:`bench_conic.make_data`), default ridge, ``delta`` =
    0.9 x ``delta_max`` given as an absolute number (the same problem for every contender):

    * ``fsframe``      ``fsframe.fit(X, y, method="l0-mpm", delta=..., backend="ecos")`` end to end;
                       its time split into build, compile, ECOS (the solver's own time), fsframe's
                       per-subproblem work (weights, certificate, read-back), the settle re-solve on
                       the support, and the rest (validate, the loop).
    * ``fsframe-frac`` the same with ``delta_fraction=0.9`` (the method's default way), which also
                       solves the largest-bound SOCP for ``delta_max``.
    * ``cvxpy-ecos``   000 Algorithm 1 written with CVXPY: the SOCP built once with a Parameter for
                       the linearisation ``v`` (DPP, compiled on the first solve), ``v`` updated and
                       re-solved by ECOS; same start (L1 step), stopping rule, tol and max_iter as
                       fsframe's ``dca`` (:func:`bench_conic.dca_loop`).

    Reported: seconds per subproblem (total / DCA iterations) and in total, wall clock and CPU of
    the process, the iteration counts (must agree) and the objectives ``sum phi(|w_j|)`` (must
    agree to 1e-5 relative), and the peak resident memory (``VmHWM``) of each run. Every run is a
    fresh child process (clean memory peak; BLAS pinned to one thread so CPU times compare). At
    n >= 5000 one repetition of ``fsframe`` and ``cvxpy-ecos``.

(b) L1-MPM (one SOCP) on Sonar (``sonar.csv`` in ``--data-dir``, else ``$FSFRAME_DATA``; skipped when absent),
    ``delta`` = 0.9 x ``delta_max``: ``fsframe.fit`` with that absolute ``delta`` on ECOS and on
    Clarabel, with ``delta_fraction`` on ECOS, against the model in CVXPY (construction to solution)
    on Clarabel and on ECOS. Repetitions interleaved; medians.

Usage::

    python benchmarks/bench_mpm.py [--sizes 500,1000,5000] [--reps 3] [--sonar-reps 15] [--quick]
    python benchmarks/bench_mpm.py --report benchmarks/results/mpm.json

Writes ``benchmarks/results/mpm.json`` (``mpm-quick.json`` with ``--quick``; rewritten after each
size) and prints the Markdown tables (the ones in docs/performance.md, section "MPM family
(SOCP)"); ``--report`` prints them for a saved run. A run replaces only what it measured: (b) when
Sonar was found, and the (a) rows of its sizes; (b) and the rows of other sizes stay as the file
had them, each part with the stamp of the run that measured it (``measured``: date, commit,
versions, load, repetitions; :func:`merged`), and the tables' first line says which part was
measured when.
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
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from _common import add_data_dir, data_folder, head_commit  # noqa: E402
from bench_conic import ALPHA, DELTA_FRACTION, dca_loop, make_data, moments, phi  # noqa: E402

SHARED: Path | None = None  # the data folder of (b): main() sets it (_common.data_folder; None: (b) is skipped)
THREADS = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def peak_rss_mb() -> float | None:
    """Peak resident memory of this process (``VmHWM``), MB; ``None`` off Linux."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


# ---------------------------------------------------------------------------- (a) contenders
def run_fsframe(X, y, delta, fraction: bool) -> dict:
    import fsframe
    from fsframe.problem import Subproblem

    solves, settle = [], []
    real = Subproblem.restricted

    def restricted(self, it, keep):
        t0 = time.perf_counter()
        out = real(self, it, keep)
        settle.append(time.perf_counter() - t0)
        return out

    Subproblem.restricted = restricted
    try:
        kw = {"delta_fraction": DELTA_FRACTION} if fraction else {"delta": delta}
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, method="l0-mpm", backend="ecos", callback=lambda rec, it: solves.append(it), **kw)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        Subproblem.restricted = real
    ecos_time = sum(float(it.result.raw["info"]["timing"]["runtime"]) for it in solves)
    sub_time = sum(it.seconds for it in solves)
    info = r.info
    parts = {"build": info["build_seconds"], "compile": info["compile_seconds"], "ecos": ecos_time,
             "fsframe_per_solve": sub_time - ecos_time, "settle": float(sum(settle))}
    parts["rest"] = wall - sum(parts.values())
    return {"seconds": wall, "cpu": cpu, "iterations": r.n_iter, "objective": phi(np.asarray(r.coef)),
            "n_selected": int(r.n_selected), "parts": parts, "statuses": [s.value for s in r.statuses]}


def run_cvxpy_dca(X, y, rho, kappa, solver="ECOS") -> dict:
    import cvxpy as cp

    t0, c0 = time.perf_counter(), time.process_time()
    n = X.shape[1]
    (mu1, F1), (mu2, F2) = moments(X, y, rho)
    w, b = cp.Variable(n), cp.Variable()
    cons = [mu1 @ w - b >= kappa * cp.norm(F1 @ w), b - mu2 @ w >= kappa * cp.norm(F2 @ w),
            mu1 @ w - b >= 1, b - mu2 @ w >= 1]
    v = cp.Parameter(n)
    prob = cp.Problem(cp.Minimize(ALPHA * cp.norm1(w) - v @ w), cons)
    per = []

    def solve_w_b(lin_w):
        s0 = time.perf_counter()
        v.value = lin_w
        prob.solve(solver=getattr(cp, solver))
        assert prob.status == "optimal", prob.status
        per.append(time.perf_counter() - s0)
        return w.value.copy(), float(b.value)

    wv, _, f, it = dca_loop(solve_w_b, n)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"seconds": wall, "cpu": cpu, "iterations": it, "objective": f,
            "n_selected": int(np.count_nonzero(np.abs(wv) > 1e-3 * np.abs(wv).max())),
            "first_solve": per[0], "later_solves_median": float(np.median(per[1:])) if len(per) > 1 else None}


def child(args) -> None:
    """One contender at one size in this (fresh) process; prints a JSON line."""
    import fsframe_mpm as mpm

    X, y = make_data(args.n)
    rho = mpm.DEFAULT_RHO
    delta = DELTA_FRACTION * mpm.largest_bound(X, y, rho, backend="ecos").delta
    mpm.bound._CACHE.clear()  # the fraction run solves its own bound
    base = peak_rss_mb()
    if args.child == "cvxpy-ecos":
        out = run_cvxpy_dca(X, y, rho, mpm.kappa_of(delta))
    else:
        out = run_fsframe(X, y, delta, fraction=args.child == "fsframe-frac")
    out.update(peak_rss_mb=peak_rss_mb(), rss_before_mb=base, delta=delta)
    print("RESULT " + json.dumps(out, default=float), flush=True)


def in_child(contender: str, n: int) -> dict:
    env = {**os.environ, **THREADS}
    proc = subprocess.run([sys.executable, __file__, "--child", contender, "--n", str(n)], capture_output=True,
                          text=True, env=env, cwd=ROOT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"{contender} n={n} failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


CONTENDERS = ("fsframe", "fsframe-frac", "cvxpy-ecos")


def bench_dca(sizes, reps, save=lambda out: None) -> list[dict]:
    """The (a) runs; ``save(out)`` after each size (a long run keeps what it measured). At n >= 5000
    one repetition, without ``fsframe-frac`` (its extra is the bound SOCP, measured at the smaller n)."""
    out = []
    for n in sizes:
        names = CONTENDERS if n < 5000 else ("fsframe", "cvxpy-ecos")
        runs: dict = {c: [] for c in names}
        for rep in range(reps if n < 5000 else 1):
            for c in names:
                r = in_child(c, n)
                runs[c].append(r)
                print(f"(a) n={n} rep {rep} {c}: {r['seconds']:.2f}s wall, {r['cpu']:.2f}s cpu, "
                      f"{r['iterations']} iterations, objective {r['objective']:.8g}, peak {r['peak_rss_mb']:.0f} MB",
                      flush=True)
        ref = runs["fsframe"][0]
        for c, rs in runs.items():
            for r in rs:
                if r["iterations"] != ref["iterations"]:
                    raise AssertionError(f"n={n} {c}: {r['iterations']} iterations, fsframe {ref['iterations']}")
                if abs(r["objective"] - ref["objective"]) > 1e-5 * max(1.0, abs(ref["objective"])):
                    raise AssertionError(f"n={n} {c}: objective {r['objective']} != fsframe {ref['objective']}")
        med = {c: {k: float(np.median([r[k] for r in rs])) for k in ("seconds", "cpu")} for c, rs in runs.items()}
        parts = {k: float(np.median([r["parts"][k] for r in runs["fsframe"]])) for k in runs["fsframe"][0]["parts"]}
        out.append({"n": n, "m": 200, "iterations": ref["iterations"], "objective": ref["objective"], "runs": runs,
                    "median": med, "fsframe_parts": parts,
                    "peak_rss_mb": {c: float(np.max([r["peak_rss_mb"] for r in rs])) for c, rs in runs.items()}})
        save(out)
    return out


# ---------------------------------------------------------------------------- (b) Sonar
def sonar():
    if SHARED is None or not (SHARED / "sonar.csv").is_file():
        return None
    path = SHARED / "sonar.csv"
    import fsframe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = fsframe.load_dataset(path, label_column=-1)
    X = np.array(ds.X, dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(ds.y == ds.classes[1], 1.0, -1.0)


def cvxpy_l1_mpm(X, y, rho, kappa, solver):
    import cvxpy as cp

    (mu1, F1), (mu2, F2) = moments(X, y, rho)
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w)), [mu1 @ w - b >= kappa * cp.norm(F1 @ w),
                                                 b - mu2 @ w >= kappa * cp.norm(F2 @ w),
                                                 mu1 @ w - b >= 1, b - mu2 @ w >= 1])
    prob.solve(solver=getattr(cp, solver))
    assert prob.status == "optimal", prob.status
    return float(prob.value)


def bench_sonar(reps) -> dict | None:
    data = sonar()
    if data is None:
        print(f"(b) skipped: sonar.csv is not in the data folder ({SHARED or 'none set: --data-dir or $FSFRAME_DATA'})")
        return None
    import fsframe
    import fsframe_mpm as mpm

    X, y = data
    rho = mpm.DEFAULT_RHO
    delta = DELTA_FRACTION * mpm.largest_bound(X, y, rho, backend="ecos").delta
    kappa = mpm.kappa_of(delta)

    def fs(backend, **kw):
        def run():
            mpm.bound._CACHE.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = fsframe.fit(X, y, method="l1-mpm", backend=backend, **kw)
            return float(np.abs(r.coef).sum())
        return run

    contenders = {"fsframe-ecos": fs("ecos", delta=delta), "fsframe-clarabel": fs("clarabel", delta=delta),
                  "fsframe-ecos-frac": fs("ecos", delta_fraction=DELTA_FRACTION),
                  "cvxpy-clarabel": lambda: cvxpy_l1_mpm(X, y, rho, kappa, "CLARABEL"),
                  "cvxpy-ecos": lambda: cvxpy_l1_mpm(X, y, rho, kappa, "ECOS")}
    for fn in contenders.values():  # warm-up: imports, CVXPY's first canonicalisation caches
        fn()
    runs: dict = {k: [] for k in contenders}
    for _ in range(reps):
        for k, fn in contenders.items():
            t0, c0 = time.perf_counter(), time.process_time()
            obj = fn()
            runs[k].append({"seconds": time.perf_counter() - t0, "cpu": time.process_time() - c0, "objective": obj})
    ref = runs["cvxpy-clarabel"][0]["objective"]
    for k, rs in runs.items():
        if abs(rs[0]["objective"] - ref) > 1e-5 * max(1.0, abs(ref)):
            raise AssertionError(f"Sonar {k}: objective {rs[0]['objective']} != CVXPY+Clarabel's {ref}")
    med = {k: {q: float(np.median([r[q] for r in rs])) for q in ("seconds", "cpu")} for k, rs in runs.items()}
    print("(b) Sonar medians: " + ", ".join(f"{k} {v['seconds']:.4f}s" for k, v in med.items()), flush=True)
    return {"m": X.shape[0], "n": X.shape[1], "delta": delta, "objective": ref, "runs": runs, "median": med}


# ---------------------------------------------------------------------------- the JSON
FORMAT = 2
"""The JSON's layout: ``{"format", "last_run", "sonar", "dca"}``, (b) and each (a) row carrying the
stamp of the run that measured it (``measured``). Files before it (one ``meta`` for the whole file)
are read as if each part carried that ``meta``."""


def upgraded(res: dict | None) -> dict:
    """``res`` (a file's content; ``None``: no file) in the layout of :data:`FORMAT`, a new dict."""
    if not res:
        return {"format": FORMAT, "last_run": None, "sonar": None, "dca": []}
    if res.get("format") == FORMAT:
        return {**res, "dca": list(res["dca"])}
    meta = res["meta"]
    return {"format": FORMAT, "last_run": meta, "sonar": res["sonar"] and {**res["sonar"], "measured": meta},
            "dca": [{**row, "measured": meta} for row in res["dca"]]}


def merged(old: dict | None, stamp: dict, sonar: dict | None, dca: list[dict]) -> dict:
    """The JSON after a run stamped ``stamp`` that measured (b) as ``sonar`` (``None``: not measured,
    Sonar absent) and the (a) rows ``dca``: those parts with ``measured = stamp``; the (b) and the
    rows of other sizes of ``old`` (the file before the run, any layout) kept with their own stamps.
    Rows in the order of ``n``; neither input is changed."""
    res = upgraded(old)
    res["last_run"] = stamp
    if sonar is not None:
        res["sonar"] = {**sonar, "measured": stamp}
    rows = {row["n"]: row for row in res["dca"]}
    rows.update({row["n"]: {**row, "measured": stamp} for row in dca})
    res["dca"] = [rows[n] for n in sorted(rows)]
    return res


# ---------------------------------------------------------------------------- report
def _conditions(meta: dict) -> str:
    at = f" at `{meta['commit']}`" if meta.get("commit") else ""
    at += f", arguments `{' '.join(meta['argv'])}`" if meta.get("argv") else ""
    return (f"on {meta['date']}{at} (Python {meta['python']}, ecos {meta['ecos']}, clarabel {meta['clarabel']}, cvxpy "
            f"{meta['cvxpy']}; {meta['cpus']} CPUs shared, load average {meta['load']} at the start)")


def measured_when(res: dict) -> str:
    """Which part of ``res`` (:func:`upgraded` layout) was measured when: the parts of one run together."""
    runs: dict = {}
    parts = [(str(r["n"]), r["measured"]) for r in res["dca"]] + ([("(b)", res["sonar"]["measured"])]
                                                                  if res["sonar"] else [])
    for label, meta in parts:
        runs.setdefault(json.dumps(meta, sort_keys=True), (meta, []))[1].append(label)
    clauses = []
    for meta, labels in runs.values():
        sizes = [x for x in labels if x != "(b)"]
        named = ([f"(a) n = {', '.join(sizes)}"] if sizes else []) + (["(b)"] if "(b)" in labels else [])
        clauses.append(f"{' and '.join(named)} {_conditions(meta)}")
    return "; ".join(clauses) or "nothing yet"


def markdown(res: dict, source: str = "benchmarks/results/mpm.json") -> str:
    """The tables of ``res`` (a results file's content, any layout), naming ``source`` as their raw
    data: the file the run wrote (``mpm-quick.json`` after ``--quick``) or the one ``--report`` read."""
    res = upgraded(res)
    lines = [f"Measured by `python benchmarks/bench_mpm.py`, each part in its run: {measured_when(res)}. "
             f"Raw data: `{source}`.", ""]
    dca = res["dca"]
    if dca:
        lines += ["(a) `l0-mpm`, m = 200, full DCA run; seconds per subproblem = total / iterations (medians; "
                  "CPU = the process's CPU time, which the shared machine's load does not inflate):", "",
                  "| n | iters | fsframe s/subproblem (wall, CPU) | CVXPY+ECOS s/subproblem (wall, CPU) | ratio wall | "
                  "ratio CPU | fsframe total | fsframe-frac total | CVXPY total | peak RSS fsframe / CVXPY (MB) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in dca:
            f, c = r["median"]["fsframe"], r["median"]["cvxpy-ecos"]
            frac = f"{r['median']['fsframe-frac']['seconds']:.2f}" if "fsframe-frac" in r["median"] else "-"
            it = r["iterations"]
            lines.append(f"| {r['n']} | {it} | {f['seconds'] / it:.3f}, {f['cpu'] / it:.3f} | {c['seconds'] / it:.3f}, "
                         f"{c['cpu'] / it:.3f} | {f['seconds'] / c['seconds']:.2f} | {f['cpu'] / c['cpu']:.2f} | "
                         f"{f['seconds']:.2f} | {frac} | {c['seconds']:.2f} | "
                         f"{r['peak_rss_mb']['fsframe']:.0f} / {r['peak_rss_mb']['cvxpy-ecos']:.0f} |")
        lines += ["", "Where fsframe's time goes (medians, seconds, wall):", "",
                  "| n | build | compile | ECOS | fsframe per-solve work | settle re-solve | rest (validate, loop) |",
                  "|---|---|---|---|---|---|---|"]
        for r in dca:
            p = r["fsframe_parts"]
            lines.append(f"| {r['n']} | {p['build']:.3f} | {p['compile']:.3f} | {p['ecos']:.3f} | "
                         f"{p['fsframe_per_solve']:.3f} | {p['settle']:.3f} | {p['rest']:.3f} |")
        lines.append("")
    s = res["sonar"]
    if s:
        md = s["median"]
        lines += [f"(b) L1-MPM on Sonar ({s['m']} x {s['n']}, delta = {s['delta']:.4f}), one fit, medians of "
                  f"{s['measured']['sonar_reps']}:", "",
                  "| contender | wall s | CPU s | wall / CVXPY+Clarabel | CPU / CVXPY+Clarabel |",
                  "|---|---|---|---|---|"]
        ref = md["cvxpy-clarabel"]
        for k, v in md.items():
            lines.append(f"| {k} | {v['seconds']:.4f} | {v['cpu']:.4f} | {v['seconds'] / ref['seconds']:.2f} | "
                         f"{v['cpu'] / ref['cpu']:.2f} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500,1000,5000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sonar-reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="n = 200 only, 1 repetition, 3 Sonar repetitions")
    ap.add_argument("--report", metavar="JSON", help="print the tables of a saved run and exit")
    ap.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    add_data_dir(ap, "sonar.csv ((b) is skipped without it)")
    args = ap.parse_args(argv)
    if args.child:
        child(args)
        return
    if args.report:
        print(markdown(json.loads(Path(args.report).read_text()), args.report))
        return
    if args.quick:
        args.sizes, args.reps, args.sonar_reps = "200", 1, 3
    global SHARED
    SHARED = data_folder(ap, args.data_dir, ["sonar.csv"], required=False)
    import clarabel
    import cvxpy
    import ecos

    stamp = {"date": _dt.date.today().isoformat(), "commit": head_commit(ROOT), "python": platform.python_version(),
             "ecos": ecos.__version__, "clarabel": clarabel.__version__, "cvxpy": cvxpy.__version__,
             "cpus": os.cpu_count(), "load": " / ".join(f"{v:.1f}" for v in os.getloadavg()), "reps": args.reps,
             "sonar_reps": args.sonar_reps, "argv": list(sys.argv[1:] if argv is None else argv)}
    out = ROOT / "benchmarks" / "results" / ("mpm-quick.json" if args.quick else "mpm.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    old = json.loads(out.read_text()) if out.is_file() else None  # read first: a broken file stops the run here
    sonar_part = bench_sonar(args.sonar_reps)
    res = {}

    def save(dca):
        res.update(merged(old, stamp, sonar_part, dca))
        out.write_text(json.dumps(res, indent=1, default=float))

    save([])
    bench_dca([int(s) for s in args.sizes.split(",")], args.reps, save)
    print(f"wrote {out}\n")
    print(markdown(res, out.relative_to(ROOT).as_posix()))


if __name__ == "__main__":
    main()
