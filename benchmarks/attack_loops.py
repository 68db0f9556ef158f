"""Random-instance attacks on the outer loops' answers (issue 18 items 3 and 4), at full size.

* ``em-convex``: ``margin`` (soft, ``C``) + ``lp(p=1)`` + ``em`` against CVXPY's optimum of the same
  convex model, ``C sum_ik max(0, 1 - Y_ik (XW + b)_ik) + sum_j ||W_j||_2`` (Clarabel), on random
  instances of the issue's family (m in [15, 70), n in [5, 40), 2-6 classes, C in [0.03, 10]; the
  generator and the CVXPY model of ``tests/unit/test_em_convex.py``). The
  default ``weights="majorizer"`` and, for comparison, ``weights="paper"`` (002's ``1/t``, the
  weights of the runs the issue reported 0.7-16 % above the optimum). Times of the EM fit and of
  CVXPY's solve of the convex model, in the same process.
* ``em-floor``: ``lp(p=0.5)`` on the same instances: after EM converges, the groups it fixed at zero
  are given the floor's weight ``q(c)`` in one more solve; a group whose norm then exceeds ``c``
  would be one the convex model at the floor revives (EM runs no check for ``phi'(0) = inf``).
* ``ties``: ``l0-mpm`` with ``working_set=True`` and ``False`` on random data with duplicated
  columns (m in [20, 80), 10-50 columns plus copies of up to as many), with the tie rule of
  ``fsframe.loops.ties`` and, in the same process, without it (the loop before the fix): relative
  objective difference, the selection compared up to exchanging identical columns.

Usage::

    python benchmarks/attack_loops.py [--em 50] [--ties 200] [--parts em_convex,em_floor,ties] [--quick]

Each part writes its rows to ``benchmarks/results/attack_loops_<part>.json`` (the others' files are
left as they were, so parts may run one at a time) and ``benchmarks/results/attack_loops.md`` is
rewritten from every part's file. ``--quick`` writes nothing.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


# ------------------------------------------------------------------------------ instances
# the generators and references of the CI tests (tests/unit/test_em_convex.py, test_ties.py), larger
sys.path.insert(0, str(HERE.parent / "tests" / "unit"))
from test_em_convex import cvxpy_l21, margin_instance, margin_objective  # noqa: E402
from test_ties import duplicated, representatives  # noqa: E402

EM_SIZES = dict(m=(15, 70), n=(5, 40), classes=(2, 7), log_C=(-1.5, 1.0))
TIE_SIZES = dict(m=(20, 80), n0=(10, 50))


def timed_cvxpy_l21(X, y, C):
    t0 = time.perf_counter()
    value = cvxpy_l21(X, y, C)
    return value, time.perf_counter() - t0


def em_convex(n: int) -> list[dict]:
    import fsframe
    from fsframe.errors import FsframeError

    rows = []
    for seed in range(n):
        X, y, C = margin_instance(seed, **EM_SIZES)
        ref, t_cvx = timed_cvxpy_l21(X, y, C)
        row = {"seed": seed, "m": X.shape[0], "n": X.shape[1], "classes": int(len(set(y.tolist()))), "C": C,
               "cvxpy": ref, "cvxpy_seconds": t_cvx}
        for mode in ("majorizer", "paper"):
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    r = fsframe.fit(X, y, formulation="margin", surrogate="lp", loop="em", p=1.0, C=C,
                                    weights=mode, max_iter=400, tol=1e-9)
                got = margin_objective(X, y, C, r)
                row[mode] = {"objective": got, "rel_gap": (got - ref) / abs(ref), "converged": bool(r.converged),
                             "warned": any("max_iter" in str(w.message) for w in caught), "n_iter": r.n_iter,
                             "n_selected": int(r.n_selected), "reason": r.info.get("stop_reason", ""),
                             "seconds": time.perf_counter() - t0}
            except FsframeError as exc:
                row[mode] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}", "seconds": time.perf_counter() - t0}
        rows.append(row)
        print(f"em-convex {seed}: {row['majorizer'].get('rel_gap', row['majorizer'].get('error'))}", flush=True)
    return rows


def em_floor(n: int) -> list[dict]:
    import fsframe
    from fsframe.backends import ClarabelBackend
    from fsframe.problem import Subproblem

    reg = fsframe.get_registry()
    rows = []
    for seed in range(n):
        X, y, C = margin_instance(seed, **EM_SIZES)
        sur = reg.get("surrogate", "lp")(p=0.5)
        loop = reg.get("loop", "em")(max_iter=100)
        sub = Subproblem(reg.get("formulation", "margin")(C=C), X, y, loop.terms(sur), ClarabelBackend())
        seen = []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loop.run(sub, sur, callback=lambda rec, it: seen.append(it))
            q, _ = loop.rule(sur)
            c = loop.zero_tol * max(float(it.t.max()) for it in seen)
            last = seen[-1]
            fixed = last.t == 0
            grown = 0
            if fixed.any():
                chk = sub.solve(quad=q(np.maximum(last.t, c)))
                grown = int((fixed & (chk.t > c)).sum()) if chk.ok else None
            rows.append({"seed": seed, "fixed": int(fixed.sum()), "grown": grown})
        finally:
            sub.close()
    return rows


# ------------------------------------------------------------------------------ ties
def ties(n: int) -> list[dict]:
    import fsframe
    from fsframe.loops import ties as tie_module

    rows = []
    real_point = tie_module.Tiebreak.point
    for seed in range(n):
        X, y = duplicated(seed, **TIE_SIZES)
        row = {"seed": seed, "m": X.shape[0], "n": X.shape[1],
               "copies": int(X.shape[1] - len({X[:, j].tobytes() for j in range(X.shape[1])}))}
        for rule in ("tie rule", "none"):
            tie_module.Tiebreak.point = real_point if rule == "tie rule" else (lambda self, it: (it, False))
            out = []
            try:
                for ws in (True, False):
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = fsframe.fit(X, y, method="l0-mpm", working_set=ws)
                    out.append((r.objective, representatives(X, r.selected), r.n_iter, time.perf_counter() - t0))
            finally:
                tie_module.Tiebreak.point = real_point
            (f1, s1, k1, t1), (f2, s2, k2, t2) = out
            row[rule] = {"ws": f1, "full": f2, "rel_diff": abs(f1 - f2) / max(abs(f1), abs(f2), 1e-300),
                         "same_selection": s1 == s2, "n_iter": [k1, k2], "seconds": [t1, t2]}
        rows.append(row)
        print(f"ties {seed}: {row['tie rule']['rel_diff']:.1e} (without: {row['none']['rel_diff']:.1e})", flush=True)
    return rows


# ------------------------------------------------------------------------------ report
def _q(v, qs=(0.5, 0.9, 1.0)):
    v = np.asarray([x for x in v if x is not None], dtype=float)
    return [float(np.quantile(v, q)) for q in qs] if v.size else [float("nan")] * len(qs)


def markdown(res: dict) -> str:
    lines = ["# Outer-loop attacks", "",
             "`python benchmarks/attack_loops.py` — issue 18 items 3 and 4; raw rows in `attack_loops_<part>.json`.", ""]
    for part in PARTS:
        meta = res.get(f"{part}_meta") or {}
        if meta:
            lines.append(f"* `{part}`: {meta.get('n')} instances, {meta.get('date')}, {meta.get('machine')}, "
                         f"{meta.get('seconds', float('nan')):.0f} s")
    lines.append("")
    em = res["em_convex"]
    if em:
        lines += ["## `margin` (soft) + `lp(p=1)` + `em` vs CVXPY on the same convex model", "",
                  f"{len(em)} random instances; `max_iter=400`, `tol=1e-9`; relative gap `(f - f_cvxpy) / f_cvxpy` "
                  "of the returned model's `C Σξ + Σ‖W_j‖₂`.", "",
                  "| weights | errors | converged | gap median | gap 90 % | gap max | min gap | > 1e-4 | "
                  "> 1e-2 | no feature | fit s (median) | fit / CVXPY time (median) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for mode in ("majorizer", "paper"):
            ok = [r for r in em if "error" not in r[mode]]
            gaps = [r[mode]["rel_gap"] for r in ok]
            med, p90, mx = _q(gaps)
            lines.append(
                f"| `{mode}` | {len(em) - len(ok)} | {sum(r[mode]['converged'] for r in ok)} | {med:.1e} | {p90:.1e} | "
                f"{mx:.1e} | {min(gaps):.1e} | {sum(g > 1e-4 for g in gaps)} | {sum(g > 1e-2 for g in gaps)} | "
                f"{sum(r[mode]['n_selected'] == 0 for r in ok)} | {_q([r[mode]['seconds'] for r in ok])[0]:.2f} | "
                f"{_q([r[mode]['seconds'] / r['cvxpy_seconds'] for r in ok])[0]:.1f} |")
        unconverged = [r for r in em if "error" not in r["majorizer"] and not r["majorizer"]["converged"]]
        lines += ["", f"`majorizer` runs stopped at `max_iter` ({len(unconverged)}): every one warned "
                  f"({sum(r['majorizer']['warned'] for r in unconverged)} of {len(unconverged)}); their largest gap "
                  f"{max([r['majorizer']['rel_gap'] for r in unconverged], default=float('nan')):.1e} (IRLS is slow "
                  "where a group's gradient sits near `φ'(0)`).", ""]
    fl = res["em_floor"]
    if fl:
        lines += ["## `lp(p=0.5)` + `em`: groups fixed at zero that the floor's weight would grow", "",
                  f"{len(fl)} instances: {sum(r['fixed'] for r in fl)} groups fixed at zero, "
                  f"{sum(r['grown'] or 0 for r in fl)} grew above the floor in a solve at the floor's weight "
                  f"({sum(r['grown'] is None for r in fl)} checks without a solution).", ""]
    ti = res["ties"]
    if ti:
        lines += ["## `l0-mpm` with duplicated columns: `working_set=True` vs `False`", "",
                  f"{len(ti)} random instances; relative objective difference; selection compared up to exchanging "
                  "identical columns.", "",
                  "| loops | > 1e-5 | > 1e-2 | max | same selection | iterations (median, ws / full) | fit s (median) |",
                  "|---|---|---|---|---|---|---|"]
        for rule in ("tie rule", "none"):
            d = [r[rule]["rel_diff"] for r in ti]
            lines.append(
                f"| {'with the tie rule' if rule == 'tie rule' else 'without (before the fix)'} | "
                f"{sum(x > 1e-5 for x in d)} | {sum(x > 1e-2 for x in d)} | {max(d):.1e} | "
                f"{sum(r[rule]['same_selection'] for r in ti)} / {len(ti)} | "
                f"{_q([r[rule]['n_iter'][0] for r in ti])[0]:.0f} / {_q([r[rule]['n_iter'][1] for r in ti])[0]:.0f} | "
                f"{_q([r[rule]['seconds'][0] for r in ti])[0]:.2f} |")
        best = [(min(r["tie rule"]["ws"], r["tie rule"]["full"]), min(r["none"]["ws"], r["none"]["full"])) for r in ti]
        lower = [(b - a) / b for a, b in best if a < b * (1 - 1e-4)]
        worse = sum(a > b * (1 + 1e-4) for a, b in best)
        lines += ["", f"With the tie rule the objective is lower than the better of the two runs without it on "
                  f"{len(lower)} instances (median {100 * _q(lower)[0]:.0f} % lower), higher on {worse}.", ""]
    return "\n".join(lines)


PARTS = ("em_convex", "em_floor", "ties")
META = ("date", "machine", "fsframe", "seconds", "n")


def part_path(part: str) -> Path:
    return RESULTS / f"attack_loops_{part}.json"


def load() -> dict:
    """The parts' committed results, ``{part: rows, part + "_meta": {...}}`` (an absent part: [])."""
    res = {}
    for part in PARTS:
        path = part_path(part)
        saved = json.loads(path.read_text()) if path.exists() else {"rows": []}
        res[part] = saved["rows"]
        res[f"{part}_meta"] = {k: saved[k] for k in META if k in saved}
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--em", type=int, default=50, help="instances of the EM attacks")
    ap.add_argument("--ties", type=int, default=200, help="instances of the tie attack")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {list(PARTS)}")
    ap.add_argument("--quick", action="store_true", help="10 instances each, nothing written")
    a = ap.parse_args(argv)
    n_em, n_ties = (10, 10) if a.quick else (a.em, a.ties)
    parts = [p for p in a.parts.split(",") if p]
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        ap.error(f"unknown parts {unknown}; choose from {list(PARTS)}")
    import fsframe

    run = {"em_convex": lambda: em_convex(n_em), "em_floor": lambda: em_floor(n_em), "ties": lambda: ties(n_ties)}
    res = load()
    for part in parts:
        t0 = time.perf_counter()
        rows = run[part]()
        meta = {"date": _dt.date.today().isoformat(), "machine": f"{platform.machine()}, {platform.python_version()}",
                "fsframe": fsframe.__version__, "seconds": time.perf_counter() - t0, "n": len(rows)}
        res[part], res[f"{part}_meta"] = rows, meta
        if not a.quick:
            # one file per part: a part run alone (or interrupted later) leaves the others' results as they were
            RESULTS.mkdir(exist_ok=True)
            part_path(part).write_text(json.dumps({**meta, "rows": rows}, indent=1) + "\n")
    if not a.quick:  # every part's file as it is now (another process may have written one meanwhile)
        res = load()
    text = markdown(res)
    if not a.quick:
        (RESULTS / "attack_loops.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
