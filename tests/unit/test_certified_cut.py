"""The ``zero_tol`` cut certified in place (``Subproblem.certified_cut``): when the cut point passes
the certificate with the iterate's multipliers, the loop returns it without a second solve, and
the answer is the one the restricted re-solve gave (same support, coefficients and objective to
the solvers' accuracy, a certificate that passes); when it does not pass, the re-solve runs.

The reference is the same fit with the re-solve forced (``certified_cut`` disabled), and the
objective of the returned model recomputed in numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.backends.certificate import certify
from fsframe.problem import Subproblem


def l1svm_objective(X, y, C, w, b):
    """``C sum_i max(0, 1 - y_i (x_i w + b)) + ||w||_1`` (001 eq. 2), in numpy."""
    return C * float(np.sum(np.maximum(0.0, 1.0 - y * (X @ w + b)))) + float(np.abs(w).sum())


def mpm_data(seed=0, m=90, n=40):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    y = np.where(X[:, :4] @ np.array([1.0, -1.0, 0.7, 0.5]) + 0.5 * rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def svm_data(seed):
    rng = np.random.default_rng(seed)
    m, n = 40, 70
    X = rng.standard_normal((m, n)) * 10 ** rng.uniform(-1, 1, size=n)
    y = np.where(X[:, :3].sum(1) + rng.standard_normal(m) > 0, 1.0, -1.0)
    return X, y


def both(monkeypatch, X, y, **kw):
    """The fit as it is, and with the re-solve forced; each with its count of restricted re-solves."""
    calls = []
    restricted = Subproblem.restricted

    def counted(self, it, keep):
        calls.append(1)
        return restricted(self, it, keep)

    monkeypatch.setattr(Subproblem, "restricted", counted)
    new = fsframe.fit(X, y, **kw)
    new_calls = len(calls)
    with monkeypatch.context() as mp:
        mp.setattr(Subproblem, "certified_cut", lambda self, it, keep: None)
        old = fsframe.fit(X, y, **kw)
    return new, old, (new_calls, len(calls) - new_calls)


def same_answer(new, old, rtol=1e-6):
    assert new.selected.tolist() == old.selected.tolist()
    scale = float(np.max(np.abs(old.coef)))
    assert np.max(np.abs(np.asarray(new.coef) - np.asarray(old.coef))) <= 1e-4 * scale
    assert new.objective == pytest.approx(old.objective, rel=rtol)
    assert new.certificate["status"] == old.certificate["status"] == "optimal"
    for key in ("gap", "primal_residual", "dual_residual"):
        assert abs(new.certificate[key]) <= 1e-5, key  # within the certificate's rule (10 x cert_tol)


@pytest.mark.parametrize("method", ["l1-mpm", "l0-mpm"])
def test_mpm_on_ecos_skips_the_resolve(monkeypatch, method):
    X, y = mpm_data()
    new, old, resolves = both(monkeypatch, X, y, method=method, backend="ecos")
    assert old.info["zero_tol_cut_resolved"] is True and new.info["zero_tol_cut_resolved"] is False
    assert new.info["zero_tol_cut_verified"] is True and new.info["zero_tol_cut"] > 0
    assert resolves == (0, 1)  # one solve fewer
    same_answer(new, old)


@pytest.mark.parametrize("method", ["l1-mpm", "l0-mpm"])
def test_mpm_on_clarabel_skips_the_resolve(monkeypatch, method):
    """At fsframe's Clarabel tolerance (1e-9) the cut is certified in place, and the answer is the
    forced re-solve's; at Clarabel's own 1e-8 its zeros (~1e-7) hold a margin row and a cone, the
    cut point is outside them by more than the answer's accuracy, and the subproblem is solved again."""
    from fsframe.backends.clarabel import CLARABEL_TOLERANCE

    X, y = mpm_data()
    new, old, resolves = both(monkeypatch, X, y, method=method, backend="clarabel")
    assert resolves == (0, 1) and new.info["zero_tol_cut_resolved"] is False
    assert new.info["zero_tol_cut_verified"] is True and new.info["zero_tol_cut"] > 0
    same_answer(new, old)
    stock = fsframe.fit(X, y, method=method, backend="clarabel",
                        backend_options={k: CLARABEL_TOLERANCE for k in ("tol_gap_abs", "tol_gap_rel", "tol_feas")})
    assert stock.info["zero_tol_cut_resolved"] is True
    same_answer(new, stock, rtol=1e-6)


