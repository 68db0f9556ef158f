"""Helpers that build Pyomo components in bulk from numpy and record what they built.

Formulations state their subproblem as an ordinary Pyomo ``ConcreteModel`` — any Pyomo tool can
write or solve it — but three kinds of component are built through these helpers:

* :func:`add_linear_constraints` — a block of rows ``lower <= M @ vars + const <= upper``,
  assembled as ``LinearExpression`` rows inside ``PauseGC`` (0.07 s for 400k terms instead of
  3 s for rule-based building, as measured for this project);
* :func:`add_soc` — a second-order cone ``||lhs|| <= rhs`` stated in Pyomo as auxiliary
  variables ``z = lhs``, ``t = rhs >= 0`` and the quadratic constraint ``sum z_i^2 <= t^2``
  (the form conic-aware Pyomo solvers such as Gurobi recognise);
* :func:`add_sparsity_slot` — the objective ``loss + penalty`` whose penalty weights are mutable
  Params that outer loops change between solves.

Each helper records its matrices in the model's :class:`Annotations`. The compiler
(:mod:`fsframe.compiler`) uses a record directly when the component is still intact (the
*fast path*) and otherwise reads the Pyomo component itself (the *general path*), so a model
written with plain Pyomo constraints compiles too, only slower. ``fsframe.testing.check_formulation``
verifies that both paths give the same problem.
"""

from __future__ import annotations

import operator
from typing import Iterable, Sequence

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import lazy_module
from .errors import UnsupportedProblemError

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = [
    "LinearMap",
    "Annotations",
    "LinearBlock",
    "ConeRecord",
    "SparsitySlot",
    "SLOT_TERMS",
    "annotations",
    "add_linear_constraints",
    "add_named_expressions",
    "add_soc",
    "add_sparsity_slot",
    "var_list",
]

SLOT_TERMS = frozenset({"lin", "lin_w", "quad"})
"""Penalty terms of the sparsity slot: ``lin[j] * s_j`` (weight on the group-norm epigraph),
``lin_w[k] * w_k`` (signed weight on a coefficient, for DCA) and ``quad[j] * ||w_(j)||^2``."""

_ANNOTATIONS = "_fsframe_annotations"


def var_list(*components) -> list:
    """Flatten Pyomo Vars (indexed or scalar) and VarData into one list, in index order."""
    out: list = []
    for comp in components:
        if isinstance(comp, (list, tuple)):
            out.extend(var_list(*comp))
        elif comp.is_indexed():
            out.extend(comp.values())
        else:
            out.append(comp)
    return out


@attrs.frozen(eq=False)
class LinearMap:
    """A block of affine expressions ``matrix @ vars + const``, stated as a matrix.

    Parameters
    ----------
    matrix : array or sparse matrix, shape (n_rows, n_vars)
    vars : sequence of Pyomo VarData, length n_vars
        For :func:`add_linear_constraints` also named expressions made by
        :func:`add_named_expressions` (the "atoms" the rows are written over).
    const : array, shape (n_rows,), optional
    """

    matrix: sp.csr_matrix = attrs.field(converter=lambda a: sp.csr_matrix(a, dtype=float))
    vars: tuple = attrs.field(converter=tuple)
    const: NDArray = attrs.field(default=None)

    def __attrs_post_init__(self):
        r, k = self.matrix.shape
        if k != len(self.vars):
            raise ValueError(f"LinearMap: matrix has {k} columns but {len(self.vars)} variables")
        const = np.zeros(r) if self.const is None else np.asarray(self.const, dtype=float).reshape(r)
        object.__setattr__(self, "const", const)

    @property
    def n_rows(self) -> int:
        return int(self.matrix.shape[0])

    @classmethod
    def identity(cls, vars: Sequence) -> "LinearMap":
        return cls(sp.identity(len(vars), format="csr"), vars)

    def expressions(self) -> list:
        """One expression per row, built in bulk with GC paused: a ``LinearExpression`` over
        variables, or, when some atoms are named expressions, a ``SumExpression`` of
        ``coef * expression`` (``ProductExpression``) and then ``coef * var`` terms."""
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression, ProductExpression, SumExpression

        M, c = self.matrix, self.const
        atoms = np.fromiter(self.vars, dtype=object, count=len(self.vars))  # fancy-indexable
        named = np.fromiter((not v.is_variable_type() for v in self.vars), dtype=bool, count=len(self.vars))
        out = []
        with PauseGC():
            for i in range(M.shape[0]):
                lo, hi = M.indptr[i], M.indptr[i + 1]
                idx, coefs = M.indices[lo:hi], M.data[lo:hi]
                if not named.any():
                    out.append(LinearExpression(constant=float(c[i]), linear_coefs=coefs.tolist(),
                                                linear_vars=atoms[idx].tolist()))
                    continue
                nm = named[idx]
                args = [float(c[i])] if c[i] else []
                args.extend(map(ProductExpression, zip(coefs[nm].tolist(), atoms[idx[nm]].tolist())))
                args.extend(map(MonomialTermExpression, zip(coefs[~nm].tolist(), atoms[idx[~nm]].tolist())))
                out.append(SumExpression(args))
        return out


