"""Issue 18, item 5, on the command line: files ``fsframe run`` and ``fsframe report`` cannot use are
typed errors naming the file and what is wrong (exit status 2, like any bad input), never an
"internal error"; a component raising ``SystemExit`` during a fit fails its cell, as any exception
does, while Ctrl-C keeps its meaning. Each case is the issue's minimal reproduction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import attrs
import pytest

from fsframe.cli import main
from fsframe.errors import DataFileError
from fsframe.evaluation.experiment import load_results, run_study
from fsframe.evaluation.manifest import read_manifest
from fsframe.evaluation.study import load_study
from fsframe.surrogates.exp import ExpSurrogate

STUDY = ('[study]\nname = "bad-files"\nseeds = [0]\n[protocol]\ncv = 3\n[[datasets]]\nname = "wine"\n'
         '[[methods]]\nmethod = "l1-svm"\nC = [0.5, 1.0]\n')


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A results folder of 6 cells (2 configurations x 3 folds) that ``fsframe run`` finished."""
    root = tmp_path_factory.mktemp("finished")
    (root / "s.toml").write_text(STUDY)
    run_study(load_study(root / "s.toml"), root / "out")
    return root


@pytest.fixture
def results(finished, tmp_path):
    """A fresh copy of the finished folder, its study file and the folder."""
    shutil.copytree(finished, tmp_path, dirs_exist_ok=True)
    return tmp_path / "s.toml", tmp_path / "out"


def _fails(argv, capsys, *words) -> str:
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "[DataFileError]" in err, err
    for w in words:
        assert str(w) in err, (w, err)
    return err


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:100])


def _drop_cells(path: Path) -> None:
    d = json.loads(path.read_text())
    del d["cells"]
    path.write_text(json.dumps(d))


@pytest.mark.parametrize("spoil, words", [
    (lambda p: p.write_bytes(b"\xff\xfe{"), ["not readable JSON", "utf-8"]),
    (_truncate, ["not readable JSON", "Unterminated"]),
    (_drop_cells, ["has no 'cells'"]),
], ids=["non-utf8", "truncated", "no-cells"])
def test_report_on_a_bad_manifest_names_it(results, capsys, spoil, words):
    _, out = results
    spoil(out / "manifest.json")
    _fails(["report", out, "--no-plots"], capsys, out / "manifest.json", *words)


def test_manifest_structure_is_checked(results):
    """Siblings of "without cells": every part the tables are rebuilt from is checked."""
    _, out = results
    good = json.loads((out / "manifest.json").read_text())
    spoilt = [([], "JSON list"), ({**good, "groups": {}}, "'groups' that is not"),
              ({**good, "groups": [{**good["groups"][0], "configs": []}]}, "0 configurations but 2"),
              ({**good, "groups": [{**good["groups"][0], "dataset": {"name": "wine"}}]}, "dataset lacks"),
              ({**good, "environment": "x"}, "'environment' of type str")]
    for content, words in spoilt:
        (out / "manifest.json").write_text(json.dumps(content))
        with pytest.raises(DataFileError, match=words):
            read_manifest(out)
    (out / "manifest.json").unlink()
    (out / "manifest.json").mkdir()
    with pytest.raises(DataFileError, match="is a folder, not a file"):
        load_results(out)


def test_non_utf8_study_file(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'[study]\nname = "\xff\xfe"\n')
    _fails(["run", bad, "--out", tmp_path / "o"], capsys, bad, "not UTF-8")
    _fails(["run", tmp_path, "--out", tmp_path / "o"], capsys, "is a folder, not an experiment file")


def test_output_path_that_is_a_file(results, capsys):
    study, out = results
    afile = out.parent / "afile"
    afile.write_text("mine")
    _fails(["run", study, "--out", afile], capsys, afile, "is a file, not a folder")
    assert afile.read_text() == "mine"
    shutil.rmtree(out / "cells")
    (out / "cells").write_text("")
    _fails(["run", study, "--out", out], capsys, out / "cells", "is a file, not a folder")
    _fails(["report", out, "--no-plots"], capsys, out / "cells", "is a file, not a folder")


def test_cell_path_that_is_a_directory(results, capsys):
    """``run`` refuses before any fit (it would fail writing the cell); ``report`` refuses too
    rather than print a table without that cell."""
    study, out = results
    cell = sorted((out / "cells").glob("*.json"))[0]
    cell.unlink()
    cell.mkdir()
    _fails(["report", out, "--no-plots"], capsys, cell, "is a folder, not a cell file")
    _fails(["run", study, "--out", out], capsys, cell, "is a folder, not a cell file")
    assert cell.is_dir() and not list(cell.iterdir())  # nothing of the user's was removed


