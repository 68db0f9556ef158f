"""Core benchmark (issue 2): fsframe's solver path against raw HiGHS and against CVXPY.

For dense random data (seeded), m = 200 samples and n in {60, 1000, 5000} features:

* ``raw``        highspy on prebuilt matrices for the L1-SVM LP with the u/v split, exactly the LP
                 fsframe builds (columns u, v, b, xi): numpy -> CSC -> ``passModel`` ("hand-over")
                 and ``run`` ("solve"), then a warm re-solve after ``changeColsCost``. The yardstick.
* ``subproblem`` ``Subproblem(HingeFormulation(C), X, y, {"lin"}, HighsBackend())`` + ``solve(lin=1)``:
                 build (Pyomo model), compile (matrices), hand-over (weights + ``passModel``), the
                 HiGHS run, read-back (solution, certificate); then the same warm re-solve.
* ``fsv``/``em-l0`` ``fsframe.fit(X, y, method=...)`` against the same outer loop written by hand
                 in CVXPY (same weights rule, start, stopping rule, max_iter, zero rule), in the
                 same process, on HiGHS and on Clarabel. Every CVXPY answer is checked against
                 fsframe's (objective, support, iterations) and against its own data (the objective
                 CVXPY reports vs. the objective recomputed in numpy from its w, b).

CVXPY models: ``"split"`` is the LP fsframe builds (u, v >= 0, explicit slacks xi >= 0); ``"natural"``
is how CVXPY is usually written (``norm1``/``abs`` and ``pos`` for the hinge). With cvxpy 1.9.3 and
highspy 1.16 the natural model is solved WRONG on HiGHS ("optimal", w = 0): CVXPY passes the bounds
[1, 1] for the hinge's epigraph variables (NaN in its bound propagation). The benchmark keeps that
row to show the check catches it.

Usage::

    python benchmarks/bench_core.py [--quick] [--reps N] [--sizes 60,1000] [--no-cvxpy]

Writes ``benchmarks/results/core.json`` and the table between the markers in ``docs/benchmarks.md``
(``--quick``, a smoke test, writes only ``$TMPDIR/fsframe-core-quick.json``). Timings are wall-clock seconds; every
repetition is stored; tables show medians. Repetitions of the different contenders are interleaved
so that the machine's noise hits all of them alike.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
M_SAMPLES = 200
SEED = 20260
C = 1.0


# ----------------------------------------------------------------------------------------------- data
def make_data(n: int, m: int = M_SAMPLES, seed: int = SEED):
    """Dense Gaussian features; labels from a sparse ground truth (10 informative features) plus
    noise, so that feature selection has something to find."""
    rng = np.random.default_rng(seed + n)
    X = rng.standard_normal((m, n))
    k = min(10, n)
    beta = np.zeros(n)
    beta[:k] = rng.choice([-1.0, 1.0], k) * rng.uniform(0.5, 1.5, k)
    y = np.where(X @ beta + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def median(xs):
    xs = [x for x in xs if x is not None]
    return float(np.median(xs)) if xs else None


def _clean():
    gc.collect()


# ------------------------------------------------------------------------------------------- raw HiGHS
def _highs():
    import highspy

    from fsframe.backends.highs import _quiet_fd1

    with _quiet_fd1():
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    return h


def raw_highs(X, y, C=C, via="buffers"):
    """The L1-SVM LP (u, v split; columns u, v, b, xi; rows y_i (x_i (u - v) + b) + xi_i >= 1)
    handed to HiGHS from numpy with the least work: the CSC arrays are assembled directly.

    ``via="buffers"`` (the yardstick) hands the arrays over as numpy buffers (``addRows`` +
    ``addCols``); ``via="highslp"`` fills a ``HighsLp`` and calls ``passModel`` (only the hand-over
    is timed: pybind11 copies each array element by element, see ``docs/performance.md``).
    """
    import highspy

    t0 = time.perf_counter()
    m, n = X.shape
    YX = y[:, None] * X
    dense = np.hstack([YX, -YX, y[:, None]])  # (m, 2n+1), every entry non-zero
    k = dense.shape[1]
    data = np.concatenate([dense.T.ravel(), np.ones(m)])
    index = np.concatenate([np.tile(np.arange(m, dtype=np.int32), k), np.arange(m, dtype=np.int32)])
    start = np.concatenate([np.arange(0, m * k + 1, m, dtype=np.int32), m * k + np.arange(1, m + 1, dtype=np.int32)])
    N = k + m
    cost = np.concatenate([np.ones(2 * n), [0.0], np.full(m, C)])
    lower = np.concatenate([np.zeros(2 * n), [-np.inf], np.zeros(m)])
    upper = np.full(N, np.inf)
    h = _highs()
    if via == "highslp":
        lp = highspy.HighsLp()
        lp.num_col_ = N
        lp.num_row_ = m
        lp.col_cost_ = cost
        lp.col_lower_ = lower
        lp.col_upper_ = upper
        lp.row_lower_ = np.ones(m)
        lp.row_upper_ = np.full(m, np.inf)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_ = N
        lp.a_matrix_.num_row_ = m
        lp.a_matrix_.start_ = start
        lp.a_matrix_.index_ = index
        lp.a_matrix_.value_ = data
        h.passModel(lp)
        out = {"handover": time.perf_counter() - t0}
        h.clear()
        return out
    h.addRows(m, np.ones(m), np.full(m, np.inf), 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    h.addCols(N, cost, lower, upper, data.size, start[:-1], index, data)
    t1 = time.perf_counter()
    h.run()
    t2 = time.perf_counter()
    info = h.getInfo()
    x = np.array(h.getSolution().col_value)
    w = x[:n] - x[n:2 * n]
    out = {"handover": t1 - t0, "solve": t2 - t1, "objective": float(info.objective_function_value),
           "iterations": int(info.simplex_iteration_count), "status": h.modelStatusToString(h.getModelStatus())}
    # warm re-solve after a cost change (the second FSV iteration's weights)
    lin = 5.0 * np.exp(-5.0 * np.abs(w))
    t3 = time.perf_counter()
    h.changeColsCost(2 * n, np.arange(2 * n, dtype=np.int32), np.concatenate([lin, lin]))
    h.run()
    t4 = time.perf_counter()
    out.update(resolve=t4 - t3, resolve_objective=float(h.getInfo().objective_function_value))
    h.clear()
    return out


# ------------------------------------------------------------------------------ fsframe, one subproblem
def fsframe_subproblem(X, y, C=C):
    from fsframe.backends.highs import HighsBackend
    from fsframe.problem import Subproblem
    from fsframe_svm import HingeFormulation

    t0 = time.perf_counter()
    sub = Subproblem(HingeFormulation(C), X, y, frozenset({"lin"}), HighsBackend())
    it = sub.solve(lin=1.0)
    total = time.perf_counter() - t0
    tm = sub.last_timings
    out = {"build": sub.build_seconds, "compile": sub.compile_seconds,
           "handover": tm["update"] + tm["open"] + (tm["backend"] - tm["solver"]),
           "solve": tm["solver"], "read": tm["read"], "total": total,
           "objective": float(it.objective), "status": it.status.value,
           "iterations": int(it.result.iterations), "timings": tm}
    lin = 5.0 * np.exp(-5.0 * it.t)
    t1 = time.perf_counter()
    it2 = sub.solve(lin=lin)
    out.update(resolve=time.perf_counter() - t1, resolve_solver=sub.last_timings["solver"],
               resolve_objective=float(it2.objective), resolve_timings=sub.last_timings)
    sub.close()
    return out


# ------------------------------------------------------------------------------------ full runs
def _support(t, zero_tol):
    """fsframe.loops.selection.support_of, restated."""
    cut = max(zero_tol * float(np.max(t, initial=0.0)), 1e-12)
    return t > cut


def fsframe_fit(X, y, method):
    import fsframe

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method=method)
    total = time.perf_counter() - t0
    return {"total": total, "build": r.info["build_seconds"], "compile": r.info["compile_seconds"],
            "loop": r.info["solve_seconds"], "n_iter": r.n_iter, "support": int(r.support.sum()),
            "support_idx": np.flatnonzero(r.support).tolist(), "objective": r.objective,
            "first_objective": r.history[0].objective, "stop": r.info["stop_reason"],
            "iter_seconds": [h.seconds for h in r.history]}


def fit_breakdown(X, y, method):
    """Where one fit's time goes: the same fit as :func:`fsframe_fit` (``Subproblem`` + the method's
    loop, as ``fsframe.fit`` runs them), with every solve's ``Subproblem.last_timings`` summed and
    the garbage collector's pauses timed (``gc.callbacks``)."""
    from fsframe.method import select_backend
    from fsframe.problem import Subproblem

    res = _resolved(method)
    pauses, start = [], {}

    def on_gc(phase, info):
        if phase == "start":
            start["t"] = time.perf_counter()
        else:
            pauses.append(time.perf_counter() - start["t"])

    gc.callbacks.append(on_gc)
    try:
        t0 = time.perf_counter()
        sub = Subproblem(res.formulation, X, y, res.terms, select_backend("auto", res.problem_class))
        t1 = time.perf_counter()
        rows = []
        solve = sub.solve

        def timed_solve(**weights):
            it = solve(**weights)
            tm = dict(sub.last_timings)
            inner = it.result.raw.get("dual") if isinstance(it.result.raw, dict) else None
            tm["highs_run"] = inner.solve_time if inner is not None else tm["solver"]
            rows.append(tm)
            return it

        sub.solve = timed_solve
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = res.loop.run(sub, res.surrogate)
        t2 = time.perf_counter()
        sub.close()
    finally:
        gc.callbacks.remove(on_gc)
    tot = {k: float(sum(r[k] for r in rows)) for k in ("update", "open", "backend", "solver", "highs_run", "read")}
    return {"total": t2 - t0, "build": sub.build_seconds, "compile": sub.compile_seconds,
            "subproblem_init": t1 - t0, "loop": t2 - t1, "n_solves": len(rows), "n_iter": out.n_iter,
            "weights_update": tot["update"], "handover": tot["open"],
            "highs_run": tot["highs_run"],
            "backend_other": tot["backend"] - tot["highs_run"],  # cost change/Hessian, dual QP build, certificate
            "read_back": tot["read"],
            "loop_other": (t2 - t1) - tot["update"] - tot["open"] - tot["backend"] - tot["read"],
            "gc": float(sum(pauses)), "per_solve": rows}


