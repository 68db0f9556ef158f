r"""Numerically stable forms of a QP with a diagonal Hessian on free columns.

Every EM / reweighted-quadratic subproblem has a Hessian ``diag(d)`` whose entries diverge as
coefficients vanish (``d = 1/t^2``): the plain primal QP becomes ill-conditioned for HiGHS's
active-set solver. Two equivalent problems avoid it:

* :class:`ScaledQPSession` — the primal in ``v = sqrt(d) * x``: identity Hessian, columns of the
  constraint matrix scaled by ``1/sqrt(d)`` (Weston's multiplicative update ``w = |w^k| ⊙ v``).
  Only the matrix values change between iterations; HiGHS gains nothing from a warm start of a
  QP whose Hessian changed anyway, so the scaled problem is passed afresh.
* :class:`DualQPSession` — the Lagrangian dual below, one variable per constraint row.


Every EM / reweighted-quadratic subproblem has this shape (002 eqs. 7-9):
``min 1/2 sum_{j in Q} d_j x_j^2 + c'x  s.t.  A x = b,  G x <= h,  bounds`` where the quadratic
columns ``Q`` are free and every other column has at most one finite bound (or is fixed).
With ``K = [A; G]`` and multipliers ``lam = (y, z)``, ``z >= 0``, the dual is the QP

.. math::

    \min_{\lambda}\ \tfrac12 \sum_{j\in Q} (c_j + K_j^\top\lambda)^2 / d_j
        + [b; h]^\top\lambda - \sum_{j \in R_{lb}} lb_j r_j - \sum_{j\in R_{ub}} ub_j r_j

with ``r_j = c_j + K_j' lam`` constrained ``>= 0`` (``j`` bounded below), ``<= 0`` (bounded
above) or ``= 0`` (free). It has one variable per row of the primal instead of one per feature:
for the hinge loss, ``m`` variables with the dense ``m x m`` Hessian ``K_Q D^{-1} K_Q'`` — the
classical SVM dual with the EM scaling ``D^{-1} = diag(1 / q_j)`` (Weston's multiplicative
update, 002 §3.2.2).

Recovery: ``x_Q = -(c_Q + K_Q' lam) / d``; ``x_j = lb_j + z^d_j``, ``ub_j - z^d_j`` or
``-y^d_j`` for the other columns from the dual's own multipliers; fixed columns keep their
value. The recovered point is judged against the *primal* by the base template
(:class:`~fsframe.backends.base.BackendSession`) with ``lam`` as the primal multipliers; its
primal violation is checked even with ``certify=False``.

Claims: an unbounded dual proves the primal infeasible, an infeasible dual the primal unbounded
(or infeasible). Neither HiGHS's QP solver nor the dense method returns a ray, so the session finds
the evidence by a small LP over the dual's rows (:mod:`fsframe.backends.dual_rays`: the dual's
direction of descent, which is the primal's Farkas certificate, and the dual's Farkas
certificate mapped to a primal direction of descent) and the base checks it like any backend's
(docs/backends.md, "Claims through the dual").

Re-solves: whether a form applies (:func:`dual_applies`, :func:`scaled_applies`) is checked on
every solve, since a new ``ProblemData`` may bring bounds or Hessian entries the form cannot take;
such a solve goes to the next form that applies (the primal as given last). The dual's right-hand
sides ``-c[R_free]`` and ``(c[R_lb], -c[R_ub])`` follow the costs of the linear columns. When HiGHS
fails on a form (error, iteration limit, a point far from optimal) the next form is tried, and
the failed one is skipped for the rest of the session, or after a numerical error until the
Hessian changes (see :func:`_skip`). The
measurements behind these choices are in docs/performance.md.
"""

from __future__ import annotations

import contextlib

import attrs
import numpy as np

from .._lazy import lazy_module
from ..canonical import ProblemData
from ..enums import Status
from ..linalg import check_psd
from .base import BackendSession, RawSolution, SolveFailure, SolveOptions, SolveResult
from .box_qp import solve_box_qp
from .certificate import relative_violation
from .dual_rays import DualRays

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["dual_applies", "scaled_applies", "DualQPSession", "ScaledQPSession"]


_SPLIT: list = [None]  # the last (P, lb, ub, split): one solve asks for it three to four times


def _diag_split(data: ProblemData):
    """``P`` (CSC), the fixed columns, ``P``'s diagonal and the (row, column) pairs of its non-zero
    off-diagonal entries. Runs on every solve of a session: numpy on the CSC arrays, O(nnz).
    The last answer is kept for the same ``P``, ``lb`` and ``ub`` objects (arrays of a
    ``ProblemData`` are not changed in place: sessions already tell new data by identity), since
    ``dual_applies``, ``scaled_applies`` and the reduction of one solve all ask for it."""
    last = _SPLIT[0]
    if last is not None and last[0] is data.P and last[1] is data.lb and last[2] is data.ub:
        return last[3]
    split = _diag_split_new(data)
    _SPLIT[0] = (data.P, data.lb, data.ub, split)
    return split


