"""The fixed costs of small fits cut in issue 13 (benchmarks/bench_small_fits.py) compute what the
code they replaced computed: each vectorised helper against the plain loop or the scipy call it
replaces, and the EM dual on a full-pattern Hessian (the WDBC shape, m = 569) against Clarabel."""

from __future__ import annotations

import types

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe.backends import ClarabelBackend, HighsBackend, ProblemData, SolveOptions
from fsframe.backends.diag_qp import _dense_csc, dual_applies, scaled_applies
from fsframe.backends.highs import _lower_csc
from fsframe.dataset import data_diagnostics, identifier_columns
from fsframe.errors import InvalidOptionError
from fsframe.loops.em import group_magnitudes
from fsframe.plugins import get_registry
from fsframe.problem import Subproblem


# -- EM's group magnitudes: vectorised == the per-group loop --------------------------------------
def _magnitudes_by_loop(A, G, group_cols):
    colmax = np.zeros(A.shape[1])
    for M in (A, G):
        if M.shape[0] and M.nnz:
            colmax = np.maximum(colmax, np.asarray(abs(M).max(axis=0).todense()).ravel())
    return np.array([float(np.max(colmax[cols], initial=0.0)) for cols in group_cols])


@pytest.mark.parametrize("seed", range(4))
def test_group_magnitudes_equal_the_per_group_loop(seed):
    rng = np.random.default_rng(seed)
    n = 40
    A = sp.random(3, n, density=0.3, random_state=seed, format="csr") * 10
    G = sp.random(7, n, density=0.4, random_state=seed + 1, format="csr") - sp.random(
        7, n, density=0.2, random_state=seed + 2, format="csr") * 100
    perm = rng.permutation(n)
    cuts = np.sort(rng.choice(np.arange(1, n), size=9, replace=False))
    group_cols = [np.array([], dtype=np.int64)] + list(np.split(perm, cuts)) + [np.array([], dtype=np.int64)]
    sub = types.SimpleNamespace(compiled=types.SimpleNamespace(
        base=types.SimpleNamespace(c=np.zeros(n), A=A, G=G), slot=types.SimpleNamespace(group_cols=tuple(group_cols))))
    got = group_magnitudes(sub)
    assert np.array_equal(got, _magnitudes_by_loop(A, G, group_cols))
    assert got[0] == 0.0 and got[-1] == 0.0


# -- data diagnostics: the same pairs and identifiers as brute force ------------------------------
def _duplicates_brute(X):
    pairs = set()
    for a in range(X.shape[1]):
        for b in range(a + 1, X.shape[1]):
            if np.array_equal(X[:, a], X[:, b]):
                pairs.add((a, b))
    return pairs


@pytest.mark.parametrize("seed", range(3))
def test_duplicate_pairs_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((30, 60))
    X[:, 7] = X[:, 3]
    X[:, 40] = X[:, 3]  # three equal columns: pairs (3, 7) and (7, 40) as the scan reports them
    X[:, 12] = X[:, 55]
    X[:, 20] = X[:, 21] + 1e-15 * np.abs(X[:, 21]).max()  # near, not equal: no pair
    got = data_diagnostics(X)["duplicate_pairs"]
    brute = _duplicates_brute(X)
    assert set(got) <= brute
    # every column with an equal twin appears in a reported pair (the scan chains them)
    assert {j for p in got for j in p} == {j for p in brute for j in p}
    assert (20, 21) not in got


def _identifiers_brute(X):
    if X.shape[0] < 20:
        return []
    out = []
    for j in range(X.shape[1]):
        col = X[:, j]
        if np.all(col == np.round(col)) and np.all(np.abs(col) < 2.0 ** 53) and np.unique(col).size == col.size:
            out.append(j)
    return out


def test_identifier_columns_match_brute_force():
    rng = np.random.default_rng(0)
    m = 30
    X = rng.standard_normal((m, 8))
    X[:, 1] = np.arange(m)  # an id
    X[:, 2] = rng.permutation(m) * 3.0 - 40  # distinct integers
    X[:, 3] = rng.integers(0, 5, m)  # integers, repeated: no id
    X[:, 4] = np.arange(m)
    X[0, 4] = 0.5  # integral except the first sample
    X[:, 5] = np.arange(m)
    X[-1, 5] = 0.5  # integral except the last sample
    X[:, 6] = np.arange(m) * 1e150  # integral in floating point, too large for an id
    assert identifier_columns(X) == _identifiers_brute(X) == [1, 2]
    assert identifier_columns(X[:10]) == []


# -- the EM dual's Hessian hand-over: the same matrices as scipy's --------------------------------
@pytest.mark.parametrize("m", [1, 5, 64])
def test_dense_csc_is_scipys_matrix(m):
    rng = np.random.default_rng(m)
    K = rng.standard_normal((m, 3))
    H = K @ K.T
    for M in (H, np.where(np.abs(H) < 0.5, 0.0, H)):  # a full pattern, and one with exact zeros
        got, ref = _dense_csc(M), sp.csc_matrix(M)
        assert got.nnz == ref.nnz and got.has_canonical_format
        assert np.array_equal(got.indptr, ref.indptr) and np.array_equal(got.indices, ref.indices)
        assert np.array_equal(got.data, ref.data)


