"""Reference method plugin: the binary soft-margin hinge formulation and the SVM family
(``l1-svm``, ``fsv``, ``em-l0``, ``arom``, ``svm-weights``).

Discovered like any third-party plugin, through the entry point ``svm = "fsframe_svm"`` in the
group ``fsframe`` of fsframe's own ``pyproject.toml``.
"""

from __future__ import annotations

import attrs
import numpy as np

from fsframe import BuiltModel, Formulation, MethodSpec, ProblemClass, hookimpl
from fsframe.validators import real, to_float
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_named_expressions, add_sparsity_slot, var_list

__all__ = ["HingeFormulation"]


def _margin_matrix(X, y) -> "sp.csr_matrix":
    """``[diag(y) X, y, I]``, the margin rows ``y_i (x_i . w + b) + xi_i`` over ``(w, b, xi)``, in
    CSR without zeros, built straight into its three arrays: no dense ``diag(y) X`` and no
    ``hstack`` copies beside them (at 2000 x 20000 those were 1.5 GB of temporaries)."""
    import scipy.sparse as sp

    m, n = X.shape
    width = n + 1 + m
    itype = np.int32 if max(width, m * (n + 2)) < np.iinfo(np.int32).max else np.int64
    vals = np.empty((m, n + 2))
    np.multiply(X, y[:, None], out=vals[:, :n])
    vals[:, n] = y
    vals[:, n + 1] = 1.0
    cols = np.empty((m, n + 2), dtype=itype)
    cols[:] = np.arange(n + 2, dtype=itype)
    cols[:, n + 1] = n + 1 + np.arange(m, dtype=itype)
    nonzero = vals != 0.0
    if nonzero.all():
        data, indices = vals.reshape(-1), cols.reshape(-1)
        counts = np.full(m, n + 2)
    else:
        data, indices = vals[nonzero], cols[nonzero]
        counts = nonzero.sum(axis=1)
    indptr = np.zeros(m + 1, dtype=itype)
    np.cumsum(counts, out=indptr[1:])
    return sp.csr_matrix((data, indices, indptr), shape=(m, width))


@attrs.frozen
class HingeFormulation(Formulation):
    r"""Binary soft-margin hinge loss (002 eqs. 1-2; 001 eq. 2)::

        min  penalty(w) + C * sum_i xi_i
        s.t. y_i (w . x_i + b) >= 1 - xi_i,   xi_i >= 0

    With a linear slot term (``lin``, ``lin_w``) ``w = u - v`` with ``u, v >= 0`` and the group
    norm's epigraph is ``s_j = u_j + v_j`` — an LP with ``2n + m + 1`` columns and ``m`` rows
    (measured 3.6x faster than a free ``w`` with ``2n`` rows ``|w_j| <= s_j`` at n = 1000, m = 200;
    docs/performance.md). With only
    the quadratic term ``w`` is free (the EM QP, 002 eq. 7). Paper 001 eq. 2 scales the slack sum
    by ``1/(N_+ + N_-)``: its ``C`` equals ours times the number of samples.

    Parameters
    ----------
    C : float > 0
        Weight of the hinge loss.
    """

    name = "hinge"
    reference = "paper 002 eqs. 1-2 and 7-8; paper 001 eq. 2 (L1-SVM)"
    traits = frozenset({"large_margin"})
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.QP if "quad" in terms else ProblemClass.LP

    def build(self, X, y, terms):
        import scipy.sparse as sp

        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression

        m, n = X.shape
        split = bool(terms & {"lin", "lin_w"})
        model = pyo.ConcreteModel(name=f"hinge(C={self.C})")
        with PauseGC():
            if split:
                model.u = pyo.Var(range(n), bounds=(0, None))
                model.v = pyo.Var(range(n), bounds=(0, None))
                uv = var_list(model.u, model.v)
                coef = LinearMap(sp.hstack([sp.identity(n), -sp.identity(n)]), uv)
                magnitude = LinearMap(sp.hstack([sp.identity(n), sp.identity(n)]), uv)
                # the margin rows are written over the named w_j = u_j - v_j: one term per feature;
                # both are created in Pyomo when the model is asked for
                wvars = add_named_expressions(model, "w", coef, defer=True)
            else:
                model.w = pyo.Var(range(n))
                wvars = var_list(model.w)
                coef = LinearMap.identity(wvars)
                magnitude = None
            model.b = pyo.Var()
            model.xi = pyo.Var(range(m), bounds=(0, None))
            xis = var_list(model.xi)
        # deferred: the m x n margin rows are created in Pyomo only when the model is asked for
        # (the compiler reads the record); 2000 x 20000 would otherwise be 40M expression terms
        add_linear_constraints(model, "margin", LinearMap(_margin_matrix(X, y), wvars + [model.b] + xis),
                               lower=1.0, defer=True)
        loss = LinearExpression(constant=0.0, linear_coefs=[self.C] * m, linear_vars=xis)
        slot = add_sparsity_slot(model, coef=coef, magnitude=magnitude, terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.ones((1, 1)), [model.b]),
                          coef_shape=(n,))

    restatable_params = ("C",)

    def restate(self, built, base, compiled, params):
        """``base`` with the slack costs set to the new ``C`` (the only place ``C`` enters), and the
        model's slot loss ``C * sum_i xi_i`` replaced to match."""
        C = to_float(params.get("C"))
        if set(params) != {"C"} or not isinstance(C, float) or not (np.isfinite(C) and C > 0):
            raise ValueError(f"{self.name}: restate takes one finite C > 0, got {params!r}")
        from pyomo.core.expr.numeric_expr import LinearExpression

        model = built.model
        xis = var_list(model.xi)
        model.fsframe_slot.loss.set_value(LinearExpression(constant=0.0, linear_coefs=[C] * len(xis),
                                                           linear_vars=xis))
        c = np.array(base.c, dtype=float)
        c[compiled.cols(xis)] = C
        return base.evolve(c=c)

    def mask_space(self, sub):
        """The greedy loop's capability (paper 003 Algorithm 1 on the hinge model: a greedy
        L1-SVM, RFSVM-like): eq. 24's loss is ``C sum_i (1 - y_i (x_i E w + b))_+``."""
        from fsframe.loops.greedy import LinearMaskSpace

        y = np.asarray(sub.y, dtype=float)
        C = self.C

        def hinge(R):
            return C * np.maximum(1.0 - y * R[..., 0], 0.0).sum(-1)

        return LinearMaskSpace(sub, hinge)


