"""fsframe's own check of a backend's claim that a problem has no optimum (infeasible, unbounded,
or either): a Farkas certificate of infeasibility (:func:`check_infeasibility`, with the radius it
proves in exact arithmetic, :func:`farkas_radius`), a direction of unbounded descent
(:func:`check_unboundedness`), the zero model as a feasible point that refutes an infeasibility
claim (:func:`feasible_point`), and the one rule that turns them into a status
(:func:`judge_claim`). :class:`~fsframe.backends.base.BackendSession` applies it to every claim a
backend makes. Rows and points are sized as :mod:`fsframe.backends.certificate` sizes them when it
judges an optimal answer (one problem must never be both certified feasible and verified
infeasible).
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from ..canonical import ProblemData
from ..enums import Status
from . import kkt_terms as kt
from .certificate import GAP_FLOOR, relative_violation

__all__ = ["CLAIMS", "ClaimCheck", "farkas_radius", "check_infeasibility", "check_unboundedness", "feasible_point",
           "FEASIBLE_VIOLATION", "judge_claim", "FARKAS_POLISH_ROUNDS"]

CLAIMS = (Status.INFEASIBLE, Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED)
"""The statuses that claim the problem has no optimum: checked by :func:`judge_claim`."""


@attrs.frozen
class ClaimCheck:
    """fsframe's check of a backend's claim that a problem is infeasible or unbounded.

    ``claim`` is the status claimed; ``verified`` whether fsframe's own arithmetic on the compiled
    problem proves it (a Farkas certificate of infeasibility, a direction of unbounded descent
    from a feasible point); ``refuted`` whether it proves the opposite (a point that satisfies
    every constraint refutes an infeasibility claim); ``reason`` says what was checked, with the
    measures."""

    claim: Status
    verified: bool
    refuted: bool
    reason: str
    radius: float = float("inf")
    """For a verified infeasibility claim, the radius ``R`` of :func:`farkas_radius`: no ``x`` with
    ``||x||_inf < R`` is feasible (``inf``: no ``x`` at all, the claim is global). ``inf`` for any
    other claim."""


def _zero_model(data: ProblemData) -> NDArray:
    """The point with every column at zero (clipped into its bounds) and the auxiliary columns at
    their least values given the others: for the formulations whose empty model is feasible
    (every loss-based one) a feasible point, whatever the backend says."""
    return data.settled(np.clip(np.zeros(data.n), data.lb, data.ub))


FEASIBLE_VIOLATION = 1e-12
"""The largest relative violation (:func:`relative_violation`) at which :func:`feasible_point`
takes the zero model as feasible: rounding in settling the auxiliary columns, far below any
solver tolerance."""


def feasible_point(data: ProblemData) -> tuple[NDArray | None, float]:
    """``(x, violation)``: the zero model (:func:`_zero_model`) and its largest constraint
    violation, each row's relative to its own size (:func:`relative_violation`); ``x`` is
    ``None`` unless it satisfies every constraint to within :data:`FEASIBLE_VIOLATION` (rounding,
    not a solver's tolerance: a problem infeasible by ``5e-6``, ``x1 + x2 <= -5e-6`` with
    ``x >= 0``, must not count as feasible, since the zero model then refutes a true
    infeasibility claim, or makes a direction of descent "verify" unboundedness)."""
    x = _zero_model(data)
    if not np.all(np.isfinite(x)):
        return None, float("inf")
    viol = relative_violation(data, x)
    return (x if viol <= FEASIBLE_VIOLATION else None), float(viol)


FARKAS_POLISH_ROUNDS = 5
"""Rounds of the least-norm correction :func:`check_infeasibility` applies to a Farkas certificate
whose proof is local (an interior-point solver's certificate holds ``A'y + G'z = 0`` on its free
columns only to its tolerance). Each round also cancels the reduced costs of the columns earlier
rounds found unexcused: without that, one at rounding changed sides from round to round, and 3
rounds left 2 of ECOS's 49 true claims on the random rows of tests/backends/test_claims.py
local (ECOS's and Clarabel's certificates there needed up to 13 rounds); with it none needs more
than 3."""


def _farkas(data: ProblemData, y: NDArray, z: NDArray) -> dict:
    """The measures of a Farkas certificate ``(y, z)`` (``z`` already in the dual cone): its
    reduced costs ``r = A'y + G'z``, the size of their terms per column, the columns no finite
    bound excuses (``bad``), those of them above the rounding of their own sums, the margin
    ``d`` and the size ``S`` of its terms."""
    r = (kt.rmatvec(data.A, y) if data.A.shape[0] else np.zeros(data.n)) \
        + (kt.rmatvec(data.G, z) if data.G.shape[0] else 0.0)
    col = (kt.abs_rmatvec(data.A, np.abs(y)) if data.A.shape[0] else 0.0) \
        + (kt.abs_rmatvec(data.G, np.abs(z)) if data.G.shape[0] else 0.0)
    col = np.broadcast_to(np.asarray(col, dtype=float), (data.n,))
    bad = kt.unexcused(data, r)
    # a sum of k products is known to k * eps of the size of its terms: below that, a reduced cost
    # is zero as far as the arithmetic that formed it can tell
    terms = _column_counts(data)
    above = bad & (np.abs(r) > (terms + 2) * np.finfo(float).eps * col)
    lo, hi = (r > 0) & ~bad, (r < 0) & ~bad
    L = float(r[lo] @ data.lb[lo]) + float(r[hi] @ data.ub[hi])
    by, hz = float(data.b @ y), float(data.h @ z)
    S = float(_rhs_sizes(data.A, data.b) @ np.abs(y)) + float(_rhs_sizes(data.G, data.h) @ np.abs(z)) \
        + float(col[lo] @ np.abs(data.lb[lo])) + float(col[hi] @ np.abs(data.ub[hi]))
    d = L - by - hz
    # the radius the certificate proves: d / sum |r_k| over every unexcused column, those at
    # rounding included (a reduced cost of 1e-15 against a margin of 1e-12 leaves room at 1e3)
    loose = float(np.abs(r[bad]).sum())
    radius = d / loose if loose > 0 else np.inf
    # the radius a global proof must reach: where a point's rows, of terms sum_k col_k |x_k|, hold
    # the margin d only within one rounding unit (beyond it the arithmetic cannot tell such a point
    # feasible from not); and never less than the fixed 1 / (10 tol) the caller adds
    unit = np.finfo(float).eps * float(col[bad].sum())
    reach = d / unit if unit > 0 else np.inf
    return dict(r=r, col=col, bad=bad, above=above, d=d, S=max(S, GAP_FLOOR), radius=radius, reach=reach, y=y, z=z)


def _rhs_sizes(M, rhs: NDArray) -> NDArray:
    """Per row of ``M x`` against ``rhs``, the size of its right-hand side in a Farkas margin:
    ``|rhs_i|``, but ``max(1, |rhs_i|)`` for a row without entries (the constant ``0`` against
    ``rhs_i``), as :func:`~fsframe.backends.certificate._row_sizes` sizes it when judging a point: ``0 <= -1e-13`` is rounding
    there, so it must not prove infeasibility here (one problem both certified feasible and
    verified infeasible)."""
    out = np.abs(rhs)
    if M.shape[0]:
        out = np.where(kt.cached(kt.ROW_MAX, M, kt.row_max) == 0, np.maximum(out, 1.0), out)
    return out


def _column_counts(data: ProblemData) -> NDArray:
    """The number of entries of each column of ``A`` and ``G`` together."""
    out = np.zeros(data.n)
    for M in (data.A, data.G):
        if M.shape[0]:
            out += np.bincount(M.tocsr().indices, minlength=data.n)[: data.n]
    return out


def _polish_farkas(data: ProblemData, y: NDArray, z: NDArray, bad: NDArray, r: NDArray):
    """``(y, z)`` corrected by ``(dy, dz)`` with ``(A'dy + G'dz)_k = -r_k`` on the columns ``bad``
    (the unexcused ones and the free ones), ``z`` projected back onto the dual cone; ``None`` on
    any trouble. The correction is the least-norm one in relative terms: each multiplier moves in
    proportion to its size (one at zero stays there, so ``z`` stays in its cone) and each column's
    equation is taken relative to its terms (on columns of scale 1e-4..1e4 the plain least-norm
    correction left the small columns' reduced costs above their rounding, and ECOS's true claim
    local). A dense least-squares solve, or LSQR on a large matrix. Whatever it returns is checked
    afresh: a corrected certificate that proves infeasibility is a proof, however it was found."""
    import scipy.sparse as sp  # not at import: `fsframe methods` loads the backends without scipy

    M = sp.vstack([data.A, data.G], format="csc")[:, np.flatnonzero(bad)]
    w = np.abs(np.concatenate([y, z]))
    size = np.maximum(np.asarray(abs(M).T @ w).ravel(), np.finfo(float).tiny)  # each column's terms
    W = (sp.diags(w) @ M @ sp.diags(1.0 / size)).T  # in u = dv / w, per unit of each column's terms
    rhs = -r[bad] / size
    try:
        if W.shape[0] * W.shape[1] <= 4_000_000:
            u = np.linalg.lstsq(W.toarray(), rhs, rcond=None)[0]
        else:
            from scipy.sparse.linalg import lsqr

            u = lsqr(W.tocsr(), rhs, atol=1e-15, btol=1e-15, iter_lim=20 * W.shape[0])[0]
    except (np.linalg.LinAlgError, ValueError):  # pragma: no cover - a failed solve is no evidence
        return None
    v = w * u
    if not np.all(np.isfinite(v)):
        return None
    p = data.A.shape[0]
    return y + v[:p], kt.project_dual_cone(data, z + v[p:])


def farkas_radius(data: ProblemData, y: NDArray, z: NDArray) -> float:
    """The radius ``R`` within which the Farkas certificate ``(y, z)`` (``z`` in the dual cone) proves
    that no ``x`` is feasible, computed in exact rational arithmetic on the stored floats: with
    ``r = A'y + G'z``, the bounds' excuses ``L`` (as in :func:`check_infeasibility`) and the margin
    ``d = L - b'y - h'z``, every feasible ``x`` has ``d <= sum_k |r_k| |x_k|`` over the unexcused
    columns, so none has ``||x||_inf < R = d / sum_k |r_k|``. ``inf`` when ``d > 0`` and every
    unexcused reduced cost is exactly zero (the claim is global: an unexcused column is free on the
    side its reduced cost needs, so no box confines it); ``0`` when ``d <= 0``. Rounded down to a
    float, so the statement stays true. Floating point cannot decide this: ``-x1 - (1 - 2^-52) x2 <=
    0`` with ``x1 + x2 <= -1`` leaves ``r_2 = 2^-52``, at rounding, and is feasible at ``x = (2^53 - 1,
    -2^53)``, just beyond ``R = 2^52``.

    Exact for linear rows only (equalities and the nonnegative orthant): for cone rows (second-order,
    exponential) the bound rests on ``z`` lying in the dual cone, which is a float projection of
    the solver's ``z``, not checked in exact arithmetic.

    Beyond :data:`EXACT_RADIUS_NNZ` non-zeros in ``A`` and ``G`` (the rational sums cost ~10 µs each:
    ~10 s at a million), computed in floating point with a rigorous error bound
    (:func:`_farkas_radius_float`, numpy): every reduced cost ``r_k`` within its bound, ``d``
    bounded below and ``sum |r_k|`` above, so the float radius is never larger than the exact one
    (smaller by about the relative bound of the reduced costs where their sums cancel: 8e-12 for
    ``|r_k| ~ 0.5``, 3e-9 for ``|r_k| ~ 5e-4``, the near-zero reduced costs of a solver's
    certificate). A reduced cost whose sign is open (within its bound of 0, as ``2^-52`` above, or
    ``1 - 1``) is summed exactly, that column alone; where the margin is not proven positive, or
    most columns' signs are open, the exact rational computation decides
    (:func:`_farkas_radius_exact`). Measured at a million non-zeros (100 rows, 10^4 columns, a
    shared 2-core machine): ``|r_k| ~ 0.5`` 0.18 s (exact 19 s), ``|r_k| ~ 5e-4`` 0.16 s (exact 20
    s; summing every cancelling column exactly took 72 s), ``|r_k| ~ 5e-13`` (every sign open) 0.2 s
    to decline, then the exact 18 s."""
    if data.A.nnz + data.G.nnz <= EXACT_RADIUS_NNZ:
        return _farkas_radius_exact(data, y, z)
    fast = _farkas_radius_float(data, y, z)
    return _farkas_radius_exact(data, y, z) if fast is None else fast


EXACT_RADIUS_NNZ = 10_000
"""Up to this many non-zeros in ``A`` and ``G`` :func:`farkas_radius` is computed exactly (~0.1 s);
beyond, by the float bound, which is never larger than the exact radius."""


_U = 2.0 ** -53  # the unit roundoff of float64
_TINY = 2.0 ** -1074  # the smallest subnormal: an underflowing product's absolute error


def _gamma(n) -> NDArray:
    """Twice Higham's ``gamma_n = n u / (1 - n u)``: a bound on the relative error of a float sum of
    ``n`` products (any order), doubled to cover the rounding of the bound's own sums."""
    n = np.asarray(n, dtype=float)
    return 2.0 * n * _U / (1.0 - n * _U)


