"""The loop template's cheaper forms of what it computes per iterate and per run (issue 19, the
loop's own Python; docs/performance.md, "Issue 19 at a glance"), each against the plain form it
stands for, bit for bit, on the inputs that take it and on those that must not:

* the step length the base records is kept on the iterate and handed to the loop's
  :meth:`~fsframe.loops.base.OuterLoop.small_step` only for the same two read-only points;
* the base's count of non-zeros and the run's scale come from one reduction;
* :func:`~fsframe.loops.selection.select_exactly`'s counts from one ``k x n`` array;
* :func:`~fsframe.loops.em.group_magnitudes` from the rows of an ``n x k`` array of columns;
* :attr:`~fsframe.problem.Iterate.point` formed without numpy's wrappers, and
  :func:`~fsframe.problem._read_only`'s shortcut for an array of its own;
* :func:`~fsframe.loops.em._plain` (what the compiled weights take);
* an EM run with ``n_features`` passes its steps through (``yield from``) and is still closed.
"""

from __future__ import annotations

import types
import warnings

import attrs
import numpy as np
import pytest

from fsframe.dense_em import DenseHingeSubproblem, run_dense_em
from fsframe.loops import base as loop_base
from fsframe.loops import measures
from fsframe.loops import selection
from fsframe.loops.measures import _largest, _norm, _step_length, _support_size
from fsframe.loops.em import EM, _plain, group_magnitudes
from fsframe.loops.selection import reference_scale, select_exactly, support_of
from fsframe.problem import Iterate, _read_only
import fsframe.method


def _frozen(values):
    a = np.array(values, dtype=float)
    a.flags.writeable = False
    return a


def _iterate(coef, intercept):
    it = Iterate.computed(np.asarray(coef, dtype=float), intercept, np.abs(np.asarray(coef, dtype=float)),
                          groups=np.arange(np.size(coef)), loss=0.0, objective=0.0, seconds=0.0)
    return it


def _read_only_iterate(coef, intercept):
    return attrs.evolve(_iterate(np.zeros(len(coef)), 0.0), coef=_frozen(coef), intercept=_frozen([intercept]))


# -- the step length, kept per pair of points ---------------------------------------------------

def test_step_length_is_kept_only_for_the_same_two_points():
    """Planted: the kept step returned without checking that ``old_point`` is the one it was
    measured from (the second call returns 5.0 for a step of 13.0)."""
    new = _read_only_iterate([3.0, 4.0], 0.0)
    a = _read_only_iterate([0.0, 0.0], 0.0).point
    b = _read_only_iterate([-9.0, -1.0], 0.0).point  # ||(12, 5, 0)|| = 13
    assert _step_length(new, a) == 5.0
    assert _step_length(new, a) == 5.0
    assert _step_length(new, b) == 13.0
    assert _step_length(new, a) == 5.0
    # an equal but other object is measured afresh (the same value)
    assert _step_length(new, _frozen([0.0, 0.0, 0.0])) == 5.0


def test_step_length_is_not_kept_for_writeable_points():
    """A writeable point (an iterate whose model can change) is measured at every call: a change to
    it shows (planted: kept whatever the flags, the second call returns 5.0)."""
    new = _iterate([3.0, 4.0], 0.0)
    old = np.zeros(3)
    assert _step_length(new, old) == 5.0
    new.coef[0] = 0.0
    assert _step_length(new, old) == 4.0
    frozen = _read_only_iterate([3.0, 4.0], 0.0)
    old[1] = 4.0  # a writeable old point: not kept either
    assert _step_length(frozen, old) == 3.0
    old[1] = 0.0
    assert _step_length(frozen, old) == 5.0


def test_step_length_follows_an_iterate_whose_flag_is_turned_back():
    """The kept step belongs to the kept point: once the model is writeable again its point is formed
    afresh (another object), and so is the step."""
    new = _read_only_iterate([3.0, 4.0], 0.0)
    old = _read_only_iterate([0.0, 0.0], 0.0).point
    assert _step_length(new, old) == 5.0
    new.coef.flags.writeable = True
    new.coef[1] = 0.0
    assert _step_length(new, old) == 3.0


def test_step_length_is_not_kept_for_a_read_only_view_of_a_writeable_array():
    """A read-only view's own flag says nothing of its base, which can change under it: such an old
    point is measured at every call (planted: kept on the points' own flags, the second call
    returns 5.0 for a step of 4.0)."""
    new = _read_only_iterate([3.0, 4.0], 0.0)
    base = np.zeros(3)
    view = base[:]
    view.flags.writeable = False
    assert _step_length(new, view) == 5.0
    base[0] = 3.0
    assert _step_length(new, view) == 4.0


