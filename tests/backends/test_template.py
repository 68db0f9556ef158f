"""The base template judges every backend's answer (issue 7 §1, "Done when"): a deliberately
wrong third-party backend cannot report OPTIMAL, whether it implements the raw steps or still
overrides ``solve``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe import Status
from fsframe.backends import HighsBackend, ProblemData, SolveOptions
from fsframe.backends.base import Backend, BackendSession, RawSolution, SolveResult
from fsframe.enums import ProblemClass
from fsframe.testing import StandardProblems


def infeasible_lp() -> ProblemData:
    """``min x1 + x2  s.t.  x1 + x2 <= -1,  x >= 0``: infeasible."""
    return ProblemData(c=np.ones(2), A=sp.csr_matrix((0, 2)), b=np.zeros(0), G=sp.csr_matrix([[1.0, 1.0]]),
                       h=np.array([-1.0]), l=1, lb=np.zeros(2), ub=np.full(2, np.inf))


class Liar(Backend):
    """Implements the raw steps only, and lies: "optimal" with ``point`` and ``duals``."""

    name = "liar"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def __init__(self, point=None, duals=None, objective=None):
        self.point, self.duals, self.objective = point, duals, objective

    def open(self, data, options=SolveOptions()):
        return LiarSession(self, data, options)


class LiarSession(BackendSession):
    def _solve_raw(self, data):
        return None

    def _invert(self, data, raw):
        be = self.backend
        x = np.zeros(data.n) if be.point is None else be.point
        return RawSolution(status=Status.OPTIMAL, x=x, duals=be.duals, objective=be.objective, message="optimal!")


def test_optimal_with_a_made_up_point_on_an_infeasible_lp_is_refused():
    data = infeasible_lp()
    assert HighsBackend().solve(data).status is Status.INFEASIBLE
    # with made-up multipliers: the point violates the row by 1, no inaccurate optimum
    res = Liar(duals={"y": np.zeros(0), "z": np.ones(1)}).solve(data)
    assert res.status is Status.UNKNOWN and "certificate failed" in res.message
    assert res.certificate.primal_residual == pytest.approx(1.0)
    # without multipliers nothing can be certified: never OPTIMAL
    res = Liar().solve(data)
    assert res.status is Status.OPTIMAL_INACCURATE and "cannot certify" in res.message


def test_a_perturbed_optimum_is_refused():
    """The right multipliers beside a point 1 % off the optimum (still feasible): the gap shows
    it; the objective reported is that of the point, not the one claimed."""
    p = StandardProblems.qp_equality()
    x = np.array([1 / 3, 2 / 3])
    y = np.array([4 / 3])
    ok = Liar(point=x, duals={"y": y, "z": np.zeros(0)}).solve(p.data)
    assert ok.status is Status.OPTIMAL and ok.objective == pytest.approx(p.objective)
    off = x + np.array([0.01, -0.01])
    res = Liar(point=off, duals={"y": y, "z": np.zeros(0)}, objective=p.objective).solve(p.data)
    assert res.status is not Status.OPTIMAL
    assert res.objective == pytest.approx(p.data.objective(off)) and res.objective != p.objective


def test_non_finite_point_from_a_third_party_backend_is_a_numerical_error():
    p = StandardProblems.qp_equality()
    res = Liar(point=np.array([np.nan, 1.0]), duals={"y": np.ones(1), "z": np.zeros(0)}).solve(p.data)
    assert res.status is Status.NUMERICAL_ERROR and res.x is None and res.objective is None


class Overrider(Backend):
    """An old-style backend whose session overrides ``solve`` and returns a made-up "optimal"."""

    name = "overrider"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def open(self, data, options=SolveOptions()):
        return OverridingSession(self, data, options)


class OverridingSession(BackendSession):
    def solve(self, data=None):
        data = self.data if data is None else data
        return SolveResult(status=Status.OPTIMAL, x=np.zeros(data.n), objective=-1.0, backend="overrider",
                           solve_time=0.0, duals={"y": np.zeros(0), "z": np.ones(data.G.shape[0])})


def test_a_session_overriding_solve_is_judged_all_the_same():
    res = Overrider().solve(infeasible_lp())
    assert res.status is Status.UNKNOWN and res.objective == 0.0


class Raiser(Liar):
    name = "raiser"

    def open(self, data, options=SolveOptions()):
        return RaisingSession(self, data, options)


class RaisingSession(LiarSession):
    def _solve_raw(self, data):
        raise RuntimeError("segfault averted")


def test_solver_trouble_is_a_status_not_an_exception():
    res = Raiser().solve(infeasible_lp())
    assert res.status is Status.ERROR and "segfault averted" in res.message and res.x is None