def _same_exprs(datas, exprs: tuple) -> bool:
    """Whether every ConstraintData (or ExpressionData) still holds the expression object recorded
    (``set_value``, and so ``con[i] = ...``, replaces it): one identity test per row, no
    expression walk."""
    return all(map(operator.is_, map(_EXPR, datas), exprs))


_EXPR = operator.attrgetter("expr")


@attrs.define(eq=False)
class NamedBlock:
    """Record of :func:`add_named_expressions`: ``component[i]`` is row ``i`` of ``lmap``.

    ``exprs`` are the expressions as built; a row redefined in Pyomo afterwards (``w[i] = ...``)
    makes :meth:`intact` false, and so every recorded block written over it."""

    component: object
    lmap: LinearMap
    data: tuple  # the ExpressionData, in row order
    exprs: tuple = ()

    def intact(self) -> bool:
        """Every named expression still has the definition recorded."""
        return len(self.exprs) == len(self.data) and _same_exprs(self.data, self.exprs)


@attrs.define(eq=False)
class LinearBlock:
    """Record of :func:`add_linear_constraints` (``lmap`` over variables only).

    ``exprs`` are the rows' relational expressions as built; :meth:`intact` compares them by
    identity, so a row edited in Pyomo afterwards sends the component to the general path, and
    so does a named expression the rows are written over (``named``) redefined afterwards.
    """

    component: object
    lmap: LinearMap
    lower: NDArray
    upper: NDArray
    exprs: tuple = ()
    named: tuple = ()  # the NamedBlocks the rows are written over

    def intact(self) -> bool:
        """The component still has the recorded rows, all active and unedited, over unedited
        named expressions."""
        comp = self.component
        if len(comp) != self.lmap.n_rows or len(self.exprs) != self.lmap.n_rows:
            return False
        datas = list(comp.values())
        return (all(c.active for c in datas) and _same_exprs(datas, self.exprs)
                and all(nb.intact() for nb in self.named))


@attrs.define(eq=False)
class ConeRecord:
    """Record of :func:`add_soc`: ``||lhs|| <= rhs`` with auxiliary ``z = lhs`` and ``t = rhs``.

    ``definitions`` are the equality constraints defining the auxiliaries (absent when the
    caller passed variables directly); the compiler may substitute them away.
    """

    component: object  # the quadratic Constraint sum z^2 <= t^2
    lhs: LinearMap
    rhs: LinearMap  # one row
    z: tuple
    t: object
    definitions: tuple  # Constraint components (may be empty)
    aux: tuple = ()  # the auxiliary variables add_soc created (z and/or t)
    expr: object = None  # the cone constraint's expression as built

    def intact(self, ann: "Annotations") -> bool:
        """The cone constraint is active and unedited, and so are its definitions."""
        con = self.component
        if not con.active or con.expr is not self.expr:
            return False
        for d in self.definitions:
            blk = ann.linear.get(id(d))
            if blk is None or not d.active or not blk.intact():
                return False
        return True


