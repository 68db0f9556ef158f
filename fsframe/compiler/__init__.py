"""Compile a Pyomo model, once, into the canonical conic form every backend reads.

``ProblemData`` is ECOS's form plus variable bounds::

    minimise    1/2 x'Px + c'x + offset
    subject to  A x = b
                G x <=_K h,   K = R_+^l x SOC(q_1) x ... x SOC(q_r)
                lb <= x <= ub

Bounds are kept apart because HiGHS takes them natively (as column bounds); conic backends
fold them into the ``R_+`` block (:meth:`ProblemData.bounds_as_rows`). Pyomo's own standard-form
compiler is LP-only, so this module is fsframe's own.

Three reading paths, fastest first:

1. *recorded blocks* — components built by :mod:`fsframe.pyomo_ext` carry their matrices, used
   as they are when the component is intact (same row count, all rows active, no row edited
   since it was recorded: one identity test per row);
2. *direct* — a ``LinearExpression`` body with numeric coefficients is read without a repn;
3. *general* — ``generate_standard_repn(quadratic=True)`` on anything else; a quadratic
   constraint of the form ``sum a_i x_i^2 <= b t^2`` with ``t >= 0`` is recognised as a cone.

``compile_model(model, fast=False)`` uses only paths 2 and 3, which is how tests check the fast
path. An outer-loop iteration never recompiles: :meth:`CompiledModel.with_weights` updates the
objective (and, for infinite EM weights, bounds) in numpy and returns a new ``ProblemData``.
"""

from __future__ import annotations

from numbers import Number

import attrs
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from numpy.typing import NDArray
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.repn import generate_standard_repn

from ..errors import UnsupportedProblemError
from ..pyomo_ext import LinearMap, SparsitySlot, annotations, check_slot_objective

from ..canonical import ProblemData

__all__ = ["ProblemData", "CompiledModel", "compile_model", "SlotMaps"]


@attrs.frozen(eq=False)
class SlotMaps:
    """The sparsity slot in column space: ``w = W x`` (coefficient entries), ``s = S x``."""

    W: sp.csr_matrix
    S: sp.csr_matrix | None
    groups: NDArray
    n_groups: int
    terms: frozenset
    group_cols: tuple  # per group: the columns its coefficient rows touch
    exclusive: bool  # no column is shared between groups (needed to fix a group at zero)


