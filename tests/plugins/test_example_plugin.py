"""The real third-party plugin in ``tests/plugins/fsframe-example-plugin`` (installed by the test
command: ``pip install ./tests/plugins/fsframe-example-plugin``): discovered through its entry
point with its distribution name, its method gives the hand-derived values, and it passes the
conformance kit."""

from __future__ import annotations

import numpy as np
import pytest

import fsframe
from fsframe.plugins import get_registry
from fsframe.testing import check_fit_result, check_loop, check_surrogate, hinge_loss

example = pytest.importorskip(
    "fsframe_example_plugin",
    reason="install it: python -m pip install ./tests/plugins/fsframe-example-plugin")
SCAD = example.SCADSurrogate


def test_discovered_with_its_distribution():
    methods = {m["name"]: m for m in fsframe.list_methods()}
    assert methods["scad-svm"]["distribution"] == "fsframe-example-plugin"
    assert methods["scad-svm"]["plugin"] == "example"
    comps = {(c["kind"], c["name"]): c for c in fsframe.list_components()}
    assert comps[("surrogate", "scad")]["distribution"] == "fsframe-example-plugin"
    assert comps[("surrogate", "scad")]["version"] == "0.1.0"
    assert get_registry().get("surrogate", "scad") is SCAD


def test_scad_formula():
    """Fan & Li (2001) eq. 2.7 at hand-picked points (lam = 1, a = 3.7)."""
    s = SCAD(lam=1.0, a=3.7)
    t = np.array([0.0, 0.5, 1.0, 2.0, 3.7, 10.0])
    np.testing.assert_allclose(s.phi(t), [0, 0.5, 1.0, (2 * 3.7 * 2 - 4 - 1) / 5.4, 4.7 / 2, 4.7 / 2])
    np.testing.assert_allclose(s.derivative(t), [1, 1, 1, 1.7 / 2.7, 0, 0])
    split = s.dc_split()
    np.testing.assert_allclose(split.h(t), [0, 0, 0, 1 / 5.4, 2.7**2 / 5.4, 10 - 2.35])


@pytest.mark.parametrize("lam, a", [(1.0, 3.7), (0.25, 3.7), (0.01, 2.5), (5.0, 10.0)])
def test_scad_conforms(lam, a):
    ran = check_surrogate(SCAD(lam=lam, a=a))
    assert {"derivative=fd", "dc g-h=phi", "quad_weights = phi'(t)/t"} <= set(ran)


def test_scad_loops_conform():
    for loop in ("reweighted-l1", "dca", "em"):
        check_loop(get_registry().get("loop", loop)(), SCAD(lam=0.5))


def test_scad_svm_on_the_toy_set(toy):
    """On the toy set the problem is min phi(|w1|) + phi(|w2|) s.t. 2 w1 + w2 >= 1 (b = 0).
    phi is concave, so the minimum is at a vertex: w = (0.5, 0) costs phi(0.5) =
    (2 a lam 0.5 - 0.25 - lam^2) / (2 (a - 1)) = 0.6125 / 5.4 with lam = 0.25, a = 3.7, and
    w = (0, 1) costs lam^2 (a + 1) / 2 = 0.146875. A grid search in numpy agrees."""
    X, y = toy
    res = fsframe.fit(X, y, method="scad-svm", C=10.0, lam=0.25)
    np.testing.assert_allclose(res.coef, [0.5, 0.0], atol=1e-7)
    assert res.objective == pytest.approx(0.6125 / 5.4, rel=1e-9)
    s = SCAD(lam=0.25)
    g = np.linspace(-1.5, 1.5, 601)  # step 0.005: (0.5, 0) is on the grid
    W = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    total = 10.0 * np.maximum(0.0, 1.0 - y * (W @ X.T)).sum(axis=1) + s.phi(np.abs(W)).sum(axis=1)
    assert total.min() == pytest.approx(res.objective, abs=1e-12)
    assert hinge_loss(10.0)(X @ res.coef, y) == 0.0
    check_fit_result(res, X, y)


def test_scad_svm_on_data(binary_data):
    X, y = binary_data
    res = fsframe.fit(X, y, method="scad-svm", lam=0.5)
    check_fit_result(res, X, y)
    assert res.monotone and res.converged
    # swapping the loop keeps the plugin's surrogate: any compatible triple runs
    dca = fsframe.fit(X, y, formulation="hinge", surrogate="scad", loop="dca", lam=0.5)
    check_fit_result(dca, X, y)
