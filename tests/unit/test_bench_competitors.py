"""Plumbing of ``benchmarks/competitors.py`` (issue 13's comparison against other libraries).

The benchmark's numbers are not tested (timings never are); what is: the bisection to exactly ``r``
features and its fallback, the selectors returning ``r`` distinct columns, and the doc section
being rewritten in place from the results.
"""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def comp(load_script):
    return load_script("benchmarks/competitors.py", "bench_competitors")


def test_bisection_hits_r_exactly(comp):
    # coefficient j is non-zero once log10(t) > j / 4: the count grows by one per quarter decade
    def fit(t):
        return np.maximum(np.log10(t) - np.arange(12) / 4.0, 0.0)

    for r in (1, 3, 7):
        sel, fits = comp.bisect_to_r(fit, 1.0, 10.0, r)
        assert sel.tolist() == list(range(r))
        assert fits <= comp.MAX_FITS


def test_bisection_over_jump_keeps_r_largest(comp):
    # the count jumps from 2 straight to 5 at t = 100: r = 3 cannot be hit, so the 3 largest of 5 are kept
    big = np.array([0.0, 5.0, 0.0, 1.0, 4.0, 0.0, 2.0, 3.0])

    def fit(t):
        return big * (t >= 100.0) + np.array([0, 5.0, 0, 0, 4.0, 0, 0, 0]) * (10.0 <= t < 100.0)

    sel, fits = comp.bisect_to_r(fit, 1.0, 10.0, 3)
    assert sel.tolist() == [1, 4, 7]
    assert fits <= comp.MAX_FITS


@pytest.mark.parametrize("name", ["sk-svc-bisect", "sk-svc-path", "sk-logreg-liblinear", "em-l0"])
def test_selectors_return_r_distinct_columns(comp, name):
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X[:200])
    y = y[:200]
    X0 = X.copy()
    sel, fits = comp.SELECTORS[name](X, y, 4)
    assert len(set(sel.tolist())) == 4 and sel.min() >= 0 and sel.max() < X.shape[1]
    assert fits >= 1
    np.testing.assert_array_equal(X, X0)
    if name == "sk-svc-bisect" and fits < comp.MAX_FITS:
        # independently: some C on the bisection's geometric grid gives exactly these 4 non-zeros
        from sklearn.svm import l1_min_c

        c0 = float(l1_min_c(X, y, loss="squared_hinge"))
        supports = []
        for C in c0 * np.logspace(0, 2, 200):
            coef = LinearSVC(penalty="l1", dual=False, C=C, max_iter=5000).fit(X, y).coef_.ravel()
            supports.append(tuple(np.flatnonzero(np.abs(coef) > 1e-12)))
        assert tuple(sel.tolist()) in supports


def _result(em_seconds):
    grid = [2, 5]
    methods = ["em-l0", "fsv", "abess", "sk-svc-bisect", "sk-svc-path"]
    sec = {"em-l0": em_seconds, "fsv": 0.01, "abess": 0.01, "sk-svc-bisect": 0.02, "sk-svc-path": 0.03}
    cell = {m: {str(r): sec[m] for r in grid} for m in methods}
    return {"splits": 2, "quick": False, "methods": methods, "skipped_datasets": {"prostate": "absent"},
            "skipped_methods": {}, "datasets": {"toy": {
                "file": "toy.csv", "shape": [10, 4], "grid": grid, "full_error": [0.1, 0.01],
                "error": {m: {str(r): [0.2, 0.05] for r in grid} for m in methods},
                "seconds_median": cell, "seconds": {m: {str(r): [sec[m]] for r in grid} for m in methods},
                "fits_median": {m: {str(r): 1.0 for r in grid} for m in methods},
                "selected_min": {m: {str(r): r for r in grid} for m in methods}}}}


