"""Fixed costs of an EM fit cut in issue 19 compute what the code they replaced computed.

* :class:`fsframe.canonical.Auxiliaries` decides which columns settle once per values of ``c``,
  ``lb``, ``ub`` on its candidates and their quadratic pattern (before: once per new ``c``,
  ``lb``, ``ub`` or ``P`` object, i.e. at every EM step): along a sequence of problems that change
  ``P``'s values (kept) and then a candidate's cost, quadratic term and bound (decided again), a
  kept instance settles every point as a fresh one does.
* :func:`fsframe.backends.certificate.certify` takes ``A'y``, ``G'z`` and ``|G|'|z|`` with the
  transposes cached by the identity of ``A`` and ``G`` (before: a new transposed matrix per
  product, several per EM step): along problems that share ``G`` and problems with a new ``G`` of
  the same shape, every certificate equals the one computed with fresh transposes, and a shared
  ``G`` is transposed once.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from fsframe.backends import ProblemData, certificate, kkt_terms
from fsframe.canonical import Auxiliaries


def _hinge(m=7, k=3, seed=0):
    """An L2-SVM in ``x = (w, b, xi)``: rows ``-y_i (x_i'w + b) - xi_i <= -1``, ``xi >= 0``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, k))
    y = np.where(rng.random(m) < 0.5, -1.0, 1.0)
    G = sp.hstack([sp.csr_matrix(-y[:, None] * X), sp.csr_matrix(-y[:, None]), -sp.eye(m)], format="csr")
    n = k + 1 + m
    c = np.concatenate([np.zeros(k + 1), np.full(m, 2.0)])
    P = sp.diags(np.concatenate([np.ones(k), np.zeros(1 + m)]), format="csc")
    lb = np.concatenate([np.full(k + 1, -np.inf), np.zeros(m)])
    data = ProblemData(c=c, P=P, A=sp.csr_matrix((0, n)), b=np.zeros(0), G=G, h=-np.ones(m), l=m,
                       lb=lb, ub=np.full(n, np.inf))
    return data, k, m


def _variants(data, k, m):
    n = data.n
    d = np.asarray(data.P.diagonal())
    yield "P's values", data.evolve(P=sp.diags(d * np.r_[np.arange(1.0, k + 1), np.ones(1 + m)], format="csc"))
    yield "P's values again", data.evolve(P=sp.diags(d * 3.0, format="csc"))
    c = data.c.copy()
    c[k + 2] = 0.0  # a slack without cost: it does not settle
    yield "a slack's cost", data.evolve(c=c)
    yield "back", data.evolve(c=data.c.copy())
    q = d.copy()
    q[k + 3] = 1.0  # a quadratic term on a slack: it does not settle
    yield "a slack's quadratic term", data.evolve(P=sp.diags(q, format="csc"))
    yield "P as CSR", data.evolve(P=sp.diags(q, format="csr"))
    ub = np.full(n, np.inf)
    ub[k + 4] = 5.0  # a bounded slack: it does not settle
    yield "a slack's upper bound", data.evolve(ub=ub)
    lb = data.lb.copy()
    lb[0] = 0.0  # a coefficient's bound (EM fixing a group): not a candidate, the rule holds
    lb[k + 1] = 0.25  # a slack's lower bound: its least value
    yield "bounds", data.evolve(lb=lb)
    yield "no quadratic term", data.evolve(P=sp.csc_matrix((n, n)))


@pytest.mark.parametrize("seed", range(3))
def test_auxiliaries_kept_across_problems_settle_as_fresh_ones(seed):
    data, k, m = _hinge(seed=seed)
    cand, secondary = np.arange(k, k + 1 + m), [k]
    kept = Auxiliaries(cand, secondary=secondary)
    rng = np.random.default_rng(seed)
    seen = set()
    for what, d in [("start", data), *_variants(data, k, m)]:
        fresh = Auxiliaries(cand, secondary=secondary)
        for _ in range(3):
            x = rng.normal(size=d.n)
            got, want = kept.settle(d, x), fresh.settle(d, x)
            np.testing.assert_array_equal(got, want, err_msg=what)
        np.testing.assert_array_equal(kept.cols, fresh.cols, err_msg=what)
        assert kept.exact == fresh.exact, what
        seen.add(tuple(fresh.cols))
    assert len(seen) >= 3  # the variants do change which columns settle


def test_certificates_with_cached_transposes_equal_fresh_ones(monkeypatch):
    data, k, m = _hinge(m=9, k=4, seed=5)
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.normal(size=k + 1), rng.random(m)])
    y, z = np.zeros(0), rng.random(m)
    problems = [data, data.evolve(c=data.c * 2.0), data.evolve(P=data.P * 3.0)]
    for seed in (1, 2):  # a new G of the same shape (the same pattern, other values): never the old transpose
        G = data.G.copy()
        G.data = G.data * np.random.default_rng(seed).uniform(0.5, 2.0, G.data.size)
        problems.append(data.evolve(G=G))
    made = []
    cached = kkt_terms.cached
    monkeypatch.setattr(kkt_terms, "cached", lambda cache, M, make: cached(cache, M, lambda A: made.append(
        cache is kkt_terms.TRANSPOSED) or make(A)))
    got = [certificate.certify(p, x, y, z) for p in problems]
    monkeypatch.setattr(kkt_terms, "rmatvec", lambda M, v: M.T @ v)  # fresh transposes
    for p, cert in zip(problems, got):
        fresh = certificate.certify(p, x, y, z)
        for field in ("primal_residual", "dual_residual", "dual_bound", "gap"):
            assert getattr(cert, field) == getattr(fresh, field), field
    # G and |G| of the first three problems (one G) transposed once each, then once per new G
    assert sum(made) == 2 * 3