def _resolved(method):
    import fsframe

    return fsframe.resolve(method)


def _loop_config(method):
    import fsframe

    res = fsframe.resolve(method)
    return res.loop, res.surrogate, res.formulation


class OverBudget(RuntimeError):
    """A contender's run took longer than ``--budget`` seconds."""


def _cvx_solve(prob, solver, solve_times, deadline):
    """Solve a CVXPY problem on ``solver`` within the run's deadline (``time.perf_counter()``
    value; passed to the solver as its time limit), record the wall time, raise unless optimal."""
    left = deadline - time.perf_counter()
    if left <= 0:
        raise OverBudget(f"over budget after {len(solve_times)} subproblems")
    ts = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CVXPY's bound propagation warns (see the module docstring)
        prob.solve(solver=solver, time_limit=left)
    solve_times.append(time.perf_counter() - ts)
    if prob.status not in ("optimal", "optimal_inaccurate"):
        if time.perf_counter() >= deadline:
            raise OverBudget(f"over budget in subproblem {len(solve_times)} ({prob.status})")
        raise RuntimeError(f"cvxpy {solver}: {prob.status}")


def cvxpy_fsv(X, y, solver, form="split", budget=float("inf")):
    """fsframe's ``reweighted-l1`` loop with the ``exp`` surrogate (method ``fsv``), by hand in CVXPY.

    Mirrors ``ReweightedL1.steps``: weights ``lin`` start at 1 (``init='l1'``) or ``phi'(0)``
    (``init='zero'``), then ``phi'(t^k)``; stop when the step ``||(w,b)^{k+1} - (w,b)^k||`` is below
    ``tol * max(1, ||(w,b)^k||)`` or the (raw) objective ``C sum(xi) + sum phi(|w|)`` decreases by less
    than ``tol * max(1, |f|)``; at most ``max_iter`` subproblems. The weights are a CVXPY
    ``Parameter`` (DPP: compiled once, re-solved with new data).
    """
    import cvxpy as cp

    loop, sur, form_ = _loop_config("fsv")
    Cf, tol, zero_tol = form_.C, loop.tol, loop.zero_tol
    m, n = X.shape
    t0 = time.perf_counter()
    deadline = t0 + budget
    lam = cp.Parameter(n, nonneg=True)
    b = cp.Variable()
    if form == "split":
        u = cp.Variable(n, nonneg=True)
        v = cp.Variable(n, nonneg=True)
        xi = cp.Variable(m, nonneg=True)
        prob = cp.Problem(cp.Minimize(lam @ (u + v) + Cf * cp.sum(xi)),
                          [cp.multiply(y, X @ (u - v) + b) >= 1 - xi])
        get_w = lambda: u.value - v.value  # noqa: E731
        get_loss = lambda: Cf * float(np.sum(xi.value))  # noqa: E731
    else:
        w = cp.Variable(n)
        hinge = cp.pos(1 - cp.multiply(y, X @ w + b))
        prob = cp.Problem(cp.Minimize(lam @ cp.abs(w) + Cf * cp.sum(hinge)))
        get_w = lambda: w.value  # noqa: E731
        get_loss = lambda: Cf * float(np.sum(hinge.value))  # noqa: E731
    init = getattr(loop, "init", "l1")
    lam.value = sur.derivative(np.zeros(n)) if init == "zero" else np.ones(n)
    solve_times, checks = [], []

    def solve():
        _cvx_solve(prob, solver, solve_times, deadline)
        wv, bv = get_w(), float(b.value)
        true = float(lam.value @ np.abs(wv) + Cf * np.sum(np.maximum(0.0, 1 - y * (X @ wv + bv))))
        checks.append((float(prob.value), true))
        t = np.abs(wv)
        return (np.concatenate([wv, [bv]]), t) + _objectives(get_loss(), t, sur, zero_tol)

    p, t, f, rep = solve()
    history = [rep]
    k = 1
    while k < loop.max_iter:
        lam.value = sur.derivative(t)
        p_new, t_new, f_new, rep = solve()
        history.append(rep)
        k += 1
        small_step = np.linalg.norm(p_new - p) <= tol * max(1.0, float(np.linalg.norm(p)))
        small_dec = f_new >= f - tol * max(1.0, abs(f))
        p, t, f = p_new, t_new, f_new
        if small_step or small_dec:
            break
    total = time.perf_counter() - t0
    return _cvx_summary(total, solve_times, history, t, zero_tol, checks, history[-1])


