"""Start-up benchmark (issue 13): ``import fsframe`` and the catalogue commands, in fresh processes.

Four commands, each a new Python process: ``python -c "import fsframe"``, ``fsframe methods``,
``fsframe --help`` and ``fsframe select --help``. Each is run ``--reps`` times, interleaved with
the others (the machine's noise hits all alike); the table shows the median wall-clock time and
the median CPU time (user + system of the child, which load on a shared machine inflates less).
References in the same runs: the bare interpreter, ``import numpy``, ``import numpy, scipy.sparse``
and ``import pyomo.environ``.

``--baseline REF`` measures the same commands on the source of a git revision too (``git archive``
into a temporary folder, put first on ``PYTHONPATH`` with its ``plugins/``), so the before/after
table comes from one run on one machine. "Where the time goes" sums ``-X importtime`` self times
of ``fsframe methods`` by top-level package (one extra run per tree).

Bytecode: by default every process reads cached bytecode, as an installed package does
(``PYTHONPYCACHEPREFIX`` set to a temporary folder, filled by a warm-up run). ``--no-bytecode``
measures with ``PYTHONDONTWRITEBYTECODE=1`` and no cache instead (every module compiled from source
on every start, which is how this workspace runs).

Usage::

    python benchmarks/bench_import.py [--reps 9] [--baseline main] [--no-bytecode] [--quick]

Writes ``benchmarks/results/startup.json`` (every repetition) and the tables between the markers
in ``docs/performance.md`` (``--quick``: 2 repetitions, only ``$TMPDIR/fsframe-startup-quick.json``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- bench_import:begin -->", "<!-- bench_import:end -->"
TARGETS = {"import fsframe": 0.4, "fsframe methods": 0.7}  # seconds, issue 13

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_section  # noqa: E402  (one writer of the docs sections)


def _cli() -> list[str]:
    """The ``fsframe`` console script of this interpreter's environment, else ``python -m fsframe``."""
    script = Path(sys.executable).with_name("fsframe")
    return [str(script)] if script.exists() else [sys.executable, "-m", "fsframe"]


def commands() -> dict[str, list[str]]:
    py, cli = sys.executable, _cli()
    return {
        "import fsframe": [py, "-c", "import fsframe"],
        "fsframe methods": [*cli, "methods"],
        "fsframe --help": [*cli, "--help"],
        "fsframe select --help": [*cli, "select", "--help"],
    }


REFERENCES = {
    "python (bare interpreter)": "pass",
    "import numpy": "import numpy",
    "import numpy, scipy.sparse": "import numpy, scipy.sparse",
    "import pyomo.environ": "import pyomo.environ",
    # Pyomo finalises SciPy (imports scipy.stats, .integrate, .spatial) once both are loaded
    "import pyomo.environ, scipy.sparse": "import pyomo.environ, scipy.sparse",
}


def environment(tree: Path | None, cache: Path | None) -> dict[str, str]:
    """The child environment: ``tree`` (a source checkout) first on the path when given; bytecode
    cached under ``cache``, or not written at all when ``cache`` is None."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), str(tree / "plugins")])
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    """(wall, cpu) seconds of one run of ``argv``; the run must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{argv} failed ({out.returncode}): {out.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def import_breakdown(argv: list[str], env: dict) -> dict[str, float]:
    """``-X importtime`` self times of one run of ``argv`` (a Python command), summed by top-level
    package, in seconds; fsframe's built-in plugins are counted as ``fsframe plugins``."""
    cmd = [sys.executable, "-X", "importtime", *argv[1:]] if argv[0] == sys.executable else \
        [sys.executable, "-X", "importtime", "-m", "fsframe", *argv[1:]]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    totals: dict[str, float] = {}
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:"):].split("|")
        root = name.strip().split(".")[0]
        root = "fsframe plugins" if root.startswith("fsframe_") else root
        totals[root] = totals.get(root, 0.0) + int(self_us) / 1e6
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def run(reps: int, baseline: str | None, bytecode: bool, quick: bool) -> dict:
    cmds = commands()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="fsframe-startup-") as tmp:
        trees: dict[str, Path | None] = {"after": None}
        if baseline:
            base = Path(tmp) / "baseline"
            base.mkdir()
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", baseline], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
            trees = {"before": base, "after": None}
        envs = {k: environment(t, Path(tmp) / f"pyc-{k}" if bytecode else None) for k, t in trees.items()}
        jobs = [(k, name, argv) for k in trees for name, argv in cmds.items()]
        jobs += [("reference", name, [sys.executable, "-c", code]) for name, code in REFERENCES.items()]
        env_of = lambda k: envs.get(k, envs["after"])  # noqa: E731
        for k, name, argv in jobs:  # warm-up: fills the bytecode cache, checks every command works
            timed(argv, env_of(k))
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {(k, n): [] for k, n, _ in jobs}
        for _ in range(reps):
            for k, name, argv in jobs:
                samples[(k, name)].append(timed(argv, env_of(k)))
        breakdown = {k: import_breakdown(cmds["fsframe methods"], envs[k]) for k in trees}
    rows = []
    for (k, name), xs in samples.items():
        rows.append({"tree": k, "command": name, "wall": [w for w, _ in xs], "cpu": [c for _, c in xs],
                     "wall_median": statistics.median(w for w, _ in xs),
                     "cpu_median": statistics.median(c for _, c in xs)})
    return {"meta": {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                     "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
                     "load_start": load_start, "load_average": os.getloadavg(), "reps": reps, "baseline": baseline, "bytecode_cached": bytecode,
                     "quick": quick, "commit": _commit()},
            "rows": rows, "import_breakdown": breakdown}


