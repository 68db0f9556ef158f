"""The sparsity slot's weights: what an outer-loop iteration changes, in numpy, and (on request) in Pyomo.

A formulation's objective is ``loss + penalty`` with the penalty built by
:func:`fsframe.pyomo_ext.add_sparsity_slot`::

    penalty = sum_j lin[j] * s_j + sum_k lin_w[k] * w_k + sum_j quad[j] * ||w_(j)||^2

With the slot in column space (``w = W x``, ``s = S x``: :class:`SlotMaps`), new weights change
only the objective of the compiled problem::

    c = c_loss + S' lin + W' lin_w,        P = P_loss + 2 W' diag(quad[groups]) W

(:func:`weighted_problem`). An infinite ``lin[j]`` or ``quad[j]`` fixes group ``j`` at zero
through the bounds ``[0, 0]`` of its columns: the numerically stable form of an EM weight
``1/t^2`` at ``t = 0`` (Huang, King & Lyu, "Direct Zero-norm Optimization for Feature
Selection", eqs. 7-9: the EM weight of a zero coefficient is infinite).

The Pyomo model is not written per iteration: :class:`ModelWeights` remembers the weights last
set and writes the slot's mutable Params (and fixes the zeroed columns) only when the model is
asked for (:meth:`fsframe.compiler.CompiledModel.sync_model`).
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from ._lazy import lazy_module
from .canonical import ProblemData
from .errors import UnsupportedProblemError
from .pyomo_ext import SparsitySlot

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["SlotMaps", "SlotWeights", "slot_weights", "weighted_problem", "slot_penalty", "ModelWeights",
           "group_columns", "exclusive_groups"]


@attrs.frozen(eq=False)
class SlotMaps:
    """The sparsity slot in column space: ``w = W x`` (coefficient entries), ``s = S x``.

    Attributes
    ----------
    W : csr_matrix, shape (n_coef, n)
    S : csr_matrix, shape (n_groups, n), or None
        ``None`` when the slot has no ``lin`` term's magnitude.
    groups : array of int, shape (n_coef,)
        Group of each coefficient entry.
    n_groups : int
    terms : frozenset of str
        The penalty terms the model was built with.
    group_cols : tuple of arrays
        Per group, the columns its coefficient rows touch.
    exclusive : bool
        No column is shared between groups (needed to fix a group at zero).
    """

    W: sp.csr_matrix
    S: sp.csr_matrix | None
    groups: NDArray
    n_groups: int
    terms: frozenset
    group_cols: tuple
    exclusive: bool

    @classmethod
    def from_record(cls, record: SparsitySlot, coef_cols: NDArray, magnitude_cols: NDArray | None,
                    n: int) -> "SlotMaps":
        """The maps of ``record`` with its variables at columns ``coef_cols`` (of ``record.coef``)
        and ``magnitude_cols`` (of ``record.magnitude``) of an ``n``-column problem."""
        Wm = record.coef.matrix
        W = sp.csr_matrix((Wm.data, coef_cols[Wm.indices], Wm.indptr), shape=(Wm.shape[0], n))
        S = None
        if magnitude_cols is not None:
            Sm = record.magnitude.matrix
            S = sp.csr_matrix((Sm.data, magnitude_cols[Sm.indices], Sm.indptr), shape=(Sm.shape[0], n))
        groups = record.groups
        # the columns of each group: distinct (group, column) pairs of W's entries, sorted by group
        # then column, split at the group boundaries (one np.unique instead of one per group)
        Wc = W.tocoo()
        pairs = np.unique(np.stack([groups[Wc.row], Wc.col.astype(np.int64)]), axis=1)
        bounds = np.searchsorted(pairs[0], np.arange(1, record.n_groups))
        pair_cols = pairs[1].astype(Wc.col.dtype)
        group_cols = tuple(np.split(pair_cols, bounds)) if record.n_groups else ()
        exclusive = np.unique(pair_cols).size == pair_cols.size  # no column in two groups
        return cls(W=W, S=S, groups=groups, n_groups=record.n_groups, terms=record.terms,
                   group_cols=group_cols, exclusive=bool(exclusive))

    _cache: dict = attrs.field(factory=dict, init=False, repr=False)  # derived once, on first use

    def _flat(self) -> tuple[NDArray, NDArray]:
        """Every group's columns in one array (by group) and the group of each entry."""
        flat = self._cache.get("flat")
        if flat is None:
            sizes = np.fromiter((c.size for c in self.group_cols), dtype=np.int64, count=len(self.group_cols))
            cols = np.concatenate(self.group_cols).astype(np.int64) if self.group_cols else np.zeros(0, np.int64)
            flat = self._cache["flat"] = (cols, np.repeat(np.arange(sizes.size), sizes))
        return flat

    def columns_of(self, groups: NDArray) -> NDArray:
        """The columns of ``groups`` (indices of groups), concatenated."""
        if not len(groups):
            return np.zeros(0, dtype=np.int64)
        groups = np.asarray(groups)
        if groups.size > 1 and np.all(groups[1:] > groups[:-1]):  # sorted, distinct: one mask, no loop
            cols, owner = self._flat()
            keep = np.zeros(self.n_groups, dtype=bool)
            keep[groups] = True
            return cols[keep[owner]]
        return np.concatenate([self.group_cols[j] for j in groups]).astype(np.int64, copy=False)

    def quad_plan(self):
        """How ``2 W' diag(quad[groups]) W`` is filled without a sparse product: when every
        coefficient entry is one column of its own (``W`` a scaled selection, e.g. the hinge's free
        ``w``), it is the diagonal ``2 quad[groups] W_k^2`` on those columns. Returns
        ``(order, indices, indptr, w2)`` (entries in column order) or ``None`` for any other ``W``."""
        if "quad_plan" not in self._cache:
            W = self.W.tocsr()
            plan = None
            cols = W.indices
            if np.all(np.diff(W.indptr) == 1) and np.unique(cols).size == cols.size:
                order = np.argsort(cols, kind="stable")
                n = W.shape[1]
                indptr = np.zeros(n + 1, dtype=np.int32)
                np.cumsum(np.bincount(cols, minlength=n), out=indptr[1:])
                plan = (order, cols[order].astype(np.int32), indptr, (W.data * W.data)[order])
            self._cache["quad_plan"] = plan
        return self._cache["quad_plan"]


