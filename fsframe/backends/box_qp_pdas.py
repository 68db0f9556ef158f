r"""A matrix-free solver for the EM steps' hinge duals when the free set is large::

    minimise    1/2 ||F' lam||^2 + f' lam
    subject to  a' lam = e,   lo <= lam <= hi

(one equality row; the problem of :func:`fsframe.backends.box_qp.solve_box_qp` with ``E = a'``).

The dense active set (:mod:`fsframe.backends.box_qp`) moves one multiplier per pivot and factorises
the KKT system of its free set at each: on a kernel map whose map is nearly the identity (RBF width
0.5 or 1 on standardised data) a dual of ``m`` samples has up to ``m`` free multipliers, and a step
that frees or pins hundreds of them costs hundreds of ``O(|N|^3)`` factorisations
(docs/paper002-dual.md, "What a fit costs"). This module changes the whole active set at once: the
primal-dual active set method (Hintermüller, Ito & Kunisch, *SIAM J. Optim.* 13, 2003; a semismooth
Newton method on ``lam = clip(lam - c r, lo, hi)``) predicts the bounds from the current point and
its reduced gradient ``r = F F' lam + f + a nu``, then solves the equality-constrained QP on the
predicted free set ``N``::

    F_N F_N' lam_N + a_N nu = -f_N - F_N F_B' lam_B,    a_N' lam_N = e - a_B' lam_B

by conjugate gradients projected on ``a_N' d = 0`` — products with ``F_N`` and ``F_N'`` only
(``O(|N| q)`` each), never an ``m x m`` matrix. When the prediction repeats, the point satisfies
every KKT condition (to the CG's tolerance) and is returned as ``"optimal"``.

Why not the primal: the EM step's loss is the hinge ``max(0, 1 - y (x w + b))``, not its square
(:mod:`fsframe.dense_em`, paper 002 eq. 7), so its primal is not smooth and a Newton-CG method on it
would solve another model. The dual above is smooth; this is Newton's method on its optimality
conditions.

Undamped, the method may cycle when ``F F'`` is not an M-matrix (Twonorm at sigma 1, ``C = 10``,
3 947 samples: free sets of 973 to 3 713 in turn at its seventh EM step), so it is globalised by a
merit, the objective at a point's projection on the feasible set ``{a' lam = e, lo <= lam <= hi}``
(``clip(z - a nu, lo, hi)``): a prediction's point is taken whole while its merit does not rise —
then the iterates are the undamped method's — and otherwise the step is damped
(:func:`_damped_step`: halved along the projected path towards it, then, failing that, a projected
gradient step) to a feasible point of lower objective, from which the next prediction is made. A
prediction made before reuses its solve (it is the same) or its failure, and a later prediction whose
CG fails (a singular ``F_N F_N'``: duplicate rows freed together) is passed by the projected-gradient
step, at most :data:`MAX_FAILED_SOLVES` failed CGs a call. What
still fails — the first prediction's CG (a wide RBF map), no descent along either direction, or
:data:`MAX_SWEEPS` predictions — is reported as a status (``"singular"``, ``"no_descent"``,
``"iteration_limit"``), never as an answer, and the caller keeps its other paths. The caller's
certificate judges every answer on the full problem.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidOptionError
from .box_qp import BoxQPResult, _canonical_nu

__all__ = ["CG_MAX_ITER", "CG_TOL", "MAX_FAILED_SOLVES", "MAX_MERIT_EVALS", "MAX_SWEEPS", "solve_box_qp_pdas"]

MAX_SWEEPS = 60
"""Active-set predictions (damped or not) allowed before ``"iteration_limit"``."""

CG_TOL = 1e-13
"""The projected CG stops when its residual is at most this times the right-hand side's norm."""

CG_MAX_ITER = 1000
"""CG steps allowed per solve (fewer when the free set is smaller): a solve that needs more is
reported ``"singular"`` (a wide RBF map's first duals, whose ``F_N F_N'`` is nearly singular: there
the dense active set, with few free multipliers, is cheap)."""

CG_RESTARTS = 3
"""CG runs from a point put back onto the equality (see :func:`_projected_cg`) before giving up."""

