"""Whole outer-loop trajectories against CVXPY: successive linearisation (FSV, reweighted-l1) and
DCA (000 Algorithm 1) rebuilt iterate by iterate from the papers' formulas, each CVXPY iterate
from the previous CVXPY iterate.

* reweighted-l1 (Bradley & Mangasarian 1998, the FSV baseline of 002): iteration ``k + 1`` solves
  ``loss + sum_j phi'(|w_j^k|) |w_j|``;
* DCA (000 eqs. 37-41): with ``phi = g - h``, ``g(t) = lin * t``, iteration ``k + 1`` solves
  ``loss + lin * ||w||_1 - grad_h(w^k) . w`` where ``grad_h(w^k)_j = h'(|w_j^k|) sign(w_j^k)``
  (000 eq. 40 for ``exp``: ``alpha sign(w) (1 - exp(-alpha |w|))``).

Both start from the L1 solution (``init="l1"``, the loops' default). The data and parameters are
chosen so that the support shrinks over several iterations: a loop that kept linearising at its
first iterate (never moving its linearisation point) stops after two identical iterates, and a
loop that moved it wrongly leaves the reference trajectory. The single-LP comparisons with CVXPY
live in ``test_cvxpy_reference.py``; this file checks how the loops chain them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fsframe.backends import HighsBackend
from fsframe.plugins import get_registry
from fsframe.problem import Subproblem

import cvxpy as cp  # noqa: E402

REG = get_registry()


def problem(seed=3, m=40, n=15, noise=1.0):
    """y = sign(x_0 - x_1 / 2 + noise): not separable, so the L1 start keeps most features (12 of 15
    at C = 0.3) and the concave penalties remove them a few at a time."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + noise * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def hinge(X, y, C, w, b):
    return C * float(np.sum(np.maximum(0.0, 1.0 - y * (X @ w + b))))


def cvxpy_lp(X, y, C, lin, lin_w):
    """``C sum pos(1 - y (Xw + b)) + lin . |w| + lin_w . w`` by Clarabel, stated from the data."""
    n = X.shape[1]
    w, b = cp.Variable(n), cp.Variable()
    obj = C * cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) + lin @ cp.abs(w) + lin_w @ w
    prob = cp.Problem(cp.Minimize(obj))
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL, prob.status
    return np.asarray(w.value), float(b.value)


# The surrogates as the papers write them, for the reference (not fsframe's methods):
# phi, its derivative (the reweighting, Bradley & Mangasarian), and the DC split's linear weight of
# g and derivative of h (000 eqs. 37-40 for exp; g(t) = t / eps, h(t) = t / eps - log(1 + t / eps) for log).
PAPER = {
    "exp": lambda a: dict(phi=lambda t: 1 - np.exp(-a * t), dphi=lambda t: a * np.exp(-a * t),
                          lin=a, dh=lambda t: a * (1 - np.exp(-a * t))),
    "log": lambda e: dict(phi=lambda t: np.log(1 + t / e), dphi=lambda t: 1 / (e + t),
                          lin=1 / e, dh=lambda t: 1 / e - 1 / (e + t)),
}


def reweighted_l1_step(f, w):
    """Successive linearisation: the tangent of phi at |w^k| weighs |w_j|."""
    return f["dphi"](np.abs(w)), np.zeros_like(w)


def dca_step(f, w):
    """000 eq. 41: g linear (weight ``lin``), h replaced by its linearisation at w^k."""
    return np.full(w.shape, f["lin"]), -f["dh"](np.abs(w)) * np.sign(w)


def support(w, zero_tol):
    t = np.abs(w)
    return t > max(zero_tol * t.max(), 1e-12)


