"""Regressions of issue 17 that the surface matrix does not pin by itself: the one coefficient
layout (and its typed refusal), the default of a ranking without ``n_features``, the backend a
result reports, and the remedy of a failed largest-bound solve."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.errors import PluginError, SolverFailedError
from fsframe.estimator import FSSelector
from fsframe.results import result_coef
from fsframe.testing import FailingBackend

from surface_data import tiny

REG = fsframe.get_registry()


# ------------------------------------------------------------------------ coefficient layout
def test_native_multiclass_coef_is_class_major_like_one_vs_rest():
    X, y = tiny(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        native = fsframe.fit(X, y, method="dso-fs")
        ovr = fsframe.fit(X, y, method="l1-svm")
    assert native.coef.shape == ovr.coef.shape == (3, X.shape[1])
    # the formulation's own W (n, c) is the transpose, and the decision function is X W + b,
    # recomputed here in numpy from the class-major coef
    np.testing.assert_array_equal(native.formulation_coef(), native.coef.T)
    np.testing.assert_allclose(native.decision_function(X), X @ native.coef.T + native.intercept, rtol=1e-12)
    for k, r in enumerate(ovr.per_class):
        np.testing.assert_array_equal(ovr.coef[k], r.coef)
    # row k of FSSelector.coef_ is class k's weights: the class whose row scores highest is predicted
    sel = FSSelector("dso-fs").fit(X, y)
    np.testing.assert_array_equal(sel.coef_, native.coef)
    np.testing.assert_array_equal(np.argmax(X @ sel.coef_.T + sel.intercept_, axis=1), sel.predict(X))


def test_twin_blocks_stay_before_the_features():
    X, y = tiny(3)
    r = fsframe.fit(X, y, method="l1-twsvm")
    assert r.coef.shape == (3, 2, X.shape[1])
    sel = FSSelector("l1-twsvm").fit(X, y)
    assert sel.coef_.shape == (6, X.shape[1]) and sel.intercept_.shape == (6,)
    np.testing.assert_array_equal(sel.coef_[2:4], r.per_class[1].coef)


def test_a_native_formulation_with_another_layout_is_refused():
    """``result_coef`` reads a native model's coefficients as (n_groups, n_classes); any other
    shape is a PluginError naming the contract, never a silent reinterpretation."""
    margin = REG.get("formulation", "margin")()
    W = np.arange(15.0).reshape(5, 3)
    np.testing.assert_array_equal(result_coef(W, margin, 3, 5), W.T)
    with pytest.raises(PluginError, match=r"\(n_groups, n_classes\) = \(5, 3\)"):
        result_coef(W.T, margin, 3, 5)
    np.testing.assert_array_equal(result_coef(W[:, 0], margin, 2, 5), W[:, 0])  # two classes: one column


# ----------------------------------------------------------------- rankings keep the better half
def test_ranking_without_n_features_keeps_the_better_half():
    ds = fsframe.load_dataset("breast_cancer")
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    half = fsframe.fit(X, ds.y, method="svm-weights")
    assert half.n_selected == 15 and half.info["n_features_default"] == 15
    explicit = fsframe.fit(X, ds.y, method="svm-weights", n_features=15)
    np.testing.assert_array_equal(half.support, explicit.support)
    np.testing.assert_array_equal(half.coef, explicit.coef)
    # the 15 kept are the largest |w_j| of the plain L2 SVM (every feature kept explicitly)
    full = fsframe.fit(X, ds.y, method="svm-weights", n_features=30)
    assert full.n_selected == 30 and "n_features_default" not in full.info
    assert set(half.selected) == set(np.argsort(-np.abs(full.coef))[:15])
    # a sparse method is left to its own sparsity
    assert "n_features_default" not in fsframe.fit(X, ds.y, method="l1-svm").info


def test_ranking_default_in_one_vs_rest_and_the_estimator():
    X, y = tiny(3, n_features=7)
    r = fsframe.fit(X, y, method="svm-weights")
    assert r.n_selected == 3 and r.info["n_features_default"] == 3
    assert FSSelector("svm-weights").fit(X, y).get_support().sum() == 3


# ----------------------------------------------------------------------- the backend reported
def test_backend_reported_is_the_one_that_solved():
    X, y = tiny(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dso = fsframe.fit(X, y, method="dso-fs")  # its E steps run on Clarabel, whatever the fit's backend
        rfs = fsframe.fit(X, y, method="rfs")  # linear systems: no solver backend
    clarabel = REG.get("backend", "clarabel").version()
    assert (dso.backend, dso.info["backend_version"]) == ("clarabel", clarabel)
    assert (rfs.backend, rfs.info["backend_version"]) == (None, None)
    # the summary names what solved it, as compare and fsframe select do
    assert "; solved by numpy (fsframe's own, no solver backend)" in rfs.summary() and "; backend clarabel" in dso.summary()
    # cross-validation and its table say the same (one finished fit each suffices)
    for method, label in (("dso-fs", f"solver clarabel {clarabel}"), ("rfs", "solver numpy (fsframe's own, no solver backend)")):
        res = fsframe.compare(X, y, methods=[method], cv=2, random_state=0)
        assert label in res.report().replace("\n", " "), res.report()
        assert {f.backend for f in res.results[0].folds} == {dso.backend if method == "dso-fs" else None}


def test_study_cells_written_before_the_backend_field_read_the_configured_backend():
    """A cell file of an earlier version has no ``record.backend``: it reads as the cell's
    configured backend (what the report said then), not as "no solver"."""
    from fsframe.evaluation.cells import record_from_json

    old = {"backend": "highs", "record": {"label": "l1-svm", "repeat": 0, "fold": 0, "n_train": 9, "n_test": 3,
                                          "ok": True, "backend_version": "1.16.0", "status": "ok"}}
    assert record_from_json(old).backend == "highs"
    new = {**old, "record": {**old["record"], "backend": None, "backend_version": None}}
    assert record_from_json(new).backend is None


# ------------------------------------------------------------ remedies of the largest-bound solve
def test_largest_bound_time_limit_names_the_time_limit_not_an_installed_backend():
    from fsframe_mpm.bound import largest_bound

    X, y = tiny(2, per_class=40, n_features=30)
    y = np.where(y == 1, 1.0, -1.0)
    opts = fsframe.SolveOptions(time_limit=1e-9)
    with pytest.raises(SolverFailedError) as exc:
        largest_bound(X + 1e-3, y, backend="clarabel", options=opts)  # shifted: not a cached problem
    msg = str(exc.value)
    assert exc.value.status is Status.TIME_LIMIT
    assert "raise time_limit" in msg and "1e-09 s per solve" in msg
    assert "install" not in msg and "Standardise" not in msg


def test_largest_bound_numerical_failure_names_a_backend_not_tried():
    from fsframe_mpm.bound import largest_bound

    X, y = tiny(2, per_class=12)
    y = np.where(y == 1, 1.0, -1.0)
    broken = FailingBackend(REG.get("backend", "ecos")(), fail_at=1, status=Status.NUMERICAL_ERROR)
    with pytest.raises(SolverFailedError) as exc:
        largest_bound(X + 2e-3, y, backend=broken)
    msg = str(exc.value)
    # the remedy names an SOCP backend other than the one that failed (in backend="auto"'s order)
    assert "Standardise the features" in msg and "backend='ecos'" in msg and "install" not in msg
    assert "backend='failing'" not in msg


def test_cli_select_json_names_the_solver(tiny_csv, tmp_path, capsys):
    from fsframe.cli import main

    for method, solver in (("rfs", None), ("dso-fs", f"clarabel {REG.get('backend', 'clarabel').version()}")):
        out = tmp_path / f"{method}.json"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main(["select", str(tiny_csv[3]), "--method", method, "--json", str(out)]) == 0
        assert json.loads(out.read_text())["versions"]["solver"] == solver
    capsys.readouterr()