def _tril_ref(P):
    T = sp.tril(P, format="csc")
    T.sum_duplicates()
    return T


@pytest.mark.parametrize("kind", ["full", "sparse", "duplicates", "empty", "full-again-other-size"])
def test_lower_csc_is_scipys_tril(kind):
    rng = np.random.default_rng(1)
    if kind in ("full", "full-again-other-size"):
        m = 9 if kind == "full" else 4
        K = rng.standard_normal((m, 2))
        P = _dense_csc(K @ K.T)
    elif kind == "sparse":
        P = sp.random(12, 12, density=0.3, random_state=2, format="csc")
        P = P + P.T
    elif kind == "duplicates":  # repeated (row, column) entries, unsorted
        P = sp.csc_matrix((np.array([1.0, 2.0, 3.0, 4.0]), (np.array([2, 0, 2, 1]), np.array([0, 0, 0, 2]))),
                          shape=(3, 3))
        P.has_canonical_format = False
    else:
        P = sp.csc_matrix((4, 4))
    got, ref = _lower_csc(P), _tril_ref(P)
    assert got.has_canonical_format
    assert np.array_equal(got.indptr, ref.indptr) and np.array_equal(got.indices, ref.indices)
    assert np.array_equal(got.data, ref.data)


# -- the diag split is cached by identity, never reused for other data ----------------------------
def test_form_checks_follow_new_data():
    n = 3
    base = dict(c=np.zeros(n), A=sp.csr_matrix((0, n)), b=np.zeros(0), G=sp.csr_matrix((0, n)), h=np.zeros(0),
                l=0, lb=np.full(n, -np.inf), ub=np.full(n, np.inf))
    diag = ProblemData(P=sp.csc_matrix(np.diag([1.0, 2.0, 3.0])), **base)
    full = ProblemData(P=sp.csc_matrix(np.array([[2.0, 1, 0], [1, 2, 0], [0, 0, 1]])), **base)
    assert dual_applies(diag) is None and scaled_applies(diag) is None
    assert dual_applies(full) == "the Hessian is not diagonal"
    assert dual_applies(diag) is None  # back to the first: recomputed, not the cached answer
    bounded = ProblemData(P=diag.P, **{**base, "lb": np.zeros(n)})  # same P object, new bounds
    assert dual_applies(bounded) == "a quadratic column has a bound"


# -- HiGHS's option check without a scratch instance when there is nothing to check ---------------
def test_highs_option_check_still_refuses_bad_options():
    be = HighsBackend()
    be.check_options(SolveOptions())
    be.check_options(SolveOptions(backend_options={"qp_form": "dual"}))
    with pytest.raises(InvalidOptionError, match="no_such_option"):
        be.check_options(SolveOptions(backend_options={"no_such_option": 1}))
    with pytest.raises(InvalidOptionError, match="qp_form"):
        be.check_options(SolveOptions(backend_options={"qp_form": "sideways"}))


# -- the dual with a full-pattern Hessian (WDBC's shape) against Clarabel -------------------------
def test_em_dual_on_wdbc_matches_clarabel():
    from sklearn import datasets
    X, y = datasets.load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(y == 1, 1.0, -1.0)
    hinge = get_registry().get("formulation", "hinge")
    rng = np.random.default_rng(0)
    quads = [np.ones(X.shape[1]), rng.uniform(0.1, 50.0, X.shape[1])]  # the L2 start, then EM-like weights
    got = {}
    for be in (HighsBackend(), ClarabelBackend()):
        sub = Subproblem(hinge(C=1.0), X, y, frozenset({"quad"}), be)
        try:
            got[be.name] = [sub.solve(quad=q) for q in quads]
        finally:
            sub.close()
    for h, c in zip(got["highs"], got["clarabel"]):
        assert h.ok and c.ok
        assert "dual QP" in h.result.message
        assert abs(h.objective - c.objective) <= 1e-6 * max(1.0, abs(c.objective))
        assert np.allclose(h.coef, c.coef, atol=1e-4)


def test_fit_reads_float64_data_in_place_without_changing_it():
    """A C-contiguous float64 X is not copied (320 MB at 2 000 x 20 000): fsframe reads it through a
    read-only view, so nothing can write into the caller's array; other inputs are copied."""
    import fsframe
    from fsframe.dataset import check_Xy

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 12))
    y = np.where(X[:, 0] > 0, 1, -1)
    before = X.copy()
    Xa, _ = check_Xy(X, y)
    assert np.shares_memory(Xa, X) and not Xa.flags.writeable and X.flags.writeable
    for other in (np.asfortranarray(X), X.astype(np.float32), X.tolist()):
        Xo, _ = check_Xy(other, y)
        assert not np.shares_memory(Xo, X) and Xo.dtype == np.float64
    for method in ("l1-svm", "em-l0", "l1-mpm"):
        fsframe.fit(X, y, method=method)
    np.testing.assert_array_equal(X, before)
    assert X.flags.writeable