BOX_TOL = 1e-10
"""The free part may lie this far (times the box's width) outside the box at the optimum (rounding)."""

KKT_TOL = 1e-12
"""A bound's multiplier may have the wrong sign by this much (times the gradient's size)."""

MAX_HALVINGS = 30
"""Step halvings tried along each direction of a damped step (:func:`_damped_step`)."""

MAX_MERIT_EVALS = 400
"""Merit evaluations (:func:`_merit`: two products with ``F`` and a bisection, 6 ms at 3 947 x
3 758) allowed per call before ``"iteration_limit"``: without it a call could spend up to
``MAX_SWEEPS x (2 MAX_HALVINGS + 2)`` of them (60 x 62; 1 933 in 12 s of CPU on Twonorm's EM step 8 at sigma 1,
``C = 10``, 3 947 samples, where the damped steps creep)."""


MAX_FAILED_SOLVES = 5
"""CG solves that may fail (:func:`_predicted_point` ``None`` after a CG) per call: a prediction
needing a new solve after that many failed ones ends the call ``"iteration_limit"`` (at Twonorm's
size a failing CG costs ~7 s of CPU, and a warm start on duplicate rows may predict dozens of
singular free sets). A failed prediction is remembered, and made again goes straight to the
gradient step without a CG. On 40 duplicate-row QPs from random warm starts (the tests') 37 end
optimal without a limit, 33 with 5 (the most a later-singular test case needs is 4), 30 with 3."""


class _Budget:
    """What one call may still spend (:data:`MAX_MERIT_EVALS` merit evaluations,
    :data:`MAX_FAILED_SOLVES` failed CG solves); ``exhausted`` once a spend found none left."""

    def __init__(self, left: int):
        self.left = left
        self.exhausted = False

    def spend(self) -> bool:
        """Take one; ``False`` (and ``exhausted``) when none was left."""
        if self.left <= 0:
            self.exhausted = True
            return False
        self.left -= 1
        return True


def _projected_cg(FN: NDArray, aN: NDArray, rhs: NDArray, x0: NDArray, max_iter: int) -> NDArray | None:
    """Solve ``min 1/2 x' F_N F_N' x - rhs' x`` subject to ``a_N' x = a_N' x0`` by conjugate gradients
    projected on ``a_N' d = 0`` from ``x0``, preconditioned by the diagonal of ``F_N F_N'`` (Gould,
    Hribar & Nocedal, *SIAM J. Sci. Comput.* 23, 2001, Algorithm II; the EM weights spread that diagonal
    over many orders of magnitude, and a kernel map near the identity is nearly diagonal). ``None``
    when the residual projected on ``a_N' d = 0`` does not reach :data:`CG_TOL` times the right-hand
    side's within ``max_iter`` steps, or a direction has no positive curvature (``F_N F_N'``
    singular on the equality's null space)."""
    dinv = 1.0 / np.maximum(np.einsum("ij,ij->i", FN, FN), 1e-300)
    da = dinv * aN
    ada = float(aN @ da)
    na2 = float(aN @ aN)

    def pre(v):
        """``v`` less its component along ``a_N`` in ``M``'s metric (the multiplier's part: left in,
        it grows and drowns the residual in rounding; GHN's residual update), and that ``v``
        preconditioned, ``M^-1 v``, which then lies on ``a_N' d = 0``."""
        if ada > 0:
            v = v - aN * (float(da @ v) / ada)
        return v, dinv * v

    def flat(v):  # v projected (Euclidean) on a_N' d = 0: the stopping rule's residual
        return v - aN * (float(aN @ v) / na2) if na2 > 0 else v

    def op(v):
        return FN @ (FN.T @ v)

    target = float(aN @ x0)
    scale = max(float(np.linalg.norm(rhs)), 1e-300)  # relative to the right-hand side, not to op(x0)
    x = x0.copy()
    budget = max_iter
    for _restart in range(CG_RESTARTS):
        r, g = pre(op(x) - rhs)
        p = -g
        rg = float(r @ g)
        while budget > 0 and float(np.linalg.norm(flat(r))) > CG_TOL * scale:
            budget -= 1
            Hp = op(p)
            curv = float(p @ Hp)
            if not curv > 0:
                return None
            alpha = rg / curv
            x += alpha * p
            r, g = pre(r + alpha * Hp)
            rg_new = float(r @ g)
            p = -g + (rg_new / rg) * p
            rg = rg_new
        # the directions leave a_N' x = target by rounding (M^-1 spans the EM weights' orders of
        # magnitude): back onto it in M's metric, where the Hessian is smallest, and judge the
        # true residual; restart from there when the correction spoilt it
        if ada > 0:
            x += da * ((target - float(aN @ x)) / ada)
        if float(np.linalg.norm(flat(op(x) - rhs))) <= 1e3 * CG_TOL * scale:
            return x
        if budget <= 0:
            return None
    return None


