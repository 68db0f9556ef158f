"""Every registered method through every surface a user touches (issue 17): ``fsframe.fit``,
``FSSelector`` (fit, transform, ``get_support``, ``coef_``, ``SelectFromModel``, ``Pipeline``,
``clone``), ``fsframe select`` once and with ``--cv``, ``fsframe compare``, ``fsframe path`` over
the method's first numeric parameter, a study (``fsframe run``) with its ``fsframe report``, and,
for a method declaring a sparsity parameter (``MethodSpec.sparsity``), ``FSSelectorCV`` and
``fsframe select --tune`` — on two classes and on three.

The cases are generated from the registry, so a method a plugin registers (the example plugin's
``scad-svm`` here, any plugin installed tomorrow) is covered without editing this file. Which
cells apply is read from the components' declarations, not from a list of names: a formulation
declaring ``multiclass = "binary"`` must be refused on three classes, with a typed error, on
every surface (checked on a probe plugin below, since no built-in declares it); a loop declaring
``sparse = False`` (a ranking) keeps the better half of the features without ``n_features``; a
formulation declaring ``task = "regression"`` (least squares) gets one cell on a real target
(``tiny(0)``, read by the command line with ``--task regression``) instead of the two class
counts, and goes through the same surfaces in their regression flavour (``FSRegressor``,
``FSRegressorCV``, R² in the tables); every surface refuses a method meeting the other task's data
set with a typed error naming both.

Each surface is compared with an independent computation: the kit's ``check_fit_result``
(support, decision function and objective recomputed in numpy), ``fsframe.fit`` on the same data
(the command line, the estimator, each point of a path), scikit-learn's own rule for
``SelectFromModel``, and ``select --cv`` against ``compare`` (the same splits).
"""

from __future__ import annotations

import csv
import json
import numbers
import types
import warnings

import attrs
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.feature_selection import SelectFromModel
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline

import fsframe
from fsframe.cli import main
from fsframe.errors import UnsupportedProblemError
from fsframe.estimator import FSRegressor, FSSelector
from fsframe.evaluation.splits import make_splits
from fsframe.method import parameter_names
from fsframe.testing import check_fit_result
from fsframe.tuning import FSRegressorCV, FSSelectorCV

from surface_data import reference_fit, tiny

REG = fsframe.get_registry()
METHODS = REG.names("method")


def regression(method: str) -> bool:
    """Whether the method's formulation declares a real target (``task = "regression"``)."""
    return getattr(fsframe.resolve(method).formulation, "task", "classification") == "regression"


CASES = [pytest.param(m, 0, id=f"{m}-regression") if regression(m) else pytest.param(m, c, id=f"{m}-{c}classes")
         for m in METHODS for c in ((0,) if regression(m) else (2, 3))]


# ----------------------------------------------------------------------- declared capabilities
def refused(method: str, n_classes: int) -> bool:
    """Whether the method's declarations say it cannot run on ``n_classes`` classes."""
    return n_classes > 2 and fsframe.resolve(method).formulation.multiclass == "binary"


def first_numeric_parameter(method: str) -> tuple[str, float]:
    """The method's first numeric parameter and its value: the first numeric default of its
    ``MethodSpec``, else the first numeric parameter of its formulation, surrogate, loop (routed
    explicitly as ``kind__name``)."""
    def numeric(v):
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    for key, value in REG.get("method", method).defaults.items():
        if numeric(value):
            return key, value
    res = fsframe.resolve(method)
    for kind, comp in (("formulation", res.formulation), ("surrogate", res.surrogate), ("loop", res.loop)):
        for name in parameter_names(type(comp)) if comp is not None else ():
            if numeric(getattr(comp, name)):
                return f"{kind}__{name}", getattr(comp, name)
    raise AssertionError(f"method {method!r} has no numeric parameter to sweep")


