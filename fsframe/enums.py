"""Enumerations shared by every layer: problem classes and solver statuses."""

from __future__ import annotations

import enum

__all__ = ["ProblemClass", "Status", "SOLUTION_PRESENT"]


class ProblemClass(enum.Enum):
    """The class of a compiled convex subproblem (what a backend must support)."""

    LP = "LP"
    """Linear objective, linear constraints, variable bounds."""
    QP = "QP"
    """Convex quadratic objective, linear constraints."""
    SOCP = "SOCP"
    """Linear (or convex quadratic) objective with second-order cone constraints."""
    EXP = "EXP"
    """Linear (or convex quadratic) objective with exponential cone constraints (and possibly
    second-order cones): a logistic loss. Solved by the conic backends that take the
    exponential cone (ECOS, Clarabel); HiGHS refuses it."""

    @classmethod
    def of(cls, has_quadratic_objective: bool, has_cones: bool, has_exp: bool = False) -> "ProblemClass":
        if has_exp:
            return cls.EXP
        if has_cones:
            return cls.SOCP
        return cls.QP if has_quadratic_objective else cls.LP


class Status(enum.Enum):
    """Termination status of one convex solve, normalised across backends."""

    OPTIMAL = "optimal"
    """The solver proved optimality within its tolerances, and fsframe's KKT check agreed."""
    OPTIMAL_INACCURATE = "optimal_inaccurate"
    """A solution is returned but tolerances were not fully met (ECOS 'close to optimal',
    or fsframe's residual check found a larger gap than the solver claimed)."""
    INFEASIBLE = "infeasible"
    """The solver proved the constraints cannot all hold."""
    UNBOUNDED = "unbounded"
    """The solver proved the objective is unbounded below."""
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    """The solver proved one of the two but not which."""
    ITERATION_LIMIT = "iteration_limit"
    """The solver stopped at its iteration limit."""
    TIME_LIMIT = "time_limit"
    """The solver stopped at its time limit."""
    NUMERICAL_ERROR = "numerical_error"
    """The solver gave up for numerical reasons (ill-conditioning, stalled search direction)."""
    ERROR = "error"
    """The solver reported an error (bad model, failed load, internal error)."""
    UNKNOWN = "unknown"
    """The solver returned a code fsframe does not know; see the raw result."""

    @property
    def ok(self) -> bool:
        """True when a usable solution is present."""
        return self in SOLUTION_PRESENT


SOLUTION_PRESENT = frozenset({Status.OPTIMAL, Status.OPTIMAL_INACCURATE})
"""Statuses whose result carries a primal solution that loops may use."""

UNDECIDED = frozenset({Status.UNKNOWN, Status.NUMERICAL_ERROR, Status.ITERATION_LIMIT})
"""Statuses with neither a usable solution nor a claim: the solver could not settle the problem
(``Subproblem.second_opinion`` asks the other backends)."""
