"""The papers' protocols as shipped studies (``fsframe run paper000`` ... ``paper004``): every study
runs ``--reduced`` here on bundled data, and what its cells hold is recomputed independently —
the all-features row and the random-k baselines with scikit-learn, the top-k curves from the
fit's coefficients, the tuned parameters by an inner cross-validation written out here; the
published numbers file names rows the studies have; the data folder's errors say what to
download; the paper report's intervals are checked against hand computations."""

from __future__ import annotations

import fnmatch
import json
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.svm import SVC, LinearSVC

import fsframe
from fsframe.cli import main
from fsframe.errors import DataFileError, InvalidOptionError
from fsframe.evaluation.experiment import load_results, run_study
from fsframe.evaluation.paper import (BEGIN, END, check_numbers, compare, deviation_counts, digest, interval, load_numbers, reasons, render,
                                     write_paper_report)
from fsframe.evaluation.splits import make_splits
from fsframe.evaluation.study import BUNDLED_STUDIES, load_study

PAPERS = [s for s in BUNDLED_STUDIES if s.startswith("paper")]
ROOT = Path(__file__).resolve().parents[2]


def _scaled(X, split):
    Xtr, Xte = X[split.train], X[split.test]
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return (Xtr - mu) / sd, (Xte - mu) / sd


def _random_cols(seed, split, n, k, draw):
    """The documented rule of the random subsets (docs/papers.md)."""
    return np.sort(np.random.default_rng([seed, split.repeat, split.fold, k, draw]).choice(n, size=k, replace=False))


@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """Every shipped paper study, ``--reduced``, run once: ``{name: (study, StudyResult)}``."""
    import warnings

    root = tmp_path_factory.mktemp("reduced")
    out = {}
    for name in PAPERS:
        study = load_study(name, reduced=True, data_dir=root / "no-data")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[name] = (study, run_study(study, root / name))
    return out


@pytest.mark.parametrize("name", PAPERS)
def test_studies_load_full_and_reduced(name, tmp_path):
    full = load_study(name, data_dir=tmp_path)
    small = load_study(name, reduced=True, data_dir=tmp_path)
    assert small.reduced and small.name == f"{full.name}-reduced" and small.output.endswith("-reduced")
    # the reduced run needs no data file: bundled or generated data only, so CI runs it anywhere
    assert all(d.file is None for d in small.datasets)
    assert len(small.configurations()) <= len(full.configurations())
    if full.protocol.repeats > 1 or isinstance(full.protocol.cv, int):
        assert (small.protocol.repeats, small.protocol.cv) != (full.protocol.repeats, full.protocol.cv)


