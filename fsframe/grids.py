"""Automatic grids of a method's sparsity parameter: where the first feature enters, and how the
grid grows from there (:func:`grid_rule`), for :func:`fsframe.path` without a hand-made grid and
for :class:`fsframe.tuning.FSSelectorCV`.

A method declares its sparsity parameter as data (:attr:`fsframe.MethodSpec.sparsity`: ``"C"``,
``"delta"`` or ``"n_features"``). Where the grid starts comes from the formulation's own
optimality conditions, through two opt-in protocols (:data:`fsframe.formulation.PROTOCOLS`; ``aux``
is an :class:`fsframe.AuxSolver`):

* ``empty_model_threshold(X, y, *, aux)``: the smallest uniform weight ``lambda`` of the L1
  slot term at which the all-zero model is optimal (the dual norm of the loss's gradient at the
  empty model, minimised over its optimal multipliers — scikit-learn's ``l1_min_c`` for the
  hinge). With :attr:`threshold_scaling` (how it scales with the formulation's parameters, the
  hinge's ``{"C": 1}``) the entry of a formulation parameter is closed-form; the entry of a
  surrogate or loop parameter is found where the weight of the loop's *first* subproblem
  (read by :func:`first_weights`, which runs the loop's first step against a stand-in) meets the
  threshold. The entry is exact for a method whose fit is that one L1 subproblem (``l1-svm``: no
  feature below it, the first one just above); for a loop that starts from it (``fsv``'s
  reweighting) the method is empty below it too (the empty model is its start and a fixed
  point), and the first feature may enter later.
* ``auto_values(name, X, y, *, n_points, aux)``: the grid itself, for a parameter whose range
  the formulation knows (the MPM's ``delta`` up to the largest feasible bound ``delta_max``).

From the entry the grid is log-spaced (``points_per_decade``) in the direction the support
grows, and ends where the support stops growing (:func:`stopped_growing`: a decade of points
without a new largest support) or at ``max_points``. ``n_features`` grids are log-spaced
integers from 1 up to the number of groups.
"""

from __future__ import annotations

import math
from typing import Iterator

import attrs
import numpy as np

from .errors import InvalidOptionError
from .auxiliary import AuxSolver
from .loops.records import Run
from .method import Resolved, resolve
from .plugins import get_registry, select_backend

__all__ = ["GridRule", "grid_rule", "first_weights", "stopped_growing", "integer_grid", "AUTO",
           "POINTS_PER_DECADE", "MAX_POINTS"]

AUTO = "auto"
"""The value that asks for an automatic grid (``fsframe.path(X, y, "fsv", C="auto")``)."""
POINTS_PER_DECADE = 4
MAX_POINTS = 30
ENTRY_MARGIN = 1.001
"""The first grid point lies this factor beyond the entry value, on the side where features enter:
at the entry itself the empty model is still optimal."""


@attrs.frozen
class GridRule:
    """How an automatic grid is generated (:func:`grid_rule`).

    Attributes
    ----------
    parameter : str
    entry : float or None
        Where the first feature enters (None for ``n_features`` and fixed lists).
    direction : int
        +1 when the support grows with the value (``C``), -1 when it grows as the value falls.
    ratio : float
        Factor between neighbouring points (``10 ** (1 / points_per_decade)``).
    values : tuple or None
        A fixed list of values (``n_features``, ``auto_values``); None: grown from ``entry``
        until :func:`stopped_growing`.
    how : str
        How the start was found, for reports.
    patience, max_points : int
    empty : bool
        No value lets a feature in: the empty model is optimal throughout (a one-point grid).
    """

    parameter: str
    entry: float | None
    direction: int
    ratio: float
    values: tuple | None
    how: str
    patience: int
    max_points: int
    empty: bool = False

    def candidates(self) -> Iterator:
        """The grid values in order (a fixed list, or the growing sequence from the entry)."""
        if self.values is not None:
            yield from self.values
            return
        v = self.entry * (ENTRY_MARGIN if self.direction > 0 else 1.0 / ENTRY_MARGIN)
        for k in range(self.max_points):
            yield float(v)
            v = self.entry * self.ratio ** ((k + 1) * self.direction)

    def as_dict(self) -> dict:
        return attrs.asdict(self)


