"""The EM subproblem of the hinge family on arrays (:mod:`fsframe.dense_em`), driven by the EM loop
unchanged:

* ``em-l0`` and ``arom`` with ``n_features`` on :class:`~fsframe.dense_em.DenseHingeSubproblem`
  select the same features in the same EM iterations and return the same model (1e-8) and
  objective as :func:`fsframe.fit`'s compiled path, on seeded instances and on Sonar's training
  parts (paper 002's protocol; skipped without the shared data);
* one subproblem (some groups fixed at zero) against CVXPY;
* the certificate refuses a perturbed answer (a multiplier moved along the equality, the model
  or the intercept moved) and accepts the solver's own.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
import fsframe.method
from fsframe.backends.box_qp import compiled_available
from fsframe.dense_em import GAP_TOL, DenseHingeSubproblem, run_dense_em
from fsframe.errors import UnsupportedProblemError
from fsframe.working_set import WorkingSetOptions

COMPILED = WorkingSetOptions(from_data=False)


def _instance(seed, m=None, n=None):
    rng = np.random.default_rng(seed)
    m = m or int(rng.integers(60, 140))
    n = n or int(rng.integers(15, 50))
    X = rng.normal(size=(m, n))
    X[:, 1::3] += 0.5 * X[:, ::3][:, : X[:, 1::3].shape[1]]  # correlated columns
    w = np.zeros(n)
    w[rng.choice(n, 4, replace=False)] = rng.normal(size=4) + np.sign(rng.normal(size=4))
    y = np.where(X @ w + 0.5 * rng.normal(size=m) > 0, 1, -1)
    return (X - X.mean(0)) / X.std(0), y


def _both(X, y, r, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fsframe.fit(X, y, method=method, n_features=r, working_set=COMPILED)  # fit would take the dense path
        res = fsframe.method.resolve(method)
        y_pm = np.where(y == ref.classes[1], 1.0, -1.0)
        out = run_dense_em(res.loop, res.surrogate, X, y_pm, res.formulation.C, n_features=r)
    return ref, out


def _assert_same(ref, out, tol=1e-8):
    assert np.array_equal(np.flatnonzero(out.support), np.sort(ref.selected))
    assert out.n_iter == ref.n_iter
    assert [h.n_nonzero for h in out.history] == [h.n_nonzero for h in ref.history]
    np.testing.assert_allclose(out.coef, ref.coef, rtol=0, atol=tol * max(1.0, float(np.abs(ref.coef).max())))
    assert abs(float(out.iterate.intercept[0]) - ref.intercept) <= tol * max(1.0, abs(ref.intercept))
    assert abs(out.objective - ref.objective) <= min(1e-7, 10 * tol) * max(1.0, abs(ref.objective))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("method", ["em-l0", "arom"])
def test_dense_em_equals_the_compiled_path(seed, method):
    X, y = _instance(seed)
    ref, out = _both(X, y, (3, 5)[seed % 2], method)
    _assert_same(ref, out)


@pytest.mark.parametrize("seed", [40, 9, 16])
@pytest.mark.parametrize("method", ["em-l0", "arom"])
def test_dense_em_equals_the_compiled_path_without_n_features(seed, method):
    # the run to convergence and the base's zero_tol cut; on seeds 9 and 16 em-l0 cuts groups. Both
    # paths cut the same groups and verify the cut point; whether it was re-solved may differ (the
    # dense path keeps the cut point when the certificate still passes it at the same multipliers,
    # the compiled path re-solves when its own check does not pass; docs/backends.md)
    X, y = _instance(seed)
    ref, out = _both(X, y, None, method)
    _assert_same(ref, out)
    sel = out.selection or {}
    assert sel.get("zero_tol_cut") == ref.info.get("zero_tol_cut")
    assert sel.get("zero_tol_cut_verified") == ref.info.get("zero_tol_cut_verified")
    if method == "em-l0" and seed in (9, 16):
        assert sel.get("zero_tol_cut", 0) > 0 and sel.get("zero_tol_cut_verified") is True


@pytest.mark.parametrize(("seed", "decades"), [(0, 2), (1, 2), (2, 2), (3, 2), (0, 3.5), (2, 3.5)])
def test_dense_em_equals_the_compiled_path_on_raw_scales_and_identical_columns(seed, decades):
    # columns on scales 1e-2..1e2 (and 1e-3.5..1e3.5), not centred (the reported support's column
    # scale), and two exact copies of a column (the tie-break and the n_features count that merges copies)
    X, y = _instance(20 + seed)
    rng = np.random.default_rng(seed)
    X = X * np.logspace(-decades, decades, X.shape[1])[rng.permutation(X.shape[1])] + rng.uniform(-3, 3, X.shape[1])
    X[:, 5] = X[:, 1]
    X[:, 9] = X[:, 1]
    # on the wide spread, both answers are optimal to 1e-9 in the QP's objective, which leaves the
    # models 1e-7 (relative) apart along its flat directions: the same selections, iterations and
    # objectives, the models compared at that accuracy
    tol = 1e-8 if decades == 2 else 1e-6
    for method in ("em-l0", "arom"):
        ref, out = _both(X, y, 4, method)
        assert all(r.status.value == "optimal" for r in out.history)
        _assert_same(ref, out, tol)
        assert [h.objective for h in out.history] == pytest.approx([h.objective for h in ref.history], rel=tol)


def test_dense_em_equals_the_compiled_path_at_a_uniform_scale_of_1e3():
    # the unscaled pivots end "singular" on the first step; the scaled dual certifies every step
    X, y = _instance(5)
    for method in ("em-l0", "arom"):
        ref, out = _both(X * 1e3, y, 4, method)
        assert all(r.status.value == "optimal" for r in out.history)
        _assert_same(ref, out, 1e-6)
        assert [h.objective for h in out.history] == pytest.approx([h.objective for h in ref.history], rel=1e-7)


@pytest.mark.shared_data
@pytest.mark.parametrize("split", range(2))
@pytest.mark.parametrize("r", [5, 10])
def test_dense_em_equals_the_compiled_path_on_sonar(split, r, shared_file):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    ref, out = _both(StandardScaler().fit(Xtr).transform(Xtr), ytr, r, "em-l0")
    _assert_same(ref, out)


def _weights(n, seed):
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.05, 20.0, size=n)
    q[rng.choice(n, n // 3, replace=False)] = np.inf
    return q


@pytest.mark.parametrize("steps", [1, 3])
def test_one_subproblem_against_cvxpy(steps):
    import cvxpy as cp

    X, y = _instance(11, m=70, n=20)
    y_pm = np.where(y > 0, 1.0, -1.0)
    sub = DenseHingeSubproblem(X, y_pm, 0.7)
    for k in range(steps):  # warm from other weights first: the answer must be this step's
        it = sub.solve(quad=_weights(20, k))
    q = _weights(20, steps - 1)
    live = np.isfinite(q)
    w, b = cp.Variable(int(live.sum())), cp.Variable()
    hinge = cp.sum(cp.pos(1 - cp.multiply(y_pm, X[:, live] @ w + b)))
    obj = cp.Minimize(0.7 * hinge + cp.sum(cp.multiply(q[live], w ** 2)))
    prob = cp.Problem(obj)
    prob.solve(solver=cp.CLARABEL)
    assert it.ok and np.all(it.coef[~live] == 0.0)
    np.testing.assert_allclose(it.coef[live], w.value, atol=2e-6)
    assert abs(it.objective - prob.value) <= 1e-6 * max(1.0, prob.value)
    assert it.objective <= prob.value + 1e-9 * max(1.0, prob.value)  # certified: no worse than CVXPY's


def test_the_certificate_refuses_perturbed_answers():
    X, y = _instance(3, m=90, n=25)
    y_pm = np.where(y > 0, 1.0, -1.0)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    q = _weights(25, 4)
    it = sub.solve(quad=q)
    lam = it.result.duals["lam"]
    w, b = it.coef, float(it.intercept[0])
    assert sub.certificate(q, w, b, lam)["optimal"]
    free = np.flatnonzero((lam > 1e-6) & (lam < 1.0 - 1e-6))
    i, j = free[0], free[1]
    moved = lam.copy()  # along the equality: y'lam stays 0 (up to the rounding lam has: 1.8e-15 with the
    moved[i] += 1e-6 * y_pm[i]  # compiled pivots), the box holds; the refusal is stationarity's (w is no
    moved[j] -= 1e-6 * y_pm[j]  # longer the moved multipliers' model), not the gap's or the equality's
    cert = sub.certificate(q, w, b, moved)
    assert abs(y_pm @ moved) <= 1e-12 and not cert["optimal"]
    assert cert["stationarity"] > 10 * GAP_TOL and abs(cert["gap"]) <= GAP_TOL and cert["equality"] <= GAP_TOL
    w2 = w.copy()
    w2[np.flatnonzero(np.isfinite(q))[0]] += 1e-6
    assert not sub.certificate(q, w2, b, lam)["optimal"]
    assert not sub.certificate(q, w, b + 1e-6, lam)["optimal"]
    assert not sub.certificate(q, -w, b, lam)["optimal"]
    assert sub.certificate(q, w, b, lam)["gap"] <= GAP_TOL
    # the zero_tol cut's check: cutting nothing keeps the point; cutting a group that carries weight is refused
    same = sub.certified_cut(it, np.ones(25, dtype=bool))
    assert same is not None and np.array_equal(same.coef, w)
    assert same.objective == pytest.approx(it.objective, rel=1e-15)
    keep = np.ones(25, dtype=bool)
    keep[int(np.argmax(np.abs(w)))] = False
    assert sub.certified_cut(it, keep) is None


def test_refuses_what_it_does_not_solve():
    X, y = _instance(0, m=30, n=5)
    sub = DenseHingeSubproblem(X, np.where(y > 0, 1.0, -1.0), 1.0)
    with pytest.raises(UnsupportedProblemError):
        sub.solve(lin=np.ones(5))
    with pytest.raises(UnsupportedProblemError):
        sub.solve(quad=-np.ones(5))
    with pytest.raises(UnsupportedProblemError):
        DenseHingeSubproblem(X, y * 2, 1.0)
    with pytest.raises(UnsupportedProblemError):
        DenseHingeSubproblem(X, np.where(y > 0, 1.0, -1.0), 0.0)
    bad = X.copy()
    bad[0, 0] = np.nan
    with pytest.raises(UnsupportedProblemError):
        DenseHingeSubproblem(bad, np.where(y > 0, 1.0, -1.0), 1.0)
    import scipy.sparse as sp

    with pytest.raises(UnsupportedProblemError):
        DenseHingeSubproblem(sp.csr_matrix(X), np.where(y > 0, 1.0, -1.0), 1.0)
    res = fsframe.method.resolve("l1-svm")
    with pytest.raises(UnsupportedProblemError):
        run_dense_em(res.loop, res.surrogate, X, np.where(y > 0, 1.0, -1.0), 1.0)


def _scale_instance():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 12))
    y = np.where(X[:, :3].sum(1) + 0.5 * rng.normal(size=90) > 0, 1.0, -1.0)
    return X, y


def test_a_step_on_columns_scaled_by_1e3_is_certified_by_the_scaled_dual():
    # the unscaled pivots end "singular" with 0 pivots; the dual scaled by ||F||_2 is certified and is
    # the same problem as X at q = 1e-6 (w scaled by 1e3), solved cold on unit-scale data
    X, y = _scale_instance()
    it = DenseHingeSubproblem(X * 1e3, y, 1.0).solve(quad=np.ones(12))
    assert it.ok and "scaled" in it.result.message and it.result.certificate.gap <= GAP_TOL
    ref = DenseHingeSubproblem(X, y, 1.0).solve(quad=np.full(12, 1e-6))
    assert ref.ok
    np.testing.assert_allclose(it.coef * 1e3, ref.coef, rtol=1e-6, atol=1e-6 * np.abs(ref.coef).max())
    assert it.objective == pytest.approx(ref.objective, rel=1e-8)
    # at 1e4 no attempt is certified: numerical_error naming each attempt, never a wrong optimum
    bad = DenseHingeSubproblem(X * 1e4, y, 1.0).solve(quad=np.ones(12))
    assert bad.status.value == "numerical_error" and "cold" in bad.result.message
    assert "scaled: not certified" in bad.result.message


@pytest.mark.parametrize("no_jit", ["", "1"])
def test_a_warm_step_that_stalls_is_refined_on_its_free_set(no_jit, monkeypatch):
    # the warm attempt's point, the compiled step's (no_jit "") or solve_box_qp's ("1"), is 1.7e-9
    # short of certified: refined on its free set, it is certified, and the answer is a cold fit's
    # (the compiled step's refusal once went on to the scaled attempt: the two paths said different things)
    monkeypatch.setenv("FSFRAME_NO_JIT", no_jit)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 8))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1.0, -1.0)
    sub = DenseHingeSubproblem(X, y, 1.0)
    assert (sub._compiled_step is not None) is compiled_available()  # no_jit "1": the general path's warm
    assert sub.solve(quad=np.ones(8)).ok
    it = sub.solve(quad=np.full(8, 1e-6))  # from the previous multipliers: 1.7e-9 short of certified
    cold = DenseHingeSubproblem(X, y, 1.0).solve(quad=np.full(8, 1e-6))
    assert it.ok and cold.ok and it.result.message == "dense hinge dual: optimal (warm; warm: refined)"
    np.testing.assert_allclose(it.coef, cold.coef, rtol=0, atol=1e-9 * np.abs(cold.coef).max())
    assert it.objective == pytest.approx(cold.objective, rel=1e-12)


def test_a_warm_step_at_nearby_weights_takes_fewer_pivots_than_a_cold_one():
    X, y = _instance(3, m=120, n=20)
    y_pm = np.where(y > 0, 1.0, -1.0)
    q = _weights(20, 2)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    assert sub.solve(quad=q).ok
    near = q * np.linspace(0.9, 1.1, 20)
    warm = sub.solve(quad=near)
    cold = DenseHingeSubproblem(X, y_pm, 1.0).solve(quad=near)
    assert warm.ok and cold.ok and warm.result.message == "dense hinge dual: optimal"  # the first attempt
    assert warm.result.iterations < cold.result.iterations / 2
    np.testing.assert_allclose(warm.coef, cold.coef, rtol=0, atol=1e-9)


def test_quad_of_the_wrong_shape_and_one_class_are_typed_errors():
    from fsframe.errors import DataError

    X, y = _instance(0, m=30, n=24)
    y_pm = np.where(y > 0, 1.0, -1.0)
    sub = DenseHingeSubproblem(X, y_pm, 1.0)
    with pytest.raises(UnsupportedProblemError, match=r"shape \(3,\).*\(24,\)"):
        sub.solve(quad=np.ones(3))
    assert sub.solve(quad=2.0).ok  # a scalar is every group's weight
    with pytest.raises(DataError, match="both classes"):
        DenseHingeSubproblem(X, np.ones(30), 1.0)
    with pytest.raises(DataError):
        fsframe.fit(X, np.ones(30), method="em-l0")  # as fit refuses it


def test_the_group_magnitudes_are_the_sparse_matrixs_column_maxima():
    # the EM loop's weight cap reads each group's largest |entry| (loops.em.group_magnitudes): the
    # dense subproblem's stand-in gives what a scipy matrix |X| gives, on spread scales with
    # negative entries and a zero column
    from fsframe.loops.em import group_magnitudes

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 12)) * np.logspace(-3, 3, 12)
    X[:, 3] = 0.0
    y_pm = np.where(rng.normal(size=50) > 0, 1.0, -1.0)
    ref = np.asarray(abs(sp.csr_matrix(np.abs(X))).max(axis=0).todense()).ravel()
    got = group_magnitudes(DenseHingeSubproblem(X, y_pm, 1.0))
    assert got[3] == 0.0 and np.array_equal(got, ref) and np.array_equal(got, np.abs(X).max(axis=0))



def _narrow_rbf_em_steps():
    """The EM steps of ``em-l0`` on an RBF kernel map far narrower than the samples' distances
    (100 samples in 20 dimensions, sigma = 0.5: the map is the identity to 1e-30 off its diagonal),
    as the loop runs them on :class:`DenseHingeSubproblem`: each step's iterate."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(100, 20))
    y = np.where(X[:, 0] + X[:, 1] > 0, 1.0, -1.0)
    K = np.exp(-((X[:, None, :] - X[None, :, :]) ** 2).sum(-1) / (2 * 0.5 ** 2))
    res = fsframe.method.resolve("em-l0", C=1.0)
    steps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the iterates collapse to the empty model (its warning)
        run_dense_em(res.loop, res.surrogate, K, y, 1.0, callback=lambda rec, it: steps.append(it))
    return K, y, steps


