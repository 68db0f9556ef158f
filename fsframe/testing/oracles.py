"""Oracles: what the kit expects of a component, stated independently of its code and keyed by
class.

Generic checks never ask ``isinstance`` of a built-in class or compare names. They look a
component's class up, along its MRO (so subclasses inherit their parent's oracle, whatever
their ``name``), in one of four tables. The core components' oracles are registered below with
the same public functions a third party uses; a plugin registers those of its components through
the hook ``fsframe_register_oracles`` (a list of :class:`Oracle`; ``docs/hooks.md``), which the kit
reads from the registry at its first lookup (and again after the registry is rebuilt):

* :func:`register_loop_oracle` — a loop's update rule (:class:`LoopModel`): the slot weights it
  must pass at iteration ``k`` and the quantity theory says decreases, used by
  :func:`~fsframe.testing.check_loop`;
* :func:`register_decision_loss` — ``formulation -> (decision values, y codes) -> loss``, the
  loss of the model recomputed from the decision function (:func:`~fsframe.testing.check_formulation`,
  :func:`~fsframe.testing.check_loop`, :func:`~fsframe.testing.check_fit_result`);
* :func:`register_decision_check` — for a formulation whose loss is no function of the decision
  values: ``formulation -> check(values, y codes, model loss) -> message or None``;
* :func:`register_em_weights` — a surrogate's EM weight convention other than ``phi'(t)/t``
  (:func:`~fsframe.testing.check_surrogate`).

A key is a class or, for a class in a package fsframe must not import (the reference method
plugins), its ``"module:QualName"``, resolved with :mod:`importlib` at the first lookup (an
entry whose module is not installed is ignored; one whose module is installed but broken, or
lacks the class, raises :class:`~fsframe.errors.PluginError`). For one class the latest
registration wins, by class or by reference; a registration made with these functions wins over a
plugin's hook for the same class.
"""

from __future__ import annotations

import importlib
import math
from typing import Callable

import attrs
import numpy as np
from numpy.typing import NDArray

from ..errors import PluginError
from ..loops import DCA, EM, BoundSearch, ReweightedL1, SingleSolve
from ..plugins import get_registry
from ..surrogates import L0Surrogate, LpSurrogate
from .models import KitHinge

__all__ = [
    "Oracle",
    "LoopModel",
    "register_loop_oracle",
    "register_decision_loss",
    "register_decision_check",
    "register_em_weights",
    "loop_model",
    "decision_loss_for",
    "decision_check_for",
    "em_weights_for",
    "hinge_loss",
    "mpm_margin_loss",
]

KINDS = ("loop", "decision_loss", "decision_check", "em_weights")


@attrs.frozen
class Oracle:
    """One oracle as a plugin registers it (hook ``fsframe_register_oracles``): ``kind`` is
    ``"loop"``, ``"decision_loss"``, ``"decision_check"`` or ``"em_weights"`` (what
    :func:`register_loop_oracle`, :func:`register_decision_loss`, :func:`register_decision_check`,
    :func:`register_em_weights` register), ``cls`` the component class it states for (and its
    subclasses), ``make`` the oracle those functions take."""

    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    cls: type = attrs.field(validator=attrs.validators.instance_of(type))
    make: Callable = attrs.field(validator=attrs.validators.is_callable())


