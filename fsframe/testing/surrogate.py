"""Conformance checks of surrogates: :func:`check_surrogate` judges ``phi`` and its declared
models (derivative, DC split, EM weights) by finite differences and the definition of a concave
penalty, never by the surrogate's own code."""

from __future__ import annotations

import math
from typing import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from ..surrogates.base import CAPABILITIES, Surrogate
from ._util import EPS as _EPS
from ._util import fail as _fail
from ._util import where as _where
from .oracles import em_weights_for

__all__ = ["check_surrogate", "surrogate_checks", "DEFAULT_GRID"]

DEFAULT_GRID = np.unique(np.concatenate([
    [0.0], np.logspace(-6, 3, 46), np.linspace(0.05, 5.0, 100),
]))
"""Points of ``[0, 1000]`` at which :func:`check_surrogate` evaluates ``phi`` by default."""


def _fd_step(t: NDArray) -> NDArray:
    """``1e-5 max(t, 1e-3)``, rounded so that ``t + h`` is exact (no error in the step itself)."""
    h = 1e-5 * np.maximum(t, 1e-3)
    return (t + h) - t


def _central(f: Callable, d: NDArray, t: NDArray, h: NDArray, rtol: float) -> tuple[NDArray, NDArray]:
    """``(ok, D(h))``: ``d`` equals the central difference ``D(h)`` of ``f`` at ``t`` within
    ``rtol`` plus what the differences cannot resolve (see :func:`_check_fd`)."""
    fp, fm = f(t + h), f(t - h)
    fp2, fm2 = f(t + 2 * h), f(t - 2 * h)
    d1 = (fp - fm) / (2 * h)
    d2 = (fp2 - fm2) / (4 * h)
    scale = np.maximum.reduce([np.abs(fp), np.abs(fm), np.abs(fp2), np.abs(fm2), np.ones_like(t)])
    atol = 16 * _EPS * scale / h + 2 * np.abs(d1 - d2)
    return np.abs(d - d1) <= atol + rtol * np.abs(d1), d1


def _at_kink(f: Callable, d: NDArray, t: NDArray, h: NDArray, s: NDArray, rtol: float) -> NDArray:
    """Where ``f`` has a kink at ``t`` (``f'`` jumps), ``d`` between its one-sided derivatives.

    A kink shows as a jump ``|L(x) - R(x)|`` between the one-sided differences
    ``L(x) = (f(t) - f(t - x)) / x`` and ``R(x) = (f(t + x) - f(t)) / x`` that does not shrink with
    the step: at ``x = s = h / 64`` it keeps at least half its size at ``h`` (a smooth ``f`` has
    ``|L - R| ~ x |f''|``, 64 times smaller) and exceeds rounding. There any value between the
    one-sided derivatives is a valid (super)gradient; the bounds are ``L(h)`` and ``R(h)`` widened
    by their truncation errors ``2 |L(h) - L(2h)|``, ``2 |R(h) - R(2h)|``, rounding and ``rtol``."""
    f0 = f(t)
    fl, fr, fl2, fr2 = f(t - h), f(t + h), f(t - 2 * h), f(t + 2 * h)
    L1, R1 = (f0 - fl) / h, (fr - f0) / h
    L2, R2 = (f0 - fl2) / (2 * h), (fr2 - f0) / (2 * h)
    Ls, Rs = (f0 - f(t - s)) / s, (f(t + s) - f0) / s
    scale = np.maximum.reduce([np.abs(f0), np.abs(fl2), np.abs(fr2), np.ones_like(t)])
    jump = np.abs(Ls - Rs)
    kink = (jump >= 0.5 * np.abs(L1 - R1)) & (jump > 64 * _EPS * scale / s + rtol * np.maximum(np.abs(Ls), np.abs(Rs)))
    eL, eR = 2 * np.abs(L1 - L2), 2 * np.abs(R1 - R2)
    pad = 16 * _EPS * scale / h + rtol * np.abs(d)
    lo = np.minimum(L1 - eL, R1 - eR) - pad
    hi = np.maximum(L1 + eL, R1 + eR) + pad
    return kink & (lo <= d) & (d <= hi)


