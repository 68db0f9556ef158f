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
from ..loops.em import FLOOR_RATIO
from ..loops.ties import TIE_RTOL, TILT
from ..plugins import get_registry
from ..scales import offset_free
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
class _Ties:
    """The kit's statement of the descent loops' tie rule (``fsframe.loops.ties``): the first time
    two or more groups whose data columns are identical have norms above ``zero_tol`` x the largest
    that are tied (relative ``TIE_RTOL``) with their class's largest, the loop linearises at the
    point where ``TILT`` of each other tied member's coefficients moved to the tied member of lowest
    index; the step taken from it is not a descent step. Stateful: :meth:`at` is called with the
    iterates in order (``k = 0`` resets)."""

    def __init__(self, loop, sub):
        self.zero_tol = loop.zero_tol
        self.groups = np.asarray(sub.compiled.slot.groups)
        self.l1 = getattr(sub.formulation, "group_norm", "l2") == "l1"
        X = np.asarray(sub.X) if getattr(sub, "X", None) is not None else None
        by_column: dict = {}
        if X is not None and X.ndim == 2 and X.shape[1] == sub.n_groups:
            for j in range(X.shape[1]):
                by_column.setdefault(np.ascontiguousarray(X[:, j]).tobytes(), []).append(j)
        self.classes = [c for c in by_column.values() if len(c) > 1]
        self.done: set = set()

    def norms(self, coef):
        w = np.asarray(coef, dtype=float)
        n = int(self.groups.max()) + 1 if self.groups.size else 0
        if self.l1:
            return np.bincount(self.groups, weights=np.abs(w), minlength=n)
        return np.sqrt(np.bincount(self.groups, weights=w * w, minlength=n))

    def at(self, k, prev):
        """``(coef, t, tilted)`` of the point iteration ``k`` linearises at."""
        if k <= 1:
            self.done = set()
        coef, t = np.array(prev.coef, dtype=float), np.asarray(prev.t, dtype=float)
        cut = max(self.zero_tol * float(np.max(t, initial=0.0)), 1e-12)
        tilted = False
        for i, cls in enumerate(self.classes):
            if i in self.done:
                continue
            live = [j for j in cls if t[j] > cut]
            top = max((t[j] for j in live), default=0.0)
            tied = [j for j in live if t[j] >= top * (1.0 - TIE_RTOL)]
            if len(tied) < 2:
                continue
            self.done.add(i)
            tilted = True
            for j in tied[1:]:
                moved = TILT * coef[self.groups == j]
                coef[self.groups == j] -= moved
                coef[self.groups == tied[0]] += moved
        return (coef, self.norms(coef), True) if tilted else (prev.coef, prev.t, False)


def _descent_potential(surrogate, ties: _Ties):
    """``loss + sum phi`` at the solver's point, what DCA / MM theory decreases; ``None`` for a
    step taken from a tilted point (:class:`_Ties`)."""
    seen: list = []

    def potential(k, it, loss):
        if k == 0:
            seen.clear()
        tilted = k > 0 and ties.at(k, seen[-1])[2]
        seen.append(it)
        return None if tilted else loss + float(np.sum(surrogate.phi(it.t)))
    return potential


def _reweighted_l1(loop, surrogate, sub) -> LoopModel:
    """``lin = phi'(t_k)``; first ``1``, or ``phi'(0)`` with ``init="zero"`` (001 eq. 5); ``t_k``
    at the tilted point where identical features tie (:class:`_Ties`)."""
    ones = np.ones(sub.n_groups)
    ties = _Ties(loop, sub)

    def weights(k, prev):
        if k == 0:
            return {"lin": surrogate.derivative(np.zeros(sub.n_groups)) if loop.init == "zero" else ones}
        return {"lin": surrogate.derivative(ties.at(k, prev)[1])}
    return LoopModel(weights, _descent_potential(surrogate, _Ties(loop, sub)), "lin = phi'(t_k)")


