"""The L1-SVM LP by column and row generation from ``X`` (``fsframe.backends.hinge_generation``,
issue 19) against the full LP in raw HiGHS, each in a fresh process: CPU time and peak memory.

* ``gen``        ``solve_l1_hinge(X, y, 1.0, solver=S, row_drop=R)`` on dense
                 ``bench_scale.make_data(m, n)``; CPU seconds of the process, peak resident set
                 beyond the data (``ru_maxrss`` after the solve minus before it, ``X`` and ``y``
                 already held), objective, support, the certificate of the full LP and every round
                 (features, samples, LP and pricing CPU seconds, iterations);
* ``fit``        ``fsframe.fit(X, y, "l1-svm", C=1.0, working_set=WorkingSetOptions(from_data=F))``
                 (``--fit from_data,compiled``): the whole fit, from ``X`` (the ``from_data`` path,
                 the same generation) or compiled (Pyomo + working sets); same measures, the fit's
                 path and, from ``X``, every round as it ends;
* ``reference``  ``bench_l1svm_rows.child_reference``: the full LP (u/v split) from numpy in HiGHS
                 (``--ref-solver``: ``ipm`` with crossover, or ``simplex``).

Usage::

    python benchmarks/bench_hinge_generation.py --sizes 500x5000,1000x10000 [--solvers simplex,ipm]
                                                [--row-drop 0.5,none] [--col-drop none,0.5]
                                                [--highs '{};{"simplex_price_strategy": 3}']
                                                [--reference 1000x10000] [--fit from_data,compiled]

Run it under ``nice -n 10`` on a shared machine. Writes ``benchmarks/results/hinge_generation.json``
(cases accumulate across calls; a case run again replaces its entry) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_l1svm_rows import _peak_mb, _size, child_reference  # noqa: E402
from bench_scale import make_data  # noqa: E402

OUT = HERE / "results" / "hinge_generation.json"


def child_gen(m: int, n: int, solver: str, row_drop: float | None, col_drop: float | None,
              highs: dict | None = None) -> dict:
    from fsframe.backends.hinge_generation import solve_l1_hinge

    X, y = make_data(m, n)
    base = _peak_mb()
    c0, w0 = time.process_time(), time.perf_counter()
    c1 = time.process_time()

    def progress(info):  # each round on stderr as it ends: a run stopped by hand keeps its rounds
        print(json.dumps({"cpu_s": time.process_time() - c1, "peak_beyond_data_mb": _peak_mb() - base, **info}),
              file=sys.stderr, flush=True)

    r = solve_l1_hinge(X, y, 1.0, solver=solver, row_drop=row_drop, col_drop=col_drop, on_round=progress,
                       highs_options=highs or None)
    cert = r.certificate
    w = r.coef
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
            "peak_beyond_data_mb": _peak_mb() - base, "objective": float(r.objective),
            "support": int(np.count_nonzero(np.abs(w) > 1e-9 * max(1.0, float(np.abs(w).max(initial=0.0))))),
            "features": int(r.features.size), "samples": int(r.samples.size),
            "certificate": {k: cert[k] for k in ("status", "gap", "primal_residual", "dual_residual", "max_violation")},
            "rounds": list(r.rounds)}


def child_fit(m: int, n: int, path: str) -> dict:
    import warnings

    import fsframe
    from fsframe.backends import hinge_generation
    from fsframe.working_set import WorkingSetOptions

    X, y = make_data(m, n)
    base = _peak_mb()
    c0, w0 = time.process_time(), time.perf_counter()
    real = hinge_generation.solve_l1_hinge

    def progress(info):  # each round on stderr as it ends: a run stopped by hand keeps its rounds
        print(json.dumps({"cpu_s": time.process_time() - c0, "peak_beyond_data_mb": _peak_mb() - base, **info}),
              file=sys.stderr, flush=True)

    def solve(*args, **kw):
        return real(*args, **{**kw, "on_round": progress})

    hinge_generation.solve_l1_hinge = solve
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fsframe.errors.DataWarning)  # n >> m
        r = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=WorkingSetOptions(from_data=path == "from_data"),
                        progress=False)
    cert = r.certificate
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
            "peak_beyond_data_mb": _peak_mb() - base, "objective": float(r.objective), "support": int(r.n_selected),
            "solver_path": r.info.get("solver_path", "compiled"),
            "certificate": {k: cert.get(k) for k in ("status", "gap", "primal_residual", "dual_residual",
                                                     "max_violation", "working_set", "rounds")},
            "rounds": list(r.info.get("from_data_rounds", ()))}


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *args], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True)  # the child's rounds go to our stderr
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode} (its stderr above)"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _lp(r: dict) -> str:
    """The restricted LP's solver and the HiGHS options of the case."""
    return r["solver"] + "".join(f", {k}={v}" for k, v in sorted(r.get("highs", {}).items()))


