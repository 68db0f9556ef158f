"""The :class:`Backend` base class, solve options and results, and the weak-duality certificate
every backend's "optimal" is checked against.

A backend solves :class:`~fsframe.compiler.ProblemData`. It never raises because a
problem is infeasible or unbounded: it returns a :class:`SolveResult` whose ``status`` says so,
and the outer loop decides. Re-solves go through a :class:`BackendSession`, which keeps the
solver's state and pushes only what changed (detected by object identity on the arrays of the
new ``ProblemData``), warm-starting where the solver can.
"""

from __future__ import annotations

import abc
import importlib
import logging
from typing import Any, ClassVar, Mapping

import attrs
import numpy as np
from attrs.validators import ge, instance_of, optional
from numpy.typing import NDArray

from ..enums import SOLUTION_PRESENT, ProblemClass, Status
from ..errors import BackendUnavailableError, UnsupportedProblemError
from ..canonical import ProblemData

__all__ = [
    "Backend",
    "BackendSession",
    "SolveOptions",
    "SolveResult",
    "Availability",
    "Certificate",
    "certify",
    "judge_certificate",
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
        Check every "optimal" answer with fsframe's own weak-duality certificate and downgrade
        it to ``OPTIMAL_INACCURATE`` if the check fails (outer loops then warn once per fit with a
        :class:`~fsframe.errors.SolverWarning`).
    cert_tol : float
        Relative tolerance of that check.
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


@attrs.frozen
class Certificate:
    """fsframe's independent check of an optimal answer (KKT residuals by weak duality).

    ``primal_residual``: largest constraint/bound violation of ``x`` (absolute);
    ``dual_residual``: largest reduced cost with the wrong sign for its bound (relative to the
    objective gradient's scale); ``dual_bound``: the Lagrangian lower bound from the solver's
    multipliers; ``gap``: ``(objective - dual_bound) / (1 + |objective|)``.
    """

    primal_residual: float
    dual_residual: float
    dual_bound: float
    gap: float

    def ok(self, tol: float) -> bool:
        lim = 10 * tol
        return self.primal_residual <= lim and self.dual_residual <= lim and -lim <= self.gap <= lim


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

    @property
    def ok(self) -> bool:
        return self.status in SOLUTION_PRESENT


class BackendSession(abc.ABC):
    """A backend holding one problem's structure for repeated solves."""

    def __init__(self, backend: "Backend", data: ProblemData, options: SolveOptions):
        self.backend = backend
        self.data = data
        self.options = options

    @abc.abstractmethod
    def solve(self, data: ProblemData | None = None) -> SolveResult:
        """Solve ``data`` (default: the opened problem). ``data`` must have the same
        constraint structure; changed ``c``, ``P``, ``lb``, ``ub`` are pushed incrementally."""

    def close(self) -> None:
        """Release solver memory."""


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
    reference: ClassVar[str] = ""

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


# ------------------------------------------------------------------------------ certificate
def certify(data: ProblemData, x: NDArray, y: NDArray, z: NDArray, objective: float | None = None) -> Certificate:
    """Weak-duality certificate in the conic form (bounds included).

    ``y`` are multipliers of ``A x = b`` and ``z`` of ``G x <=_K h`` (``z`` in the dual cone,
    projected onto it first), both in the convention ``L = f(x) + y'(Ax - b) + z'(Gx - h)``.
    For a quadratic objective the bound is taken on its linearisation at ``x`` (valid because
    ``f`` is convex). Bounds on ``x`` are handled in closed form; a reduced cost whose bound
    on the improving side is infinite should vanish: its size is the dual residual, and it is
    charged at ``x`` in the bound (exact when the residual is zero).
    """
    grad = data.c.copy()
    const = data.offset
    if data.has_quadratic_objective:
        Px = data.P @ x
        grad = grad + Px
        const -= 0.5 * float(x @ Px)
    z = np.asarray(z, dtype=float).copy()
    if data.l:
        z[: data.l] = np.maximum(z[: data.l], 0.0)
    k = data.l
    for q in data.cones:  # project onto the (self-dual) second-order cone
        t, v = z[k], z[k + 1 : k + q]
        nv = np.linalg.norm(v)
        if nv > t:
            if nv <= -t:
                z[k : k + q] = 0.0
            else:
                a = 0.5 * (t + nv)
                z[k] = a
                z[k + 1 : k + q] = a * v / nv
        k += q
    r = grad + (data.A.T @ y if data.A.shape[0] else 0.0) + (data.G.T @ z if data.G.shape[0] else 0.0)
    bound = const - float(data.b @ y) - float(data.h @ z)
    scale = max(1.0, float(np.max(np.abs(grad), initial=0.0)))
    # min over lb <= x <= ub of r'x: finite where the bound on the improving side is finite;
    # the rest of r is dual infeasibility, measured and charged at x
    lb_fin, ub_fin = np.isfinite(data.lb), np.isfinite(data.ub)
    pos, neg = r > 0, r < 0
    ok_pos, ok_neg = pos & lb_fin, neg & ub_fin
    bad = (pos & ~lb_fin) | (neg & ~ub_fin)
    bound += float(r[ok_pos] @ data.lb[ok_pos]) + float(r[ok_neg] @ data.ub[ok_neg]) + float(r[bad] @ x[bad])
    dual_res = float(np.max(np.abs(r[bad]), initial=0.0)) / scale
    obj = data.objective(x) if objective is None else objective
    gap = (obj - bound) / (1.0 + abs(obj))
    return Certificate(primal_residual=data.max_violation(x), dual_residual=dual_res, dual_bound=bound, gap=float(gap))


def judge_certificate(cert: Certificate, tol: float) -> tuple[Status, str]:
    """The status an ``OPTIMAL`` answer keeps after its certificate ``cert``, and a message suffix.

    Passed: ``OPTIMAL``. Failed: ``OPTIMAL_INACCURATE`` (loops use it, with a warning), unless the
    dual residual is above ``max(sqrt(tol), 1e-3)`` (a tiny ``tol`` asks for precision, not for
    refusing answers): then ``UNKNOWN``, since the objective still decreases
    along a direction the point's bounds do not block, so it is no optimum at all. Seen with
    HiGHS's QP solver, which stops at an internal bound of 1e7 on an unbounded QP and calls it
    optimal (dual residual 1.0). A large gap alone stays ``OPTIMAL_INACCURATE``
    (``tests/reference/test_certificate.py`` pins that for a wrong "optimal" of HiGHS).
    """
    if cert.ok(tol):
        return Status.OPTIMAL, ""
    message = (f"; fsframe certificate failed (primal residual {cert.primal_residual:.2e}, "
               f"dual residual {cert.dual_residual:.2e}, gap {cert.gap:.2e})")
    big = max(float(np.sqrt(tol)), 1e-3)
    if cert.dual_residual > big:
        return Status.UNKNOWN, message + (f"; a dual residual above {big:.0e} is no inaccurate optimum: the "
                                          "solver stopped short of one (is the problem unbounded?)")
    return Status.OPTIMAL_INACCURATE, message
