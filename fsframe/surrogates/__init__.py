"""Built-in L0 surrogates. Registered through :func:`fsframe_register_surrogates`."""

from ..hookspecs import hookimpl
from .base import CAPABILITIES, PROVIDES, DCSplit, Surrogate
from .exp import ExpSurrogate
from .log import LogSurrogate
from .lp import L0Surrogate, L1Surrogate, LpSurrogate

__all__ = [
    "Surrogate", "DCSplit", "CAPABILITIES", "PROVIDES",
    "ExpSurrogate", "LogSurrogate", "LpSurrogate", "L0Surrogate", "L1Surrogate",
]


@hookimpl
def fsframe_register_surrogates():
    return [ExpSurrogate, LogSurrogate, LpSurrogate, L0Surrogate, L1Surrogate]
