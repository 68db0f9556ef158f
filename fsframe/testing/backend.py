"""Conformance checks of backends: :func:`check_backend` solves every
:class:`~fsframe.testing.StandardProblems` instance the backend supports; :class:`FailingBackend`
injects a failed solve (for the loop checks)."""

from __future__ import annotations

from typing import Iterable

import attrs

from ..backends.base import Backend, BackendSession, SolveOptions, SolveResult
from ..canonical import ProblemData
from ..enums import ProblemClass, Status
from ..errors import InvalidOptionError
from ._util import fail as _fail
from .problems import StandardProblem, StandardProblems

__all__ = ["check_backend", "backend_checks", "FailingBackend"]


def backend_checks(backend: Backend | type) -> list[str]:
    """The checks :func:`check_backend` runs (its ``checks=`` names them): one per standard
    problem ``backend`` supports, ``"re-solve"`` and ``"unknown option"``."""
    return [p.name for p in StandardProblems.for_backend(backend)] + ["re-solve", "unknown option"]


def check_backend(backend: Backend | type, *, options: SolveOptions | None = None,
                  problems: Iterable[StandardProblem] | None = None, rtol: float = 1e-6, checks=None) -> list[str]:
    """Solve every :class:`StandardProblems` instance ``backend`` supports and compare status,
    objective, solution and support with the hand-derived answer; re-solve sequences on one
    session (changed ``c``, bounds, ``P``) must match fresh solves (``"re-solve"``); an unknown
    backend option must raise :class:`~fsframe.errors.InvalidOptionError` (``"unknown option"``);
    an ``OPTIMAL`` answer with multipliers must pass fsframe's certificate. ``checks``: a subset
    of :func:`backend_checks` (all by default). Returns the names of the checks run."""
    be = backend() if isinstance(backend, type) else backend
    opts = options or SolveOptions()
    names = backend_checks(be)
    checks = names if checks is None else list(checks)
    if set(checks) - set(names):
        raise ValueError(f"check_backend: unknown checks {sorted(set(checks) - set(names))}; its checks are {names}")
    ran = []
    for prob in (StandardProblems.for_backend(be) if problems is None else problems):
        if problems is None and prob.name not in checks:
            continue
        res = be.solve(prob.data, opts)
        prob.check(res, who=f"backend {be.name!r} ({dict(opts.backend_options)})", rtol=rtol)
        if res.status is Status.OPTIMAL and res.certificate is not None and not res.certificate.ok(opts.cert_tol):
            _fail(be.name, f"{prob.name}: OPTIMAL but the certificate fails: {res.certificate}")
        ran.append(prob.name)
    if problems is None and "re-solve" in checks:
        for name, seq in StandardProblems.resolve_sequences():
            seq = [p for p in seq if p.problem_class in be.supports]
            if not seq:
                continue
            session = be.open(seq[0].data, opts)
            try:
                for k, prob in enumerate(seq):
                    prob.check(session.solve(prob.data), who=f"backend {be.name!r} re-solve {k} of '{name}'", rtol=rtol)
            finally:
                session.close()
            ran.append(f"re-solve {name}")
    if problems is None and "unknown option" in checks:
        prob = next(iter(StandardProblems.for_backend(be)), None)
        if prob is not None:
            bad = attrs.evolve(opts, backend_options={**opts.backend_options, "fsframe_no_such_option": 1})
            try:
                be.solve(prob.data, bad)
            except InvalidOptionError:
                ran.append("unknown option rejected")
            else:
                _fail(be.name, "an unknown backend option was accepted silently (must raise InvalidOptionError)")
    return ran



class FailingBackend(Backend):
    """Wraps a backend and returns ``status`` (no solution) from solve number ``fail_at`` on
    (1-based, counted per session), to test how loops handle a failed subproblem."""

    name = "failing"
    supports = frozenset(ProblemClass)
    required_modules = ()
    status_map: dict = {}

    def __init__(self, inner: Backend, fail_at: int, status: Status = Status.NUMERICAL_ERROR):
        self.inner = inner
        self.fail_at = fail_at
        self.status = status

    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        return _FailingSession(self, data, options)


class _FailingSession(BackendSession):
    def __init__(self, backend: FailingBackend, data, options):
        super().__init__(backend, data, options)
        self.inner = backend.inner.open(data, options)
        self.count = 0

    def solve(self, data=None) -> SolveResult:
        self.count += 1
        if self.count >= self.backend.fail_at:
            return SolveResult(status=self.backend.status, x=None, objective=None, backend=self.backend.name,
                               solve_time=0.0, message=f"injected failure at solve {self.count}")
        return self.inner.solve(data)

    def close(self) -> None:
        self.inner.close()
