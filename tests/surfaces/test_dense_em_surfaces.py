"""The surface matrix's cells of every method the dense EM path applies to (read from the registry:
:func:`fsframe.dense_fit.dense_em_applies`, today ``em-l0`` and ``arom``) with that path forced
(``from_data=True`` wherever the fit can take it): ``fsframe.fit``, ``FSSelector``, ``fsframe
select`` once and with ``--cv``, ``compare``, ``FSSelectorCV`` and ``select --tune``, a study with
its report, on two classes and three. Each runs the matrix's own checks (the kit's numpy
recomputation, ``fsframe.fit``), and the path must have been taken. ``fsframe path`` keeps the
compiled path (it carries each subproblem from point to point): its cell runs unchanged and must
not take it."""

from __future__ import annotations

import attrs
import pytest

import fsframe
import fsframe.binary_fit
from fsframe.dense_em import DenseHingeSubproblem
from fsframe.dense_fit import _dense_em_parts, dense_em_applies
from surface_data import reference_fit, run_surface, run_tiny_study

METHODS = tuple(m for m in fsframe.get_registry().names("method") if dense_em_applies(fsframe.resolve(m)))
SURFACES = ("test_fit", "test_estimator", "test_select_once", "test_select_cv_and_compare", "test_tuned")


def test_the_family_is_read_from_the_registry():
    assert {"em-l0", "arom"} <= set(METHODS) and "l1-svm" not in METHODS


@pytest.fixture
def forced(monkeypatch):
    """Every fit the dense path can take, forced onto it; ``calls`` counts its solves."""
    calls = []
    real_solve = DenseHingeSubproblem.solve

    def counted(self, **kw):
        calls.append(1)
        return real_solve(self, **kw)

    def force(res, X, y_pm, backend, options, n_features, ws, *args):
        reuse = args[5] if len(args) > 5 else None  # (keep_model, verify, callback, info, aux, reuse, key)
        if dense_em_applies(res) and (reuse is None or getattr(reuse, "holds_only", False)):
            ws = attrs.evolve(ws, from_data=True)
        return _dense_em_parts(res, X, y_pm, backend, options, n_features, ws, *args)

    monkeypatch.setattr(DenseHingeSubproblem, "solve", counted)
    monkeypatch.setattr(fsframe.binary_fit, "_dense_em_parts", force)
    reference_fit.cache_clear()  # the matrix's reference fits on this path too
    yield calls
    reference_fit.cache_clear()


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("method", METHODS)
def test_surface_on_the_dense_em_path(method, surface, n_classes, forced, request, tmp_path):
    run_surface(surface, method, n_classes, request, tmp_path)
    assert forced  # the dense subproblem solved
    r = reference_fit(method, n_classes)
    for part in r.per_class or (r,):
        assert part.info["solver_path"] == "dense_em" and part.certificate["path"] == "dense_em"
        assert part.backend is None and part.certificate["status"] == "optimal"


@pytest.mark.parametrize("n_classes", [2, 3])
def test_path_keeps_the_compiled_path(n_classes, forced, request, tmp_path):
    # the matrix's checks compare every point with fsframe.fit, which takes the dense path
    run_surface("test_path", "em-l0", n_classes, request, tmp_path)


def test_study_and_report_on_the_dense_em_path(forced, tiny_csv, tmp_path):
    cells, report = run_tiny_study("dense-em", METHODS, tiny_csv, tmp_path)
    assert len(cells) == 4 * len(METHODS) and all(c["record"]["ok"] for c in cells)  # 2 data sets x 2 folds
    assert {c["record"]["backend"] for c in cells} == {None}  # no registered backend solved them
    assert forced
    for c in (2, 3):
        for m in METHODS:
            assert f"\n| {m} |" in report.split(f"tiny{c} (")[1]
