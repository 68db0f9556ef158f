"""Helpers that build Pyomo components in bulk from numpy and record what they built.

Formulations state their subproblem as an ordinary Pyomo ``ConcreteModel`` — any Pyomo tool can
write or solve it — but three kinds of component are built through these helpers:

* :func:`add_linear_constraints` — a block of rows ``lower <= M @ vars + const <= upper``,
  assembled as ``LinearExpression`` rows inside ``PauseGC`` (0.07 s for 400k terms instead of
  3 s for rule-based building, as measured for this project);
* :func:`add_soc` — a second-order cone ``||lhs|| <= rhs`` stated in Pyomo as auxiliary
  variables ``z = lhs``, ``t = rhs >= 0`` and the quadratic constraint ``sum z_i^2 <= t^2``
  (the form conic-aware Pyomo solvers such as Gurobi recognise);
* :func:`add_exp_cones` — exponential cones ``s exp(r / s) <= t`` over affine maps, stated in
  Pyomo as the (convex) nonlinear constraints themselves; :func:`add_log_sum_exp` builds the
  epigraph ``t >= log sum_k exp(u_k)`` (a logistic or multinomial loss) from them;
* :func:`add_definitions` — equality rows ``vars = lmap`` recorded as *defining* ``vars``
  (a least-squares residual), so that a solver's answer is read with them exact;
* :func:`add_sparsity_slot` — the objective ``loss + penalty`` whose penalty weights are mutable
  Params that outer loops change between solves.

Rows, named expressions and cones may be *deferred* (``defer=True``): their Pyomo components are added
empty and filled from the records by :func:`materialize` when the model is asked for, so a block
of millions of entries costs its matrix, not a Pyomo object per entry, in a fit that never
looks at the model.

Each helper records its matrices in the model's :class:`Annotations` (the records are defined in
:mod:`fsframe.pyomo_records`). The compiler
(:mod:`fsframe.compiler`) uses a record directly when the component is still intact (the
*fast path*) and otherwise reads the Pyomo component itself (the *general path*), so a model
written with plain Pyomo constraints compiles too, only slower. ``fsframe.testing.check_formulation``
verifies that both paths give the same problem.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._lazy import lazy_module
from .errors import UnsupportedProblemError
from .pyomo_records import (SLOT_TERMS, Annotations, ConeRecord, DefinitionRecord, Expansion, ExpConeRecord,
                            LinearBlock, LinearMap, NamedBlock, SparsitySlot, annotations)

# imported on first use: the method catalogue (fsframe methods) never needs Pyomo or SciPy
pyo = lazy_module("pyomo.environ")
sp = lazy_module("scipy.sparse")
_gc = lazy_module("pyomo.common.gc_manager")
_nx = lazy_module("pyomo.core.expr.numeric_expr")

# the records live in fsframe.pyomo_records; re-exported here, where formulations look for them
__all__ = [
    "LinearMap",
    "NamedBlock",
    "Annotations",
    "LinearBlock",
    "Expansion",
    "ConeRecord",
    "ExpConeRecord",
    "DefinitionRecord",
    "SparsitySlot",
    "SLOT_TERMS",
    "annotations",
    "add_linear_constraints",
    "add_named_expressions",
    "add_soc",
    "add_exp_cones",
    "add_log_sum_exp",
    "add_definitions",
    "add_sparsity_slot",
    "materialize",
    "var_list",
]



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


def _bounds(value, n: int, default: float) -> NDArray:
    if value is None:
        return np.full(n, default)
    arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
    return arr


def add_named_expressions(model, name: str, lmap: LinearMap, *, defer: bool = False) -> list:
    """Add the rows of ``lmap`` as an indexed Pyomo ``Expression`` ``name`` (e.g. ``w_j = u_j - v_j``)
    and return its ExpressionData, in row order.

    They may stand among the ``vars`` of a :class:`LinearMap` given to
    :func:`add_linear_constraints`: its Pyomo rows are then written over the named expressions (one
    term ``a_ij * w_j`` instead of ``a_ij * u_j - a_ij * v_j``: half the expression objects to build
    and for the garbage collector to traverse), while its record, and so the compiled matrix, is
    over the variables.

    ``defer=True`` leaves the expressions undefined until the model is asked for
    (:func:`materialize`); a block of rows written over them must then be deferred too (an eager
    one, or :func:`materialize`, defines them first).
    """
    with _gc.PauseGC():
        comp = pyo.Expression(range(lmap.n_rows))  # ExpressionData defined as None
        model.add_component(name, comp)
    data = tuple(comp.values())
    block = NamedBlock(comp, lmap, data, (None,) * len(data), pending=True)
    if not defer:
        block.materialize()
    annotations(model).named.update((id(d), (block, i)) for i, d in enumerate(data))
    return list(data)


def _expansion(model, atoms: Sequence) -> Expansion | None:
    """How the named expressions (:func:`add_named_expressions`) among ``atoms`` expand over
    variables; ``None`` when every atom is a variable."""
    named = annotations(model).named
    if not named:  # a model without named expressions (most): nothing to look up
        return None
    hits = [named.get(id(v)) for v in atoms]
    if all(h is None for h in hits):
        return None
    index: dict = {}
    out_vars: list = []

    def col(v):
        if id(v) not in index:
            index[id(v)] = len(out_vars)
            out_vars.append(v)
        return index[id(v)]

    seen: set = set()
    for v, h in zip(atoms, hits):
        if h is None:
            col(v)
        elif id(h[0]) not in seen:  # the block's variables once, at its first expression
            seen.add(id(h[0]))
            for u in h[0].lmap.vars:
                col(u)
    k_var = [k for k, h in enumerate(hits) if h is None]
    rows = [np.asarray(k_var, dtype=np.int64)]
    cols = [np.array([index[id(atoms[k])] for k in k_var], dtype=np.int64)]
    vals = [np.ones(len(k_var))]
    const_atoms = np.zeros(len(atoms))
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
                      shape=(len(atoms), len(out_vars)))
    return Expansion(tuple(out_vars), E, const_atoms)


def _over_variables(model, lmap: LinearMap) -> LinearMap:
    """``lmap`` with its named expressions (:func:`add_named_expressions`) replaced by their
    definitions: the same affine map over variables only (columns as in :class:`Expansion`)."""
    exp = _expansion(model, lmap.vars)
    return lmap if exp is None else exp.apply(lmap)


def materialize(model) -> None:
    """Create the Pyomo rows of every deferred block of ``model`` (see
    :func:`add_linear_constraints`), so that the model states its whole problem. Called by
    :meth:`fsframe.compiler.CompiledModel.sync_model` (and so ``fit(..., keep_model=True)``) and by
    ``compile_model(model, fast=False)``; idempotent. Named expressions are defined first."""
    ann = annotations(model)
    for block in {id(b): b for b, _ in ann.named.values()}.values():
        block.materialize()
    for block in ann.linear.values():
        block.materialize()
    for rec in ann.exp:
        rec.materialize()
    for rec in ann.cones:
        rec.materialize()


def add_linear_constraints(model, name: str, lmap: LinearMap, *, lower: ArrayLike | None = None,
                           upper: ArrayLike | None = None, defer: bool = False):
    """Add the rows ``lower <= lmap <= upper`` as an indexed Pyomo ``Constraint`` ``name``.

    ``lower``/``upper`` are scalars or arrays (``None`` or ``±inf`` for no bound); an equality row
    has ``lower == upper``. ``lmap`` may be over named expressions of
    :func:`add_named_expressions` as well as variables; the record keeps ``lmap`` as given.

    ``defer=True`` adds the component empty and creates its rows only when the model is asked
    for (:func:`materialize`): the compiler reads the record, so a block with millions of entries
    costs its matrix, not one Pyomo expression object per entry (about 250 bytes and 0.3 µs
    each). The component keeps its place among the model's constraints either way.
    Returns the Constraint component.
    """
    r = lmap.n_rows
    lo = _bounds(lower, r, -np.inf)
    up = _bounds(upper, r, np.inf)
    if np.any(lo > up):
        i = int(np.argmax(lo > up))
        raise ValueError(f"{name}: row {i} has lower bound {lo[i]} above upper bound {up[i]}")
    named = annotations(model).named
    used = {id(h[0]): h[0] for h in map(named.get, map(id, lmap.vars)) if h is not None} if named else {}
    expansion = _expansion(model, lmap.vars)
    con = pyo.Constraint(range(r))
    model.add_component(name, con)
    block = LinearBlock(con, lmap, expansion, lo, up, (), tuple(used.values()), pending=True)
    if not defer:
        block.materialize()
    annotations(model).linear[id(con)] = block
    return con


def _as_map(spec, what: str) -> LinearMap:
    if isinstance(spec, LinearMap):
        return spec
    items = list(spec) if isinstance(spec, (list, tuple)) else [spec]
    if all(getattr(v, "is_variable_type", lambda: False)() for v in items):
        return LinearMap.identity(items)
    raise TypeError(f"{what} must be a LinearMap or a list of Pyomo variables")


def add_soc(model, name: str, lhs: LinearMap | Sequence, rhs: LinearMap | object, *, defer: bool = False):
    """Add the second-order cone ``||lhs|| <= rhs`` as Pyomo components named ``name_*``.

    Parameters
    ----------
    lhs : LinearMap or list of VarData
        The vector inside the norm (``k`` rows); a map may be over named expressions of
        :func:`add_named_expressions` as well as variables. Entry order is kept: it is the order of the
        cone's entries in the compiled problem.
    rhs : LinearMap with one row, or a VarData
        The bound.

    defer : bool
        Defer the auxiliaries' definition rows (see :func:`add_linear_constraints`) and the cone
        constraint's expression: the compiler reads their record, the Pyomo rows and the
        expression ``sum z_i^2 - t^2`` are made only when the model is asked for
        (:func:`materialize`). Sonar's L1-MPM builds in about half the time (its two covariance
        cones have 1 + m_k + n entries each); rows edited in place must be materialised first.

    Returns the quadratic constraint ``sum z_i^2 <= t^2`` (empty until materialised when
    deferred). Auxiliaries: ``name_z[i] == lhs_i`` and ``name_t == rhs`` with ``name_t >= 0``
    (skipped when ``lhs``/``rhs`` are already variables).
    """
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
        Z = LinearMap(_eye_minus(lmap.matrix), z + lmap.vars)
        defs.append(add_linear_constraints(model, f"{name}_zdef", Z, lower=lmap.const, upper=lmap.const, defer=defer))
    if ident(rmap):
        t = rmap.vars[0]
        if t.lb is None or t.lb < 0:
            t.setlb(0.0)
    else:
        tv = pyo.Var(bounds=(0, None))
        model.add_component(f"{name}_t", tv)
        t = tv
        aux.append(tv)
        T = LinearMap(_eye_minus(rmap.matrix), (tv,) + rmap.vars)
        defs.append(add_linear_constraints(model, f"{name}_tdef", T, lower=rmap.const, upper=rmap.const, defer=defer))
    con = pyo.Constraint()  # empty until the record materialises it (now, unless deferred)
    model.add_component(name, con)
    # the record's maps are over variables, like every record the compiler reads
    rec = ConeRecord(con, _over_variables(model, lmap), _over_variables(model, rmap), tuple(z), t, tuple(defs),
                     tuple(aux), pending=True)
    if not defer:
        rec.materialize()
    annotations(model).cones.append(rec)
    return con


def _eye_minus(M) -> "sp.csr_matrix":
    """``[I, -M]`` in CSR, written directly (each row: its identity entry, then ``-M``'s row
    shifted by ``k`` columns): the definition rows ``z = M x`` of a cone's auxiliaries, without
    the format conversions of ``hstack``."""
    M = sp.csr_matrix(M)
    k, n = M.shape
    indptr = M.indptr.astype(np.int64) + np.arange(k + 1, dtype=np.int64)
    head = indptr[:-1]
    indices = np.empty(M.nnz + k, dtype=np.int64)
    data = np.empty(M.nnz + k)
    rest = np.ones(M.nnz + k, dtype=bool)
    rest[head] = False
    indices[head], data[head] = np.arange(k), 1.0
    indices[rest], data[rest] = M.indices.astype(np.int64) + k, -M.data
    return sp.csr_matrix((data, indices, indptr), shape=(k, k + n))


def _constant_map(value, rows: int, what: str) -> LinearMap:
    """A map without variables holding ``value`` (a scalar or one value per row)."""
    const = np.broadcast_to(np.asarray(value, dtype=float), (rows,)).copy()
    return LinearMap(sp.csr_matrix((rows, 0)), (), const)


def add_exp_cones(model, name: str, r: LinearMap, s, t: LinearMap, *, defer: bool = False):
    """Add ``k`` exponential cones ``s_i exp(r_i / s_i) <= t_i`` as an indexed Pyomo
    ``Constraint`` ``name`` (one convex nonlinear constraint per cone, over the affine maps: no
    auxiliary variables). Compiled, cone ``i`` is the triple ``(r_i, s_i, t_i)`` of
    :mod:`fsframe.exp_cone` (``docs/conic.md``).

    Parameters
    ----------
    r, t : LinearMap with ``k`` rows
        Over variables or named expressions of :func:`add_named_expressions`.
    s : LinearMap with ``k`` rows, or a positive number (or one per cone)
        A constant ``s`` (1 for every log-sum-exp) gives ``s * exp(r / s) <= t``; an affine one the
        perspective ``s * exp(r / s) <= t`` with ``s >= 0`` implied.
    defer : bool
        Create the Pyomo constraints only when the model is asked for (:func:`materialize`); the
        compiler reads the record. Worth it when ``r`` or ``t`` has many entries (a logistic
        margin over thousands of features).

    Returns the Constraint component.
    """
    r = _over_variables(model, _as_map(r, "r"))
    t = _over_variables(model, _as_map(t, "t"))
    k = r.n_rows
    if t.n_rows != k:
        raise ValueError(f"add_exp_cones {name}: r has {k} rows, t {t.n_rows}")
    if isinstance(s, LinearMap):
        s = _over_variables(model, s)
        if s.n_rows != k:
            raise ValueError(f"add_exp_cones {name}: s has {s.n_rows} rows for {k} cones")
        if not s.vars:
            s = _constant_map(s.const, k, "s")
    else:
        s = _constant_map(s, k, "s")
    if not s.vars and not np.all(s.const > 0):
        raise ValueError(f"add_exp_cones {name}: a constant s must be positive (s = 0 is the face r <= 0, t >= 0: "
                         "state it with add_linear_constraints)")
    con = pyo.Constraint(range(k))
    model.add_component(name, con)
    rec = ExpConeRecord(con, r, s, t, pending=True)
    if not defer:
        rec.materialize()
    annotations(model).exp.append(rec)
    return con


def _stack_maps(maps: Sequence[LinearMap]) -> LinearMap:
    """The maps' rows stacked (in order) over the union of their variables."""
    index: dict = {}
    out_vars: list = []
    for m in maps:
        for v in m.vars:
            if id(v) not in index:
                index[id(v)] = len(out_vars)
                out_vars.append(v)
    blocks = []
    for m in maps:
        M = m.matrix.tocoo()
        cols = np.array([index[id(v)] for v in m.vars], dtype=np.int64)
        blocks.append(sp.csr_matrix((M.data, (M.row, cols[M.col] if M.nnz else M.col)),
                                    shape=(m.n_rows, len(out_vars))))
    return LinearMap(sp.vstack(blocks, format="csr"), out_vars, np.concatenate([m.const for m in maps]))


