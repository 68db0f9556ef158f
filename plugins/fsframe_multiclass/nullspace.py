"""The linear algebra of DSO-FS (paper 004 §2-3): the solution space of ``X W = X X^+ (Y + E)``
(eqs. 7-8), the closed-form ``U`` update (eqs. 11-14) and the ``E`` update (a convex QP, §3).

Everything here is numpy on ``m0 x m0`` and ``m0 x n0`` matrices (``m0 = rank X <= m``): nothing is
``n x n``, so ``n`` of ten thousands and more stays cheap (004's CLL-SUB-111 has ``n = 11340``).
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from fsframe.canonical import ProblemData

__all__ = ["NullSpace", "row_norms", "l2p", "u_update", "e_update_problem", "e_update_bvls", "e_update_ldp", "ldp",
           "ldp_rows", "LDP_START", "ROW_FLOOR", "E_FLOOR"]

ROW_FLOOR = 1e-10
"""A row of ``W`` whose norm is below ``ROW_FLOOR`` times the largest is zero: its weight
``||w_i||^(2-p)`` in the ``U`` update is 0 (it stays zero, the pseudo-inverse convention of 004
footnote 2 applied to ``Pi``), and its weight ``||v_i||^(p-2)`` in the ``E`` update is capped at
that of a row of norm ``ROW_FLOOR`` times the largest."""


E_FLOOR = 1e-4
"""In the ``E`` step, a pivot row of ``V`` whose norm is below ``E_FLOOR`` times the largest keeps
its value (a bound ``W1_i = V_i``) instead of entering the objective with the weight
``||v_i||^(p-2)`` — a weight range beyond what any QP solver resolves (1e15 after three
iterations on Colon with ``p = 0.5``). ``E^k`` satisfies the bound, so the restricted minimum is
still at most the weighted objective at ``E^k``: Lemma 2, hence Theorem 1 (monotone
``||W||_{2,p}``), holds unchanged."""


def row_norms(W: NDArray) -> NDArray:
    """``||w_i||_2`` per row (004 eq. 1)."""
    return np.sqrt(np.einsum("ij,ij->i", W, W))


def l2p(W: NDArray, p: float) -> float:
    """``||W||_{2,p} = (sum_i ||w_i||_2^p)^(1/p)`` (004 eq. 1)."""
    t = row_norms(W)
    return float(np.sum(t[t > 0] ** p) ** (1.0 / p))


@attrs.frozen(eq=False)
class NullSpace:
    """``W = P U + Q + [L E; 0]`` with ``P = [-M; I]`` (004 eqs. 7-8), in the pivot order ``perm``.

    A column-pivoted QR of ``Xt = [X, 1]`` (``Xt[:, perm] = Q R``) plays the Gaussian elimination
    of eq. 7: the first ``m0`` pivots are linearly independent columns ``X1`` (``m0`` the numerical
    rank), ``R11 W1 + R12 W2 = Q1ᵀ (Y + E)`` is the reduced system, so ``M = R11⁻¹ R12``,
    ``L = R11⁻¹ Q1ᵀ`` (``= D X X⁺`` restricted to the ``m0`` independent rows: the least-squares
    substitute of §2 when ``X W = Y + E`` is inconsistent) and ``N = L Y``. The paper writes
    ``P = [M; I]`` with the sign absorbed in ``M``; its ``V = -M U + N + L E`` is ours.

    When ``m > m0``, ``Q2`` (m, m - m0) completes ``Q1`` to an orthonormal basis: ``Xt W = Y + E``
    has a solution exactly when ``Q2ᵀ (Y + E) = 0`` — the constraint that keeps the hard margin
    (:func:`e_update_problem` with ``hard=True``) instead of the least-squares substitute.

    Attributes
    ----------
    perm : int array, shape (n + 1,)
        ``perm[:m0]`` are the rows ``W1`` of the pivots, ``perm[m0:]`` those of ``U``.
    M : (m0, n0)
    L : (m0, m)
    N : (m0, c)
    Q2 : (m, m - m0)
    """

    perm: NDArray
    M: NDArray
    L: NDArray
    N: NDArray
    Q1: NDArray = attrs.field(repr=False)
    R11: NDArray = attrs.field(repr=False)
    Q2: NDArray = attrs.field(repr=False)

    @property
    def m0(self) -> int:
        return int(self.M.shape[0])

    @property
    def n0(self) -> int:
        return int(self.M.shape[1])

    @classmethod
    def of(cls, Xt: NDArray, Y: NDArray, *, rank_tol: float = 1e-10) -> "NullSpace":
        import scipy.linalg as sla

        Q, R, perm = sla.qr(Xt, mode="economic", pivoting=True)
        d = np.abs(np.diag(R))
        m0 = int(np.count_nonzero(d > rank_tol * d[0])) if d.size else 0
        R11 = R[:m0, :m0]
        M = sla.solve_triangular(R11, R[:m0, m0:])
        Q1 = Q[:, :m0]
        L = sla.solve_triangular(R11, Q1.T)
        m = Xt.shape[0]
        Q2 = sla.qr(Q1, mode="full")[0][:, m0:] if m0 < m else np.zeros((m, 0))
        return cls(perm=perm, M=M, L=L, N=L @ Y, Q1=Q1, R11=R11, Q2=Q2)

    @property
    def consistent(self) -> bool:
        """Whether ``Xt W = Y + E`` is solvable for every ``E`` (``[X, 1]`` has full row rank)."""
        return self.Q2.shape[1] == 0

    def assemble(self, U: NDArray, E: NDArray) -> NDArray:
        """``W`` (rows in the original column order of ``Xt``) from ``U`` and ``E`` (eq. 8)."""
        W1 = self.N + self.L @ E - self.M @ U
        W = np.empty((self.m0 + self.n0, U.shape[1]))
        W[self.perm[:self.m0]] = W1
        W[self.perm[self.m0:]] = U
        return W


def _pi2(t: NDArray, p: float, scale: float) -> NDArray:
    """``Pi_ii^2 = ||w_i||^(2-p)`` (004 footnote 2), 0 for rows below the floor."""
    out = np.zeros_like(t)
    live = t > ROW_FLOOR * scale
    out[live] = t[live] ** (2.0 - p)
    return out


def u_update(ns: NullSpace, K: NDArray, t: NDArray, p: float, *, skip_empty: bool = True) -> NDArray:
    """``U = argmin_U ||Sigma (P U + G)||_F^2`` with ``Sigma_ii = ||w_i||^(p/2-1)`` (Algorithm 1).

    Eq. 12 gives ``U = (Mᵀ S1 M + S2)⁻¹ Mᵀ S1 K`` (``S = Sigma²``, ``K = N + L E``); eq. 13 its
    ``m0 x m0`` form ``U = T (M T + I)⁻¹ K``, ``T = S2⁻¹ Mᵀ S1``, solved as the linear system of eq.
    14. We solve eq. 14 multiplied through by ``S1⁻¹`` — ``(M Pi2² Mᵀ + Pi1²) C' = K``,
    ``U = Pi2² Mᵀ C'`` with ``Pi² = S⁻¹ = diag(||w_i||^(2-p))`` — the same ``U`` whenever eq. 13
    is defined, a symmetric positive semi-definite system, and finite when rows of ``W`` vanish
    (their ``Pi`` is 0: a zero row stays zero). ``t`` are the row norms of ``W^k`` in pivot order.
    Without a null space (``n0 = 0``) ``U`` is empty and the solve is skipped; ``skip_empty=False``
    solves it all the same (the path without the shortcut, which tests and benchmarks compare).
    """
    import scipy.linalg as sla

    if skip_empty and ns.n0 == 0:  # [X, 1] has full column rank: no null space, W = W1 (eq. 8 without U)
        return np.zeros((0, K.shape[1]))
    scale = float(np.max(t, initial=0.0))
    pi2 = _pi2(t, p, scale)
    pi1, pi2u = pi2[:ns.m0], pi2[ns.m0:]
    MT = ns.M * pi2u  # M Pi2^2
    A = MT @ ns.M.T
    A[np.diag_indices_from(A)] += pi1
    try:
        C = sla.solve(A, K, assume_a="pos")
    except (sla.LinAlgError, ValueError):
        C = np.linalg.lstsq(A, K, rcond=None)[0]
    return MT.T @ C


def _e_weights(v: NDArray, p: float) -> NDArray:
    """``Lambda_ii^2 = ||v_i||^(p-2)`` of the pivot rows, divided by the largest (the argmin is
    unchanged) and capped at the floor (see :data:`ROW_FLOOR`)."""
    scale = float(np.max(v, initial=0.0))
    tt = np.maximum(v, ROW_FLOOR * max(scale, 1e-300))
    lam = tt ** (p - 2.0)
    return lam / lam.max()


def e_update_problem(ns: NullSpace, H: NDArray, Y: NDArray, V: NDArray, p: float, *,
                     hard: bool = False) -> ProblemData:
    """The ``E`` step of Algorithm 1 as a :class:`~fsframe.canonical.ProblemData` QP::

        min_E ||Lambda (L E + H)||_F^2   s.t.  Y ⊙ E >= 0   (and Q2ᵀ (Y + E) = 0 with ``hard``)

    with ``H = N - M U`` and ``Lambda_ii^2 = ||v_i||^(p-2)`` over the pivot rows ``V`` (= ``H + L
    E^k``; the other rows of ``W`` do not depend on ``E``); rows of ``V`` below :data:`E_FLOOR`
    keep their value. Stated without the inverse in ``L = R11⁻¹ Q1ᵀ``: with the pivot
    rows ``W1 = L E + H`` as variables and the equality rows ``R11 W1 - Q1ᵀ E = R11 H``, the
    Hessian is ``diag(2 Lambda²)`` on ``W1`` and the constraint matrix holds ``R11`` and the
    orthonormal ``Q1`` — where ``2 Lᵀ Lambda² L`` would be dense and ill-conditioned (HiGHS and
    Clarabel fail on it from the second iteration on real data). Columns are ``[vec(E), vec(W1)]``
    column by column (``k * m + i``); the sign constraints are bounds. With ``hard`` and
    ``m > m0`` the rows ``Q2ᵀ E = -Q2ᵀ Y`` keep ``Y + E`` in the range of ``Xt``, so that ``W``
    meets the margins exactly (``E^k`` satisfies them: the step stays feasible).
    """
    import scipy.sparse as sp

    m, c = Y.shape
    m0 = ns.m0
    vn = row_norms(V)
    fixed = vn < E_FLOOR * float(np.max(vn, initial=0.0))
    lam = _e_weights(np.where(fixed, np.max(vn, initial=0.0), vn), p)
    A = sp.hstack([sp.kron(sp.identity(c), sp.csr_matrix(-ns.Q1.T)), sp.kron(sp.identity(c), sp.csr_matrix(ns.R11))],
                  format="csr")
    b = (ns.R11 @ H).T.ravel()
    if hard and not ns.consistent:
        rng = sp.hstack([sp.kron(sp.identity(c), sp.csr_matrix(ns.Q2.T)), sp.csr_matrix((ns.Q2.shape[1] * c, m0 * c))])
        A = sp.vstack([A, rng], format="csr")
        b = np.concatenate([b, -(ns.Q2.T @ Y).T.ravel()])
    P = sp.diags(np.concatenate([np.zeros(m * c), np.tile(2.0 * lam, c)]), format="csc")
    yv = Y.T.ravel()
    fix = np.tile(fixed, c)
    v_vec = V.T.ravel()
    lb = np.concatenate([np.where(yv > 0, 0.0, -np.inf), np.where(fix, v_vec, -np.inf)])
    ub = np.concatenate([np.where(yv > 0, np.inf, 0.0), np.where(fix, v_vec, np.inf)])
    n_var = (m + m0) * c
    G = sp.csr_matrix((0, n_var))
    return ProblemData(c=np.zeros(n_var), A=A, b=b, G=G, h=np.zeros(0), lb=lb, ub=ub, l=0, P=P)


def e_update_bvls(ns: NullSpace, H: NDArray, Y: NDArray, V: NDArray, p: float) -> NDArray:
    """The ``E`` step of :func:`e_update_problem`, column by column as a bounded linear least
    squares problem (scipy's ``lsq_linear``, BVLS): ``min ||Lambda L e_k + Lambda h_k||``,
    ``Y_k ⊙ e_k >= 0``, with the weights of the rows below :data:`ROW_FLOOR` capped instead of
    the rows fixed (BVLS has no equality rows): faster on large ``m c``, but Theorem 1's descent is
    then only as good as the cap. Returns ``E`` (m, c)."""
    from scipy.optimize import lsq_linear

    m, c = Y.shape
    lam = np.sqrt(_e_weights(row_norms(V), p))
    A = lam[:, None] * ns.L
    E = np.zeros((m, c))
    for k in range(c):
        lb = np.where(Y[:, k] > 0, 0.0, -np.inf)
        ub = np.where(Y[:, k] > 0, np.inf, 0.0)
        E[:, k] = lsq_linear(A, -lam * H[:, k], bounds=(lb, ub), method="bvls", tol=1e-12).x
    return E


def ldp(G: NDArray, h: NDArray) -> tuple[NDArray, NDArray] | None:
    """``argmin ||v||_2 s.t. G v >= h`` and its multipliers — least distance programming, by Lawson
    & Hanson's reduction to non-negative least squares (Solving Least Squares Problems, 1974,
    ch. 23): with ``u = argmin_{u >= 0} ||[Gᵀ; hᵀ] u - e||`` (``e`` the last unit vector) and its
    residual ``r``, ``v = -r[:-1] / r[-1]`` and ``mu = u / -r[-1] >= 0`` (``v = Gᵀ mu``, the KKT
    conditions of ``min ½||v||²``); ``r[-1] = 0`` means no ``v`` is feasible. scipy's NNLS is an
    active-set method: it ends at an optimum exact up to rounding, with no tolerance to set. Returns
    ``(v, mu)``, or None (infeasible, or NNLS out of iterations: the caller falls back to a QP)."""
    from scipy.optimize import nnls

    m, q = G.shape
    A = np.vstack([G.T, h[None, :]])
    f = np.zeros(q + 1)
    f[-1] = 1.0
    try:
        u = nnls(A, f, maxiter=max(50 * m, 1000))[0]
    except RuntimeError:  # "Maximum number of iterations reached"
        return None
    r = A @ u - f
    if not -r[-1] > 1e-12:
        return None
    return -r[:-1] / r[-1], u / -r[-1]


LDP_START = 0.25
""":func:`ldp_rows` starts from the rows of a hint and at least this share of all rows (the
smallest slack first)."""


LDP_RTOL = 1e-9
"""Each row of ``G v >= h`` is met when its shortfall is at most this share of its own size,
``max(1, |h_i|, |G_i| |v|)`` (:func:`_row_tol`): one tolerance for all rows, scaled by the
largest ``|h|``, let a row of size 1e-4 be missed by 1 % of it next to rows of size 1e4."""


def _row_tol(G: NDArray, h: NDArray, v: NDArray) -> NDArray:
    """Per row, the shortfall :func:`ldp_rows` and :func:`_ldp_guess` accept (:data:`LDP_RTOL`)."""
    return LDP_RTOL * np.maximum(np.maximum(1.0, np.abs(h)), np.abs(G) @ np.abs(v))


def _ldp_guess(G: NDArray, h: NDArray, rows: NDArray, *, tries: int = 4):
    """The LDP's optimum from a guess of its active rows, or None: with the rows ``S`` active,
    ``v = G_Sᵀ mu_S`` and ``G_S G_Sᵀ mu_S = h_S`` (one QR of ``G_Sᵀ``); when ``mu_S >= 0`` and ``G v
    >= h`` on every row (to :func:`_row_tol`), ``(v, mu)`` meets the KKT conditions of ``min ½||v||² s.t. G v
    >= h`` — the unique optimum, certified. Otherwise the rows of negative ``mu`` leave, the
    violated rows join, and it tries again (``tries`` times at most; the caller then runs NNLS). A
    guess from the previous Algorithm 1 step is mostly right: one QR instead of an NNLS run. The
    active rows must hold as equalities to the same tolerance (the solve squares ``G_S``'s condition number):
    where they do not, None."""
    import scipy.linalg as sla

    q = G.shape[0]
    S = np.unique(rows)
    for _ in range(tries):
        if S.size == 0 or S.size > G.shape[1]:
            return None
        R = sla.qr(G[S].T, mode="r")[0][:S.size]
        d = np.abs(np.diag(R))
        if not d.size or d.min() <= 1e-10 * d.max():  # dependent rows: mu is not unique, NNLS decides
            return None
        mu_s = sla.solve_triangular(R, sla.solve_triangular(R, h[S], trans="T"))
        v = G[S].T @ mu_s
        short = h - G @ v
        tol = _row_tol(G, h, v)
        if np.any(np.abs(short[S]) > tol[S]):  # the active rows not met to tol: too ill-conditioned here
            return None
        short[S] = 0.0
        neg = mu_s < 0
        bad = np.flatnonzero(short > tol)
        if not neg.any() and bad.size == 0:
            mu = np.zeros(q)
            mu[S] = mu_s
            return v, mu
        S = np.union1d(S[~neg], bad[np.argsort(-short[bad], kind="stable")[:max(10, S.size // 10)]])
    return None


def ldp_rows(G: NDArray, h: NDArray, hint: NDArray | None = None, *,
             max_rounds: int = 50, stuck: list | None = None) -> tuple[NDArray, NDArray] | None:
    """:func:`ldp` solved on a working set of its rows: ``argmin ||v|| s.t. G_S v >= h_S`` for
    rows ``S`` (the rows of ``hint``, e.g. the previous solution's active rows, and the
    :data:`LDP_START` share of the rows of least slack at ``v = 0``), then every row checked at that
    ``v``; the rows it violates join (the most violated first) until none does. A hint, and after
    each round its active rows with the most violated, are first tried as the active set itself
    (:func:`_ldp_guess`: one QR, kept only when the KKT conditions hold on all rows). The rows left out
    are a relaxation of the problem, so a ``v`` of ``S`` that meets every row is the unique optimum
    of all rows (``||v||²`` is strictly convex); its multipliers are ``S``'s, 0 on the others.
    Each NNLS then sees ``|S|`` of the ``q`` rows, fewer as Algorithm 1's margins settle. Returns
    what :func:`ldp` returns on all rows (None: infeasible, or NNLS out of iterations).

    ``stuck`` (a list): stop early instead of solving on all rows — when the rows ``S`` have no
    solution (which proves that all rows have none, up to NNLS's rounding), ``S`` is appended to
    ``stuck`` and None returned at once; when the rounds run out, None (``stuck`` unchanged). For a
    caller with an exact test of its own to fall back on (:func:`~.margin.separable_columns`)."""
    q = G.shape[0]
    if hint is not None and len(hint):
        out = _ldp_guess(G, h, np.asarray(hint))
        if out is not None:
            return out
    inside = np.zeros(q, dtype=bool)
    if hint is not None:
        inside[hint] = True
    k = min(q, max(int(LDP_START * q), 1))
    inside[np.argsort(-h, kind="stable")[:k]] = True  # slack at v = 0 is -h
    for _ in range(max_rounds):
        if inside.all():
            break
        idx = np.flatnonzero(inside)
        out = ldp(G[idx], h[idx])
        if out is None:  # a relaxation of a feasible problem is feasible: numerical; take all rows
            if stuck is not None:
                stuck.append(idx)
                return None
            break
        v, mu_s = out
        short = h - G @ v
        short[idx] = 0.0
        bad = np.flatnonzero(short > _row_tol(G, h, v))
        if bad.size == 0:
            mu = np.zeros(q)
            mu[idx] = mu_s
            return v, mu
        join = bad[np.argsort(-short[bad], kind="stable")[:max(idx.size, 10)]]
        guess = _ldp_guess(G, h, np.concatenate([idx[mu_s > 0], join[:max(10, join.size // 10)]]))
        if guess is not None:  # this round's active rows and the most violated ones: certified
            return guess
        inside[join] = True
    if stuck is not None and not inside.all():
        return None
    return ldp(G, h)


def e_update_ldp(ns: NullSpace, Xt: NDArray, U: NDArray, Y: NDArray, V: NDArray, p: float,
                 active: dict | None = None) -> NDArray | None:
    """The ``E`` step of Algorithm 1 for the hard margin, exactly: with ``U`` fixed, ``E = Xt W - Y``
    is a function of the pivot rows ``W1`` (``Xt W = X1 W1 + X2 U``), so ``min ||Lambda (L E +
    H)||_F^2 s.t. Y ⊙ E >= 0`` is, column by column, ``min sum_i Lambda_ii^2 w_i^2 s.t. Y_k ⊙
    (X1 w + X2 u_k) >= 1`` — a least distance program in ``v = Lambda w`` (:func:`ldp`). It keeps
    ``Y + E`` in the range of ``Xt`` whatever its rank (the hard margin, never the substitute).
    ``Lambda_ii^2 = ||v_i||^(p-2)``; rows of ``V`` at most :data:`ROW_FLOOR` times the largest keep
    their value (``E^k`` stays feasible, so Lemma 2 holds). Returns ``E`` (m, c), or None when a
    column has no feasible ``w`` (rounding).

    ``active`` (a dict kept by the caller across Algorithm 1's iterations): each column's LDP is
    solved on a working set of margins (:func:`ldp_rows`, the same optimum) started from the
    margins active in the previous step, ``active[k]``, which is then replaced by this step's."""
    m0 = ns.m0
    X1, X2 = Xt[:, ns.perm[:m0]], Xt[:, ns.perm[m0:]]
    vn = row_norms(V)
    live = vn > ROW_FLOOR * float(np.max(vn, initial=0.0))
    s = vn[live] ** (1.0 - p / 2.0)  # Lambda^-1 on the rows that move
    XL, XF = X1[:, live] * s, X1[:, ~live]
    W1 = V.copy()  # rows below the floor keep their value (their weight is beyond any arithmetic)
    for k in range(Y.shape[1]):
        G, h = Y[:, k:k + 1] * XL, 1.0 - Y[:, k] * (X2 @ U[:, k] + XF @ V[~live, k])
        out = ldp(G, h) if active is None else ldp_rows(G, h, active.get(k))
        if out is None:
            return None
        W1[live, k] = s * out[0]
        if active is not None:
            active[k] = np.flatnonzero(out[1] > 0)
    E = X1 @ W1 + X2 @ U - Y
    return np.where(Y > 0, np.maximum(E, 0.0), np.minimum(E, 0.0))
