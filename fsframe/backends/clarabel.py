"""Clarabel backend (``clarabel``, Goulart & Chen 2024): LP, QP, SOCP and exponential-cone programs
by an interior point method with a native quadratic objective.

Clarabel solves ``min 1/2 x'Px + q'x  s.t.  A x + s = b,  s in K`` with ``K`` a product of the
zero cone (equalities), ``R_+``, second-order and exponential cones (``ExponentialConeT``, whose
order ``(x, y, z)``, ``y exp(x/y) <= z``, is fsframe's). A session stacks fsframe's
``A x = b`` (zero cone) over ``G x <=_K h`` with the bounds folded in as rows
(:meth:`ProblemData.bounds_as_rows`), and passes the upper triangle of ``P``. Clarabel's
multipliers satisfy ``P x + q + A'z = 0``, i.e. fsframe's convention
``L = f(x) + y'(Ax - b) + z'(Gx - h)``; they are mapped back to the compiled rows, and the base
template certifies every answer (docs/backends.md); one that fails is solved once more at
:data:`RETRY_TOLERANCE` unless tolerances were given.

Columns with large curvature are rescaled first (:func:`~fsframe.backends.conic.prepare`); when
that happens Clarabel's own equilibration is switched off (unless ``equilibrate_enable`` is given):
the two scalings fight (docs/performance.md).

Re-solves: a changed ``c`` is pushed with ``solver.update`` (Clarabel keeps its symbolic
factorisation; it has no warm start of the iterates), which needs ``presolve_enable=False`` —
fsframe's default for this backend. A changed ``lb``, ``ub`` or ``P`` (which changes the column
scaling) builds a new solver.

Tolerances: fsframe asks Clarabel for gap and feasibility to :data:`DEFAULT_TOLERANCE` (1e-9),
not Clarabel's 1e-8, so that the zero coefficients of an answer are small enough for the loops'
``zero_tol`` cut to be certified in place instead of solved again; an ``AlmostSolved`` answer that
meets Clarabel's own 1e-8 is taken as solved, and a solve that stalls at 1e-9 is solved again at
1e-8 (:meth:`ClarabelSession._retries`). Giving any of ``tol_gap_abs``, ``tol_gap_rel``,
``tol_feas`` in ``backend_options`` leaves the other two at Clarabel's defaults.

Threads: one (:data:`DEFAULT_THREADS`) unless ``backend_options`` gives ``max_threads``.

Options (``SolveOptions.backend_options``): any attribute of ``clarabel.DefaultSettings``
(``tol_gap_abs``, ``tol_gap_rel``, ``tol_feas``, ``max_iter``, ``direct_solve_method``,
``equilibrate_enable``, ...); ``time_limit`` and ``verbose`` come from :class:`SolveOptions`.
An unknown name or a value Clarabel refuses is an :class:`~fsframe.errors.InvalidOptionError`.
"""

from __future__ import annotations

import time

import attrs
import numpy as np

from .._lazy import lazy_module
from ..canonical import ProblemData
from ..enums import ProblemClass, Status
from ..errors import FsframeError, InvalidOptionError
from .base import Backend, BackendSession, RawSolution, SolveFailure, SolveOptions, SolveResult, log
from .conic import module_version, prepare

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["ClarabelBackend", "CLARABEL_STATUS"]

CLARABEL_STATUS = {
    "Solved": Status.OPTIMAL,
    "AlmostSolved": Status.OPTIMAL_INACCURATE,
    "PrimalInfeasible": Status.INFEASIBLE,
    "AlmostPrimalInfeasible": Status.INFEASIBLE,
    "DualInfeasible": Status.UNBOUNDED,
    "AlmostDualInfeasible": Status.UNBOUNDED,
    "MaxIterations": Status.ITERATION_LIMIT,
    "MaxTime": Status.TIME_LIMIT,
    "NumericalError": Status.NUMERICAL_ERROR,
    "InsufficientProgress": Status.NUMERICAL_ERROR,
    "Unsolved": Status.ERROR,
    "CallbackTerminated": Status.ERROR,
}
"""Every ``clarabel.SolverStatus`` (by name) and its fsframe status."""


