"""Surrogates approach the zero-norm ``1{t > 0}`` pointwise (002 §1, 000 eq. 30), and ``lp`` with
``p = 0`` is ``l0`` exactly; closed forms at hand-picked points."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsframe.surrogates import ExpSurrogate, L0Surrogate, L1Surrogate, LogSurrogate, LpSurrogate

positive = st.floats(1e-3, 1e3)


@given(t=positive)
def test_exp_tends_to_the_indicator(t):
    """1 - exp(-alpha t) -> 1 as alpha -> inf, monotonically; the gap is exp(-alpha t)."""
    alphas = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5]
    vals = [float(ExpSurrogate(alpha=a).phi(np.array([t]))[0]) for a in alphas]
    assert all(b >= a for a, b in zip(vals, vals[1:]))
    for a, v in zip(alphas, vals):
        assert 1.0 - v == pytest.approx(math.exp(-a * t), rel=1e-9, abs=1e-15)  # 1 - v: absolute error ~eps
    assert ExpSurrogate(alpha=50.0 / t).phi(np.array([t]))[0] == pytest.approx(1.0, abs=1e-21)
    assert ExpSurrogate(alpha=1e5).phi(np.array([0.0]))[0] == 0.0


@given(t=positive)
def test_normalised_log_tends_to_the_indicator(t):
    """AROM's log(eps + t) is unbounded as eps -> 0; its normalisation
    phi_eps(t) / phi_eps(1) = log1p(t/eps) / log1p(1/eps) = 1 + log(t)/log(1/eps) + o(1) -> 1{t > 0}."""
    eps_values = [10.0 ** -k for k in (2, 4, 8, 16, 32, 64)]
    gaps = []
    for eps in eps_values:
        s = LogSurrogate(eps=eps)
        ratio = float(s.phi(np.array([t]))[0] / s.phi(np.array([1.0]))[0])
        assert ratio == pytest.approx(math.log1p(t / eps) / math.log1p(1 / eps), rel=1e-12)
        gaps.append(abs(ratio - 1.0))
        assert s.phi(np.array([0.0]))[0] == 0.0
    assert all(b <= a + 1e-15 for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] <= abs(math.log(t)) / (64 * math.log(10)) + 1e-12


@given(t=positive)
def test_lp_tends_to_the_indicator(t):
    """t^p -> 1 for t > 0 as p -> 0; lp(p=0) is the zero-norm."""
    ps = [0.5, 0.1, 1e-2, 1e-4, 1e-8]
    gaps = [abs(float(LpSurrogate(p=p).phi(np.array([t]))[0]) - 1.0) for p in ps]
    assert all(b <= a for a, b in zip(gaps, gaps[1:]))
    assert gaps[-1] == pytest.approx(abs(t ** 1e-8 - 1.0), abs=1e-15)


def test_lp_zero_is_l0():
    t = np.r_[0.0, np.logspace(-8, 3, 50)]
    lp0, l0 = LpSurrogate(p=0.0), L0Surrogate()
    np.testing.assert_array_equal(lp0.phi(t), l0.phi(t))
    np.testing.assert_array_equal(lp0.phi(t), (t > 0).astype(float))
    np.testing.assert_allclose(lp0.quad_weights(t), l0.quad_weights(t), rtol=1e-15)
    assert lp0.capabilities() == l0.capabilities() == frozenset({"quad_weights"})
    w = np.array([0.0, -2.0, 1e-9, 3.0])
    assert lp0.value(w) == l0.value(w) == 3.0


def test_lp_one_is_l1():
    t = np.r_[0.0, np.logspace(-8, 3, 50)]
    np.testing.assert_allclose(LpSurrogate(p=1.0).phi(t), L1Surrogate().phi(t), rtol=1e-15)
    np.testing.assert_allclose(LpSurrogate(p=1.0).derivative(t), 1.0)
    np.testing.assert_allclose(LpSurrogate(p=1.0).quad_weights(t[1:]), L1Surrogate().quad_weights(t[1:]))


def test_closed_forms():
    """Values at hand-picked points: 000 eq. 30 (exp), AROM's log, 002 Prop. 3 (lp weights)."""
    e = ExpSurrogate(alpha=2.0)
    assert e.phi(np.array([1.0]))[0] == pytest.approx(1 - math.exp(-2))
    assert e.derivative(np.array([1.0]))[0] == pytest.approx(2 * math.exp(-2))
    assert e.dc_split().grad_h(np.array([1.0]))[0] == pytest.approx(2 * (1 - math.exp(-2)))  # 000 eq. 40
    g = LogSurrogate(eps=0.5)
    assert g.phi(np.array([1.5]))[0] == pytest.approx(math.log(2.0) - math.log(0.5))
    assert g.quad_weights(np.array([1.5]))[0] == pytest.approx(1 / (1.5 * 2.0))
    assert LpSurrogate(p=0.5).quad_weights(np.array([4.0]))[0] == pytest.approx(4.0 ** -1.5)  # |w|^-(2-p)
    assert L0Surrogate().quad_weights(np.array([0.5]))[0] == pytest.approx(4.0)  # 002 eq. 9: 1/|w|^2


@pytest.mark.parametrize("cls, bad", [(ExpSurrogate, {"alpha": 0.0}), (ExpSurrogate, {"alpha": -1.0}),
                                      (LogSurrogate, {"eps": 0.0}), (LpSurrogate, {"p": -0.1}),
                                      (LpSurrogate, {"p": 1.5})])
def test_invalid_parameters(cls, bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        cls(**bad)
