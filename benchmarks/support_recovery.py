"""Support recovery of fsframe's least-squares and logistic methods against abess, skglm and
scikit-learn (issue 23), in the L0Learn and abess papers' setting.

Design (per cell): a Gaussian design with Toeplitz correlation ``corr(x_i, x_j) = rho^|i-j|``,
``rho`` in {0, 0.5}, ``n = 500`` training samples, ``p`` in {1 000, 5 000} features, ``k = 10``
true features at seeded random positions with coefficients ``+-1``, scaled so that
``Var(x beta) = SNR`` (SNR in {1, 5, 10}); a test set of 1 000 samples from the same model.

* regression: ``y = x beta + N(0, 1)``, so SNR is the usual ``Var(x beta) / Var(noise)``; the
  prediction error is the test MSE minus the noise variance 1;
* logistic: ``y ~ Bernoulli(sigmoid(x beta))``, i.e. ``y = sign(x beta + e)`` with ``e`` standard
  logistic noise (variance ``pi^2 / 3``). "SNR" is the variance of the linear predictor,
  ``Var(x beta)``; as a ratio to the latent noise it is ``3 SNR / pi^2`` (0.30, 1.5, 3.0). abess's
  own generator (``abess.datasets.make_glm_data``, family binomial) has no SNR for this model (it
  draws ``|beta_j|`` from ``U[2m, 10m]``, ``m = 5 sqrt(2 log p / n)``); we keep one SNR scale for
  both tasks. The prediction error is the test error rate.

Selectors (every one told ``k`` where it can be):

* fsframe ``l1-ls``, ``l0-ls`` (exp surrogate, DCA), ``em-ls``, ``log-ls`` and ``l1-logistic``,
  ``l0-logistic``, ``em-logistic``, ``log-logistic`` with ``n_features=k``; ``C`` five times the
  ``C`` where the first feature enters (``LAMBDA_FRACTION``); DCA capped at ``max_iter=30``;
  working sets on for the l1 / l0 / log methods.
  With ``n_features`` a loop stops at its first iterate with at most ``k`` features and returns
  the L1 model (its first weights) re-solved on them, so ``l0-ls`` and ``log-ls`` differ from
  ``l1-ls`` only where their selections do (docs/performance.md). ``l0-ls, own support`` and
  ``log-ls, own support`` are the same methods not told ``k``: the loop runs to its own stopping
  rule (at most 30 solves) and the model is its last iterate — the surrogates' own answers;
* ``abess``: ``LinearRegression`` / ``LogisticRegression`` with ``support_size=[k]``;
* ``skglm-mcp``: MCP (``gamma = 3``) on the quadratic / logistic datafit, ``alpha`` bisected (log
  scale, ``benchmarks/competitors.py``'s rule) until ``k`` non-zeros, else the ``k`` largest of the
  smallest larger count. skglm's L0.5 penalty was tried the same way and left out: on a trial
  regression cell every fit of the bisection came back with supports disjoint from the truth
  (docs/performance.md has the logistic trial);
* scikit-learn ``LassoCV`` / ``LogisticRegressionCV(penalty="l1")`` (5-fold): their own choice of
  sparsity, not ``k`` (what a user gets without knowing ``k``).

L0Learn's Python port (``l0learn``) is not compared: ``pip`` finds no distribution of it for this
Python (``from versions: none``).

    nice python benchmarks/support_recovery.py [--reps 3] [--task logistic] [--p 1000] [--only abess] [--render]

The defaults run the full size (both tasks, both ``p``, 3 seeds). Resumable: each finished cell
is written to ``benchmarks/results/support_recovery.json`` at once and skipped on a rerun (several
runners with different ``--only`` may share the file). Renders the section between
``<!-- support_recovery:begin -->`` and ``<!-- support_recovery:end -->`` of
``docs/performance.md`` and the picture ``docs/img/support_recovery.png``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_section  # noqa: E402  (one writer of the docs sections)
from competitors import _top, bisect_to_r  # noqa: E402  (one bisection rule for every competitor)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "support_recovery.json"
DOC = ROOT / "docs" / "performance.md"
IMG = ROOT / "docs" / "img" / "support_recovery.png"
BEGIN, END = "<!-- support_recovery:begin -->", "<!-- support_recovery:end -->"

N, K, N_TEST = 500, 10, 1000
PS = (1000, 5000)
RHOS = (0.0, 0.5)
SNRS = (1.0, 5.0, 10.0)
TASKS = ("regression", "logistic")


def make_data(task: str, rho: float, snr: float, seed: int, p: int = PS[0], n: int = N):
    """Training ``(X, y)``, test ``(Xt, yt)`` and the true support of one cell. The Toeplitz
    correlation is an AR(1) process along the features: ``x_j = rho x_{j-1} + sqrt(1 - rho^2) e_j``
    (no ``p x p`` Cholesky factor)."""
    rng = np.random.default_rng(seed)
    E = rng.normal(size=(n + N_TEST, p))
    X = np.empty_like(E)
    X[:, 0] = E[:, 0]
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + np.sqrt(1.0 - rho * rho) * E[:, j]
    support = np.sort(rng.choice(p, K, replace=False))
    beta = np.zeros(p)
    beta[support] = rng.choice([-1.0, 1.0], K)
    idx = support
    cov = rho ** np.abs(idx[:, None] - idx[None, :])
    beta *= np.sqrt(snr / float(beta[idx] @ cov @ beta[idx]))
    eta = X @ beta
    if task == "regression":
        y = eta + rng.normal(size=eta.size)
    else:
        y = np.where(rng.random(eta.size) < 1.0 / (1.0 + np.exp(-eta)), 1, -1)
    return X[:n], y[:n], X[n:], y[n:], support


LAMBDA_FRACTION = 5.0
"""fsframe's ``C``: ``LAMBDA_FRACTION`` times the ``C`` at which the first feature enters the L1
model (the formulation's ``empty_model_threshold``), i.e. an L1 weight a fifth of ``lambda_max``."""


def _fsframe(method, told=True, **params):
    """fsframe's ``method`` at the benchmark's ``C``; ``told``: with ``n_features = k`` (else the
    loop runs to its own stopping rule and its own support)."""
    want = {"n_features": K} if told else {}

    def select(X, y):
        import fsframe
        from fsframe_glm import LeastSquaresFormulation, LogisticFormulation

        form = LeastSquaresFormulation() if method.endswith("-ls") else LogisticFormulation()
        C = LAMBDA_FRACTION / form.empty_model_threshold(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fsframe.fit(X, y, method=method, C=C, **want, **params)
        return np.asarray(r.selected), lambda Z: r.predict(Z) if r.classes == () else r.decision_function(Z)
    return select


def _linear(coef, intercept):
    coef = np.ravel(coef)
    return lambda Z: Z @ coef + float(np.ravel([intercept])[0])


def _abess(task):
    def select(X, y):
        import abess

        if task == "regression":
            m = abess.LinearRegression(support_size=[K]).fit(X, y)
        else:
            m = abess.LogisticRegression(support_size=[K]).fit(X, (y > 0).astype(float))
        return _top(m.coef_, K), _linear(m.coef_, m.intercept_)
    return select


def _skglm(task):
    def select(X, y):
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import Logistic, Quadratic
        from skglm.penalties import MCPenalty
        from skglm.solvers import AndersonCD

        yy = y.astype(float)
        alpha_max = float(np.max(np.abs(X.T @ (yy - (yy.mean() if task == "regression" else 0.0)))) / len(yy))
        last = {}

        def fit(t):
            pen = MCPenalty(alpha_max / t, 3.0)
            est = GeneralizedLinearEstimator(Quadratic() if task == "regression" else Logistic(), pen,
                                             AndersonCD(fit_intercept=True))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, yy)
            last[_key(est.coef_)] = est
            return est.coef_

        sel, _ = bisect_to_r(fit, 1.0, 10.0, K)
        est = next((e for e in last.values() if set(np.flatnonzero(np.abs(np.ravel(e.coef_)) > 1e-12)) >= set(sel)),
                   None)
        return sel, (_linear(est.coef_, est.intercept_) if est is not None else None)
    return select


def _key(coef):
    return tuple(np.flatnonzero(np.abs(np.ravel(coef)) > 1e-12))


def _sk_cv(task):
    def select(X, y):
        from sklearn.linear_model import LassoCV, LogisticRegressionCV

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if task == "regression":
                m = LassoCV(cv=5, random_state=0).fit(X, y)
            else:
                m = LogisticRegressionCV(Cs=10, cv=5, penalty="l1", solver="liblinear", random_state=0).fit(X, y)
        return np.flatnonzero(np.abs(np.ravel(m.coef_)) > 1e-12), _linear(m.coef_, m.intercept_)
    return select


SELECTORS = {
    "regression": {
        "fsframe l1-ls": _fsframe("l1-ls", working_set=True),
        "fsframe l0-ls": _fsframe("l0-ls", max_iter=30, working_set=True),
        "fsframe em-ls": _fsframe("em-ls"), "fsframe log-ls": _fsframe("log-ls", working_set=True),
        "fsframe l0-ls, own support": _fsframe("l0-ls", told=False, max_iter=30),
        "fsframe log-ls, own support": _fsframe("log-ls", told=False, max_iter=30),
        "abess": _abess("regression"), "skglm-mcp": _skglm("regression"),
        "sklearn LassoCV": _sk_cv("regression"),
    },
    "logistic": {
        "fsframe l1-logistic": _fsframe("l1-logistic", working_set=True),
        "fsframe l0-logistic": _fsframe("l0-logistic", max_iter=30, working_set=True),
        "fsframe em-logistic": _fsframe("em-logistic"), "fsframe log-logistic": _fsframe("log-logistic", working_set=True),
        "abess": _abess("logistic"), "skglm-mcp": _skglm("logistic"),
        "sklearn L1 LogisticCV": _sk_cv("logistic"),
    },
}


def run_cell(task, rho, snr, seed, name, p=PS[0]):
    X, y, Xt, yt, support = make_data(task, rho, snr, seed, p)
    t0 = time.perf_counter()
    try:
        sel, predict = SELECTORS[task][name](X, y)
    except Exception as exc:  # a failed selector is a result (reported), not a crash of the run
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300], "seconds": time.perf_counter() - t0}
    seconds = time.perf_counter() - t0
    sel = np.asarray(sel, dtype=int)
    tp = int(np.isin(sel, support).sum())
    out = {"ok": True, "tp": tp, "fp": int(sel.size - tp), "seconds": seconds}
    if predict is not None:
        out["pred_error"] = _error(task, yt, predict(Xt))
    out["refit_error"] = _error(task, yt, _refit(task, X, y, sel)(Xt))
    return out