def _farkas_radius_float(data: ProblemData, y: NDArray, z: NDArray) -> float | None:
    """:func:`farkas_radius` in floating point, or ``None`` when rounding cannot decide it. Each
    ``r_k`` is computed with ``|r_k - fl(r_k)| <= E_k = gamma_(n_k+2) sum_i |M_ik v_i| + (n_k + 2)
    2^-1074`` (``n_k`` the entries of column ``k``); its sign is certain when ``|fl(r_k)| > E_k``, and
    exactly 0 when every product is 0; a column whose sign is open (``|fl(r_k)| <= E_k``: a sum
    within rounding of 0, as ``1 - 1``) is summed exactly (``Fraction``, that column only) and
    classified by the sign of that sum (a positive ``1e-600`` rounds to ``0.0``, and taken for 0
    it would make the claim global); beyond :data:`EXACT_RADIUS_NNZ` non-zeros, when more than
    half of them lie in such columns (a certificate whose reduced costs are all at rounding), the
    answer is ``None``: :func:`_farkas_radius_exact` is then the cheaper way (16 s against 26 s at
    a million non-zeros). A column whose sign is certain keeps its interval even where
    the sum cancels (a radius smaller by up to ``E_k / |fl(r_k)|``, never a larger one). Then the
    margin is bounded below and
    ``sum |r_k|`` above over the interval ``[fl(r_k) - E_k, fl(r_k) + E_k]`` (rounded outwards), each
    sum with its own ``gamma``; ``R >= d_lo / loose_hi``, rounded down (the largest float where the
    quotient overflows: the radius is finite while a column is unexcused). A margin not proven positive
    (``d_lo <= 0``: a claim that proves nothing, or rounding leaves it open), or a non-finite value,
    returns ``None``."""
    from fractions import Fraction

    import scipy.sparse as sp

    n = data.n
    r = np.zeros(n)
    size = np.zeros(n)  # sum_i |M_ik v_i|
    products = np.zeros(n)  # how many M_ik v_i are non-zero (an underflowing one is not 0 exactly)
    count = np.full(n, 2.0)  # terms per column, + the two sums' additions
    parts = []
    with np.errstate(over="ignore", invalid="ignore"):
        for M, v in ((data.A, y), (data.G, z)):
            if not M.shape[0]:
                continue
            M = sp.csc_matrix(M)
            v = np.asarray(v, dtype=float)
            parts.append((M, v))
            r += M.T @ v
            size += abs(M).T @ np.abs(v)
            products += (M != 0).astype(float).T @ (v != 0).astype(float)
            count += np.diff(M.indptr)
        err = _gamma(count) * size + count * _TINY
        exact_zero = products == 0.0  # every product 0: r_k is exactly 0
        if not (np.all(np.isfinite(r)) and np.all(np.isfinite(err))):
            return None
        lo = np.nextafter(r - err, -np.inf)
        hi = np.nextafter(r + err, np.inf)
        sign = np.sign(r)  # certain where |fl(r_k)| > E_k
        sign[exact_zero] = 0.0
        # a reduced cost within rounding of 0 (its sign, hence its excuse, open; 0 by cancellation
        # as often as not): that column's sum in exact arithmetic, its sign the Fraction's (the float
        # of a positive 1e-600 is 0.0), its value rounded outwards; the others keep their interval
        open_ = ~exact_zero & ~(np.abs(r) > err)
        total = data.A.nnz + data.G.nnz
        if total > EXACT_RADIUS_NNZ and float(np.sum(count[open_] - 2.0)) > 0.5 * total:
            return None  # most of the matrix summed column by column costs more than the exact radius
        for k in np.flatnonzero(open_):
            rk = _exact_column(parts, k)
            r[k] = float(rk)
            sign[k] = (rk > 0) - (rk < 0)
            lo[k] = r[k] if Fraction(r[k]) <= rk else np.nextafter(r[k], -np.inf)
            hi[k] = r[k] if Fraction(r[k]) >= rk else np.nextafter(r[k], np.inf)
        lb, ub = np.asarray(data.lb, dtype=float), np.asarray(data.ub, dtype=float)
        pos, neg = sign > 0, sign < 0
        by_lb, by_ub = pos & np.isfinite(lb), neg & np.isfinite(ub)
        excused = np.concatenate([np.minimum(lo[by_lb] * lb[by_lb], hi[by_lb] * lb[by_lb]),
                                  np.minimum(lo[by_ub] * ub[by_ub], hi[by_ub] * ub[by_ub])])
        unexcused = (pos | neg) & ~by_lb & ~by_ub
        b, h = np.asarray(data.b, dtype=float), np.asarray(data.h, dtype=float)
        y, z = np.asarray(y, dtype=float), np.asarray(z, dtype=float)
        rhs = np.concatenate([-b * y, -h * z])
        terms = np.concatenate([excused, rhs])
        margin = float(np.sum(terms))
        # products of two non-zero factors may underflow (an absolute error); the others are exact zeros
        pairs = (np.count_nonzero(lb[by_lb]) + np.count_nonzero(ub[by_ub]) + np.count_nonzero((b != 0) & (y != 0))
                 + np.count_nonzero((h != 0) & (z != 0)))
        m_err = float(_gamma(terms.size + 2) * np.sum(np.abs(terms))) + pairs * 3 * _TINY
        loose_terms = np.maximum(np.abs(lo[unexcused]), np.abs(hi[unexcused]))
        loose = float(np.sum(loose_terms))
        if not (np.isfinite(margin) and np.isfinite(m_err) and np.isfinite(loose)):
            return None
    d_lo = float(np.nextafter(margin - m_err, -np.inf))
    if d_lo <= 0.0:
        return None  # a margin not proven positive (the excused terms are lower bounds): the exact sums decide
    if not unexcused.any():
        return float("inf")
    # each unexcused |r_k| > 0 is bounded by a term >= 2^-1074 (its outward rounding): loose_hi > 0
    loose_hi = max(float(np.nextafter(loose * (1.0 + float(_gamma(loose_terms.size + 1))), np.inf)), _TINY)
    with np.errstate(over="ignore"):
        radius = d_lo / loose_hi
    # beyond the largest float the radius is still finite (unexcused columns): the largest float holds
    return float(np.nextafter(radius, 0.0)) if np.isfinite(radius) else float(np.finfo(float).max)