def cvxpy_em(X, y, solver, budget=float("inf")):
    """fsframe's ``em`` loop with the ``lp`` surrogate at p = 0 (method ``em-l0``), by hand in CVXPY.

    Mirrors ``EM.steps``: first ``q = 1`` (the L2 SVM), then ``q_j = 1 / t_j^2`` for
    ``t_j > max(zero_tol * max(t), 1e-12)`` and ``w_j = 0`` for the others (fsframe fixes those
    columns at zero); stop when the step ``||(w,b)^{k+1} - (w,b)^k||`` is below
    ``tol * max(1, ||(w,b)^k||)``; at most ``max_iter`` subproblems. The same QP as fsframe's
    (``sum_j q_j w_j^2 + C sum(xi)``, explicit slacks), written with parameters ``sqrt(q)`` and a 0/1
    mask (DPP: compiled once) and left to CVXPY's own QP path.
    """
    import cvxpy as cp

    loop, sur, form_ = _loop_config("em-l0")
    Cf, tol, zero_tol = form_.C, loop.tol, loop.zero_tol
    m, n = X.shape
    t0 = time.perf_counter()
    deadline = t0 + budget
    sq = cp.Parameter(n, nonneg=True)
    dead = cp.Parameter(n, nonneg=True)
    w = cp.Variable(n)
    b = cp.Variable()
    xi = cp.Variable(m, nonneg=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(cp.multiply(sq, w)) + Cf * cp.sum(xi)),
                      [cp.multiply(y, X @ w + b) >= 1 - xi, cp.multiply(dead, w) == 0])
    sq.value = np.ones(n)
    dead.value = np.zeros(n)
    solve_times, checks = [], []

    def solve():
        _cvx_solve(prob, solver, solve_times, deadline)
        wv, bv = w.value.copy(), float(b.value)
        wv[dead.value > 0] = 0.0
        true = float(np.sum((sq.value * wv) ** 2) + Cf * np.sum(np.maximum(0.0, 1 - y * (X @ wv + bv))))
        checks.append((float(prob.value), true))
        t = np.abs(wv)
        return (np.concatenate([wv, [bv]]), t) + _objectives(Cf * float(np.sum(xi.value)), t, sur, zero_tol)

    p, t, f, rep = solve()
    history = [rep]
    k = 1
    while k < loop.max_iter:
        cut = max(zero_tol * float(np.max(t, initial=0.0)), 1e-12)
        live = t > cut
        q = np.zeros(n)
        q[live] = sur.quad_weights(t[live])
        sq.value = np.sqrt(q)
        dead.value = (~live).astype(float)
        p_new, t_new, f_new, rep = solve()
        history.append(rep)
        k += 1
        small = np.linalg.norm(p_new - p) <= tol * max(1.0, float(np.linalg.norm(p)))
        p, t, f = p_new, t_new, f_new
        if small:
            break
    total = time.perf_counter() - t0
    return _cvx_summary(total, solve_times, history, t, zero_tol, checks, history[-1])


