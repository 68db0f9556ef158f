"""``benchmarks/paper_study_cost.py``: the cost probe of a study times one split of every row and
keeps those cells in the study's results folder exactly as ``run_study`` writes them, so the full
run that follows skips them (and their results equal a fresh run's), and a second probe reuses
them instead of fitting again."""

from __future__ import annotations

import warnings

import pytest

from fsframe.evaluation.experiment import run_study
from fsframe.evaluation.study import study_from_dict


@pytest.fixture(scope="module")
def cost(load_script):
    return load_script("benchmarks/paper_study_cost.py")


def _study():
    return study_from_dict({
        "study": {"name": "cost-probe", "seeds": [0]},
        "protocol": {"cv": 3, "baselines": True, "reference": "svm", "random_draws": 2},
        "datasets": [{"name": "wine"}],
        "methods": [{"method": "l1-svm"}, {"method": "l1-svm", "label": "l1-svm C=0.1", "C": 0.1}],
    })


def _by_row(res):
    return {(r.label, f.fold): f for t in res.tables for r in t.results for f in r.folds}


def test_probe_cells_are_the_runs_cells(cost, tmp_path):
    study = _study()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cost.estimate(study, tmp_path / "res")
        # 3 rows (two configurations and the all-features row) x 3 folds; one split of each row sampled
        assert (est["cells"], est["sampled_cells"]) == (9, 3)
        assert {r["label"] for r in est["rows"]} == {"l1-svm", "l1-svm C=0.1", "all features"}
        for r in est["rows"]:
            assert r["ok"] and not r["reused"] and r["splits"] == 3
            assert r["estimated_seconds"] == pytest.approx(3 * r["seconds"])
        assert est["estimated_serial_hours"] == pytest.approx(sum(r["estimated_seconds"] for r in est["rows"]) / 3600)
        assert len(list((tmp_path / "res" / "cells").glob("*.json"))) == 3

        kept = run_study(study, tmp_path / "res")
        fresh = run_study(study, tmp_path / "fresh")
    assert (kept.n_skipped, kept.n_computed) == (3, 6)  # the probe's cells are not fitted again
    a, b = _by_row(kept), _by_row(fresh)
    assert a.keys() == b.keys() and len(a) == 9
    for k in a:  # a kept cell holds what the run itself computes
        assert (a[k].accuracy, a[k].selected, a[k].random_accuracy) == (b[k].accuracy, b[k].selected,
                                                                        b[k].random_accuracy)


def test_second_probe_reuses_the_cells(cost, tmp_path):
    study = _study()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = cost.estimate(study, tmp_path / "res")
        again = cost.estimate(study, tmp_path / "res")
    assert all(r["reused"] for r in again["rows"])
    assert [r["seconds"] for r in again["rows"]] == [r["seconds"] for r in first["rows"]]