def _diag_split_new(data: ProblemData):
    P = data.P.tocsc() if data.P is not None else sp.csc_matrix((data.n, data.n))
    fixed = data.lb == data.ub
    d = P.diagonal()
    cols = np.repeat(np.arange(P.shape[1]), np.diff(P.indptr))
    mask = (P.indices != cols) & (P.data != 0)
    off = (P.indices[mask], cols[mask])
    return P, fixed, d, off


def scaled_applies(data: ProblemData) -> str | None:
    """``None`` if :class:`ScaledQPSession` can solve ``data`` (a Hessian diagonal on the columns
    that are not fixed, with no negative entry), else the reason it cannot."""
    return _scaled_applies(data, *_diag_split(data))


def _scaled_applies(data, P, fixed, d, off) -> str | None:
    if data.cones:
        return "the problem has cones"
    if off[0].size and np.any(~fixed[off[0]] & ~fixed[off[1]]):
        return "the Hessian is not diagonal"
    if np.any(d < 0):
        return "the Hessian has a negative diagonal entry"
    return None


def dual_applies(data: ProblemData) -> str | None:
    """``None`` if :class:`DualQPSession` can solve ``data``, else the reason it cannot.
    Checked on every solve of a session: a re-solve may bring bounds or Hessian entries the
    dual cannot take (the session then solves the primal)."""
    P, fixed, d, off = _diag_split(data)
    why = _scaled_applies(data, P, fixed, d, off)
    if why is not None:
        return why
    Q = (d > 0) & ~fixed
    if np.any(np.isfinite(data.lb[Q]) | np.isfinite(data.ub[Q])):
        return "a quadratic column has a bound"
    R = ~Q & ~fixed
    if np.any(R & np.isfinite(data.lb) & np.isfinite(data.ub)):
        return "a linear column has two finite bounds"
    return None


@attrs.frozen(eq=False)
class _Reduction:
    Q: np.ndarray
    R_lb: np.ndarray
    R_ub: np.ndarray
    R_free: np.ndarray
    fixed: np.ndarray
    dual: ProblemData
    p: int  # number of equality multipliers (y); the rest are z
    KQ: object = None  # K[:, Q] (dense array or sparse), for the recovery of x_Q


_BLAS = []  # the threadpoolctl controller of the BLAS libraries, made on first use


def _one_blas_thread():
    """A context in which BLAS runs on one thread (threadpoolctl, a scikit-learn dependency; a
    no-op without it). The dual's dense products are small (m x m output); OpenBLAS's threads
    made them much slower on a busy machine, and parallel fits (fsframe's evaluation with n_jobs)
    would oversubscribe the cores (docs/performance.md). When every BLAS library already runs on
    one thread (a context around this one, ``OMP_NUM_THREADS=1``) nothing is changed: asking
    each library its thread count is ~1 µs, a limit and its restore ~30 µs, twice per EM step."""
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS.append(ThreadpoolController().select(user_api="blas"))
        except Exception:  # pragma: no cover - threadpoolctl missing or failing
            _BLAS.append(None)
    blas = _BLAS[0]
    if blas is None or all(lib.num_threads == 1 for lib in blas.lib_controllers):
        return contextlib.nullcontext()
    return blas.limit(limits=1)


