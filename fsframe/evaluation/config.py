"""One method configuration as every fold receives it: the parameters a method accepts, their
resolution and validation before any fit, and the components' description."""

from __future__ import annotations

from typing import Any, Mapping

import attrs
import numpy as np

from ..errors import InvalidOptionError
from ..method import FIT_OPTIONS, component_names, parameter_names, resolve, select_backend, transform_parameters
from ..plugins import get_registry
from .serialize import to_jsonable
from .splits import _check_int

__all__ = ["accepted_parameters", "component_dict", "format_components"]


def accepted_parameters(method: str | None = None, *, formulation: str | None = None, surrogate: str | None = None,
                        loop: str | None = None) -> dict[str, list[str]]:
    """The parameters a method (or component triple) accepts, by owner: ``formulation``,
    ``surrogate``, ``loop``, ``kernel`` and ``fit`` (options of :func:`fsframe.fit`)."""
    reg = get_registry()
    formulation, surrogate, loop = component_names(method, formulation, surrogate, loop)
    out: dict[str, list[str]] = {}
    for kind, name in (("formulation", formulation), ("surrogate", surrogate), ("loop", loop)):
        if name not in (None, "", "none"):
            out[kind] = sorted(parameter_names(reg.get(kind, name)))
    out["kernel"] = transform_parameters()
    out["fit"] = [o for o in FIT_OPTIONS if o != "n_features"]
    return out


def _accepts(acc: Mapping[str, list[str]], key: str) -> bool:
    if "__" in key:
        kind, name = key.split("__", 1)
        return name in acc.get(kind, ())
    return any(key in names for names in acc.values())


@attrs.frozen
class _Config:
    """One method configuration: what :func:`fsframe.fit` receives in every fold."""

    label: str
    method: str | None
    formulation: str | None
    surrogate: str | None
    loop: str | None
    params: dict  # component parameters
    fit_options: dict  # backend, time_limit, ...
    n_features: int | None
    scale: str
    retrain: Any
    retrain_C: float
    groups: str  # "features" or "samples" (kernel map)
    resolved_params: dict
    components: dict
    backend: str
    extras: Any = None  # a study protocol's additions (fsframe.evaluation.protocols.Extras)
    task: str = "classification"  # or "regression": the formulation fits a real target (Formulation.task)
    cell_versions: dict = attrs.field(factory=dict)  # {role: cell_version} of the components above 0


def cell_versions(*components) -> dict:
    """``{role: version}`` of the components (formulation, surrogate, loop, kernel, in that order)
    whose class sets ``cell_version`` above 0: a plugin bumps it when a change of its code changes
    its results, so that study cells computed before the change get new keys and are recomputed
    (docs/experiments.md). Components at 0 add nothing, so their keys are as before."""
    roles = ("formulation", "surrogate", "loop", "kernel")
    out = {}
    for role, comp in zip(roles, components):
        version = int(getattr(comp, "cell_version", 0) or 0) if comp is not None else 0
        if version:
            out[role] = version
    return out


def _make_config(label, spec: Mapping[str, Any], *, n_features, scale, retrain, retrain_C, n_columns, n_samples,
                 n_classes: int = 2, task: str | None = None, dataset: str = "data") -> _Config:
    """A validated configuration; with ``task`` (the data set's: ``"classification"`` or
    ``"regression"``), a method of the other task is refused naming both."""
    # the fit driver loads the compiler (and Pyomo): not for `fsframe methods`
    from ..fitting import check_classes, is_regression, make_options, task_mismatch

    spec = dict(spec)
    method = spec.pop("method", None)
    formulation = spec.pop("formulation", None)
    surrogate = spec.pop("surrogate", None)
    loop = spec.pop("loop", None)
    if "n_features" in spec:
        nf = spec.pop("n_features")
        if n_features is not None and nf != n_features:
            raise InvalidOptionError(f"{label}: n_features given twice ({nf} and {n_features})")
        n_features = nf
    fit_options = {k: spec.pop(k) for k in list(spec) if k in FIT_OPTIONS}
    if fit_options.pop("keep_model", False):
        raise InvalidOptionError("keep_model=True is not supported in cross-validation (models are not returned)")
    res = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop, **spec)
    if task is not None and is_regression(res.formulation) != (task == "regression"):
        raise InvalidOptionError(task_mismatch(label, is_regression(res.formulation), name=dataset,
                                               n_classes=n_classes))
    check_classes(res, n_classes)
    options = make_options(time_limit=fit_options.get("time_limit"), verbose=fit_options.get("verbose", False),
                           backend_options=fit_options.get("backend_options"))
    backend = select_backend(fit_options.get("backend", "auto"), res.problem_class, quadratic="quad" in res.terms,
                             time_limit=fit_options.get("time_limit"))
    backend.check_options(options)
    groups = "samples" if res.kernel is not None else "features"
    if n_features is not None:
        n_features = _check_int("n_features", n_features, 1)
        limit = n_columns if groups == "features" else n_samples
        if n_features > limit:
            raise InvalidOptionError(f"n_features={n_features} exceeds the {limit} available {groups}")
    if retrain is not None and groups == "samples":
        raise InvalidOptionError("retrain= needs selected features, but a kernel map selects training samples")
    components = {"formulation": component_dict(res.formulation), "surrogate": component_dict(res.surrogate),
                  "loop": component_dict(res.loop), "kernel": component_dict(res.kernel)}
    return _Config(label=label, method=method, formulation=formulation, surrogate=surrogate, loop=loop, params=spec,
                   fit_options=fit_options, n_features=n_features, scale=scale, retrain=retrain,
                   retrain_C=retrain_C, groups=groups, resolved_params=dict(res.params), components=components,
                   backend=backend.name, task="regression" if is_regression(res.formulation) else "classification",
                   cell_versions=cell_versions(res.formulation, res.surrogate, res.loop, res.kernel))


