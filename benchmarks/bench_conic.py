"""Conic benchmark (issue 3): the L1-MPM and L0-MPM paths against raw ECOS and against CVXPY.

For dense random data (seeded), m = 200 samples and n in {60, 500, 1000} features, the MPM with
the default covariance ridge and ``delta = 0.9 * delta_max`` (the same number for every contender):

* ``raw``       ECOS on prebuilt matrices — the yardstick. Exactly the SOCP fsframe compiles
                (columns u, v, w, b; ``u - v = w``; cones over ``w``), built in numpy by code that
                shares nothing with fsframe; only ``ecos.solve`` is timed. For L0-MPM the DCA loop
                (000 Alg. 1: weights, stopping rule, max_iter as fsframe's ``dca``) around it.
* ``raw-uv``    the same L1-MPM with the cones stated over ``u - v`` instead of ``w`` (twice the
                dense entries): the measurement behind the formulation's shape.
* ``fsframe``   ``Subproblem`` (build the Pyomo model, compile, solve on ECOS) — the "one solve";
                for L0-MPM, ``Subproblem`` + the ``dca`` loop. Cone form ``substitute`` (affine maps
                in the cone rows) and ``auxiliary`` (cone auxiliaries and their equalities), and
                ``substitute`` with the ridge block first inside each cone (entry order).
* ``fit``       ``fsframe.fit(X, y, method=..., delta=...)`` end to end: it also runs
                ``validate``, whose Lanckriet SOCP computes ``delta_max`` (the memo is cleared
                before every repetition).
* ``cvxpy-ecos``, ``cvxpy-clarabel``  the same model written in CVXPY (``norm1``, ``norm``), timed
                from construction to solution; L0-MPM as a DPP problem whose parameter ``v`` (the
                DCA linearisation) changes between solves, with the same loop as ``raw``.

Every contender's optimum is checked against fsframe's (relative 1e-5 on the objective; the
same number of DCA iterations).

Usage::

    python benchmarks/bench_conic.py [--quick] [--reps N] [--sizes 60,500,1000]

Writes ``benchmarks/results/conic.json`` (``conic-quick.json`` with ``--quick``) and, for full
runs, the tables between the markers in ``docs/benchmarks-conic.md``. Wall-clock seconds; every repetition is stored; tables show
medians; repetitions of the contenders are interleaved so the machine's noise hits all alike.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
M_SAMPLES = 200
SEED = 3000
ALPHA = 5.0
DELTA_FRACTION = 0.9
MAX_ITER = 100  # the l0-mpm method default
TOL = 1e-5
BEGIN, END = "<!-- bench_conic:begin -->", "<!-- bench_conic:end -->"


def make_data(n: int, m: int = M_SAMPLES, seed: int = SEED):
    """Dense Gaussian features; the first 10 are shifted by 0.8 y."""
    rng = np.random.default_rng(seed + n)
    y = np.where(np.arange(m) < m // 2, 1.0, -1.0)
    X = rng.standard_normal((m, n))
    X[:, :10] += 0.8 * y[:, None]
    return X, y


# ---------------------------------------------------------------------------- independent model
def moments(X, y, rho):
    """Class means and the cone factors ``F_k' = [C_k'; sqrt(ridge) I]`` (no fsframe code)."""
    out, ss = [], 0.0
    for label in (1.0, -1.0):
        Xk = X[y == label]
        mu = Xk.mean(0)
        Xc = Xk - mu
        ss += float((Xc ** 2).sum())
        out.append((mu, Xc / np.sqrt(len(Xk))))
    ridge = rho * ss / X.size
    n = X.shape[1]
    return [(mu, sp.vstack([sp.csr_matrix(Ct), np.sqrt(ridge) * sp.identity(n)], format="csr")) for mu, Ct in out]


def raw_socp(X, y, rho, kappa, form="w"):
    """``(G, h, dims, A, b, n_cols)`` of the L1/L0-MPM SOCP. ``form="w"``: columns (u, v, w, b),
    ``u - v - w = 0``, cones over w (fsframe's shape); ``"uv"``: columns (u, v, b), cones over u - v."""
    m, n = X.shape
    (mu1, F1), (mu2, F2) = moments(X, y, rho)
    I = sp.identity(n, format="csr")
    Z = sp.csr_matrix((n, n))
    if form == "w":
        N = 3 * n + 1
        W = sp.hstack([Z, Z, I, sp.csr_matrix((n, 1))], format="csr")  # w as a map of the columns
        A = sp.hstack([I, -I, -I, sp.csr_matrix((n, 1))], format="csc")
        bvec = np.zeros(n)
    else:
        N = 2 * n + 1
        W = sp.hstack([I, -I, sp.csr_matrix((n, 1))], format="csr")
        A, bvec = None, None
    e_b = sp.csr_matrix(([1.0], ([0], [N - 1])), shape=(1, N))
    r1 = sp.csr_matrix(mu1[None, :]) @ W - e_b  # w'mu1 - b
    r2 = e_b - sp.csr_matrix(mu2[None, :]) @ W  # b - w'mu2
    nonneg = sp.hstack([-sp.identity(2 * n), sp.csr_matrix((2 * n, N - 2 * n))], format="csr")
    G = sp.vstack([nonneg, -r1, -r2, -r1, -kappa * (F1 @ W), -r2, -kappa * (F2 @ W)], format="csc")
    h = np.concatenate([np.zeros(2 * n), [-1.0, -1.0], np.zeros(1 + F1.shape[0]), np.zeros(1 + F2.shape[0])])
    dims = {"l": 2 * n + 2, "q": [1 + F1.shape[0], 1 + F2.shape[0]], "e": 0}
    return G, h, dims, A, bvec, N


def raw_cost(n, N, form, lin, lin_w):
    c = np.zeros(N)
    c[: 2 * n] = np.concatenate([lin, lin])
    if form == "w":
        c[2 * n: 3 * n] = lin_w
    else:
        c[:n] += lin_w
        c[n: 2 * n] -= lin_w
    return c


def raw_w(x, n, form):
    return x[2 * n: 3 * n] if form == "w" else x[:n] - x[n: 2 * n]


def phi(w):
    return float(np.sum(-np.expm1(-ALPHA * np.abs(w))))


def dca_loop(solve_w_b, n):
    """000 Alg. 1 as fsframe's ``dca`` runs it: start from the L1 step, linearise ``h`` at the
    iterate, stop on a small step of (w, b) or a small decrease of ``sum phi`` (relative tol)."""
    w, b = solve_w_b(np.zeros(n))
    f = phi(w)
    it = 1
    for _ in range(1, MAX_ITER):
        v = -ALPHA * np.expm1(-ALPHA * np.abs(w)) * np.sign(w)  # grad h (000 eq. 40)
        w2, b2 = solve_w_b(v)
        f2 = phi(w2)
        it += 1
        old, new = np.r_[w, b], np.r_[w2, b2]
        step = np.linalg.norm(new - old) <= TOL * max(1.0, np.linalg.norm(old))
        decrease = f2 >= f - TOL * max(1.0, abs(f))
        w, b, f = w2, b2, f2
        if step or decrease:
            break
    return w, b, f, it


def run_raw(X, y, rho, kappa, method, form="w"):
    import ecos

    n = X.shape[1]
    G, h, dims, A, bvec, N = raw_socp(X, y, rho, kappa, form)
    spent = [0.0, 0.0]

    def solve_w_b(lin_w, lin=ALPHA if method == "l0-mpm" else 1.0):
        c = raw_cost(n, N, form, np.full(n, lin), -lin_w)
        t0, c0 = time.perf_counter(), time.process_time()
        r = ecos.solve(c, G, h, dims, A, bvec, verbose=False) if A is not None else ecos.solve(c, G, h, dims, verbose=False)
        spent[0] += time.perf_counter() - t0
        spent[1] += time.process_time() - c0
        assert r["info"]["exitFlag"] == 0, r["info"]["infostring"]
        return raw_w(r["x"], n, form), r["x"][-1]

    if method == "l1-mpm":
        w, _ = solve_w_b(np.zeros(n))
        return {"seconds": spent[0], "cpu": spent[1], "objective": float(np.abs(w).sum()), "iterations": 1}
    w, b, f, it = dca_loop(solve_w_b, n)
    return {"seconds": spent[0], "cpu": spent[1], "objective": f, "iterations": it}


def run_cvxpy(X, y, rho, kappa, method, solver):
    import cvxpy as cp

    t0 = time.perf_counter()
    n = X.shape[1]
    (mu1, F1), (mu2, F2) = moments(X, y, rho)
    w, b = cp.Variable(n), cp.Variable()
    cons = [mu1 @ w - b >= kappa * cp.norm(F1 @ w), b - mu2 @ w >= kappa * cp.norm(F2 @ w),
            mu1 @ w - b >= 1, b - mu2 @ w >= 1]
    if method == "l1-mpm":
        prob = cp.Problem(cp.Minimize(cp.norm1(w)), cons)
        prob.solve(solver=solver)
        assert prob.status == "optimal", prob.status
        return {"seconds": time.perf_counter() - t0, "objective": float(np.abs(w.value).sum()), "iterations": 1}
    v = cp.Parameter(n)
    prob = cp.Problem(cp.Minimize(ALPHA * cp.norm1(w) - v @ w), cons)

    def solve_w_b(lin_w):
        v.value = lin_w
        prob.solve(solver=solver)
        assert prob.status == "optimal", prob.status
        return w.value.copy(), float(b.value)

    _, _, f, it = dca_loop(solve_w_b, n)
    return {"seconds": time.perf_counter() - t0, "objective": f, "iterations": it}


# ---------------------------------------------------------------------------- fsframe
def run_fsframe(X, y, rho, delta, method, cone_form="substitute", ridge_first=False):
    import fsframe_mpm as mpm
    from fsframe.backends import EcosBackend
    from fsframe.method import resolve
    from fsframe.problem import Subproblem

    orig = mpm.ClassMoments.cone_rows
    if ridge_first:
        def cone_rows(self, k, scale=1.0):
            R = orig(self, k, scale)
            return sp.vstack([R[self.counts[k]:], R[: self.counts[k]]], format="csr")
        mpm.ClassMoments.cone_rows = cone_rows
    try:
        res = resolve(method, delta=delta, rho=rho)
        t0 = time.perf_counter()
        sub = Subproblem(res.formulation, X, y, res.terms, EcosBackend(), cone_form=cone_form)
        try:
            if method == "l1-mpm":
                it = sub.solve(lin=np.ones(X.shape[1]))
                iters, obj, ok = 1, float(np.abs(it.coef).sum()), it.ok
                secs = time.perf_counter() - t0
                ecos_secs = it.result.solve_time
            else:
                out = res.loop.run(sub, res.surrogate)
                secs = time.perf_counter() - t0
                iters, obj, ok = out.n_iter, phi(out.iterate.coef), out.converged
                ecos_secs = sum(r.seconds for r in out.history)
        finally:
            sub.close()
        assert ok
        return {"seconds": secs, "objective": obj, "iterations": iters, "build": sub.build_seconds,
                "compile": sub.compile_seconds, "solve_and_loop": ecos_secs}
    finally:
        mpm.ClassMoments.cone_rows = orig


def run_fit(X, y, rho, delta, method):
    import fsframe
    import fsframe_mpm as mpm

    mpm.bound._CACHE.clear()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method=method, delta=delta, rho=rho, backend="ecos")
    secs = time.perf_counter() - t0
    obj = float(np.abs(r.coef).sum()) if method == "l1-mpm" else phi(r.coef)
    other = secs - r.info["build_seconds"] - r.info["compile_seconds"] - r.info["solve_seconds"]
    return {"seconds": secs, "objective": obj, "iterations": r.n_iter, "validate_and_other": other}


