"""Every Clarabel solve of fsframe runs on one thread unless ``backend_options`` gives
``max_threads`` (:data:`fsframe.backends.clarabel.DEFAULT_THREADS`; Clarabel's own default, 0,
uses every core: docs/backends.md). The answer is the one Clarabel's own thread count gives, and
both are the independent reference optimum (CVXPY)."""

from __future__ import annotations

import clarabel
import numpy as np
import pytest
import types

from random_problems import l1mpm_socp, l1svm_lp, reference_optimum

from fsframe import SolveOptions
from fsframe.backends.clarabel import DEFAULT_THREADS, ClarabelBackend, clarabel_settings


def test_one_thread_unless_the_options_say_otherwise():
    assert DEFAULT_THREADS == 1
    assert clarabel_settings(SolveOptions()).max_threads == 1
    given = SolveOptions(backend_options={"max_threads": 0, "tol_feas": 1e-8})
    assert clarabel_settings(given).max_threads == 0  # the caller's choice wins
    assert given.backend_options == {"max_threads": 0, "tol_feas": 1e-8}  # not mutated


@pytest.fixture
def threads_seen(monkeypatch):
    """The ``max_threads`` of every Clarabel solver fsframe builds."""
    seen = []
    make = clarabel.DefaultSolver

    def spy(P, q, A, b, cones, settings):
        seen.append(settings.max_threads)
        return make(P, q, A, b, cones, settings)

    monkeypatch.setattr(clarabel, "DefaultSolver", spy)
    return seen


@pytest.mark.parametrize("make", [l1svm_lp, l1mpm_socp], ids=["lp", "socp"])
def test_every_solver_gets_the_threads_and_the_answer_is_the_reference(threads_seen, make):
    data = make(3)
    best = reference_optimum(data)
    objectives = {}
    for given in (None, 0):
        threads_seen.clear()
        options = SolveOptions(backend_options={} if given is None else {"max_threads": given})
        res = ClarabelBackend().open(data, options).solve()
        assert res.status.value == "optimal"
        assert threads_seen and set(threads_seen) == {1 if given is None else given}
        objectives[given] = res.objective
        assert res.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert objectives[None] == pytest.approx(objectives[0], rel=1e-9, abs=1e-12)


class _StallsOnce:
    """A Clarabel solver whose answer is reported as a stall (``InsufficientProgress``, Clarabel's
    own point kept): fsframe solves again at Clarabel's tolerance, with a new solver."""

    def __init__(self, solver):
        self._solver = solver

    def solve(self):
        sol = self._solver.solve()
        fields = {k: getattr(sol, k) for k in ("x", "z", "s", "iterations", "solve_time", "obj_val", "obj_val_dual",
                                               "r_prim", "r_dual")}
        return types.SimpleNamespace(status=clarabel.SolverStatus.InsufficientProgress, **fields)

    def __getattr__(self, name):
        return getattr(self._solver, name)


@pytest.mark.parametrize("given", [None, 0, 2])
def test_a_re_solve_after_a_stall_gets_the_same_threads(monkeypatch, given):
    """The first solver's answer is a stall: the re-solve builds a second solver, with the same
    ``max_threads`` (fsframe's one, or the caller's), and its answer is the reference optimum."""
    seen = []
    make = clarabel.DefaultSolver

    def spy(P, q, A, b, cones, settings):
        seen.append(settings.max_threads)
        solver = make(P, q, A, b, cones, settings)
        return _StallsOnce(solver) if len(seen) == 1 else solver

    monkeypatch.setattr(clarabel, "DefaultSolver", spy)
    data = l1svm_lp(3)
    options = SolveOptions(backend_options={} if given is None else {"max_threads": given})
    res = ClarabelBackend().open(data, options).solve()
    assert res.status.value == "optimal" and "re-solved" in res.message
    assert len(seen) >= 2 and set(seen) == {DEFAULT_THREADS if given is None else given}
    assert res.objective == pytest.approx(reference_optimum(data), rel=1e-6, abs=1e-9)
