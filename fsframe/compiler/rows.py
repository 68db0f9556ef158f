"""Reading the constraints of a Pyomo model into rows, on three paths, fastest first.

1. *recorded* — a component built by :func:`fsframe.pyomo_ext.add_linear_constraints` carries
   its matrix, used as it is while the component is intact (same row count, all rows active,
   no row edited since it was recorded: one identity test per row; a deferred component not
   materialised yet is read from its record only, and materialised before any other path
   reads it);
2. *direct* — a ``LinearExpression`` body with numeric coefficients is read without a repn;
3. *general* — ``generate_standard_repn(quadratic=True)`` on anything else; a quadratic
   constraint is handed to :func:`fsframe.compiler.cones.detect_cone`, a nonlinear one to
   :func:`fsframe.compiler.cones.detect_exp_cone`.
"""

from __future__ import annotations

from numbers import Number

import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression
from pyomo.repn import generate_standard_repn

from ..pyomo_ext import Annotations, LinearMap
from .assembly import ProblemBuilder
from .cones import ConePlan, detect_cone, detect_exp_cone

__all__ = ["read_constraints"]


def read_constraints(model, ann: Annotations, bld: ProblemBuilder, plan: ConePlan, fast: bool) -> list[LinearMap]:
    """Read every active constraint of ``model`` into ``bld``, except the recorded cones and
    definitions ``plan`` takes over (collected in ``plan.deferred``, exponential cones in
    ``plan.exp``); return the second-order cones found on the general path."""
    general_cones: list[LinearMap] = []
    exp_records = {id(r.component): r for r in ann.exp}
    soc_records = {id(r.component): r for r in ann.cones}
    for comp in model.component_objects(pyo.Constraint, active=True, descend_into=True):
        if plan.takes(comp):
            continue
        block = ann.linear.get(id(comp))
        if block is not None:
            if fast and block.intact():
                bld.add_block(block)
                continue
            block.materialize()  # a deferred block read from Pyomo needs its rows first
        if id(comp) in exp_records:
            exp_records[id(comp)].materialize()
        if id(comp) in soc_records:  # a deferred cone read from Pyomo needs its expression first
            soc_records[id(comp)].materialize()
        for cdata in comp.values():
            if cdata.active:
                _read_constraint(bld, cdata, general_cones, plan.exp)
    return general_cones


def _read_constraint(bld: ProblemBuilder, cdata, cones_out: list, exp_out: list) -> None:
    """One constraint on the direct or the general path."""
    body = cdata.body
    lo = -np.inf if cdata.lower is None else float(pyo.value(cdata.lower))
    up = np.inf if cdata.upper is None else float(pyo.value(cdata.upper))
    if type(body) is LinearExpression and all(isinstance(c, Number) for c in body.linear_coefs):
        const = float(pyo.value(body.constant)) if body.constant is not None else 0.0
        bld.add_row(body.linear_coefs, body.linear_vars, lo - const, up - const, "direct")
        return
    repn = generate_standard_repn(body, quadratic=True, compute_values=True)
    const = float(repn.constant)
    if repn.nonlinear_expr is not None:
        exp_out.append(detect_exp_cone(cdata, repn, lo - const, up - const))
        return
    if repn.quadratic_vars:
        cones_out.append(detect_cone(cdata, repn, lo - const, up - const))
        return
    bld.add_row(repn.linear_coefs, repn.linear_vars, lo - const, up - const, "general")
