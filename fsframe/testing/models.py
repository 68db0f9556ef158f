"""The kit's own formulation: the soft-margin hinge SVM, so that :func:`~fsframe.testing.check_loop`
needs no plugin (it runs with every method plugin blocked, ``FSFRAME_DISABLED_PLUGINS=svm``)."""

from __future__ import annotations

import attrs
import numpy as np

from ..enums import ProblemClass
from ..formulation import BuiltModel, Formulation
from ..pyomo_ext import LinearMap, add_linear_constraints, add_sparsity_slot, var_list
from ..validators import real, to_float

__all__ = ["KitHinge"]


@attrs.frozen
class KitHinge(Formulation):
    r"""``min penalty(w) + C sum_i xi_i  s.t.  y_i (x_i w + b) >= 1 - xi_i, xi >= 0`` in dense
    Pyomo rows: ``w = u - v`` (``u, v >= 0``, magnitude ``u + v``) for the slot's linear terms, a
    free ``w`` for ``quad`` alone; with the ``mask_space`` protocol and the ``large_margin`` trait,
    so the greedy loop and the filters run on it. Not registered: the default formulation of
    :func:`~fsframe.testing.check_loop`; its decision loss is :func:`~fsframe.testing.hinge_loss`."""

    name = "kit-hinge"
    reference = "the soft-margin SVM (paper 002 eqs. 1-2), written for the conformance kit"
    traits = frozenset({"large_margin"})
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.QP if "quad" in terms else ProblemClass.LP

    def build(self, X, y, terms):
        import pyomo.environ as pyo

        m, n = X.shape
        model = pyo.ConcreteModel(name=f"kit-hinge(C={self.C})")
        model.b = pyo.Var()
        model.xi = pyo.Var(range(m), bounds=(0, None))
        if terms & {"lin", "lin_w"}:
            model.u = pyo.Var(range(n), bounds=(0, None))
            model.v = pyo.Var(range(n), bounds=(0, None))
            wvars = var_list(model.u, model.v)
            eye = np.eye(n)
            coef = LinearMap(np.hstack([eye, -eye]), wvars)
            magnitude = LinearMap(np.hstack([eye, eye]), wvars)
            data = np.hstack([y[:, None] * X, -y[:, None] * X])
        else:
            model.w = pyo.Var(range(n))
            wvars = var_list(model.w)
            coef, magnitude, data = LinearMap.identity(wvars), None, y[:, None] * X
        rows = np.hstack([data, y[:, None], np.eye(m)])  # y_i (x_i w + b) + xi_i >= 1
        add_linear_constraints(model, "margin", LinearMap(rows, wvars + [model.b] + var_list(model.xi)), lower=1.0)
        loss = self.C * pyo.quicksum(model.xi[i] for i in range(m))
        slot = add_sparsity_slot(model, coef=coef, magnitude=magnitude, terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.ones((1, 1)), [model.b]), coef_shape=(n,))

    def mask_space(self, sub):
        """The ``mask_space`` protocol (the greedy loop): eq. 24 of paper 003 on the hinge,
        ``C sum_i (1 - y_i (x_i E w + b))_+``."""
        from ..loops.greedy import LinearMaskSpace

        y, C = np.asarray(sub.y, dtype=float), self.C
        return LinearMaskSpace(sub, lambda R: C * np.maximum(1.0 - y * R[..., 0], 0.0).sum(-1))
