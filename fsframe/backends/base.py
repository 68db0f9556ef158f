"""The :class:`Backend` base class, solve options and results, and the :class:`BackendSession`
template every solve goes through (docs/backends.md).

A backend solves :class:`~fsframe.canonical.ProblemData`. It never raises because a problem is
infeasible or unbounded, nor for solver trouble: it returns a :class:`SolveResult` whose
``status`` says so, and the outer loop decides. Re-solves go through a :class:`BackendSession`,
which keeps the solver's state and pushes only what changed (detected by object identity on the
arrays of the new ``ProblemData``), warm-starting where the solver can. The session's
:meth:`~BackendSession.solve` is the base's: it checks and certifies every answer with one rule
(:mod:`fsframe.backends.certificate`), so a backend cannot report an uncertified ``OPTIMAL``.
"""

from __future__ import annotations

import abc
import functools
import importlib
import logging
import time
import weakref
from typing import Any, ClassVar, Iterator, Mapping

import attrs
import numpy as np
from attrs.validators import ge, instance_of, optional
from numpy.typing import NDArray

from ..enums import SOLUTION_PRESENT, ProblemClass, Status
from ..canonical import ProblemData
from ..errors import BackendUnavailableError, FsframeError, UnsupportedProblemError
from .certificate import Certificate, certify, judge_certificate
from .claims import CLAIMS, ClaimCheck, judge_claim

__all__ = [
    "Backend",
    "BackendSession",
    "SolveOptions",
    "SolveResult",
    "Availability",
    "Certificate",
    "ClaimCheck",
    "certify",
    "judge_certificate",
    "RawSolution",
    "SolveFailure",
    "check_magnitudes",
]

log = logging.getLogger("fsframe.backends")


@attrs.frozen
class SolveOptions:
    """Options common to every backend.

    Parameters
    ----------
    time_limit : float, optional
        Seconds per solve.
    verbose : bool
        Let the solver print its log.
    backend_options : mapping
        Passed to the solver unchanged (HiGHS option names, ECOS keyword arguments, Clarabel
        settings); an unknown name is an :class:`~fsframe.errors.InvalidOptionError`.
    certify : bool
        Check every "optimal" answer with fsframe's own weak-duality certificate and judge it by
        the one rule of :func:`judge_certificate` (``OPTIMAL``, ``OPTIMAL_INACCURATE`` — outer
        loops then warn once per fit with a :class:`~fsframe.errors.SolverWarning` — or
        ``UNKNOWN``); docs/backends.md.
    cert_tol : float
        Relative tolerance of that check (each measure within ``10 * cert_tol``).
    """

    time_limit: float | None = attrs.field(default=None, validator=optional(ge(0)))
    verbose: bool = attrs.field(default=False, validator=instance_of(bool))
    backend_options: Mapping[str, Any] = attrs.field(factory=dict, converter=lambda m: dict(m or {}))
    certify: bool = True
    cert_tol: float = 1e-6


@attrs.frozen
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


_OPTIMAL = Status.OPTIMAL


@attrs.frozen(eq=False)
class SolveResult:
    """The outcome of one solve.

    ``x`` is the primal solution in the columns of the ``ProblemData`` (``None`` without a
    solution); ``objective`` includes the offset; ``raw`` keeps the solver's own output.
    """

    status: Status
    x: NDArray | None
    objective: float | None
    backend: str
    solve_time: float
    iterations: int | None = None
    backend_version: str = ""
    message: str = ""
    duals: Mapping[str, NDArray] | None = attrs.field(default=None, repr=False)
    certificate: Certificate | None = None
    raw: Any = attrs.field(default=None, repr=False)
    claim: ClaimCheck | None = None
    """fsframe's check of a claim of infeasibility or unboundedness (a status in
    :data:`~fsframe.backends.claims.CLAIMS`): verified, refuted or neither, and why
    (:func:`~fsframe.backends.claims.judge_claim`); ``None`` for other statuses."""

    @property
    def ok(self) -> bool:
        status = self.status  # OPTIMAL by identity first (a loop asks several times per step): 9 ns, not
        return status is _OPTIMAL or status in SOLUTION_PRESENT  # 49 (Status.OPTIMAL's lookup alone is 45)


