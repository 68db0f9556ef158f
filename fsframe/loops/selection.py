"""The library's one support rule (:func:`support_of` on the run's :func:`reference_scale`, applied to
each group's contribution, :func:`contribution`) and the "exactly ``r`` features" rule of 002 §3.1
(:func:`select_exactly`); the loop base, the from-``X`` path and the conformance kit all count
non-zeros with them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

from ..scales import column_norms, columns_scale, group_scale, groups_are_columns, offset_free

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate

__all__ = ["support_of", "reference_scale", "Selection", "select_exactly", "column_norms", "columns_scale",
           "offset_free", "groups_are_columns", "group_scale", "contribution"]


def support_of(t: NDArray, zero_tol: float, scale: float = 0.0) -> NDArray:
    """Groups whose norm exceeds ``zero_tol`` times ``max(largest norm, scale)`` (and 1e-12
    absolutely). ``scale`` is the run's reference magnitude (the largest group norm of any of
    its iterates): an iterate that collapsed towards zero has no meaningful non-zero left even
    if its own largest norm is 1e-9."""
    t = np.asarray(t, dtype=float)
    if t.size == 0:
        return np.zeros(0, dtype=bool)
    return t > support_cut(float(t.max()), scale, zero_tol)  # t.max(): np.max's reduction, undispatched


def support_cut(top: float, scale: float, zero_tol: float) -> float:
    """The cut :func:`support_of` applies to norms whose largest is ``top`` on a run of scale
    ``scale``: ``zero_tol`` times the larger of the two, and 1e-12 absolutely (the one rule; the
    loops' cheaper counts, :func:`~fsframe.loops.measures._support_size` and
    :func:`_counts_on_run_scale`, apply it too)."""
    return max(zero_tol * max(top, scale), 1e-12)


def reference_scale(iterates, scale: NDArray | None = None) -> float:
    """The largest group norm over ``iterates`` (the scale meaningful non-zeros are measured on);
    with ``scale`` (:func:`group_scale`), the largest contribution (:func:`contribution`)."""
    return max((float(contribution(it.t, scale).max(initial=0.0)) for it in iterates), default=0.0)


def contribution(t: NDArray, scale: NDArray | None) -> NDArray:
    """Each group's contribution to the model's decision values, ``t_j ||X_j||`` (its norm times its
    column's norm, centred where the model is :func:`offset_free`, :func:`group_scale`): what the
    ``zero_tol`` cut compares, so that a feature measured in small units (a large column, a small
    weight) is not cut for the size of its weight alone. ``t`` itself when there is no column
    scale (``scale`` is ``None``)."""
    t = np.asarray(t, dtype=float)
    if scale is None or (scale.shape if type(scale) is np.ndarray else np.shape(scale)) != t.shape:
        return t
    return t * scale


@attrs.frozen
class Selection:
    """What :func:`select_exactly` chose: the iterate ``index``, the kept groups ``mask``, the
    meaningful non-zeros per iterate (``counts``), and whether the loop ``collapsed`` below
    ``r`` (an iterate after the chosen one had fewer than ``r``). Unpacks as ``(index, mask)``."""

    index: int
    mask: NDArray
    counts: tuple
    collapsed: bool

    def __iter__(self):  # ``idx, mask = select_exactly(...)``
        return iter((self.index, self.mask))


def select_exactly(iterates: list[Iterate], r: int, zero_tol: float) -> Selection:
    """Choose an iterate and its ``r`` strongest groups (002 §3.1, after Weston et al. 2003).

    The paper stops "at the last iteration where ||w||_0 <= r" and keeps "the r largest
    features of w". Non-zeros are counted as meaningful on the run's scale
    (:func:`support_of` with :func:`reference_scale`), so an iterate whose weights all shrank to
    1e-8 counts as empty. Take the last iterate that still has at least ``r`` meaningful
    non-zeros (the loop stops at the first with at most ``r``, so this is that one when it has
    exactly ``r``, else the one before it) and keep its ``r`` largest group norms. When no iterate
    has ``r`` (e.g. an L1 start keeps fewer than ``r`` features when samples are few), take the
    one with the most and keep all of its meaningful non-zeros: fewer than ``r`` result.
    """
    counts = _counts_on_run_scale([it.t for it in iterates], zero_tol)
    enough = [i for i, c in enumerate(counts) if c >= r]
    k = enough[-1] if enough else int(np.argmax(counts))
    t = iterates[k].t
    order = np.argsort(-t, kind="stable")
    keep = order[: min(r, counts[k])]
    mask = np.zeros(t.shape[0], dtype=bool)
    mask[keep] = True
    return Selection(k, mask, counts, collapsed=any(c < r for c in counts[k + 1:]))


def _counts_on_run_scale(norms: list, zero_tol: float) -> tuple:
    """``tuple(int(support_of(t, zero_tol, scale).sum()) for t in norms)`` with ``scale`` the
    largest entry of all (:func:`reference_scale` of iterates with these norms): the counts
    :func:`select_exactly` chooses on. Norms of one length, float64 and without nan (a run's) are
    counted as one ``k x n`` array (three reductions, not ``2k + k``: ~100 us a fit on Sonar's 20
    iterates); the same numbers, since a maximum is exact whatever the order it is taken in (nan is
    not: Python's ``max`` keeps or drops it by position, so such norms take the loop below)."""
    stacked = None
    if norms and all(type(t) is np.ndarray and t.dtype == np.float64 and t.ndim == 1 and t.size for t in norms) \
            and len({t.size for t in norms}) == 1:
        stacked = np.array(norms)
        if np.isnan(stacked).any():
            stacked = None
    if stacked is None:
        scale = max((float(np.asarray(t, dtype=float).max(initial=0.0)) for t in norms), default=0.0)
        return tuple(int(support_of(t, zero_tol, scale).sum()) for t in norms)
    top = stacked.max(axis=1)  # each iterate's largest (support_of's t.max())
    scale = max(float(top.max()), 0.0)  # reference_scale: each with initial=0.0, then the largest
    cuts = np.array([support_cut(float(c), scale, zero_tol) for c in top])
    return tuple(int(c) for c in np.count_nonzero(stacked > cuts[:, None], axis=1))
