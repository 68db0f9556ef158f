"""Work two input checks share, computed once per fit and passed (issue 19, docs/performance.md):
each shared result equals the plain computation it replaces, bit for bit."""

import warnings

import numpy as np
import pytest

from fsframe.errors import DataWarning
from fsframe.dataset import check_Xy
from fsframe.dense_em import DenseHingeSubproblem, _column_extremes
from fsframe.scales import column_norms, columns_scale


def _awkward_columns(m=40, n=9, seed=3):
    """Columns of every sign pattern: mixed, all positive, all negative, constant (also 0 and
    -0.0), a large offset, one entry nonzero."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    X[:, 1] = np.abs(X[:, 1]) + 1.0
    X[:, 2] = -np.abs(X[:, 2]) - 1.0
    X[:, 3] = 0.1
    X[:, 4] = 0.0
    X[:, 5] = -0.0
    X[:, 6] = 1e8 + X[:, 6]
    X[:, 7] = 0.0
    X[-1, 7] = -2.5
    return X


def test_column_extremes_equal_the_two_plain_reductions_bitwise():
    """``_column_extremes``: ``np.abs(X).max(axis=0, initial=0.0)`` and ``np.ptp`` from one maximum and one minimum per
    column, the same bits (signed zeros included); ``None`` for the ptp of an ``X`` without rows."""
    for X in (_awkward_columns(), _awkward_columns(1, 9, 4), np.asfortranarray(_awkward_columns())):
        colmax, ptp = _column_extremes(X)
        want = np.abs(X).max(axis=0, initial=0.0)
        assert colmax.tobytes() == want.tobytes()
        assert ptp.tobytes() == np.ptp(X, axis=0).tobytes()
    colmax, ptp = _column_extremes(np.zeros((0, 3)))
    assert ptp is None and colmax.tobytes() == np.zeros(3).tobytes()


def test_dense_subproblem_column_scale_and_maxima_equal_the_plain_computation():
    """The subproblem's column scale (computed on its shared column pass) is ``column_norms(X,
    centred=True)`` bit for bit, exactly 0 on the constant columns; its column maxima are
    ``max |X_ij|``; the input is not written."""
    X = _awkward_columns()
    y = np.where(np.arange(X.shape[0]) % 3 == 0, 1.0, -1.0)
    X0 = X.copy()
    sub = DenseHingeSubproblem(X, y, 1.0)
    want = column_norms(X, centred=True)
    assert sub.column_scale.tobytes() == want.tobytes()
    assert np.all(sub.column_scale[[3, 4, 5]] == 0.0) and sub.column_scale[7] > 0
    np.testing.assert_array_equal(sub.compiled.base.G.todense().ravel(), np.abs(X).max(axis=0))
    assert X.tobytes() == X0.tobytes()


def test_columns_scale_given_ptp_equals_it_computed():
    """``columns_scale``'s ``ptp`` (from a caller that has it) gives what it computes itself."""
    X = _awkward_columns()
    for centred in (False, True):
        plain = columns_scale(X, X.shape[1], centred)
        assert columns_scale(X, X.shape[1], centred, np.ptp(X, axis=0)).tobytes() == plain.tobytes()


def test_small_class_warning_reads_the_checked_counts():
    """``check_Xy(warn=True)`` counts the classes once (the class check's counts go to the
    diagnostics): a class of 3 samples is still warned of with its count, a class of 5 is not."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    for small, warned in ((3, True), (5, False)):
        y = np.r_[np.zeros(30 - small), np.ones(small)]
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            check_Xy(X, y, warn=True)
        msgs = [str(w.message) for w in rec if issubclass(w.category, DataWarning)]
        assert any(f"smallest class has {small} samples" in m for m in msgs) is warned, msgs


@pytest.mark.parametrize("y", [np.r_[np.zeros(29), np.ones(1)], np.zeros(30)])
def test_class_check_still_refuses_before_the_diagnostics(y):
    """One class, or a class of one sample: the typed error, as before the counts were shared."""
    from fsframe.errors import DataError

    with pytest.raises(DataError):
        check_Xy(np.random.default_rng(1).standard_normal((30, 3)), y, warn=True)


def test_diagnostics_all_zero_columns_from_the_constant_test():
    """``data_diagnostics`` tells all-zero columns (constant, no duplicate pairs among them) from the
    constant test's pass, as ``~X.any(axis=0)`` does: 0.0 and -0.0 columns are not paired, two
    columns of 0.1 are (they are not zero), a column of zeros but one entry is no zero column."""
    from fsframe.data_diagnostics import data_diagnostics

    X = np.random.default_rng(5).standard_normal((12, 8))
    X[:, 0] = 0.0
    X[:, 1] = -0.0
    X[:, 2] = X[:, 3] = 0.1
    X[:, 4] = 0.0
    X[7, 4] = 1.0
    X[:, 5] = X[:, 4]
    d = data_diagnostics(X)
    assert d["constant"] == [0, 1, 2, 3]
    assert d["duplicate_pairs"] == [(2, 3), (4, 5)]