def _exact_column(parts, k: int):
    """``r_k = sum_i M_ik v_i`` over ``parts`` (``(csc M, v)`` pairs) as a ``Fraction``."""
    from fractions import Fraction

    total = Fraction(0)
    for M, v in parts:
        lo, hi = M.indptr[k], M.indptr[k + 1]
        for i, a in zip(M.indices[lo:hi].tolist(), M.data[lo:hi].tolist()):
            if a and v[i]:
                total += Fraction(a) * Fraction(float(v[i]))
    return total


def _farkas_radius_exact(data: ProblemData, y: NDArray, z: NDArray) -> float:
    """:func:`farkas_radius` in exact rational arithmetic on the stored floats (``Fraction``: ~10 µs
    per non-zero of ``A`` and ``G``)."""
    from fractions import Fraction

    import scipy.sparse as sp

    r = [Fraction(0)] * data.n
    for M, v in ((data.A, y), (data.G, z)):
        if not M.shape[0]:
            continue
        M = sp.coo_matrix(M)
        vf = [Fraction(float(a)) for a in v]
        for i, k, a in zip(M.row.tolist(), M.col.tolist(), M.data.tolist()):
            if a and vf[i]:
                r[k] += Fraction(a) * vf[i]
    margin = -sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(data.b, y) if a and b), Fraction(0)) \
        - sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(data.h, z) if a and b), Fraction(0))
    loose = Fraction(0)
    for k, rk in enumerate(r):
        if rk > 0 and np.isfinite(data.lb[k]):
            margin += rk * Fraction(float(data.lb[k]))
        elif rk < 0 and np.isfinite(data.ub[k]):
            margin += rk * Fraction(float(data.ub[k]))
        elif rk:
            loose += abs(rk)
    if margin <= 0:
        return 0.0
    if loose == 0:
        return float("inf")
    exact = margin / loose
    if exact >= Fraction(float(np.finfo(float).max)):  # finite, beyond the floats: the largest one holds
        return float(np.finfo(float).max)
    out = float(exact)
    return float(np.nextafter(out, 0.0)) if Fraction(out) > exact else out


