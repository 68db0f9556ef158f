"""The L1-norm twin SVM (paper 003, eqs. 7-14) as one Pyomo model holding both LPs.

The two problems of L1-TWSVM (eqs. 11 and 12; kernel eqs. 13 and 14) share no variable and no
constraint: the model states both as independent blocks of one LP whose objective is their sum::

    (||w1||_1 + c11 ||M1 w1 + b1 e||_1 + c12 e'xi1) + (||w2||_1 + c21 ||M2 w2 + b2 e||_1 + c22 e'xi2)

Being separable, its optimum is the pair of optima of eqs. 11 and 12, and its optimal value their
sum. (Eq. 21 weighs the two objectives by ``lam`` and ``1 - lam``; positive weights move no
block's minimiser, so the LP needs no ``lam`` and the greedy loop evaluates eq. 21 itself.) ``M1``/``M2`` are
the rows of the class coded ``+1``/``-1``: the features ``A1``/``A2`` (linear) or the kernel rows
``K(A1, A)``/``K(A2, A)`` (``kernel="rbf"``, eqs. 13-14, the "features" being training samples).

The coefficients form two blocks: ``coef`` has shape ``(2, d)`` (row ``k`` is ``w_k``), and both
entries of a feature form its slot group, so the support is the union of the blocks' supports and
fixing a group at zero sets ``E_jj = 0`` in both surfaces (eq. 15). The group norm is
``t_j = |w1_j| + |w2_j|`` (:attr:`group_norm` ``"l1"``): the slot's magnitude is
``s_j = p1_j + q1_j + p2_j + q2_j``, equal to it at the optimum, so the penalty is exactly
``||w1||_1 + ||w2||_1``.
"""

from __future__ import annotations

from typing import ClassVar

import attrs
import numpy as np
from attrs.validators import gt, in_, optional
from numpy.typing import NDArray

from fsframe import BuiltModel, Formulation, ProblemClass
from fsframe.errors import DataError
from fsframe.kernels import scale_sigma
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_named_expressions, add_sparsity_slot, var_list
from fsframe.validators import finite, real, to_float

from .kernel import MaskedRBF, rbf_kernel
from .masked import twin_mask_space

__all__ = ["TwinL1Formulation", "MaskedRBF", "rbf_kernel", "twin_distances"]


def twin_distances(coef: NDArray, intercept, Z: NDArray) -> NDArray:
    """``|f_k(x)| / ||w_k||_2`` for ``k = 1, 2`` (shape ``(n_samples, 2)``), 003 eq. 1's rule.

    A surface with ``w_k = 0`` has no direction: its distance is ``|b_k|`` (norm taken as 1)."""
    coef = np.asarray(coef, dtype=float).reshape(2, -1)
    f = Z @ coef.T + np.asarray(intercept, dtype=float).reshape(1, 2)
    norms = np.linalg.norm(coef, axis=1)
    return np.abs(f) / np.where(norms > 0, norms, 1.0)


def _width(value):
    return None if value is None or (isinstance(value, str) and value == "scale") else float(value)


