"""The EM loop on identical columns and on data that drives every weight to zero.

* **Identical columns.** Two identical columns make the weighted L2-SVM symmetric under swapping
  them: the L2 start splits their weight evenly, both get the same EM weight ``q`` and, without a
  tie-break, the split stays even for ever — ``em-l0`` then kept *both* copies, spending two of
  ``n_features`` slots on one feature (on the data below it selected columns 0 and 10 instead of
  0 and 1, objective 22.1 instead of 14.2). The loop now tilts an even split once towards the
  member of lowest index (:class:`fsframe.loops.ties.Tiebreak`, as DCA and reweighted-l1 do):
  the answer on ``[X, X[:, 0]]`` is the answer on ``X`` — the same support, coefficients and
  objective — for ``em-l0`` and ``arom``, with and without ``n_features``.
* **The empty model.** On 15 samples with a 3-sample class, 002's weights ``1/t^2`` drive every
  feature to zero (meaningful non-zeros per iterate 60, 60, 40, 3, 0): without ``n_features``
  the answer was the empty model with no word but the small-class data warning. The loop now
  says so (a :class:`~fsframe.errors.ConvergenceWarning` naming the collapse); with
  ``n_features`` the base's own collapse warning is the one given.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning, DataWarning


def _data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 10))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.1 * rng.standard_normal(80) > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("method", ["em-l0", "arom"])
@pytest.mark.parametrize("n_features", [None, 2])
def test_identical_column_changes_nothing(method, n_features):
    X, y = _data()
    X2 = np.column_stack([X, X[:, 0]])  # column 10 is column 0
    X2_before = X2.copy()
    kw = {} if n_features is None else {"n_features": n_features}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # the duplicate pair is reported by the data checks
        a = fsframe.fit(X, y, method=method, **kw)
        b = fsframe.fit(X2, y, method=method, **kw)
    np.testing.assert_array_equal(X2, X2_before)
    # the copy is dropped, the member of lowest index kept: the support of the data without it
    assert not b.support[10]
    np.testing.assert_array_equal(b.support[:10], a.support)
    np.testing.assert_allclose(b.coef[:10], a.coef, rtol=1e-6, atol=1e-8)
    assert b.coef[10] == 0.0
    assert b.objective == pytest.approx(a.objective, rel=1e-8)
    if n_features is not None:  # both informative columns, not the two copies of one
        assert np.flatnonzero(b.support).tolist() == [0, 1]


def test_identical_columns_later_member_kept_when_first_is_the_copy():
    """The tilt goes to the lowest index whichever column came first: the pair (3, 0) keeps 0."""
    X, y = _data()
    X2 = X.copy()
    X2[:, 3] = X2[:, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        b = fsframe.fit(X2, y, method="em-l0", n_features=2)
    assert np.flatnonzero(b.support).tolist() == [0, 1]


def _copies(X, cols):
    return np.column_stack([X] + [X[:, c] for c in cols])


@pytest.mark.parametrize("method", ["em-l0", "arom"])
@pytest.mark.parametrize("cols", [(0,), (0, 0, 1)], ids=["copy", "triple-and-copy"])
def test_copies_take_no_slot_at_three_features(method, cols):
    """At ``n_features=3`` the run reaches 3 non-zeros while a copy still holds weight (the tilt's
    1 % asymmetry takes EM about ten steps to undo): it counted and ranked the copy and selected
    columns 0, 1, 10 (objective 12.46 instead of 11.89 for ``em-l0``). With each class of identical
    columns merged onto its lowest index before the stop and the ``r`` largest, the answer is that
    of the data without the copies: column 0 appearing three times, column 1 twice, changes nothing."""
    X, y = _data()
    X2 = _copies(X, cols)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        a = fsframe.fit(X, y, method=method, n_features=3)
        b = fsframe.fit(X2, y, method=method, n_features=3)
    assert np.flatnonzero(a.support).tolist() == [0, 1, 9]
    assert np.flatnonzero(b.support).tolist() == [0, 1, 9]
    assert np.all(b.coef[10:] == 0.0)
    np.testing.assert_allclose(b.coef[:10], a.coef, rtol=1e-6, atol=1e-8)
    assert b.objective == pytest.approx(a.objective, rel=1e-8)


@pytest.mark.parametrize("method", ["em-l0", "arom"])
def test_copies_take_no_slot_at_four_features(method):
    """``n_features=4``: the copies of 0 and 1 never take a slot (they took two before the merge)."""
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        for cols in [(0,), (1,), (0, 0, 1)]:
            b = fsframe.fit(_copies(X, cols), y, method=method, n_features=4)
            assert int(b.support.sum()) == 4 and not b.support[10:].any(), cols
            assert b.support[[0, 1]].all(), cols


@pytest.mark.parametrize("method", ["l0-logistic", "log-logistic"])
def test_dca_and_reweighted_l1_copies_take_no_slot(method):
    """DCA (``l0-logistic``) and reweighted-l1 (``log-logistic``) share the rule: at
    ``n_features=4`` they selected both copies (columns 0, 1, 9, 10 and, with a triple copy,
    0, 1, 10, 11); now the answer is the one without the copies."""
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        a = fsframe.fit(X, y, method=method, n_features=4)
        for cols in [(0,), (0, 0, 1)]:
            b = fsframe.fit(_copies(X, cols), y, method=method, n_features=4)
            assert np.flatnonzero(b.support).tolist() == np.flatnonzero(a.support).tolist() == [0, 1, 7, 9], cols
            assert np.all(b.coef[10:] == 0.0)
            np.testing.assert_allclose(b.coef[:10], a.coef, rtol=1e-5, atol=1e-7)
            assert b.objective == pytest.approx(a.objective, rel=1e-6)


def test_copy_the_start_chose_is_ranked_as_its_lowest_index():
    """The lasso start of ``l0-ls`` puts the weight of a copied column on the copy alone (no even
    split, so no tilt): ranking the merged norms still selects the lowest index, 0 and not 10."""
    X, _ = _data()
    yr = X[:, 0] + 0.5 * X[:, 1] + 0.1 * np.random.default_rng(1).standard_normal(80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        a = fsframe.fit(X, yr, method="l0-ls", n_features=2)
        b = fsframe.fit(_copies(X, (0,)), yr, method="l0-ls", n_features=2)
    assert np.flatnonzero(a.support).tolist() == np.flatnonzero(b.support).tolist() == [0, 1]
    assert b.objective == pytest.approx(a.objective, rel=1e-6)


def _tiny_class():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((15, 60))
    y = np.array([1] * 3 + [-1] * 12)
    return X, y


def test_collapse_to_the_empty_model_is_warned():
    X, y = _tiny_class()
    with pytest.warns(ConvergenceWarning, match="collapsed to the empty model") as rec:
        res = fsframe.fit(X, y, method="em-l0")
    assert not res.support.any()
    assert np.all(res.coef == 0.0)
    msg = next(str(w.message) for w in rec if "empty model" in str(w.message))
    counts = [int(c) for c in re.search(r"per iterate \[([0-9, ]+)\]", msg).group(1).split(",")]
    assert counts[0] == 60 and counts[-1] == 0 and len(counts) == res.n_iter  # the counts per iterate


def test_collapse_with_n_features_keeps_the_base_warning_only():
    X, y = _tiny_class()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fsframe.fit(X, y, method="em-l0", n_features=5)
    texts = [str(w.message) for w in rec if issubclass(w.category, ConvergenceWarning)]
    assert int(res.support.sum()) == 5
    assert any("collapsed below n_features=5" in t for t in texts)
    assert not any("empty model" in t for t in texts)


def test_no_empty_model_warning_when_features_survive():
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        res = fsframe.fit(X, y, method="em-l0")
    assert res.support.any()


class _Data:
    def __init__(self, X):
        self.X, self.n_groups = X, X.shape[1]


def _brute_force(X):
    _, inverse, counts = np.unique(X.T, axis=0, return_inverse=True, return_counts=True)
    inverse = np.ravel(inverse)
    return sorted(tuple(np.flatnonzero(inverse == c).tolist()) for c in np.flatnonzero(counts > 1))


def test_identical_groups_prefilter_misses_no_pair():
    """The dense pre-filter (``fsframe.loops.ties._candidates``: two sums per column, chains of near
    keys) must keep every column with a twin: against ``np.unique`` over all columns on 0/1 data
    with many ties, on data with near twins (one entry off by 1e-12: not identical) and with
    non-finite entries."""
    from fsframe.loops.ties import identical_groups

    for seed in range(100):
        X = np.random.default_rng(seed).integers(0, 2, size=(6, 30)).astype(float)
        got = sorted(tuple(c.tolist()) for c in identical_groups(_Data(X)))
        assert got == _brute_force(X), seed
    rng = np.random.default_rng(1)
    X = rng.standard_normal((50, 40))
    X[:, 5] = X[:, 7] = X[:, 2]
    X[:, 9] = X[:, 11] = 0.0
    X[:, 30] = X[:, 31]
    X[:, 20] = X[:, 21]
    X[0, 21] += 1e-12  # a near twin is no twin
    X[:, 33] = 1e300 * np.sign(X[:, 33])  # large entries: the keys' tolerance scales with them
    X[:, 34] = X[:, 33]
    got = sorted(tuple(c.tolist()) for c in identical_groups(_Data(X)))
    assert got == _brute_force(X) == [(2, 5, 7), (9, 11), (30, 31), (33, 34)]
    big = X.copy()
    big[:, 36] = big[:, 37] = 1e308  # finite entries whose sums overflow
    assert sorted(tuple(c.tolist()) for c in identical_groups(_Data(big))) == _brute_force(big)
    X[3, 0] = X[3, 1] = np.nan  # nan: compared exactly (np.unique treats equal nans alike per row)
    assert sorted(tuple(c.tolist()) for c in identical_groups(_Data(X))) == _brute_force(X)
    # inf: no rounding bound, compared exactly (the |x| sums, inf, are the pre-filter's only test for it)
    X[4, 12] = X[4, 13] = np.inf
    X[:, 13] = X[:, 12]
    assert sorted(tuple(c.tolist()) for c in identical_groups(_Data(X))) == _brute_force(X)
    assert (12, 13) in _brute_force(X)


def test_identical_groups_prefilter_keeps_few_candidates():
    """The pre-filter's point: on data without twins no column is a candidate (no exact comparison
    runs), with twins the candidates are the twins (and rarely a near key), not every column."""
    from fsframe.loops.ties import _candidates

    X = np.random.default_rng(2).standard_normal((60, 50))
    assert _candidates(X).size == 0
    X[:, 7] = X[:, 3]
    X[:, 40] = X[:, 3]
    assert set(_candidates(X).tolist()) == {3, 7, 40}