def stopped_growing(n_selected: list, patience: int) -> bool:
    """Whether the last ``patience`` points added no new largest support (and there is one)."""
    if len(n_selected) <= patience:
        return False
    before = max(n_selected[:-patience])
    return before > 0 and max(n_selected[-patience:]) <= before


def integer_grid(n_max: int, points_per_decade: int = POINTS_PER_DECADE) -> tuple:
    """Log-spaced distinct integers from 1 to ``n_max`` (both included)."""
    n_max = max(1, int(n_max))
    k = max(2, int(math.ceil(math.log10(n_max) * points_per_decade)) + 1) if n_max > 1 else 1
    return tuple(sorted({int(round(v)) for v in np.logspace(0, math.log10(n_max), k)} | {1, n_max}))


class _FirstSolve(Exception):
    def __init__(self, weights):
        super().__init__("first solve")
        self.weights = weights


class _Probe:
    """A stand-in for the subproblem that records the slot weights of the first solve a loop asks
    for, and stops the loop there (nothing is built or solved)."""

    def __init__(self, n_groups: int):
        self.n_groups = n_groups
        self.n_coef = n_groups

    def solve(self, **weights):
        raise _FirstSolve({k: v for k, v in weights.items() if v is not None})


def first_weights(loop, surrogate, n_groups: int = 3) -> dict | None:
    """The slot weights of the first subproblem ``loop`` solves (``{"lin": ..., "quad": ...}``),
    read by running its first step against a stand-in subproblem; None when the loop reads more of
    the subproblem than its size before solving (its own algorithm, a mask search)."""
    gen = loop.steps(_Probe(n_groups), surrogate, Run())
    try:
        next(gen)
    except _FirstSolve as first:
        return first.weights
    except Exception:  # the loop needs more than a stand-in: no probe
        return None
    finally:
        gen.close()
    return None


def _uniform_lin(weights: dict | None) -> float | None:
    """The uniform L1 weight of a first subproblem that is a plain L1 model, else None (an L2
    start, signed terms, or weights that differ by group)."""
    if not weights or "quad" in weights and np.any(np.asarray(weights["quad"]) != 0):
        return None
    if "lin_w" in weights and np.any(np.asarray(weights["lin_w"]) != 0):
        return None
    lin = np.asarray(weights.get("lin", []), dtype=float)
    if lin.size == 0 or not np.all(np.isfinite(lin)) or np.ptp(lin) > 1e-12 * abs(lin[0]) or lin[0] <= 0:
        return None
    return float(lin[0])


def _owner(res: Resolved, name: str) -> tuple[str, object] | None:
    """``(kind, component)`` declaring parameter ``name`` (``kind__name`` spelled out or not)."""
    kind, _, bare = name.rpartition("__")
    for k, comp in (("formulation", res.formulation), ("surrogate", res.surrogate), ("loop", res.loop)):
        if comp is not None and (not kind or kind == k) and bare in attrs.fields_dict(type(comp)):
            return k, comp
    return None


def _solver(res: Resolved) -> AuxSolver:
    from .enums import ProblemClass

    return AuxSolver.default(ProblemClass.LP)