class CompiledModel:
    """A Pyomo model compiled once, plus what loops need to update and read it.

    Attributes
    ----------
    model : pyomo ConcreteModel
    columns : list of VarData
        Column ``j`` of every matrix is ``columns[j]``.
    data : ProblemData
        The problem at the slot weights last set (zero weights after compiling).
    slot : SlotMaps or None
    """

    def __init__(self, model, columns, col_index, data: ProblemData, slot: SlotMaps | None,
                 slot_record: SparsitySlot | None, paths: dict):
        self.model = model
        self.columns = columns
        self.col_index = col_index
        self.base = data  # loss-only objective, model bounds
        self.data = data
        self.slot = slot
        self.slot_record = slot_record
        self.paths = paths  # how many rows each reading path produced (for tests and docs)
        self._fixed_cols: set = set()
        self._nonzero_params: set = set()  # slot Params _sync has set (all start at 0)

    # -- reading solutions ----------------------------------------------------------------
    def cols(self, vars) -> NDArray:
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

    def group_norms(self, w: NDArray) -> NDArray:
        """``t_j = ||w_(j)||`` for each group."""
        sq = np.bincount(self.slot.groups, weights=w * w, minlength=self.slot.n_groups)
        return np.sqrt(sq)

    def loss(self, x: NDArray) -> float:
        """The objective without the sparsity penalty at ``x``."""
        return self.base.objective(x)

    def load_solution(self, x: NDArray) -> None:
        """Write ``x`` into the Pyomo variables' values."""
        for v, val in zip(self.columns, x.tolist()):
            v.set_value(val, skip_validation=True)

    # -- changing the objective -------------------------------------------------------------
    def with_weights(self, lin=None, lin_w=None, quad=None, *, sync: bool = True) -> ProblemData:
        """The problem with slot weights ``lin`` (per group, on ``s_j``), ``lin_w`` (per
        coefficient, on ``w_k``) and ``quad`` (per group, on ``||w_(j)||^2``).

        An infinite ``lin[j]`` or ``quad[j]`` fixes group ``j`` at zero (bounds ``[0, 0]`` on its columns),
        the numerically stable form of an EM weight ``1/t^2`` at ``t = 0``. Only ``c``, ``P``
        and, for fixed groups, ``lb``/``ub`` change; the constraint matrices are shared.
        With ``sync`` the Pyomo Params (and fixed variables) are updated too, so the Pyomo
        model stays the problem that is solved.
        """
        if self.slot is None:
            raise UnsupportedProblemError("this model has no sparsity slot (built without add_sparsity_slot)")
        s, base = self.slot, self.base
        missing = [t for t, v in (("lin", lin), ("lin_w", lin_w), ("quad", quad)) if v is not None and t not in s.terms]
        if missing:
            raise UnsupportedProblemError(f"the model's slot has no {missing} term(s); it was built with {sorted(s.terms)}")
        lin = None if lin is None else np.array(np.broadcast_to(np.asarray(lin, dtype=float), (s.n_groups,)))
        quad = None if quad is None else np.array(np.broadcast_to(np.asarray(quad, dtype=float), (s.n_groups,)))
        for nm, vals in (("lin", lin), ("quad", quad)):
            if vals is not None and (np.any(vals < 0) or np.any(np.isnan(vals))):
                raise ValueError(f"{nm} slot weights must be >= 0 (inf fixes a group at zero)")
        fixed = np.zeros(s.n_groups, dtype=bool)
        if lin is not None:
            fixed |= np.isinf(lin)
        if quad is not None:
            fixed |= np.isinf(quad)
        fixed_groups = np.flatnonzero(fixed)
        lb, ub = base.lb, base.ub
        if fixed_groups.size:
            if not s.exclusive:
                raise UnsupportedProblemError("cannot fix a group at zero: its columns are shared with other groups")
            cols = np.concatenate([s.group_cols[j] for j in fixed_groups])
            lb, ub = lb.copy(), ub.copy()
            lb[cols] = 0.0
            ub[cols] = 0.0
            if lin is not None:
                lin[fixed] = 0.0
            if quad is not None:
                quad[fixed] = 0.0
        c = base.c.copy()
        if lin is not None:
            c += s.S.T @ lin
        if lin_w is not None:
            lin_w = np.broadcast_to(np.asarray(lin_w, dtype=float), (s.W.shape[0],))
            if not np.all(np.isfinite(lin_w)):
                raise ValueError("lin_w slot weights must be finite")
            c += s.W.T @ lin_w
        P = base.P
        if quad is not None:
            Pq = (s.W.T @ sp.diags(2.0 * quad[s.groups]) @ s.W).tocsc()
            P = Pq if base.P is None else (base.P + Pq).tocsc()
        data = base.evolve(c=c, P=P, lb=lb, ub=ub)
        if sync:
            self._sync(lin, lin_w, quad, fixed_groups)
        self.data = data
        return data

    def _sync(self, lin, lin_w, quad, fixed_groups) -> None:
        blk = self.slot_record.block
        for name, vals in (("lin", lin), ("lin_w", lin_w), ("quad", quad)):
            if vals is None:
                # a term not passed is absent from the solved problem: its Params go back to 0
                # (only if an earlier call set them, so a loop using one term pays nothing)
                if name in self._nonzero_params:
                    getattr(blk, name).store_values(0.0, check=False)
                    self._nonzero_params.discard(name)
                continue
            # check=False skips Pyomo's per-entry index and domain validation (10x faster; 30 ms
            # per iteration at n=5000): the indices are the Param's own 0..k-1 and the values
            # plain floats that with_weights has validated.
            getattr(blk, name).store_values(dict(enumerate(np.asarray(vals, dtype=float).tolist())), check=False)
            self._nonzero_params.add(name)
        want = set(np.concatenate([self.slot.group_cols[j] for j in fixed_groups]).tolist()) if fixed_groups.size else set()
        have = self._fixed_cols
        for j in have - want:
            self.columns[j].unfix()
        for j in want - have:
            self.columns[j].fix(0.0, skip_validation=True)  # as in the compiled bounds; 5x faster
        self._fixed_cols = want