def check_infeasibility(data: ProblemData, y: NDArray, z: NDArray, tol: float, *,
                        with_radius: bool = False) -> tuple:
    """Whether ``(y, z)`` is a Farkas certificate that ``A x = b, G x <=_K h, lb <= x <= ub`` has
    no solution, and what was measured; with ``with_radius``, ``(ok, what, R)``: ``R`` is
    :func:`farkas_radius` of the certificate that passed (``0`` when none did), and when it is
    finite ``what`` says the proof covers only ``||x||_inf < R`` (the check below decides
    ``verified``; the exact radius decides what the verification claims).

    With ``z`` projected onto the dual cone ``K*`` (so ``z'(h - Gx) >= 0`` on every feasible
    ``x``), every feasible ``x`` has ``r'x <= b'y + h'z`` for ``r = A'y + G'z``, while the box
    gives ``r'x >= L = sum_{r_k>0} r_k lb_k + sum_{r_k<0} r_k ub_k`` over the columns whose bound
    on that side is finite. The claim is verified when the margin ``d = L - b'y - h'z`` is
    positive beyond rounding (``d > 10 tol S``, ``S`` the size of the terms that make it up, a
    row without entries counting ``max(1, |rhs_i|)`` as when a point is judged) and every reduced
    cost that no finite bound excuses is zero to the rounding of its own sum (``(k + 2) eps`` of
    its terms ``(|A|'|y| + |G|'|z|)_k``, ``k`` the column's entries), and even those leave no
    room closer than the reach (below): the proof then holds for every ``x`` the bounds allow.

    Any unexcused reduced cost makes the proof local: it excludes only the points with
    ``max_k |x_k| < d / sum_k |r_k|`` on those columns (the radius), however large that is. A
    radius is accepted as global only from reduced costs at rounding (whose sign the arithmetic
    cannot tell), none from larger ones, and only when it reaches past the data's own scale:
    ``max(1 / (10 tol), d / (eps sum_k c_k))``, ``c_k`` the terms of the unexcused columns. At
    that radius a point's rows, of terms ``sum_k c_k |x_k|``, hold the margin ``d`` within one
    rounding unit: beyond it the arithmetic cannot tell such a point feasible from not, within it
    a feasible point would be one the feasibility check accepts. ``x1 + x2 <= -1e-12``,
    ``-x1 - (1 - 1e-15) x2 <= 0`` is feasible at ``|x| ~ 2e3``, and ``z = (1, 1)`` leaves a reduced
    cost of ``1e-15``, at rounding, but a radius of only ``1e3``; with ``h = (-1, 0)`` the radius
    is ``9e14``, short of the reach ``1 / (2 eps) = 2.3e15``, and the problem is feasible at
    ``|x| = 2^50``: a fixed reach of ``1 / (10 tol)`` called it verified infeasible. A local certificate (an
    interior-point solver's holds ``A'y + G'z = 0`` only to its tolerance) is first corrected
    when those reduced costs are within ``10 tol`` of the largest column's terms
    (:func:`_polish_farkas`, up to :data:`FARKAS_POLISH_ROUNDS` rounds, each cancelling the reduced
    costs of the free columns and of every column unexcused in it or an earlier round) and each
    corrected one checked afresh; if all stay local the claim is not verified, and the message
    says the largest radius one of them proves."""
    y = np.asarray(y, dtype=float)
    z = kt.project_dual_cone(data, np.asarray(z, dtype=float))
    if y.shape != (data.A.shape[0],) or z.shape != (data.G.shape[0],) or not (np.all(np.isfinite(y))
                                                                              and np.all(np.isfinite(z))):
        return False, "the certificate is misshapen or not finite"
    f = first = _farkas(data, y, z)
    seen = [f]  # the certificate and its corrections, each checked on its own
    floor = 1.0 / (10 * tol)  # the least radius a global proof must reach, its reduced costs at rounding

    def local(g: dict) -> bool:
        return bool(g["above"].any()) or not g["radius"] >= max(floor, g["reach"])

    # only a certificate within its solver's tolerance is corrected (one far from it is not one)
    near = kt.inf_norm(f["r"][f["bad"]]) <= 10 * tol * max(kt.inf_norm(f["col"]), GAP_FLOOR)
    free = ~np.isfinite(data.lb) & ~np.isfinite(data.ub)
    held = free  # the columns whose reduced costs the corrections cancel
    while near and local(f) and len(seen) <= FARKAS_POLISH_ROUNDS:
        # the free columns, and every column unexcused in this or an earlier round: a column
        # excused by a reduced cost at rounding changes sides under the next correction (excused,
        # unexcused, excused ...: 3 rounds never settled ECOS's true claims), so once cancelled a
        # reduced cost is kept at zero
        held = held | f["bad"]
        better = _polish_farkas(data, y, z, held, f["r"])
        if better is None:
            break
        y, z = better
        f = _farkas(data, y, z)
        seen.append(f)
    margin = [g for g in seen if g["d"] > 10 * tol * g["S"]]
    proof = next((g for g in margin if not local(g)), None)
    # not proved: the largest radius any of them proves (each is a true statement)
    f = proof or (max(margin, key=lambda g: g["radius"]) if margin else first)
    d, S, r = f["d"], f["S"], f["r"]
    res = kt.inf_norm(r[f["bad"]]) / max(kt.inf_norm(f["col"]), GAP_FLOOR)
    what = f"Farkas margin {d / S:.2e} (relative), unexcused reduced costs {res:.2e} (relative)"
    k = next(i for i, g in enumerate(seen) if g is f)
    if k:
        what += (f" after {k} least-norm correction{'s' if k > 1 else ''} of the certificate "
                 f"(they were {kt.inf_norm(first['r'][first['bad']]) / max(kt.inf_norm(first['col']), GAP_FLOOR):.2e})")
    if not margin:
        out = (False, f"{what}: the margin is not positive beyond rounding")
    elif proof is None:
        out = (False, (f"{what}: a local proof only, no feasible point with |x_k| < {f['radius']:.3g} on the "
                       f"{int(np.count_nonzero(r[f['bad']]))} column(s) whose reduced cost no finite bound excuses; "
                       "beyond that radius it proves nothing"))
    else:
        out = (True, what)
    if not with_radius:
        return out
    R = farkas_radius(data, proof["y"], proof["z"]) if proof is not None else 0.0
    if proof is not None and np.isfinite(R):
        out = (True, f"{what}; in exact arithmetic on the stored certificate infeasible for every x with "
                     f"|x|_inf < {R:.6g}, beyond that radius it proves nothing")
    return (*out, R)