def _error(task, yt, f):
    """Test MSE minus the noise variance 1 (regression), test error rate (logistic)."""
    return (float(np.mean((yt - f) ** 2) - 1.0) if task == "regression"
            else float(np.mean(np.where(f > 0, 1, -1) != yt)))


def _refit(task, X, y, sel):
    """The unpenalised model on the selected columns (least squares, or logistic regression
    without a penalty): the same refit for every selector, so its error compares the supports."""
    from sklearn.linear_model import LinearRegression, LogisticRegression

    sel = np.asarray(sel, dtype=int)
    if sel.size == 0:
        b = float(np.mean(y)) if task == "regression" else float(np.sign(np.mean(y > 0) - 0.5) or 1.0)
        return lambda Z: np.full(Z.shape[0], b)
    m = (LinearRegression() if task == "regression" else LogisticRegression(penalty=None, max_iter=1000))
    m.fit(X[:, sel], y)
    return lambda Z: m.decision_function(Z[:, sel]) if task != "regression" else m.predict(Z[:, sel])


def run(reps: int, ps=PS, tasks=TASKS, only=None) -> dict:
    """Every cell not yet in the JSON, repetition by repetition (a run cut short covers every
    setting once before it repeats any), ``p = 1 000`` before ``5 000``, SNR 5 first."""
    res = json.loads(OUT.read_text()) if OUT.exists() else {"meta": {}, "cells": {}}
    res["meta"] = {"n": N, "ps": list(PS), "k": K, "n_test": N_TEST, "python": platform.python_version(),
                   "machine": platform.machine(), "lambda_fraction": LAMBDA_FRACTION}
    for seed in range(reps):
        for p in ps:
            for snr in sorted(SNRS, key=lambda v: (v != 5.0, v)):
                for rho in RHOS:
                    for task in tasks:
                        for name in SELECTORS[task]:
                            if only and not any(o in name for o in only):
                                continue
                            key = f"{task}|{p}|{rho}|{snr}|{seed}|{name}"
                            if key in res["cells"]:
                                continue
                            cell = run_cell(task, rho, snr, seed, name, p)
                            print(key, cell, flush=True)
                            res = json.loads(OUT.read_text()) if OUT.exists() else res  # another runner's cells
                            res["cells"][key] = cell
                            OUT.write_text(json.dumps(res, indent=1, sort_keys=True))
    return res


