"""A study's cells of 001's criteria 1 and 2 on one split share one bound search
(:func:`fsframe.evaluation.protocols.search_memo_info`; docs/paper001.md, "Run status"): the second
cell replays the first's SOCPs, and its record — selection, predictions, scores, bounds — is the one
it has when computed alone. Cells of another split, or another search, do not share."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fsframe.evaluation.config import _make_config
from fsframe.evaluation.protocols import clear_search_memo, search_memo_info, study_cell
from fsframe.evaluation.splits import make_splits


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    y = np.where(np.arange(80) < 35, 1, 0)
    X = rng.standard_normal((80, 7))
    X[:, :3] += 0.8 * (2 * y[:, None] - 1)
    return X, y


def _cfg(X, y, label, **spec):
    return _make_config(label, {"method": "fs-mpm", **spec}, n_features=None, scale="standard", retrain=None,
                        retrain_C=1.0, n_columns=X.shape[1], n_samples=X.shape[0], n_classes=2)


def _cell(X, y, split, cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return study_cell(X, y, split, cfg, raise_errors=True)


def _record(rec):
    return (rec.selected, rec.accuracy, rec.mcc, rec.objective, rec.n_iter, rec.statuses,
            {k: v for k, v in rec.facts.items() if "seconds" not in k and k != "search_replayed"}, rec.y_pred.tolist())


def test_criterion_cells_of_one_split_share_the_search_with_the_same_records(data):
    X, y = data
    splits = make_splits(y, 3, repeats=1, random_state=0)[0]
    c1, c2 = _cfg(X, y, "c1", criterion=1), _cfg(X, y, "c2", criterion=2)
    alone = {}
    for s in splits[:2]:
        for cfg in (c1, c2):
            clear_search_memo()
            alone[(s.fold, cfg.label)] = _cell(X, y, s, cfg)
    clear_search_memo()
    shared = {(s.fold, cfg.label): _cell(X, y, s, cfg) for s in splits[:2] for cfg in (c2, c1)}
    assert search_memo_info()["hits"] == 2 and search_memo_info()["misses"] == 2  # one search per split
    for key, rec in shared.items():
        assert rec.ok and _record(rec) == _record(alone[key]), key
        assert rec.facts["search_replayed"] == (key[1] == "c1") and alone[key].facts["search_replayed"] == 0
    assert shared[(0, "c1")].n_selected > shared[(0, "c2")].n_selected  # the criteria chose differently


def test_other_cells_do_not_share(data):
    X, y = data
    split = make_splits(y, 3, repeats=1, random_state=0)[0][0]
    clear_search_memo()
    _cell(X, y, split, _cfg(X, y, "c1", criterion=1))
    _cell(X, y, split, _cfg(X, y, "c2 eps", criterion=2, eps=0.01))  # another loop field
    _cell(X, y, split, _cfg(X, y, "c2 step", criterion=2, delta_pos_step=0.1))  # another loop field
    assert search_memo_info()["hits"] == 0 and search_memo_info()["misses"] == 3
    clear_search_memo()
    _cell(X, y, split, _cfg(X, y, "l1", method="l1-svm"))  # not a bound search: no memo
    assert search_memo_info() == {"hits": 0, "misses": 0, "partial": 0, "refused": 0, "size": 0}


def test_only_dense_numeric_training_data_is_keyed(data):
    """The key hashes the training rows by value; a sparse matrix (whose repr is only its shape and
    count) is never keyed, so two such data sets cannot be taken for one another."""
    import contextlib

    import scipy.sparse as sp

    from fsframe.evaluation.protocols import _shared_search

    X, y = data
    split = make_splits(y, 3, repeats=1, random_state=0)[0][0]
    cfg = _cfg(X, y, "c1", criterion=1)
    assert isinstance(_shared_search(sp.csr_matrix(X), y, split, cfg), contextlib.nullcontext)
    assert not isinstance(_shared_search(X, y, split, cfg), contextlib.nullcontext)


def test_paper_page_marks_the_seconds_of_replayed_searches():
    """The docs page's seconds of a row whose search was replayed are the replay's: a footnote says
    which rows and how many splits; a row without replays has none."""
    from fsframe.evaluation.paper import _dataset_section

    def fold(i, replayed):
        return {"repeat": 0, "fold": i, "ok": True, "accuracy": 0.8, "mcc": 0.5, "n_selected": 2,
                "pct_selected": 40.0, "n_iter": 10, "seconds": 0.5, "selected": [0, 1], "curve": [],
                "random_curve": [], "random_accuracy": None, "reference_accuracy": None, "error_type": None,
                "facts": {"search_replayed": int(replayed)}}

    table = {"dataset": {"name": "d", "n_samples": 10, "n_features": 5, "classes": [0, 1]},
             "rows": [{"label": "c1", "n_planned": 2, "folds": [fold(0, False), fold(1, False)]},
                      {"label": "c2", "n_planned": 2, "folds": [fold(0, True), fold(1, False)]}]}
    text = "\n".join(_dataset_section({}, table, None))
    rows = {line.split(" | ")[0]: line for line in text.splitlines() if line.startswith("| c")}
    assert "†" in rows["| c2"] and "†" not in rows["| c1"]
    assert "c2 (1 of 2)" in text and "c1 (" not in text


def test_paper_intervals_use_complete_repeats_only():
    """A stopped run of repeated k-fold CV holds part of a repeat: its folds' mean is not a repeat's
    estimate, so the interval's units are the complete repeats' means; the rest is counted apart."""
    from fsframe.evaluation.paper_numbers import _incomplete, _units

    table = {"protocol": {"kind": "k-fold", "n_splits": 3, "repeats": 4}}
    folds = [(0, 1.0), (0, 2.0), (0, 3.0), (1, 4.0), (1, 5.0), (1, None), (2, 100.0)]
    assert _units(table, folds) == [2.0, 4.5]  # repeat 1 complete (a failed fold is still run); 2 left out
    assert _incomplete(table, folds) == 1
    assert _units(table, folds[-1:]) == [100.0] and _incomplete(table, folds[-1:]) == 0  # no complete repeat
    single = {"protocol": {"kind": "k-fold", "n_splits": 3, "repeats": 1}}
    assert _units(single, folds) == [1.0, 2.0, 3.0, 4.0, 5.0, 100.0] and _incomplete(single, folds) == 0



def test_search_replayed_counts_the_cells_replayed_searches(data, monkeypatch):
    """``facts["search_replayed"]`` is how many of the cell's searches were replayed, not a flag. A
    cell whose fold runs its fit twice (standing in for a cell of several searches on the same data;
    a multiclass cell's binary searches are on different data, test below): after
    criterion 1's cell recorded the split's search, criterion 2's cell replays both of its searches,
    counted by the memo's hits independently. Planted (the 0/1 flag, as before): 1 != 2."""
    from fsframe.evaluation import protocols

    real = protocols._run_fold

    def twice(*a, **kw):
        real(*a, **kw)
        return real(*a, **kw)

    monkeypatch.setattr(protocols, "_run_fold", twice)
    X, y = data
    split = make_splits(y, 3, repeats=1, random_state=0)[0][0]
    clear_search_memo()
    try:
        first = _cell(X, y, split, _cfg(X, y, "c1", criterion=1))
        before = search_memo_info()["hits"]
        second = _cell(X, y, split, _cfg(X, y, "c2", criterion=2))
        hits = search_memo_info()["hits"] - before
    finally:
        clear_search_memo()
    assert first.ok and second.ok
    assert first.facts["search_replayed"] == 1  # its second run replays its first
    assert hits == 2 and second.facts["search_replayed"] == hits


def test_a_twenty_class_cell_replays_every_one_vs_rest_search():
    """A one-vs-rest fit of 20 classes runs 20 searches under its cell's key, more than the memo's
    size (SEARCH_MEMO_SIZE): criterion 2's cell after criterion 1's replays all 20 (the memo's hits
    count them too), and its record is the one it has computed alone. Planted (the memo dropping the
    oldest search of any key): each of criterion 1's first searches is dropped before it is asked
    for, and the next solve drops the one after: 0 of 20 replayed."""
    from fsframe.evaluation.protocols import SEARCH_MEMO_SIZE

    rng = np.random.default_rng(5)
    c = 20
    y = np.repeat(np.arange(c), 8)
    X = rng.standard_normal((y.size, 5)) + 1.5 * rng.standard_normal((c, 5))[y]
    assert c > SEARCH_MEMO_SIZE
    split = make_splits(y, 2, repeats=1, random_state=0)[0][0]

    def cfg(label, criterion):
        return _make_config(label, {"method": "fs-mpm", "criterion": criterion}, n_features=None, scale="standard",
                            retrain=None, retrain_C=1.0, n_columns=X.shape[1], n_samples=X.shape[0], n_classes=c)

    clear_search_memo()
    try:
        alone = _cell(X, y, split, cfg("c2", 2))
        clear_search_memo()
        _cell(X, y, split, cfg("c1", 1))
        shared = _cell(X, y, split, cfg("c2", 2))
        info = search_memo_info()
    finally:
        clear_search_memo()
    assert shared.ok and shared.facts["search_replayed"] == c and (info["hits"], info["misses"]) == (c, c)
    assert alone.facts["search_replayed"] == 0 and _record(shared) == _record(alone)