def _check_fd(who: str, what: str, f: Callable, df: Callable, t: NDArray, rtol: float = 1e-7) -> None:
    """``df(t)`` equals the derivative of ``f`` at ``t > 0`` to ``rtol`` (relative), judged by the
    central differences ``D(h)`` and ``D(2h)`` (points with ``t - 4h >= 0``).

    The tolerance adds what the differences cannot resolve, estimated at each point: the
    truncation error of ``D(h)`` (``h^2 f^(3) / 6`` where ``f`` is smooth, up to ``h |f''| / 4``
    where ``f''`` jumps, as for a C^1 spline), bounded by ``2 |D(h) - D(2h)|``; and the rounding of
    ``f``, ``16 eps max(|f|, 1) / h``. Elsewhere a relative error of ``rtol`` is detected.

    Kinks (a piecewise ``f`` such as the capped L1 ``min(t/a, 1)`` at ``t = a``): a point failing
    at step ``h`` is judged again at ``s = h / 64``, which resolves a kink at distance ``>= s/2``
    from ``t``; a kink closer than that, or at ``t`` itself, is recognised by its one-sided
    differences (:func:`_at_kink`) and ``df(t)`` may be any value between the left and the right
    derivative (a one-sided derivative included)."""
    h = _fd_step(t)
    t = t[t > 4 * h]
    if not t.size:
        return
    h = _fd_step(t)
    d = np.asarray(df(t), dtype=float)
    ok, d1 = _central(f, d, t, h, rtol)
    if not ok.all():
        i = np.flatnonzero(~ok)
        ti, hi = t[i], h[i]
        si = (ti + hi / 64) - ti
        fine, _ = _central(f, d[i], ti, si, rtol)
        ok[i] = fine | _at_kink(f, d[i], ti, hi, si, rtol)
    if not ok.all():
        bad = ~ok
        _fail(who, f"{what} disagrees with the central finite difference at t, {what}, fd = {_where(bad, t, d, d1)} "
                   "(and t is no kink of phi with the derivative between the one-sided ones)")


def _check_right_derivative_at_0(who: str, phi: Callable, d0: float) -> None:
    """The forward differences ``(phi(h) - phi(0)) / h`` at ``h = 1e-8, 1e-10, 1e-12`` converge to
    ``d0``: each lies within its own truncation error (``|phi(2h) - 2 phi(h) + phi(0)| / h``, about
    ``h |phi''(0)|``), rounding, and ``1e-6`` relative of ``d0``. A ``phi`` with an infinite slope
    at 0 (``sqrt``) has differences growing like ``h^(-1/2)``: they fail at the smaller steps."""
    f0 = float(phi(np.zeros(1))[0])
    for hh in (1e-8, 1e-10, 1e-12):
        f1, f2 = phi(np.array([hh, 2 * hh]))
        fwd = (f1 - f0) / hh
        trunc = abs(f2 - 2 * f1 + f0) / hh
        rounding = 16 * _EPS * max(abs(f1), abs(f2), 1.0) / hh
        if not abs(d0 - fwd) <= 1e-6 * abs(d0) + trunc + rounding:
            _fail(who, f"derivative(0) = {d0!r} is not the right derivative: (phi(h) - phi(0)) / h = {fwd!r} "
                       f"at h = {hh:g} (truncation error {trunc:.3g})")


def _check_nonincreasing(who: str, what: str, t: NDArray, v: NDArray) -> None:
    v = np.asarray(v, dtype=float)
    a, b = v[:-1], v[1:]
    with np.errstate(invalid="ignore"):
        bad = ~((b <= a) | np.isclose(a, b, rtol=1e-12, atol=0) | (np.isinf(a) & (a > 0)))
    if bad.any():
        _fail(who, f"{what} increases between t = {_where(bad, t[:-1], t[1:])}")