@attrs.define(eq=False)
class SparsitySlot:
    """Record of :func:`add_sparsity_slot`, also reachable as ``model.fsframe_slot``'s owner.

    Attributes
    ----------
    coef : LinearMap
        ``w = coef(x)``: one row per coefficient entry (``n_coef`` rows).
    groups : array of int, shape (n_coef,)
        Group of each coefficient entry (``0 .. n_groups-1``); a feature for binary linear
        models, a row of ``W`` for multi-class models, a training sample for kernel maps.
    magnitude : LinearMap or None
        ``s_j``: an affine expression bounded below by ``||w_(j)||`` at every feasible point
        (``u_j + v_j`` with the ``u, v`` split, or an epigraph variable). Needed for ``lin``.
    terms : frozenset of str
        Which of :data:`SLOT_TERMS` the objective contains.
    block : pyomo Block
        ``model.fsframe_slot`` holding Params ``lin``, ``lin_w``, ``quad`` and Expressions
        ``loss``, ``penalty``; the active objective is ``model.fsframe_objective``.
    """

    coef: LinearMap
    groups: NDArray
    magnitude: LinearMap | None
    terms: frozenset
    block: object
    objective: object
    n_groups: int
    exprs: tuple = ()  # the objective's and the penalty's expressions as built


@attrs.define(eq=False)
class Annotations:
    """What the helpers built, keyed by component; stored on the model."""

    linear: dict = attrs.field(factory=dict)  # id(component) -> LinearBlock
    cones: list = attrs.field(factory=list)  # ConeRecord
    slot: SparsitySlot | None = None
    named: dict = attrs.field(factory=dict)  # id(ExpressionData) -> (NamedBlock, row)


def annotations(model) -> Annotations:
    """The annotations of ``model`` (created empty on first use)."""
    ann = getattr(model, _ANNOTATIONS, None)
    if ann is None:
        ann = Annotations()
        object.__setattr__(model, _ANNOTATIONS, ann)
    return ann


def _bounds(value, n: int, default: float) -> NDArray:
    if value is None:
        return np.full(n, default)
    arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    return arr


def add_named_expressions(model, name: str, lmap: LinearMap) -> list:
    """Add the rows of ``lmap`` as an indexed Pyomo ``Expression`` ``name`` (e.g. ``w_j = u_j - v_j``)
    and return its ExpressionData, in row order.

    They may stand among the ``vars`` of a :class:`LinearMap` given to
    :func:`add_linear_constraints`: its Pyomo rows are then written over the named expressions (one
    term ``a_ij * w_j`` instead of ``a_ij * u_j - a_ij * v_j``: half the expression objects to build
    and for the garbage collector to traverse), while its record, and so the compiled matrix, is
    over the variables.
    """
    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC

    exprs = lmap.expressions()
    with PauseGC():
        comp = pyo.Expression(range(lmap.n_rows))
        model.add_component(name, comp)
        for i, e in enumerate(exprs):
            comp[i] = e
    data = list(comp.values())
    block = NamedBlock(comp, lmap, tuple(data), tuple(map(_EXPR, data)))
    annotations(model).named.update((id(d), (block, i)) for i, d in enumerate(data))
    return data


