r"""The pivots of :mod:`~fsframe.backends.box_qp` compiled with numba (the ``fast`` extra).

The same primal active-set method as :func:`fsframe.backends.box_qp._active_set`: the same free
sets, Newton steps, releases, ratio tests, rounding thresholds and optimality test. Sums are taken
in another order than numpy's BLAS takes them, so where the Python loop meets a tie (a degenerate
pivot) the two may break it differently and take other pivots to the same optimum (measured on
324 EM duals of Sonar fits: the same pivots on 257, the solutions within 4e-13).
A pivot of the Python loop is ~40 numpy calls on vectors of the dual's size (~70 µs at Sonar's
size, most of it call overhead); here it is one compiled loop over the same arithmetic. The
KKT system of each free set is factorised once (an LU with partial pivoting, written here, so
that the numerical-singularity test is the Python loop's: a pivot below ``1e-13`` times the
largest) and the release that follows solves with the same factors.

Only the main loop is compiled. When a warm start's free set is too large for the new Hessian
(EM removed features), :func:`_active_set` returns :data:`NEEDS_REGULARIZE` and the caller shrinks
the free set with the Python ``_regularize`` and calls again (rare: once per EM step at most).
:func:`hinge_warm_step` runs a whole warm EM step of :class:`fsframe.dense_em.DenseHingeSubproblem`
(the pivots, the intercept, the certificate's measures) in one call, deferring to the general path
whatever it does not cover. numba is imported by :func:`compiled` on the first solve, never by
``import fsframe``. The
compiled code is cached on disk (numba's ``cache=True``, beside this file), so the compilation
(10-40 s on a loaded 2-core machine) is paid once per installation, not once per process.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

__all__ = ["compiled", "compiled_crash", "compiled_hinge", "compiled_em_twins", "em_zero_norm_weights",
           "em_zero_norm_count", "crash", "hinge_warm_step", "OPTIMAL", "UNBOUNDED",
           "ITERATION_LIMIT", "SINGULAR", "NEEDS_REGULARIZE", "HINGE_CERTIFIED", "HINGE_UNCERTIFIED", "HINGE_DEFER",
           "HINGE_FAILED", "STATUS",
           "disable_hinge", "compiled_measures", "hinge_measures", "START_TOL", "nu_interval"]

OPTIMAL, UNBOUNDED, ITERATION_LIMIT, SINGULAR, NEEDS_REGULARIZE = 0, 1, 2, 3, 4
STATUS = {OPTIMAL: "optimal", UNBOUNDED: "unbounded", ITERATION_LIMIT: "iteration_limit", SINGULAR: "singular"}
"""The status ``solve_box_qp`` reports for each of the loop's final codes."""

START_TOL = 1e-9
"""A warm start (clipped to the box) is taken when its equality residual is at most this times
``max(1, max |e|)``; otherwise ``solve_box_qp`` starts cold and :func:`hinge_warm_step` defers."""

_BUILT: list = []  # [the compiled _active_set] or [None] without numba
_CRASH: list = [None]  # the compiled crash (compiled_crash), dropped with _BUILT by disable
_LOCK = threading.Lock()


def compiled():
    """The compiled :func:`_active_set`, or ``None`` when numba is not installed. The first call
    imports numba and compiles the functions of this module in place (their module names then
    refer to the compiled versions, as the compiled loop calls them), or loads them from numba's
    cache."""
    with _LOCK:  # fits in threads (evaluation with n_jobs) must not wrap the helpers twice
        if not _BUILT:
            try:
                import numba
            except ImportError:
                _BUILT.append(None)
            except Exception as exc:  # a broken numba (e.g. built against another numpy)
                _unusable(exc)
            else:
                try:
                    _BUILT.append(_compile(numba))
                except Exception as exc:  # e.g. no writable cache folder and numba refusing cache=True
                    _unusable(exc)
    return _BUILT[0]


def _compile(numba):
    """Compile the helpers and the loop, writing them into this module only once all compiled;
    without a writable cache folder (numba's "no locator available") compile without a cache."""
    names = globals()
    helpers = ("_lu", "_lu_solve", "_kkt", "_cached", "_kkt_cached", "_gradient", "nu_interval")
    for cache in (True, False):
        jit = numba.njit(cache=cache, nogil=True)
        try:
            built = {name: jit(names[name]) for name in helpers}
            loop = jit(_active_set)
        except RuntimeError:
            if not cache:
                raise
            continue
        names.update(built)
        return loop
    return None  # unreachable: the second pass returns or raises


def compiled_crash():
    """The compiled :func:`crash`, or ``None`` when the compiled loop is not in use (see
    :func:`compiled`); compiled (or loaded from numba's cache) on the first call."""
    if compiled() is None:
        return None
    return _compiled_once(_CRASH, crash)


