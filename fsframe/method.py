"""Named methods (:class:`MethodSpec`), composition of components, and :func:`fit`."""

from __future__ import annotations

import time
import warnings
from typing import Any, Mapping

import attrs
import numpy as np
from numpy.typing import ArrayLike

from .enums import ProblemClass
from .backends.base import Backend, SolveOptions
from .dataset import Dataset, check_Xy
from .errors import (
    BackendUnavailableError,
    DataWarning,
    IncompatibleComponentsError,
    InvalidOptionError,
    UnknownComponentError,
)
from .formulation import Formulation, using_solver
from .kernels import EmpiricalKernelMap
from .loops.base import OuterLoop
from .plugins import get_registry
from .problem import Subproblem
from .results import FitResult
from .surrogates.base import Surrogate

__all__ = ["MethodSpec", "fit", "list_methods", "resolve", "Resolved", "select_backend"]


@attrs.frozen
class MethodSpec:
    """A named recipe: formulation + surrogate + loop + default parameters + reference.

    Parameters
    ----------
    name : str
        Registry key (``"fsv"``).
    formulation, loop : str
        Registered component names.
    surrogate : str or None
        ``None`` for loops that need none (``single`` with ``penalty="l2"``).
    defaults : mapping
        Parameter values (routed to the components like :func:`fit`'s keyword arguments;
        defaults that no chosen component accepts are dropped, so a user may swap a component).
    reference, description : str
    """

    name: str
    formulation: str
    loop: str
    surrogate: str | None = None
    defaults: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    reference: str = ""
    description: str = ""


FIT_OPTIONS = ("n_features", "backend", "time_limit", "backend_options", "verbose", "fast", "cone_form",
               "keep_model")
KERNEL_FIELDS = ("kernel", "sigma", "degree", "coef0")


def _fields(cls) -> list[str]:
    return [f.name for f in attrs.fields(cls) if f.init and not f.name.startswith("_")]


@attrs.frozen(eq=False)
class Resolved:
    """Components built from names and parameters, checked for compatibility."""

    method: str | None
    formulation: Formulation
    surrogate: Surrogate | None
    loop: OuterLoop
    kernel: EmpiricalKernelMap | None
    params: dict
    terms: frozenset
    problem_class: ProblemClass


def _reason(exc: Exception) -> str:
    """The message of a validation error (attrs' ``instance_of`` puts it first in ``args``)."""
    return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def _make(kind: str, cls, kwargs: dict):
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(
            f"invalid parameter for {kind} {getattr(cls, 'name', cls.__name__)!r}: {_reason(exc)}") from exc


def component_names(method: str | None, formulation: str | None, surrogate: str | None,
                    loop: str | None) -> tuple:
    """``(formulation, surrogate, loop)``: the names given, with a method's own filling the gaps
    (a method's surrogate only when ``surrogate`` is ``None``, so ``""``/``"none"`` drop it)."""
    if method is not None:
        spec = get_registry().get("method", method)
        formulation = formulation or spec.formulation
        loop = loop or spec.loop
        if surrogate is None:
            surrogate = spec.surrogate
    return formulation, surrogate, loop