def _objectives(loss, t, sur, zero_tol):
    """(raw, reported) ``loss + sum phi(t)``, as fsframe's ``OuterLoop.surrogate_objective``: the
    raw value drives the stopping rule; the reported one counts groups outside the support as 0."""
    return (loss + float(np.sum(sur.phi(t))),
            loss + float(np.sum(sur.phi(np.where(_support(t, zero_tol), t, 0.0)))))


def _cvx_summary(total, solve_times, history, t, zero_tol, checks, f):
    sup = _support(t, zero_tol)
    worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in checks)
    return {"total": total, "first_solve": solve_times[0], "solves": solve_times, "n_iter": len(history),
            "support": int(sup.sum()), "support_idx": np.flatnonzero(sup).tolist(), "objective": f,
            "first_objective": history[0], "first_value": checks[0][0], "self_check": worst}


def first_optimum(X, y, method):
    """fsframe's optimal value of the loop's first (convex) subproblem, at the loop's own start
    weights: the number every contender's first solve must reproduce."""
    from fsframe.backends.highs import HighsBackend
    from fsframe.problem import Subproblem

    loop, sur, form = _loop_config(method)
    sub = Subproblem(form, X, y, loop.terms(sur), HighsBackend())
    n = sub.n_groups
    if method == "fsv":
        w0 = sur.derivative(np.zeros(n)) if getattr(loop, "init", "l1") == "zero" else np.ones(n)
        it = sub.solve(lin=w0)
    else:
        it = sub.solve(quad=np.ones(n))
    sub.close()
    return float(it.objective)


