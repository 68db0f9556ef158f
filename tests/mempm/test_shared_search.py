"""One bound search for 001's criteria 1 and 2 (docs/paper001.md, "Run status"): Algorithm 1
(``search="bisection"``) visits its points by feasibility alone, so a search run under
:func:`~fsframe.loops.bound_search.sharing_visits` after one of another criterion replays that
search's SOCPs and only chooses and re-solves. Its answer must be the one a search of its own
returns — chosen bounds, selection, coefficients, objective, history — whichever criterion ran
first, and a search that differs in anything but the criterion must not replay."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pytest

import fsframe
from fsframe.loops.bound_search import SearchMemo, sharing_visits
from fsframe.problem import Subproblem


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)  # tests/mempm/test_grid_search.py's instance: 3 informative features of 6
    y = np.where(np.arange(60) < 25, 1.0, -1.0)
    X = rng.standard_normal((60, 6)) * np.where(y[:, None] > 0, 0.7, 1.4)
    X[:, :3] += 0.9 * y[:, None]
    return X, y


METHODS = {"fs-mempm": dict(method="fs-mempm", delta_pos_step=0.1), "fs-mpm": dict(method="fs-mpm")}


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, **kw)


@pytest.fixture(scope="module")
def alone(data):
    X, y = data
    return {(m, c): _fit(X, y, criterion=c, **kw) for m, kw in METHODS.items() for c in (1, 2, "log")}


def _same(a, b):
    for k in ("delta_pos", "delta_neg", "delta", "bound", "score", "n_socps", "n_feasible", "n_infeasible",
              "chosen_socp", "nsf_cut_verified"):
        assert a.info.get(k) == b.info.get(k), k
    np.testing.assert_array_equal(a.selected, b.selected)
    np.testing.assert_array_equal(np.asarray(a.coef), np.asarray(b.coef))
    np.testing.assert_array_equal(np.asarray(a.intercept), np.asarray(b.intercept))
    assert a.objective == b.objective and a.n_iter == b.n_iter
    assert [h.params for h in a.history] == [h.params for h in b.history]


@pytest.fixture
def solves(monkeypatch):
    """Counts the subproblem's solves."""
    count = {"n": 0}
    real = Subproblem.solve

    def counted(self, *a, **kw):
        count["n"] += 1
        return real(self, *a, **kw)

    monkeypatch.setattr(Subproblem, "solve", counted)
    return count


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("order", [(1, 2, "log"), (2, 1, "log"), ("log", 2, 1)])
def test_replayed_search_returns_the_answer_of_its_own_search(data, alone, solves, method, order):
    X, y = data
    memo = SearchMemo()
    got, n = {}, []
    with sharing_visits(memo, "split 0"):
        for c in order:
            before = solves["n"]
            got[c] = _fit(X, y, criterion=c, **METHODS[method])
            n.append(solves["n"] - before)
    for c in order:
        _same(got[c], alone[(method, c)])
    assert (memo.hits, memo.misses) == (2, 1)
    # the first search solves every point; a replay solves only its choice's re-solve (or none)
    visits = alone[(method, order[0])].n_iter
    assert n[0] >= visits and all(k <= 1 for k in n[1:]), n
    assert len(alone[(method, 1)].history) > 5  # a real search, not one point


def test_criteria_1_and_2_choose_differently_here(alone):
    """The replay is seen to choose by its own criterion: on these data the two choices differ."""
    for m in METHODS:
        assert alone[(m, 1)].info["bound"] > alone[(m, 2)].info["bound"]
        assert alone[(m, 1)].n_selected > alone[(m, 2)].n_selected


def test_another_search_is_not_replayed(data, alone, solves):
    """A search differing in a loop field (eps), in the search (grid), or under another key solves
    its own points."""
    X, y = data
    memo = SearchMemo()
    with sharing_visits(memo, "k"):
        _fit(X, y, criterion=1, **METHODS["fs-mempm"])
        before = solves["n"]
        other = _fit(X, y, criterion=2, eps=0.01, **METHODS["fs-mempm"])
        assert solves["n"] - before >= other.n_iter
        grid = _fit(X, y, criterion=2, search="grid", **METHODS["fs-mempm"])
        assert grid.info["search"] == "grid"
    assert (memo.hits, memo.misses) == (0, 2)  # the grid search neither replays nor records
    with sharing_visits(memo, "another split"):
        before = solves["n"]
        _fit(X, y, criterion=2, **METHODS["fs-mempm"])
        assert solves["n"] - before >= alone[("fs-mempm", 2)].n_iter
    assert memo.misses == 3 and memo.hits == 0


