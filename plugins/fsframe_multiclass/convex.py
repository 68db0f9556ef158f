"""The convex model behind DSO-FS (paper 004) and what solves and certifies it.

With the bias absorbed into ``W`` (004 eq. 2: ``Xt = [X, 1]``, the bias row counted in the norm),
004 eq. 5 at ``p = 1`` is the convex problem::

    hard margin:     min_W      sum_j ||W_j||_2   s.t.  Y ⊙ (Xt W) >= 1
    least squares:   min_{W,E}  sum_j ||W_j||_2   s.t.  Q1ᵀ Xt W = Q1ᵀ (Y + E),  Y ⊙ E >= 0

The second is 004 §2's substitute ``Xt W = Xt Xt⁺ (Y + E)`` (``Q1``: an orthonormal basis of the
range of ``Xt``), used when ``m > rank Xt`` and no ``W`` meets the hard margins. Both are second-order
cone programs. Their weighted form ``sum_j omega_j ||W_j||`` with ``omega_j = p ||W_j^k||^(p-1)`` is
the reweighted-l1 (majorise-minimise) step of ``sum_j ||W_j||^p`` for ``p < 1``: its minimum on the
rows where ``W^k`` is non-zero does not raise ``sum_j ||W_j||^p`` (``t^p`` is concave), and a fixed point
is a KKT point of 004 eq. 6 — the property Theorem 2 claims for Algorithm 1's limits.

* :class:`RowModel` states the model on a subset of rows (``rows``) as a
  :class:`~fsframe.canonical.ProblemData`;
* :func:`weighted_rounds` solves the (weighted) model exactly on a working set of rows, priced over
  all rows from the margin multipliers (``||(Xtᵀ D)_j|| <= omega_j`` for every row left out at zero),
  yielding each round's solve (:func:`solve_weighted` runs it to the end);
* :func:`reweighted_rounds` runs the reweighted-l1 steps for ``p < 1`` from a given point, yielding
  each solve;
* :func:`kkt_certificate` judges a *given* ``W`` (the one returned) against the multipliers of a
  solve, with fsframe's certificate (:func:`fsframe.backends.certificate.certify`) and its one rule.
"""

from __future__ import annotations

import time
from typing import Generator

import attrs
import numpy as np
from numpy.typing import NDArray

from fsframe import SolveResult, Status
from fsframe.backends.certificate import Certificate, certify, judge_certificate
from fsframe.canonical import ProblemData

from .nullspace import row_norms

__all__ = ["RowModel", "Solved", "solve_rows", "start_rows", "weighted_rounds", "solve_weighted", "reweighted_rounds",
           "polish", "reweighted_l2", "kkt_certificate", "PRICE_TOL"]

PRICE_TOL = 1e-7
"""A row left out at zero joins the working set when its multiplier norm ``||(Xtᵀ D)_j||``
exceeds its weight by more than this (relative): ten times finer than the certificate's own
``10 * cert_tol`` at the default ``cert_tol = 1e-6``, so a priced-out answer passes it."""