def add_log_sum_exp(model, name: str, terms: Sequence, *, defer: bool = False) -> list:
    """The epigraph ``t_i >= log sum_k exp(u_k,i)`` of a log-sum-exp, as exponential cones:
    variables ``t`` (returned) and ``name_v[k, i]`` with ``exp(u_k,i - t_i) <= v_k,i`` and
    ``sum_k v_k,i <= 1`` (the standard conic form). With ``terms = [None, -m]`` it is the
    logistic loss ``t_i >= log(1 + exp(-m_i))``; with the ``K`` class scores of a multinomial model,
    its normaliser.

    Parameters
    ----------
    terms : sequence of LinearMap (``m`` rows each) or None
        The ``K >= 2`` exponents ``u_k`` over variables or named expressions; ``None`` is the
        zero map.
    defer : bool
        Build the Pyomo constraints lazily (see :func:`add_exp_cones`).

    The record defines ``t = log sum_k exp(u_k)`` and ``v_k = exp(u_k - t)``
    (:class:`DefinitionRecord`): a solver's answer is read with ``t`` at exactly the loss its
    coefficients attain (``fsframe.canonical.Auxiliaries``).
    """
    if len(terms) < 2:
        raise ValueError(f"add_log_sum_exp {name}: need at least two terms, got {len(terms)}")
    m = next((u.n_rows for u in terms if u is not None), None)
    if m is None:
        raise ValueError(f"add_log_sum_exp {name}: every term is None")
    maps = [_constant_map(0.0, m, "term") if u is None else _over_variables(model, _as_map(u, "term")) for u in terms]
    if any(u.n_rows != m for u in maps):
        raise ValueError(f"add_log_sum_exp {name}: the terms have {[u.n_rows for u in maps]} rows; they must agree")
    K = len(maps)
    with _gc.PauseGC():
        tv = pyo.Var(range(m))
        model.add_component(f"{name}_t", tv)
        vv = pyo.Var(range(K), range(m))
        model.add_component(f"{name}_v", vv)
    t = tuple(tv.values())
    v = [tuple(vv[k, i] for i in range(m)) for k in range(K)]
    eye = sp.identity(m, format="csr")
    for k, u in enumerate(maps):
        r = LinearMap(sp.hstack([u.matrix, -eye]).tocsr(), tuple(u.vars) + t, u.const)
        add_exp_cones(model, f"{name}_cone{k}", r, 1.0, LinearMap.identity(v[k]), defer=defer)
    ann = annotations(model)
    depends = list(ann.exp[-K:])
    sums = add_linear_constraints(model, f"{name}_sum", LinearMap(sp.hstack([eye] * K).tocsr(), [x for vk in v for x in vk]),
                                  upper=1.0)
    depends.append(ann.linear[id(sums)])
    stacked = _stack_maps(maps)
    ann.definitions.append(DefinitionRecord("logsumexp", t, stacked, tuple(depends)))
    for k, u in enumerate(maps):
        ann.definitions.append(DefinitionRecord(
            "exp", v[k], LinearMap(sp.hstack([u.matrix, -eye]).tocsr(), tuple(u.vars) + t, u.const), tuple(depends)))
    return list(t)


