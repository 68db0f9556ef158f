"""Small fits: where the fixed costs of one fit go (paper 002 Table 2; issue 13).

Paper 002 (Huang, King & Lyu) Table 2 reports the selection time of each method on Sonar
(208 x 60, ``r = 2``) and Colon (62 x 2000, ``r = 20``) in MATLAB on a 2008 PC. A third row set is
the README's compare job, ``em-l0`` on scikit-learn's breast-cancer set (WDBC, 569 x 30, no
``n_features``), whose per-fit cost is dominated by the EM dual QPs (569 variables). This benchmark
times the same fits here (paper 002's protocol, the study ``paper002``: a stratified
80/20 split, features standardised on the training part, ``n_features=r``, ``C = 1``) and splits
each fit into phases by timing the functions the fit driver calls (exclusive time: a phase's
figure excludes the phases it calls):

=================  ============================================================================
validate           ``check_Xy``, column names, fit options, solver options, formulation.validate
resolve            ``fsframe.method.resolve`` (names and parameters to components)
backend            ``select_backend`` and ``Backend.check_options``
build / compile    ``Formulation.build`` (the Pyomo model) / ``compile_model``
weights            ``CompiledModel.with_weights`` (new slot weights, Params synced)
open               ``Backend.open`` (the session's choice of form, its checks)
hand-over          HiGHS ``_load`` / ``_update`` (matrices, costs, Hessian to HiGHS)
HiGHS run          ``Highs.run`` and reading its answer (``_solve_raw``, ``_invert``)
dual form          the EM dual's reduction and recovery (``backends/diag_qp.py``)
certificate        ``certify`` (weak-duality certificate of every OPTIMAL answer)
judge              the rest of the base template's judgement (finiteness, clipping, objective)
read-back          ``Subproblem.solve`` after the backend: coefficients, norms, loss
loop               the outer loop's own work (weights, stopping rules, history, exactly-r rule)
result             ``FitResult`` construction
other              the rest of ``fsframe.fit``
=================  ============================================================================

"Total" is the time of ``fsframe.fit`` on the phases' clock (``--clock``: wall, the default, or
the process's CPU time), "wall" and "CPU" its wall and process time (all threads; less sensitive to
the other jobs of a shared machine), "GC" the garbage collector's pauses (inside the phases they
fall in). "Met": the median time is below paper 002's figure. The "settle" column is the inclusive
time of the loop's settle step (``fsframe.loops.settle.settle``: its re-solve on the selected
features, counted in the phases above too) and "solves" the number of subproblems solved.

    python benchmarks/bench_small_fits.py [--reps 7] [--splits 3] [--quick] [--clock cpu] [--src PATH] [--tag NAME]
    python benchmarks/bench_small_fits.py --compare BEFORE1.json,BEFORE2.json AFTER1.json,AFTER2.json

``--src`` times another checkout of fsframe (e.g. ``git archive`` of an older commit unpacked in a
temporary folder) with the same script: the "before" figures. Writes
``benchmarks/results/small_fits[_TAG].json`` and prints a Markdown table. Reads Sonar and Colon
from the data folder (``--data-dir``, else ``$FSFRAME_DATA``; the old ``$FSFRAME_SHARED_DATA`` for
one more release) and stops with exit status 2 when a file it needs is not there (WDBC is bundled).
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import add_data_dir, data_folder  # noqa: E402  (imports no fsframe: --src picks which one)

DATA: Path | None = None  # the data folder: main() sets it (_common.data_folder)

PAPER_TABLE2 = {  # seconds, paper 002 Table 2 (MATLAB/Spider on a 3 GHz PC, 2008)
    "sonar": {"em-l0": 0.8061, "arom": 6.1431, "fsv": 2.2888, "svm-weights": 0.0146},
    "colon": {"em-l0": 0.0223, "arom": 1.3558, "fsv": 2.6941, "svm-weights": 0.0018},
}
TIMED_R = {"sonar": 2, "colon": 20, "wdbc": None}
WDBC_METHODS = ["em-l0"]  # the README's compare job (scikit-learn's breast-cancer set, no n_features)
METHODS = ["em-l0", "arom", "fsv", "svm-weights", "l1-svm"]
PHASES = ["validate", "resolve", "backend", "build", "compile", "weights", "open", "hand-over", "HiGHS run",
          "dual form", "certificate", "judge", "read-back", "loop", "result", "other"]


class PhaseTimer:
    """Exclusive time per phase (on ``clock``): a stack of open phases; a phase's elapsed time is charged to
    it minus the time of the phases it called."""

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.acc: dict[str, float] = {}
        self.stack: list[list] = []
        self.counts: dict[str, int] = {}
        self.inclusive: dict[str, float] = {}
        self.gc = 0.0
        self._gc_start = 0.0

    def reset(self):
        self.acc, self.counts, self.inclusive = {}, {}, {}
        self.gc = 0.0

    def gc_callback(self, phase, info):
        """``gc.callbacks`` hook: the collector's pauses (contained in the phases they fall in)."""
        if phase == "start":
            self._gc_start = self.clock()
        else:
            self.gc += self.clock() - self._gc_start

    def wrap(self, name: str, fn, *, inclusive: str | None = None):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            frame = [name, self.clock(), 0.0]
            self.stack.append(frame)
            try:
                return fn(*args, **kwargs)
            finally:
                elapsed = self.clock() - frame[1]
                self.stack.pop()
                self.acc[name] = self.acc.get(name, 0.0) + elapsed - frame[2]
                self.counts[name] = self.counts.get(name, 0) + 1
                if inclusive:
                    self.inclusive[inclusive] = self.inclusive.get(inclusive, 0.0) + elapsed
                if self.stack:
                    self.stack[-1][2] += elapsed

        return timed