def test_memo_keeps_its_size_and_clears():
    memo = SearchMemo(size=2)
    loop = fsframe.resolve("fs-mempm").loop
    for k in range(3):
        memo.put(k, loop, np.ones(3), [])
    assert len(memo) == 2 and memo.get(0, loop, np.ones(3)) is None and memo.get(2, loop, np.ones(3)) == []
    assert memo.get(2, loop, np.full(3, 2.0)) is None  # other slot weights
    memo.clear()
    assert len(memo) == 0 and memo.hits == memo.misses == 0


def _visit(c):
    from types import SimpleNamespace

    return [("p", SimpleNamespace(result=None, c=c))]  # one visit, an iterate with no raw answer


def test_memo_keeps_an_open_blocks_searches_whole_beyond_its_size():
    """The searches recorded inside an open :func:`sharing_visits` block (one per subproblem of a
    fit: a one-vs-rest fit of c classes runs c) are never dropped to make room, whatever ``size``,
    also for another block open meanwhile (another thread's cell); once both blocks have ended, the
    next search recorded drops the least recently used down to ``size``. Planted (the old rule:
    a key's searches protected from other keys only, whether its block is open or not): the other
    block's search drops the first class's."""
    memo = SearchMemo(size=2)
    loop = fsframe.resolve("fs-mempm").loop
    visits = [_visit(c) for c in range(3)]
    with sharing_visits(memo, "fit") as fit:
        for c in range(3):
            memo.put("fit", loop, np.ones(3), visits[c], fingerprint=f"class {c}", block=fit.block)
        with sharing_visits(memo, "other fit") as other:
            memo.put("other fit", loop, np.ones(3), [], fingerprint="class 0", block=other.block)
        assert len(memo) == 4
        assert [memo.get("fit", loop, np.ones(3), fingerprint=f"class {c}") for c in range(3)] == visits
    memo.put("next fit", loop, np.ones(3), [], fingerprint="class 0")
    assert len(memo) == 2 and memo.get("next fit", loop, np.ones(3), fingerprint="class 0") == []
    kept = [c for c in range(3) if memo.get("fit", loop, np.ones(3), fingerprint=f"class {c}") is not None]
    assert kept == [2]  # the most recently used of the others