def add_definitions(model, name: str, vars: Sequence, lmap: LinearMap, *, defer: bool = False):
    """Add the equality rows ``vars_i = lmap_i`` as an indexed Pyomo ``Constraint`` ``name``
    (:func:`add_linear_constraints`) and record that they *define* ``vars``: a solver's answer is
    read with ``vars`` recomputed from the other columns, exactly (a least-squares residual
    ``r = y - X w - b``, whose square the loss charges). Returns the Constraint component."""
    vars = tuple(vars)
    lmap = _as_map(lmap, "lmap")
    if lmap.n_rows != len(vars):
        raise ValueError(f"add_definitions {name}: {len(vars)} variables for {lmap.n_rows} rows")
    if not all(getattr(v, "is_variable_type", lambda: False)() for v in vars):
        raise TypeError(f"add_definitions {name}: vars must be Pyomo variables")
    rows = LinearMap(sp.hstack([sp.identity(len(vars)), -lmap.matrix]).tocsr(), vars + tuple(lmap.vars))
    con = add_linear_constraints(model, name, rows, lower=lmap.const, upper=lmap.const, defer=defer)
    ann = annotations(model)
    ann.definitions.append(DefinitionRecord("affine", vars, _over_variables(model, lmap), (ann.linear[id(con)],)))
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
    with _gc.PauseGC():
        parts = []
        if "lin" in terms:
            blk.lin = pyo.Param(range(n_groups), mutable=True, initialize=0.0)
            S = magnitude.matrix.tocoo()
            coefs = [float(v) * blk.lin[int(j)] if v != 1.0 else blk.lin[int(j)] for j, v in zip(S.row, S.data)]
            parts.append(_nx.LinearExpression(constant=0.0, linear_coefs=coefs,
                                          linear_vars=[magnitude.vars[int(c)] for c in S.col]))
        if "lin_w" in terms:
            blk.lin_w = pyo.Param(range(n_coef), mutable=True, initialize=0.0)
            W = coef.matrix.tocoo()
            coefs = [float(v) * blk.lin_w[int(k)] if v != 1.0 else blk.lin_w[int(k)] for k, v in zip(W.row, W.data)]
            parts.append(_nx.LinearExpression(constant=0.0, linear_coefs=coefs,
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