DEFAULT_THREADS = 1
"""Clarabel's ``max_threads`` in every fsframe call unless ``backend_options`` gives one (Clarabel's
own default, 0, factors with faer on every core). One thread: a fit's conic solves are small to
mid-sized, and on a loaded machine the helper threads cost CPU without saving time; a study runs
its cells in parallel instead (docs/backends.md; docs/multiclass.md measures it on DSO-FS's finish)."""


def clarabel_settings(options: SolveOptions):
    """A ``clarabel.DefaultSettings`` from ``options`` (unknown names and refused values raise
    :class:`InvalidOptionError`). Unless ``backend_options`` gives one of Clarabel's gap or
    feasibility tolerances, all three are :data:`DEFAULT_TOLERANCE` (Clarabel's own: 1e-8)."""
    import clarabel

    s = clarabel.DefaultSettings()
    s.verbose = bool(options.verbose)
    s.presolve_enable = False
    s.max_threads = DEFAULT_THREADS
    if not any(k in options.backend_options for k in _TOLERANCES):
        for k in _TOLERANCES:
            setattr(s, k, DEFAULT_TOLERANCE)
    if options.time_limit is not None:
        s.time_limit = float(options.time_limit)
    names = sorted(a for a in dir(s) if not a.startswith("_") and not callable(getattr(s, a)))
    for key, val in options.backend_options.items():
        if key not in names:
            raise InvalidOptionError(f"clarabel: unknown option {key!r}; accepted: {names}")
        try:
            setattr(s, key, val)
        except (TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise InvalidOptionError(f"clarabel: option {key}={val!r} refused: {exc}") from exc
    return s


class ClarabelBackend(Backend):
    """Clarabel: LP, QP (native ``P``), SOCP and exponential cones."""

    name = "clarabel"
    supports = frozenset({ProblemClass.LP, ProblemClass.QP, ProblemClass.SOCP, ProblemClass.EXP})
    required_modules = ("clarabel",)
    preference = 2
    reference = "Goulart & Chen, Clarabel: an interior-point solver for conic programs with quadratic objectives, 2024"

    @property
    def status_map(self):
        import clarabel

        return {getattr(clarabel.SolverStatus, k): v for k, v in CLARABEL_STATUS.items()
                if hasattr(clarabel.SolverStatus, k)}

    @classmethod
    def version(cls) -> str:
        return module_version("clarabel")

    def check_options(self, options: SolveOptions) -> None:
        self.require()
        clarabel_settings(options)

    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        self.require()
        self.check_supports(data)
        return ClarabelSession(self, data, options)


def _upper(P, n: int) -> sp.csc_matrix:
    if P is None or P.nnz == 0:
        return sp.csc_matrix((n, n))
    U = sp.triu(P, format="csc").astype(float)
    U.sum_duplicates()
    U.sort_indices()
    return U


class ClarabelSession(BackendSession):
    """Holds a Clarabel solver; see the module docstring for what a re-solve pushes and the one
    re-solve at tighter tolerances after an answer fails the certificate."""

    def __init__(self, backend: ClarabelBackend, data: ProblemData, options: SolveOptions):
        super().__init__(backend, data, options)
        self.settings = clarabel_settings(options)
        # fsframe's DEFAULT_TOLERANCE is in force (no tolerance given in backend_options)
        self._tightened = not any(k in options.backend_options for k in _TOLERANCES)
        self._prep = None
        self._solver = None

    def _make(self, data: ProblemData, prep, settings):
        import clarabel

        rows = prep.layout.rows
        M = sp.vstack([rows.A, rows.G], format="csc")
        M.sort_indices()
        rhs = np.concatenate([rows.b, rows.h])
        cones = []
        if rows.A.shape[0]:
            cones.append(clarabel.ZeroConeT(int(rows.A.shape[0])))
        if rows.l:
            cones.append(clarabel.NonnegativeConeT(int(rows.l)))
        cones.extend(clarabel.SecondOrderConeT(int(q)) for q in rows.cones)
        cones.extend(clarabel.ExponentialConeT() for _ in range(rows.exp))  # fsframe's (r, s, t) order
        if prep.scale is not None and "equilibrate_enable" not in self.options.backend_options:
            settings.equilibrate_enable = False  # the columns are already scaled (see the module docstring)
        try:
            return clarabel.DefaultSolver(_upper(rows.P, rows.n), prep.c(data), M, rhs, cones, settings)
        except Exception as exc:  # Clarabel raises plain Exception
            if "settings" in str(exc).lower():
                raise InvalidOptionError(f"clarabel refused the settings: {exc}") from exc
            raise SolveFailure(Status.ERROR, f"Clarabel rejected the problem: {exc}") from exc

    def _load(self, data: ProblemData) -> None:
        self._prep = prepare(data)
        self._solver = self._make(data, self._prep, clarabel_settings(self.options))

    def _update(self, data: ProblemData) -> None:
        old = self._loaded
        if not (data.A is old.A and data.G is old.G and data.b is old.b and data.h is old.h
                and data.l == old.l and data.cones == old.cones and data.lb is old.lb
                and data.ub is old.ub) or not self._solver.is_data_update_allowed() \
                or (self._prep.elim is not None and not self._prep.elim.valid_for(data)):
            self._load(data)
        elif data.P is not old.P and (data.has_quadratic_objective or old.has_quadratic_objective):
            self._load(data)  # a new P changes the column scaling, hence A
        elif data.c is not old.c:
            self._solver.update(q=self._prep.c(data))

    def _solve_raw(self, data: ProblemData, solver=None):
        try:
            return (solver or self._solver).solve()
        except Exception as exc:  # Clarabel's input checks
            raise SolveFailure(Status.ERROR, f"Clarabel rejected the problem: {exc}") from exc

    def _invert(self, data: ProblemData, sol, prep=None, tightened: bool | None = None) -> RawSolution:
        prep = self._prep if prep is None else prep
        status = self.backend.map_status(sol.status)
        message = str(sol.status)
        tightened = self._tightened if tightened is None else tightened
        if status is Status.OPTIMAL_INACCURATE and tightened and _solved_at_clarabel_default(sol):
            # fsframe asks for DEFAULT_TOLERANCE: an answer that reaches only Clarabel's own
            # tolerances is what Clarabel's defaults call Solved (the certificate judges it next)
            status = Status.OPTIMAL
            message += (f" at fsframe's tolerances; within Clarabel's default {CLARABEL_TOLERANCE:g}, "
                        "taken as solved")
        x = duals = None
        if status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ITERATION_LIMIT, Status.TIME_LIMIT):
            x = prep.x(np.asarray(sol.x, dtype=float))
            zz = np.asarray(sol.z, dtype=float)
            p_rows = prep.layout.rows.A.shape[0]
            y, z = prep.duals(data, x, zz[:p_rows], zz[p_rows:])
            duals = {"y": y, "z": z}
        ray = None
        if status is Status.INFEASIBLE:  # Clarabel's z: a Farkas certificate (A'z = 0, b'z < 0, z in K*)
            zz = np.asarray(sol.z, dtype=float)
            p_rows = prep.layout.rows.A.shape[0]
            ray = prep.ray(data, y=zz[:p_rows], z=zz[p_rows:])
        elif status is Status.UNBOUNDED:  # Clarabel's x: a direction (P x = 0, A x in -K, q'x < 0)
            ray = prep.ray(data, v=np.asarray(sol.x, dtype=float))
        return RawSolution(status=status, x=x, duals=duals, iterations=int(sol.iterations), message=message,
                           raw={"status": sol.status, "solution": sol}, ray=ray)

    def _first(self, data: ProblemData) -> RawSolution:
        self._started = time.perf_counter()  # the re-solves get what is left of the time limit
        return super()._first(data)

    def _retries(self, data: ProblemData, tried: list[SolveResult]):
        """After an answer that is not ``OPTIMAL``, in this order:

        1. when Clarabel did not call the solve at fsframe's :data:`DEFAULT_TOLERANCE` solved
           (``AlmostSolved`` beyond Clarabel's own tolerance, ``InsufficientProgress``,
           ``NumericalError``), the same solve at Clarabel's own :data:`CLARABEL_TOLERANCE` (an
           interior point pushed past what the problem's conditioning allows can stall further
           from the optimum than where Clarabel's defaults stop);
        2. when fixed columns were eliminated (:func:`~fsframe.backends.conic.eliminate`), the
           whole problem as given;
        3. when the first answer failed the certificate and did not stall (a tighter solve would
           stall too), that answer solved once more at :data:`RETRY_TOLERANCE` (an absolute gap
           tolerance of 1e-9 or 1e-8 is coarse for a small optimum), unless tolerances were given
           in ``backend_options``.

        None runs after a first solve that stopped at the user's ``max_iter`` or ``time_limit``
        (:meth:`_at_limit`, ``ITERATION_LIMIT``, ``TIME_LIMIT``): that is the user's cap. Each
        re-solve gets what is left of ``time_limit`` since the first solve began; once it is
        spent, none is started (:meth:`_choose`'s message says so). Each is a candidate of its
        own: one that fails (its preparation or Clarabel refuses it, a
        :class:`~fsframe.backends.base.SolveFailure`) is a failed candidate and the next still
        runs. With no ``OPTIMAL`` candidate, :meth:`_choose` picks."""
        self._fallback = None
        self._labels = ["the first solve"]
        self._skipped = ""
        first = tried[0]
        if self._at_limit(first) or first.status in (Status.ITERATION_LIMIT, Status.TIME_LIMIT):
            return
        stalled = self._tightened and _unsolved(first) and not self._at_limit(first)

        def settings(tolerance: float | None = None):
            """The re-solve's settings (at ``tolerance`` when given), its time limit what is left."""
            out = clarabel_settings(self.options)
            if tolerance is not None:
                for k in _TOLERANCES:
                    setattr(out, k, tolerance)
            out.time_limit = min(float(out.time_limit), self._time_left())
            return out

        def candidates():
            if stalled:
                yield ("the re-solve at Clarabel's default tolerance",
                       lambda: self._invert(data, self._solve_raw(data, self._make(data, self._prep,
                                                                                   settings(CLARABEL_TOLERANCE))),
                                            tightened=False),
                       f"re-solved at Clarabel's default tolerance {CLARABEL_TOLERANCE:g}: at {DEFAULT_TOLERANCE:g} "
                       "it was not solved")
            if self._prep is not None and self._prep.elim is not None:  # the problem as given, without the elimination
                def whole():
                    prep = prepare(data, reduce=False)
                    return self._invert(data, self._solve_raw(data, self._make(
                        data, prep, settings(CLARABEL_TOLERANCE if stalled else None))),
                        prep, tightened=not stalled and self._tightened)
                yield ("the re-solve without eliminating the fixed columns", whole,
                       "re-solved without eliminating the fixed columns")
            cert = first.certificate
            if stalled or cert is None or cert.ok(self.options.cert_tol) or any(
                    k in self.options.backend_options for k in _TOLERANCES):
                # 1e-9 stalled already (a tighter solve would stall too), no certificate, or one that
                # holds (an answer the solver calls inaccurate)
                return
            yield (f"the re-solve at tolerance {RETRY_TOLERANCE:g}",
                   lambda: self._invert(data, self._solve_raw(data, self._make(data, self._prep,
                                                                               settings(RETRY_TOLERANCE)))),
                   f"re-solved at tolerance {RETRY_TOLERANCE:g} after the certificate failed")

        for label, solve, note in candidates():
            if self._time_left() <= 0:
                self._skipped = (f"; {label} and any after it not started: the time limit of "
                                 f"{self.options.time_limit:g} s was spent")
                return
            if stalled and self._fallback is None:
                self._fallback = len(tried)  # its index in ``tried`` once judged
            self._labels.append(label)
            yield self._candidate(solve, note)

    def _time_left(self) -> float:
        """Seconds left of :attr:`SolveOptions.time_limit` since the first solve began (``inf``
        without one)."""
        limit = self.options.time_limit
        if limit is None:
            return float("inf")
        return float(limit) - (time.perf_counter() - getattr(self, "_started", time.perf_counter()))

    @staticmethod
    def _candidate(solve, note: str) -> RawSolution:
        """The candidate ``solve()`` returns, its message naming the re-solve (``note``); a
        :class:`~fsframe.backends.base.SolveFailure` (or another exception from the solver or the
        re-solve's preparation, logged) is a failed candidate with the same note, so that the
        re-solves after it still run (the session's own solver is untouched: each re-solve builds a
        solver of its own). A typed fsframe error (bad input) propagates."""
        try:
            cand = solve()
        except SolveFailure as exc:
            return RawSolution(status=exc.status, message=f"{exc.message} ({note})")
        except FsframeError:
            raise
        except Exception as exc:  # the solver's own trouble: a failed candidate, never an exception
            log.warning("clarabel raised during a re-solve (%s)", note, exc_info=True)
            return RawSolution(status=Status.ERROR, message=f"{type(exc).__name__}: {exc} ({note})")
        return attrs.evolve(cand, message=f"{cand.message} ({note})")

    def _choose(self, tried: list[SolveResult]) -> SolveResult:
        """The best candidate with a point: by status (``OPTIMAL`` > ``OPTIMAL_INACCURATE`` > a
        limit's > ``UNKNOWN``), then by the decade of its certificate's largest measure (none:
        last), then the answer at Clarabel's own tolerance (the fallback of a stall), then the
        earlier. Without any point: the first verified claim, else the first answer. It keeps its
        status (an ``OPTIMAL_INACCURATE`` one, which the loops warn about), and its message says
        which was kept and what every other candidate ended with."""
        labels = getattr(self, "_labels", [])
        fallback = getattr(self, "_fallback", None)

        def label(i: int) -> str:
            return labels[i] if i < len(labels) else f"candidate {i + 1}"

        with_point = [i for i, r in enumerate(tried) if r.x is not None]
        if with_point:
            best = min(with_point, key=lambda i: (_RANK.get(tried[i].status, len(_RANK)),
                                                  _decade(tried[i].certificate), i != fallback, i))
        else:
            best = next((i for i, r in enumerate(tried) if r.claim is not None and r.claim.verified), 0)
        chosen = tried[best]
        others = [f"{label(i)} ended {r.status.value} {'with' if r.x is not None else 'without'} a point "
                  f"({r.message})" for i, r in enumerate(tried) if i != best]
        skipped = getattr(self, "_skipped", "")
        if not others and not skipped:
            return chosen
        told = f"; kept: the answer of {label(best)}; " + "; ".join(others) if others else ""
        return attrs.evolve(chosen, message=f"{chosen.message}{told}{skipped}")

    def _at_limit(self, result: SolveResult) -> bool:
        """Whether ``result``'s solve stopped at the user's ``max_iter`` or ``time_limit``: Clarabel
        calls such a stop ``AlmostSolved`` when its loose tolerances hold, and it is the user's cap,
        not a stall to solve again."""
        sol = (result.raw or {}).get("solution")
        if sol is None:
            return False
        if int(getattr(sol, "iterations", 0)) >= int(self.settings.max_iter):
            return True
        limit = self.options.time_limit
        return limit is not None and float(getattr(sol, "solve_time", 0.0)) >= 0.99 * float(limit)


