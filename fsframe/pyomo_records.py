"""What :mod:`fsframe.pyomo_ext` records about the components it builds: affine maps
(:class:`LinearMap`), the records the compiler reads (:class:`LinearBlock`, :class:`NamedBlock`,
:class:`ConeRecord`, :class:`ExpConeRecord`, :class:`DefinitionRecord`, :class:`SparsitySlot`) and
their store on the model (:func:`annotations`).

A record knows whether its Pyomo component is still as built (``intact``) and, for a deferred
block, how to create its Pyomo rows (``materialize``).
"""

from __future__ import annotations

import operator
from typing import Sequence

import attrs
import numpy as np
from numpy.typing import NDArray

from ._lazy import lazy_module
from .errors import UnsupportedProblemError

# imported on first use: the method catalogue (fsframe methods) never needs Pyomo or SciPy
sp = lazy_module("scipy.sparse")
_gc = lazy_module("pyomo.common.gc_manager")
_nx = lazy_module("pyomo.core.expr.numeric_expr")

__all__ = ["SLOT_TERMS", "LinearMap", "NamedBlock", "Expansion", "LinearBlock", "ConeRecord", "ExpConeRecord",
           "DefinitionRecord", "SparsitySlot", "Annotations", "annotations"]

SLOT_TERMS = frozenset({"lin", "lin_w", "quad"})
"""Penalty terms of the sparsity slot: ``lin[j] * s_j`` (weight on the group-norm epigraph),
``lin_w[k] * w_k`` (signed weight on a coefficient, for DCA) and ``quad[j] * ||w_(j)||^2``."""

_ANNOTATIONS = "_fsframe_annotations"


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
        variables, or, when some atoms are named expressions, a ``_nx.SumExpression`` of
        ``coef * expression`` (``_nx.ProductExpression``) and then ``coef * var`` terms."""
        M, c = self.matrix, self.const
        atoms = np.fromiter(self.vars, dtype=object, count=len(self.vars))  # fancy-indexable
        named = np.fromiter((not v.is_variable_type() for v in self.vars), dtype=bool, count=len(self.vars))
        out = []
        with _gc.PauseGC():
            for i in range(M.shape[0]):
                lo, hi = M.indptr[i], M.indptr[i + 1]
                idx, coefs = M.indices[lo:hi], M.data[lo:hi]
                if not named.any():
                    out.append(_nx.LinearExpression(constant=float(c[i]), linear_coefs=coefs.tolist(),
                                                linear_vars=atoms[idx].tolist()))
                    continue
                nm = named[idx]
                args = [float(c[i])] if c[i] else []
                args.extend(map(_nx.ProductExpression, zip(coefs[nm].tolist(), atoms[idx[nm]].tolist())))
                args.extend(map(_nx.MonomialTermExpression, zip(coefs[~nm].tolist(), atoms[idx[~nm]].tolist())))
                out.append(_nx.SumExpression(args))
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
    makes :meth:`intact` false, and so every recorded block written over it. A deferred block
    (``pending``) has its ExpressionData, still undefined (``None``), until :meth:`materialize`."""

    component: object
    lmap: LinearMap
    data: tuple  # the ExpressionData, in row order
    exprs: tuple = ()
    pending: bool = False

    def intact(self) -> bool:
        """Every named expression still has the definition recorded (a pending block: none is
        defined yet)."""
        return len(self.exprs) == len(self.data) and _same_exprs(self.data, self.exprs)

    def materialize(self) -> None:
        """Define the named expressions of a pending block (nothing for a materialised one).

        Raises
        ------
        UnsupportedProblemError
            Some were defined by hand before: the recorded definitions cannot replace them.
        """
        if not self.pending:
            return
        if not self.intact():
            raise UnsupportedProblemError(
                f"named expressions {self.component.name} were declared deferred (add_named_expressions(defer=True)) "
                "and some were defined by hand before they were materialised; call "
                "fsframe.pyomo_ext.materialize(model) before editing deferred components")
        with _gc.PauseGC():
            for d, e in zip(self.data, self.lmap.expressions()):
                d.set_value(e)
        self.exprs = tuple(map(_EXPR, self.data))
        self.pending = False


@attrs.frozen(eq=False)
class Expansion:
    """Named expressions replaced by their definitions: atom ``k`` of a map is
    ``matrix[k] @ vars + const[k]`` (a variable atom is one unit entry).

    Columns: in order of first appearance, a named expression bringing all the variables of its
    block (see :func:`add_named_expressions`)."""

    vars: tuple
    matrix: sp.csr_matrix  # (n_atoms, len(vars))
    const: NDArray  # (n_atoms,)

    def apply(self, lmap: LinearMap) -> LinearMap:
        """``lmap`` (over the atoms) as the same affine map over :attr:`vars`."""
        matrix = (lmap.matrix @ self.matrix).tocsr()
        matrix.sort_indices()
        return LinearMap(matrix, self.vars, lmap.const + lmap.matrix @ self.const)


