r"""A dense active-set solver for small convex QPs with a low-rank Hessian, bounds and a few equalities::

    minimise    1/2 ||F' lam||^2 + f' lam
    subject to  E lam = e,   lo <= lam <= hi

with ``F`` dense, ``m x q``. It is the Lagrangian dual of every EM / reweighted-L2 subproblem of the
hinge family (:mod:`fsframe.backends.diag_qp`): ``m`` samples, ``F = K_Q D^{-1/2}`` over the ``q``
features still alive, the box ``0 <= lam <= C`` and the one equality of the intercept. Its Hessian
``F F'`` has rank at most ``q``, which shrinks as EM fixes features at zero, and consecutive EM
duals differ little: a warm start from the previous solution (its active set) needs few pivots.

The method is the primal active-set method for convex QP with inertia control (Gill & Murray;
Nocedal & Wright, *Numerical Optimization*, 2nd ed., §16.5): the free variables ``N`` are those not
held at a bound, and the reduced Hessian on the null space of ``E_N`` is kept positive definite,
so every step solves one nonsingular KKT system of size ``|N| + rows(E)`` (``|N|`` is at most
``q + rows(E)`` then, small). A variable whose bound multiplier has the wrong sign is released
along the direction that keeps the others stationary: a positive curvature along it gives a
Newton step, a zero curvature a ray that ends at a bound. A warm start whose free set is too large
for the new Hessian (EM removed features) first moves along zero-curvature, non-ascent directions
to bounds until the reduced Hessian is regular again. Nothing here depends on a solver library;
:func:`solve_box_qp` reports trouble (an iteration limit, a singular system, an infeasible start)
as a status, and the caller falls back to HiGHS.
"""

from __future__ import annotations

import os

import attrs
import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidOptionError
from . import box_qp_jit

__all__ = ["BoxQPResult", "compiled_available", "crash_start", "free_set_kkt", "solve_box_qp"]


@attrs.frozen(eq=False)
class BoxQPResult:
    """The outcome of :func:`solve_box_qp`.

    ``status``: ``"optimal"``, ``"unbounded"`` (the objective decreases without bound along a
    feasible ray), ``"iteration_limit"``, ``"singular"`` (a KKT system the method cannot continue
    from) or ``"infeasible_start"`` (no feasible starting point was given or found at zero);
    :func:`~fsframe.backends.box_qp_pdas.solve_box_qp_pdas` also ``"not_stationary"`` and
    ``"no_descent"`` (its docstring).
    ``lam`` is the point, ``nu`` the equality multipliers and ``r`` the reduced gradient
    ``F F' lam + f + E' nu`` (the bound multipliers: ``r_i >= 0`` at a lower bound, ``<= 0`` at an
    upper one, 0 in between) — ``None`` unless ``status == "optimal"``. With one equality row and
    no variable of a non-zero entry free, ``nu`` is the midpoint of its optimal interval (the same
    on every path: :func:`_canonical_nu`). ``iterations`` counts the
    pivots (steps) taken.
    """

    status: str
    lam: NDArray | None = None
    nu: NDArray | None = None
    r: NDArray | None = None
    iterations: int = 0


OPT_TOL = 1e-12
"""Optimality: no bound multiplier of the wrong sign beyond ``OPT_TOL`` times the size of the
gradient's terms (``max(|f|, |F F' lam|)``). fsframe's certificate judges the answer after."""


def _null_space(M: NDArray, tol: float) -> NDArray:
    """An orthonormal basis of the null space of ``M`` (columns)."""
    if M.shape[0] == 0:
        return np.eye(M.shape[1])
    _, s, vt = np.linalg.svd(M, full_matrices=True)
    rank = int(np.sum(s > tol * max(float(s[0]) if s.size else 0.0, 1e-300)))
    return vt[rank:].T