class ClassTable:
    """A mapping from classes (or ``"module:QualName"`` references) to oracles, looked up along
    the MRO of an instance's class: the most specific registered class wins, and for one class
    the latest registration wins, whatever the form of its key.

    A reference is resolved at the first lookup after its registration. Its module not being
    installed is no error (its components cannot be checked either); a module that is installed
    but fails to import, or lacks the named class, raises :class:`~fsframe.errors.PluginError`
    at that lookup instead of dropping the oracle, which would silently skip or weaken a check.
    """

    def __init__(self, what: str):
        self.what = what
        self._seq = 0
        self._by_class: dict[type, tuple[int, object]] = {}
        self._pending: dict[str, tuple[int, object]] = {}
        self.from_plugins: dict[type, object] = {}  # the hook's registrations (rebuilt with the registry)

    def register(self, key: type | str, oracle) -> None:
        self._seq += 1
        if isinstance(key, str):
            module, _, qualname = key.partition(":")
            if not module or not qualname:
                raise ValueError(f"{self.what}: a class reference must read 'module:QualName', got {key!r}")
            self._pending[key] = (self._seq, oracle)
        elif isinstance(key, type):
            self._by_class[key] = (self._seq, oracle)
        else:
            raise TypeError(f"{self.what}: the key must be a class or 'module:QualName', got {key!r}")

    def _import(self, ref: str):
        """The class ``ref`` names; ``None`` when its module is not installed."""
        module, _, qualname = ref.partition(":")
        try:
            obj = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
                return None  # not installed
            raise PluginError(f"{self.what}({ref!r}, ...): module {module!r} is installed but fails to import "
                              f"({exc!r}); fix the module or remove the registration") from exc
        except ImportError as exc:
            raise PluginError(f"{self.what}({ref!r}, ...): module {module!r} is installed but fails to import "
                              f"({exc!r}); fix the module or remove the registration") from exc
        try:
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except AttributeError as exc:
            raise PluginError(f"{self.what}({ref!r}, ...): module {module!r} has no {qualname!r}; the oracle "
                              "would never apply (a renamed class?): register it under the class's "
                              "current name") from exc
        if not isinstance(obj, type):
            raise PluginError(f"{self.what}({ref!r}, ...): {ref!r} is a {type(obj).__name__}, not a class")
        return obj

    def _resolve(self) -> None:
        for ref, (seq, oracle) in sorted(self._pending.items(), key=lambda kv: kv[1][0]):
            cls = self._import(ref)
            if cls is None:
                continue  # retried at the next lookup (the module may be installed later)
            del self._pending[ref]
            if cls not in self._by_class or self._by_class[cls][0] < seq:
                self._by_class[cls] = (seq, oracle)

    def lookup(self, obj):
        """The oracle registered for the nearest class in ``type(obj).__mro__``, or ``None``."""
        if self._pending:
            self._resolve()
        for cls in type(obj).__mro__:
            if cls in self._by_class:
                return self._by_class[cls][1]
            if cls in self.from_plugins:
                return self.from_plugins[cls]
        return None


_LOOPS = ClassTable("register_loop_oracle")
_LOSSES = ClassTable("register_decision_loss")
_CHECKS = ClassTable("register_decision_check")
_EM = ClassTable("register_em_weights")
_TABLES = {"loop": "_LOOPS", "decision_loss": "_LOSSES", "decision_check": "_CHECKS", "em_weights": "_EM"}


def _plugin_oracles() -> None:
    """Fill each table's plugin layer from the hook ``fsframe_register_oracles`` of the current
    registry (once per registry and table). A plugin whose hook raises or returns something else
    than :class:`Oracle` objects is a :class:`~fsframe.errors.PluginError` naming it: an oracle
    silently dropped would skip or weaken a check."""
    reg = get_registry()
    tables = {kind: globals()[name] for kind, name in _TABLES.items()}
    if all(getattr(t, "plugins_of", None) is reg for t in tables.values()):
        return
    found = {kind: {} for kind in KINDS}
    for plugin, item in reg.hook_results("fsframe_register_oracles"):
        if not isinstance(item, Oracle):
            raise PluginError(f"plugin {plugin!r}: fsframe_register_oracles() returned {item!r}, not an "
                              "fsframe.testing.Oracle")
        found[item.kind][item.cls] = item.make
    for kind, table in tables.items():
        table.from_plugins, table.plugins_of = found[kind], reg


# =============================================================================== registration
@attrs.frozen
class LoopModel:
    """A loop's update rule as the kit states it.

    Attributes
    ----------
    weights : callable ``(k, previous iterate or None) -> dict``
        The ``lin``/``lin_w``/``quad`` arguments of the ``sub.solve`` call producing iterate ``k``
        (a missing key means ``None``).
    potential : callable ``(k, iterate, loss) -> float or None``, or None
        The quantity theory says does not rise, recomputed from the iterate and its loss
        (``None`` from the call: not defined at that iterate). ``None``: the loop states none for
        this surrogate, and the descent check is skipped with ``no_potential`` as the reason.
    note : str
        How the weights are formed, for messages and the returned check names.
    no_potential : str
        Why there is no potential (when ``potential`` is ``None``).
    """

    weights: Callable
    potential: Callable | None
    note: str
    no_potential: str = "the oracle states no potential"


def register_loop_oracle(loop_cls: type | str, oracle: Callable) -> None:
    """Register ``oracle(loop, surrogate, sub) -> LoopModel or None`` for ``loop_cls`` and its
    subclasses. ``sub`` is the :class:`~fsframe.problem.Subproblem` the loop drives (its
    ``n_groups``, ``n_coef`` and ``compiled.slot.groups`` size the weights)."""
    _LOOPS.register(loop_cls, oracle)


def register_decision_loss(formulation_cls: type | str, loss: Callable) -> None:
    """Register ``loss(formulation) -> ((decision values, y codes) -> float)``: the model's loss
    recomputed from the decision function, for ``formulation_cls`` and its subclasses."""
    _LOSSES.register(formulation_cls, loss)


def register_decision_check(formulation_cls: type | str, check: Callable) -> None:
    """Register ``check(formulation) -> ((decision values, y codes, model loss) -> message or
    None)`` for a formulation whose loss is no function of the decision values."""
    _CHECKS.register(formulation_cls, check)