def _project_cone(data: ProblemData, s: NDArray) -> NDArray:
    """``s`` projected onto ``K`` (Moreau: ``s + proj_{K*}(-s)``, the polar of ``K`` being ``-K*``)."""
    return s + kt.project_dual_cone(data, -s)


def check_unboundedness(data: ProblemData, dx: NDArray, tol: float) -> tuple[bool, str]:
    """Whether ``dx`` is a direction of unbounded descent: a recession direction of the feasible
    set (``A dx = 0``, ``-G dx`` in ``K``, ``dx`` within the bounds' directions) along which the
    objective falls without end (``P dx = 0``, ``c'dx < 0``), each to ``10 * tol`` relative to the
    size of its terms (``dx`` scaled to ``||dx||_inf = 1``). With a feasible point this proves
    unboundedness; without one, that the problem is infeasible or unbounded."""
    dx = np.asarray(dx, dtype=float)
    if dx.shape != (data.n,) or not np.all(np.isfinite(dx)) or not np.any(dx):
        return False, "the direction is zero, misshapen or not finite"
    dx = dx / kt.inf_norm(dx)
    lim = 10 * tol
    cdx = float(data.c @ dx)
    descent = -cdx / max(float(np.abs(data.c) @ np.abs(dx)), GAP_FLOOR)
    parts = [f"descent c'dx {cdx:.3g} ({descent:.2e} of its terms)"]
    fails = []
    if descent <= lim:
        fails.append("the objective does not fall along it")
    viol = 0.0  # the direction's largest absolute violation (||dx||_inf = 1)
    if data.A.shape[0]:
        va = kt.inf_norm(data.A @ dx)
        ra = va / max(kt.inf_norm(kt.abs_rmatvec(data.A.T.tocsr(), np.abs(dx))), GAP_FLOOR)
        parts.append(f"|A dx| {ra:.2e}")
        viol = max(viol, va)
        if ra > lim:
            fails.append("it leaves the equality rows")
    if data.G.shape[0]:
        s = -(data.G @ dx)
        vg = kt.inf_norm(s - _project_cone(data, s))
        rg = vg / max(kt.inf_norm(kt.abs_rmatvec(data.G.T.tocsr(), np.abs(dx))), GAP_FLOOR)
        parts.append(f"cone violation {rg:.2e}")
        viol = max(viol, vg)
        if rg > lim:
            fails.append("it leaves the cone constraints")
    rb = max(float(np.max(-dx[np.isfinite(data.lb)], initial=0.0)), float(np.max(dx[np.isfinite(data.ub)], initial=0.0)))
    parts.append(f"bound violation {rb:.2e}")
    viol = max(viol, rb)
    if rb > lim:
        fails.append("it crosses a finite bound")
    # a violation of size v allows a column to be off by about v; at cost up to max|c| per unit,
    # the fall must exceed what that could account for (Clarabel's "dual infeasible" direction of
    # a logistic loss at C = 1e12 falls by 79 from t's that leave their cones by 1e-10 each)
    slack = 10 * kt.inf_norm(data.c) * viol
    if -cdx <= slack and descent > lim:
        fails.append(f"its fall is within what its violation allows ({slack:.3g})")
    if data.has_quadratic_objective:
        Pdx = data.P @ dx
        rp = kt.inf_norm(Pdx) / max(kt.inf_norm(abs(data.P) @ np.abs(dx)), GAP_FLOOR)
        parts.append(f"|P dx| {rp:.2e}")
        if rp > lim:
            fails.append("the quadratic term grows along it")
    what = ", ".join(parts) + " (relative)"
    return (False, f"{what}: {'; '.join(fails)}") if fails else (True, what)