def _compiled_once(slot: list, fn, **globals_first):
    """``slot[0]``, compiling ``fn`` into it on the first call (numba's disk cache when it can write
    one); ``globals_first`` are set in this module before (the compiled functions ``fn`` calls)."""
    with _LOCK:
        if slot[0] is None:
            import numba

            globals().update(globals_first)
            for cache in (True, False):
                try:
                    slot[0] = numba.njit(cache=cache, nogil=True)(fn)
                    break
                except RuntimeError:  # no writable cache folder: without a cache
                    if not cache:
                        raise
    return slot[0]


def is_compile_error(exc: BaseException) -> bool:
    """Whether ``exc`` is numba's (a typing or lowering error of the first call's compilation)."""
    return type(exc).__module__.startswith("numba")


def disable(exc: BaseException) -> None:
    """Stop using the compiled loop after ``exc`` (warned once): the Python pivots from now on."""
    with _LOCK:
        if _BUILT and _BUILT[0] is not None:
            _BUILT[:] = []
            _CRASH[0] = None
            _HINGE[0] = None
            _MEASURES[0] = None
            _EM_WEIGHTS[0] = None
            _EM_COUNT[0] = None
            _EM_READY[0] = None
            _unusable(exc)


def _unusable(exc: BaseException) -> None:
    warnings.warn(f"numba is installed but unusable ({type(exc).__name__}: {exc}); box_qp's pivots run in "
                  "Python (slower, the same answers)", RuntimeWarning, stacklevel=3)
    _BUILT.append(None)


def _lu(K):
    """LU with partial pivoting of ``K`` in place (LAPACK ``dgetrf``'s factors). Returns the row
    interchanges and whether the factors are usable (no zero, non-finite or relatively tiny pivot:
    the Python loop's test)."""
    n = K.shape[0]
    piv = np.empty(n, dtype=np.int64)
    for k in range(n):
        p = k
        amax = abs(K[k, k])
        for i in range(k + 1, n):
            a = abs(K[i, k])
            if a > amax:
                amax = a
                p = i
        piv[k] = p
        if p != k:
            for c in range(n):
                t = K[k, c]
                K[k, c] = K[p, c]
                K[p, c] = t
        pk = K[k, k]
        if pk == 0.0 or not np.isfinite(pk):
            return piv, False
        inv = 1.0 / pk
        for i in range(k + 1, n):
            K[i, k] *= inv
        for i in range(k + 1, n):
            a = K[i, k]
            if a != 0.0:
                for c in range(k + 1, n):
                    K[i, c] -= a * K[k, c]
    dmin, dmax = np.inf, 0.0
    for k in range(n):
        a = abs(K[k, k])
        dmin = min(dmin, a)
        dmax = max(dmax, a)
    return piv, bool(dmin > 1e-13 * dmax)


def _lu_solve(LU, piv, b):
    """Solve with the factors of :func:`_lu`; ``(x, finite)``."""
    n = LU.shape[0]
    x = b.copy()
    for k in range(n):
        p = piv[k]
        if p != k:
            t = x[k]
            x[k] = x[p]
            x[p] = t
    for i in range(n):
        s = x[i]
        for c in range(i):
            s -= LU[i, c] * x[c]
        x[i] = s
    for i in range(n - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, n):
            s -= LU[i, c] * x[c]
        x[i] = s / LU[i, i]
    ok = True
    for i in range(n):
        if not np.isfinite(x[i]):
            ok = False
    return x, ok


def _kkt(F, H, use_h, E, N):
    """The KKT matrix ``[[F_N F_N', E_N'], [E_N, 0]]`` of the free set ``N``."""
    n, pe, q = N.size, E.shape[0], F.shape[1]
    K = np.zeros((n + pe, n + pe))
    for a in range(n):
        ia = N[a]
        for b in range(a + 1):
            ib = N[b]
            if use_h:
                v = H[ia, ib]
            else:
                v = 0.0
                for c in range(q):
                    v += F[ia, c] * F[ib, c]
            K[a, b] = v
            K[b, a] = v
        for r in range(pe):
            K[a, n + r] = E[r, ia]
            K[n + r, a] = E[r, ia]
    return K


def _cached(F, i, pos, order, Hs, ns):
    """Make sure the entries ``(F F')_{i, k}`` of variable ``i`` against every cached variable ``k``
    are in the cache ``Hs`` (``pos[i]`` its slot, ``order`` the variable of each slot, ``ns`` the
    slots in use), growing it when full. Each entry is the dot product :func:`_kkt` takes, in the
    same order, so that the KKT matrices are the same bitwise. Returns ``(Hs, order, ns)``."""
    if pos[i] >= 0:
        return Hs, order, ns
    q = F.shape[1]
    if ns == Hs.shape[0]:
        cap = min(F.shape[0], 2 * ns + 8)
        grown = np.empty((cap, cap))
        grown[:ns, :ns] = Hs[:ns, :ns]
        Hs = grown
        grown_order = np.empty(cap, dtype=np.int64)
        grown_order[:ns] = order[:ns]
        order = grown_order
    pos[i] = ns
    order[ns] = i
    for k in range(ns + 1):
        ik = order[k]
        v = 0.0
        for c in range(q):
            v += F[i, c] * F[ik, c]
        Hs[ns, k] = v
        Hs[k, ns] = v
    return Hs, order, ns + 1


