"""The tuned L1-SVM's inner sweep solved from ``X`` (docs/performance.md, "Tuning `l1-svm` on
COIL20"): along a path the hinge LP is solved by column and row generation from 500 samples and
as many features (``HingeFormulation.from_data_path_min_ratio``), each point starting from the
previous point's support and margin rows (``fsframe.formulation.PathStart``), the grid swept from
its smallest ``C``. The answers must be the compiled path's: a fingerprint on a 20-class stand-in
at COIL20's shape ratio (1 024 features on 756 samples: 1.35), with the size threshold lowered so
that it runs in seconds, against one independent compiled ``fsframe.fit`` per grid point (the
ratio is below the single fit's 4, so those never take the generation)."""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest
from fsframe_svm import HingeFormulation

import fsframe
from fsframe.evaluation.config import _make_config
from fsframe.evaluation.protocols import Evaluator, Extras, ranking, study_cell
from fsframe.evaluation.splits import make_splits
from fsframe.formulation import PathStart

GRID = [0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]  # paper 004's grid for the L1-SVM


def _stand_in():
    """10 classes, 150 samples x 203 features (COIL20's inner fold: 756 x 1 024), z-scored; the
    class signal weak enough that C = 0.1 keeps some features and C >= 1 separates (hard margin)."""
    rng = np.random.default_rng(11)
    k, m, n = 10, 150, 203
    y = np.repeat(np.arange(k), m // k)
    X = rng.normal(size=(m, n))
    X[:, :k] += 2.5 * np.eye(k)[y]
    return (X - X.mean(0)) / X.std(0), y


def _cfg(X, y, sweep=True):
    cfg = _make_config("l1-svm", {"method": "l1-svm"}, n_features=None, scale="standard", retrain=None,
                       retrain_C=1.0, n_columns=X.shape[1], n_samples=X.shape[0], n_classes=len(np.unique(y)))
    ext = Extras(evaluator=Evaluator(clf="linear-svc"), top_k=(10, 40), tune={"C": GRID}, tune_folds=3, sweep=sweep)
    return attrs.evolve(cfg, extras=ext)


@pytest.fixture
def generating(monkeypatch):
    """The path's generation from 60 samples on (500 in the shipped rule), and every call of
    ``solve_l1_hinge`` recorded: ``(C, its guess)``."""
    from fsframe.backends import hinge_generation

    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 60)
    calls, real = [], hinge_generation.solve_l1_hinge

    def recorded(X, y, C, *a, **k):
        calls.append((float(C), k.get("guess", "auto")))
        return real(X, y, C, *a, **k)

    monkeypatch.setattr(hinge_generation, "solve_l1_hinge", recorded)
    return calls


def test_sweep_from_x_has_the_compiled_fits_answers(generating):
    """Every grid point of a fold: per class the same support, the same top-40 ranking over
    the classes, the objective within 1e-7 (relative) of the compiled fit's; every class of every
    point solved from X, each after the first point from the previous point's start."""
    X, y = _stand_in()
    cfg = _cfg(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID])
        n_swept = len(generating)
        alone = [fsframe.fit(X, y, method="l1-svm", C=c) for c in GRID]
    assert n_swept == len(GRID) * 10 and len(generating) == n_swept  # the single fits: compiled
    sizes = set()
    for c, got, want in zip(GRID, fits, alone):
        assert not isinstance(got, BaseException), got
        assert "from_data" in {r.info.get("solver_path") for r in got.per_class}, c
        np.testing.assert_array_equal(np.asarray(got.coef) != 0, np.asarray(want.coef) != 0, err_msg=f"C={c}")
        np.testing.assert_array_equal(ranking(got)[:40], ranking(want)[:40], err_msg=f"C={c}")
        assert got.objective == pytest.approx(want.objective, rel=1e-7), c
        assert all(r.certificate["status"] == "optimal" for r in got.per_class), c
        sizes.add(int(np.count_nonzero(got.coef)))
    assert len(sizes) >= 3  # the grid crosses the empty, a partial and the hard-margin supports
    # the smallest C first (cold), every later point from the previous one's support and rows
    firsts = [g for C, g in generating[:n_swept] if C == min(GRID)]
    assert all(isinstance(g, str) for g in firsts)
    assert all(isinstance(g, tuple) for C, g in generating[:n_swept] if C != min(GRID))


def test_swept_cell_from_x_equals_the_cell_fitted_point_by_point(generating):
    """The whole cell (3 inner folds, the choice of C, the final fit and the top-k curve): the same
    as the cell that fits each grid point on its own (compiled: single fits do not generate)."""
    X, y = _stand_in()
    split = make_splits(y, 0.25, repeats=1, random_state=3)[0][0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        swept = study_cell(X, y, split, _cfg(X, y, True), raise_errors=True)
        assert generating  # the sweep generated (the inner folds have 75 samples)
        plain = study_cell(X, y, split, _cfg(X, y, False), raise_errors=True)
    assert swept.ok and plain.ok
    assert swept.facts["tuned C"] == plain.facts["tuned C"]
    assert swept.curve == plain.curve and swept.selected == plain.selected and swept.accuracy == plain.accuracy


def test_compiled_sweep_keeps_the_largest_c_first(monkeypatch):
    """Without generation (the fit options turn it off) the sweep runs from the largest C, the
    compiled path's faster end; the answers are unchanged."""
    from fsframe.working_set import WorkingSetOptions

    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 100)
    X, y = _stand_in()
    cfg = attrs.evolve(_cfg(X, y), fit_options={"working_set": WorkingSetOptions(from_data=False)})
    seen = []
    real = HingeFormulation.restate

    def restate(self, built, base, compiled, params):
        seen.append(params["C"])
        return real(self, built, base, compiled, params)

    monkeypatch.setattr(HingeFormulation, "restate", restate)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": c} for c in GRID[:3]])
    assert seen[0] == 0.01 and seen[-1] == 0.001  # 0.1 built, then restated downwards
    assert all("solver_path" not in r.info for f in fits for r in f.per_class)


