"""Sparse input at text scale (issue 22): ``l1-svm`` on a CSR matrix with 100 000 columns at 0.5 %
density never allocates the dense matrix; memory and time against the dense fit where that fits.

Each case runs in a fresh process (``--case``): the data is made (bag-of-words-like: exponential
values, the label driven by 200 columns), imports are warmed up on a tiny fit, then one
``fsframe.fit(X, y, "l1-svm", C=1)`` is measured with ``tracemalloc`` (peak of the Python/numpy
allocations during the fit: the dense matrix alone would be ``8 m n`` bytes) and the process's
peak resident set (``ru_maxrss``, which includes HiGHS's own memory). Where the dense matrix
is affordable, the same data densified is fitted too and the answers compared (objective to 1e-9
relative, identical support).

    python benchmarks/bench_sparse.py [--quick] [--render]

Writes ``benchmarks/results/sparse.json`` and, on a full run, the section between the ``sparse``
markers of ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_section  # noqa: E402  (one writer of the docs sections)

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "performance.md"
BEGIN, END = "<!-- sparse:begin -->", "<!-- sparse:end -->"
CASES = [  # (m, n, density, also dense)
    (200, 20_000, 0.005, True),
    (200, 100_000, 0.005, True),
    (1_000, 100_000, 0.005, False),
]
QUICK = [(100, 20_000, 0.005, True)]


def make(m: int, n: int, density: float, seed: int = 0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=density, random_state=np.random.default_rng(seed + 1), format="csr",
                  data_rvs=lambda k: rng.exponential(1.0, k))
    s = np.asarray(X[:, :200].sum(axis=1)).ravel()
    return X, np.where(s > np.median(s), 1, -1)


def case(m: int, n: int, density: float, kind: str) -> dict:
    """One measurement, ``kind`` ``"sparse"`` or ``"dense"`` (run in its own process, so that its
    peak RSS is its own)."""
    import fsframe

    warnings.simplefilter("ignore")
    X, y = make(m, n, density)
    fsframe.fit(X[:, :100], y, "l1-svm")  # warm-up: imports and first-call caches
    data = X if kind == "sparse" else X.toarray()
    tracemalloc.start()
    t0 = time.perf_counter()
    r = fsframe.fit(data, y, "l1-svm", C=1.0)
    secs = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"seconds": secs, "peak_traced": peak, "objective": r.objective, "n_selected": r.n_selected,
            "working_set": r.certificate.get("working_set"), "support": np.flatnonzero(r.support).tolist(),
            "build_seconds": r.info["build_seconds"], "compile_seconds": r.info["compile_seconds"],
            "solve_seconds": r.info["solve_seconds"], "backend": f"{r.backend} {r.info.get('backend_version')}",
            "max_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "nnz": int(X.nnz), "csr_bytes": int(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)}


def measure(m: int, n: int, density: float, dense: bool) -> dict:
    out = {"m": m, "n": n, "density": density, "dense_bytes": 8 * m * n}
    for kind in ("sparse", "dense") if dense else ("sparse",):
        proc = subprocess.run([sys.executable, __file__, "--case", str(m), str(n), str(density), kind],
                              capture_output=True, text=True, check=True)
        out[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["nnz"], out["csr_bytes"] = out["sparse"].pop("nnz"), out["sparse"].pop("csr_bytes")
    if dense:
        s, d = out["sparse"], out["dense"]
        d.pop("nnz"), d.pop("csr_bytes")
        out["same_answer"] = bool(abs(s["objective"] - d["objective"]) <= 1e-9 * abs(d["objective"])
                                  and s["support"] == d["support"])
    for kind in ("sparse", "dense"):
        if kind in out:
            out[kind].pop("support")
    return out


def render(res: dict) -> str:
    def mb(b: float) -> str:
        return f"{b / 1e6:,.0f} MB" if b >= 1e7 else f"{b / 1e6:.2g} MB"

    lines = ["`fsframe.fit(X, y, \"l1-svm\", C=1)` on a CSR matrix (bag-of-words-like, 0.5 % density) and, where it "
             "fits, on the same matrix densified. Peak traced = the largest Python/numpy allocation total during the "
             "fit (`tracemalloc`); peak RSS = the resident peak of the process that ran it (HiGHS and the imports "
             f"included; each input in its own process). {res['environment']}.", "",
             "| m × n | stored entries | dense X would be | input | seconds (build / compile / the rest) | "
             "peak traced | peak RSS | working set | selected | same answer |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cases"]:
        for kind in ("sparse", "dense"):
            if kind not in c:
                continue
            k = c[kind]
            lines.append(
                f"| {c['m']:,} × {c['n']:,} | {c['nnz']:,} ({mb(c['csr_bytes'])} CSR) | {mb(c['dense_bytes'])} | {kind} | "
                f"{k['seconds']:.1f} ({k['build_seconds']:.1f} / {k['compile_seconds']:.1f} / "
                f"{k['seconds'] - k['build_seconds'] - k['compile_seconds']:.1f}) | "
                f"{mb(k['peak_traced'])} | {mb(k['max_rss'])} | {k['working_set']} | {k['n_selected']} | "
                f"{'yes' if c.get('same_answer') else '-' if 'same_answer' not in c else 'NO'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--render", action="store_true", help="re-render the docs section from the JSON")
    ap.add_argument("--case", nargs=4, metavar=("M", "N", "DENSITY", "KIND"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        m, n, d, kind = args.case
        print(json.dumps(case(int(m), int(n), float(d), kind)))
        return 0
    out = ROOT / "benchmarks" / "results" / ("sparse_quick.json" if args.quick else "sparse.json")
    if args.render:
        text = render(json.loads(out.read_text()))
        print(text)
        write_section(DOC, BEGIN, END, text)
        return 0
    cases = []
    for m, n, d, dense in QUICK if args.quick else CASES:
        cases.append(measure(m, n, d, dense))
        print(json.dumps(cases[-1]), file=sys.stderr)
    import fsframe
    import scipy

    env = (f"Python {platform.python_version()}, fsframe {fsframe.__version__}, scipy {scipy.__version__}, "
           f"{cases[0]['sparse']['backend']}")
    res = {"cases": cases, "environment": env}
    out.write_text(json.dumps(res, indent=1))
    text = render(res)
    print(text)
    if not args.quick:
        write_section(DOC, BEGIN, END, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
