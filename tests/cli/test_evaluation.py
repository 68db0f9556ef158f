"""fsframe.evaluation: metrics against scikit-learn, stability indices against hand computations
and an algebraically different form, cross-validation against an independent recomputation on
the same folds, failure recording, determinism, protocols, input immutability."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import accuracy_score as sk_accuracy
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

import fsframe
import fsframe.evaluation as ev
import fsframe.evaluation.runner as runner
from fsframe.errors import (
    DataError,
    DataWarning,
    InvalidOptionError,
    SolverFailedError,
    UnknownComponentError,
)
from fsframe.evaluation import (
    accuracy_score,
    compare,
    cross_validate,
    jaccard_index,
    kuncheva_index,
    mcc_score,
    nogueira_stability,
    selection_frequency,
)


# ------------------------------------------------------------------------------------ metrics
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [2, 3, 5])
def test_metrics_match_sklearn(seed, k):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, k, 40)
    p = np.where(rng.random(40) < 0.7, t, rng.integers(0, k, 40))
    assert accuracy_score(t, p) == pytest.approx(sk_accuracy(t, p))
    assert mcc_score(t, p) == pytest.approx(matthews_corrcoef(t, p), abs=1e-12)


def test_mcc_binary_is_paper_000_eq_60():
    t = np.array(["a"] * 6 + ["b"] * 4)
    p = np.array(["a", "a", "a", "a", "b", "b", "b", "b", "b", "a"])
    TP, TN, FP, FN = 4, 3, 1, 2  # positive = "a": 4 of 6 found; 3 of 4 "b" found
    expected = (TP * TN - FP * FN) / np.sqrt((TP + FP) * (TP + FN) * (TN + FP) * (TN + FN))
    assert mcc_score(t, p) == pytest.approx(expected)
    assert mcc_score(t, p) == pytest.approx(mcc_score(np.where(t == "a", "b", "a"), np.where(p == "a", "b", "a")))


def test_mcc_degenerate_is_zero_and_bad_input_raises():
    assert mcc_score([0, 1, 0, 1], [1, 1, 1, 1]) == 0.0
    assert mcc_score([0, 1, 0, 1], [0, 1, 0, 1]) == 1.0
    with pytest.raises(DataError):
        mcc_score([0, 1], [0, 1, 1])
    with pytest.raises(DataError):
        accuracy_score([], [])


# ------------------------------------------------------------------------------------ stability
Z_HAND = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 0]], dtype=bool)


def test_stability_hand_example():
    # p = (1, 2/3, 1/3, 0), k = (2, 2, 2), d = 4: s_f^2 = 3/2 p(1-p) = (0, 1/3, 1/3, 0), mean 1/6;
    # kbar/d (1 - kbar/d) = 1/4, so Phi = 1 - (1/6)/(1/4) = 1/3.
    est = nogueira_stability(Z_HAND)
    assert est.value == pytest.approx(1 / 3)
    assert est.ci_low < est.value < est.ci_high
    # Kuncheva, pairs share r = 1, 2, 1 of k = 2 among d = 4: (4r - 4)/(2*2) = 0, 1, 0.
    assert kuncheva_index(Z_HAND) == pytest.approx(1 / 3)
    # Jaccard: 1/3, 1, 1/3
    assert jaccard_index(Z_HAND) == pytest.approx(5 / 9)
    np.testing.assert_allclose(selection_frequency(Z_HAND), [1, 2 / 3, 1 / 3, 0])


@pytest.mark.parametrize("seed", range(5))
def test_nogueira_equals_its_agreement_form(seed):
    # Nogueira et al. also write Phi = (p_a - p_e) / (1 - p_e) with
    # p_a = 1 - (2/d) M/(M-1) sum_f p_f (1 - p_f) and p_e = 1 - 2 q (1 - q), q = kbar / d.
    rng = np.random.default_rng(seed)
    Z = rng.random((7, 12)) < rng.uniform(0.2, 0.6, 12)
    M, d = Z.shape
    p = Z.mean(0)
    q = Z.sum(1).mean() / d
    pa = 1 - (2 / d) * M / (M - 1) * np.sum(p * (1 - p))
    pe = 1 - 2 * q * (1 - q)
    assert nogueira_stability(Z).value == pytest.approx((pa - pe) / (1 - pe))


def test_kuncheva_equals_nogueira_for_equal_sizes():
    rng = np.random.default_rng(1)
    Z = np.zeros((6, 15), bool)
    for i in range(6):
        Z[i, rng.choice(15, 4, replace=False)] = True
    assert kuncheva_index(Z) == pytest.approx(nogueira_stability(Z).value, abs=1e-12)


def test_stability_edge_cases():
    same = np.tile([True, False, True, False], (5, 1))
    est = nogueira_stability(same)
    assert est.value == pytest.approx(1.0) and est.variance == pytest.approx(0.0)
    assert nogueira_stability(np.zeros((4, 5), bool)).value is None
    assert nogueira_stability(np.ones((4, 5), bool)).value is None
    assert nogueira_stability(same[:1]).value is None
    assert kuncheva_index(np.array([[1, 0, 0], [1, 1, 0]], bool)) is None  # different sizes
    with pytest.raises(DataError):
        nogueira_stability(np.array([[0, 2]]))


# ------------------------------------------------------------------------------------ cross-validation
def _independent(X, y, *, seed, k, method, retrain=None, **params):
    """Recompute every fold with scikit-learn pieces only (splits, scaler, metrics, SVC)."""
    out = []
    for tr, te in StratifiedKFold(n_splits=k, shuffle=True, random_state=np.random.RandomState(seed)).split(X, y):
        sc = StandardScaler().fit(X[tr])
        Xtr, Xte = sc.transform(X[tr]), sc.transform(X[te])
        r = fsframe.fit(Xtr, y[tr], method=method, **params)
        pred = r.predict(Xte)
        if retrain:
            clf = SVC(kernel="linear", C=1.0).fit(Xtr[:, r.selected], y[tr])
            pred = clf.predict(Xte[:, r.selected])
        out.append((te, r.selected.tolist(), sk_accuracy(y[te], pred), matthews_corrcoef(y[te], pred), r.n_iter))
    return out


def test_cross_validate_matches_independent_computation(small_binary):
    X, y = small_binary
    res = cross_validate(X, y, method="fsv", cv=5, random_state=3, alpha=2.0)
    ref = _independent(X, y, seed=3, k=5, method="fsv", alpha=2.0)
    assert res.n_folds == 5 and res.n_failed == 0
    for f, (te, sel, acc, mcc, nit) in zip(res.folds, ref):
        np.testing.assert_array_equal(np.sort(f.test), np.sort(te))
        assert list(f.selected) == sel
        assert f.accuracy == pytest.approx(acc) and f.mcc == pytest.approx(mcc) and f.n_iter == nit
        assert f.pct_selected == pytest.approx(100 * len(sel) / X.shape[1])
    s = res.summary()
    accs = [r[2] for r in ref]
    assert s["accuracy"]["mean"] == pytest.approx(np.mean(accs))
    assert s["accuracy"]["std"] == pytest.approx(np.std(accs, ddof=1))
    assert s["n_selected"]["mean"] == pytest.approx(np.mean([len(r[1]) for r in ref]))
    Z = np.zeros((5, X.shape[1]), bool)
    for i, r in enumerate(ref):
        Z[i, r[1]] = True
    np.testing.assert_allclose(res.frequency, Z.mean(0))
    assert res.stability()["nogueira"] == pytest.approx(nogueira_stability(Z).value)


def test_retrain_svm_matches_independent_computation(small_binary):
    X, y = small_binary
    res = cross_validate(X, y, method="l1-svm", cv=4, random_state=1, n_features=3, retrain="svm")
    ref = _independent(X, y, seed=1, k=4, method="l1-svm", retrain=True, n_features=3)
    for f, (te, sel, acc, mcc, _) in zip(res.folds, ref):
        assert list(f.selected) == sel and len(sel) == 3
        assert f.accuracy == pytest.approx(acc) and f.mcc == pytest.approx(mcc)
        assert f.selector_accuracy is not None
    assert res.stability()["kuncheva"] is not None  # equal subset sizes
    assert "selector_accuracy" in res.summary()


def test_multiclass_uses_multiclass_mcc():
    data = fsframe.load_dataset("iris")
    res = cross_validate(data, method="l1-svm", cv=3)
    for f in res.folds:
        yt = data.y[f.test]
        assert f.mcc == pytest.approx(matthews_corrcoef(yt, f.y_pred))
        assert f.accuracy == pytest.approx(sk_accuracy(yt, f.y_pred))


def test_deterministic_and_independent_of_n_jobs(small_binary, monkeypatch):
    X, y = small_binary
    a = cross_validate(X, y, method="fsv", cv=3, repeats=2, random_state=5)
    b = cross_validate(X, y, method="fsv", cv=3, repeats=2, random_state=5, n_jobs="auto")  # stays serial
    monkeypatch.setattr(runner, "AUTO_PARALLEL_SECONDS", 0.0)  # auto -> the first fit here, the rest in a pool
    events = []
    c = cross_validate(X, y, method="fsv", cv=3, repeats=2, random_state=5, n_jobs="auto", progress=events.append)
    assert [e.done for e in events] == list(range(1, 7))
    for x, y_, z in zip(a.folds, b.folds, c.folds):
        assert (x.repeat, x.fold) == (y_.repeat, y_.fold) == (z.repeat, z.fold)
        assert x.selected == y_.selected == z.selected
        assert x.accuracy == y_.accuracy == z.accuracy
        np.testing.assert_array_equal(x.test, z.test)
    d = cross_validate(X, y, method="fsv", cv=3, random_state=6)
    assert any(not np.array_equal(x.test, w.test) for x, w in zip(a.folds, d.folds))


def test_repeats_extend_the_single_run(small_binary):
    X, y = small_binary
    one = cross_validate(X, y, method="l1-svm", cv=4, random_state=2)
    many = cross_validate(X, y, method="l1-svm", cv=4, repeats=3, random_state=2)
    assert many.n_folds == 12 and [f.repeat for f in many.folds] == [0] * 4 + [1] * 4 + [2] * 4
    for a, b in zip(one.folds, many.folds[:4]):
        np.testing.assert_array_equal(a.test, b.test)
    ref = list(RepeatedStratifiedKFold(n_splits=4, n_repeats=3, random_state=2).split(X, y))
    for f, (_, te) in zip(many.folds, ref):
        np.testing.assert_array_equal(f.test, te)
    assert many.summary()["accuracy"]["repeat_std"] is not None
    # every sample is tested exactly once per repeat
    for r in range(3):
        idx = np.concatenate([f.test for f in many.folds if f.repeat == r])
        np.testing.assert_array_equal(np.sort(idx), np.arange(60))


def test_holdout_protocol(small_binary):
    X, y = small_binary
    res = cross_validate(X, y, method="l1-svm", cv=0.25, repeats=3, random_state=0)
    assert res.protocol["kind"] == "holdout" and res.n_folds == 3
    for f in res.folds:
        assert f.n_test == 15 and f.n_train == 45
        assert abs(np.mean(y[f.test]) - np.mean(y)) < 0.1  # stratified


def test_scaling_is_fitted_on_the_training_part(small_binary, monkeypatch):
    X, y = small_binary
    X = X * 100 + 7
    seen = []
    real = runner.fit

    def spy(Xtr, ytr, **kw):
        seen.append(Xtr.copy())
        return real(Xtr, ytr, **kw)

    monkeypatch.setattr(runner, "fit", spy)
    res = cross_validate(X, y, method="l1-svm", cv=3, random_state=0, scale="standard")
    for Xtr in seen:
        np.testing.assert_allclose(Xtr.mean(0), 0, atol=1e-10)
        np.testing.assert_allclose(Xtr.std(0), 1, atol=1e-10)
    seen.clear()
    cross_validate(X, y, method="l1-svm", cv=3, random_state=0, scale="minmax")
    for Xtr in seen:
        np.testing.assert_allclose(Xtr.min(0), 0, atol=1e-12)
        np.testing.assert_allclose(Xtr.max(0), 1, atol=1e-12)
    assert res.protocol["scale"] == "standard"


def test_failed_fold_is_recorded_not_dropped(small_binary, monkeypatch):
    X, y = small_binary
    real = runner.fit
    calls = {"n": 0}

    def flaky(*a, **kw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise SolverFailedError("simulated solver failure")
        return real(*a, **kw)

    monkeypatch.setattr(runner, "fit", flaky)
    res = cross_validate(X, y, method="l1-svm", cv=4, random_state=0)
    assert res.n_folds == 4 and res.n_failed == 1
    bad = res.failed_folds[0]
    assert bad.fold == 1 and not bad.ok and bad.status == "failed"
    assert bad.error_type == "SolverFailedError" and "simulated" in bad.error and bad.accuracy is None
    assert res.summary()["accuracy"]["n"] == 3
    assert "1 of 4 fits failed" in res.report()
    d = res.to_dict()
    assert d["n_failed"] == 1 and d["folds"][1]["status"] == "failed"
    calls["n"] = 0
    with pytest.raises(SolverFailedError, match="simulated"):
        cross_validate(X, y, method="l1-svm", cv=4, random_state=0, on_error="raise")


def test_bad_options_fail_before_any_fit(small_binary, monkeypatch):
    X, y = small_binary

    def never(*a, **kw):
        raise AssertionError("no fit should run")

    monkeypatch.setattr(runner, "fit", never)
    with pytest.raises(UnknownComponentError, match="nope"):
        cross_validate(X, y, method="nope")
    with pytest.raises(InvalidOptionError, match="bogus"):
        cross_validate(X, y, method="fsv", bogus=1)
    with pytest.raises(InvalidOptionError, match="at least 2 folds"):
        cross_validate(X, y, method="fsv", cv=1)
    with pytest.raises(InvalidOptionError, match=r"\(0, 1\)"):
        cross_validate(X, y, method="fsv", cv=1.5)
    with pytest.raises(InvalidOptionError, match="scale"):
        cross_validate(X, y, method="fsv", scale="zscore")
    with pytest.raises(InvalidOptionError, match="n_features=9"):
        cross_validate(X, y, method="fsv", n_features=9)
    with pytest.raises(InvalidOptionError, match="retrain"):
        cross_validate(X, y, method="fsv", retrain="forest")
    with pytest.raises(InvalidOptionError, match="y is required"):
        cross_validate(X, method="fsv")
    with pytest.raises(InvalidOptionError, match="'time_limit' must be >= 0"):
        cross_validate(X, y, method="fsv", time_limit=-1)
    with pytest.raises(InvalidOptionError, match="kernel map.*'sigma'"):
        cross_validate(X, y, method="fsv", kernel="rbf", sigma=0)
    with pytest.raises(InvalidOptionError, match="highs: option no_such_option=1 rejected"):
        cross_validate(X, y, method="fsv", backend_options={"no_such_option": 1})
    with pytest.raises(InvalidOptionError, match="ecos: unknown option 'foo'"):
        cross_validate(X, y, method="l1-mpm", backend_options={"foo": 1})
    with pytest.raises(InvalidOptionError, match="clarabel: unknown option 'foo'"):
        cross_validate(X, y, method="l1-mpm", backend="clarabel", backend_options={"foo": 1})
    with pytest.raises(DataError):
        cross_validate(X[:, :0], y, method="fsv")
    with pytest.raises(InvalidOptionError, match="kernel map"):
        cross_validate(X, y, method="l1-svm", kernel="rbf", retrain="svm")


def test_runtime_plugins_force_serial_fits(small_binary, add_components):
    X, y = small_binary
    add_components(name="runtime-probe", methods=[fsframe.MethodSpec("l1-probe", formulation="hinge", loop="single",
                                                                     surrogate="l1")])
    with pytest.warns(RuntimeWarning, match="method 'l1-probe'.*serially"):
        res = cross_validate(X, y, method="l1-probe", cv=3, n_jobs=2)
    assert res.n_failed == 0


def test_inputs_not_mutated(small_binary):
    X, y = small_binary
    X0, y0 = X.copy(), y.copy()
    cross_validate(X, y, method="l1-svm", cv=3)
    np.testing.assert_array_equal(X, X0)
    np.testing.assert_array_equal(y, y0)


def test_progress_and_json(small_binary):
    X, y = small_binary
    events = []
    res = cross_validate(X, y, method="l1-svm", cv=3, progress=events.append)
    assert [e.done for e in events] == [1, 2, 3] and all(e.total == 3 for e in events)
    import json

    d = json.loads(json.dumps(res.to_dict(arrays=True)))
    assert d["protocol"]["random_state"] == 0 and d["dataset"]["n_samples"] == 60
    assert d["params"]["C"] == 1.0 and d["components"]["formulation"]["name"] == "hinge"
    assert d["versions"]["fsframe"] and d["versions"]["solver"].startswith("highs")
    assert len(d["folds"][0]["test"]) == d["folds"][0]["n_test"]


def test_random_state_none_is_drawn_and_recorded(small_binary):
    X, y = small_binary
    res = cross_validate(X, y, method="l1-svm", cv=3, random_state=None)
    seed = res.protocol["random_state"]
    again = cross_validate(X, y, method="l1-svm", cv=3, random_state=seed)
    for a, b in zip(res.folds, again.folds):
        np.testing.assert_array_equal(a.test, b.test)


def test_kernel_methods_report_samples_and_no_stability(small_binary):
    X, y = small_binary
    res = cross_validate(X, y, method="l1-svm", cv=3, kernel="rbf", sigma=2.0)
    assert res.protocol["groups"] == "samples" and res.frequency is None
    assert res.stability()["nogueira"] is None
    for f in res.folds:
        assert set(f.selected) <= set(f.train.tolist())


def test_fold_warnings_are_collected_and_reissued_once():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 5))
    X[:, 3] = 1.0  # constant: fit() warns in every fold
    y = np.where(X[:, 0] > 0, 1, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = cross_validate(X, y, method="l1-svm", cv=4, scale="none")
    assert all(any(c is DataWarning for c, _ in f.warnings) for f in res.folds)
    mine = [w for w in caught if issubclass(w.category, DataWarning) and "constant" in str(w.message)]
    assert len(mine) == 1 and "in 4 of 4 fits" in str(mine[0].message)


# ------------------------------------------------------------------------------------ compare
def test_compare_uses_the_same_splits_and_routes_parameters(small_binary):
    X, y = small_binary
    res = compare(X, y, methods=["l1-svm", "fsv", ("fsv-a1", {"method": "fsv", "alpha": 1.0})], cv=3, alpha=3.0)
    assert res.labels == ["l1-svm", "fsv", "fsv-a1"]
    assert "alpha" not in res["l1-svm"].params
    assert res["fsv"].params["alpha"] == 3.0 and res["fsv-a1"].params["alpha"] == 1.0
    for a, b in zip(res["l1-svm"].folds, res["fsv"].folds):
        np.testing.assert_array_equal(a.test, b.test)
    single = cross_validate(X, y, method="fsv", cv=3, alpha=3.0)
    assert [f.selected for f in single.folds] == [f.selected for f in res["fsv"].folds]
    table = res.table()
    assert table.splitlines()[0].startswith("method") and len(table.splitlines()) == 5
    md = res.table(markdown=True)
    assert md.startswith("| method |") and md.count("\n") == 4
    rows = res.rows()
    assert rows[1]["label"] == "fsv" and rows[1]["accuracy_mean"] == pytest.approx(res["fsv"].summary()["accuracy"]["mean"])
    with pytest.raises(InvalidOptionError, match="none of"):
        compare(X, y, methods=["l1-svm"], cv=3, alpha=3.0)
    with pytest.raises(InvalidOptionError, match="duplicate"):
        compare(X, y, methods=["fsv", "fsv"], cv=3)
