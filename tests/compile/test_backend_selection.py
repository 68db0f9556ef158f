"""backend='auto': HiGHS for LP/QP, ECOS for SOCP, Clarabel for an SOCP with a quadratic objective
or under a time limit (ECOS reformulates quadratics and has no time limit)."""

from __future__ import annotations

import pytest

import fsframe
from fsframe.errors import InvalidOptionError
from fsframe.method import resolve, select_backend


@pytest.mark.parametrize("spec,time_limit,expected", [
    (dict(method="fsv"), None, "highs"),
    (dict(method="em-l0"), None, "highs"),
    (dict(method="em-l0"), 5.0, "highs"),
    (dict(method="l0-mpm"), None, "ecos"),
    (dict(method="l1-mpm"), 5.0, "clarabel"),
    (dict(formulation="mpm", surrogate="lp", loop="em"), None, "clarabel"),
])
def test_auto_selection(spec, time_limit, expected):
    res = resolve(**spec)
    be = select_backend("auto", res.problem_class, quadratic="quad" in res.terms, time_limit=time_limit)
    assert be.name == expected


def test_explicit_backend_without_time_limit_refuses_it():
    X, y = fsframe.make_synthetic(30, 6, 2, random_state=0).X, fsframe.make_synthetic(30, 6, 2, random_state=0).y
    with pytest.raises(InvalidOptionError, match="time_limit"):
        fsframe.fit(X, y, method="l1-mpm", backend="ecos", time_limit=5.0, delta_fraction=0.5)
    r = fsframe.fit(X, y, method="l1-mpm", time_limit=5.0, delta_fraction=0.5)
    assert r.backend == "clarabel" and r.converged
