"""The result of compiling: the problem, its columns, and what a loop reads and changes per iteration."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..canonical import ProblemData
from ..pyomo_ext import LinearMap, SparsitySlot, materialize
from ..slot import ModelWeights, SlotMaps, SlotWeights, slot_weights, weighted_problem

__all__ = ["CompiledModel"]


class CompiledModel:
    """A Pyomo model compiled once, plus what loops need to update and read it.

    The Pyomo model is kept up to date lazily: :meth:`with_weights` changes the compiled problem
    only, and the model's slot Params and fixed variables follow the weights last set when the
    model is asked for (:attr:`model`, :meth:`sync_model`, :meth:`load_solution`); so do the rows
    of its deferred constraint blocks (:func:`fsframe.pyomo_ext.materialize`), which the
    compiler read from their records.

    Attributes
    ----------
    columns : list of VarData
        Column ``j`` of every matrix is ``columns[j]``.
    col_index : dict
        ``id(VarData) -> column``.
    base : ProblemData
        The loss-only problem (zero slot weights, the model's bounds).
    data : ProblemData
        The problem at the slot weights last set (``base`` after compiling).
    slot : SlotMaps or None
    paths : dict
        How many rows each reading path produced (``recorded``, ``direct``, ``general``) and
        how many cones (``cones``, ``exp_cones``).
    last_slot_weights : fsframe.slot.SlotWeights or None
        The validated slot weights of :attr:`data` (set by :meth:`with_weights`).
    definitions : tuple of fsframe.canonical.Definition
        The model's recorded definitions of auxiliary variables (a log-sum-exp epigraph, a
        residual) in columns: how an answer's auxiliaries are read exactly
        (:class:`~fsframe.canonical.Auxiliaries`).
    """

    def __init__(self, model, columns: list, col_index: dict, data: ProblemData, slot: SlotMaps | None,
                 slot_record: SparsitySlot | None, paths: dict, definitions: tuple = ()):
        self._model = model
        self.columns = columns
        self.col_index = col_index
        self.base = data
        self.data = data
        self.slot = slot
        self.paths = paths
        self.definitions = tuple(definitions)
        self._model_weights = None if slot is None else ModelWeights(slot_record, slot, columns)
        self.last_slot_weights: SlotWeights | None = None  # the validated weights of data (with_weights)

    # -- the Pyomo model, brought up to date on request ---------------------------------------
    @property
    def model(self):
        """The Pyomo model, holding the slot weights last set (see :meth:`sync_model`)."""
        return self.sync_model()

    def sync_model(self):
        """Create the rows of the model's deferred constraint blocks, write the slot weights last
        set by :meth:`with_weights` into its mutable Params (a term not passed goes back to 0)
        and fix the columns of groups fixed at zero, so that the model states the problem last
        solved; return the model. Writes nothing when the model already holds those weights."""
        materialize(self._model)
        if self._model_weights is not None:
            self._model_weights.write()
        return self._model

    # -- reading solutions ----------------------------------------------------------------
    def cols(self, vars) -> NDArray:
        """The columns of the Pyomo variables ``vars``."""
        return np.fromiter((self.col_index[id(v)] for v in vars), dtype=np.int64, count=len(vars))

    def evaluate(self, lmap: LinearMap, x: NDArray) -> NDArray:
        """Values of the affine map ``lmap`` at the solution ``x`` (variables that are not
        columns — unused in the model — count as 0)."""
        idx = np.array([self.col_index.get(id(v), -1) for v in lmap.vars], dtype=np.int64)
        vals = np.where(idx >= 0, x[np.maximum(idx, 0)], 0.0)
        return lmap.matrix @ vals + lmap.const

    def coef(self, x: NDArray) -> NDArray:
        """The coefficient entries ``w = W x`` of the sparsity slot."""
        return self.slot.W @ x

    def group_norms(self, w: NDArray, norm: str = "l2") -> NDArray:
        """``t_j = ||w_(j)||`` for each group, in the ``"l2"`` or ``"l1"`` norm."""
        if norm == "l1":
            return np.bincount(self.slot.groups, weights=np.abs(w), minlength=self.slot.n_groups)
        sq = np.bincount(self.slot.groups, weights=w * w, minlength=self.slot.n_groups)
        return np.sqrt(sq)

    def loss(self, x: NDArray) -> float:
        """The objective without the sparsity penalty at ``x``."""
        return self.base.objective(x)

    def load_solution(self, x: NDArray) -> None:
        """Bring the model up to date (:meth:`sync_model`) and write ``x`` into its variables."""
        self.sync_model()
        for v, val in zip(self.columns, x.tolist()):
            v.set_value(val, skip_validation=True)

    # -- changing the objective -------------------------------------------------------------
    def with_weights(self, lin=None, lin_w=None, quad=None, *, sync: bool = True) -> ProblemData:
        """The problem with slot weights ``lin`` (per group, on ``s_j``), ``lin_w`` (per
        coefficient, on ``w_k``) and ``quad`` (per group, on ``||w_(j)||^2``).

        An infinite ``lin[j]`` or ``quad[j]`` fixes group ``j`` at zero (bounds ``[0, 0]`` on
        its columns; refused with :class:`~fsframe.errors.UnsupportedProblemError` when a column's
        bounds in the model exclude zero). Only ``c``, ``P`` and, for fixed groups, ``lb``/``ub`` change; the
        constraint matrices are shared (:func:`fsframe.slot.weighted_problem`).

        Parameters
        ----------
        sync : bool
            Make these the model's weights: :attr:`data` becomes the returned problem and the
            Pyomo model, when next asked for, holds them. ``False`` only computes the problem
            (to compare or solve it aside); neither :attr:`data` nor the model change.
        """
        weights = slot_weights(self.slot, lin, lin_w, quad)
        data = weighted_problem(self.base, self.slot, weights)
        if sync:
            self._model_weights.set(weights)
            self.data = data
            self.last_slot_weights = weights  # the validated weights of data (Subproblem.solve's penalty)
        return data