@attrs.define(eq=False)
class LinearBlock:
    """Record of :func:`add_linear_constraints`: the rows ``lower <= atoms <= upper``.

    ``atoms`` is the map as given (over variables and named expressions); :attr:`lmap`, the
    same rows over variables only, is computed from it on request (``expansion``), so a large
    block is held once, not twice. ``exprs`` are the rows' relational expressions as built;
    :meth:`intact` compares them by identity, so a row edited in Pyomo afterwards sends the
    component to the general path, and so does a named expression the rows are written over
    (``named``) redefined afterwards.

    A *deferred* block (``add_linear_constraints(..., defer=True)``) has an empty Pyomo
    component until :meth:`materialize` fills it with the recorded rows (the compiler's fast
    path reads the record without them; :func:`materialize` does every block of a model).
    """

    component: object
    atoms: LinearMap
    expansion: Expansion | None  # None: every atom is a variable
    lower: NDArray
    upper: NDArray
    exprs: tuple = ()
    named: tuple = ()  # the NamedBlocks the rows are written over
    pending: bool = False  # deferred and not materialised yet

    @property
    def lmap(self) -> LinearMap:
        """The rows over variables only (computed on each access when some atoms are named
        expressions)."""
        return self.atoms if self.expansion is None else self.expansion.apply(self.atoms)

    def intact(self) -> bool:
        """The component still has the recorded rows, all active and unedited, over unedited
        named expressions (a pending block: its component is still empty)."""
        comp = self.component
        if not all(nb.intact() for nb in self.named):
            return False
        if self.pending:
            return len(comp) == 0
        if len(comp) != self.atoms.n_rows or len(self.exprs) != self.atoms.n_rows:
            return False
        datas = list(comp.values())
        return all(c.active for c in datas) and _same_exprs(datas, self.exprs)

    def materialize(self) -> None:
        """Create the Pyomo rows of a pending block (nothing for a materialised one).

        Raises
        ------
        UnsupportedProblemError
            Rows were added to the still-empty component by hand: the recorded rows cannot be
            put in beside them.
        """
        if not self.pending:
            return
        for nb in self.named:  # the rows are written over them
            nb.materialize()
        comp = self.component
        if len(comp):
            raise UnsupportedProblemError(
                f"constraint {comp.name} was declared deferred (add_linear_constraints(defer=True)) and rows were "
                "added to it by hand before it was materialised; call fsframe.pyomo_ext.materialize(model) "
                "before editing a deferred component")
        self.exprs = _fill_rows(comp, self.atoms, self.lower, self.upper)
        self.pending = False


@attrs.define(eq=False)
class ConeRecord:
    """Record of :func:`add_soc`: ``||lhs|| <= rhs`` with auxiliary ``z = lhs`` and ``t = rhs``.

    ``definitions`` are the equality constraints defining the auxiliaries (absent when the
    caller passed variables directly); the compiler may substitute them away. A deferred record
    (``pending``, ``add_soc(..., defer=True)``) has an empty cone constraint until
    :meth:`materialize` gives it its expression ``sum z_i^2 - t^2 <= 0``, like :class:`LinearBlock`.
    """

    component: object  # the quadratic Constraint sum z^2 <= t^2
    lhs: LinearMap
    rhs: LinearMap  # one row
    z: tuple
    t: object
    definitions: tuple  # Constraint components (may be empty)
    aux: tuple = ()  # the auxiliary variables add_soc created (z and/or t)
    expr: object = None  # the cone constraint's expression as built
    pending: bool = False  # deferred and not materialised yet

    def intact(self, ann: "Annotations") -> bool:
        """The cone constraint is active and unedited (a pending record: still empty), and so
        are its definitions."""
        con = self.component
        if not con.active:
            return False
        if self.pending:
            if len(con):
                return False
        elif len(con) != 1 or con.expr is not self.expr:
            return False
        for d in self.definitions:
            blk = ann.linear.get(id(d))
            if blk is None or not d.active or not blk.intact():
                return False
        return True

    def materialize(self) -> None:
        """Give a pending record's cone constraint its expression ``sum z_i^2 - t^2 <= 0`` (the
        form :func:`fsframe.compiler.cones.detect_cone` recognises); nothing for a materialised one.

        Raises
        ------
        UnsupportedProblemError
            The still-empty constraint was given an expression by hand.
        """
        if not self.pending:
            return
        con = self.component
        if len(con):
            raise UnsupportedProblemError(
                f"constraint {con.name} was declared deferred (add_soc(defer=True)) and given an expression by hand "
                "before it was materialised; call fsframe.pyomo_ext.materialize(model) before editing a deferred "
                "component")
        with _gc.PauseGC():
            con.set_value(sum(zi**2 for zi in self.z) - self.t**2 <= 0)
        self.expr = con.expr
        self.pending = False