def _midpoints(t: NDArray, rng: np.random.Generator, n: int = 400) -> tuple[NDArray, NDArray]:
    """Random pairs of points whose midpoint is representable strictly between them."""
    a, b = t[rng.integers(0, t.size, n)], t[rng.integers(0, t.size, n)]
    m = 0.5 * (a + b)
    keep = (a == b) | ((m > np.minimum(a, b)) & (m < np.maximum(a, b)))
    return a[keep], b[keep]


def _check_secants(who: str, what: str, t: NDArray, v: NDArray, *, concave: bool) -> None:
    """The secant slopes of ``v = f(t)`` between consecutive points of the grid ``t`` are
    non-increasing (``concave``) or non-decreasing: a local test of concavity (convexity) at the
    grid's own resolution, which random midpoints miss for a small local bump. Each slope is
    allowed its rounding, ``16 eps max(|f|, 1) / dt`` plus ``4 eps`` relative."""
    v = np.asarray(v, dtype=float)
    dt = np.diff(t)
    with np.errstate(over="ignore", invalid="ignore"):
        slope = np.diff(v) / dt
        err = 16 * _EPS * np.maximum.reduce([np.abs(v[:-1]), np.abs(v[1:]), np.ones_like(dt)]) / dt \
            + 4 * _EPS * np.abs(slope)
        rise = slope[1:] - slope[:-1] if concave else slope[:-1] - slope[1:]
        bad = np.isfinite(rise) & (rise > err[1:] + err[:-1])
    if bad.any():
        kind = "concave" if concave else "convex"
        _fail(who, f"{what} is not {kind}: its secant slopes on t, t', t'' = {_where(bad, t[:-2], t[1:-1], t[2:])} "
                   f"are {_where(bad, slope[:-1], slope[1:])}")


def _check_midpoint(who: str, what: str, f: Callable, a: NDArray, b: NDArray, *, concave: bool) -> None:
    fa, fb, fm = f(a), f(b), f(0.5 * (a + b))
    mean = 0.5 * (fa + fb)
    tol = 1e-9 * (1.0 + np.abs(fa) + np.abs(fb)) + 64 * _EPS * (np.abs(fa) + np.abs(fb))
    bad = fm < mean - tol if concave else fm > mean + tol
    if bad.any():
        kind = "concave" if concave else "convex"
        _fail(who, f"{what} is not midpoint-{kind} at a, b = {_where(bad, a, b)}")


def surrogate_checks(surrogate: Surrogate) -> list[str]:
    """The checks :func:`check_surrogate` runs on ``surrogate`` (its ``checks=`` names them):
    ``"phi"`` always, each model of ``surrogate.capabilities()``, and ``"lp_norm"`` when the
    surrogate provides it."""
    caps = surrogate.capabilities()
    return ["phi"] + [c for c in CAPABILITIES if c in caps] + (["lp_norm"] if "lp_norm" in surrogate.provides() else [])