def test_point_read_while_writeable_drops_what_was_kept():
    """A reading that finds the model writeable drops the kept point and step, so a model changed,
    read and frozen again shows its new point and step (planted: the memo kept, the point after
    freezing again is the old ``(3, 4, 0)``)."""
    new = _read_only_iterate([3.0, 4.0], 0.0)
    old = _read_only_iterate([0.0, 0.0], 0.0).point
    assert _step_length(new, old) == 5.0
    new.coef.flags.writeable = True
    new.coef[:] = [0.0, 1.0]
    assert list(new.point) == [0.0, 1.0, 0.0]
    new.coef.flags.writeable = False
    assert list(new.point) == [0.0, 1.0, 0.0]
    assert _step_length(new, old) == 1.0


def test_small_step_reads_the_step_the_base_recorded():
    """In a dense EM run the loop's stopping rule measures the step the base measured already: the
    run equals one whose ``small_step`` measures every step afresh, and the kept step is read (the
    norms taken are fewer)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 9))
    y = np.where(X[:, 0] - X[:, 2] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    res = fsframe.method.resolve("em-l0")

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_dense_em(res.loop, res.surrogate, X, y, 1.0, n_features=3)

    calls = []
    plain = loop_base._norm

    def counting(v):
        calls.append(1)
        return plain(v)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(loop_base, "_norm", counting)  # small_step's
        mp.setattr(measures, "_norm", counting)  # _step_length's
        kept = run()
        n_kept = len(calls)

        def afresh(self, new, old):
            step = float(np.linalg.norm(new.point - old.point))
            return step <= self.tol * max(1.0, float(np.linalg.norm(old.point))), step

        calls.clear()
        mp.setattr(EM, "small_step", afresh)
        ref = run()
    finally:
        mp.undo()
    assert kept.n_iter == ref.n_iter > 2
    np.testing.assert_array_equal(kept.coef, ref.coef)
    assert [h.step for h in kept.history] == [h.step for h in ref.history]
    # the base measures n_iter - 1 steps; small_step runs after each but the last (the base stops the
    # run at n_features first) and takes ||old point|| only, its step being the kept one (measured
    # afresh, one norm more per call: 10 here, not 7)
    assert kept.reason.startswith("reached n_features")
    assert n_kept == (kept.n_iter - 1) + (kept.n_iter - 2)


# -- one reduction for the count and the scale --------------------------------------------------

@pytest.mark.parametrize("a", [
    np.array([0.3, 0.0, 2.0, 1e-9, 2.0 * 1e-6, 1e-4]),  # 1e-4: above 1e-6 of its own largest, below 1e-6 of 1e3
    np.array([0.0, 0.0]),
    np.array([-1.0, -2.0]),  # no norms, but the rule is numpy's: max(initial=0.0) is 0
    np.array([np.nan, 1.0, 0.5]),
    np.array([1.0, np.nan]),
    np.array([7.0]),
    np.zeros(0),
    np.array([1, 0, 3]),  # ints: the plain path
    np.array([[1.0, 1e-8], [0.5, 0.0]]),
])
@pytest.mark.parametrize("scale", [0.0, 0.5, 1e3, float("nan"), -5.0])
@pytest.mark.parametrize("run_scale", [True, False])
def test_support_size_is_the_count_and_scale_of_support_of(a, scale, run_scale):
    """Planted: the cut taken on the run's scale also when ``run_scale`` is False (the bound
    search's per-iterate rule), or the largest without ``initial=0.0``: counts or scales differ."""
    new_scale = max(scale, _largest(a))
    expect = int(support_of(a, 1e-6, new_scale if run_scale else 0.0).sum())
    nnz, got = _support_size(a, 1e-6, scale, run_scale)
    assert nnz == expect
    assert got == new_scale or (np.isnan(got) and np.isnan(new_scale))


def test_largest_is_numpys_max_with_initial_zero():
    for a in (np.array([3.0, -1.0, 2.5]), np.array([-3.0]), np.zeros(0), np.array([np.nan, 1.0]),
              np.arange(12.0).reshape(3, 4)):
        a_ro = a.copy()
        a_ro.flags.writeable = False
        for v in (a, a_ro):
            got, want = _largest(v), float(np.max(v, initial=0.0))
            assert got == want or (np.isnan(got) and np.isnan(want))
    assert _largest([1.0, 4.0]) == 4.0


# -- select_exactly's counts from one array --------------------------------------------------------

def _plain_counts(norms, zero_tol):
    its = [types.SimpleNamespace(t=t) for t in norms]
    scale = reference_scale(its)
    return tuple(int(support_of(t, zero_tol, scale).sum()) for t in norms)