def instrument(timer: PhaseTimer) -> None:
    """Wrap the functions of the fit path (in the modules that call them)."""
    import fsframe
    import fsframe.binary_fit as binary_fit
    import fsframe.fit_inputs as fit_inputs
    import fsframe.fitting as fitting
    import fsframe.problem as problem
    from fsframe.backends import base, diag_qp, highs
    from fsframe.compiler import CompiledModel
    from fsframe.loops import base as loop_base
    from fsframe.loops.base import OuterLoop

    def patch(owner, attr, name, **kw):
        setattr(owner, attr, timer.wrap(name, getattr(owner, attr), **kw))

    for owner, attr in ((fit_inputs, "check_Xy"), (fit_inputs, "_column_names"), (fitting, "check_fit_options"),
                        (fitting, "make_options"), (binary_fit, "validate_formulation")):
        patch(owner, attr, "validate")
    patch(fitting, "resolve", "resolve")
    patch(fitting, "select_backend", "backend")
    patch(highs.HighsBackend, "check_options", "backend")
    patch(fitting, "FitResult", "result")
    patch(fitting, "fit", "other", inclusive="total")
    fsframe.fit = fitting.fit  # the public name is a reference to the driver
    patch(problem.Subproblem, "_build", "build")
    patch(problem, "compile_model", "compile")
    patch(CompiledModel, "with_weights", "weights")
    patch(problem.Subproblem, "solve", "read-back", inclusive="solves")
    patch(highs.HighsBackend, "open", "open")
    patch(highs.HighsSession, "_load", "hand-over")
    patch(highs.HighsSession, "_update", "hand-over")
    patch(highs.HighsSession, "_solve_raw", "HiGHS run")
    patch(highs.HighsSession, "_invert", "HiGHS run")
    patch(diag_qp.DualQPSession, "_solve_dual", "dual form")
    patch(base, "certify", "certificate")
    patch(base.BackendSession, "judge", "judge")
    patch(OuterLoop, "run", "loop")
    if hasattr(loop_base, "settle"):  # the settle step, a function of the loop (fsframe.loops.settle)
        patch(loop_base, "settle", "loop", inclusive="settle")
    else:  # a checkout from before its move (--src): the template's method
        patch(OuterLoop, "_settle", "loop", inclusive="settle")


