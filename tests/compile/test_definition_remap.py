"""The compiler's definition matrices (``compiler.assembly.definitions``) remap a record's CSR
columns in place of a COO round trip (least squares at p = 5 000): the same canonical matrix as
the COO construction, and the same least-squares fit, bit for bit."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.compiler import assembly
from fsframe.compiler.assembly import remap_columns


def _by_coo(A, where, n):
    """The construction the remap replaces: through COO, unknown columns dropped."""
    M = sp.csr_matrix(A).tocoo()
    known = where[M.col] >= 0
    return sp.csr_matrix((M.data[known], (M.row[known], where[M.col][known])), shape=(M.shape[0], n))


@pytest.mark.parametrize("case", ["identity", "shifted", "dropped", "permuted", "merged", "empty rows"])
def test_remap_equals_the_coo_construction(case):
    rng = np.random.default_rng(["identity", "shifted", "dropped", "permuted", "merged", "empty rows"].index(case))
    A = sp.random(30, 12, density=0.4, format="csr", random_state=rng)
    n = 20
    where = {"identity": np.arange(12), "shifted": np.arange(12) + 5,
             "dropped": np.where(rng.random(12) < 0.3, -1, np.arange(12) + 2),
             "permuted": rng.permutation(20)[:12],
             "merged": rng.integers(0, 4, 12),  # several columns onto one: summed
             "empty rows": np.arange(12)}[case].astype(np.int64)
    if case == "empty rows":
        A = sp.csr_matrix(A.multiply(np.arange(30)[:, None] % 3 == 0))
    before = A.copy()
    got, ref = remap_columns(A, where, n), _by_coo(A, where, n)
    assert got.shape == ref.shape and got.has_canonical_format
    np.testing.assert_array_equal(got.indptr, ref.indptr)
    np.testing.assert_array_equal(got.indices, ref.indices)
    np.testing.assert_allclose(got.data, ref.data, rtol=1e-15, atol=0)
    assert (A != before).nnz == 0 and not np.shares_memory(got.data, A.data)  # the input is not touched


def test_least_squares_fit_is_the_same_with_the_remap(monkeypatch):
    """``l1-ls`` (its residual rows are a definition record) and ``l0-ls``: objective, support and
    coefficients identical with the remap and with the COO construction."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((80, 300))
    y = X[:, :4] @ np.array([3.0, -2.0, 1.5, 1.0]) + 0.3 * rng.standard_normal(80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {}
        for how in ("remap", "coo"):
            if how == "coo":
                monkeypatch.setattr(assembly, "remap_columns", _by_coo)
            runs[how] = [fsframe.fit(X, y, method=m, C=0.05, working_set=ws)
                         for m in ("l1-ls", "l0-ls") for ws in (True, False)]
    for a, b in zip(runs["remap"], runs["coo"]):
        assert a.objective == b.objective
        np.testing.assert_array_equal(a.selected, b.selected)
        np.testing.assert_array_equal(a.coef, b.coef)
    assert 4 <= len(runs["remap"][0].selected) < 300
