"""Exceptions and warnings raised by fsframe.

Every exception derives from :class:`FsframeError`. Errors caused by bad data or bad
parameters also derive from :class:`ValueError`, so ``except ValueError`` keeps working in code
that does not know fsframe. Every message says what was wrong and how to get around it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "FsframeError",
    "DataError",
    "DataFileError",
    "SparseInputError",
    "InvalidOptionError",
    "UnknownComponentError",
    "InfeasibleParameterError",
    "IncompatibleComponentsError",
    "UnsupportedProblemError",
    "BackendUnavailableError",
    "SolverFailedError",
    "InfeasibleProblemError",
    "UnboundedProblemError",
    "PluginError",
    "NotFittedError",
    "FsframeWarning",
    "DataWarning",
    "ConvergenceWarning",
    "SeparationWarning",
    "SolverWarning",
]


class FsframeError(Exception):
    """Base class of every fsframe exception."""


class DataError(FsframeError, ValueError):
    """The data cannot be used: NaN/inf, wrong shapes, one class, empty, mismatched lengths."""


class DataFileError(DataError, OSError):
    """A data file is missing, unreadable, or not in the format it claims to be."""


class SparseInputError(DataError):
    """A scipy.sparse ``X`` reached a part that needs it dense: a formulation built on dense
    moments (the MPM's class covariances) or on a dense ``X`` (least squares, logistic: every
    formulation that does not declare ``sparse_input``; ``fsframe.method.sparse_input_formulations``
    lists them), a kernel map (``K(X, X_train)`` of sparse data is
    dense), a loop that reads the data itself, or centring. The message names the part and its
    reason; densify explicitly (``X.toarray()``) if the dense matrix fits in memory."""


class InvalidOptionError(FsframeError, ValueError):
    """A parameter has an invalid value or is not accepted by any component."""


class UnknownComponentError(InvalidOptionError, KeyError):
    """A method, formulation, surrogate, loop or backend name is not registered."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class InfeasibleParameterError(InvalidOptionError):
    """A parameter makes the problem infeasible for this data (e.g. an MPM bound ``delta``
    above the largest achievable worst-case bound). Carries ``parameter``, ``value`` and
    ``limit`` (the largest feasible value) for programs that want to retry."""

    def __init__(self, message: str, *, parameter: str, value: float, limit: float):
        super().__init__(message)
        self.parameter = parameter
        self.value = value
        self.limit = limit


class IncompatibleComponentsError(FsframeError, TypeError):
    """Components cannot work together (a loop needs a surrogate capability that is missing,
    a backend does not support the problem class). Lists every gap in one message."""


class UnsupportedProblemError(FsframeError, ValueError):
    """A Pyomo model uses something the compiler cannot express (integer variables,
    a non-convex or undeclared quadratic constraint, a nonlinear expression)."""


class BackendUnavailableError(FsframeError, ImportError):
    """A backend's Python package is not installed or cannot be loaded."""


class SolverFailedError(FsframeError):
    """A convex subproblem did not yield a usable solution (infeasible, unbounded, numerical
    failure, time or iteration limit). ``result`` holds the backend's :class:`SolveResult` and
    ``status`` its :class:`~fsframe.Status`. Raised by an outer loop, ``partial`` is the tuple
    ``(loop, history, last_good_iterate)``: the loop object, the :class:`~fsframe.loops.records.IterRecord`
    of every subproblem so far (the failed one last) and the last solved iterate (``None`` if the
    first subproblem failed); otherwise ``None``."""

    def __init__(self, message: str, *, result: Any = None, partial: Any = None):
        super().__init__(message)
        self.result = result
        self.partial = partial

    @property
    def status(self):
        return None if self.result is None else self.result.status

    @classmethod
    def of(cls, message: str, *, result: Any = None, partial: Any = None) -> "SolverFailedError":
        """The error for a failed solve ``result``: :class:`InfeasibleProblemError` or
        :class:`UnboundedProblemError` when the backend's claim is verified by fsframe
        (``result.claim.verified``, :func:`fsframe.backends.claims.judge_claim`), else a
        plain :class:`SolverFailedError` (whose message carries why a claim was not verified)."""
        claim = getattr(result, "claim", None)
        status = getattr(getattr(result, "status", None), "value", None)
        kind = cls
        if claim is not None and claim.verified:
            kind = {"infeasible": InfeasibleProblemError, "unbounded": UnboundedProblemError}.get(status, cls)
        return kind(message, result=result, partial=partial)


class InfeasibleProblemError(SolverFailedError):
    """A convex subproblem is infeasible, and fsframe verified the backend's claim (a Farkas
    certificate checked on the compiled problem; ``result.claim`` says what was measured). The
    claim is global when ``result.claim.radius`` is ``inf``; otherwise it promises only that no
    ``x`` with ``||x||_inf < result.claim.radius`` is feasible (exact arithmetic on the
    certificate), and the message says so (docs/backends.md). An unverified claim is a plain
    :class:`SolverFailedError` whose message says why."""


class UnboundedProblemError(SolverFailedError):
    """A convex subproblem is unbounded below, and fsframe verified the backend's claim (a
    direction of unbounded descent from a feasible point, checked on the compiled problem)."""


class PluginError(FsframeError):
    """A plugin is broken or two plugins register the same name."""


class NotFittedError(FsframeError, ValueError, AttributeError):
    """An estimator was used before ``fit``. (Bases in scikit-learn's order, so that
    ``fsframe.estimator`` can raise an error that is also ``sklearn.exceptions.NotFittedError``.)"""


class FsframeWarning(UserWarning):
    """Base class of fsframe warnings."""


class DataWarning(FsframeWarning):
    """Legal but awkward data: constant or duplicate features, tiny classes, n >> m,
    singular class covariances. Results may suffer; the message says how."""


class ConvergenceWarning(FsframeWarning):
    """An outer loop stopped at ``max_iter`` or its monitored objective rose."""


class SeparationWarning(ConvergenceWarning):
    """A reweighting loop (DCA, IRL1) met classes its iterate separates under a loss that vanishes
    only at infinity (logistic, multinomial): it stopped because the penalty no longer holds the
    model's scale (the next subproblem has no minimiser within a solver's reach; the support is
    the iterate's, the coefficients' scale arbitrary), or a subproblem after such an iterate was
    lost or inaccurate. Lower ``C`` (or ``alpha``), or use an EM / log method (docs/glm.md)."""


class SolverWarning(FsframeWarning):
    """A solver returned a solution that fsframe's own KKT check finds inaccurate."""