class _Rows:
    """What the dual takes from the primal's constraint rows ``K = [A; G]``: they do not change
    between outer iterations (only ``c``, ``P`` and bounds do), so this is built once per session
    and rebuilt only when a new ``ProblemData`` brings other ``A``, ``G``, ``b`` or ``h`` arrays."""

    def __init__(self, data: ProblemData):
        self.arrays = (data.A, data.G, data.b, data.h)
        self.K = sp.vstack([data.A, data.G], format="csc")  # no cones here
        self.rhs = np.concatenate([data.b, data.h])
        self.col_nnz = np.diff(self.K.indptr)
        # a dense copy when K is mostly non-zero (the hinge's data block): K_Q D^-1 K_Q' by BLAS
        self.Kd = self.K.toarray() if self.K.nnz > 0.2 * self.K.shape[0] * max(self.K.shape[1], 1) else None
        self.r_key = None  # the R column sets the pieces below belong to

    def matches(self, data: ProblemData) -> bool:
        return all(a is b for a, b in zip(self.arrays, (data.A, data.G, data.b, data.h)))

    def for_r(self, R_lb, R_ub, R_free):
        """Column blocks of the linear columns and the dual's constraints built from them (cached
        while the sets of linear columns stay the same, i.e. every EM iteration)."""
        key = (R_lb.tobytes(), R_ub.tobytes(), R_free.tobytes())
        if key != self.r_key:
            K = self.K
            self.K_lb, self.K_ub = K[:, R_lb], K[:, R_ub]
            Kt_lb, Kt_ub = self.K_lb.T.tocsr(), self.K_ub.T.tocsr()
            self.Kt_free = K[:, R_free].T.tocsr()
            self.dual_G = sp.vstack([-Kt_lb, Kt_ub], format="csr")
            self.r_key = key
            self._box = _UNSET
            self._bound_terms = None
        return self

    def bound_terms(self, lbR: np.ndarray, ubR: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(K_lb lb_R, K_ub ub_R)``, the bounds' share of the dual's linear term: kept while the
        bounds of the linear columns keep their values (EM changes only the coefficients' bounds:
        two sparse products saved per step). Never changed in place by the caller."""
        last = self._bound_terms
        if last is None or not (np.array_equal(last[0], lbR) and np.array_equal(last[1], ubR)):
            last = self._bound_terms = (lbR.copy(), ubR.copy(), self.K_lb @ lbR, self.K_ub @ ubR)
        return last[2], last[3]

    def sign_bounds(self, p: int) -> np.ndarray:
        """The dual's sign bounds: ``-inf`` on the ``p`` equality multipliers, 0 on the rest (read-only)."""
        m = self.K.shape[0]
        if getattr(self, "_sign_bounds", None) is None or self._sign_bounds.shape != (m,) or self._sign_p != p:
            lb = np.concatenate([np.full(p, -np.inf), np.zeros(m - p)])
            lb.flags.writeable = False
            self._sign_bounds, self._sign_p = lb, p
        return self._sign_bounds

    def box(self) -> "_BoxRows | None":
        """The dual's inequality rows as bounds on single multipliers (:class:`_BoxRows`), or
        ``None`` when a row involves several (the dense active-set form then does not apply)."""
        if self._box is _UNSET:
            self._box = _BoxRows.of(self.dual_G, self.Kt_free, self.K.shape[0])
        return self._box


_UNSET = object()


@attrs.frozen(eq=False)
class _BoxRows:
    """The dual's inequality rows ``G_d lam <= h_d`` when each has at most one entry: row ``i``
    with entry ``g_i`` on ``lam_j`` is the bound ``lam_j <= h_i / g_i`` (``g_i > 0``) or
    ``>= h_i / g_i`` (``g_i < 0``); a row without entries says ``0 <= h_i``. At most one row bounds
    a multiplier on each side (else the split of its multiplier between rows, i.e. the values of
    the primal's linear columns, would be ambiguous). ``E`` is the dual's equality rows, dense."""

    up_rows: np.ndarray
    up_vars: np.ndarray
    up_coef: np.ndarray
    lo_rows: np.ndarray
    lo_vars: np.ndarray
    lo_coef: np.ndarray
    empty_rows: np.ndarray
    E: np.ndarray

    @classmethod
    def of(cls, G, Kt_free, m: int) -> "_BoxRows | None":
        G = G.tocsr()
        counts = np.diff(G.indptr)
        if np.any(counts > 1) or Kt_free.shape[0] > MAX_DENSE_EQUALITIES:
            return None
        rows = np.flatnonzero(counts == 1)
        vars_, coef = G.indices[G.indptr[rows]], G.data[G.indptr[rows]]
        up, lo = coef > 0, coef < 0
        for sel in (up, lo):
            if np.any(np.bincount(vars_[sel], minlength=m) > 1):
                return None
        return cls(rows[up], vars_[up], coef[up], rows[lo], vars_[lo], coef[lo],
                   np.flatnonzero(counts == 0), np.asarray(Kt_free.toarray(), dtype=float))

    def bounds(self, h: np.ndarray, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """``(lo, hi)`` of the multipliers for the right-hand sides ``h`` and sign bounds ``lb``;
        ``None`` when the dense form cannot take them (a row bound equal to the sign bound it
        tightens, crossed bounds, or a violated empty row: HiGHS reports such duals)."""
        if np.any(h[self.empty_rows] < 0):
            return None
        lo = lb.copy()
        hi = np.full(lb.shape, np.inf)
        hi[self.up_vars] = h[self.up_rows] / self.up_coef
        row_lo = h[self.lo_rows] / self.lo_coef
        if np.any(row_lo == lo[self.lo_vars]):
            return None
        lo[self.lo_vars] = np.maximum(lo[self.lo_vars], row_lo)
        if np.any(lo > hi):
            return None  # crossed bounds: an infeasible dual
        return lo, hi

    def row_multipliers(self, r, lam, lo, hi, h, lb) -> np.ndarray:
        """The multipliers ``z_d`` of the rows (``h.size`` of them) from the bound multipliers
        ``r`` (the box QP's reduced gradient) at ``lam``: a row's multiplier is its bound's when
        that bound holds and is the row's (not the sign bound ``lb`` it tightens), else 0."""
        z = np.zeros(h.shape[0])
        v = self.up_vars
        at = lam[v] >= hi[v]
        z[self.up_rows[at]] = np.maximum(-r[v[at]], 0.0) / self.up_coef[at]
        v = self.lo_vars
        at = (lam[v] <= lo[v]) & (h[self.lo_rows] / self.lo_coef > lb[v])
        z[self.lo_rows[at]] = np.maximum(r[v[at]], 0.0) / -self.lo_coef[at]
        return z


_PATTERNS: dict[int, tuple] = {}  # m -> (indptr, indices) of a full m x m CSC matrix


def _dense_csc(H: np.ndarray) -> sp.csc_matrix:
    """The dense ``m x m`` dual Hessian as a CSC matrix, the same matrix as ``sp.csc_matrix(H)``:
    when no entry is zero (dense data), built from a cached index pattern of the full matrix;
    ``sp.csc_matrix(H)`` scans the array through COO (5 ms per EM iteration at m = 569)."""
    data = np.asarray(H, dtype=np.float64).ravel(order="F")
    if not data.all():  # exact zeros are not stored: let scipy find them
        return sp.csc_matrix(H)
    m = H.shape[0]
    pat = _PATTERNS.get(m)
    if pat is None:
        pat = (np.arange(0, m * m + 1, m, dtype=np.int32), np.tile(np.arange(m, dtype=np.int32), m))
        _PATTERNS.clear()  # one size at a time (a fit's duals share m)
        _PATTERNS[m] = pat
    return sp.csc_matrix((data, pat[1], pat[0]), shape=(m, m))


_FAILED = frozenset({Status.ITERATION_LIMIT, Status.NUMERICAL_ERROR, Status.ERROR, Status.UNKNOWN})
"""Statuses of one form that are HiGHS failing on that form, not facts about the problem: the
session then tries the next form (dual, scaled primal, primal as given)."""


class _StableFormSession(BackendSession):
    """What both stable forms share: the list of forms tried in order (the dual, the scaled
    primal, the primal as given), and the sessions of the inner solver (HiGHS; its session class is
    passed in as ``inner_session``, so this module does not import the HiGHS backend).

    Each solve tries the first form that applies to its data and has not failed; the base judges
    the answer (:class:`~fsframe.backends.base.BackendSession`), and when its status is one of
    :data:`_FAILED` the next form is a retry (:meth:`_retries`), judged the same way. A form on
    which HiGHS fails is skipped for the rest of the session: EM weights only spread further apart,
    and a failure costs up to HiGHS's iteration limit (docs/performance.md); after a numerical
    error (a singular dense dual, a refused Hessian), only until the Hessian changes (:func:`_skip`).
    """

    forms: tuple[str, ...] = ("dual", "scaled", "primal")

    def __init__(self, backend, data: ProblemData, options: SolveOptions, inner_session):
        super().__init__(backend, data, options)
        self.make_inner = inner_session
        self.inner = None  # the dual's session
        self.primal = None  # the primal as given (kept, so a run of them is warm)
        self.red: _Reduction | None = None
        self.rows: _Rows | None = None
        self.failed: dict[str, tuple] = {}  # form -> (its status, the Hessian P it failed on): _skip
        self._primal_checked = False
        self.inner_opts = attrs.evolve(options, certify=False, backend_options={
            k: v for k, v in options.backend_options.items() if k != "qp_form"})
        self._pending: list[str] = []
        self._why: list[str] = []
        self._current = ""
        self._prefix = ""  # what _run put before the current form's message

    def _applies(self, form: str, data: ProblemData) -> str | None:
        """``None`` if ``form`` can solve ``data``, else the reason it cannot."""
        return _APPLIES[form](data)

    # -- the template's raw steps ------------------------------------------------------------
    def _solve_raw(self, data: ProblemData) -> RawSolution:
        # the forms are examined in order, each only when the ones before it did not answer (each
        # check is a pass over the Hessian: one per EM solve is enough)
        self._why, self._pending = [], list(self.forms)
        form = self._take(data)
        if form is None:  # pragma: no cover - the primal as given always applies
            raise SolveFailure(Status.ERROR, "; ".join(self._why))
        return self._run(form, data)

    def _invert(self, data: ProblemData, raw: RawSolution) -> RawSolution:
        return raw

    def _take(self, data: ProblemData) -> str | None:
        """The next form that applies to ``data`` and has not failed (the others' reasons noted)."""
        while self._pending:
            form = self._pending.pop(0)
            reason = self._applies(form, data)
            if reason is not None:
                self._why.append(f"the {form} form does not apply ({reason})")
            elif form in self.failed and _skip(*self.failed[form], data.P):
                self._why.append(f"{_LABEL[form]} failed earlier")
            else:
                return form
        return None

    def _retries(self, data: ProblemData, tried: list[SolveResult]):
        while tried[-1].status in _FAILED or self._inexact(tried[-1]):
            failed = tried[-1].status in _FAILED
            if failed:
                self.failed[self._current] = (tried[-1].status, data.P)
                if self._current == "dual":
                    self._drop_inner()  # do not warm-start from a failed state
            message = tried[-1].message
            message = message[len(self._prefix):] if message.startswith(self._prefix) else message
            verb = "failed" if failed else "was inexact"
            self._why.append(f"{_LABEL[self._current]} {verb} ({tried[-1].status.value}: {message})")
            form = self._take(data)
            if form is None:
                return
            yield self._run(form, data)

    def _inexact(self, res: SolveResult) -> bool:
        """Whether ``res`` is a dual form's answer that failed its certificate (``OPTIMAL_INACCURATE``):
        the primal point recovered from a dual (``x_Q = -(c_Q + K_Q'lam) / d``) carries the dual's
        error magnified by ``1 / d``, and a primal form may do better (an EM subproblem with
        weights 1e-8..1e8 and columns 1e-4..1e4: the dual's answer 0.8 % above the optimum, the
        scaled primal's certified). The next form is tried, the dual form is not skipped after
        (HiGHS did not fail on it), and :meth:`_choose` keeps the better answer."""
        return res.status is Status.OPTIMAL_INACCURATE and self._current in ("dense", "dual")

    def _choose(self, tried: list[SolveResult]) -> SolveResult:
        """No candidate ``OPTIMAL``: the ``OPTIMAL_INACCURATE`` one whose certificate's largest
        measure is smallest (the earlier on a tie), else the last; its message says what the
        others ended."""
        usable = [r for r in tried if r.status is Status.OPTIMAL_INACCURATE and r.x is not None]
        if not usable:
            return tried[-1]
        best = min(usable, key=_worst_measure)
        if best is tried[-1]:
            return best
        others = "; ".join(f"{_form_of(r)} ended {r.status.value}" for r in tried if r is not best)
        return attrs.evolve(best, message=f"{best.message}; kept: this answer, the closest to certified ({others})")

    def _run(self, form: str, data: ProblemData) -> RawSolution:
        self._current = form
        cand = getattr(self, f"_solve_{form}")(data)
        self._prefix = f"{'; '.join(self._why)}; solved the {_SOLVED[form]}: " if self._why else ""
        return attrs.evolve(cand, message=self._prefix + cand.message)

    # -- the forms -----------------------------------------------------------------------------
    def _solve_primal(self, data: ProblemData) -> RawSolution:
        """Solve ``data`` as given with HiGHS."""
        if scaled_applies(data) is not None:
            # not convex by construction (a Hessian that is not diagonal on the free columns):
            # checked fully the first time, by the signs of its diagonal after that
            check_psd(data.P, diagonal_only=self._primal_checked)
            self._primal_checked = True
        if self.primal is None:
            self.primal = self.make_inner(self.backend, data, self.inner_opts, check_convex=False)
        return _raw(self.primal.solve(data))

    def _solve_scaled(self, data: ProblemData) -> RawSolution:
        """Solve ``data`` in the variables ``v_j = sqrt(d_j) x_j`` (``scaled_applies(data)`` holds)."""
        P, fixed, d, _ = _diag_split(data)
        scale = np.ones(data.n)
        Q = (d > 0) & ~fixed
        scale[Q] = 1.0 / np.sqrt(d[Q])
        S = sp.diags(scale)
        Pd = np.zeros(data.n)
        Pd[Q] = 1.0
        if fixed.any():  # fixed columns keep their bounds and any Hessian entries, unscaled
            Pf = P.copy().tolil()
            Pf.setdiag(np.where(Q, 0.0, d))
            Pnew = (sp.diags(Pd) + S @ Pf.tocsc() @ S).tocsc()
        else:
            Pnew = sp.diags(Pd).tocsc()
        scaled = attrs.evolve(
            data, c=data.c * scale, P=Pnew, A=(data.A @ S).tocsr(), G=(data.G @ S).tocsr(),
            lb=data.lb / scale, ub=data.ub / scale)
        # the Hessian changes every EM iteration and HiGHS gains nothing from a warm start then
        # (docs/performance.md): a fresh instance per solve
        inner = self.make_inner(self.backend, scaled, self.inner_opts, check_convex=False)
        try:
            res = inner.solve(scaled)
        finally:
            inner.close()
        out = _raw(res)
        return attrs.evolve(out, x=None if res.x is None else res.x * scale, objective=None,
                            message=f"scaled QP: {res.message}", raw={"scaled": res})

    def _drop_inner(self) -> None:
        if self.inner is not None:
            self.inner.close()
        self.inner = None
        self.red = None

    def close(self) -> None:
        for s in (self.inner, self.primal):
            if s is not None:
                s.close()


def _skip(status: Status, failed_on, P) -> bool:
    """Whether a form that failed with ``status`` on the Hessian ``failed_on`` is skipped for a solve
    whose Hessian is ``P``. A form that ran out of iterations (or ended in an error or an unknown
    state) is skipped for the rest of the session: such a failure costs up to HiGHS's iteration
    limit, seconds per solve (docs/performance.md). A numerical error (a singular dense dual, a
    Hessian HiGHS refuses to take) is a property of the numbers of ``P``, found at once, and the form
    is tried again when ``P`` changes (EM reweights it on every solve): EM on ``X * 1e8`` with HiGHS
    has a singular dense dual at its L2 start (``q = 1``, kernel entries ~1e17), which from the next
    step on (``q`` ~1e16, the unit-scale kernel) solves; kept out for the whole run, the scaled
    primal met weights spread over 1e11 and stopped at its iteration limit."""
    if status is not Status.NUMERICAL_ERROR or failed_on is P:
        return True
    if failed_on is None or P is None or failed_on.shape != P.shape:
        return False
    return (sp.csr_matrix(failed_on) != sp.csr_matrix(P)).nnz == 0


def _worst_measure(res: SolveResult) -> float:
    """The largest measure of ``res``'s certificate (infinite without one)."""
    c = res.certificate
    if c is None:
        return float("inf")
    return max(float(c.primal_residual), float(c.dual_residual), abs(float(c.gap)))


def _form_of(res: SolveResult) -> str:
    """Which form answered ``res``, from the ``solved the ...:`` its message starts with."""
    m = res.message
    k = m.rfind("solved the ")
    return m[k + len("solved the "):].split(":", 1)[0] if k >= 0 else m.split(":", 1)[0]


def _raw(res: SolveResult) -> RawSolution:
    """An inner session's result as a candidate of the outer one (judged again, on its data)."""
    return RawSolution(status=res.status, x=res.x, duals=res.duals, objective=res.objective,
                       iterations=res.iterations, message=res.message, raw=res.raw)


_APPLIES = {"dual": lambda d: dual_applies(d), "scaled": lambda d: scaled_applies(d), "primal": lambda d: None}
_LABEL = {"dense": "dense dual QP", "dual": "dual QP", "scaled": "scaled QP", "primal": "primal QP"}
_SOLVED = {"dense": "dense dual QP", "dual": "dual QP", "scaled": "scaled primal", "primal": "primal QP"}


class DualQPSession(DualRays, _StableFormSession):
    """Solve the dual and invert to the primal: by the dense active-set method of
    :mod:`~fsframe.backends.box_qp` when the dual is box-shaped (``dense=True``, the default), else
    or when it fails by HiGHS; then the scaled primal, then the primal as given, when HiGHS fails
    on one."""

    def __init__(self, backend, data: ProblemData, options: SolveOptions, inner_session, *, dense: bool = True):
        super().__init__(backend, data, options, inner_session)
        self.forms = ("dense", "dual", "scaled", "primal") if dense else ("dual", "scaled", "primal")
        self._warm: np.ndarray | None = None  # the dense form's last solution (its active set)

    def _applies(self, form: str, data: ProblemData) -> str | None:
        why = _APPLIES["dual" if form == "dense" else form](data)
        if why is not None or form != "dense":
            return why
        pieces = self._pieces(data)
        if pieces["rows"].box() is None:
            return "a dual inequality row bounds several multipliers"
        if pieces["Q"].size and data.A.shape[0] + data.l > MAX_DENSE_ROWS:
            return f"more than {MAX_DENSE_ROWS} rows"
        return None

    def _pieces(self, data: ProblemData) -> dict:
        """What both dual forms need: the column sets, the rows' blocks (cached per session) and
        the dual's linear term; the dual Hessian is formed only by :meth:`_reduce` (HiGHS)."""
        key = self._pieces_key
        if key is not None and key[0] is data:
            return key[1]
        P, fixed, d, _ = _diag_split(data)  # dual_applies (every solve): the Hessian is diagonal
        Q = np.flatnonzero((d > 0) & ~fixed)
        rest = (d <= 0) & ~fixed
        R_lb = np.flatnonzero(rest & np.isfinite(data.lb))
        R_ub = np.flatnonzero(rest & ~np.isfinite(data.lb) & np.isfinite(data.ub))
        R_free = np.flatnonzero(rest & ~np.isfinite(data.lb) & ~np.isfinite(data.ub))
        Fx = np.flatnonzero(fixed)
        if self.rows is None or not self.rows.matches(data):
            self.rows = _Rows(data)
        rows = self.rows.for_r(R_lb, R_ub, R_free)
        K = rows.K
        rhs = rows.rhs
        c = data.c.copy()
        const = data.offset
        xf = data.lb[Fx]
        if np.any(xf != 0):  # substitute fixed columns (EM fixes them at 0: nothing to do)
            rhs = rhs - K[:, Fx] @ xf
            const += float(c[Fx] @ xf) + 0.5 * float(xf @ (P[Fx][:, Fx] @ xf))
            c[Q] += (P[Q][:, Fx] @ xf) if Q.size else 0.0
        dq = d[Q]
        dense = rows.Kd is not None and rows.col_nnz[Q].sum() > 0.2 * K.shape[0] * max(Q.size, 1)
        KQ = rows.Kd[:, Q] if dense else K[:, Q]
        cq = c[Q]
        f = (KQ @ (cq / dq) if Q.size else np.zeros(K.shape[0])) + rhs
        lbR, ubR = data.lb[R_lb], data.ub[R_ub]
        K_lb_lb, K_ub_ub = rows.bound_terms(lbR, ubR)
        f -= K_lb_lb
        f -= K_ub_ub
        dual_const = 0.5 * float(np.sum(cq * cq / dq)) - float(lbR @ c[R_lb]) - float(ubR @ c[R_ub]) - const
        p = data.A.shape[0]
        m = K.shape[0]
        out = dict(Q=Q, R_lb=R_lb, R_ub=R_ub, R_free=R_free, Fx=Fx, rows=rows, c=c, dq=dq, KQ=KQ, f=f,
                   dual_const=dual_const, p=p, m=m, dense=dense, lb=rows.sign_bounds(p),
                   h=np.concatenate([c[R_lb], -c[R_ub]]), b=-c[R_free])
        self._pieces_key = (data, out)
        return out

    _pieces_key = None

    def _reduce(self, data: ProblemData) -> _Reduction:
        pc = self._pieces(data)
        rows, Q, dq, KQ = pc["rows"], pc["Q"], pc["dq"], pc["KQ"]
        K = rows.K
        if pc["dense"]:
            Ks = KQ * (1.0 / np.sqrt(dq))
            H = _dense_csc(Ks @ Ks.T)
        else:
            KQs = KQ @ sp.diags(1.0 / np.sqrt(dq)) if Q.size else KQ
            if KQs.nnz > 0.2 * KQs.shape[0] * max(KQs.shape[1], 1):
                Kd = KQs.toarray()
                H = _dense_csc(Kd @ Kd.T)
            else:
                H = (KQs @ KQs.T).tocsc()
        m = K.shape[0]
        dual = ProblemData(
            c=pc["f"],
            P=H,
            offset=pc["dual_const"],
            A=rows.Kt_free,
            b=pc["b"],
            G=rows.dual_G,
            h=pc["h"],
            l=pc["R_lb"].size + pc["R_ub"].size,
            lb=pc["lb"],
            ub=np.full(m, np.inf),
        )
        return _Reduction(Q=Q, R_lb=pc["R_lb"], R_ub=pc["R_ub"], R_free=pc["R_free"], fixed=pc["Fx"], dual=dual,
                          p=pc["p"], KQ=KQ)

    def _recover(self, data: ProblemData, pc: dict, lam: np.ndarray, yd: np.ndarray, zd: np.ndarray) -> np.ndarray:
        """The primal point from the dual solution ``lam`` and the dual's own multipliers."""
        Q, Fx = pc["Q"], pc["Fx"]
        x = np.zeros(data.n)
        x[Fx] = data.lb[Fx]
        if Q.size:
            cq = pc["c"][Q]
            with _one_blas_thread():
                x[Q] = -(cq + pc["KQ"].T @ lam) / pc["dq"]
        n_lb = pc["R_lb"].size
        x[pc["R_lb"]] = data.lb[pc["R_lb"]] + zd[:n_lb]
        x[pc["R_ub"]] = data.ub[pc["R_ub"]] - zd[n_lb:]
        x[pc["R_free"]] = -yd
        return x

    def _solve_dense(self, data: ProblemData) -> RawSolution:
        """The dual by the dense active-set method, warm from the previous solution."""
        pc = self._pieces(data)
        box = pc["rows"].box()
        bounds = box.bounds(pc["h"], pc["lb"]) if box is not None else None
        if bounds is None:
            return RawSolution(status=Status.ERROR, message="the dual's bounds do not suit the dense form")
        lo, hi = bounds
        m = pc["m"]
        with _one_blas_thread():
            F = pc["KQ"] * (1.0 / np.sqrt(pc["dq"])) if pc["dense"] else \
                np.asarray((pc["KQ"] @ sp.diags(1.0 / np.sqrt(pc["dq"]))).toarray())
            start = self._warm if self._warm is not None and self._warm.shape == (m,) else None
            # a cold dual (the L2 start, a session's first) with many features per sample begins
            # from a crash start (box_qp; docs/backends.md, "Crash start")
            crash = CRASH_SWEEPS if start is None and CRASH_MIN_RATIO * m <= F.shape[1] and m <= CRASH_MAX_ROWS else 0
            res = solve_box_qp(F, pc["f"], box.E, pc["b"], lo, hi, start=start, crash=crash)
            if res.status != "optimal":
                self._warm = None
                if res.status == "unbounded":  # an unbounded dual proves the primal infeasible: its ray
                    claim = self._infeasible_claim(data, "dense dual QP: unbounded", res.iterations)
                    if claim is not None:
                        return claim
                # else (or without a ray that proves it) the next form, HiGHS's dual, tries again
                status = Status.ITERATION_LIMIT if res.status == "iteration_limit" else Status.NUMERICAL_ERROR
                return RawSolution(status=status, iterations=res.iterations,
                                   message=f"dense dual QP: {res.status.replace('_', ' ')}")
            zd = box.row_multipliers(res.r, res.lam, lo, hi, pc["h"], pc["lb"])
            x = self._recover(data, pc, res.lam, res.nu, zd)  # its BLAS context: nothing to change here
        # checked with or without the certificate, as for HiGHS's dual; each row against its own
        # size (relative_violation): an absolute residual refused answers on columns of scale 1e4
        # and let a row of scale 1e-4 be missed by 1 %
        viol = relative_violation(data, x)
        if not np.isfinite(viol) or viol > 10 * self.options.cert_tol:
            self._warm = None
            return RawSolution(status=Status.NUMERICAL_ERROR, iterations=res.iterations,
                               message=f"dense dual QP point infeasible (relative residual {viol:.2e})")
        self._warm = res.lam
        p = pc["p"]
        return RawSolution(status=Status.OPTIMAL, x=x, duals={"y": res.lam[:p], "z": res.lam[p:]},
                           iterations=res.iterations, message="dense dual QP: optimal")

    def _solve_dual(self, data: ProblemData) -> RawSolution:
        with _one_blas_thread():
            red = self._reduce(data)
        # the same rows and sets of linear columns give the very same constraint matrices (cached
        # by _Rows): keep the inner structure and push the objective and, when the costs of the
        # linear columns changed, the right-hand sides b = -c[R_free], h = (c[R_lb], -c[R_ub])
        old = self.red.dual if self.red is not None else None
        same = old is not None and red.dual.A is old.A and red.dual.G is old.G
        if same:
            b = old.b if np.array_equal(red.dual.b, old.b) else red.dual.b
            h = old.h if np.array_equal(red.dual.h, old.h) else red.dual.h
            dual = attrs.evolve(old, c=red.dual.c, P=red.dual.P, offset=red.dual.offset, b=b, h=h)
            red = attrs.evolve(red, dual=dual)
        if self.inner is None or not same:
            if self.inner is not None:
                self.inner.close()
            self.inner = self.make_inner(self.backend, red.dual, self.inner_opts, check_convex=False)
        self.red = red
        res = self.inner.solve(red.dual)
        if res.status in (Status.INFEASIBLE, Status.UNBOUNDED):
            # dual infeasible <=> primal unbounded (or infeasible); dual unbounded <=> primal infeasible;
            # the evidence is the dual's Farkas ray, resp. its direction of descent, mapped to the
            # primal (:meth:`_primal_ray`, :meth:`_dual_ray`) and checked by the base
            if res.status is Status.INFEASIBLE:
                status, ray = Status.INFEASIBLE_OR_UNBOUNDED, self._primal_ray(data)
            else:
                status, ray = Status.INFEASIBLE, self._dual_ray(data)
            return RawSolution(status=status, iterations=res.iterations, message=f"dual QP: {res.message}",
                               raw={"dual": res}, ray=ray)
        if res.status is not Status.TIME_LIMIT and (res.status is not Status.OPTIMAL or res.x is None
                                                     or res.duals is None):
            # a solver failure, not a property of the problem: HiGHS's active-set QP can stop
            # with "Solve error" on a rank-deficient dual (seen on Colon, EM iteration 4) or at its
            # iteration limit (WDBC, hinge + exp + EM, weights 1e-9..5e5, iteration 4); the scaled
            # primal is the same problem in other coordinates
            status = res.status if res.status in _FAILED else Status.NUMERICAL_ERROR
            return RawSolution(status=status, iterations=res.iterations, message=res.message, raw={"dual": res})
        if res.x is None or res.duals is None:  # the time limit, without a point
            return RawSolution(status=res.status, iterations=res.iterations, message=f"dual QP: {res.message}",
                               raw={"dual": res})
        lam = res.x
        x = self._recover(data, self._pieces(data), lam, res.duals["y"], res.duals["z"])
        if res.status is Status.OPTIMAL:
            # checked with or without the certificate: HiGHS's QP solver can stop at a huge finite
            # point of an unbounded dual (the primal is infeasible) and call it optimal; the
            # recovered x then violates the primal. The scaled primal form reports the status.
            viol = relative_violation(data, x)  # each row against its own size, as the dense form
            if not np.isfinite(viol) or viol > 10 * self.options.cert_tol:
                what = f"dual QP point infeasible (relative residual {viol:.2e})"
                claim = self._infeasible_claim(data, what + ": HiGHS stopped on an unbounded dual", res.iterations)
                if claim is not None:
                    return attrs.evolve(claim, raw={"dual": res})
                return RawSolution(status=Status.NUMERICAL_ERROR, iterations=res.iterations,
                                   message=what, raw={"dual": res})
        return RawSolution(status=res.status, x=x, duals={"y": lam[: red.p], "z": lam[red.p :]},
                           iterations=res.iterations, message=f"dual QP: {res.message}", raw={"dual": res})


MAX_DENSE_DUAL = 5000

CRASH_SWEEPS = 8
"""Sweeps of dual coordinate descent before the dense active-set method on a cold dual
(:func:`~fsframe.backends.box_qp.solve_box_qp`'s ``crash``; docs/backends.md, "Crash start")."""

CRASH_MIN_RATIO = 0.25
"""The crash start is taken when the dual's factor ``F`` has at least this many columns (features
alive) per row (sample): there a cold start's pivots are dear (free sets of up to ``q + 1``
multipliers, a KKT system of that size formed and factorised per pivot) and the crash's steps
(``O(m)`` each, after forming ``F F'``) cheaper. Measured (docs/performance.md, "Issue 19 at a
glance", seventh pass): Sonar (``q/m = 0.36``) 1-12 % less CPU per ``em-l0`` fit; breast cancer
(``q/m = 0.05``) up to 10 % more, so not there."""

CRASH_MAX_ROWS = 1000
"""Nor on a dual of more rows: the crash forms ``F F'`` (``m x m``, ``O(m^2 q)``), measured only up to
``m = 569``."""

MAX_DENSE_ROWS = 5000
"""Largest dual (rows of the primal) the dense active-set form takes."""
MAX_DENSE_EQUALITIES = 50
"""Most equality rows of the dual (free linear columns of the primal) the dense form takes."""


def prefer_dual(data: ProblemData) -> bool:
    """The dual has one variable per row and a dense Hessian: prefer it unless it has more than
    :data:`MAX_DENSE_DUAL` rows *and* more rows than quadratic columns (docs/performance.md)."""
    _, fixed, d, _ = _diag_split(data)
    n_q = int(np.count_nonzero((d > 0) & ~fixed))
    rows = data.A.shape[0] + data.l
    return rows <= MAX_DENSE_DUAL or rows < n_q


class ScaledQPSession(_StableFormSession):
    """Solve the primal in the variables ``v_j = sqrt(d_j) x_j`` (``j`` quadratic), with an
    inner HiGHS session; unscale the solution. Bounds on quadratic columns are scaled with them
    (``lb_j sqrt(d_j) <= v_j <= ub_j sqrt(d_j)``). Data the scaled form cannot take, and HiGHS
    failing on it, send the solve to the primal as given."""

    forms = ("scaled", "primal")