def _dca(loop, surrogate, sub) -> LoopModel:
    """``lin`` = ``g``'s slope, ``lin_w = -`` the gradient of ``sum_j h(||w_(j)||)`` at ``w_k``:
    entry ``i`` of group ``j`` gets ``h'(t_j) w_i / t_j`` when the formulation's groups are in the
    l2 norm, ``h'(t_j) sign(w_i)`` when they are in the l1 norm (``group_norm``), 0 where
    ``t_j = 0``; first the L1 start or the step from ``x = 0``; ``w_k`` at the tilted point where
    identical features tie (:class:`_Ties`)."""
    n, n_coef, groups = sub.n_groups, sub.n_coef, sub.compiled.slot.groups
    split = surrogate.dc_split()
    quad = np.full(n, split.quad) if split.quad else None
    l1_groups = getattr(sub.formulation, "group_norm", "l2") == "l1"
    ties = _Ties(loop, sub)

    def grad_h(w):
        w = np.asarray(w, dtype=float)
        out = np.zeros(n_coef)
        for j in range(n):  # group by group, as the chain rule reads
            idx = np.flatnonzero(groups == j)
            norm = np.abs(w[idx]).sum() if l1_groups else float(np.sqrt(w[idx] @ w[idx]))
            if norm > 0:
                slope = float(split.grad_h(np.array([norm]))[0])
                out[idx] = slope * (np.sign(w[idx]) if l1_groups else w[idx] / norm)
        return out

    def weights(k, prev):
        if k == 0 and loop.init == "l1":
            return {"lin": np.ones(n), "lin_w": np.zeros(n_coef), "quad": None if quad is None else np.zeros(n)}
        lin_w = np.zeros(n_coef) if k == 0 else -grad_h(ties.at(k, prev)[0])
        return {"lin": np.full(n, split.lin), "lin_w": lin_w, "quad": quad}
    return LoopModel(weights, _descent_potential(surrogate, _Ties(loop, sub)),
                     "lin = g's slope, lin_w = -grad_h(w_k)")


def _em_columns(sub):
    """The kit's column scale for EM's floor: each group's column norm ``||X_j||`` computed here
    from ``sub.X`` (centred, a constant column exactly 0, where the built model ignores a column's
    offset, :func:`fsframe.scales.offset_free`), or ``None`` when the groups are not the columns of
    a dense ``X`` (a formulation building its own kernel, ``X.shape[1] != n_groups``)."""
    X = getattr(sub, "X", None)
    built = getattr(sub, "built", None) if getattr(sub, "is_built", False) else None
    if X is None or built is None or getattr(built, "transform", None) is not None:
        return None
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] != sub.n_groups:
        return None
    if not offset_free(built):
        norms = np.sqrt(np.sum(X * X, axis=0))
    else:
        norms = np.sqrt(np.sum((X - X.mean(axis=0)) ** 2, axis=0))
        norms[X.max(axis=0) == X.min(axis=0)] = 0.0
    return norms if np.all(np.isfinite(norms)) else None


