"""``em-l0`` on an RBF kernel map of a generated Twonorm with and without the compiled pivots: each
fit's CPU, EM iterations, support, objective and how its steps were answered (docs/performance.md,
"SMO's fallback without the compiled pivots").

    nice -n 5 python benchmarks/bench_em_smo_fallback.py --rows 1000 2000 3000 [--jit] \\
        [--json PATH] [--force] [--measured NOTE]

The rows are appended to ``--json``'s (the committed results are never overwritten by default);
``--force`` starts the file afresh. ``--jit`` refuses to run where the compiled pivots are not
available (numba missing or ``FSFRAME_NO_JIT`` set); each row records ``compiled`` (whether they were).

SMO's fallback (``dense_rules.svm_start_fallback``) follows the compiled warm attempt; without the
compiled pivots (numba missing, or ``FSFRAME_NO_JIT``: the default here, ``--jit`` for the compiled
fits) a step's attempts are the general path's, warm first. The data: Breiman's Twonorm generator
(``tests/backends/em_fits.twonorm_like``, seed = the number of rows; no shared data needed), the
points sigma 1, 2, 4 by ``C`` 0.1, 10. CPU seconds by ``time.process_time`` (the machine is shared),
one BLAS thread, all fits in one process (the first compiled fit pays numba's compilation). Writes
``--json`` (default ``benchmarks/results/em_smo_fallback.json``) and prints one line a fit.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "backends"))

POINTS = [(s, c) for s in (1.0, 2.0, 4.0) for c in (0.1, 10.0)]


def _answered_by(message: str) -> str:
    """A step's message reduced to the attempt that answered it: ``pdas``, ``smo``, ``warm`` ... or
    ``first`` (no attempt named: the first one tried, warm or cold, certified); ``failed`` where the
    message does not say the step was solved (no ``: optimal``)."""
    if ": optimal" not in message:
        return "failed"
    if "(" not in message:
        return "first"
    return message.split("(", 1)[1].split(";")[0].rstrip(")")


def fit_rows(rows, jit: bool) -> list[dict]:
    if not jit:
        os.environ["FSFRAME_NO_JIT"] = "1"
    import pytest  # its MonkeyPatch: the recorder's context, undone after each fit
    from threadpoolctl import threadpool_limits

    import fsframe
    from em_fits import record_messages, twonorm_like
    from fsframe.backends.box_qp import compiled_available

    compiled = bool(compiled_available())
    if jit and not compiled:
        raise SystemExit("--jit: the compiled pivots are not available (numba missing or FSFRAME_NO_JIT set)")

    out = []
    for m in rows:
        X, y = twonorm_like(m, seed=m)
        for sigma, C in POINTS:
            messages = []
            with pytest.MonkeyPatch.context() as mp, threadpool_limits(limits=1), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                record_messages(mp, messages)
                c0 = time.process_time()
                r = fsframe.fit(X, y, method="em-l0", kernel="rbf", sigma=sigma, C=C)
                cpu = time.process_time() - c0
            row = {"m": m, "sigma": sigma, "C": C, "jit": jit, "compiled": compiled, "cpu_seconds": round(cpu, 3), "n_iter": r.n_iter,
                   **support_summary(r.coef), "objective": float(r.objective),
                   "solver_path": r.info.get("solver_path"),
                   "steps": dict(collections.Counter(map(_answered_by, messages)))}
            print(json.dumps(row), flush=True)
            out.append(row)
    return out


def support_summary(coef) -> dict:
    """The support of a fit's ``coef`` as its size and a short hash (the first 12 hex digits of the
    sha1 of its sorted indices, comma-joined): two rows with the same hash selected the same samples."""
    idx = np.flatnonzero(np.asarray(coef))
    return {"support_size": int(idx.size),
            "support_sha1": hashlib.sha1(",".join(map(str, np.sort(idx))).encode()).hexdigest()[:12]}


def dump(data: dict) -> str:
    """``data`` as JSON with one row a line (the file stays short and diffs by row)."""
    rows = ",\n  ".join(json.dumps(r) for r in data["rows"])
    head = {k: v for k, v in data.items() if k != "rows"}
    return json.dumps(head)[:-1] + ', "rows": [\n  ' + rows + "\n]}\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1000, 2000, 3000])
    ap.add_argument("--jit", action="store_true", help="with the compiled pivots (numba) instead of without")
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "em_smo_fallback.json")
    ap.add_argument("--force", action="store_true", help="start --json afresh (default: append to its rows)")
    ap.add_argument("--measured", default="", help="a note stored with each row (conditions)")
    ap.add_argument("--commit", default="", help="the commit of the fsframe measured (default: this checkout's HEAD; "
                                                 "set it when PYTHONPATH points at another one)")
    args = ap.parse_args(argv)
    rows = fit_rows(args.rows, args.jit)
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                           text=True).stdout.strip()
    for row in rows:
        row.update(commit=commit, load_average=round(os.getloadavg()[0], 2), measured=args.measured)
    data = json.loads(args.json.read_text()) if not args.force and args.json.exists() else {
        "note": "em-l0 RBF fits of a generated Twonorm (seed = rows), CPU s by process_time, one BLAS thread, "
                "nice -n 5, shared 2-core machine; jit false = FSFRAME_NO_JIT (no compiled warm attempt); "
                "steps = how many EM steps each attempt answered ('first': the first attempt tried; 'failed': not solved); "
                "compiled = whether the compiled pivots were available",
        "rows": []}
    data["rows"].extend(rows)
    args.json.write_text(dump(data))


if __name__ == "__main__":
    main()