def test_protocols_are_the_papers():
    p0 = load_study("paper000").protocol
    assert (p0.cv, p0.repeats, p0.baselines, p0.reference) == (10, 1, True, "mpm")
    p1 = load_study("paper001").protocol
    assert (p1.cv, p1.repeats, p1.tune_folds) == (10, 10, 10)
    p2 = load_study("paper002").protocol
    assert (p2.cv, p2.repeats, p2.retrain) == (0.2, 10, "tuned-svm")
    s4 = load_study("paper004")
    p4 = s4.protocol
    assert (p4.cv, p4.repeats, p4.top_k) == (0.4, 10, tuple(range(10, 101, 10)))
    assert p4.retrain_grid == (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
    assert p4.retrain_estimator(199).cv == 3 and p4.retrain_estimator(200).cv == 8  # 004 §5.1
    tunes = {m.label: m.tune for m in s4.methods}
    assert tunes["dso-fs"] == {"p": [0.1, 0.3, 0.5, 0.7, 0.9, 1.0]}
    assert tunes["l1-svm"] == {"C": [10.0 ** e for e in range(-3, 4)]}
    assert [d.name for d in s4.datasets][:2] == ["isolet", "semeion"]


@pytest.mark.parametrize("name", PAPERS)
def test_published_numbers_name_rows_of_the_study(name, tmp_path):
    study = load_study(name, data_dir=tmp_path)
    if study.paper is None:
        return
    numbers = load_numbers(study.paper)
    assert numbers["study"] == name
    names = {d.name for d in study.datasets}
    for tab in numbers["tables"]:
        for row in tab["rows"]:
            labels = row.get("labels", tab.get("labels"))
            assert len(labels) == len(row["values"]) == len(row.get("std", row["values"]))
            if not row["dataset"] or row["dataset"] not in names:
                assert not row["dataset"], f"{tab['name']} {row['row']}: no data set {row['dataset']!r} in {name}"
                continue
            have = {c.label for c in study.configurations(row["dataset"])} | {"all features"}
            for label in labels:
                if not label:  # a column without counterpart in fsframe (002 Table 3's SVM), said so
                    continue
                assert any(fnmatch.fnmatchcase(h, label) for h in have), (tab["name"], row["row"], label)


def test_reduced_runs_finish_without_failures(reduced):
    for name, (study, res) in reduced.items():
        assert res.n_failed == 0, name
        assert res.n_finished == res.n_cells
        labels = {r.label for t in res.tables for r in t.results}
        if study.protocol.baselines:
            assert "all features" in labels, name


def test_all_features_and_random_rows_against_scikit_learn(reduced):
    """002 (reduced): the all-features row is the tuned SVC on every feature; the random-k
    accuracy of each r is the tuned SVC on the documented random subsets; a method's row is the
    tuned SVC on its r selected features."""
    study, res = reduced["paper002"]
    table = res.tables[0]
    data = fsframe.load_dataset("breast_cancer")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    splits, _ = make_splits(y, 0.2, repeats=2, random_state=0)

    def svc():
        return GridSearchCV(SVC(kernel="linear"), {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}, cv=2)

    base = table["all features"]
    for split, rec in zip(splits, base.folds):
        Xtr, Xte = _scaled(X, split)
        assert rec.accuracy == pytest.approx(np.mean(svc().fit(Xtr, y[split.train]).predict(Xte) == y[split.test]))
        for k, acc in rec.random_curve:
            want = np.mean([np.mean(svc().fit(Xtr[:, c], y[split.train]).predict(Xte[:, c]) == y[split.test])
                            for c in (_random_cols(0, split, X.shape[1], k, d) for d in range(2))])
            assert acc == pytest.approx(want)
    for split, rec in zip(splits, table["em-l0 r=5"].folds):
        Xtr, Xte = _scaled(X, split)
        cols = list(rec.selected)
        assert len(cols) == 5
        assert rec.accuracy == pytest.approx(np.mean(svc().fit(Xtr[:, cols], y[split.train]).predict(Xte[:, cols])
                                                     == y[split.test]))


def test_random_k_matched_to_each_method(reduced):
    """003 (reduced): a method whose k is its own gets the reference SVC on its features and on k
    random features (the same subsets for every method with that k in that split)."""
    study, res = reduced["paper003"]
    table = next(t for t in res.tables if t.dataset["name"] == "wdbc")
    data = fsframe.load_dataset("breast_cancer")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    splits, _ = make_splits(y, 3, random_state=0)
    checked = 0
    for row in table.results:
        if row.label == "all features":
            assert all(f.random_accuracy is None for f in row.folds)
            continue
        for split, rec in zip(splits, row.folds):
            k = rec.n_selected
            if not 0 < k < X.shape[1]:
                assert rec.random_accuracy is None
                continue
            Xtr, Xte = _scaled(X, split)

            def acc(cols):
                clf = SVC(kernel="linear", C=1.0).fit(Xtr[:, cols], y[split.train])
                return np.mean(clf.predict(Xte[:, cols]) == y[split.test])

            assert rec.reference_accuracy == pytest.approx(acc(list(rec.selected)))
            assert rec.random_accuracy == pytest.approx(np.mean([acc(_random_cols(0, split, 30, k, d))
                                                                 for d in range(2)]))
            checked += 1
    assert checked >= 6


def test_top_k_curves_and_tuned_p(reduced):
    """004 (reduced): DSO-FS's p is the inner 2-fold CV winner (LIBSVM's linear SVC, C = 1, on the
    top 8 features), and its curve is the tuned linear SVC on the top k of ||W_j||_2."""
    study, res = reduced["paper004"]
    table = res.tables[0]
    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    splits, _ = make_splits(y, 0.4, repeats=2, random_state=0)
    for split, rec in zip(splits, table["dso-fs"].folds):
        Xtr, Xte = _scaled(X, split)
        ytr = y[split.train]
        scores = {}
        for p in (0.5, 1.0):
            s = []
            for itr, iva in StratifiedKFold(2, shuffle=True, random_state=0).split(Xtr, ytr):
                A, B = Xtr[itr], Xtr[iva]
                mu, sd = A.mean(0), np.where(A.std(0) > 0, A.std(0), 1.0)
                A, B = (A - mu) / sd, (B - mu) / sd
                fitted = fsframe.fit(A, ytr[itr], method="dso-fs", p=p)
                # the top 8 that the fit's support reaches (docs/papers.md); none is empty here
                top = np.argsort(-np.linalg.norm(np.atleast_2d(fitted.coef), axis=0),
                                 kind="stable")[:min(8, fitted.n_selected)]
                assert top.size
                s.append(np.mean(SVC(kernel="linear", C=1.0).fit(A[:, top], ytr[itr]).predict(B[:, top])
                                 == ytr[iva]))
            scores[p] = np.mean(s)
        assert rec.facts["tuned p"] == max(scores, key=lambda p: (scores[p], -p))
        W = np.atleast_2d(fsframe.fit(Xtr, ytr, method="dso-fs", p=rec.facts["tuned p"]).coef)
        order = np.argsort(-np.linalg.norm(W, axis=0), kind="stable")
        for k, acc in rec.curve:
            clf = GridSearchCV(SVC(kernel="linear"), {"C": [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]}, cv=2)
            clf.fit(Xtr[:, order[:k]], ytr)
            assert acc == pytest.approx(np.mean(clf.predict(Xte[:, order[:k]]) == y[split.test]))
        assert rec.accuracy == rec.curve[-1][1] and rec.n_selected == 8


def test_reduced_paper000_rows_equal_cross_validate(reduced):
    """000 (reduced): the study's rows are what cross_validate gives on the same splits."""
    from fsframe.evaluation import cross_validate

    study, res = reduced["paper000"]
    table = res.tables[0]
    data = fsframe.load_dataset("breast_cancer")
    for label in ("mpm", "l1-mpm"):
        cv = cross_validate(data, method=label, cv=3, random_state=0)
        assert [f.accuracy for f in table[label].folds] == [f.accuracy for f in cv.folds]
        assert [f.selected for f in table[label].folds] == [f.selected for f in cv.folds]


def test_resumed_reduced_run_computes_nothing(reduced, tmp_path):
    study, res = reduced["paper004"]
    again = run_study(study, res.root)
    assert (again.n_skipped, again.n_computed) == (res.n_cells, 0)


# --------------------------------------------------------------------------------------- data folder
def test_missing_data_folder_and_file_name_the_download(tmp_path, monkeypatch):
    from fsframe.evaluation.experiment import _plan

    monkeypatch.delenv("FSFRAME_DATA", raising=False)
    with pytest.raises(DataFileError, match=r"no data folder is set: give one with --data-dir.*FSFRAME_DATA"
                                            r".*archive\.ics\.uci\.edu/dataset/151"):
        _plan(load_study("paper000"))
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path))
    with pytest.raises(DataFileError, match=r"'sonar\.csv', which is not in the data folder .* \(from \$FSFRAME_DATA\)"
                                            r": download it from https://archive"):
        _plan(load_study("paper000"))
    assert main(["run", "paper000", "--data-dir", str(tmp_path / "x"), "--out", str(tmp_path / "o")]) == 2