# ------------------------------------------------------------------------------ compiler
class _Builder:
    def __init__(self):
        self.col_index: dict[int, int] = {}
        self.columns: list = []
        # row blocks: list of (data, global_indices, indptr, lower, upper)
        self.blocks: list = []
        self.cone_blocks: list = []  # (data, indices, indptr) rows of -G, h
        self.paths = {"recorded": 0, "direct": 0, "general": 0, "cones": 0}

    def col(self, v) -> int:
        key = id(v)
        j = self.col_index.get(key)
        if j is None:
            if not v.is_continuous():
                raise UnsupportedProblemError(
                    f"variable {v.name} is {v.domain}: fsframe compiles continuous convex problems only")
            j = len(self.columns)
            self.col_index[key] = j
            self.columns.append(v)
        return j

    def cols(self, vars) -> NDArray:
        got = list(map(self.col_index.get, map(id, vars)))  # known columns in bulk
        if None in got:
            col = self.col
            got = [col(v) if j is None else j for v, j in zip(vars, got)]
        return np.array(got, dtype=np.int64).reshape(len(got))

    def add_map_rows(self, lmap: LinearMap, lower, upper, path: str) -> None:
        M = lmap.matrix
        cols = self.cols(lmap.vars)
        self.blocks.append((M.data, cols[M.indices], M.indptr, lower - lmap.const, upper - lmap.const))
        self.paths[path] += M.shape[0]

    def add_row(self, coefs, vars, lower, upper, path: str) -> None:
        cols = self.cols(vars)
        self.blocks.append((np.asarray(coefs, dtype=float), cols, np.array([0, len(cols)]),
                            np.array([lower]), np.array([upper])))
        self.paths[path] += 1