def register_em_weights(surrogate_cls: type | str, rule: Callable) -> None:
    """Register ``rule(surrogate) -> (check name, q)`` with ``q(t)`` the EM weights the surrogate
    must return for ``t > 0``, when its convention is not ``phi'(t)/t`` (then its
    ``em_majorizes`` is ``False``: EM monitors no potential for it)."""
    _EM.register(surrogate_cls, rule)


def loop_model(loop, surrogate, sub) -> LoopModel | None:
    """The registered oracle's model of ``loop`` with ``surrogate`` on ``sub``, or ``None``."""
    _plugin_oracles()
    oracle = _LOOPS.lookup(loop)
    return None if oracle is None else oracle(loop, surrogate, sub)


def decision_loss_for(formulation) -> Callable | None:
    """The registered decision loss of ``formulation``, or ``None``."""
    _plugin_oracles()
    make = _LOSSES.lookup(formulation)
    return None if make is None else make(formulation)


def decision_check_for(formulation) -> Callable | None:
    """The registered decision-value check of ``formulation``, or ``None``."""
    _plugin_oracles()
    make = _CHECKS.lookup(formulation)
    return None if make is None else make(formulation)


def em_weights_for(surrogate) -> tuple[str, Callable] | None:
    """The registered EM weight convention of ``surrogate``: ``(check name, q)``, or ``None``."""
    _plugin_oracles()
    rule = _EM.lookup(surrogate)
    return None if rule is None else rule(surrogate)


# =============================================================================== formulations
def hinge_loss(C: float) -> Callable[[NDArray, NDArray], float]:
    """``C * sum_i max(0, 1 - y_i f_i)`` in numpy, for ``decision_loss=``."""
    return lambda f, y: float(C * np.sum(np.maximum(0.0, 1.0 - np.asarray(y) * np.asarray(f))))


def mpm_margin_loss() -> Callable[[NDArray, NDArray], float]:
    """``decision_loss=`` for the MPM family (``mpm``): the violation of the margin rows of paper
    000 eq. 45, ``w'mu_1 - b >= 1`` and ``b - w'mu_2 >= 1`` (class ``+1`` is 000's ``X_1``), read
    off the decision function ``f = X w - b``: ``f`` is affine, so its mean over class ``k`` is
    ``w'mu_k - b``. Returns ``max(0, 1 - mean f[y = +1]) + max(0, 1 + mean f[y = -1])``, which is
    0 — the MPM's loss, its objective being the penalty alone — exactly when the rows hold; a
    decision function of the wrong sign gives at least 2."""
    def loss(f, y):
        f, y = np.asarray(f, dtype=float), np.asarray(y)
        return float(max(0.0, 1.0 - f[y > 0].mean()) + max(0.0, 1.0 + f[y < 0].mean()))
    return loss


# the kit's own formulation (plugins register theirs through fsframe_register_oracles)
register_decision_loss(KitHinge, lambda f: hinge_loss(f.C))


# =============================================================================== surrogates
register_em_weights(LpSurrogate, lambda s: (
    ("quad_weights = t^(p-2) (lp convention)", lambda x: x ** (s.p - 2.0)) if s.eps == 0 else
    ("quad_weights = (t+eps)^(p-1)/t (smoothed lp convention)", lambda x: (x + s.eps) ** (s.p - 1.0) / x)))
register_em_weights(L0Surrogate, lambda s: ("quad_weights = 1/t^2 (l0 convention)", lambda x: 1.0 / (x * x)))


# =============================================================================== loops
def _raw_potential(surrogate):
    """``loss + sum phi`` at the solver's point: what DCA / MM theory decreases."""
    return lambda k, it, loss: loss + float(np.sum(surrogate.phi(it.t)))


def _reweighted_l1(loop, surrogate, sub) -> LoopModel:
    """``lin = phi'(t_k)``; first ``1``, or ``phi'(0)`` with ``init="zero"`` (001 eq. 5)."""
    ones = np.ones(sub.n_groups)

    def weights(k, prev):
        if k == 0:
            return {"lin": surrogate.derivative(np.zeros(sub.n_groups)) if loop.init == "zero" else ones}
        return {"lin": surrogate.derivative(prev.t)}
    return LoopModel(weights, _raw_potential(surrogate), "lin = phi'(t_k)")