@attrs.frozen(eq=False)
class SlotWeights:
    """Validated slot weights (``None``: the term is absent from the problem).

    Infinite entries of ``lin``/``quad`` are recorded in ``fixed_groups`` and set to 0 in the
    arrays (the group's columns are fixed at zero instead).
    """

    lin: NDArray | None
    lin_w: NDArray | None
    quad: NDArray | None
    fixed_groups: NDArray


def slot_weights(slot: SlotMaps | None, lin=None, lin_w=None, quad=None) -> SlotWeights:
    """Check and broadcast the weights of one iteration for ``slot``.

    Raises
    ------
    UnsupportedProblemError
        The model has no slot, the slot lacks a term that was given, or a group must be fixed at
        zero while its columns are shared with other groups.
    ValueError
        A negative or NaN ``lin``/``quad``, or a non-finite ``lin_w``.
    """
    if slot is None:
        raise UnsupportedProblemError("this model has no sparsity slot (built without add_sparsity_slot)")
    given = (("lin", lin), ("lin_w", lin_w), ("quad", quad))
    missing = [t for t, v in given if v is not None and t not in slot.terms]
    if missing:
        raise UnsupportedProblemError(
            f"the model's slot has no {missing} term(s); it was built with {sorted(slot.terms)}")
    per_group = {}
    for name, vals in (("lin", lin), ("quad", quad)):
        if vals is not None:
            vals = np.array(np.broadcast_to(np.asarray(vals, dtype=float), (slot.n_groups,)))
            if np.any(vals < 0) or np.any(np.isnan(vals)):
                raise ValueError(f"{name} slot weights must be >= 0 (inf fixes a group at zero)")
        per_group[name] = vals
    if lin_w is not None:
        lin_w = np.broadcast_to(np.asarray(lin_w, dtype=float), (slot.W.shape[0],))
        if not np.all(np.isfinite(lin_w)):
            raise ValueError("lin_w slot weights must be finite")
    fixed = np.zeros(slot.n_groups, dtype=bool)
    for vals in per_group.values():
        if vals is not None:
            fixed |= np.isinf(vals)
    if fixed.any():
        if not slot.exclusive:
            raise UnsupportedProblemError("cannot fix a group at zero: its columns are shared with other groups")
        for vals in per_group.values():
            if vals is not None:
                vals[fixed] = 0.0
    return SlotWeights(per_group["lin"], lin_w, per_group["quad"], np.flatnonzero(fixed))


