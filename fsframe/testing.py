"""Public conformance kit for fsframe components (after scikit-learn's ``check_estimator`` and
CVXPY's ``StandardTestLPs``).

Plugin authors run these in their own CI::

    from fsframe.testing import check_surrogate, check_backend, check_loop, check_formulation

    def test_my_surrogate():
        check_surrogate(MySurrogate(a=2.0))

Each ``check_*`` raises :class:`AssertionError` naming the component and the property that
failed, and returns the names of the checks it ran (a check runs only for the capabilities the
component declares). Every expected value is derived independently of the code under test: by
finite differences, by the definition of a concave penalty, by a hand-solved problem
(:class:`StandardProblems`) or by re-reading the Pyomo model.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Callable, Iterable

import attrs
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from .enums import ProblemClass, Status
from .backends.base import Backend, BackendSession, SolveOptions, SolveResult
from .canonical import ProblemData
from .compiler import CompiledModel, compile_model
from .errors import ConvergenceWarning, InvalidOptionError, SolverFailedError
from .formulation import Formulation
from .loops.base import OuterLoop
from .surrogates.base import Surrogate

__all__ = [
    "check_surrogate",
    "check_formulation",
    "check_backend",
    "check_loop",
    "check_fit_result",
    "parametrize_with_checks",
    "StandardProblem",
    "StandardProblems",
    "FailingBackend",
    "hinge_loss",
    "mpm_margin_loss",
    "toy_data",
    "DEFAULT_GRID",
]

_EPS = np.finfo(float).eps

DEFAULT_GRID = np.unique(np.concatenate([
    [0.0], np.logspace(-6, 3, 46), np.linspace(0.05, 5.0, 100),
]))
"""Points of ``[0, 1000]`` at which :func:`check_surrogate` evaluates ``phi`` by default."""


def _fail(who: str, what: str) -> None:
    raise AssertionError(f"{who}: {what}")


def _where(mask: NDArray, *arrays) -> str:
    i = int(np.flatnonzero(mask)[0])
    return ", ".join(f"{np.ravel(a)[i].item()!r}" for a in arrays)


# =============================================================================== surrogates
def _fd_step(t: NDArray) -> NDArray:
    """``1e-5 max(t, 1e-3)``, rounded so that ``t + h`` is exact (no error in the step itself)."""
    h = 1e-5 * np.maximum(t, 1e-3)
    return (t + h) - t


def _check_fd(who: str, what: str, f: Callable, df: Callable, t: NDArray, rtol: float = 1e-7) -> None:
    """``df(t)`` equals the derivative of ``f`` at ``t > 0`` to ``rtol`` (relative), judged by the
    central differences ``D(h)`` and ``D(2h)`` (points with ``t - 4h >= 0``).

    The tolerance adds what the differences cannot resolve, estimated at each point: the
    truncation error of ``D(h)`` (``h^2 f^(3) / 6`` where ``f`` is smooth, up to ``h |f''| / 4``
    where ``f''`` jumps, as for a C^1 spline), bounded by ``2 |D(h) - D(2h)|``; and the rounding of
    ``f``, ``16 eps max(|f|, 1) / h``. Elsewhere a relative error of ``rtol`` is detected."""
    h = _fd_step(t)
    t = t[t > 4 * h]
    if not t.size:
        return
    h = _fd_step(t)
    fp, fm = f(t + h), f(t - h)
    fp2, fm2 = f(t + 2 * h), f(t - 2 * h)
    d1 = (fp - fm) / (2 * h)
    d2 = (fp2 - fm2) / (4 * h)
    d = np.asarray(df(t), dtype=float)
    scale = np.maximum.reduce([np.abs(fp), np.abs(fm), np.abs(fp2), np.abs(fm2), np.ones_like(t)])
    atol = 16 * _EPS * scale / h + 2 * np.abs(d1 - d2)
    bad = ~(np.abs(d - d1) <= atol + rtol * np.abs(d1))
    if bad.any():
        _fail(who, f"{what} disagrees with the central finite difference at t, {what}, fd = {_where(bad, t, d, d1)}")


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


def _check_midpoint(who: str, what: str, f: Callable, a: NDArray, b: NDArray, *, concave: bool) -> None:
    fa, fb, fm = f(a), f(b), f(0.5 * (a + b))
    mean = 0.5 * (fa + fb)
    tol = 1e-9 * (1.0 + np.abs(fa) + np.abs(fb)) + 64 * _EPS * (np.abs(fa) + np.abs(fb))
    bad = fm < mean - tol if concave else fm > mean + tol
    if bad.any():
        kind = "concave" if concave else "convex"
        _fail(who, f"{what} is not midpoint-{kind} at a, b = {_where(bad, a, b)}")


def check_surrogate(surrogate: Surrogate, t: Iterable[float] | None = None, *, seed: int = 0,
                    quad_weights: Callable | None = None) -> list[str]:
    """Check ``surrogate`` against the definition of an L0 surrogate and its declared models.

    Always: ``phi(0) = 0``, ``phi >= 0``, non-decreasing and midpoint-concave on ``[0, inf)``,
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
         of ``t^(p-2)``), otherwise ``q(t) t`` equals the central finite difference of ``phi``.

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
    with np.errstate(over="ignore", divide="ignore"):  # phi'(t)/t overflows at tiny t, by design
        return _check_surrogate(surrogate, who, pts, rng, quad_weights)


def _em_weights_rule(surrogate: Surrogate, caps: frozenset, phi: Callable, pos: NDArray,
                     declared: Callable | None) -> tuple[str, Callable | None]:
    """``(check name, expected q(t))`` for :func:`check_surrogate`; ``None``: ``q(t) t = fd of phi``."""
    from .surrogates.lp import L0Surrogate, LpSurrogate

    if declared is not None:
        return "quad_weights = declared form", lambda x: np.asarray(declared(x), dtype=float)
    if isinstance(surrogate, LpSurrogate):
        return "quad_weights = t^(p-2) (lp convention)", lambda x: x ** (surrogate.p - 2.0)
    if isinstance(surrogate, L0Surrogate):
        return "quad_weights = 1/t^2 (l0 convention)", lambda x: 1.0 / (x * x)
    if "derivative" in caps:
        return "quad_weights = phi'(t)/t", lambda x: np.asarray(surrogate.derivative(x), dtype=float) / x
    v = phi(pos)
    if pos.size and v[0] > 0 and np.all(v == v[0]):
        return "quad_weights = phi(0+)/t^2 (zero-norm limit)", lambda x: v[0] / (x * x)
    return "quad_weights = phi'(t)/t (finite differences)", None


def _check_surrogate(surrogate: Surrogate, who: str, pts: NDArray, rng: np.random.Generator,
                     declared_quad: Callable | None = None) -> list[str]:
    phi = lambda x: np.asarray(surrogate.phi(np.asarray(x, dtype=float)), dtype=float)  # noqa: E731
    ran = []

    v = phi(pts)
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
    a, b = _midpoints(pts, rng)
    _check_midpoint(who, "phi", phi, a, b, concave=True)
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

    caps = surrogate.capabilities()
    pos = pts[pts > 0]
    if "derivative" in caps:
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
    if "dc_split" in caps:
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
        gh = np.asarray(split.grad_h(pts), dtype=float)
        if np.any(~np.isfinite(gh)) or np.any(gh < 0):
            _fail(who, f"dc_split: grad_h is not finite and >= 0 at t = {_where(~(gh >= 0) | ~np.isfinite(gh), pts)}")
        _check_fd(who, "dc_split grad_h", h, split.grad_h, pos)
        ran += ["dc g-h=phi", "dc g convex", "dc h convex", "dc grad_h=fd"]
    if "quad_weights" in caps:
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
                           f"{_where(bad, pos, qp, e)}")
        ran.append(name)
    return ran


# =============================================================================== toy data, losses
def toy_data() -> tuple[NDArray, NDArray]:
    """Ten points in the plane, separable with margin: ``+1`` at (2,1), (3,1), (2,2), (4,1),
    (3,2) and ``-1`` at their negatives. Only the pair ``±(2, 1)`` constrains ``w >= 0``, so every
    hinge problem on it reduces to the single constraint ``2 w_1 + w_2 >= 1`` (``b = 0``)."""
    P = np.array([[2.0, 1.0], [3.0, 1.0], [2.0, 2.0], [4.0, 1.0], [3.0, 2.0]])
    return np.vstack([P, -P]), np.r_[np.ones(5), -np.ones(5)]


def hinge_loss(C: float) -> Callable[[NDArray, NDArray], float]:
    """``C * sum_i max(0, 1 - y_i f_i)`` in numpy, for ``decision_loss=``."""
    return lambda f, y: float(C * np.sum(np.maximum(0.0, 1.0 - np.asarray(y) * np.asarray(f))))


