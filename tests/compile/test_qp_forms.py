"""HiGHS's stable QP forms: the dual falls back to the scaled primal when HiGHS fails on it, and a
tiny Hessian is scaled up before it reaches HiGHS (it cycled unscaled)."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import fsframe.backends.highs as highs_mod
from fsframe import Status
from fsframe.backends.base import SolveOptions, SolveResult
from fsframe.backends.diag_qp import DualQPSession
from fsframe.backends.highs import HighsBackend, HighsSession
from fsframe.testing import StandardProblems


def test_dual_failure_falls_back_to_scaled_primal(monkeypatch):
    p = StandardProblems.em_qp()
    real_solve = HighsSession.solve
    calls = []

    def failing_first(self, data=None):
        calls.append(data)
        if len(calls) == 1:  # the dual's inner solve
            return SolveResult(status=Status.NUMERICAL_ERROR, x=None, objective=None, backend="highs",
                               solve_time=0.0, message="Solve error")
        return real_solve(self, data)

    monkeypatch.setattr(HighsSession, "solve", failing_first)
    session = HighsBackend().open(p.data, SolveOptions(backend_options={"qp_form": "dual"}))
    assert isinstance(session, DualQPSession)
    res = session.solve(p.data)
    assert res.status is Status.OPTIMAL
    assert res.objective == pytest.approx(p.objective, rel=1e-6)
    assert "dual QP failed (numerical_error: Solve error); solved the scaled primal" in res.message


def test_infeasible_dual_is_not_retried(monkeypatch):
    """INFEASIBLE/UNBOUNDED of the dual are facts about the primal, reported as such."""

    def no_retry(self, data):
        raise AssertionError("the dual's status was retried in the scaled primal")

    monkeypatch.setattr(DualQPSession, "_solve_scaled", no_retry)
    monkeypatch.setattr(DualQPSession, "_solve_primal", no_retry)
    p = StandardProblems.em_qp()
    # an infeasible primal: add the row 0 >= 1 (G row of zeros with h = -1)
    import scipy.sparse as sp

    d = p.data
    bad = attrs.evolve(d, G=sp.vstack([d.G[: d.l], sp.csr_matrix((1, d.n)), d.G[d.l:]], format="csr"),
                       h=np.concatenate([d.h[: d.l], [-1.0], d.h[d.l:]]), l=d.l + 1)
    res = HighsBackend().solve(bad, SolveOptions(backend_options={"qp_form": "dual"}))
    assert res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)
    assert res.x is None
    assert res.message.startswith("dual QP:") and "scaled primal" not in res.message


@pytest.mark.parametrize("scale_p,expected", [(1e-4, 1e4), (0.5, 2.0), (1.0, 1.0), (200.0, 1.0)])
def test_objective_scale_only_scales_up(scale_p, expected):
    p = StandardProblems.em_qp()
    P = p.data.P / abs(p.data.P).max() * scale_p
    assert highs_mod._objective_scale(attrs.evolve(p.data, P=P)) == pytest.approx(expected)


def test_scaled_qp_gives_unscaled_objective_and_duals():
    """Scaling the objective inside HiGHS is invisible outside: same optimum, same multipliers."""
    p = StandardProblems.em_qp()
    s = 1e-3 / abs(p.data.P).max()
    tiny = attrs.evolve(p.data, P=(p.data.P * s).tocsc(), c=p.data.c * s, offset=p.data.offset * s)
    opts = SolveOptions(backend_options={"qp_form": "primal"})
    a = HighsBackend().solve(tiny, opts)
    assert a.status is Status.OPTIMAL
    assert a.objective == pytest.approx(p.objective * s, rel=1e-6)
    assert a.certificate is not None and a.certificate.ok(1e-6)
