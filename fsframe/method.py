"""Named methods (:class:`MethodSpec`) and the composition of components: :func:`resolve` turns
a method name, component names and parameters into checked components; :func:`list_methods`
lists the registered methods. The fit driver that runs them is :mod:`fsframe.fitting`."""

from __future__ import annotations

import weakref
from typing import Any, Mapping

import attrs
from attrs.validators import instance_of, optional

from .enums import ProblemClass
from .errors import IncompatibleComponentsError, InvalidOptionError, SparseInputError
from .formulation import Formulation
from .kernels import DataTransform
from .loops.base import OuterLoop
from .plugins import declare_kind, did_you_mean, get_registry, select_backend
from .surrogates.base import Surrogate

__all__ = [
    "FIT_OPTIONS",
    "MethodInfo",
    "MethodSpec",
    "Resolved",
    "component_names",
    "list_methods",
    "parameter_names",
    "resolve",
    "select_backend",
    "sparse_input_formulations",
    "transform_parameters",
]

def _name(instance, attribute, value):
    """attrs validator: a non-empty string (a registry key)."""
    if not isinstance(value, str) or not value:
        raise TypeError(f"MethodSpec {attribute.name!r} must be a non-empty string (a registered name), got {value!r}")


def _string_keys(instance, attribute, value):
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        raise TypeError(f"MethodSpec defaults are keyed by parameter names (strings), got {bad!r}")


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
    sparsity : str or None
        The method's *sparsity parameter*: the one parameter whose value moves the support
        monotonically enough to be gridded automatically (:func:`fsframe.path` without a grid,
        :class:`fsframe.tuning.FSSelectorCV`): a component parameter (``"C"``, ``"delta"``) whose
        start the formulation derives from the data (:mod:`fsframe.grids`), or ``"n_features"``
        for methods that select exactly ``r`` features. ``None``: no automatic grid (a bound
        search that chooses its parameter itself, a model without a penalty).
    """

    name: str = attrs.field(validator=_name)
    formulation: str = attrs.field(validator=_name)
    loop: str = attrs.field(validator=_name)
    surrogate: str | None = attrs.field(default=None, validator=optional(instance_of(str)))
    defaults: Mapping[str, Any] = attrs.field(factory=dict, converter=dict, validator=_string_keys)
    reference: str = attrs.field(default="", validator=instance_of(str))
    description: str = attrs.field(default="", validator=instance_of(str))
    sparsity: str | None = attrs.field(default=None, validator=optional(instance_of(str)))


declare_kind("method", "fsframe_register_methods", MethodSpec, instances=True)

#: Keyword arguments of :func:`fsframe.fit` that are not component parameters.
FIT_OPTIONS = ("n_features", "backend", "time_limit", "backend_options", "verbose", "fast", "cone_form",
               "keep_model")


def parameter_names(cls) -> list[str]:
    """The parameters a component class (a frozen attrs class) accepts: its public init fields
    (read once per class: an attrs class's fields are fixed when it is made)."""
    try:
        names = _PARAMETER_NAMES[cls]
    except KeyError:
        names = _PARAMETER_NAMES[cls] = tuple(f.name for f in attrs.fields(cls) if f.init
                                              and not f.name.startswith("_") and f.name != "X_train")
    except TypeError:  # a class that cannot be weakly referenced: read each time
        names = tuple(f.name for f in attrs.fields(cls) if f.init and not f.name.startswith("_")
                      and f.name != "X_train")
    return list(names)


_PARAMETER_NAMES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
""":func:`parameter_names` per component class (a class made at run time is dropped with it)."""


def _transform_for(reg, kernel: str):
    """The registered transform class implementing ``kernel=``, or None (a
    :class:`~fsframe.errors.PluginError` when two third-party transforms claim it)."""
    return reg.by_alias("transform", kernel)


def _kernel_names(reg) -> tuple:
    return tuple(reg.aliases("transform"))


def transform_parameters(kernel: str | None = None) -> list[str]:
    """The parameters routed to the data transform: ``kernel`` and those of the transform
    implementing ``kernel`` (of every registered transform when ``kernel`` is None)."""
    reg = get_registry()
    classes = [e.obj for e in reg.all("transform")] if kernel is None else [_transform_for(reg, kernel)]
    names = {"kernel"} | {n for cls in classes if cls is not None for n in parameter_names(cls)}
    return ["kernel"] + sorted(names - {"kernel"})


@attrs.frozen(eq=False)
class Resolved:
    """Components built from names and parameters, checked for compatibility."""

    method: str | None
    formulation: Formulation
    surrogate: Surrogate | None
    loop: OuterLoop
    kernel: DataTransform | None
    params: dict
    terms: frozenset
    problem_class: ProblemClass

    def check_sparse_input(self, shape: tuple | None = None) -> None:
        """Refuse a scipy.sparse ``X`` (of ``shape``) for these components, before anything is
        built: a :class:`~fsframe.errors.SparseInputError` naming every part that needs ``X``
        dense and why (the formulation's :meth:`~fsframe.Formulation.needs_dense`, a loop that
        reads the data itself, a kernel map) and what densifying would cost."""
        why = []
        reason = self.formulation.needs_dense()
        if reason:
            why.append(f"formulation {self.formulation.name!r} needs X dense: {reason}")
        if not self.loop.sparse_input:
            why.append(f"loop {self.loop.name!r} reads the training data itself (as a dense matrix), not only "
                       "through the convex subproblem")
        if self.kernel is not None:
            kind = getattr(self.kernel, "kernel", type(self.kernel).__name__)
            why.append(f"the kernel map ({kind!r}) makes K(X, X_train) and keeps the training "
                       "samples, both dense: a kernel map of sparse data is dense")
        if why:
            who = f"method {self.method!r}" if self.method else "these components"
            size = "" if shape is None else f" ({shape[0]} x {shape[1]} float64: {8 * shape[0] * shape[1] / 1e6:.3g} MB)"
            takes, refused = sparse_input_formulations()
            offer = "; ".join(f"{f}: {', '.join(ms)}" for f, ms in takes.items() if ms)
            raise SparseInputError(
                f"X is a scipy.sparse matrix, which {who} cannot use without densifying: " + "; ".join(why)
                + f". The formulations {', '.join(refused)} need X dense. Use a method whose formulation is linear "
                f"in X and whose loop reaches the data only through the subproblem ({offer or 'none is registered'}), "
                f"or densify explicitly with X.toarray() if the dense matrix{size} fits")


def sparse_input_formulations() -> tuple[dict[str, tuple[str, ...]], tuple[str, ...]]:
    """``(takes, refused)`` from the registry: every registered formulation that builds from a
    sparse ``X`` (:attr:`Formulation.sparse_input <fsframe.Formulation.sparse_input>`) mapped to the
    registered methods that fit a sparse ``X`` with it (their loop reaches the data only through
    the subproblem, :attr:`OuterLoop.sparse_input <fsframe.OuterLoop.sparse_input>`, and they set
    no kernel), and the names of the formulations that refuse it; each sorted. What the
    :class:`~fsframe.errors.SparseInputError` message lists and docs/data.md's table shows."""
    reg = get_registry()
    takes: dict[str, list[str]] = {}
    refused = []
    for name in reg.names("formulation"):
        if getattr(reg.get("formulation", name), "sparse_input", False):
            takes[name] = []
        else:
            refused.append(name)
    for name in reg.names("method"):
        spec = reg.get("method", name)
        loop = reg.get("loop", spec.loop) if spec.loop in reg.names("loop") else None
        if spec.formulation in takes and getattr(loop, "sparse_input", False) \
                and spec.defaults.get("kernel") in (None, "linear"):
            takes[spec.formulation].append(name)
    return {f: tuple(sorted(ms)) for f, ms in sorted(takes.items())}, tuple(sorted(refused))


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
    owners = {kind: set(parameter_names(cls)) for kind, cls in classes.items() if cls is not None}
    kernel = params.get("kernel__kernel", params.get("kernel", None if spec is None else spec.defaults.get("kernel")))
    # a formulation declaring ``kernel`` itself owns its kernel (no empirical kernel map; e.g. twsvm)
    owners["kernel"] = (set() if "kernel" in owners["formulation"]
                        else set(transform_parameters(kernel if isinstance(kernel, str) else None)))
    kwargs: dict[str, dict] = {kind: {} for kind in owners}

    def route(key, value, strict):
        if "__" in key:
            kind, name = key.split("__", 1)
            if kind not in owners or name not in owners[kind]:
                if strict:
                    raise InvalidOptionError(
                        f"parameter {key!r}: {kind!r} has no parameter {name!r}"
                        + (f"{did_you_mean(name, owners[kind])}; it accepts {sorted(owners[kind])}" if kind in owners
                           else f"{did_you_mean(kind, owners)}; prefixes are {sorted(owners)}"))
                return
            kwargs[kind][name] = value
            return
        matches = [kind for kind, names in owners.items() if key in names]
        if not matches:
            if strict:
                valid = {k: sorted(v) for k, v in owners.items()}
                hint = did_you_mean(key, [n for v in owners.values() for n in v] + list(FIT_OPTIONS))
                raise InvalidOptionError(
                    f"unknown parameter {key!r} for method {method!r} ({formulation} + {surrogate} + {loop})"
                    f"{hint}; accepted: {valid} and fit options {list(FIT_OPTIONS)}")
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
        cls = _transform_for(reg, kind) if isinstance(kind, str) else None
        if cls is None:
            known = _kernel_names(reg)
            raise InvalidOptionError(f"invalid parameter for the kernel map: 'kernel' must be in {known}, got "
                                     f"{kind!r}{did_you_mean(kind, known)}")
        kmap = _make("the kernel map", cls, {"kernel": kind, **kw})
    elif kw:
        raise InvalidOptionError(f"kernel parameters {sorted(kw)} given without kernel= "
                                 f"({', '.join(_kernel_names(reg))})")

    gaps = []
    miss = lp.missing(s)
    if miss and s is None:
        gaps.append(f"no surrogate was given, but loop {lp.name!r} needs {', '.join(miss)}: name one, e.g. "
                    "surrogate='exp'")
    elif miss and not lp.takes_surrogate:
        gaps.append(f"loop {lp.name!r} takes {', '.join(miss)}, got surrogate {s.name!r}: drop it (surrogate=None)")
    elif miss:
        gaps.append(f"surrogate {s.name!r} ({type(s).__name__}) is not compatible with loop {lp.name!r}: it must "
                    f"provide {', '.join(miss)}")
    terms = lp.terms(s) if not miss else frozenset()
    if terms - f.slot_terms:
        gaps.append(f"formulation {f.name!r} cannot build slot terms {sorted(terms - f.slot_terms)} that loop "
                    f"{lp.name!r} needs (it builds {sorted(f.slot_terms)})")
    fmiss = lp.formulation_missing(f)
    if fmiss:
        gaps.append(f"formulation {f.name!r} is not compatible with loop {lp.name!r}: it must provide "
                    f"{', '.join(fmiss)}")
    if not f.sparse and s is not None:
        gaps.append(f"formulation {f.name!r} has no sparsity penalty (every feature keeps a weight), so surrogate "
                    f"{s.name!r} would penalise nothing: run it with surrogate=None and loop='single'")
    if gaps:
        raise IncompatibleComponentsError("; ".join(gaps))
    return Resolved(method, f, s, lp, kmap, merged, terms, f.problem_class(terms))




@attrs.frozen
class MethodInfo:
    """One registered method, as :func:`list_methods` returns it.

    Attributes
    ----------
    name, formulation, loop : str
    surrogate : str or None
    defaults : dict
        The method's default parameters.
    reference, description : str
    sparsity : str or None
        The sparsity parameter gridded automatically (:attr:`MethodSpec.sparsity`).
    plugin : str
        The plugin that registered it (``"svm"`` for the built-in SVM family).
    distribution, version : str or None
        Its installed distribution (``None`` for a plugin registered at run time).

    ``info["name"]``, ``"name" in info``, ``info.get("name")``, ``info.keys()`` and ``dict(info)``
    work too (the dictionaries of earlier versions).
    """

    name: str
    formulation: str
    surrogate: str | None
    loop: str
    defaults: dict
    reference: str
    description: str
    plugin: str
    distribution: str | None
    version: str | None
    sparsity: str | None = None

    def __getitem__(self, key: str):
        if key not in self:
            raise KeyError(key)
        return getattr(self, key)

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and key in attrs.fields_dict(MethodInfo)

    def __iter__(self):
        return iter(self.keys())

    def keys(self) -> list[str]:
        return list(attrs.fields_dict(MethodInfo))

    def get(self, key: str, default=None):
        return self[key] if key in self else default


def list_methods() -> list[MethodInfo]:
    """Every registered method, sorted by name (see :class:`MethodInfo`)."""
    return [MethodInfo(name=e.obj.name, formulation=e.obj.formulation, surrogate=e.obj.surrogate, loop=e.obj.loop,
                       defaults=dict(e.obj.defaults), reference=e.obj.reference, description=e.obj.description,
                       plugin=e.plugin, distribution=e.distribution, version=e.version, sparsity=e.obj.sparsity)
            for e in get_registry().all("method")]


_LESS_PRESSURE = {"C": "a larger C", "alpha": "a smaller alpha", "eps": "a larger eps", "p": "a larger p",
                  "delta": "a smaller delta", "delta_fraction": "a smaller delta_fraction"}


def sparsity_knobs(formulation, surrogate) -> list[tuple[str, str]]:
    """``(parameter, advice)`` for the parameters of these components that lower the sparsity
    pressure (e.g. ``("C", "a larger C")``); only parameters the components have (em-l0 has ``C``
    and ``p``, no ``alpha``)."""
    own = [a.name for c in (formulation, surrogate) if c is not None
           for a in getattr(type(c), "__attrs_attrs__", ())]
    return [(k, _LESS_PRESSURE[k]) for k in own if k in _LESS_PRESSURE]