def _kkt_cached(F, E, N, pos, order, Hs, ns):
    """:func:`_kkt` (``use_h`` false) from the cache of :func:`_cached`: each pair's dot product
    computed once per solve, not once per free set. Returns ``(K, Hs, order, ns)``."""
    n, pe = N.size, E.shape[0]
    for a in range(n):
        Hs, order, ns = _cached(F, N[a], pos, order, Hs, ns)
    K = np.zeros((n + pe, n + pe))
    for a in range(n):
        pa = pos[N[a]]
        for b in range(a + 1):
            v = Hs[pa, pos[N[b]]]
            K[a, b] = v
            K[b, a] = v
        for r in range(pe):
            K[a, n + r] = E[r, N[a]]
            K[n + r, a] = E[r, N[a]]
    return K, Hs, order, ns


def _gradient(F, f, lam):
    """``F F' lam + f``."""
    m, q = F.shape
    u = np.zeros(q)
    for i in range(m):
        li = lam[i]
        if li != 0.0:
            for c in range(q):
                u[c] += F[i, c] * li
    g = f.copy()
    for i in range(m):
        s = 0.0
        for c in range(q):
            s += F[i, c] * u[c]
        g[i] += s
    return g


def nu_interval(g, a, lo, hi, at_lo):
    """``(L, U)``: the equality multipliers ``nu`` of one row ``a`` that keep every bound multiplier
    ``r_i = g_i + a_i nu`` of its sign at a point with no free variable (``at_lo[i]``: at its lower
    bound, where ``r_i >= 0``; else at its upper, ``r_i <= 0``); fixed variables (``lo == hi``) and
    ``a_i = 0`` bound nothing. The one definition of the midpoint rule's interval
    (``box_qp._canonical_nu``, :func:`hinge_warm_step`)."""
    L, U = -np.inf, np.inf
    for i in range(g.shape[0]):
        if lo[i] == hi[i] or a[i] == 0.0:
            continue
        t = -g[i] / a[i]  # r_i = 0 at nu = t
        if at_lo[i] == (a[i] > 0.0):
            L = max(L, t)
        else:
            U = min(U, t)
    return L, U


