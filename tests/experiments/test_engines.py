"""Serial, joblib (2 workers) and a Dask LocalCluster on loopback give bit-identical cells; compare
runs on the same runner (``dask=``, ``fsframe compare --dask``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fsframe.cli import main
from fsframe.evaluation import compare
from fsframe.evaluation.experiment import run_study
from fsframe.io import load_dataset

import distributed  # noqa: E402  (the test extra)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                       dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def test_serial_joblib_dask_bit_identical(small_study, tmp_path, client, cells):
    serial = run_study(small_study, tmp_path / "serial", n_jobs=1)
    run_study(small_study, tmp_path / "joblib", n_jobs=2)
    run_study(small_study, tmp_path / "dask", dask=client)
    a, b, c = (cells.results(tmp_path / d) for d in ("serial", "joblib", "dask"))
    assert len(a) == serial.n_cells == 9 and all(r["ok"] for r in a.values())
    # json keeps floats as their shortest round-trip repr: equal text is equal bits
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) == json.dumps(c, sort_keys=True)


def test_compare_on_dask_equals_serial(client):
    data = load_dataset("wine")
    kw = dict(methods=["l1-svm", "fsv"], cv=3, random_state=1)
    s = compare(data, **kw)
    d = compare(data, dask=client, **kw)
    for rs, rd in zip(s.results, d.results):
        for fs, fd in zip(rs.folds, rd.folds):
            assert (fs.accuracy, fs.mcc, fs.selected, fs.objective, fs.n_iter) == \
                   (fd.accuracy, fd.mcc, fd.selected, fd.objective, fd.n_iter)
            np.testing.assert_array_equal(fs.y_pred, fd.y_pred)


def test_cli_compare_dask_address(client, capsys):
    addr = client.scheduler.address
    assert main(["compare", "wine", "--methods", "l1-svm", "--cv", "3", "--dask", addr, "--markdown"]) == 0
    out_dask = capsys.readouterr().out
    assert main(["compare", "wine", "--methods", "l1-svm", "--cv", "3", "--jobs", "1", "--markdown"]) == 0
    out_serial = capsys.readouterr().out
    strip = lambda t: [line.rsplit("|", 3)[0] for line in t.splitlines() if line.startswith("| l1-svm")]  # noqa: E731
    assert strip(out_dask) == strip(out_serial) and strip(out_dask)


def test_two_dataset_study_on_dask_equals_serial(tmp_path, client, cells):
    """Each cell runs on its own dataset's data (scattered once per dataset): a study over wine and
    iris gives the serial run's cells on Dask, and each cell's predictions cover its dataset's
    test samples."""
    from fsframe.evaluation.study import study_from_dict

    spec = {"study": {"name": "two", "seeds": [0]}, "protocol": {"cv": 3},
            "datasets": [{"name": "wine"}, {"name": "iris"}], "methods": [{"method": "l1-svm"}]}
    run_study(study_from_dict(spec), tmp_path / "serial", n_jobs=1)
    res = run_study(study_from_dict(spec), tmp_path / "dask", dask=client)
    a, b = cells.results(tmp_path / "serial"), cells.results(tmp_path / "dask")
    assert len(a) == res.n_cells == 6 and all(r["ok"] for r in a.values())
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    sizes = {"wine": 178, "iris": 150}
    for d in cells.read(tmp_path / "dask").values():
        r = d["record"]
        assert r["n_train"] + r["n_test"] == sizes[d["dataset"]]
        assert max(max(r["train"]), max(r["test"])) < sizes[d["dataset"]]
    assert [t.dataset["name"] for t in res.tables] == ["wine", "iris"]