_TOLERANCES = ("tol_gap_abs", "tol_gap_rel", "tol_feas")
RETRY_TOLERANCE = 1e-11
"""Gap and feasibility tolerance of the re-solve after a failed certificate."""
DEFAULT_TOLERANCE = 1e-9
"""fsframe's gap and feasibility tolerance for Clarabel (``tol_gap_abs``, ``tol_gap_rel``,
``tol_feas``; Clarabel's own default is :data:`CLARABEL_TOLERANCE`). At 1e-8 an answer's zero
coefficients are ~1e-7 and hold active rows to that accuracy: on Sonar's L1-MPM, cutting them
(the loops' ``zero_tol`` cut) left a point 1.3e-7 outside a margin row and a cone, so the cut was
not certified in place (:meth:`fsframe.problem.Subproblem.certified_cut`) and the subproblem was
solved a second time. At 1e-9 the solve takes about one interior-point iteration more and its
cut is certified (docs/performance.md, "Issue 19 at a glance")."""
CLARABEL_TOLERANCE = 1e-8
"""Clarabel's own default gap and feasibility tolerance. An answer Clarabel calls
``AlmostSolved`` at :data:`DEFAULT_TOLERANCE` that meets this one (its reported residuals and
gap) is what Clarabel's own settings call ``Solved``: it is mapped to ``OPTIMAL`` (and then
certified like every answer)."""


