"""The objective the compiler reads: the slot's loss (the penalty is added per iteration by
:mod:`fsframe.slot`) or, for a model without a slot, its one active objective."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.repn import generate_standard_repn

from ..errors import UnsupportedProblemError
from ..pyomo_ext import SparsitySlot, check_slot_objective
from .assembly import ProblemBuilder

__all__ = ["read_objective", "objective_arrays"]


def _objective_expression(model, slot: SparsitySlot | None):
    if slot is not None:
        check_slot_objective(model, slot)
        return slot.block.loss.expr
    objs = list(model.component_data_objects(pyo.Objective, active=True))
    if len(objs) != 1:
        raise UnsupportedProblemError(f"the model needs exactly one active objective, found {len(objs)}")
    if objs[0].sense != pyo.minimize:
        raise UnsupportedProblemError("fsframe minimises; negate the objective of a maximisation")
    return objs[0].expr


def read_objective(model, slot: SparsitySlot | None, bld: ProblemBuilder):
    """Read the objective into columns of ``bld``: ``(c_terms, quad_terms, offset)`` with
    ``c_terms`` a dict column -> coefficient and ``quad_terms`` triples ``(i, j, a)`` of
    ``a * x_i * x_j``. Turn them into arrays with :func:`objective_arrays` once every column is
    known."""
    repn = generate_standard_repn(_objective_expression(model, slot), quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise UnsupportedProblemError("the objective is nonlinear; fsframe compiles LP/QP/SOCP only")
    c_terms: dict[int, float] = {}
    for v, a in zip(repn.linear_vars, repn.linear_coefs):
        j = bld.col(v)
        c_terms[j] = c_terms.get(j, 0.0) + float(a)
    quad_terms = [(bld.col(v1), bld.col(v2), float(a))
                  for (v1, v2), a in zip(repn.quadratic_vars or (), repn.quadratic_coefs or ())]
    return c_terms, quad_terms, float(repn.constant)


def objective_arrays(c_terms: dict, quad_terms: list, n: int):
    """``c`` and ``P`` (``None`` without quadratic terms) of ``1/2 x'Px + c'x`` over ``n`` columns."""
    c = np.zeros(n)
    if c_terms:
        c[np.fromiter(c_terms.keys(), dtype=np.int64)] = np.fromiter(c_terms.values(), dtype=float)
    if not quad_terms:
        return c, None
    i, j, a = map(np.asarray, zip(*quad_terms))
    # repn gives a * x_i x_j; 1/2 x'Px needs P_ii = 2a, P_ij = P_ji = a
    P = sp.coo_matrix((np.concatenate([a, a]), (np.concatenate([i, j]), np.concatenate([j, i]))),
                      shape=(n, n)).tocsc()
    return c, P
