"""Cones: second-order cones recognised in a quadratic constraint, or taken from the records of
:func:`fsframe.pyomo_ext.add_soc` in one of two forms (``cone_form``); exponential cones
recognised in a nonlinear constraint ``s exp(r / s) <= t`` (:func:`detect_exp_cone`), or taken
from the records of :func:`fsframe.pyomo_ext.add_exp_cones`.

A recorded cone ``||lhs|| <= rhs`` is stated in Pyomo through auxiliary variables ``z = lhs``,
``t = rhs``. ``"substitute"`` puts the affine maps ``rhs``, ``lhs`` straight into the cone's rows
(no auxiliary columns, the definitions are not compiled) unless an auxiliary is used elsewhere;
``"auxiliary"`` keeps the auxiliaries as columns and their definitions as equality rows.
Cone rows are ``(t, z_1, ..., z_k)``: entry 0 is the bound.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import UnsupportedProblemError
from ..pyomo_ext import Annotations, ConeRecord, LinearMap
from .assembly import ProblemBuilder

__all__ = ["CONE_FORMS", "ConePlan", "detect_cone", "detect_exp_cone"]

CONE_FORMS = ("substitute", "auxiliary")


def detect_cone(cdata, repn, lo: float, up: float) -> LinearMap:
    """Recognise ``sum a_i x_i^2 - b t^2 <= 0`` with ``t >= 0`` (``repn`` of the constraint
    ``cdata``'s body, bounds ``lo``/``up`` less its constant) as ``||sqrt(a) x|| <= sqrt(b) t``."""
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


def _linear(expr, what: str, msg: str) -> LinearMap:
    """The affine map of a linear Pyomo expression (one row)."""
    from pyomo.repn import generate_standard_repn

    repn = generate_standard_repn(expr, quadratic=False, compute_values=True)
    if repn.nonlinear_expr is not None:
        raise UnsupportedProblemError(f"{msg} ({what} is not affine)")
    return LinearMap(np.array([repn.linear_coefs], dtype=float).reshape(1, len(repn.linear_vars)),
                     repn.linear_vars, [float(repn.constant)])


def detect_exp_cone(cdata, repn, lo: float, up: float) -> tuple[LinearMap, LinearMap, LinearMap]:
    """Recognise the exponential cone ``s exp(r / s) <= t`` in a constraint whose body's ``repn``
    (linear part less its constant, bounds ``lo``/``up`` less it) has the nonlinear part
    ``exp(a)``, ``c * exp(a)`` (constant ``c > 0``; ``s = c``, ``r = c a``) or ``S * exp(R / S)``
    (affine ``S``, ``R``) and the linear part ``-t``; returns the one-row maps ``(r, s, t)``."""
    from pyomo.core.expr.numeric_expr import DivisionExpression, ProductExpression, UnaryFunctionExpression

    msg = (f"constraint {cdata.name} is nonlinear and not an exponential cone s*exp(r/s) <= t (s a positive "
           "constant or affine, r and t affine); fsframe compiles LP/QP/SOCP/exponential cones only; declare "
           "exponential cones with fsframe.pyomo_ext.add_exp_cones")
    if np.isfinite(lo) or not np.isfinite(up) or repn.quadratic_vars:
        raise UnsupportedProblemError(msg)
    nl = repn.nonlinear_expr

    def is_exp(e):
        return isinstance(e, UnaryFunctionExpression) and e.getname() == "exp"

    if is_exp(nl):
        s_map = LinearMap(np.zeros((1, 0)), (), [1.0])
        r_map = _linear(nl.args[0], "the exponent", msg)
    elif isinstance(nl, ProductExpression) and is_exp(nl.args[1]):
        head, inner = nl.args[0], nl.args[1].args[0]
        if isinstance(head, (int, float, np.floating)) or not getattr(head, "is_potentially_variable", lambda: True)():
            c = float(head if isinstance(head, (int, float, np.floating)) else head())
            if not c > 0:
                raise UnsupportedProblemError(msg)
            a = _linear(inner, "the exponent", msg)
            s_map = LinearMap(np.zeros((1, 0)), (), [c])
            r_map = LinearMap(a.matrix * c, a.vars, a.const * c)
        elif isinstance(inner, DivisionExpression):
            s_map = _linear(head, "s", msg)
            r_map = _linear(inner.args[0], "r", msg)
            s_again = _linear(inner.args[1], "s", msg)
            same = (len(s_map.vars) == len(s_again.vars) and all(a is b for a, b in zip(s_map.vars, s_again.vars))
                    and np.array_equal(s_map.matrix.toarray(), s_again.matrix.toarray())
                    and np.array_equal(s_map.const, s_again.const))
            if not same:
                raise UnsupportedProblemError(msg)
        else:
            raise UnsupportedProblemError(msg)
    else:
        raise UnsupportedProblemError(msg)
    t_map = LinearMap(-np.array([repn.linear_coefs], dtype=float).reshape(1, len(repn.linear_vars)),
                      repn.linear_vars, [up])
    return r_map, s_map, t_map


def _substituted(rec: ConeRecord) -> LinearMap:
    """The cone rows ``(rhs, lhs)`` over the variables of the two maps."""
    # identity, not ==: comparing Pyomo variables with == builds expressions
    if len(rec.rhs.vars) == len(rec.lhs.vars) and all(a is b for a, b in zip(rec.rhs.vars, rec.lhs.vars)):
        rows = _stacked_rows(rec.rhs.matrix, rec.lhs.matrix, 0, len(rec.rhs.vars))
        vars_ = rec.rhs.vars
    else:  # put both maps over a common variable list: rhs's columns, then lhs's
        vars_ = tuple(rec.rhs.vars) + tuple(rec.lhs.vars)
        rows = _stacked_rows(rec.rhs.matrix, rec.lhs.matrix, len(rec.rhs.vars), len(vars_))
    return LinearMap(rows, vars_, np.concatenate([rec.rhs.const, rec.lhs.const]))


def _stacked_rows(top, bottom, shift: int, n_cols: int) -> sp.csr_matrix:
    """The rows of ``top`` over the rows of ``bottom``, ``bottom``'s columns shifted right by
    ``shift``, as one CSR matrix with ``n_cols`` columns (written directly: the ``vstack`` of
    two ``hstack``s made five sparse matrices per cone)."""
    top, bottom = sp.csr_matrix(top), sp.csr_matrix(bottom)
    indptr = np.concatenate([top.indptr.astype(np.int64), bottom.indptr[1:].astype(np.int64) + top.nnz])
    indices = np.concatenate([top.indices.astype(np.int64), bottom.indices.astype(np.int64) + shift])
    data = np.concatenate([top.data, bottom.data]).astype(float, copy=False)
    return sp.csr_matrix((data, indices, indptr), shape=(top.shape[0] + bottom.shape[0], n_cols))


class ConePlan:
    """Which constraint components the recorded cones take over, and the cones they give.

    A record is used only while its constraint and definitions are as recorded (``fast``); the
    constraint reader skips the components :meth:`takes`, and :meth:`cone_maps` turns the
    records it collected into cone rows once every other column is known.
    """

    def __init__(self, ann: Annotations, *, fast: bool, cone_form: str):
        if cone_form not in CONE_FORMS:
            raise ValueError(f"cone_form must be 'substitute' or 'auxiliary', got {cone_form!r}")
        self.substitute = cone_form == "substitute"
        self._ann = ann
        self._records = {id(r.component): r for r in ann.cones if r.intact(ann)} if fast else {}
        self._definitions = ({id(d): r for r in self._records.values() for d in r.definitions}
                             if self.substitute else {})
        self.deferred: list[ConeRecord] = []
        self._exp = {id(r.component): r for r in ann.exp if r.intact()} if fast else {}
        self.exp: list[tuple[LinearMap, LinearMap, LinearMap]] = []
        """The exponential cones ``(r, s, t)`` in the order read (records and recognised constraints)."""

    def takes(self, component) -> bool:
        """Whether ``component`` is a recorded cone (collected) or a definition it may substitute."""
        rec = self._records.get(id(component))
        if rec is not None:
            self.deferred.append(rec)
            return True
        exp = self._exp.get(id(component))
        if exp is not None:
            self.exp.append((exp.r, exp.s, exp.t))
            return True
        return id(component) in self._definitions

    def _used_elsewhere(self, bld: ProblemBuilder, general_cones: list[LinearMap]) -> set:
        """``id`` of every variable in a row, the objective, the slot, or a cone's maps."""
        elsewhere: set = set(bld.col_index)
        for rec in self.deferred:
            elsewhere.update(map(id, rec.lhs.vars))
            elsewhere.update(map(id, rec.rhs.vars))
        for cm in general_cones:
            elsewhere.update(map(id, cm.vars))
        return elsewhere

    def cone_maps(self, bld: ProblemBuilder, general_cones: list[LinearMap]) -> list[LinearMap]:
        """The rows of every cone. A recorded cone is substituted unless an auxiliary is used
        elsewhere; kept auxiliaries bring their definitions' rows into ``bld`` (when
        substituting, they were skipped while reading). A cone refers to the variables of its
        maps in either form, never to its own auxiliaries."""
        elsewhere = (self._used_elsewhere(bld, general_cones)
                     if self.substitute and any(rec.aux for rec in self.deferred) else set())
        out: list[LinearMap] = []
        for rec in self.deferred:
            if self.substitute and not any(id(v) in elsewhere for v in rec.aux):
                out.append(_substituted(rec))
                continue
            if self.substitute:
                for d in rec.definitions:
                    blk = self._ann.linear[id(d)]
                    bld.add_map_rows(blk.lmap, blk.lower, blk.upper, "recorded")
            out.append(LinearMap.identity([rec.t, *rec.z]))
        return out + general_cones