def _active_set(F, H, use_h, f, E, lo, hi, lam, free, regularized, max_iter, it0):  # noqa: C901
    """The loop of ``box_qp._active_set`` from the feasible ``lam`` with free set ``free`` (both
    updated in place). Returns ``(code, iterations, nu)``; ``code`` is one of the module's
    constants."""
    m, q = F.shape
    pe = E.shape[0]
    OPT_TOL = 1e-12
    tol = 1e-10
    g = _gradient(F, f, lam)
    wrong = np.zeros(m)
    for i in range(m):
        if free[i] or lo[i] == hi[i]:
            wrong[i] = 0.0
        elif lam[i] <= lo[i]:
            wrong[i] = -1.0
        elif lam[i] >= hi[i]:
            wrong[i] = 1.0
    gscale = 1e-300
    fmax = 0.0
    for i in range(m):
        gscale = max(gscale, abs(f[i]))
        for c in range(q):
            fmax = max(fmax, abs(F[i, c]))
    fmax2 = max(1.0, fmax * fmax)
    nu = np.zeros(pe)
    dnu = np.zeros(pe)
    stationary = False
    N = np.flatnonzero(free)
    version = 0  # bumped whenever N is recomputed: the factors below belong to one version
    fac_version = -1
    LU = np.zeros((0, 0))
    piv = np.zeros(0, dtype=np.int64)
    r = np.zeros(m)
    viol = np.zeros(m)
    # without H: the free variables' dot products (F F')_{ik} cached for the solve (_cached), so
    # that a free set one variable away from the last costs no new products but its own
    pos = np.full(m, -1, dtype=np.int64)
    cap = min(m, N.size + pe + 16)
    Hs = np.empty((cap, cap))
    order = np.empty(cap, dtype=np.int64)
    ns = 0
    for it in range(it0, max_iter):
        j = -1
        n = N.size
        if not stationary:
            rhs = np.zeros(n + pe)
            for a in range(n):
                rhs[a] = -g[N[a]]
        else:
            # the multipliers of the bounds and how far each has the wrong sign
            size = gscale
            for i in range(m):
                s = g[i]
                for e_ in range(pe):
                    s += E[e_, i] * nu[e_]
                r[i] = s
                viol[i] = s * wrong[i]
                size = max(size, abs(g[i] - f[i]))
            j = int(np.argmax(viol))
            if viol[j] <= OPT_TOL * size:
                # confirm with the gradient recomputed: the incremental one carries rounding
                g = _gradient(F, f, lam)
                size = gscale
                vmax = -np.inf
                for i in range(m):
                    s = g[i]
                    for e_ in range(pe):
                        s += E[e_, i] * nu[e_]
                    vmax = max(vmax, s * wrong[i])
                    size = max(size, abs(g[i] - f[i]))
                if max(vmax, 0.0) <= 1e3 * OPT_TOL * size:
                    return OPTIMAL, it, nu
                continue
            sgn = 1.0 if lam[j] <= lo[j] else -1.0
            rhs = np.zeros(n + pe)
            if not use_h:
                for a in range(n):
                    Hs, order, ns = _cached(F, N[a], pos, order, Hs, ns)
                Hs, order, ns = _cached(F, j, pos, order, Hs, ns)
            for a in range(n):
                ia = N[a]
                v = H[ia, j] if use_h else Hs[pos[ia], pos[j]]
                rhs[a] = v * -sgn
            for e_ in range(pe):
                rhs[n + e_] = E[e_, j] * -sgn
        # the KKT system of N: factorised once per free set
        if rhs.size == 0:
            sol = np.zeros(0)
            ok = True
        else:
            ok = True
            if fac_version != version:
                if use_h:
                    LU = _kkt(F, H, use_h, E, N)
                else:
                    LU, Hs, order, ns = _kkt_cached(F, E, N, pos, order, Hs, ns)
                piv, ok = _lu(LU)
                fac_version = version if ok else -1
            if ok:
                sol, ok = _lu_solve(LU, piv, rhs)
            else:
                sol = rhs
        if not stationary:
            if not ok:
                if regularized:
                    return SINGULAR, it, nu
                return NEEDS_REGULARIZE, it, nu  # the caller shrinks the free set, then calls again
            idx = N
            d = sol[:n].copy()
            for e_ in range(pe):
                nu[e_] = sol[n + e_]
            has_dnu = False
            lmax = 1.0
            for a in range(n):
                lmax = max(lmax, abs(lam[N[a]]))
            for a in range(n):
                if abs(d[a]) <= 1e-14 * lmax:
                    d[a] = 0.0
            alpha_star = 1.0
        else:
            if not ok:
                return SINGULAR, it, nu
            idx = np.empty(n + 1, dtype=N.dtype)
            idx[:n] = N
            idx[n] = j
            d = np.empty(n + 1)
            d[:n] = sol[:n]
            d[n] = sgn
            dmax = 0.0
            for a in range(n + 1):
                dmax = max(dmax, abs(d[a]))
            for a in range(n + 1):
                if abs(d[a]) <= 1e-13 * dmax:
                    d[a] = 0.0
            for e_ in range(pe):
                dnu[e_] = sol[n + e_]
            has_dnu = True
            # the curvature d' F F' d along d (on idx) and the slope g' d
            dd, slope, kappa = 0.0, 0.0, 0.0
            for a in range(n + 1):
                dd += d[a] * d[a]
                slope += g[idx[a]] * d[a]
            if use_h:
                for a in range(n + 1):
                    s = 0.0
                    for b in range(n + 1):
                        s += H[idx[a], idx[b]] * d[b]
                    kappa += d[a] * s
            else:
                for c in range(q):
                    s = 0.0
                    for a in range(n + 1):
                        s += F[idx[a], c] * d[a]
                    kappa += s * s
            alpha_star = -slope / kappa if kappa > tol * dd * fmax2 else np.inf
            free[j] = True
            wrong[j] = 0.0
        # the ratio test: the largest step along d that keeps the bounds
        alpha, k, lower = np.inf, -1, False
        for a in range(idx.size):
            da = d[a]
            if da == 0.0:
                continue
            i = idx[a]
            neg = da < 0
            aa = ((lo[i] if neg else hi[i]) - lam[i]) / da
            if aa < 0.0:
                aa = 0.0  # rounding may leave a variable a hair outside
            if k < 0 or aa < alpha:
                alpha, k, lower = aa, a, neg
        if idx.size and k < 0:
            k = 0
            lower = bool(d[0] < 0)
        blocked = alpha <= alpha_star
        step = alpha if blocked else alpha_star
        if not np.isfinite(step):
            return UNBOUNDED, it, nu
        # move along d: lam and the gradient
        u = np.zeros(q)
        for a in range(idx.size):
            ad = step * d[a]
            if ad != 0.0:
                i = idx[a]
                lam[i] += ad
                if use_h:
                    for c in range(m):
                        g[c] += H[c, i] * ad
                else:
                    for c in range(q):
                        u[c] += F[i, c] * ad
        if not use_h:
            for i in range(m):
                s = 0.0
                for c in range(q):
                    s += F[i, c] * u[c]
                g[i] += s
        if blocked:
            i = idx[k]
            lam[i] = lo[i] if lower else hi[i]
            free[i] = False
            if lo[i] != hi[i]:
                wrong[i] = -1.0 if lower else 1.0
            stationary = False
            N = np.flatnonzero(free)
            version += 1
        else:
            if has_dnu:
                for e_ in range(pe):
                    nu[e_] += step * dnu[e_]
            stationary = True
            if j >= 0:  # the released variable stays free: the free set grew
                N = np.flatnonzero(free)
                version += 1
    return ITERATION_LIMIT, max_iter, nu