def free_set_kkt(F: NDArray, E: NDArray, N: NDArray | None = None, H: NDArray | None = None) -> NDArray:
    """The KKT matrix ``[[F_N F_N', E_N'], [E_N, 0]]`` of the free set ``N`` (indices) of the dual
    ``min 1/2 ||F' lam||^2 + f' lam`` s.t. ``E lam = e`` and a box: the matrix of every pivot's
    Newton step here, and of :meth:`fsframe.dense_em.DenseHingeSubproblem._refined`'s step.
    ``F F'``'s entries are picked from ``H = F F'`` when it is given; ``E`` without rows: ``F_N F_N'``.
    ``N`` ``None``: every row (``F`` and ``E`` already the free set's, not copied again)."""
    n, pe = (F.shape[0] if N is None else N.size), E.shape[0]
    if H is not None:
        HNN = H if N is None else H[np.ix_(N, N)]
    else:
        FN = F if N is None else F[N]
        HNN = FN @ FN.T
    if not pe:
        return HNN
    K = np.empty((n + pe, n + pe))
    K[:n, :n] = HNN
    EN = E if N is None else E[:, N]
    K[:n, n:] = EN.T
    K[n:, :n] = EN
    K[n:, n:] = 0.0
    return K


class _State:
    """The iterate and what is derived from it (one object, so that the helpers stay small)."""

    def __init__(self, F, f, E, lo, hi, lam, free):
        self.F, self.f, self.E, self.lo, self.hi = F, f, E, lo, hi
        self.lam = lam
        self.free = free
        self.g = F @ (F.T @ lam) + f
        self.pe = E.shape[0]
        # more columns than rows (EM's first duals on n >> m data): the m x m Hessian once, its
        # entries picked per step, instead of |N|^2 q products per step
        self.H = F @ F.T if F.shape[1] > F.shape[0] else None
        # the sign a bound multiplier must not have, per variable: -1 at a lower bound (r >= 0 is
        # right), +1 at an upper one, 0 when free or fixed (lo == hi: any sign is right)
        self.wrong = np.where(lam <= lo, -1.0, np.where(lam >= hi, 1.0, 0.0))
        self.wrong[free | (lo == hi)] = 0.0

    def kkt(self, N: NDArray) -> NDArray:
        """The KKT matrix of the free set ``N`` (:func:`free_set_kkt`)."""
        return free_set_kkt(self.F, self.E, N, self.H)

    def ratio(self, idx: NDArray, d: NDArray) -> tuple[float, int, bool]:
        """The largest step along ``d`` (on ``idx``) that keeps the bounds, the position in
        ``idx`` of the bound that blocks it and whether it is the lower one."""
        if not idx.size:
            return np.inf, -1, False
        neg = d < 0
        a = (np.where(neg, self.lo[idx], self.hi[idx]) - self.lam[idx]) / d  # the caller ignores 0/0
        a[d == 0] = np.inf
        np.maximum(a, 0.0, out=a)  # rounding may leave a variable a hair outside
        k = int(np.argmin(a))
        return float(a[k]), k, bool(neg[k])

    def move(self, idx: NDArray, d: NDArray, alpha: float) -> None:
        ad = alpha * d
        self.lam[idx] += ad
        self.g += self.H[:, idx] @ ad if self.H is not None else self.F @ (self.F[idx].T @ ad)

    def cross(self, N: NDArray, j: int) -> NDArray:
        """``(F F')_{N, j}``."""
        return self.H[N, j] if self.H is not None else self.F[N] @ self.F[j]

    def curvature(self, idx: NDArray, d: NDArray) -> float:
        """``d' F F' d`` for ``d`` on ``idx``."""
        if self.H is not None:
            return float(d @ (self.H[np.ix_(idx, idx)] @ d))
        Fd = self.F[idx].T @ d
        return float(Fd @ Fd)

    def pin(self, i: int, lower: bool) -> None:
        self.lam[i] = self.lo[i] if lower else self.hi[i]
        self.free[i] = False
        if self.lo[i] != self.hi[i]:
            self.wrong[i] = -1.0 if lower else 1.0

    def release(self, j: int) -> None:
        self.free[j] = True
        self.wrong[j] = 0.0

    def wrong_signs(self, nu: NDArray) -> tuple[NDArray, NDArray]:
        """The reduced gradient ``r = g + E' nu`` and, per variable held at a bound, how far its
        multiplier has the wrong sign (0 where it has the right one, and for free variables)."""
        r = self.g + self.E.T @ nu if self.pe else self.g
        return r, r * self.wrong


