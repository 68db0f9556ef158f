"""Built-in solver backends. Registered through :func:`fsframe_register_backends`."""

from ..canonical import ProblemData
from ..hookspecs import hookimpl
from .base import Availability, Backend, BackendSession, Certificate, SolveOptions, SolveResult, certify
from .clarabel import ClarabelBackend
from .ecos import EcosBackend
from .highs import HighsBackend

__all__ = ["Backend", "BackendSession", "SolveOptions", "SolveResult", "Availability", "Certificate",
           "certify", "ProblemData", "HighsBackend", "EcosBackend",
           "ClarabelBackend"]


@hookimpl
def fsframe_register_backends():
    return [HighsBackend, EcosBackend, ClarabelBackend]
