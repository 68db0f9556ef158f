"""Paper 004's linear SVM is LIBSVM's (004 §5.1 cites Chang & Lin, 2011): scikit-learn's
``SVC(kernel="linear")`` (hinge loss, one-vs-one), not liblinear's ``LinearSVC`` (squared hinge,
one-vs-rest), both as the evaluated classifier (``C`` tuned over 004's grid) and as the inner score
of a tuned method (the linear SVM with ``C = 1`` on the top features). The shipped study is checked
on its protocol, and a cell's numbers are recomputed with scikit-learn on a data set where the two
classifiers disagree (docs/paper004.md)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC, LinearSVC

import fsframe
from fsframe.evaluation.experiment import _plan
from fsframe.evaluation.study import PAPER004_C_GRID, PROTOCOLS, load_study, study_from_dict

TOP_K = [3, 6]


def _svc_is_paper004s(est, folds):
    """``est`` is 004's tuned linear SVM: a grid search over LIBSVM's linear SVC."""
    assert type(est).__name__ == "GridSearchCV" and type(est.estimator) is SVC
    assert est.estimator.kernel == "linear" and est.param_grid == {"C": list(PAPER004_C_GRID)} and est.cv == folds


def test_the_shipped_study_evaluates_libsvms_linear_svm():
    assert PROTOCOLS["paper004"]["retrain"] == "tuned-svm"
    prot = load_study("paper004").protocol
    assert prot.retrain == "tuned-svm"
    _svc_is_paper004s(prot.retrain_estimator(955), 8)  # SEMEION's training part: 8 folds
    _svc_is_paper004s(prot.retrain_estimator(99), 3)  # Yale's: 3 folds (below 200 samples)


def _overlapping(seed=3, n=150, d=10):
    """Seeded: three overlapping classes (the linear SVC and LinearSVC disagree on them)."""
    rng = np.random.default_rng(seed)
    y = np.repeat([1, 2, 3], n // 3)
    X = rng.normal(size=(n, d))
    X[:, 0] += 0.6 * y
    X[:, 1] -= 0.5 * (y == 2)
    X[:, 2] += 0.4 * (y == 3)
    return X, y


def _scaled(A, B):
    mu, sd = A.mean(0), np.where(A.std(0) > 0, A.std(0), 1.0)
    return (A - mu) / sd, (B - mu) / sd


def test_inner_score_is_the_linear_svc_with_c_1(tmp_path):
    """The inner score of a tuned paper004 row (here the L1-SVM's ``C``) is the accuracy of
    ``SVC(kernel="linear", C=1)`` on the top ``max(top_k)`` features of each fold's fit, recomputed
    here on inner folds where ``LinearSVC(C=1)`` scores otherwise."""
    X, y = _overlapping()
    path = tmp_path / "overlap.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",")
    study = study_from_dict({"study": {"name": "p4", "output": str(tmp_path / "out"), "seeds": [0]},
                             "protocol": {"name": "paper004", "repeats": 1, "top_k": TOP_K},
                             "datasets": [{"name": "overlap", "file": path.name, "delimiter": ",", "label_column": -1}],
                             "methods": [{"method": "l1-svm", "tune": {"C": [0.1, 1.0]}}]},
                            base=tmp_path, data_dir=tmp_path)
    data, tasks, metas, _ = _plan(study)
    (task,) = [t for t, m in zip(tasks, metas) if m["label"] == "l1-svm"]
    cfg, split = task.cfg, task.split
    Xd, yd = data[task.data]
    mine, libsvm, liblinear = [], [], []
    Xtr, ytr = _scaled(Xd[split.train], Xd[split.train])[0], yd[split.train]
    for itr, iva in StratifiedKFold(3, shuffle=True, random_state=0).split(Xtr, ytr):  # 90 samples: 3 folds
        A, B = _scaled(Xtr[itr], Xtr[iva])
        res = fsframe.fit(A, ytr[itr], method="l1-svm", C=1.0)
        mine.append(cfg.extras._score(res, A, ytr[itr], B, ytr[iva], cfg))
        top = np.argsort(-np.linalg.norm(np.atleast_2d(res.coef), axis=0), kind="stable")[:max(TOP_K)]
        assert int(res.n_selected) >= max(TOP_K)
        for clf, out in ((SVC(kernel="linear", C=1.0), libsvm), (LinearSVC(C=1.0), liblinear)):
            out.append(np.mean(clf.fit(A[:, top], ytr[itr]).predict(B[:, top]) == ytr[iva]))
    assert mine == pytest.approx(libsvm, abs=0)
    assert libsvm != liblinear  # the data tell the two classifiers apart
