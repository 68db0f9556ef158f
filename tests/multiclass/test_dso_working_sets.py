"""DSO-FS's shortcuts give the answer of the path without them (docs/multiclass.md, "Cost"): the
least distance programs on a working set of margins (:func:`~fsframe_multiclass.nullspace.ldp_rows`)
equal NNLS on all margins and CVXPY; the separability test by the hard-margin SVM decides as the LP
does; and a whole fit with the working sets and the ``U`` step skipped for ``n0 = 0`` has the
iterates, selection and objective of the fit without them."""

from __future__ import annotations

import functools
import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
import fsframe_multiclass.margin as margin_mod
import fsframe_multiclass.nullspace as ns_mod
from fsframe.errors import ConvergenceWarning, DataWarning
from fsframe_multiclass.margin import label_matrix, separable_columns
from fsframe_multiclass.nullspace import ldp, ldp_rows


def _ldp_instance(seed: int, q: int, d: int):
    """``G v >= h`` with ``q`` rows in ``d`` unknowns, feasible (``h`` below ``G v0``), far more rows
    than a working set starts with."""
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(q, d)) * rng.uniform(0.1, 5.0, size=d)
    v0 = rng.normal(size=d)
    h = G @ v0 - rng.exponential(size=q)
    return G, h


@pytest.mark.parametrize("seed, q, d", [(0, 200, 30), (1, 400, 12), (2, 120, 60), (3, 50, 80)])
def test_ldp_rows_equals_ldp_and_cvxpy(seed, q, d):
    G, h = _ldp_instance(seed, q, d)
    v_all, mu_all = ldp(G, h)
    v, mu = ldp_rows(G, h)
    np.testing.assert_allclose(v, v_all, atol=1e-9 * max(1.0, np.abs(v_all).max()))
    # its own KKT point on every row: v = Gᵀ mu, mu >= 0, feasible, complementary
    np.testing.assert_allclose(G.T @ mu, v, atol=1e-8 * max(1.0, np.abs(v).max()))
    assert np.all(mu >= 0) and np.min(G @ v - h) >= -1e-8
    assert np.max(mu * np.abs(G @ v - h)) <= 1e-7
    x = cp.Variable(d)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(x)), [G @ x >= h])
    prob.solve(solver=cp.CLARABEL)
    assert float(v @ v) == pytest.approx(prob.value, rel=1e-6)
    # a hint (the active rows, half of them, or rows that are not active) changes where it
    # starts, not the answer
    active = np.flatnonzero(mu_all > 0)
    for hint in (active, active[::2], np.setdiff1d(np.arange(q), active)[:d // 2]):
        v2, mu2 = ldp_rows(G, h, hint)
        np.testing.assert_allclose(v2, v_all, atol=1e-9 * max(1.0, np.abs(v_all).max()))
        np.testing.assert_allclose(G.T @ mu2, v2, atol=1e-8 * max(1.0, np.abs(v2).max()))
        assert np.all(mu2 >= 0)


def test_ldp_rows_infeasible_is_none():
    G = np.vstack([np.eye(3), -np.eye(3)])
    h = np.ones(6)  # v >= 1 and -v >= 1
    assert ldp_rows(G, h) is None and ldp(G, h) is None


def _labelled(seed: int, m: int, n: int, c: int, shift: float):
    rng = np.random.default_rng(seed)
    y = np.arange(m) % c
    X = rng.normal(scale=shift, size=(c, n))[y] + rng.normal(size=(m, n))
    return X, y


@pytest.mark.parametrize("seed, m, n, c, shift", [(0, 60, 8, 3, 3.0), (1, 80, 5, 4, 0.5), (2, 90, 6, 5, 1.5),
                                                   (3, 40, 3, 2, 0.2), (4, 120, 10, 6, 1.0)])
def test_separability_by_ldp_decides_as_the_lp(monkeypatch, seed, m, n, c, shift):
    """Mixed instances (some columns separable, some not): the answer with the LDP first equals
    the LPs' alone."""
    X, y = _labelled(seed, m, n, c, shift)
    Y = label_matrix(y)
    got = margin_mod._separable_columns(X, Y, 1e-7, {})
    monkeypatch.setattr(margin_mod, "_separable_by_ldp", lambda *a: None)
    want = margin_mod._separable_columns(X, Y, 1e-7, {})
    np.testing.assert_array_equal(got, want)


def test_separability_instances_cover_both_answers():
    """The instances above include separable and inseparable columns (the test can fail)."""
    data = [_labelled(*a) for a in [(0, 60, 8, 3, 3.0), (1, 80, 5, 4, 0.5), (3, 40, 3, 2, 0.2)]]
    answers = np.concatenate([separable_columns(X, label_matrix(y)) for X, y in data])
    assert answers.any() and not answers.all()


def test_separability_of_an_inseparable_column_stops_the_svm_at_its_first_infeasible_rows(monkeypatch):
    """On a seeded inseparable column (m > rank, noisy labels) the SVM's working set meets rows
    with no hard margin: it stops there (no NNLS on all rows, which proves nothing the LP does
    not decide anyway), and the LP alone decides, as without the SVM."""
    rng = np.random.default_rng(0)
    m, n = 300, 40
    X = rng.normal(size=(m, n))
    y = np.sign(X @ rng.normal(size=n) + 0.01)
    flip = rng.random(m) < 0.2
    y[flip] = -y[flip]
    Y = y[:, None]
    sizes = []
    real_ldp = ns_mod.ldp

    def counted(G, h):
        sizes.append(G.shape[0])
        return real_ldp(G, h)

    monkeypatch.setattr(ns_mod, "ldp", counted)
    got = margin_mod._separable_columns(X, Y, 1e-7, {})
    assert not got[0] and sizes and max(sizes) < m  # stopped on a part of the rows, never all of them
    stuck: list = []
    Xt = np.hstack([X, np.ones((m, 1))])
    assert margin_mod._separable_by_ldp(Xt, y, 1e-7, stuck) is None and len(stuck) == 1
    assert real_ldp((y[:, None] * Xt)[stuck[0]], np.ones(stuck[0].size)) is None  # those rows: no hard margin
    monkeypatch.setattr(margin_mod, "_separable_by_ldp", lambda *a: None)
    np.testing.assert_array_equal(got, margin_mod._separable_columns(X, Y, 1e-7, {}))


def test_ldp_rows_without_stuck_still_solves_on_all_rows(monkeypatch):
    """ldp_rows' other callers (DSO-FS's E step, the convex finish) keep the all-rows NNLS."""
    G = np.vstack([np.eye(3), -np.eye(3), np.ones((30, 3))])
    h = np.concatenate([np.ones(6), np.zeros(30)])  # v >= 1 and -v >= 1: no v
    sizes = []
    real_ldp = ns_mod.ldp
    monkeypatch.setattr(ns_mod, "ldp", lambda G, h: sizes.append(G.shape[0]) or real_ldp(G, h))
    assert ldp_rows(G, h) is None and sizes[-1] == 36
    sizes.clear()
    stuck: list = []
    assert ldp_rows(G, h, stuck=stuck) is None and max(sizes) < 36 and len(stuck) == 1


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", DataWarning)
        return fsframe.fit(X, y, method="dso-fs", **kw)


def _instances():
    """m > rank [X, 1] (no null space, ``n0 = 0``: the ``U`` step is skipped) and wide ``n + 1 > m``."""
    tall = _labelled(5, 90, 12, 4, 2.0)
    rng = np.random.default_rng(6)
    wide = (rng.normal(size=(24, 40)) * rng.uniform(0.1, 3.0, size=40), np.arange(24) % 3)
    return [pytest.param(*tall, id="tall"), pytest.param(*wide, id="wide")]


@pytest.mark.parametrize("X, y", _instances())
@pytest.mark.parametrize("p, finish", [(0.5, "none"), (0.5, "convex"), (1.0, "convex")])
def test_fit_equals_the_path_without_working_sets(monkeypatch, X, y, p, finish):
    fast = _fit(X, y, p=p, finish=finish, max_iter=40)

    import fsframe_multiclass.dso as dso_mod

    monkeypatch.setattr(ns_mod, "ldp_rows", lambda G, h, hint=None: ldp(G, h))  # every caller imports it from there
    monkeypatch.setattr(dso_mod, "u_update", functools.partial(ns_mod.u_update, skip_empty=False))
    slow = _fit(X, y, p=p, finish=finish, max_iter=40)
    assert fast.info["algorithm1_iterations"] == slow.info["algorithm1_iterations"]
    f_fast = np.array([h.objective for h in fast.history])
    f_slow = np.array([h.objective for h in slow.history])
    # the same steps to rounding: at p = 0.5 the U step's system reaches rcond 1e-18 on the wide
    # instance, which turns NNLS's last digits into relative differences of 1e-6 after 20 steps
    np.testing.assert_allclose(f_fast, f_slow, rtol=1e-5)
    np.testing.assert_array_equal(fast.support, slow.support)
    assert fast.objective == pytest.approx(slow.objective, rel=1e-5)
    assert fast.certificate["status"] == slow.certificate["status"]


def test_separability_is_kept_across_a_tuning_grid(monkeypatch):
    """A tuning grid fits every point on each of 8 inner folds in turn: the first fold's answer
    (and its active samples) is still kept when the next grid point comes back to it."""
    calls = []
    real = margin_mod._separable_columns
    monkeypatch.setattr(margin_mod, "_separable_columns", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(margin_mod, "_SEPARABLE", [])
    folds = [_labelled(10 + i, 30, 4, 3, 10.0) for i in range(8)]
    for point in range(2):
        for X, y in folds:
            rows: dict = {}
            assert separable_columns(X, label_matrix(y), active=rows).all()
            assert sorted(rows) == [0, 1, 2]  # every column proved by the SVM, its active samples kept
    assert len(calls) == 8


def test_the_separability_cache_tells_labels_apart(monkeypatch):
    """The same ``X`` with other labels is another question: one labelling separable, a shuffled
    one not; the second call must not get the first one's cached answer."""
    monkeypatch.setattr(margin_mod, "_SEPARABLE", [])
    X, y = _labelled(0, 60, 3, 2, 20.0)
    Y = label_matrix(y)
    assert separable_columns(X, Y).all()
    shuffled = label_matrix(np.random.default_rng(1).permutation(y))
    assert not separable_columns(X, shuffled).any()
    assert separable_columns(X, Y).all()


def test_ldp_rows_meets_every_row_to_its_own_size():
    """The same constraints with rows rescaled by 1e-4 ... 1e4: one tolerance for all rows (scaled
    by the largest ``|h|``) let ``ldp_rows`` stop with a row of size 2e-4 missed by 0.7 % of it and
    ``||v||²`` below the optimum. Per row, the answer is :func:`ldp`'s."""
    rng = np.random.default_rng(0)
    q, d = 300, 20
    G = rng.normal(size=(q, d))
    h = G @ rng.normal(size=d) - rng.exponential(size=q)
    scale = 10.0 ** rng.uniform(-4, 4, q)
    G, h = G * scale[:, None], h * scale
    v_all, v_rows = ldp(G, h)[0], ldp_rows(G, h)[0]
    assert v_rows @ v_rows == pytest.approx(v_all @ v_all, rel=1e-9)
    short = (h - G @ v_rows) / np.maximum(np.abs(h), np.abs(G) @ np.abs(v_rows))
    assert short.max() <= 1e-8
