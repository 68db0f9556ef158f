"""A float64, C-contiguous ``X`` is read in place (issue 19: no 320 MB copy at 2 000 x 20 000), so
"never a mutated input" rests on nothing downstream writing into it: every path of a fit runs on
an ``X`` the caller made read-only, leaves it bitwise as it was, and gives the answer it gives on a
writable copy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import DataWarning
from fsframe.working_set import WorkingSetOptions

PATHS = {
    "compiled": dict(method="l1-svm", working_set=WorkingSetOptions(mode=False, from_data=False)),
    "working_set": dict(method="l1-svm", working_set=WorkingSetOptions(mode=True, from_data=False, initial=10,
                                                                       batch=10)),
    "from_data": dict(method="l1-svm", working_set=WorkingSetOptions(from_data=True)),
    "em": dict(method="em-l0", n_features=4),
    "mpm": dict(method="l1-mpm"),
}


def instance():
    rng = np.random.default_rng(7)
    X = rng.standard_normal((60, 150))
    y = np.where(X[:, :4].sum(axis=1) + 0.4 * rng.standard_normal(60) > 0, 1.0, -1.0)
    return X, y


def frozen(a):
    a = a.copy()
    a.setflags(write=False)
    return a


def _fit(X, y, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # n > m
        return fsframe.fit(X, y, **kw)


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_fit_path_reads_a_read_only_X_and_leaves_it_bitwise(path):
    X, y = instance()
    Xr, yr = frozen(X), frozen(y)
    before = Xr.tobytes()
    r = _fit(Xr, yr, PATHS[path])
    assert Xr.tobytes() == before and yr.tobytes() == y.tobytes()
    assert not Xr.flags.writeable and not yr.flags.writeable
    if path == "from_data":
        assert r.info["solver_path"] == "from_data"
    elif path == "working_set":
        assert r.info.get("solver_path", "compiled") == "compiled" and r.certificate["working_set"] < X.shape[1]
    ref = _fit(X.copy(), y.copy(), PATHS[path])
    np.testing.assert_array_equal(r.support, ref.support)
    assert r.objective == pytest.approx(ref.objective, rel=1e-12)


@pytest.mark.parametrize("path", ["compiled", "from_data"])
def test_fsselector_reads_a_read_only_X_and_leaves_it_bitwise(path):
    X, y = instance()
    Xr, yr = frozen(X), frozen(y)
    before = Xr.tobytes()
    sel = fsframe.FSSelector("l1-svm", params={"working_set": PATHS[path]["working_set"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        sel.fit(Xr, yr)
        Z = sel.transform(Xr)
        pred = sel.predict(Xr)
    assert Xr.tobytes() == before and not Xr.flags.writeable
    assert Z.shape == (X.shape[0], int(sel.support_.sum())) and pred.shape == y.shape
    if path == "from_data":
        assert sel.result_.info["solver_path"] == "from_data"