def grid_rule(X, y, res: Resolved, parameter: str, *, fixed: dict | None = None, method: str | None = None,
              components: dict | None = None, points_per_decade: int = POINTS_PER_DECADE,
              max_points: int = MAX_POINTS) -> GridRule:
    """How to grid ``parameter`` for the components ``res`` on ``(X, y)`` (binary labels ``±1``
    for a binary formulation; see the module docstring).

    ``fixed``, ``method`` and ``components`` rebuild the components at other values of a
    surrogate or loop parameter (its entry is searched on the loop's first weight).

    Raises
    ------
    InvalidOptionError
        a parameter without an automatic grid for these components (the message says why: e.g.
        the loop's first subproblem is an L2 model, as EM's, so no weight of the empty model
        decides where features enter; give the grid as a list, or tune ``n_features``).
    """
    ratio = 10.0 ** (1.0 / points_per_decade)
    common = dict(ratio=ratio, patience=points_per_decade, max_points=max_points)
    n_groups = X.shape[1] if res.kernel is None else X.shape[0]
    if parameter == "n_features":
        return GridRule(parameter, None, +1, values=integer_grid(n_groups, points_per_decade),
                        how=f"log-spaced integers from 1 to the {n_groups} groups", **common)
    owner = _owner(res, parameter)
    if owner is None:
        raise InvalidOptionError(f"no component of {res.method or 'these components'} has a parameter {parameter!r} "
                                 "to grid")
    kind, comp = owner
    bare = parameter.rpartition("__")[2]
    form = res.formulation
    offers = form.provides()
    if kind == "formulation" and "auto_values" in offers:
        values = form.auto_values(bare, X, y, n_points=max(2, 2 * points_per_decade), aux=_solver(res))
        if values:
            return GridRule(parameter, None, +1, values=tuple(float(v) for v in values),
                            how=f"formulation {form.name!r} sets the grid of {bare!r} from the data", **common)
    if "empty_model_threshold" not in offers:
        raise InvalidOptionError(
            f"{parameter!r} has no automatic grid for formulation {form.name!r}: it states no condition for the "
            "empty model (empty_model_threshold) nor a range (auto_values); give the grid as a list")
    lam = _uniform_lin(first_weights(res.loop, res.surrogate))
    if lam is None:
        raise InvalidOptionError(
            f"{parameter!r} has no automatic grid for loop {res.loop.name!r}"
            + (f" with surrogate {res.surrogate.name!r}" if res.surrogate is not None else "")
            + ": its first subproblem is not an L1 model (an L2 start, as EM's, or an algorithm of its own), so no "
            "weight of the empty model decides where features enter; give the grid as a list, or tune n_features")
    threshold = float(form.empty_model_threshold(X, y, aux=_solver(res)))
    if not np.isfinite(threshold):
        raise InvalidOptionError(f"formulation {form.name!r}: its empty-model threshold is {threshold!r}")
    if threshold <= 1e-9 * lam:
        # multipliers with a zero gradient certify the empty model at every weight: no value of the
        # parameter lets a feature in (the classes' multiplier-weighted sums coincide)
        current = getattr(comp, parameter.rpartition("__")[2])
        return GridRule(parameter, None, +1, values=(current,), empty=True,
                        how=f"the empty model is optimal for every {parameter} ({form.name}'s empty-model "
                            f"threshold is {threshold:.3g}): a one-point grid at {parameter}={current!r}", **common)
    if kind == "formulation":
        power = dict(getattr(form, "threshold_scaling", {})).get(bare)
        if not power:
            raise InvalidOptionError(f"{parameter!r} does not scale formulation {form.name!r}'s empty-model "
                                     "threshold (threshold_scaling): no automatic grid; give the grid as a list")
        value = float(getattr(form, bare))
        entry = value * (lam / threshold) ** (1.0 / power)
        how = (f"{bare} where the first feature enters the {res.loop.name} loop's first subproblem (L1 weight "
               f"{lam:g}): {form.name}'s empty model is optimal up to weight {threshold:.6g} at {bare}={value:g}")
        return GridRule(parameter, float(entry), +1 if power > 0 else -1, values=None, how=how, **common)
    entry, direction = _search_entry(res, parameter, threshold, fixed or {}, method, components or {})
    how = (f"{bare} where the weight of the {res.loop.name} loop's first subproblem meets {form.name}'s empty-model "
           f"threshold {threshold:.6g}")
    return GridRule(parameter, entry, direction, values=None, how=how, **common)