@attrs.frozen(eq=False)
class RowModel:
    """The (weighted) group-l1 model of DSO-FS on ``Xt`` (m, n + 1) and the label matrix ``Y``
    (m, c); ``T`` is ``None`` for the hard margin, ``Q1ᵀ`` (m0, m) for the least-squares substitute.

    Columns of :meth:`data` on ``rows`` (``r = len(rows)``): ``W`` row-major (``r c``), then the
    epigraph ``s`` (``r``), then, for the substitute, ``E`` row-major (``m c``, bounded by the sign
    of ``Y``). Rows of ``G``: the margins ``-Y ⊙ (Xt W) <= -1`` (hard, ``m c`` linear rows) and one
    cone ``(s_j, W_j)`` per row; the substitute's ``Q1ᵀ Xt W - Q1ᵀ E = Q1ᵀ Y`` are equality rows.
    """

    Xt: NDArray
    Y: NDArray
    T: NDArray | None = None

    @property
    def hard(self) -> bool:
        return self.T is None

    @property
    def shape(self) -> tuple[int, int, int]:
        m, n1 = self.Xt.shape
        return m, n1, self.Y.shape[1]

    def data(self, rows: NDArray, omega: NDArray) -> ProblemData:
        import scipy.sparse as sp

        m, _, c = self.shape
        r = len(rows)
        nw = r * c
        n_e = 0 if self.hard else m * c
        n_var = nw + r + n_e
        Ic = sp.identity(c, format="csr")
        # cones: rows (s_j, W_j0 .. W_j,c-1) of h - G x, i.e. G = -(selection), h = 0
        cone_rows = np.arange(r * (c + 1))
        j = np.arange(r)
        cone_cols = np.column_stack([nw + j, j[:, None] * c + np.arange(c)]).ravel()
        G_cone = sp.csr_matrix((-np.ones(r * (c + 1)), (cone_rows, cone_cols)), shape=(r * (c + 1), n_var))
        cost = np.zeros(n_var)
        cost[nw:nw + r] = omega
        lb, ub = np.full(n_var, -np.inf), np.full(n_var, np.inf)
        XS = sp.csr_matrix(self.Xt[:, rows])
        if self.hard:
            lin = -(sp.diags(self.Y.ravel()) @ sp.kron(XS, Ic, format="csr"))
            lin = sp.hstack([lin, sp.csr_matrix((m * c, r))], format="csr")
            G = sp.vstack([lin, G_cone], format="csr")
            h = np.concatenate([-np.ones(m * c), np.zeros(r * (c + 1))])
            return ProblemData(c=cost, A=sp.csr_matrix((0, n_var)), b=np.zeros(0), G=G, h=h, lb=lb, ub=ub,
                               l=m * c, cones=(c + 1,) * r)
        T = sp.csr_matrix(self.T)
        A = sp.hstack([sp.kron(T @ XS, Ic), sp.csr_matrix((T.shape[0] * c, r)), -sp.kron(T, Ic)], format="csr")
        y = self.Y.ravel()
        lb[nw + r:] = np.where(y > 0, 0.0, -np.inf)
        ub[nw + r:] = np.where(y > 0, np.inf, 0.0)
        return ProblemData(c=cost, A=A, b=(self.T @ self.Y).ravel(), G=G_cone, h=np.zeros(r * (c + 1)), lb=lb, ub=ub,
                           l=0, cones=(c + 1,) * r)

    def unpack(self, x: NDArray, rows: NDArray) -> tuple[NDArray, NDArray | None]:
        """``(W, E)`` with ``W`` of all ``n + 1`` rows (zero outside ``rows``); ``E`` None (hard)."""
        m, n1, c = self.shape
        r = len(rows)
        W = np.zeros((n1, c))
        W[rows] = x[:r * c].reshape(r, c)
        return W, (None if self.hard else x[r * c + r:].reshape(m, c))

    def point(self, W: NDArray, E: NDArray | None, rows: NDArray) -> NDArray:
        """The column vector of :meth:`data` on ``rows`` at ``(W, E)`` (``s_j = ||W_j||``)."""
        Ws = W[rows]
        parts = [Ws.ravel(), row_norms(Ws)]
        if not self.hard:
            parts.append(E.ravel())
        return np.concatenate(parts)

    def margin_multipliers(self, res: SolveResult) -> NDArray:
        """``D`` (m, c) with ``Xtᵀ D`` the multiplier of each row's cone (``Y ⊙ D >= 0``): the
        margin rows' ``lambda ⊙ Y`` (hard), ``-Q1 y`` (substitute)."""
        m, _, c = self.shape
        if self.hard:
            return self.Y * np.asarray(res.duals["z"][:m * c]).reshape(m, c)
        return -(self.T.T @ np.asarray(res.duals["y"]).reshape(-1, c))

    def multipliers(self, D: NDArray, rows: NDArray, omega: NDArray) -> tuple[NDArray, NDArray]:
        """``(y, z)`` of :meth:`data` on ``rows`` in fsframe's convention, rebuilt from ``D``: the
        cone of row ``j`` gets ``(omega_j, -(Xtᵀ D)_j)`` (stationarity in ``s_j`` and ``W_j``)."""
        m, _, c = self.shape
        Gr = self.Xt[:, rows].T @ D
        z_cone = np.hstack([omega[:, None], -Gr]).ravel()
        if self.hard:
            return np.zeros(0), np.concatenate([(self.Y * D).ravel(), z_cone])
        return -(self.T @ D).ravel(), z_cone  # D = -Q1 y with Q1 orthonormal: y = -Q1ᵀ D

    def margins(self, W: NDArray) -> NDArray:
        """``Y ⊙ (Xt W)``: 1 or more where the hard margin holds."""
        return self.Y * (self.Xt @ W)