def test_data_folder_is_read(tmp_path, monkeypatch):
    """A file in --data-dir is found (and --data-dir wins over $FSFRAME_DATA)."""
    rng = np.random.default_rng(0)
    rows = np.column_stack([rng.normal(size=(40, 3)), np.repeat([0, 1], 20)])
    (tmp_path / "tiny.csv").write_text("\n".join(",".join(f"{v:g}" for v in r) for r in rows) + "\n")
    monkeypatch.setenv("FSFRAME_DATA", str(tmp_path / "elsewhere"))
    spec = tmp_path / "s.toml"
    spec.write_text('[study]\nname = "t"\n[protocol]\ncv = 2\n[[datasets]]\nname = "tiny"\nfile = "tiny.csv"\n'
                    'label_column = -1\n[[methods]]\nmethod = "l1-svm"\n')
    study = load_study(spec, data_dir=tmp_path)
    assert study.datasets[0].load().X.shape == (40, 3)
    with pytest.raises(InvalidOptionError, match="give its name only"):
        spec.write_text(spec.read_text().replace('file = "tiny.csv"', 'file = "../tiny.csv"'))
        load_study(spec, data_dir=tmp_path)


@pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")
def test_onehot_labels(tmp_path):
    """UCI Semeion's layout: features, then one indicator column per class."""
    X = np.arange(18, dtype=float).reshape(6, 3) ** 2
    code = np.eye(3)[[2, 0, 1, 2, 0, 1]]
    (tmp_path / "s.data").write_text("\n".join(" ".join(f"{v:g}" for v in r) + " " for r in np.hstack([X, code])))
    spec = tmp_path / "s.toml"
    spec.write_text('[[datasets]]\nname = "s"\npath = "s.data"\ndelimiter = " "\nlabel_column = -1\n'
                    'onehot_labels = 3\n[[methods]]\nmethod = "l1-svm"\n')
    data = load_study(spec).datasets[0].load()
    np.testing.assert_array_equal(data.X, X)
    np.testing.assert_array_equal(data.y, [2, 0, 1, 2, 0, 1])
    (tmp_path / "s.data").write_text("\n".join(" ".join(f"{v:g}" for v in r) for r in np.hstack([X, code + 1])))
    with pytest.raises(DataFileError, match="not a one-hot code"):
        load_study(spec).datasets[0].load()


# --------------------------------------------------------------------------------------- the report
def _digest(rows, kind="holdout", repeats=3):
    def folds(accs, **kw):
        base = dict(ok=True, mcc=0.0, n_selected=2, pct_selected=50.0, n_iter=1, seconds=0.1, selected=[0, 1],
                    curve=[], random_curve=[], random_accuracy=None, reference_accuracy=None, error_type=None,
                    facts={}, error=None)
        return [{**base, "repeat": i if kind == "holdout" else i // 2, "fold": 0 if kind == "holdout" else i % 2,
                 "accuracy": a, **kw} for i, a in enumerate(accs)]

    table = {"dataset": {"name": "d", "n_samples": 10, "n_features": 4, "classes": [0, 1]},
             "protocol": {"kind": kind, "n_splits": 1 if kind == "holdout" else 2, "repeats": repeats,
                          "test_size": 0.2 if kind == "holdout" else None, "random_state": 0, "scale": "standard"},
             "rows": [{"label": label, "method": None, "params": {}, "n_planned": len(accs), "folds": folds(accs, **kw)}
                      for label, accs, kw in rows]}
    return {"format": "fsframe-study-digest/1", "study": "s", "paper": "p", "reduced": False, "commits": [],
            "n_cells": 1, "n_finished": 1, "n_failed": 0, "tables": [table]}


def test_interval_is_students_t():
    mean, half, n = interval([0.7, 0.8, 0.9])
    assert (mean, n) == (pytest.approx(0.8), 3)
    assert half == pytest.approx(4.302652729911275 * 0.1 / math.sqrt(3))  # t_{0.975, 2} s / sqrt(n)
    assert interval([1.0]) == (1.0, None, 1)


def test_report_beside_the_paper_and_random_verdicts():
    d = _digest([("a", [0.70, 0.80, 0.90], {}), ("b C=1", [0.5, 0.5, 0.6], {}), ("b C=10", [0.9, 0.9, 0.8], {})])
    numbers = {"paper": "P", "tables": [{"name": "T1", "caption": "c", "headers": ["A", "B"], "labels": ["a", "b C=*"],
                                         "rows": [{"row": "r", "dataset": "d", "metric": "accuracy",
                                                   "values": [75.0, 80.0]},
                                                  {"row": "gone", "dataset": "", "metric": "accuracy",
                                                   "values": [1.0, 2.0]}]}]}
    text = render(d, numbers=numbers)
    half = 4.302652729911275 * 10 / math.sqrt(3)
    assert f"| r | A | 75.0 | 80.00 [{80 - half:.2f}, {80 + half:.2f}] | +5.00 [{5 - half:+.2f}, {5 + half:+.2f}] | 3 |" in text
    assert "| r | B (best of 2 on the test folds: b C=10) | 80.0 | 86.67" in text
    assert "| gone | A | 1.0 | no copy of this data set |" in text
    # with the paper's standard deviation over n trials: Welch's interval
    numbers["tables"][0].update(n=10, rows=[{"row": "r", "dataset": "d", "metric": "accuracy", "values": [75.0, 80.0],
                                             "std": [2.0, 0.0]}])
    from scipy.stats import t

    v1, v2 = 100 / 3, 4 / 10
    df = (v1 + v2) ** 2 / (v1 ** 2 / 2 + v2 ** 2 / 9)
    h = t.ppf(0.975, df) * math.sqrt(v1 + v2)
    assert f"+5.00 [{5 - h:+.2f}, {5 + h:+.2f}]" in render(d, numbers=numbers)
    # a method that loses to its random features (paired by split) is named as such
    d = _digest([("m", [0.6, 0.61, 0.59], {"reference_accuracy": 0.6, "random_accuracy": 0.7})])
    for f, ref in zip(d["tables"][0]["rows"][0]["folds"], (0.60, 0.61, 0.59)):
        f["reference_accuracy"] = ref
    text = render(d)
    assert "**Loses to k random features**" in text and "m at its own k: -10.0" in text


