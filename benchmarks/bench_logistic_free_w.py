"""The logistic formulation's L1 term: free ``w`` with ``s_j >= |w_j|`` (two rows, what
``LogisticFormulation`` builds) against the split ``w = u - v`` (``u, v >= 0``, what it built
before issue 23's speed work), on the support-recovery benchmark's instance, on Clarabel and ECOS.

One ``l1-logistic`` fit per row (one convex problem, no ``n_features``), in one process,
interleaved (split, free, split, free, ...): objective, support, the raw solver's iterations and
time (summed over the fit's solves, measured around ``clarabel.DefaultSolver.solve`` /
``ecos.solve``), the fit's CPU and wall time, and the working set. The split is rebuilt by
calling the plugin's ``_linear_model`` with ``epigraph=False`` (the form every other linear
formulation of the plugin keeps). A CVXPY + Clarabel solve of the same problem is the reference
objective and the raw-solver contender (``cp.logistic``; its iterations and solve time).

    nice python benchmarks/bench_logistic_free_w.py [--p 1000] [--p 5000] [--reps 1] [--backend clarabel]
    nice python benchmarks/bench_logistic_free_w.py --multinomial   # l1-multinomial, working set or not

Writes ``benchmarks/results/logistic_free_w.json`` (each finished block at once) and the section
between ``<!-- logistic_free_w:begin -->`` and ``<!-- logistic_free_w:end -->`` of
``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import head_commit, write_section  # noqa: E402
from support_recovery import LAMBDA_FRACTION, make_data  # noqa: E402  (the benchmark's instance)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "logistic_free_w.json"
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- logistic_free_w:begin -->", "<!-- logistic_free_w:end -->"


class _Raw:
    """Iterations and seconds inside the raw solvers, summed (patched around their solve calls)."""

    def __init__(self):
        self.iters = 0
        self.seconds = 0.0
        self.solves = 0

    def install(self):
        import clarabel
        import ecos

        raw = self
        real_default, real_ecos = clarabel.DefaultSolver, ecos.solve

        class Timed:
            def __init__(self, *a, **k):
                self._s = real_default(*a, **k)

            def solve(self):
                t0 = time.process_time()
                sol = self._s.solve()
                raw.seconds += time.process_time() - t0
                raw.iters += int(sol.iterations)
                raw.solves += 1
                return sol

            def __getattr__(self, name):
                return getattr(self._s, name)

        def timed_ecos(*a, **k):
            t0 = time.process_time()
            out = real_ecos(*a, **k)
            raw.seconds += time.process_time() - t0
            raw.iters += int(out["info"]["iter"])
            raw.solves += 1
            return out

        clarabel.DefaultSolver = Timed
        ecos.solve = timed_ecos

    def reset(self):
        self.iters, self.seconds, self.solves = 0, 0.0, 0


def _fit(X, y, C, backend, form, raw):
    import fsframe
    import fsframe_glm

    real = fsframe_glm._linear_model
    if form == "split":
        fsframe_glm._linear_model = lambda name, n, terms, epigraph=False: real(name, n, terms, False)
    raw.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, w0 = time.process_time(), time.perf_counter()
            r = fsframe.fit(X, y, method="l1-logistic", C=C, backend=backend, working_set=True)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    finally:
        fsframe_glm._linear_model = real
    cert = r.certificate
    return {"objective": float(r.objective), "selected": np.asarray(r.selected).tolist(), "cpu": cpu, "wall": wall,
            "solver_cpu": raw.seconds, "solver_iters": raw.iters, "solves": raw.solves,
            "working_set": cert.get("working_set"), "rounds": cert.get("rounds"), "gap": cert.get("gap"),
            "status": cert.get("status")}


def _cvxpy(X, y, C, raw):
    import cvxpy as cp

    raw.reset()
    w, b = cp.Variable(X.shape[1]), cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm1(w) + C * cp.sum(cp.logistic(-cp.multiply(y, X @ w + b)))))
    c0, w0 = time.process_time(), time.perf_counter()
    prob.solve(solver=cp.CLARABEL)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    wv = np.asarray(w.value)
    sel = np.flatnonzero(np.abs(wv) > 1e-6 * np.abs(wv).max()).tolist()
    return {"objective": float(prob.value), "selected": sel, "cpu": cpu, "wall": wall, "solver_cpu": raw.seconds,
            "solver_iters": raw.iters, "solves": raw.solves}


def run(ps, reps, backends, res):
    raw = _Raw()
    raw.install()
    for p in ps:
        X, y, _, _, _ = make_data("logistic", 0.0, 5.0, 0, p)
        from fsframe_glm import LogisticFormulation

        C = LAMBDA_FRACTION / LogisticFormulation().empty_model_threshold(X, y)
        for backend in backends:
            key = f"{p}|{backend}"
            if key in res["blocks"]:
                continue
            runs = {"split": [], "free": []}
            for _ in range(reps):
                for form in ("split", "free"):
                    runs[form].append(_fit(X, y, C, backend, form, raw))
                    print(key, form, runs[form][-1]["cpu"], runs[form][-1]["objective"], flush=True)
            block = {"C": C, "runs": runs, "load": os.getloadavg(), "commit": _commit()}
            if "cvxpy" not in res["blocks"].get(f"{p}|cvxpy", {}):
                res["blocks"][f"{p}|cvxpy"] = {"cvxpy": _cvxpy(X, y, C, raw)}
            res["blocks"][key] = block
            OUT.write_text(json.dumps(res, indent=1, sort_keys=True))
    return res


def _multinomial_data(m=200, n=1000, K=3, seed=0):
    """``K`` classes from 6 true features (scores ``X[:, :6] B + Gumbel noise``), the rest noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    B = rng.choice([-1.5, 1.5], size=(6, K))
    y = np.argmax(X[:, :6] @ B + rng.gumbel(size=(m, K)), axis=1)
    return X, y