def crash(F, H, use_h, f, a, pairs, lo, hi, lam, max_steps, rel_tol):
    """A crash start for the active-set method: dual coordinate descent on
    ``min 1/2 ||F' lam||^2 + f' lam`` over the box ``lo <= lam <= hi`` from the feasible ``lam``
    (updated in place), and, with ``pairs``, the one equality ``a' lam = const`` kept (every
    ``a_i`` non-zero): each step moves the pair of most violating variables (the maximal violating
    pair of SMO, in the coordinates ``u_i = a_i lam_i`` whose sum is fixed) along
    ``e_i / a_i - e_j / a_j``; without ``pairs``, one variable, the one whose projected gradient is
    largest. The step is the exact minimiser along that direction, clipped to the box (a variable
    that reaches its bound is set to it exactly). At most ``max_steps`` steps; stops early once the
    largest violation is at most ``rel_tol`` times the gradient's size. With ``use_h``, ``H`` is
    the transpose of ``F F'`` (C-contiguous: its row ``i`` is the Hessian's column ``i``, read in
    order; the same values as the column, whatever rounding left ``F F'`` unsymmetric) and a step
    updates the gradient from two of its rows (``O(m)``), else from ``F`` (``O(m q)``). Returns the steps taken,
    or ``-1`` when a direction of no curvature is unbounded in the box (the caller starts cold).

    The answer is only a starting point: the active-set method takes its free set and ends at
    the exact optimum (:func:`fsframe.backends.box_qp.solve_box_qp`, ``crash=``)."""
    m, q = F.shape
    w = np.zeros(q)  # F' lam
    for i in range(m):
        li = lam[i]
        if li != 0.0:
            for c in range(q):
                w[c] += F[i, c] * li
    g = f.copy()  # the gradient F w + f
    for i in range(m):
        s = 0.0
        for c in range(q):
            s += F[i, c] * w[c]
        g[i] += s
    size = 1e-300
    for i in range(m):
        size = max(size, abs(f[i]))
    v = np.zeros(q)
    # every a_k = +-1 (the hinge dual's labels): g_k / a_k is exactly g_k * a_k (a sign), a
    # product instead of a division per entry and step
    unit = True
    if pairs:
        for k in range(m):
            unit = unit and abs(a[k]) == 1.0
    for step in range(max_steps):
        # the most violating pair (or variable)
        i_up, j_dn = -1, -1
        g_up, g_dn = np.inf, -np.inf
        for k in range(m):
            ak = a[k] if pairs else 1.0
            gk = g[k] * ak if unit else g[k] / ak
            up = lam[k] < hi[k] if ak > 0 else lam[k] > lo[k]  # u_k can grow
            dn = lam[k] > lo[k] if ak > 0 else lam[k] < hi[k]  # u_k can shrink
            if up and gk < g_up:
                g_up, i_up = gk, k
            if dn and gk > g_dn:
                g_dn, j_dn = gk, k
        if pairs:
            if i_up < 0 or j_dn < 0 or g_dn - g_up <= rel_tol * size:
                return step
            ai, aj = a[i_up], a[j_dn]
            for c in range(q):
                v[c] = F[i_up, c] / ai - F[j_dn, c] / aj
            slope = g_up - g_dn  # g' d along d = e_i / a_i - e_j / a_j: negative
            # how far u_i may grow and u_j shrink
            smax_i = (hi[i_up] - lam[i_up]) * ai if ai > 0 else (lo[i_up] - lam[i_up]) * ai
            smax_j = (lam[j_dn] - lo[j_dn]) * aj if aj > 0 else (lam[j_dn] - hi[j_dn]) * aj
        else:
            # one variable: the larger violation of "lower its gradient" and "raise it"
            vi = -g_up if i_up >= 0 else 0.0
            vj = g_dn if j_dn >= 0 else 0.0
            if max(vi, vj) <= rel_tol * size:
                return step
            if vi >= vj:
                ai, aj = 1.0, 0.0
                slope = g_up
                smax_i = hi[i_up] - lam[i_up]
                smax_j = np.inf
                for c in range(q):
                    v[c] = F[i_up, c]
            else:
                ai, aj = 0.0, 1.0
                slope = -g_dn
                smax_i = np.inf
                smax_j = lam[j_dn] - lo[j_dn]
                for c in range(q):
                    v[c] = -F[j_dn, c]
        kappa = 0.0
        for c in range(q):
            kappa += v[c] * v[c]
        s = -slope / kappa if kappa > 0.0 else np.inf
        hit_i = smax_i <= s
        if hit_i:
            s = smax_i
        hit_j = smax_j <= s
        if hit_j:
            s = smax_j
            hit_i = smax_i <= s
        if not np.isfinite(s):
            return -1
        if s <= 0.0:
            return step
        if ai != 0.0:
            lam[i_up] += s / ai
            if hit_i:
                lam[i_up] = hi[i_up] if ai > 0 else lo[i_up]
        if aj != 0.0:
            lam[j_dn] -= s / aj
            if hit_j:
                lam[j_dn] = lo[j_dn] if aj > 0 else hi[j_dn]
        if use_h:
            ci = s / ai if ai != 0.0 else 0.0
            cj = -s / aj if aj != 0.0 else 0.0
            if ci != 0.0 and cj != 0.0:  # a pair's step: the same sums without a test per entry
                for k in range(m):
                    g[k] += H[i_up, k] * ci + H[j_dn, k] * cj
            else:
                for k in range(m):
                    g[k] += (H[i_up, k] * ci if ci != 0.0 else 0.0) + (H[j_dn, k] * cj if cj != 0.0 else 0.0)
        else:
            for k in range(m):
                t = 0.0
                for c in range(q):
                    t += F[k, c] * v[c]
                g[k] += s * t
    return max_steps


