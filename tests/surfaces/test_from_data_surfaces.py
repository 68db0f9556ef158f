"""The surface matrix's ``l1-svm`` cells with the ``from_data`` path taken at every size
(``HingeFormulation.from_data_min_rows`` and ``from_data_min_ratio`` set to 0, so that
``working_set="auto"`` — what every surface passes — solves from ``X``): ``fsframe.fit``,
``FSSelector``, ``fsframe select`` once and with ``--cv``, ``compare``, ``path``, ``FSSelectorCV``
and ``select --tune``, a study with its report. Each runs the matrix's own checks (against the
kit's numpy recomputation and ``fsframe.fit``), and the path must have been taken."""

from __future__ import annotations

import pytest

from fsframe_svm import HingeFormulation
from surface_data import reference_fit, run_surface, run_tiny_study

SURFACES = ("test_fit", "test_estimator", "test_select_once", "test_select_cv_and_compare", "test_path", "test_tuned")


@pytest.fixture
def from_data(monkeypatch):
    """Every hinge L1 fit from ``X``; ``calls`` counts the solves that took the path."""
    calls = []
    real = HingeFormulation.solve_from_data

    def counted(self, *args, **kw):
        out = real(self, *args, **kw)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 0)
    monkeypatch.setattr(HingeFormulation, "from_data_min_ratio", 0.0)
    monkeypatch.setattr(HingeFormulation, "solve_from_data", counted)
    reference_fit.cache_clear()  # the matrix's reference fits on this path too
    yield calls
    reference_fit.cache_clear()


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("surface", SURFACES)
def test_surface_on_the_from_data_path(surface, n_classes, from_data, request, tmp_path):
    run_surface(surface, "l1-svm", n_classes, request, tmp_path)
    assert from_data and all(from_data)
    r = reference_fit("l1-svm", n_classes)
    for part in r.per_class or (r,):
        assert part.info["solver_path"] == "from_data" and part.certificate["path"] == "from_data"


def test_study_and_report_on_the_from_data_path(from_data, tiny_csv, tmp_path):
    cells, report = run_tiny_study("from-data", ["l1-svm"], tiny_csv, tmp_path)
    assert len(cells) == 4 and all(c["record"]["ok"] for c in cells)
    assert {c["record"]["backend"] for c in cells} == {"highs"}
    assert from_data and all(from_data)
    for c in (2, 3):
        assert "\n| l1-svm |" in report.split(f"tiny{c} (")[1]