@attrs.frozen
class TwinL1Formulation(Formulation):
    r"""L1-TWSVM (003 eqs. 7-14), both LPs in one separable model (see the module docstring).

    Per class ``k`` the LP of eq. 11 (eq. 12 alike) with ``w = p - q``::

        min  e'(p + q) + c11 (e'M1 (p - q) + 2 e't + m1 b) + c12 e'xi
        s.t. M1 (p - q) + b e + t >= 0,   M2 (p - q) + b e - xi <= -e,   p, q, t, xi >= 0

    (``t`` is the negative part of ``M1 w + b e``, so ``c11 (M1 w + b e + 2t) = c11 |M1 w + b e|``.)

    Parameters
    ----------
    c11, c12, c21, c22 : float > 0
        003 eqs. 7-8: the fit of surface 1 to class ``+1`` (``c11``), its hinge on class ``-1``
        (``c12``); ``c21``, ``c22`` the same for surface 2.
    lam : float in (0, 1)
        ``lambda`` of eq. 21: weight of surface 1's objective (``1 - lam`` of surface 2's) in the
        greedy mask loop (eqs. 21, 22, 24). It does not move the L1-TWSVM optimum.
    kernel : {"linear", "rbf"}
        ``"rbf"``: the kernel LPs (eqs. 13-14) on ``K(A, A)`` with
        ``k(x, y) = exp(-||x - y||^2 / (2 width^2))``; the coefficients ``u_k`` are over training
        samples. The formulation owns its kernel (no empirical kernel map is applied) so that the
        greedy loop can mask input features inside it (eq. 19).
    width : float > 0, "scale" or None
        RBF width; ``None``/``"scale"``: ``sqrt(n_features * X.var() / 2)``
        (:func:`fsframe.kernels.scale_sigma`).
    """

    name = "twsvm"
    reference = "paper 003 eqs. 7-14 (L1-TWSVM), eq. 21"
    slot_terms: ClassVar[frozenset] = frozenset({"lin"})
    group_norm: ClassVar[str] = "l1"
    c11: float = attrs.field(default=1.0, converter=to_float, validator=real(0))
    c12: float = attrs.field(default=1.0, converter=to_float, validator=real(0))
    c21: float = attrs.field(default=1.0, converter=to_float, validator=real(0))
    c22: float = attrs.field(default=1.0, converter=to_float, validator=real(0))
    lam: float = attrs.field(default=0.5, converter=to_float, validator=real(0, 1))
    kernel: str = attrs.field(default="linear", validator=in_(("linear", "rbf")))
    width: float | None = attrs.field(default=None, converter=_width, validator=optional([gt(0), finite]))

    def problem_class(self, terms):
        return ProblemClass.LP

    def validate(self, X, y):
        counts = [int(np.sum(y > 0)), int(np.sum(y < 0))]
        if min(counts) == 0:
            raise DataError("twsvm needs samples of both classes (one surface per class)")
        return {}

    def width_for(self, X: NDArray) -> float:
        """The RBF width used on training data ``X``."""
        return scale_sigma(X) if self.width is None else self.width

    def rows(self, X: NDArray) -> NDArray:
        """The LP's data rows: ``X`` (linear) or ``K(X, X)`` (rbf)."""
        return X if self.kernel == "linear" else rbf_kernel(X, X, self.width_for(X))

    def build(self, X, y, terms):
        import scipy.sparse as sp

        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression

        M = self.rows(X)
        pos = y > 0
        d = M.shape[1]
        blocks = ((M[pos], M[~pos], self.c11, self.c12, 1.0),
                  (M[~pos], M[pos], self.c21, self.c22, 1.0))
        model = pyo.ConcreteModel(name=f"twsvm({self.kernel})")
        with PauseGC():
            model.p = pyo.Var(range(2 * d), bounds=(0, None))
            model.q = pyo.Var(range(2 * d), bounds=(0, None))
            model.b = pyo.Var(range(2))
            pv, qv, bv = var_list(model.p), var_list(model.q), var_list(model.b)
            coef = LinearMap(sp.hstack([sp.identity(2 * d), -sp.identity(2 * d)]), pv + qv)
            # s_j = p1_j + q1_j + p2_j + q2_j = |w1_j| + |w2_j| at the optimum (the "l1" group norm)
            eye = sp.identity(d, format="csr")
            magnitude = LinearMap(sp.hstack([eye] * 4, format="csr"), pv + qv)
            wvars = add_named_expressions(model, "w", coef)
            coefs, lvars = [], []
            for k, (own, other, c_fit, c_hinge, weight) in enumerate(blocks):
                m_own, m_other = own.shape[0], other.shape[0]
                t = pyo.Var(range(m_own), bounds=(0, None))
                xi = pyo.Var(range(m_other), bounds=(0, None))
                model.add_component(f"t{k + 1}", t)
                model.add_component(f"xi{k + 1}", xi)
                tv, xv = var_list(t), var_list(xi)
                wk = wvars[k * d:(k + 1) * d]
                # surface k fits its own class: M_own w + b e + t >= 0 (t: negative part)
                F = sp.hstack([sp.csr_matrix(own), np.ones((m_own, 1)), sp.identity(m_own)], format="csr")
                add_linear_constraints(model, f"fit{k + 1}", LinearMap(F, wk + [bv[k]] + tv), lower=0.0)
                # ... and stays at least 1 away from the other: sign_k (M_other w + b e) + xi >= 1
                sgn = -1.0 if k == 0 else 1.0
                H = sp.hstack([sp.csr_matrix(sgn * other), np.full((m_other, 1), sgn), sp.identity(m_other)],
                              format="csr")
                add_linear_constraints(model, f"margin{k + 1}", LinearMap(H, wk + [bv[k]] + xv), lower=1.0)
                colsum = own.sum(axis=0)
                coefs += (weight * c_fit * colsum).tolist() + (-weight * c_fit * colsum).tolist()
                lvars += pv[k * d:(k + 1) * d] + qv[k * d:(k + 1) * d]
                coefs += [weight * c_fit * m_own] + [2.0 * weight * c_fit] * m_own + [weight * c_hinge] * m_other
                lvars += [bv[k]] + tv + xv
        loss = LinearExpression(constant=0.0, linear_coefs=coefs, linear_vars=lvars)
        groups = np.tile(np.arange(d), 2)
        slot = add_sparsity_slot(model, coef=coef, groups=groups, magnitude=magnitude, terms=terms, loss=loss)
        info = {"n_lps": 2}
        transform = None
        if self.kernel == "rbf":
            info["width"] = self.width_for(X)
            transform = MaskedRBF(np.array(X, dtype=float), np.ones(X.shape[1], dtype=bool), info["width"])
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.identity(2), bv), coef_shape=(2, d),
                          info=info, transform=transform)

    def mask_space(self, sub):
        """The ``mask_space`` protocol of the greedy loop (linear: columns fixed by bounds; rbf:
        kernel rows rewritten), see :func:`fsframe_twsvm.masked.twin_mask_space`."""
        return twin_mask_space(sub)

    def decision_function(self, coef, intercept, X):
        """``d_2(x) - d_1(x)`` with ``d_k = |f_k(x)| / ||w_k||_2`` (:func:`twin_distances`):
        positive when ``x`` is nearer surface 1, the surface of the class coded ``+1`` (003 §2).

        For ``kernel="rbf"``, ``X`` is ``K(x E, A E)`` and ``||u_k||_2`` replaces ``||w_k||``."""
        dist = twin_distances(coef, intercept, np.asarray(X, dtype=float))
        return dist[:, 1] - dist[:, 0]