def test_a_warm_step_on_a_vanishing_hessian_is_answered_on_the_scaled_dual():
    # the late EM steps of a kernel map at a narrow width (Twonorm, sigma = 0.5, C = 1: weights ~5e9,
    # F's entries ~2e-5): the warm pivots judge the KKT system singular, and cold the pivots add one
    # free multiplier at a time (at 2 000 samples: not finished after 150 s of wall time,
    # docs/paper002-dual.md). The warm start on the
    # dual scaled by F's largest row norm answers in a pivot or two: the same model as a cold solve
    # of the same step, and the dual's KKT conditions hold (computed here, not by the certificate)
    K, y, steps = _narrow_rbf_em_steps()
    scaled = [it for it in steps if "(warm scaled; warm: singular" in it.result.message]
    assert len(scaled) == 1 and scaled[0].result.iterations <= 3
    it = scaled[0]
    q = np.asarray(it.weights["quad"])
    assert np.all(np.isfinite(q)) and q.min() > 1e8  # the vanishing Hessian
    lam, b = it.result.duals["lam"], float(it.intercept[0])
    g = K.T @ (y * lam)
    np.testing.assert_allclose(it.coef, g / (2 * q), rtol=1e-12, atol=0)  # stationarity in w
    margin = y * (K @ it.coef + b)
    assert abs(y @ lam) <= 1e-12 and lam.min() >= 0 and lam.max() <= 1.0
    free = (lam > 1e-9) & (lam < 1 - 1e-9)
    assert free.sum() > 10
    np.testing.assert_allclose(margin[free], 1.0, rtol=0, atol=1e-9)  # a free multiplier sits on its margin
    assert np.all(margin[lam <= 1e-9] >= 1 - 1e-9) and np.all(margin[lam >= 1 - 1e-9] <= 1 + 1e-9)
    cold = DenseHingeSubproblem(K, y, 1.0).solve(quad=q)
    assert cold.ok  # cold pivots to their limit (1 100), then cold on the scaled dual
    # the same objective to the certificate's accuracy (GAP_TOL relative); the coefficients are
    # compared by the KKT conditions above, not against the cold ones: at weights >= 1e8 a relative gap
    # of 1e-9 determines them only to ~1e-10, more than their size (up to 4.7e-10)
    assert it.objective == pytest.approx(cold.objective, rel=GAP_TOL)
    assert cold.result.iterations > 10 * it.result.iterations  # what the scaled warm start saves