# ---------------------------------------------------------------------------- driver
def contenders(method):
    out = [("raw", lambda d: run_raw(d["X"], d["y"], d["rho"], d["kappa"], method)),
           ("fsframe", lambda d: run_fsframe(d["X"], d["y"], d["rho"], d["delta"], method)),
           ("fsframe-aux", lambda d: run_fsframe(d["X"], d["y"], d["rho"], d["delta"], method, "auxiliary")),
           ("fsframe-ridge-first", lambda d: run_fsframe(d["X"], d["y"], d["rho"], d["delta"], method,
                                                         ridge_first=True)),
           ("fit", lambda d: run_fit(d["X"], d["y"], d["rho"], d["delta"], method)),
           ("cvxpy-ecos", lambda d: run_cvxpy(d["X"], d["y"], d["rho"], d["kappa"], method, "ECOS")),
           ("cvxpy-clarabel", lambda d: run_cvxpy(d["X"], d["y"], d["rho"], d["kappa"], method, "CLARABEL"))]
    if method == "l1-mpm":
        out.insert(1, ("raw-uv", lambda d: run_raw(d["X"], d["y"], d["rho"], d["kappa"], method, form="uv")))
    return out


def bench(sizes, reps):
    import fsframe_mpm as mpm

    results = []
    for n in sizes:
        X, y = make_data(n)
        rho = mpm.DEFAULT_RHO
        bound = mpm.largest_bound(X, y, rho)
        delta = DELTA_FRACTION * bound.delta
        d = {"X": X, "y": y, "rho": rho, "delta": delta, "kappa": mpm.kappa_of(delta)}
        for method in ("l1-mpm", "l0-mpm"):
            runs: dict = {}
            for rep in range(reps):
                for name, fn in contenders(method):
                    gc.collect()
                    c0 = time.process_time()
                    r = fn(d)
                    r.setdefault("cpu", time.process_time() - c0)
                    runs.setdefault(name, []).append(r)
                    print(f"n={n} {method} rep {rep} {name}: {r['seconds']:.3f}s (cpu {r['cpu']:.3f}s) obj {r['objective']:.8g} "
                          f"iters {r['iterations']}", flush=True)
            ref = runs["fsframe"][0]
            for name, rs in runs.items():
                for r in rs:
                    if abs(r["objective"] - ref["objective"]) > 1e-5 * max(1.0, abs(ref["objective"])):
                        raise AssertionError(f"n={n} {method} {name}: objective {r['objective']} != fsframe {ref['objective']}")
                    if r["iterations"] != ref["iterations"]:
                        print(f"  note: {name} took {r['iterations']} iterations, fsframe {ref['iterations']}")
            results.append({"n": n, "m": M_SAMPLES, "method": method, "delta": delta, "delta_max": bound.delta,
                            "rho": rho, "runs": runs,
                            "median": {k: float(np.median([r["seconds"] for r in v])) for k, v in runs.items()},
                            "median_cpu": {k: float(np.median([r["cpu"] for r in v])) for k, v in runs.items()}})
    return results