def _read_constraint(bld: _Builder, cdata, cones_out: list) -> None:
    body = cdata.body
    lo = -np.inf if cdata.lower is None else float(pyo.value(cdata.lower))
    up = np.inf if cdata.upper is None else float(pyo.value(cdata.upper))
    if type(body) is LinearExpression and all(isinstance(c, Number) for c in body.linear_coefs):
        const = float(pyo.value(body.constant)) if body.constant is not None else 0.0
        bld.add_row(body.linear_coefs, body.linear_vars, lo - const, up - const, "direct")
        return
    repn = generate_standard_repn(body, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise UnsupportedProblemError(f"constraint {cdata.name} is nonlinear; fsframe compiles LP/QP/SOCP only")
    const = float(repn.constant)
    if repn.quadratic_vars:
        cones_out.append(_detect_cone(cdata, repn, lo - const, up - const))
        return
    bld.add_row(repn.linear_coefs, repn.linear_vars, lo - const, up - const, "general")


def _detect_cone(cdata, repn, lo, up):
    """Recognise ``sum a_i x_i^2 - b t^2 <= 0`` with ``t >= 0`` as ``||sqrt(a) x|| <= sqrt(b) t``."""
    msg = (f"quadratic constraint {cdata.name} is not a second-order cone of the form "
           "sum a_i x_i^2 <= b t^2 with t >= 0; declare cones with fsframe.pyomo_ext.add_soc")
    if repn.linear_vars or np.isfinite(lo) or up != 0.0:
        raise UnsupportedProblemError(msg)
    pos, neg = [], []
    for (v1, v2), a in zip(repn.quadratic_vars, repn.quadratic_coefs):
        if v1 is not v2:
            raise UnsupportedProblemError(msg)
        (pos if a > 0 else neg).append((v1, float(a)))
    if len(neg) != 1 or neg[0][0].lb is None or neg[0][0].lb < 0:
        raise UnsupportedProblemError(msg)
    t, b = neg[0]
    vars_ = [t] + [v for v, _ in pos]
    scale = np.sqrt(np.array([-b] + [a for _, a in pos]))
    return LinearMap(sp.diags(scale).tocsr(), vars_)


def compile_model(model, *, fast: bool = True, cone_form: str = "substitute") -> CompiledModel:
    """Compile ``model`` into a :class:`CompiledModel`.

    Parameters
    ----------
    fast : bool
        Use the matrices recorded by :mod:`fsframe.pyomo_ext` where components are intact.
        ``False`` reads every component from Pyomo (slower; used to test the fast path).
    cone_form : ``"substitute"`` or ``"auxiliary"``
        How a cone declared with :func:`~fsframe.pyomo_ext.add_soc` enters ``G``: with its
        affine arguments substituted into the cone rows (no auxiliary columns), or through its
        auxiliary variables and their defining equalities. Same optimum; the solver's time
        differs (see ``docs/benchmarks.md``).
    """
    if cone_form not in ("substitute", "auxiliary"):
        raise ValueError(f"cone_form must be 'substitute' or 'auxiliary', got {cone_form!r}")
    ann = annotations(model)
    bld = _Builder()
    # a cone record is used only while its constraint and definitions are as recorded
    records = {id(r.component): r for r in ann.cones if r.intact(ann)} if fast else {}
    definitions = ({id(d): r for r in records.values() for d in r.definitions}
                   if fast and cone_form == "substitute" else {})
    general_cones: list[LinearMap] = []
    deferred: list = []  # cone records processed after all rows (to know which aux vars are used)
    for comp in model.component_objects(pyo.Constraint, active=True, descend_into=True):
        key = id(comp)
        if key in records:
            deferred.append(records[key])
            continue
        if key in definitions:
            continue
        block = ann.linear.get(key) if fast else None
        if block is not None and block.intact():
            bld.add_map_rows(block.lmap, block.lower, block.upper, "recorded")
            continue
        for cdata in comp.values():
            if cdata.active:
                _read_constraint(bld, cdata, general_cones)

    # objective
    slot_rec = ann.slot
    c_terms: dict[int, float] = {}
    quad_terms: list = []
    offset = 0.0
    if slot_rec is not None:
        check_slot_objective(model, slot_rec)
        expr = slot_rec.block.loss.expr
    else:
        objs = list(model.component_data_objects(pyo.Objective, active=True))
        if len(objs) != 1:
            raise UnsupportedProblemError(f"the model needs exactly one active objective, found {len(objs)}")
        if objs[0].sense != pyo.minimize:
            raise UnsupportedProblemError("fsframe minimises; negate the objective of a maximisation")
        expr = objs[0].expr
    repn = generate_standard_repn(expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise UnsupportedProblemError("the objective is nonlinear; fsframe compiles LP/QP/SOCP only")
    offset = float(repn.constant)
    for v, a in zip(repn.linear_vars, repn.linear_coefs):
        j = bld.col(v)
        c_terms[j] = c_terms.get(j, 0.0) + float(a)
    for (v1, v2), a in zip(repn.quadratic_vars or (), repn.quadratic_coefs or ()):
        quad_terms.append((bld.col(v1), bld.col(v2), float(a)))

    # slot maps: make sure its variables are columns
    W_cols = S_cols = None
    if slot_rec is not None:
        W_cols = bld.cols(slot_rec.coef.vars)
        if slot_rec.magnitude is not None:
            S_cols = bld.cols(slot_rec.magnitude.vars)

    # recorded cones: substitute unless an auxiliary is used elsewhere — in a row, the objective,
    # the slot, or another cone. A cone refers to the variables of its lhs and rhs maps in either
    # form (substituted: in its rows; kept: in its definitions), never to its own auxiliaries.
    cone_maps: list[LinearMap] = []
    elsewhere: set = set()
    if cone_form == "substitute" and any(rec.aux for rec in deferred):
        elsewhere.update(bld.col_index)
        for rec in deferred:
            elsewhere.update(map(id, rec.lhs.vars))
            elsewhere.update(map(id, rec.rhs.vars))
        for cm in general_cones:
            elsewhere.update(map(id, cm.vars))
    for rec in deferred:
        used = any(id(v) in elsewhere for v in rec.aux) if cone_form == "substitute" else True
        if cone_form == "substitute" and not used:
            # identity, not ==: comparing Pyomo variables with == builds expressions
            if len(rec.rhs.vars) == len(rec.lhs.vars) and all(a is b for a, b in zip(rec.rhs.vars, rec.lhs.vars)):
                rows = sp.vstack([rec.rhs.matrix, rec.lhs.matrix], format="csr")
                vars_ = rec.rhs.vars
            else:
                # put both maps over a common variable list
                vars_ = tuple(rec.rhs.vars) + tuple(rec.lhs.vars)
                rows = sp.vstack([sp.hstack([rec.rhs.matrix, sp.csr_matrix((1, len(rec.lhs.vars)))]),
                                  sp.hstack([sp.csr_matrix((rec.lhs.n_rows, len(rec.rhs.vars))), rec.lhs.matrix])],
                                 format="csr")
            cone_maps.append(LinearMap(rows, vars_, np.concatenate([rec.rhs.const, rec.lhs.const])))
        else:
            if cone_form == "substitute":
                for d in rec.definitions:  # it was skipped above; compile it now
                    blk = ann.linear[id(d)]
                    bld.add_map_rows(blk.lmap, blk.lower, blk.upper, "recorded")
            cone_maps.append(LinearMap.identity([rec.t, *rec.z]))
    cone_maps.extend(general_cones)

    for cm in cone_maps:
        cols = bld.cols(cm.vars)
        M = cm.matrix
        bld.cone_blocks.append((M.data, cols[M.indices], M.indptr, cm.const, M.shape[0]))
        bld.paths["cones"] += 1

    n = len(bld.columns)
    # assemble linear rows
    eq_rows, eq_rhs, g_rows, g_rhs = [], [], [], []
    for data, idx, ptr, lo, up in bld.blocks:
        R = sp.csr_matrix((data, idx, ptr), shape=(len(ptr) - 1, n))
        lo = np.asarray(lo, dtype=float)
        up = np.asarray(up, dtype=float)
        eq = lo == up
        if eq.all():
            eq_rows.append(R)
            eq_rhs.append(up)
            continue
        if eq.any():
            eq_rows.append(R[eq])
            eq_rhs.append(up[eq])
        fin_up = np.isfinite(up) & ~eq
        fin_lo = np.isfinite(lo) & ~eq
        if fin_up.any():
            g_rows.append(R if fin_up.all() else R[fin_up])
            g_rhs.append(up[fin_up])
        if fin_lo.any():
            g_rows.append(-(R if fin_lo.all() else R[fin_lo]))
            g_rhs.append(-lo[fin_lo])
    l = int(sum(r.shape[0] for r in g_rows))  # noqa: E741
    cones = []
    for data, idx, ptr, const, q in bld.cone_blocks:
        g_rows.append(-sp.csr_matrix((data, idx, ptr), shape=(q, n)))
        g_rhs.append(np.asarray(const, dtype=float))
        cones.append(int(q))
    A = sp.vstack(eq_rows, format="csr") if eq_rows else sp.csr_matrix((0, n))
    b = np.concatenate(eq_rhs) if eq_rhs else np.zeros(0)
    G = sp.vstack(g_rows, format="csr") if g_rows else sp.csr_matrix((0, n))
    h = np.concatenate(g_rhs) if g_rhs else np.zeros(0)
    A.resize((A.shape[0], n))
    G.resize((G.shape[0], n))
    # a variable listed twice in one row (a Pyomo LinearExpression or a LinearMap may repeat one)
    # leaves two entries in one (row, column): HiGHS and ECOS reject that; sum them. A no-op check
    # for rows already in canonical form.
    A.sum_duplicates()
    G.sum_duplicates()

    c = np.zeros(n)
    if c_terms:
        c[np.fromiter(c_terms.keys(), dtype=np.int64)] = np.fromiter(c_terms.values(), dtype=float)
    P = None
    if quad_terms:
        i, j, a = map(np.asarray, zip(*quad_terms))
        # repn gives a * x_i x_j; 1/2 x'Px needs P_ii = 2a, P_ij = P_ji = a
        P = sp.coo_matrix((np.concatenate([a, a]), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n)).tocsc()
    bnds = [v.bounds for v in bld.columns]  # one domain lookup per column instead of two
    lb = np.array([-np.inf if lo is None else float(lo) for lo, _ in bnds], dtype=float).reshape(n)
    ub = np.array([np.inf if up is None else float(up) for _, up in bnds], dtype=float).reshape(n)
    for k in [k for k, v in enumerate(bld.columns) if v.fixed]:
        lb[k] = ub[k] = float(bld.columns[k].value)
    data = ProblemData(c=c, A=A, b=b, G=G, h=h, lb=lb, ub=ub, l=l, cones=tuple(cones), P=P, offset=offset)

    slot = None
    if slot_rec is not None:
        Wm = slot_rec.coef.matrix
        W = sp.csr_matrix((Wm.data, W_cols[Wm.indices], Wm.indptr), shape=(Wm.shape[0], n))
        S = None
        if S_cols is not None:
            Sm = slot_rec.magnitude.matrix
            S = sp.csr_matrix((Sm.data, S_cols[Sm.indices], Sm.indptr), shape=(Sm.shape[0], n))
        groups = slot_rec.groups
        # the columns of each group: distinct (group, column) pairs of W's entries, sorted by group
        # then column, split at the group boundaries (one np.unique instead of one per group)
        Wc = W.tocoo()
        pairs = np.unique(np.stack([groups[Wc.row], Wc.col.astype(np.int64)]), axis=1)
        bounds = np.searchsorted(pairs[0], np.arange(1, slot_rec.n_groups))
        pair_cols = pairs[1].astype(Wc.col.dtype)
        group_cols = tuple(np.split(pair_cols, bounds)) if slot_rec.n_groups else ()
        exclusive = np.unique(pair_cols).size == pair_cols.size  # no column in two groups
        slot = SlotMaps(W=W, S=S, groups=groups, n_groups=slot_rec.n_groups, terms=slot_rec.terms,
                        group_cols=group_cols, exclusive=bool(exclusive))
    return CompiledModel(model, bld.columns, bld.col_index, data, slot, slot_rec, bld.paths)
