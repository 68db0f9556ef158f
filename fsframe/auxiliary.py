"""The one route of every solve besides a fit's subproblem: :class:`AuxSolver`.

A formulation or a loop sometimes solves another problem (MPM's largest feasible bound, paper 000
§2.1; MEMPM's largest ``delta_neg``; DSO-FS's ``E`` step, paper 004 eq. 12). It never picks a
backend or builds a solver itself: the fit driver makes one :class:`AuxSolver` on the fit's backend
and options and hands it, explicitly, to

* ``validate(X, y, aux=...)`` and ``build(X, y, terms, aux=...)`` of a formulation declaring the
  trait ``aux_solver`` (a formulation without it is called without it);
* ``explain_failure(X, y, status, aux)`` of a formulation with that protocol, when the fit's first
  subproblem has no solution (the driver calls it, not the loop);
* a loop, as ``run.aux`` in :meth:`~fsframe.loops.OuterLoop.steps`.

The solver answers on the fit's backend when it solves the problem's class, else on the
preferred backend for it (``backend="auto"``'s rule), or on a backend asked for by name; every
answer passes the backends' certificate, and :meth:`AuxSolver.refined` refines an
``optimal_inaccurate`` one on the other backends of its class. :meth:`AuxSolver.record` puts an
auxiliary solve's statuses in the fit's ``FitResult.statuses``.
"""

from __future__ import annotations

import attrs

from .backends.base import Backend, SolveOptions, SolveResult
from .canonical import ProblemData
from .enums import ProblemClass, Status
from .plugins import backends_for, select_backend

__all__ = ["AuxSolver"]


@attrs.frozen(eq=False)
class AuxSolver:
    """The fit's solver for auxiliary problems (see the module docstring).

    Attributes
    ----------
    backend : Backend
        The fit's backend.
    options : SolveOptions
        The fit's solver options.
    """

    backend: Backend
    options: SolveOptions = attrs.field(factory=SolveOptions)
    _log: dict = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def default(cls, problem_class: ProblemClass, backend: str | Backend = "auto",
                options: SolveOptions | None = None) -> "AuxSolver":
        """An auxiliary solver outside a fit (a formulation's helper called on its own): the
        backend ``backend`` (a name, ``"auto"`` or an instance) for ``problem_class``."""
        return cls(select_backend(backend, problem_class), SolveOptions() if options is None else options)

    def backend_for(self, problem_class: ProblemClass, *, quadratic: bool = False,
                    backend: str | Backend | None = None) -> Backend:
        """The backend a problem of ``problem_class`` is solved on: ``backend`` if given (a name or
        an instance), else the fit's when it solves that class, else the preferred one for it."""
        if backend is not None:
            return select_backend(backend, problem_class, quadratic=quadratic)
        if problem_class in self.backend.supports:
            return self.backend
        return select_backend("auto", problem_class, quadratic=quadratic)

    def solve(self, data: ProblemData, *, backend: str | Backend | None = None) -> SolveResult:
        """Solve ``data`` on :meth:`backend_for` its class with the fit's options."""
        be = self.backend_for(data.problem_class, quadratic=data.has_quadratic_objective, backend=backend)
        return be.solve(data, self.options)

    def refined(self, data: ProblemData, *, backend: str | Backend | None = None) -> tuple[SolveResult, ...]:
        """Every answer of a refined solve, the last the one to use: :meth:`solve`, then, while
        the answer is only ``optimal_inaccurate``, the next other available backend of the class
        in preference order (with the fit's time limit only: backend options are a backend's
        own). For an auxiliary quantity that decides what is feasible (MPM's ``delta_max``)."""
        be = self.backend_for(data.problem_class, quadratic=data.has_quadratic_objective, backend=backend)
        results = [be.solve(data, self.options)]
        tried = {be.name}
        for other in backends_for(data.problem_class):
            if results[-1].status is not Status.OPTIMAL_INACCURATE:
                break
            if other.name in tried or not other.available():
                continue
            tried.add(other.name)
            results.append(other().solve(data, SolveOptions(time_limit=self.options.time_limit)))
        return tuple(results)

    def record(self, key, statuses) -> None:
        """Report the statuses of an auxiliary result once per fit (``key`` identifies it, so a
        result shared by ``validate`` and ``build`` counts once): they join ``FitResult.statuses``."""
        self._log.setdefault(key, tuple(statuses))

    @property
    def statuses(self) -> tuple:
        """Statuses of the auxiliary solves recorded, in order."""
        return tuple(s for group in self._log.values() for s in group)
