"""The compiled twins of the EM step's weights and reported penalty for the built-in zero-norm
(:func:`fsframe.backends.box_qp_jit.em_zero_norm_weights`, :func:`~fsframe.backends.box_qp_jit.em_zero_norm_count`,
chosen by :func:`fsframe.loops.em._compiled_twin`; docs/performance.md, issue 19's fourteenth pass).

* Value for value against the Python path they stand in for, bitwise, on arbitrary vectors
  (hypothesis: zeros, negatives, ``inf``, ``nan``, tiny and huge norms, weights above the cap):
  the weights against :meth:`EM._weights` with the surrogate's ``quad_weights`` (``l0`` and ``lp``
  with ``p = 0``), the ``fixed`` mask it updates included; the penalty against
  :meth:`OuterLoop.surrogate_objective` less the loss.
* Only the built-ins take them: a subclass of ``lp`` that overrides ``quad_weights``, ``lp`` with
  ``p > 0``, ``arom``'s ``log`` keep numpy's path.
* In ``em-l0`` fits: the same histories, coefficients, intercepts and objectives, bitwise, with
  the twins and with numpy's path (the twins switched off).
* An ``EM`` subclass overriding ``_capped`` (a stricter cap) or ``_weights`` (its old signature,
  without the twin) keeps numpy's path with its own override: the fit of numpy's path.
* The warm-up compiles what a fit calls (read-only iterates included): a fit adds no
  specialisation. A compile failure never leaves a non-function in the slots.
"""

from __future__ import annotations

import importlib.util
import warnings

import attrs
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

import fsframe
from fsframe.backends import box_qp_jit
from fsframe.backends.base import SolveOptions
from fsframe.enums import Status
from fsframe.fitting import fit_resolved
from fsframe.loops import em as em_mod
from fsframe.loops.em import EM
from fsframe.method import resolve
from fsframe.plugins import select_backend
from fsframe.surrogates.lp import L0Surrogate, LpSurrogate

pytestmark = pytest.mark.skipif(importlib.util.find_spec("numba") is None,
                                reason="numba (the fast extra) is not installed")

VALUES = st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=64),
                   st.floats(min_value=0.0, max_value=1e-5),
                   st.sampled_from([0.0, 1e-160, 1e-6, 1e6, 0.5, 1.0, 2.0]))  # halves: contributions at the cut


def _twins():
    twins = box_qp_jit.compiled_em_twins()
    if twins is None:
        pytest.skip("the compiled loop is not in use here")
    return twins


@attrs.frozen
class _It:
    t: np.ndarray
    loss: float = 0.0
    column_scale: np.ndarray | None = None


def _bits(a):
    return np.asarray(a, dtype=float).view(np.int64)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(0, 40))
def test_weights_twin_matches_numpy_bitwise(data, n):
    weights, _ = _twins()
    t = data.draw(arrays(np.float64, n, elements=VALUES))
    sizes = data.draw(arrays(np.float64, n, elements=VALUES))
    fixed = data.draw(arrays(np.bool_, n))
    limit = data.draw(arrays(np.float64, n, elements=st.sampled_from([1e12, 1.0, 1e300, 0.0])))
    cut = data.draw(st.sampled_from([1e-12, 1e-6, 0.5, 0.0]))
    loop = EM(weights="paper")
    for sur in (L0Surrogate(), LpSurrogate(p=0.0)):
        want_fixed = fixed.copy()
        with np.errstate(all="ignore"):  # overflow of t * t, as the twin meets it silently
            want = loop._weights(_It(t), sur.quad_weights, cut, want_fixed, limit, sizes=sizes)
        got_fixed = fixed.copy()
        got = weights(t, sizes, cut, got_fixed, limit)
        assert np.array_equal(_bits(got), _bits(want))
        assert np.array_equal(got_fixed, want_fixed)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(0, 40), zero_tol=st.sampled_from([1e-6, 1e-3, 0.5]))
def test_penalty_twin_matches_numpy_bitwise(data, n, zero_tol):
    _, count = _twins()
    t = data.draw(arrays(np.float64, n, elements=VALUES))
    scale = data.draw(arrays(np.float64, n, elements=st.one_of(st.floats(0.0, 1e6), st.sampled_from([0.0, 1.0]))))
    loop = EM(weights="paper", zero_tol=zero_tol)
    for sur in (L0Surrogate(), LpSurrogate(p=0.0)):
        with np.errstate(all="ignore"):  # inf * 0 in numpy's product
            want = loop.surrogate_objective(_It(t, 0.0, scale), sur)
            got = 0.0 + count(t, scale, zero_tol)
        assert _bits([got]) == _bits([want])


def test_penalty_twin_at_the_cut():
    """A contribution exactly at the cut (``0.5 * 2``) is not kept, as numpy's ``>`` keeps none."""
    _, count = _twins()
    t, scale = np.array([2.0, 1.0, 0.0, 1e-13]), np.ones(4)
    want = EM(weights="paper", zero_tol=0.5).surrogate_objective(_It(t, 0.0, scale), L0Surrogate())
    assert want == 1.0 and count(t, scale, 0.5) == want


class _MyLp(LpSurrogate):
    def quad_weights(self, t):
        return 2.0 * super().quad_weights(t)