def grid_of(value) -> list:
    """Two grid points: the default and half of it (an integer stays an integer >= 1)."""
    if isinstance(value, numbers.Integral):
        return [int(value), max(1, int(value) // 2)]
    return [float(value), float(value) / 2]


def expect_refusal(run):
    """The typed refusal of a cell that does not apply."""
    with pytest.raises(UnsupportedProblemError, match=r"two classes only \(multiclass='binary'\)"):
        run()


def data_args(tiny_csv, n_classes: int) -> list:
    """The command line's data arguments of ``tiny(n_classes)``: its CSV file, read as a real
    target (``--task regression``) for the regression."""
    return [tiny_csv[n_classes]] + (["--task", "regression"] if n_classes == 0 else [])


def expect_cli_task_refusal(r, method: str):
    """A method meeting the other task's data set: a typed usage error naming both."""
    assert r.code == 2, (r.code, r.err)
    assert "[InvalidOptionError]" in r.err and repr(method) in r.err and "data set 'tiny" in r.err, r.err
    assert ("regression method" if regression(method) else "classification method") in r.err, r.err


def expect_cli_refusal(r):
    assert r.code == 2, (r.code, r.err)
    assert "[UnsupportedProblemError]" in r.err and "multiclass='binary'" in r.err, r.err
    assert "internal error" not in r.err


def class_layout(coef, n_classes: int, n_features: int) -> None:
    """The one layout of ``FitResult.coef`` (fsframe.results.result_coef): features last, classes
    first when there are more than two."""
    coef = np.asarray(coef)
    assert coef.shape[-1] == n_features, coef.shape
    if n_classes > 2:
        assert coef.shape[0] == n_classes, coef.shape


def ranking_size(method: str, n_features: int) -> int | None:
    """The support size a ranking (``OuterLoop.sparse`` False) gets without ``n_features``."""
    return None if fsframe.resolve(method).loop.sparse else max(1, n_features // 2)


# ------------------------------------------------------------------------------------- fit
@pytest.mark.parametrize("method, n_classes", CASES)
def test_fit(method, n_classes):
    X, y = tiny(n_classes)
    if refused(method, n_classes):
        expect_refusal(lambda: fsframe.fit(X, y, method=method))
        return
    r = reference_fit(method, n_classes)
    check_fit_result(r, X, y)  # support, decision function, predictions and objective recomputed
    class_layout(r.coef, n_classes, X.shape[1])
    assert r.decision_function(X).shape == ((len(y),) if n_classes in (0, 2) else (len(y), n_classes))
    if n_classes:
        assert set(np.unique(r.predict(X))) <= set(range(n_classes))
    else:  # a regression: no classes, the fitted values (check_fit_result compared them)
        assert r.classes == () and np.corrcoef(r.predict(X), y)[0, 1] > 0.9
    k = ranking_size(method, X.shape[1])
    if k is not None:  # a ranking has no sparsity of its own: the better half, not every feature
        assert r.n_selected == k and r.info["n_features_default"] == k
    else:
        assert "n_features_default" not in r.info
    # the backend reported is the one that solved the returned model, its version that backend's
    info = r.per_class[0].info if r.per_class else r.info
    if r.backend is None:
        assert info["backend_version"] is None
    else:
        for name in r.backend.split("+"):
            assert name in REG.names("backend")
        assert info["backend_version"] == REG.get("backend", r.backend.split("+")[0]).version()


# ----------------------------------------------------------------------------- FSSelector
@pytest.mark.parametrize("method, n_classes", CASES)
def test_estimator(method, n_classes):
    X, y = tiny(n_classes)
    if refused(method, n_classes):
        expect_refusal(lambda: FSSelector(method).fit(X, y))
        return
    r = reference_fit(method, n_classes)
    if not n_classes:
        return _regressor(method, X, y, r)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sel = FSSelector(method).fit(X, y)
    n = X.shape[1]
    # coef_: FitResult.coef with its leading axes as rows, features in columns (docs/estimator.md)
    rows = int(np.prod(np.shape(r.coef)[:-1], dtype=int))
    assert sel.coef_.shape == (rows, n) and sel.intercept_.shape == (rows,)
    if n_classes > 2:
        assert rows % n_classes == 0  # one row (or one block of rows) per class
    np.testing.assert_allclose(sel.coef_, np.reshape(r.coef, (-1, n)), rtol=1e-7, atol=1e-10)
    np.testing.assert_array_equal(sel.get_support(), r.support)
    np.testing.assert_array_equal(sel.transform(X), X[:, r.support])
    np.testing.assert_array_equal(sel.predict(X), r.predict(X))
    # scikit-learn's SelectFromModel reads coef_: importance = ||coef_[:, j]||_1, threshold "mean"
    imp = np.abs(sel.coef_).sum(axis=0)
    expected = imp >= imp.mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = make_pipeline(SelectFromModel(FSSelector(method)), LogisticRegression()).fit(X, y)
    np.testing.assert_array_equal(pipe[0].get_support(), expected)
    assert pipe.predict(X).shape == y.shape
    # clone: the same parameters, unfitted
    twin = clone(sel)
    assert twin.get_params() == sel.get_params() and not hasattr(twin, "coef_")


def _regressor(method, X, y, r):
    """The regression flavour: FSRegressor equals fsframe.fit, scores R^2, composes."""
    reg = FSRegressor(method).fit(X, y)
    np.testing.assert_allclose(reg.coef_, r.coef, rtol=1e-7, atol=1e-10)
    assert reg.intercept_ == pytest.approx(float(r.intercept), rel=1e-7, abs=1e-10)
    np.testing.assert_array_equal(reg.get_support(), r.support)
    np.testing.assert_allclose(reg.predict(X), r.predict(X))
    resid = y - r.predict(X)
    assert reg.score(X, y) == pytest.approx(1 - resid @ resid / np.sum((y - y.mean()) ** 2), rel=1e-9)
    imp = np.abs(reg.coef_)
    pipe = make_pipeline(SelectFromModel(FSRegressor(method)), LinearRegression()).fit(X, y)
    np.testing.assert_array_equal(pipe[0].get_support(), imp >= imp.mean())
    with pytest.raises(fsframe.errors.InvalidOptionError, match="FSRegressor"):
        FSSelector(method).fit(X, (y > 0).astype(int))
    twin = clone(reg)
    assert twin.get_params() == reg.get_params() and not hasattr(twin, "coef_")


# ------------------------------------------------------------------------- fsframe select
@pytest.mark.parametrize("method, n_classes", CASES)
def test_select_once(method, n_classes, cli, tiny_csv, tmp_path):
    out_json, out_csv = tmp_path / "out.json", tmp_path / "out.csv"
    r_cli = cli("select", *data_args(tiny_csv, n_classes), "--method", method, "--scale", "none", "--json", out_json,
                "--csv", out_csv)
    # the other task's data set: refused, typed, naming the method and the data
    expect_cli_task_refusal(cli("select", *data_args(tiny_csv, 2 if not n_classes else 0), "--method", method), method)
    if refused(method, n_classes):
        expect_cli_refusal(r_cli)
        return
    assert r_cli.code == 0, r_cli.err
    r = reference_fit(method, n_classes)
    X, _ = tiny(n_classes)
    assert f"selected {r.n_selected} of {X.shape[1]} features" in r_cli.out
    doc = json.loads(out_json.read_text())
    if not n_classes:  # the training R², scikit-learn's, of the same fit
        y = tiny(0)[1]
        assert doc["training_r2"] == pytest.approx(r2_score(y, r.predict(X)), rel=1e-9)
        assert f"training R² {r2_score(y, r.predict(X)):.4f}" in r_cli.out
        assert doc["dataset"]["task"] == "regression" and doc["classes"] == []
    coef = np.asarray(doc["coef"])
    class_layout(coef, n_classes, X.shape[1])
    np.testing.assert_allclose(coef, r.coef, rtol=1e-7, atol=1e-10)
    assert doc["result"]["selected"] == r.selected.tolist() and doc["result"]["backend"] == r.backend
    with open(out_csv, newline="") as fh:
        table = list(csv.DictReader(fh))
    assert [row["selected"] for row in table] == [str(bool(s)) for s in r.support]
    weights = np.array([[float(row[k]) for k in row if k.startswith("weight")] for row in table]).T
    np.testing.assert_allclose(weights, np.reshape(r.coef, (-1, X.shape[1])), rtol=1e-7, atol=1e-10)
    if r.backend is None:
        assert "no solver backend" in r_cli.out
    else:
        assert f"backend {r.backend}" in r_cli.out


def _cv_selected(doc) -> list:
    return [f["n_selected"] for f in doc["folds"]]


@pytest.mark.parametrize("method, n_classes", CASES)
def test_select_cv_and_compare(method, n_classes, cli, tiny_csv, tmp_path):
    """``select --cv`` and ``compare`` on the same splits: every fit finishes and both report the
    same fits."""
    a, b = tmp_path / "select.json", tmp_path / "compare.json"
    extra = ["--scale", "none", "--seed", 0] if not n_classes else []  # the regression's scores are checked below
    r_sel = cli("select", *data_args(tiny_csv, n_classes), "--method", method, "--cv", 2, "--jobs", 1, "--json", a,
                *extra)
    r_cmp = cli("compare", *data_args(tiny_csv, n_classes), "--methods", method, "--cv", 2, "--jobs", 1, "--json", b,
                *extra)
    other = data_args(tiny_csv, 2 if not n_classes else 0)
    expect_cli_task_refusal(cli("compare", *other, "--methods", method, "--cv", 2), method)
    if refused(method, n_classes):
        expect_cli_refusal(r_sel)
        expect_cli_refusal(r_cmp)
        return
    assert r_sel.code == 0 and r_cmp.code == 0, (r_sel.err, r_cmp.err)
    assert "0 of 2 fits failed" in r_sel.out
    sel = json.loads(a.read_text())
    cmp = json.loads(b.read_text())
    (res,) = cmp["results"]
    assert all(f["ok"] for f in sel["folds"]) and all(f["ok"] for f in res["folds"])
    assert _cv_selected(res) == _cv_selected(sel)
    assert [f["selected"] for f in res["folds"]] == [f["selected"] for f in sel["folds"]]
    assert cmp["rows"][0]["n_failed"] == 0
    k = ranking_size(method, tiny(n_classes)[0].shape[1])
    if k is not None:
        assert set(_cv_selected(sel)) == {k}
    if not n_classes:  # each fold's R² is scikit-learn's of fsframe.fit on that fold's training part
        X, y = tiny(0)
        splits, _ = make_splits(y, 2, random_state=0, X=X, regression=True)
        assert cmp["protocol"]["task"] == "regression" and "R²" in r_cmp.out and "R²" in r_sel.out
        for s, f_sel, f_cmp in zip(splits, sel["folds"], res["folds"]):
            alone = _fit(X[s.train], y[s.train], method)
            assert f_sel["selected"] == alone.selected.tolist()
            expected = r2_score(y[s.test], alone.predict(X[s.test]))
            assert f_sel["r2"] == pytest.approx(expected, rel=1e-6) and f_cmp["r2"] == pytest.approx(expected, rel=1e-6)
            assert f_sel["accuracy"] is None


# --------------------------------------------------------------------------- fsframe path
@pytest.mark.parametrize("method, n_classes", CASES)
def test_path(method, n_classes, cli, tiny_csv, tmp_path):
    key, value = first_numeric_parameter(method)
    grid = grid_of(value)
    out = tmp_path / "path.json"
    r_cli = cli("path", *data_args(tiny_csv, n_classes), "--method", method, "--grid",
                f"{key}={','.join(map(str, grid))}", "--scale", "none", "--json", out)
    expect_cli_task_refusal(cli("path", *data_args(tiny_csv, 2 if not n_classes else 0), "--method", method,
                                "--grid", f"{key}={','.join(map(str, grid))}"), method)
    if refused(method, n_classes):
        expect_cli_refusal(r_cli)
        return
    assert r_cli.code == 0, r_cli.err
    doc = json.loads(out.read_text())
    assert [p["value"] for p in doc["points"]] == grid
    X, _ = tiny(n_classes)
    for point, v in zip(doc["points"], grid):
        alone = reference_fit(method, n_classes) if v == value else _fit(method, n_classes, **{key: v})
        class_layout(point["coef"], n_classes, X.shape[1])
        assert point["support"] == alone.selected.tolist(), (key, v)
        if alone.objective is None:
            assert point["objective"] is None
        else:
            assert point["objective"] == pytest.approx(alone.objective, rel=1e-5, abs=1e-8), (key, v)


def _fit(*args, **params):
    """``fsframe.fit`` without warnings: ``_fit(method, n_classes, **params)`` on ``tiny(n_classes)``,
    or ``_fit(X, y, method, **params)``."""
    if len(args) == 2:
        (method, n_classes), (X, y) = args, tiny(args[1])
    else:
        X, y, method = args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method=method, **params)


# ----------------------------------------------------------------- a study and its report
@pytest.fixture(scope="module")
def study(tiny_csv, tmp_path_factory):
    """Every registered method on the data sets of its task (those refused on three classes on two
    only; the regression methods on the real target ``tiny0``), 2-fold CV, run by ``fsframe run``
    and reported by ``fsframe report``, in this process."""
    root = tmp_path_factory.mktemp("study")
    lines = ['[study]', 'name = "surfaces"', 'seeds = [0]', '', '[protocol]', 'cv = 2', 'scale = "none"', '']
    for c in (0, 2, 3):
        lines += ['[[datasets]]', f'name = "tiny{c}"', f'path = "{tiny_csv[c].as_posix()}"']
        lines += ['task = "regression"', ''] if c == 0 else ['']
    for m in METHODS:
        lines += ['[[methods]]', f'method = "{m}"']
        lines.append('datasets = ["tiny0"]' if regression(m) else
                     'datasets = ["tiny2"]' if refused(m, 3) else 'datasets = ["tiny2", "tiny3"]')
        lines.append('')
    (root / "study.toml").write_text("\n".join(lines))
    out = root / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_code = main(["run", str(root / "study.toml"), "--out", str(out), "--jobs", "1", "--no-progress"])
        report_code = main(["report", str(out), "--no-plots"])
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    return types.SimpleNamespace(run_code=run_code, report_code=report_code, cells=cells,
                                 report=(out / "report.md").read_text())


@pytest.mark.parametrize("method, n_classes", CASES)
def test_study_and_report(method, n_classes, study):
    assert study.report_code == 0
    mine = [c for c in study.cells if c["label"] == method and c["dataset"] == f"tiny{n_classes}"]
    if refused(method, n_classes):
        assert not mine  # not planned: the study's file restricts it to two classes
        return
    assert len(mine) == 2 and all(c["record"]["ok"] for c in mine), [c["record"].get("error") for c in mine]
    for c in mine:  # a finished cell names the backend that solved it, and that backend's version
        assert c["backend"] == c["record"]["backend"]
        solver = c["record"]["backend"]
        assert c["backend_version"] == (None if solver is None else REG.get("backend", solver.split("+")[0]).version())
    k = ranking_size(method, tiny(n_classes)[0].shape[1])
    if k is not None:
        assert {c["record"]["n_selected"] for c in mine} == {k}
    section = study.report.split(f"tiny{n_classes} (")[1].split("\n\n\n")[0]
    assert f"\n| {method} |" in section, section[:2000]
    if not n_classes:  # R² of each cell: scikit-learn's, of fsframe.fit on the cell's training part
        X, y = tiny(0)
        assert "real target" in section and "| R² |" in section
        for c in mine:
            rec = c["record"]
            alone = _fit(X[rec["train"]], y[rec["train"]], method)
            assert rec["r2"] == pytest.approx(r2_score(y[rec["test"]], alone.predict(X[rec["test"]])), rel=1e-6)


def test_study_ran_every_cell(study):
    assert study.run_code == 0


@pytest.mark.parametrize("method", [m for m in METHODS if regression(m)][:1] + ["l1-svm"])
def test_study_refuses_the_other_task(method, cli, tiny_csv, tmp_path):
    """A study of a method on the other task's data set (a regression method on class labels, a
    classification method on a real target) is refused before any cell, naming both."""
    c = 2 if regression(method) else 0
    study = tmp_path / "study.toml"
    study.write_text(f'[protocol]\ncv = 2\n\n[[datasets]]\nname = "tiny{c}"\npath = "{tiny_csv[c].as_posix()}"\n'
                     + ('task = "regression"\n' if c == 0 else "") + f'\n[[methods]]\nmethod = "{method}"\n')
    expect_cli_task_refusal(cli("run", study, "--out", tmp_path / "results", "--no-progress"), method)
    assert not (tmp_path / "results" / "cells").exists() or not any((tmp_path / "results" / "cells").iterdir())


# ------------------------------------------------------- a cell that does not apply: a probe
@pytest.fixture
def binary_only(add_components):
    """A method whose formulation declares ``multiclass = "binary"`` (the hinge, otherwise)."""
    hinge = REG.get("formulation", "hinge")

    @attrs.frozen
    class BinaryHinge(hinge):
        name = "binary-hinge-probe"
        multiclass = "binary"

    add_components(formulations=[BinaryHinge], methods=[fsframe.MethodSpec(
        "binary-probe", formulation="binary-hinge-probe", surrogate="l1", loop="single", defaults={"C": 1.0})])
    return "binary-probe"


def test_declared_binary_formulation_is_refused_on_every_surface(binary_only, cli, tiny_csv, tmp_path):
    """The refusal branches above, exercised: every surface refuses three classes with the typed
    error before any fit, and runs two."""
    assert refused(binary_only, 3) and not refused(binary_only, 2)
    X, y = tiny(3)
    expect_refusal(lambda: fsframe.fit(X, y, method=binary_only))
    expect_refusal(lambda: FSSelector(binary_only).fit(X, y))
    expect_refusal(lambda: fsframe.path(X, y, binary_only, C=[1.0, 0.5]))
    expect_refusal(lambda: fsframe.compare(X, y, methods=[binary_only], cv=2))
    for args in (("select", tiny_csv[3], "--method", binary_only),
                 ("select", tiny_csv[3], "--method", binary_only, "--cv", 2),
                 ("compare", tiny_csv[3], "--methods", binary_only, "--cv", 2),
                 ("path", tiny_csv[3], "--method", binary_only, "--C", "1,0.5")):
        expect_cli_refusal(cli(*args))
    study = tmp_path / "study.toml"
    study.write_text(f'[protocol]\ncv = 2\n\n[[datasets]]\nname = "tiny3"\npath = "{tiny_csv[3].as_posix()}"\n\n'
                     f'[[methods]]\nmethod = "{binary_only}"\n')
    expect_cli_refusal(cli("run", study, "--out", tmp_path / "results", "--no-progress"))
    assert not (tmp_path / "results" / "cells").exists() or not any((tmp_path / "results" / "cells").iterdir())
    assert cli("select", tiny_csv[2], "--method", binary_only, "--json", tmp_path / "b.json").code == 0
    assert fsframe.fit(*tiny(2), method=binary_only).n_selected >= 1


# ----------------------------------------------- FSSelectorCV and fsframe select --tune
TUNABLE = [pytest.param(m, c, id=f"{m}-regression" if c == 0 else f"{m}-{c}classes") for m in METHODS
           for c in ((0,) if regression(m) else (2, 3)) if REG.get("method", m).sparsity is not None]
"""The cells of every method declaring a sparsity parameter (``MethodSpec.sparsity``): the ones
``FSSelectorCV`` (``FSRegressorCV`` for a regression method) and ``select --tune`` tune without a
grid."""


def tuner(method: str):
    """The tuner of the method's task: ``FSRegressorCV`` for a regression method, else ``FSSelectorCV``."""
    return FSRegressorCV if regression(method) else FSSelectorCV


def test_tunable_cells_are_read_from_the_declarations():
    declared = {m for m in METHODS if REG.get("method", m).sparsity is not None}
    assert {p.values[0] for p in TUNABLE} == declared and {"l1-svm", "l1-ls"} <= declared
    for m in set(METHODS) - declared:  # no sparsity parameter: tuning it needs tune= and grid=
        with pytest.raises(fsframe.errors.InvalidOptionError, match="grid"):
            tuner(m)(m, cv=2).fit(*tiny(0 if regression(m) else 2))
    for m in declared:  # the other task's tuner refuses it, naming the right one
        other = FSSelectorCV if regression(m) else FSRegressorCV
        with pytest.raises(fsframe.errors.InvalidOptionError, match="FSRegressor" if regression(m) else "FSSelector"):
            other(m, cv=2).fit(*tiny(0 if regression(m) else 2))


@pytest.mark.parametrize("method, n_classes", TUNABLE)
def test_tuned(method, n_classes, cli, tiny_csv, tmp_path):
    """``FSSelectorCV`` over the automatic grid of the declared parameter, against independent
    computations: the chosen row follows the rule on ``cv_results_``; every fold's first grid
    point (a path starts it cold) scores what ``fsframe.fit`` on that fold's training part scores
    on its test part; the refit is ``fsframe.fit`` at ``best_params_``; ``select --tune`` makes
    the same choice and the same fit."""
    X, y = tiny(n_classes)
    out = tmp_path / "tuned.json"
    r_cli = cli("select", *data_args(tiny_csv, n_classes), "--method", method, "--tune", "--tune-folds", 2,
                "--seed", 0, "--scale", "none", "--json", out)
    if refused(method, n_classes):
        expect_refusal(lambda: FSSelectorCV(method, cv=2).fit(X, y))
        expect_cli_refusal(r_cli)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = tuner(method)(method, cv=2, random_state=0).fit(X, y)
    name = REG.get("method", method).sparsity
    res = est.cv_results_
    assert est.tuned_ == (name,) and list(res["param_" + name]) == est.grid_[name]
    mean = res["mean_test_score"]
    assert np.isfinite(mean).all()
    best = np.flatnonzero(mean == mean.max())
    assert est.best_index_ == best[np.argmin(res["mean_n_selected"][best])]  # rule "best": ties to fewer features
    assert est.best_params_ == res["params"][est.best_index_] and est.best_score_ == mean.max()
    splits, _ = make_splits(y, 2, random_state=0, X=X, regression=not n_classes)
    first = est.grid_[name][0]
    for s in splits:  # accuracy, or scikit-learn's R² for a regression
        alone = _fit(X[s.train], y[s.train], method, **{name: first})
        pred = alone.predict(X[s.test])
        expected = r2_score(y[s.test], pred) if not n_classes else np.mean(pred == y[s.test])
        assert res[f"split{s.fold}_test_score"][0] == pytest.approx(expected, rel=1e-6)
    refit = _fit(X, y, method, **est.best_params_)
    np.testing.assert_array_equal(est.get_support(), refit.support)
    np.testing.assert_allclose(np.reshape(est.coef_, (-1, X.shape[1])), np.reshape(refit.coef, (-1, X.shape[1])),
                               rtol=1e-6, atol=1e-9)
    assert r_cli.code == 0, r_cli.err
    assert "<- chosen" in r_cli.out and f"selected {refit.n_selected} of {X.shape[1]} features" in r_cli.out
    assert ("mean R²" if not n_classes else "mean accuracy") in r_cli.out
    # the command's grid value may differ from the estimator's in its last bit (computed on the data
    # it loaded), and an interior-point solve's coefficients (Clarabel on exp cones) move by ~1e-5
    # with it (a small entry of a reweighted fit by ~1e-5 absolute): same value to 1e-12, same
    # coefficients to the solver's accuracy
    saved = json.loads(out.read_text())
    chosen = saved[name] if name == "n_features" else saved["params"][name]
    assert chosen == pytest.approx(est.best_params_[name], rel=1e-12)
    np.testing.assert_allclose(np.asarray(saved["coef"]), refit.coef, rtol=1e-4, atol=1e-5)
