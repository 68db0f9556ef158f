"""fsframe: embedded feature selection by (approximate) L0-norm minimisation.

Compose a classification formulation, an L0 surrogate and an outer loop; a method plugin
assembles the convex subproblem as a Pyomo model; an interchangeable backend solves it::

    import fsframe
    result = fsframe.fit(X, y, method="fsv", C=1.0, alpha=5.0)
    result.selected, result.predict(X_test)

``import fsframe`` is light: every public name is imported from its module on first use
(:pep:`562` module ``__getattr__``), so Pyomo, SciPy, scikit-learn and the solvers load only
when a fit, a catalogue look-up or an estimator needs them (docs/performance.md, "Start-up").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from ._lazy import lazy_attribute, lazy_dir

if TYPE_CHECKING:  # what static tools see; at run time these load lazily (see __getattr__)
    from .backends.base import Backend, SolveOptions, SolveResult
    from .dataset import Dataset
    from .auxiliary import AuxSolver
    from .enums import SOLUTION_PRESENT, ProblemClass, Status
    from .estimator import FSRegressor, FSSelector
    from .tuning import FSRegressorCV, FSSelectorCV
    from .evaluation import CompareResult, CVResult, compare, cross_validate
    from .fitting import fit
    from .paths import PathResult, path
    from .formulation import BuiltModel, Formulation
    from .hookspecs import hookimpl
    from .io import load_dataset, make_synthetic
    from .kernels import DataTransform
    from .loops.base import OuterLoop
    from .method import MethodInfo, MethodSpec, list_methods, resolve
    from .plugins import get_registry, select_backend
    from .results import FitResult
    from .surrogates.base import Surrogate

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
    "AuxSolver",
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
    "FSRegressor",
    "FSSelectorCV",
    "FSRegressorCV",
]

#: public name -> the module (relative to this package) that defines it; loaded on first access
_LAZY: dict[str, str] = {
    "fit": ".fitting",
    "path": ".paths",
    "PathResult": ".paths",
    "list_methods": ".method",
    "resolve": ".method",
    "MethodSpec": ".method",
    "MethodInfo": ".method",
    "FitResult": ".results",
    "DataTransform": ".kernels",
    "select_backend": ".plugins",
    "AuxSolver": ".auxiliary",
    "get_registry": ".plugins",
    "Dataset": ".dataset",
    "load_dataset": ".io",
    "make_synthetic": ".io",
    "Formulation": ".formulation",
    "BuiltModel": ".formulation",
    "Surrogate": ".surrogates.base",
    "OuterLoop": ".loops.base",
    "Backend": ".backends.base",
    "SolveOptions": ".backends.base",
    "SolveResult": ".backends.base",
    "ProblemClass": ".enums",
    "Status": ".enums",
    "SOLUTION_PRESENT": ".enums",
    "hookimpl": ".hookspecs",
    "cross_validate": ".evaluation",
    "compare": ".evaluation",
    "CVResult": ".evaluation",
    "CompareResult": ".evaluation",
    "FSSelector": ".estimator",
    "FSRegressor": ".estimator",
    "FSSelectorCV": ".tuning",
    "FSRegressorCV": ".tuning",
}


def __getattr__(name: str):
    """Import a public name (or a submodule) on first access and keep it (:pep:`562`)."""
    if name == "__version__":
        from ._version import fsframe_version

        globals()[name] = fsframe_version()
        return globals()[name]
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, [*__all__, "__version__"])


def list_components(kind: str | None = None) -> list[dict]:
    """Registered components (kind, name, plugin, distribution, version); all kinds by default."""
    from .plugins import get_registry

    reg = get_registry()
    kinds = [kind] if kind else list(reg.entries)
    return [{"kind": e.kind, "name": e.name, "plugin": e.plugin, "distribution": e.distribution,
             "version": e.version} for k in kinds for e in reg.all(k)]