def _agreement(ref, other, first_opt):
    """How far a CVXPY run is from fsframe's: the first subproblem's optimal value (convex: must
    agree to solver accuracy), the final objective and support (a non-convex loop may legitimately
    end elsewhere after a tie), iteration counts."""
    def rel(a, b):
        return None if a is None or b is None else abs(a - b) / max(1.0, abs(b))
    a, b = set(ref["support_idx"]), set(other["support_idx"])
    out = {"first_value_rel": rel(other["first_value"], first_opt),
           "first_objective_rel": rel(other["first_objective"], ref["first_objective"]),
           "objective_rel": rel(other["objective"], ref["objective"]),
           "support_symdiff": len(a ^ b), "iters": (ref["n_iter"], other["n_iter"])}
    # the first subproblem is convex: its optimum must agree to solver accuracy
    out["agrees"] = bool(out["first_value_rel"] <= AGREE_RTOL)
    return out


AGREE_RTOL = 1e-4


# ----------------------------------------------------------------------------------- driver
def machine_info():
    import importlib.metadata as md

    def ver(p):
        try:
            return md.version(p)
        except md.PackageNotFoundError:
            return None

    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "", None
    return {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "cores": os.cpu_count(), "cpu": cpu, "platform": platform.platform(),
            "python": platform.python_version(), "loadavg_start": list(os.getloadavg()),
            "fsframe_commit": commit, "fsframe_dirty": dirty,
            "packages": {p: ver(p) for p in ("fsframe", "numpy", "scipy", "pyomo", "highspy", "cvxpy", "clarabel",
                                             "ecos", "osqp")}}


