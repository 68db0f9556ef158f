"""The surrogates' models at *drawn* parameters, not only at the grid of ``test_conformance.py``:
``alpha`` in [0.1, 50] (exp), ``eps`` in [1e-4, 1] (log), ``p`` in [0, 1] (lp), ``lam``, ``a`` (the
example plugin's SCAD, when installed), with evaluation points drawn on each surrogate's own scale.

Two checks per draw: the public conformance kit (``check_surrogate``), and an independent
derivative check written here — ``phi'`` against the central difference of ``phi``, ``grad_h``
against that of ``h`` — with a tolerance that follows the step ``h``: the truncation error
``h^2 |f'''| / 6`` (``f'''`` estimated from second differences of the claimed derivative on
``[t - 2h, t + 2h]``, doubled) plus the rounding of ``f``, ``8 eps max|f| / h``, plus ``1e-8``
relative. Where the rounding term dominates (``phi`` flat at 1: large ``alpha t``, tiny ``p``) the
check is weak but sound; elsewhere it resolves a relative error of about 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fsframe.plugins import get_registry
from fsframe.testing import check_surrogate

EPS = np.finfo(float).eps

# name -> (parameter strategy, the scale of t on which phi bends)
PARAMS = {
    "exp": (st.fixed_dictionaries({"alpha": st.floats(0.1, 50.0)}), lambda s: 1.0 / s.alpha),
    "log": (st.fixed_dictionaries({"eps": st.floats(1e-4, 1.0)}), lambda s: s.eps),
    "lp": (st.fixed_dictionaries({"p": st.floats(0.0, 1.0)}), lambda s: 1.0),
    "l0": (st.just({}), lambda s: 1.0),
    "l1": (st.just({}), lambda s: 1.0),
    # the example plugin's SCAD (Fan & Li): C^1 with kinks of phi'' at lam and a lam
    "scad": (st.fixed_dictionaries({"lam": st.floats(0.01, 10.0), "a": st.floats(2.05, 10.0)}),
             lambda s: s.lam),
}
SMALL = settings(max_examples=40)


def test_every_surrogate_has_a_parameter_strategy():
    missing = sorted(set(get_registry().names("surrogate")) - set(PARAMS))
    assert not missing, f"registered surrogates without a parameter strategy in {__file__}: {missing}"


def _registered(names):
    """Those of ``names`` registered here (SCAD only with the example plugin installed)."""
    have = set(get_registry().names("surrogate"))
    return tuple(n for n in names if n in have)


def assert_fd(f, df, t, what):
    """``df(t)`` is the derivative of the smooth ``f`` at ``t > 0``, to the step-aware tolerance
    of the module docstring. Step ``h = 1e-4 t`` (``t - 2h > 0``)."""
    t = np.asarray(t, dtype=float)
    h = 1e-4 * t
    fp, fm = f(t + h), f(t - h)
    fd = (fp - fm) / (2 * h)
    d = np.asarray(df(t), dtype=float)
    grid = [np.asarray(df(t + k * h), dtype=float) for k in (-2, -1, 0, 1, 2)]
    d3 = np.max([np.abs(grid[k - 1] - 2 * grid[k] + grid[k + 1]) for k in (1, 2, 3)], axis=0) / h**2
    tol = 2 * h**2 * d3 / 6 + 8 * EPS * np.maximum(np.abs(fp), np.abs(fm)) / h + 1e-8 * np.abs(d)
    bad = ~(np.abs(fd - d) <= tol)
    assert not bad.any(), f"{what}: at t = {t[bad]}, claimed {d[bad]}, central difference {fd[bad]}, tol {tol[bad]}"


def case(name):
    """A strategy for ``(surrogate, points)``: parameters drawn from ``PARAMS[name]``, points
    ``u * scale`` with ``u`` in [1e-3, 30] (for exp, ``alpha t`` up to 30: ``phi'`` down to ``alpha e^-30``)."""
    strategy, scale = PARAMS[name]
    cls = get_registry().get("surrogate", name)

    def build(params, u):
        sur = cls(**params)
        return sur, np.array(u) * scale(sur)

    return st.builds(build, strategy, st.lists(st.floats(1e-3, 30.0), min_size=1, max_size=12))


def names(which=None):
    return [n for n in _registered(PARAMS) if which is None or n in which]


@pytest.mark.parametrize("name", names())
@SMALL
@given(data=st.data())
def test_conformance_at_drawn_parameters(name, data):
    """The kit's checks (definition of a concave penalty, each declared model) at drawn parameters,
    at points on the surrogate's scale and on the kit's default grid."""
    sur, t = data.draw(case(name))
    caps = sur.capabilities()
    for pts in (t, None):
        ran = check_surrogate(sur, pts)
        assert ("derivative=fd" in ran) == ("derivative" in caps)
        assert ("dc g-h=phi" in ran) == ("dc_split" in caps)


@pytest.mark.parametrize("name", names(("exp", "log", "lp", "l1")))
@SMALL
@given(data=st.data())
def test_derivatives_match_finite_differences(name, data):
    """``phi'`` and the DC split's ``grad_h`` (000 eqs. 37-40) against central differences, and the
    split itself: ``g - h = phi``, ``g(t) = lin t``."""
    sur, t = data.draw(case(name))
    caps = sur.capabilities()
    phi = lambda x: np.asarray(sur.phi(x), dtype=float)  # noqa: E731
    if "derivative" in caps:
        assert_fd(phi, sur.derivative, t, f"{sur} derivative")
    else:
        assert name == "lp" and sur.p == 0
    if "dc_split" in caps:
        split = sur.dc_split()
        assert_fd(lambda x: np.asarray(split.h(x), dtype=float), split.grad_h, t, f"{sur} grad_h")
        np.testing.assert_allclose(split.g(t) - split.h(t), phi(t), rtol=1e-9, atol=1e-12 * np.max(split.g(t)))
        np.testing.assert_allclose(split.g(t), split.lin * t, rtol=1e-12)


@pytest.mark.parametrize("name", names(("exp", "log", "lp")))
@SMALL
@given(data=st.data())
def test_em_weights_are_the_derivative_over_t(name, data):
    """EM weights (002 eqs. 7-9, Prop. 3): ``phi'(t) / t`` for exp and log; ``t^(p-2)`` for lp —
    ``phi'(t) / (p t)`` for ``p > 0``, the zero-norm's ``1/t^2`` at ``p = 0``."""
    sur, t = data.draw(case(name))
    q = np.asarray(sur.quad_weights(t), dtype=float)
    if name == "lp":
        np.testing.assert_allclose(q, t ** (sur.p - 2.0), rtol=1e-12)
        if sur.p > 0:
            np.testing.assert_allclose(q * t * sur.p, sur.derivative(t), rtol=1e-12)
    else:
        np.testing.assert_allclose(q * t, sur.derivative(t), rtol=1e-12)
    assert np.isinf(sur.quad_weights(np.zeros(1))[0])


def _smoothed_lp_exact(t: float, p: float, eps: float) -> float:
    """``(t + eps)^p - eps^p = eps^p (exp(p ln(1 + t/eps)) - 1)`` in decimal arithmetic, with
    enough digits that ``1 + t/eps`` keeps every digit of ``t`` (no cancellation left)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        x = Decimal(t) / Decimal(eps)
        ctx.prec = 60 + max(0, -x.adjusted())
        x = Decimal(t) / Decimal(eps)
        y = Decimal(p) * (1 + x).ln()
        return float(Decimal(eps) ** Decimal(p) * (y.exp() - 1))


@SMALL
@given(p=st.floats(1e-3, 1.0), eps=st.floats(1e-4, 1.0),
       t=st.lists(st.one_of(st.floats(1e-300, 1e-200), st.floats(1e-16, 1e-6), st.floats(1e-6, 1e3)),
                  min_size=1, max_size=8))
def test_smoothed_lp_is_accurate_at_every_scale(p, eps, t):
    """The smoothed ``lp`` (``eps > 0``) to a few units in the last place at every ``t``, tiny
    ones included, on arrays and scalars alike. Computed as ``(t + eps)**p - eps**p`` it lost
    every digit below the rounding of ``eps**p``: a relative error of 1e-6 at ``t = 1e-12``
    (``p = 0.1``, ``eps = 1e-3``), 1 below ``t = 1e-16``; numpy's scalar and array powers round
    differently, so the conformance kit saw "phi on scalars differs from phi on an array"."""
    from fsframe.surrogates import LpSurrogate

    sur = LpSurrogate(p=p, eps=eps)
    t = np.array(t)
    exact = np.array([_smoothed_lp_exact(x, p, eps) for x in t])
    np.testing.assert_allclose(sur.phi(t), exact, rtol=1e-13, atol=0)
    np.testing.assert_allclose([float(sur.phi(np.float64(x))) for x in t], exact, rtol=1e-13, atol=0)