@hookimpl
def fsframe_register_formulations():
    return [HingeFormulation]


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle, hinge_loss  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", HingeFormulation, lambda f: hinge_loss(f.C))]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("l1-svm", formulation="hinge", surrogate="l1", loop="single", defaults={"C": 1.0},
                   reference="Bradley & Mangasarian 1998; paper 001 eq. 2",
                   description="L1-norm soft-margin SVM, one LP: min ||w||_1 + C sum xi"),
        MethodSpec("fsv", formulation="hinge", surrogate="exp", loop="reweighted-l1",
                   defaults={"C": 1.0, "alpha": 5.0},
                   reference="Bradley & Mangasarian, ICML 1998 (FSV); paper 002 baseline",
                   description="concave exponential surrogate by successive linearisation (LPs)"),
        MethodSpec("em-l0", formulation="hinge", surrogate="lp", loop="em", defaults={"C": 1.0, "p": 0.0},
                   reference="Huang, King & Lyu, paper 002, eqs. 7-9, Prop. 3",
                   description="EM zero-norm SVM (p=0) or l_p (0<p<=1): reweighted QPs"),
        MethodSpec("arom", formulation="hinge", surrogate="log", loop="em", defaults={"C": 1.0, "eps": 1e-3},
                   reference="Weston, Elisseeff, Schoelkopf & Tipping, JMLR 3, 2003 (AROM); paper 002 baseline",
                   description="log surrogate by multiplicative (reweighted quadratic) updates"),
        MethodSpec("greedy-l1-svm", formulation="hinge", surrogate=None, loop="greedy", defaults={"C": 1.0},
                   reference="paper 003 Algorithm 1 on the hinge model; Bradley & Mangasarian RFSVM",
                   description="greedy feature mask (eqs. 21-24) on the L1-SVM LP"),
        MethodSpec("svm-weights", formulation="hinge", surrogate=None, loop="single",
                   defaults={"C": 1.0, "penalty": "l2"},
                   reference="paper 002 §3, footnote 5",
                   description="standard L2 SVM; with n_features=r keeps the r largest |w_j|"),
    ]