def _regularize(st: _State, tol: float) -> str | None:
    """Make the reduced Hessian on the free set regular, moving along zero-curvature directions
    that do not increase the objective until a bound stops each (warm starts whose free set the
    new Hessian cannot support). Returns a failure status, or ``None``."""
    for _ in range(st.F.shape[0] + 1):
        N = np.flatnonzero(st.free)
        if not N.size:
            return None
        Z = _null_space(st.E[:, N], 1e-12) if st.pe else np.eye(N.size)
        if not Z.shape[1]:
            return None
        B = st.F[N].T @ Z  # q x nz: the reduced Hessian is B'B
        V = _null_space(B, tol)
        if not V.shape[1]:
            return None
        d = Z @ V[:, 0]
        slope = float(st.g[N] @ d)
        if slope > 0:
            d, slope = -d, -slope
        alpha, k, lower = st.ratio(N, d)
        if not np.isfinite(alpha):
            alpha, k, lower = st.ratio(N, -d)
            if slope < -tol * max(1.0, float(np.abs(st.g).max())) or not np.isfinite(alpha):
                return "unbounded" if slope < 0 else "singular"
            d = -d
        st.move(N, d, alpha)
        st.pin(int(N[k]), lower)
    return "singular"


def _full_row_rank(E: NDArray, free: NDArray) -> None:
    """Add variables to ``free`` (at a bound: degenerate) until ``E_N`` has the rank of ``E``,
    chosen by a pivoted QR of ``E`` (``E_N`` of lower rank makes the KKT matrix singular)."""
    if E.shape[0] == 1:
        if not np.any(E[0, free] != 0):
            free[int(np.argmax(np.abs(E[0])))] = True
        return
    rank_e = np.linalg.matrix_rank(E)
    if np.linalg.matrix_rank(E[:, free]) < rank_e:
        import scipy.linalg

        _, _, piv = scipy.linalg.qr(E, pivoting=True, mode="economic")
        for j in piv:
            if not free[j]:
                free[j] = True
                if np.linalg.matrix_rank(E[:, free]) == rank_e:
                    break


def compiled_available() -> bool:
    """Whether the compiled pivots (:mod:`~fsframe.backends.box_qp_jit`, numba: the ``fast``
    extra) can be used: numba imports and the environment variable ``FSFRAME_NO_JIT`` is not set
    to a non-empty value. Imports numba on the first call (not at ``import fsframe``)."""
    if os.environ.get("FSFRAME_NO_JIT"):
        return False
    return box_qp_jit.compiled() is not None