def test_unusable_cell_content_is_recomputed_with_a_warning(results):
    """Cell files that are not cells (bad JSON, or JSON whose record does not load) count as not
    finished: a warning names the file and a rerun recomputes exactly those cells."""
    study, out = results
    cells = sorted((out / "cells").glob("*.json"))
    cells[0].write_text("{half")
    d = json.loads(cells[1].read_text())
    d["record"]["no_such_field"] = 1
    cells[1].write_text(json.dumps(d))
    with pytest.warns(RuntimeWarning, match="is unreadable") as rec:
        partial = load_results(out)
    assert {str(cells[0]), str(cells[1])} <= {w for r in rec for w in str(r.message).split() if w.endswith(".json")}
    assert partial.n_finished == 4
    with pytest.warns(RuntimeWarning, match="is unreadable"):
        again = run_study(load_study(study), out)
    assert again.n_computed == 2 and again.n_skipped == 4 and again.n_finished == 6


def test_unwritable_report_and_study_copy(results, capsys):
    study, out = results
    (out / "report.md").mkdir()
    _fails(["report", out, "--no-plots"], capsys, out / "report.md")
    (out / "img").write_text("")
    _fails(["report", out, "--html"], capsys, out / "img", "is a file, not a folder")
    (out / "study.toml").unlink()
    (out / "study.toml").mkdir()
    _fails(["run", study, "--out", out], capsys, out / "study.toml")


# -- SystemExit during a fit -----------------------------------------------------------------------
@attrs.frozen
class ExitingExp(ExpSurrogate):
    """The exp surrogate, except that at ``alpha = 5`` it leaves the process as a careless plugin
    would (``sys.exit(5)``), or is interrupted (``alpha = 7``, Ctrl-C)."""

    name = "exiting-exp"

    def derivative(self, t):
        if self.alpha == 5:
            raise SystemExit(5)
        if self.alpha == 7:
            raise KeyboardInterrupt
        return super().derivative(t)


EXITING = ('[study]\nseeds = [0]\n[protocol]\ncv = 3\n[[datasets]]\nname = "breast_cancer"\n'
           '[[methods]]\nformulation = "hinge"\nsurrogate = "exiting-exp"\nloop = "reweighted-l1"\n'
           'alpha = [1.0, {bad}]\n')


def test_systemexit_in_a_fit_fails_its_cell(tmp_path, capsys, add_components):
    """Before: ``fsframe run`` ended with exit status 5, no message and 3 of 6 cells."""
    add_components(surrogates=[ExitingExp])
    (tmp_path / "s.toml").write_text(EXITING.format(bad=5.0))
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "3 of 6 cells failed" in err
    records = [json.loads(p.read_text())["record"] for p in (tmp_path / "o" / "cells").glob("*.json")]
    assert len(records) == 6
    failed = [r for r in records if not r["ok"]]
    assert len(failed) == 3 and all(r["error_type"] == "SystemExit" and "SystemExit(5)" in r["error"]
                                    for r in failed)
    assert sum(r["ok"] for r in records) == 3


def test_keyboardinterrupt_in_a_fit_still_stops_the_run(tmp_path, capsys, add_components):
    add_components(surrogates=[ExitingExp])
    (tmp_path / "s.toml").write_text(EXITING.format(bad=7.0))
    assert main(["run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--no-progress"]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert len(list((tmp_path / "o" / "cells").glob("*.json"))) == 3  # the first configuration's cells


# -- siblings found by the sweep: study-file values and CLI inputs that ended in "internal error" ----
_WINE = {"datasets": [{"name": "wine"}], "methods": [{"method": "l1-svm"}]}


@pytest.mark.parametrize("data, words", [
    ({**_WINE, "study": 3}, "study must be a table"),
    ({**_WINE, "protocol": 3}, "protocol must be a table"),
    ({"datasets": 3, "methods": [{"method": "l1-svm"}]}, "datasets must be an array of tables"),
    ({"datasets": [{"name": "wine"}], "methods": 3}, "methods must be an array of tables"),
    ({**_WINE, "study": {"output": 3}}, r"\[study\] output = 3; it must be a string"),
    ({**_WINE, "study": {"name": [1]}}, r"\[study\] name = \[1\]; it must be a string"),
    ({"datasets": [{"path": 3}], "methods": [{"method": "l1-svm"}]}, "path = 3; it must be a string"),
    ({**_WINE, "protocol": {"name": [3]}}, "unknown protocol"),
    ({**_WINE, "protocol": {"holdout": "x"}}, "holdout = 'x'; it must be the test fraction"),
    ({**_WINE, "protocol": {"retrain_C": "x"}}, "retrain_C = 'x'; it must be a positive number"),
])
def test_study_values_of_the_wrong_type(data, words):
    from fsframe.errors import InvalidOptionError
    from fsframe.evaluation.study import study_from_dict

    with pytest.raises(InvalidOptionError, match=words):
        study_from_dict(data, path="s.toml")


def test_string_cv_and_bad_loader_escape(tmp_path, capsys):
    from fsframe.errors import InvalidOptionError
    from fsframe.evaluation.splits import make_splits

    with pytest.raises(InvalidOptionError, match="cv must be an int"):  # a str has .split(): no splitter
        make_splits([0, 1] * 5, "x")
    assert main(["select", "wine", "--method", "l1-svm", "--loader-opt", "delimiter=\\x"]) == 2
    err = capsys.readouterr().err
    assert "internal error" not in err and "--loader-opt" in err and "backslash escape" in err
