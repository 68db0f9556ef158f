"""``em-logistic`` (and ``em-ls``) with EM's steps solved from ``X`` by Newton's method (the
``quad_from_data`` path, docs/glm.md "EM steps from X") against the exponential-cone path
(``WorkingSetOptions(from_data=False)``), and the other logistic methods as users run them
(``--path auto``: ``working_set="auto"``; ``l0-logistic`` with ``max_iter=30`` as in the grid),
on the support-recovery benchmark's cells
(``benchmarks/support_recovery.py``: n = 500, k = 10, ``n_features = k``, its ``C``).

Per run: CPU seconds of the process (``time.process_time``: every thread's, BLAS included) and wall
seconds, EM iterations, the selection and whether both paths selected the same features. A cone
run is given ``--cone-limit`` seconds of wall time in a child process and reported as cut off past
it. Results: ``benchmarks/results/em_newton.json`` (resumable) and the section between
``<!-- em_newton:begin -->`` and ``<!-- em_newton:end -->`` of ``docs/performance.md``.

    nice -n 10 python benchmarks/bench_em_newton.py [--p 1000 --p 5000] [--cone-limit 900] [--render]
    nice -n 10 python benchmarks/bench_em_newton.py --method l1-logistic --method l0-logistic \
        --method log-logistic --path auto
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import head_commit, write_section  # noqa: E402
from support_recovery import K, LAMBDA_FRACTION, make_data  # noqa: E402  (the benchmark's own cells)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "em_newton.json"
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- em_newton:begin -->", "<!-- em_newton:end -->"
CELL = ("logistic", 0.0, 5.0, 0)  # task, rho, SNR, seed


def _one(method, p, path, queue):
    import fsframe
    from fsframe.working_set import WorkingSetOptions
    from fsframe_glm import LeastSquaresFormulation, LogisticFormulation

    task, rho, snr, seed = CELL if method.endswith("logistic") else ("regression",) + CELL[1:]
    X, y, *_ = make_data(task, rho, snr, seed, p)
    form = LogisticFormulation() if task == "logistic" else LeastSquaresFormulation()
    C = LAMBDA_FRACTION / form.empty_model_threshold(X, y)
    # "auto": the method as a user runs it (working_set="auto"; DCA capped at 30 as in the grid)
    ws = "auto" if path == "auto" else WorkingSetOptions(from_data=path == "newton")
    extra = {"max_iter": 30} if method.startswith("l0-") else {}
    c0, w0 = time.process_time(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method=method, C=C, n_features=K, working_set=ws, **extra)
    queue.put({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0, "n_iter": r.n_iter,
               "selected": [int(j) for j in r.selected], "objective": r.objective,
               "certificate": {k: r.certificate.get(k) for k in ("status", "backend", "gap")}})


def measure(method, p, path, limit):
    queue = mp.get_context("fork").Queue()
    proc = mp.get_context("fork").Process(target=_one, args=(method, p, path, queue))
    t0 = time.perf_counter()
    proc.start()
    proc.join(limit)
    if proc.is_alive():
        proc.terminate()
        proc.join()
        return {"cut_off": True, "wall": time.perf_counter() - t0}
    return queue.get() if not queue.empty() else {"failed": True, "exitcode": proc.exitcode}


def markdown(res):
    lines = [f"`{res['meta']['cell']}` cell of the support-recovery benchmark (the regression cell for `em-ls`), "
             f"`n_features = {K}`; CPU = every thread's, one BLAS thread, on a shared 2-core machine (wall clock "
             "is the load's).", "",
             "| method | p | path | CPU s | wall s | iterations | same selection as the other path | certificate "
             "| commit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for key, r in sorted(res["runs"].items()):
        method, p, path = key.split("|")
        twin = f"{method}|{p}|{'cone' if path == 'newton' else 'newton'}"
        other = res["runs"].get(twin, {}) if path != "auto" else {}
        same = ("—" if "selected" not in r or "selected" not in other
                else "yes" if r["selected"] == other["selected"] else "**no**")
        commit = r.get("commit", res["meta"].get("commit", ""))
        if r.get("cut_off"):
            lines.append(f"| {method} | {p} | {path} | — | > {r['wall']:.0f} (cut off) | — | — | — | {commit} |")
            continue
        if r.get("failed"):
            lines.append(f"| {method} | {p} | {path} | failed | | | | | {commit} |")
            continue
        c = r["certificate"]
        lines.append(f"| {method} | {p} | {path} | {r['cpu']:.1f} | {r['wall']:.1f} | {r['n_iter']} | {same} | "
                     f"{c['status']} ({c['backend']}, gap {c['gap']:.1e}) | {commit} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--p", type=int, action="append")
    ap.add_argument("--method", action="append")
    ap.add_argument("--path", action="append", choices=("newton", "cone", "auto"))
    ap.add_argument("--cone-limit", type=float, default=900.0)
    ap.add_argument("--render", action="store_true")
    args = ap.parse_args(argv)
    res = json.loads(OUT.read_text()) if OUT.exists() else {"meta": {}, "runs": {}}
    if not args.render:
        res["meta"] = {"cell": "|".join(map(str, CELL)), "commit": head_commit(ROOT)}
        for method in args.method or ["em-logistic"]:
            for p in args.p or [1000, 5000]:
                for path in args.path or ["newton", "cone"]:
                    key = f"{method}|{p}|{path}"
                    if key in res["runs"]:
                        continue
                    r = {**measure(method, p, path, None if path == "newton" else args.cone_limit),
                         "commit": res["meta"]["commit"]}
                    print(key, {k: v for k, v in r.items() if k != "selected"}, flush=True)
                    res["runs"][key] = r
                    OUT.write_text(json.dumps(res, indent=1, sort_keys=True))
    text = markdown(res)
    print(text)
    write_section(DOC, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