def test_a_threads_open_block_keeps_its_searches_while_another_threads_block_records():
    """Two cells in two threads of one process (a Dask worker with several threads shares the
    memo): cell A records its three searches, cell B then records three of another key, and A,
    still open, finds all of its own. The interleaving is fixed by events. Planted (the old rule:
    protected only from the same key's searches): B's records drop A's."""
    import threading

    memo = SearchMemo(size=2)
    loop = fsframe.resolve("fs-mempm").loop
    recorded, b_done = threading.Event(), threading.Event()
    found = {}

    def cell(name, after=None, then=None):
        with sharing_visits(memo, name) as share:
            if after is not None:
                assert after.wait(60)
            for c in range(3):
                memo.put(name, loop, np.ones(3), _visit(c), fingerprint=f"class {c}", block=share.block)
            then.set()
            if name == "A":
                assert b_done.wait(60)
                found[name] = [memo.get(name, loop, np.ones(3), fingerprint=f"class {c}") for c in range(3)]

    threads = [threading.Thread(target=cell, args=("A", None, recorded)),
               threading.Thread(target=cell, args=("B", recorded, b_done))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert found["A"] == [_visit(c) for c in range(3)] and len(memo) == 6


def test_a_reused_key_keeps_at_most_size_searches_of_other_data():
    """The key is a hint: reused on other data (500 data sets, a block each, or no block), the
    memo keeps ``size`` searches, not one per data set; one block recording 500 keeps them while
    it is open, and the first search recorded after it drops them down to ``size``. Planted (a
    key's searches never dropped for the same key's, as before): 500 kept each time."""
    loop = fsframe.resolve("fs-mempm").loop
    for blocks in (True, False):
        memo = SearchMemo(size=2)
        for n in range(500):
            with sharing_visits(memo, "key") if blocks else contextlib.nullcontext() as share:
                memo.put("key", loop, np.ones(3), _visit(n), fingerprint=f"data {n}",
                         block=share.block if blocks else None)
        assert len(memo) == 2, blocks
        kept = [n for n in range(500) if memo.get("key", loop, np.ones(3), fingerprint=f"data {n}") is not None]
        assert kept == [498, 499], blocks
    memo = SearchMemo(size=2)
    with sharing_visits(memo, "key") as share:
        for n in range(500):
            memo.put("key", loop, np.ones(3), _visit(n), fingerprint=f"data {n}", block=share.block)
        assert len(memo) == 500
    memo.put("key", loop, np.ones(3), _visit(500), fingerprint="data 500")
    assert len(memo) == 2


def test_recording_a_kept_search_again_drops_nothing():
    """A search recorded again under its key and fingerprint (a block that replayed part of a
    recorded search and solved the rest) replaces its entry and drops no other, so an ended
    block's searches that the next block has not asked for yet stay. Planted (dropping down to
    ``size`` on every record): classes 0 and 1 of the ended block are gone."""
    memo = SearchMemo(size=2)
    loop = fsframe.resolve("fs-mempm").loop
    with sharing_visits(memo, "fit") as first:
        for c in range(3):
            memo.put("fit", loop, np.ones(3), _visit(c), fingerprint=f"class {c}", block=first.block)
    with sharing_visits(memo, "fit") as second:
        memo.put("fit", loop, np.ones(3), _visit(-2), fingerprint="class 2", block=second.block)
        assert [memo.get("fit", loop, np.ones(3), fingerprint=f"class {c}") for c in range(3)] == \
            [_visit(0), _visit(1), _visit(-2)]


def test_mempm_without_sparsity_term_shares_fs_mempm_search(data, alone, solves):
    """The bound search without a surrogate weighs the search's SOCPs by 1, as FS-MEMPM's ``l1``
    (slope 1 at zero) does: one search serves both, with each answer its own; a surrogate of
    another slope (``exp``, ``alpha = 5``) is not replayed. (It is FS-MEMPM c1, not 001's MEMPM of
    eq. 5: that is ``mempm_theta``, tests/mempm/test_mempm_eq5.py.)"""
    X, y = data
    kw = dict(formulation="mempm", loop="bound-search", delta_pos_step=0.1)
    plain = _fit(X, y, criterion=1, **kw)
    memo = SearchMemo()
    with sharing_visits(memo, "split 0"):
        _fit(X, y, criterion=2, **METHODS["fs-mempm"])
        before = solves["n"]
        shared = _fit(X, y, criterion=1, **kw)
        assert solves["n"] - before <= 1
        before = solves["n"]
        steeper = _fit(X, y, criterion=1, surrogate="exp", alpha=5.0, **kw)
        assert solves["n"] - before >= steeper.n_iter
    _same(shared, plain)
    _same(plain, alone[("fs-mempm", 1)])  # the same answer: FS-MEMPM c1's
    assert (memo.hits, memo.misses) == (1, 2)


def _other_part(X, y):
    """Another training part of the same data set (what one key for two splits would mix up)."""
    keep = np.arange(len(y)) % 3 != 0
    Xb = X[keep]
    return (Xb - Xb.mean(0)) / Xb.std(0), y[keep]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_a_reused_key_does_not_replay_another_data_sets_search(data, alone, method):
    """The key is a hint: a search recorded on one training part is not replayed for another under
    the same key (the fingerprint of the subproblem's data differs), even where the visited points
    coincide; the second answer is the one it has alone, and the refusal is counted."""
    X, y = data
    Xb, yb = _other_part(X, y)
    memo = SearchMemo()
    with sharing_visits(memo, "one key for two splits"):
        _fit(X, y, criterion=1, **METHODS[method])
        got = _fit(Xb, yb, criterion=2, **METHODS[method])
    _same(got, _fit(Xb, yb, criterion=2, **METHODS[method]))
    assert (memo.hits, memo.misses, memo.refused) == (0, 2, 1)


def test_another_backend_is_not_replayed(data, solves):
    X, y = data
    memo = SearchMemo()
    with sharing_visits(memo, "k"):
        _fit(X, y, criterion=1, backend="ecos", **METHODS["fs-mpm"])
        before = solves["n"]
        other = _fit(X, y, criterion=2, backend="clarabel", **METHODS["fs-mpm"])
        assert solves["n"] - before >= other.n_iter
    assert (memo.hits, memo.misses, memo.refused) == (0, 2, 1)


def test_memo_keeps_no_raw_answer(data):
    X, y = data
    memo = SearchMemo()
    with sharing_visits(memo, "k"):
        _fit(X, y, criterion=1, **METHODS["fs-mpm"])
    (visits,) = [entry[3] for entry in memo._kept.values()]
    assert visits and all(it.result.raw is None for _, it in visits)
    assert all(it.coef is not None for _, it in visits if it.status.value == "optimal")


def test_search_replayed_is_each_cells_own_with_two_threads(data, monkeypatch):
    """``facts["search_replayed"]`` says whether *this* cell's search was replayed: a cell that
    solved its own search while another thread's cell replayed one (the memo's process-wide hit
    count rising meanwhile) records 0. The threads are interleaved deterministically: cell A solves
    its search, cell B replays a recorded one, then A's cell finishes. Planted (the fact from the
    memo's global hit count, as before): A records 1."""
    import threading

    from fsframe.evaluation import protocols
    from fsframe.evaluation.config import _make_config
    from fsframe.evaluation.splits import make_splits

    X, y = data
    s0, s1 = make_splits(y, 0.3, repeats=2, random_state=0)[0][:2]

    def cfg(criterion):
        return _make_config(f"c{criterion}", {"method": "fs-mpm", "criterion": criterion}, n_features=None,
                            scale="standard", retrain=None, retrain_C=1.0, n_columns=X.shape[1],
                            n_samples=X.shape[0])

    solved, replayed = threading.Event(), threading.Event()
    real = protocols._run_fold

    def run_fold(*a, **kw):
        rec = real(*a, **kw)
        if threading.current_thread().name == "A":  # A has solved its search: let B replay, then finish
            solved.set()
            assert replayed.wait(120)
        return rec

    monkeypatch.setattr(protocols, "_run_fold", run_fold)
    protocols.clear_search_memo()
    got = {}

    def cell(name, split, criterion, after=None):
        if after is not None:
            assert after.wait(120)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got[name] = protocols.study_cell(X, y, split, cfg(criterion), raise_errors=True)
        if name == "B":
            replayed.set()

    try:
        cell("C", s0, 1)  # records split 0's search
        threads = [threading.Thread(target=cell, name="A", args=("A", s1, 1)),
                   threading.Thread(target=cell, name="B", args=("B", s0, 2, solved))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(240)
        info = protocols.search_memo_info()
    finally:
        protocols.clear_search_memo()
    assert {k: got[k].facts["search_replayed"] for k in "ABC"} == {"A": 0, "B": 1, "C": 0}
    assert (info["hits"], info["misses"]) == (1, 2)
    assert all(got[k].ok for k in "ABC")


@pytest.fixture(scope="module")
def three_classes():
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1, 2], 30)
    X = rng.standard_normal((90, 6))
    X[:, :3] += 1.2 * np.eye(3)[y]
    return X, y