def test_takes_start_reads_the_signature():
    """``_takes_start``: a ``solve_from_data`` written before ``PathStart`` (no ``start`` keyword)
    does not take it; one with ``start`` or ``**kwargs`` does (the path with such a formulation:
    test_a_solve_from_data_without_start_solves_a_path)."""
    from fsframe.from_data import _takes_start

    def old(X, y, terms, weights, *, backend, options, force=False):
        return None

    def new(X, y, terms, weights, *, backend, options, force=False, start=None):
        return None

    def open_(X, y, terms, weights, **kwargs):
        return None

    assert not _takes_start(old) and _takes_start(new) and _takes_start(open_)
    assert PathStart().previous is None


def _binary_stand_in():
    """Two classes, 70 samples x 90 features (as many features as samples: the path's ratio)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(70, 90))
    y = np.repeat([0, 1], 35)
    X[:, :3] += 1.5 * (2 * y[:, None] - 1)
    return (X - X.mean(0)) / X.std(0), y


def _skip_highs_for_lp(monkeypatch):
    """``backend="auto"`` resolves LPs away from HiGHS (a backend's ``auto_skips``)."""
    from fsframe.backends.highs import HighsBackend
    from fsframe.enums import ProblemClass

    monkeypatch.setattr(HighsBackend, "auto_skips", (ProblemClass.LP,), raising=False)


@pytest.mark.parametrize("case, from_x", [
    ("default", True), ("forced", True), ("n_features", False), ("verify", False), ("backend", False),
    ("auto resolves to another backend", False), ("time_limit", False), ("working_set=False", False)])
def test_the_sweeps_order_follows_the_paths_actual_solver(monkeypatch, case, from_x):
    """The study sweeps from the smallest C exactly when the path's fits solve from X: its
    predicate is the fits' own rule (``n_features``, ``verify=``, the resolved backend, a
    ``time_limit``, ``working_set``), not a copy of it."""
    from fsframe.evaluation import protocols
    from fsframe.working_set import WorkingSetOptions

    monkeypatch.setattr(HingeFormulation, "from_data_min_rows", 60)
    X, y = _binary_stand_in()
    cfg = _cfg(X, y)
    opts = {"forced": {"working_set": WorkingSetOptions(from_data=True)}, "verify": {"verify": "clarabel"},
            "backend": {"backend": "clarabel"}, "time_limit": {"time_limit": 100.0},
            "working_set=False": {"working_set": False}}.get(case, {})
    cfg = attrs.evolve(cfg, fit_options={**cfg.fit_options, **opts}, n_features=5 if case == "n_features" else None)
    if case == "auto resolves to another backend":
        _skip_highs_for_lp(monkeypatch)
    rising = protocols._from_data_on_path(cfg, X.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = cfg.extras._fold_fits(X, y, cfg, [{"C": 0.1}, {"C": 1.0}])
    assert not any(isinstance(f, BaseException) for f in fits), fits
    paths = {f.info.get("solver_path", "compiled") for f in fits}
    assert rising is from_x and paths == ({"from_data"} if from_x else {"compiled"}), (rising, paths)


def test_a_solve_from_data_without_start_solves_a_path(add_components):
    """A formulation whose ``solve_from_data`` has no ``start`` keyword (written before
    ``PathStart``) solves every point of ``fsframe.path`` from X, called without ``start`` (a
    ``start`` would be a TypeError here), with the compiled fits' answers."""
    calls = []

    class OldHinge(HingeFormulation):
        name = "old-hinge"

        def solve_from_data(self, X, y, terms, weights, *, backend, options, force=False):
            calls.append(self.C)
            return HingeFormulation(C=self.C).solve_from_data(X, y, terms, weights, backend=backend,
                                                               options=options, force=True)

    add_components(formulations=[OldHinge])
    X, y = _binary_stand_in()
    grid = [0.1, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        swept = fsframe.path(X, y, formulation="old-hinge", surrogate="l1", loop="single", C=grid, progress=False)
    assert calls == grid
    for c, pt in zip(grid, swept.points):
        want = fsframe.fit(X, y, "l1-svm", C=c, working_set=False)
        assert pt.result.info["solver_path"] == "from_data" and pt.result.certificate["status"] == "optimal"
        assert pt.result.objective == pytest.approx(want.objective, rel=1e-7), c
        np.testing.assert_array_equal(pt.result.support, want.support)
