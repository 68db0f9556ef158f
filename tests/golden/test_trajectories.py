"""Golden outer-loop trajectories: the support at every iteration (exactly) and the objective
(rtol 1e-6) of each method on a fixed bundled problem, against ``tests/golden/trajectories.json``.

They catch any change in what the loops do (weights, stopping rules, the exactly-r rule, the
compiler) that the value checks elsewhere tolerate. ``pytest --update-golden`` rewrites the file
after an intended change; the file records the HiGHS version that wrote it, for information only.

The comparison holds under any HiGHS version (``highspy>=1.16``, later releases included): every
subproblem along these trajectories has a unique optimal support, so no simplex path can choose
another vertex. ``test_trajectory_on_an_interior_point_solver`` shows it: Clarabel, an
interior-point method sharing nothing with HiGHS but the problem, follows every trajectory to the
same supports and objectives. A case whose optimum were not unique would fail that test, and is
then no golden case.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fsframe
from fsframe.backends import ClarabelBackend, HighsBackend, SolveOptions
from fsframe.loops import support_of
from fsframe.method import resolve
from fsframe.problem import Subproblem

GOLDEN = Path(__file__).with_name("trajectories.json")
CASES = {
    "l1-svm": {},
    "fsv": {"alpha": 5.0},
    "em-l0": {},
    "arom": {"eps": 1e-3},
    "dca-exp": {"formulation": "hinge", "surrogate": "exp", "loop": "dca", "alpha": 5.0},
    "em-lp": {"method": "em-l0", "p": 0.5},
    "fsv-r3": {"method": "fsv", "n_features": 3},
}


def problem():
    """breast_cancer (WDBC), 120 rows and 12 features, z-scored."""
    ds = fsframe.load_dataset("breast_cancer")
    X = ds.X[:120, :12]
    X = (X - X.mean(0)) / X.std(0)
    return X, np.where(ds.y[:120] == 1, 1.0, -1.0)


def trajectory(name: str, backend=None, options: SolveOptions = SolveOptions()) -> list[dict]:
    params = dict(CASES[name])
    method = params.pop("method", None if "loop" in params else name)
    n_features = params.pop("n_features", None)
    res = resolve(method, **params)
    X, y = problem()
    sub = Subproblem(res.formulation, X, y, res.terms, backend or HighsBackend(), options)
    steps = []

    def record(rec, it):
        steps.append({"k": rec.k, "objective": rec.objective,
                      "support": np.flatnonzero(support_of(it.t, res.loop.zero_tol)).tolist()})

    out = res.loop.run(sub, res.surrogate, n_features=n_features, callback=record)
    sub.close()
    steps.append({"final_support": np.flatnonzero(out.support).tolist(), "converged": out.converged})
    return steps


@pytest.fixture(scope="module")
def golden(request):
    update = request.config.getoption("--update-golden")
    if update:
        data = {"highs": HighsBackend.version(), "problem": problem.__doc__,
                "cases": {name: trajectory(name) for name in CASES}}
        GOLDEN.write_text(json.dumps(data, indent=1) + "\n")
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN} is missing: run pytest --update-golden")
    return json.loads(GOLDEN.read_text())["cases"]


def _same_trajectory(name, expected, got, rel):
    assert len(got) == len(expected), f"{name}: {len(got) - 1} iterations, golden {len(expected) - 1}"
    for g, e in zip(got[:-1], expected[:-1]):
        assert g["support"] == e["support"], f"{name} iteration {e['k']}"
        assert g["objective"] == pytest.approx(e["objective"], rel=rel), f"{name} iteration {e['k']}"
    assert got[-1] == expected[-1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectory(golden, name):
    _same_trajectory(name, golden[name], trajectory(name), rel=1e-6)


TIGHT = SolveOptions(backend_options={"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11})


@pytest.mark.parametrize("name", sorted(CASES))
def test_trajectory_on_an_interior_point_solver(golden, name):
    """The same trajectory on Clarabel (tolerances 1e-11): the supports are the golden ones, so
    they are properties of the problems, not of HiGHS's pivoting; the objectives agree to the
    interior-point accuracy (EM's reported objective sums phi over coefficients near 1e-6 of
    the largest: 1e-7 apart here)."""
    _same_trajectory(name, golden[name], trajectory(name, ClarabelBackend(), TIGHT), rel=1e-6)


def test_golden_file_covers_every_case(golden):
    assert set(golden) == set(CASES)
    assert all(len(v) >= 2 for v in golden.values())
