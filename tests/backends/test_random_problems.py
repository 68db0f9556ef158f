"""Random problems against an independent reference (issue 8, "Done when"): 30 L1-SVM LPs and 30
L1-MPM-like SOCPs with column scales mixed over 1e-4..1e4 and C up to 100, on every backend that
supports them. Each answer is either ``OPTIMAL`` with reported objective = objective of the
returned ``x`` = CVXPY/Clarabel's optimum within :data:`RTOL`, or it is not ``OPTIMAL`` (the
backend said it is inaccurate or failed): never a silent wrong optimum."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fsframe import Status
from fsframe.backends import ClarabelBackend, EcosBackend, HighsBackend

from random_problems import l1mpm_socp, l1svm_lp, reference_optimum

RTOL = 1e-5
"""Relative tolerance against the reference. The answers that pass the certificate agree to
better than 2e-6 on these seeds; the certificate's default tolerance (``cert_tol=1e-6``, checked
to ``10 * cert_tol``) is what this bounds, and the Clarabel answers issue 8 found certified but
off by up to 8.2e-5 would fail it."""

N = 30


@functools.lru_cache(maxsize=None)
def _problem(kind: str, seed: int):
    data = l1svm_lp(seed) if kind == "lp" else l1mpm_socp(seed)
    return data, reference_optimum(data)


def _check(backend, data, ref):
    res = backend.solve(data)
    if res.status is not Status.OPTIMAL:
        return res.status
    assert res.objective == data.objective(res.x), "the reported objective is not that of the returned x"
    assert data.max_violation(res.x) <= 1e-6 * max(1.0, np.max(np.abs(data.h), initial=0.0))
    assert res.objective == pytest.approx(ref, rel=RTOL, abs=1e-12), (backend.name, res.message)
    return res.status


@pytest.mark.parametrize("seed", range(N))
def test_random_l1svm_lp(seed):
    data, ref = _problem("lp", seed)
    statuses = [_check(b, data, ref) for b in (HighsBackend(), EcosBackend(), ClarabelBackend())]
    assert statuses[0] is Status.OPTIMAL  # the simplex answers every one of these exactly


@pytest.mark.parametrize("seed", range(N))
def test_random_l1mpm_socp(seed):
    data, ref = _problem("socp", seed)
    statuses = [_check(b, data, ref) for b in (EcosBackend(), ClarabelBackend())]
    assert Status.OPTIMAL in statuses