def resolve(method: str | None = None, *, formulation: str | None = None, surrogate: str | None = None,
            loop: str | None = None, **params) -> Resolved:
    """Turn names and parameters into components, routing each parameter to the component that
    declares it (``C`` to the formulation, ``alpha`` to the surrogate, ``max_iter`` to the loop,
    ``sigma`` to the kernel map); ``kind__name`` (e.g. ``loop__tol``) routes explicitly.

    Raises
    ------
    UnknownComponentError
        an unknown method or component name;
    InvalidOptionError
        a parameter no component accepts, one that two accept, or an invalid value;
    IncompatibleComponentsError
        every gap between the components at once (missing surrogate capabilities, slot terms the
        formulation cannot build).
    """
    reg = get_registry()
    spec = None if method is None else reg.get("method", method)
    formulation, surrogate, loop = component_names(method, formulation, surrogate, loop)
    missing = [k for k, v in (("formulation", formulation), ("loop", loop)) if v is None]
    if missing:
        raise InvalidOptionError(f"give a method= or both formulation= and loop= (missing {missing})")
    if surrogate in ("none", ""):
        surrogate = None
    classes = {
        "formulation": reg.get("formulation", formulation),
        "surrogate": None if surrogate is None else reg.get("surrogate", surrogate),
        "loop": reg.get("loop", loop),
    }
    owners = {kind: set(_fields(cls)) for kind, cls in classes.items() if cls is not None}
    owners["kernel"] = set(KERNEL_FIELDS)
    kwargs: dict[str, dict] = {kind: {} for kind in owners}

    def route(key, value, strict):
        if "__" in key:
            kind, name = key.split("__", 1)
            if kind not in owners or name not in owners[kind]:
                if strict:
                    raise InvalidOptionError(
                        f"parameter {key!r}: {kind!r} has no parameter {name!r}"
                        + (f"; it accepts {sorted(owners[kind])}" if kind in owners else
                           f"; prefixes are {sorted(owners)}"))
                return
            kwargs[kind][name] = value
            return
        matches = [kind for kind, names in owners.items() if key in names]
        if not matches:
            if strict:
                valid = {k: sorted(v) for k, v in owners.items()}
                raise InvalidOptionError(
                    f"unknown parameter {key!r} for method {method!r} ({formulation} + {surrogate} + {loop}); "
                    f"accepted: {valid} and fit options {list(FIT_OPTIONS)}")
            return
        if len(matches) > 1:
            raise InvalidOptionError(
                f"parameter {key!r} is accepted by {matches}; write it as "
                + " or ".join(f"{m}__{key}" for m in matches))
        kwargs[matches[0]][key] = value

    merged: dict = {}
    if spec is not None:
        for key, value in spec.defaults.items():
            route(key, value, strict=False)
            merged[key] = value
    for key, value in params.items():
        route(key, value, strict=True)
        merged[key] = value

    f = _make("formulation", classes["formulation"], kwargs["formulation"])
    s = None if classes["surrogate"] is None else _make("surrogate", classes["surrogate"], kwargs["surrogate"])
    lp = _make("loop", classes["loop"], kwargs["loop"])
    kmap = None
    kw = dict(kwargs["kernel"])
    kind = kw.pop("kernel", None)
    if kind is not None:
        kmap = _make("the kernel map", EmpiricalKernelMap, {"kernel": kind, **kw})
    elif kw:
        raise InvalidOptionError(f"kernel parameters {sorted(kw)} given without kernel= (rbf, linear, poly)")

    gaps = []
    miss = lp.missing(s)
    if miss:
        who = "no surrogate" if s is None else f"surrogate {s.name!r} ({type(s).__name__})"
        gaps.append(f"{who} is not compatible with loop {lp.name!r}: it must provide {', '.join(miss)}")
    terms = lp.terms(s) if not miss else frozenset()
    if terms - f.slot_terms:
        gaps.append(f"formulation {f.name!r} cannot build slot terms {sorted(terms - f.slot_terms)} that loop "
                    f"{lp.name!r} needs (it builds {sorted(f.slot_terms)})")
    if not f.sparse and s is not None:
        gaps.append(f"formulation {f.name!r} has no sparsity penalty (every feature keeps a weight), so surrogate "
                    f"{s.name!r} would penalise nothing: run it with surrogate=None and loop='single'")
    if gaps:
        raise IncompatibleComponentsError("; ".join(gaps))
    return Resolved(method, f, s, lp, kmap, merged, terms, f.problem_class(terms))


def select_backend(name: str | Backend, problem_class: ProblemClass, *, quadratic: bool = False,
                   time_limit: float | None = None) -> Backend:
    """A backend instance: by name, or for ``"auto"`` the preferred available backend that
    supports ``problem_class`` — HiGHS for LP/QP, ECOS for SOCP — skipping, when the subproblem
    has a ``quadratic`` objective, backends that only reformulate it (an SOCP with a quadratic
    objective, e.g. MPM + EM, goes to Clarabel), and, when a ``time_limit`` is given, backends
    that cannot enforce one."""
    reg = get_registry()
    if isinstance(name, Backend):
        backend = name
    elif name == "auto":
        cands = sorted((e.obj for e in reg.all("backend")), key=lambda c: (c.preference, c.name))
        usable = [c for c in cands if problem_class in c.supports and c.available()]
        if not usable:
            reasons = {c.name: (c.available().reason or f"does not support {problem_class.value}") for c in cands}
            raise BackendUnavailableError(f"no available backend solves {problem_class.value} problems: {reasons}")
        preferred = [c for c in usable if (c.native_quadratic or not quadratic)
                     and (c.honours_time_limit or time_limit is None)]
        backend = (preferred or usable)[0]()
    else:
        backend = reg.get("backend", name)()
    if problem_class not in backend.supports:
        raise IncompatibleComponentsError(
            f"backend {backend.name!r} cannot solve {problem_class.value} subproblems (it supports "
            f"{sorted(p.value for p in backend.supports)}); use backend='auto'")
    backend.require()
    return backend


