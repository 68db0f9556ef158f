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
from fsframe.errors import DataError
from fsframe.pyomo_ext import (LinearMap, add_definitions, add_linear_constraints, add_log_sum_exp,
                               add_named_expressions, add_soc, add_sparsity_slot, var_list)
from fsframe.validators import real, to_float

__all__ = ["LeastSquaresFormulation", "LogisticFormulation", "MultinomialFormulation"]


def _linear_model(name: str, n: int, terms: frozenset, epigraph: bool = False):
    """A Pyomo model holding a linear model's coefficients, as the hinge formulation states them:
    with a linear slot term the split ``w = u - v`` (``u, v >= 0``, named expressions ``w``, the
    group magnitude ``u + v``), else a free ``w``; and the intercept ``b``. With ``epigraph`` and
    the ``lin`` term, a free ``w`` and magnitudes ``s >= 0`` bound by the two rows ``w_j - s_j <= 0``,
    ``-w_j - s_j <= 0`` (``s_j >= |w_j|``) instead of the split: ``w`` enters the loss's rows
    once, not twice (the logistic formulation; docs/performance.md, "Logistic: free w against the split").
    Returns ``(model, w, coef, magnitude)``."""
    import pyomo.environ as pyo
    import scipy.sparse as sp
    from pyomo.common.gc_manager import PauseGC

    model = pyo.ConcreteModel(name=name)
    with PauseGC():
        model.b = pyo.Var()
        if epigraph and "lin" in terms:
            model.w = pyo.Var(range(n))
            # s >= 0 is implied by the rows, but stated: without it Clarabel ended a DCA step of
            # l0-logistic (signed weights on w) AlmostSolved where the split solved (tests/glm)
            model.s = pyo.Var(range(n), bounds=(0, None))
            w, s = var_list(model.w), var_list(model.s)
            eye = sp.identity(n, format="csr")
            add_linear_constraints(model, "abs", LinearMap(sp.vstack([sp.hstack([eye, -eye]), sp.hstack([-eye, -eye])],
                                                                     format="csr"), w + s), upper=0.0, defer=True)
            return model, w, LinearMap.identity(w), LinearMap.identity(s)
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
    sparse_input = True  # the residual rows are [I, X, 1]: a CSR X stays CSR
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.QP

    threshold_scaling = {"C": 1.0}  # empty_model_threshold is proportional to C

    def empty_model_threshold(self, X, y, *, aux=None) -> float:
        r"""The smallest uniform L1 weight ``lambda`` (slot ``lin``) at which ``w = 0`` is optimal:
        the empty model's intercept is ``b = mean(y)``, and ``w = 0`` stays optimal while
        ``lambda >= C ||Xᵀ(y - mean(y))||_inf`` (the gradient of the loss in ``w`` there)."""
        y = np.asarray(y, dtype=float)
        return self.C * float(np.max(np.abs(np.asarray(X.T @ (y - y.mean())).ravel()), initial=0.0))

    def build(self, X, y, terms):
        import pyomo.environ as pyo
        import scipy.sparse as sp

        m, n = X.shape
        model, w, coef, magnitude = _linear_model(f"least-squares(C={self.C})", n, terms)
        model.r = pyo.Var(range(m))
        r = var_list(model.r)
        # r = y - X w - b, recorded as defining r (an answer is read with r exact)
        fitted = LinearMap(sp.hstack([-sp.csr_matrix(X, dtype=float), -np.ones((m, 1))], format="csr"), w + [model.b],
                           const=np.asarray(y, dtype=float))
        add_definitions(model, "residual", r, fitted, defer=True)
        return _built(model, coef, magnitude, terms, 0.5 * self.C * pyo.quicksum(ri * ri for ri in r), n)

    def solve_quad_from_data(self, X, y, quad, *, start=None, tol: float = 1e-6):
        """The step ``C/2 ||y - X w - b||^2 + sum_j quad_j w_j^2`` (EM's; the ``quad_from_data``
        protocol) by Newton's method from ``X``, certified by strong convexity
        (:func:`fsframe.ridge.ridge_glm`; docs/glm.md, "EM steps from X")."""
        from fsframe.ridge import ridge_glm

        return ridge_glm("squared", X, y, self.C, quad, start=start, tol=tol)


