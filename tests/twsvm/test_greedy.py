"""The greedy mask loop (003 Algorithm 1) and RTSVM (Algorithm 2): incremental eq. 24, descent of
eq. 21, the selections, the no-rebuild path, the empty mask."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fsframe
from fsframe.errors import DataError
from fsframe.loops.greedy import LinearMaskEvaluator
from fsframe_twsvm import RBFMaskEvaluator, rbf_kernel, twin_loss
from fsframe_twsvm.toy import cross_planes

from twsvm_data import informative_data

LOSS_PARAMS = dict(c11=0.8, c12=1.2, c21=0.5, c22=1.7, lam=0.4)


def eq24_from_scratch(X, y, U, b, mask, kernel, width=None):
    """eq. 24 (without sigma tr E) written out: every surface value recomputed."""
    p = LOSS_PARAMS
    pos = y > 0
    if kernel == "linear":
        F = X[:, mask] @ U[mask] + b
    else:
        Xe = X[:, mask]
        sq = ((Xe[:, None, :] - Xe[None, :, :]) ** 2).sum(-1)
        F = np.exp(-sq / (2 * width**2)) @ U + b
    f1, f2 = F[:, 0], F[:, 1]
    one = p["c11"] * np.abs(f1[pos]).sum() + p["c12"] * np.maximum(1 + f1[~pos], 0).sum()
    two = p["c21"] * np.abs(f2[~pos]).sum() + p["c22"] * np.maximum(1 - f2[pos], 0).sum()
    return p["lam"] * one + (1 - p["lam"]) * two


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), kernel=st.sampled_from(["linear", "rbf"]),
       flips=st.lists(st.integers(0, 6), min_size=1, max_size=25))
def test_incremental_eq24_equals_scratch_after_every_flip(seed, kernel, flips):
    rng = np.random.default_rng(seed)
    m, n = 24, 7
    X = rng.normal(size=(m, n))
    y = np.where(rng.random(m) < 0.5, 1, -1)
    y[:2] = [1, -1]
    mask = rng.random(n) < 0.5
    mask[rng.integers(n)] = True
    loss = twin_loss(y > 0, **{k: v for k, v in LOSS_PARAMS.items()})
    b = rng.normal(size=2)
    if kernel == "linear":
        U = rng.normal(size=(n, 2))
        ev = LinearMaskEvaluator(X, U, b, mask, loss)
    else:
        U = rng.normal(size=(m, 2))
        ev = RBFMaskEvaluator(X, 1.7, U, b, mask, loss)
    ref_mask = mask.copy()
    assert ev.value == pytest.approx(eq24_from_scratch(X, y, U, b, ref_mask, kernel, 1.7), rel=1e-10)
    for j in flips:
        if ref_mask[j] and ref_mask.sum() == 1:
            continue
        trial = ev.trial(j)
        ref_mask[j] = ~ref_mask[j]
        expect = eq24_from_scratch(X, y, U, b, ref_mask, kernel, 1.7)
        assert trial == pytest.approx(expect, rel=1e-9, abs=1e-9)
        ev.commit(j)
        assert np.array_equal(ev.mask, ref_mask)
        assert ev.value == pytest.approx(expect, rel=1e-9, abs=1e-9)
        assert ev.scratch(ref_mask) == pytest.approx(expect, rel=1e-9, abs=1e-9)


def _eq21_never_increases(r, tol=1e-6):
    eq21 = r.info["eq21"]
    greedy = eq21[1:]  # from the initial mask of step 2 on (step 1, E = I, is no greedy step)
    assert len(greedy) >= 1
    assert all(b <= a + tol * max(1.0, abs(a)) for a, b in zip(greedy, greedy[1:])), eq21
    assert r.monotone


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eq21_never_increases(kernel, seed):
    X, y = informative_data(m=70, n=12, k=3, seed=seed)
    r = fsframe.fit(X, y, "ftsvm", kernel=kernel, sigma=0.05, keep="high" if seed == 2 else "low")
    _eq21_never_increases(r)
    # eq. 21 = sigma tr E + the subproblem optimum under E, recomputed at the returned model
    p = r.formulation
    pos = y > 0
    if kernel == "linear":
        F = X @ r.coef.T + r.intercept
        reg = np.abs(r.coef).sum(axis=1)
        one = reg[0] + p.c11 * np.abs(F[pos, 0]).sum() + p.c12 * np.maximum(1 + F[~pos, 0], 0).sum()
        two = reg[1] + p.c21 * np.abs(F[~pos, 1]).sum() + p.c22 * np.maximum(1 - F[pos, 1], 0).sum()
        assert r.info["eq21"][-1] == pytest.approx(0.05 * r.n_selected + p.lam * one + (1 - p.lam) * two, rel=1e-6)


def test_informative_features_kept_linear(informative):
    X, y = informative
    r = fsframe.fit(X, y, "ftsvm", sigma=0.01)
    assert set(range(4)) <= set(r.selected.tolist())
    assert r.n_selected <= 8
    assert (r.predict(X) == y).mean() > 0.9


def test_informative_features_kept_rbf(informative):
    X, y = informative
    r = fsframe.fit(X, y, "ftsvm", kernel="rbf", sigma=0.01, c12=2.0, c22=2.0)
    assert set(range(4)) <= set(r.selected.tolist())
    assert r.n_selected <= 10


def test_cross_planes_rbf_keeps_the_two_planes():
    X, y = cross_planes(160, 8, seed=0)
    r = fsframe.fit(X, y, "ftsvm", kernel="rbf", c11=8.0, c21=8.0)
    assert {0, 1} <= set(r.selected.tolist())
    assert r.n_selected <= 4
    assert (r.predict(X) == y).mean() > 0.9
    assert r.transform.mask.sum() == r.n_selected  # predictions use K(x E, A E)


def test_rtsvm_top_r_follows_eq23(informative):
    X, y = informative
    r = fsframe.fit(X, y, "rtsvm", n_features=4)
    scores = np.asarray(r.info["feature_scores"])
    assert r.n_selected == 4
    assert np.array_equal(np.sort(r.selected), np.sort(np.argsort(scores, kind="stable")[:4]))
    assert np.isclose(scores.sum(), 1.0)
    assert set(r.selected.tolist()) == set(range(4))
    high = fsframe.fit(X, y, "rtsvm", n_features=4, keep="high")  # the paper's literal direction
    assert np.array_equal(np.sort(high.selected), np.sort(np.argsort(-scores, kind="stable")[:4]))


def test_ftsvm_n_features_keeps_r(informative):
    X, y = informative
    r = fsframe.fit(X, y, "ftsvm", n_features=2, sigma=0.0)
    assert r.n_selected == 2 and set(r.selected.tolist()) <= set(range(4))


def test_greedy_l1_svm_runs_on_the_hinge_model(informative):
    X, y = informative
    r = fsframe.fit(X, y, "greedy-l1-svm", C=0.1, loop__sigma=0.01)
    assert set(range(4)) <= set(r.selected.tolist())
    _eq21_never_increases(r)
    # eq. 21 for the hinge: sigma tr E + ||w||_1 + C sum hinge, recomputed from the returned model
    hinge = np.maximum(1 - y * (X @ r.coef + r.intercept), 0).sum()
    assert r.info["eq21"][-1] == pytest.approx(0.01 * r.n_selected + np.abs(r.coef).sum() + 0.1 * hinge, rel=1e-6)


def test_formulation_without_the_capability_is_refused():
    X, y = informative_data(m=40, n=5)
    with pytest.raises(fsframe.errors.IncompatibleComponentsError, match="fix a feature group"):
        fsframe.fit(X, y, formulation="mpm", loop="greedy", delta=0.5)


def test_empty_mask_is_a_typed_error_and_never_proposed():
    from fsframe.backends import HighsBackend
    from fsframe.problem import Subproblem
    from fsframe_twsvm import TwinL1Formulation

    X, y = informative_data(m=40, n=5)
    y = y.astype(float)
    for kernel in ("linear", "rbf"):
        f = TwinL1Formulation(kernel=kernel)
        sub = Subproblem(f, X, y, frozenset({"lin"}), HighsBackend())
        space = f.mask_space(sub)
        with pytest.raises(DataError, match="removes every feature"):
            space.solve(np.zeros(5, dtype=bool))
        sub.close()
    # a sigma so large that every feature costs more than it brings: one feature stays
    r = fsframe.fit(X, y, "ftsvm", sigma=1e6)
    assert r.n_selected == 1
    r = fsframe.fit(X, y, "ftsvm", sigma=1e6, kernel="rbf")
    assert r.n_selected == 1


def test_mask_change_neither_rebuilds_nor_recompiles(monkeypatch, informative):
    """One build and one compile per fit; the linear mask only moves column bounds (the
    constraint matrices are the same objects); the RBF mask rewrites kernel entries of the
    compiled problem, and its solves equal a fresh build on the masked data."""
    import fsframe.problem as problem
    from fsframe.backends import HighsBackend
    from fsframe.problem import Subproblem
    from fsframe_twsvm import TwinL1Formulation

    calls = {"compile": 0}
    real = problem.compile_model

    def counting(*a, **k):
        calls["compile"] += 1
        return real(*a, **k)

    monkeypatch.setattr(problem, "compile_model", counting)
    X, y = informative
    r = fsframe.fit(X, y, "ftsvm", sigma=0.01)
    assert calls["compile"] == 1 and r.n_iter >= 2
    Xs, ys = X[:50, :8], y[:50].astype(float)
    rng = np.random.default_rng(0)
    for kernel in ("linear", "rbf"):
        f = TwinL1Formulation(kernel=kernel, width=2.0)
        sub = Subproblem(f, Xs, ys, frozenset({"lin"}), HighsBackend())
        space = f.mask_space(sub)
        G0 = sub.compiled.base.G
        for _ in range(3):
            mask = rng.random(8) < 0.6
            mask[0] = True
            it = space.solve(mask)
            fresh = fsframe.fit(Xs[:, mask], ys, "l1-twsvm", kernel=kernel, width=2.0)
            assert it.objective == pytest.approx(fresh.objective, rel=1e-7, abs=1e-9)
            if kernel == "linear":
                assert sub.compiled.data.G is G0
        sub.close()
    assert calls["compile"] == 1 + 2 + 6  # the ftsvm fit, the two subproblems, the six fresh fits


def test_same_seed_same_result_and_input_untouched(informative):
    X, y = informative
    X0, y0 = X.copy(), y.copy()
    a = fsframe.fit(X, y, "ftsvm", kernel="rbf", sigma=0.01)
    b = fsframe.fit(X, y, "ftsvm", kernel="rbf", sigma=0.01)
    assert np.array_equal(a.support, b.support) and np.array_equal(a.coef, b.coef)
    assert np.array_equal(X, X0) and np.array_equal(y, y0)


def test_greedy_conformance_kit():
    from fsframe.loops import Greedy
    from fsframe.testing import check_loop

    ran = check_loop(Greedy(sigma=0.01))
    assert "failure raises" in ran and "deterministic None" in ran


@pytest.mark.parametrize("method, sigma", [("ftsvm", 2.0), ("greedy-l1-svm", 2.0)])
def test_selection_unchanged_when_the_columns_are_permuted(method, sigma):
    """Algorithm 1's sweeps visit every feature ``j = 1..n``: on an instance where they flip
    several features out (``threshold=0.99`` keeps every feature in the initial mask, ``sigma``
    makes the weak ones cost more than they lower the loss), the selection is the same set of
    columns under each of the ``n`` cyclic shifts of the columns, so every feature is swept at
    every position, the last one included."""
    X, y = informative_data(m=60, n=8)
    n = X.shape[1]
    kw = dict(threshold=0.99, loop__sigma=sigma)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = fsframe.fit(X, y, method, **kw)
        assert base.info["flips_kept"] >= 3 and base.n_selected < n
        for shift in range(1, n):
            perm = np.roll(np.arange(n), shift)
            r = fsframe.fit(X[:, perm], y, method, **kw)
            assert sorted(perm[r.selected].tolist()) == base.selected.tolist(), f"shift {shift}"
            assert r.info["flips_kept"] == base.info["flips_kept"]
