"""Compile a Pyomo model, once, into the canonical conic form every backend reads.

:class:`~fsframe.canonical.ProblemData` is ECOS's form plus variable bounds::

    minimise    1/2 x'Px + c'x + offset
    subject to  A x = b
                G x <=_K h,   K = R_+^l x SOC(q_1) x ... x SOC(q_r) x EXP^k
                lb <= x <= ub

Pyomo's own standard-form compiler is LP-only, so this package is fsframe's own. By concern:

* :mod:`~fsframe.compiler.rows` reads the linear constraints (recorded blocks of
  :mod:`fsframe.pyomo_ext`, direct ``LinearExpression`` bodies, general repn);
* :mod:`~fsframe.compiler.cones` recognises quadratic and exponential cones and lays out
  recorded ones (``cone_form``);
* :mod:`~fsframe.compiler.objective` reads the objective (the slot's loss);
* :mod:`~fsframe.compiler.assembly` holds the columns and stacks the rows into ``ProblemData``;
* :mod:`~fsframe.compiler.compiled` is the result, :class:`CompiledModel`.

``compile_model(model, fast=False)`` skips the recorded blocks (creating the Pyomo rows of
deferred ones first), which is how tests check the fast path. An outer-loop iteration never recompiles: :meth:`CompiledModel.with_weights` updates the
objective (and, for infinite EM weights, bounds) in numpy (:mod:`fsframe.slot`).
"""

from __future__ import annotations

from ..canonical import ProblemData
from ..pyomo_ext import annotations, materialize
from ..slot import SlotMaps
from .assembly import ProblemBuilder, assemble, definitions
from .compiled import CompiledModel
from .cones import ConePlan
from .objective import objective_arrays, read_objective
from .rows import read_constraints

__all__ = ["ProblemData", "CompiledModel", "compile_model", "SlotMaps"]


def compile_model(model, *, fast: bool = True, cone_form: str = "substitute") -> CompiledModel:
    """Compile ``model`` into a :class:`CompiledModel`.

    Parameters
    ----------
    fast : bool
        Use the matrices recorded by :mod:`fsframe.pyomo_ext` where components are intact.
        ``False`` reads every component from Pyomo (slower; used to test the fast path); the
        rows of deferred blocks (``add_linear_constraints(defer=True)``) are created first.
    cone_form : ``"substitute"`` or ``"auxiliary"``
        How a cone declared with :func:`~fsframe.pyomo_ext.add_soc` enters ``G``: with its
        affine arguments substituted into the cone rows (no auxiliary columns), or through its
        auxiliary variables and their defining equalities. Same optimum; the solver's time
        differs (see ``docs/benchmarks.md``).
    """
    ann = annotations(model)
    if not fast:
        materialize(model)
    plan = ConePlan(ann, fast=fast, cone_form=cone_form)
    bld = ProblemBuilder()
    general_cones = read_constraints(model, ann, bld, plan, fast)
    c_terms, quad_terms, offset = read_objective(model, ann.slot, bld)
    # the slot's variables are columns before the cones are laid out (an auxiliary used by the
    # slot is kept)
    record = ann.slot
    coef_cols = magnitude_cols = None
    if record is not None:
        coef_cols = bld.cols(record.coef.vars)
        if record.magnitude is not None:
            magnitude_cols = bld.cols(record.magnitude.vars)
    for cone in plan.cone_maps(bld, general_cones):
        bld.add_cone(cone)
    for r, s, t in plan.exp:
        bld.add_exp(r, s, t)
    n = len(bld.columns)
    c, P = objective_arrays(c_terms, quad_terms, n)
    data = assemble(bld, c, P, offset)
    slot = None if record is None else SlotMaps.from_record(record, coef_cols, magnitude_cols, n)
    return CompiledModel(model, bld.columns, bld.col_index, data, slot, record, bld.paths,
                         definitions=definitions(ann.definitions, bld))