# -- the warm EM step of the hinge dual in one call (fsframe.dense_em) ---------------------------

_HINGE: list = [None]  # the compiled hinge_warm_step (compiled_hinge), dropped with _BUILT by disable; False:
# numba could not compile it (disable_hinge)

HINGE_CERTIFIED, HINGE_UNCERTIFIED, HINGE_DEFER, HINGE_FAILED = 0, 1, 2, 3


def compiled_hinge():
    """The compiled :func:`hinge_warm_step`, or ``None`` when the compiled loop is not in use (see
    :func:`compiled`); compiled (or loaded from numba's cache) on the first call."""
    loop = compiled()
    if loop is None or _HINGE[0] is False:
        return None
    measures = compiled_measures()  # the compiled loop and certificate the step calls
    return _compiled_once(_HINGE, hinge_warm_step, _active_set_jit=loop, _hinge_measures_jit=measures)


def disable_hinge(exc: BaseException) -> None:
    """Stop using the compiled :func:`hinge_warm_step` after ``exc`` (numba failing to compile it;
    warned once): the warm steps go through ``solve_box_qp`` from now on, its pivots still
    compiled."""
    with _LOCK:
        if _HINGE[0] is not False:
            _HINGE[0] = False
            warnings.warn(f"numba could not compile the hinge dual's warm step ({type(exc).__name__}: {exc}); "
                          "the warm EM steps run through solve_box_qp (the same answers)", RuntimeWarning, stacklevel=3)


_MEASURES: list = [None]  # the compiled hinge_measures (compiled_measures)


def compiled_measures():
    """The compiled :func:`hinge_measures`, or ``None`` when the compiled loop is not in use."""
    if compiled() is None:
        return None
    return _compiled_once(_MEASURES, hinge_measures)


def hinge_measures(X, YX, y, live, q_live, C, lam, w_live, b, gap_tol, out_xi, measures):
    r"""The certificate of ``DenseHingeSubproblem.certificate`` for the compiled warm step: the
    model ``w_live`` (on the columns ``live`` of ``X``, weights ``q_live``) and intercept ``b``
    judged with the dual point ``lam`` (``YX = diag(y) X``). Writes the hinge slacks into
    ``out_xi`` and ``measures = [gap, equality, box, stationarity, primal, dual]``; returns whether
    each of the first four is within ``gap_tol`` (the gap in absolute value). Each sum over samples
    in the order of the rows (memory order)."""
    m, nq = X.shape[0], live.shape[0]
    gl = np.zeros(nq)  # X_live' (y * lam)
    for i in range(m):
        li = lam[i]
        for c in range(nq):
            gl[c] += YX[i, live[c]] * li
    primal_loss = 0.0
    for i in range(m):
        v = b
        for c in range(nq):
            v += X[i, live[c]] * w_live[c]
        xi = 1.0 - y[i] * v
        if xi < 0.0:
            xi = 0.0
        out_xi[i] = xi
        primal_loss += xi
    primal = C * primal_loss
    pen, dual_q, stat, wmax = 0.0, 0.0, 0.0, 0.0
    for c in range(nq):
        wc = w_live[c]
        pen += q_live[c] * (wc * wc)
        gc = gl[c]
        dual_q += (gc * gc) / q_live[c]
        stat = max(stat, abs(wc - gc / (2.0 * q_live[c])))
        wmax = max(wmax, abs(wc))
    primal += pen
    lsum, ysum, lmin, lmax = 0.0, 0.0, 0.0, 0.0
    for i in range(m):
        lsum += lam[i]
        ysum += y[i] * lam[i]
        lmin = min(lmin, lam[i])
        lmax = max(lmax, lam[i])
    dual = lsum - 0.25 * dual_q
    gap = (primal - dual) / max(1.0, abs(primal))
    equality = abs(ysum) / max(1.0, C)
    box = max(0.0, max(-lmin, lmax - C)) / max(1.0, C)
    stationarity = stat / max(1.0, wmax)
    measures[0], measures[1], measures[2] = gap, equality, box
    measures[3], measures[4], measures[5] = stationarity, primal, dual
    return abs(gap) <= gap_tol and equality <= gap_tol and box <= gap_tol and stationarity <= gap_tol


def _hinge_measures_jit(X, YX, y, live, q_live, C, lam, w_live, b, gap_tol, out_xi, measures):
    """The compiled :func:`hinge_measures` (set by :func:`compiled_hinge`; stands in until then)."""
    return hinge_measures(X, YX, y, live, q_live, C, lam, w_live, b, gap_tol, out_xi, measures)