def make_options(*, time_limit=None, verbose=False, backend_options=None) -> SolveOptions:
    """:class:`SolveOptions` from :func:`fit`'s keywords; a bad value is an
    :class:`~fsframe.errors.InvalidOptionError` naming it."""
    try:
        return SolveOptions(time_limit=None if time_limit is None else float(time_limit), verbose=verbose,
                            backend_options=backend_options or {})
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(f"invalid solver option: {_reason(exc)}") from exc


def list_methods() -> list[dict]:
    """Every registered method: name, components, defaults, reference and providing plugin."""
    reg = get_registry()
    out = []
    for e in reg.all("method"):
        spec = e.obj
        out.append({"name": spec.name, "formulation": spec.formulation, "surrogate": spec.surrogate,
                    "loop": spec.loop, "defaults": dict(spec.defaults), "reference": spec.reference,
                    "description": spec.description, "plugin": e.plugin, "distribution": e.distribution})
    return out


def _binary_fit(res: Resolved, X, y_pm, backend: Backend, options: SolveOptions, n_features, fast, cone_form,
                keep_model) -> dict:
    with using_solver(backend, options):  # formulations' auxiliary solves use the fit's backend
        info = dict(res.formulation.validate(X, y_pm) or {})
        sub = Subproblem(res.formulation, X, y_pm, res.terms, backend, options, fast=fast, cone_form=cone_form)
    try:
        out = res.loop.run(sub, res.surrogate, n_features=n_features)
    finally:
        sub.close()
    info.update(sub.built.info)
    info.update(build_seconds=sub.build_seconds, compile_seconds=sub.compile_seconds,
                solve_seconds=float(sum(r.seconds for r in out.history)), stop_reason=out.reason,
                backend_version=out.iterate.result.backend_version, **(out.selection or {}))
    if keep_model:
        info["model"] = sub.compiled.sync_model()  # holds the last iteration's slot weights
        info["compiled"] = sub.compiled
    coef = out.coef.reshape(sub.built.coef_shape)
    intercept = out.iterate.intercept
    intercept = float(intercept[0]) if intercept.size == 1 else intercept
    return dict(coef=coef, intercept=intercept, support=out.support, objective=out.objective, n_iter=out.n_iter,
                converged=out.converged, history=out.history, statuses=out.statuses, monotone=out.monotone,
                info=info)