@attrs.frozen(eq=False)
class Solved:
    """One solve of the model on ``rows`` with the weights ``omega`` (all ``n + 1`` rows; ``inf``:
    a row fixed at zero): its result, the point ``(W, E)`` and the margin multipliers ``D`` (None
    without a solution)."""

    res: SolveResult
    rows: NDArray
    omega: NDArray
    W: NDArray | None
    E: NDArray | None
    D: NDArray | None
    seconds: float


def solve_rows(model: RowModel, rows: NDArray, omega: NDArray, solve) -> Solved:
    """Solve ``model`` on ``rows`` with the weights ``omega[rows]`` (``solve(data) -> SolveResult``)."""
    t0 = time.perf_counter()
    res = solve(model.data(rows, omega[rows]))
    W = E = D = None
    if res.ok and res.duals is not None:
        W, E = model.unpack(res.x, rows)
        D = model.margin_multipliers(res)
    return Solved(res, rows, omega, W, E, D, time.perf_counter() - t0)


def start_rows(t: NDArray, omega: NDArray, m: int) -> NDArray:
    """A first working set: the ``max(2 m, 100)`` largest of ``t`` among the rows with a finite
    weight, and every row of ``t > 0`` when they are fewer (pricing adds what is missing)."""
    cand = np.flatnonzero(np.isfinite(omega) & (t > 0))
    keep = cand[np.argsort(-t[cand], kind="stable")[:max(2 * m, 100)]]
    out = np.zeros(t.size, dtype=bool)
    out[keep] = True
    return out


def weighted_rounds(model: RowModel, omega: NDArray, start: NDArray, solve, *,
                    max_rounds: int = 30) -> Generator[Solved, None, tuple[Solved, int]]:
    """``min sum_j omega_j ||W_j||`` over the rows of finite weight, solved exactly: on the rows
    ``start`` (a mask; empty, or without a feasible point: every row of finite weight), then priced —
    a row left out at zero joins when ``||(Xtᵀ D)_j|| > omega_j (1 + PRICE_TOL)`` (the most
    violated first, at most as many as are in) — until none does. At ``omega = 1`` this is the
    ``p = 1`` model. A generator: yields each round's solve (a loop reports them as they come);
    returns the last solve and the number of rows priced in. :func:`solve_weighted` runs it to the end."""
    finite = np.isfinite(omega)
    inside = np.asarray(start, dtype=bool) & finite
    if not inside.any():
        inside = finite.copy()
    added = 0
    for _ in range(max_rounds):
        sol = solve_rows(model, np.flatnonzero(inside), omega, solve)
        yield sol
        if sol.D is None:
            if inside.all() or sol.res.status not in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED) \
                    or np.array_equal(inside, finite):
                return sol, added
            inside = finite.copy()  # the rows kept cannot meet the constraints: take them all
            continue
        viol = _excess(model, sol.D, omega, ~inside & finite)
        out = np.flatnonzero(viol > PRICE_TOL)
        if out.size == 0:
            return sol, added
        take = out[np.argsort(-viol[out], kind="stable")[:max(int(inside.sum()), 10)]]
        inside[take] = True
        added += take.size
    return sol, added