class _EMTrace:
    """The kit's statement of EM's schedule, replayed over the iterates in order (``k = 0``
    resets): step 0 is the L2 start (``q = 1``); every rule compares contributions ``t_j ||X_j||``
    (:func:`_em_columns`; the norms ``t_j`` when there is no column scale) with the floor
    ``c = zero_tol x`` the largest contribution of the run so far. A normal step fixes (``inf``)
    every group whose contribution is at most ``c`` (and keeps the fixed ones fixed) and weights
    the others ``q(t_k)``; when ``phi'(0)`` is finite, a normal step that moved at most ``tol``
    (relative, as the loop's step rule) with groups fixed is followed by a check step — every
    group at ``q(max(t_j, c_j))``, ``c_j = c / ||X_j||`` capped at ``FLOOR_RATIO x max t``, a
    constant column (``||X_j|| = 0``) fixed — after which the fixed groups whose contribution
    exceeds that ``c`` are live again (and, if none is, one last normal step ends the run)."""

    def __init__(self, loop, q, revivable, sub):
        self.loop, self.q, self.revivable, self.sub, self.cols = loop, q, revivable, sub, None

    def size(self, t):
        t = np.asarray(t, dtype=float)
        return t if self.cols is None else t * self.cols

    def floor(self, cut, t):
        """``(c_j, dead)`` of the check step."""
        if self.cols is None:
            return np.full(t.shape, cut), np.zeros(t.shape, dtype=bool)
        dead = ~(self.cols > 0)
        c = np.full(t.shape, cut)
        c[~dead] = cut / self.cols[~dead]
        top = float(np.max(t, initial=0.0))
        return (np.minimum(c, FLOOR_RATIO * top) if top > 0 else c), dead

    def step(self, k, prev):
        """``(kind, quad weights)`` of step ``k`` (``kind`` in ``"start"``, ``"normal"``, ``"check"``)."""
        if k == 0:
            self.kinds, self.iters, self.fixed, self.scale, self.held = ["start"], [], None, 0.0, None
            return "start", None
        self.iters.append(prev)
        if self.fixed is None:  # the model is built by the first solve
            self.fixed = np.zeros(prev.t.shape, dtype=bool)
            self.cols = _em_columns(self.sub)
        size = self.size(prev.t)
        self.scale = max(self.scale, float(np.max(size, initial=0.0)))
        cut = max(self.loop.zero_tol * self.scale, 1e-12)
        if self.kinds[-1] == "check":  # revive what the check grew
            self.fixed &= ~(self.held & (size > self.held_cut))
        if (self.revivable and self.kinds[-1] == "normal" and self.fixed.any()
                and self._small(self.iters[-1], self.iters[-2])):
            self.held, self.held_cut = self.fixed.copy(), cut
            self.kinds.append("check")
            c, dead = self.floor(cut, np.asarray(prev.t, dtype=float))
            w = self.q(np.maximum(prev.t, c))
            w[dead] = np.inf
            return "check", w
        self.fixed |= size <= cut
        w = np.full(prev.t.shape, np.inf)
        w[~self.fixed] = self.q(prev.t[~self.fixed])
        self.kinds.append("normal")
        return "normal", w

    def _small(self, new, old):
        a = np.concatenate([np.ravel(new.coef), np.atleast_1d(new.intercept)])
        b = np.concatenate([np.ravel(old.coef), np.atleast_1d(old.intercept)])
        return float(np.linalg.norm(a - b)) <= self.loop.tol * max(1.0, float(np.linalg.norm(b)))


def _em(loop, surrogate, sub) -> LoopModel:
    """``quad = 1`` first (002 eq. 7), then ``q(t_k)``, ``inf`` where the contribution
    ``t_j ||X_j||`` is at or under the floor ``c = zero_tol x`` the largest contribution of the run
    so far, with check steps (each group at ``q(max(t_j, c / ||X_j||))``, capped) where ``phi'(0)``
    is finite (:class:`_EMTrace`). ``q = phi'(t) / (2 t)`` with ``weights="majorizer"`` and a surrogate
    that has ``phi'``, else the surrogate's ``quad_weights``. Potential ``loss + kappa sum phi`` on
    normal steps, ``kappa = 1`` (majoriser) or 2 (``quad_weights = phi'/t``, ``em_majorizes``)."""
    n = sub.n_groups
    caps = surrogate.capabilities()
    major = getattr(loop, "weights", "paper") == "majorizer" and "derivative" in caps
    revivable = "derivative" in caps and bool(np.isfinite(surrogate.derivative(np.zeros(1))[0]))
    if major:
        def q(t):
            return surrogate.derivative(t) / (2.0 * t)
    else:
        q = surrogate.quad_weights
    trace = _EMTrace(loop, q, revivable, sub)

    def weights(k, prev):
        kind, w = trace.step(k, prev)
        return {"quad": np.ones(n) if kind == "start" else w}

    note = "quad = phi'(t_k) / (2 t_k)" if major else "quad = q(t_k)"
    if not (major or surrogate.em_majorizes):
        return LoopModel(weights, None, note,
                         no_potential=f"em with {surrogate.name}: weights not phi'(t)/t (em_majorizes=False), "
                                      "no finite potential")
    kappa = 1.0 if major else 2.0
    kinds = _EMTrace(loop, q, revivable, sub)
    last: list = [None]

    def potential(k, it, loss):  # the MM majoriser's objective; the L2 start and a check step are no MM steps
        kind, _ = kinds.step(k, last[0])
        last[0] = it
        return None if kind != "normal" else loss + kappa * float(np.sum(surrogate.phi(it.t)))
    return LoopModel(weights, potential, note)


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
