"""The surface matrix's ``em-logistic`` (two and three classes) and ``em-ls`` cells with EM's
steps solved from ``X`` by Newton's method (the ``quad_from_data`` protocol, taken by default:
docs/glm.md "EM steps from X"): ``fsframe.fit``, ``FSSelector`` / ``FSRegressor``, ``fsframe
select`` once and with ``--cv``, ``compare``, ``path`` and the tuned surfaces. Each runs the
matrix's own checks, and every EM step must have been taken by the protocol (none declined, none
sent to the backend)."""

from __future__ import annotations

import pytest

from fsframe_glm import LeastSquaresFormulation, LogisticFormulation
from surface_data import reference_fit, run_surface

SURFACES = ("test_fit", "test_estimator", "test_select_once", "test_select_cv_and_compare", "test_path", "test_tuned")
CELLS = [("em-logistic", 2), ("em-logistic", 3), ("em-ls", 0)]


@pytest.fixture
def counted(monkeypatch):
    """Every Newton step of both formulations recorded: whether it solved and was certified."""
    calls = []
    for cls in (LogisticFormulation, LeastSquaresFormulation):
        real = cls.solve_quad_from_data

        def wrapped(self, *args, _real=real, **kw):
            out = _real(self, *args, **kw)
            calls.append(out is not None and out.status.value == "optimal")
            return out

        monkeypatch.setattr(cls, "solve_quad_from_data", wrapped)
    reference_fit.cache_clear()
    yield calls
    reference_fit.cache_clear()


@pytest.mark.parametrize("method, n_classes", CELLS)
@pytest.mark.parametrize("surface", SURFACES)
def test_surface_on_the_quad_path(surface, method, n_classes, counted, request, tmp_path):
    run_surface(surface, method, n_classes, request, tmp_path)
    assert counted and all(counted)
    r = reference_fit(method, n_classes)
    for part in r.per_class or (r,):
        assert part.certificate["backend"] == "newton" and part.info["quad_fallbacks"] == ()