def test_the_warm_scale_is_the_largest_row_norm_outside_the_unit_range():
    from fsframe.dense_rules import warm_scale

    F = np.array([[3e-5, 4e-5], [0.0, 1e-5]])
    assert warm_scale(F) == pytest.approx(5e-5, rel=1e-15)
    assert warm_scale(F * 1e9) == pytest.approx(5e4, rel=1e-15)
    assert warm_scale(F * 1e4) is None  # 0.5: on a unit scale already
    assert warm_scale(np.zeros((2, 2))) is None and warm_scale(np.zeros((0, 0))) is None


def test_column_maxima_equal_numpy_abs_max_bit_for_bit():
    # the group magnitudes' column maxima, formed without an m x n copy of |X|: the same numbers
    # (signs of zero included) as np.abs(X).max(axis=0, initial=0.0), on mixed-sign, all-negative,
    # zero and empty columns
    from fsframe.dense_em import _column_extremes

    X = np.random.default_rng(4).normal(size=(40, 6))
    X[:, 2], X[:, 3], X[:, 4] = 0.0, -np.abs(X[:, 3]), -0.0
    for A in (X, X[:0], X[:, :0]):
        got, ref = _column_extremes(A)[0], np.abs(A).max(axis=0, initial=0.0)
        assert got.tobytes() == ref.tobytes()