def component_dict(obj) -> dict | None:
    """``{"name": ..., <every init parameter>: value}`` of a component instance (attrs class)."""
    if obj is None:
        return None
    out = {"name": getattr(obj, "name", None) or getattr(obj, "kernel", None) or type(obj).__name__}
    if attrs.has(type(obj)):
        for f in attrs.fields(type(obj)):
            v = getattr(obj, f.name)
            if f.init and f.repr and not f.name.startswith("_") and _is_parameter(v):
                out[f.name] = to_jsonable(v)
    return out


def _is_parameter(v) -> bool:
    """Scalars and short lists of scalars are parameters; arrays (a fitted map's training data) are not."""
    scalar = (str, int, float, bool, type(None), np.generic)
    if isinstance(v, scalar):
        return True
    if isinstance(v, (list, tuple)) and len(v) <= 16:
        return all(isinstance(x, scalar) for x in v)
    return isinstance(v, Mapping)


_LOOP_ALWAYS = ("max_iter", "tol")


def format_components(components: Mapping[str, dict | None], *, defaults: bool = False,
                      resolved: Mapping[str, Any] | None = None) -> str:
    """``hinge(C=1.0) + exp(alpha=5.0) + reweighted-l1(max_iter=20, tol=1e-05)``: formulation
    and surrogate with every parameter; the loop with ``max_iter``, ``tol`` and the parameters
    that differ from its defaults (all of them with ``defaults=True``). ``resolved`` gives the
    values used for parameters left to the data (``None``), e.g. ``{"delta": 0.6875}`` from
    ``FitResult.facts``: ``mpm(delta=0.6875, ...)`` instead of ``mpm(delta=None, ...)``."""
    resolved = resolved or {}
    reg = get_registry()
    parts = []
    for kind in ("formulation", "surrogate", "loop", "kernel"):
        c = components.get(kind)
        if c is None:
            continue
        items = {k: v for k, v in c.items() if k != "name"}
        shown = {k: _resolved_text(k, resolved) if v is None else repr(v) for k, v in items.items()}
        if kind == "loop" and not defaults:
            try:
                cls = reg.get("loop", c["name"])
                dflt = {f.name: f.default for f in attrs.fields(cls) if f.init}
            except Exception:
                dflt = {}
            items = {k: v for k, v in items.items() if k in _LOOP_ALWAYS or dflt.get(k, object()) != v}
        if kind == "kernel":
            parts.append("kernel " + c["name"] + "(" + ", ".join(f"{k}={shown[k]}" for k in items if k != "kernel") + ")")
            continue
        parts.append(f"{c['name']}(" + ", ".join(f"{k}={shown[k]}" for k in items) + ")")
    return " + ".join(parts)


def _resolved_text(name: str, resolved: Mapping[str, Any]) -> str:
    """The value used for a parameter left to the data: one value, the same for every class of
    a one-vs-rest fit (keys ``name[class]``), "<per class>", or ``None`` when nothing filled it."""
    if name in resolved:
        v = resolved[name]
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    per_class = {v for k, v in resolved.items() if k.startswith(name + "[")}
    if len(per_class) == 1:
        return _resolved_text(name, {name: per_class.pop()})
    return "<per class>" if per_class else "None"