def check_surrogate(surrogate: Surrogate, t: Iterable[float] | None = None, *, seed: int = 0,
                    quad_weights: Callable | None = None, checks=None) -> list[str]:
    """Check ``surrogate`` against the definition of an L0 surrogate and its declared models
    (``checks``: a subset of :func:`surrogate_checks`, all by default).

    ``phi`` (always): ``phi(0) = 0``, ``phi >= 0``, non-decreasing and midpoint-concave on ``[0, inf)``,
    ``phi`` on an array equals ``phi`` on each scalar, and ``value(w) = sum_j phi(|w_j|)`` (so
    ``value`` is symmetric in ``w``). For each capability in ``surrogate.capabilities()``:

    * ``derivative``: equals the central finite difference of ``phi`` to ``1e-7`` relative (beyond
      what the differences themselves resolve, see :func:`_check_fd`); ``>= 0``, non-increasing;
      where ``derivative(0)`` is finite, the forward differences of ``phi`` at ``h = 1e-8, 1e-10,
      1e-12`` converge to it (the right derivative);
    * ``dc_split``: ``g - h == phi``; ``g`` and ``h`` midpoint-convex, ``h(0) = 0``,
      ``grad_h`` equals the finite difference of ``h`` and is ``>= 0``;
    * ``quad_weights``: ``inf`` at 0, finite and ``>= 0`` and non-increasing for ``t > 0``, and equal
      (``rtol = 1e-9``) to the weights the EM loop assumes, the first rule that applies:

      1. ``quad_weights=`` given: that declared form ``q(t)``;
      2. ``lp`` (and subclasses): ``t^(p-2)`` = ``phi'(t) / (p t)``, 002 Prop. 3 with ``gamma = 1``;
         ``l0`` (and subclasses): ``1/t^2`` (002 eq. 9) — fsframe's EM monitors no potential for
         these two, see :class:`~fsframe.loops.EM`;
      3. with a ``derivative``: ``phi'(t) / t`` exactly (factor 1: EM's monitored potential
         ``loss + 2 sum phi`` is a majoriser only for that factor);
      4. without one: ``phi(0+) / t^2`` if ``phi`` is constant on ``(0, inf)`` (the zero-norm limit
         of ``t^(p-2)``), otherwise ``q(t) t`` equals the central finite difference of ``phi``;

    * ``lp_norm`` (a surrogate providing it, for DSO-FS's ``l_{2,p}`` norm): ``phi(t) = t**p`` with
      its attribute ``0 < p <= 1``.

    Parameters
    ----------
    t : iterable of float >= 0, optional
        Evaluation points (default :data:`DEFAULT_GRID`); 0 is always added.
    quad_weights : callable, optional
        The EM weights ``q(t)`` (``t > 0``) the surrogate declares, for a convention other than
        ``phi'(t)/t``; note that EM's descent check assumes ``phi'(t)/t``.

    Returns the names of the checks that ran.
    """
    who = f"surrogate {surrogate}"
    pts = DEFAULT_GRID if t is None else np.asarray(list(t), dtype=float).ravel()
    if np.any(~np.isfinite(pts)) or np.any(pts < 0):
        raise ValueError("check_surrogate: evaluation points must be finite and >= 0")
    pts = np.unique(np.concatenate([[0.0], pts]))
    rng = np.random.default_rng(seed)
    names = surrogate_checks(surrogate)
    checks = names if checks is None else list(checks)
    unknown = set(checks) - set(names)
    if unknown:
        raise ValueError(f"check_surrogate: unknown checks {sorted(unknown)} for {surrogate}; its checks are {names}")
    with np.errstate(over="ignore", divide="ignore"):  # phi'(t)/t overflows at tiny t, by design
        return _check_surrogate(surrogate, who, pts, rng, quad_weights, checks)


def _em_weights_rule(surrogate: Surrogate, caps: frozenset, phi: Callable, pos: NDArray,
                     declared: Callable | None) -> tuple[str, Callable | None]:
    """``(check name, expected q(t))`` for :func:`check_surrogate`; ``None``: ``q(t) t = fd of phi``.

    The declared form first, then the convention registered for the surrogate's class
    (:func:`~fsframe.testing.register_em_weights`: ``lp``, ``l0``), then ``phi'(t)/t``."""
    if declared is not None:
        return "quad_weights = declared form", lambda x: np.asarray(declared(x), dtype=float)
    registered = em_weights_for(surrogate)
    if registered is not None:
        return registered
    if "derivative" in caps:
        return "quad_weights = phi'(t)/t", lambda x: np.asarray(surrogate.derivative(x), dtype=float) / x
    v = phi(pos)
    if pos.size and v[0] > 0 and np.all(v == v[0]):
        return "quad_weights = phi(0+)/t^2 (zero-norm limit)", lambda x: v[0] / (x * x)
    return "quad_weights = phi'(t)/t (finite differences)", None