@pytest.mark.parametrize("seed", [0, 1, 6, 9])
@pytest.mark.parametrize("backend", ["ecos", "clarabel"])
def test_l1svm_cut_in_place_is_the_resolved_answer(monkeypatch, seed, backend):
    X, y = svm_data(seed)
    new, old, _ = both(monkeypatch, X, y, method="l1-svm", backend=backend)
    same_answer(new, old)
    # the objective reported is the returned model's, recomputed in numpy (as
    # test_no_silent_answers: 2e-9 apart on seed 9 with the re-solve too)
    true = l1svm_objective(X, y, 1.0, np.asarray(new.coef), float(new.intercept))
    assert new.objective == pytest.approx(true, rel=1e-7, abs=1e-12)


def _solved(X, y, backend="ecos", C=1.0, backend_options=None):
    from fsframe.backends.base import SolveOptions
    from fsframe.plugins import get_registry

    reg = get_registry()
    form = reg.get("formulation", "hinge")(C=C)
    sub = Subproblem(form, X, y, frozenset({"lin"}), reg.get("backend", backend)(),
                     SolveOptions(backend_options=backend_options or {}),
                     working_set=fsframe.working_set.WorkingSetOptions(mode=False))
    it = sub.solve(lin=np.ones(X.shape[1]))
    assert it.status is Status.OPTIMAL
    return sub, it


def test_certified_cut_is_the_cut_point_certified_on_the_full_problem():
    """The returned iterate: the cut groups exactly zero, the rest of the point unchanged, its
    objective the model's (numpy), its certificate that of the full problem at its weights."""
    X, y = svm_data(0)
    sub, it = _solved(X, y)
    keep = it.t > 1e-6 * it.t.max()
    assert (~keep & (it.t > 0)).any()  # an interior-point answer: something to cut
    cut = sub.certified_cut(it, keep)
    assert cut is not None and cut.status is Status.OPTIMAL
    assert np.all(cut.t[~keep] == 0.0)
    np.testing.assert_allclose(cut.coef[keep], it.coef[keep], rtol=0, atol=0)
    assert cut.objective == pytest.approx(l1svm_objective(X, y, 1.0, cut.coef, float(cut.intercept[0])), rel=1e-12)
    data = sub.compiled.with_weights(**it.weights, sync=False)
    assert cut.result.certificate == certify(data, cut.x, it.result.duals["y"], it.result.duals["z"])


def test_certified_cut_refuses_a_cut_the_optimum_needs():
    """Cutting the largest groups leaves a point the certificate rejects: no cut iterate (the
    loop re-solves, and refuses the cut if the optimum rises: test_no_silent_answers)."""
    X, y = svm_data(1)
    sub, it = _solved(X, y)
    keep = it.t < 0.5 * it.t.max()
    assert sub.certified_cut(it, keep) is None


def test_certified_cut_needs_multipliers():
    X, y = svm_data(0)
    sub, it = _solved(X, y)
    import attrs

    bare = attrs.evolve(it, result=attrs.evolve(it.result, duals=None))
    assert sub.certified_cut(bare, it.t > 1e-6 * it.t.max()) is None


