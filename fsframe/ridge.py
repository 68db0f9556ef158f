"""A smooth loss plus per-group ridge weights, solved by Newton's method from ``X`` and certified
by strong convexity (the EM step of a logistic or least-squares model; docs/glm.md, "EM steps
from X").

The problem, over the coefficients of the *free* groups (``q_j`` finite; an infinite ``q_j`` fixes
``w_j = 0``) and an unpenalised intercept ``b``::

    F(w, b) = C * sum_i l(y_i, x_i w + b) + sum_j q_j w_j^2

with ``l`` the logistic loss ``log(1 + exp(-y z))`` (``y`` in ``{-1, +1}``) or half the squared
residual ``(y - z)^2 / 2``. Both are smooth and convex in ``z``; ``F`` is strongly convex in ``w``
but not in ``b`` (nothing penalises it), so the certificate works on the *profile*
``G(w) = min_b F(w, b)``:

* ``G(w) - w' Q w`` is convex (``Q = diag(q_j)``; ``F - sum_j q_j w_j^2`` is jointly convex, and
  partial minimisation keeps convexity), so ``G(v) >= G(w) + grad G(w)' (v - w) + (v - w)' Q (v -
  w)`` for all ``v``. Minimising the right-hand side over ``v`` (at ``v - w = -Q^(-1) grad G / 2``)
  gives ``G(w) - G* <= 1/4 grad G' Q^(-1) grad G = 1/4 sum_j g_j^2 / q_j``; adding the inequality at
  ``(w, w*)`` and ``(w*, w)`` gives ``2 ||w - w*||_Q^2 <= grad G(w)' (w - w*) <= ||grad G(w)||_(Q^-1)
  ||w - w*||_Q``, so ``||w - w*||_Q <= 1/2 ||grad G(w)||_(Q^-1)`` and ``||w - w*|| <= ||w -
  w*||_Q / sqrt(min_j q_j)``. Weighting by ``Q`` (not by ``mu = 2 min_j q_j`` alone) keeps the
  bound tight when the ``q_j`` differ by orders of magnitude (EM's weights do). Dividing the
  objective by ``C`` (scikit-learn's convention) divides ``Q`` by ``C`` too: the bound is the same.
* ``grad G(w) = grad_w F(w, b*(w))`` (Danskin). ``b*(w)`` is polished by a one-dimensional
  Newton method; what is left of ``g_b = dF/db`` bounds ``|b - b*(w)| <= delta``: exactly
  ``|g_b| / (C m)`` for least squares; for the logistic loss ``delta = 2 |g_b| / h_b`` (``h_b`` the
  curvature in ``b``), valid when ``C m L3 delta <= h_b / 2`` with ``L3 = 1 / (6 sqrt 3)`` the
  largest ``|l'''|`` (``h_b`` stays above ``h_b / 2`` on that interval, so ``dF/db`` changes sign
  in it). Then ``F(w, b) - G(w) <= |g_b| delta`` (convexity in ``b``) and, since ``grad G(w) -
  grad_w F(w, b) = X' (l'(z*) - l'(z))`` with every ``|z*_i - z_i| <= delta``, ``||grad
  G(w)||_(Q^-1) <= ||grad_w F(w, b)||_(Q^-1) + ||Q^(-1/2) X'||_F C L2 sqrt(m) delta`` (``L2`` the
  largest ``l''``: 1/4 logistic, 1 squared; the same with ``||X||_F`` for the Euclidean norm).

The certified bound on the objective's distance to the optimum is therefore ``gap_bound = |g_b|
delta + 1/4 (||grad_w F||_(Q^-1) + ||Q^(-1/2) X'||_F C L2 sqrt(m) delta)^2`` and
``distance_bound`` (Euclidean) the same bracket over ``2 sqrt(min_j q_j)``. :class:`RidgeSolution` carries it
with a :class:`~fsframe.backends.certificate.Certificate` whose ``gap`` is it relative to ``|F|``;
the status is OPTIMAL only when that relative bound is within the tolerance asked for.

The Newton system (``H = [X' D X + 2Q, X' d; d' X, sum d]``) is solved on the smaller side: an
``(n + 1)``-square Cholesky when the free groups are at most the samples, else Woodbury's identity
on the ``m``-square matrix ``I + D^(1/2) X (2Q)^(-1) X' D^(1/2)`` and a Schur complement for ``b``.
Each step is damped by backtracking on ``F`` (Armijo); the iterations start from the previous
solution (EM's warm start).
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.special import expit

from .backends.certificate import Certificate
from .enums import Status

__all__ = ["RidgeSolution", "ridge_glm", "LOSSES"]

LOSSES = ("logistic", "squared")

DENSE_LIMIT = 50_000_000
"""A sparse ``X`` whose free columns have more entries than this (``m`` times their count, 400 MB
dense) is declined (:func:`ridge_glm` returns ``None``): the Newton system is formed densely."""

_L3 = 1.0 / (6.0 * math.sqrt(3.0))  # max |d^3/dz^3 log(1 + exp(-z))|
_L2 = {"logistic": 0.25, "squared": 1.0}  # max l''


@attrs.frozen(eq=False)
class RidgeSolution:
    """What :func:`ridge_glm` returns: ``coef`` (every group, the fixed ones exactly 0),
    ``intercept``, ``objective`` ``F(w, b)`` (loss plus ``sum_j q_j w_j^2``), ``loss``,
    ``gap_bound`` (certified ``F(w, b) - min F``), ``distance_bound`` (certified ``||w - w*||``,
    Euclidean),
    ``grad_norm`` (the bound on ``||grad G(w)||`` of the module docstring), ``mu`` (``2 min_j q_j``
    over the free groups), ``iterations`` (Newton steps), ``status`` and ``certificate`` (``gap``
    the relative ``gap_bound``; no constraints, so ``primal_residual`` 0; ``dual_residual`` the
    gradient bound relative to the gradient's terms)."""

    coef: NDArray
    intercept: float
    objective: float
    loss: float
    gap_bound: float
    distance_bound: float
    grad_norm: float
    mu: float
    iterations: int
    status: Status
    certificate: Certificate
    message: str = ""


def _derivs(loss: str, y: NDArray, z: NDArray, C: float):
    """``(value, l', l'')`` of ``C * l(y, z)`` per sample."""
    if loss == "logistic":
        yz = y * z
        val = C * np.logaddexp(0.0, -yz)
        s = expit(-yz)  # sigma(-y z)
        return val, -C * y * s, C * expit(yz) * s  # s (1 - s) without 1 - s losing s's digits
    r = y - z
    return 0.5 * C * r * r, -C * r, np.full(z.shape, C)


def _newton_direction(Xf: NDArray, d: NDArray, q2: NDArray, gw: NDArray, gb: float):
    """``-H^(-1) [gw; gb]`` for ``H = [Xf' D Xf + diag(q2), Xf' d; d' Xf, sum d]``; ``None`` when
    Woodbury's ``m``-square matrix cannot be factored in double precision."""
    m, nf = Xf.shape
    s = float(d.sum())
    if nf <= m:
        Xa = np.hstack([Xf, np.ones((m, 1))])
        H = Xa.T @ (d[:, None] * Xa)
        H[np.arange(nf), np.arange(nf)] += q2
        g = np.append(gw, gb)
        # Jacobi scaling diag(H)^(-1/2) before the factor: features of mixed scales (and weights
        # q_j of mixed sizes) leave H's condition number to the scaled matrix's; the intercept's
        # diagonal (sum d, which may underflow to 0) gets 1e-14 of its own scale
        sc = 1.0 / np.sqrt(np.maximum(np.diag(H), np.finfo(float).tiny))
        Hs = H * sc[:, None] * sc[None, :]
        Hs[nf, nf] += 1e-14
        try:
            step = -sc * sla.cho_solve(sla.cho_factor(Hs, check_finite=False), sc * g, check_finite=False)
        except np.linalg.LinAlgError:
            step = -sc * np.linalg.lstsq(Hs, sc * g, rcond=None)[0]
        return step[:nf], float(step[nf])
    sq = np.sqrt(d)
    Z = sq[:, None] * Xf
    Zq = Z / q2
    M = Zq @ Z.T
    M[np.arange(m), np.arange(m)] += 1.0
    try:
        cf = sla.cho_factor(M, check_finite=False)
    except np.linalg.LinAlgError:
        return None  # not positive definite in double precision: no Newton step from here

    def kinv(v):  # (Xf' D Xf + diag(q2))^(-1) v, Woodbury
        v = v / q2
        return v - (Zq.T @ sla.cho_solve(cf, Z @ v, check_finite=False))

    u = Xf.T @ d
    ki_g, ki_u = kinv(gw), kinv(u)
    # s - u' K^(-1) u = sqrt(d)' M^(-1) sqrt(d) exactly (K = Z'Z + diag(q2), u = Z' sqrt(d), and
    # Z K^(-1) Z' = I - M^(-1)): no cancellation between two nearly equal terms
    schur = max(float(sq @ sla.cho_solve(cf, sq, check_finite=False)), 1e-14 * max(s, 1e-300))
    db = (-gb + float(u @ ki_g)) / schur
    dw = -ki_g - ki_u * db
    return dw, float(db)


def _polish_intercept(loss: str, y: NDArray, z0: NDArray, C: float, b: float) -> float:
    """``b`` moved to ``argmin_b sum_i C l(y_i, z0_i + b)`` to double precision (a bracketed
    one-dimensional Newton method; closed form for least squares)."""
    if loss == "squared":
        return float(np.mean(y - z0))
    lo, hi = -np.inf, np.inf
    for _ in range(100):
        _, g, h = _derivs(loss, y, z0 + b, C)
        gb, hb = float(g.sum()), float(h.sum())
        if gb == 0.0:
            break
        if gb > 0:
            hi = min(hi, b)
        else:
            lo = max(lo, b)
        new = b - gb / hb if hb > 0 else np.nan
        if not (lo < new < hi) or not np.isfinite(new):
            new = 0.5 * (lo + hi) if np.isfinite(lo) and np.isfinite(hi) else b - np.sign(gb) * max(1.0, abs(b))
        if new == b:
            break
        b = new
    return float(b)


def _certify(loss: str, X: NDArray, y: NDArray, C: float, q: NDArray, w: NDArray, b: float, xnorm: float,
             tol: float):
    """``(objective, loss, gap_bound, distance_bound, grad_bound, certificate, status)`` at ``(w, b)``
    (the module docstring's bound)."""
    z = X @ w + b
    vals, g, h = _derivs(loss, y, z, C)
    f_loss = float(vals.sum())
    pen = float(q @ (w * w))
    F = f_loss + pen
    gl = X.T @ g
    gw = gl + 2.0 * q * w
    gb, hb = abs(float(g.sum())), float(h.sum())
    m = y.size
    if gb == 0.0:
        delta = 0.0
    elif loss == "squared":
        delta = gb / (C * m)
    else:
        delta = 2.0 * gb / hb if hb > 0 else np.inf
        if not C * m * _L3 * delta <= 0.5 * hb:
            delta = np.inf
    shift = C * _L2[loss] * math.sqrt(m) * delta if delta else 0.0  # bound on ||g(z*) - g(z)||
    grad = float(np.linalg.norm(gw)) + (shift * xnorm if shift else 0.0)
    if q.size:
        # ||grad G(w)||_(Q^-1) <= ||Q^(-1/2) grad_w F|| + ||Q^(-1/2) X'||_F * shift
        xq = math.sqrt(float(np.sum(np.sum(X * X, axis=0) / q)))
        gq = math.sqrt(float(np.sum(gw * gw / q))) + (shift * xq if shift else 0.0)
        gap = gb * delta + 0.25 * gq * gq
        dist = 0.5 * gq / math.sqrt(float(np.min(q)))
    else:
        gap, dist = gb * delta, 0.0
    scale = max(abs(F), np.finfo(float).tiny)
    rel = gap / scale if np.isfinite(gap) else np.inf
    gscale = max(float(np.linalg.norm(gl)), float(np.linalg.norm(2.0 * q * w)), np.finfo(float).tiny)
    cert = Certificate(primal_residual=0.0, dual_residual=float(grad / gscale) if np.isfinite(grad) else np.inf,
                       dual_bound=float(F - gap), gap=float(rel))
    status = Status.OPTIMAL if rel <= tol else Status.OPTIMAL_INACCURATE if np.isfinite(rel) else Status.ERROR
    return F, f_loss, float(gap), float(dist), float(grad), cert, status


def ridge_glm(loss: str, X, y, C: float, quad, *, start: tuple | None = None, tol: float = 1e-6,
              max_iter: int = 100) -> RidgeSolution | None:
    """Minimise ``C * sum_i l(y_i, x_i w + b) + sum_j quad_j w_j^2`` over ``w`` and ``b`` (the
    module docstring): ``loss`` in :data:`LOSSES`, ``X`` ``(m, n)`` (dense or scipy sparse), ``y``
    ``(m,)`` (``-1``/``+1`` for ``"logistic"``), ``quad`` ``(n,)`` (``inf``: ``w_j`` fixed at 0),
    ``start`` ``(w, b)`` to start from (EM's previous step; default zeros and ``b = 0``), ``tol``
    the relative gap bound that makes the status OPTIMAL (the Newton steps go on to double
    precision, at most ``max_iter``). ``None`` when a free group's weight is not positive (no
    strong convexity to certify with), a logistic ``y`` of one class (no optimum: ``b`` runs off),
    or ``X`` is sparse beyond :data:`DENSE_LIMIT`."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, not {loss!r}")
    q = np.asarray(quad, dtype=float).ravel()
    free = np.isfinite(q)
    qf = q[free]
    if qf.size and not np.min(qf) > 0:
        return None
    y = np.asarray(y, dtype=float).ravel()
    if loss == "logistic" and not (np.any(y > 0) and np.any(y < 0)):
        return None  # one class: the intercept runs off to infinity, no optimum to certify
    if sp.issparse(X) and X.shape[0] * int(free.sum()) > DENSE_LIMIT:
        return None  # the free columns are made dense: not for a large sparse X
    Xf = X[:, np.flatnonzero(free)]
    Xf = Xf.toarray() if sp.issparse(Xf) else np.asarray(Xf, dtype=float)
    xnorm = float(np.linalg.norm(Xf))
    q2 = 2.0 * qf
    if start is None:
        w, b = np.zeros(qf.size), 0.0
    else:
        w, b = np.asarray(start[0], dtype=float).ravel()[free].copy(), float(start[1])
        if not (np.all(np.isfinite(w)) and np.isfinite(b)):
            w, b = np.zeros(qf.size), 0.0

    def value(w, b):
        return float(_derivs(loss, y, Xf @ w + b, C)[0].sum() + qf @ (w * w))

    b = _polish_intercept(loss, y, Xf @ w, C, b)
    F = value(w, b)
    k = 0
    message = "newton decrement below double precision"
    for k in range(1, max_iter + 1):
        z = Xf @ w + b
        _, g, h = _derivs(loss, y, z, C)
        gw, gb = Xf.T @ g + q2 * w, float(g.sum())
        direction = _newton_direction(Xf, h, q2, gw, gb)
        if direction is None:
            message = "the Newton system could not be factored in double precision"
            break
        dw, db = direction
        dec = -(float(gw @ dw) + gb * db)  # the Newton decrement squared
        if not dec > 1e-16 * max(1.0, abs(F)):
            break
        step = 1.0
        while True:
            Fn = value(w + step * dw, b + step * db)
            if Fn <= F - 0.25 * step * dec or step < 1e-10:
                break
            step *= 0.5
        if not Fn < F:  # no progress in double precision
            message = "no further decrease in double precision"
            break
        w, b, F = w + step * dw, b + step * db, Fn
    else:
        message = f"max_iter={max_iter} Newton steps"
    b = _polish_intercept(loss, y, Xf @ w, C, b)
    F, f_loss, gap, dist, grad, cert, status = _certify(loss, Xf, y, C, qf, w, b, xnorm, tol)
    coef = np.zeros(q.size)
    coef[free] = w
    return RidgeSolution(coef, float(b), F, f_loss, gap, dist, grad, 2.0 * float(np.min(qf)) if qf.size else np.inf,
                         k, status, cert, _stop_message(status, message, gap, cert.gap, tol))


def _stop_message(status: Status, exit_path: str, gap: float, rel: float, tol: float) -> str:
    """What the solution says: the certificate first (within ``tol`` or not), then how the
    iterations ended."""
    if status is Status.OPTIMAL:
        return f"certified gap <= {gap:.2e} ({rel:.1e} relative, within tol={tol:g}); {exit_path}"
    return f"not certified: gap bound {gap:.2e} ({rel:.1e} relative) beyond tol={tol:g}; {exit_path}"
