"""The surface matrix's ``l1-svm`` cells with the ``from_data`` path taken at every size
(``HingeFormulation.from_data_min_rows`` and ``from_data_min_ratio`` set to 0, so that
``working_set="auto"`` — what every surface passes — solves from ``X``): ``fsframe.fit``,
``FSSelector``, ``fsframe select`` once and with ``--cv``, ``compare``, ``path``, ``FSSelectorCV``
and ``select --tune``, a study with its report. Each runs the matrix's own checks (against the
kit's numpy recomputation and ``fsframe.fit``), and the path must have been taken."""

from __future__ import annotations

import json
import warnings

import pytest

from fsframe.cli import main
from fsframe_svm import HingeFormulation
from surface_data import reference_fit, run_surface

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
    lines = ['[study]', 'name = "from-data"', 'seeds = [0]', '', '[protocol]', 'cv = 2', 'scale = "none"', '']
    for c in (2, 3):
        lines += ['[[datasets]]', f'name = "tiny{c}"', f'path = "{tiny_csv[c].as_posix()}"', '']
    lines += ['[[methods]]', 'method = "l1-svm"', 'datasets = ["tiny2", "tiny3"]', '']
    (tmp_path / "study.toml").write_text("\n".join(lines))
    out = tmp_path / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(tmp_path / "study.toml"), "--out", str(out), "--jobs", "1", "--no-progress"]) == 0
        assert main(["report", str(out), "--no-plots"]) == 0
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    assert len(cells) == 4 and all(c["record"]["ok"] for c in cells)
    assert {c["record"]["backend"] for c in cells} == {"highs"}
    assert from_data and all(from_data)
    report = (out / "report.md").read_text()
    for c in (2, 3):
        assert "\n| l1-svm |" in report.split(f"tiny{c} (")[1]