def _reach(a: NDArray, lo: NDArray, hi: NDArray) -> tuple[float, float]:
    """The least and greatest ``a' lam`` over the box ``lo <= lam <= hi``."""
    return float(np.where(a > 0, a * lo, a * hi).sum()), float(np.where(a > 0, a * hi, a * lo).sum())


def _equality_nu(u: NDArray, ca: NDArray, a: NDArray, e: float, lo: NDArray, hi: NDArray, nu0: float) -> float:
    """The ``nu`` at which the prediction ``clip(u - ca nu, lo, hi)`` meets the equality
    ``a' clip(...) = e`` (nonincreasing in ``nu``: bisection to rounding, from a bracket grown
    around ``nu0``), so that every prediction's bounds leave the equality reachable on its free set."""

    def phi(nu):
        return float(a @ np.clip(u - ca * nu, lo, hi)) - e

    if not np.any(a != 0):
        return nu0
    # e within the caller's tolerance beyond what the box reaches: clamped to the reachable range,
    # else phi keeps its sign at every nu and the bracket grows to infinity without end
    reach_lo, reach_hi = _reach(a, lo, hi)
    e = min(max(e, reach_lo), reach_hi)
    lo_nu, hi_nu, step = nu0, nu0, max(1.0, abs(nu0))
    while phi(lo_nu) < 0 and np.isfinite(lo_nu):
        lo_nu -= step
        step *= 2
    step = max(1.0, abs(nu0))
    while phi(hi_nu) > 0 and np.isfinite(hi_nu):
        hi_nu += step
        step *= 2
    if not (np.isfinite(lo_nu) and np.isfinite(hi_nu)):
        return nu0
    for _ in range(200):
        mid = 0.5 * (lo_nu + hi_nu)
        if mid <= lo_nu or mid >= hi_nu:
            break
        if phi(mid) > 0:
            lo_nu = mid
        else:
            hi_nu = mid
    return 0.5 * (lo_nu + hi_nu)


def _gradient_nu(F: NDArray, f: NDArray, a: NDArray, lo: NDArray, hi: NDArray, lam: NDArray,
                 nu: float) -> tuple[NDArray, float]:
    """The gradient ``F F' lam + f`` at ``lam`` and the equality's multiplier that is least squares
    on its free multipliers (``nu`` kept when none is free)."""
    g = F @ (F.T @ lam) + f
    free = (lam > lo) & (lam < hi) & (a != 0)
    if free.any():
        nu = -float(a[free] @ g[free]) / float(a[free] @ a[free])
    return g, nu