def _one_table(rows, reasons_=()):
    """Published numbers of one table ``T`` with columns A (row ``a``) and B (row ``b``)."""
    return {"paper": "P", "tables": [{"name": "T", "caption": "c", "headers": ["A", "B"], "labels": ["a", "b"],
                                      "rows": rows, "reasons": list(reasons_)}]}


def test_deviations_counted_and_their_reasons_rendered():
    """A number deviates when the 95% interval of ours − paper excludes 0 (Student's t, checked by
    hand here) or, with no interval, when a count differs; the block counts the deviations and those
    without a reason, marks them in the table, and renders each reason once, under its table."""
    from scipy.stats import t as student

    d = _digest([("a", [0.80, 0.81, 0.79], {}), ("b", [0.80, 0.81, 0.79], {})])  # mean 80, sd 1
    half = student.ppf(0.975, 2) * 1.0 / math.sqrt(3)  # 2.48: 80 - 77.6 deviates, 80 - 78 does not
    assert 80 - half < 78 and 80 - half > 77.5
    rows = [{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]},
            {"row": "nsf", "dataset": "d", "metric": "n_selected", "values": [2, 3]},  # every split: 2
            {"row": "gone", "dataset": "", "metric": "accuracy", "values": [1.0, 2.0]}]
    numbers = _one_table(rows)
    cells = {(c["row"], c["column"]): c["deviates"] for c in compare(d, numbers)}
    assert cells == {("acc", "A"): False, ("acc", "B"): True, ("nsf", "A"): False, ("nsf", "B"): True,
                     ("gone", "A"): None, ("gone", "B"): None}
    assert deviation_counts(d, numbers) == {"compared": 4, "judged": 4, "not_run": 0, "deviate": 2, "unexplained": 2,
                                            "explained": 0, "hypothesis": 0, "open": 0}
    text = render(d, numbers=numbers)
    assert "**Deviations: 2 of the 4 judged numbers**" in text and "**2 of the deviations without a reason yet**" in text
    assert f"| acc | B | 77.5 | 80.00 [{80 - half:.2f}, {80 + half:.2f}] | +2.50 [{2.5 - half:+.2f}, " \
           f"{2.5 + half:+.2f}] | 3 | **no reason yet** |" in text
    assert "| acc | A | 78.0 |" in text and text.split("| acc | A | 78.0 |")[1].split("\n")[0].endswith("| 3 | |")
    assert "| nsf | B | 3 | 2.00 [2.00, 2.00] | -1.00 [-1.00, -1.00] | 3 | **no reason yet** |" in text
    # with reasons: one for a group of cells, one on a cell that does not deviate (shown, not counted)
    numbers = _one_table(rows, [{"rows": ["acc", "nsf"], "columns": ["B"], "why": "the  paper's\tgrid", "status": "open"},
                                {"rows": ["acc"], "columns": ["A"], "why": "close anyway", "status": "explained"}])
    assert deviation_counts(d, numbers) == {"compared": 4, "judged": 4, "not_run": 0, "deviate": 2, "unexplained": 0,
                                            "explained": 0, "hypothesis": 0, "open": 2}
    text = render(d, numbers=numbers)
    assert "every deviation found has a reason (2 open)" in text and "no reason yet" not in text
    # numbered as they first appear in the table, each rendered once
    assert text.count("| 3 | [1] |") == 1 and text.count("| 3 | [2] |") == 2
    assert "[1] **explained:** close anyway.  \n[2] **open:** the paper's grid.\n" in text
    # without published numbers nothing is compared and no block is written
    assert "Deviations" not in render(d)
    # one split: no interval; a count that differs deviates, an accuracy is not decided
    one = _digest([("a", [0.8], {}), ("b", [0.8], {})])
    assert {(c["row"], c["column"]): c["deviates"] for c in compare(one, _one_table(rows))} == {
        ("acc", "A"): None, ("acc", "B"): None, ("nsf", "A"): False, ("nsf", "B"): True,
        ("gone", "A"): None, ("gone", "B"): None}


@pytest.mark.parametrize("bad, match", [
    ({"rows": ["nope"], "why": "w", "status": "open"}, "names the row 'nope', which the table does not have"),
    ({"rows": ["acc"], "columns": ["C"], "why": "w", "status": "open"}, "names the column 'C' of the row 'acc'"),
    ({"rows": ["acc"], "why": "w", "status": "solved"}, "status 'solved'"),
    ({"rows": ["acc"], "why": " "}, "no one-line 'why'"),
    ({"rows": ["acc"], "why": "two\nlines"}, "must be one line"),
    ({"rows": "acc", "why": "w", "status": "open"}, "names no rows"),
    ({"rows": ["acc"], "why": "w"}, "has status None"),  # no status: nothing counts as checked by default
    ({"rows": ["acc"], "columns": [], "why": "w", "status": "open"}, "'columns' must name one or more"),
    ({"rows": ["acc"], "columns": "A", "why": "w", "status": "open"}, "'columns' must name one or more"),
])
def test_a_reason_must_name_a_cell_of_its_table(bad, match):
    """A reason attached to a row or column the table does not have (a typo, a row renamed) is a
    typed error, at reading and at rendering, never a reason silently dropped."""
    from fsframe.errors import DataFileError

    numbers = _one_table([{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]}], [bad])
    with pytest.raises(DataFileError, match=match):
        reasons(numbers["tables"][0])
    with pytest.raises(DataFileError, match=match):
        render(_digest([("a", [0.8, 0.8, 0.8], {}), ("b", [0.8, 0.8, 0.8], {})]), numbers=numbers)


