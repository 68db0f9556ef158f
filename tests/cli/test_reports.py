"""What a first-time user reads (issue 8 §5): MPM's bound ``delta`` is reported with the value the
fit used and ``delta_max`` (never ``delta=None``), in the text reports and the JSON;
``FitResult`` has a short repr and a readable summary."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest

import fsframe
import fsframe.evaluation as ev


@pytest.fixture(scope="module")
def mpm_data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((80, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.8 * rng.standard_normal(80) > 0, 1, 0)
    return X, y


def test_fit_facts_are_the_numbers_the_fit_derived(mpm_data):
    X, y = mpm_data
    r = fsframe.fit(X, y, method="l1-mpm")
    f = r.facts
    assert f["delta"] == r.info["delta"] and f["delta_max"] == r.info["delta_max"]
    assert f["delta"] == pytest.approx(0.9 * f["delta_max"])  # the default delta_fraction
    assert not any(k.endswith("seconds") for k in f) and "stop_reason" not in f and "class_sizes" not in f
    ovr = fsframe.fit(X, np.arange(80) % 3, method="l1-mpm")
    assert {"delta[0]", "delta[1]", "delta[2]"} <= set(ovr.facts)
    assert ovr.facts["delta[1]"] == ovr.per_class[1].info["delta"]


def test_facts_are_the_declared_data_parameters_and_details_the_bookkeeping(mpm_data):
    """The "from the data" line printed every real number of info, bookkeeping included (a
    verified cut's zero_tol_cut, DSO-FS's counters): facts are the keys a component declares in
    data_facts, details the rest, and summary() prints them on separate lines."""
    X, y = mpm_data
    r = fsframe.fit(X, y, method="l1-mpm")
    assert {"delta", "kappa", "delta_max", "kappa_max", "ridge"} <= set(r.facts)
    assert "zero_tol_cut" in r.info and "zero_tol_cut" not in r.facts and "zero_tol_cut" in r.details
    assert not set(r.facts) & set(r.details)
    lines = r.summary().splitlines()
    data_line = next(line for line in lines if line.startswith("  from the data: "))
    detail_line = next(line for line in lines if line.startswith("  details: "))
    assert "kappa=" in data_line and "zero_tol_cut" not in data_line and "zero_tol_cut=" in detail_line
    dso = fsframe.fit(X, np.arange(80) % 3, method="dso-fs")
    assert dso.facts["rank"] == np.linalg.matrix_rank(np.column_stack([X, np.ones(80)]))
    assert "rank" not in dso.details and "algorithm1_iterations" in dso.details


def test_select_once_reports_the_delta_used(cli, mpm_data, tmp_path):
    X, y = mpm_data
    p = tmp_path / "d.csv"
    p.write_text("\n".join(",".join(f"{v:.6f}" for v in row) + f",{c}" for row, c in zip(X, y)) + "\n")
    jp = tmp_path / "o.json"
    r = cli("select", p, "--method", "l1-mpm", "--json", jp)
    assert r.code == 0, r.err
    ref = fsframe.fit(ev.scale_fit_transform(np.loadtxt(p, delimiter=",")[:, :-1]), y, method="l1-mpm")
    assert "delta=None" not in r.out
    assert f"mpm(delta={ref.info['delta']:.4g}, delta_fraction=0.9" in r.out
    assert f"delta_max {ref.info['delta_max']:.4g}" in r.out
    data = json.loads(jp.read_text())
    assert data["facts"]["delta"] == pytest.approx(ref.info["delta"])
    assert data["facts"]["delta_max"] == pytest.approx(ref.info["delta_max"])
    assert data["result"]["facts"]["delta"] == pytest.approx(ref.info["delta"])


def test_cross_validation_reports_delta_per_fold(mpm_data, cli, tmp_path):
    X, y = mpm_data
    res = ev.cross_validate(X, y, method="l1-mpm", cv=4)
    deltas = [f.facts["delta"] for f in res.folds]
    assert len(set(deltas)) == 4  # each training part has its own delta_max, hence delta
    s = res.facts()["delta"]
    assert s["mean"] == pytest.approx(np.mean(deltas)) and s["min"] == min(deltas) and s["n"] == 4
    text = res.report()
    assert "delta=None" not in text and f"delta={np.mean(deltas):.4g} (mean over folds)" in text
    assert f"delta_max {res.facts()['delta_max']['mean']:.4g}" in text
    d = res.to_dict()
    assert d["facts"]["delta"]["mean"] == pytest.approx(np.mean(deltas))
    assert [f["facts"]["delta"] for f in d["folds"]] == pytest.approx(deltas)
    cmp = ev.compare(X, y, methods=["l1-mpm"], cv=4)
    assert "delta=None" not in cmp.results[0].report()


def test_a_given_delta_is_shown_as_given(mpm_data):
    X, y = mpm_data
    r = fsframe.fit(X, y, method="l1-mpm")
    res = ev.cross_validate(X, y, method="l1-mpm", cv=3, delta=round(0.5 * r.info["delta_max"], 3))
    assert f"mpm(delta={round(0.5 * r.info['delta_max'], 3)!r}, delta_fraction=None" in res.report()


def test_fitresult_repr_is_short_and_summary_readable(mpm_data):
    X, y = mpm_data
    r = fsframe.fit(X, y, method="l0-mpm")
    text = repr(r)
    assert len(text) < 250 and text.startswith("FitResult(method='l0-mpm', selected=")
    assert f"selected={r.n_selected} of 6" in text and "backend=" in text
    s = r.summary()
    assert str(r) == s and len(s) < 1200
    lines = s.splitlines()
    assert lines[0].startswith("l0-mpm: mpm(delta=") and "delta=None" not in s
    assert f"delta={r.info['delta']:.4g}" in lines[0] and f"delta_max={r.info['delta_max']:.4g}" in s
    assert f"selected {r.n_selected} of 6 features" in s and f"{r.n_iter} iteration" in s
    assert "solver statuses: optimal" in s
    d = r.to_dict()
    json.dumps(d)
    assert d["n_selected"] == r.n_selected and d["facts"]["delta"] == r.info["delta"]


def test_summary_names_the_selected_features_and_caps_the_list():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 30))
    y = np.where(X[:, :20].sum(axis=1) > 0, 1, 0)
    r = fsframe.fit(X, y, method="svm-weights")
    r = attrs.evolve(r, feature_names=tuple(f"g{j}" for j in range(30)))
    assert r.n_selected > 3
    s = r.summary(top=3)
    first = ", ".join(f"g{j}" for j in r.selected[:3])
    assert f"selected {r.n_selected} of 30 features: {first}, ... ({r.n_selected - 3} more)" in s


def test_yes_no_facts_are_counted_not_averaged(mpm_data):
    """A yes/no fact (a top-k cell's ``ranking_only``) is no number: ``facts()`` leaves it out (it
    was averaged to ``ranking_only 1``), ``flags()`` counts the folds where it holds, and the
    report says so in words."""
    import attrs

    X, y = mpm_data
    res = ev.cross_validate(X, y, method="l1-mpm", cv=4)
    folds = [attrs.evolve(f, facts={**f.facts, "ranking_only": i < 3}) for i, f in enumerate(res.folds)]
    res = attrs.evolve(res, folds=tuple(folds))
    assert "ranking_only" not in res.facts() and "delta" in res.facts()
    assert res.flags() == {"ranking_only": 3}
    text = res.report()
    assert "ranking only in 3 of 4 folds" in text and "ranking_only 1" not in text
    d = res.to_dict()
    assert d["flags"] == {"ranking_only": 3} and "ranking_only" not in d["facts"]


def test_compare_footer_names_what_solved_a_fit_without_a_backend():
    """The dense EM path's fits have no solver backend (``result.backend`` is None); the footer
    names what solved them from their certificate, beside the backends' fits (RFS's linear systems:
    "numpy", as its certificate says). Planted
    (``FoldRecord.solved_by`` never set): the footer says "none (no solver backend)" for em-l0."""
    rng = np.random.default_rng(2)
    X = rng.standard_normal((70, 8))
    y = np.where(X[:, 0] - X[:, 1] + 0.5 * rng.standard_normal(70) > 0, 1, 0)
    one = fsframe.fit(X, y, method="em-l0")
    assert one.backend is None and one.certificate["backend"] == "dense-hinge"  # the dense path took it
    cmp = ev.compare(X, y, methods=["em-l0", "l1-svm"], cv=3)
    text = " ".join(cmp.report().split())  # the footer wraps
    assert "dense-hinge (fsframe's own, no solver backend)" in text and "highs" in text
    assert "none (no solver backend)" not in text
    assert [f.solved_by for f in cmp.results[0].folds] == ["dense-hinge"] * 3
    assert all(f.solved_by is None and f.backend == "highs" for f in cmp.results[1].folds)
    rfs = ev.compare(X, y, methods=["rfs"], cv=3)
    assert "solver numpy (fsframe's own, no solver backend)" in " ".join(rfs.report().split())


def test_summary_names_what_solved_a_fit_without_a_backend(mpm_data):
    """em-l0 on the dense EM path has no solver backend: the summary names what solved it, from its
    certificate, as ``fsframe select`` and ``compare`` do; a backend's fit names the backend.
    Planted (``backend_text(self.backend)`` alone, as before): "no solver backend" only."""
    X, y = mpm_data
    dense = fsframe.fit((X - X.mean(0)) / X.std(0), y, method="em-l0")
    assert dense.backend is None and dense.certificate["backend"] == "dense-hinge"
    first = dense.summary().splitlines()[0]
    assert first.endswith("; solved by dense-hinge (fsframe's own, no solver backend)")
    solved = fsframe.fit(X, y, method="l0-mpm")
    assert solved.backend and solved.summary().splitlines()[0].endswith(f"; backend {solved.backend}")
    assert attrs.evolve(dense, certificate=None).summary().splitlines()[0].endswith("; no solver backend")