def run_multinomial(res, m, n, K=3):
    """``l1-multinomial`` (the group lasso) on a working set (``True``) against the full problem
    (``False``), Clarabel, interleaved; ``C`` five times the entry threshold."""
    import fsframe
    from fsframe_glm import MultinomialFormulation

    key = f"multinomial|{m}|{n}|{K}"
    if key in res["blocks"]:
        return res
    X, y = _multinomial_data(m, n, K)
    C = LAMBDA_FRACTION / MultinomialFormulation().empty_model_threshold(X, y)
    out = {}
    for ws in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c0, w0 = time.process_time(), time.perf_counter()
            r = fsframe.fit(X, y, method="l1-multinomial", C=C, working_set=ws)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        out[str(ws)] = {"cpu": cpu, "wall": wall, "objective": float(r.objective),
                        "selected": np.asarray(r.selected).tolist(), "working_set": r.certificate.get("working_set"),
                        "rounds": r.certificate.get("rounds"), "gap": r.certificate.get("gap")}
        print(key, ws, cpu, r.objective, flush=True)
    res["blocks"][key] = {"C": C, "runs": out, "load": os.getloadavg(), "commit": _commit()}
    OUT.write_text(json.dumps(res, indent=1, sort_keys=True))
    return res


def _commit() -> str:
    return head_commit(ROOT)