def _aggregate(res):
    """``{(task, p, rho, snr, name): mean tp, fp, pred_error, seconds, failures}`` over the seeds."""
    groups: dict = {}
    for key, cell in res["cells"].items():
        task, p, rho, snr, _, name = key.split("|")
        groups.setdefault((task, int(p), float(rho), float(snr), name), []).append(cell)
    out = {}
    for g, cells in groups.items():
        ok = [c for c in cells if c["ok"]]

        def mean(f, ok=ok):
            v = [c[f] for c in ok if c.get(f) is not None]
            return float(np.mean(v)) if v else None
        out[g] = {"tp": mean("tp"), "fp": mean("fp"), "pred_error": mean("pred_error"),
                  "refit_error": mean("refit_error"),
                  "seconds": mean("seconds"), "failed": len(cells) - len(ok), "n": len(cells)}
    return out


def _cell(v, fmt):
    return "—" if v is None else format(v, fmt)


def markdown(res: dict) -> str:
    meta, agg = res["meta"], _aggregate(res)
    reps = sorted({int(k.split("|")[4]) for k in res["cells"]})
    lines = [f"n = {meta['n']} training samples, k = {meta['k']} true features, test set of {meta['n_test']}; "
             f"repetitions (seeds) run: {len(reps)} (a cell shows the mean over the seeds it finished). TP/FP: true/"
             "false positives among the selected features; pred. error: test MSE minus the noise variance "
             "(regression), test error rate (logistic), of the selector's own model; refit: the same error "
             "of an unpenalised refit on the selected features (one rule for every selector); time: seconds per fit, wall clock, on a shared machine.", ""]
    for task in TASKS:
        for p in PS:
            names = list(SELECTORS[task])
            lines += [f"**{task}, p = {p}**", "",
                      "| selector | rho | " + " | ".join(f"SNR {s:g}: TP/FP, error, refit, s" for s in SNRS) + " |",
                      "|---|---|" + "---|" * len(SNRS)]
            for name in names:
                for rho in RHOS:
                    cells = []
                    for snr in SNRS:
                        a = agg.get((task, p, rho, snr, name))
                        if a is None:
                            cells.append("not run")
                        elif a["tp"] is None:
                            cells.append(f"failed ({a['failed']}/{a['n']})")
                        else:
                            cells.append(f"{a['tp']:.1f}/{a['fp']:.1f}, {_cell(a['pred_error'], '.3f')}, "
                                         f"{_cell(a['refit_error'], '.3f')}, "
                                         f"{a['seconds']:.2f}" + (f" ({a['failed']} of {a['n']} failed)"
                                                                  if a["failed"] else "")
                                         + (f" [{a['n']} seeds]" if a["n"] != len(reps) else ""))
                    lines.append(f"| {name} | {rho:g} | " + " | ".join(cells) + " |")
            lines.append("")
    return "\n".join(lines).strip()