def _over_variables(model, lmap: LinearMap) -> LinearMap:
    """``lmap`` with its named expressions (:func:`add_named_expressions`) replaced by their
    definitions: the same affine map over variables only. Columns: in order of first appearance,
    a named expression bringing all the variables of its block."""
    named = annotations(model).named
    hits = [named.get(id(v)) for v in lmap.vars]
    if all(h is None for h in hits):
        return lmap
    index: dict = {}
    out_vars: list = []

    def col(v):
        if id(v) not in index:
            index[id(v)] = len(out_vars)
            out_vars.append(v)
        return index[id(v)]

    seen: set = set()
    for v, h in zip(lmap.vars, hits):
        if h is None:
            col(v)
        elif id(h[0]) not in seen:  # the block's variables once, at its first expression
            seen.add(id(h[0]))
            for u in h[0].lmap.vars:
                col(u)
    k_var = [k for k, h in enumerate(hits) if h is None]
    rows = [np.asarray(k_var, dtype=np.int64)]
    cols = [np.array([index[id(lmap.vars[k])] for k in k_var], dtype=np.int64)]
    vals = [np.ones(len(k_var))]
    const_atoms = np.zeros(len(lmap.vars))
    by_block: dict = {}
    for k, h in enumerate(hits):
        if h is not None:
            entry = by_block.setdefault(id(h[0]), (h[0], [], []))
            entry[1].append(k)
            entry[2].append(h[1])
    for block, ks, rs in by_block.values():
        sub = block.lmap.matrix[rs].tocoo()
        bcols = np.array([index[id(u)] for u in block.lmap.vars], dtype=np.int64)
        rows.append(np.asarray(ks, dtype=np.int64)[sub.row])
        cols.append(bcols[sub.col])
        vals.append(sub.data)
        const_atoms[ks] = block.lmap.const[rs]
    E = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(len(lmap.vars), len(out_vars)))
    matrix = (lmap.matrix @ E).tocsr()
    matrix.sort_indices()
    return LinearMap(matrix, out_vars, lmap.const + lmap.matrix @ const_atoms)


def add_linear_constraints(model, name: str, lmap: LinearMap, *, lower: ArrayLike | None = None,
                           upper: ArrayLike | None = None):
    """Add the rows ``lower <= lmap <= upper`` as an indexed Pyomo ``Constraint`` ``name``.

    ``lower``/``upper`` are scalars or arrays (``None`` or ``±inf`` for no bound); an equality row
    has ``lower == upper``. ``lmap`` may be over named expressions of
    :func:`add_named_expressions` as well as variables; the record is over variables.
    Returns the Constraint component.
    """
    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC

    r = lmap.n_rows
    lo = _bounds(lower, r, -np.inf)
    up = _bounds(upper, r, np.inf)
    if np.any(lo > up):
        i = int(np.argmax(lo > up))
        raise ValueError(f"{name}: row {i} has lower bound {lo[i]} above upper bound {up[i]}")
    named = annotations(model).named
    used = {id(h[0]): h[0] for h in map(named.get, map(id, lmap.vars)) if h is not None}
    with PauseGC():
        exprs = lmap.expressions()
        lmap = _over_variables(model, lmap)
        con = pyo.Constraint(range(r))
        model.add_component(name, con)
        lo_l = [None if not np.isfinite(v) else float(v) for v in lo]
        up_l = [None if not np.isfinite(v) else float(v) for v in up]
        for i in range(r):
            if lo_l[i] is not None and lo_l[i] == up_l[i]:
                con[i] = exprs[i] == lo_l[i]
            else:
                con[i] = (lo_l[i], exprs[i], up_l[i])
    exprs = tuple(map(_EXPR, con.values()))
    annotations(model).linear[id(con)] = LinearBlock(con, lmap, lo, up, exprs, tuple(used.values()))
    return con


def _as_map(spec, what: str) -> LinearMap:
    if isinstance(spec, LinearMap):
        return spec
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if all(getattr(v, "is_variable_type", lambda: False)() for v in items):
        return LinearMap.identity(items)
    raise TypeError(f"add_soc: {what} must be a LinearMap or a list of Pyomo variables")


