"""RFS, robust feature selection (Nie, Huang, Cai & Ding, NIPS 2010; paper 004 §5 and eqs. 30-31):
``min_W ||X W - Y||_{2,1} + gamma ||W||_{2,1}`` — as a convex formulation (an SOCP, for any loop)
and as Nie et al.'s iteratively reweighted linear systems (loop ``rfs``)."""

from __future__ import annotations

import time

import attrs
import numpy as np

from fsframe import BuiltModel, Formulation, OuterLoop, ProblemClass
from fsframe.loops import Choice, Finish, Step, support_of
from fsframe.pyomo_ext import LinearMap, add_soc, add_sparsity_slot, var_list
from fsframe.validators import as_int, positive_int, real, to_float

from .margin import add_row_norm_epigraph, label_matrix
from .nullspace import row_norms

__all__ = ["L21RegressionFormulation", "RFSLoop", "rfs_objective", "rfs_step"]


def rfs_objective(X, Y, W, gamma: float) -> float:
    """``||X W - Y||_{2,1} + gamma ||W||_{2,1}`` (Nie et al. 2010 eq. 3; 004 §5's ``J(W)``)."""
    return float(np.sum(row_norms(X @ W - Y)) + gamma * np.sum(row_norms(W)))


def rfs_step(X, Y, gamma: float, d: np.ndarray) -> np.ndarray:
    """One iteration of Nie et al. 2010, Algorithm 1: with ``A = [X, gamma I]`` (m x (n + m)),
    ``U = [W; E]`` and ``D^{-1} = diag(d)`` (``d_i = 2 ||u_i||``),
    ``U = D^{-1} Aᵀ (A D^{-1} Aᵀ)^{-1} Y``. Only an ``m x m`` system is solved."""
    import scipy.linalg as sla

    m, n = X.shape
    dw, de = d[:n], d[n:]
    XD = X * dw
    G = XD @ X.T
    G[np.diag_indices_from(G)] += gamma * gamma * de
    try:
        C = sla.solve(G, Y, assume_a="pos")
    except (sla.LinAlgError, ValueError):
        C = np.linalg.lstsq(G, Y, rcond=None)[0]
    return np.vstack([XD.T @ C, gamma * de[:, None] * C])


@attrs.frozen
class L21RegressionFormulation(Formulation):
    r"""``min (1/gamma) sum_i ||x_i W - y_i||_2 + penalty(W)`` with ``Y`` the ±1 one-vs-rest label
    matrix (004 eq. 2) and one row group per feature: with the ``l1`` penalty (``loop="single"``)
    it is RFS divided by ``gamma`` (Nie et al. 2010 eq. 3), an SOCP with one cone per sample and
    per feature row. No intercept (Nie et al. centre the data; standardise ``X``).

    Parameters
    ----------
    gamma : float > 0
        RFS's regularisation weight.
    """

    name = "l21-regression"
    data_facts = ("n_classes",)
    multiclass = "native"
    traits = frozenset({"l21_regression"})  # the problem loop ``rfs`` solves by Nie et al.'s algorithm
    reference = "Nie, Huang, Cai & Ding, NIPS 2010, eq. 3; paper 004 §5, eqs. 30-31"
    gamma: float = attrs.field(default=1.0, converter=to_float, validator=real(0))

    def problem_class(self, terms):
        return ProblemClass.SOCP

    def build(self, X, y, terms):
        import scipy.sparse as sp

        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC

        m, n = X.shape
        Y = label_matrix(y)
        c = Y.shape[1]
        model = pyo.ConcreteModel(name=f"l21-regression(gamma={self.gamma})")
        with PauseGC():
            model.W = pyo.Var(range(n * c))
            model.r = pyo.Var(range(m), bounds=(0, None))
        wvars = var_list(model.W)
        rvars = var_list(model.r)
        XW = sp.kron(sp.csr_matrix(X), sp.identity(c), format="csr")  # row i*c + k is (X W)[i, k]
        for i in range(m):
            add_soc(model, f"res{i}", LinearMap(XW[i * c:(i + 1) * c], wvars, const=-Y[i]), rvars[i])
        magnitude = add_row_norm_epigraph(model, wvars, n, c) if "lin" in terms else None
        loss = sum(rvars) / self.gamma
        slot = add_sparsity_slot(model, coef=LinearMap.identity(wvars), groups=np.repeat(np.arange(n), c),
                                 magnitude=magnitude, terms=terms, loss=loss)
        intercept = LinearMap(sp.csr_matrix((c, 1)), [model.r[0]])  # no intercept: b = 0
        return BuiltModel(model=model, slot=slot, intercept=intercept, coef_shape=(n, c) if c > 1 else (n,),
                          info={"n_classes": c})