def judge_claim(data: ProblemData, status: Status, ray, tol: float) -> tuple[Status, str, ClaimCheck]:
    """The status a claim of infeasibility or unboundedness keeps, a message suffix, and the
    :class:`ClaimCheck`. ``ray`` is what the backend returned as evidence: ``{"y", "z"}`` (a
    Farkas certificate of infeasibility) and/or ``{"dx"}`` (a direction of unbounded descent), or
    ``None``.

    * verified (:func:`check_infeasibility`, or :func:`check_unboundedness` with the zero model
      feasible): the claim stands and the message says "verified";
    * a direction verified but no feasible point known: ``INFEASIBLE_OR_UNBOUNDED``, verified;
    * an infeasibility claim (not verified) on a problem whose zero model satisfies every
      constraint to within rounding (:func:`feasible_point`): refuted, ``NUMERICAL_ERROR`` naming
      the claim; an ``INFEASIBLE_OR_UNBOUNDED`` one there stands, not verified, the message saying
      it can only mean unbounded (a zero model that misses by more, even within ``10 * tol``,
      proves nothing: the message gives its violation);
    * otherwise the claim stands unverified: the message says it is "claimed by the backend, not
      verified by fsframe" and why (no evidence, or evidence that failed its check). In particular
      ``UNBOUNDED`` is verified only by a direction that passes :func:`check_unboundedness`, never
      by the size of a point.
    """
    ray = ray or {}
    name = status.value.replace("_", " ")
    checks = []
    proved = None
    radius = float("inf")
    if status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        if ray.get("y") is not None and ray.get("z") is not None:
            ok, why, radius = check_infeasibility(data, ray["y"], ray["z"], tol, with_radius=True)
            checks.append(f"Farkas certificate: {why}")
            proved = Status.INFEASIBLE if ok else None
        else:
            checks.append("no Farkas certificate was returned")
    if proved is None and status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED):
        if ray.get("dx") is not None:
            ok, why = check_unboundedness(data, ray["dx"], tol)
            checks.append(f"direction of descent: {why}")
            if ok:
                proved = Status.UNBOUNDED if feasible_point(data)[0] is not None else Status.INFEASIBLE_OR_UNBOUNDED
        else:
            checks.append("no direction of unbounded descent was returned")
    detail = "; ".join(checks)
    if proved is not None:
        note = "" if proved is not Status.INFEASIBLE_OR_UNBOUNDED or status is proved else \
            " (infeasible or unbounded: no feasible point is known)"
        if proved is Status.INFEASIBLE and np.isfinite(radius):  # a true statement, of a bounded region
            note = f" for every x with |x|_inf < {radius:.6g} (not globally)"
        else:
            radius = float("inf")
        return proved, f"; verified by fsframe{note}: {detail}", ClaimCheck(status, True, False, detail, radius)
    if status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        x0, viol = feasible_point(data)
        if x0 is not None:
            why = f"{detail}; the zero model satisfies every constraint to within {viol:.1e} (relative)"
            if status is Status.INFEASIBLE_OR_UNBOUNDED:  # feasible: the claim can only mean unbounded
                # (kept as claimed: an unverified status is never made more specific)
                return (status, f"; claimed by the backend, not verified by fsframe: {why}, so the claim can only "
                                "mean unbounded",
                        ClaimCheck(status, False, False, why))
            return (Status.NUMERICAL_ERROR, f"; the solver claimed the problem {name}, which fsframe refutes: {why}",
                    ClaimCheck(status, False, True, why))
        if np.isfinite(viol) and viol <= 10 * tol:  # near feasible: neither refutes nor proves anything
            detail += (f"; the zero model violates a constraint by {viol:.1e} (relative), too much to refute the "
                       "claim")
    return status, f"; claimed by the backend, not verified by fsframe: {detail}", ClaimCheck(status, False, False,
                                                                                              detail)
