"""scipy.sparse input (issue 22): methods whose formulation is linear in X fit a CSR matrix as it is,
with the answer of the dense fit and without ever making the dense matrix; the others refuse it
with a :class:`~fsframe.errors.SparseInputError` naming the part that needs X dense and why."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.dataset import Dataset, data_diagnostics
from fsframe.errors import DataError, SparseInputError
from fsframe.evaluation import cross_validate

pytestmark = pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")


def text_like(m: int, n: int, density: float, seed: int = 2):
    """A bag-of-words-like matrix (non-negative counts-like values, most columns rare) and labels
    driven by a few hundred of its columns."""
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=density, random_state=np.random.default_rng(seed + 1), format="csr",
                  data_rvs=lambda k: rng.exponential(1.0, k))
    s = np.asarray(X[:, :300].sum(axis=1)).ravel()
    return X, np.where(s > np.median(s), 1, -1)


@pytest.fixture(scope="module")
def text():
    X, y = text_like(60, 10_500, 0.008)
    assert X.shape[1] > 10_000 and X.nnz / (X.shape[0] * X.shape[1]) < 0.01
    return X, y


@pytest.mark.parametrize("method, params", [
    ("l1-svm", {"C": 1.0}),                                # LP, working set
    ("fsv", {"C": 1.0, "alpha": 1.0}),                     # reweighted LPs
    ("em-l0", {"C": 10.0}),                                # EM QPs (HiGHS's dual QP)
    ("l1-twsvm", {}),                                      # the twin SVM's two LPs
    (None, {"formulation": "margin", "surrogate": "lp", "loop": "em", "p": 0.5, "C": 10.0}),  # 004's margin
])
def test_sparse_fit_gives_the_dense_answer(text, method, params):
    X, y = text
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    rs = fsframe.fit(X, y, method, **params)
    rd = fsframe.fit(X.toarray(), y, method, **params)
    assert rs.n_selected == rd.n_selected > 0
    np.testing.assert_array_equal(rs.support, rd.support)
    assert rs.objective == pytest.approx(rd.objective, rel=1e-9)
    np.testing.assert_allclose(rs.coef, rd.coef, rtol=1e-7, atol=1e-9)
    # prediction takes sparse rows too, with the dense model's answer
    np.testing.assert_array_equal(rs.predict(X), rd.predict(X.toarray()))
    np.testing.assert_allclose(rs.decision_function(X[:7]), rd.decision_function(X[:7].toarray()), rtol=1e-9)
    for a, b in zip(before, (X.data, X.indices, X.indptr)):  # the input is not modified
        np.testing.assert_array_equal(a, b)


@pytest.fixture
def no_dense(monkeypatch):
    """Fail on any densification of a matrix of at least ``limit`` entries (the dense X, or the
    dense margin rows built from it) while the fixture is active."""
    calls = []
    state = {"limit": None}

    def guard(name, original):
        def wrapped(self, *args, **kwargs):
            limit = state["limit"]
            if limit is not None and self.shape[0] * self.shape[1] >= limit:
                calls.append((name, self.shape))
                raise AssertionError(f"{name} of a {self.shape} sparse matrix: the dense matrix was made")
            return original(self, *args, **kwargs)
        return wrapped

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.csr_array, sp.csc_array, sp.coo_array):
        for name in ("toarray", "todense"):
            monkeypatch.setattr(cls, name, guard(name, getattr(cls, name)))
    return state, calls


def test_sparse_fit_never_makes_the_dense_matrix(no_dense):
    """At 20 000 columns and 0.5% density nothing of size m x n is ever densified: not X, not the
    margin rows, not for prediction; through fit, path and FSSelector. (Planted bug: the hinge's
    margin rows built from ``X.toarray()`` fails here.)"""
    X, y = text_like(40, 20_000, 0.005)
    state, calls = no_dense
    state["limit"] = X.shape[0] * X.shape[1] // 4
    r = fsframe.fit(X, y, "l1-svm", C=1.0)
    assert r.n_selected > 0 and r.certificate["working_set"] is not None
    assert (r.predict(X) == y).mean() > 0.9
    p = fsframe.path(X, y, "l1-svm", C=[0.5, 2.0])
    assert p.n_subproblems == 1 and [q.warm for q in p.points] == ["cold", "restated"]
    from fsframe.estimator import FSSelector

    sel = FSSelector("l1-svm", C=1.0).fit(X, y)
    assert sp.issparse(sel.transform(X)) and sel.transform(X).shape == (40, r.n_selected)
    assert calls == []


@pytest.mark.parametrize("method, params, why", [
    ("l1-mpm", {}, r"formulation 'mpm' needs X dense: its chance constraints are stated on each class's centred "
                   r"samples"),
    ("fs-mempm", {}, r"formulation 'mempm' needs X dense"),
    ("mpm", {}, r"formulation 'mpm-max' needs X dense"),
    ("dso-fs", {}, r"loop 'dso' reads the training data itself"),
    ("ftsvm", {}, r"loop 'greedy' reads the training data itself"),
    ("relieff", {"n_features": 3}, r"loop 'relieff' reads the training data itself"),
    ("l1-twsvm", {"kernel": "rbf"}, r"kernel='rbf' builds the dense kernel matrix"),
    ("l1-svm", {"kernel": "rbf"}, r"a kernel map of sparse data is dense"),
])
def test_parts_that_need_dense_x_refuse_sparse_input(method, params, why):
    X, y = text_like(30, 200, 0.05)
    with pytest.raises(SparseInputError, match=r"X is a scipy.sparse matrix, which method .* cannot use without "
                                               r"densifying: .*" + why + r".*densify explicitly with X.toarray\(\)"):
        fsframe.fit(X, y, method, **params)


@pytest.mark.parametrize("method", ["l1-logistic", "l1-mpm"])
def test_the_refusal_lists_every_dense_formulation_and_the_sparse_methods_from_the_registry(method):
    """The message and docs/data.md's table named neither least squares nor logistic among the
    formulations refused sparse X: both now come from the registry (least squares since takes it)."""
    from pathlib import Path

    from fsframe.method import get_registry, sparse_input_formulations

    takes, refused = sparse_input_formulations()
    assert {"logistic", "mpm", "mempm"} <= set(refused) and not {"hinge", "least-squares"} & set(refused)
    # the built-in hinge methods, in order (an installed plugin, e.g. the example plugin's scad-svm, may add more)
    assert {"arom", "em-l0", "fsv", "l1-svm", "svm-weights"} <= set(takes["hinge"])
    assert takes["hinge"] == tuple(sorted(takes["hinge"])) and takes["twsvm"] == ("l1-twsvm",)
    X, y = text_like(30, 200, 0.05)
    with pytest.raises(SparseInputError) as info:
        fsframe.fit(X, y, method)
    text = str(info.value)
    assert f"The formulations {', '.join(refused)} need X dense" in text
    assert takes["least-squares"] == ("em-ls", "l0-ls", "l1-ls", "lasso", "log-ls")
    assert f"hinge: {', '.join(takes['hinge'])}; least-squares: em-ls, l0-ls, l1-ls, lasso, log-ls; twsvm: l1-twsvm" in text
    # docs/data.md's table: each formulation in a row of its verdict, each method in its formulation's row
    doc = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text()
    rows = [line.split(" | ") for line in doc.splitlines() if line.startswith("| formulations ")]
    verdict = {}
    for row in rows:
        for name in re.findall(r"`([\w-]+)`", row[0]):
            verdict[name] = row[1].strip()
    for f in refused:
        assert verdict.get(f) == "refused", f
    # the docs list fsframe's own methods (an installed plugin's, e.g. the example plugin's scad-svm, are not)
    own = {n for n, e in get_registry().entries.get("method", {}).items() if e.distribution == "fsframe"}
    assert own, "no built-in method in the registry"
    for f, methods in takes.items():
        assert verdict.get(f) == "yes", f
        assert all(verdict.get(m) == "yes" for m in methods if m in own), (f, methods)


def test_path_refuses_before_its_automatic_grid_reads_the_data():
    X, y = text_like(30, 200, 0.05)
    with pytest.raises(SparseInputError, match=r"a kernel map of sparse data is dense"):
        fsframe.path(X, y, "l1-svm", kernel="rbf")
    with pytest.raises(SparseInputError, match=r"formulation 'mpm' needs X dense"):
        fsframe.path(X, y, "l1-mpm")


def test_centring_a_sparse_matrix_is_refused_and_maxabs_keeps_it_sparse():
    X, y = text_like(60, 3000, 0.01)
    with pytest.raises(SparseInputError, match=r"scale='standard' shifts every feature .* Use scale='maxabs'"):
        cross_validate(X, y, method="l1-svm", cv=3)  # refused before any fold runs
    rs = cross_validate(X, y, method="l1-svm", cv=3, scale="maxabs", random_state=0)
    rd = cross_validate(X.toarray(), y, method="l1-svm", cv=3, scale="maxabs", random_state=0)
    assert [r.ok for r in rs.folds] == [True] * 3
    assert [r.selected for r in rs.folds] == [r.selected for r in rd.folds]
    assert [r.accuracy for r in rs.folds] == [r.accuracy for r in rd.folds]


def test_sparse_dataset_is_validated_and_diagnosed_without_densifying():
    X, y = text_like(40, 500, 0.03)
    bad = X.copy()
    bad.data[5] = np.nan
    i = int(np.searchsorted(bad.indptr, 5, side="right") - 1)
    with pytest.raises(DataError, match=rf"X contains 1 non-finite value\(s\) \(NaN at sample {i}, feature "
                                        rf"{bad.indices[5]}\)"):
        Dataset(X=bad, y=y)
    # an identifier column, a duplicate and an empty column: the dense diagnosis, from the sparse one
    j = int(np.argmax(X.getnnz(axis=0)))
    Xw = sp.hstack([X, X[:, [j]], sp.csr_matrix(np.arange(1.0, 41.0)[:, None]), sp.csr_matrix((40, 1))],
                   format="coo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = Dataset(X=Xw, y=y)
    assert ds.is_sparse and ds.X.format == "csr"
    assert data_diagnostics(ds.X) == data_diagnostics(Xw.toarray())
    assert (j, 500) in data_diagnostics(ds.X)["duplicate_pairs"] and data_diagnostics(ds.X)["identifiers"] == [501]
    with pytest.raises(ValueError):  # read-only, as a dense Dataset's X
        ds.X.data[0] = 1.0