@pytest.mark.parametrize("seed", range(6))
def test_select_exactly_counts_are_the_per_iterate_counts(seed):
    """The stacked counts equal the per-iterate ones (the rule as :func:`support_of` and
    :func:`reference_scale` state it), on norms spanning 1e-14 to 1e3, with exact ties at the cut
    (planted: the cut on each iterate's own largest only, or ``>=``: the counts differ)."""
    rng = np.random.default_rng(seed)
    k, n = int(rng.integers(1, 25)), int(rng.integers(1, 70))
    norms = [np.abs(rng.standard_normal(n)) * 10.0 ** rng.uniform(-14, 3, n) for _ in range(k)]
    top = max(float(t.max()) for t in norms)
    norms[-1][0] = 1e-6 * top  # exactly at the cut: not counted
    norms[0][-1] = 1e-6 * top * (1 + 1e-15)
    zero_tol = 1e-6
    assert selection._counts_on_run_scale(norms, zero_tol) == _plain_counts(norms, zero_tol)
    its = [types.SimpleNamespace(t=t) for t in norms]
    sel = select_exactly(its, 3, zero_tol)
    assert sel.counts == _plain_counts(norms, zero_tol)


@pytest.mark.parametrize("norms", [
    [np.array([1.0, np.nan, 0.5]), np.array([2.0, 1e-9, 0.0])],  # nan: Python's max, by position
    [np.array([np.nan, 1.0]), np.array([3.0, 0.0])],
    [np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0])],  # lengths differ
    [np.array([1, 0, 2]), np.array([0, 0, 3])],  # ints
    [np.zeros(0), np.zeros(0)],
    [np.array([0.0, 0.0]), np.array([0.0, 0.0])],
    [np.array([1.0, 1e-3]).reshape(1, 2)[0, ::-1], np.array([1.0, 2.0])],  # a strided view: stacked too
])
def test_select_exactly_counts_off_the_stacked_path_are_unchanged(norms):
    assert selection._counts_on_run_scale(norms, 1e-3) == _plain_counts(norms, 1e-3)


# -- group_magnitudes from an array of columns ------------------------------------------------

def _magnitudes_sub(colmax, group_cols):
    class Maxima:
        shape, nnz = (1, len(colmax)), int(np.count_nonzero(colmax))

        def __abs__(self):
            return self

        def max(self, axis=None):
            return self

        def todense(self):
            return np.asarray(colmax, dtype=float)[None, :]

    base = types.SimpleNamespace(c=np.zeros(len(colmax)), A=None, G=Maxima())
    return types.SimpleNamespace(compiled=types.SimpleNamespace(base=base, slot=types.SimpleNamespace(
        group_cols=group_cols)))


def test_group_magnitudes_of_an_array_of_columns_equal_the_list_of_groups():
    """The rows of an ``n x k`` array (the dense subproblem's ``n x 1``) give the maxima the list of
    groups gives (planted: without the floor at 0, a group whose columns are all 0 gets -0.0 or the
    row's largest is taken over the wrong axis)."""
    colmax = np.array([0.0, 3.0, 1e-300, 7.5, 2.0, 0.0])
    for cols in (np.arange(6).reshape(6, 1), np.array([[0, 1], [2, 3], [4, 5]]), np.array([[5, 0], [3, 1]])):
        as_list = [np.asarray(r) for r in cols]
        got = group_magnitudes(_magnitudes_sub(colmax, cols))
        want = group_magnitudes(_magnitudes_sub(colmax, as_list))
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, [max(0.0, colmax[r].max()) for r in cols])
    X = np.random.default_rng(0).normal(size=(20, 5)) * np.array([1.0, 1e3, 1e-3, 0.0, 5.0])
    sub = DenseHingeSubproblem(X, np.where(np.arange(20) % 2, 1.0, -1.0), 1.0)
    np.testing.assert_array_equal(group_magnitudes(sub), np.abs(X).max(axis=0))


# -- the point and the read-only test ---------------------------------------------------------

