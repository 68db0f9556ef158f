"""No leakage (spies on the scaling and the retrained classifier), every number of a rendered table
recomputed from the cell files alone, and the pictures' data checked against the cells."""

from __future__ import annotations

import re

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.svm import SVC

from fsframe.evaluation import runner
from fsframe.evaluation.experiment import load_results, run_study
from fsframe.evaluation.plots import accuracy_vs_features_data, frequency_data, sweep_data
from fsframe.evaluation.study import study_from_dict
from fsframe.io import load_dataset

SEEN = []


class SpyClassifier(ClassifierMixin, BaseEstimator):
    """A linear SVM that records the rows it is fitted on and asked to predict."""

    def fit(self, X, y):
        SEEN.append(("fit", np.array(X), np.array(y)))
        self.svc_ = SVC(kernel="linear").fit(X, y)
        self.classes_ = self.svc_.classes_
        return self

    def predict(self, X):
        SEEN.append(("predict", np.array(X), None))
        return self.svc_.predict(X)


def test_no_leakage(tmp_path, monkeypatch):
    scaled = []
    real_scale = runner._scale

    def spy_scale(Xtr, Xte, kind):
        scaled.append((np.array(Xtr), np.array(Xte)))
        return real_scale(Xtr, Xte, kind)

    monkeypatch.setattr(runner, "_scale", spy_scale)
    SEEN.clear()
    from fsframe.evaluation import study as study_mod

    monkeypatch.setattr(study_mod.Protocol, "retrain_estimator", lambda self, n_train=0, max_folds=None: SpyClassifier())
    spec = {"study": {"seeds": [2]}, "protocol": {"cv": 0.25, "repeats": 3, "retrain": "svm", "n_features": [3]},
            "datasets": [{"name": "breast_cancer"}], "methods": [{"method": "l1-svm"}]}
    res = run_study(study_from_dict(spec), tmp_path)
    data = load_dataset("breast_cancer")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    folds = res.tables[0].results[0].folds
    assert len(folds) == len(scaled) == 3 and len(SEEN) == 6
    for k, f in enumerate(folds):
        Xtr, Xte = scaled[k]
        np.testing.assert_array_equal(Xtr, X[f.train])  # the scaler sees the training part ...
        np.testing.assert_array_equal(Xte, X[f.test])  # ... and is only applied to the test part
        assert not set(f.train) & set(f.test)
        mu, sd = X[f.train].mean(0), X[f.train].std(0)
        _, Xfit, yfit = SEEN[2 * k]
        cols = list(f.selected)
        np.testing.assert_allclose(Xfit, ((X[f.train] - mu) / sd)[:, cols], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(yfit, y[f.train])
        _, Xpred, _ = SEEN[2 * k + 1]
        np.testing.assert_allclose(Xpred, ((X[f.test] - mu) / sd)[:, cols], rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    spec = {"study": {"seeds": [0]}, "protocol": {"cv": 0.3, "repeats": 3, "retrain": "svm", "n_features": [2, 4]},
            "datasets": [{"name": "breast_cancer"}],
            "methods": [{"method": "svm-weights"}, {"method": "l1-svm"}]}
    run_study(study_from_dict(spec), root)
    spec2 = {"study": {"seeds": [0]}, "protocol": {"cv": 3}, "datasets": [{"name": "wine"}],
             "methods": [{"method": "l1-svm", "C": [0.05, 1]}]}
    root2 = tmp_path_factory.mktemp("grid")
    run_study(study_from_dict(spec2), root2)
    return root, root2


def _by_label(cells):
    out = {}
    for d in cells.values():
        out.setdefault(d["label"], []).append(d["record"])
    return out


def _ms(values, scale=1.0, digits=2):
    a = scale * np.asarray(values, float)
    return f"{a.mean():.{digits}f} ± {a.std(ddof=1):.{digits}f}"


def _nogueira(sets, d):
    Z = np.zeros((len(sets), d))
    for i, s in enumerate(sets):
        Z[i, s] = 1
    M = Z.shape[0]
    p = Z.mean(0)
    kbar = Z.sum(1).mean()
    return 1 - np.mean(M / (M - 1) * p * (1 - p)) / (kbar / d * (1 - kbar / d))


def test_table_numbers_come_from_the_cells(sweep_run, cells):
    for root in sweep_run:
        res = load_results(root)  # from the folder alone
        table = res.tables[0]
        text = table.table(markdown=True)
        recs = _by_label(cells.read(root))
        d = table.dataset["n_features"]
        rows = [line.strip("|").split("|") for line in text.splitlines()[2:]]
        assert {r[0].strip() for r in rows} == set(recs)
        retrain = "selector acc." in text
        for r in rows:
            cols = [c.strip() for c in r]
            rs = recs[cols[0]]
            assert cols[1] == _ms([x["accuracy"] for x in rs], 100.0)
            assert cols[2] == _ms([x["mcc"] for x in rs], 1.0, 3)
            off = 1 if retrain else 0
            if retrain:
                assert cols[3] == _ms([x["selector_accuracy"] for x in rs], 100.0)
            assert cols[3 + off] == _ms([x["n_selected"] for x in rs], 1.0, 1)
            assert cols[4 + off] == _ms([100 * x["n_selected"] / d for x in rs], 1.0, 1)
            assert cols[5 + off] == _ms([x["n_iter"] for x in rs], 1.0, 1)
            assert float(cols[6 + off]) == pytest.approx(np.mean([x["seconds"] for x in rs]), abs=6e-4, rel=6e-3)
            sets = [x["selected"] for x in rs]
            sizes = {len(s) for s in sets}
            if sizes in ({0}, {d}):
                assert cols[7 + off] == "-"
            else:
                assert cols[7 + off] == f"{_nogueira(sets, d):.2f}"
        # accuracy recomputed from the stored test predictions and the data itself
        ds = load_dataset(table.dataset["name"])
        y = np.asarray(ds.y)
        for rs in recs.values():
            for x in rs:
                assert x["accuracy"] == np.mean(np.asarray(x["y_pred"]) == y[x["test"]])


def test_picture_data_matches_cells(sweep_run, cells):
    root, root2 = sweep_run
    table = load_results(root).tables[0]
    recs = _by_label(cells.read(root))
    avf = accuracy_vs_features_data(table)
    assert set(avf) == {"svm-weights", "l1-svm"}
    for m, dd in avf.items():
        assert dd["r"] == [2, 4]
        for i, r in enumerate(dd["r"]):
            acc = 100 * np.array([x["accuracy"] for x in recs[f"{m} r={r}"]])
            assert dd["accuracy"][i] == pytest.approx(acc.mean(), rel=1e-12)
            assert dd["accuracy_std"][i] == pytest.approx(acc.std(ddof=1), rel=1e-12)
            assert dd["n_selected"][i] == pytest.approx(np.mean([x["n_selected"] for x in recs[f"{m} r={r}"]]))
    freq = frequency_data(table)
    for label, dd in freq.items():
        sets = [x["selected"] for x in recs[label]]
        expect = np.zeros(len(dd["frequency"]))
        for s in sets:
            expect[s] += 1 / len(sets)
        np.testing.assert_allclose(dd["frequency"], expect, rtol=1e-12)
    sw = sweep_data(load_results(root2).tables[0])
    recs2 = _by_label(cells.read(root2))
    (key, dd), = sw.items()
    assert key == ("l1-svm", "C") and dd["value"] == [0.05, 1.0]
    for v, a, n in zip(dd["value"], dd["accuracy"], dd["n_selected"]):
        rs = recs2[f"l1-svm C={v:g}"]
        assert a == pytest.approx(100 * np.mean([x["accuracy"] for x in rs]), rel=1e-12)
        assert n == pytest.approx(np.mean([x["n_selected"] for x in rs]), rel=1e-12)


def test_report_writes_pictures(sweep_run):
    import matplotlib  # noqa: F401
    from fsframe.evaluation.pages import write_report

    for root in sweep_run:
        page = write_report(load_results(root))
        text = page.read_text()
        imgs = re.findall(r"\]\((img/[^)]+\.png)\)", text)
        assert imgs
        for src in imgs:
            png = root / src
            assert png.stat().st_size > 1000 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert png.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
        html = write_report(load_results(root), fmt="html", plots=False)
        assert "<pre>" in html.read_text()
    stems = [p.stem for root in sweep_run for p in (root / "img").glob("*.png")]
    for kind in ("accuracy_vs_features", "frequency", "sweep"):
        assert any(s.endswith("-" + kind) for s in stems), (kind, stems)
