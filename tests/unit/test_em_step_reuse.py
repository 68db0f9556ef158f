"""What an EM step reuses from the step before computes what a fresh computation does.

* :func:`fsframe.slot.weighted_problem` keeps ``c`` (no linear weights), the bounds of the last
  set of fixed groups and the Hessian's pattern of the last set of zero weights: along a sequence
  of weights that returns to earlier fixed sets and zero patterns and leaves them, every problem's
  ``c``, ``lb``, ``ub`` and ``P`` equal the ones computed from their definitions.
* :meth:`fsframe.problem.Subproblem.solve` reports ``loss + penalty`` with the weights it validated
  for the solve: equal to the penalty recomputed from the iterate's own weights, step after step.
* :func:`fsframe.backends.diag_qp._one_blas_thread` changes nothing when BLAS already runs on one
  thread, and limits it to one thread (restoring it afterwards) when it does not.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe.compiler import compile_model
from fsframe.plugins import get_registry
from fsframe.slot import slot_weights

Hinge = get_registry().get("formulation", "hinge")


def _expected(comp, lin, quad, lin_w=None):
    """``(c, lb, ub, P)`` of the weighted problem from their definitions (no cache involved)."""
    base, slot = comp.base, comp.slot
    sw = slot_weights(slot, lin=lin, quad=quad, lin_w=lin_w)
    lb, ub = base.lb.copy(), base.ub.copy()
    for j in sw.fixed_groups:
        lb[slot.group_cols[j]] = 0.0
        ub[slot.group_cols[j]] = 0.0
    c = base.c + (slot.S.T @ sw.lin if sw.lin is not None else 0.0) + (slot.W.T @ sw.lin_w if sw.lin_w is not None else 0.0)
    P = (slot.W.T @ sp.diags(2.0 * sw.quad[slot.groups]) @ slot.W).tocsc() if sw.quad is not None else None
    if P is not None:
        P.eliminate_zeros()
    return c, lb, ub, P


@pytest.mark.parametrize("terms", [("quad",), ("lin", "lin_w", "quad")])
def test_weighted_problems_along_em_steps_equal_fresh_ones(binary_data, terms):
    X, y = binary_data
    comp = compile_model(Hinge(C=1.0).build(X, y, frozenset(terms)).model)
    # EM's slot (quad only) fills the Hessian from its plan; with lin the general product
    assert (comp.slot.quad_plan() is not None) == (terms == ("quad",))
    n = comp.slot.n_groups
    rng = np.random.default_rng(3)
    a, b = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    a[[0, 2]] = True
    b[[1]] = True
    zero_a = np.zeros(n, dtype=bool)
    zero_a[3 % n] = True

    def quad(fixed, zero):
        q = rng.uniform(0.5, 3.0, n)
        q[zero] = 0.0
        q[fixed] = np.inf
        return q

    none = np.zeros(n, dtype=bool)
    # fixed sets and zero patterns that repeat, change, and come back
    plan = [(none, none), (a, none), (a, none), (b, none), (a, zero_a), (a, zero_a), (a, none), (b, zero_a),
            (none, zero_a), (none, none)]
    seen_c = []
    for k, (fixed, zero) in enumerate(plan):
        q = quad(fixed, zero)
        # linear weights now and then (when the slot has them): c changes
        lin = rng.uniform(0.0, 1.0, n) if k == 5 and "lin" in terms else None
        lin_w = rng.uniform(-1.0, 1.0, comp.slot.W.shape[0]) if k == 8 and "lin" in terms else None
        data = comp.with_weights(quad=q, lin=lin, lin_w=lin_w)
        c, lb, ub, P = _expected(comp, lin, q, lin_w)
        np.testing.assert_array_equal(data.c, c, err_msg=f"step {k}")
        np.testing.assert_array_equal(data.lb, lb, err_msg=f"step {k}")
        np.testing.assert_array_equal(data.ub, ub, err_msg=f"step {k}")
        assert data.P.nnz == P.nnz, k
        np.testing.assert_array_equal(data.P.indptr, P.indptr, err_msg=f"step {k}")
        np.testing.assert_array_equal(data.P.indices, P.indices, err_msg=f"step {k}")
        np.testing.assert_array_equal(data.P.data, P.data, err_msg=f"step {k}")
        seen_c.append(data.c is comp.base.c)
    changed = (5, 8) if "lin" in terms else ()
    assert seen_c == [k not in changed for k in range(len(plan))]  # c is shared exactly when unchanged
    np.testing.assert_array_equal(comp.base.lb, _expected(comp, None, np.ones(n))[1])  # base untouched


def test_penalty_of_each_step_is_that_of_its_own_weights(binary_data):
    from fsframe.backends import HighsBackend
    from fsframe.problem import Subproblem

    X, y = binary_data
    sub = Subproblem(Hinge(C=1.0), X, y, frozenset({"quad"}), HighsBackend())
    n = sub.n_groups
    rng = np.random.default_rng(0)
    for k in range(4):
        q = rng.uniform(0.2, 4.0, n)
        if k >= 2:
            q[k % n] = np.inf
        it = sub.solve(quad=q)
        assert it.ok
        want = it.loss + sub.penalty(it.coef, it.t, {"quad": q})
        assert it.objective == pytest.approx(want, rel=1e-14, abs=1e-14), k
        assert abs(sub.penalty(it.coef, it.t, {"quad": np.ones(n)}) - (it.objective - it.loss)) > 1e-8


def test_one_blas_thread_limits_only_when_needed():
    from threadpoolctl import threadpool_limits

    from fsframe.backends import diag_qp

    with diag_qp._one_blas_thread():
        pass
    blas = diag_qp._BLAS[0]
    if blas is None or not blas.lib_controllers:
        pytest.skip("threadpoolctl sees no BLAS library")
    with threadpool_limits(limits=2, user_api="blas"):
        before = [lib.num_threads for lib in blas.lib_controllers]
        if max(before) < 2:
            pytest.skip("no BLAS library here runs on two threads")
        with diag_qp._one_blas_thread():
            assert [lib.num_threads for lib in blas.lib_controllers] == [1] * len(before)
            with diag_qp._one_blas_thread() as inner:  # already one thread: nothing to change
                assert inner is None
                assert all(lib.num_threads == 1 for lib in blas.lib_controllers)
        assert [lib.num_threads for lib in blas.lib_controllers] == before  # restored


def test_settle_rule_follows_a_new_quadratic_pattern_alone():
    """The slacks' settle rule is kept while ``P``'s column pointers are the same arrays (an EM step's
    new weights on the same pattern) and decided again when only the pattern changes (``c``, ``lb``,
    ``ub`` the very same arrays): a slack with a quadratic term does not settle."""
    from fsframe.canonical import Auxiliaries

    from test_issue19_em_costs import _hinge  # tests/unit is on sys.path (pytest's rootdir-relative import)

    data, k, m = _hinge(seed=1)
    cand = np.arange(k, k + 1 + m)
    kept = Auxiliaries(cand, secondary=[k])
    d = np.asarray(data.P.diagonal())
    same_pattern = sp.csc_matrix((data.P.data * 2.0, data.P.indices, data.P.indptr), shape=data.P.shape)
    q = d.copy()
    q[k + 3] = 1.0  # a quadratic term on a slack
    steps = [data, data.evolve(P=same_pattern), data.evolve(P=sp.diags(q, format="csc")), data]
    rng = np.random.default_rng(2)
    cols = []
    for i, problem in enumerate(steps):
        fresh = Auxiliaries(cand, secondary=[k])
        x = rng.normal(size=problem.n)
        np.testing.assert_array_equal(kept.settle(problem, x), fresh.settle(problem, x), err_msg=f"step {i}")
        np.testing.assert_array_equal(kept.cols, fresh.cols, err_msg=f"step {i}")
        cols.append(kept.cols.size)
    assert cols[2] == cols[0] - 1 and cols[3] == cols[0]  # the pattern changed the rule, and back


# selections and EM iterations of `em-l0` with n_features before the reuse above (commit 6ff69c7): on
# generated instances (benchmarks/bench_em_early_stop.py's make_generated, r = 5) and Sonar's bench
# splits (benchmarks/bench_issue19.py, part (a)); the reuse must change neither
GENERATED = {0: ((8, 14, 17, 19, 30), 15), 14: ((1, 5, 12, 28, 41), 7), 21: ((2, 20, 38, 39, 65), 9),
             35: ((0, 23, 28, 35, 36), 14), 49: ((2, 12, 16, 17, 18), 7)}
SONAR = {(0, 5): ((10, 15, 23, 35, 38), 27), (0, 10): ((10, 11, 15, 23, 30, 35, 38, 44, 51, 57), 16),
         (2, 5): ((11, 29, 30, 44, 48), 14)}


def _em(X, y, r):
    import warnings

    import fsframe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, method="em-l0", n_features=r)
    return tuple(int(j) for j in res.selected), res.n_iter


@pytest.mark.parametrize("seed", sorted(GENERATED))
def test_em_selections_as_before_on_generated_instances(load_script, seed):
    make = load_script("benchmarks/bench_em_early_stop.py").make_generated
    assert _em(*make(seed), 5) == GENERATED[seed]


@pytest.mark.shared_data
def test_em_selections_as_before_on_sonar_bench_splits(load_script, shared_file):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    import fsframe

    ds = fsframe.load_dataset(shared_file("sonar.csv"))
    X, y = np.asarray(ds.X, dtype=float), np.asarray(ds.y)
    for (split, r), want in SONAR.items():
        Xtr, _, ytr, _ = train_test_split(X, y, test_size=0.2, random_state=split, stratify=y)
        assert _em(StandardScaler().fit(Xtr).transform(Xtr), ytr, r) == want, (split, r)


def test_dual_bound_terms_follow_the_bounds_values():
    """The dense dual's ``K_lb lb_R`` and ``K_ub ub_R`` are kept only while those bounds keep their
    values (and their column sets): new values or a new split of the linear columns compute them anew."""
    from fsframe.backends.diag_qp import _Rows

    from test_issue19_em_costs import _hinge

    data, k, m = _hinge(seed=4)
    rows = _Rows(data)
    slacks = np.arange(k + 1, k + 1 + m)
    rng = np.random.default_rng(5)
    for R_lb, R_ub in ((slacks, slacks[:0]), (slacks, slacks[:0]), (slacks[:4], slacks[4:])):
        rows.for_r(R_lb, R_ub, np.array([k]))
        for lbR, ubR in ((np.zeros(R_lb.size), np.ones(R_ub.size)), (np.zeros(R_lb.size), np.ones(R_ub.size)),
                         (rng.uniform(0, 1, R_lb.size), np.ones(R_ub.size)), (np.zeros(R_lb.size), rng.normal(size=R_ub.size))):
            got = rows.bound_terms(lbR, ubR)
            np.testing.assert_array_equal(got[0], rows.K[:, R_lb] @ lbR)
            np.testing.assert_array_equal(got[1], rows.K[:, R_ub] @ ubR)
    assert not rows.sign_bounds(0).flags.writeable
