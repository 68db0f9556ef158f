"""Each group's column scale in a subproblem's data (:func:`group_scale`): the column norms of
``X`` (:func:`column_norms`), centred where the built model ignores a column's constant offset
(:func:`offset_free`), when its groups are the columns of ``X`` (:func:`groups_are_columns`).
The support rule (:mod:`fsframe.loops.selection`) compares each group's contribution on it, and
the subproblem's iterates carry it (:attr:`fsframe.problem.Iterate.column_scale`); it reads the
subproblem and its built model by their attributes only, so that both can import it."""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

__all__ = ["column_norms", "columns_scale", "offset_free", "groups_are_columns", "group_scale"]


def column_norms(X, centred: bool = False, ptp: NDArray | None = None) -> NDArray:
    """The Euclidean norm of each column of ``X`` (dense or scipy.sparse); with ``centred``, of each
    column minus its mean, ``||X_j - mean_j||``. Sparse ``X`` is not densified: the centred sum
    runs over the stored entries, ``sum_stored (x - mean_j)^2 + (m - nnz_j) mean_j^2`` (the
    textbook ``sum x^2 - m mean^2`` cancels to 0 for a column ``1e8 + N(0, 1)``). A constant
    column (``np.ptp(X[:, j]) == 0``, the test the data checks use) has centred norm exactly 0: the
    rounded mean of a column of 0.1s differs from 0.1, which left ~1e-16 and a weight floor
    ``c / ||X_j||`` of ~4e15 times ``c`` (:class:`~fsframe.loops.em.EM`). ``ptp``: a dense ``X``'s
    ``np.ptp(X, axis=0)`` when the caller has it already (its column maxima and minima computed
    once for another use: :class:`~fsframe.dense_em.DenseHingeSubproblem`); not recomputed."""
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
        norms[(np.ptp(X, axis=0) if ptp is None else ptp) == 0] = 0.0
    return norms


def columns_scale(X, n_groups: int, centred: bool = False, ptp: NDArray | None = None) -> NDArray | None:
    """:func:`column_norms` of ``X`` when the ``n_groups`` groups are its columns (one group per
    feature, or per training sample of a kernel map: ``X.shape[1] == n_groups``, the rule of
    :func:`fsframe.loops.ties.identical_groups`); ``None`` when they are not (no column scale).
    ``centred`` for a model a column's constant offset cannot change (:func:`offset_free`); ``ptp``
    as :func:`column_norms` takes it."""
    if X is None or len(getattr(X, "shape", ())) != 2 or X.shape[1] != n_groups:
        return None
    norms = column_norms(X, centred, ptp)
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


def group_scale(sub, ptp: NDArray | None = None) -> NDArray | None:
    """The column scale of ``sub``'s groups (:func:`columns_scale` of ``sub.X``, centred where the
    built model is :func:`offset_free`), once per subproblem and intercept state: whether the
    model is offset-free is read again at each call, since ``set_bounds`` / ``restate`` can fix or
    free the intercept (a bound ``bmax = 0`` made a bound search's first model offset-bound, a
    larger one its next offset-free); ``None`` before its model is built (a loop that computes its
    iterates itself) or when its groups are not the columns of ``sub.X`` (:func:`groups_are_columns`).
    ``ptp``: ``np.ptp(sub.X, axis=0)`` from the caller, used where the scale is computed (not kept)."""
    if sub is None or not getattr(sub, "is_built", False):
        return None
    if not groups_are_columns(sub):
        return None
    centred = offset_free(sub.built)
    try:
        return _SCALES[sub][centred]
    except (KeyError, TypeError):
        pass
    out = columns_scale(sub.X, sub.n_groups, centred, ptp)
    try:
        _SCALES.setdefault(sub, {})[centred] = out
    except TypeError:  # an object that cannot be weakly referenced: computed each time
        pass
    return out