@attrs.frozen(eq=False)
class RawSolution:
    """One candidate answer, as a session's :meth:`BackendSession._invert` returns it: the
    solver's own status mapped to :class:`Status`, in the columns and rows of the ``ProblemData``.

    ``duals`` holds ``"y"`` (multipliers of ``A x = b``) and ``"z"`` (of ``G x <=_K h``) in the
    convention ``L = f(x) + y'(Ax - b) + z'(Gx - h)``; other keys are kept for the user.
    ``objective`` is the objective the solver claims (``None``: not claimed): never evidence.
    ``ray`` is the evidence of a claim of infeasibility or unboundedness, in the same columns and
    rows: ``"y"`` and ``"z"`` a Farkas certificate (the multipliers' convention), ``"dx"`` a
    direction of unbounded descent; the base checks it (:func:`judge_claim`).
    The reported and certified objective is always ``data.objective(x)`` of the point returned;
    a claim that differs from it is only mentioned in the message.
    """

    status: Status
    x: NDArray | None = None
    duals: Mapping[str, NDArray] | None = None
    objective: float | None = None
    iterations: int | None = None
    message: str = ""
    raw: Any = None
    ray: Mapping[str, NDArray] | None = None


def _claim_note(claimed: float | None, attained: float | None, tol: float) -> str:
    """A message suffix when the objective a solver claims differs from the one its point attains
    by more than ``10 * tol`` (relative to the larger, at least ``1e-12``): information about the
    solver, never evidence (the objective reported and certified is recomputed from the point)."""
    if claimed is None or attained is None:
        return ""
    try:
        claimed = float(claimed)
    except (TypeError, ValueError):
        return f"; the solver claimed objective {claimed!r}, not a number"
    if abs(claimed - attained) <= 10 * tol * max(abs(claimed), abs(attained), 1e-12):
        return ""
    return f"; the solver claimed objective {claimed:.10g}, its point attains {attained:.10g}"