CVX_VARIANTS = {
    "fsv": [("cvxpy-highs", "HIGHS", "split"), ("cvxpy-clarabel", "CLARABEL", "natural"),
            ("cvxpy-highs-natural", "HIGHS", "natural")],
    "em-l0": [("cvxpy-highs", "HIGHS", None), ("cvxpy-clarabel", "CLARABEL", None)],
}


def run_size(n, reps, full_runs, cvx, log, full_reps=None, budget=float("inf"), skip=None):
    X, y = make_data(n)
    out = {"n": n, "m": X.shape[0], "raw": [], "subproblem": []}
    # warm-up (imports, first-call costs), not recorded
    raw_highs(X[:, : min(n, 60)], y)
    fsframe_subproblem(X[:, : min(n, 60)], y)
    for r in range(reps):
        _clean()
        out["raw"].append(raw_highs(X, y))
        out["raw"][-1]["handover_highslp"] = raw_highs(X, y, via="highslp")["handover"]
        _clean()
        out["subproblem"].append(fsframe_subproblem(X, y))
        log(f"n={n} rep {r}: raw {out['raw'][-1]['handover']:.3f}+{out['raw'][-1]['solve']:.3f}  "
            f"fsframe {out['subproblem'][-1]['total']:.3f}")
    full_reps = reps if full_reps is None else full_reps
    skip = {} if skip is None else skip  # (method, contender) -> why it is not run any more
    for method in full_runs:
        runs = {"fsframe": []}
        variants = CVX_VARIANTS[method] if cvx else []
        for key, _, _ in variants:
            runs[key] = []
        for r in range(full_reps):
            _clean()
            runs["fsframe"].append(fsframe_fit(X, y, method))
            _clean()
            runs.setdefault("breakdown", []).append(fit_breakdown(X, y, method))
            log(f"n={n} {method} rep {r}: fsframe {runs['fsframe'][-1]['total']:.3f}s "
                f"({runs['fsframe'][-1]['n_iter']} it)")
            for key, solver, form in variants:
                if (method, key) in skip:  # over budget before: one record, no run
                    if not runs[key]:
                        runs[key].append({"error": skip[(method, key)]})
                    continue
                _clean()
                try:
                    res = (cvxpy_fsv(X, y, solver, form, budget) if method == "fsv"
                           else cvxpy_em(X, y, solver, budget))
                except OverBudget as exc:
                    res = {"error": f"over the {budget:.0f} s budget ({exc})"}
                    skip[(method, key)] = f"skipped: over the {budget:.0f} s budget at n={n}"
                except Exception as exc:  # a failed solver is a result too
                    res = {"error": f"{type(exc).__name__}: {exc}"}
                runs[key].append(res)
                log(f"n={n} {method} rep {r}: {key} {res.get('total', float('nan')):.3f}s "
                    f"({res.get('n_iter')} it) {res.get('error', '')}")
        ref = runs["fsframe"][0]
        runs["first_optimum"] = first = first_optimum(X, y, method)
        runs["agreement"] = {}
        for key, _, _ in variants:
            ok = [r for r in runs[key] if "error" not in r]
            runs["agreement"][key] = _agreement(ref, ok[0], first) if ok else None
        out[method] = runs
    return out


# ------------------------------------------------------------------------------------ reporting
def _fmt(x, nd=3):
    if x is None:
        return "–"
    if isinstance(x, str):
        return x
    return f"{x:.{nd}f}" if abs(x) < 100 else f"{x:.1f}"


def _med(rows, key):
    return median([r.get(key) for r in rows if "error" not in r])