def test_only_the_builtins_take_the_twins():
    _twins()
    assert em_mod._compiled_twin(L0Surrogate().quad_weights) is not None
    assert em_mod._compiled_twin(LpSurrogate(p=0.0).quad_weights) is not None
    assert em_mod._compiled_twin(_MyLp(p=0.0).quad_weights) is None  # a subclass: its own weights
    assert em_mod._compiled_twin(LpSurrogate(p=0.5).quad_weights) is None  # t^(p-2): numba's pow
    assert em_mod._compiled_twin(LpSurrogate(p=0.5, eps=1e-3).quad_weights) is None
    log = fsframe.method.resolve("arom").surrogate
    assert em_mod._compiled_twin(log.quad_weights) is None


def _data(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((70, 25))
    y = np.sign(X[:, :3].sum(1) + 0.5 * rng.standard_normal(70))
    return X, y


def _fingerprint(res):
    hist = [(r.objective, r.n_nonzero, r.status) for r in res.history]
    return (tuple(res.selected), res.n_iter, _bits(res.coef).tolist(), _bits(np.atleast_1d(res.intercept)).tolist(),
            _bits([res.objective]).tolist(), hist)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kw", [{"n_features": 3}, {}], ids=["r3", "free"])
def test_em_l0_fits_are_bitwise_those_of_numpy(monkeypatch, seed, kw):
    _twins()
    X, y = _data(seed)
    calls = []
    twin = em_mod._compiled_twin

    def spy(q):
        out = twin(q)
        calls.append(out is not None)
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        monkeypatch.setattr(em_mod, "_compiled_twin", spy)
        fast = fsframe.fit(X, y, method="em-l0", **kw)
        monkeypatch.setattr(em_mod, "_compiled_twin", lambda q: None)
        slow = fsframe.fit(X, y, method="em-l0", **kw)
    assert calls and all(calls)  # the twins were in use in the first fit
    assert all(r.status is Status.OPTIMAL for r in fast.history)
    assert _fingerprint(fast) == _fingerprint(slow)


class _NumbaError(Exception):
    """Stands in for a numba typing error (box_qp_jit.is_compile_error reads the module)."""


_NumbaError.__module__ = "numba.core.errors"


def test_a_compile_error_falls_back_to_numpy_once(monkeypatch):
    _twins()
    _fresh_twins(monkeypatch)

    real = box_qp_jit._compiled_once

    def fail(slot, fn, **kw):  # the twins fail to compile; the pivots, crash and warm step do not
        if fn in (box_qp_jit.em_zero_norm_weights, box_qp_jit.em_zero_norm_count):
            raise _NumbaError("cannot type")
        return real(slot, fn, **kw)

    monkeypatch.setattr(box_qp_jit, "_compiled_once", fail)
    with pytest.warns(RuntimeWarning, match="could not compile the EM step's weights"):
        assert box_qp_jit.compiled_em_twins() is None
    # the failure has its own flag: a racing thread reading a slot gets a function or None, never False
    assert all(slot[0] is None or callable(slot[0])
               for slot in (box_qp_jit._EM_WEIGHTS, box_qp_jit._EM_COUNT, box_qp_jit._EM_READY))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # warned once
        assert box_qp_jit.compiled_em_twins() is None
    X, y = _data(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", n_features=3)
    monkeypatch.setattr(em_mod, "_compiled_twin", lambda q: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fsframe.fit(X, y, method="em-l0", n_features=3)
    assert _fingerprint(res) == _fingerprint(ref)


def _fresh_twins(monkeypatch):
    """The twins' slots as before their first call (a new compilation, numba's disk cache aside)."""
    for name, empty in (("_EM_WEIGHTS", None), ("_EM_COUNT", None), ("_EM_READY", None), ("_EM_FAILED", False)):
        monkeypatch.setattr(box_qp_jit, name, [empty])


def test_a_fit_adds_no_specialisation_after_the_warm_up(monkeypatch):
    """The fits' iterates are read-only: the warm-up compiles that specialisation too, so a numba
    error cannot first show inside a fit."""
    _twins()
    _fresh_twins(monkeypatch)
    weights, count = box_qp_jit.compiled_em_twins()
    before = (list(weights.signatures), list(count.signatures))
    X, y = _data(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fsframe.fit(X, y, method="em-l0", n_features=3)
    assert (list(weights.signatures), list(count.signatures)) == before
    assert any(sig[0].mutable is False for sig in weights.signatures)  # the read-only t: compiled


@attrs.frozen
class _StricterCap(EM):
    @staticmethod
    def _capped(w, fixed, limit):  # fixes every weight above 1e3
        fixed |= ~(w <= np.minimum(limit, 1e3))
        w[fixed] = np.inf
        return w


@attrs.frozen
class _OldWeights(EM):
    def _weights(self, it, q, cut, fixed, limit, cols=None, sizes=None):  # before the twin argument
        return super()._weights(it, q, cut, fixed, limit, cols, sizes)


@pytest.mark.parametrize("kind", [_StricterCap, _OldWeights])
def test_an_em_subclass_keeps_numpys_path(monkeypatch, kind):
    """The twin does the whole step, cap included: a subclass overriding ``_capped`` or
    ``_weights`` gets numpy's path with its override (the same fit as with the twins off)."""
    _twins()
    X, y = _data(0)
    method = attrs.evolve(resolve("em-l0"), loop=kind(weights="paper"))
    backend = select_backend("auto", method.problem_class, quadratic=True, time_limit=None)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fit_resolved(method, X, y, None, backend, SolveOptions(), n_features=3)

    res = run()
    monkeypatch.setattr(em_mod, "_compiled_twin", lambda q: None)
    assert _fingerprint(res) == _fingerprint(run())