def load(name: str):
    import fsframe
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    if name == "wdbc":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        return X, y, train_test_split, StandardScaler
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = fsframe.load_dataset(DATA / ("sonar.csv" if name == "sonar" else "colon.mat"))
    X, y = np.asarray(ds.X), np.asarray(ds.y)
    return X, y, train_test_split, StandardScaler


def run(reps: int, splits: int, methods: list[str], timer: PhaseTimer, datasets=("sonar", "colon")) -> dict:
    import fsframe

    out = {}
    for name in datasets:
        X, y, split, scaler = load(name)
        r = TIMED_R[name]
        rows = {}
        for m in (WDBC_METHODS if name == "wdbc" else methods):
            per_fit = []
            for s in range(splits):
                Xtr, _, ytr, _ = split(X, y, test_size=0.1 if name == "wdbc" else 0.2, random_state=s, stratify=y)
                Xtr = scaler().fit_transform(Xtr)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fsframe.fit(Xtr, ytr, method=m, n_features=r)  # warm-up (imports, caches)
                    for _ in range(reps):
                        timer.reset()
                        cpu0, wall0 = time.process_time(), time.perf_counter()
                        fit = fsframe.fit(Xtr, ytr, method=m, n_features=r)
                        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                        rec = {p: timer.acc.get(p, 0.0) for p in PHASES if p != "other"}
                        rec["total"] = timer.inclusive["total"]
                        rec["other"] = timer.acc.get("other", 0.0)
                        rec["settle"] = timer.inclusive.get("settle", 0.0)
                        rec["gc"] = timer.gc
                        rec["cpu"] = cpu
                        rec["wall"] = wall
                        rec["solves"] = timer.counts.get("read-back", 0)
                        rec["n_iter"] = fit.n_iter
                        rec["objective"] = fit.objective
                        rec["selected"] = [int(i) for i in fit.selected]
                        rec["split"] = s
                        per_fit.append(rec)
            rows[m] = per_fit
            med = float(np.median([p["total"] for p in per_fit]))
            print(f"{name} {m}: median {med:.4f} s", file=sys.stderr, flush=True)
        out[name] = {"shape": list(X.shape), "r": r, "fits": rows, "paper_seconds": PAPER_TABLE2.get(name, {})}
    return out


def _median(fits, key):
    return float(np.median([f[key] for f in fits]))


def markdown(res: dict) -> str:
    lines = []
    for name, d in res["datasets"].items():
        part = "90/10 split, no `n_features` (one fold of the README's compare)" if d["r"] is None else \
            f"80/20 split, `n_features={d['r']}`"
        lines += [f"**{name}** ({d['shape'][0]} x {d['shape'][1]}, training part of a {part}): milliseconds, "
                  f"median over {res['reps']} repetitions x {res['splits']} splits", "",
                  "| method | solves | " + " | ".join(PHASES) + " | settle | GC | **total** | CPU | paper 002 | met |",
                  "|---|--:|" + "--:|" * len(PHASES) + "--:|--:|--:|--:|--:|---|"]
        for m, fits in d["fits"].items():
            paper = d["paper_seconds"].get(m)
            total = _median(fits, "total")
            met = "–" if paper is None else ("yes" if total < paper else "**no**")
            lines.append(f"| `{m}` | {_median(fits, 'solves'):.0f} | "
                         + " | ".join(f"{1e3 * _median(fits, p):.1f}" for p in PHASES)
                         + f" | {1e3 * _median(fits, 'settle'):.1f} | {1e3 * _median(fits, 'gc'):.1f} | "
                         + f"**{1e3 * total:.1f}** | "
                         + f"{1e3 * _median(fits, 'cpu'):.1f} | "
                         + ("–" if paper is None else f"{1e3 * paper:.1f}") + f" | {met} |")
        lines.append("")
    env = res["env"]
    lines.append(f"Run on {env['date']} ({env['cores']} cores, load average {env['loadavg'][0]:.1f} at start), "
                 f"Python {env['python']}, fsframe from `{env['src']}`.")
    return "\n".join(lines)