def markdown(res: dict) -> str:
    refs = {(r["m"], r["n"]): r for r in res["references"] if "error" not in r}
    lines = ["| m × n | restricted LP | row_drop / col_drop | CPU | LP / pricing CPU | peak beyond data | objective "
             "| vs reference (rel.) | reference CPU | support | final LP (features × samples) / rounds | gap |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["runs"]:
        if "error" in r:
            lines.append(f"| {r['m']} × {r['n']} | {_lp(r)} | {r['row_drop']} / {r.get('col_drop')} "
                         f"| error: {r['error']} |" + " |" * 8)
            continue
        ref = refs.get((r["m"], r["n"]))
        rel = f"{abs(r['objective'] - ref['objective']) / abs(ref['objective']):.1e}" if ref else "–"
        rcpu = f"{ref['cpu_s']:.1f} s ({ref['solver']})" if ref else "–"
        lp = sum(d["lp_seconds"] for d in r["rounds"])
        pr = sum(d["pricing_seconds"] for d in r["rounds"])
        lines.append(f"| {r['m']} × {r['n']} | {_lp(r)} | {r['row_drop']} / {r.get('col_drop')} | {r['cpu_s']:.1f} s | {lp:.1f} / {pr:.1f} s "
                     f"| {r['peak_beyond_data_mb']:.0f} MB | {r['objective']:.10f} | {rel} | {rcpu} | {r['support']} "
                     f"| {r['features']} × {r['samples']} / {len(r['rounds'])} | {r['certificate']['gap']:.1e} |")
    fits = res.get("fits", [])
    if fits:
        lines += ["", "| m × n | fit path | CPU | wall | peak beyond data | objective | support | certificate gap "
                  "| rounds |", "|---|---|---|---|---|---|---|---|---|"]
        for r in fits:
            if "error" in r:
                lines.append(f"| {r['m']} × {r['n']} | {r['path']} | error: {r['error']} |" + " |" * 6)
                continue
            lines.append(f"| {r['m']} × {r['n']} | {r['solver_path']} | {r['cpu_s']:.1f} s | {r['wall_s']:.1f} s "
                         f"| {r['peak_beyond_data_mb']:.0f} MB | {r['objective']:.10f} | {r['support']} "
                         f"| {r['certificate']['gap']:.1e} | {r['certificate']['rounds']} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--child", nargs="+")
    p.add_argument("--sizes", default="500x5000")
    p.add_argument("--solvers", default="simplex")
    p.add_argument("--row-drop", default="0.5")
    p.add_argument("--col-drop", default="none")
    p.add_argument("--highs", default="{}", help="';'-separated JSON dicts of HiGHS options, one case each")
    p.add_argument("--reference", default="")
    p.add_argument("--ref-solver", default="ipm")
    p.add_argument("--fit", default="", help="comma-separated fit paths to run at --sizes: from_data, compiled")
    a = p.parse_args(argv)
    if a.child:
        kind, m, n, *rest = a.child
        if kind == "gen":
            out = child_gen(int(m), int(n), rest[0], *(None if v == "none" else float(v) for v in rest[1:3]),
                            json.loads(rest[3]) if len(rest) > 3 else None)
        elif kind == "fit":
            out = child_fit(int(m), int(n), rest[0])
        else:
            out = child_reference(int(m), int(n), rest[0])
        print(json.dumps(out))
        return

    def load() -> dict:  # read again before each write: another run may have written meanwhile
        return json.loads(OUT.read_text()) if OUT.exists() else {"runs": [], "references": []}

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    stamp = {"commit": commit, "date": _dt.datetime.now().isoformat(timespec="seconds")}
    for size in filter(None, a.sizes.split(",")):
        m, n = _size(size)
        for path in filter(None, a.fit.split(",")):
            r = {"m": m, "n": n, "path": path, **stamp, **_child(["fit", str(m), str(n), path])}
            print(json.dumps(r), file=sys.stderr, flush=True)
            res = load()
            res["fits"] = [x for x in res.get("fits", []) if (x["m"], x["n"], x["path"]) != (m, n, path)]
            res["fits"].append(r)
            OUT.write_text(json.dumps(res, indent=1))
        if a.fit:
            continue
        for solver in a.solvers.split(","):
            for rd, cd, hi in ((rd, cd, hi) for rd in a.row_drop.split(",") for cd in a.col_drop.split(",")
                               for hi in a.highs.split(";")):
                highs = json.loads(hi)
                r = {"m": m, "n": n, "solver": solver, "row_drop": rd, "col_drop": cd, "highs": highs, **stamp,
                     **_child(["gen", str(m), str(n), solver, rd, cd, json.dumps(highs)])}
                key = (m, n, solver, rd, cd, json.dumps(highs, sort_keys=True))
                print(json.dumps(r), file=sys.stderr, flush=True)
                res = load()
                res["runs"] = [x for x in res["runs"]
                               if (x["m"], x["n"], x["solver"], x["row_drop"], x.get("col_drop"),
                                   json.dumps(x.get("highs", {}), sort_keys=True)) != key]
                res["runs"].append(r)
                OUT.write_text(json.dumps(res, indent=1))
    for size in filter(None, a.reference.split(",")):
        m, n = _size(size)
        r = {"m": m, "n": n, **stamp, **_child(["ref", str(m), str(n), a.ref_solver])}
        print(json.dumps(r), file=sys.stderr, flush=True)
        res = load()
        res["references"] = [x for x in res["references"] if (x["m"], x["n"]) != (m, n)]
        res["references"].append(r)
        OUT.write_text(json.dumps(res, indent=1))
    res = load()
    OUT.with_suffix(".md").write_text(markdown(res) + "\n")
    print(markdown(res))


if __name__ == "__main__":
    main()