@attrs.frozen
class RFSLoop(OuterLoop):
    r"""Nie et al.'s algorithm for RFS (NIPS 2010, Algorithm 1): iteratively reweighted linear
    systems on ``min ||U||_{2,1} s.t. [X, gamma I] U = Y`` — the special case ``i = 1``, ``p = 1``
    of 004 eqs. 30-31 (Lemma 2 with ``p = 1``). Reads ``gamma`` from the ``l21-regression``
    formulation. The objective ``||X W - Y||_{2,1} + gamma ||W||_{2,1}`` (reported divided by
    ``gamma``: the formulation's ``loss + penalty``) does not increase
    (checked; a rise beyond ``tol`` is reported); stops when it decreases by less than ``tol``
    (relative). Each iteration solves one ``m x m`` system: any ``n``.
    """

    name = "rfs"
    data_facts = ("n_features_default",)  # half the features, when n_features is not given
    formulation_requires = ("l21_regression",)
    reference = "Nie, Huang, Cai & Ding, NIPS 2010, Algorithm 1"
    needs_surrogate = False
    takes_surrogate = False  # rfs is the l_{2,1} problem itself
    chooses = True  # the last iterate, its n_features largest rows
    monotone = True
    sparse = False  # reweighted l_{2,1}: rows shrink but do not vanish; their norms rank the features
    max_iter: int = attrs.field(default=200, converter=as_int, validator=positive_int)
    tol: float = attrs.field(default=1e-4, converter=to_float, validator=real(0))

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        from fsframe.problem import Iterate  # loads the compiler: only when the loop runs

        gamma = sub.formulation.gamma  # the l21_regression trait: the problem with its gamma
        X = np.asarray(sub.X, dtype=float)
        Y = label_matrix(sub.y)
        m, n = X.shape
        c = Y.shape[1]
        groups = np.repeat(np.arange(n), c).reshape(n, c)  # W's row j is feature j's group
        d = np.ones(n + m)  # D^0 = I
        prev, W = None, None
        for _ in range(self.max_iter):
            t0 = time.perf_counter()
            U = rfs_step(X, Y, gamma, d)
            W = U[:n]
            f = rfs_objective(X, Y, W, gamma) / gamma  # the l21-regression model's loss + penalty
            t = row_norms(U)
            d = 2.0 * np.where(t > 1e-14 * max(float(t.max()), 1e-300), t, 0.0)
            it = Iterate.computed(W, np.zeros(c), t[:n], groups=groups, loss=float(np.sum(row_norms(X @ W - Y))) / gamma,
                                  objective=f, seconds=time.perf_counter() - t0)
            yield Step(it, f)
            if prev is not None and abs(prev - f) <= self.tol * max(abs(prev), 1e-300):
                return Finish(True, "objective decrease below tol", self._choose(X, Y, gamma, it, run.n_features))
            prev = f
        return Finish(False, "max_iter reached", self._choose(X, Y, gamma, it, run.n_features))

    def _choose(self, X, Y, gamma, it, r) -> Choice:
        """The last iterate: rows above ``zero_tol`` times the largest norm, with ``n_features``
        the ``r`` largest of them; the objective is that of the returned rows."""
        from fsframe.problem import Iterate

        t = it.t
        support = support_of(t, self.zero_tol)
        info = {}
        if r is not None:
            keep = np.zeros_like(support)
            keep[np.argsort(-t, kind="stable")[:min(r, int(support.sum()))]] = True
            info["n_features_dropped"] = int(np.count_nonzero(support & ~keep))
            support = keep
        W = np.where(support[:, None], it.coef, 0.0)
        coef = W[:, 0] if W.shape[1] == 1 else W  # two classes: one column, a binary model
        returned = Iterate.computed(coef, it.intercept if W.shape[1] > 1 else it.intercept[:1], t,
                                    groups=it.groups[:, 0] if W.shape[1] == 1 else it.groups, loss=it.loss,
                                    objective=it.objective, seconds=it.seconds)
        return Choice(returned, support, rfs_objective(X, Y, W, gamma) / gamma, info)