def test_two_reasons_for_one_cell_are_an_error():
    from fsframe.errors import DataFileError

    tab = _one_table([{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]}],
                     [{"rows": ["acc"], "why": "one", "status": "open"},
                      {"rows": ["acc"], "columns": ["B"], "why": "two", "status": "open"}])["tables"][0]
    with pytest.raises(DataFileError, match="reasons 1 and 2 both explain 'acc', 'B'"):
        reasons(tab)
    # a row with its own labels has only those columns
    tab = {"name": "T", "headers": ["A", "B"], "labels": ["a", "b"],
           "rows": [{"row": "nsf", "labels": ["b"], "dataset": "d", "metric": "n_selected", "values": [2]}],
           "reasons": [{"rows": ["nsf"], "columns": ["A"], "why": "w", "status": "open"}]}
    with pytest.raises(DataFileError, match="which has only 'B'"):
        reasons(tab)


@pytest.mark.parametrize("change, match", [
    (lambda t: t["rows"][0].update(std=[1.0]), "1 std for its 2 columns"),
    (lambda t: t["rows"][0].update(values=[78.0]), "1 values for its 2 columns"),
    (lambda t: t["rows"][1].update(row="acc"), "two rows have this 'row' text"),
    (lambda t: t.update(labels=["a"]), "1 labels for its 2 columns"),
])
def test_published_numbers_that_do_not_fit_their_table_are_an_error(change, match):
    """A std or values list shorter than the columns (a typo) would drop published numbers from
    the report and its count, two rows with one 'row' text would share a reason: a typed error,
    whether the numbers come from a paper's data file or are given to compare() directly."""
    from fsframe.errors import DataFileError

    numbers = _one_table([{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]},
                          {"row": "nsf", "dataset": "d", "metric": "n_selected", "values": [2, 3]}])
    change(numbers["tables"][0])
    with pytest.raises(DataFileError, match=match):
        compare(_digest([("a", [0.8, 0.8, 0.8], {}), ("b", [0.8, 0.8, 0.8], {})]), numbers)
    twice = _one_table([{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]}])
    twice["tables"].append(dict(twice["tables"][0]))
    with pytest.raises(DataFileError, match="two tables are named 'T'"):
        check_numbers(twice)


def test_every_shipped_paper_file_passes_the_checks_when_read(monkeypatch):
    """load_numbers runs check_numbers on what it reads (docs/experiments.md: a data file that does
    not fit its tables is an error when it is read, not a number silently left out)."""
    from fsframe.errors import DataFileError
    import fsframe.evaluation.paper_numbers as paper_mod

    for name in ("paper000", "paper001", "paper002", "paper002-dual", "paper004"):
        assert load_numbers(name)["tables"]
    bad = paper_mod._toml().loads
    monkeypatch.setattr(paper_mod, "_toml", lambda: type("T", (), {"loads": staticmethod(
        lambda text: {**bad(text), "tables": bad(text)["tables"] + bad(text)["tables"][:1]})}))
    with pytest.raises(DataFileError, match="paper001.toml: two tables are named 'Table 2'"):
        load_numbers("paper001")


def test_paper_spread_widens_the_interval_and_a_zero_spread_on_both_sides_is_exact():
    """With the paper's sd over n trials the difference has Welch's interval (checked against
    scipy's ttest_ind_from_stats, which must put p above 0.05 where the interval holds 0); with no
    spread on either side (the paper prints sd 0.00, our splits are all equal) the difference is
    exact and any difference deviates, as it does when the paper gives no sd."""
    from scipy.stats import ttest_ind_from_stats

    d = _digest([("a", [0.80, 0.81, 0.79], {}), ("b", [0.80, 0.81, 0.79], {})])  # mean 80, sd 1, n 3
    rows = [{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [77.0, 77.0], "std": [0.1, 6.0]}]
    numbers = {**_one_table(rows), "tables": [{**_one_table(rows)["tables"][0], "n": 10}]}
    cells = {c["column"]: c["deviates"] for c in compare(d, numbers)}
    for col, sd in (("A", 0.1), ("B", 6.0)):
        p = ttest_ind_from_stats(80.0, 1.0, 3, 77.0, sd, 10, equal_var=False).pvalue
        assert cells[col] == (p < 0.05)
    assert cells == {"A": True, "B": False}  # 3 points: outside the interval with sd 0.1, inside with sd 6 (Student alone: outside)
    flat = _digest([("a", [1.0, 1.0, 1.0], {}), ("b", [0.9, 0.9, 0.9], {})])
    for std in (None, [0.0, 0.0]):
        rows = [{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [90.0, 90.0],
                 **({"std": std} if std else {})}]
        numbers = {**_one_table(rows), "tables": [{**_one_table(rows)["tables"][0], "n": 10}]}
        got = {c["column"]: (c["deviates"], c["difference"]) for c in compare(flat, numbers)}
        assert got == {"A": (True, "+10.00 [+10.00, +10.00]"), "B": (False, "+0.00 [+0.00, +0.00]")}


def test_one_split_of_ours_is_not_judged_even_where_the_paper_gives_its_spread():
    """With one split of ours its own spread is unknown: the paper's sd alone is no interval for
    ours − paper (a partial run of paper 004 had ISOLET's one split judged as if it were exact), so
    the number is shown, counted as compared but not judged — a count row too (one integer of ours
    never equals a paper's mean of counts such as 11.6 ± 2.1, so the exact rule would always fire)."""
    one = _digest([("a", [0.70], {}), ("b", [0.70], {})])
    rows = [{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [90.0, 70.0], "std": [0.5, 0.5]}]
    numbers = {**_one_table(rows), "tables": [{**_one_table(rows)["tables"][0], "n": 10}]}
    got = {c["column"]: (c["deviates"], c["difference"]) for c in compare(one, numbers)}
    assert got == {"A": (None, "-20.00"), "B": (None, "+0.00")}
    counts = [{"row": "nsf", "dataset": "d", "metric": "n_selected", "values": [11.6, 11.6], "std": [2.1, 2.1]}]
    numbers_n = {**_one_table(counts), "tables": [{**_one_table(counts)["tables"][0], "n": 10}]}
    assert {c["column"]: c["deviates"] for c in compare(one, numbers_n)} == {"A": None, "B": None}
    two = _digest([("a", [0.70, 0.72], {}), ("b", [0.70, 0.72], {})])
    assert {c["column"]: c["deviates"] for c in compare(two, numbers)} == {"A": True, "B": False}