def weighted_problem(base: ProblemData, slot: SlotMaps, weights: SlotWeights) -> ProblemData:
    """``base`` (the loss-only problem) with the penalty at ``weights``: only ``c``, ``P`` and,
    for fixed groups, ``lb``/``ub`` change; the constraint matrices are shared.

    Raises
    ------
    UnsupportedProblemError
        A group to fix at zero has a column whose bounds exclude zero (a variable the model
        fixed at another value, or bounded away from zero).
    """
    lb, ub = base.lb, base.ub
    if weights.fixed_groups.size:
        cols = slot.columns_of(weights.fixed_groups)
        outside = cols[(lb[cols] > 0.0) | (ub[cols] < 0.0)]
        if outside.size:
            # [0, 0] would replace bounds that exclude zero (or a variable fixed elsewhere) by a
            # feasible fix: refuse rather than solve another problem
            raise UnsupportedProblemError(
                f"an infinite slot weight fixes a group at zero, but column {int(outside[0])} has bounds "
                f"[{lb[outside[0]]:g}, {ub[outside[0]]:g}] (fixed or bounded away from zero) in the model; "
                "give such groups a finite weight or bounds that contain zero")
        key = weights.fixed_groups.tobytes()
        last = slot._cache.get("fixed_bounds")
        if last is not None and last[0] is base.lb and last[1] is base.ub and last[2] == key:
            lb, ub = last[3], last[4]  # the same groups fixed as in the last call: the same arrays
        else:
            lb, ub = lb.copy(), ub.copy()
            lb[cols] = 0.0
            ub[cols] = 0.0
            slot._cache["fixed_bounds"] = (base.lb, base.ub, key, lb, ub)
    # c changes only with linear weights; otherwise base.c itself (a ProblemData's arrays are never
    # changed in place), so what is cached by identity downstream (the slacks' settle rule) holds
    c = base.c
    if weights.lin is not None or weights.lin_w is not None:
        c = base.c.copy()
    if weights.lin is not None:
        c += slot.S.T @ weights.lin
    if weights.lin_w is not None:
        c += slot.W.T @ weights.lin_w
    P = base.P
    if weights.quad is not None:
        plan = slot.quad_plan()
        if plan is not None:  # a diagonal, filled straight into CSC (no sparse product per iteration)
            order, indices, indptr, w2 = plan
            n = base.n
            vals = 2.0 * weights.quad[slot.groups[order]] * w2
            if not vals.all():  # as the product: no stored zeros (a zero P is no QP); the plan's arrays stay
                keep = vals != 0
                key = keep.tobytes()
                last = slot._cache.get("quad_pattern")
                if last is not None and last[0] == key:  # the same zeros as in the last call: the same arrays
                    indptr, kept = last[1], last[2]
                else:
                    indptr = np.zeros(n + 1, dtype=np.int32)
                    np.cumsum(np.bincount(indices[keep], minlength=n), out=indptr[1:])
                    kept = indices[keep]
                    slot._cache["quad_pattern"] = (key, indptr, kept)
                vals, indices = vals[keep], kept
            Pq = sp.csc_matrix((vals, indices, indptr), shape=(n, n))
        else:
            Pq = (slot.W.T @ sp.diags(2.0 * weights.quad[slot.groups]) @ slot.W).tocsc()
        P = Pq if base.P is None else (base.P + Pq).tocsc()
    return base.evolve(c=c, P=P, lb=lb, ub=ub)


def slot_penalty(slot: SlotMaps, weights: SlotWeights, coef: NDArray, t: NDArray) -> float:
    """The penalty of the coefficients ``coef`` (group norms ``t``, in the formulation's group
    norm) at ``weights``: ``sum_j lin[j] t_j + lin_w'w + sum_j quad[j] ||w_(j)||_2^2``, the value
    the compiled problem's penalty takes at an optimum (where ``s_j = t_j``), computed from the
    coefficients rather than from the solver's ``s`` (which may exceed ``t_j`` at an interior
    point). Fixed groups count 0 (their coefficients are zero); so do groups without a magnitude
    (``s_j`` identically 0: a model without a sparsity penalty, ``Formulation.sparse = False``)."""
    pen = 0.0
    if weights.lin is not None and slot.S is not None:
        pen += float(weights.lin[np.diff(slot.S.indptr) > 0] @ t[np.diff(slot.S.indptr) > 0])
    if weights.lin_w is not None:
        pen += float(weights.lin_w @ coef)
    if weights.quad is not None:
        pen += float(weights.quad[slot.groups] @ (coef * coef))
    return pen