def solve_box_qp(F: NDArray, f: NDArray, E: NDArray, e: NDArray, lo: NDArray, hi: NDArray,
                 start: NDArray | None = None, *, max_iter: int | None = None,
                 compiled: bool | None = None, crash: float = 0,
                 crash_from: NDArray | None = None) -> BoxQPResult:
    """Solve ``min 1/2 ||F' lam||^2 + f' lam  s.t.  E lam = e, lo <= lam <= hi``.

    Parameters
    ----------
    F : array, shape (m, q)
    f : array, shape (m,)
    E : array, shape (p, m)
        Equality rows (``p`` small; ``p = 0`` allowed).
    e : array, shape (p,)
    lo, hi : arrays, shape (m,)
        Bounds (``-inf`` / ``inf`` allowed, ``lo <= hi``).
    start : array, shape (m,), optional
        A feasible point to start from (the previous solution of a similar problem); its free
        variables form the first working set. Without it, or when it is infeasible, the start is
        ``clip(0, lo, hi)`` (which must satisfy ``E lam = e``).
    max_iter : int, optional
        Pivots allowed (default ``10 m + 100``).
    compiled : bool, optional
        Run the pivots compiled (:mod:`~fsframe.backends.box_qp_jit`, the same method) or in
        Python. ``None`` (default): compiled when :func:`compiled_available` (numba installed,
        ``pip install "fsframe[fast]"``, and ``FSFRAME_NO_JIT`` not set). ``True`` without numba
        raises ``ImportError``.
    crash : float
        Sweeps of dual coordinate descent (:func:`~fsframe.backends.box_qp_jit.crash`: at most
        ``crash * m`` steps) from the start before the active-set method, which then starts from
        the free set of that point and polishes it to the exact optimum: fewer pivots from a cold
        start. Taken only with the compiled pivots and at most one equality row with no zero
        entry (the hinge dual's ``y' lam = 0``); 0 (default): none. ``iterations`` counts the
        pivots only. A crashed start whose pivots end in anything but ``"optimal"`` is run again
        from the cold start, whose outcome is returned. Not a finite number ``>= 0``:
        :class:`~fsframe.errors.InvalidOptionError`.
    crash_from : array, shape (m,), optional
        The point the crash starts from instead of the pivots' start (``start``, or the cold
        start): clipped to the box, and ignored (the crash then starts from the pivots' start) when
        it is off the equality rows by more than ``START_TOL`` (as ``start`` is). Only the crash
        reads it: a crash that is not taken leaves the pivots to start where they would without it.
        Not numbers, not of shape ``(m,)`` or not finite: :class:`~fsframe.errors.InvalidOptionError`.
    """
    m = F.shape[0]
    _check_sweeps("solve_box_qp: crash", crash)
    if crash_from is not None:
        crash_from = _crash_point(crash_from, m)
    max_iter = 10 * m + 100 if max_iter is None else max_iter
    pe = E.shape[0]
    e_tol = box_qp_jit.START_TOL * max(1.0, float(np.abs(e).max(initial=0.0)))
    lam = None if start is None else _feasible_or(np.asarray(start, dtype=float), E, e, lo, hi, e_tol, None)
    warm = lam is not None
    if lam is None:
        lam = np.clip(np.zeros(m), lo, hi)
        if pe and np.max(np.abs(E @ lam - e), initial=0.0) > 1e-3 * e_tol:
            return BoxQPResult("infeasible_start")
    if compiled is None:
        compiled = compiled_available()
    elif compiled and box_qp_jit.compiled() is None:
        raise ImportError("solve_box_qp(compiled=True) needs numba: pip install 'fsframe[fast]'")
    H = None  # F F', when the crash formed it
    if crash > 0 and compiled and m and (pe == 0 or (pe == 1 and np.all(E[0] != 0))):
        origin = lam if crash_from is None else _feasible_or(crash_from, E, e, lo, hi, e_tol, lam)
        try:
            crashed, H = _crashed(F, f, E, e, lo, hi, origin, crash, e_tol)
        except Exception as exc:  # numba failing to compile the crash: the pivots in Python from now on
            if not box_qp_jit.is_compile_error(exc):
                raise
            box_qp_jit.disable(exc)
            crashed, H, compiled = None, None, False
        if crashed is not None:
            res = _pivots(F, f, E, e, lo, hi, crashed, True, max_iter, compiled, H)
            if res.status == "optimal":
                return _canonical_nu(res, F, f, E, lo, hi)
            # a crashed start that ends otherwise is no evidence about the problem: the cold
            # start's answer is reported (mixed scales, C >= 1e2: 1 300 pivots to an iteration
            # limit from the crash where the cold start said "singular" at once)
    return _canonical_nu(_pivots(F, f, E, e, lo, hi, lam, warm, max_iter, compiled, H), F, f, E, lo, hi)