def test_an_interval_end_near_zero_is_printed_with_the_digits_that_show_its_sign():
    """An interval that just excludes 0 (lower end +0.0007) must not read "[+0.00, ...]" beside a
    deviation mark: the ends get as many digits as show them non-zero."""
    from fsframe.evaluation.paper_numbers import _ends

    assert _ends(0.0007, 1.01) == " [+0.0007, +1.0100]"
    assert _ends(-0.004, 0.5) == " [-0.004, +0.500]"
    assert _ends(0.0, 1.0) == " [+0.00, +1.00]" and _ends(0.2, 1.0) == " [+0.20, +1.00]"


def test_headline_counts_judged_unjudged_and_not_run_numbers():
    """The block's headline counts the deviations among the numbers an interval judges, the numbers
    shown without one (one split), and those whose data set has not run: a partial digest does not
    read as if every number had been checked."""
    one = _digest([("a", [0.8], {}), ("b", [0.8], {})])
    rows = [{"row": "acc", "dataset": "d", "metric": "accuracy", "values": [78.0, 77.5]},
            {"row": "nsf", "dataset": "d", "metric": "n_selected", "values": [2, 3]},
            {"row": "later", "dataset": "other", "metric": "accuracy", "values": [1.0, 2.0]}]
    numbers = _one_table(rows, [{"rows": ["nsf"], "columns": ["B"], "why": "w", "status": "hypothesis"}])
    counts = deviation_counts(one, numbers)
    assert counts == {"compared": 4, "judged": 2, "not_run": 2, "deviate": 1, "unexplained": 0, "explained": 0,
                      "hypothesis": 1, "open": 0}
    assert ("**Deviations: 1 of the 2 judged numbers** (the 95% interval of ours − paper excludes 0, or, with no "
            "interval, a count differs); 2 more compared but not judged (one split or a share: no interval); "
            "**2 not run yet**; every deviation found has a reason (1 hypothesis).") in render(one, numbers=numbers)


def test_partial_run_says_which_rows_have_not_run():
    """A run stopped early (or restricted to other data sets) shows a planned row none of whose
    cells has finished as "not run yet", not as a failure, and its data-set table counts the
    splits run per row; a finished run's page has no such column."""
    numbers = {"paper": "P", "tables": [{"name": "T", "caption": "c", "headers": ["A", "B"], "labels": ["a", "b"],
                                         "rows": [{"row": "r", "dataset": "d", "metric": "accuracy",
                                                   "values": [80.0, 70.0]}]}]}
    full = render(_digest([("a", [0.7, 0.9], {}), ("b", [0.6, 0.8], {})]), numbers=numbers)
    assert "splits run" not in full and "not run yet" not in full
    d = _digest([("a", [0.7, 0.9], {}), ("b", [], {})])
    d["tables"][0]["rows"][0]["n_planned"] = d["tables"][0]["rows"][1]["n_planned"] = 3
    text = render(d, numbers=numbers)
    assert "| r | B | 70.0 | not run yet (0 of 3 splits) | | |" in text
    assert "| a | 80.00 ± 14.14 |" in text and text.count("| splits run |") == 1
    assert "| 0/2 | 2 of 3 |" in text and "| 0/0 | 0 of 3 |" in text
    d["tables"][0]["rows"][1]["folds"] = [dict(d["tables"][0]["rows"][0]["folds"][0], ok=False, accuracy=None,
                                               error_type="SolverFailedError")]
    assert "| r | B | 70.0 | no successful split | | |" in render(d, numbers=numbers)


def test_page_header_says_how_the_runs_ended():
    """The header says what the digest knows: a finished run its end time; otherwise "partial"
    and how the last run ended — no end time (a run writes one only when it ends: stopped, or
    still going), interrupted (Ctrl-C) at a time, or ended, restricted to some data sets."""
    from fsframe.evaluation.paper import run_status

    d = dict(_digest([("a", [0.7, 0.9], {})]), started="T0", finished="T1", interrupted=False, wall_seconds=9.0,
             engine="serial")
    assert "1 of 1 cells finished, 0 failed; fsframe None at commit unknown, Python None; finished T1, 9 s of wall " \
           "time in the last run (serial)." in render(d)
    d.update(n_cells=4, finished=None, interrupted=None, wall_seconds=None)
    head = render(d).splitlines()[2]
    assert head.endswith("1 of 4 cells finished, 0 failed; fsframe None at commit unknown, Python None; partial; "
                         "the last run, started T0, has not ended (stopped, or still running).")
    assert "finished not" not in head and "interrupted" not in head
    d.update(finished="T2", interrupted=True)
    assert render(d).splitlines()[2].endswith("; partial; the last run was interrupted at T2.")
    d.update(interrupted=False, run_datasets=["semeion", "isolet"])
    assert render(d).splitlines()[2].endswith("; partial; the last run (data sets semeion, isolet) ended T2.")
    assert run_status(d) == "partial: 1 of 4 cells; the last run (data sets semeion, isolet) ended T2"
    # every cell on disk, but the last run (a rerun, say) never wrote its end: it says so, not "finished"
    d.update(n_cells=1, finished=None, run_datasets=None)
    assert run_status(d) == "the last run, started T0, has not ended (stopped, or still running)"


def test_repeated_cv_interval_uses_repeat_means():
    d = _digest([("a", [0.7, 0.9, 0.8, 0.8], {})], kind="k-fold", repeats=2)  # repeats: (0.7, 0.9), (0.8, 0.8)
    numbers = {"paper": "P", "tables": [{"name": "T", "caption": "c", "headers": ["A"], "labels": ["a"],
                                         "rows": [{"row": "r", "dataset": "d", "metric": "accuracy", "values": [80.0]}]}]}
    # the units are the two repeats' means (both 80), not the four folds (sd 8.16)
    assert "| r | A | 80.0 | 80.00 [80.00, 80.00] | +0.00 [+0.00, +0.00] | 2 |" in render(d, numbers=numbers)


