"""Issue 18, item 6 (misleading output), each test built from the minimal reproduction: the MPM's
zero-support probe listed as a fit status, a bound search cut short by ``max_iter`` without a word,
bound-search tolerances finer than the solvers resolve, a NaN criterion, a plugin backend taking
``backend="auto"`` silently, path validation data reported as "y", and a report footer counting the
fits of the first row for every row."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import fsframe
import fsframe.plugins
from fsframe import ProblemClass, Status
from fsframe.backends.highs import HighsBackend
from fsframe.errors import ConvergenceWarning, DataError, DataWarning, FsframeWarning, InvalidOptionError


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _two_classes(m=60, n=8, seed=3):
    """Overlapping classes of different spreads (the MEMPM tests' instance)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(m) < 25, 1.0, -1.0)
    X = rng.standard_normal((m, n)) * np.where(y[:, None] > 0, 0.7, 1.4)
    X[:, :3] += 0.9 * y[:, None]
    return X, y


# -- the zero-support probe ------------------------------------------------------------------------
def test_mpm_fit_lists_no_probe_status():
    """Lanckriet's MPM has no penalty, so the empty support is never proposed: its statuses are the
    largest-bound SOCP and the MPM SOCP, both optimal (before: a third, "infeasible", on every fit)."""
    X, y = _two_classes()
    res = _quiet(fsframe.fit, X, y, "mpm")
    assert res.statuses == (Status.OPTIMAL, Status.OPTIMAL)
    assert len(res.history) == 1 and "zero_support_probe" not in res.info
    assert res.n_selected == X.shape[1]


def test_rejected_probe_is_recorded_in_info_not_statuses(binary_data):
    """An L1-SVM with a huge C: the penalty is negligible next to the loss, the empty support is
    probed and rejected (the loss rises). The returned model is the one subproblem's: one status,
    and the probe's own status in ``info["zero_support_probe"]``."""
    X, y = binary_data
    res = _quiet(fsframe.fit, X, y, "l1-svm", C=1e6, backend="highs")
    assert res.statuses == (Status.OPTIMAL,) and len(res.history) == 1
    assert res.info["zero_support_probe"] == "optimal" and res.n_selected > 0
    # an accepted probe gives the returned model: its status stays a fit status
    zero = _quiet(fsframe.fit, X, y, "l1-svm", C=0.01, backend="ecos")
    assert zero.n_selected == 0 and zero.info["zero_tol_cut_verified"] is True
    assert len(zero.statuses) == 2 and "zero_support_probe" not in zero.info


# -- the bound search --------------------------------------------------------------------------------
def test_bound_search_cut_short_by_max_iter_warns():
    X, y = _two_classes()
    full = _quiet(fsframe.fit, X, y, "fs-mempm", delta_pos_step=0.2)
    assert full.converged and full.n_iter > 8
    with pytest.warns(ConvergenceWarning, match=r"stopped at max_iter=8 SOCPs before the search ended.*"
                                                r"chosen among the \d+ feasible points"):
        cut = fsframe.fit(X, y, "fs-mempm", delta_pos_step=0.2, max_iter=8)
    assert not cut.converged and cut.n_iter == 8 and cut.info["stop_reason"] == "max_iter=8 SOCPs reached"
    # the capped search is the uncapped one's first 8 SOCPs, and chooses the best of their feasible points
    assert [h.params for h in cut.history] == [h.params for h in full.history[:8]]
    feasible = [h for h in full.history[:8] if h.params["feasible"]]
    best = max(feasible, key=lambda h: (h.params["score"], h.params["bound"], -h.n_nonzero))
    assert cut.info["chosen_socp"] == best.k
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fsframe.fit(X, y, "fs-mempm", delta_pos_step=0.2)  # a search that ends by itself says nothing


@pytest.mark.parametrize("name", ["eps", "delta_pos_step", "zero_tol"])
def test_bound_search_tolerances_below_solver_resolution_are_refused(name):
    """Before: ``eps=1e-300`` was accepted and ran 10 000 SOCPs (the bisection's midpoint stops
    moving below ~1e-16; only max_iter ended it). Refused when the method is resolved, before any
    solve, naming the range."""
    from fsframe.loops.bound_search import MIN_RESOLUTION
    from fsframe.method import resolve

    for bad in (1e-300, 0.5 * MIN_RESOLUTION):
        with pytest.raises(InvalidOptionError, match=rf"{name} must lie in \[1e-08, 1\)"):
            resolve("fs-mempm", **{name: bad})
    assert getattr(resolve("fs-mempm", **{name: MIN_RESOLUTION}).loop, name) == MIN_RESOLUTION


def test_bound_search_nan_criterion_is_refused():
    X, y = _two_classes()
    with pytest.raises(InvalidOptionError, match=r"t\(NSF=\d+\) returned NaN"):
        _quiet(fsframe.fit, X, y, "fs-mempm", criterion=lambda nsf: math.nan, delta_pos_step=0.2)
    with pytest.raises(InvalidOptionError, match="returned NaN"):
        _quiet(fsframe.fit, X, y, "fs-mempm", criterion=lambda nsf: np.float64("nan"), delta_pos_step=0.2)


# -- plugin backends and backend="auto" -----------------------------------------------------------
class EagerHighs(HighsBackend):
    """HiGHS under another name, preferring itself to every built-in backend."""

    name = "eager-highs"
    preference = -1


class TiedHighs(HighsBackend):
    name = "a-tied-highs"  # sorts before "highs": only the tie rule keeps the built-in
    preference = 0


class WordyHighs(HighsBackend):
    name = "wordy-highs"
    preference = "high"


def test_plugin_backend_taking_auto_is_announced(add_components, binary_data):
    """Before: a plugin backend with preference -1 silently became every LP/QP fit's solver."""
    add_components(backends=[EagerHighs])
    with pytest.warns(FsframeWarning, match=r"backend 'eager-highs' of plugin 'test-probe'.*preference -1.*"
                                            r"chooses it for LP \(from 'highs', preference 0\), QP \(from 'highs'"):
        fsframe.plugins.get_registry()
    assert fsframe.select_backend("auto", ProblemClass.LP).name == "eager-highs"  # legal, now said
    assert fsframe.fit(*binary_data, "l1-svm").backend == "eager-highs"


def test_plugin_backend_tie_goes_to_the_builtin(add_components):
    add_components(backends=[TiedHighs])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FsframeWarning)
        reg = fsframe.plugins.get_registry()
    assert "a-tied-highs" in reg.names("backend")
    assert fsframe.select_backend("auto", ProblemClass.LP).name == "highs"


