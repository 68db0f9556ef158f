"""Random L1-SVM LPs and L1-MPM-like SOCPs with mixed column scales, and an independent
reference optimum (CVXPY with Clarabel at tight tolerances), for the backend comparison tests."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from fsframe.canonical import ProblemData
from fsframe.compiler import compile_model
from fsframe.plugins import get_registry


def mixed_scale_data(seed: int, m: int, n: int):
    """``(X, y, C)``: Gaussian features, column ``j`` times ``10**u_j`` with ``u_j`` uniform on
    ``[-4, 4]``; noisy labels; ``C`` log-uniform on ``[0.01, 100]``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-4, 4, n)
    score = X[:, :3] @ rng.standard_normal(3) / np.abs(X[:, :3]).max(axis=0).sum()
    y = np.where(score + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    if abs(y.sum()) == m:
        y[0] = -y[0]
    return X, y, float(10.0 ** rng.uniform(-2, 2))


def l1svm_lp(seed: int, m: int = 25, n: int = 40) -> ProblemData:
    """The L1-SVM (the built-in ``hinge`` formulation with the L1 slot, all weights 1) on
    :func:`mixed_scale_data`, compiled; more features than samples, so the optimum is degenerate."""
    X, y, C = mixed_scale_data(seed, m, n)
    built = get_registry().get("formulation", "hinge")(C=C).build(X, y, frozenset({"lin"}))
    return compile_model(built.model).with_weights(lin=np.ones(n))


def l1mpm_socp(seed: int, n: int = 10, k: int = 6) -> ProblemData:
    """``min ||w||_1  s.t.  ||F w|| <= a'w - 1`` (the L1-MPM shape), columns scaled over 1e-4..1e4.

    Variables ``(w, t)``; rows ``w - t <= 0``, ``-w - t <= 0`` and the cone
    ``(a'w - 1, F w) in SOC(k + 1)`` written as ``h - G x``. ``a`` is large enough that the
    problem is feasible."""
    rng = np.random.default_rng(10_000 + seed)
    s = 10.0 ** rng.uniform(-4, 4, n)
    F = rng.standard_normal((k, n)) * s
    a = (rng.standard_normal(n) + 2.0 * np.sign(rng.standard_normal(n))) * s
    I = sp.eye(n, format="csr")
    G_lin = sp.vstack([sp.hstack([I, -I]), sp.hstack([-I, -I])])
    G_cone = sp.vstack([sp.hstack([sp.csr_matrix(-a[None, :]), sp.csr_matrix((1, n))]),
                        sp.hstack([sp.csr_matrix(-F), sp.csr_matrix((k, n))])])
    G = sp.vstack([G_lin, G_cone], format="csr")
    h = np.concatenate([np.zeros(2 * n), [-1.0], np.zeros(k)])
    return ProblemData(c=np.concatenate([np.zeros(n), np.ones(n)]), A=sp.csr_matrix((0, 2 * n)), b=np.zeros(0),
                       G=G, h=h, l=2 * n, cones=(k + 1,), lb=np.full(2 * n, -np.inf), ub=np.full(2 * n, np.inf))


def reference_optimum(data: ProblemData) -> float:
    """The optimum of ``data`` by CVXPY with Clarabel at tolerances 1e-11 (looser only if that
    fails), in equilibrated columns: independent of fsframe's backends and their conversions."""
    import cvxpy as cp

    # in the columns v = x / D, D a power of two bringing each column's largest entry near 1
    # (exact, and the reference then does not depend on the solver's own scaling)
    K = sp.vstack([data.A, data.G]).tocsc()
    colmax = np.asarray(abs(K).max(axis=0).todense()).ravel()
    D = np.exp2(-np.round(np.log2(np.where(colmax > 0, colmax, 1.0))))
    v = cp.Variable(data.n)
    x = cp.multiply(D, v)
    cons = []
    if data.A.shape[0]:
        cons.append(data.A @ x == data.b)
    if data.l:
        cons.append(data.G[: data.l] @ x <= data.h[: data.l])
    k = data.l
    for q in data.cones:
        Gq, hq = data.G[k : k + q], data.h[k : k + q]
        cons.append(cp.SOC(hq[0] - Gq[0] @ x, hq[1:] - Gq[1:] @ x))
        k += q
    fin_lb, fin_ub = np.isfinite(data.lb), np.isfinite(data.ub)
    if fin_lb.any():
        cons.append(x[np.flatnonzero(fin_lb)] >= data.lb[fin_lb])
    if fin_ub.any():
        cons.append(x[np.flatnonzero(fin_ub)] <= data.ub[fin_ub])
    prob = cp.Problem(cp.Minimize(data.c @ x + data.offset), cons)
    for tol in (1e-11, 1e-10, 1e-9):
        with warnings.catch_warnings():  # "may be inaccurate": then the next tolerance
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol, max_iter=500)
        if prob.status == cp.OPTIMAL:
            return float(prob.value)
    raise AssertionError(f"the reference did not solve: {prob.status}")
