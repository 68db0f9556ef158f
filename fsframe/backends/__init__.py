"""Built-in solver backends. Registered through :func:`fsframe_register_backends`."""

from ..hookspecs import hookimpl
from .base import Availability, Backend, BackendSession, Certificate, SolveOptions, SolveResult, certify
from .clarabel import ClarabelBackend
from .compile import CompiledModel, ProblemData, compile_model
from .ecos import EcosBackend
from .highs import HighsBackend

__all__ = ["Backend", "BackendSession", "SolveOptions", "SolveResult", "Availability", "Certificate",
           "certify", "ProblemData", "CompiledModel", "compile_model", "HighsBackend", "EcosBackend",
           "ClarabelBackend"]


@hookimpl
def fsframe_register_backends():
    return [HighsBackend, EcosBackend, ClarabelBackend]
