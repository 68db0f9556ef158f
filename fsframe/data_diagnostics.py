"""What is legal but awkward in a data set's features and classes: constant, duplicate and
identifier-like columns (:func:`data_diagnostics`, found in bulk, without densifying a sparse
``X``) and classes under five samples, each said once as a :class:`~fsframe.errors.DataWarning`."""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .data_checks import is_sparse, preview
from .errors import DataWarning

__all__ = ["data_diagnostics", "identifier_columns"]

SMALL_CLASS_WARNING = 5
MIN_SAMPLES_FOR_IDENTIFIER = 20
"""A column of distinct integers is reported as identifier-like from this many samples on (below,
distinct values are too likely by chance)."""



def identifier_columns(X: NDArray) -> list[int]:
    """Columns of ``X`` that hold a distinct integer in every sample, like a sample id or a row
    number (from :data:`MIN_SAMPLES_FOR_IDENTIFIER` samples on; ``[]`` below)."""
    if X.shape[0] < MIN_SAMPLES_FOR_IDENTIFIER:
        return []
    if is_sparse(X):
        # distinct values in every sample leave at most one implicit zero per column: only those
        # (few, in sparse data) columns are read densely
        nnz = np.diff(X.tocsc().indptr)
        cand = np.flatnonzero(nnz >= X.shape[0] - 1)
        if cand.size == 0:
            return []
        sub = X[:, cand].toarray()
        return [int(cand[j]) for j in identifier_columns(sub)]
    # integers a float64 holds exactly (|x| < 2**53): 1e150 is integral in floating point, no id;
    # the first sample rules most columns out (standardised data: all), the rest is checked on the others
    first = X[0]
    cand = np.flatnonzero((first == np.round(first)) & (np.abs(first) < 2.0 ** 53))
    if cand.size == 0:
        return []
    sub = X[:, cand]
    cand = cand[np.all((sub == np.round(sub)) & (np.abs(sub) < 2.0 ** 53), axis=0)]
    if cand.size == 0:
        return []
    distinct = np.all(np.diff(np.sort(X[:, cand], axis=0), axis=0) != 0, axis=0)
    return cand[distinct].tolist()


def _sparse_columns_equal(Xc, a: int, b: int) -> bool:
    """Whether columns ``a`` and ``b`` of the CSC matrix ``Xc`` (canonical: sorted, no zeros) are equal."""
    sa, sb = slice(Xc.indptr[a], Xc.indptr[a + 1]), slice(Xc.indptr[b], Xc.indptr[b + 1])
    return (np.array_equal(Xc.indices[sa], Xc.indices[sb]) and np.array_equal(Xc.data[sa], Xc.data[sb]))


def _projection(m: int) -> NDArray:
    """The random direction :func:`data_diagnostics` hashes columns of ``m`` samples through:
    ``default_rng(0).standard_normal(m)``, drawn once per ``m`` (read-only; kept for the first
    :data:`_PROJECTIONS_KEPT` lengths a process sees: a cross-validation's folds have a few)."""
    v = _PROJECTIONS.get(m)
    if v is None:
        v = np.random.default_rng(0).standard_normal(m)
        v.flags.writeable = False
        if len(_PROJECTIONS) < _PROJECTIONS_KEPT:
            _PROJECTIONS[m] = v
    return v


_PROJECTIONS_KEPT = 16


_PROJECTIONS: dict[int, NDArray] = {}