@attrs.define(eq=False)
class ExpConeRecord:
    """Record of :func:`fsframe.pyomo_ext.add_exp_cones`: ``k`` exponential cones
    ``s_i exp(r_i / s_i) <= t_i`` (``(r_i, s_i, t_i)`` in :mod:`fsframe.exp_cone`'s order), one
    Pyomo constraint each, written over the affine maps (no auxiliary variables). ``s`` is a map
    that may have no variables (a positive constant per cone). ``exprs`` are the constraints'
    expressions as built; a deferred record (``pending``) has an empty component until
    :meth:`materialize`, like :class:`LinearBlock`."""

    component: object
    r: LinearMap
    s: LinearMap
    t: LinearMap
    exprs: tuple = ()
    pending: bool = False

    @property
    def n_cones(self) -> int:
        return self.r.n_rows

    def intact(self) -> bool:
        """The component still has the recorded cones, all active and unedited (a pending record:
        its component is still empty)."""
        comp = self.component
        if self.pending:
            return len(comp) == 0
        if len(comp) != self.n_cones or len(self.exprs) != self.n_cones:
            return False
        datas = list(comp.values())
        return all(c.active for c in datas) and _same_exprs(datas, self.exprs)

    def materialize(self) -> None:
        """Create the Pyomo constraints of a pending record (nothing for a materialised one):
        ``exp(r_i) <= t_i`` when ``s_i = 1``, ``s_i * exp(r_i / s_i) <= t_i`` otherwise (the
        forms :func:`fsframe.compiler.cones.detect_exp_cone` recognises).

        Raises
        ------
        UnsupportedProblemError
            Constraints were added to the still-empty component by hand.
        """
        if not self.pending:
            return
        comp = self.component
        if len(comp):
            raise UnsupportedProblemError(
                f"constraint {comp.name} was declared deferred (add_exp_cones(defer=True)) and rows were added to "
                "it by hand before it was materialised; call fsframe.pyomo_ext.materialize(model) before editing a "
                "deferred component")
        import pyomo.environ as pyo

        with _gc.PauseGC():
            t_rows = self.t.expressions()
            if self.s.vars:  # the perspective s exp(r / s) with an affine s
                s_rows, s_again, r_rows = self.s.expressions(), self.s.expressions(), self.r.expressions()
                for i in range(self.n_cones):
                    comp[i] = s_rows[i] * pyo.exp(r_rows[i] / s_again[i]) <= t_rows[i]
            else:
                scale = self.s.const
                arg = LinearMap(sp.diags(1.0 / scale) @ self.r.matrix, self.r.vars, self.r.const / scale)
                a_rows = arg.expressions()
                for i in range(self.n_cones):
                    lhs = pyo.exp(a_rows[i]) if scale[i] == 1.0 else float(scale[i]) * pyo.exp(a_rows[i])
                    comp[i] = lhs <= t_rows[i]
        self.exprs = tuple(map(_EXPR, comp.values()))
        self.pending = False


DEFINITION_KINDS = ("affine", "exp", "logsumexp")


@attrs.define(eq=False)
class DefinitionRecord:
    """Variables whose least value at an optimum is a closed form of others, recorded by
    :func:`fsframe.pyomo_ext.add_log_sum_exp` and :func:`fsframe.pyomo_ext.add_definitions`:
    ``targets = f(lmap)`` with ``f`` by ``kind`` (``"affine"``, ``"exp"`` elementwise,
    ``"logsumexp"``: ``lmap`` stacks ``K`` blocks of ``len(targets)`` rows). The compiler turns
    it into a :class:`fsframe.canonical.Definition` while the components it rests on
    (``depends``: the equality rows, the exponential cones) are intact, so that an answer's
    auxiliaries are set to the values the model attains."""

    kind: str
    targets: tuple
    lmap: LinearMap  # over variables
    depends: tuple = ()

    def intact(self) -> bool:
        return all(dep.intact() for dep in self.depends)


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
    exp: list = attrs.field(factory=list)  # ExpConeRecord
    definitions: list = attrs.field(factory=list)  # DefinitionRecord
    slot: SparsitySlot | None = None
    named: dict = attrs.field(factory=dict)  # id(ExpressionData) -> (NamedBlock, row)


def annotations(model) -> Annotations:
    """The annotations of ``model`` (created empty on first use)."""
    ann = getattr(model, _ANNOTATIONS, None)
    if ann is None:
        ann = Annotations()
        object.__setattr__(model, _ANNOTATIONS, ann)
    return ann


def _fill_rows(con, lmap: LinearMap, lo: NDArray, up: NDArray) -> tuple:
    """Put the rows ``lo <= lmap <= up`` into the empty indexed Constraint ``con``; return their
    relational expressions."""
    with _gc.PauseGC():
        exprs = lmap.expressions()
        lo_l = [None if not np.isfinite(v) else float(v) for v in lo]
        up_l = [None if not np.isfinite(v) else float(v) for v in up]
        for i in range(lmap.n_rows):
            if lo_l[i] is not None and lo_l[i] == up_l[i]:
                con[i] = exprs[i] == lo_l[i]
            else:
                con[i] = (lo_l[i], exprs[i], up_l[i])
    return tuple(map(_EXPR, con.values()))