def solve_weighted(model: RowModel, omega: NDArray, start: NDArray, solve, *, max_rounds: int = 30,
                   on_round=None) -> tuple[Solved, int]:
    """:func:`weighted_rounds` run to the end; ``on_round(solved)`` sees each solve. Returns the
    last solve and the number of rows priced in."""
    rounds = weighted_rounds(model, omega, start, solve, max_rounds=max_rounds)
    while True:
        try:
            sol = next(rounds)
        except StopIteration as stop:
            return stop.value
        if on_round is not None:
            on_round(sol)


def _excess(model: RowModel, D: NDArray, omega: NDArray, where: NDArray) -> NDArray:
    """Per row, ``||(Xtᵀ D)_j|| / omega_j - 1`` where ``where`` (0 elsewhere): how far a row at
    zero is from dual feasibility."""
    out = np.zeros(omega.size)
    idx = np.flatnonzero(where)
    if idx.size:
        out[idx] = row_norms(model.Xt[:, idx].T @ D) / omega[idx] - 1.0
    return out


def reweighted_rounds(model: RowModel, W0: NDArray, p: float, solve, *, zero_tol: float, tol: float,
                      max_iter: int) -> Generator[Solved, None, tuple[Solved | None, bool, str]]:
    """Reweighted-l1 steps for ``sum_j ||W_j||^p`` (``p < 1``) from ``W0``: each minimises
    ``sum_j omega_j ||W_j||`` with ``omega_j = p ||W_j||^(p-1)`` (divided by the smallest) over the
    rows above ``zero_tol`` times the largest norm (:func:`weighted_rounds`, from the previous
    support), until ``sum_j ||W_j||^p`` decreases by less than ``tol`` (relative). A generator:
    yields every solve (each step's working-set rounds); returns the last good step's solve (None
    if the first failed), whether the rule was met, and why it stopped."""
    W, last = W0, None
    f = float(np.sum(row_norms(W0) ** p))
    m = model.Xt.shape[0]
    for _ in range(max_iter):
        t = row_norms(W)
        live = t > zero_tol * float(np.max(t, initial=0.0))
        omega = np.full(t.size, np.inf)
        omega[live] = t[live] ** (p - 1.0)
        omega /= omega[live].min()
        sol, _ = yield from weighted_rounds(model, omega, start_rows(t, omega, m), solve)
        if sol.W is None:
            return last, False, f"reweighted step ended {sol.res.status.value}"
        f_new = float(np.sum(row_norms(sol.W) ** p))
        if f_new > f and last is not None:  # the exact step cannot rise (t^p is concave): solver noise
            return last, True, "sum ||W_j||^p decrease below tol (the last step rose: not taken)"
        last = sol
        if f - f_new <= tol * max(f, 1e-300):
            return last, True, "sum ||W_j||^p decrease below tol"
        W, f = sol.W, f_new
    return last, False, "max_iter reached"


def polish(model: RowModel, sol: Solved, solve, zero_tol: float) -> Solved:
    """``sol`` with its rows at most ``zero_tol`` times the largest norm set to zero, made feasible
    again: an interior-point solution leaves rows of 1e-7 relative whose cut leaves margins short
    of 1 by as much. The hard margin is homogeneous in ``W`` (bias row included), so the cut ``W``
    divided by its smallest margin meets them all (the objective grows by as much, relative); the
    substitute is re-solved on the rows kept. The certificate then prices the rows cut (an excess
    there fails it). Returns ``sol`` itself when nothing is cut or no feasible point results."""
    t = row_norms(sol.W)
    keep = t > zero_tol * float(np.max(t, initial=0.0))
    if not (t[~keep] > 0).any() or not keep.any():
        return sol
    if model.hard:
        W = np.where(keep[:, None], sol.W, 0.0)
        low = float(np.min(model.margins(W)))
        return attrs.evolve(sol, W=W / min(low, 1.0)) if low > 0 else sol
    again = solve_rows(model, sol.rows[keep[sol.rows]], sol.omega, solve)
    return again if again.W is not None else sol