def _commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip()


def markdown(res: dict) -> str:
    meta = res["meta"]
    by = {(r["tree"], r["command"]): r for r in res["rows"]}
    has_before = any(r["tree"] == "before" for r in res["rows"])
    head = ["command"] + (["before: wall", "before: CPU"] if has_before else []) + ["wall", "CPU"]
    head += (["wall ratio", "CPU ratio"] if has_before else []) + ["target", "met: CPU / wall"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in commands():
        a = by[("after", name)]
        cells = [f"`{name}`"]
        if has_before:
            b = by[("before", name)]
            cells += [f"{b['wall_median']:.2f} s", f"{b['cpu_median']:.2f} s"]
        cells += [f"{a['wall_median']:.2f} s", f"{a['cpu_median']:.2f} s"]
        if has_before:
            cells += [f"{a['wall_median'] / b['wall_median']:.2f}", f"{a['cpu_median'] / b['cpu_median']:.2f}"]
        target = TARGETS.get(name)
        met = lambda x: "yes" if x <= target else "no"  # noqa: E731
        cells += [f"≤ {target} s" if target else "-",
                  f"{met(a['cpu_median'])} / {met(a['wall_median'])}" if target else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    ref = ["", "| reference (same runs) | wall | CPU |", "|---|---|---|"]
    ref += [f"| `{name}` | {by[('reference', name)]['wall_median']:.2f} s | {by[('reference', name)]['cpu_median']:.2f} s |"
            for name in REFERENCES]
    bd = res["import_breakdown"]
    trees = list(bd)
    pkgs = sorted({p for t in trees for p in bd[t]}, key=lambda p: -max(bd[t].get(p, 0.0) for t in trees))
    top = [p for p in pkgs if max(bd[t].get(p, 0.0) for t in trees) >= 0.005][:12]
    where = ["", "Where `fsframe methods` spends its import time (`-X importtime` self times summed by top-level "
             "package, one run" + (" per tree" if len(trees) > 1 else "") + "):", "",
             "| package | " + " | ".join(f"{t}" for t in trees) + " |", "|---|" + "---|" * len(trees)]
    where += [f"| {p} | " + " | ".join(f"{bd[t].get(p, 0.0):.3f} s" for t in trees) + " |" for p in top]
    where.append("| **all imports** | " + " | ".join(f"**{sum(bd[t].values()):.3f} s**" for t in trees) + " |")
    note = (f"\nMedians of {meta['reps']} interleaved runs, {meta['date']}, Python {meta['python']}, "
            f"{meta['cpus']} CPUs shared (load average {meta['load_start'][0]:.1f} at the start, "
            f"{meta['load_average'][0]:.1f} at the end), commit "
            f"{meta['commit']}" + (f", before = `{meta['baseline']}`" if meta["baseline"] else "") + "; bytecode "
            + ("cached (as installed)" if meta["bytecode_cached"] else "not cached (PYTHONDONTWRITEBYTECODE=1)")
            + ". `python benchmarks/bench_import.py" + (f" --baseline {meta['baseline']}" if meta["baseline"] else "")
            + ("" if meta["bytecode_cached"] else " --no-bytecode") + "`.\n")
    return "\n".join(lines + ref + where) + "\n" + note


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--baseline", metavar="REF", help="also measure the source of this git revision (e.g. main)")
    ap.add_argument("--no-bytecode", action="store_true", help="no bytecode cache (PYTHONDONTWRITEBYTECODE=1)")
    ap.add_argument("--quick", action="store_true", help="2 repetitions; writes only a file in $TMPDIR")
    args = ap.parse_args(argv)
    reps = 2 if args.quick else args.reps
    res = run(reps, args.baseline, not args.no_bytecode, args.quick)
    text = markdown(res)
    print(text)
    if args.quick:
        out = Path(tempfile.gettempdir()) / "fsframe-startup-quick.json"
    else:
        suffix = "" if not args.no_bytecode else "-no-bytecode"
        out = ROOT / "benchmarks" / "results" / f"startup{suffix}.json"
        if not args.no_bytecode:
            write_section(ROOT / "docs" / "performance.md", BEGIN, END, text, heading="## Start-up: import and CLI")
    out.write_text(json.dumps(res, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
