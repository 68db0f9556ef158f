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

Options (``SolveOptions.backend_options``): any attribute of ``clarabel.DefaultSettings``
(``tol_gap_abs``, ``tol_gap_rel``, ``tol_feas``, ``max_iter``, ``direct_solve_method``,
``equilibrate_enable``, ...); ``time_limit`` and ``verbose`` come from :class:`SolveOptions`.
An unknown name or a value Clarabel refuses is an :class:`~fsframe.errors.InvalidOptionError`.
"""

from __future__ import annotations

import attrs
import numpy as np

from .._lazy import lazy_module
from ..canonical import ProblemData
from ..enums import ProblemClass, Status
from ..errors import InvalidOptionError
from .base import Backend, BackendSession, RawSolution, SolveFailure, SolveOptions, SolveResult
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


def clarabel_settings(options: SolveOptions):
    """A ``clarabel.DefaultSettings`` from ``options`` (unknown names and refused values raise
    :class:`InvalidOptionError`)."""
    import clarabel

    s = clarabel.DefaultSettings()
    s.verbose = bool(options.verbose)
    s.presolve_enable = False
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

    def _invert(self, data: ProblemData, sol, prep=None) -> RawSolution:
        prep = self._prep if prep is None else prep
        status = self.backend.map_status(sol.status)
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
        return RawSolution(status=status, x=x, duals=duals, iterations=int(sol.iterations), message=str(sol.status),
                           raw={"status": sol.status, "solution": sol}, ray=ray)

    def _retries(self, data: ProblemData, tried: list[SolveResult]):
        """After an answer that is not ``OPTIMAL``: when fixed columns were eliminated
        (:func:`~fsframe.backends.conic.eliminate`), the whole problem as given; then an answer
        that failed the certificate is solved once more at :data:`RETRY_TOLERANCE`
        (Clarabel's absolute gap tolerance, 1e-8 by default, is coarse for a small optimum),
        unless tolerances were given in ``backend_options``."""
        if self._prep is not None and self._prep.elim is not None:  # the problem as given, without the elimination
            whole = prepare(data, reduce=False)
            cand = self._invert(data, self._solve_raw(data, self._make(data, whole, clarabel_settings(self.options))),
                                whole)
            yield attrs.evolve(cand, message=f"{cand.message} (re-solved without eliminating the fixed columns)")
        cert = tried[0].certificate
        if cert is None or cert.ok(self.options.cert_tol) or any(k in self.options.backend_options
                                                                  for k in _TOLERANCES):
            return  # no certificate, or one that holds (an answer the solver calls inaccurate)
        settings = clarabel_settings(self.options)
        for k in _TOLERANCES:
            setattr(settings, k, RETRY_TOLERANCE)
        cand = self._invert(data, self._solve_raw(data, self._make(data, self._prep, settings)))
        yield attrs.evolve(cand, message=f"{cand.message} (re-solved at tolerance {RETRY_TOLERANCE:g} after the "
                                         "certificate failed)")

    def _choose(self, tried: list[SolveResult]) -> SolveResult:
        return tried[0]


_TOLERANCES = ("tol_gap_abs", "tol_gap_rel", "tol_feas")
RETRY_TOLERANCE = 1e-11
"""Gap and feasibility tolerance of the re-solve after a failed certificate."""