class ModelWeights:
    """The slot weights the Pyomo model should hold, written into it only on request.

    :meth:`set` is called once per iteration and costs nothing; :meth:`write` brings the slot's
    mutable Params ``lin``, ``lin_w``, ``quad`` and the fixed columns up to the weights last set
    (a term not set goes back to 0, so the model is the problem that was solved). A column the
    model had fixed when it was compiled is fixed again at its own value, not freed, when its
    group's weight becomes finite: the compiled bounds keep that fix too.

    Parameters
    ----------
    record : SparsitySlot
        The slot record (its ``block`` holds the Params).
    slot : SlotMaps
    columns : list of VarData
        The compiled problem's columns (``columns[j]`` is column ``j``).
    """

    def __init__(self, record: SparsitySlot, slot: SlotMaps, columns: list):
        self._block = record.block
        self._slot = slot
        self._columns = columns
        self._pending: SlotWeights | None = None
        self._nonzero_params: set = set()  # Params an earlier write set (all start at 0)
        self._fixed_cols: set = set()  # columns a write fixed at zero
        # columns fixed in the model when it was compiled, and their values (their bounds in base)
        self._compiled_fixed = {j: v.value for j, v in enumerate(columns) if v.fixed}

    def set(self, weights: SlotWeights) -> None:
        self._pending = weights

    def write(self) -> None:
        """Write the weights last set into the Pyomo model (nothing if it already holds them)."""
        weights, self._pending = self._pending, None
        if weights is None:
            return
        blk = self._block
        for name in ("lin", "lin_w", "quad"):
            vals = getattr(weights, name)
            if vals is None:
                # an absent term's Params go back to 0 (only if a write set them)
                if name in self._nonzero_params:
                    getattr(blk, name).store_values(0.0, check=False)
                    self._nonzero_params.discard(name)
                continue
            # check=False skips Pyomo's per-entry index and domain validation (10x faster): the
            # indices are the Param's own 0..k-1 and the values floats slot_weights validated.
            getattr(blk, name).store_values(dict(enumerate(np.asarray(vals, dtype=float).tolist())), check=False)
            self._nonzero_params.add(name)
        want = set(self._slot.columns_of(weights.fixed_groups).tolist())
        for j in self._fixed_cols - want:
            if j in self._compiled_fixed:
                self._columns[j].fix(self._compiled_fixed[j], skip_validation=True)
            else:
                self._columns[j].unfix()
        for j in want - self._fixed_cols:
            self._columns[j].fix(0.0, skip_validation=True)  # as in the compiled bounds; 5x faster
        self._fixed_cols = want


def _slot_pairs(slot: SlotMaps):
    """``(groups, columns)`` of every entry of the slot's maps ``W`` (coefficients) and ``S``
    (magnitude), with repeats."""
    W = slot.W.tocoo()
    groups, cols = [slot.groups[W.row]], [W.col]
    if slot.S is not None and slot.S.nnz:
        S = slot.S.tocoo()
        groups.append(S.row)
        cols.append(S.col)
    return np.concatenate(groups).astype(np.int64), np.concatenate(cols).astype(np.int64)


def group_columns(slot: SlotMaps) -> tuple:
    """Per group, the columns its coefficients (``W``) and its magnitude (``S``, e.g. the split
    ``s_j = u_j + v_j`` of a model whose ``w_j`` is a column of its own) touch, sorted."""
    if slot.S is None or not slot.S.nnz:
        return slot.group_cols
    groups, cols = _slot_pairs(slot)
    order = np.lexsort((cols, groups))  # by group, then column (no structured-array unique)
    g, c = groups[order], cols[order]
    keep = np.ones(g.size, dtype=bool)
    keep[1:] = (g[1:] != g[:-1]) | (c[1:] != c[:-1])
    g, c = g[keep], c[keep]
    return tuple(np.split(c, np.searchsorted(g, np.arange(1, slot.n_groups))))


def exclusive_groups(slot: SlotMaps) -> bool:
    """Whether no column belongs to two groups (counting the magnitude's columns)."""
    groups, cols = _slot_pairs(slot)
    if not cols.size:
        return True
    n = int(cols.max()) + 1
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, -1)
    np.minimum.at(lo, cols, groups)
    np.maximum.at(hi, cols, groups)
    used = hi >= 0
    return bool(np.all(lo[used] == hi[used]))