def test_multiclass_searches_replay_each_their_own_problem(three_classes, solves):
    """A multi-class fit runs one search per one-vs-rest problem under the cell's one key: each is
    kept (key and fingerprint), so the fit of the other criterion replays all three, each its own
    class's search (the three visit different points, so a replay across problems could not pass
    for the search's own), and answers as it does alone. Planted (the memo keyed by the key alone,
    as before: each class's search overwrote the last): hits 0, misses 6, refused 5."""
    X, y = three_classes
    alone = {c: _fit(X, y, criterion=c, **METHODS["fs-mpm"]) for c in (1, 2)}
    paths = [tuple(h.params["delta"] for h in pc.history) for pc in alone[1].per_class]
    assert len(set(paths)) == 3  # three problems, three different searches
    memo = SearchMemo()
    with sharing_visits(memo, "split 0") as share:
        _fit(X, y, criterion=1, **METHODS["fs-mpm"])
        before = solves["n"]
        got = _fit(X, y, criterion=2, **METHODS["fs-mpm"])
        assert solves["n"] - before <= 3  # each class: its choice's re-solve at most
    assert (memo.hits, memo.misses, share.replayed, share.solved) == (3, 3, 3, 3)
    assert memo.refused == 2  # the first criterion's classes 1 and 2 found the key kept for class 0 only
    assert len(got.per_class) == 3
    for mine, own in zip(got.per_class, alone[2].per_class):
        _same(mine, own)
    np.testing.assert_array_equal(got.selected, alone[2].selected)