def markdown(results, meta) -> str:
    lines = [
        "# Conic benchmark (L1-MPM, L0-MPM on ECOS)",
        "",
        f"Generated by `python benchmarks/bench_conic.py` on {meta['date']} ({meta['python']}, ecos "
        f"{meta['ecos']}, clarabel {meta['clarabel']}, cvxpy {meta['cvxpy']}, {meta['cpus']} CPUs shared with "
        f"other jobs (load average {meta['load']}); medians of {meta['reps']}; CPU time of the process is given "
        "too because wall-clock time on the shared machine varied by up to 2x between repetitions). Dense "
        f"Gaussian data, m = {M_SAMPLES}, the first 10 features shifted by 0.8 y; default "
        f"ridge rho; delta = {DELTA_FRACTION} x delta_max; L0-MPM: alpha = {ALPHA}, DCA tol {TOL}, max_iter {MAX_ITER}. "
        "Every contender reached fsframe's optimum (relative 1e-5). Raw data: `benchmarks/results/conic.json`.",
        "",
        "Contenders (see the script's docstring): `raw` = ECOS on prebuilt matrices of the same SOCP "
        "(solve time only, the yardstick); `raw-uv` = the same with the cones over u - v; `fsframe` = "
        "Subproblem build + compile + ECOS (+ the DCA loop); `-aux` = cone_form=\"auxiliary\"; "
        "`-ridge-first` = ridge block first inside each cone; `fit` = fsframe.fit end to end, including "
        "validate's delta_max SOCP; `cvxpy-*` = the model in CVXPY, construction to solution.",
        "",
    ]
    for method in ("l1-mpm", "l0-mpm"):
        rows = [r for r in results if r["method"] == method]
        if not rows:
            continue
        names = list(rows[0]["median"])
        lines += [f"## {method}" + (" (one SOCP)" if method == "l1-mpm" else " (full DCA run)"), ""]
        for key, label in (("median", "wall-clock seconds"), ("median_cpu", "CPU seconds of the process")):
            lines += [f"{label}:", "",
                      "| n | iters | " + " | ".join(names) + " | fsframe / raw | fit / raw | fsframe / cvxpy-ecos | fit / cvxpy-ecos | fit / cvxpy-clarabel |",
                      "|---|---|" + "---|" * (len(names) + 5)]
            for r in rows:
                md = r[key]
                it = r["runs"]["fsframe"][0]["iterations"]
                lines.append(f"| {r['n']} | {it} | " + " | ".join(f"{md[k]:.3f}" for k in names)
                             + f" | {md['fsframe'] / md['raw']:.2f} | {md['fit'] / md['raw']:.2f} | "
                               f"{md['fsframe'] / md['cvxpy-ecos']:.2f} | {md['fit'] / md['cvxpy-ecos']:.2f} | "
                               f"{md['fit'] / md['cvxpy-clarabel']:.2f} |")
            lines.append("")
        lines.append("fsframe breakdown (medians, s): " + "; ".join(
            f"n={r['n']}: build {np.median([x['build'] for x in r['runs']['fsframe']]):.3f}, compile "
            f"{np.median([x['compile'] for x in r['runs']['fsframe']]):.3f}, solve/loop "
            f"{np.median([x['solve_and_loop'] for x in r['runs']['fsframe']]):.3f}, fit's validate+other "
            f"{np.median([x['validate_and_other'] for x in r['runs']['fit']]):.3f}" for r in rows))
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n in {60, 200}, 1 repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", default="60,500,1000")
    args = ap.parse_args(argv)
    sizes = [60, 200] if args.quick else [int(s) for s in args.sizes.split(",")]
    reps = 1 if args.quick else args.reps
    import clarabel
    import cvxpy
    import ecos

    meta = {"date": _dt.date.today().isoformat(), "python": platform.python_version(), "ecos": ecos.__version__,
            "clarabel": clarabel.__version__, "cvxpy": cvxpy.__version__, "cpus": __import__("os").cpu_count(),
            "reps": reps, "sizes": sizes, "argv": sys.argv[1:],
            "load": " / ".join(f"{v:.1f}" for v in __import__("os").getloadavg())}
    results = bench(sizes, reps)
    out = ROOT / "benchmarks" / "results" / ("conic-quick.json" if args.quick else "conic.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "results": results}, indent=1, default=float))
    print(f"wrote {out}")
    if not args.quick:
        doc = ROOT / "docs" / "benchmarks-conic.md"
        table = f"{BEGIN}\n{markdown(results, meta)}{END}"
        old = doc.read_text() if doc.exists() else f"{BEGIN}\n{END}\n"
        head, _, rest = old.partition(BEGIN)
        _, _, tail = rest.partition(END)
        doc.write_text(head + table + tail)
        print(f"wrote the table in {doc}")


if __name__ == "__main__":
    main()
