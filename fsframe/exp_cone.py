"""The exponential cone in fsframe's convention: membership, distance and Euclidean projection,
for many cones at once (numpy only).

fsframe states an exponential cone as three consecutive rows ``(r, s, t)`` of ``h - G x``::

    K_exp = closure {(r, s, t) : s > 0, s * exp(r / s) <= t}
          = {(r, s, t) : s > 0, s * exp(r / s) <= t}  U  {(r, 0, t) : r <= 0, t >= 0}

(Clarabel's ``ExponentialConeT`` and CVXPY's ``ExpCone`` order; ECOS orders the same cone
``(r, t, s)``, which its backend permutes). Its dual cone is

    K_exp* = closure {(u, v, w) : u < 0, -u * exp(v / u) <= e * w}.

The projection (:func:`project`) is exact to rounding: a point of the cone is its own
projection; any other point is projected onto the boundary, which is the union of the face
``{(r, 0, t) : r <= 0, t >= 0}`` (projected onto in closed form) and the rays
``lambda * (rho, 1, exp(rho))``, ``lambda >= 0``. On a ray the best ``lambda`` is closed form and
the best ``rho`` is the root of the derivative of the projection's length, bracketed on a grid
and refined by bisection; the nearer of the two candidates is the projection. The dual cone's
projection follows by Moreau's decomposition: ``proj_K*(z) = z + proj_K(-z)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["in_cone", "in_dual_cone", "project", "project_dual", "distance"]

_GRID = np.linspace(-60.0, 60.0, 481)
"""Values of ``rho = r / s`` scanned for the best boundary ray (``exp(60)`` is 1e26: beyond it
the ray is the face's ``t`` axis to double precision, which the face candidate covers)."""
_BISECT = 64


def _triples(v) -> NDArray:
    v = np.asarray(v, dtype=float)
    if v.ndim != 1 or v.size % 3:
        raise ValueError(f"exponential cones come in triples; got an array of shape {v.shape}")
    return v.reshape(-1, 3)


def in_cone(v, tol: float = 0.0) -> NDArray:
    """Per cone (``v`` holds triples ``(r, s, t)``), whether it lies in ``K_exp`` (exactly, or with
    ``tol`` absolute slack on ``t``)."""
    r, s, t = _triples(v).T
    out = (s == 0) & (r <= tol) & (t >= -tol)
    pos = s > 0
    with np.errstate(over="ignore", invalid="ignore"):
        val = s[pos] * np.exp(r[pos] / s[pos])
    out[pos] = val <= t[pos] + tol
    return out


def in_dual_cone(z, tol: float = 0.0) -> NDArray:
    """Per cone, whether the triple ``(u, v, w)`` lies in ``K_exp*``."""
    u, v, w = _triples(z).T
    out = (u == 0) & (v >= -tol) & (w >= -tol)
    neg = u < 0
    with np.errstate(over="ignore", invalid="ignore"):
        val = -u[neg] * np.exp(v[neg] / u[neg] - 1.0)
    out[neg] = val <= w[neg] + tol
    return out


def _ray(rho: NDArray) -> NDArray:
    """Unit directions of the boundary rays ``(rho, 1, exp(rho))``, computed without overflow."""
    big = rho > 0
    e = np.exp(-np.abs(rho))
    d = np.where(big[..., None], np.stack([rho * e, e, np.ones_like(rho)], axis=-1),
                 np.stack([rho, np.ones_like(rho), e], axis=-1))
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _slope(v: NDArray, rho: NDArray) -> NDArray:
    """A positive multiple of the derivative in ``rho`` of the projection length
    ``<v, d(rho)> / ||d(rho)||``: ``<v, d x d*>`` with ``d = (rho, 1, e^rho)`` and the dual
    boundary direction orthogonal to it, ``d* = (-1, rho - 1, e^-rho)`` (``d x d*`` lies in the
    tangent plane, along the part of ``d'`` orthogonal to ``d``), scaled by ``e^-|rho|``."""
    r, s, t = v[:, 0], v[:, 1], v[:, 2]
    q = rho * rho - rho + 1.0
    a = np.abs(rho)
    e2 = np.exp(-2.0 * a)
    e1 = np.exp(-a)
    pos = rho >= 0
    return np.where(pos, r * (e2 - (rho - 1.0)) - s * (1.0 + rho * e2) + t * q * e1,
                    r * (1.0 - (rho - 1.0) * e2) - s * (e2 + rho) + t * q * e1)


def _best_ray(v: NDArray) -> NDArray:
    """For each row of ``v`` (outside the cone), the projection onto the nearest boundary ray."""
    # coarse scan of the projection length <v, d(rho)> over unit directions, then bisection on
    # its derivative between the neighbours of the best grid point
    D = _ray(_GRID)  # (g, 3)
    k = np.argmax(v @ D.T, axis=1)
    lo = _GRID[np.maximum(k - 1, 0)]
    hi = _GRID[np.minimum(k + 1, _GRID.size - 1)]

    s_lo = _slope(v, lo)
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        s_mid = _slope(v, mid)
        up = (s_mid > 0) == (s_lo > 0)
        lo = np.where(up, mid, lo)
        s_lo = np.where(up, s_mid, s_lo)
        hi = np.where(up, hi, mid)
    rho = 0.5 * (lo + hi)
    d = _ray(rho)
    lam = np.maximum(np.einsum("ij,ij->i", v, d), 0.0)
    return lam[:, None] * d


def _project_rows(V: NDArray) -> NDArray:
    out = V.copy()
    inside = in_cone(V.ravel())
    todo = np.flatnonzero(~inside)
    if not todo.size:
        return out
    W = V[todo]
    face = np.column_stack([np.minimum(W[:, 0], 0.0), np.zeros(len(W)), np.maximum(W[:, 2], 0.0)])
    ray = _best_ray(W)
    use_ray = np.linalg.norm(W - ray, axis=1) < np.linalg.norm(W - face, axis=1)
    out[todo] = np.where(use_ray[:, None], ray, face)
    return out


def project(v) -> NDArray:
    """The Euclidean projection of each triple of ``v`` onto ``K_exp`` (a flat array like ``v``)."""
    return _project_rows(_triples(v)).ravel()


def project_dual(z) -> NDArray:
    """The Euclidean projection of each triple of ``z`` onto ``K_exp*`` (Moreau:
    ``z + proj_K(-z)``)."""
    Z = _triples(z)
    return (Z + _project_rows(-Z)).ravel()


def distance(v) -> NDArray:
    """Per cone, the Euclidean distance of the triple to ``K_exp`` (0 inside)."""
    V = _triples(v)
    return np.linalg.norm(V - _project_rows(V), axis=1)