def add_soc(model, name: str, lhs: LinearMap | Sequence, rhs: LinearMap | object):
    """Add the second-order cone ``||lhs|| <= rhs`` as Pyomo components named ``name_*``.

    Parameters
    ----------
    lhs : LinearMap or list of VarData
        The vector inside the norm (``k`` rows); a map may be over named expressions of
        :func:`add_named_expressions` as well as variables. Entry order is kept: it is the order of the
        cone's entries in the compiled problem.
    rhs : LinearMap with one row, or a VarData
        The bound.

    Returns the quadratic constraint ``sum z_i^2 <= t^2``. Auxiliaries: ``name_z[i] == lhs_i`` and
    ``name_t == rhs`` with ``name_t >= 0`` (skipped when ``lhs``/``rhs`` are already variables).
    """
    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC

    lmap = _as_map(lhs, "lhs")
    rmap = _as_map(rhs, "rhs")
    if rmap.n_rows != 1:
        raise ValueError(f"add_soc {name}: rhs must be a single affine expression")
    defs = []
    aux: list = []
    # a map that is its variables (not named expressions: they get auxiliaries like any affine map)
    ident = lambda m: (m.matrix.shape[0] == m.matrix.shape[1] and (m.matrix != sp.identity(m.matrix.shape[0])).nnz == 0  # noqa: E731
                       and not m.const.any() and all(v.is_variable_type() for v in m.vars))
    if ident(lmap):
        z = lmap.vars
    else:
        zv = pyo.Var(range(lmap.n_rows))
        model.add_component(f"{name}_z", zv)
        z = tuple(zv.values())
        aux.extend(z)
        Z = LinearMap(sp.hstack([sp.identity(lmap.n_rows), -lmap.matrix]).tocsr(), z + lmap.vars)
        defs.append(add_linear_constraints(model, f"{name}_zdef", Z, lower=lmap.const, upper=lmap.const))
    if ident(rmap):
        t = rmap.vars[0]
        if t.lb is None or t.lb < 0:
            t.setlb(0.0)
    else:
        tv = pyo.Var(bounds=(0, None))
        model.add_component(f"{name}_t", tv)
        t = tv
        aux.append(tv)
        T = LinearMap(sp.hstack([sp.identity(1), -rmap.matrix]).tocsr(), (tv,) + rmap.vars)
        defs.append(add_linear_constraints(model, f"{name}_tdef", T, lower=rmap.const, upper=rmap.const))
    with PauseGC():
        body = sum(zi**2 for zi in z) - t**2
        con = pyo.Constraint(expr=body <= 0)
        model.add_component(name, con)
    # the record's maps are over variables, like every record the compiler reads
    annotations(model).cones.append(ConeRecord(con, _over_variables(model, lmap), _over_variables(model, rmap),
                                               tuple(z), t, tuple(defs), tuple(aux), con.expr))
    return con