def markdown(results) -> str:
    lines = []
    lines.append("### One subproblem (L1-SVM LP, `lin = 1`), seconds, median of "
                 f"{results['config']['reps']} repetitions")
    lines.append("")
    lines.append("| n | raw hand-over (via HighsLp) | raw solve | raw total | fsframe build | compile | hand-over "
                 "| solve | read-back | fsframe total | ratio | warm re-solve raw / fsframe |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for s in results["sizes"]:
        raw, sub = s["raw"], s["subproblem"]
        rt = median([r["handover"] + r["solve"] for r in raw])
        ft = _med(sub, "total")
        ratios = [b["total"] / (a["handover"] + a["solve"]) for a, b in zip(raw, sub)]
        lines.append(
            f"| {s['n']} | {_fmt(_med(raw, 'handover'))} ({_fmt(_med(raw, 'handover_highslp'))}) "
            f"| {_fmt(_med(raw, 'solve'))} | {_fmt(rt)} "
            f"| {_fmt(_med(sub, 'build'))} | {_fmt(_med(sub, 'compile'))} | {_fmt(_med(sub, 'handover'))} "
            f"| {_fmt(_med(sub, 'solve'))} | {_fmt(_med(sub, 'read'))} | {_fmt(ft)} | **{median(ratios):.2f}×** "
            f"| {_fmt(_med(raw, 'resolve'))} / {_fmt(_med(sub, 'resolve'))} |")
    lines.append("")
    lines.append("Raw hand-over: numpy -> CSC arrays -> `addRows`/`addCols` on numpy buffers (in parentheses: the "
                 "same arrays through a `HighsLp` and `passModel`, which pybind11 copies element by element). "
                 "Ratio: fsframe total / raw total, per repetition (paired), median. Objectives: "
                 + "; ".join(f"n={s['n']}: raw {s['raw'][0]['objective']:.6f}, fsframe "
                             f"{s['subproblem'][0]['objective']:.6f}" for s in results["sizes"]) + ".")
    for method in ("fsv", "em-l0"):
        rows = [s for s in results["sizes"] if method in s]
        if not rows:
            continue
        lines.append("")
        full_reps = 1 if results["config"]["quick"] else results["config"]["reps"]
        lines.append(f"### Full `{method}` run, seconds (median of {full_reps}), same process")
        lines.append("")
        lines.append("| n | contender | total | first solve | iterations | support | final objective "
                     "| 1st subproblem optimum vs fsframe | final objective vs fsframe / support diff "
                     "| self-check | fsframe faster by |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for s in rows:
            runs = s[method]
            fs = runs["fsframe"]
            fst = _med(fs, "total")
            r0 = fs[0]
            lines.append(f"| {s['n']} | fsframe (HiGHS) | {_fmt(fst)} | build {_fmt(_med(fs, 'build'))} + compile "
                         f"{_fmt(_med(fs, 'compile'))} | {r0['n_iter']} | {r0['support']} | {r0['objective']:.6f} "
                         f"| {runs['first_optimum']:.6f} | – | – | – |")
            for key, solver, form in CVX_VARIANTS[method]:
                if key not in runs:
                    continue
                label = f"CVXPY + {solver}" + (f" ({form})" if form else "")
                ok = [r for r in runs[key] if "error" not in r]
                failed = [r["error"] for r in runs[key] if "error" in r]
                if not ok:
                    lines.append(f"| {s['n']} | {label} | {failed[0][:90]} | | | | | | | | |")
                    continue
                ag, r0, t = runs["agreement"][key], ok[0], _med(ok, "total")
                note = f" ({len(ok)} of {len(runs[key])} runs; {failed[0][:60]})" if failed else ""
                verdict = (f"{t / fst:.1f}×" if ag["agrees"] else
                           "– (**wrong answer**: CVXPY reported \"optimal\")")
                lines.append(
                    f"| {s['n']} | {label} | {_fmt(t)}{note} | {_fmt(_med(ok, 'first_solve'))} | {r0['n_iter']} "
                    f"| {r0['support']} | {r0['objective']:.6f} | {ag['first_value_rel']:.1e} "
                    f"| {ag['objective_rel']:.1e} / {ag['support_symdiff']} | {r0['self_check']:.1e} | {verdict} |")
    rows = [(s, m) for m in ("fsv", "em-l0") for s in results["sizes"] if m in s and s[m].get("breakdown")]
    if rows:
        lines.append("")
        lines.append("### Where one fsframe fit's time goes, seconds (median)")
        lines.append("")
        lines.append("| method | n | solves | build | compile | hand-over | weights update (all) | HiGHS run (all) "
                     "| other backend work (all) | read-back (all) | GC pauses (inside the above) | total |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for s, m in rows:
            b = s[m]["breakdown"]
            lines.append(f"| {m} | {s['n']} | {b[0]['n_solves']} | {_fmt(_med(b, 'build'))} | {_fmt(_med(b, 'compile'))} "
                         f"| {_fmt(_med(b, 'handover'))} | {_fmt(_med(b, 'weights_update'))} | {_fmt(_med(b, 'highs_run'))} "
                         f"| {_fmt(_med(b, 'backend_other'))} | {_fmt(_med(b, 'read_back'))} | {_fmt(_med(b, 'gc'))} "
                         f"| {_fmt(_med(b, 'total'))} |")
        lines.append("")
        lines.append("Other backend work: pushing the new costs (LP) or building and passing the dual QP (EM), "
                     "reading the solution back from HiGHS and fsframe's optimality certificate.")
    lines.append("")
    lines.append("Relative differences are |a - b| / max(1, |b|). Self-check: CVXPY's reported objective vs. the "
                 "objective recomputed in numpy from its own w, b (worst over the run). The first subproblem is "
                 "convex, so its optimum must agree; final objectives and supports of these non-convex loops "
                 "may differ after ties.")
    return "\n".join(lines) + "\n"


BEGIN, END = "<!-- bench_core:begin -->", "<!-- bench_core:end -->"


def write_markdown(path: Path, table: str, results) -> None:
    mi = results["machine"]
    head = (f"Generated by `python benchmarks/bench_core.py` on {mi['date']} "
            f"({mi['cores']} cores, {mi['cpu']}, Python {mi['python']}; fsframe {mi['fsframe_commit']}"
            f"{' + local changes' if mi['fsframe_dirty'] else ''}; "
            + ", ".join(f"{k} {v}" for k, v in mi["packages"].items() if v and k != "fsframe")
            + f"; load average {mi['loadavg_start'][0]:.1f} at start). Raw data: `benchmarks/results/core.json`.\n\n")
    block = f"{BEGIN}\n{head}{table}{END}"
    text = path.read_text() if path.exists() else f"# Benchmarks\n\n{BEGIN}\n{END}\n"
    if BEGIN in text and END in text:
        pre, rest = text.split(BEGIN, 1)
        post = rest.split(END, 1)[1]
        text = pre + block + post
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="n in {60, 1000}; full runs at n=60 only, once (a smoke test, < 1 min)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--sizes", type=str, default=None, help="comma-separated n (default 60,1000,5000)")
    ap.add_argument("--no-cvxpy", action="store_true", help="skip the CVXPY loops")
    ap.add_argument("--full-runs-max-n", type=int, default=None, help="skip full runs above this n")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds one CVXPY run may take (default 600, 20 with --quick); a contender over "
                         "budget is recorded as such and not run again at larger n")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--markdown", type=Path, default=None,
                    help="update the table in this file (default docs/benchmarks.md for full runs)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([60, 1000] if args.quick else [60, 1000, 5000])
    max_full = args.full_runs_max_n if args.full_runs_max_n is not None else (60 if args.quick else max(sizes))
    out_path = args.out or (Path(tempfile.gettempdir()) / "fsframe-core-quick.json" if args.quick
                            else ROOT / "benchmarks" / "results" / "core.json")
    md_path = args.markdown or (None if args.quick else ROOT / "docs" / "benchmarks.md")

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = {"machine": machine_info(),
               "config": {"m": M_SAMPLES, "seed": SEED, "C": C, "reps": args.reps, "quick": args.quick,
                          "sizes": sizes, "full_runs_max_n": max_full, "cvxpy": not args.no_cvxpy},
               "sizes": []}
    budget = args.budget if args.budget is not None else (20.0 if args.quick else 600.0)
    results["config"]["budget_seconds"] = budget
    skip: dict = {}
    t0 = time.perf_counter()
    for n in sizes:
        full = ["fsv", "em-l0"] if n <= max_full else []
        results["sizes"].append(run_size(n, args.reps, full, not args.no_cvxpy, log,
                                         full_reps=1 if args.quick else args.reps, budget=budget, skip=skip))
    results["machine"]["loadavg_end"] = list(os.getloadavg())
    results["machine"]["benchmark_seconds"] = time.perf_counter() - t0
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(results, indent=1, default=float))
    table = markdown(results)
    print(table)
    if md_path is not None:
        write_markdown(md_path, table, results)
    log(f"wrote {out_path}" + (f" and {md_path}" if md_path else "") + f" in {results['machine']['benchmark_seconds']:.0f} s")


if __name__ == "__main__":
    main()
