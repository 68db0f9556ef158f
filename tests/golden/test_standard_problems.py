"""Golden tests: problems small enough to solve by hand (``fsframe.testing.StandardProblems`` and
the toy set of ``fsframe.testing.toy_data``), through the backend alone and through the whole
pipeline (formulation -> Pyomo -> compiler -> backend -> loop -> FitResult).

On the toy set every hinge problem reduces to ``2 w1 + w2 >= 1`` with ``b = 0`` (see
``StandardProblems``): L1 picks ``w = (0.5, 0)``, L2 ``w = (0.4, 0.2)``, and the EM zero-norm
iteration with weights ``1/w^2`` is ``w <- a*w^2 / sum(a^2 w^2)`` with ``a = (2, 1)``.
"""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.backends import HighsBackend, SolveOptions
from fsframe.plugins import get_registry
from fsframe.problem import Subproblem
from fsframe.testing import StandardProblems, check_backend, hinge_loss

QP_FORMS = ["auto", "dense", "dual", "scaled", "primal"]


def _opts(form):
    return SolveOptions(backend_options={"qp_form": form})


@pytest.mark.parametrize("form", QP_FORMS)
def test_every_qp_form_solves_every_standard_problem(form):
    ran = check_backend(HighsBackend(), options=_opts(form))
    expected = {p.name for p in StandardProblems.for_backend(HighsBackend)}
    assert expected <= set(ran)
    assert "socp_disc" not in ran  # HiGHS does not claim SOCP


@pytest.mark.parametrize("form", ["auto", "dual"])
def test_qp_without_rows_in_dual_form(form):
    """Regression: the dual of a QP without constraint rows has no variables; HiGHS calls that
    model "empty" (mapped to OPTIMAL) and fsframe returned OPTIMAL with ``x=None`` for an
    unbounded primal (the dual is infeasible). The dual's Farkas certificate, mapped to the primal,
    is a direction of descent, and the zero model is feasible: verified ``UNBOUNDED``."""
    res = HighsBackend().solve(StandardProblems.unbounded_qp().data, _opts(form))
    assert res.status is Status.UNBOUNDED and res.x is None and res.claim.verified, res.message
    bounded = StandardProblems.qp_no_rows()
    res = HighsBackend().solve(bounded.data, _opts(form))
    bounded.check(res)
    np.testing.assert_allclose(res.x, [1.0, 0.0], atol=1e-9)


def test_kit_rejects_a_wrong_backend():
    """check_backend fails a backend whose answers are slightly off, or that ignores options."""

    class Shifted(HighsBackend):
        name = "shifted"

        def open(self, data, options=SolveOptions()):
            session = super().open(data, options)
            solve = session.solve

            def wrong(d=None):
                r = solve(d)
                return attrs.evolve(r, objective=r.objective + 1e-3) if r.objective is not None else r

            session.solve = wrong
            return session

    with pytest.raises(AssertionError, match="objective"):
        check_backend(Shifted())

    class Lenient(HighsBackend):
        name = "lenient"

        def open(self, data, options=SolveOptions()):
            opts = attrs.evolve(options, backend_options={k: v for k, v in options.backend_options.items()
                                                          if not k.startswith("fsframe_")})
            return super().open(data, opts)

    with pytest.raises(AssertionError, match="unknown backend option"):
        check_backend(Lenient())


# ------------------------------------------------------------------------------ whole pipeline
C = StandardProblems.C
PHI_EXP = 1.0 - math.exp(-2.5)  # exp(alpha=5) at |w1| = 0.5