GROUPS = {  # the condensed table's columns: phases summed
    "validate + resolve + backend": ["validate", "resolve", "backend"],
    "build + compile": ["build", "compile"],
    "HiGHS run": ["HiGHS run"],
    "hand-over + dual form": ["hand-over", "dual form", "open"],
    "certificate + judge": ["certificate", "judge"],
    "weights + read-back + loop + result + other": ["weights", "read-back", "loop", "result", "other"],
}


def _pooled(paths: list[str]) -> dict:
    """Several runs of this script (e.g. before and after runs interleaved on a busy machine)
    pooled: their fits per data set and method concatenated."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    out = runs[0]
    for extra in runs[1:]:
        for name, d in extra["datasets"].items():
            for m, fits in d["fits"].items():
                out["datasets"][name]["fits"][m] = out["datasets"][name]["fits"].get(m, []) + fits
    return out


def compare_markdown(before: dict, after: dict) -> str:
    """Before -> after, per data set and method: the medians of the grouped phases (ms)."""
    lines = ["| data | method | " + " | ".join(GROUPS) + " | GC | total | wall | paper 002 | met (wall, CPU) |",
             "|---|---|" + "--:|" * len(GROUPS) + "--:|--:|--:|--:|---|"]

    def cell(fb, fa, keys):
        b = float(np.median([sum(f[k] for k in keys) for f in fb]))
        a = float(np.median([sum(f[k] for k in keys) for f in fa]))
        return f"{1e3 * b:.1f} → {1e3 * a:.1f}"

    for name, da in after["datasets"].items():
        db = before["datasets"].get(name)
        if db is None:
            continue
        for m, fa in da["fits"].items():
            fb = db["fits"].get(m)
            if fb is None:
                continue
            paper = da["paper_seconds"].get(m)
            yes = lambda v: "yes" if v < paper else "**no**"  # noqa: E731
            met = "–" if paper is None else f"{yes(_median(fa, 'wall'))}, {yes(_median(fa, 'cpu'))}"
            lines.append(f"| {name} | `{m}` | " + " | ".join(cell(fb, fa, k) for k in GROUPS.values())
                         + f" | {cell(fb, fa, ['gc'])} | **{cell(fb, fa, ['total'])}** | {cell(fb, fa, ['wall'])} | "
                         + ("–" if paper is None else f"{1e3 * paper:.1f}") + f" | {met} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2 repetitions, 1 split")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--datasets", default="sonar,colon,wdbc")
    ap.add_argument("--src", default=str(ROOT), help="the fsframe checkout to time (default: this one)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="the phases' clock: wall time, or the process's CPU time (steadier on a busy machine)")
    ap.add_argument("--tag", default="", help="suffix of the JSON file (e.g. 'before')")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="print the condensed before -> after table of JSON files written by this script "
                         "(each side a comma-separated list of runs, pooled)")
    add_data_dir(ap, "sonar.csv and colon.mat")
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (_pooled(side.split(",")) for side in args.compare)
        print(compare_markdown(before, after))
        return 0
    global DATA
    files = {"sonar": "sonar.csv", "colon": "colon.mat"}
    needed = [files[d] for d in args.datasets.split(",") if d in files]
    DATA = data_folder(ap, args.data_dir, needed) if needed else None  # status 2 without them; wdbc is bundled
    sys.path.insert(0, str(Path(args.src).resolve()))
    import fsframe

    timer = PhaseTimer(time.process_time if args.clock == "cpu" else time.perf_counter)
    instrument(timer)
    gc.callbacks.append(timer.gc_callback)
    reps, splits = (2, 1) if args.quick else (args.reps, args.splits)
    load_start = os.getloadavg()
    res = {"reps": reps, "splits": splits,
           "datasets": run(reps, splits, args.methods.split(","), timer, args.datasets.split(",")),
           "env": {"clock": args.clock, "python": platform.python_version(), "fsframe": fsframe.__version__,
                   "src": args.src,
                   "date": time.strftime("%Y-%m-%d %H:%M"), "cores": os.cpu_count(), "loadavg": list(load_start)}}
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"small_fits{'_' + args.tag if args.tag else ''}.json").write_text(json.dumps(res, indent=1))
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