def test_markdown_verdict_and_doc_rewrite(comp, tmp_path, monkeypatch):
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nkept text\n")
    monkeypatch.setattr(comp, "DOC", doc)
    slow = comp.markdown(_result(0.5))
    assert "**Target not met.**" in slow and "prostate: not run" in slow
    assert "| `em-l0` | sklearn L1 | 25.0 | 25.0 | 0/2 |" in slow  # 0.5 s / min(0.02, 0.03) s
    assert "| `em-l0` | abess | 50 | 50 | 0/2 |" in slow
    comp.write_section(comp.DOC, comp.BEGIN, comp.END, slow, heading=comp.HEADING)
    fast = comp.markdown(_result(0.015))
    assert "**Target met.**" in fast
    comp.write_section(comp.DOC, comp.BEGIN, comp.END, fast, heading=comp.HEADING)
    text = doc.read_text()
    assert text.startswith("# Performance\n\nkept text\n")
    assert text.count("## Against other libraries") == 1 and text.count(comp.BEGIN) == 1
    assert "Target met" in text and "Target not met" not in text
    # the shared writer (benchmarks/_common.py) never appends a second copy of a section silently
    with pytest.raises(ValueError, match="markers .* are missing"):
        comp.write_section(tmp_path / "performance.md", "<!-- x:begin -->", "<!-- x:end -->", fast)


def test_failing_selector_is_left_out_and_reported(comp, tmp_path, monkeypatch):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    path = tmp_path / "toy.csv"
    np.savetxt(path, np.column_stack([X[:120, :6], y[:120]]), delimiter=",")

    def bad(X, y, r):
        raise RuntimeError("solver exploded")

    monkeypatch.setitem(comp.SELECTORS, "bad", bad)
    monkeypatch.setitem(comp.SELECTORS, "first", lambda X, y, r: (np.arange(r), 1))
    d = comp.run_dataset("toy", path, ["bad", "first"], [2, 3], 2)
    assert list(d["error"]) == ["first"] and "solver exploded" in d["failed"]["bad"]
    assert d["selected_min"]["first"] == {"2": 2, "3": 3}
    assert len(d["seconds"]["first"]["2"]) == 2
    text = comp.markdown({"splits": 2, "datasets": {"toy": d}})
    assert "**`bad` failed** (left out): RuntimeError: solver exploded" in text


def test_run_saves_every_round_with_equal_splits(comp, tmp_path, monkeypatch):
    """A run stopped early keeps its finished rounds: after each round every data set holds the
    same number of splits, and the rendered section says how many of the planned ones."""
    import copy
    import json
    import time

    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    for name, rows in (("a", slice(0, 120)), ("b", slice(200, 320))):
        np.savetxt(tmp_path / f"{name}.csv", np.column_stack([X[rows, :6], y[rows]]), delimiter=",")
    monkeypatch.setattr(comp, "DATA", tmp_path)
    monkeypatch.setattr(comp, "DATASETS", {"a": ["a.csv"], "b": ["b.csv"], "c": ["absent.csv"]})
    monkeypatch.setattr(comp, "GRID", {"a": [2, 3], "b": [2]})
    def first(X, y, r):  # sleeps: no CPU time, some wall time
        time.sleep(0.05)
        return np.arange(r), 1

    monkeypatch.setitem(comp.SELECTORS, "first", first)
    rounds = []
    out = comp.run(["a", "b", "c"], ["first"], 3, False, on_round=lambda res: rounds.append(copy.deepcopy(res)))
    assert [r["splits"] for r in rounds] == [1, 2, 3] and out["splits"] == 3
    for k, res in enumerate(rounds, start=1):
        assert res["splits_planned"] == 3 and sorted(res["datasets"]) == ["a", "b"]
        assert {len(d["seconds"]["first"]["2"]) for d in res["datasets"].values()} == {k}
        json.dumps(res)  # what main() writes after the round
    assert "c" in rounds[0]["skipped_datasets"]
    partial = comp.markdown(rounds[0])
    assert "1 random stratified 80/20 split (of the protocol's 3: the run was stopped after 1" in partial
    assert "of the protocol's" not in comp.markdown(out)
    # the selection time is CPU time (the fairer clock on a shared machine); the wall time is kept beside it
    d = out["datasets"]["a"]
    assert d["clock"] == "cpu" and all(t < 0.04 for t in d["seconds"]["first"]["2"])
    assert d["wall_seconds_median"]["first"]["2"] >= 0.05
    assert "selection time in CPU seconds" in comp.markdown(out)