def mpm_margin_loss() -> Callable[[NDArray, NDArray], float]:
    """``decision_loss=`` for the MPM family (``mpm``): the violation of the margin rows of paper
    000 eq. 45, ``w'mu_1 - b >= 1`` and ``b - w'mu_2 >= 1`` (class ``+1`` is 000's ``X_1``), read
    off the decision function ``f = X w - b``: ``f`` is affine, so its mean over class ``k`` is
    ``w'mu_k - b``. Returns ``max(0, 1 - mean f[y = +1]) + max(0, 1 + mean f[y = -1])``, which is
    0 — the MPM's loss, its objective being the penalty alone — exactly when the rows hold; a
    decision function of the wrong sign gives at least 2."""
    def loss(f, y):
        f, y = np.asarray(f, dtype=float), np.asarray(y)
        return float(max(0.0, 1.0 - f[y > 0].mean()) + max(0.0, 1.0 + f[y < 0].mean()))
    return loss


def _mpm_max_decision(formulation: Formulation):
    """Lanckriet's MPM (``mpm-max``) has the loss ``||F_1'w|| + ||F_2'w||``, not a function of the
    decision values; what they must satisfy: the normalisation ``w'(mu_1 - mu_2) = 1`` (000 eq. 5),
    i.e. ``mean f[+1] - mean f[-1] = 1``, and ``f(mu_1) = kappa* ||F_1'w|| > 0`` (class ``+1`` on
    the positive side)."""
    def check(f, y, model_loss):
        f1, f2 = float(np.mean(f[y > 0])), float(np.mean(f[y < 0]))
        if not (math.isclose(f1 - f2, 1.0, rel_tol=1e-6, abs_tol=1e-6) and f1 > 0):
            return (f"mpm-max decision values: mean f over class +1 minus over class -1 = {f1 - f2!r} (must be 1, "
                    f"000 eq. 5) and mean f over class +1 = {f1!r} (must be > 0)")
        return None
    return check


_DECISION_LOSSES: dict[str, Callable[[Formulation], Callable]] = {
    "hinge": lambda f: hinge_loss(f.C),
    "mpm": lambda f: mpm_margin_loss(),
}
"""Registered formulation name -> ``decision_loss`` for instances of that class (and subclasses)."""

_DECISION_CHECKS: dict[str, Callable[[Formulation], Callable]] = {"mpm-max": _mpm_max_decision}
"""Formulations whose loss is not a function of the decision values: a check of the values only."""


def _builtin(formulation: Formulation, table: dict):
    from .plugins import get_registry

    reg = get_registry()
    names = set(reg.names("formulation"))
    for name, make in table.items():
        if name in names and isinstance(formulation, reg.get("formulation", name)):
            return make(formulation)
    return None


def _decision_loss(formulation: Formulation, given):
    """The ``decision_loss`` callable: ``given``, else the built-in one for the formulation's class,
    else ``None`` (``False`` also gives ``None``)."""
    if given is False:
        return None
    if given is not None and given is not True:
        return given
    return _builtin(formulation, _DECISION_LOSSES)


def _decision_check(formulation: Formulation, given) -> tuple[str, Callable | None]:
    """``(check name, check(f, y, model_loss) -> message or None)`` for :func:`check_formulation`."""
    if given is False:
        return "decision_loss skipped (decision_loss=False)", None
    loss_fn = _decision_loss(formulation, given)
    if loss_fn is not None:
        def check(f, y, model_loss):
            lval = loss_fn(f, y)
            if not math.isclose(lval, model_loss, rel_tol=1e-5, abs_tol=1e-6):
                return f"decision_loss(decision_function(...)) = {lval!r} but the model's loss is {model_loss!r}"
            return None
        return "decision_loss", check
    builtin = _builtin(formulation, _DECISION_CHECKS)
    if builtin is not None:
        return "decision values", builtin
    raise ValueError(
        f"check_formulation: no decision_loss is known for formulation {formulation.name!r} "
        f"({type(formulation).__qualname__}); pass decision_loss=<callable (decision values, y codes) -> loss> "
        "to check decision_function against the model's loss, or decision_loss=False to skip that check "
        "(the skip is listed in the returned check names)")


def _codes(formulation: Formulation, y: NDArray) -> NDArray:
    classes = np.unique(y)
    if formulation.multiclass == "native":
        return np.searchsorted(classes, y)
    if classes.size != 2:
        raise ValueError(f"{formulation.name} is binary: y must have two classes, got {classes.size}")
    return np.where(y == classes[1], 1.0, -1.0)


# =============================================================================== standard problems
def _problem(c, *, A=None, b=None, G=None, h=None, lb=None, ub=None, P=None, offset=0.0, cones=()) -> ProblemData:
    c = np.asarray(c, dtype=float)
    n = c.size
    A = sp.csr_matrix((0, n)) if A is None else sp.csr_matrix(np.asarray(A, dtype=float))
    G = sp.csr_matrix((0, n)) if G is None else sp.csr_matrix(np.asarray(G, dtype=float))
    return ProblemData(
        c=c, A=A, b=np.zeros(0) if b is None else np.asarray(b, dtype=float),
        G=G, h=np.zeros(0) if h is None else np.asarray(h, dtype=float),
        lb=np.full(n, -np.inf) if lb is None else np.asarray(lb, dtype=float),
        ub=np.full(n, np.inf) if ub is None else np.asarray(ub, dtype=float),
        l=G.shape[0] - int(sum(cones)), cones=tuple(cones),
        P=None if P is None else sp.csc_matrix(np.asarray(P, dtype=float)), offset=float(offset))


@attrs.frozen(eq=False)
class StandardProblem:
    """A small problem with a hand-derived answer.

    ``statuses`` are the acceptable statuses (the first is the exact one); ``objective`` and ``x``
    the optimum (``nan`` entries of ``x`` are not unique and not compared); ``coef`` are the
    columns holding the model coefficients ``w`` and ``support`` the expected non-zeros of
    ``w``. ``derivation`` says how the answer was obtained.
    """

    name: str
    data: ProblemData
    statuses: tuple
    objective: float | None = None
    x: NDArray | None = None
    coef: tuple = ()
    support: tuple | None = None
    derivation: str = ""

    @property
    def problem_class(self) -> ProblemClass:
        return self.data.problem_class

    def check(self, result: SolveResult, *, who: str = "", rtol: float = 1e-6, atol: float = 1e-6) -> None:
        """Raise :class:`AssertionError` unless ``result`` is this problem's answer."""
        who = f"{who or result.backend} on {self.name}"
        if result.status not in self.statuses:
            _fail(who, f"status {result.status.value}, expected {[s.value for s in self.statuses]} ({result.message})")
        if self.objective is None:
            if result.ok:
                _fail(who, f"status {result.status.value} on a problem without a solution")
            return
        if result.x is None or result.objective is None:
            _fail(who, "an optimal result without x or objective")
        if not math.isclose(result.objective, self.objective, rel_tol=rtol, abs_tol=atol):
            _fail(who, f"objective {result.objective!r}, expected {self.objective!r} ({self.derivation})")
        x = np.asarray(result.x, dtype=float)
        viol = self.data.max_violation(x)
        if viol > 1e2 * atol:
            _fail(who, f"solution violates a constraint or bound by {viol:.3g}")
        if not math.isclose(self.data.objective(x), result.objective, rel_tol=rtol, abs_tol=atol):
            _fail(who, f"reported objective {result.objective!r} is not the objective at x, {self.data.objective(x)!r}")
        if self.x is not None:
            known = ~np.isnan(self.x)
            if not np.allclose(x[known], self.x[known], rtol=1e3 * rtol, atol=1e3 * atol):
                _fail(who, f"x = {np.round(x, 6).tolist()}, expected {self.x.tolist()}")
        if self.support is not None:
            w = x[list(self.coef)]
            got = tuple(np.flatnonzero(np.abs(w) > 1e-4 * max(1.0, float(np.max(np.abs(w))))).tolist())
            if got != tuple(self.support):
                _fail(who, f"support {got}, expected {tuple(self.support)}")


def _toy_hinge(C: float, *, split: bool, fixed: tuple = ()) -> tuple:
    """The hinge problem on :func:`toy_data` with columns ``[u, v, b, xi]`` (split) or ``[w, b, xi]``:
    rows ``-(y_i x_i'(u - v) + y_i b + xi_i) <= -1``; fixed coefficient groups get bounds [0, 0]."""
    X, y = toy_data()
    m, n = X.shape
    YX = y[:, None] * X
    wblock = np.hstack([YX, -YX]) if split else YX
    nw = wblock.shape[1]
    G = -np.hstack([wblock, y[:, None], np.eye(m)])
    lb = np.r_[np.zeros(nw) if split else np.full(nw, -np.inf), -np.inf, np.zeros(m)]
    ub = np.full(lb.size, np.inf)
    for j in fixed:
        cols = [j, n + j] if split else [j]
        lb[cols] = ub[cols] = 0.0
    c = np.r_[np.zeros(nw + 1), np.full(m, C)]
    return G, -np.ones(m), lb, ub, c, nw


