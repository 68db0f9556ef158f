"""Automatic grids (issue 22): where the first feature enters, derived from the formulation's own
optimality conditions, checked against the fits themselves (no feature just below the entry, one
just above it) and against an independent solve of the multipliers' problem (CVXPY)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.errors import InvalidOptionError
from fsframe.grids import first_weights, grid_rule, integer_grid, stopped_growing

pytestmark = pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning")


def two_classes(n_pos: int, n_neg: int, n: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n_pos), -np.ones(n_neg)]
    X = rng.standard_normal((y.size, n))
    X[:, :3] += 0.7 * y[:, None]
    return X, y


def entry_of(X, y, method="l1-svm", **params):
    res = fsframe.resolve(method, **params)
    return grid_rule(X, np.where(y == np.unique(y)[-1], 1.0, -1.0), res, "C").entry


@pytest.mark.parametrize("n_pos, n_neg", [(30, 30), (40, 25), (18, 44)])
@pytest.mark.parametrize("sparse", [False, True])
def test_first_feature_enters_just_above_the_entry_and_not_below(n_pos, n_neg, sparse):
    """l1-svm's fit is the one L1 subproblem: empty at 0.999 C_0, not empty at 1.001 C_0 (balanced
    classes: the closed form ||X'y||_inf; unbalanced: the LP over the larger class's multipliers)."""
    X, y = two_classes(n_pos, n_neg)
    Xs = sp.csr_matrix(X) if sparse else X
    c0 = entry_of(Xs, y)
    below = fsframe.fit(Xs, y, "l1-svm", C=0.999 * c0)
    above = fsframe.fit(Xs, y, "l1-svm", C=1.001 * c0)
    assert below.n_selected == 0
    assert above.n_selected >= 1
    if n_pos == n_neg:
        assert c0 == pytest.approx(1.0 / np.max(np.abs(X.T @ y)), rel=1e-12)


def test_entry_lp_agrees_with_cvxpy():
    """The multipliers' problem min ||X'(mu * y)||_inf over the empty model's optimal multipliers,
    solved independently (CVXPY, Clarabel)."""
    import cvxpy as cp

    X, y = two_classes(23, 41, n=15, seed=4)
    small, big = y > 0, y < 0  # 23 positives: every one has mu = 1; the negatives share 23
    mu = cp.Variable(int(big.sum()))
    g = X[small].T @ np.ones(int(small.sum())) - X[big].T @ mu
    prob = cp.Problem(cp.Minimize(cp.norm(g, "inf")), [mu >= 0, mu <= 1, cp.sum(mu) == small.sum()])
    prob.solve(solver="CLARABEL")
    assert entry_of(X, y) == pytest.approx(1.0 / prob.value, rel=1e-6)


def test_entry_scales_with_the_first_subproblem_weight_and_fsv_is_empty_below():
    """fsv starts from the L1 model (unit weights): the same entry; below it the L1 start is empty
    and so is FSV (the empty model is a fixed point of its reweighting)."""
    X, y = two_classes(35, 25, seed=2)
    c0 = entry_of(X, y)
    assert entry_of(X, y, "fsv") == pytest.approx(c0, rel=1e-12)
    assert fsframe.fit(X, y, "fsv", C=0.99 * c0).n_selected == 0


def test_surrogate_parameter_entry_by_the_loops_first_weight():
    """fsv from the tangent at zero (weights alpha): the empty model holds for alpha >= C d, and a
    feature enters just below."""
    X, y = two_classes(30, 30, seed=3)
    res = fsframe.resolve("fsv", loop__init="zero")
    rule = grid_rule(X, y, res, "alpha", method="fsv", fixed={"loop__init": "zero"})
    d = np.max(np.abs(X.T @ y))
    assert rule.direction == -1 and rule.entry == pytest.approx(1.0 * d, rel=1e-8)
    assert fsframe.fit(X, y, "fsv", loop__init="zero", alpha=1.001 * rule.entry).n_selected == 0
    assert fsframe.fit(X, y, "fsv", loop__init="zero", alpha=0.999 * rule.entry).n_selected >= 1


def test_first_weights_probe_reads_each_loops_first_subproblem():
    em = fsframe.resolve("em-l0")
    assert set(first_weights(em.loop, em.surrogate)) == {"quad"}
    l1 = fsframe.resolve("l1-svm")
    np.testing.assert_array_equal(first_weights(l1.loop, l1.surrogate)["lin"], np.ones(3))
    zero = fsframe.resolve("fsv", alpha=3.0, loop__init="zero")
    np.testing.assert_array_equal(first_weights(zero.loop, zero.surrogate)["lin"], np.full(3, 3.0))


def test_path_without_a_grid_grows_from_the_entry_until_the_support_stops_growing():
    X, y = two_classes(40, 30, n=20, seed=5)
    p = fsframe.path(X, y, "l1-svm")
    rule = p.rule
    assert p.parameter == "C" and rule.entry == pytest.approx(entry_of(X, y), rel=1e-12)
    assert p.values[0] == pytest.approx(1.001 * rule.entry)
    np.testing.assert_allclose(np.diff(np.log10(p.values[1:])), 1 / rule.patience, rtol=1e-9)  # log-spaced
    assert p.n_selected[0] >= 1
    assert stopped_growing(p.n_selected, rule.patience) and not stopped_growing(p.n_selected[:-1], rule.patience)
    assert p.to_dict()["rule"]["entry"] == rule.entry
    # the points are fsframe.fit's answers, as for a given grid
    one = fsframe.fit(X, y, "l1-svm", C=p.values[3])
    assert one.objective == pytest.approx(p.points[3].objective, rel=1e-7)


def test_one_vs_rest_entry_is_the_earliest_class():
    rng = np.random.default_rng(7)
    y = np.repeat([0, 1, 2], 20)
    X = rng.standard_normal((60, 10))
    X[np.arange(60), y] += 1.5
    p = fsframe.path(X, y, "l1-svm", max_points=3)
    entries = [entry_of(X, np.where(y == c, 1, -1)) for c in range(3)]
    assert p.rule.entry == pytest.approx(min(entries), rel=1e-12)
    assert fsframe.fit(X, y, "l1-svm", C=0.999 * min(entries)).n_selected == 0


def test_n_features_and_delta_grids():
    assert integer_grid(30) == (1, 2, 3, 5, 10, 17, 30)
    assert integer_grid(1) == (1,)
    X, y = two_classes(30, 30, n=8, seed=1)
    q = fsframe.path(X, y, "svm-weights")  # declares n_features: log-spaced integers
    assert q.parameter == "n_features" and q.values == [1, 2, 3, 5, 8] and q.n_selected == [1, 2, 3, 5, 8]
    m = fsframe.path(X, y, "l1-mpm")  # the MPM grids delta_fraction up to delta_max
    assert m.parameter == "delta_fraction" and m.values[0] == pytest.approx(0.01) and m.values[-1] == \
        pytest.approx(0.999)
    assert m.n_selected[0] <= m.n_selected[-1]


def test_a_class_the_empty_model_always_fits_gives_a_one_point_grid():
    """Multipliers with a zero gradient certify the empty model at every C: no grid can start."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    y = np.array([1, 1, -1, -1, -1, -1])  # the positives' sum equals a share of the negatives'
    res = fsframe.resolve("l1-svm")
    rule = grid_rule(X, y, res, "C")
    assert rule.empty and rule.values == (1.0,)
    assert fsframe.fit(X, y, "l1-svm", C=1e6).n_selected == 0


def test_parameters_without_an_automatic_grid_say_why():
    X, y = two_classes(20, 20, n=5)
    with pytest.raises(InvalidOptionError, match=r"'C' has no automatic grid for loop 'em' with surrogate 'log'"):
        fsframe.path(X, y, "arom", C="auto")
    with pytest.raises(InvalidOptionError, match=r"'alpha' does not move the weight of the reweighted-l1 loop's "
                                                 r"first subproblem .* give the grid as a list"):
        fsframe.path(X, y, "fsv", alpha="auto")  # its L1 start does not depend on alpha
