"""Memory and build cost at scale (issue 13): the ``l1-svm`` hinge LP from numpy to HiGHS.

For dense Gaussian data (seeded) of m samples x n features, each case in a fresh process:

* ``build``     ``HingeFormulation(C=1).build(X, y, {"lin"})``: the Pyomo model (``l1-svm``'s LP);
* ``compile``   ``compile_model``: the canonical ``ProblemData`` (``G`` holds ``2 m n`` entries: the
                ``w = u - v`` split);
* ``hand-over`` ``HighsBackend().open(data)`` and its session's ``_load``: the problem passed to
                HiGHS as the first solve does before HiGHS runs (``--handover``);
* ``fit``       ``fsframe.fit(X, y, method="l1-svm")`` end to end, in its own process (``--fit``).

Memory is the process's peak resident set (``ru_maxrss``) after each phase minus the resident set
once fsframe is imported and ``X`` exists ("beyond the data"), so each figure is the peak up to
and including that phase. Sizes: 500 x 5 000 and 1 000 x 10 000; ``--large`` adds 2 000 x 20 000
(320 MB of data). The Colon-sized case (62 x 2 000, ``{"lin"}`` as in ``l1-svm``/``fsv`` and
``{"quad"}`` as in ``em-l0``) times build + compile, median of ``--reps`` runs in one process.

Usage::

    python benchmarks/bench_scale.py [--large] [--handover] [--fit] [--reps 7] [--colon-only]
                                     [--tree PATH --label before] [--quick]

``--tree`` measures another checkout of fsframe (e.g. ``git archive <commit> | tar -x -C /tmp/old``)
with this same script: its ``fsframe`` and ``plugins`` come first on the path. Writes
``benchmarks/results/scale[-LABEL].json`` and prints a Markdown table (also
``benchmarks/results/scale[-LABEL].md``); ``--quick`` (smoke test: the two smallest cases, one rep)
writes to ``$TMPDIR`` only. Timings are wall-clock seconds on a shared machine: compare ratios
of runs made one after the other, not absolute values across days.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SEED = 20261
SIZES = [(500, 5000), (1000, 10000)]
LARGE = (2000, 20000)
COLON = (62, 2000)


def make_data(m: int, n: int, seed: int = SEED):
    """Dense Gaussian features; labels from 10 informative features plus noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    beta = np.zeros(n)
    beta[:10] = rng.standard_normal(10)
    y = np.where(X @ beta + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def _problem_mb(data) -> float:
    total = 0
    for M in (data.A, data.G):
        total += M.data.nbytes + M.indices.nbytes + M.indptr.nbytes
    for v in (data.c, data.b, data.h, data.lb, data.ub):
        total += v.nbytes
    return total / 2**20


# ------------------------------------------------------------------------------------------ children
def child_phases(m: int, n: int, handover: bool) -> dict:
    """Build, compile (and hand over) in this process; time and peak memory per phase."""
    from fsframe.compiler import compile_model
    from fsframe_svm import HingeFormulation

    X, y = make_data(m, n)
    base = _rss_mb()
    out = {"m": m, "n": n, "data_mb": X.nbytes / 2**20, "baseline_mb": base}
    t0 = time.perf_counter()
    built = HingeFormulation(C=1.0).build(X, y, frozenset({"lin"}))
    t1 = time.perf_counter()
    out.update(build_s=t1 - t0, build_peak_mb=_rss_mb() - base)
    cm = compile_model(built.model)
    t2 = time.perf_counter()
    out.update(compile_s=t2 - t1, compile_peak_mb=_rss_mb() - base, problem_mb=_problem_mb(cm.data),
               G_nnz=int(cm.data.G.nnz), G_index_dtype=str(cm.data.G.indices.dtype),
               pyomo_margin_rows=len(built.model.margin))
    if handover:
        from fsframe.backends import HighsBackend

        session = HighsBackend().open(cm.data)
        session._load(cm.data)  # what the first solve does before HiGHS runs (the hand-over)
        out.update(handover_s=time.perf_counter() - t2, handover_peak_mb=_rss_mb() - base)
        session.close()
    return out


def child_fit(m: int, n: int) -> dict:
    """One ``l1-svm`` fit end to end."""
    import warnings

    import fsframe

    X, y = make_data(m, n)
    base = _rss_mb()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="l1-svm")
    return {"m": m, "n": n, "baseline_mb": base, "fit_s": time.perf_counter() - t0, "fit_peak_mb": _rss_mb() - base,
            "build_s": res.info["build_seconds"], "compile_s": res.info["compile_seconds"],
            "solve_s": res.info["solve_seconds"], "support": int(np.count_nonzero(res.coef)),
            "objective": float(res.objective)}


def child_small(reps: int) -> dict:
    """Build + compile of a Colon-sized hinge model, per slot term set, median of ``reps``."""
    import gc

    from fsframe.compiler import compile_model
    from fsframe_svm import HingeFormulation

    X, y = make_data(*COLON)
    f = HingeFormulation(C=1.0)
    out = {}
    for name, terms in (("lin", frozenset({"lin"})), ("quad", frozenset({"quad"}))):
        f.build(X, y, terms)  # warm-up (imports, caches)
        runs = []
        for _ in range(reps):
            gc.collect()
            t0 = time.perf_counter()
            built = f.build(X, y, terms)
            t1 = time.perf_counter()
            compile_model(built.model)
            t2 = time.perf_counter()
            runs.append((t1 - t0, t2 - t1))
        arr = np.array(runs)
        out[name] = {"build_s": float(np.median(arr[:, 0])), "compile_s": float(np.median(arr[:, 1])),
                     "total_s": float(np.median(arr.sum(axis=1))), "runs": runs}
    return out