class StandardProblems:
    """Tiny problems solvable by hand, reused per backend (CVXPY's ``StandardTestLPs`` idea).

    The hinge problems live on :func:`toy_data` (``C = 10``): every one reduces to the single
    constraint ``2 w_1 + w_2 >= 1`` with ``b = 0`` and zero slack, so ``min sum_j r_j |w_j|`` is
    solved at the vertex with the smaller ``r_j / a_j`` and ``min sum_j q_j w_j^2`` at
    ``w_j = (a_j / q_j) / sum_k (a_k^2 / q_k)`` with optimum ``1 / sum_k (a_k^2 / q_k)``, ``a = (2, 1)``.
    (``C = 10`` exceeds every multiplier: 0.25 for L1, 0.2 for L2, at most 1.5 for the EM steps.)
    """

    C = 10.0

    @classmethod
    def l1svm_separable(cls, weights=(1.0, 1.0), fixed: tuple = ()) -> StandardProblem:
        """L1-SVM LP (001 eq. 2) with the ``u, v`` split and weights ``r`` on ``|w_j|``."""
        G, h, lb, ub, c, nw = _toy_hinge(cls.C, split=True, fixed=fixed)
        r = np.asarray(weights, dtype=float)
        c[:nw] = np.r_[r, r]
        live = [j for j in range(2) if j not in fixed]
        best = min(live, key=lambda j: r[j] / (2.0, 1.0)[j])
        w = np.zeros(2)
        w[best] = 1.0 / (2.0, 1.0)[best]
        x = np.r_[np.maximum(w, 0), np.maximum(-w, 0), 0.0, np.zeros(10)]
        return StandardProblem(
            f"l1svm_separable(weights={tuple(r.tolist())}, fixed={fixed})",
            _problem(c, G=G, h=h, lb=lb, ub=ub), (Status.OPTIMAL,), objective=float(r[best] * w[best]), x=x,
            coef=(0, 1), support=(best,),
            derivation="min r'|w| s.t. 2 w1 + w2 >= 1: the vertex with the smaller r_j / a_j")

    @classmethod
    def quad_hinge(cls, q=(1.0, 1.0), name: str = "l2svm_separable") -> StandardProblem:
        """``min sum_j q_j w_j^2 + C sum xi`` (free ``w``); ``q_j = inf`` fixes ``w_j = 0`` (the EM
        subproblem, 002 eq. 7, with weights ``1/|w|^2``)."""
        q = np.asarray(q, dtype=float)
        fixed = tuple(int(j) for j in np.flatnonzero(np.isinf(q)))
        G, h, lb, ub, c, nw = _toy_hinge(cls.C, split=False, fixed=fixed)
        a = np.array([2.0, 1.0])
        inv = np.where(np.isinf(q), 0.0, a * a / np.where(np.isinf(q), 1.0, q))
        w = np.where(np.isinf(q), 0.0, a / np.where(np.isinf(q), 1.0, q)) / inv.sum()
        P = np.zeros((c.size, c.size))
        P[:2, :2] = np.diag(2.0 * np.where(np.isinf(q), 0.0, q))
        return StandardProblem(
            f"{name}(q={tuple(q.tolist())})", _problem(c, G=G, h=h, lb=lb, ub=ub, P=P), (Status.OPTIMAL,),
            objective=float(1.0 / inv.sum()), x=np.r_[w, 0.0, np.zeros(10)], coef=(0, 1),
            support=tuple(np.flatnonzero(w > 0).tolist()),
            derivation="min sum q_j w_j^2 s.t. a'w = 1: w = (a/q) / sum(a^2/q), optimum 1/sum(a^2/q)")

    @classmethod
    def em_qp(cls) -> StandardProblem:
        """The EM zero-norm step after the L2 start ``w = (0.4, 0.2)``: ``q = 1/w^2 = (6.25, 25)``,
        optimum ``1/0.68``, ``w = (0.4706, 0.0588)`` (Hessian diagonal on free columns: the
        dual form applies)."""
        return cls.quad_hinge((6.25, 25.0), name="em_qp")

    @classmethod
    def em_qp_fixed(cls) -> StandardProblem:
        """EM step with ``q = (1, inf)``: ``w_2`` fixed at zero, ``w = (0.5, 0)``, optimum 0.25."""
        return cls.quad_hinge((1.0, np.inf), name="em_qp_fixed")

    @classmethod
    def lp_equality_bounds(cls) -> StandardProblem:
        """``min -x1 - 2 x2 s.t. x1 + x2 = 1, 0 <= x <= 0.8``: ``x = (0.2, 0.8)``, optimum -1.8."""
        return StandardProblem("lp_equality_bounds", _problem([-1.0, -2.0], A=[[1.0, 1.0]], b=[1.0], lb=[0, 0],
                                                              ub=[0.8, 0.8]),
                               (Status.OPTIMAL,), objective=-1.8, x=np.array([0.2, 0.8]),
                               derivation="x2 at its upper bound, x1 from the equality")

    @classmethod
    def qp_equality(cls) -> StandardProblem:
        """``min (x1-1)^2 + 2 (x2-1)^2 s.t. x1 + x2 = 1``: KKT gives ``y = 4/3``, ``x = (1/3, 2/3)``,
        optimum 2/3."""
        return StandardProblem("qp_equality", _problem([-2.0, -4.0], A=[[1.0, 1.0]], b=[1.0], P=np.diag([2.0, 4.0]),
                                                       offset=3.0),
                               (Status.OPTIMAL,), objective=2.0 / 3.0, x=np.array([1.0 / 3.0, 2.0 / 3.0]),
                               derivation="KKT: 2(x1-1) + y = 0, 4(x2-1) + y = 0, x1 + x2 = 1")

    @classmethod
    def qp_halfspace(cls) -> StandardProblem:
        """``min ||x - (1, 2)||^2 s.t. x1 + x2 <= 1``: the projection ``(0, 1)``, optimum 2."""
        return StandardProblem("qp_halfspace", _problem([-2.0, -4.0], G=[[1.0, 1.0]], h=[1.0], P=2 * np.eye(2),
                                                        offset=5.0),
                               (Status.OPTIMAL,), objective=2.0, x=np.array([0.0, 1.0]),
                               derivation="projection of (1, 2) onto the half-space")

    @classmethod
    def socp_disc(cls) -> StandardProblem:
        """``min x1 + x2 s.t. ||x|| <= 1``: ``x = -(1, 1)/sqrt(2)``, optimum ``-sqrt(2)``."""
        return StandardProblem("socp_disc", _problem([1.0, 1.0], G=[[0, 0], [-1, 0], [0, -1]], h=[1.0, 0, 0],
                                                     cones=(3,)),
                               (Status.OPTIMAL,), objective=-math.sqrt(2), x=-np.ones(2) / math.sqrt(2),
                               derivation="the unit disc's point farthest along -(1, 1)")

    @classmethod
    def socp_disc_halfplane(cls) -> StandardProblem:
        """A linear row before the cone (``l = 1``): ``min x1 + x2 s.t. ||x|| <= 1, x1 >= -0.5``.

        Without the row the optimum is ``-(1, 1)/sqrt(2)``, where ``x1 = -0.707 < -0.5``; so the
        row is active, ``x1 = -0.5``, and ``x2`` is the lowest point of the circle above it,
        ``-sqrt(1 - 0.25) = -sqrt(0.75)``: optimum ``-0.5 - sqrt(0.75) = -1.3660``. KKT: with
        ``mu`` on the cone and ``nu`` on the row, ``1 + mu x2 = 0`` gives ``mu = 1/sqrt(0.75) > 0``
        and ``1 + mu x1 - nu = 0`` gives ``nu = 1 - 0.5/sqrt(0.75) = 0.42 > 0``."""
        return StandardProblem(
            "socp_disc_halfplane",
            _problem([1.0, 1.0], G=[[-1, 0], [0, 0], [-1, 0], [0, -1]], h=[0.5, 1.0, 0, 0], cones=(3,)),
            (Status.OPTIMAL,), objective=-0.5 - math.sqrt(0.75), x=np.array([-0.5, -math.sqrt(0.75)]),
            derivation="the half-plane row x1 >= -0.5 is active; x2 = -sqrt(1 - 0.25) on the circle")

    @classmethod
    def socp_two_cones(cls) -> StandardProblem:
        """Two cones of different sizes, 3 then 4:
        ``min x1 + x2 + x3 + 2 x4 + 2 x5 s.t. ||(x1, x2)|| <= 1, ||(x3, x4, x5)|| <= 2``.

        Separable: ``min c'v s.t. ||v|| <= r`` is ``-r ||c||`` at ``v = -r c / ||c||``, so the
        optimum is ``-sqrt(2) - 2 ||(1, 2, 2)|| = -sqrt(2) - 6`` at
        ``(-1/sqrt(2), -1/sqrt(2), -2/3, -4/3, -4/3)``. Read as one cone of size 7,
        ``||(x1, x2, 2, x3, x4, x5)|| <= 1`` has no solution."""
        G = np.zeros((7, 5))
        G[1:3, 0:2] = -np.eye(2)
        G[4:7, 2:5] = -np.eye(3)
        r = 1.0 / math.sqrt(2)
        return StandardProblem(
            "socp_two_cones", _problem([1.0, 1.0, 1.0, 2.0, 2.0], G=G, h=[1.0, 0, 0, 2.0, 0, 0, 0], cones=(3, 4)),
            (Status.OPTIMAL,), objective=-math.sqrt(2) - 6.0, x=np.array([-r, -r, -2 / 3, -4 / 3, -4 / 3]),
            derivation="separable cones: min c'v over ||v|| <= r is -r ||c||")

    @classmethod
    def socp_cone_equality(cls) -> StandardProblem:
        """A cone with an equality row: ``min x2 + 2 x3 s.t. ||(x1, x2)|| <= x3, x1 = 1``.

        With ``x3 = sqrt(1 + x2^2)`` at the optimum, ``d/dx2 (x2 + 2 sqrt(1 + x2^2)) = 0`` gives
        ``x2 / sqrt(1 + x2^2) = -1/2``, ``x2 = -1/sqrt(3)``, ``x3 = 2/sqrt(3)``: optimum
        ``-1/sqrt(3) + 4/sqrt(3) = sqrt(3)``. Without the equality (``x1 = 0``) it would be 0."""
        s3 = math.sqrt(3.0)
        return StandardProblem(
            "socp_cone_equality",
            _problem([0.0, 1.0, 2.0], A=[[1.0, 0.0, 0.0]], b=[1.0], G=[[0, 0, -1], [-1, 0, 0], [0, -1, 0]],
                     h=[0.0, 0.0, 0.0], cones=(3,)),
            (Status.OPTIMAL,), objective=s3, x=np.array([1.0, -1.0 / s3, 2.0 / s3]),
            derivation="x1 = 1 fixed by the equality; x2 minimises x2 + 2 sqrt(1 + x2^2)")

    @classmethod
    def socp_quadratic(cls) -> StandardProblem:
        """A cone with a quadratic objective: ``min ||x - (2, 2)||^2 s.t. ||x|| <= 1`` (ECOS takes
        the objective through its rotated-cone epigraph).

        The projection of ``(2, 2)`` onto the unit disc is ``(1, 1)/sqrt(2)``; the optimum is
        ``2 (2 - 1/sqrt(2))^2 = 9 - 4 sqrt(2) = 3.3431``."""
        r = 1.0 / math.sqrt(2)
        return StandardProblem(
            "socp_quadratic",
            _problem([-4.0, -4.0], G=[[0, 0], [-1, 0], [0, -1]], h=[1.0, 0, 0], P=2 * np.eye(2), offset=8.0,
                     cones=(3,)),
            (Status.OPTIMAL,), objective=9.0 - 4.0 * math.sqrt(2), x=np.array([r, r]),
            derivation="projection of (2, 2) onto the unit disc")

    @classmethod
    def infeasible_lp(cls) -> StandardProblem:
        """``min x s.t. x >= 1, x <= 0``."""
        return StandardProblem("infeasible_lp", _problem([1.0], G=[[-1.0], [1.0]], h=[-1.0, 0.0]),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def unbounded_lp(cls) -> StandardProblem:
        """``min -x1 s.t. x1 - x2 <= 0, x >= 0``."""
        return StandardProblem("unbounded_lp", _problem([-1.0, 0.0], G=[[1.0, -1.0]], h=[0.0], lb=[0.0, 0.0]),
                               (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def infeasible_qp(cls) -> StandardProblem:
        """``min x1^2 s.t. x2 >= 1, x2 <= 0, x2 >= 0``."""
        return StandardProblem("infeasible_qp", _problem([0.0, 0.0], G=[[0.0, -1.0], [0.0, 1.0]], h=[-1.0, 0.0],
                                                         P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def infeasible_qp_free(cls) -> StandardProblem:
        """``min x1^2 s.t. x2 >= 1, x2 <= -1`` with ``x2`` free: the Lagrangian dual is unbounded
        along a direction the Hessian does not see (HiGHS's QP solver stops there, "optimal")."""
        return StandardProblem("infeasible_qp_free", _problem([0.0, 0.0], G=[[0.0, -1.0], [0.0, 1.0]], h=[-1.0, -1.0],
                                                              P=np.diag([2.0, 0.0])),
                               (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def unbounded_qp(cls) -> StandardProblem:
        """``min x1^2 - x2 s.t. x2 >= 0`` (no rows)."""
        return StandardProblem("unbounded_qp", _problem([0.0, -1.0], P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED))

    @classmethod
    def qp_no_rows(cls) -> StandardProblem:
        """``min x1^2 - 2 x1 + x2 s.t. x2 >= 0`` (no rows: its dual has no variables):
        ``x = (1, 0)``, optimum -1."""
        return StandardProblem("qp_no_rows", _problem([-2.0, 1.0], P=np.diag([2.0, 0.0]), lb=[-np.inf, 0.0]),
                               (Status.OPTIMAL,), objective=-1.0, x=np.array([1.0, 0.0]),
                               derivation="separable: x1 minimises x1^2 - 2 x1, x2 sits at its bound")

    @classmethod
    def all(cls) -> list[StandardProblem]:
        """Every standard problem."""
        return [
            cls.l1svm_separable(), cls.l1svm_separable(weights=(10.0, 1.0)), cls.l1svm_separable(fixed=(0,)),
            cls.quad_hinge(), cls.em_qp(), cls.em_qp_fixed(), cls.lp_equality_bounds(), cls.qp_equality(),
            cls.qp_halfspace(), cls.qp_no_rows(), cls.socp_disc(), cls.socp_disc_halfplane(),
            cls.socp_two_cones(), cls.socp_cone_equality(), cls.socp_quadratic(), cls.infeasible_lp(),
            cls.unbounded_lp(), cls.infeasible_qp(), cls.infeasible_qp_free(), cls.unbounded_qp(),
        ]

    @classmethod
    def for_backend(cls, backend: Backend | type) -> list[StandardProblem]:
        """The standard problems whose class ``backend`` supports."""
        return [p for p in cls.all() if p.problem_class in backend.supports]

    @classmethod
    def resolve_sequences(cls) -> list[tuple[str, list[StandardProblem]]]:
        """Problem sequences sharing one constraint structure, solved on one session: changed
        objective (the next outer-loop iteration), changed bounds (a fixed group) and changed
        Hessian (the next EM step)."""
        return [
            ("lp: objective, bounds", [cls.l1svm_separable(), cls.l1svm_separable(weights=(10.0, 1.0)),
                                       cls.l1svm_separable(), cls.l1svm_separable(fixed=(0,)),
                                       cls.l1svm_separable()]),
            ("qp: Hessian, bounds", [cls.quad_hinge(), cls.em_qp(), cls.em_qp_fixed(), cls.quad_hinge()]),
        ]


def check_backend(backend: Backend | type, *, options: SolveOptions | None = None,
                  problems: Iterable[StandardProblem] | None = None, rtol: float = 1e-6) -> list[str]:
    """Solve every :class:`StandardProblems` instance ``backend`` supports and compare status,
    objective, solution and support with the hand-derived answer; re-solve sequences on one
    session (changed ``c``, bounds, ``P``) must match fresh solves; an unknown backend option must
    raise :class:`~fsframe.errors.InvalidOptionError`; an ``OPTIMAL`` answer with multipliers must
    pass fsframe's certificate. Returns the names of the problems checked."""
    be = backend() if isinstance(backend, type) else backend
    opts = options or SolveOptions()
    ran = []
    for prob in (StandardProblems.for_backend(be) if problems is None else problems):
        res = be.solve(prob.data, opts)
        prob.check(res, who=f"backend {be.name!r} ({dict(opts.backend_options)})", rtol=rtol)
        if res.status is Status.OPTIMAL and res.certificate is not None and not res.certificate.ok(opts.cert_tol):
            _fail(be.name, f"{prob.name}: OPTIMAL but the certificate fails: {res.certificate}")
        ran.append(prob.name)
    if problems is None:
        for name, seq in StandardProblems.resolve_sequences():
            seq = [p for p in seq if p.problem_class in be.supports]
            if not seq:
                continue
            session = be.open(seq[0].data, opts)
            try:
                for k, prob in enumerate(seq):
                    prob.check(session.solve(prob.data), who=f"backend {be.name!r} re-solve {k} of '{name}'", rtol=rtol)
            finally:
                session.close()
            ran.append(f"re-solve {name}")
        prob = next(iter(StandardProblems.for_backend(be)), None)
        if prob is not None:
            bad = attrs.evolve(opts, backend_options={**opts.backend_options, "fsframe_no_such_option": 1})
            try:
                be.solve(prob.data, bad)
            except InvalidOptionError:
                ran.append("unknown option rejected")
            else:
                _fail(be.name, "an unknown backend option was accepted silently (must raise InvalidOptionError)")
    return ran


# =============================================================================== formulations
def _dense_rows(M, rhs, perm) -> NDArray:
    D = np.zeros((M.shape[0], perm.size))
    D[:, perm] = M.toarray()
    return np.column_stack([D, rhs])


def _sorted_rows(R: NDArray) -> NDArray:
    return R[np.lexsort(np.round(R, 12).T[::-1])] if R.shape[0] else R


def _cone_rows(data: ProblemData, perm) -> NDArray:
    """The cone rows of ``G | h``, each cone's entries after the first (``t``) in sorted order
    (a second-order cone is invariant under their permutation)."""
    R = _dense_rows(data.G[data.l:], data.h[data.l:], perm)
    out, k = [], 0
    for q in data.cones:
        out += [R[k : k + 1], _sorted_rows(R[k + 1 : k + q])]
        k += q
    return np.vstack(out) if out else R


def _same_data(who: str, fast: CompiledModel, general: CompiledModel, data_f: ProblemData, data_g: ProblemData) -> None:
    """``data_f`` and ``data_g`` state the same problem up to column and row order."""
    if len(fast.columns) != len(general.columns):
        _fail(who, f"fast path has {len(fast.columns)} columns, general path {len(general.columns)}")
    try:
        perm = np.array([general.col_index[id(v)] for v in fast.columns])
    except KeyError as exc:
        raise AssertionError(f"{who}: a column of the fast path is missing from the general path") from exc
    def close(a, b):
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-12)
    checks = {
        "c": (data_f.c, data_g.c[perm]),
        "lb": (data_f.lb, data_g.lb[perm]),
        "ub": (data_f.ub, data_g.ub[perm]),
        "offset": (np.atleast_1d(data_f.offset), np.atleast_1d(data_g.offset)),
        "cones": (np.array(data_f.cones), np.array(data_g.cones)),
    }
    Pf = np.zeros((data_f.n,) * 2) if data_f.P is None else data_f.P.toarray()
    Pg = np.zeros((data_g.n,) * 2) if data_g.P is None else data_g.P.toarray()
    checks["P"] = (Pf, Pg[np.ix_(perm, perm)])
    ident = np.arange(data_f.n)
    checks["A"] = (_sorted_rows(_dense_rows(data_f.A, data_f.b, ident)),
                   _sorted_rows(_dense_rows(data_g.A, data_g.b, np.argsort(perm))))
    checks["G (R+)"] = (_sorted_rows(_dense_rows(data_f.G[: data_f.l], data_f.h[: data_f.l], ident)),
                        _sorted_rows(_dense_rows(data_g.G[: data_g.l], data_g.h[: data_g.l], np.argsort(perm))))
    checks["G (cones)"] = (_cone_rows(data_f, ident), _cone_rows(data_g, np.argsort(perm)))
    for name, (a, b) in checks.items():
        if not close(a, b):
            _fail(who, f"fast and general compile paths differ in {name}")


def _random_weights(rng, comp: CompiledModel, terms: frozenset, *, with_inf: bool) -> dict:
    s = comp.slot
    w = {}
    if "lin" in terms:
        w["lin"] = rng.uniform(0.5, 2.0, s.n_groups)
    if "quad" in terms:
        w["quad"] = rng.uniform(0.5, 2.0, s.n_groups)
    if "lin_w" in terms:
        raw = rng.uniform(-1.0, 1.0, s.W.shape[0])
        norms = np.sqrt(np.bincount(s.groups, weights=raw * raw, minlength=s.n_groups))
        cap = w["lin"] if "lin" in w else np.ones(s.n_groups)
        w["lin_w"] = raw / np.maximum(norms, 1e-12)[s.groups] * (0.5 * cap)[s.groups]
    if with_inf and s.n_groups > 1 and s.exclusive and ("lin" in w or "quad" in w):
        j = int(rng.integers(0, s.n_groups))
        w["lin" if "lin" in w else "quad"][j] = np.inf
        if "lin_w" in w:
            w["lin_w"][s.groups == j] = 0.0
    return w


def _pyomo_objective(who: str, comp: CompiledModel, data: ProblemData) -> None:
    """Re-derive ``c``, ``P`` and the offset from the Pyomo objective (after a synced
    ``with_weights``) with ``generate_standard_repn`` and compare them with ``data``."""
    import pyomo.environ as pyo
    from pyomo.repn import generate_standard_repn

    objs = list(comp.model.component_data_objects(pyo.Objective, active=True))
    repn = generate_standard_repn(objs[0].expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        _fail(who, "the objective has a nonlinear part")
    n = data.n
    c = np.zeros(n)
    P = np.zeros((n, n))
    for v, a in zip(repn.linear_vars, repn.linear_coefs):
        c[comp.col_index[id(v)]] += float(a)
    for (v1, v2), a in zip(repn.quadratic_vars or (), repn.quadratic_coefs or ()):
        i, j = comp.col_index[id(v1)], comp.col_index[id(v2)]
        P[i, j] += float(a)
        P[j, i] += float(a)
    fixed = np.array([v.fixed for v in comp.columns])
    by_weights = (data.lb == data.ub) & (comp.base.lb != comp.base.ub)  # fixed by an infinite weight
    if np.any(data.lb[fixed] != data.ub[fixed]) or np.any(by_weights & ~fixed):
        _fail(who, "the Pyomo model's fixed variables are not the columns with_weights fixed")
    free = ~fixed
    Pd = np.zeros((n, n)) if data.P is None else data.P.toarray()
    xf = np.where(fixed, data.lb, 0.0)
    offset = data.offset + float(data.c @ xf) + 0.5 * float(xf @ Pd @ xf)
    if not np.allclose(c[free], (data.c + Pd @ xf)[free], rtol=1e-10, atol=1e-10):
        _fail(who, "with_weights c differs from the Pyomo objective's linear part")
    if not np.allclose(P[np.ix_(free, free)], Pd[np.ix_(free, free)], rtol=1e-10, atol=1e-10):
        _fail(who, "with_weights P differs from the Pyomo objective's quadratic part")
    if not math.isclose(float(repn.constant), offset, rel_tol=1e-10, abs_tol=1e-10):
        _fail(who, f"objective constant {float(repn.constant)!r} differs from the offset {offset!r}")


def _model_values(comp: CompiledModel, built, x: NDArray) -> tuple[NDArray, NDArray, float]:
    """Coefficients, intercept and loss evaluated in Pyomo after loading ``x`` into the model."""
    import pyomo.environ as pyo

    comp.load_solution(x)
    coef = np.array([pyo.value(e) for e in built.slot.coef.expressions()])
    icpt = np.array([pyo.value(e) for e in built.intercept.expressions()])
    return coef, icpt, float(pyo.value(built.slot.block.loss))


def _check_constraints(who: str, model, tol: float) -> None:
    import pyomo.environ as pyo

    for con in model.component_data_objects(pyo.Constraint, active=True):
        val = pyo.value(con.body)
        lo = None if con.lower is None else pyo.value(con.lower)
        up = None if con.upper is None else pyo.value(con.upper)
        scale = tol * (1.0 + abs(val))
        if (lo is not None and val < lo - scale) or (up is not None and val > up + scale):
            _fail(who, f"the solution violates Pyomo constraint {con.name}: {lo} <= {val} <= {up}")


def check_formulation(formulation: Formulation, X, y, *, backend: Backend | str = "auto",
                      decision_loss: Callable | bool | None = None, seed: int = 0, n_weights: int = 2,
                      terms: Iterable[frozenset] | None = None) -> list[str]:
    """Check a formulation's model on data ``(X, y)`` for every non-empty combination of the slot
    terms it declares (or ``terms``):

    * ``build`` returns a real Pyomo ``ConcreteModel`` with exactly one active objective, the slot's;
    * the fast compile path equals the general path (same matrices up to column/row order), and
      both give the same optimum and coefficients on ``backend`` for random slot weights
      (one group fixed by an infinite weight);
    * ``c``, ``P`` and the offset of :meth:`CompiledModel.with_weights` equal the Pyomo objective
      re-derived with ``generate_standard_repn`` after the synced update;
    * at the optimum, Pyomo's own evaluation satisfies every constraint, its objective equals the
      reported one, the slot's coefficient/intercept maps agree with the compiled ones, and
      the decision function agrees with the model (check ``"decision_loss <terms>"``):
      ``decision_loss(decision_function(coef, intercept, X), y)`` equals the model's loss.

    ``decision_loss``: a callable ``(decision values, y codes) -> loss``; ``None`` (default) takes
    the built-in one for instances (subclasses included) of the registered ``hinge``
    (:func:`hinge_loss` with the formulation's ``C``) and ``mpm`` (:func:`mpm_margin_loss`: 0 when
    the margin rows of 000 eq. 45 hold); for ``mpm-max``, whose loss is no function of the
    decision values, the values themselves are checked (``"decision values <terms>"``:
    ``mean f[+1] - mean f[-1] = 1`` and ``mean f[+1] > 0``). Any other formulation raises
    :class:`ValueError` unless ``decision_loss`` is given or is ``False``, which skips the check
    and says so in the returned names (``"decision_loss skipped (decision_loss=False) <terms>"``).

    Returns the names of the checks that ran.
    """
    import pyomo.environ as pyo

    from .method import select_backend

    who = f"formulation {formulation}"
    X = np.asarray(X, dtype=float)
    yc = _codes(formulation, np.asarray(y))
    formulation.validate(X, yc)
    dname, dcheck = _decision_check(formulation, decision_loss)
    rng = np.random.default_rng(seed)
    combos = ([frozenset(t) for t in terms] if terms is not None else
              [frozenset(c) for r in range(1, len(formulation.slot_terms) + 1)
               for c in itertools.combinations(sorted(formulation.slot_terms), r)])
    ran = []
    for combo in combos:
        tag = f"{who} terms={sorted(combo)}"
        built = formulation.build(X, yc, combo)
        if not isinstance(built.model, pyo.ConcreteModel):
            _fail(tag, f"build returned a {type(built.model).__name__}, not a Pyomo ConcreteModel")
        objs = list(built.model.component_data_objects(pyo.Objective, active=True))
        if len(objs) != 1 or objs[0] is not built.slot.objective:
            _fail(tag, f"the model must have one active objective, the slot's; it has {len(objs)}")
        if built.slot.terms != combo:
            _fail(tag, f"the slot was built with terms {sorted(built.slot.terms)}")
        # structure: the fast path with auxiliary cone variables reads the same columns as the
        # general path; values: the default fast path (cones substituted) solves the same problem
        fast_aux = compile_model(built.model, fast=True, cone_form="auxiliary")
        general = compile_model(built.model, fast=False)
        _same_data(tag, fast_aux, general, fast_aux.data, general.data)
        fast = compile_model(built.model, fast=True) if fast_aux.data.cones else fast_aux
        pc = formulation.problem_class(combo)
        be = select_backend(backend, pc) if isinstance(backend, str) else backend
        ran.append(f"build+compile {sorted(combo)}")
        solvable = bool(combo & {"lin", "quad"})
        for k in range(n_weights):
            weights = _random_weights(rng, fast, combo, with_inf=k > 0)
            df = fast.with_weights(**weights, sync=True)
            _pyomo_objective(tag, fast, df)
            dg = general.with_weights(**weights, sync=False)
            _same_data(tag, fast_aux, general, fast_aux.with_weights(**weights, sync=False), dg)
            if df.problem_class is not pc:
                _fail(tag, f"problem_class() says {pc.value}, the compiled problem is {df.problem_class.value}")
            if not solvable:
                continue
            rf, rg = be.solve(df), be.solve(dg)
            if rf.ok != rg.ok or (not rf.ok and rf.status is not rg.status):
                _fail(tag, f"fast path status {rf.status.value}, general path {rg.status.value}")
            if not rf.ok:
                if k == 0:
                    _fail(tag, f"no solution for random weights: {rf.status.value} ({rf.message})")
                continue  # fixing a group at zero may leave no feasible point (e.g. MPM); both agree
            if not math.isclose(rf.objective, rg.objective, rel_tol=1e-7, abs_tol=1e-7):
                _fail(tag, f"fast path optimum {rf.objective!r} != general path optimum {rg.objective!r}")
            wf, wg = fast.coef(rf.x), general.coef(rg.x)
            # interior-point conic solvers stop at a ~1e-8 gap: coefficients to about its root
            wtol = 1e-3 if df.cones else 1e-6
            if not np.allclose(wf, wg, rtol=10 * wtol, atol=wtol * max(1.0, float(np.max(np.abs(wf))))):
                _fail(tag, f"fast and general paths give different coefficients: {wf} vs {wg}")
            coef, icpt, loss = _model_values(general, built, rg.x)
            _check_constraints(tag, built.model, 1e-6)
            pobj = float(pyo.value(built.slot.objective))
            if not math.isclose(pobj, rg.objective, rel_tol=1e-7, abs_tol=1e-7):
                _fail(tag, f"Pyomo evaluates the objective at the solution as {pobj!r}, the backend said {rg.objective!r}")
            if not (np.allclose(coef, wg, atol=1e-9) and np.allclose(icpt, general.evaluate(built.intercept, rg.x), atol=1e-9)):
                _fail(tag, "the slot's coefficient/intercept maps differ between Pyomo and the compiled model")
            if dcheck is not None:
                b = float(icpt[0]) if icpt.size == 1 else icpt
                f = formulation.decision_function(coef.reshape(built.coef_shape), b, X)
                msg = dcheck(np.asarray(f, dtype=float), yc, loss)
                if msg is not None:
                    _fail(tag, msg)
        ran.append(f"{'weights+solve' if solvable else 'weights'} {sorted(combo)}")
        if solvable:
            ran.append(f"{dname} {sorted(combo)}")
    return ran


# =============================================================================== loops
class FailingBackend(Backend):
    """Wraps a backend and returns ``status`` (no solution) from solve number ``fail_at`` on
    (1-based, counted per session), to test how loops handle a failed subproblem."""

    name = "failing"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def __init__(self, inner: Backend, fail_at: int, status: Status = Status.NUMERICAL_ERROR):
        self.inner = inner
        self.fail_at = fail_at
        self.status = status

    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        return _FailingSession(self, data, options)


class _FailingSession(BackendSession):
    def __init__(self, backend: FailingBackend, data, options):
        super().__init__(backend, data, options)
        self.inner = backend.inner.open(data, options)
        self.count = 0

    def solve(self, data=None) -> SolveResult:
        self.count += 1
        if self.count >= self.backend.fail_at:
            return SolveResult(status=self.backend.status, x=None, objective=None, backend=self.backend.name,
                               solve_time=0.0, message=f"injected failure at solve {self.count}")
        return self.inner.solve(data)

    def close(self) -> None:
        self.inner.close()


def _slot_penalty(sub, it) -> float:
    """``sum lin_j s_j + sum lin_w_k w_k + sum quad_j ||w_(j)||^2`` from the Pyomo Params (as
    synced by the last ``with_weights``) and Pyomo's evaluation of ``s`` and ``w``."""
    import pyomo.environ as pyo

    built = sub.built
    blk = built.slot.block
    sub.compiled.load_solution(it.x)
    w = np.array([pyo.value(e) for e in built.slot.coef.expressions()])
    t2 = np.bincount(built.slot.groups, weights=w * w, minlength=built.slot.n_groups)
    total = 0.0
    if "lin" in built.slot.terms:
        s = np.array([pyo.value(e) for e in built.slot.magnitude.expressions()])
        total += float(np.array([pyo.value(blk.lin[j]) for j in range(s.size)]) @ s)
    if "lin_w" in built.slot.terms:
        total += float(np.array([pyo.value(blk.lin_w[k]) for k in range(w.size)]) @ w)
    if "quad" in built.slot.terms:
        total += float(np.array([pyo.value(blk.quad[j]) for j in range(t2.size)]) @ t2)
    return total


def _run_loop(loop, surrogate, formulation, X, y, backend, **kw):
    """Run ``loop`` on a fresh subproblem; returns ``(sub, outcome, seen)`` with ``seen`` one
    ``(record, iterate, slot penalty, slot weights)`` per good iteration: the weights are the
    arguments of the ``sub.solve`` call that produced the iterate (``None`` if there was none)."""
    from .problem import Subproblem

    sub = Subproblem(formulation, X, y, loop.terms(surrogate), backend)
    calls: list[dict] = []
    solve = sub.solve

    def spy(*, lin=None, lin_w=None, quad=None):
        calls.append({k: None if v is None else np.array(v, dtype=float)
                      for k, v in (("lin", lin), ("lin_w", lin_w), ("quad", quad))})
        return solve(lin=lin, lin_w=lin_w, quad=quad)

    sub.solve = spy
    seen = []
    try:
        out = loop.run(sub, surrogate, callback=lambda rec, it: seen.append(
            (rec, it, _slot_penalty(sub, it), calls[-1] if calls else None)), **kw)
    finally:
        sub.close()
    return sub, out, seen


def _loop_model(loop: OuterLoop, surrogate: Surrogate | None, sub):
    """The kit's own statement of a built-in loop (subclasses included), read off its documented
    update rule: ``(weights(k, previous iterate) -> dict, monitored(k, iterate, loss) -> float or
    None, note)``; ``None`` for a loop the kit does not know."""
    from .loops import DCA, EM, ReweightedL1, SingleSolve
    from .surrogates.lp import L0Surrogate, LpSurrogate

    n, n_coef, groups = sub.n_groups, sub.n_coef, sub.compiled.slot.groups
    ones = np.ones(n)

    def raw(k, it, loss):  # loss + sum phi at the solver's point: what DCA/MM theory decreases
        return loss + float(np.sum(surrogate.phi(it.t)))

    if isinstance(loop, ReweightedL1):
        def weights(k, prev):
            if k == 0:
                return {"lin": surrogate.derivative(np.zeros(n)) if loop.init == "zero" else ones}
            return {"lin": surrogate.derivative(prev.t)}
        return weights, raw, "lin = phi'(t_k)"
    if isinstance(loop, DCA):
        split = surrogate.dc_split()
        quad = np.full(n, split.quad) if split.quad else None

        def weights(k, prev):
            if k == 0 and loop.init == "l1":
                return {"lin": ones, "lin_w": np.zeros(n_coef), "quad": None if quad is None else np.zeros(n)}
            lin_w = np.zeros(n_coef)
            if k > 0:
                scale = np.zeros_like(prev.t)
                np.divide(split.grad_h(prev.t), prev.t, out=scale, where=prev.t > 0)
                lin_w = -scale[groups] * prev.coef
            return {"lin": np.full(n, split.lin), "lin_w": lin_w, "quad": quad}
        return weights, raw, "lin = g's slope, lin_w = -grad_h(w_k)"
    if isinstance(loop, EM):
        def weights(k, prev):
            if k == 0:
                return {"quad": ones}
            cut = max(loop.zero_tol * float(np.max(prev.t, initial=0.0)), 1e-12)
            q = np.full(n, np.inf)
            q[prev.t > cut] = surrogate.quad_weights(prev.t[prev.t > cut])
            return {"quad": q}
        if not surrogate.em_majorizes:
            return weights, None, "quad = q(t_k)"

        def potential(k, it, loss):  # the MM majoriser's objective for q = phi'(t)/t; the L2 start is no MM step
            return None if k == 0 else loss + 2.0 * float(np.sum(surrogate.phi(it.t)))
        return weights, potential, "quad = q(t_k)"
    if isinstance(loop, SingleSolve):
        def weights(k, prev):
            if loop.penalty == "l2":
                return {"quad": ones}
            return {"lin": np.full(n, 1.0 if surrogate is None else float(surrogate.derivative(np.zeros(1))[0]))}
        return weights, None, "phi'(0) or unit weights"
    return None


def _same_weights(got, expect) -> bool:
    if got is None or expect is None:
        return got is None and expect is None
    e = np.asarray(expect, dtype=float)
    g = np.broadcast_to(np.asarray(got, dtype=float), e.shape)
    fin = np.isfinite(e)
    if not np.array_equal(np.isinf(g), np.isinf(e)):
        return False
    scale = max(1.0, float(np.max(np.abs(e[fin]), initial=0.0)))
    return bool(np.allclose(g[fin], e[fin], rtol=1e-9, atol=1e-12 * scale))


def check_loop(loop: OuterLoop, surrogate: Surrogate | None = None, *, X=None, y=None,
               formulation: Formulation | None = None, decision_loss: Callable | None = None,
               expected_weights: Callable | bool | None = None) -> list[str]:
    """Run ``loop`` (with ``surrogate``, or with every registered surrogate it accepts, default
    parameters) on a small problem and check, at every iteration, in numpy and Pyomo:

    * the subproblem optimum equals ``loss + penalty``, with the loss recomputed from the
      decision function and the penalty from the Pyomo slot Params at that iteration;
    * the reported objective equals ``loss + sum_j phi(||w_(j)||)`` over the support (groups below
      ``zero_tol`` times the largest count as zero; surrogate loops) or the subproblem optimum
      (``needs_surrogate = False``); ``n_nonzero`` matches the group norms;
    * the slot weights of every ``sub.solve`` are the loop's model of the surrogate at the previous
      iterate (check ``"weights <surrogate>"``), as the kit states it for the built-in loops and
      their subclasses: ``reweighted-l1`` ``lin = phi'(t_k)`` (``1`` or ``phi'(0)`` first);
      ``dca`` ``lin = g``'s slope and ``lin_w = -h'(t_k) w_k / t_k`` (the L1 start or ``x = 0``
      first); ``em`` ``quad = q(t_k)``, ``inf`` below ``zero_tol`` x max (``1`` first); ``single``
      ``phi'(0)`` (or 1) / unit quadratic weights. ``expected_weights``: a callable
      ``(k, previous iterate or None, surrogate, sub) -> {"lin": ..., "lin_w": ..., "quad": ...}``
      for another loop, ``False`` to skip; an unknown loop without it is skipped and the skip is
      named in the returned checks;
    * descent for loops declaring ``monotone``, recomputed by the kit, not taken from the loop's
      ``monotone`` flag or its monitored values: ``loss + sum_j phi(t_j)`` at the solver's point for
      ``reweighted-l1`` and ``dca``, ``loss + 2 sum_j phi(t_j)`` from the second iterate on for
      ``em`` (none for ``lp``/``l0``, whose weights ``t^(p-2)`` have no finite potential at
      ``p = 0``), each allowed to rise by ``tol`` (relative) as the loop itself; for an unknown
      loop only the loop's own monitored values (the check's name says so);
    * the returned coefficients vanish outside the support; two runs give identical coefficients;
    * a subproblem failure (injected through :class:`FailingBackend`) raises
      :class:`~fsframe.errors.SolverFailedError` carrying its status, and with
      ``raise_on_failure=False`` returns the last good iterate with ``converged=False``.

    The default problem is the registered ``hinge`` formulation (``C = 1``) on a seeded
    40 x 8 sample of :func:`fsframe.make_synthetic`.
    """
    from .io import make_synthetic
    from .method import select_backend
    from .plugins import get_registry

    reg = get_registry()
    if formulation is None:
        formulation = reg.get("formulation", "hinge")(C=1.0)
    if X is None:
        ds = make_synthetic(40, 8, 3, random_state=1)
        X, y = (ds.X - ds.X.mean(0)) / ds.X.std(0), ds.y
    X = np.asarray(X, dtype=float)
    yc = _codes(formulation, np.asarray(y))
    loss_fn = _decision_loss(formulation, decision_loss)
    if loss_fn is None:
        raise ValueError(f"check_loop needs decision_loss= for formulation {formulation.name!r}")
    if surrogate is not None:
        surrogates = [surrogate]
    elif loop.needs_surrogate:
        surrogates = [cls() for cls in (e.obj for e in reg.all("surrogate")) if not loop.missing(cls())]
    else:
        surrogates = [None]
    ran = []
    for sur in surrogates:
        who = f"loop {loop} with surrogate {sur}"
        terms = loop.terms(sur)
        backend = select_backend("auto", formulation.problem_class(terms), quadratic="quad" in terms)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sub, out, seen = _run_loop(loop, sur, formulation, X, yc, backend)
        rose = [w for w in caught if issubclass(w.category, ConvergenceWarning) and "rose" in str(w.message)]
        if len(seen) != out.n_iter or not 1 <= out.n_iter <= loop.max_iter:
            _fail(who, f"n_iter={out.n_iter} but {len(seen)} iterations were reported (max_iter={loop.max_iter})")
        if [r.k for r, _, _, _ in seen] != list(range(len(seen))):
            _fail(who, "iteration records are not numbered 0, 1, ...")
        losses = []
        for rec, it, pen, _ in seen:
            w = np.asarray(it.coef)
            b = float(it.intercept[0]) if np.size(it.intercept) == 1 else it.intercept
            loss = loss_fn(formulation.decision_function(w.reshape(sub.built.coef_shape), b, X), yc)
            losses.append(loss)
            if not math.isclose(loss + pen, it.objective, rel_tol=1e-6, abs_tol=1e-6):
                _fail(who, f"iteration {rec.k}: subproblem optimum {it.objective!r} != loss + penalty {loss + pen!r}")
            t = np.sqrt(np.bincount(sub.compiled.slot.groups, weights=w * w, minlength=sub.n_groups))
            cut = max(loop.zero_tol * float(np.max(t, initial=0.0)), 1e-12)
            expect = it.objective if not loop.needs_surrogate else loss + float(np.sum(sur.phi(np.where(t > cut, t, 0.0))))
            if rec.objective is None or not math.isclose(rec.objective, expect, rel_tol=1e-6, abs_tol=1e-6):
                _fail(who, f"iteration {rec.k}: reported objective {rec.objective!r}, recomputed {expect!r}")
            nnz = int(np.count_nonzero(t > max(loop.zero_tol * float(np.max(t, initial=0.0)), 1e-12)))
            if rec.n_nonzero != nnz:
                _fail(who, f"iteration {rec.k}: n_nonzero={rec.n_nonzero}, the group norms have {nnz}")
        model = _loop_model(loop, sur, sub)
        ran += _check_weights(who, loop, sur, sub, seen, model, expected_weights)
        ran += _check_descent(who, loop, sur, seen, losses, model, out, rose)
        off = ~out.support[sub.compiled.slot.groups]
        if np.any(out.coef[off] != 0):
            _fail(who, "returned coefficients are non-zero outside the support")
        ran.append(f"iterations {sur}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, again, _ = _run_loop(loop, sur, formulation, X, yc, backend)
        if not np.array_equal(again.coef, out.coef):
            _fail(who, "two runs on the same data gave different coefficients")
        ran.append(f"deterministic {sur}")
        ran += _check_failure(who, loop, sur, formulation, X, yc, backend, out.n_iter)
    return ran


def _check_weights(who, loop, sur, sub, seen, model, given) -> list[str]:
    if given is False:
        return [f"weights {sur}: skipped (expected_weights=False)"]
    if given is not None and given is not True:
        def weights(k, prev):
            return given(k, prev, sur, sub)
        note = "expected_weights"
    elif model is not None:
        weights, _, note = model
    else:
        return [f"weights {sur}: skipped (the kit has no model of loop {loop.name!r}; pass expected_weights=)"]
    prev = None
    for rec, it, _, got in seen:
        if got is None:
            _fail(who, f"iteration {rec.k}: no sub.solve call produced the iterate (the kit reads the weights there)")
        expect = weights(rec.k, prev)
        for term in ("lin", "lin_w", "quad"):
            e = expect.get(term)
            if not _same_weights(got.get(term), e):
                _fail(who, f"iteration {rec.k}: slot weights {term} = {got.get(term)!r}, the loop's model of the "
                           f"surrogate at the previous iterate ({note}) gives {None if e is None else np.asarray(e)!r}")
        prev = it
    return [f"weights {sur} ({note})"]


def _check_descent(who, loop, sur, seen, losses, model, out, rose) -> list[str]:
    if not loop.monotone:
        return []
    if out.monotone is False or rose:
        _fail(who, f"the monitored objective rose: {[str(w.message) for w in rose]}")
    if model is None:
        return [f"descent {sur}: the loop's own monitored values (the kit has no model of loop {loop.name!r})"]
    monitored = model[1]
    if monitored is None:
        return [f"descent {sur}: skipped ({loop.name} with {sur.name}: weights t^(p-2) have no finite potential)"]
    prev = None
    for (rec, it, _, _), loss in zip(seen, losses):
        m = monitored(rec.k, it, loss)
        if m is not None and prev is not None and m > prev + loop.tol * max(1.0, abs(prev)):
            _fail(who, f"iteration {rec.k}: the objective theory says decreases, recomputed by the kit, rose from "
                       f"{prev!r} to {m!r} (tolerance {loop.tol:g} relative)")
        prev = m
    return [f"descent {sur} (recomputed)"]


def _check_failure(who, loop, sur, formulation, X, yc, backend, n_iter) -> list[str]:
    fail_at = 2 if n_iter >= 2 else 1
    failing = FailingBackend(backend, fail_at, Status.NUMERICAL_ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _run_loop(loop, sur, formulation, X, yc, failing)
    except SolverFailedError as exc:
        if exc.status is not Status.NUMERICAL_ERROR or "numerical_error" not in str(exc):
            _fail(who, f"SolverFailedError must carry and name the failed status, got {exc.status} / {exc}")
    else:
        _fail(who, f"an injected failure at solve {fail_at} did not raise SolverFailedError")
    soft = attrs.evolve(loop, raise_on_failure=False)
    if fail_at == 1:
        try:
            _run_loop(soft, sur, formulation, X, yc, FailingBackend(backend, 1))
        except SolverFailedError:
            return ["failure raises"]
        _fail(who, "a failure of the first subproblem must raise even with raise_on_failure=False")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, out, seen = _run_loop(soft, sur, formulation, X, yc, FailingBackend(backend, fail_at))
    if out.converged or out.n_iter != fail_at - 1:
        _fail(who, f"raise_on_failure=False: converged={out.converged}, n_iter={out.n_iter}; expected the "
                   f"{fail_at - 1} good iterate(s) and converged=False")
    if not np.allclose(out.iterate.coef, seen[-1][1].coef):
        _fail(who, "raise_on_failure=False did not return the last good iterate")
    if not any(issubclass(w.category, ConvergenceWarning) for w in caught):
        _fail(who, "raise_on_failure=False returned without a ConvergenceWarning")
    return ["failure raises", "failure keeps last good iterate"]


# =============================================================================== fit results
def check_fit_result(result, X, y, *, decision_loss: Callable | None = None, rtol: float = 1e-5) -> list[str]:
    """Check a :class:`~fsframe.FitResult` of ``X, y`` against numpy recomputation:

    * the coefficients vanish exactly outside ``support`` and not inside it (per group);
    * ``decision_function`` is the formulation's on ``(coef, intercept)`` and ``predict`` its sign
      (binary) or argmax (one-vs-rest);
    * with a decision loss (given, or built in as for :func:`check_formulation`), the objective:
      without ``n_features``, ``loss + penalty`` recomputed from the returned coefficients
      (``sum_j phi(||w_(j)||)`` for surrogate loops, ``phi'(0) ||w||_1`` or ``||w||^2`` for
      ``single``) to ``rtol``, with no allowance (groups zeroed by ``zero_tol`` count as zero in the
      reported objective too); with ``n_features`` (``info["n_features_iterate"]``), the objective
      of an iterate that was never returned: equal to its history record and between the
      recorded loss + the kept groups' penalty + each dropped group at ``pen(zero_tol x max)``
      and at ``pen(smallest kept norm)`` (exact for the zero-norm; only the lower bound after the
      one-vs-rest union cut). Without a decision loss the objective check is skipped and named so;
    * one-vs-rest: the support is the union of the per-class supports and each class is checked.
    """
    X = np.asarray(X, dtype=float)
    who = f"fit result of {result.method or (result.formulation, result.surrogate, result.loop)}"
    ran = []
    if result.per_class:
        if not np.array_equal(result.support, np.any([r.support for r in result.per_class], axis=0)):
            _fail(who, "the one-vs-rest support is not the union of the per-class supports")
        d = result.decision_function(X)
        for i, (r, c) in enumerate(zip(result.per_class, result.classes)):
            yc = np.where(np.asarray(y) == c, 1.0, -1.0)
            ran += check_fit_result(r, X, yc, decision_loss=decision_loss, rtol=rtol)
            if not np.allclose(d[:, i], r.decision_function(X)):
                _fail(who, f"decision_function column {i} is not class {c!r}'s")
        pred = np.asarray(result.classes, dtype=object)[np.argmax(d, axis=1)]
        if not np.array_equal(result.predict(X).astype(str), pred.astype(str)):
            _fail(who, "predict is not the argmax of the decision function")
        return ran + ["one-vs-rest union"]
    coef = np.asarray(result.coef, dtype=float)
    n_groups = result.support.shape[0]
    flat = coef.reshape(-1, n_groups) if coef.ndim > 1 else coef[None, :]
    t = np.sqrt(np.sum(flat * flat, axis=0))
    if np.any(t[~result.support] != 0) or np.any(t[result.support] == 0):
        _fail(who, "coefficients are non-zero outside the support or zero inside it")
    f = result.formulation.decision_function(coef, result.intercept, X)
    if not np.allclose(result.decision_function(X), f):
        _fail(who, "decision_function differs from the formulation's")
    classes = np.asarray(result.classes, dtype=object)
    if f.ndim == 1 and not np.array_equal(result.predict(X).astype(str), classes[(f > 0).astype(np.intp)].astype(str)):
        _fail(who, "predict is not the sign of the decision function")
    ran.append("support/decision consistent")
    if result.objective is None:
        return ran + ["objective: none reported"]
    loss_fn = _decision_loss(result.formulation, decision_loss)
    if loss_fn is None:
        why = "decision_loss=False" if decision_loss is False else f"no decision_loss for {result.formulation.name!r}"
        return ran + [f"objective skipped ({why})"]
    loop, sur = result.loop, result.surrogate
    if not loop.needs_surrogate:
        if getattr(loop, "penalty", "l1") == "l2":
            def pen_of(x):
                return np.asarray(x, dtype=float) ** 2
        else:
            d0 = 1.0 if sur is None else float(np.asarray(sur.derivative(np.zeros(1)))[0])

            def pen_of(x):
                return d0 * np.asarray(x, dtype=float)
    else:
        def pen_of(x):
            return np.asarray(sur.phi(np.asarray(x, dtype=float)), dtype=float)
    tol = rtol * max(1.0, abs(result.objective))
    # the objective is loss + penalty at the returned coefficients, with or without n_features
    # (groups outside the support are exactly zero): no allowance
    loss = loss_fn(f, _codes(result.formulation, np.asarray(y)))
    pen = float(np.sum(pen_of(t)))
    if not abs(result.objective - (loss + pen)) <= tol:
        _fail(who, f"objective {result.objective!r}, recomputed loss + penalty {loss + pen!r} "
                   f"(loss {loss!r}, penalty {pen!r}, tolerance {tol:.3g})")
    return ran + ["objective recomputed"]


# =============================================================================== pytest helper
def parametrize_with_checks(components: Iterable, *, X=None, y=None, decision_loss: Callable | bool | None = None):
    """A ``pytest.mark.parametrize("component, check", ...)`` over ``components`` (surrogate,
    loop, backend or formulation instances), each paired with its ``check_*``::

        @parametrize_with_checks([MySurrogate(), MySurrogate(a=3.0)])
        def test_conformance(component, check):
            check(component)

    Formulations are checked on ``(X, y)`` (default :func:`toy_data`) with ``decision_loss``
    (see :func:`check_formulation`: needed for a formulation the kit has no loss for).
    """
    import functools

    import pytest

    if X is None:
        X, y = toy_data()
    params = []
    for comp in components:
        if isinstance(comp, Surrogate):
            chk = check_surrogate
        elif isinstance(comp, OuterLoop):
            chk = check_loop
        elif isinstance(comp, Backend):
            chk = check_backend
        elif isinstance(comp, Formulation):
            chk = functools.partial(lambda c, X, y: check_formulation(c, X, y, decision_loss=decision_loss), X=X, y=y)
        else:
            raise TypeError(f"parametrize_with_checks: {comp!r} is not an fsframe component instance")
        label = comp.name if isinstance(comp, Backend) else str(comp)
        params.append(pytest.param(comp, chk, id=f"{type(comp).__name__}:{label}"))
    return pytest.mark.parametrize("component, check", params)