def test_report_command_keeps_the_page_around_its_markers(reduced, tmp_path):
    study, res = reduced["paper001"]
    page = tmp_path / "p.md"
    page.write_text(f"# hand-written title\n\n{BEGIN}\nOBSOLETE TEXT\n{END}\n\nhand-written reading\n")
    assert main(["report", str(res.root), "--paper", "--page", str(page), "--no-plots"]) == 0
    text = page.read_text()
    assert text.startswith("# hand-written title\n") and text.endswith("hand-written reading\n") and "OBSOLETE" not in text
    assert "REDUCED run" in text and "| WDBC accuracy | FS-MPM c2 | 90.1 |" in text
    again = write_paper_report(res.root / "digest.json", tmp_path / "q.md", plots=False)[0].read_text()
    assert again == f"{BEGIN}\n{render(json.loads((res.root / 'digest.json').read_text()), numbers=load_numbers('paper001'))}{END}\n"
    assert main(["report", str(res.root), "--page", str(page)]) == 2  # --page without --paper


def test_digest_holds_every_split(reduced):
    study, res = reduced["paper000"]
    d = digest(load_results(res.root))
    assert sum(len(r["folds"]) for t in d["tables"] for r in t["rows"]) == res.n_cells
    assert d["reduced"] and d["paper"] == "paper000"


@pytest.mark.parametrize("method", ["mrmr", "relieff"])
def test_filter_rows_rank_without_a_model(reduced, method):
    """004 (reduced): a filter's top-k cell asks for its ranking alone (no L2 model is solved:
    no objective, no solver status) and its curve is the tuned linear SVC on the top k of the
    ranking a full ``fsframe.fit`` stores, ``info["ranking"]``."""
    study, res = reduced["paper004"]
    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    splits, _ = make_splits(y, 0.4, repeats=2, random_state=0)
    for split, rec in zip(splits, res.tables[0][method].folds):
        assert rec.ok and rec.facts["ranking_only"] and rec.objective is None and rec.statuses == ()
        assert rec.selector_accuracy is None and rec.facts["support"] == 8
        Xtr, Xte = _scaled(X, split)
        ytr = y[split.train]
        fitted = fsframe.fit(Xtr, ytr, method=method, n_features=8)
        order = np.asarray(fitted.info["ranking"])
        assert fitted.objective is not None  # the fit path solves the model the cell skips
        assert set(rec.selected) == set(order[:8].tolist())
        for k, acc in rec.curve:
            clf = GridSearchCV(SVC(kernel="linear"), {"C": [1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0]}, cv=2)
            clf.fit(Xtr[:, order[:k]], ytr)
            assert acc == pytest.approx(np.mean(clf.predict(Xte[:, order[:k]]) == y[split.test]))


@pytest.mark.parametrize("method", ["mrmr", "relieff"])
@pytest.mark.parametrize("classes", [2, 3])
def test_ranking_only_cell_equals_the_fitted_cell(method, classes):
    """The ranking-only cell and the cell that fits the filter's model record the same curve,
    features and predictions, on two classes (codes ±1) and on three (codes 0, 1, 2)."""
    import attrs

    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.protocols import Evaluator, Extras, ranks_alone, study_cell

    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    if classes == 2:
        X, y = X[y != y.max()], y[y != y.max()]
    split = make_splits(y, 0.4, repeats=1, random_state=1)[0][0]
    cfg = _make_config(method, {"method": method}, n_features=6, scale="standard", retrain=None, retrain_C=1.0,
                       n_columns=X.shape[1], n_samples=X.shape[0], n_classes=classes)
    assert ranks_alone(cfg, classes)
    extras = Extras(evaluator=Evaluator(clf="linear-svc"), top_k=(2, 4, 6), ranking_only=True)
    alone = study_cell(X, y, split, attrs.evolve(cfg, extras=extras), raise_errors=True)
    fitted = study_cell(X, y, split, attrs.evolve(cfg, extras=attrs.evolve(extras, ranking_only=False)),
                        raise_errors=True)
    assert alone.facts["ranking_only"] and "ranking_only" not in fitted.facts and fitted.objective is not None
    assert alone.curve == fitted.curve and alone.selected == fitted.selected
    np.testing.assert_array_equal(alone.y_pred, fitted.y_pred)
    assert alone.facts["support"] == fitted.facts["support"] == 6


def test_methods_that_need_their_model_are_fitted():
    """Only a loop that ranks without a model is asked for its ranking alone: DSO-FS, RFS and
    the L1-SVM rank by their model's coefficients."""
    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.protocols import ranks_alone

    for method in ("dso-fs", "rfs", "l1-svm"):
        cfg = _make_config(method, {"method": method}, n_features=None, scale="standard", retrain=None,
                           retrain_C=1.0, n_columns=13, n_samples=178, n_classes=3)
        assert not ranks_alone(cfg, 3)


def test_top_k_cell_trains_no_classifier_on_the_selected_features(monkeypatch):
    """A top-k cell's record is the curve on the top k of the ranking (Extras.after_fit): the
    retrained classifier on the fit's own selection, which that record replaces, is not trained;
    a cell without top_k still trains it."""
    import attrs

    from fsframe.evaluation import runner
    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.protocols import Evaluator, Extras, study_cell

    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    split = make_splits(y, 0.4, repeats=1, random_state=1)[0][0]
    cfg = _make_config("l1-svm", {"method": "l1-svm", "C": 1.0}, n_features=None, scale="standard",
                       retrain="linear-svc", retrain_C=1.0, n_columns=13, n_samples=178, n_classes=3)
    extras = Extras(evaluator=Evaluator(clf="linear-svc"), top_k=(2, 4))
    want = study_cell(X, y, split, attrs.evolve(cfg, extras=extras), raise_errors=True)

    def refused(*a, **k):
        raise AssertionError("the classifier on the selected features was trained")

    monkeypatch.setattr(runner, "_retrain_estimator", refused)
    got = study_cell(X, y, split, attrs.evolve(cfg, extras=extras), raise_errors=True)
    assert got.curve == want.curve and got.selected == want.selected and got.accuracy == want.accuracy
    with pytest.raises(AssertionError, match="was trained"):
        study_cell(X, y, split, attrs.evolve(cfg, extras=attrs.evolve(extras, top_k=())), raise_errors=True)