def _row_sizes_by_selection(M, rhs, x, Mx, need, lb, ub):
    """:func:`certificate._row_sizes` as it was written before the cached CSR arrays: the violated
    rows selected from ``M`` by scipy and a new matrix of their weighted entries (the reference)."""
    xa = np.abs(x)
    terms = abs(M) @ xa
    row_max = kkt_terms.row_max(M)
    big = np.minimum(row_max, max(1.0, kkt_terms.inf_norm(rhs), kkt_terms.inf_norm(Mx)))
    rows = np.flatnonzero(need)
    if rows.size:
        R = M.tocsr()[rows]
        cols, v = R.indices, R.data
        down = np.repeat(need[rows] > 0, np.diff(R.indptr))
        room = np.where(down == (v > 0), x[cols] - lb[cols], ub[cols] - x[cols])
        move = np.minimum(np.maximum(1.0, xa[cols]), np.maximum(room, 0.0))
        big[rows] = kkt_terms.row_max(sp.csr_matrix((np.abs(v) * move, cols, R.indptr), shape=R.shape))
    big[row_max == 0] = 1.0
    return np.maximum(np.maximum(np.abs(rhs), terms), np.maximum(big, certificate.GAP_FLOOR))


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("seed", range(4))
def test_row_sizes_from_cached_csr_equal_a_scipy_row_selection(fmt, seed):
    """The violated rows' sizes gathered from the cached CSR arrays are bitwise those of the scipy
    row selection they replace (issue 19: ~1 ms per EM step), on rows with and without entries,
    bounds finite and infinite, each direction of need; the cache is keyed by the matrix."""
    rng = np.random.default_rng(seed)
    m, n = 40, 25
    M = sp.random(m, n, density=0.2, random_state=seed, format="csr")
    M.data = rng.normal(size=M.data.size) * 10.0 ** rng.integers(-4, 5, size=M.data.size)
    M = M.asformat(fmt)
    x = rng.normal(size=n) * 10.0 ** rng.integers(-3, 3, size=n)
    lb = np.where(rng.random(n) < 0.5, -np.inf, x - rng.random(n))
    ub = np.where(rng.random(n) < 0.5, np.inf, x + rng.random(n))
    Mx = M @ x
    rhs = Mx + rng.normal(size=m)
    for need in (rng.integers(-1, 2, size=m).astype(float), np.zeros(m), np.ones(m)):
        got = certificate._row_sizes(M, rhs, x, Mx, need, lb, ub)
        want = _row_sizes_by_selection(M, rhs, x, Mx, need, lb, ub)
        assert np.array_equal(got, want)
    # a new matrix of the same shape is not answered from the first one's cached arrays
    M2 = M.copy()
    M2.data = M2.data * 2.0
    need = np.ones(m)
    assert np.array_equal(certificate._row_sizes(M2, rhs, x, M2 @ x, need, lb, ub),
                          _row_sizes_by_selection(M2, rhs, x, M2 @ x, need, lb, ub))


def test_row_sizes_cache_follows_the_matrix_arrays_and_survives_id_reuse():
    """The rows' largest entries (and ``|M|``) are cached per CSR / CSC matrix, keyed by the matrix and checked against
    the identity of its arrays: a matrix given new arrays, and a new matrix created where a deleted
    one lived (the same ``id``), are sized afresh; a COO matrix is not cached."""
    import gc

    rng = np.random.default_rng(11)
    m, n = 30, 20
    x = rng.normal(size=n)
    lb, ub = np.full(n, -np.inf), np.full(n, np.inf)
    need = np.zeros(m)  # every row sized by its largest coefficient (the cached row maxima)
    rhs = np.zeros(m)

    def check(M):
        got = certificate._row_sizes(M, rhs, x, M @ x, need, lb, ub)
        assert np.array_equal(got, _row_sizes_by_selection(M, rhs, x, M @ x, need, lb, ub))

    M = sp.random(m, n, density=0.3, random_state=3, format="csr")
    check(M)
    M.data = M.data * 1e3  # new arrays on the same matrix object
    check(M)
    ids = set()
    for k in range(40):  # create, certify, delete, collect: ids get reused
        A = sp.random(m, n, density=0.3, random_state=3, format="csr")
        A.data = A.data * 10.0 ** (k % 7 - 3)
        ids.add(id(A))
        check(A)
        del A
        gc.collect()
    assert len(ids) < 40  # the loop did reuse an id (else it tests nothing)
    C = sp.random(m, n, density=0.3, random_state=4, format="coo")
    check(C)
    assert not any(r() is C for r, *_ in kkt_terms.ROW_MAX)  # converted per call, not cached