def _predicted_point(F: NDArray, f: NDArray, a: NDArray, e: float, lo: NDArray, hi: NDArray, lam: NDArray,
                     at_lo: NDArray, at_hi: NDArray, N: NDArray, cg_max_iter: int,
                     failures: _Budget | None = None) -> tuple[NDArray, float] | None:
    """The prediction's point: its bounds where predicted, and on its free set ``N`` the minimiser of
    the objective on the equality (projected CG from ``lam``'s free part moved onto it), with the
    norm of the free system's right-hand side (:func:`_stationary`'s scale). ``None`` when the
    equality cannot be met on ``N``, ``N`` has more multipliers than ``F`` has columns (one more
    with the equality: ``F_N F_N'`` singular on it, refused without a CG), or the CG does not
    converge (then one of ``failures`` is spent)."""
    lam_new = np.where(at_lo, lo, np.where(at_hi, hi, 0.0))
    if not N.size:
        return lam_new, 0.0
    aN = a[N]
    equality = bool(np.any(aN != 0))
    if not equality and abs(float(a @ lam_new) - e) > 1e-12 * max(1.0, abs(e)):
        return None  # the equality cannot be met on N
    if N.size > F.shape[1] + equality:
        # F_N F_N' has rank at most q (F's columns): on a_N' d = 0, of dimension |N| - 1, it is
        # singular when |N| - 1 > q, and CG would spend its whole budget to find no answer
        return None
    FN = F[N]
    bound_part = F.T @ lam_new  # F_B' lam_B (lam_new is zero on N)
    rhs = -f[N] - FN @ bound_part
    target = e - float(a @ lam_new)
    na2 = float(aN @ aN)
    x0 = aN * (target / na2) if na2 > 0 else np.zeros(N.size)
    # start CG from the current point's free part, moved onto the equality
    cur = lam[N]
    if na2 > 0:
        cur = cur + aN * ((target - float(aN @ cur)) / na2)
    x0 = cur if np.all(np.isfinite(cur)) else x0
    x = _projected_cg(FN, aN, rhs, x0, cg_max_iter)
    if x is None:
        if failures is not None:
            failures.spend()
        return None
    lam_new[N] = x
    return lam_new, float(np.linalg.norm(rhs))


def _merit(F: NDArray, f: NDArray, a: NDArray, e: float, lo: NDArray, hi: NDArray, z: NDArray,
           nu0: float) -> tuple[float, NDArray]:
    """The objective at ``z``'s projection on the feasible set ``{a' x = e, lo <= x <= hi}`` (the
    projection ``clip(z - a nu, lo, hi)``, ``nu`` by :func:`_equality_nu`), and that projection."""
    p = np.clip(z - a * _equality_nu(z, a, a, e, lo, hi, nu0), lo, hi)
    return 0.5 * float(np.sum((F.T @ p) ** 2)) + float(f @ p), p


def _damped_step(F: NDArray, f: NDArray, a: NDArray, e: float, lo: NDArray, hi: NDArray, lam: NDArray,
                 merit: float, lam_new: NDArray, nu: float,
                 budget: _Budget | None = None) -> tuple[NDArray, float] | None:
    """A feasible point of lower objective than ``merit`` (the objective at ``lam``'s projection
    ``base``) along the projected path ``base + t (lam_new - base)``, ``t`` halved from 1/2 (the full
    step's merit rose); failing that, along the projected path of the gradient projected on the
    equality, ``base - t grad``, ``t`` from its exact (Cauchy) step without the box and halved.
    ``None``: no decrease along either (to :data:`MAX_HALVINGS` halvings), or ``budget``'s merit
    evaluations spent."""
    if budget is not None and not budget.spend():
        return None
    _, base = _merit(F, f, a, e, lo, hi, lam, nu)
    grad = F @ (F.T @ base) + f
    grad = grad - a * (float(a @ grad) / max(float(a @ a), 1e-300))  # along the equality
    curv = float(np.sum((F.T @ grad) ** 2))
    cauchy = float(grad @ grad) / curv if curv > 0 else 1.0  # the exact step without the box
    steps = ((lam_new - base, 0.5),) if lam_new is not None else ()
    for direction, t in steps + ((-grad, cauchy),):
        for _ in range(MAX_HALVINGS):
            if budget is not None and not budget.spend():
                return None
            trial_merit, trial = _merit(F, f, a, e, lo, hi, base + t * direction, nu)
            if trial_merit < merit:
                return trial, trial_merit
            t *= 0.5
    return None


def _stationary(r_free: NDArray, rhs_norm: float, rtol: float) -> bool:
    """Whether the reduced gradient on the free set, ``r_free``, is zero to the CG's tolerance
    (``1e3 CG_TOL`` times the free system's right-hand side, as :func:`_projected_cg` accepts) or to
    rounding (``rtol`` per entry, the bound multipliers' tolerance)."""
    size = float(np.linalg.norm(r_free))
    return bool(np.isfinite(size) and size <= max(1e3 * CG_TOL * rhs_norm, np.sqrt(r_free.size) * rtol))