def test_no_store_keeps_nothing(cost, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cost.estimate(_study(), None)
    assert est["sampled_cells"] == 3 and not any(r["reused"] for r in est["rows"])
    assert not any(tmp_path.iterdir())


def test_quick_probe_estimates_a_tuned_row_from_one_fit_per_point_and_keeps_no_such_cell(cost, tmp_path):
    study = study_from_dict({
        "study": {"name": "cost-quick", "seeds": [0]},
        "protocol": {"cv": 3, "tune_folds": 2},
        "datasets": [{"name": "wine"}],
        "methods": [{"method": "l1-svm"}, {"method": "l1-svm", "label": "tuned", "tune": {"C": [0.01, 0.1, 1.0]}}],
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cost.estimate(study, tmp_path / "res", quick=True)
        rows = {r["label"]: r for r in est["rows"]}
        assert est["quick"] and "from_one_fit" not in rows["l1-svm"]
        # the grid's middle point, and the fits of a tuned cell: 3 points x 2 inner folds + the final fit
        one = rows["tuned"]["from_one_fit"]
        assert (one["fits"], one["point"], one["folds"]) == (7, {"C": 0.1}, 2)
        # the L1-SVM's C grid is swept by one path in the inner folds: timed as that one path
        assert [g["points"] for g in one["grid"]] == [[{"C": 0.01}, {"C": 0.1}, {"C": 1.0}]]
        assert not one["grid"][0]["failed"]
        # the cell once (its evaluation included), and the grid's fits once per inner fold
        assert 0 < one["fit_seconds"] <= one["cell_seconds"]
        assert rows["tuned"]["seconds"] == pytest.approx(one["cell_seconds"] + 2 * one["grid"][0]["seconds"], abs=2e-3)
        assert rows["tuned"]["estimated_seconds"] == pytest.approx(3 * rows["tuned"]["seconds"])
        assert len(list((tmp_path / "res" / "cells").glob("*.json"))) == 1  # the untuned row's cell only
        res = run_study(study, tmp_path / "res")
    assert (res.n_skipped, res.n_computed) == (1, 5)
    tuned = [r for t in res.tables for r in t.results if r.label == "tuned"][0]
    assert all("tuned C" in f.facts for f in tuned.folds)  # computed by the run, not the probe's one fit


def _quick_estimate(cost, monkeypatch, name: str, tune_folds: int, before, more_methods=()):
    """The quick probe's estimate of ``rfs`` tuned over ``gamma`` in 0.1, 1, 10 on wine (3-fold CV,
    ``tune_folds`` inner folds; ``more_methods`` rows besides), with ``before(points)`` run ahead of
    the fits of every inner fold (a grid point made slow or busy)."""
    from fsframe.evaluation.protocols import Extras

    study = study_from_dict({
        "study": {"name": name, "seeds": [0]},
        "protocol": {"cv": 3, "tune_folds": tune_folds},
        "datasets": [{"name": "wine"}],
        "methods": [{"method": "rfs", "tune": {"gamma": [0.1, 1.0, 10.0]}}, *more_methods],
    })
    fold_fits = Extras._fold_fits

    def delayed(self, Xa, ya, cfg, points):
        before(points)
        return fold_fits(self, Xa, ya, cfg, points)

    monkeypatch.setattr(Extras, "_fold_fits", delayed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cost.estimate(study, None, quick=True)


def test_quick_probe_times_every_grid_point(cost, monkeypatch):
    """A grid whose points cost differently (DSO-FS: ``p = 1`` several times the middle ``p``) is
    estimated from a fit of every point, not from the middle point's: here one point made slow
    shows in the estimate."""
    import time

    def slow_last(points):
        if any(pt["gamma"] == 10.0 for pt in points):
            time.sleep(0.5)

    est = _quick_estimate(cost, monkeypatch, "cost-grid", 2, slow_last)
    (row,) = [r for r in est["rows"] if r["label"] == "rfs"]
    one = row["from_one_fit"]
    assert [g["points"] for g in one["grid"]] == [[{"gamma": 0.1}], [{"gamma": 1.0}], [{"gamma": 10.0}]]
    assert one["point"] == {"gamma": 1.0} and one["fits"] == 1 + 2 * 3
    assert one["grid"][2]["seconds"] >= 0.5 > one["grid"][1]["seconds"]
    grid = sum(g["seconds"] for g in one["grid"])
    assert row["seconds"] == pytest.approx(one["cell_seconds"] + 2 * grid, abs=5e-3)
    assert row["seconds"] >= one["cell_seconds"] + 1.0  # the slow point, once per inner fold


def test_quick_probe_counts_cpu_once_per_inner_fold(cost, monkeypatch):
    """The CPU seconds of a quick row: the probe's own (the cell at the middle point and one fit of
    every grid point) plus the grid's CPU once more per further inner fold; a grid point that burns
    CPU shows there, one that waits (sleeps) does not."""
    import time

    def busy_or_idle(points):
        if any(pt["gamma"] == 10.0 for pt in points):  # burns 0.3 CPU s
            t0 = time.process_time()
            while time.process_time() - t0 < 0.3:
                pass
        if any(pt["gamma"] == 0.1 for pt in points):  # waits 0.3 s, no CPU
            time.sleep(0.3)

    est = _quick_estimate(cost, monkeypatch, "cost-cpu", 3, busy_or_idle, [{"method": "l1-svm"}])
    rows = {r["label"]: r for r in est["rows"]}
    one = rows["rfs"]["from_one_fit"]
    grid_cpu = sum(g["cpu_seconds"] for g in one["grid"])
    assert one["grid"][2]["cpu_seconds"] >= 0.3 > one["grid"][0]["cpu_seconds"]
    assert one["cell_cpu_seconds"] >= grid_cpu  # the probe's one pass over the grid is part of it
    # ... and its sleep is not: CPU, not the wall time of the probe (cell + one pass over the grid)
    assert one["cell_cpu_seconds"] < one["cell_seconds"] + sum(g["seconds"] for g in one["grid"]) - 0.25
    assert rows["rfs"]["cpu_seconds"] == pytest.approx(one["cell_cpu_seconds"] + 2 * grid_cpu, abs=5e-3)  # grid rounded
    assert 0.9 <= rows["rfs"]["cpu_seconds"] < rows["rfs"]["seconds"]  # 3 x 0.3 CPU s; the sleeps are wall only
    assert rows["rfs"]["estimated_cpu_seconds"] == pytest.approx(3 * rows["rfs"]["cpu_seconds"])
    full = rows["l1-svm"]  # an untuned cell: its own CPU
    assert 0 < full["cpu_seconds"] and full["estimated_cpu_seconds"] == pytest.approx(3 * full["cpu_seconds"])
    assert est["estimated_cpu_hours"] == pytest.approx(sum(r["estimated_cpu_seconds"] for r in est["rows"]) / 3600)


def test_probe_of_some_data_sets_only(cost):
    study = study_from_dict({
        "study": {"name": "cost-part", "seeds": [0]},
        "protocol": {"cv": 3},
        "datasets": [{"name": "wine"}, {"name": "iris"}],
        "methods": [{"method": "l1-svm"}],
    })
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = cost.estimate(study, None, datasets=["iris"])
    assert est["datasets"] == ["iris"] and [r["dataset"] for r in est["rows"]] == ["iris"]
    assert est["cells"] == 6 and est["sampled_cells"] == 1
    assert "(only iris)" in cost.markdown({"cost-part": est})


def test_a_data_set_the_study_lacks_is_refused_before_anything_runs(cost, tmp_path, capsys):
    """``--datasets`` takes every word after it: a study named there (``paper004 --datasets yale
    paper003``) once made an estimate of no row, written over the study's earlier one."""
    out = tmp_path / "cost.json"
    with pytest.raises(SystemExit):
        cost.main(["paper004", "--datasets", "yale", "paper003", "--json", str(out), "--store", "none",
                   "--data-dir", str(tmp_path)])
    assert "no study has the data set(s) ['paper003']" in capsys.readouterr().err
    assert not out.exists()


def test_datasets_of_two_studies_each_sampled_by_its_own(cost, tmp_path, monkeypatch, capsys):
    """``--datasets`` with two studies: a name one study has is not refused for the other; each
    study is sampled on the names it has, a study with none of them is skipped (its earlier
    estimate kept), and a name no study has is refused."""
    import json

    import fsframe.evaluation.study as study_mod

    def one(name, data):
        return study_from_dict({"study": {"name": name, "seeds": [0]}, "protocol": {"cv": 3},
                                "datasets": [{"name": d} for d in data], "methods": [{"method": "l1-svm"}]})

    studies = {"a": one("a", ["wine"]), "b": one("b", ["iris"]), "c": one("c", ["iris"])}
    monkeypatch.setattr(study_mod, "load_study", lambda name, data_dir=None: studies[name])
    out = tmp_path / "cost.json"
    out.write_text(json.dumps({"c": {"kept": True}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cost.main(["a", "b", "--datasets", "wine", "--json", str(out), "--store", "none"])
    got = json.loads(out.read_text())
    assert [r["dataset"] for r in got["a"]["rows"]] == ["wine"] and got["a"]["datasets"] == ["wine"]
    assert "b" not in got and got["c"] == {"kept": True}
    assert "b: none of ['wine'], skipped" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cost.main(["a", "b", "--datasets", "wine", "iris", "yale", "--json", str(out), "--store", "none"])
    assert "no study has the data set(s) ['yale']" in capsys.readouterr().err


def test_quick_probe_grid_pays_for_what_a_new_fold_pays(cost, monkeypatch):
    """DSO-FS decides separability once per data set (kept by value across the ``p`` grid): the
    cell's fit on the training part fills it, so the grid's fits on the same part would find it
    and under-state what each inner fold's first fit pays. The probe empties it first."""
    import fsframe_multiclass.margin as margin
    from fsframe.evaluation.experiment import _plan

    monkeypatch.setattr(margin, "_SEPARABLE", [("digest", None, None)])
    seen = []
    from fsframe.evaluation.protocols import Extras

    monkeypatch.setattr(Extras, "_fold_fits", lambda self, Xa, ya, cfg, points: seen.append(len(margin._SEPARABLE))
                        or [None] * len(points))
    study = study_from_dict({
        "study": {"name": "cost-cache", "seeds": [0]},
        "protocol": {"cv": 3, "tune_folds": 2},
        "datasets": [{"name": "wine"}],
        "methods": [{"method": "rfs", "tune": {"gamma": [0.1, 1.0]}}],
    })
    data, tasks, metas, _ = _plan(study)
    task = next(t for t, m in zip(tasks, metas) if m["label"] == "rfs")
    X, y = data[task.data]
    grid = cost._grid_fits(X, y, task.split, task.cfg)
    assert seen == [0, 0] and [g["points"] for g in grid] == [[{"gamma": 0.1}], [{"gamma": 1.0}]]
