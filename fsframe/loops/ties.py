"""Identical features: break the symmetry of an evenly split weight the same way on every path.

Two feature groups whose data columns are identical make the model symmetric under swapping
them. An iterate that splits its weight evenly between them stays split under DCA and IRL1 up to
the solver's rounding — the linearisation gives both the same weight, so the convex subproblem
has a symmetric optimum (its only one when it is strictly convex, as MPM's ridge makes it; the
centre of its optimal face for an interior-point solver) — while a concave ``phi`` makes that
point a saddle along the swap (``phi(a) + phi(b)`` is largest at ``a = b`` for a fixed ``a + b``).
Whether the loop leaves it, when, and towards which member is then decided by rounding errors
of order 1e-9, which the saddle amplifies by a factor at every iteration: the same data gave
answers up to 22 % apart with ``working_set=True`` and ``False`` (and between backends).

:class:`Tiebreak` makes the decision deterministic: the first time a class of identical groups
is split evenly (at the solver's accuracy, :data:`TIE_RTOL`), the loop linearises at a point that
moves :data:`TILT` of the other members' weight to the member of lowest index — an asymmetry
seven orders of magnitude above the rounding, the same on every path. From a stable symmetric
point (the convex part outweighs the concave one) the iterates return to it; from a saddle they
leave it towards that member. The tilted point is no iterate, so the step taken from it is not
monitored for descent and cannot stop the loop.

The tilt decides the direction, but the loop may reach ``n_features`` before the copy's weight
has gone (EM's ``1/t^2`` needs about ten steps to undo a 1 % asymmetry). So where the loop counts
non-zeros for ``n_features`` and ranks the groups (the stop at ``r`` and the ``r`` largest, 002
§3.1), it reads :meth:`Tiebreak.distinct`: each class merged onto its member of lowest index (the
class's coefficients summed there, the others zero; identical columns give the same decision
values). A copy then never takes one of the ``r`` slots. Only bitwise-identical columns are
classes: a near copy (``x * (1 + 1e-12)``, one entry an ulp off, ``x + c``) is another feature.
"""

from __future__ import annotations

import weakref

import attrs
import numpy as np
from numpy.typing import NDArray

from .selection import groups_are_columns

__all__ = ["identical_groups", "merged", "Tiebreak", "TIE_RTOL", "TILT"]

TIE_RTOL = 1e-6
"""Members whose norms are within this relative distance of the class's largest are tied."""

TILT = 1e-2
"""The fraction of each other tied member's weight moved to the member of lowest index."""


_FOUND: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def identical_groups(sub) -> list[NDArray]:
    """Classes (arrays of at least two group indices, ascending) of groups whose data columns are
    identical, when the subproblem's groups are the columns of its data ``sub.X`` (one group per
    feature, or per training sample of a kernel map;
    :func:`fsframe.scales.groups_are_columns`); an empty list otherwise. Found once per
    subproblem (a DCA run with ``n_features`` asks twice: its tie-break and the count; on sparse
    2 000 x 20 000 data one search takes 0.27 s) — once its model is built: before that,
    :func:`~fsframe.scales.groups_are_columns` is only a shape rule (a formulation that
    builds a kernel of its own has not said so yet), and the answer is not kept."""
    try:
        return list(_FOUND[sub])
    except (KeyError, TypeError):
        pass
    out = _identical_groups(sub)
    if not getattr(sub, "is_built", False):
        return out
    try:
        _FOUND[sub] = tuple(out)
    except TypeError:  # an object that cannot be weakly referenced: searched each time
        pass
    return out


def _identical_groups(sub) -> list[NDArray]:
    import scipy.sparse as sp

    X = getattr(sub, "X", None)
    if not groups_are_columns(sub) or X.shape[1] < 2:  # e.g. the RBF twin SVM's samples at n == m
        return []
    if sp.issparse(X):
        return _identical_sparse_columns(X)
    X = np.asarray(X)
    cand = _candidates(X)
    if cand.size < 2:
        return []
    _, inverse, counts = np.unique(X[:, cand].T, axis=0, return_inverse=True, return_counts=True)
    inverse = np.ravel(inverse)
    return [cand[np.flatnonzero(inverse == c)] for c in np.flatnonzero(counts > 1)]


def _candidates(X: NDArray) -> NDArray:
    """The columns of a dense ``X`` that may have an identical twin, a superset of those that have
    one. Two keys per column, its product with a fixed positive vector ``u`` and its sum; a column
    is a candidate when, in the order of each key, a neighbour's key lies within the rounding bound
    ``tol`` of its own (the larger of the two columns' bounds). Two identical columns' keys differ
    by at most the rounding of their sums (below ``tol``, the same for both), and a column's
    neighbour on the side of its twin is no farther than the twin: so a column with a twin is
    always a candidate. The exact comparison (``np.unique`` over rows: ~1 ms on 166 x 60, ~2 ms
    on 455 x 30, per fit) then runs on the candidates only — usually none."""
    m, n = X.shape
    scale = 2.0 * np.abs(X).sum(axis=0)  # bounds |sum| and |u'x| of each column
    tol = max(1e-9, 8.0 * m * np.finfo(float).eps) * scale  # above either sum's rounding error
    # sums that overflow bound nothing, nor does a column with inf (an infinite |x| sum) or nan (a nan
    # one; nan never equals itself): compare exactly. The |x| sums test X for them (no pass of its own)
    if not np.all(np.isfinite(scale)):
        return np.arange(n)
    near = np.ones(n, dtype=bool)
    # the second key only while the first leaves candidates (usually it leaves none; each key alone
    # keeps a superset, and the exact comparison decides)
    for key in _keys(X):
        if not np.all(np.isfinite(key)):
            return np.arange(n)
        o = np.argsort(key, kind="stable")
        link = np.abs(np.diff(key[o])) <= np.maximum(tol[o[:-1]], tol[o[1:]])
        chained = np.zeros(n, dtype=bool)
        chained[o[:-1][link]] = chained[o[1:][link]] = True
        near &= chained
        if not near.any():
            break
    return np.flatnonzero(near)