@attrs.frozen
class LogisticFormulation(Formulation):
    r"""Binary logistic regression (``y`` in ``{-1, +1}``), with exponential cones::

        min  penalty(w) + C * sum_i log(1 + exp(-y_i (x_i . w + b)))

    each loss term the epigraph ``t_i >= log(exp(0) + exp(-y_i (x_i w + b)))`` of
    :func:`fsframe.pyomo_ext.add_log_sum_exp` (two exponential cones and one row per sample).
    The penalty's magnitudes are ``s_j >= |w_j|`` (two rows per feature, ``w`` free; docs/glm.md,
    "Working sets"). With ``l1`` it is scikit-learn's ``LogisticRegression(penalty="l1", C=C)`` objective (the
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

    def separating_loss(self) -> float:
        """``C log 2``: a loss below it has every margin ``y_i (x_i w + b)`` positive (a term with
        a margin at most 0 is at least ``C log 2``), the classes separated by the iterate
        (:func:`fsframe.loops.separation.separated`)."""
        return self.C * float(np.log(2.0))

    def margins(self, X, y, coef, intercept) -> np.ndarray:
        """``y_i (x_i w + b)`` per training sample (``y`` in ``{-1, +1}``): all positive, the
        classes are separated by ``(w, b)`` whatever the loss (:func:`fsframe.loops.separation.separated`)."""
        b = 0.0 if intercept is None else float(np.ravel(intercept)[0])
        return np.asarray(y, dtype=float) * (np.ravel(X @ np.ravel(coef)) + b)

    def build(self, X, y, terms):
        import scipy.sparse as sp
        from pyomo.core.expr.numeric_expr import LinearExpression

        m, n = X.shape
        model, w, coef, magnitude = _linear_model(f"logistic(C={self.C})", n, terms, epigraph=True)
        y = np.asarray(y, dtype=float)
        minus_margin = LinearMap(sp.csr_matrix(np.column_stack([-y[:, None] * X, -y])), w + [model.b])
        t = add_log_sum_exp(model, "loss", [None, minus_margin], defer=True)
        return _built(model, coef, magnitude, terms, LinearExpression(constant=0.0, linear_coefs=[self.C] * m,
                                                                       linear_vars=t), n)

    def solve_quad_from_data(self, X, y, quad, *, start=None, tol: float = 1e-6):
        """The step ``C sum_i log(1 + exp(-y_i (x_i w + b))) + sum_j quad_j w_j^2`` (EM's; the
        ``quad_from_data`` protocol) by Newton's method from ``X`` — no exponential cone —
        certified by strong convexity (:func:`fsframe.ridge.ridge_glm`; docs/glm.md, "EM steps
        from X")."""
        from fsframe.ridge import ridge_glm

        return ridge_glm("logistic", X, y, self.C, quad, start=start, tol=tol)


def _class_codes(y) -> np.ndarray:
    """Integer class codes ``0..K-1`` from what fsframe passes a native formulation: the codes
    (more than two classes) or ``-1``/``+1`` (two classes: ``-1`` is code 0)."""
    y = np.asarray(y)
    if y.size and np.any(y < 0):
        return (y > 0).astype(np.int64)
    codes = y.astype(np.int64)
    if codes.size == 0 or not np.array_equal(codes, y):
        raise DataError("the multinomial formulation expects integer class codes 0..K-1 or -1/+1 labels")
    return codes


@attrs.frozen
class MultinomialFormulation(Formulation):
    r"""Multinomial (softmax) logistic regression for ``K`` classes, one sparsity group per feature
    (the row ``W_j`` of the ``(n, K)`` coefficient matrix)::

        min  penalty(W) + C * sum_i [ log sum_k exp(x_i W_k + b_k) - (x_i W_{y_i} + b_{y_i}) ]

    Each sample's loss is the epigraph ``t_i >= log sum_k exp(u_ik)`` of
    :func:`fsframe.pyomo_ext.add_log_sum_exp` over the score differences ``u_ik = x_i (W_k -
    W_{y_i}) + b_k - b_{y_i}`` (``K`` exponential cones and one row per sample; ``u_{i,y_i} = 0``).
    ``penalty`` is the sparsity slot on the row norms ``||W_j||_2`` (the ``lin`` term's epigraph
    ``s_j >= ||W_j||_2`` is ``n`` second-order cones): ``l1`` is the group lasso of the
    multinomial model and every surrogate or loop keeps or drops a feature for all classes at
    once. ``coef`` is ``W`` (``n, K``), ``intercept`` ``b`` (``K``,) and ``predict`` the argmax of
    ``X W + b`` (the most probable class). Two classes fit the binary logistic model of the
    ``logistic`` formulation (the softmax of two classes is it, with ``w = W_1 - W_0``).

    Parameters
    ----------
    C : float > 0
        Weight of the multinomial loss.
    """

    name = "multinomial"
    multiclass = "native"
    reference = "Friedman, Hastie & Tibshirani 2010 (glmnet's grouped multinomial lasso)"
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.EXP

    def validate(self, X, y):
        return {"n_classes": max(int(_class_codes(y).max()) + 1, 2)}

    threshold_scaling = {"C": 1.0}  # empty_model_threshold is proportional to C

    def empty_model_threshold(self, X, y, *, aux=None) -> float:
        r"""The smallest uniform weight ``lambda`` on the row norms (slot ``lin``) at which ``W = 0``
        is optimal. The empty model's intercepts are the log class shares (``softmax(b) = p``,
        ``p_k = m_k / m``), and ``W = 0`` stays optimal while ``lambda >= C max_j ||(Xᵀ (P - Y))_j||_2``
        with ``Y`` the one-hot labels and ``P`` every row ``p`` (the loss's gradient in ``W`` there).
        Two classes: :meth:`LogisticFormulation.empty_model_threshold`."""
        codes = _class_codes(y)
        K = int(codes.max()) + 1
        if K <= 2:
            return LogisticFormulation(C=self.C).empty_model_threshold(X, np.where(codes == 1, 1.0, -1.0))
        Y = np.zeros((codes.size, K))
        Y[np.arange(codes.size), codes] = 1.0
        G = X.T @ (Y.mean(axis=0) - Y)
        return self.C * float(np.max(np.linalg.norm(np.asarray(G), axis=1), initial=0.0))

    def separating_loss(self) -> float:
        """``C log 2``: a sample whose own score does not exceed every other class's by a positive
        margin has ``log sum_k exp(u_ik) >= log 2`` (:meth:`LogisticFormulation.separating_loss`)."""
        return self.C * float(np.log(2.0))

    def margins(self, X, y, coef, intercept) -> np.ndarray:
        """Per training sample, its own class's score minus the largest other class's (``u_ik``
        of the loss, ``scores = X W + b``, ``W`` of the built model's ``coef_shape`` ``(n, K)``): all positive, every sample is classified correctly
        and scaling ``(W, b)`` up drives the loss to 0. Two classes: the logistic margins."""
        codes = _class_codes(y)
        coef = np.asarray(coef, dtype=float)
        if coef.ndim == 1:  # two classes: the logistic model (build delegates to it)
            return LogisticFormulation(C=self.C).margins(X, np.where(codes == 1, 1.0, -1.0), coef, intercept)
        b = np.zeros(coef.shape[1]) if intercept is None else np.ravel(np.asarray(intercept, dtype=float))
        S = np.asarray(X @ coef) + b
        rows = np.arange(codes.size)
        own = S[rows, codes]
        S[rows, codes] = -np.inf
        return own - S.max(axis=1)

    def build(self, X, y, terms):
        import pyomo.environ as pyo
        import scipy.sparse as sp
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression

        codes = _class_codes(y)
        K = int(codes.max()) + 1
        if K <= 2:
            return LogisticFormulation(C=self.C).build(X, np.where(codes == 1, 1.0, -1.0), terms)
        m, n = X.shape
        model = pyo.ConcreteModel(name=f"multinomial(C={self.C})")
        split = "lin_w" in terms and "lin" not in terms  # as the hinge: W = U - V when no row norm is needed
        with PauseGC():
            if split:
                model.u = pyo.Var(range(n * K), bounds=(0, None))
                model.v = pyo.Var(range(n * K), bounds=(0, None))
                uv = var_list(model.u, model.v)
                coef = LinearMap(sp.hstack([sp.identity(n * K), -sp.identity(n * K)]), uv)
                wvars = add_named_expressions(model, "W", coef, defer=True)
            else:
                model.W = pyo.Var(range(n * K))  # row-major: entry j*K + k is W[j, k]
                wvars = var_list(model.W)
                coef = LinearMap.identity(wvars)
            model.b = pyo.Var(range(K))
            bvars = var_list(model.b)
        # u_k = X (W_k - W_y) + b_k - b_y: the row-wise Kronecker product of X with the one-hot
        # labels picks W_{y_i}; on the rows of class k the difference is exactly zero
        Xs = sp.csr_matrix(X, dtype=float)
        rows = np.repeat(np.arange(m), np.diff(Xs.indptr))
        own = sp.csr_matrix((Xs.data, (rows, Xs.indices * K + codes[rows])), shape=(m, n * K))
        onehot = sp.csr_matrix((np.ones(m), (np.arange(m), codes)), shape=(m, K))
        scores = []
        for k in range(K):
            ek = sp.csr_matrix(([1.0], ([0], [k])), shape=(1, K))
            A = sp.hstack([sp.kron(Xs, ek) - own, sp.csr_matrix(np.ones((m, 1))) @ ek - onehot], format="csr")
            A.eliminate_zeros()
            scores.append(LinearMap(A, wvars + bvars))
        t = add_log_sum_exp(model, "loss", scores, defer=True)
        # softmax is invariant to adding one constant to every b_k: sum_k b_k = 0 makes b unique
        # (the loss and the objective are unchanged; without it each solver returns its own b)
        add_linear_constraints(model, "intercept_sum", LinearMap(sp.csr_matrix(np.ones((1, K))), bvars),
                               lower=0.0, upper=0.0)
        magnitude = None
        if "lin" in terms:
            model.s = pyo.Var(range(n), bounds=(0, None))
            svars = var_list(model.s)
            for j in range(n):
                add_soc(model, f"row{j}", wvars[j * K:(j + 1) * K], svars[j])
            magnitude = LinearMap.identity(svars)
        loss = LinearExpression(constant=0.0, linear_coefs=[self.C] * m, linear_vars=t)
        slot = add_sparsity_slot(model, coef=coef, groups=np.repeat(np.arange(n), K), magnitude=magnitude,
                                 terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap.identity(bvars), coef_shape=(n, K),
                          info={"n_classes": K})


@hookimpl
def fsframe_register_formulations():
    return [LeastSquaresFormulation, LogisticFormulation, MultinomialFormulation]


def _squared_loss(C: float):
    """``C/2 * sum_i (y_i - f_i)^2``, the least-squares loss from the decision values."""
    return lambda f, y: float(0.5 * C * np.sum((np.asarray(y, dtype=float) - np.asarray(f, dtype=float)) ** 2))


def _logistic_loss(C: float):
    """``C * sum_i log(1 + exp(-y_i f_i))``, the logistic loss from the decision values."""
    return lambda f, y: float(C * np.sum(np.logaddexp(0.0, -np.asarray(y, dtype=float) * np.asarray(f, dtype=float))))


def _multinomial_loss(C: float):
    """``C * sum_i [log sum_k exp(f_ik) - f_{i,y_i}]`` from the decision values ``f`` and class
    codes (two classes: ``f`` is the binary decision value, the logistic loss)."""
    def loss(f, y):
        f = np.asarray(f, dtype=float)
        y = np.asarray(y)
        if f.ndim == 1:
            return _logistic_loss(C)(f, np.where(y > 0, 1.0, -1.0))
        codes = y.astype(np.int64)
        return float(C * np.sum(np.logaddexp.reduce(f, axis=1) - f[np.arange(len(f)), codes]))
    return loss


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", LeastSquaresFormulation, lambda f: _squared_loss(f.C)),
            Oracle("decision_loss", LogisticFormulation, lambda f: _logistic_loss(f.C)),
            Oracle("decision_loss", MultinomialFormulation, lambda f: _multinomial_loss(f.C))]


def _family(suffix: str, formulation: str, reference: str, loss: str) -> list:
    """The four methods on one loss, declaring the sparsity parameters that
    :class:`fsframe.tuning.FSSelectorCV` and :func:`fsframe.path` grid automatically (``C`` from
    the empty model's threshold, ``n_features`` for EM; a regression family's through
    :func:`fsframe.path` only, the tuners select classifiers). DCA on the exp surrogate declares
    none: on separable classes its large-``C`` end has unbounded coefficients, where a tuned refit
    is not reproducible to the solver's accuracy (give its grid as a list)."""
    c_grid, r_grid = "C", "n_features"
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
    return (ls + [lasso] + _family("logistic", "logistic", "Lee, Lee, Abbeel & Ng 2006", "logistic regression")
            + _multinomial_family())


def _multinomial_family() -> list:
    """The four methods on the multinomial loss; its ``l1`` is the group lasso (row norms)."""
    l1, *rest = _family("multinomial", "multinomial", "Friedman, Hastie & Tibshirani 2010",
                        "multinomial logistic regression")
    return [attrs.evolve(l1, description="group-lasso multinomial logistic regression (sum_j ||W_j||_2), "
                                         "one convex problem")] + rest