def reweighted_l2(model: RowModel, W: NDArray, omega: NDArray) -> Solved:
    """One reweighted-l2 step at ``W`` for the hard margin: ``min sum_j (omega_j / ||W_j||) ||V_j||²
    s.t. Y ⊙ (Xt V) >= 1`` over the rows where ``W`` is non-zero (and the weight finite), class by
    class a least distance program (:func:`~.nullspace.ldp_rows`, NNLS) — no SOCP. Its multipliers ``D``
    satisfy ``(Xtᵀ D)_j = omega_j V_j / ||W_j||``: at a KKT point of ``min sum_j omega_j ||W_j||``
    the step returns ``W`` and ``D`` certifies it; elsewhere they give a valid dual bound (after the
    scaling of :func:`kkt_certificate`). Cheap where the SOCP is not (``m c`` margins large)."""
    from .nullspace import ldp_rows

    t0 = time.perf_counter()
    if not model.hard:
        raise ValueError("reweighted_l2 states the hard margin only")
    t = row_norms(W)
    rows = np.flatnonzero((t > 0) & np.isfinite(omega))
    scale = np.sqrt(t[rows] / omega[rows])
    m, n1, c = model.shape
    V, D = np.zeros((n1, c)), np.zeros((m, c))
    XS = model.Xt[:, rows] * scale
    for k in range(c):
        out = ldp_rows(model.Y[:, k:k + 1] * XS, np.ones(m))
        if out is None:
            res = SolveResult(Status.ERROR, None, None, "scipy-nnls", time.perf_counter() - t0,
                              message=f"the reweighted-l2 step on W's rows has no solution for class column {k} "
                                      "(no point meets its margins, or NNLS ran out of iterations)")
            return Solved(res, rows, omega, None, None, None, time.perf_counter() - t0)
        V[rows, k] = scale * out[0]
        D[:, k] = model.Y[:, k] * out[1]
    res = SolveResult(Status.OPTIMAL, None, None, "scipy-nnls", time.perf_counter() - t0)
    return Solved(res, rows, omega, V, None, D, time.perf_counter() - t0)


def kkt_certificate(model: RowModel, W: NDArray, E: NDArray | None, sol: Solved, *,
                    tol: float) -> tuple[Status, Certificate, str]:
    """fsframe's certificate of the given ``(W, E)`` on ``min sum_j omega_j ||W_j||`` with
    ``sol``'s weights (``inf``: a row fixed at zero, outside the model) and margin multipliers
    ``D``: :func:`~fsframe.backends.certificate.certify` on the rows ``sol`` was solved on and those
    where ``W`` is non-zero, at the point *returned*, not at the solver's. ``D`` is first divided by
    ``kappa = max(1, max_j ||(Xtᵀ D)_j|| / omega_j)`` over every row of finite weight (left out or
    not), which makes it dual feasible for the whole model: the dual value is then a lower bound of
    the optimum, and the gap bounds how far ``W`` is from it. Returns the status of
    :func:`judge_certificate`, the certificate and its message."""
    if E is None and not model.hard:
        raise ValueError("the least-squares model needs E")
    omega = sol.omega
    inside = np.zeros(omega.size, dtype=bool)
    inside[sol.rows] = True
    inside |= row_norms(W) > 0
    if not np.all(np.isfinite(omega[inside])):
        raise ValueError("W is non-zero on a row the model fixes at zero")
    rows = np.flatnonzero(inside)
    kappa = 1.0 + max(0.0, float(np.max(_excess(model, sol.D, omega, np.isfinite(omega)), initial=0.0)))
    D = sol.D / kappa
    data = model.data(rows, omega[rows])
    y, z = model.multipliers(D, rows, omega[rows])
    cert = certify(data, model.point(W, E, rows), y, z)
    status, message = judge_certificate(cert, tol)
    return status, cert, message
