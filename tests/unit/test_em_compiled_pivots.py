"""``em-l0`` with the EM duals' pivots compiled (numba, the ``fast`` extra) selects what the Python
pivots select: the same features, EM iterations and model, on seeded generated data and on
stratified training parts of Sonar (paper 002's protocol; skipped without the shared data). The
compiled loop is the same method with sums in another order (docs/performance.md, "Issue 19 at a
glance"); both answers are judged by the certificate on the full subproblem."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

import fsframe
from fsframe.backends import box_qp

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba (the fast extra) is not installed")


def _fit_both(X, y, r, monkeypatch):
    """The same ``em-l0`` fit with the Python pivots and with the compiled ones; asserts the
    compiled loop ran in the second."""
    out = {}
    for compiled in (False, True):
        calls = []
        loop = box_qp._active_set_compiled
        monkeypatch.setattr(box_qp, "_active_set_compiled", lambda *a: calls.append(1) or loop(*a))
        if compiled:
            monkeypatch.delenv("FSFRAME_NO_JIT", raising=False)
        else:
            monkeypatch.setenv("FSFRAME_NO_JIT", "1")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[compiled] = fsframe.fit(X, y, method="em-l0", n_features=r)
        assert bool(calls) == compiled
        monkeypatch.setattr(box_qp, "_active_set_compiled", loop)
    return out[False], out[True]


def _same(a, b):
    assert list(a.selected) == list(b.selected)
    assert a.n_iter == b.n_iter
    np.testing.assert_allclose(np.asarray(b.coef), np.asarray(a.coef), atol=1e-7)
    assert b.objective == pytest.approx(a.objective, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_generated_instances_select_the_same_features(seed, monkeypatch):
    rng = np.random.default_rng(500 + seed)
    m, n = int(rng.integers(60, 140)), int(rng.integers(20, 50))
    X = rng.normal(size=(m, n))
    beta = np.zeros(n)
    beta[: 2 + seed] = rng.normal(size=2 + seed)
    y = np.where(X @ beta + 0.7 * rng.normal(size=m) > 0, 1, -1)
    _same(*_fit_both(X, y, (3, 5, 10)[seed % 3], monkeypatch))


@pytest.mark.shared_data
@pytest.mark.parametrize("split", range(4))
@pytest.mark.parametrize("r", [5, 10])
def test_sonar_splits_select_the_same_features(split, r, shared_file, monkeypatch):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
    _same(*_fit_both(StandardScaler().fit(Xtr).transform(Xtr), ytr, r, monkeypatch))
