"""Generalised linear models as method plugins: the ``least-squares`` formulation (regression
targets; ``l1-ls``/``lasso``, ``l0-ls``, ``em-ls``, ``log-ls``) and the binary ``logistic``
formulation, exponential cones through the conic backends (``l1-logistic``, ``l0-logistic``,
``em-logistic``, ``log-logistic``; one-vs-rest on several classes).

Discovered like any third-party plugin, through the entry point ``glm = "fsframe_glm"`` in the
group ``fsframe`` of fsframe's own ``pyproject.toml``. ``docs/glm.md`` describes both.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np

from fsframe import BuiltModel, Formulation, MethodSpec, ProblemClass, hookimpl
from fsframe.pyomo_ext import (LinearMap, add_definitions, add_log_sum_exp, add_named_expressions,
                               add_sparsity_slot, var_list)
from fsframe.validators import real, to_float

__all__ = ["LeastSquaresFormulation", "LogisticFormulation"]


def _linear_model(name: str, n: int, terms: frozenset):
    """A Pyomo model holding a linear model's coefficients, as the hinge formulation states them:
    with a linear slot term the split ``w = u - v`` (``u, v >= 0``, named expressions ``w``, the
    group magnitude ``u + v``), else a free ``w``; and the intercept ``b``. Returns ``(model, w,
    coef, magnitude)``."""
    import pyomo.environ as pyo
    import scipy.sparse as sp
    from pyomo.common.gc_manager import PauseGC

    model = pyo.ConcreteModel(name=name)
    with PauseGC():
        model.b = pyo.Var()
        if terms & {"lin", "lin_w"}:
            model.u = pyo.Var(range(n), bounds=(0, None))
            model.v = pyo.Var(range(n), bounds=(0, None))
            uv = var_list(model.u, model.v)
            coef = LinearMap(sp.hstack([sp.identity(n), -sp.identity(n)]), uv)
            magnitude = LinearMap(sp.hstack([sp.identity(n), sp.identity(n)]), uv)
            return model, add_named_expressions(model, "w", coef, defer=True), coef, magnitude
        model.w = pyo.Var(range(n))
        w = var_list(model.w)
    return model, w, LinearMap.identity(w), None


def _built(model, coef, magnitude, terms, loss, n: int) -> BuiltModel:
    """The slot ``loss + penalty`` over the model of :func:`_linear_model`, and its BuiltModel."""
    slot = add_sparsity_slot(model, coef=coef, magnitude=magnitude, terms=terms, loss=loss)
    return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.ones((1, 1)), [model.b]), coef_shape=(n,))


@attrs.frozen
class LeastSquaresFormulation(Formulation):
    r"""Least-squares regression (a QP)::

        min  penalty(w) + C/2 * sum_i r_i^2,   r = y - X w - b

    with a real target ``y`` (``task = "regression"``). The residuals ``r`` are columns defined
    by equality rows (:func:`fsframe.pyomo_ext.add_definitions`), so the quadratic term is
    diagonal (``m`` columns, no ``n x n`` Gram matrix). With ``l1``, ``C = 1 / (n_samples *
    alpha)`` makes it scikit-learn's ``Lasso(alpha)`` objective ``1/(2 n) ||r||^2 + alpha
    ||w||_1`` divided by ``alpha``.

    Parameters
    ----------
    C : float > 0
        Weight of the squared loss.
    """

    name = "least-squares"
    reference = "Tibshirani 1996 (the lasso); least squares with any L0 surrogate"
    task: ClassVar[str] = "regression"
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.QP

    threshold_scaling = {"C": 1.0}  # empty_model_threshold is proportional to C

    def empty_model_threshold(self, X, y, *, aux=None) -> float:
        r"""The smallest uniform L1 weight ``lambda`` (slot ``lin``) at which ``w = 0`` is optimal:
        the empty model's intercept is ``b = mean(y)``, and ``w = 0`` stays optimal while
        ``lambda >= C ||Xᵀ(y - mean(y))||_inf`` (the gradient of the loss in ``w`` there)."""
        y = np.asarray(y, dtype=float)
        return self.C * float(np.max(np.abs(X.T @ (y - y.mean())), initial=0.0))

    def build(self, X, y, terms):
        import pyomo.environ as pyo
        import scipy.sparse as sp

        m, n = X.shape
        model, w, coef, magnitude = _linear_model(f"least-squares(C={self.C})", n, terms)
        model.r = pyo.Var(range(m))
        r = var_list(model.r)
        # r = y - X w - b, recorded as defining r (an answer is read with r exact)
        fitted = LinearMap(sp.csr_matrix(np.column_stack([-X, -np.ones(m)])), w + [model.b], const=y)
        add_definitions(model, "residual", r, fitted, defer=True)
        return _built(model, coef, magnitude, terms, 0.5 * self.C * pyo.quicksum(ri * ri for ri in r), n)


@attrs.frozen
class LogisticFormulation(Formulation):
    r"""Binary logistic regression (``y`` in ``{-1, +1}``), with exponential cones::

        min  penalty(w) + C * sum_i log(1 + exp(-y_i (x_i . w + b)))

    each loss term the epigraph ``t_i >= log(exp(0) + exp(-y_i (x_i w + b)))`` of
    :func:`fsframe.pyomo_ext.add_log_sum_exp` (two exponential cones and one row per sample).
    With ``l1`` it is scikit-learn's ``LogisticRegression(penalty="l1", C=C)`` objective (the
    intercept unpenalised there as here). Several classes run one-vs-rest.

    Parameters
    ----------
    C : float > 0
        Weight of the logistic loss.
    """

    name = "logistic"
    reference = "Tibshirani 1996 / Lee et al. 2006 (L1-regularised logistic regression)"
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.EXP

    threshold_scaling = {"C": 1.0}  # empty_model_threshold is proportional to C

    def empty_model_threshold(self, X, y, *, aux=None) -> float:
        r"""The smallest uniform L1 weight ``lambda`` (slot ``lin``) at which ``w = 0`` is optimal
        (where the first feature enters; the grids of ``C`` start there). The empty model's
        intercept is ``b = log(m_+ / m_-)``, so ``sigma(-y_i b)`` is ``m_- / m`` on the positive
        samples and ``m_+ / m`` on the negative ones, and ``w = 0`` stays optimal while
        ``lambda >= C ||Xᵀ(y ⊙ sigma(-y b))||_inf`` (the loss's gradient in ``w`` at the empty model)."""
        y = np.asarray(y, dtype=float)
        pos = y > 0
        m = y.size
        share = np.where(pos, (m - pos.sum()) / m, pos.sum() / m)
        return self.C * float(np.max(np.abs(X.T @ (y * share)), initial=0.0))

    def build(self, X, y, terms):
        import scipy.sparse as sp
        from pyomo.core.expr.numeric_expr import LinearExpression

        m, n = X.shape
        model, w, coef, magnitude = _linear_model(f"logistic(C={self.C})", n, terms)
        y = np.asarray(y, dtype=float)
        minus_margin = LinearMap(sp.csr_matrix(np.column_stack([-y[:, None] * X, -y])), w + [model.b])
        t = add_log_sum_exp(model, "loss", [None, minus_margin], defer=True)
        return _built(model, coef, magnitude, terms, LinearExpression(constant=0.0, linear_coefs=[self.C] * m,
                                                                       linear_vars=t), n)


@hookimpl
def fsframe_register_formulations():
    return [LeastSquaresFormulation, LogisticFormulation]


def _squared_loss(C: float):
    """``C/2 * sum_i (y_i - f_i)^2``, the least-squares loss from the decision values."""
    return lambda f, y: float(0.5 * C * np.sum((np.asarray(y, dtype=float) - np.asarray(f, dtype=float)) ** 2))


def _logistic_loss(C: float):
    """``C * sum_i log(1 + exp(-y_i f_i))``, the logistic loss from the decision values."""
    return lambda f, y: float(C * np.sum(np.logaddexp(0.0, -np.asarray(y, dtype=float) * np.asarray(f, dtype=float))))


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", LeastSquaresFormulation, lambda f: _squared_loss(f.C)),
            Oracle("decision_loss", LogisticFormulation, lambda f: _logistic_loss(f.C))]