def _active_set_jit(F, H, use_h, f, E, lo, hi, lam, free, regularized, max_iter, it0):
    """The compiled :func:`_active_set` (set by :func:`compiled_hinge` before it compiles
    :func:`hinge_warm_step`; this Python body only stands in until then)."""
    return _active_set(F, H, use_h, f, E, lo, hi, lam, free, regularized, max_iter, it0)


def hinge_warm_step(F, H, use_h, f, y, lo, hi, start, max_iter, X, YX, live, s, q_live, C, gap_tol,
                    free_tol, out_lam, out_w, out_xi, measures, form_f=False):  # noqa: C901
    r"""One warm EM step of :class:`fsframe.dense_em.DenseHingeSubproblem` in one compiled call: what
    :func:`fsframe.backends.box_qp.solve_box_qp` does from the warm ``start`` (``crash=0``; the
    equality ``y' lam = 0``, every ``y_i = +-1``), then the primal ``w_live = s * F' lam``, the
    intercept (the midpoint rule of ``box_qp._canonical_nu`` when no multiplier is free) and the
    certificate of ``DenseHingeSubproblem.certificate`` on ``X`` and ``YX = diag(y) X`` (the
    columns ``live``, weights ``q_live``).

    Returns ``(code, iterations, b, status)``: :data:`HINGE_CERTIFIED` (``out_lam``, ``out_w`` —
    the live entries —, ``out_xi`` and ``measures = [gap, equality, box, stationarity, primal,
    dual]`` hold the answer), :data:`HINGE_UNCERTIFIED` (the same, but the certificate refuses it),
    :data:`HINGE_FAILED` (the pivots ended in ``status``, :data:`SINGULAR`, :data:`ITERATION_LIMIT`
    or :data:`UNBOUNDED`: what ``solve_box_qp`` reports from this start, as its pivots are these)
    or :data:`HINGE_DEFER` (the start is not feasible or the free set needs the Python shrinking:
    the caller runs the general path for this step, which repeats these pivots and goes on).

    ``form_f``: ``F`` is a buffer of shape ``(m, len(live))`` that this call fills first with
    ``YX[:, live] * s`` (each entry the one product numpy's ``YX[:, live] * s`` takes: the same
    bits), whatever the code returned, so the caller's general path reads it after a deferral."""
    m, nq = F.shape
    if form_f:
        for i in range(m):
            for c in range(nq):
                F[i, c] = YX[i, live[c]] * s[c]
    # the start as solve_box_qp takes it: clipped to the box, its equality residual within 1e-9
    lam = np.empty(m)
    res = 0.0
    for i in range(m):
        v = start[i]
        if v < lo[i]:
            v = lo[i]
        if v > hi[i]:
            v = hi[i]
        lam[i] = v
        res += y[i] * v
    if not abs(res) <= START_TOL:
        return HINGE_DEFER, 0, 0.0, OPTIMAL
    free = np.empty(m, dtype=np.bool_)
    anyfree = False
    for i in range(m):
        free[i] = lam[i] > lo[i] and lam[i] < hi[i]
        anyfree = anyfree or free[i]
    if not anyfree:  # _full_row_rank with one row of +-1: E_N needs one variable
        free[0] = True
    E = np.empty((1, m))  # the equality row, a copy (y.reshape would need y contiguous to type)
    E[0, :] = y
    code, it, nu = _active_set_jit(F, H, use_h, f, E, lo, hi, lam, free, False, max_iter, 0)
    if code == NEEDS_REGULARIZE:
        return HINGE_DEFER, it, 0.0, code
    if code != OPTIMAL:  # solve_box_qp from this start ends the same: its status, not a repeat
        return HINGE_FAILED, it, 0.0, code
    # _canonical_nu: with no multiplier strictly inside its box the intercept is the midpoint of
    # the interval of optimal ones (every y_i is non-zero, so one free multiplier fixes it)
    b = nu[0]
    anyfree = False
    for i in range(m):
        width = hi[i] - lo[i]
        if not np.isfinite(width):
            width = max(1.0, abs(lam[i]))
        if min(lam[i] - lo[i], hi[i] - lam[i]) > free_tol * width:
            anyfree = True
            break
    if not anyfree:
        snapped = np.empty(m)  # each multiplier onto its nearer bound
        at_lo = np.empty(m, dtype=np.bool_)
        for i in range(m):
            at_lo[i] = lam[i] - lo[i] <= hi[i] - lam[i]
            snapped[i] = lo[i] if at_lo[i] else hi[i]
        L, U = nu_interval(_gradient(F, f, snapped), y, lo, hi, at_lo)
        if np.isfinite(L) and np.isfinite(U):  # else nu and lam as the pivots left them
            b = 0.5 * (L + U)
            lam = snapped
    for i in range(m):
        out_lam[i] = lam[i]
    # the primal and the certificate (DenseHingeSubproblem.certificate): F' lam row by row (memory
    # order), each sum over i in order
    u = np.zeros(nq)
    for i in range(m):
        li = lam[i]
        for c in range(nq):
            u[c] += F[i, c] * li
    for c in range(nq):
        out_w[c] = s[c] * u[c]
    ok = _hinge_measures_jit(X, YX, y, live, q_live, C, lam, out_w, b, gap_tol, out_xi, measures)
    return (HINGE_CERTIFIED if ok else HINGE_UNCERTIFIED), it, b, OPTIMAL


