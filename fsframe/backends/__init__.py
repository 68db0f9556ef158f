"""Built-in solver backends (registered through :func:`fsframe_register_backends`) and the names a
third-party backend needs: :class:`Backend`, :class:`BackendSession` (the template every solve
goes through), :class:`RawSolution`, :class:`SolveFailure` (docs/backends.md)."""

from ..canonical import ProblemData
from ..hookspecs import hookimpl
from .base import (Availability, Backend, BackendSession, Certificate, RawSolution, SolveFailure, SolveOptions,
                   SolveResult, certify)
from .clarabel import ClarabelBackend
from .ecos import EcosBackend
from .highs import HighsBackend

__all__ = ["Backend", "BackendSession", "SolveOptions", "SolveResult", "Availability", "Certificate",
           "certify", "RawSolution", "SolveFailure", "ProblemData", "HighsBackend", "EcosBackend",
           "ClarabelBackend"]


@hookimpl
def fsframe_register_backends():
    return [HighsBackend, EcosBackend, ClarabelBackend]