def fit(
    X: ArrayLike | Dataset,
    y: ArrayLike | None = None,
    method: str | None = None,
    *,
    formulation: str | None = None,
    surrogate: str | None = None,
    loop: str | None = None,
    backend: str | Backend = "auto",
    n_features: int | None = None,
    time_limit: float | None = None,
    backend_options: Mapping | None = None,
    verbose: bool = False,
    fast: bool = True,
    cone_form: str = "substitute",
    keep_model: bool = False,
    **params,
) -> FitResult:
    """Select features by (approximate) L0 minimisation.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), or Dataset
    y : array, shape (n_samples,)
        Any labels; two classes fit one binary model, more fit one-vs-rest (binary formulations)
        with the union of supports.
    method : str, optional
        A registered method (``fsframe.list_methods()``). Without it, give ``formulation=``,
        ``loop=`` and (if the loop needs one) ``surrogate=``: any compatible triple runs.
    backend : str
        ``"auto"`` (HiGHS for LP/QP, ECOS for SOCP) or a registered backend name.
    n_features : int, optional
        Select exactly this many features (002 §3.1; see :func:`fsframe.loops.select_exactly`).
    time_limit, backend_options, verbose
        Passed to the solver (see :class:`fsframe.backends.SolveOptions`).
    fast, cone_form
        Compiler paths (see :func:`fsframe.compiler.compile_model`).
    keep_model : bool
        Keep the Pyomo model (holding the last iteration's slot weights) and the compiled
        problem in ``result.info``.
    **params
        Component parameters (``C``, ``alpha``, ``eps``, ``p``, ``delta``, ``max_iter``, ``tol``,
        ``kernel``, ``sigma``, ...), routed by name; ``kind__name`` routes explicitly.

    Returns
    -------
    FitResult

    The inputs are never modified.
    """
    t_start = time.perf_counter()
    if isinstance(X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        data = X
        Xa, ya = np.array(data.X), np.array(data.y)
        names = data.feature_names
    else:
        Xa, ya = check_Xy(X, y, warn=True)
        names = None
    res = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop, **params)
    if n_features is not None:
        if not isinstance(n_features, (int, np.integer)) or isinstance(n_features, bool) or n_features < 1:
            raise InvalidOptionError(f"n_features must be a positive integer, got {n_features!r}")
        n_groups = Xa.shape[0] if res.kernel is not None else Xa.shape[1]
        if n_features > n_groups:
            raise InvalidOptionError(f"n_features={n_features} exceeds the {n_groups} available features")
    options = make_options(time_limit=time_limit, verbose=verbose, backend_options=backend_options)
    be = select_backend(backend, res.problem_class, quadratic="quad" in res.terms, time_limit=time_limit)
    be.check_options(options)
    transform = None
    Z = Xa
    if res.kernel is not None:
        transform = res.kernel.fit(Xa)
        Z = transform.transform(Xa)
        names = None
    classes = tuple(np.unique(ya).tolist())
    if Z.shape[1] > 5 * Z.shape[0]:
        warnings.warn(f"n_features={Z.shape[1]} is much larger than n_samples={Z.shape[0]}: many sparse "
                      "solutions fit the training data equally well; check the selection's stability",
                      DataWarning, stacklevel=2)
    common = dict(method=res.method, formulation=res.formulation, surrogate=res.surrogate, loop=res.loop,
                  backend=be.name, params=res.params, transform=transform, feature_names=names)
    if len(classes) == 2 or res.formulation.multiclass == "native":
        if len(classes) == 2:
            y_code = np.where(ya == classes[1], 1.0, -1.0)
        else:
            y_code = np.searchsorted(np.asarray(classes), ya)
        parts = _binary_fit(res, Z, y_code, be, options, n_features, fast, cone_form, keep_model)
        parts["info"]["seconds"] = time.perf_counter() - t_start
        return FitResult(classes=classes, **parts, **common)
    # one-vs-rest
    per = []
    for c in classes:
        y_pm = np.where(ya == c, 1.0, -1.0)
        parts = _binary_fit(res, Z, y_pm, be, options, n_features, fast, cone_form, keep_model)
        per.append(FitResult(classes=("rest", c), **parts, **common))
    supports = np.array([r.support for r in per])
    support = supports.any(axis=0)
    coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    if n_features is not None and support.sum() > n_features:
        scale = np.max(np.abs(coefs), axis=1, keepdims=True)
        score = np.max(np.abs(coefs) / np.where(scale > 0, scale, 1.0), axis=0)
        keep = np.argsort(-score, kind="stable")[:n_features]
        support = np.zeros_like(support)
        support[keep] = True
        coefs[:, ~support] = 0.0
        # each class's objective stays that of its chosen iterate (as for the binary cut); the
        # groups this cross-class cut removes are counted with the ones the binary rule dropped
        per = [attrs.evolve(r, coef=coefs[i], support=r.support & support,
                            info={**r.info, "n_features_dropped": r.info.get("n_features_dropped", 0)
                                  + int(np.count_nonzero(r.support & ~support))})
               for i, r in enumerate(per)]
    info = {"seconds": time.perf_counter() - t_start,
            "build_seconds": sum(r.info["build_seconds"] for r in per),
            "compile_seconds": sum(r.info["compile_seconds"] for r in per),
            "solve_seconds": sum(r.info["solve_seconds"] for r in per),
            "strategy": "one-vs-rest"}
    objs = [r.objective for r in per]
    return FitResult(
        coef=coefs, intercept=np.array([r.intercept for r in per], dtype=float), support=support,
        objective=None if any(o is None for o in objs) else float(sum(objs)),
        n_iter=max(r.n_iter for r in per), converged=all(r.converged for r in per),
        history=tuple(h for r in per for h in r.history), statuses=tuple(s for r in per for s in r.statuses),
        monotone=all(r.monotone for r in per), classes=classes, info=info, per_class=tuple(per), **common)
