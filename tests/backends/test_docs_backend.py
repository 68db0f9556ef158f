"""The third-party backend of docs/backends.md (SciPy's linprog) is complete: it passes the
conformance kit and the standard LPs, and fits agree with HiGHS (the code is taken from the doc,
so the doc cannot drift from what is tested)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.testing import StandardProblems, check_backend

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"


@pytest.fixture(scope="module")
def linprog_backend():
    code = next(m.group(1) for m in re.finditer(r"```python\n(.*?)```", DOC.read_text(), re.S)
                if m.group(1).startswith('"""A minimal fsframe backend'))
    assert len(code.splitlines()) <= 75
    ns = {"__name__": "linprog_doc_backend"}
    exec(compile(code, str(DOC), "exec"), ns)
    return ns["LinprogBackend"]


def test_doc_backend_passes_the_conformance_kit(linprog_backend):
    ran = check_backend(linprog_backend)
    lps = [p.name for p in StandardProblems.for_backend(linprog_backend)]
    assert lps and set(lps) <= set(ran) and "unknown option rejected" in ran


def test_doc_backend_answers_are_certified(linprog_backend):
    for p in StandardProblems.for_backend(linprog_backend):
        res = linprog_backend().solve(p.data)
        if res.status is Status.OPTIMAL:
            assert res.certificate is not None and res.certificate.ok(1e-6), p.name


def test_doc_backend_fits_like_highs(linprog_backend):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 12))
    y = np.where(X[:, 0] - X[:, 2] + 0.3 * rng.standard_normal(40) > 0, 1, -1)
    a = fsframe.fit(X, y, method="fsv", backend=linprog_backend())
    b = fsframe.fit(X, y, method="fsv", backend="highs")
    assert a.objective == pytest.approx(b.objective, rel=1e-7)
    np.testing.assert_array_equal(a.support, b.support)