_EM_WEIGHTS: list = [None]  # the compiled em_zero_norm_weights (compiled_em_twins)
_EM_COUNT: list = [None]  # the compiled em_zero_norm_count (compiled_em_twins)
_EM_READY: list = [None]  # (weights, count) once both are compiled and warmed up (compiled_em_twins)
_EM_FAILED: list = [False]  # numba could not compile the twins (compiled_em_twins): numpy's path from then on


def compiled_em_twins():
    """``(weights, count)``: the compiled :func:`em_zero_norm_weights` and :func:`em_zero_norm_count`,
    or ``None`` when the compiled loop is not in use (see :func:`compiled`) or numba could not
    compile them (warned once; numpy's path from then on, the same answers). The first call
    compiles them (or loads numba's cache) and runs each once on a one-entry vector, ``t`` both
    writeable and read-only (a fit's iterates are read-only, :class:`fsframe.problem.Iterate`), so
    that a compile error shows here and not in the middle of a fit. Only a warmed-up pair is handed
    out, and a failure is kept in its own flag: a racing thread gets the pair, ``None`` or does the
    warm-up itself, never a half-built or failed one."""
    if compiled() is None or _EM_FAILED[0]:
        return None
    ready = _EM_READY[0]
    if ready is not None:
        return ready
    try:
        weights = _compiled_once(_EM_WEIGHTS, em_zero_norm_weights)
        count = _compiled_once(_EM_COUNT, em_zero_norm_count)
        one, frozen = np.ones(1), np.ones(1)
        frozen.flags.writeable = False
        for t in (one, frozen):  # numba compiles one specialisation per writeability of t
            weights(t, one, 0.0, np.zeros(1, dtype=np.bool_), one)
            count(t, one, 0.0)
    except Exception as exc:
        if not is_compile_error(exc):
            raise
        with _LOCK:
            _EM_FAILED[0] = True
        warnings.warn(f"numba could not compile the EM step's weights ({type(exc).__name__}: {exc}); they are "
                      "formed with numpy (the same answers)", RuntimeWarning, stacklevel=3)
        return None
    _EM_READY[0] = weights, count
    return weights, count


def em_zero_norm_weights(t, sizes, cut, fixed, limit):
    """One EM step's weights under the zero-norm's ``q(t) = 1/t^2`` (002 eq. 9), in one call: what
    :meth:`fsframe.loops.em.EM._weights` forms with numpy for the built-in ``l0`` and ``lp`` with
    ``p = 0`` (their ``quad_weights``, ``safe_div(1, t**2)``, then :meth:`~fsframe.loops.em.EM._capped`),
    entry for entry the same arithmetic (``t * t``, then ``1 /`` it where that is positive, else
    ``inf``: both rounded once, as numpy rounds them), so the same bits. ``fixed`` (bool) is
    updated in place: a group whose contribution ``sizes[j]`` is at most ``cut``, or whose weight
    is not at most ``limit[j]`` (``inf``, ``nan``, above the cap), is fixed and gets ``inf``."""
    n = t.shape[0]
    w = np.empty(n)
    for j in range(n):
        if sizes[j] <= cut:
            fixed[j] = True
        if fixed[j]:
            w[j] = np.inf
            continue
        d = t[j] * t[j]
        v = np.inf
        if d > 0:  # safe_div's test, on the divisor (t * t underflows to 0 below ~1e-162: inf)
            v = 1.0 / d
        if not v <= limit[j]:
            fixed[j] = True
            v = np.inf
        w[j] = v
    return w


def em_zero_norm_count(t, scale, zero_tol):
    """``sum_j phi(t_j)`` of the zero-norm (``phi(t) = 1{t > 0}``) over the groups the reported
    objective keeps (:meth:`fsframe.loops.base.OuterLoop.surrogate_objective`: contribution
    ``t_j scale_j`` above ``max(zero_tol * largest, 1e-12)``), as a float: a count, which numpy's
    sum of the ``0.0``/``1.0`` entries also forms exactly. A ``nan`` contribution makes numpy's
    largest ``nan`` and keeps no group: 0 here too."""
    n = t.shape[0]
    top = -np.inf
    for j in range(n):
        c = t[j] * scale[j]
        if c != c:
            return 0.0
        if c > top:
            top = c
    cut = zero_tol * top
    if not cut >= 1e-12:  # Python's max(zero_tol * top, 1e-12) takes 1e-12 unless the product is larger
        cut = 1e-12
    count = 0
    for j in range(n):
        if t[j] * scale[j] > cut and t[j] > 0:
            count += 1
    return float(count)