def reference_trajectory(X, y, C, f, step, n_iter, zero_tol):
    """``n_iter`` iterates from the L1 start; each with its reported objective
    ``loss + sum phi`` over the support (fsframe's reporting rule)."""
    n = X.shape[1]
    lin, lin_w = np.ones(n), np.zeros(n)
    out = []
    for _ in range(n_iter):
        w, b = cvxpy_lp(X, y, C, lin, lin_w)
        s = support(w, zero_tol)
        out.append((w, b, s, hinge(X, y, C, w, b) + float(np.sum(f["phi"](np.abs(w[s]))))))
        lin, lin_w = step(f, w)
    return out


CASES = [
    # (method or formulation, surrogate, its parameters, loop, C, iterates compared)
    pytest.param("fsv", None, {"alpha": 2.0}, None, 0.3, 4, id="fsv-exp-alpha2"),
    pytest.param("hinge", "exp", {"alpha": 5.0}, "dca", 0.3, 4, id="hinge-exp-dca"),
    pytest.param("hinge", "log", {"eps": 0.1}, "dca", 0.3, 5, id="hinge-log-dca"),
]


@pytest.mark.parametrize("formulation, sur, params, loop_name, C, n_iter", CASES)
def test_trajectory_matches_cvxpy(formulation, sur, params, loop_name, C, n_iter):
    """Every iterate (coefficients, intercept, support, reported objective) agrees with CVXPY to
    1e-5 relative; the reference iterates all differ (steps > 1e-3, three or more supports)."""
    if formulation in REG.names("method"):  # a registered method: its components
        spec = REG.get("method", formulation)
        formulation, sur, loop_name = spec.formulation, spec.surrogate, spec.loop
    X, y = problem()
    surrogate = REG.get("surrogate", sur)(**params)
    loop = REG.get("loop", loop_name)(max_iter=n_iter, tol=1e-12)
    assert loop.init == "l1"  # the start the reference takes
    step = {"reweighted-l1": reweighted_l1_step, "dca": dca_step}[loop_name]

    sub = Subproblem(REG.get("formulation", formulation)(C=C), X, y, loop.terms(surrogate), HighsBackend())
    seen = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = loop.run(sub, surrogate,
                           callback=lambda rec, it: seen.append((it.coef.copy(), float(it.intercept[0]),
                                                                 rec.objective)))
    finally:
        sub.close()
    ref = reference_trajectory(X, y, C, PAPER[sur](*params.values()), step, n_iter, loop.zero_tol)

    # the trajectory is not trivial: every step moves, and the support changes more than once
    for k in range(1, n_iter):
        assert np.linalg.norm(ref[k][0] - ref[k - 1][0]) > 1e-3, f"reference iterates {k - 1} and {k} coincide"
    supports = {tuple(np.flatnonzero(r[2])) for r in ref}
    assert len(supports) >= 3, [r[2].sum() for r in ref]

    assert len(seen) == n_iter, (f"{loop_name} stopped after {len(seen)} iterates ({out.reason}); "
                                 f"the reference moves for {n_iter}")
    assert [str(w.message) for w in caught] == [f"{loop.name}: stopped at max_iter={n_iter} before its stopping "
                                                "rule held"]  # on purpose; and no rise, nothing inaccurate
    assert out.monotone
    for k, ((w, b, obj), (rw, rb, rs, robj)) in enumerate(zip(seen, ref)):
        scale = max(1.0, float(np.max(np.abs(rw))))
        np.testing.assert_allclose(w, rw, rtol=0, atol=1e-5 * scale, err_msg=f"iterate {k}")
        assert b == pytest.approx(rb, rel=1e-5, abs=1e-5 * scale), f"intercept of iterate {k}"
        np.testing.assert_array_equal(support(w, loop.zero_tol), rs, err_msg=f"support of iterate {k}")
        assert obj == pytest.approx(robj, rel=1e-5), f"objective of iterate {k}"


