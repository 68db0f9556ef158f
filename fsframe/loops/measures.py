"""What the loop template measures per iterate, in the cheaper forms it takes them: a real
vector's norm (:func:`_norm`), an array's largest entry (:func:`_largest`) and sum (:func:`_total`),
the step between two iterates' points (:func:`_step_length`, formed once per pair), an iterate's
count of non-zeros with the run's scale after it (:func:`_support_size`, one reduction), and an
iterate carrying its subproblem's column scale (:func:`_on_column_scale`). Each is bitwise the
plain numpy form it stands for (docs/performance.md, "Issue 19 at a glance"); the base
(:meth:`~fsframe.loops.base.OuterLoop.run`) and the EM loop call them per iterate."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

from .selection import group_scale, support_cut, support_of

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem


def _norm(v: np.ndarray) -> float:
    """``float(np.linalg.norm(v))`` of a real vector, bitwise (numpy forms ``sqrt(v . v)`` too),
    without its dispatch: the loops measure two or three steps per iterate (other dtypes, shapes:
    numpy's own; a strided vector too: numpy copies it to contiguous first, and BLAS's strided dot
    rounds otherwise)."""
    if v.dtype != np.float64 or v.ndim != 1 or not v.flags.c_contiguous:
        return float(np.linalg.norm(v))
    return math.sqrt(float(v.dot(v)))


_F8 = np.dtype(np.float64)
_MAX = np.maximum.reduce
"""The reduction ``ndarray.max`` runs (numpy's ``_methods._amax`` calls it with the same arguments),
called without that Python wrapper."""


def _largest(a) -> float:
    """``float(np.max(a, initial=0.0))``, bitwise (the same reduction), without numpy's dispatch for
    an ndarray: the loops take two or three per iterate."""
    return float(_MAX(a, None, None, None, False, 0.0)) if type(a) is np.ndarray else float(np.max(a, initial=0.0))


def _step_length(new: Iterate, old_point: NDArray, point: NDArray | None = None) -> float:
    """``_norm(new.point - old_point)``, the step the base records and a loop's stopping rule
    measures (:meth:`~fsframe.loops.base.OuterLoop.small_step`), formed once per pair: kept on ``new`` (its memo, as
    :attr:`~fsframe.problem.Iterate.point`) when both points are read-only arrays of their own
    (:func:`_owned_frozen`: not views, whose base could change under them), and returned again only
    for the same two point objects — a point is kept only while its iterate's model is read-only
    (:attr:`~fsframe.problem.Iterate.point` asks at every reading), so the same objects are the same
    values. Another ``old_point``, a writeable point or an iterate without a memo: formed afresh.
    ``point``: ``new.point`` when the caller has just read it."""
    point = new.point if point is None else point
    memo = getattr(new, "_memo", None)
    kept = memo.get("step") if type(memo) is dict else None
    if kept is not None and kept[0] is old_point and kept[1] is point:
        return kept[2]
    step = _norm(point - old_point)
    if kept is None and type(memo) is dict and _owned_frozen(point) and _owned_frozen(old_point):
        memo["step"] = (old_point, point, step)
    return step


def _owned_frozen(a) -> bool:
    """Whether ``a`` is a read-only ndarray owning its data (no base: a view of a writeable array
    can change while its own flag says read-only). :attr:`~fsframe.problem.Iterate.point`'s kept
    points are such arrays."""
    return type(a) is np.ndarray and a.base is None and not a.flags.writeable


def _support_size(a, zero_tol: float, scale: float, run_scale: bool) -> tuple[int, float]:
    """``(int(support_of(a, zero_tol, ref).sum()), max(scale, _largest(a)))`` with ``ref`` that new
    scale when ``run_scale`` (else 0.0): the base's count of an iterate's non-zeros and the run's
    scale after it, the same numbers, from one reduction of ``a`` instead of two (a non-empty
    float64 ndarray; anything else goes through :func:`support_of` and :func:`_largest` as they are)."""
    if type(a) is not np.ndarray or a.dtype != _F8 or not a.size:
        scale = max(scale, _largest(a))
        return int(support_of(a, zero_tol, scale if run_scale else 0.0).sum()), scale
    raw = float(_MAX(a, None))  # support_of's reduction (a.max()); _largest's (initial=0.0) is this or 0.0
    scale = max(scale, raw if not raw < 0.0 else 0.0)
    cut = support_cut(raw, scale if run_scale else 0.0, zero_tol)
    return int(np.count_nonzero(a > cut)), scale


def _total(a) -> float:
    """``float(np.sum(a))``, bitwise (the same reduction), without numpy's dispatch for an ndarray."""
    return float(a.sum()) if type(a) is np.ndarray else float(np.sum(a))


def _on_column_scale(it: Iterate, sub: Subproblem | None) -> Iterate:
    """``it`` carrying ``sub``'s column scale (:attr:`~fsframe.problem.Iterate.column_scale`,
    :func:`~fsframe.scales.group_scale`), the one the reported objective's support rule
    reads: ``it`` itself when it carries one already, when there is no ``sub`` or when ``sub`` has
    none (its model not built, its groups not the columns of ``sub.X``). A stand-in iterate without
    the field (a test's scripted solve, not an attrs class) counts as carrying none and is
    returned as it is."""
    if sub is None or getattr(it, "column_scale", None) is not None or not (
            attrs.has(type(it)) and "column_scale" in attrs.fields_dict(type(it))):
        return it
    scale = group_scale(sub)
    return it if scale is None else attrs.evolve(it, column_scale=scale)