def _keys(X: NDArray):
    """:func:`_candidates`' keys of the columns of ``X``, one at a time: the products with a fixed
    positive ``u`` in ``[1, 2)`` (no randomness), then the sums. That order: standardised data's
    column sums are all ~0 (within the tolerance of each other: on Sonar every column is linked),
    so the sums rule out nothing there and the first key alone usually leaves no candidate."""
    m = X.shape[0]
    yield (1.0 + np.arange(m, dtype=float) / max(m, 1)) @ X
    yield X.sum(axis=0)


def _identical_sparse_columns(X) -> list[NDArray]:
    """:func:`identical_groups` for a scipy.sparse ``X`` without densifying it: columns keyed by
    their stored non-zeros (a CSC copy with sorted indices and explicit zeros removed)."""
    C = X.tocsc(copy=True)
    C.sum_duplicates()
    C.eliminate_zeros()
    C.sort_indices()
    seen: dict = {}
    for j in range(C.shape[1]):
        lo, hi = C.indptr[j], C.indptr[j + 1]
        seen.setdefault((C.indices[lo:hi].tobytes(), C.data[lo:hi].tobytes()), []).append(j)
    return [np.asarray(g) for g in seen.values() if len(g) > 1]


def tilted(coef: NDArray, t: NDArray, groups: NDArray, classes: list[NDArray], cut: float) -> tuple:
    """``(coef', tilted classes)``: ``coef`` with, in every class where at least two members above
    ``cut`` are tied with the largest, :data:`TILT` of each other tied member's coefficients moved
    to the tied member of lowest index (the sum over the class, hence the model's decision values
    when the columns are identical, is unchanged)."""
    out, hit = None, []
    for i, cls in enumerate(classes):
        live = cls[t[cls] > cut]
        tied = live[t[live] >= np.max(t[live], initial=0.0) * (1.0 - TIE_RTOL)]
        if tied.size < 2:
            continue
        if out is None:
            out = np.array(coef, dtype=float, copy=True)
        keep = np.flatnonzero(groups == tied[0])
        for j in tied[1:]:
            idx = np.flatnonzero(groups == j)
            moved = TILT * out[idx]
            out[idx] -= moved
            out[keep] += moved
        hit.append(i)
    return (coef if out is None else out), hit


def merged(coef: NDArray, groups: NDArray, classes: list[NDArray]) -> NDArray:
    """``coef`` with each class's coefficients summed onto its member of lowest index and the other
    members' set to zero (a new array; for identical columns the decision values are unchanged)."""
    out = np.array(coef, dtype=float, copy=True)
    for cls in classes:
        keep = np.flatnonzero(groups == cls[0])
        for j in cls[1:]:
            idx = np.flatnonzero(groups == j)
            out[keep] += out[idx]
            out[idx] = 0.0
    return out


class Tiebreak:
    """Per run: the classes of identical groups of ``sub`` and which were tilted already."""

    def __init__(self, loop, sub):
        self.loop = loop
        self.sub = sub
        self.classes = identical_groups(sub) if sub is not None else []
        self.done = np.zeros(len(self.classes), dtype=bool)

    def point(self, it) -> tuple:
        """``(point, tilted)``: the point to linearise at — ``it``, or ``it`` with each class that
        is split evenly for the first time tilted (:func:`tilted`) — and whether it was."""
        if not self.classes or not it.ok or it.t is None:
            return it, False
        todo = [c for c, d in zip(self.classes, self.done) if not d]
        if not todo:
            return it, False
        cut = max(self.loop.zero_tol * float(np.max(it.t, initial=0.0)), 1e-12)
        coef, hit = tilted(it.coef, it.t, self.sub.compiled.slot.groups, todo, cut)
        if not hit:
            return it, False
        index = np.flatnonzero(~self.done)
        self.done[index[hit]] = True
        return attrs.evolve(it, coef=coef, t=self.sub.group_norms(coef)), True

    def distinct(self, it) -> NDArray:
        """The group norms of ``it`` with each class of identical groups merged onto its member of
        lowest index (:func:`merged`): what ``n_features`` counts and ranks. ``it.t`` itself when
        there are no classes."""
        if not self.classes or it.coef is None:
            return it.t
        return self.sub.group_norms(merged(it.coef, self.sub.compiled.slot.groups, self.classes))