def solve_box_qp_pdas(F: NDArray, f: NDArray, a: NDArray, e: float, lo: NDArray, hi: NDArray,
                      start: NDArray | None = None, *, max_sweeps: int = MAX_SWEEPS,
                      cg_max_iter: int | None = None) -> BoxQPResult:
    """Solve ``min 1/2 ||F' lam||^2 + f' lam  s.t.  a' lam = e, lo <= lam <= hi`` (finite bounds)
    by the primal-dual active set method with projected-CG solves (module docstring).

    ``start``: the previous solution of a similar problem (any point: it is only the first
    prediction's input). Returns a :class:`~fsframe.backends.box_qp.BoxQPResult` whose
    ``iterations`` counts the sweeps (the predictions and the gradient steps that stand in for a
    failed one); ``nu`` follows the same midpoint rule as
    :func:`~fsframe.backends.box_qp.solve_box_qp` when no free variable fixes it. ``"singular"``:
    a cold start's first prediction's CG solve did not converge, or a later one's (a warm start's
    first too) and the gradient step that stands in for it lowered the objective by none of its
    halvings; ``"not_stationary"``: the bounds' multipliers of their signs but the
    reduced gradient on the free set, recomputed on ``F``, not zero (:func:`_stationary`: the CG's
    answer spoilt by rounding); ``"iteration_limit"``: no optimum within ``max_sweeps`` predictions,
    :data:`MAX_MERIT_EVALS` merit evaluations spent, a new CG needed after
    :data:`MAX_FAILED_SOLVES` failed ones; ``"no_descent"``: a prediction rejected (its merit
    rose) and neither its projected path nor the projected gradient lowered the merit within
    :data:`MAX_HALVINGS` halvings each (the method cannot move on; not a spent budget);
    ``"infeasible_start"``: no point meets the
    equality and the box. Non-finite bounds, ``lo > hi``, or a vector (``start`` too) not of ``F``'s
    rows: :class:`~fsframe.errors.InvalidOptionError`.
    """
    F = np.asarray(F, dtype=float)
    f, a, lo, hi = (np.asarray(v, dtype=float) for v in (f, a, lo, hi))
    m, q = F.shape
    if any(v.shape != (m,) for v in (f, a, lo, hi)) or (start is not None and np.shape(start) != (m,)):
        raise InvalidOptionError(f"solve_box_qp_pdas: f, a, lo, hi and start must have F's {m} rows each")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)):
        raise InvalidOptionError("solve_box_qp_pdas: the bounds must be finite with lo <= hi")
    e = float(e)
    lo_sum, hi_sum = _reach(a, lo, hi)
    if not (lo_sum - 1e-12 * max(1.0, abs(e)) <= e <= hi_sum + 1e-12 * max(1.0, abs(e))):
        return BoxQPResult("infeasible_start")
    cg_max_iter = min(2 * m + 50, CG_MAX_ITER) if cg_max_iter is None else cg_max_iter
    lam = np.clip(np.zeros(m) if start is None else np.asarray(start, dtype=float), lo, hi)
    diag = np.einsum("ij,ij->i", F, F)
    c = 1.0 / np.maximum(diag, 1e-300)  # per multiplier: lam_i - r_i / H_ii is its coordinate-descent step
    g, nu = _gradient_nu(F, f, a, lo, hi, lam, 0.0)
    seen: dict[bytes, tuple[NDArray, float] | None] = {}  # None: the prediction failed
    budget = _Budget(MAX_MERIT_EVALS - 1)
    failures = _Budget(MAX_FAILED_SOLVES)
    merit, _ = _merit(F, f, a, e, lo, hi, lam, nu)
    for sweep in range(1, max_sweeps + 1):
        u = lam - c * g
        nu = _equality_nu(u, c * a, a, e, lo, hi, nu)
        # a reduced gradient at rounding moves nothing: with c = 1 / H_ii up to 1e73 (a sample whose
        # own kernel column EM removed has a row of F at e^-20 and below), its sign would flip the
        # bound of a multiplier the objective does not see, and the predictions cycle
        r = g + a * nu
        rtol = KKT_TOL * max(1.0, float(np.abs(f).max(initial=0.0)), float(np.abs(g - f).max(initial=0.0)))
        t = lam - c * np.where(np.abs(r) <= rtol, 0.0, r)
        at_lo, at_hi = t <= lo, t >= hi
        N = np.flatnonzero(~(at_lo | at_hi))
        key = np.packbits(at_lo).tobytes() + np.packbits(at_hi).tobytes()
        if key not in seen:
            if failures.left <= 0:  # MAX_FAILED_SOLVES spent: no new CG, the caller's other paths
                return BoxQPResult("iteration_limit", iterations=sweep)
            predicted = _predicted_point(F, f, a, e, lo, hi, lam, at_lo, at_hi, N, cg_max_iter, failures)
            seen[key] = None if predicted is None else (predicted[0].copy(), predicted[1])
        # a prediction made before: its solve (or its failure) is the same, and cheap to keep
        predicted = seen[key]
        if predicted is None:
            if sweep == 1 and start is None:
                # a cold first system CG cannot solve: a wide map, the caller's other paths; from a
                # warm start (its multipliers may free both copies of a duplicate row) the
                # gradient step goes on, as after a later prediction
                return BoxQPResult("singular", iterations=sweep)
            damped = _damped_step(F, f, a, e, lo, hi, lam, merit, None, nu, budget)
            if damped is None:  # the merit budget spent, or no descent along the gradient
                return BoxQPResult("iteration_limit" if budget.exhausted else "singular", iterations=sweep)
            lam, merit = damped
            g, nu = _gradient_nu(F, f, a, lo, hi, lam, nu)
            continue
        lam_new, rhs_norm = predicted[0].copy(), predicted[1]
        g = F @ (F.T @ lam_new) + f
        if N.size and np.any(a[N] != 0):
            aN = a[N]
            nu = -float(aN @ g[N]) / float(aN @ aN)
        r = g + a * nu
        # the optimum: the free part inside the box and each bound's multiplier of its sign (to
        # rounding); otherwise the next prediction moves what is out of place
        width = hi - lo
        inside = bool(np.all(lam_new[N] >= lo[N] - BOX_TOL * width[N]) and np.all(lam_new[N] <= hi[N] + BOX_TOL * width[N]))
        rtol = KKT_TOL * max(1.0, float(np.abs(f).max(initial=0.0)), float(np.abs(g - f).max(initial=0.0)))
        movable = width > 0
        if inside and np.all(r[at_lo & movable] >= -rtol) and np.all(r[at_hi & movable] <= rtol):
            # stationarity on the free set, recomputed on the full F (not the CG's own residual)
            if not _stationary(r[N], rhs_norm, rtol):
                return BoxQPResult("not_stationary", iterations=sweep)
            r = r.copy()
            r[N] = 0.0
            res = BoxQPResult("optimal", np.clip(lam_new, lo, hi), np.array([nu]), r, sweep)
            return _canonical_nu(res, F, f, a[None, :], lo, hi)
        # globalisation: the full step is taken while the merit (the objective at the point's
        # projection on the feasible set) does not rise; else a damped step along it (module docstring)
        if not budget.spend():
            return BoxQPResult("iteration_limit", iterations=sweep)
        new_merit, _ = _merit(F, f, a, e, lo, hi, lam_new, nu)
        if new_merit <= merit:
            lam, merit = lam_new, new_merit
            continue
        damped = _damped_step(F, f, a, e, lo, hi, lam, merit, lam_new, nu, budget)
        if damped is None:  # the merit budget spent, or no descent along the prediction's path nor the gradient
            return BoxQPResult("iteration_limit" if budget.exhausted else "no_descent", iterations=sweep)
        lam, merit = damped
        g, nu = _gradient_nu(F, f, a, lo, hi, lam, nu)
    return BoxQPResult("iteration_limit", iterations=max_sweeps)