@pytest.mark.parametrize("method, params, coef, objective", [
    ("l1-svm", {}, (0.5, 0.0), 0.5),                                 # ||w||_1
    ("svm-weights", {"n_features": 2}, (0.4, 0.2), 0.2),             # ||w||^2, every feature kept
    ("fsv", {"alpha": 5.0}, (0.5, 0.0), PHI_EXP),                    # 1 - exp(-5 * 0.5)
    ("em-l0", {}, (0.5, 0.0), 1.0),                                  # ||w||_0
    ("arom", {"eps": 1e-3}, (0.5, 0.0), math.log1p(0.5 / 1e-3)),     # log(1 + |w1|/eps)
    ("em-l0", {"p": 0.5}, (0.5, 0.0), math.sqrt(0.5)),               # |w1|^p
], ids=["l1-svm", "svm-weights", "fsv", "em-l0", "arom", "em-lp"])
def test_methods_on_the_toy_set(toy, method, params, coef, objective):
    X, y = toy
    res = fsframe.fit(X, y, method=method, C=C, **params)
    np.testing.assert_allclose(res.coef, coef, atol=1e-6)
    assert abs(res.intercept) < 1e-6
    # the objective the returned model attains (its hinge at its own margins): HiGHS's QP answers
    # hold the margin 2 w1 + w2 >= 1 to about 1e-7, which the hinge charges C = 10 times (em-l0
    # reports 1 + 2e-6), within the certificate's tolerance (10 * cert_tol = 1e-5)
    assert res.objective == pytest.approx(objective, rel=1e-5, abs=1e-7)
    assert res.selected.tolist() == [j for j in (0, 1) if coef[j] != 0]
    assert res.converged
    np.testing.assert_array_equal(res.predict(X), y)


@pytest.mark.parametrize("surrogate", ["exp", "log", "l1"])
def test_dca_on_the_toy_set(toy, surrogate):
    """DCA from the L1 start stays at w = (0.5, 0): the linearised objective keeps the vertex."""
    X, y = toy
    res = fsframe.fit(X, y, formulation="hinge", surrogate=surrogate, loop="dca", C=C)
    np.testing.assert_allclose(res.coef, [0.5, 0.0], atol=1e-6)
    phi = get_registry().get("surrogate", surrogate)()
    assert res.objective == pytest.approx(float(phi.phi(np.array([0.5]))[0]), rel=1e-6)


def test_em_zero_norm_trajectory_is_the_closed_form(toy):
    """002 eqs. 7-9 on the toy set: each EM step solves min sum w_j^2 / t_j^2 s.t. a'w = 1, so
    w <- a t^2 / sum(a^2 t^2) from the L2 start (0.4, 0.2); w2 shrinks quadratically
    (w2/w1: 0.5, 0.125, 0.0078, 3e-5, ...) until it falls under zero_tol and is fixed at 0."""
    X, y = toy
    loop = get_registry().get("loop", "em")(max_iter=10)
    sub = Subproblem(get_registry().get("formulation", "hinge")(C=C), X, y, frozenset({"quad"}), HighsBackend())
    seen = []
    out = loop.run(sub, get_registry().get("surrogate", "l0")(), callback=lambda rec, it: seen.append(it.coef))
    a = np.array([2.0, 1.0])
    w = np.array([0.4, 0.2])
    expected = [w]
    while w[1] > loop.zero_tol * w[0]:
        w = a * w * w / np.sum(a * a * w * w)
        expected.append(w)
    expected.append(np.array([0.5, 0.0]))
    got = np.array(seen)
    assert got.shape[0] >= len(expected) - 1
    np.testing.assert_allclose(got[: len(expected) - 1], np.array(expected[:-1]), atol=2e-6)
    np.testing.assert_allclose(out.coef, [0.5, 0.0], atol=1e-6)
    assert out.converged


def test_l1_svm_matches_the_hand_built_lp(toy):
    """The hinge formulation compiled by fsframe is the LP written by hand in StandardProblems
    (same optimum and solution on the same backend)."""
    X, y = toy
    sub = Subproblem(get_registry().get("formulation", "hinge")(C=C), X, y, frozenset({"lin"}), HighsBackend())
    for weights, fixed in [((1.0, 1.0), ()), ((10.0, 1.0), ()), ((1.0, 1.0), (0,))]:
        lin = np.array(weights)
        lin[list(fixed)] = np.inf
        it = sub.solve(lin=lin)
        hand = StandardProblems.l1svm_separable(weights=weights, fixed=fixed)
        assert it.objective == pytest.approx(hand.objective, rel=1e-9)
        np.testing.assert_allclose(it.coef, hand.x[:2] - hand.x[2:4], atol=1e-9)
        assert hinge_loss(C)(X @ it.coef + it.intercept[0], y) == pytest.approx(it.loss, abs=1e-9)
