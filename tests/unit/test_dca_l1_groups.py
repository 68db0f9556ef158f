"""DCA on groups measured in the l1 norm (``Formulation.group_norm = "l1"``) with several entries.

The concave part of ``phi = g - h`` is ``sum_j h(||w_(j)||_1)``; its subgradient per entry is
``h'(||w_(j)||_1) * sign(w_i)`` — not ``h'(t) * w_i / t``, the rule of l2 groups (the two agree on
scalar groups only). With the l2 rule, DCA's linearisation is no minorant of ``h``: its fixed
points are not DC-critical. Checked independently: at the point DCA returns, the convexified
subproblem with the correct subgradient, solved by CVXPY, has that point as an optimum; the DC
objective does not rise; and the kit's oracle (``fsframe.testing``) states the rule itself.
"""

from __future__ import annotations

import warnings

import attrs
import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe import BuiltModel, Formulation, ProblemClass
from fsframe.backends import HighsBackend
from fsframe.errors import ConvergenceWarning
from fsframe.problem import Subproblem
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_sparsity_slot, var_list
from fsframe.testing import check_loop, hinge_loss
from fsframe.validators import real, to_float


ALPHA, C = 3.0, 1.0
EXP = fsframe.get_registry().get("surrogate", "exp")(alpha=ALPHA)


@attrs.frozen
class PairedHinge(Formulation):
    """Hinge loss on ``2n`` columns whose coefficients ``(w_j, w_{n+j})`` form group ``j``, measured
    in the l1 norm ``s_j = |w_j| + |w_{n+j}|`` (``w = u - v``): an LP with multi-entry l1 groups,
    as the twin SVM's ``(2, n)`` blocks, but with the ``lin_w`` term DCA needs."""

    name = "paired-hinge"
    group_norm = "l1"
    C: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.LP

    def build(self, X, y, terms):
        import pyomo.environ as pyo
        import scipy.sparse as sp

        m, n2 = X.shape
        n = n2 // 2
        model = pyo.ConcreteModel()
        model.u = pyo.Var(range(n2), bounds=(0, None))
        model.v = pyo.Var(range(n2), bounds=(0, None))
        model.b = pyo.Var()
        model.xi = pyo.Var(range(m), bounds=(0, None))
        uv, xis = var_list(model.u, model.v), var_list(model.xi)
        coef = LinearMap(sp.hstack([sp.identity(n2), -sp.identity(n2)], format="csr"), uv)
        pair = sp.hstack([sp.identity(n), sp.identity(n)])
        magnitude = LinearMap(sp.hstack([pair, pair], format="csr"), uv)
        Yx = y[:, None] * X
        rows = sp.hstack([Yx, -Yx, y[:, None], sp.identity(m)], format="csr")
        add_linear_constraints(model, "margin", LinearMap(rows, uv + [model.b] + xis), lower=1.0)
        loss = pyo.quicksum(self.C * x for x in xis)
        slot = add_sparsity_slot(model, coef=coef, groups=np.tile(np.arange(n), 2), magnitude=magnitude,
                                 terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.ones((1, 1)), [model.b]), coef_shape=(n2,))


def _data(seed=2, m=50, n=5):
    """Both columns of the first groups carry the label, with different strengths, so the returned
    groups keep two non-zero entries of unequal size (where the l1 and l2 rules differ)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 2 * n))
    y = np.where(X[:, 0] + 0.4 * X[:, n] - 0.7 * X[:, 1] + 0.3 * X[:, n + 1] + 0.6 * rng.standard_normal(m) > 0,
                 1.0, -1.0)
    return X, y


def _fit(X, y):
    reg = fsframe.get_registry()
    loop = reg.get("loop", "dca")(max_iter=200, tol=1e-10)
    sub = Subproblem(PairedHinge(C=C), X, y, loop.terms(EXP), HighsBackend())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return loop.run(sub, EXP)
    finally:
        sub.close()


def _dc_objective(X, y, w, b):
    n = X.shape[1] // 2
    t = np.abs(w[:n]) + np.abs(w[n:])
    return C * float(np.maximum(0.0, 1.0 - y * (X @ w + b)).sum()) + float(np.sum(1.0 - np.exp(-ALPHA * t)))


def test_dca_fixed_point_is_dc_critical_for_multi_entry_l1_groups():
    X, y = _data()
    n = X.shape[1] // 2
    r = _fit(X, y)
    w, b = np.asarray(r.coef, dtype=float), float(r.iterate.intercept[0])
    t = np.abs(w[:n]) + np.abs(w[n:])
    both = (np.abs(w[:n]) > 1e-3) & (np.abs(w[n:]) > 1e-3)
    ratio = np.minimum(np.abs(w[:n]), np.abs(w[n:])) / np.maximum(np.maximum(np.abs(w[:n]), np.abs(w[n:])), 1e-300)
    assert np.any(both & (ratio < 0.9)), (w, "the instance must keep a group of two unequal entries")
    # the DC objective fsframe reports is the one recomputed here, and it never rose
    assert r.objective == pytest.approx(_dc_objective(X, y, w, b), rel=1e-7)
    assert r.monotone
    # the convexified subproblem at w (000 eq. 41), written from the maths: g(s) = alpha * s, and the
    # subgradient of h(||w_(j)||_1) = alpha t - (1 - exp(-alpha t)) is h'(t_j) sign(w_i)
    slope = ALPHA * (1.0 - np.exp(-ALPHA * t))
    grad = np.tile(slope, 2) * np.sign(w)
    wv, bv = cp.Variable(2 * n), cp.Variable()
    s = cp.abs(wv[:n]) + cp.abs(wv[n:])
    obj = C * cp.sum(cp.pos(1 - cp.multiply(y, X @ wv + bv))) + ALPHA * cp.sum(s) - grad @ wv
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver="CLARABEL")
    at_w = C * np.maximum(0.0, 1.0 - y * (X @ w + b)).sum() + ALPHA * t.sum() - grad @ w
    # w is an optimum of its own convexified subproblem: a DC-critical point
    assert at_w == pytest.approx(prob.value, rel=1e-6, abs=1e-7)


def test_kit_states_the_l1_group_rule():
    """The kit's DCA oracle derives the weights itself (h'(t_j) sign(w_i) on l1 groups): DCA passes."""
    X, y = _data(m=30, n=3)
    loop = fsframe.get_registry().get("loop", "dca")(max_iter=8)
    ran = check_loop(loop, EXP, X=X, y=y, formulation=PairedHinge(C=C), decision_loss=hinge_loss(C))
    assert any(r.startswith("weights exp") for r in ran) and any(r.startswith("descent exp") for r in ran)
