"""HiGHS backend (``highspy``): LPs by dual simplex, convex QPs by HiGHS's active-set solver.

The compiled ``G x <= h`` rows become HiGHS rows with lower bound ``-inf`` (as CVXPY's
``highs_qpif`` does); equalities are rows with equal bounds; variable bounds are column bounds.
A session keeps the HiGHS instance: a changed objective goes through ``changeColsCost`` (the
basis is kept, so the re-solve is warm), changed bounds through ``changeColsBounds`` and a changed
Hessian through ``passHessian``. A QP's objective is scaled up when its Hessian is tiny
(:func:`_objective_scale`) and its columns are scaled when the constraint columns are badly
scaled (:func:`_column_scale`); HiGHS's QP solver does neither itself.

Quadratic problems whose Hessian is diagonal on free columns (every EM / reweighted-L2
subproblem) are solved in a numerically stable form (:mod:`fsframe.backends.diag_qp`): the
Lagrangian dual (one variable per constraint row; by the dense active-set method of
:mod:`fsframe.backends.box_qp` when it is box-shaped, else by HiGHS), or, when the dual's dense
Hessian would be too large, the primal rescaled to an identity Hessian. Option ``qp_form``:
``"auto"`` (default), ``"dense"``, ``"dual"`` (HiGHS's dual QP), ``"scaled"`` or ``"primal"``
(HiGHS on the problem as given); docs/backends.md. HiGHS's QP solver
assumes a convex objective without checking it, so fsframe checks
(:func:`~fsframe.linalg.check_psd`) and refuses a nonconvex one with
:class:`~fsframe.errors.UnsupportedProblemError`, as ECOS does. Constraint entries of magnitude
:data:`MAX_MAGNITUDE` or more are refused with a typed error naming the scale; a Hessian HiGHS
refuses is a ``NUMERICAL_ERROR`` status. The measurements behind these choices are in
docs/performance.md.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys

import numpy as np

from .._lazy import lazy_module
from ..enums import ProblemClass, Status
from ..canonical import ProblemData
from ..errors import InvalidOptionError, UnsupportedProblemError
from ..linalg import check_psd
from .base import Backend, BackendSession, RawSolution, SolveFailure, SolveOptions, check_magnitudes
from .diag_qp import DualQPSession, ScaledQPSession, dual_applies, prefer_dual, scaled_applies

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["HighsBackend", "FSFRAME_OPTIONS"]


@contextlib.contextmanager
def _quiet_fd1():
    """highspy prints a banner on construction; silence file descriptor 1 meanwhile."""
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def refuse_thread_count(run_status, model_status, threads, who: str) -> None:
    """Raise :class:`~fsframe.errors.InvalidOptionError` when HiGHS did not run (run error, model
    status Not Set) and a ``threads`` option was given: HiGHS keeps one thread scheduler per process,
    started by its first solve, and refuses a solve asking for another thread count. ``who`` begins
    the message (the caller and the option's name)."""
    import highspy

    if (threads is not None and run_status == highspy.HighsStatus.kError
            and model_status == highspy.HighsModelStatus.kNotset):
        raise InvalidOptionError(
            f"{who} threads={threads!r} (status Not Set): HiGHS keeps one thread scheduler per process, "
            "started by the process's first HiGHS solve, and refuses a solve asking for another thread count. "
            "Give every solve of the process the same threads, or leave the option out")


def _new_highs(verbose: bool):
    import highspy

    if verbose:
        h = highspy.Highs()
    else:
        with _quiet_fd1():
            h = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


FSFRAME_OPTIONS = frozenset({"qp_form", "append_restart"})
"""The backend options that steer fsframe's HiGHS backend, not HiGHS (which does not know them):
a caller handing ``backend_options`` to HiGHS itself drops these."""
_FSFRAME_OPTIONS = FSFRAME_OPTIONS

COLD_APPEND_FRACTION = 0.2
COLD_MIN_ROWS = 500
"""``append_restart="auto"``: a batch of appended columns at least ``COLD_APPEND_FRACTION`` of the
columns already in the live LP, on an LP of at least ``COLD_MIN_ROWS`` rows, is solved by a cold
dual simplex (basis dropped, presolve on); anything else by the primal simplex from the kept
basis. On one working-set round of the ``l1-svm`` LP at 1 000 x 10 000 (500 groups, 250 appended)
the cold dual simplex took 6.1 s CPU (2 095 pivots) against the warm primal's 23.3 s (6 476); for
the small batches of the last rounds the warm primal wins (0.2-1.1 s against 3.2-3.8 s cold at
500 x 5 000), and at 200 rows a cold restart gained nothing (whole fits at 200 x 5 000: 2.8 s
CPU against 2.5 s warm); docs/performance.md."""

MAX_MAGNITUDE = 1e15
"""Largest constraint entry HiGHS represents faithfully (its ``large_matrix_value``); larger ones
are refused with a typed error naming the scale (:func:`~fsframe.backends.base.check_magnitudes`)."""


def _check_qp_form(options: SolveOptions) -> str:
    qp_form = options.backend_options.get("qp_form", "auto")
    if qp_form not in ("auto", "primal", "scaled", "dual", "dense"):
        raise InvalidOptionError(
            f"highs: qp_form must be 'auto', 'dense', 'dual', 'scaled' or 'primal', got {qp_form!r}")
    return qp_form


def _check_append_restart(options: SolveOptions) -> str:
    restart = options.backend_options.get("append_restart", "auto")
    if restart not in ("auto", "warm", "cold"):
        raise InvalidOptionError(f"highs: append_restart must be 'auto', 'warm' or 'cold', got {restart!r}")
    return restart


def _set_options(h, opts) -> None:
    """Set HiGHS options (fsframe's own keys skipped); a refused one is an InvalidOptionError."""
    import highspy

    for key, val in opts.items():
        if key in _FSFRAME_OPTIONS:
            continue
        if h.setOptionValue(key, val) == highspy.HighsStatus.kError:
            raise InvalidOptionError(f"highs: option {key}={val!r} rejected (unknown name or bad value)")


@functools.lru_cache(maxsize=1)
def _highs_version() -> str:
    try:
        h = _new_highs(False)
        return f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    except Exception:  # pragma: no cover - reported by available()
        return ""


class HighsBackend(Backend):
    """HiGHS via highspy: LP and convex QP, warm re-solves.

    Backend options: any HiGHS option (``"solver"``, ``"presolve"``,
    ``"primal_feasibility_tolerance"``, ...) plus ``qp_form`` (``"auto"``, ``"dense"``, ``"dual"``,
    ``"scaled"``, ``"primal"``).
    """

    name = "highs"
    supports = frozenset({ProblemClass.LP, ProblemClass.QP})
    required_modules = ("highspy",)
    preference = 0
    grows_columns = True
    reference = "Huangfu & Hall, Math. Prog. Comp. 10:119-142, 2018 (HiGHS)"

    @property
    def status_map(self):
        import highspy

        S = highspy.HighsModelStatus
        return {
            S.kOptimal: Status.OPTIMAL,
            S.kInfeasible: Status.INFEASIBLE,
            S.kUnbounded: Status.UNBOUNDED,
            S.kUnboundedOrInfeasible: Status.INFEASIBLE_OR_UNBOUNDED,
            S.kTimeLimit: Status.TIME_LIMIT,
            S.kIterationLimit: Status.ITERATION_LIMIT,
            S.kSolutionLimit: Status.ITERATION_LIMIT,
            S.kObjectiveBound: Status.UNKNOWN,
            S.kObjectiveTarget: Status.UNKNOWN,
            S.kInterrupt: Status.ERROR,
            S.kHighsInterrupt: Status.ERROR,
            S.kMemoryLimit: Status.ERROR,
            S.kLoadError: Status.ERROR,
            S.kModelError: Status.ERROR,
            S.kPresolveError: Status.ERROR,
            S.kSolveError: Status.NUMERICAL_ERROR,
            S.kPostsolveError: Status.NUMERICAL_ERROR,
            S.kModelEmpty: Status.OPTIMAL,
            S.kNotset: Status.ERROR,
            S.kUnknown: Status.UNKNOWN,
        }

    @classmethod
    def version(cls) -> str:
        return _highs_version()

    def check_options(self, options: SolveOptions) -> None:
        self.require()
        _check_qp_form(options)
        _check_append_restart(options)
        if any(key not in _FSFRAME_OPTIONS for key in options.backend_options):
            h = _new_highs(False)  # a scratch instance: setting an option is how HiGHS validates it
            _set_options(h, options.backend_options)

    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        self.require()
        self.check_supports(data)
        qp_form = _check_qp_form(options)
        check_magnitudes(data, MAX_MAGNITUDE, "highs")
        if data.has_quadratic_objective and qp_form != "primal":
            why = scaled_applies(data) if qp_form == "scaled" else dual_applies(data)
            if why is not None and qp_form != "auto":
                raise UnsupportedProblemError(f"highs: qp_form={qp_form!r} impossible: {why}")
            if why is None:
                if qp_form in ("dual", "dense") or (qp_form == "auto" and prefer_dual(data)):
                    return DualQPSession(self, data, options, HighsSession, dense=qp_form != "dual")
                return ScaledQPSession(self, data, options, HighsSession)
        return HighsSession(self, data, options)


def _objective_scale(data: ProblemData) -> float:
    """Factor applied to a QP's objective before it reaches HiGHS: ``1 / max |P_ij|`` when that
    is below 1, else 1.

    HiGHS's active-set QP solver works with absolute tolerances, and a Hessian whose entries are
    tiny is, to it, a degenerate LP (it cycled on an EM dual; scaling *down* large Hessians did
    not help: docs/performance.md). LPs are left alone (HiGHS scales them itself). A default
    ``qp_iteration_limit`` turns any remaining cycling into an ITERATION_LIMIT status."""
    return _hessian_scale(data.P if data.has_quadratic_objective else None)


def _hessian_scale(P) -> float:
    big = float(np.max(np.abs(P.data), initial=0.0)) if P is not None and P.nnz else 0.0
    return 1.0 / big if 0 < big < 1 else 1.0


COLUMN_RANGE = (1e-2, 1e2)
"""A QP whose constraint columns all have their largest entry in this range is passed as given;
otherwise every column is scaled by a power of two to a largest entry near 1."""


def _column_scale(M) -> np.ndarray | None:
    """Column factors ``D`` (``x = D v``, powers of two, so the scaling is exact) bringing the
    largest entry of each column of the constraint matrix ``M`` near 1, or ``None`` when every
    column is already in :data:`COLUMN_RANGE`.

    HiGHS's active-set QP solver does not scale the problem, and fails on unstandardised data
    where Clarabel succeeds (docs/performance.md)."""
    colmax = np.asarray(abs(M).max(axis=0).todense()).ravel() if M.shape[0] else np.zeros(M.shape[1])
    active = colmax > 0
    lo, hi = COLUMN_RANGE
    if not np.any(active) or np.all((colmax[active] >= lo) & (colmax[active] <= hi)):
        return None
    D = np.ones(M.shape[1])
    D[active] = np.exp2(-np.round(np.log2(colmax[active])))
    return D


_TRIL: list = [None]  # (m, take, indices, indptr): the lower triangle's gather for the last full m x m pattern


def _lower_csc(P) -> sp.csc_matrix:
    """The lower triangle of ``P`` (diagonal included) in canonical CSC form, as
    ``sp.tril(P, format="csc")`` with duplicates summed, read off the CSC arrays in numpy
    (``sp.tril`` goes through COO: 2 ms per EM dual at m = 569)."""
    P = sp.csc_matrix(P)
    if not P.has_canonical_format:
        P = P.copy()
        P.sum_duplicates()
    m = P.shape[0]
    if P.shape == (m, m) and P.nnz == m * m and m:  # every entry stored (the EM dual): a cached gather
        gather = _TRIL[0]  # read once: another thread may replace it (one tuple, never half-written)
        if gather is None or gather[0] != m:
            j = np.arange(m)
            counts = m - j  # column j keeps rows j..m-1, at positions j*m + j .. j*m + m - 1
            indptr = np.concatenate([[0], np.cumsum(counts)])
            take = np.repeat(j * m + j - indptr[:-1], counts) + np.arange(indptr[-1])
            gather = (m, take, np.tile(np.arange(m, dtype=np.int32), m)[take], indptr.astype(np.int32))
            _TRIL[0] = gather
        _, take, indices, indptr = gather
        return sp.csc_matrix((P.data[take], indices, indptr), shape=P.shape)
    cols = np.repeat(np.arange(P.shape[1]), np.diff(P.indptr))
    keep = P.indices >= cols
    indptr = np.zeros(P.shape[1] + 1, dtype=np.int64)
    np.cumsum(np.bincount(cols[keep], minlength=P.shape[1]), out=indptr[1:])
    return sp.csc_matrix((P.data[keep], P.indices[keep], indptr), shape=P.shape)


class HighsSession(BackendSession):
    """One HiGHS instance; QP objectives are passed scaled by :func:`_objective_scale`, the columns
    of a badly scaled QP by :func:`_column_scale` (the user's data untouched), and the solution,
    objective and duals unscaled on the way back.

    HiGHS's QP solver does not check convexity (on an indefinite Hessian it stops at a stationary
    point and calls it optimal), so a session refuses a nonconvex Hessian itself
    (:func:`~fsframe.linalg.check_psd`, as ECOS does): fully when it opens, by the signs
    of the diagonal when a re-solve brings another Hessian. ``check_convex=False`` is for the
    inner sessions of :mod:`~fsframe.backends.diag_qp`, whose Hessians are PSD by construction.
    """

    def __init__(self, backend: HighsBackend, data: ProblemData, options: SolveOptions, *,
                 check_convex: bool = True):
        super().__init__(backend, data, options)
        self.check_convex = check_convex
        if check_convex and data.has_quadratic_objective:
            check_psd(data.P)
        self.h = _new_highs(options.verbose)
        self.scale = _objective_scale(data)
        self.cols = None  # column factors D (x = D v) of the loaded problem, or None
        self._primal_warm = False  # switched to the primal simplex for appended columns
        self._cold_next = False  # the next run drops the basis: a large batch of appended columns
        self._restart = _check_append_restart(options)
        self.appends: list = []  # (columns before, columns appended, "cold" or "warm") per append
        self._apply_options()
        self._strategy0 = self.h.getOptionValue("simplex_strategy")[1]  # restored when a model is reloaded

    def _apply_options(self) -> None:
        opts = dict(self.options.backend_options)
        opts.pop("qp_form", None)
        opts.pop("append_restart", None)
        if self.options.time_limit is not None:
            opts.setdefault("time_limit", float(self.options.time_limit))
        # an active-set QP that cycles must end with a status, not run forever
        rows = self.data.A.shape[0] + self.data.l
        opts.setdefault("qp_iteration_limit", int(10_000 + 100 * (self.data.n + rows)))
        _set_options(self.h, opts)

    def _load(self, data: ProblemData) -> None:
        import highspy

        n = data.n
        p = data.A.shape[0]
        G = data.G if data.l == data.G.shape[0] else data.G[: data.l]
        M = sp.vstack([data.A, G], format="csc") if (p and data.l) else (data.A if p else G).tocsc()
        if not M.has_canonical_format:  # HiGHS rejects a repeated (row, column) entry: sum them
            M = M.copy() if M is data.A or M is G else M
            M.sum_duplicates()
        lower = np.concatenate([data.b, np.full(data.l, -np.inf)])
        upper = np.concatenate([data.b, data.h[: data.l]])
        self.cols = _column_scale(M) if data.has_quadratic_objective else None
        if self.cols is not None:
            M = (M @ sp.diags(self.cols)).tocsc()
        self.scale = _hessian_scale(self._hess(data.P) if data.has_quadratic_objective else None)
        # Rows, then columns with their entries, as numpy buffers. Filling a HighsLp instead
        # converts every array element by element into a std::vector (ten times slower).
        f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
        i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
        self.h.clearModel()
        # a new model has no basis: no restart planned for the old one (a failed append, then a
        # reload, ran it cold), and the solver's own strategy again, not the primal simplex that
        # continued the old model's basis after appends
        self._cold_next = False
        if self._primal_warm:
            self.h.setOptionValue("simplex_strategy", self._strategy0)
            self._primal_warm = False
        statuses = []
        if M.shape[0]:
            statuses.append(self.h.addRows(M.shape[0], f64(lower), f64(upper), 0, i32([]), i32([]), f64([])))
        if n:
            statuses.append(self.h.addCols(n, f64(self._cost(data.c)), f64(self._col(data.lb)), f64(self._col(data.ub)), M.nnz,
                                           i32(M.indptr[:-1]), i32(M.indices), f64(M.data)))
        if data.offset:
            statuses.append(self.h.changeObjectiveOffset(float(data.offset * self.scale)))
        if highspy.HighsStatus.kError in statuses:
            raise SolveFailure(Status.ERROR, "HiGHS rejected the problem (inconsistent bounds or matrix)")
        if data.has_quadratic_objective:
            self._pass_hessian(data.P)

    # the problem in HiGHS's columns v (x = D v): c -> D c (times the objective scale), bounds / D,
    # P -> D P D; rows and their multipliers are unchanged
    def _cost(self, c):
        return c * self.scale if self.cols is None else c * self.cols * self.scale

    def _col(self, bound):
        return bound if self.cols is None else bound / self.cols

    def _hess(self, P):
        if self.cols is None:
            return P
        S = sp.diags(self.cols)
        return (S @ P @ S).tocsc()

    def _pass_hessian(self, P) -> None:
        import highspy

        T = _lower_csc(self._hess(P) * self.scale)  # HiGHS's kTriangular: lower triangle, column-wise
        status = self.h.passHessian(T.shape[0], T.nnz, highspy.HessianFormat.kTriangular,
                                    T.indptr.astype(np.int32), T.indices.astype(np.int32),
                                    T.data.astype(np.float64))
        if status == highspy.HighsStatus.kError:
            big = float(np.max(np.abs(T.data), initial=0.0))
            raise SolveFailure(Status.NUMERICAL_ERROR, f"HiGHS's passHessian rejected the quadratic objective "
                               f"(entries up to {big:.3g}; HiGHS refuses values it cannot represent)")

    def _update(self, data: ProblemData) -> None:
        old = self._loaded
        if (data.appended_to is old and self.cols is None and not data.has_quadratic_objective
                and not old.has_quadratic_objective):
            self._append(data, old)
            return
        if self.check_convex and data.P is not old.P and data.has_quadratic_objective:
            check_psd(data.P, diagonal_only=True)
        if data.A is not old.A or data.G is not old.G or data.l != old.l or data.n != old.n:
            self._load(data)
            return
        if data.b is not old.b or data.h is not old.h:  # same rows, other right-hand sides
            p, l = data.A.shape[0], data.l  # noqa: E741
            if p + l:
                lower = np.concatenate([data.b, np.full(l, -np.inf)]).astype(np.float64)
                upper = np.concatenate([data.b, data.h[:l]]).astype(np.float64)
                self.h.changeRowsBounds(p + l, np.arange(p + l, dtype=np.int32), lower, upper)
        n = data.n
        idx = np.arange(n, dtype=np.int32)
        old_scale = self.scale
        if data.P is not old.P:
            self.scale = _hessian_scale(self._hess(data.P) if data.has_quadratic_objective else None)
            if data.has_quadratic_objective:
                self._pass_hessian(data.P)
            elif old.has_quadratic_objective:
                self._pass_hessian(sp.csc_matrix((n, n)))
        rescaled = self.scale != old_scale
        if data.c is not old.c or rescaled:
            self.h.changeColsCost(n, idx, np.asarray(self._cost(data.c), dtype=np.float64))
        if data.lb is not old.lb or data.ub is not old.ub:
            self.h.changeColsBounds(n, idx, np.asarray(self._col(data.lb), dtype=np.float64),
                                    np.asarray(self._col(data.ub), dtype=np.float64))
        if data.offset != old.offset or rescaled:
            self.h.changeObjectiveOffset(float(data.offset * self.scale))

    def _append(self, data: ProblemData, old: ProblemData) -> None:
        """``data`` is ``old`` with columns appended (a working set growing,
        :mod:`fsframe.working_set`): add them to the live LP (``addCols``; the basis of the old
        columns is kept, so the re-solve is warm) and push the old columns' changed costs and
        bounds."""
        import highspy

        n0, n = old.n, data.n
        user_strategy = "simplex_strategy" in self.options.backend_options
        # a large batch (or append_restart="cold"): a cold dual simplex with presolve, from no basis
        rows = data.A.shape[0] + data.l
        cold = not user_strategy and n > n0 and (
            self._restart == "cold" or (self._restart == "auto" and rows >= COLD_MIN_ROWS
                                        and n - n0 >= COLD_APPEND_FRACTION * n0))
        if not self._primal_warm and not user_strategy:
            # columns appended to an optimal basis leave it primal feasible: the primal simplex
            # continues from it (measured 1.4-1.6x faster than the dual simplex's default over the
            # rounds of a working set of 200 rows: docs/performance.md)
            self.h.setOptionValue("simplex_strategy", 4)
            self._primal_warm = True
        if n > n0:
            G = data.G if data.l == data.G.shape[0] else data.G[: data.l]
            parts = [M[:, n0:] for M in (data.A, G) if M.shape[0]]
            M = (sp.vstack(parts, format="csc") if len(parts) > 1 else parts[0].tocsc()) if parts \
                else sp.csc_matrix((0, n - n0))
            M.sum_duplicates()
            f64 = lambda a: np.ascontiguousarray(a, dtype=np.float64)  # noqa: E731
            i32 = lambda a: np.ascontiguousarray(a, dtype=np.int32)  # noqa: E731
            status = self.h.addCols(n - n0, f64(self._cost(data.c[n0:])), f64(data.lb[n0:]), f64(data.ub[n0:]),
                                    M.nnz, i32(M.indptr[:-1]), i32(M.indices), f64(M.data))
            if status == highspy.HighsStatus.kError:
                raise SolveFailure(Status.ERROR, "HiGHS rejected the appended columns")
        # planned only once the columns are in: a failed append leaves no cold restart behind
        self._cold_next = cold
        self.appends.append((n0, n - n0, "cold" if cold else "warm"))
        idx = np.arange(n0, dtype=np.int32)
        if not np.array_equal(data.c[:n0], old.c):
            self.h.changeColsCost(n0, idx, np.asarray(self._cost(data.c[:n0]), dtype=np.float64))
        if not (np.array_equal(data.lb[:n0], old.lb) and np.array_equal(data.ub[:n0], old.ub)):
            self.h.changeColsBounds(n0, idx, np.asarray(data.lb[:n0], dtype=np.float64),
                                    np.asarray(data.ub[:n0], dtype=np.float64))
        if data.b is not old.b or data.h is not old.h:
            p, l = data.A.shape[0], data.l  # noqa: E741
            if p + l:
                lower = np.concatenate([data.b, np.full(l, -np.inf)]).astype(np.float64)
                upper = np.concatenate([data.b, data.h[:l]]).astype(np.float64)
                self.h.changeRowsBounds(p + l, np.arange(p + l, dtype=np.int32), lower, upper)
        if data.offset != old.offset:
            self.h.changeObjectiveOffset(float(data.offset * self.scale))

    def _solve_raw(self, data: ProblemData):
        if self._cold_next:
            self._cold_next = False
            self.h.clearSolver()  # no basis: presolve, then the dual simplex from scratch
            self.h.setOptionValue("simplex_strategy", 1)
            try:
                run_status = self.h.run()
            finally:
                self.h.setOptionValue("simplex_strategy", 4)  # later re-solves continue warm
            return run_status, self.h.getModelStatus()
        run_status = self.h.run()
        return run_status, self.h.getModelStatus()

    def _invert(self, data: ProblemData, raw) -> RawSolution:
        import highspy

        run_status, model_status = raw
        status = self.backend.map_status(model_status)
        message = self.h.modelStatusToString(model_status)
        refuse_thread_count(run_status, model_status, self.options.backend_options.get("threads"),
                            "highs: HiGHS did not run with backend_options")
        if run_status == highspy.HighsStatus.kError and status is Status.OPTIMAL:
            status = Status.ERROR
            message += "; but HiGHS's run() returned an error"
        info = self.h.getInfo()
        iters = (int(info.simplex_iteration_count) + int(max(info.ipm_iteration_count, 0))
                 + int(max(info.qp_iteration_count, 0)))
        x = obj = duals = None
        if model_status == highspy.HighsModelStatus.kModelEmpty and data.n == 0:
            # HiGHS calls a model without columns "empty" (optimal) without reading its rows
            # (e.g. the dual of a QP without constraints): the empty point is optimal iff it
            # satisfies them, and the problem is infeasible otherwise.
            if data.max_violation(np.zeros(0)) > 1e-9:
                status, message = Status.INFEASIBLE, "empty model whose rows exclude the origin"
            else:
                x, obj = np.zeros(0), float(data.offset)
                duals = {"y": np.zeros(data.A.shape[0]), "z": np.zeros(data.l), "col_dual": np.zeros(0)}
        elif status in (Status.OPTIMAL, Status.TIME_LIMIT, Status.ITERATION_LIMIT) and info.primal_solution_status >= 2:
            sol = self.h.getSolution()
            D = np.ones(data.n) if self.cols is None else self.cols
            x = np.array(sol.col_value, dtype=float) * D
            obj = float(info.objective_function_value) / self.scale
            if sol.dual_valid:
                rd = np.array(sol.row_dual, dtype=float) / self.scale
                p = data.A.shape[0]
                # HiGHS: grad - M' row_dual = col_dual; fsframe: grad + A'y + G'z = reduced cost
                duals = {"y": -rd[:p], "z": -rd[p:], "col_dual": np.array(sol.col_dual, dtype=float) / (self.scale * D)}
        return RawSolution(status=status, x=x, duals=duals, objective=obj, iterations=iters, message=message,
                           raw={"model_status": model_status, "info": info}, ray=self._ray(data, status))

    def _ray(self, data: ProblemData, status: Status) -> dict | None:
        """HiGHS's evidence of a claim (checked by the base, never trusted): its dual ray, in
        fsframe's multiplier convention as the duals are (``y, z = -row ray``), and its primal
        ray in the original columns."""
        ray = {}
        p = data.A.shape[0]
        try:  # evidence is optional: HiGHS's trouble producing it leaves the claim unverified
            if status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
                _, has, values = self.h.getDualRay()
                if has:
                    values = -np.asarray(values, dtype=float)
                    ray["y"], ray["z"] = values[:p], values[p:]
            if status in (Status.UNBOUNDED, Status.INFEASIBLE_OR_UNBOUNDED):
                _, has, values = self.h.getPrimalRay()
                if has:
                    ray["dx"] = np.asarray(values, dtype=float) * (1.0 if self.cols is None else self.cols)
        except Exception:  # noqa: BLE001 - a failed ray query is no failed solve
            return None
        return ray or None

    def close(self) -> None:
        self.h.clear()
