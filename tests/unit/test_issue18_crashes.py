"""Issue 18, item 5 (crashes and untyped errors) at the library level, each test built from the
minimal reproduction: one-vs-rest's cross-class cut on twin SVMs, whose per-class coefficients have
shape ``(2, n)``; a bound-search criterion ``t(NSF)`` that returns something other than a number.
The command-line items (files, SystemExit in a cell) are in ``tests/experiments/test_bad_results_files.py``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import InvalidOptionError


def _four_classes():
    """20 samples x 21 features, 4 classes of 5 (the issue's reproduction size)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 21))
    y = np.repeat(np.arange(4), 5)
    X[:, :4] += 2.0 * np.eye(4)[y]  # feature c carries class c
    return X, y


def _quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(*args, **kw)


@pytest.mark.parametrize("method", ["rtsvm", "l1-twsvm", "ftsvm"])
def test_one_vs_rest_n_features_cuts_twin_svm_groups(method):
    """A twin SVM's group ``j`` is the column ``(w1_j, w2_j)`` of its ``(2, n)`` coefficients. The
    cut to ``n_features`` must rank groups (not rows), keep both rows of a kept column and zero both
    rows of a dropped one. Checked against the four binary fits run one by one and ranked here
    independently: group norm ``|w1_j| + |w2_j|`` (the formulation's l1 group norm) relative to
    the class's largest, best over classes."""
    X, y = _four_classes()
    r = 3
    res = _quiet_fit(X, y, method, n_features=r)
    assert res.coef.shape == (4, 2, 21) and res.n_selected == r
    # class c as label 1 (the larger label is +1, as one-vs-rest codes class c): the same subproblems
    binary = [_quiet_fit(X, (y == c).astype(int), method, n_features=r) for c in range(4)]
    norms = np.array([np.abs(b.coef).sum(axis=0) for b in binary])
    rel = norms / norms.max(axis=1, keepdims=True)
    union = np.array([b.support for b in binary]).any(axis=0)
    assert union.sum() > r  # the cut has work to do
    expected = np.zeros(21, dtype=bool)
    expected[np.argsort(-rel.max(axis=0), kind="stable")[:r]] = True
    np.testing.assert_array_equal(res.support, expected)
    for c, pc in enumerate(res.per_class):
        assert np.all(pc.coef[:, ~expected] == 0.0)  # both rows of every dropped group
        lost = int(np.count_nonzero(binary[c].support & ~expected))
        assert pc.info["n_features_union_cut"] == lost
        if not lost:  # untouched by the cut: the binary fit's model
            np.testing.assert_allclose(pc.coef, binary[c].coef, rtol=1e-6, atol=1e-9)
            continue
        # re-solved on the features kept across classes: a model of its own, with its objective
        assert pc.info["union_cut_resolved"] and pc.objective is not None and pc.certificate["status"] == "optimal"
        if method == "l1-twsvm":  # one convex solve: the L1 twin SVM on its surviving columns, fitted directly
            cols = expected & binary[c].support
            if not cols.any():  # the class lost every feature: the model is its intercept alone
                assert np.all(pc.coef == 0.0)
                continue
            alone = _quiet_fit(X[:, cols], (y == c).astype(int), method)
            np.testing.assert_allclose(pc.coef[:, cols], alone.coef, rtol=1e-6, atol=1e-8)
            assert pc.objective == pytest.approx(alone.objective, rel=1e-7)
    assert res.predict(X).shape == (20,)


def _mempm_data():
    """A seeded 60 x 8 two-class problem, overlapping classes of different spreads."""
    rng = np.random.default_rng(3)
    y = np.where(np.arange(60) < 25, 1.0, -1.0)
    X = rng.standard_normal((60, 8)) * np.where(y[:, None] > 0, 0.7, 1.4)
    X[:, :3] += 0.9 * y[:, None]
    return X, y


@pytest.mark.parametrize("t, shown", [(lambda nsf: "x", "'x', not a real number"),
                                      (lambda nsf: None, "None, not a real number"),
                                      (lambda nsf: True, "True, not a real number")])
def test_bound_search_criterion_returning_a_non_number(t, shown):
    """Before: ``float("x")`` inside the search raised an untyped ValueError."""
    X, y = _mempm_data()
    with pytest.raises(InvalidOptionError, match=r"criterion '<lambda>': t\(NSF=\d+\) returned " + shown):
        _quiet_fit(X, y, "fs-mempm", criterion=t, delta_pos_step=0.2)