def _search_entry(res: Resolved, parameter: str, threshold: float, fixed: dict, method, components) -> tuple:
    """The value of a surrogate or loop parameter at which the first subproblem's uniform L1 weight
    meets ``threshold``, by bisection on its logarithm (no solve: each value is one probe)."""

    def weight(v: float) -> float | None:
        try:
            r = resolve(method, **components, **{**fixed, parameter: v})
        except InvalidOptionError:  # outside the parameter's valid range
            return None
        return _uniform_lin(first_weights(r.loop, r.surrogate))

    # the widest range of exponents in [-12, 12] whose values the parameter accepts
    exps = [e for e in range(-12, 13) if weight(10.0 ** e) is not None]
    lo, hi = (float(exps[0]), float(exps[-1])) if exps else (0.0, 0.0)
    wl, wh = (weight(10.0 ** lo), weight(10.0 ** hi)) if exps else (None, None)
    if wl is None or wh is None or (wl - threshold) * (wh - threshold) > 0 or wl == wh:
        raise InvalidOptionError(
            f"{parameter!r} does not move the weight of the {res.loop.name} loop's first subproblem across the "
            f"empty model's threshold {threshold:.6g} (it is {wl} at 1e{lo:+.0f} and {wh} at 1e{hi:+.0f}): the "
            "parameter does not decide where features enter; give the grid as a list")
    rising = wh > wl
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        wm = weight(10.0 ** mid)
        if (wm >= threshold) == rising:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-10:
            break
    # the empty model holds where the weight is at least the threshold: features enter on the other side
    return float(10.0 ** (0.5 * (lo + hi))), (-1 if rising else +1)


def auto_rule(X, y, res: Resolved, parameter: str, **kw) -> GridRule:
    """:func:`grid_rule` on a fit's training data as :func:`fsframe.fit` sees it: labels of any
    kind (two classes coded ``±1``; more: one rule per one-vs-rest problem, the earliest entry
    kept, so the grid starts where a feature enters for some class), and the kernel map applied
    first when there is one (its groups are training samples). A regression formulation
    (``Formulation.task == "regression"``) gets its real target as given."""
    Z = X if res.kernel is None else res.kernel.fit(X).transform(X)
    if getattr(res.formulation, "task", "classification") == "regression":
        return grid_rule(Z, np.asarray(y, dtype=float), res, parameter, **kw)
    classes = np.unique(y)
    if parameter == "n_features" or len(classes) == 2 or res.formulation.multiclass == "native":
        codes = np.where(y == classes[-1], 1.0, -1.0) if len(classes) == 2 else np.searchsorted(classes, y)
        return grid_rule(Z, codes, res, parameter, **kw)
    rules = [grid_rule(Z, np.where(y == c, 1.0, -1.0), res, parameter, **kw) for c in classes]
    entering = [r for r in rules if not r.empty]
    if not entering or entering[0].values is not None:
        return (entering or rules)[0]
    pick = min if entering[0].direction > 0 else max
    first = pick(entering, key=lambda r: r.entry)
    return attrs.evolve(first, how=first.how + f" (the earliest over the {len(classes)} one-vs-rest problems)")


def declared_parameter(method: str | None) -> str | None:
    """The sparsity parameter a registered method declares (:attr:`MethodSpec.sparsity`)."""
    if method is None:
        return None
    return get_registry().get("method", method).sparsity


def no_grid_message(method: str | None) -> str:
    return (f"method {method!r} declares no sparsity parameter (MethodSpec.sparsity) to grid automatically"
            + ("" if method is None else
               f" (see 'fsframe methods {method}'): give the grid as a list, e.g. C=[0.1, 1, 10], or n_features"))
