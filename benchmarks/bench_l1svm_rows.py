"""``l1-svm`` with many rows (issue 19): the whole fit on dense ``bench_scale.make_data(m, n)`` and
the full LP solved by raw HiGHS, each in a fresh process, CPU time and peak memory.

* ``fit``        ``fsframe.fit(X, y, method="l1-svm", backend_options={"append_restart": R})``
                 (R = ``auto``, ``warm`` or ``cold``: HiGHS's restart after a working set appends
                 columns, fsframe/backends/highs.py); CPU seconds of the process, peak resident
                 set beyond the data (``ru_maxrss`` after the fit minus before it, ``X`` and ``y``
                 already held), objective, support, the certificate of the full problem and the
                 restarts HiGHS took (columns before, appended, cold or warm);
* ``reference``  the full L1-SVM LP (u/v split, ``bench_core.raw_highs``'s columns) handed to HiGHS
                 from numpy and solved by ``--ref-solver`` (``ipm``: HiGHS's interior point with
                 crossover; ``simplex``), its objective the yardstick of the fit's.

Usage::

    python benchmarks/bench_l1svm_rows.py --sizes 500x5000,1000x10000 [--restarts auto,warm]
                                          [--reference 1000x10000] [--ref-solver ipm] [--out NAME]

Run it under ``nice -n 10`` on a shared machine; one case at a time (the 2 000 x 20 000 fit holds
~2 GB). Writes ``benchmarks/results/NAME.json`` (default ``l1svm_rows``) and prints a Markdown
table; a case already in that file is kept unless run again (results accumulate across calls).
CPU times are the figures to compare: wall times on a loaded machine are several times larger.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from bench_scale import make_data  # noqa: E402


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kB on Linux


def child_fit(m: int, n: int, restart: str) -> dict:
    import warnings

    import fsframe
    from fsframe.backends.highs import HighsSession

    appends = []
    orig = HighsSession.close

    def close(self):  # the restarts each session took, read before it goes
        appends.extend(self.appends)
        return orig(self)

    HighsSession.close = close
    X, y = make_data(m, n)
    base = _peak_mb()
    c0, w0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="l1-svm", backend_options={"append_restart": restart})
    cert = r.certificate
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
            "peak_beyond_data_mb": _peak_mb() - base, "objective": float(r.objective),
            "support": int(np.count_nonzero(r.coef)),
            "build_s": r.info["build_seconds"], "compile_s": r.info["compile_seconds"],
            "certificate": {k: cert.get(k) for k in ("status", "gap", "primal_residual", "dual_residual",
                                                     "working_set", "n_groups", "rounds", "added", "max_violation")},
            "appends": [list(a) for a in appends]}


def child_reference(m: int, n: int, solver: str, C: float = 1.0) -> dict:
    import highspy

    X, y = make_data(m, n)
    base = _peak_mb()
    c0, w0 = time.process_time(), time.perf_counter()
    YX = y[:, None] * X
    dense = np.hstack([YX, -YX, y[:, None]])  # (m, 2n+1)
    del YX
    k = dense.shape[1]
    data = np.concatenate([dense.T.ravel(), np.ones(m)])
    del dense
    index = np.concatenate([np.tile(np.arange(m, dtype=np.int32), k), np.arange(m, dtype=np.int32)])
    start = np.concatenate([np.arange(0, m * k, m, dtype=np.int64), m * k + np.arange(m, dtype=np.int64)])
    N = k + m
    cost = np.concatenate([np.ones(2 * n), [0.0], np.full(m, C)])
    lower = np.concatenate([np.zeros(2 * n), [-np.inf], np.zeros(m)])
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", solver)
    h.addRows(m, np.ones(m), np.full(m, np.inf), 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addCols(N, cost, lower, np.full(N, np.inf), data.size, start.astype(np.int32), index, data)
    del data, index
    h.run()
    info = h.getInfo()
    x = np.array(h.getSolution().col_value)
    w = x[:n] - x[n:2 * n]
    return {"cpu_s": time.process_time() - c0, "wall_s": time.perf_counter() - w0,
            "peak_beyond_data_mb": _peak_mb() - base, "objective": float(info.objective_function_value),
            "status": h.modelStatusToString(h.getModelStatus()), "solver": solver,
            "simplex_iterations": int(info.simplex_iteration_count), "ipm_iterations": int(info.ipm_iteration_count),
            "support": int(np.count_nonzero(np.abs(w) > 1e-9 * max(1.0, float(np.abs(w).max(initial=0.0)))))}


def _child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", *args], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()
        return {"error": tail[-1] if tail else f"exit {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _size(text: str) -> tuple:
    m, n = text.lower().split("x")
    return int(m), int(n)


def markdown(res: dict) -> str:
    refs = {(r["m"], r["n"]): r for r in res["references"] if "error" not in r}
    lines = ["| m × n | append_restart | CPU | peak beyond data | objective | vs reference | support "
             "| working set / rounds | gap | max violation | cold / warm appends |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res["fits"]:
        if "error" in r:
            lines.append(f"| {r['m']} × {r['n']} | {r['restart']} | error: {r['error']} |" + " |" * 8)
            continue
        ref = refs.get((r["m"], r["n"]))
        rel = f"{abs(r['objective'] - ref['objective']) / abs(ref['objective']):.1e}" if ref else "–"
        c = r["certificate"]
        kinds = [a[2] for a in r["appends"]]
        lines.append(f"| {r['m']} × {r['n']} | {r['restart']} | {r['cpu_s']:.1f} s | {r['peak_beyond_data_mb']:.0f} MB "
                     f"| {r['objective']:.10f} | {rel} | {r['support']} | {c['working_set']} / {c['rounds']} "
                     f"| {c['gap']:.1e} | {c['max_violation']:.1e} | {kinds.count('cold')} / {kinds.count('warm')} |")
    if res["references"]:
        lines += ["", "| m × n | raw HiGHS full LP | CPU | peak beyond data | objective | support | iterations |",
                  "|---|---|---|---|---|---|---|"]
        for r in res["references"]:
            if "error" in r:
                lines.append(f"| {r['m']} × {r['n']} | error: {r['error']} |" + " |" * 5)
                continue
            its = r["ipm_iterations"] if r["solver"] == "ipm" else r["simplex_iterations"]
            lines.append(f"| {r['m']} × {r['n']} | {r['solver']} ({r['status']}) | {r['cpu_s']:.1f} s "
                         f"| {r['peak_beyond_data_mb']:.0f} MB | {r['objective']:.10f} | {r['support']} | {its} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="", help="fits to run, e.g. 500x5000,1000x10000")
    ap.add_argument("--restarts", default="auto", help="append_restart values, e.g. auto,warm")
    ap.add_argument("--reference", default="", help="sizes whose full LP raw HiGHS solves")
    ap.add_argument("--ref-solver", default="ipm", choices=("ipm", "simplex"))
    ap.add_argument("--out", default="l1svm_rows")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, m, n, extra = args.child
        out = child_fit(int(m), int(n), extra) if kind == "fit" else child_reference(int(m), int(n), extra)
        print(json.dumps(out))
        return 0
    path = ROOT / "benchmarks" / "results" / f"{args.out}.json"
    res = json.loads(path.read_text()) if path.exists() else {"fits": [], "references": []}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    stamp = {"commit": commit, "date": _dt.datetime.now().isoformat(timespec="seconds")}
    for size in filter(None, args.reference.split(",")):
        m, n = _size(size)
        r = {"m": m, "n": n, **stamp, **_child(["reference", str(m), str(n), args.ref_solver])}
        res["references"] = [x for x in res["references"] if (x["m"], x["n"], x.get("solver")) != (m, n, args.ref_solver)]
        res["references"].append(r)
        print(f"reference {m} x {n}: {r}", file=sys.stderr, flush=True)
    for size in filter(None, args.sizes.split(",")):
        m, n = _size(size)
        for restart in args.restarts.split(","):
            r = {"m": m, "n": n, "restart": restart, **stamp, **_child(["fit", str(m), str(n), restart])}
            res["fits"] = [x for x in res["fits"] if (x["m"], x["n"], x["restart"]) != (m, n, restart)]
            res["fits"].append(r)
            print(f"fit {m} x {n} ({restart}): {r}", file=sys.stderr, flush=True)
    res["fits"].sort(key=lambda r: (r["m"], r["n"], r["restart"]))
    path.write_text(json.dumps(res, indent=1) + "\n")
    text = markdown(res)
    (path.with_suffix(".md")).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