def test_plugin_backend_with_a_non_numeric_preference_is_broken(add_components):
    """``preference = "high"`` made ``backend="auto"`` fail with an untyped TypeError (sorting)."""
    add_components(backends=[WordyHighs])
    with pytest.warns(FsframeWarning, match=r"'test-probe' is broken.*preference is 'high', not a finite number"):
        reg = fsframe.plugins.get_registry()
    assert "wordy-highs" not in reg.names("backend")
    assert fsframe.select_backend("auto", ProblemClass.LP).name == "highs"


# -- path validation data -------------------------------------------------------------------------
def test_path_validation_data_is_named_and_may_have_one_class(binary_data):
    """Before: a one-class validation set was refused as "data: y has a single class". Held-out
    data may hold one class; errors that remain name "validation"."""
    X, y = binary_data
    Xv, yv = X[y > 0][:6], y[y > 0][:6]
    P = _quiet(fsframe.path, X, y, "l1-svm", C=[0.1, 1.0], validation=(Xv, yv))
    for p in P.points:
        assert p.accuracy == pytest.approx(np.mean(p.result.predict(Xv) == yv))
    bad = Xv.copy()
    bad[0, 0] = np.nan
    with pytest.raises(DataError, match="^validation: X contains 1 non-finite"):
        _quiet(fsframe.path, X, y, "l1-svm", C=[0.1], validation=(bad, yv))
    with pytest.raises(DataError, match="^validation: X has 6 samples but y has 5"):
        _quiet(fsframe.path, X, y, "l1-svm", C=[0.1], validation=(Xv, yv[:5]))
    with pytest.warns(DataWarning, match=r"validation y has labels the training y never has \('a'\)"):
        P = fsframe.path(X, y, "l1-svm", C=[0.1], validation=(Xv, np.array(["a"] * 6)))
    assert P.points[0].accuracy == 0.0


# -- the report footer ------------------------------------------------------------------------------
def test_report_footer_counts_each_rows_fits(tmp_path):
    """Before: "mean ± std over 3 fits" under a row built from 2 (a failed or missing fit). Rows
    averaging different fits get a ``fits`` column and a footer that says so."""
    from fsframe.evaluation import runner
    from fsframe.evaluation.comparison import compare

    data = fsframe.io.load_dataset("wine")
    both = compare(data, methods=[("a", {"method": "l1-svm", "C": 0.5}), ("b", {"method": "l1-svm", "C": 1.0})],
                   cv=3)
    assert "mean ± std over 3 fits on the same splits" in both.report() and "fits" not in both.table().split("\n")[0]
    real = runner.fit

    def flaky(*a, **k):  # row "b" loses its first fit
        if k.get("C") == 1.0 and not flaky.failed:
            flaky.failed = True
            raise RuntimeError("boom")
        return real(*a, **k)

    flaky.failed = False
    runner.fit = flaky
    try:
        res = _quiet(compare, data, methods=[("a", {"method": "l1-svm", "C": 0.5}),
                                             ("b", {"method": "l1-svm", "C": 1.0})], cv=3)
    finally:
        runner.fit = real
    assert [len(r.ok_folds) for r in res.results] == [3, 2]
    text = res.report(markdown=True)
    assert "over 3 fits" not in text and "over each row's successful fits (column 'fits')" in text
    head, _, row_a, row_b = text.split("\n\n")[1].split("\n")
    assert head.split("|")[-2].strip() == "fits"
    assert row_a.split("|")[-2].strip() == "3" and row_b.split("|")[-2].strip() == "2"
    # the row's mean is over its 2 successful fits
    acc = [f.accuracy for f in res.results[1].folds if f.ok]
    assert f"{100 * np.mean(acc):.2f}" in row_b