def _family(suffix: str, formulation: str, reference: str, loss: str) -> list:
    """The four methods on one loss. A classification family declares the sparsity parameters
    that :class:`fsframe.tuning.FSSelectorCV` and :func:`fsframe.path` grid automatically (``C``
    from the empty model's threshold, ``n_features`` for EM); the tuners select for classifiers,
    so a regression family declares none. DCA on the exp surrogate declares none either: on
    separable classes its large-``C`` end has unbounded coefficients, where a tuned refit is not
    reproducible to the solver's accuracy (give its grid as a list)."""
    tuned = formulation != "least-squares"
    c_grid, r_grid = ("C", "n_features") if tuned else (None, None)
    return [
        MethodSpec(f"l1-{suffix}", formulation=formulation, surrogate="l1", loop="single", defaults={"C": 1.0},
                   sparsity=c_grid, reference=reference, description=f"L1-penalised {loss}, one convex problem"),
        MethodSpec(f"l0-{suffix}", formulation=formulation, surrogate="exp", loop="dca",
                   defaults={"C": 1.0, "alpha": 5.0, "max_iter": 100},
                   reference=f"paper 000's DCA (eqs. 32-46) on {loss}",
                   description=f"exp surrogate of ||w||_0 on {loss}, by DCA"),
        MethodSpec(f"em-{suffix}", formulation=formulation, surrogate="lp", loop="em", defaults={"C": 1.0, "p": 0.0},
                   sparsity=r_grid, reference=f"paper 002's EM zero-norm (eqs. 7-9) on {loss}",
                   description=f"EM zero-norm (p=0) or l_p on {loss}: reweighted quadratic terms"),
        MethodSpec(f"log-{suffix}", formulation=formulation, surrogate="log", loop="reweighted-l1",
                   defaults={"C": 1.0, "eps": 1e-3}, sparsity=c_grid,
                   reference=f"Candes, Wakin & Boyd 2008 (reweighted l1) on {loss}",
                   description=f"log surrogate of ||w||_0 on {loss}, by reweighted l1"),
    ]


@hookimpl
def fsframe_register_methods():
    ls = _family("ls", "least-squares", "Tibshirani 1996 (the lasso)", "least squares")
    lasso = MethodSpec("lasso", formulation="least-squares", surrogate="l1", loop="single", defaults={"C": 1.0},
                       reference="Tibshirani 1996", description="the lasso (l1-ls): min ||w||_1 + C/2 ||y - Xw - b||^2")
    return ls + [lasso] + _family("logistic", "logistic", "Lee, Lee, Abbeel & Ng 2006", "logistic regression")
