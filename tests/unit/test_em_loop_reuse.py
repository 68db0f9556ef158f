"""What the EM loop and the loop base keep per iterate instead of forming it again
(issue 19, the loop's own cost on the dense path):

* :attr:`fsframe.problem.Iterate.point` is kept only for an iterate whose ``coef`` and
  ``intercept`` nothing can write through (read-only, and so is every array they view): a
  writeable iterate's point follows a change to its arrays, an evolved iterate forms its own;
* the dense EM subproblem's iterates (:class:`~fsframe.dense_em.DenseHingeSubproblem`) are
  read-only, so their points are kept, and a write to their model is refused;
* the step lengths the loops measure are numpy's norms bit for bit;
* an EM step from a tilted point (identical columns, :mod:`fsframe.loops.ties`) judges the floor on
  that point's contributions, not on those the loop keeps of the iterate: the run equals one whose
  loop forms every contribution afresh.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
import pytest

from fsframe.dense_em import DenseHingeSubproblem, run_dense_em
from fsframe.enums import Status
from fsframe.loops import em as em_module
from fsframe.loops import ties
from fsframe.loops.em import EM
from fsframe.problem import Iterate
import fsframe.method


def _read_only(a):
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


def _iterate(coef, intercept):
    return Iterate.computed(coef, intercept, np.abs(coef), groups=np.arange(np.size(coef)), loss=0.0, objective=0.0,
                            seconds=0.0)


def test_point_of_a_writeable_iterate_follows_its_arrays():
    it = _iterate(np.array([1.0, -2.0]), 0.5)
    np.testing.assert_array_equal(it.point, [1.0, -2.0, 0.5])
    it.coef[0] = 7.0
    it.intercept[0] = -1.0
    np.testing.assert_array_equal(it.point, [7.0, -2.0, -1.0])
    assert it.point.flags.writeable  # formed afresh: the caller's own array


def test_point_kept_for_a_read_only_iterate_and_read_only_itself():
    it = attrs.evolve(_iterate(np.zeros(2), 0.0), coef=_read_only([3.0, 4.0]), intercept=_read_only([-1.0]))
    p = it.point
    np.testing.assert_array_equal(p, [3.0, 4.0, -1.0])
    assert it.point is p
    assert not p.flags.writeable
    with pytest.raises(ValueError):
        p[0] = 0.0
    # an evolved iterate (another model) forms its own point, not the one kept on the first
    other = attrs.evolve(it, coef=_read_only([5.0, 6.0]))
    np.testing.assert_array_equal(other.point, [5.0, 6.0, -1.0])


def test_point_not_kept_for_a_read_only_view_of_a_writeable_array():
    base = np.array([1.0, 2.0, 3.0])
    view = base[:2]
    view.flags.writeable = False  # the view refuses writes; its base does not
    it = attrs.evolve(_iterate(np.zeros(2), 0.0), coef=view, intercept=_read_only([0.0]))
    np.testing.assert_array_equal(it.point, [1.0, 2.0, 0.0])
    base[0] = 9.0
    np.testing.assert_array_equal(it.point, [9.0, 2.0, 0.0])


def test_point_of_a_pickled_or_unfrozen_iterate_follows_its_arrays():
    """The kept point is asked again at every reading whether the model is still read-only: a
    pickled or deep-copied iterate comes back with writeable arrays (and its memo), an iterate whose
    flag is turned back can be written — each forms its point afresh (review r30a2; planted: the
    check only when the point is first formed, the stale point is returned)."""
    import copy
    import pickle

    it = attrs.evolve(_iterate(np.zeros(2), 0.0), coef=_read_only([3.0, 4.0]), intercept=_read_only([-1.0]))
    assert it.point is it.point  # kept
    for back in (pickle.loads(pickle.dumps(it)), copy.deepcopy(it)):
        assert back.coef.flags.writeable
        back.coef[0] = 123.0
        np.testing.assert_array_equal(back.point, [123.0, 4.0, -1.0])
    it.coef.flags.writeable = True
    it.coef[1] = -8.0
    np.testing.assert_array_equal(it.point, [3.0, -8.0, -1.0])


def test_point_of_a_failed_iterate_is_not_kept():
    """No model (``coef`` and ``intercept`` None) is nothing read-only: its point is not kept."""
    from fsframe.problem import _read_only as read_only

    assert not read_only(None)
    assert read_only(_read_only([1.0]))


def _instance(seed=0, m=70, n=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = np.where(X[:, 0] - X[:, 3] + 0.3 * rng.normal(size=m) > 0, 1.0, -1.0)
    return X, y


def test_dense_iterates_are_read_only_and_keep_their_point():
    X, y = _instance()
    sub = DenseHingeSubproblem(X, y, 1.0)
    it = sub.solve(quad=np.ones(X.shape[1]))
    assert it.status is Status.OPTIMAL
    for a in (it.coef, it.intercept, it.t):
        assert not a.flags.writeable
    with pytest.raises(ValueError):
        it.coef[0] = 1.0
    np.testing.assert_array_equal(it.point, np.concatenate([it.coef, it.intercept]))
    assert it.point is it.point
    keep = np.abs(it.coef) >= np.sort(np.abs(it.coef))[-3]
    cut = sub.certified_cut(it, keep)
    if cut is not None:  # the cut point, when certified, is an iterate of its own: read-only, its own point
        assert not cut.coef.flags.writeable and not cut.t.flags.writeable
        np.testing.assert_array_equal(cut.point, np.concatenate([np.where(keep, it.coef, 0.0), it.intercept]))


def test_em_weights_from_a_tilted_point_use_its_own_contributions(monkeypatch):
    """The step from a tilted point (identical columns split evenly, fsframe.loops.ties) must judge
    the floor on the tilted point's contributions, not the iterate's the loop keeps. A tilt that
    puts group 5 below the cut (``arom``: its weight there, ~1e12, is below the cap, so only
    the cut fixes the group) must give the run whose ``_weights`` forms every contribution afresh."""
    X, y = _instance(3, m=80, n=10)
    res = fsframe.method.resolve("arom")
    calls = []

    def tilt_once(self, it):
        calls.append(1)
        if len(calls) != 2:
            return it, False
        t = np.array(it.t)
        t[5] *= 1e-7
        coef = np.array(it.coef)
        coef[5] *= 1e-7
        return attrs.evolve(it, t=t, coef=coef), True

    monkeypatch.setattr(ties.Tiebreak, "point", tilt_once)

    def run():
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_dense_em(res.loop, res.surrogate, X, y, 1.0, n_features=3)

    out = run()
    plain = EM._weights

    def afresh(self, it, q, cut, fixed, magnitudes, cols=None, sizes=None, twin=None):
        return plain(self, it, q, cut, fixed, magnitudes, cols, None, twin)

    monkeypatch.setattr(em_module.EM, "_weights", afresh)
    ref = run()
    assert out.n_iter == ref.n_iter
    np.testing.assert_array_equal(out.support, ref.support)
    np.testing.assert_array_equal(out.coef, ref.coef)
    assert [(h.objective, h.n_nonzero, h.step) for h in out.history] == [(h.objective, h.n_nonzero, h.step)
                                                                        for h in ref.history]


def test_step_norm_is_numpys_bitwise():
    """The loops' step lengths (``history[].step``, the stopping rule) keep numpy's norm bit for bit."""
    from fsframe.loops.measures import _norm

    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 61, 1000, 4097):
        for scale in (1e-12, 1.0, 1e9):
            v = scale * rng.standard_normal(n) * rng.exponential(size=n) ** 3
            assert _norm(v) == float(np.linalg.norm(v))
    ints = np.array([3, 4])
    assert _norm(ints) == 5.0
    m = rng.standard_normal((3, 4))
    assert _norm(m) == float(np.linalg.norm(m))
    rng = np.random.default_rng(1)
    for n in (3, 17, 100, 1001, 5000, 20001):  # strided views (numpy copies them to contiguous first)
        for step in (2, 3, -1):
            v = (rng.standard_normal(n * abs(step)) * rng.exponential(size=n * abs(step)) ** 3)[::step]
            assert _norm(v) == float(np.linalg.norm(v))
