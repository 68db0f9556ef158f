"""Every (formulation, surrogate, loop) triple of the registry: the valid ones run and their
results are value-checked in numpy (``fsframe.testing.check_fit_result``); the invalid ones
raise IncompatibleComponentsError naming the missing capability. Registered methods, and
one-vs-rest on iris and wine, likewise."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning, IncompatibleComponentsError
from fsframe.plugins import get_registry
from fsframe.testing import check_fit_result

REG = get_registry()
TRIPLES = [(f, s, l) for f in REG.names("formulation") for s in [*REG.names("surrogate"), None]
           for l in REG.names("loop")]


def _expected_gap(s, l):
    """The capability the loop needs and the surrogate lacks, from the declared capabilities."""
    loop = REG.get("loop", l)()
    if s is None:
        return "a surrogate" if loop.needs_surrogate else None
    sur = REG.get("surrogate", s)()
    missing = [c for c in loop.requires if c not in sur.capabilities()]
    if missing:
        return missing[0]
    if l in ("single",) and not np.isfinite(sur.derivative(np.zeros(1))[0]):
        return "a finite derivative at 0"
    return None


@pytest.mark.parametrize("f, s, l", TRIPLES, ids=[f"{f}+{s}+{l}" for f, s, l in TRIPLES])
def test_every_triple(binary_data, f, s, l):
    X, y = binary_data
    gap = _expected_gap(s, l)
    kw = dict(formulation=f, surrogate=s or "none", loop=l)
    if gap is not None:
        with pytest.raises(IncompatibleComponentsError, match=gap):
            fsframe.fit(X, y, **kw)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # some triples stop at max_iter
        try:
            res = fsframe.fit(X, y, **kw)
        except IncompatibleComponentsError as exc:  # a formulation that cannot build the loop's terms
            assert "cannot build slot terms" in str(exc)
            return
    ran = check_fit_result(res, X, y)
    assert res.n_iter >= 1 and len(res.history) == res.n_iter
    if f == "hinge":
        assert "objective recomputed" in ran


@pytest.mark.parametrize("name", REG.names("method"))
def test_every_method(binary_data, name):
    X, y = binary_data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fsframe.fit(X, y, method=name)
    check_fit_result(res, X, y)
    spec = REG.get("method", name)
    assert (res.formulation.name, res.loop.name) == (spec.formulation, spec.loop)
    assert (res.surrogate.name if res.surrogate else None) == spec.surrogate


@pytest.mark.parametrize("dataset", ["iris", "wine"])
@pytest.mark.parametrize("method", ["l1-svm", "fsv", "em-l0"])
def test_one_vs_rest(dataset, method):
    ds = fsframe.load_dataset(dataset)
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    res = fsframe.fit(X, ds.y, method=method)
    assert len(res.per_class) == len(ds.classes) and res.coef.shape == (len(ds.classes), X.shape[1])
    check_fit_result(res, X, ds.y)
    # each class's model is the binary fit of that class against the rest
    for r, c in zip(res.per_class, ds.classes):
        alone = fsframe.fit(X, np.where(ds.y == c, 1, -1), method=method)
        np.testing.assert_array_equal(r.coef, alone.coef)
        assert r.intercept == alone.intercept
    assert res.info["strategy"] == "one-vs-rest"
    # regression: a per-class result's labels are ("rest", c), of mixed types
    pred = res.per_class[0].predict(X)
    assert set(pred.tolist()) <= {"rest", str(ds.classes[0])}
    assert np.mean(res.predict(X) == ds.y) > 0.85


def test_one_vs_rest_with_n_features():
    ds = fsframe.load_dataset("wine")
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    res = fsframe.fit(X, ds.y, method="em-l0", n_features=4)
    assert res.n_selected == 4
    assert np.all(res.coef[:, ~res.support] == 0)
    for r in res.per_class:
        assert not np.any(r.support & ~res.support)
        assert np.all(r.coef[~r.support] == 0)