def picture(res: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agg = _aggregate(res)
    names = list(dict.fromkeys(n for t in TASKS for n in SELECTORS[t]))
    colour = {name: f"C{i % 10}" if i < 10 else ("black", "teal", "navy", "crimson")[i - 10]
              for i, name in enumerate(names)}  # one colour per selector (C7 is grey: no "grey" here)
    panels = [(t, p, r) for t in TASKS for p in PS for r in RHOS]
    fig, axes = plt.subplots(2, 4, figsize=(18, 8), sharey=True)
    for ax, (task, p, rho) in zip(axes.ravel(), panels):
        for name in SELECTORS[task]:
            tp = [agg.get((task, p, rho, s, name), {}).get("tp") for s in SNRS]
            if all(v is None for v in tp):
                continue  # not run, or every fit failed (the table says which)
            ax.plot(SNRS, [np.nan if v is None else v for v in tp], marker="o", color=colour[name],
                    linestyle="-" if name.startswith("fsframe") else "--", label=name)
        ax.set_title(f"{task}, p = {p}, rho = {rho:g}")
        ax.set_xlabel("SNR")
        ax.set_xticks(SNRS)
        ax.legend(fontsize=6)
    for ax in axes[:, 0]:
        ax.set_ylabel(f"true positives (of k = {K})")
    fig.suptitle(f"Support recovery, n = {N} (mean over the seeds run)")
    fig.tight_layout()
    IMG.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG, dpi=80)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--p", type=int, action="append", help="only these p (default: all of PS)")
    ap.add_argument("--task", action="append", choices=TASKS, help="only these tasks (default: both)")
    ap.add_argument("--only", action="append", help="only the selectors whose name contains this")
    ap.add_argument("--render", action="store_true", help="only re-render the section and picture from the JSON")
    args = ap.parse_args(argv)
    res = (json.loads(OUT.read_text()) if args.render
           else run(args.reps, tuple(args.p or PS), tuple(args.task or TASKS), args.only))
    text = markdown(res)
    print(text)
    write_section(DOC, BEGIN, END, text)
    picture(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