def _dca(loop, surrogate, sub) -> LoopModel:
    """``lin`` = ``g``'s slope, ``lin_w = -h'(t_k) w_k / t_k``; first the L1 start or the step
    from ``x = 0``."""
    n, n_coef, groups = sub.n_groups, sub.n_coef, sub.compiled.slot.groups
    split = surrogate.dc_split()
    quad = np.full(n, split.quad) if split.quad else None

    def weights(k, prev):
        if k == 0 and loop.init == "l1":
            return {"lin": np.ones(n), "lin_w": np.zeros(n_coef), "quad": None if quad is None else np.zeros(n)}
        lin_w = np.zeros(n_coef)
        if k > 0:
            scale = np.zeros_like(prev.t)
            np.divide(split.grad_h(prev.t), prev.t, out=scale, where=prev.t > 0)
            lin_w = -scale[groups] * prev.coef
        return {"lin": np.full(n, split.lin), "lin_w": lin_w, "quad": quad}
    return LoopModel(weights, _raw_potential(surrogate), "lin = g's slope, lin_w = -grad_h(w_k)")


def _em(loop, surrogate, sub) -> LoopModel:
    """``quad = q(t_k)``, ``inf`` under ``zero_tol`` x max; first ``1`` (002 eq. 7). Potential
    ``loss + 2 sum phi`` from the second iterate on, for surrogates declaring ``em_majorizes``."""
    n = sub.n_groups

    def weights(k, prev):
        if k == 0:
            return {"quad": np.ones(n)}
        cut = max(loop.zero_tol * float(np.max(prev.t, initial=0.0)), 1e-12)
        q = np.full(n, np.inf)
        q[prev.t > cut] = surrogate.quad_weights(prev.t[prev.t > cut])
        return {"quad": q}
    if not surrogate.em_majorizes:
        return LoopModel(weights, None, "quad = q(t_k)",
                         no_potential=f"em with {surrogate.name}: weights not phi'(t)/t (em_majorizes=False), "
                                      "no finite potential")

    def potential(k, it, loss):  # the MM majoriser's objective for q = phi'(t)/t; the L2 start is no MM step
        return None if k == 0 else loss + 2.0 * float(np.sum(surrogate.phi(it.t)))
    return LoopModel(weights, potential, "quad = q(t_k)")


def _single(loop, surrogate, sub) -> LoopModel:
    """One solve: ``lin = phi'(0)`` (or 1 without a surrogate), or unit quadratic weights."""
    n = sub.n_groups

    def weights(k, prev):
        if loop.penalty == "l2":
            return {"quad": np.ones(n)}
        return {"lin": np.full(n, 1.0 if surrogate is None else float(surrogate.derivative(np.zeros(1))[0]))}
    return LoopModel(weights, None, "phi'(0) or unit weights", no_potential="one solve")


register_loop_oracle(ReweightedL1, _reweighted_l1)
register_loop_oracle(DCA, _dca)
register_loop_oracle(EM, _em)
register_loop_oracle(SingleSolve, _single)


def _bound_search(loop, surrogate, sub) -> LoopModel:
    """Every solve of a bound search (001 Algorithm 1): ``lin = phi'(0)`` (or 1), the bounds vary."""
    n = sub.n_groups
    w0 = 1.0 if surrogate is None else float(surrogate.derivative(np.zeros(1))[0])
    return LoopModel(lambda k, prev: {"lin": np.full(n, w0)}, None, "phi'(0) at every visited bound",
                     no_potential="a search over bounds, no descent")


register_loop_oracle(BoundSearch, _bound_search)


# =============================================================================== resolution
def resolve_decision_loss(formulation, given) -> Callable | None:
    """The ``decision_loss`` callable a check uses: ``given`` (a callable), else the registered one
    for the formulation's class, else ``None``; ``False`` gives ``None``."""
    if given is False:
        return None
    if given is not None and given is not True:
        return given
    return decision_loss_for(formulation)


def resolve_decision_check(formulation, given) -> tuple[str, Callable | None]:
    """``(check name, check(f, y, model_loss) -> message or None)`` for
    :func:`~fsframe.testing.check_formulation`; :class:`ValueError` when nothing is known."""
    if given is False:
        return "decision_loss skipped (decision_loss=False)", None
    loss_fn = resolve_decision_loss(formulation, given)
    if loss_fn is not None:
        def check(f, y, model_loss):
            lval = loss_fn(f, y)
            if not math.isclose(lval, model_loss, rel_tol=1e-5, abs_tol=1e-6):
                return f"decision_loss(decision_function(...)) = {lval!r} but the model's loss is {model_loss!r}"
            return None
        return "decision_loss", check
    values = decision_check_for(formulation)
    if values is not None:
        return "decision values", values
    raise ValueError(
        f"check_formulation: no decision_loss is known for formulation {formulation.name!r} "
        f"({type(formulation).__qualname__}); pass decision_loss=<callable (decision values, y codes) -> loss> "
        "to check decision_function against the model's loss (or register one for the class with "
        "fsframe.testing.register_decision_loss), or decision_loss=False to skip that check "
        "(the skip is listed in the returned check names)")