def _crash_point(point, m: int) -> NDArray:
    """``solve_box_qp``'s ``crash_from`` as a float array of shape ``(m,)`` with finite entries, else
    :class:`~fsframe.errors.InvalidOptionError` naming what is wrong."""
    try:
        out = np.asarray(point, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(f"solve_box_qp: crash_from must be an array of numbers, got {exc}") from None
    if out.shape != (m,):
        raise InvalidOptionError(f"solve_box_qp: crash_from must have shape ({m},), got shape {out.shape}")
    if not np.all(np.isfinite(out)):
        raise InvalidOptionError(f"solve_box_qp: crash_from must be finite, got "
                                 f"{int(np.count_nonzero(~np.isfinite(out)))} non-finite entries")
    return out


def _feasible_or(point: NDArray, E: NDArray, e: NDArray, lo: NDArray, hi: NDArray, e_tol: float,
                 other: NDArray | None) -> NDArray | None:
    """``point`` clipped to the box when that keeps ``E lam = e`` within ``e_tol`` (the rule of
    :func:`solve_box_qp`'s ``start``), else ``other``."""
    lam = np.clip(point, lo, hi)
    if E.shape[0] and np.max(np.abs(E @ lam - e), initial=0.0) > e_tol:
        return other
    return lam


def _check_sweeps(what: str, sweeps) -> None:
    """The crash's sweeps: a finite number ``>= 0``, else :class:`~fsframe.errors.InvalidOptionError`."""
    if not (isinstance(sweeps, (int, float, np.integer, np.floating))
            and np.isfinite(sweeps) and sweeps >= 0):
        raise InvalidOptionError(f"{what} must be a finite number of sweeps >= 0, got {sweeps!r}")


def _pivots(F, f, E, e, lo, hi, lam, warm, max_iter, compiled, H=None) -> BoxQPResult:
    """The active-set method from the feasible ``lam`` (its free set, made full row rank in
    ``E``), compiled or in Python; ``lam`` is not changed. ``H``: ``F F'`` when the caller has it
    (the crash formed it), else formed here when needed."""
    free = (lam > lo) & (lam < hi)
    if E.shape[0]:
        _full_row_rank(E, free)
    with np.errstate(divide="ignore", invalid="ignore"):
        if compiled:
            try:
                return _active_set_compiled(F, f, E, lo, hi, lam.copy(), free.copy(), warm, max_iter, H)
            except Exception as exc:  # numba failing to compile on the first call: Python from now on
                if not box_qp_jit.is_compile_error(exc):
                    raise
                box_qp_jit.disable(exc)
        return _active_set(F, f, E, e, lo, hi, lam.copy(), free, warm, max_iter)


FREE_TOL = 1e-10
"""For :func:`_canonical_nu`: a variable is free when both bounds are more than this times the
box's width away (or ``max(1, |lam_i|)`` when the box is unbounded)."""


def _canonical_nu(res: BoxQPResult, F, f, E, lo, hi) -> BoxQPResult:
    """``res`` with one equality multiplier ``nu`` that does not depend on the path.

    When a variable with a non-zero equality entry is free, stationarity fixes ``nu``. When none
    is, every ``nu`` that keeps each bound multiplier ``r_i = g_i + a_i nu`` of the right sign is
    optimal (an interval ``[L, U]``): the active set stops at whichever end its path reached, so a
    cold and a crashed start gave different intercepts. Take the interval's midpoint (libsvm's
    rule for the SVM bias, Chang & Lin, §4.1.5) and ``r`` with it. Several equality rows, or an
    interval open at one end, keep ``nu`` as found."""
    if res.status != "optimal" or E.shape[0] != 1:
        return res
    a, lam = E[0], res.lam
    # free: off both bounds by more than rounding (a degenerate variable the active set kept free
    # to give E_N full rank sits 1e-20 off its bound: it does not fix nu)
    width = np.where(np.isfinite(hi - lo), hi - lo, np.maximum(1.0, np.abs(lam)))
    free = np.minimum(lam - lo, hi - lam) > FREE_TOL * width
    if np.any(free & (a != 0)):
        return res
    # the degenerate ones onto their bound, so that the bound multipliers' signs are read right
    at_lo = ~free & (lam - lo <= hi - lam)
    lam = np.where(at_lo, lo, np.where(free, lam, hi))
    g = F @ (F.T @ lam) + f
    # at the lower bound r_i >= 0, at the upper r_i <= 0: a_i nu >= -g_i or <= -g_i
    L, U = _nu_interval(g, np.ascontiguousarray(a, dtype=float), np.asarray(lo, dtype=float),
                        np.asarray(hi, dtype=float), at_lo)
    L, U = float(L), float(U)
    if not (np.isfinite(L) and np.isfinite(U)):
        return res
    nu = np.array([0.5 * (L + U)])
    r = g + a * nu[0]
    r[free] = 0.0  # as the active set reports them (stationary by construction)
    return BoxQPResult("optimal", lam, nu, r, res.iterations)


def _nu_interval(g, a, lo, hi, at_lo) -> tuple[float, float]:
    """:func:`box_qp_jit.nu_interval <fsframe.backends.box_qp_jit.nu_interval>` (the interval the
    compiled warm EM step takes too) when its compiled version is loaded; otherwise (numba absent,
    ``FSFRAME_NO_JIT``, before the first compile) the same rule in numpy: the Python loop costs
    about 45 times as much (m = 200 000: 0.18 s CPU against 4 ms; compiled 1 ms). Tested equal."""
    if hasattr(box_qp_jit.nu_interval, "py_func"):  # a numba dispatcher: compiled
        return box_qp_jit.nu_interval(g, a, lo, hi, at_lo)
    bounds = (lo != hi) & (a != 0.0)  # fixed variables and a_i = 0 bound nothing
    t = -g[bounds] / a[bounds]  # r_i = 0 at nu = t
    below = at_lo[bounds] == (a[bounds] > 0.0)  # r_i of its sign for nu >= t
    return float(t[below].max(initial=-np.inf)), float(t[~below].min(initial=np.inf))


CRASH_TOL = 1e-3
"""The crash's stopping rule: the largest violation at most this times ``max |f|`` (a start, not an
answer: the active-set method polishes it)."""


def _crashed(F, f, E, e, lo, hi, lam, sweeps, e_tol) -> tuple[NDArray | None, NDArray | None]:
    """The crash start from the feasible ``lam`` (:func:`box_qp_jit.crash`, compiled), or ``None``
    when it found no better start: an unbounded direction, the equality lost to rounding, or more
    free variables than the Hessian ``F F'`` (rank at most ``q``) with the equality rows can hold
    (the active-set method would first have to shrink that free set, in Python), checked after
    each sweep; and the Hessian ``F F'`` it formed (``None`` when it formed none), for the
    active-set method to reuse."""
    run = box_qp_jit.compiled_crash()
    if run is None:
        return None, None
    m, q = F.shape
    pairs = E.shape[0] == 1
    a = np.ascontiguousarray(E[0] if pairs else np.ones(m), dtype=float)
    out = np.ascontiguousarray(lam, dtype=float).copy()
    F = np.ascontiguousarray(F, dtype=float)
    H = F @ F.T  # the crash's steps read two columns of the Hessian each
    Ht = np.ascontiguousarray(H.T)  # ... as rows of its transpose: in memory order, not m apart
    f, lo, hi = (np.ascontiguousarray(v, dtype=float) for v in (f, lo, hi))
    hold = q + E.shape[0]  # the most free variables the Hessian's rank and the equality can hold
    total, budget = 0, int(np.ceil(sweeps * m))
    # sweep by sweep (m steps each): a crash whose free set is more than CRASH_GIVE_UP times what
    # the Hessian can hold after a sweep is given up there instead of at the end (it would be
    # discarded: below); a smaller excess is not (on 120 x 60 duals the free set passes q + 1 by up
    # to 20 % in the first sweeps and ends below it)
    while total < budget:
        chunk = min(m, budget - total)
        steps = run(F, Ht, True, f, a, pairs, lo, hi, out, chunk, CRASH_TOL)
        if steps < 0:
            return None, H
        total += steps
        if steps < chunk:  # converged to the crash's tolerance
            break
        if int(np.count_nonzero((out > lo) & (out < hi))) > CRASH_GIVE_UP * hold:
            return None, H
    if total <= 0 or (pairs and abs(float(a @ out) - float(e[0])) > e_tol):
        return None, H
    out = np.clip(out, lo, hi)
    # more free variables than the Hessian's rank and the equality can hold: the warm start would
    # first be shrunk by the Python _regularize, slower than the cold start the crash was to save
    if int(np.count_nonzero((out > lo) & (out < hi))) > hold:
        return None, H
    return out, H


def crash_start(F: NDArray, f: NDArray, E: NDArray, e: NDArray, lo: NDArray, hi: NDArray, lam: NDArray,
                sweeps: float) -> NDArray | None:
    """The crash start :func:`solve_box_qp` takes with ``crash=sweeps`` from the feasible ``lam`` (not
    changed), for a caller that runs the pivots itself (``fsframe.dense_em``'s compiled warm step):
    the point after at most ``sweeps * m`` steps of ``box_qp_jit.crash``, or ``None`` where
    ``solve_box_qp`` would not take it (numba absent or ``FSFRAME_NO_JIT`` set, more than one
    equality row or a zero entry in it, a free set more than the Hessian can hold, the equality
    lost to rounding, an unbounded direction, numba failing to compile the crash: the pivots in
    Python from then on, as in ``solve_box_qp``). ``sweeps`` not a finite number ``>= 0``:
    :class:`~fsframe.errors.InvalidOptionError`."""
    _check_sweeps("crash_start: sweeps", sweeps)
    m = F.shape[0]
    if not m or not compiled_available() or not (E.shape[0] == 0 or (E.shape[0] == 1 and np.all(E[0] != 0))):
        return None
    e_tol = box_qp_jit.START_TOL * max(1.0, float(np.abs(e).max(initial=0.0)))
    try:
        return _crashed(F, f, E, e, lo, hi, lam, sweeps, e_tol)[0]
    except Exception as exc:
        if not box_qp_jit.is_compile_error(exc):
            raise
        box_qp_jit.disable(exc)
        return None


CRASH_GIVE_UP = 2
"""The crash is given up after a sweep that leaves more than this times ``q + rows(E)`` free
variables (a crash that would end discarded, e.g. 16-24 free on a rank-4 Hessian, costs one sweep)."""


_STATUS = box_qp_jit.STATUS


def _active_set_compiled(F, f, E, lo, hi, lam, free, warm, max_iter, H=None) -> BoxQPResult:
    """:func:`_active_set` with the pivots compiled (``box_qp_jit._active_set``).
    A warm start whose free set the new Hessian cannot support is shrunk here, by the Python
    :func:`_regularize`, and the compiled loop goes on from there."""
    jit = box_qp_jit  # the status codes
    active_set = box_qp_jit.compiled()
    F = np.ascontiguousarray(F, dtype=float)
    f = np.ascontiguousarray(f, dtype=float)
    E = np.ascontiguousarray(E, dtype=float).reshape(-1, F.shape[0])
    lo = np.ascontiguousarray(lo, dtype=float)
    hi = np.ascontiguousarray(hi, dtype=float)
    use_h = F.shape[1] > F.shape[0]  # as _State: the m x m Hessian once when it is the smaller
    if not use_h:
        H = np.zeros((1, 1))
    elif H is None:
        H = F @ F.T
    regularized, it = not warm, 0
    while True:
        code, it, nu = active_set(F, H, use_h, f, E, lo, hi, lam, free, regularized, max_iter, it)
        if code != jit.NEEDS_REGULARIZE:
            break
        regularized = True
        st = _State(F, f, E, lo, hi, lam, free)
        why = _regularize(st, 1e-10)
        if why is not None:
            return BoxQPResult(why, iterations=it)
        lam, free = st.lam, st.free
        it += 1  # the Python loop counts the shrinking as a pivot
    if code != jit.OPTIMAL:
        return BoxQPResult(_STATUS[code], iterations=it)
    r = F @ (F.T @ lam) + f
    if E.shape[0]:
        r = r + E.T @ nu
    r[free] = 0.0  # stationary there by construction (rounding aside)
    return BoxQPResult("optimal", lam, nu, r, it)


def _active_set(F, f, E, e, lo, hi, lam, free, warm, max_iter) -> BoxQPResult:
    """The iterations of :func:`solve_box_qp` from the feasible ``lam`` with free set ``free``.

    Each pivot factorises the KKT matrix of its free set once (LAPACK ``dgetrf``): a Newton step
    that is not blocked leaves the free set as it was, and the release that follows it solves
    with the same factors (``dgetrs``) instead of forming and factorising the matrix again."""
    from scipy.linalg.lapack import dgetrf, dgetrs

    pe = E.shape[0]
    st = _State(F, np.asarray(f, dtype=float), E, lo, hi, lam, free)
    gscale = max(float(np.abs(st.f).max(initial=0.0)), 1e-300)
    fmax2 = max(1.0, float(np.abs(F).max(initial=0.0)) ** 2)
    tol = 1e-10
    zeros_pe = np.zeros(pe)
    nu = zeros_pe
    stationary = False
    N = np.flatnonzero(st.free)
    factors = None  # (N, lu, piv) of the last factorisation

    def factor(N):
        """The LU factors of the KKT matrix of ``N`` (``None``: numerically singular)."""
        nonlocal factors
        if factors is not None and factors[0] is N:
            return factors[1:]
        lu, piv, info = dgetrf(st.kkt(N))
        d = np.abs(lu.diagonal())
        if info != 0 or not d.min() > 1e-13 * d.max():  # singular, or nan / inf entries
            factors = None
            return None
        factors = (N, lu, piv)
        return lu, piv

    def solve(N, rhs):
        if not rhs.shape[0]:
            return np.zeros(0)
        fac = factor(N)
        if fac is None:
            return None
        x, info = dgetrs(fac[0], fac[1], rhs)
        if info != 0 or not np.isfinite(x).all():
            return None
        return x

    regularized = not warm
    for it in range(max_iter):
        j = -1
        if not stationary:
            sol = solve(N, np.concatenate([-st.g[N], zeros_pe]) if pe else -st.g[N])
            if sol is None:
                if regularized:
                    return BoxQPResult("singular", iterations=it)
                # a warm start's free set the new Hessian cannot support: shrink it first
                regularized = True
                why = _regularize(st, tol)
                if why is not None:
                    return BoxQPResult(why, iterations=it)
                N = np.flatnonzero(st.free)
                continue
            n = N.size
            d, nu, dnu = sol[:n], sol[n:], None
            # rounding noise in a (near-)zero step must not pin a degenerate variable at its bound
            d[np.abs(d) <= 1e-14 * max(1.0, float(np.abs(st.lam[N]).max(initial=0.0)))] = 0.0
            idx, alpha_star = N, 1.0
        else:
            r, viol = st.wrong_signs(nu)
            j = int(np.argmax(viol))
            if viol[j] <= OPT_TOL * max(gscale, float(np.abs(st.g - st.f).max(initial=0.0))):
                # confirm with the gradient recomputed: the incremental one carries rounding
                st.g = F @ (F.T @ st.lam) + st.f
                r, viol = st.wrong_signs(nu)
                size = max(gscale, float(np.abs(st.g - st.f).max(initial=0.0)))
                if float(viol.max(initial=0.0)) <= 1e3 * OPT_TOL * size:
                    r = r.copy()
                    r[st.free] = 0.0  # stationary there by construction (rounding aside)
                    return BoxQPResult("optimal", st.lam, nu, r, it)
                continue
            s = 1.0 if st.lam[j] <= lo[j] else -1.0
            n = N.size
            cross = st.cross(N, j) * -s
            sol = solve(N, np.concatenate([cross, E[:, j] * -s]) if pe else cross)
            if sol is None:
                return BoxQPResult("singular", iterations=it)
            idx = np.empty(n + 1, dtype=N.dtype)
            idx[:n] = N
            idx[n] = j
            d = np.empty(n + 1)
            d[:n] = sol[:n]
            d[n] = s
            d[np.abs(d) <= 1e-13 * float(np.abs(d).max())] = 0.0  # rounding noise, not a direction
            dnu = sol[n:]
            kappa = st.curvature(idx, d)
            alpha_star = -float(st.g[idx] @ d) / kappa if kappa > tol * float(d @ d) * fmax2 else np.inf
            st.release(j)
        alpha, k, lower = st.ratio(idx, d)
        blocked = alpha <= alpha_star
        step = alpha if blocked else alpha_star
        if not np.isfinite(step):
            return BoxQPResult("unbounded", iterations=it)
        st.move(idx, d, step)
        if blocked:
            st.pin(int(idx[k]), lower)
            stationary = False
            N = np.flatnonzero(st.free)
        else:
            if dnu is not None:
                nu = nu + step * dnu
            stationary = True
            if j >= 0:  # the released variable stays free: the free set grew
                N = np.flatnonzero(st.free)
    return BoxQPResult("iteration_limit", iterations=max_iter)