# ------------------------------------------------------------------------------ EM
def cvxpy_qp(X, y, C, q):
    """``C sum pos(1 - y (Xw + b)) + sum_j q_j w_j^2`` by Clarabel; ``q_j = inf`` fixes ``w_j = 0``."""
    n = X.shape[1]
    w, b = cp.Variable(n), cp.Variable()
    live = np.isfinite(q)
    obj = C * cp.sum(cp.pos(1 - cp.multiply(y, X @ w + b))) + cp.sum(cp.multiply(np.where(live, q, 0.0), cp.square(w)))
    cons = [w[j] == 0 for j in np.flatnonzero(~live)]
    prob = cp.Problem(cp.Minimize(obj), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL, prob.status
    return np.asarray(w.value), float(b.value)


# The EM weights as the papers write them: 002 Prop. 3, q = |w|^(p-2) (p = 0: 1 / w^2); AROM
# (Weston et al. 2003), q = 1 / (|w| (eps + |w|)).
EM_WEIGHTS = {"lp": lambda p: (lambda t: t ** (p - 2.0)), "log": lambda e: (lambda t: 1.0 / (t * (e + t)))}


def em_reference(X, y, C, weights, n_iter, zero_tol):
    """EM from the L2 start (q = 1); a coefficient at most ``zero_tol`` times the largest magnitude
    seen so far leaves the problem for good (fixed at 0), as fsframe's EM documents."""
    q = np.ones(X.shape[1])
    fixed = np.zeros(X.shape[1], dtype=bool)
    scale = 0.0
    out = []
    for _ in range(n_iter):
        w, b = cvxpy_qp(X, y, C, q)
        t = np.abs(w)
        scale = max(scale, float(t.max()))
        out.append((w, b))
        fixed |= t <= max(zero_tol * scale, 1e-12)
        q = np.full(t.shape, np.inf)
        q[~fixed] = weights(t[~fixed])
    return out


@pytest.mark.parametrize("sur, params, C, n_iter", [
    pytest.param("lp", {"p": 0.0}, 0.3, 5, id="em-l0"),
    pytest.param("lp", {"p": 0.5}, 0.3, 5, id="em-lp0.5"),
    pytest.param("log", {"eps": 1e-2}, 0.3, 5, id="arom"),
])
def test_em_trajectory_matches_cvxpy(sur, params, C, n_iter):
    """Every EM iterate (coefficients, intercept and support) agrees with CVXPY, and the supports
    shrink over the run: the reweighting and the absorbing zeros are pinned, not only objectives."""
    X, y = problem(m=60, n=15, noise=0.5)
    surrogate = REG.get("surrogate", sur)(**params)
    loop = REG.get("loop", "em")(max_iter=n_iter, tol=1e-12)
    sub = Subproblem(REG.get("formulation", "hinge")(C=C), X, y, loop.terms(surrogate), HighsBackend())
    seen = []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loop.run(sub, surrogate, callback=lambda rec, it: seen.append((it.coef.copy(), float(it.intercept[0]))))
    finally:
        sub.close()
    ref = em_reference(X, y, C, EM_WEIGHTS[sur](*params.values()), len(seen), loop.zero_tol)
    assert len(seen) >= 4
    sizes = []
    for k, ((w, b), (rw, rb)) in enumerate(zip(seen, ref)):
        scale = max(1.0, float(np.max(np.abs(rw))))
        np.testing.assert_allclose(w, rw, rtol=0, atol=1e-5 * scale, err_msg=f"iterate {k}")
        assert b == pytest.approx(rb, rel=1e-5, abs=1e-5 * scale), f"intercept of iterate {k}"
        # supports compared per iteration: the 1e-6 rule on both sides, away from its threshold
        mine, theirs = support(w, loop.zero_tol), support(rw, loop.zero_tol)
        np.testing.assert_array_equal(mine, theirs, err_msg=f"support of iterate {k}")
        sizes.append(int(mine.sum()))
    assert sizes[0] == X.shape[1] and sizes[-1] < sizes[2] < sizes[0], sizes  # at least three supports