def render(res) -> str:
    lines = ["One `l1-logistic` fit (`working_set=True`, no `n_features`) on the support-recovery instance "
             "(n = 500, rho 0, SNR 5, seed 0, `C` = 5 / the entry threshold), split `w = u - v` against free `w` "
             "with `s_j >= |w_j|`, interleaved in one process; medians over the repetitions. Solver columns: summed "
             "over the fit's solves (restricted problems, the working set's rounds). Objective: relative to the "
             "CVXPY + Clarabel reference (its defaults); support: the same features as the reference.", "",
             "| p | backend | form | CPU s (fit) | wall s | solver CPU s | solver iterations | solves | "
             "CPU s per iteration | working set | objective rel. | same support | load | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fits = {k: v for k, v in res["blocks"].items() if not k.startswith("multinomial|")}
    for key, block in sorted(fits.items(), key=lambda kv: (int(kv[0].split("|")[0]), kv[0])):
        p, backend = key.split("|")
        if backend == "cvxpy":
            continue
        ref = res["blocks"].get(f"{p}|cvxpy", {}).get("cvxpy")
        for form in ("split", "free"):
            rs = block["runs"][form]
            if not rs:
                continue
            med = {k: float(np.median([r[k] for r in rs])) for k in ("cpu", "wall", "solver_cpu", "solver_iters")}
            r0 = rs[0]
            rel = (r0["objective"] - ref["objective"]) / abs(ref["objective"]) if ref else float("nan")
            same = "yes" if ref and r0["selected"] == ref["selected"] else "no"
            per = med["solver_cpu"] / max(med["solver_iters"], 1)
            lines.append(f"| {p} | {backend} | {form} | {med['cpu']:.2f} | {med['wall']:.2f} | {med['solver_cpu']:.2f} | "
                         f"{med['solver_iters']:.0f} | {r0['solves']} | {per:.3f} | {r0['working_set']} | {rel:.1e} | "
                         f"{same} | {block['load'][0]:.1f} | `{block['commit']}` |")
    for key, block in sorted(res["blocks"].items()):
        if key.endswith("|cvxpy"):
            c = block["cvxpy"]
            lines.append(f"| {key.split('|')[0]} | cvxpy+clarabel | free (CVXPY's) | {c['cpu']:.2f} | {c['wall']:.2f} | "
                         f"{c['solver_cpu']:.2f} | {c['solver_iters']} | {c['solves']} | "
                         f"{c['solver_cpu'] / max(c['solver_iters'], 1):.3f} | - | 0 | yes | - | - |")
    multi = {k: v for k, v in res["blocks"].items() if k.startswith("multinomial|")}
    if multi:
        lines += ["", "`l1-multinomial` (group lasso, Clarabel) on a working set against the full problem: `K` classes "
                  "from 6 true features, `C` = 5 / the entry threshold, one fit each, interleaved.", "",
                  "| m | p | K | working set | CPU s | wall s | groups in the final set | rounds | objective rel. "
                  "| same support | load | commit |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for key, block in sorted(multi.items()):
            _, m, n, K = key.split("|")
            full = block["runs"]["False"]
            for ws in ("True", "False"):
                r = block["runs"][ws]
                rel = (r["objective"] - full["objective"]) / abs(full["objective"])
                lines.append(f"| {m} | {n} | {K} | {ws} | {r['cpu']:.2f} | {r['wall']:.2f} | {r['working_set']} | "
                             f"{r['rounds']} | {rel:.1e} | {'yes' if r['selected'] == full['selected'] else 'no'} | "
                             f"{block['load'][0]:.1f} | `{block['commit']}` |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--p", type=int, action="append")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--backend", action="append", choices=("clarabel", "ecos"))
    ap.add_argument("--multinomial", action="store_true", help="the multinomial block (m = 200, p = 1000, K = 3)")
    ap.add_argument("--render", action="store_true")
    args = ap.parse_args(argv)
    res = json.loads(OUT.read_text()) if OUT.exists() else {"meta": {}, "blocks": {}}
    res["meta"] = {"python": platform.python_version(), "machine": platform.machine()}
    if args.multinomial:
        res = run_multinomial(res, 200, 1000)
    elif not args.render:
        res = run(args.p or [1000], args.reps, args.backend or ["clarabel", "ecos"], res)
    write_section(DOC, BEGIN, END, render(res), heading="### Logistic: free w against the split (issue 23)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