def _run_child(args: list[str], tree: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "plugins"), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *args], cwd=tree, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------- report
def markdown(res: dict) -> str:
    lines = [f"Tree: `{res['tree']}` ({res['commit']}), {res['date']}", "",
             "| m × n | data | build | build peak | compile | compile peak | ProblemData | G entries | Pyomo margin rows "
             "| hand-over | hand-over peak |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["phases"]:
        if "error" in r:
            lines.append(f"| {r['m']} × {r['n']} | error: {r['error']} |" + " |" * 9)
            continue
        ho = (f"{r['handover_s']:.2f} s | {r['handover_peak_mb']:.0f} MB" if "handover_s" in r else "– | –")
        rows = r.get("pyomo_margin_rows", "–")
        lines.append(f"| {r['m']} × {r['n']} | {r['data_mb']:.0f} MB | {r['build_s']:.2f} s | {r['build_peak_mb']:.0f} MB "
                     f"| {r['compile_s']:.2f} s | {r['compile_peak_mb']:.0f} MB | {r.get('problem_mb', 0):.0f} MB "
                     f"| {r.get('G_nnz', 0):,} | {rows} | {ho} |")
    if res.get("fits"):
        lines += ["", "| m × n | fit | peak beyond data | build | compile | solve | support |", "|---|---|---|---|---|---|---|"]
        for r in res["fits"]:
            if "error" in r:
                lines.append(f"| {r['m']} × {r['n']} | error: {r['error']} |" + " |" * 5)
                continue
            lines.append(f"| {r['m']} × {r['n']} | {r['fit_s']:.1f} s | {r['fit_peak_mb']:.0f} MB | {r['build_s']:.2f} s "
                         f"| {r['compile_s']:.2f} s | {r['solve_s']:.1f} s | {r['support']} |")
    small = res.get("colon_sized")
    if small and "error" not in small:
        lines += ["", f"Colon-sized ({COLON[0]} × {COLON[1]}), median of {res['reps']}:", "",
                  "| slot terms (methods) | build | compile | build + compile |", "|---|---|---|---|"]
        for name, label in (("lin", "lin (l1-svm, fsv)"), ("quad", "quad (em-l0, svm-weights)")):
            s = small[name]
            lines.append(f"| {label} | {1e3 * s['build_s']:.1f} ms | {1e3 * s['compile_s']:.1f} ms "
                         f"| {1e3 * s['total_s']:.1f} ms |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--large", action="store_true", help="add 2000 x 20000 (320 MB of data)")
    ap.add_argument("--handover", action="store_true", help="also hand the problem to HiGHS")
    ap.add_argument("--fit", action="store_true", help="also run full l1-svm fits (HiGHS solves the whole LP)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tree", type=Path, default=ROOT, help="checkout of fsframe to measure")
    ap.add_argument("--label", default="", help="suffix of the result files (e.g. 'before')")
    ap.add_argument("--colon-only", action="store_true", help="only the Colon-sized build + compile")
    ap.add_argument("--quick", action="store_true", help="smoke test: small sizes, one rep, results in $TMPDIR")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, *rest = args.child
        if kind == "phases":
            out = child_phases(int(rest[0]), int(rest[1]), rest[2] == "1")
        elif kind == "fit":
            out = child_fit(int(rest[0]), int(rest[1]))
        else:
            out = child_small(int(rest[0]))
        print(json.dumps(out))
        return 0
    tree = args.tree.resolve()
    sizes = [(100, 1000), (200, 2000)] if args.quick else SIZES + ([LARGE] if args.large else [])
    sizes = [] if args.colon_only else sizes
    reps = 1 if args.quick else args.reps
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True, text=True).stdout.strip()
    res = {"tree": str(tree), "commit": commit or "not a git checkout", "date": _dt.datetime.now().isoformat(timespec="seconds"),
           "python": platform.python_version(), "reps": reps, "phases": [], "fits": []}
    for m, n in sizes:
        r = _run_child(["phases", str(m), str(n), "1" if args.handover else "0"], tree)
        res["phases"].append({"m": m, "n": n, **r})
        print(f"{m} x {n}: {r}", file=sys.stderr)
    if args.fit:
        for m, n in sizes:
            r = _run_child(["fit", str(m), str(n)], tree)
            res["fits"].append({"m": m, "n": n, **r})
            print(f"fit {m} x {n}: {r}", file=sys.stderr)
    res["colon_sized"] = _run_child(["small", str(reps)], tree)
    text = markdown(res)
    print(text)
    stem = "scale" + ("-colon" if args.colon_only else "") + (f"-{args.label}" if args.label else "")
    out_dir = Path(tempfile.gettempdir()) if args.quick else ROOT / "benchmarks" / "results"
    (out_dir / f"{stem}.json").write_text(json.dumps(res, indent=1) + "\n")
    (out_dir / f"{stem}.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