def data_diagnostics(X: NDArray) -> dict[str, Any]:
    """Constant, duplicate and identifier-like columns of ``X`` (indices), computed in bulk (a
    sparse ``X`` without densifying it). All-zero columns are constant, not duplicates of each
    other."""
    sparse = is_sparse(X)
    if sparse:
        Xc = X.tocsc()
        Xc.sort_indices()
        constant = np.flatnonzero(np.asarray((X.max(axis=0) - X.min(axis=0)).todense()).ravel() == 0)
        zero = np.diff(Xc.indptr) == 0
    else:
        same = np.ptp(X, axis=0) == 0
        constant = np.flatnonzero(same)
        # all-zero: constant and 0 in the first row (no second pass over X, as X.any(axis=0) made; np.ptp
        # above refuses an X without rows; -0.0 counts as 0, nan and inf columns are not constant)
        zero = same & (X[0] == 0)
    # all-zero columns (most of a text matrix's columns in a small sample) are reported as constant,
    # not as thousands of duplicate pairs, and left out of the search below
    dup: list[tuple[int, int]] = []
    # duplicates: hash columns through a random projection, confirm exactly
    key = np.asarray(X.T @ _projection(X.shape[0])).ravel()
    order = np.argsort(key, kind="stable")
    order = order[~zero[order]]
    # BLAS may sum identical columns in a different order (by position): equal columns get keys
    # that differ in the last bits, so candidates are keys within a tolerance, confirmed exactly
    tol = 1e-9 * max(1.0, float(np.max(np.abs(key), initial=0.0)))
    # only a column whose successor in key order is within the tolerance can have a twin: the
    # loop visits those (a Python loop over every column cost ~3 ms at n = 2000)
    near = np.flatnonzero(np.diff(key[order]) <= tol)
    for i in near.tolist():
        a = order[i]
        for b in order[i + 1:]:
            if key[b] - key[a] > tol:
                break
            if (_sparse_columns_equal(Xc, a, b) if sparse else np.array_equal(X[:, a], X[:, b])):
                dup.append((int(min(a, b)), int(max(a, b))))
                break
    return {"constant": constant.tolist(), "duplicate_pairs": sorted(dup), "identifiers": identifier_columns(X)}


def _column_head(X, j: int, k: int = 3) -> NDArray:
    """The first ``k`` values of column ``j`` (dense, also of a sparse ``X``)."""
    head = X[:k, j]
    return np.asarray(head.toarray()).ravel() if is_sparse(head) else np.asarray(head)


def _warn_awkward(X: NDArray, y: NDArray, name: str, feature_names: Sequence[str] | None = None, *,
                  counts: NDArray | None = None) -> None:
    """Warn of awkward data (:func:`data_diagnostics`; a class under :data:`SMALL_CLASS_WARNING`
    samples); ``counts``: ``y``'s class counts when the caller has them (``np.unique(y)``'s)."""
    diag = data_diagnostics(X)
    for j in diag["identifiers"][:3]:
        label = f"feature {j}" + (f" ({feature_names[j]!r})" if feature_names is not None else "")
        warnings.warn(
            f"{name}: {label} holds a distinct integer in every sample ({preview(_column_head(X, j).astype(np.int64))}, ...), "
            "like a sample id or a row number; a method may select it by chance: drop it if it is one "
            "(loading a file: drop_columns=[its column in the file], command line --drop-columns)",
            DataWarning,
            stacklevel=4,
        )
    if diag["constant"]:
        warnings.warn(
            f"{name}: {len(diag['constant'])} constant feature(s) {diag['constant'][:10]}"
            f"{'...' if len(diag['constant']) > 10 else ''}: they carry no information and will get "
            "zero weight (any weight on them is absorbed by the intercept)",
            DataWarning,
            stacklevel=4,
        )
    if diag["duplicate_pairs"]:
        warnings.warn(
            f"{name}: {len(diag['duplicate_pairs'])} pair(s) of identical features "
            f"{diag['duplicate_pairs'][:5]}: DCA, EM and reweighted-l1 keep the lowest index of each "
            "(with n_features always, else when the pair's weight was split); other sparse methods may keep "
            "either or both, so the selected index may change between solvers: drop the copies",
            DataWarning,
            stacklevel=4,
        )
    if y is None:  # a regression target: no classes to count
        return
    if counts is None:
        _, counts = np.unique(y, return_counts=True)
    if counts.min() < SMALL_CLASS_WARNING:
        warnings.warn(
            f"{name}: the smallest class has {counts.min()} samples; class statistics "
            "(means, covariances) and cross-validation folds will be unreliable",
            DataWarning,
            stacklevel=4,
        )
