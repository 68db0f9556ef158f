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


def _two_datasets(comp, tmp_path, monkeypatch):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    # "b" (120 x 8) is larger than "a" (120 x 6): "a" runs first
    for name, rows, cols in (("b", slice(200, 320), 8), ("a", slice(0, 120), 6)):
        np.savetxt(tmp_path / f"{name}.csv", np.column_stack([X[rows, :cols], y[rows]]), delimiter=",")
    monkeypatch.setattr(comp, "DATA", tmp_path)
    monkeypatch.setattr(comp, "DATASETS", {"b": ["b.csv"], "a": ["a.csv"], "c": ["absent.csv"]})
    monkeypatch.setattr(comp, "GRID", {"a": [2, 3], "b": [2]})


def test_run_resumes_from_its_cells(comp, tmp_path, monkeypatch):
    """Every (data set, split, selector) cell is saved as it finishes; a run stopped part-way and
    started again runs only the cells it lacks, and the table shows per data set the splits every
    selector finished."""
    import json
    import time

    _two_datasets(comp, tmp_path, monkeypatch)
    calls = []

    def first(X, y, r):  # sleeps: no CPU time, some wall time
        calls.append(("first", X.shape, r))
        time.sleep(0.05)
        return np.arange(r), 1

    def last(X, y, r):
        calls.append(("last", X.shape, r))
        if stop["now"] and X.shape[1] == 8 and len(calls) > stop["after"]:
            raise KeyboardInterrupt
        return np.arange(X.shape[1] - r, X.shape[1]), 1

    monkeypatch.setitem(comp.SELECTORS, "first", first)
    monkeypatch.setitem(comp.SELECTORS, "last", last)
    out = tmp_path / "store.json"
    saves = []

    def save(st):
        comp.save_store(st, out)
        saves.append(sum(1 for _ in st["cells"]))

    # the first run is stopped (Ctrl-C) in data set b, after a's 3 splits and part of b's
    stop = {"now": True, "after": 0}
    store = comp.load_store(out, 3)
    # calls: a's 2 warm-ups and 3 splits x 2 selectors x 2 r (14), b's 2 warm-ups, split 0 (2) and split 1's
    # "first" (19): the 20th, b's split 1 "last", is interrupted
    stop["after"] = 19
    with pytest.raises(KeyboardInterrupt):
        comp.run(store, ["b", "a", "c"], ["first", "last"], 3, False, save=save)
    assert saves == list(range(1, len(saves) + 1))  # saved after every cell
    kept = json.loads(out.read_text())
    assert sorted(k for k in kept["cells"] if k.startswith("a/")) == sorted(
        f"a/{s}/{m}" for s in range(3) for m in ("_all", "first", "last"))
    assert sorted(k for k in kept["cells"] if k.startswith("b/")) == ["b/0/_all", "b/0/first", "b/0/last", "b/1/_all",
                                                                    "b/1/first"]
    assert kept["skipped_datasets"] == {"c": "none of ['absent.csv'] in the data folder"}
    partial = comp.markdown(kept)
    assert "(a: 3, b: 1; the run is resumable" in partial and "Splits 0 (1 of 3; split(s) 1 partly run, not shown)" in partial
    assert "Splits 0, 1, 2 (3 of 3)" in partial
    d = comp.summarize(kept)["datasets"]["a"]
    assert d["clock"] == "cpu" and all(t < 0.04 for t in d["seconds"]["first"]["2"])
    assert d["wall_seconds_median"]["first"]["2"] >= 0.05 and len(d["seconds"]["first"]["2"]) == 3
    assert d["selected_min"] == {"first": {"2": 2, "3": 3}, "last": {"2": 2, "3": 3}}

    # resumed: only b's missing cells run (b/1/last and split 2), each selector warmed up once first
    stop["now"] = False
    calls.clear()
    ran = comp.run(comp.load_store(out, 3), ["b", "a", "c"], ["first", "last"], 3, False, save=save)
    assert ran == 4  # b/1/last, b/2/_all, b/2/first, b/2/last
    assert [c[0] for c in calls] == ["last", "last", "first", "first", "last"]  # warm-up, then timed
    assert all(c[1][1] == 8 for c in calls)  # data set b only
    full = json.loads(out.read_text())
    text = comp.markdown(full)
    assert "a: 3" not in text and "3 random stratified 80/20 splits, standardised" in text
    assert "partly run" not in text

    # a selector whose version changed is stale: its cells run again, the others are kept
    calls.clear()
    version = comp.selector_version
    monkeypatch.setattr(comp, "selector_version", lambda m: version(m) + ("-new" if m == "last" else ""))
    ran = comp.run(comp.load_store(out, 3), ["a"], ["first", "last"], 3, False, save=save)
    assert ran == 3 and {c[0] for c in calls} == {"last"}
    # and so is every cell of a data set whose file changed
    calls.clear()
    np.savetxt(tmp_path / "a.csv", np.loadtxt(tmp_path / "a.csv", delimiter=",")[::-1], delimiter=",")
    ran = comp.run(comp.load_store(out, 3), ["a"], ["first", "last"], 3, False, save=save)
    assert ran == 9


def test_selector_version_follows_code_and_settings(comp, monkeypatch):
    v = {m: comp.selector_version(m) for m in ("em-l0", "fsv", "sk-svc-bisect", "abess")}
    assert len(set(v.values())) == 4
    monkeypatch.setitem(comp._CODE, "fsframe", "other source")  # fsframe's code as read from disk
    assert comp.selector_version("em-l0") != v["em-l0"] and comp.selector_version("abess") == v["abess"]
    monkeypatch.setattr(comp, "MAX_FITS", comp.MAX_FITS + 1)  # a setting of the bisections
    assert comp.selector_version("sk-svc-bisect") != v["sk-svc-bisect"]


def test_a_failing_selector_is_recorded_once_per_data_set(comp, tmp_path, monkeypatch):
    _two_datasets(comp, tmp_path, monkeypatch)
    calls = []

    def bad(X, y, r):
        calls.append(r)
        raise RuntimeError("solver exploded")

    monkeypatch.setitem(comp.SELECTORS, "bad", bad)
    monkeypatch.setitem(comp.SELECTORS, "first", lambda X, y, r: (np.arange(r), 1))
    store = comp.new_store(2)
    comp.run(store, ["a"], ["bad", "first"], 2, False)
    assert calls == [2] and "solver exploded" in store["cells"]["a/0/bad"]["failed"]
    assert "a/1/bad" not in store["cells"]
    assert comp.run(store, ["a"], ["bad", "first"], 2, False) == 0  # a failure is kept like a result
    text = comp.markdown(store)
    assert "**`bad` failed** (left out): RuntimeError: solver exploded" in text and "2 of 2" in text
