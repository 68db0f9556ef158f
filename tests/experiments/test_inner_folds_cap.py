"""Paper 004's inner cross-validation (3-fold below 200 training samples, else 8-fold) is capped
by the smallest class of the training part (docs/papers.md): a stratified k-fold needs k members
of every class. ORL (40 classes of 10, 60/40 splits: 240 training samples, 6 per class) ran no
cell before the cap. Here a seeded data set of the same shape runs the shipped paper004 study
(reduced grids) to the end with 6 folds, recomputed independently with scikit-learn; the cap is
said; a class with one training sample is a typed error naming it; the keys of cells whose folds
did not change are kept."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC

import fsframe
from fsframe.errors import DataError, DataWarning
from fsframe.evaluation.experiment import run_study
from fsframe.evaluation.manifest import read_manifest
from fsframe.evaluation.splits import make_splits
from fsframe.evaluation.study import capped_folds, load_study, study_from_dict

C_GRID = [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]
TUNE = [0.1, 1.0]


def _orl_like(per_class=10, n_classes=40, n_features=8, rare=None):
    """Seeded: ``n_classes`` classes of ``per_class`` samples (one of ``rare`` samples, if given),
    two informative features."""
    rng = np.random.default_rng(11)
    counts = [per_class] * n_classes
    if rare is not None:
        counts[0] = rare
    y = np.repeat(np.arange(1, n_classes + 1), counts)
    X = rng.normal(size=(y.size, n_features))
    X[:, 0] += 0.3 * y
    X[:, 1] -= 0.2 * (y % 7)
    return X, y


def _study(tmp_path, X, y, n_features=8):
    """The shipped paper004 study on ``X, y`` (a CSV), one split, top 2 and 4, a two-point C grid
    for the L1-SVM (swept by the inner path) and mRMR."""
    path = tmp_path / "orl_like.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",")
    base = load_study("paper004")
    data = {"study": {"name": "paper004", "paper": "paper004", "output": str(tmp_path / "out"), "seeds": [0]},
            "protocol": {**{k: v for k, v in base.protocol.as_dict().items() if k in ("name",)},
                         "repeats": 1, "top_k": [2, 4], "baselines": True, "random_draws": 1},
            "datasets": [{"name": "orl-like", "file": path.name, "delimiter": ",", "label_column": -1}],
            "methods": [{"method": "mrmr"}, {"method": "l1-svm", "tune": {"C": TUNE}}]}
    return study_from_dict(data, base=tmp_path, data_dir=tmp_path)


def test_rule_capped_by_the_smallest_class():
    rule = {"folds": 3, "large_folds": 8, "large_from": 200}
    y = np.repeat(np.arange(40), 6)  # 240 training samples: the rule says 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k, note = capped_folds(rule, y)
    assert k == 6 and "8-fold CV capped to 6 folds" in note and "class 0 has only 6" in note
    assert capped_folds(rule, np.repeat(np.arange(20), 12)) == (8, None)  # 240 samples, 12 per class: kept
    assert capped_folds(rule, np.repeat(np.arange(15), 6)) == (3, None)  # 90 samples: 3 folds, below 6
    with pytest.raises(DataError, match=r"class 'b' has 1 training sample"):
        capped_folds(3, np.array(["a", "a", "b", "c", "c"]))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_six_per_class_runs_a_paper004_cell_with_six_folds(tmp_path):
    X, y = _orl_like()
    study = _study(tmp_path, X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = run_study(study)
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert any("inner cross-validation (retrain_folds): 8-fold CV capped to 6 folds: class 1 has only 6" in s
               for s in said), said
    assert any("(tune_folds): 8-fold CV capped to 6 folds" in s for s in said), said
    assert res.n_failed == 0 and res.n_finished == 3
    group = read_manifest(res.root)["groups"][0]
    assert group["inner_folds_capped"] == {"retrain_folds": 6, "tune_folds": 6}
    assert "cv=6" in group["protocol"]["retrain"]

    split = make_splits(y, 0.4, repeats=1, random_state=0)[0][0]
    assert split.train.size == 240 and np.unique(y[split.train], return_counts=True)[1].max() == 6
    mu, sd = X[split.train].mean(0), X[split.train].std(0)
    Xtr, Xte, ytr, yte = (X[split.train] - mu) / sd, (X[split.test] - mu) / sd, y[split.train], y[split.test]

    def tuned_svc_acc(cols):  # the evaluated classifier: LIBSVM's linear SVC with C by 6-fold (not 8) CV
        clf = GridSearchCV(SVC(kernel="linear"), {"C": C_GRID}, cv=6).fit(Xtr[:, cols], ytr)
        return np.mean(clf.predict(Xte[:, cols]) == yte)

    table = res.tables[0]
    (base,) = table["all features"].folds
    assert base.accuracy == pytest.approx(tuned_svc_acc(list(range(X.shape[1]))))

    # the L1-SVM's C: the inner 6-fold winner (the linear SVC, C = 1, on the top 4), written out here
    (rec,) = table["l1-svm"].folds
    assert any(cat is DataWarning and msg.startswith("inner cross-validation: l1-svm: 8-fold CV capped to 6 folds")
               for cat, msg in rec.warnings), rec.warnings
    scores = {}
    for C in TUNE:
        s = []
        for itr, iva in StratifiedKFold(6, shuffle=True, random_state=0).split(Xtr, ytr):
            A, B = Xtr[itr], Xtr[iva]
            m, d = A.mean(0), np.where(A.std(0) > 0, A.std(0), 1.0)
            A, B = (A - m) / d, (B - m) / d
            fitted = fsframe.fit(A, ytr[itr], method="l1-svm", C=C)
            # scored on the top 4 the fit's support reaches; an empty model as the majority class
            top = np.argsort(-np.linalg.norm(np.atleast_2d(fitted.coef), axis=0), kind="stable")[:min(4, fitted.n_selected)]
            if top.size:
                pred = SVC(kernel="linear", C=1.0).fit(A[:, top], ytr[itr]).predict(B[:, top])
            else:
                vals, counts = np.unique(ytr[itr], return_counts=True)
                pred = np.full(iva.size, vals[np.argmax(counts)])
            s.append(np.mean(pred == ytr[iva]))
        scores[C] = np.mean(s)
    assert rec.facts["tuned C"] == max(TUNE, key=lambda c: (scores[c], -TUNE.index(c)))
    W = np.atleast_2d(fsframe.fit(Xtr, ytr, method="l1-svm", C=rec.facts["tuned C"]).coef)
    order = np.argsort(-np.linalg.norm(W, axis=0), kind="stable")
    assert rec.accuracy == pytest.approx(tuned_svc_acc(list(order[:4])))


def test_one_training_sample_of_a_class_is_a_typed_error(tmp_path):
    X, y = _orl_like(per_class=20, n_classes=12, rare=2)  # class 1: 1 training sample, 1 test sample
    with pytest.raises(DataError, match=r"data set 'orl-like'.*class 1 has 1 training sample"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_study(_study(tmp_path, X, y))


def test_uncapped_data_keep_their_cell_keys(tmp_path):
    """12 per class at 240 training samples: 8 folds fit, nothing is capped, and the cell keys are
    the ones planned without a cap (the folds' cap enters a key only where it binds)."""
    from fsframe.evaluation.experiment import _plan
    from fsframe.evaluation import protocols

    X, y = _orl_like(per_class=20, n_classes=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, _, metas, groups = _plan(_study(tmp_path, X, y))
    assert not [w for w in caught if "capped" in str(w.message)]
    assert "inner_folds_capped" not in groups[0] and "cv=8" in groups[0]["protocol"]["retrain"]
    for cfg in groups[0]["configs"]:
        assert "tune_folds_capped" not in cfg.get("extras", {})
    assert protocols.Extras.__attrs_attrs__.max_folds.default is None