@pytest.mark.parametrize("method", ["mrmr", "relieff"])
def test_ranking_only_cell_keeps_what_fit_keeps_without_n_features(method):
    """Without ``n_features`` the ranking-only cell keeps the count :func:`fsframe.fit` keeps for a
    ranking method (``default_n_features``: half the features, 13 // 2 = 6 on wine), as the cell
    that fits the model does; it kept all 13."""
    import attrs

    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.protocols import Evaluator, Extras, study_cell

    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    split = make_splits(y, 0.4, repeats=1, random_state=1)[0][0]
    cfg = _make_config(method, {"method": method}, n_features=None, scale="standard", retrain=None, retrain_C=1.0,
                       n_columns=X.shape[1], n_samples=X.shape[0], n_classes=3)
    extras = Extras(evaluator=Evaluator(clf="linear-svc"), top_k=(2, 4), ranking_only=True)
    alone = study_cell(X, y, split, attrs.evolve(cfg, extras=extras), raise_errors=True)
    fitted = study_cell(X, y, split, attrs.evolve(cfg, extras=attrs.evolve(extras, ranking_only=False)),
                        raise_errors=True)
    assert fitted.facts["support"] == alone.facts["support"] == 6
    assert alone.curve == fitted.curve and alone.selected == fitted.selected


def test_shared_fits_of_the_curve_change_no_answer():
    """The evaluated classifier's fits are kept per process (``fit_memo_info``): the cells of one
    split whose top ``k`` are the same columns in the same order share a fit, and their records
    equal those computed with nothing kept, bit for bit (curve, predictions, accuracy); the key
    is the data, not the column indices: the same columns in another order, another test part
    or another ``C`` grid are fitted anew."""
    import attrs

    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.protocols import Evaluator, Extras, clear_fit_memo, fit_memo_info, study_cell

    data = fsframe.load_dataset("wine")
    X, y = np.asarray(data.X, float), np.asarray(data.y)
    split = make_splits(y, 0.4, repeats=1, random_state=1)[0][0]
    tuned = GridSearchCV(LinearSVC(), {"C": [1e-2, 1.0, 100.0]}, cv=3)
    extras = Extras(evaluator=Evaluator(clf=tuned), top_k=(2, 4, 6), ranking_only=True)

    def cell(method):
        cfg = _make_config(method, {"method": method}, n_features=6, scale="standard", retrain=None,
                           retrain_C=1.0, n_columns=X.shape[1], n_samples=X.shape[0], n_classes=3)
        return study_cell(X, y, split, attrs.evolve(cfg, extras=extras), raise_errors=True)

    clear_fit_memo()
    first = cell("mrmr")
    assert fit_memo_info() == {"hits": 0, "misses": 3, "size": 3}
    again = cell("mrmr")  # the same ranking: every k is shared
    assert fit_memo_info()["hits"] == 3
    other = cell("relieff")  # another ranking: only identical ordered prefixes would be shared
    info = fit_memo_info()
    assert info["hits"] + info["misses"] == 9
    clear_fit_memo()
    fresh = [cell("mrmr"), cell("relieff")]  # nothing kept between the two
    clear_fit_memo()
    fresh_other = cell("relieff")
    for got, want in ((first, fresh[0]), (again, fresh[0]), (other, fresh_other)):
        assert got.curve == want.curve and got.accuracy == want.accuracy and got.selected == want.selected
        np.testing.assert_array_equal(got.y_pred, want.y_pred)
    Xtr, Xte = _scaled(X, split)
    ev = Evaluator(clf=tuned)
    clear_fit_memo()
    cols = np.array([0, 3, 5])
    base = ev.fit_predict(Xtr[:, cols], y[split.train], Xte[:, cols])
    ev.fit_predict(Xtr[:, cols[::-1]], y[split.train], Xte[:, cols[::-1]])  # another order
    ev.fit_predict(Xtr[:, cols], y[split.train], Xte[:5, cols])  # another test part
    Evaluator(clf=GridSearchCV(LinearSVC(), {"C": [1.0]}, cv=3)).fit_predict(Xtr[:, cols], y[split.train],
                                                                             Xte[:, cols])  # another grid
    ev.fit_predict(Xtr[:, cols], y[split.train], Xte[:, cols], untuned=True)  # LinearSVC(C=1), not the grid
    assert fit_memo_info()["hits"] == 0 and fit_memo_info()["misses"] == 5
    again = ev.fit_predict(Xtr[:, cols], y[split.train], Xte[:, cols])
    assert fit_memo_info()["hits"] == 1
    np.testing.assert_array_equal(again, base)
    again[:] = -1  # the caller's copy: the kept prediction is not changed through it
    np.testing.assert_array_equal(ev.fit_predict(Xtr[:, cols], y[split.train], Xte[:, cols]), base)
    want = GridSearchCV(LinearSVC(), {"C": [1e-2, 1.0, 100.0]}, cv=3).fit(Xtr[:, cols], y[split.train])
    np.testing.assert_array_equal(base, want.predict(Xte[:, cols]))
    # a shared fit says its fit's warnings again: a cell records the same ConvergenceWarning
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    short = Evaluator(clf=LinearSVC(C=100.0, max_iter=2))
    said = []
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            short.fit_predict(Xtr, y[split.train], Xte)
        said.append([(w.category, str(w.message)) for w in caught])
    assert fit_memo_info()["hits"] == 3
    assert said[0] == said[1] and said[0] and said[0][0][0] is ConvergenceWarning
    clear_fit_memo()
