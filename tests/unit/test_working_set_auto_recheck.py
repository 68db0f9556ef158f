"""A working set chosen by ``working_set="auto"`` whose answer is not certified OPTIMAL: the full
problem is solved once more and the better-certified answer kept (the certificate's ``recheck``)."""

import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.enums import Status
from fsframe.working_set import WorkingSet


def ill_scaled(m=60, n=300, seed=1):
    """60 x 300 logistic data with feature scales 1e-4 ... 1e4: ECOS ends ``optimal_inaccurate``."""
    rng = np.random.default_rng(seed)
    y = np.arange(m) % 2
    X = rng.standard_normal((m, n))
    X[:, :4] += 0.8 * y[:, None]
    X *= np.logspace(-4, 4, n)[rng.permutation(n)]
    return X, np.where(y == 1, 1, -1)


def fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method="l1-logistic", C=1.0, **kw)


def test_ecos_ill_scaled_auto_rechecks_on_the_full_problem():
    X, y = ill_scaled()
    r = fit(X, y, backend="ecos", working_set="auto")
    assert r.certificate["status"] == "optimal_inaccurate"
    # both answers only optimal_inaccurate: neither is better certified, the working set's stays
    assert r.certificate["recheck"] == ("working set optimal_inaccurate, full problem optimal_inaccurate: "
                                        "kept the working set's answer")
    asked = fit(X, y, backend="ecos", working_set=True)  # asked for: no recheck
    assert "recheck" not in asked.certificate


def test_full_problem_kept_when_it_is_certified_optimal(monkeypatch):
    """The working set's answer downgraded to optimal_inaccurate (as ECOS's is above): the full
    problem's OPTIMAL answer replaces it, equal to a fit without a working set."""
    X, y = ill_scaled()
    plain = fit(X, y, backend="clarabel", working_set=False)
    invert = WorkingSet.invert

    def inaccurate(self, data, res):
        out = invert(self, data, res)
        return attrs.evolve(out, status=Status.OPTIMAL_INACCURATE) if hasattr(out, "status") else out

    monkeypatch.setattr(WorkingSet, "invert", inaccurate)
    r = fit(X, y, backend="clarabel", working_set="auto")
    assert r.certificate["recheck"] == ("working set optimal_inaccurate, full problem optimal: "
                                        "kept the full problem's answer")
    assert r.certificate["status"] == "optimal"
    assert r.certificate["working_set"] is None
    assert r.objective == pytest.approx(plain.objective, rel=1e-7)
    np.testing.assert_array_equal(r.support, plain.support)
    asked = fit(X, y, backend="clarabel", working_set=True)  # asked for: its answer stands
    assert "recheck" not in asked.certificate