@pytest.mark.parametrize("coef, intercept", [
    (np.array([1.0, -2.0]), np.array([0.5])),
    (np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([0.5, -0.5])),  # a row per class
    (np.array([[1.0, 2.0], [3.0, 4.0]]).T, np.array([0.5, -0.5])),  # Fortran order: ravel copies in C order
    (np.array([1.0, -2.0]), np.array(0.25)),  # a 0-d intercept: the general path
    (np.array([1, 2]), np.array([3])),  # ints
])
def test_point_is_ravel_and_atleast_1d(coef, intercept):
    it = attrs.evolve(_iterate(np.zeros(2), 0.0), coef=coef, intercept=intercept)
    want = np.concatenate([np.ravel(coef), np.atleast_1d(intercept)])
    got = it.point
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_read_only_shortcut_for_an_array_of_its_own():
    """An array of its own (no base) is read-only exactly when its flag says so; a view asks its
    base too (planted: the shortcut returning True for every array without a base)."""
    a = np.arange(3.0)
    assert not _read_only(a)
    a.flags.writeable = False
    assert _read_only(a)
    a.flags.writeable = True
    assert not _read_only(a)
    base = np.arange(4.0)
    v = base[1:]
    v.flags.writeable = False
    assert not _read_only(v)
    base.flags.writeable = False
    assert _read_only(v)

    class Sub(np.ndarray):
        pass

    s = np.arange(2.0).view(Sub)
    s.flags.writeable = False
    assert not _read_only(s)  # a view of a writeable array, whatever its class
    assert not _read_only([1.0]) and not _read_only(None)


# -- what the compiled weights take -------------------------------------------------------------

def test_plain_takes_only_contiguous_float64_vectors():
    v = np.ones(4)
    assert _plain(v) and _plain(v, v, v) and _plain()
    for bad in (np.ones(8)[::2], np.ones((2, 2)), np.ones(4, dtype=np.float32), np.ones(4, dtype=">f8"),
                np.ones(4).view(type("Sub", (np.ndarray,), {})), [1.0, 2.0], None):
        assert not _plain(bad)
        assert not _plain(v, bad)


# -- the EM loop's steps passed through -----------------------------------------------------------

def test_em_steps_with_n_features_are_closed_with_the_run():
    """With ``n_features`` the EM loop passes its inner generator's steps through: when the base
    stops at ``r`` features and closes the loop, the inner generator is closed too (its ``finally``
    runs), and the run's answer is the one of the stepwise pass (``n_features=None`` runs the other
    branch)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 8))
    y = np.where(X[:, 1] + X[:, 4] + 0.3 * rng.normal(size=50) > 0, 1.0, -1.0)
    res = fsframe.method.resolve("em-l0")
    closed = []
    inner = EM._steps

    def watched(self, sub, surrogate, run):
        try:
            return (yield from inner(self, sub, surrogate, run))
        finally:
            closed.append(True)

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(EM, "_steps", watched)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = run_dense_em(res.loop, res.surrogate, X, y, 1.0, n_features=3)
    finally:
        mp.undo()
    assert out.reason == "reached n_features=3 non-zero groups" and int(out.support.sum()) == 3
    assert closed == [True]


# -- whether a solve has a solution ------------------------------------------------------------------

def test_solve_result_ok_is_membership_of_solution_present():
    """``SolveResult.ok`` asks OPTIMAL by identity first: the answer stays that of ``SOLUTION_PRESENT``
    for every status, and for a status given by its value (planted: OPTIMAL alone, so
    ``optimal_inaccurate`` has no solution)."""
    from fsframe.backends.base import SolveResult
    from fsframe.enums import SOLUTION_PRESENT, Status

    for status in list(Status) + ["optimal", "optimal_inaccurate", "infeasible"]:
        res = SolveResult(status, None, None, "test", 0.0)
        assert res.ok is (status in SOLUTION_PRESENT)
    assert SolveResult(Status.OPTIMAL_INACCURATE, None, None, "test", 0.0).ok


def test_weights_take_the_twin_only_for_a_plain_boolean_mask():
    """``EM._weights`` hands the step to the compiled twin only for float64 vectors and a C-contiguous
    boolean ``fixed`` (the twin writes it in place); a strided mask takes numpy's path, the same
    weights (planted: the mask's dtype compared with float64, the twin never called)."""
    calls = []

    def twin(t, sizes, cut, fixed, limit):
        calls.append(1)
        fixed |= sizes <= cut
        w = np.full(t.shape, np.inf)
        w[~fixed] = 1.0 / t[~fixed] ** 2
        return w

    loop = EM(weights="paper")
    t = np.array([2.0, 1e-9, 0.5, 3.0])
    it = types.SimpleNamespace(t=t)
    limit = np.full(4, 1e12)

    def q(v):
        return 1.0 / np.asarray(v, dtype=float) ** 2

    fixed = np.zeros(4, dtype=bool)
    w_twin = loop._weights(it, q, 1e-6, fixed, limit, None, t.copy(), twin)
    assert calls == [1] and fixed.tolist() == [False, True, False, False]
    strided = np.zeros(8, dtype=bool)[::2]  # a boolean mask the twin cannot write in place
    w = loop._weights(it, q, 1e-6, strided, limit, None, t.copy(), twin)
    assert calls == [1]
    np.testing.assert_array_equal(w, w_twin)
    assert strided.tolist() == fixed.tolist()