def _check_surrogate(surrogate: Surrogate, who: str, pts: NDArray, rng: np.random.Generator,
                     declared_quad: Callable | None, checks) -> list[str]:
    phi = lambda x: np.asarray(surrogate.phi(np.asarray(x, dtype=float)), dtype=float)  # noqa: E731
    v = phi(pts)
    a, b = _midpoints(pts, rng)
    ran = _check_phi(surrogate, who, pts, rng, phi, v, a, b) if "phi" in checks else []
    caps = surrogate.capabilities()
    pos = pts[pts > 0]
    return ran + _check_models(surrogate, who, pts, pos, phi, v, a, b, caps, declared_quad, checks)


def _check_phi(surrogate: Surrogate, who: str, pts: NDArray, rng: np.random.Generator, phi, v, a, b) -> list[str]:
    """The definition of an L0 surrogate: ``phi(0) = 0``, ``phi >= 0``, monotone, concave, the
    same on scalars and arrays, ``value = sum phi``."""
    ran = []
    if v.shape != pts.shape:
        _fail(who, f"phi of an array of shape {pts.shape} has shape {v.shape}")
    if not np.all(np.isfinite(v)):
        _fail(who, f"phi is not finite at t = {_where(~np.isfinite(v), pts)}")
    if v[0] != 0.0:
        _fail(who, f"phi(0) = {v[0].item()!r}, must be 0")
    if np.any(v < 0):
        _fail(who, f"phi < 0 at t = {_where(v < 0, pts)}")
    ran += ["phi(0)=0", "phi>=0"]
    dv = np.diff(v)
    bad = dv < -1e-12 * np.maximum(1.0, np.abs(v[1:]))
    if bad.any():
        _fail(who, f"phi decreases between t = {_where(bad, pts[:-1], pts[1:])}")
    ran.append("monotone")
    _check_midpoint(who, "phi", phi, a, b, concave=True)
    _check_secants(who, "phi", pts, v, concave=True)
    ran.append("midpoint-concave")
    scalars = np.array([float(surrogate.phi(np.float64(x))) for x in pts[:: max(1, pts.size // 25)]])
    if not np.allclose(scalars, v[:: max(1, pts.size // 25)], rtol=1e-12, atol=0):
        _fail(who, "phi on scalars differs from phi on an array")
    w = rng.choice(pts, size=min(pts.size, 30)) * rng.choice([-1.0, 1.0], size=min(pts.size, 30))
    expect = math.fsum(float(surrogate.phi(np.float64(abs(x)))) for x in w)
    for sign in (1.0, -1.0):
        got = surrogate.value(sign * w)
        if not math.isclose(got, expect, rel_tol=1e-10, abs_tol=1e-12):
            _fail(who, f"value({'-' if sign < 0 else ''}w) = {got!r}, sum of phi(|w_j|) = {expect!r}")
    ran.append("value=sum phi")
    return ran


def _check_models(surrogate, who, pts, pos, phi, v, a, b, caps, declared_quad, checks) -> list[str]:
    ran = []
    if "derivative" in checks:
        d = np.asarray(surrogate.derivative(pts), dtype=float)
        if np.any(np.isnan(d)) or np.any(d < 0):
            _fail(who, f"derivative is NaN or < 0 at t = {_where(np.isnan(d) | (d < 0), pts)}")
        if not np.all(np.isfinite(d[1:])):
            _fail(who, f"derivative is not finite at t = {_where(~np.isfinite(d[1:]), pts[1:])}")
        _check_nonincreasing(who, "derivative", pts, d)
        _check_fd(who, "derivative", phi, surrogate.derivative, pos)
        if np.isfinite(d[0]):
            _check_right_derivative_at_0(who, phi, float(d[0]))
            ran.append("derivative(0) = right derivative")
        ran += ["derivative=fd", "derivative>=0", "derivative non-increasing"]
    if "dc_split" in checks:
        split = surrogate.dc_split()
        g = lambda x: np.asarray(split.g(np.asarray(x, dtype=float)), dtype=float)  # noqa: E731
        h = lambda x: np.asarray(split.h(np.asarray(x, dtype=float)), dtype=float)  # noqa: E731
        gv, hv = g(pts), h(pts)
        tol = 1e-9 * (1.0 + np.abs(v)) + 64 * _EPS * (np.abs(gv) + np.abs(hv))
        bad = ~(np.abs(gv - hv - v) <= tol)
        if bad.any():
            _fail(who, f"dc_split: g - h != phi at t, g, h, phi = {_where(bad, pts, gv, hv, v)}")
        if hv[0] != 0.0:
            _fail(who, f"dc_split: h(0) = {hv[0].item()!r}, must be 0")
        _check_midpoint(who, "dc_split g", g, a, b, concave=False)
        _check_midpoint(who, "dc_split h", h, a, b, concave=False)
        _check_secants(who, "dc_split g", pts, gv, concave=False)
        _check_secants(who, "dc_split h", pts, hv, concave=False)
        gh = np.asarray(split.grad_h(pts), dtype=float)
        if np.any(~np.isfinite(gh)) or np.any(gh < 0):
            _fail(who, f"dc_split: grad_h is not finite and >= 0 at t = {_where(~(gh >= 0) | ~np.isfinite(gh), pts)}")
        _check_fd(who, "dc_split grad_h", h, split.grad_h, pos)
        ran += ["dc g-h=phi", "dc g convex", "dc h convex", "dc grad_h=fd"]
    if "quad_weights" in checks:
        q = np.asarray(surrogate.quad_weights(pts), dtype=float)
        if not (np.isinf(q[0]) and q[0] > 0):
            _fail(who, f"quad_weights(0) = {q[0].item()!r}, must be inf (the group is fixed at zero)")
        qp = q[1:]
        # phi'(t)/t overflows for subnormal-scale t (t^-2 at t < 1e-154): finiteness from 1e-100 on
        bad = ~(qp >= 0) | (~np.isfinite(qp) & (pos >= 1e-100))
        if bad.any():
            _fail(who, f"quad_weights is not finite and >= 0 at t = {_where(bad, pos)}")
        _check_nonincreasing(who, "quad_weights", pos, qp)
        ran.append("quad_weights finite, non-increasing")
        name, expect = _em_weights_rule(surrogate, caps, phi, pos, declared_quad)
        if expect is None:
            _check_fd(who, "quad_weights(t) * t", phi, lambda x: np.asarray(surrogate.quad_weights(x), dtype=float) * x,
                      pos[pos >= 1e-100])
        else:
            e = np.asarray(expect(pos), dtype=float)
            # compare where the expected weight is representable (phi'(t)/t overflows near 1e-154)
            live = np.isfinite(e) & (e < 1e300) & np.isfinite(qp)
            bad = live & ~np.isclose(qp, e, rtol=1e-9, atol=0.0)
            if bad.any():
                _fail(who, f"quad_weights disagrees with the EM convention {name!r} at t, q(t), expected = "
                           f"{_where(bad, pos, qp, e)} (another convention: pass quad_weights= or "
                           "register it with fsframe.testing.register_em_weights)")
        ran.append(name)
    if "lp_norm" in checks:
        p = getattr(surrogate, "p", None)
        if not (isinstance(p, (int, float)) and 0 < p <= 1):
            _fail(who, f"provides lp_norm but its exponent p = {p!r} is not in (0, 1]")
        expect = pts ** float(p)
        bad = ~np.isclose(v, expect, rtol=1e-12, atol=0.0)
        if bad.any():
            _fail(who, f"provides lp_norm but phi(t) != t**{p} at t, phi, t**p = {_where(bad, pts, v, expect)}")
        ran.append("lp_norm: phi = t**p")
    return ran