def test_a_cut_is_judged_at_the_accuracy_the_solver_reached():
    """Clarabel's answer to this L1-SVM (C = 27) at Clarabel's own tolerances (1e-8; fsframe's
    default is 1e-9) is certified to 2e-8; cutting its 1e-7 norms raises the objective by 7e-6
    (relative): within cert_tol's rule (1e-5), 300 times the answer's own accuracy. The cut is
    refused (the loop re-solves), and the fit's objective is HiGHS's to 1e-6."""
    from fsframe.backends.certificate import judge_certificate
    from fsframe.backends.clarabel import CLARABEL_TOLERANCE

    rng = np.random.default_rng(1)
    m, n = rng.integers(20, 60), rng.integers(30, 110)
    X = rng.standard_normal((m, n)) * 10 ** rng.uniform(-1, 1, size=n)
    y = np.where(X[:, :3].sum(1) + rng.standard_normal(m) > 0, 1.0, -1.0)
    C = float(10 ** rng.uniform(-1, 2))
    stock = {k: CLARABEL_TOLERANCE for k in ("tol_gap_abs", "tol_gap_rel", "tol_feas")}
    sub, it = _solved(X, y, "clarabel", C, stock)
    keep = it.t > 1e-6 * it.t.max()
    assert sub.certified_cut(it, keep) is None
    # what the cut point's certificate says at cert_tol alone: it would have passed
    x = it.x.copy()
    from fsframe.slot import group_columns

    gc = group_columns(sub.compiled.slot)
    x[np.concatenate([gc[j] for j in np.flatnonzero(~keep & (it.t > 0))])] = 0.0
    data = sub.compiled.with_weights(**it.weights, sync=False)
    x = np.clip(data.settled(x), data.lb, data.ub)
    cert = certify(data, x, it.result.duals["y"], it.result.duals["z"])
    assert judge_certificate(cert, sub.options.cert_tol)[0] is Status.OPTIMAL and cert.gap > 1e-6
    res = fsframe.fit(X, y, method="l1-svm", C=C, backend="clarabel", backend_options=stock)
    ref = fsframe.fit(X, y, method="l1-svm", C=C, backend="highs")
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)


def test_an_inaccurate_answer_is_never_upgraded():
    """An iterate the solver called optimal_inaccurate keeps its re-solve, even when its cut
    point would pass the certificate."""
    import attrs

    X, y = svm_data(0)
    sub, it = _solved(X, y)
    keep = it.t > 1e-6 * it.t.max()
    assert sub.certified_cut(it, keep) is not None
    vague = attrs.evolve(it, status=Status.OPTIMAL_INACCURATE,
                         result=attrs.evolve(it.result, status=Status.OPTIMAL_INACCURATE))
    assert sub.certified_cut(vague, keep) is None


@pytest.mark.parametrize("backend", ["clarabel", "ecos"])
def test_unfixed_certificate_judges_the_models_point(backend):
    """``certificate["unfixed_problem"]`` of an L1-logistic whose ``zero_tol`` cut was re-solved
    measures how far the returned model is above the optimum of the problem without the cut, so
    its gap (relative to the problem's size, at least the objective's) is the true excess over
    CVXPY's optimum of the same problem, to a few per cent. The
    re-solve fixes the cut groups' coefficients at zero but an interior-point solver leaves their
    magnitude columns ``s_j >= |w_j|`` at ~1.3; judged with those, the gap was 0.45 for a true
    excess of 4.5e-3."""
    import cvxpy as cp

    rng = np.random.default_rng(5)
    X = rng.standard_normal((80, 30))
    y = np.where(X[:, :3].sum(1) + rng.standard_normal(80) > 0, 1.0, -1.0)
    r = fsframe.fit(X, y, "l1-logistic", backend=backend, zero_tol=0.05, tol=0.2)
    unfixed = r.certificate["unfixed_problem"]
    assert r.info["zero_tol_cut"] > 0 and r.info["zero_tol_cut_resolved"] is True
    lin = r.info["penalty_weights"]["lin"]
    w, b = cp.Variable(30), cp.Variable()
    prob = cp.Problem(cp.Minimize(lin @ cp.abs(w) + cp.sum(cp.logistic(-cp.multiply(y, X @ w + b)))))
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    ours = float(lin @ np.abs(r.coef) + np.logaddexp(0.0, -y * (X @ r.coef + r.intercept)).sum())
    assert ours == pytest.approx(r.objective, rel=1e-9)
    excess = (r.objective - prob.value) / abs(prob.value)
    assert 1e-3 < excess < 1e-2  # the cut costs something: the unfixed problem's optimum is lower
    assert 0.9 * excess <= unfixed["gap"] <= 1.1 * excess
    assert unfixed["status"] == "optimal_inaccurate" and unfixed["primal_residual"] < 1e-8