class SolveFailure(Exception):
    """Raised inside a session's raw steps (:meth:`~BackendSession._load`,
    :meth:`~BackendSession._update`, :meth:`~BackendSession._solve_raw`) to end the solve with
    ``status`` and ``message`` (e.g. the solver refused the data). It never leaves
    :meth:`BackendSession.solve`."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


_WITH_POINT = frozenset({Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ITERATION_LIMIT, Status.TIME_LIMIT})
"""Statuses under which a returned point is kept (a limit may stop at a usable point)."""

_VOUCHED: "weakref.WeakSet[SolveResult]" = weakref.WeakSet()
"""Results built by :meth:`BackendSession.solve` (judged by the base)."""


class BackendSession(abc.ABC):
    """A backend holding one problem's structure for repeated solves (a template method).

    :meth:`solve` is the same for every backend (CVXPY's solver-layer shape): it pushes the data
    (:meth:`_load` the first time, :meth:`_update` after), runs the solver (:meth:`_solve_raw`),
    maps its answer back (:meth:`_invert`, a :class:`RawSolution`), and then *the base* judges it:
    a non-finite point under a solution status is ``NUMERICAL_ERROR``; an ``OPTIMAL`` answer is
    certified (:func:`certify`) and judged by the one rule (:func:`judge_certificate`); without
    multipliers it cannot be certified and is ``OPTIMAL_INACCURATE``. A backend may offer further
    candidates when the first is not ``OPTIMAL`` (:meth:`_retries`: re-solves at tighter
    tolerances, another form of the problem); each goes through the same judgement, the first
    ``OPTIMAL`` one wins, else :meth:`_choose` picks. Backends implement the raw steps only;
    a subclass that still overrides :meth:`solve` has its ``OPTIMAL`` answers certified all the
    same.

    Solver trouble never raises: an exception from a raw step becomes ``ERROR`` (or the status of
    a :class:`SolveFailure`). Typed fsframe errors (bad input, a nonconvex objective) and
    ``KeyboardInterrupt`` propagate.
    """

    def __init__(self, backend: "Backend", data: ProblemData, options: SolveOptions):
        self.backend = backend
        self.data = data
        self.options = options
        self._loaded: ProblemData | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("solve")
        if own is not None and not getattr(own, "_fsframe_checked", False):
            cls.solve = _checked(own)

    # -- the template ----------------------------------------------------------------------
    def solve(self, data: ProblemData | None = None) -> SolveResult:
        """Solve ``data`` (default: the opened problem). ``data`` must have the same
        constraint structure; changed ``c``, ``P``, ``lb``, ``ub`` are pushed incrementally."""
        data = self.data if data is None else data
        t0 = time.perf_counter()
        first = self._attempt(data, lambda: self._first(data))
        tried = [self.judge(data, first)]
        if tried[0].status is not Status.OPTIMAL:
            retries = self._retries(data, tried)
            while True:
                cand = self._attempt(data, lambda: next(retries, None))
                if cand is None:
                    break
                tried.append(self.judge(data, cand))
                if tried[-1].status is Status.OPTIMAL:
                    break
        best = tried[-1] if tried[-1].status is Status.OPTIMAL else self._choose(tried)
        iters = [r.iterations for r in tried if r.iterations is not None]
        out = attrs.evolve(best, solve_time=time.perf_counter() - t0, iterations=sum(iters) if iters else None)
        self.data = data
        _VOUCHED.add(out)
        return out

    solve._fsframe_checked = True  # type: ignore[attr-defined]

    def _first(self, data: ProblemData) -> RawSolution:
        if self._loaded is None:
            self._load(data)
        elif data is not self._loaded:
            self._update(data)
        self._loaded = data
        return self._invert(data, self._solve_raw(data))

    def _attempt(self, data: ProblemData, step) -> RawSolution | None:
        """``step()``, with solver trouble turned into a failed candidate."""
        try:
            return step()
        except SolveFailure as exc:
            self._loaded = None  # reload on the next solve
            return RawSolution(status=exc.status, message=exc.message)
        except FsframeError:
            raise
        except Exception as exc:  # the solver's own trouble: a status, never an exception
            self._loaded = None
            log.warning("backend %s raised during a solve", self.backend.name, exc_info=True)
            return RawSolution(status=Status.ERROR, message=f"{type(exc).__name__}: {exc}")

    def judge(self, data: ProblemData, cand: RawSolution) -> SolveResult:
        """The base's judgement of one candidate: finiteness, the certificate and its one rule.

        The point judged is the solver's with the problem's auxiliary columns at their least
        values given the others (:attr:`ProblemData.auxiliaries`, when the problem declares
        them: the hinge's slacks become ``max(0, 1 - y_i f_i)``), so that its objective is the
        one its model attains: an interior point's slacks left above that, or short of rows held
        only to a tolerance (which the slack's cost ``C`` multiplies), no longer hide in the
        objective. Its objective, residuals and gap are recomputed from it and the returned
        multipliers. The objective the solver claims is never evidence (a backend that returns a
        point 1 % above its claimed optimum fails the gap); when it disagrees with the point's,
        the message says so. The point is then returned inside its bounds (a move within the
        primal residual), with the objective of the point returned: a bound violation the solver
        tolerates is no part of the model (slacks of -3e-11 on 28 rows, times C = 170, put an
        L1-SVM's objective 4e-5, relative, below that of its coefficients), its auxiliaries settled
        again from the clipped columns. Certifying the
        clipped point instead would charge the clip's cost to the gap: on a DCA step whose
        objective nearly cancels (1e-7 from terms of size 40), columns moved by 1e-9 shift it by
        2e-7, a relative gap of 5e-4 for an exact answer."""
        status, message, x, cert = cand.status, cand.message, cand.x, None
        if x is not None and status in _WITH_POINT:
            x = np.asarray(x, dtype=float)
            if x.shape != (data.n,) or not np.all(np.isfinite(x)):
                if status in SOLUTION_PRESENT:
                    status = Status.NUMERICAL_ERROR
                    message += f"; {self.backend.name} returned a non-finite (or misshapen) solution"
                x = None
            else:
                note = _claim_note(cand.objective, data.objective(x), self.options.cert_tol)
                x = data.settled(x)
        else:
            x = None
        objective = data.objective(x) if x is not None else None
        if status in SOLUTION_PRESENT and x is not None and self.options.certify:
            duals = cand.duals or {}
            if duals.get("y") is None or duals.get("z") is None:
                if status is Status.OPTIMAL:
                    status = Status.OPTIMAL_INACCURATE
                    message += "; no multipliers returned, so fsframe cannot certify the answer"
            else:
                cert = certify(data, x, duals["y"], duals["z"])
                verdict, extra = judge_certificate(cert, self.options.cert_tol)
                # an answer the solver itself calls inaccurate keeps that status unless the
                # certificate refutes it as a solution (UNKNOWN); it is never upgraded
                if status is Status.OPTIMAL or verdict is Status.UNKNOWN:
                    status = verdict
                message += extra
            message += note
        claim = None
        if status in CLAIMS and self.options.certify:
            # the solver's claim that there is no optimum is checked like an optimum: from the
            # evidence it returned, on the compiled problem (never taken on trust)
            status, extra, claim = judge_claim(data, status, cand.ray, self.options.cert_tol)
            message += extra
        if x is not None:
            inside = np.clip(x, data.lb, data.ub)
            if not np.array_equal(inside, x):
                # the clip moves model columns too (an interior point's u, v of w = u - v at -1e-8):
                # the auxiliaries settle again from the clipped point, or a column they are defined
                # from (a least-squares residual r = y - Xw - b, with X's columns at 1e4) would keep
                # the unclipped w's value and the objective another model's
                x = np.clip(data.settled(inside), data.lb, data.ub)
                objective = data.objective(x)
        return SolveResult(status=status, x=x, objective=objective, backend=self.backend.name, solve_time=0.0,
                           iterations=cand.iterations, backend_version=self.backend.version(), message=message,
                           duals=cand.duals if x is not None else None, certificate=cert, raw=cand.raw,
                           claim=claim)

    # -- what a backend implements -----------------------------------------------------------
    def _load(self, data: ProblemData) -> None:
        """Hand ``data`` to the solver (first solve, or after a failure)."""

    def _update(self, data: ProblemData) -> None:
        """Push what changed since the last solve (default: :meth:`_load` again)."""
        self._load(data)

    def _solve_raw(self, data: ProblemData) -> Any:
        """Run the solver on the loaded problem; return its raw output."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _solve_raw nor solve")

    def _invert(self, data: ProblemData, raw: Any) -> RawSolution:
        """Map the solver's output back to ``data``'s columns and rows."""
        raise NotImplementedError(f"{type(self).__name__} implements neither _invert nor solve")

    def _retries(self, data: ProblemData, tried: list[SolveResult]) -> Iterator[RawSolution]:
        """Further candidates after ``tried[0]`` was not ``OPTIMAL`` (default: none). ``tried``
        grows as the base judges each candidate, so a later one may depend on earlier ones."""
        return iter(())

    def _choose(self, tried: list[SolveResult]) -> SolveResult:
        """The result to report when no candidate is ``OPTIMAL`` (default: the last one)."""
        return tried[-1]

    def close(self) -> None:
        """Release solver memory."""


def _checked(solve):
    """Wrap a ``solve`` that overrides the template so that its ``OPTIMAL`` answers are judged by
    the base all the same (results the template built pass unchanged)."""

    @functools.wraps(solve)
    def checked(self, data=None):
        res = solve(self, data)
        if res in _VOUCHED:
            return res
        d = self.data if data is None else data
        cand = RawSolution(status=res.status, x=res.x, duals=res.duals, objective=res.objective,
                           iterations=res.iterations, message=res.message, raw=res.raw)
        out = attrs.evolve(self.judge(d, cand), solve_time=res.solve_time, backend=res.backend,
                           backend_version=res.backend_version)
        _VOUCHED.add(out)
        return out

    checked._fsframe_checked = True
    return checked

class Backend(abc.ABC):
    """Base class of solver backends (one module each, like CVXPY's solver interfaces)."""

    name: ClassVar[str]
    supports: ClassVar[frozenset[ProblemClass]]
    required_modules: ClassVar[tuple[str, ...]]
    status_map: ClassVar[Mapping[Any, Status]]
    preference: ClassVar[int] = 100
    """Lower is preferred by ``backend="auto"`` among backends supporting the problem class."""
    native_quadratic: ClassVar[bool] = True
    """Whether a quadratic objective is solved as such (False: reformulated, e.g. ECOS's
    rotated-cone epigraph); ``auto`` prefers native solvers for quadratic objectives."""
    honours_time_limit: ClassVar[bool] = True
    """Whether :attr:`SolveOptions.time_limit` is enforced; ``auto`` skips backends that cannot
    when a time limit is given."""
    auto_skips: ClassVar[frozenset] = frozenset()
    """Problem classes it solves when named but ``auto`` passes over while another available
    backend takes them (ECOS: exponential cones, where it stops with numerical errors on
    reweighted logistic subproblems that Clarabel solves; docs/conic.md)."""
    reference: ClassVar[str] = ""
    grows_columns: ClassVar[bool] = False
    """Whether a session adds the columns of a problem that claims to extend the loaded one
    (:attr:`ProblemData.appended_to`) to its live model, warm. Working sets
    (:mod:`fsframe.working_set`) then keep every row and append columns; otherwise each
    restricted problem is rebuilt without the rows it leaves empty."""

    @classmethod
    def available(cls) -> Availability:
        """Whether the solver's modules import; the reason if not."""
        for mod in cls.required_modules:
            try:
                importlib.import_module(mod)
            except Exception as exc:  # ImportError, or a broken binary wheel
                return Availability(False, f"cannot import {mod!r}: {exc}; install it with `pip install {mod}`")
        return Availability(True)

    @classmethod
    def require(cls) -> None:
        avail = cls.available()
        if not avail:
            raise BackendUnavailableError(f"backend {cls.name!r} is unavailable: {avail.reason}")

    @classmethod
    def version(cls) -> str:
        return ""

    def check_supports(self, data: ProblemData) -> None:
        pc = data.problem_class
        if pc not in self.supports:
            raise UnsupportedProblemError(
                f"backend {self.name!r} cannot solve {pc.value} problems (it supports "
                f"{sorted(p.value for p in self.supports)}); choose another backend or backend='auto'"
            )

    def check_options(self, options: SolveOptions) -> None:
        """Raise :class:`~fsframe.errors.InvalidOptionError` if ``options`` (names and values of
        ``backend_options``, ``time_limit``) would be refused by :meth:`open`; called once before
        a fit or a cross-validation starts, so a typo fails at once, not in every fold. The
        default accepts everything (then ``open`` is where refusals surface)."""

    @abc.abstractmethod
    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        """Load ``data`` into the solver and return a session for (re-)solving it."""

    def solve(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> SolveResult:
        """Solve ``data`` once."""
        session = self.open(data, options)
        try:
            return session.solve(data)
        finally:
            session.close()

    def map_status(self, code) -> Status:
        status = self.status_map.get(code)
        if status is None:
            log.warning("backend %s returned unknown status %r; reported as UNKNOWN", self.name, code)
            return Status.UNKNOWN
        return status




def check_magnitudes(data: ProblemData, limit: float, who: str) -> None:
    """Raise :class:`UnsupportedProblemError` if an entry of the constraint data ``A``, ``G``,
    ``b``, ``h`` has magnitude ``>= limit``: the solver ``who`` cannot represent such a problem
    faithfully (HiGHS refuses matrix values above 1e15 as "inconsistent"; interior-point solvers
    square them), so the message names the scale and how to avoid it. The objective (``c``,
    ``P``) is not checked here: outer loops drive its weights to large values legitimately, and
    trouble there is a status, not an error."""
    parts = {"b": data.b, "h": data.h, "A": data.A.data if data.A.nnz else (),
             "G": data.G.data if data.G.nnz else ()}
    for name, values in parts.items():
        big = float(np.max(np.abs(values), initial=0.0)) if np.size(values) else 0.0
        if big >= limit:
            raise UnsupportedProblemError(
                f"{who}: the constraints have an entry of magnitude {big:.3g} in {name} (limit {limit:.0e}): the "
                "data are on a scale the solver cannot represent; standardise the features (e.g. "
                "sklearn.preprocessing.StandardScaler) or rescale them to magnitudes near 1")
