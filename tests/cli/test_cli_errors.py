"""Typed, early command-line errors (issue 8 §4) and Ctrl-C during a cross-validation (§2): each
through ``fsframe.cli.main`` in-process. A fit that must not run is replaced by one that fails the
test, so "early" means "before any fit"."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import fsframe.cli.select as cli_select
import fsframe.evaluation as ev
import fsframe.evaluation.runner as runner
from fsframe.errors import DataError


@pytest.fixture
def no_fit(monkeypatch):
    def never(*a, **kw):
        raise AssertionError("a fit ran although the command should have stopped before any work")

    monkeypatch.setattr(runner, "fit", never)
    monkeypatch.setattr(cli_select, "fit", never)


def test_loader_delimiter_of_two_characters_is_a_usage_error(cli, small_csv, no_fit):
    r = cli("select", small_csv, "--method", "fsv", "--loader-opt", "delimiter=';;'")
    assert r.code == 2
    assert "delimiter=';;': must be one character" in r.err  # the loader's own check
    assert "TypeError" not in r.err and "internal error" not in r.err


def test_more_folds_than_any_class_names_the_largest_usable_count(cli, tmp_path, no_fit):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.repeat([0, 1], 15)
    p = tmp_path / "d.csv"
    p.write_text("a,b,c,y\n" + "\n".join(",".join(f"{v:.4f}" for v in row) + f",{c}" for row, c in zip(X, y)) + "\n")
    r = cli("select", p, "--method", "l1-svm", "--cv", "16")
    assert r.code == 2
    assert "cv=16" in r.err and "largest usable fold count is 15" in r.err and "[DataError]" in r.err
    r = cli("select", p, "--method", "l1-svm", "--cv", "15")  # the largest usable count runs
    # (the fit is forbidden here, so it fails inside the folds: exit 1, not a usage error)
    assert r.code == 1 and "15 of 15 fits failed" in r.err


def test_make_splits_refuses_more_folds_than_the_largest_class():
    y = np.array([0] * 15 + [1] * 15)
    with pytest.raises(DataError, match="largest usable fold count is 15"):
        ev.make_splits(y, 16)
    assert len(ev.make_splits(y, 15)[0]) == 15


@pytest.mark.parametrize("seed", ["99999999999999999999", "4294967296", "-1"])
def test_seed_out_of_range_is_a_usage_error(cli, seed, no_fit):
    r = cli("select", "iris", "--method", "fsv", "--cv", "3", "--seed", seed)
    assert r.code == 2 and "between 0 and 4294967295" in r.err


def test_make_splits_checks_the_seed_range():
    from fsframe.errors import InvalidOptionError

    y = np.repeat([0, 1], 10)
    with pytest.raises(InvalidOptionError, match="random_state must be an integer between 0 and 4294967295"):
        ev.make_splits(y, 2, random_state=2**32)
    assert len(ev.make_splits(y, 2, random_state=ev.MAX_SEED)[0]) == 2


@pytest.mark.parametrize("flag", ["--json", "--csv"])
def test_unwritable_output_is_refused_before_the_work(cli, tmp_path, flag, no_fit):
    missing = tmp_path / "no" / "such" / "dir" / "out.txt"
    r = cli("select", "iris", "--method", "fsv", "--cv", "3", flag, missing)
    assert r.code == 2 and "does not exist" in r.err and flag in r.err
    r = cli("compare", "iris", "--methods", "fsv,l1-svm", "--cv", "3", flag, tmp_path)
    assert r.code == 2 and "is a directory" in r.err
    r = cli("select", "iris", "--method", "fsv", flag, missing)  # a single fit is work too
    assert r.code == 2 and "does not exist" in r.err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's read-only file system")
def test_output_where_no_file_can_be_created(cli, no_fit):
    r = cli("select", "iris", "--method", "fsv", "--cv", "3", "--json", "/proc/fsframe-out.json")
    assert r.code == 2 and "cannot write there" in r.err


def test_json_and_csv_to_one_file_is_refused(cli, tmp_path, no_fit):
    p = tmp_path / "out"
    r = cli("select", "iris", "--method", "fsv", "--cv", "3", "--json", p, "--csv", p)
    assert r.code == 2 and "different files" in r.err


def test_existing_output_file_is_checked_not_changed(cli, tmp_path):
    p = tmp_path / "old.json"
    p.write_text("previous")
    r = cli("select", "iris", "--method", "l1-svm", "--json", p)
    assert r.code == 0 and json.loads(p.read_text())["method"] == "l1-svm"


# ------------------------------------------------------------------------------ Ctrl-C
def _interrupt_on(k: int, monkeypatch):
    """Replace the fit of the folds by the real one that raises KeyboardInterrupt on call ``k``
    (1-based), as a backend does when Ctrl-C arrives inside a solve."""
    real = runner.fit
    calls = []

    def fit(*a, **kw):
        calls.append(1)
        if len(calls) == k:
            raise KeyboardInterrupt
        return real(*a, **kw)

    monkeypatch.setattr(runner, "fit", fit)
    return calls


def test_ctrl_c_in_cross_validate_keeps_the_finished_folds(small_binary, monkeypatch):
    X, y = small_binary
    calls = _interrupt_on(3, monkeypatch)
    with pytest.raises(ev.EvaluationInterrupted) as info:
        ev.cross_validate(X, y, method="l1-svm", cv=5, n_jobs=1)
    assert isinstance(info.value, KeyboardInterrupt) and len(calls) == 3  # nothing ran after Ctrl-C
    res = info.value.result
    assert (info.value.done, info.value.planned) == (2, 5)
    assert res.interrupted and res.n_folds == 2 and res.n_planned == 5 and res.n_failed == 0
    assert [f.fold for f in res.folds] == [0, 1]
    full = ev.cross_validate(X, y, method="l1-svm", cv=5, n_jobs=1)  # same splits, same first two folds
    assert not full.interrupted and full.n_planned == 5
    assert [f.accuracy for f in res.folds] == [f.accuracy for f in full.folds[:2]]
    assert res.summary()["accuracy"]["n"] == 2
    assert "INTERRUPTED: 2 of 5 planned fits finished" in res.report()
    assert res.to_dict()["interrupted"] is True


def test_ctrl_c_in_compare_keeps_every_finished_fit(small_binary, monkeypatch):
    X, y = small_binary
    _interrupt_on(5, monkeypatch)  # 3 folds of l1-svm, then fsv's second fold is interrupted
    with pytest.raises(ev.EvaluationInterrupted) as info:
        ev.compare(X, y, methods=["l1-svm", "fsv"], cv=3, n_jobs=1)
    res = info.value.result
    assert res.interrupted and [r.n_folds for r in res.results] == [3, 1]
    assert not res["l1-svm"].interrupted and res["fsv"].interrupted
    assert "INTERRUPTED: 4 of 6 planned fits finished" in res.report()


def test_ctrl_c_in_the_cli_exits_130_and_writes_what_finished(cli, small_csv, tmp_path, monkeypatch):
    _interrupt_on(4, monkeypatch)
    jp, cp = tmp_path / "out.json", tmp_path / "out.csv"
    r = cli("select", small_csv, "--method", "l1-svm", "--drop-columns", "0", "--cv", "5", "--jobs", "1",
            "--json", jp, "--csv", cp)
    assert r.code == 130
    assert "interrupted after 3 of 5 fits" in r.err and "kept in the outputs written" in r.err
    assert "INTERRUPTED: 3 of 5 planned fits finished" in r.out
    data = json.loads(jp.read_text())
    assert data["interrupted"] is True and data["n_planned"] == 5 and len(data["folds"]) == 3
    assert data["summary"]["accuracy"]["n"] == 3
    assert len(cp.read_text().strip().splitlines()) == 1 + 3  # header + the finished folds


def test_ctrl_c_in_cli_compare_exits_130(cli, monkeypatch):
    _interrupt_on(2, monkeypatch)
    r = cli("compare", "iris", "--methods", "l1-svm,fsv", "--cv", "3", "--jobs", "1")
    assert r.code == 130 and "interrupted after 1 of 6 fits" in r.err and "INTERRUPTED" in r.out