def add_sparsity_slot(
    model,
    *,
    coef: LinearMap,
    groups: ArrayLike | None = None,
    magnitude: LinearMap | None = None,
    terms: Iterable[str],
    loss=0.0,
) -> SparsitySlot:
    """Create the objective ``loss + penalty`` with the sparsity slot's mutable weights.

    ``penalty = sum_j lin[j] * s_j + sum_k lin_w[k] * w_k + sum_j quad[j] * sum_{k in j} w_k^2``
    restricted to ``terms``. Weights start at 0; outer loops set them in the compiled problem
    (:meth:`fsframe.compiler.CompiledModel.with_weights`), and the Params hold the weights last
    set once the model is asked for (:meth:`fsframe.compiler.CompiledModel.sync_model`).

    Parameters
    ----------
    coef : LinearMap
        The coefficient entries ``w`` (``n_coef`` rows); like ``magnitude``, over variables or
        named expressions of :func:`add_named_expressions`.
    groups : array of int, shape (n_coef,), optional
        Group of each entry; default one group per entry.
    magnitude : LinearMap, optional
        Group-norm epigraph ``s_j >= ||w_(j)||`` (one row per group); required for ``"lin"``.
    terms : iterable of str
        Subset of :data:`SLOT_TERMS`.
    loss : Pyomo expression
        The rest of the objective (must not depend on mutable Params).
    """
    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC
    from pyomo.core.expr.numeric_expr import LinearExpression

    terms = frozenset(terms)
    # the slot's maps, and the penalty built from them, are over variables
    coef = _over_variables(model, coef)
    magnitude = None if magnitude is None else _over_variables(model, magnitude)
    unknown = terms - SLOT_TERMS
    if unknown:
        raise ValueError(f"unknown slot terms {sorted(unknown)}; use a subset of {sorted(SLOT_TERMS)}")
    n_coef = coef.n_rows
    g = np.arange(n_coef) if groups is None else np.asarray(groups, dtype=np.int64).reshape(n_coef)
    n_groups = int(g.max()) + 1 if n_coef else 0
    if n_coef and set(np.unique(g).tolist()) != set(range(n_groups)):
        raise ValueError("groups must number every group 0..n_groups-1 at least once")
    if "lin" in terms:
        if magnitude is None:
            raise ValueError("the 'lin' term needs magnitude= (the group-norm epigraph)")
        if magnitude.n_rows != n_groups:
            raise ValueError(f"magnitude has {magnitude.n_rows} rows for {n_groups} groups")
    blk = pyo.Block(concrete=True)
    model.add_component("fsframe_slot", blk)
    with PauseGC():
        parts = []
        if "lin" in terms:
            blk.lin = pyo.Param(range(n_groups), mutable=True, initialize=0.0)
            S = magnitude.matrix.tocoo()
            coefs = [float(v) * blk.lin[int(j)] if v != 1.0 else blk.lin[int(j)] for j, v in zip(S.row, S.data)]
            parts.append(LinearExpression(constant=0.0, linear_coefs=coefs,
                                          linear_vars=[magnitude.vars[int(c)] for c in S.col]))
        if "lin_w" in terms:
            blk.lin_w = pyo.Param(range(n_coef), mutable=True, initialize=0.0)
            W = coef.matrix.tocoo()
            coefs = [float(v) * blk.lin_w[int(k)] if v != 1.0 else blk.lin_w[int(k)] for k, v in zip(W.row, W.data)]
            parts.append(LinearExpression(constant=0.0, linear_coefs=coefs,
                                          linear_vars=[coef.vars[int(c)] for c in W.col]))
        if "quad" in terms:
            blk.quad = pyo.Param(range(n_groups), mutable=True, initialize=0.0)
            exprs = coef.expressions()
            parts.append(pyo.quicksum(blk.quad[int(g[k])] * exprs[k] ** 2 for k in range(n_coef)))
        blk.loss = pyo.Expression(expr=loss)
        blk.penalty = pyo.Expression(expr=pyo.quicksum(parts) if parts else 0.0)
        obj = pyo.Objective(expr=blk.loss + blk.penalty, sense=pyo.minimize)
        model.add_component("fsframe_objective", obj)
    slot = SparsitySlot(coef=coef, groups=g, magnitude=magnitude, terms=terms, block=blk, objective=obj,
                        n_groups=n_groups, exprs=(obj.expr, blk.penalty.expr))
    annotations(model).slot = slot
    return slot


def check_slot_objective(model, slot: SparsitySlot) -> None:
    """Raise if the model's active objective is no longer the slot's ``minimize loss + penalty``.

    The compiler reads the loss from Pyomo and the penalty from the slot's record, so an
    objective replaced, redefined (``fsframe_objective.expr = ...``), turned into a maximisation,
    or a penalty redefined would otherwise be compiled as the problem it no longer is.
    """
    import pyomo.environ as pyo

    active = [o for o in model.component_data_objects(pyo.Objective, active=True)]
    if len(active) != 1 or active[0] is not slot.objective:
        problem = "is not the one add_sparsity_slot created"
    elif slot.exprs and (slot.objective.expr is not slot.exprs[0] or slot.block.penalty.expr is not slot.exprs[1]):
        problem = "(or its penalty) was redefined after add_sparsity_slot created it"
    elif slot.objective.sense != pyo.minimize:
        problem = "was turned into a maximisation"
    else:
        return
    raise UnsupportedProblemError(
        f"the model's active objective {problem}; put extra objective terms into the slot's loss= "
        "(or change model.fsframe_slot.loss) instead of changing the objective or the penalty"
    )
