"""Every Clarabel solve of fsframe runs on one thread unless ``backend_options`` gives
``max_threads`` (:data:`fsframe.backends.clarabel.DEFAULT_THREADS`; Clarabel's own default, 0,
uses every core: docs/backends.md). The answer is the one Clarabel's own thread count gives, and
both are the independent reference optimum (CVXPY)."""

from __future__ import annotations

import clarabel
import numpy as np
import pytest
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
        assert threads_seen and set(threads_seen) == {1 if given is None else given}  # re-solves too
        objectives[given] = res.objective
        assert res.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert objectives[None] == pytest.approx(objectives[0], rel=1e-9, abs=1e-12)
