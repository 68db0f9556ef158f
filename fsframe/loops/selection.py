"""The library's one support rule (:func:`support_of` on the run's :func:`reference_scale`, applied to
each group's contribution, :func:`contribution`) and the "exactly ``r`` features" rule of 002 §3.1
(:func:`select_exactly`); the loop base, the from-``X`` path and the conformance kit all count
non-zeros with them."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

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
    cut = max(zero_tol * max(float(np.max(t)), scale), 1e-12)
    return t > cut


def reference_scale(iterates, scale: NDArray | None = None) -> float:
    """The largest group norm over ``iterates`` (the scale meaningful non-zeros are measured on);
    with ``scale`` (:func:`group_scale`), the largest contribution (:func:`contribution`)."""
    return max((float(np.max(contribution(it.t, scale), initial=0.0)) for it in iterates), default=0.0)


def column_norms(X, centred: bool = False) -> NDArray:
    """The Euclidean norm of each column of ``X`` (dense or scipy.sparse); with ``centred``, of each
    column minus its mean, ``||X_j - mean_j||``. Sparse ``X`` is not densified: the centred sum
    runs over the stored entries, ``sum_stored (x - mean_j)^2 + (m - nnz_j) mean_j^2`` (the
    textbook ``sum x^2 - m mean^2`` cancels to 0 for a column ``1e8 + N(0, 1)``). A constant
    column (``np.ptp(X[:, j]) == 0``, the test the data checks use) has centred norm exactly 0: the
    rounded mean of a column of 0.1s differs from 0.1, which left ~1e-16 and a weight floor
    ``c / ||X_j||`` of ~4e15 times ``c`` (:class:`~fsframe.loops.em.EM`)."""
    import scipy.sparse as sp

    if sp.issparse(X):
        if not centred:
            return np.sqrt(np.asarray(X.multiply(X).sum(axis=0), dtype=float).ravel())
        C = sp.csc_matrix(X, dtype=float)
        C.sum_duplicates()
        m, n = C.shape
        nnz = np.diff(C.indptr)
        col = np.repeat(np.arange(n), nnz)
        mean = np.bincount(col, weights=C.data, minlength=n) / m if m else np.zeros(n)
        dev = C.data - mean[col]
        sq = np.bincount(col, weights=dev * dev, minlength=n) + (m - nnz) * mean**2
        if m:  # max/min count the implicit zeros
            constant = (C.max(axis=0).toarray().ravel() - C.min(axis=0).toarray().ravel()) == 0
            sq[constant] = 0.0
        return np.sqrt(sq)
    X = np.asarray(X, dtype=float)
    if not centred:
        return np.linalg.norm(X, axis=0)
    norms = np.linalg.norm(X - X.mean(axis=0), axis=0)
    if X.shape[0]:
        norms[np.ptp(X, axis=0) == 0] = 0.0
    return norms


def columns_scale(X, n_groups: int, centred: bool = False) -> NDArray | None:
    """:func:`column_norms` of ``X`` when the ``n_groups`` groups are its columns (one group per
    feature, or per training sample of a kernel map: ``X.shape[1] == n_groups``, the rule of
    :func:`fsframe.loops.ties.identical_groups`); ``None`` when they are not (no column scale).
    ``centred`` for a model a column's constant offset cannot change (:func:`offset_free`)."""
    if X is None or len(getattr(X, "shape", ())) != 2 or X.shape[1] != n_groups:
        return None
    norms = column_norms(X, centred)
    return norms if np.all(np.isfinite(norms)) else None


def offset_free(built) -> bool:
    """Whether the built model's decision values ignore a constant added to a column of ``X``: its
    intercept map (:class:`~fsframe.formulation.BuiltModel` ``intercept``) depends on a variable
    its bounds leave free to move —
    a free intercept ``b`` (hinge, logistic, the twin SVMs' planes, margin) absorbs ``c w_j``, and
    an intercept written over the weights (Lanckriet's ``mpm``, ``b = w^T mu - ...``) moves with the
    class means. A model whose intercept is the constant 0 (``l21-regression``) is not, nor one
    whose intercept variable is fixed (``b.fix(0)``, or bounds ``(0, 0)``): there a column's offset
    is part of what its weight contributes, and the raw norms are compared. The bounds read are the
    built Pyomo model's (a named expression among the map's atoms counts as free)."""
    intercept = getattr(built, "intercept", None)
    matrix = getattr(intercept, "matrix", None)
    if matrix is None:
        return False
    M = matrix.tocsr()
    used = np.unique(M.indices[M.data != 0])
    return any(not _held(intercept.vars[k]) for k in used)


def _held(v) -> bool:
    """Whether the model variable ``v`` (an atom of a :class:`~fsframe.pyomo_records.LinearMap`) is
    held at one value: fixed, or its lower and upper bounds equal. A named expression is not."""
    if not v.is_variable_type():
        return False
    if v.fixed:
        return True
    lb, ub = v.lb, v.ub
    return lb is not None and ub is not None and lb == ub


def groups_are_columns(sub) -> bool:
    """Whether ``sub``'s groups are the columns of its data ``sub.X`` (one group per feature, or per
    training sample of a kernel map applied before the fit): ``X.shape[1] == n_groups`` and, once
    its model is built, the formulation does not build a kernel of its own
    (:class:`~fsframe.formulation.BuiltModel` ``transform`` is ``None``). The RBF twin SVM's groups
    are its training samples while ``sub.X`` holds their features: at ``n == m`` the shapes agree
    by coincidence."""
    X = getattr(sub, "X", None)
    if sub is None or X is None or len(getattr(X, "shape", ())) != 2 or X.shape[1] != sub.n_groups:
        return False
    return not getattr(sub, "is_built", False) or getattr(sub.built, "transform", None) is None


_SCALES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def group_scale(sub) -> NDArray | None:
    """The column scale of ``sub``'s groups (:func:`columns_scale` of ``sub.X``, centred where the
    built model is :func:`offset_free`), once per subproblem; ``None`` before its model is built (a
    loop that computes its iterates itself) or when its groups are not the columns of ``sub.X``
    (:func:`groups_are_columns`)."""
    if sub is None or not getattr(sub, "is_built", False):
        return None
    try:
        return _SCALES[sub]
    except (KeyError, TypeError):
        pass
    out = columns_scale(sub.X, sub.n_groups, offset_free(sub.built)) if groups_are_columns(sub) else None
    try:
        _SCALES[sub] = out
    except TypeError:  # an object that cannot be weakly referenced: computed each time
        pass
    return out


def contribution(t: NDArray, scale: NDArray | None) -> NDArray:
    """Each group's contribution to the model's decision values, ``t_j ||X_j||`` (its norm times its
    column's norm, centred where the model is :func:`offset_free`, :func:`group_scale`): what the
    ``zero_tol`` cut compares, so that a feature measured in small units (a large column, a small
    weight) is not cut for the size of its weight alone. ``t`` itself when there is no column
    scale (``scale`` is ``None``)."""
    t = np.asarray(t, dtype=float)
    if scale is None or np.shape(scale) != t.shape:
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
    scale = reference_scale(iterates)
    counts = tuple(int(support_of(it.t, zero_tol, scale).sum()) for it in iterates)
    enough = [i for i, c in enumerate(counts) if c >= r]
    k = enough[-1] if enough else int(np.argmax(counts))
    t = iterates[k].t
    order = np.argsort(-t, kind="stable")
    keep = order[: min(r, counts[k])]
    mask = np.zeros(t.shape[0], dtype=bool)
    mask[keep] = True
    return Selection(k, mask, counts, collapsed=any(c < r for c in counts[k + 1:]))