_RANK = {Status.OPTIMAL: 0, Status.OPTIMAL_INACCURATE: 1, Status.ITERATION_LIMIT: 2, Status.TIME_LIMIT: 2,
         Status.UNKNOWN: 3}
"""How :meth:`ClarabelSession._choose` ranks the statuses of candidates with a point (lower first)."""


def _decade(cert) -> float:
    """The decade of a certificate's largest measure (``inf`` without one): candidates whose
    residuals are of one order are tied, so the preference for the fallback decides."""
    if cert is None:
        return float("inf")
    worst = max(cert.primal_residual, cert.dual_residual, abs(cert.gap))
    if not np.isfinite(worst):  # NaN or infinite measures: last
        return float("inf")
    return float(np.floor(np.log10(worst))) if worst > 0 else float("-inf")


_UNSOLVED = frozenset({"AlmostSolved", "InsufficientProgress", "NumericalError"})
"""Clarabel's statuses of a solve that stalled short of its tolerances (not a verdict of
infeasibility, nor a limit the user set: ``max_iter``, ``time_limit``)."""


def _unsolved(result: SolveResult) -> bool:
    """Whether Clarabel stopped ``result``'s solve short of its tolerances (:data:`_UNSOLVED`) and
    fsframe did not take it as solved (an ``AlmostSolved`` within Clarabel's own tolerance is)."""
    raw = result.raw or {}
    name = str(raw.get("status", "")).split(".")[-1]
    return name in _UNSOLVED and result.status is not Status.OPTIMAL


def _solved_at_clarabel_default(sol) -> bool:
    """Whether an ``AlmostSolved`` answer meets Clarabel's own default tolerances
    (:data:`CLARABEL_TOLERANCE`): primal and dual residuals, and the primal-dual gap absolute or
    relative to the smaller objective (at least 1), as Clarabel's ``Solved`` test reads them."""
    try:
        p, d = float(sol.obj_val), float(sol.obj_val_dual)
        r_prim, r_dual = float(sol.r_prim), float(sol.r_dual)
    except (AttributeError, TypeError, ValueError):
        return False
    if not all(np.isfinite(v) for v in (p, d, r_prim, r_dual)):
        return False
    gap = abs(p - d)
    tol = CLARABEL_TOLERANCE
    return r_prim <= tol and r_dual <= tol and (gap <= tol or gap <= tol * max(1.0, min(abs(p), abs(d))))

