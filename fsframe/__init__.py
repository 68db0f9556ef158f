"""fsframe: embedded feature selection by (approximate) L0-norm minimisation.

Compose a classification formulation, an L0 surrogate and an outer loop; a method plugin
assembles the convex subproblem as a Pyomo model; an interchangeable backend solves it::

    import fsframe
    result = fsframe.fit(X, y, method="fsv", C=1.0, alpha=5.0)
    result.selected, result.predict(X_test)
"""

from .enums import SOLUTION_PRESENT, ProblemClass, Status
from .hookspecs import hookimpl
from .formulation import BuiltModel, Formulation
from .dataset import Dataset
from .results import FitResult
from .method import MethodInfo, MethodSpec, list_methods, resolve
from .fitting import fit
from .path import PathResult, path
from .io import load_dataset, make_synthetic
from .plugins import get_registry, select_backend
from .kernels import DataTransform
from .surrogates.base import Surrogate
from .loops.base import OuterLoop
from .backends.base import Backend, SolveOptions, SolveResult
from .evaluation import CVResult, CompareResult, compare, cross_validate
from . import errors

__all__ = [
    "path",
    "PathResult",
    "fit",
    "list_methods",
    "list_components",
    "resolve",
    "FitResult",
    "MethodSpec",
    "MethodInfo",
    "DataTransform",
    "select_backend",
    "Dataset",
    "load_dataset",
    "make_synthetic",
    "Formulation",
    "BuiltModel",
    "Surrogate",
    "OuterLoop",
    "Backend",
    "SolveOptions",
    "SolveResult",
    "ProblemClass",
    "Status",
    "SOLUTION_PRESENT",
    "hookimpl",
    "errors",
    "get_registry",
    "cross_validate",
    "compare",
    "CVResult",
    "CompareResult",
    "FSSelector",
]


def __getattr__(name):
    # the scikit-learn estimator imports sklearn (~0.2 s): load it on first use only
    if name == "FSSelector":
        from .estimator import FSSelector

        return FSSelector
    raise AttributeError(f"module 'fsframe' has no attribute {name!r}")

try:
    from importlib.metadata import version as _version

    __version__ = _version("fsframe")
except Exception:  # pragma: no cover - running from a source tree
    __version__ = "0+unknown"


def list_components(kind: str | None = None) -> list[dict]:
    """Registered components (kind, name, plugin, distribution, version); all kinds by default."""
    reg = get_registry()
    kinds = [kind] if kind else list(reg.entries)
    return [{"kind": e.kind, "name": e.name, "plugin": e.plugin, "distribution": e.distribution,
             "version": e.version} for k in kinds for e in reg.all(k)]
