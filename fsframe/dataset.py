"""The immutable, validated :class:`Dataset` every fit starts from."""

from __future__ import annotations

import contextlib
import contextvars
import numbers
import warnings
from typing import Any, Iterator, Sequence

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import DataError, DataWarning

__all__ = ["Dataset", "TASKS", "check_Xy", "check_regression_Xy", "check_no_silent_cast", "data_diagnostics",
           "identifier_columns", "is_sparse", "sparse_features"]

MIN_SAMPLES_PER_CLASS = 2
"""A class needs two samples: one to train on and one to estimate any spread from."""
SMALL_CLASS_WARNING = 5
MIN_SAMPLES_FOR_IDENTIFIER = 20
"""A column of distinct integers is reported as identifier-like from this many samples on (below,
distinct values are too likely by chance)."""


def _readonly(a):
    """A read-only copy: of an array, or of a CSR matrix (its three arrays frozen)."""
    if is_sparse(a):
        a = a.copy()
        for arr in (a.data, a.indices, a.indptr):
            arr.flags.writeable = False
        return a
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def is_sparse(X: Any) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array (without importing scipy when it is not
    loaded: nothing sparse can exist then)."""
    import sys

    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def sparse_features(X: Any, name: str = "data"):
    """A scipy.sparse ``X`` as a fresh CSR matrix of float64 (any format in, duplicates summed,
    indices sorted, explicit zeros dropped), checked without densifying: 2-D, not empty, real,
    finite stored values. Memory is proportional to the stored entries.

    Raises
    ------
    DataError
        naming the problem (the first non-finite entry by sample and feature).
    """
    import scipy.sparse as sp

    if X.dtype.kind == "c":
        raise DataError(f"{name}: X is complex; fsframe needs real features (split real and imaginary parts "
                        "into columns if both matter)")
    if X.dtype.kind not in "biuf":
        raise DataError(f"{name}: X is a sparse matrix of dtype {X.dtype}, not numbers")
    if len(X.shape) != 2:
        raise DataError(f"{name}: X must be 2-D (n_samples, n_features), got shape {X.shape}")
    Xc = sp.csr_matrix(X, dtype=np.float64, copy=True)
    Xc.sum_duplicates()  # also sorts the indices
    bad = ~np.isfinite(Xc.data)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(Xc.indptr, k, side="right") - 1)
        j = int(Xc.indices[k])
        kind = "NaN" if np.isnan(Xc.data[k]) else "inf"
        raise DataError(f"{name}: X contains {int(bad.sum())} non-finite value(s) ({kind} at sample {i}, feature {j}); "
                        "impute or drop them before fitting")
    Xc.eliminate_zeros()
    return Xc


def preview(values: Sequence[Any], k: int = 5, width: int = 30) -> str:
    """The first ``k`` of ``values`` as short reprs, then how many more: keeps messages short."""
    items = []
    for v in list(values)[:k]:
        r = repr(v.item() if isinstance(v, np.generic) else v)
        items.append(r if len(r) <= width else r[: width - 3] + "...")
    more = len(values) - k
    return ", ".join(items) + (f", ... ({more} more)" if more > 0 else "")


def _where(index: tuple[int, ...], shape: tuple[int, ...]) -> str:
    return f"sample {index[0]}, feature {index[1]}" if len(shape) == 2 else f"index {index}"


def _unmask(a: Any, what: str, name: str) -> Any:
    """A masked array is accepted only when nothing is masked (its data is then used as is):
    fsframe has no notion of a missing value, and using the data under the mask is a silent
    wrong answer."""
    if not np.ma.isMaskedArray(a):
        return a
    mask = np.ma.getmaskarray(a)
    if mask.any():
        first = tuple(int(i) for i in np.argwhere(mask)[0])
        raise DataError(
            f"{name}: {what} is a masked array with {int(mask.sum())} masked value(s) (first at "
            f"{_where(first, mask.shape) if what == 'X' else f'sample {first[0]}'}); fsframe does not read masks: "
            f"fill them ({what}.filled(value)) or drop those samples (a masked array with nothing masked is accepted)"
        )
    return np.ma.getdata(a)


def _is_real(v: Any) -> bool:
    return isinstance(v, (numbers.Real, np.bool_)) or (
        isinstance(v, numbers.Number) and not isinstance(v, numbers.Complex))


def check_no_silent_cast(a: Any, what: str = "X", *, name: str = "data") -> Any:
    """Refuse what a cast to float64 would misread without a word: a masked array with masked
    values (the data under the mask would be used) and dates or durations (cast to counts of
    their unit). Returns ``a``, or the data of a masked array with nothing masked. For callers
    that convert with another library (scikit-learn's ``validate_data``); :func:`check_Xy` does
    this and more.

    Raises
    ------
    DataError
        naming what was found and how to get around it.
    """
    a = _unmask(a, what, name)
    if getattr(a, "dtype", None) is not None and np.dtype(a.dtype).kind in "mM":
        raise DataError(
            f"{name}: {what} has dtype {a.dtype} (dates or durations), which are not numbers; convert them in a "
            "unit you choose, e.g. (X - X.min()) / np.timedelta64(1, 'D')"
        )
    return a


def _features(X: Any, name: str) -> NDArray:
    """``X`` as a float64 array, refusing what float64 would silently misread: a read-only view of
    ``X`` itself when it already is a C-contiguous float64 ``ndarray`` (no copy of a large data set:
    320 MB at 2 000 x 20 000; read-only, so that nothing in fsframe can change the caller's data),
    else a fresh copy."""
    import scipy.sparse

    X = check_no_silent_cast(X, "X", name=name)
    if scipy.sparse.issparse(X):
        return sparse_features(X, name)
    if np.iscomplexobj(X):
        raise DataError(f"{name}: X is complex; fsframe needs real features (split real and imaginary parts "
                        "into columns if both matter)")
    a = np.asarray(X)
    if a.dtype.kind in "mM":  # e.g. a list of datetime64 values
        check_no_silent_cast(a, "X", name=name)  # raises
    if a.dtype.kind in "USV":
        raise DataError(
            f"{name}: X holds {'text' if a.dtype.kind != 'V' else 'records'} (dtype {a.dtype}), not numbers; "
            "parse numeric text yourself (X.astype(float)) or encode categorical features first"
        )
    if a.dtype.kind == "O":
        flat = a.ravel()
        bad = next((i for i, v in enumerate(flat) if not _is_real(v)), None)
        if bad is not None:
            v = flat[bad]
            where = _where(tuple(int(i) for i in np.unravel_index(bad, a.shape)), a.shape)
            if v is None or type(v).__name__ == "NAType":
                raise DataError(f"{name}: X has a missing value ({v!r} at {where}); impute or drop them before fitting")
            raise DataError(
                f"{name}: X is not numeric: {type(v).__name__} value {preview([v])} at {where}; "
                "encode categorical features as numbers first"
            )
    if type(a) is np.ndarray and a.dtype == np.float64 and a.flags.c_contiguous:
        view = a.view()
        view.flags.writeable = False
        return view
    try:
        return np.array(a, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: X is not numeric ({exc}); encode categorical features first") from exc


def _label_kind(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if _is_real(v):
        return "number"
    if isinstance(v, str):
        return "str"
    if isinstance(v, bytes):
        return "bytes"
    return type(v).__name__


def _object_labels(ya: NDArray, name: str) -> NDArray:
    """Object labels as an array of one kind; labels of mixed kinds (``1`` and ``"1"``) are refused,
    because any conversion would merge or split classes behind the user's back."""
    gone = [i for i, v in enumerate(ya) if v is None or (isinstance(v, (float, np.floating)) and not np.isfinite(v))]
    if gone:
        raise DataError(f"{name}: y contains {len(gone)} missing (None/NaN/inf) label(s), first at sample {gone[0]}")
    kinds: dict[str, Any] = {}
    for v in ya:
        kinds.setdefault(_label_kind(v), v)
    if len(kinds) > 1:
        desc = ", ".join(f"{k} (e.g. {preview([v])})" for k, v in kinds.items())
        raise DataError(
            f"{name}: y mixes label types: {desc}; labels such as 1 and '1' would be merged or split "
            "silently: convert every label to one type first (e.g. y.astype(str))"
        )
    kind = next(iter(kinds))
    if kind == "str":
        return ya.astype(str)
    if kind == "bytes":
        return ya.astype(bytes)
    if kind == "bool":
        return ya.astype(bool)
    if kind == "number":
        num = np.array(ya.tolist())
        return num if num.dtype.kind in "iuf" else num.astype(np.float64)
    raise DataError(f"{name}: y holds {kind} labels (e.g. {preview([ya[0]])}); use strings or numbers as labels")


def _labels(y: Any, name: str) -> NDArray:
    y = _unmask(y, "y", name)
    # a list is read element by element: np.array([1, "1", 2]) would already be three strings
    ya = np.array(y, copy=True) if hasattr(y, "dtype") else np.array(y, dtype=object)
    if ya.ndim == 2 and 1 in ya.shape:
        ya = ya.ravel()
    if ya.ndim != 1:
        raise DataError(f"{name}: y must be 1-D (n_samples,), got shape {ya.shape}")
    if ya.dtype.kind == "c":
        raise DataError(f"{name}: y is complex; labels must be integers or strings")
    if ya.dtype.kind == "f" and not np.all(np.isfinite(ya)):
        raise DataError(f"{name}: y contains NaN or inf labels")
    if ya.dtype.kind == "O":
        ya = _object_labels(ya, name)
    return ya


def _check_classes(ya: NDArray, name: str) -> None:
    classes, counts = np.unique(ya, return_counts=True)
    classes = classes.tolist()  # Python scalars: messages show 7.0, not np.float64(7.0)
    if len(classes) < 2:
        raise DataError(
            f"{name}: y has a single class ({classes[0]!r} x {counts[0]}); "
            "feature selection for classification needs at least two classes"
        )
    small = [(c, int(k)) for c, k in zip(classes, counts) if k < MIN_SAMPLES_PER_CLASS]
    if not small:
        return
    if ya.dtype.kind == "f" and not np.all(ya == np.round(ya)):
        raise DataError(
            f"{name}: y looks continuous ({len(classes)} distinct float values in {ya.shape[0]} samples: "
            f"{', '.join(f'{c:.4g}' for c in classes[:5])}, ...); discretise it for a classification "
            "method (e.g. y > np.median(y)), or give it to a least-squares method as a real target "
            "(task='regression', --task regression)"
        )
    if len(small) == 1:
        (c, k), = small
        raise DataError(
            f"{name}: class {c!r} ({k} sample) has fewer than {MIN_SAMPLES_PER_CLASS} samples; drop or merge the class"
        )
    raise DataError(
        f"{name}: {len(small)} of {len(classes)} classes have fewer than {MIN_SAMPLES_PER_CLASS} samples "
        f"({preview([c for c, _ in small])}); drop or merge those classes"
    )


def check_Xy(X: ArrayLike, y: ArrayLike, *, name: str = "data", warn: bool = False,
             classes: bool = True) -> tuple[NDArray, NDArray]:
    """Validate ``X`` (float64, 2-D, finite) and ``y`` (1-D, same length, >= 2 classes, >= 2
    samples per class). Returns a copy of ``y`` and of ``X``, except that a C-contiguous float64
    ``ndarray`` ``X`` comes back as a read-only view of itself (no copy of a large data set;
    nothing in fsframe can write into it); the inputs are never modified. With ``warn``,
    legal but awkward data (constant, duplicate or identifier-like features, classes under 5
    samples) raises a :class:`~fsframe.errors.DataWarning`. ``classes=False`` skips the class
    counts (held-out data to score a model on: one class, or a class of one sample, is fine).

    Nothing is coerced silently: a masked array with masked values, dates, text or other
    non-numbers in ``X``, complex values, and labels of mixed types (``1`` and ``"1"``) are refused.
    A scipy.sparse ``X`` stays sparse: a CSR copy (:func:`sparse_features`), checked and
    diagnosed without densifying.

    Raises
    ------
    DataError
        naming the first problem found (shape, NaN/inf position, class counts, ...).
    """
    if X is None or y is None:
        raise DataError(f"{name}: X and y are required, got X={type(X).__name__}, y={type(y).__name__}")
    Xa = _features(X, name)
    if Xa.ndim == 1:
        raise DataError(
            f"{name}: X must be 2-D (n_samples, n_features), got a 1-D array of length {Xa.shape[0]}; "
            "use X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample"
        )
    if Xa.ndim != 2:
        raise DataError(f"{name}: X must be 2-D (n_samples, n_features), got shape {Xa.shape}")
    if Xa.shape[0] == 0 or Xa.shape[1] == 0:
        raise DataError(f"{name}: X is empty (shape {Xa.shape}); need at least one sample and one feature")
    ya = _labels(y, name)
    if ya.shape[0] != Xa.shape[0]:
        raise DataError(
            f"{name}: X has {Xa.shape[0]} samples but y has {ya.shape[0]} labels; they must match"
        )
    bad = np.zeros(0, dtype=bool) if is_sparse(Xa) else ~np.isfinite(Xa)  # sparse: checked on its entries
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(Xa[i, j]) else "inf"
        raise DataError(
            f"{name}: X contains {int(bad.sum())} non-finite value(s) ({kind} at sample {i}, feature {j}); "
            "impute or drop them before fitting"
        )
    if classes:
        _check_classes(ya, name)
    if warn:
        _warn_awkward(Xa, ya, name)
    return Xa, ya


_TARGET_WARNED: contextvars.ContextVar = contextvars.ContextVar("fsframe_target_warned", default=None)
"""Inside :func:`target_warning_once`: whether this call's data checks gave the two-valued target
warning already (a one-item list); ``None`` outside."""


@contextlib.contextmanager
def target_warning_once(*, given: bool = False) -> Iterator[None]:
    """Within it, :func:`check_regression_Xy` says "the real target holds only two values" once,
    at the first check, however many fits check the same target again (a cross-validation's folds,
    a tuning grid's paths, the refit). ``given``: the caller has warned already (or checked the
    whole target, of which a fold's is a part, or will: the refit), so no check inside warns,
    whatever the enclosing state. Nested uses without ``given`` share the outermost one's state; a
    worker process starts without it (a fold's runner passes ``given``)."""
    if _TARGET_WARNED.get() is not None and not given:
        yield
        return
    token = _TARGET_WARNED.set([given])
    try:
        yield
    finally:
        _TARGET_WARNED.reset(token)


def check_regression_Xy(X: ArrayLike, y: ArrayLike, *, name: str = "data", warn: bool = False) -> tuple[NDArray, NDArray]:
    """:func:`check_Xy` for a regression target: ``y`` real (float64), finite and not constant
    (booleans, strings and other labels are refused). Returns copies (``X`` as :func:`check_Xy`
    does: a read-only view when it is C-contiguous float64); with ``warn``, the
    awkward features are reported as for classification.

    Raises
    ------
    DataError
        naming the first problem found.
    """
    Xa, ya = check_Xy(X, y, name=name, classes=False)
    if ya.dtype.kind not in "iuf":
        raise DataError(f"{name}: a regression target must be real numbers, got y of dtype {ya.dtype} "
                        f"(first values {preview(ya[:3])}); encode labels as numbers or use a classification method")
    ya = ya.astype(np.float64)
    if not np.all(np.isfinite(ya)):
        raise DataError(f"{name}: y contains NaN or inf values; impute or drop those samples")
    if ya.shape[0] < 2 or np.all(ya == ya[0]):
        raise DataError(f"{name}: y is constant ({float(ya[0])!r} in all {ya.shape[0]} samples); nothing to regress on")
    values = np.unique(ya)
    once = _TARGET_WARNED.get()
    if values.size == 2 and not (once is not None and once[0]):
        # legal (a linear probability model), but more often class labels given as a real target
        if once is not None:
            once[0] = True
        warnings.warn(f"{name}: the real target holds only two values ({values[0]:g} and {values[1]:g}); if they "
                      "are class labels, fit a classification method on them (task='classification'; command "
                      "line: without --task regression): least squares regresses on the two codes",
                      DataWarning, stacklevel=3)
    if warn:
        _warn_awkward(Xa, None, name)
    return Xa, ya


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
        constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
        zero = ~X.any(axis=0)
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


def _warn_awkward(X: NDArray, y: NDArray, name: str, feature_names: Sequence[str] | None = None) -> None:
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
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < SMALL_CLASS_WARNING:
        warnings.warn(
            f"{name}: the smallest class has {counts.min()} samples; class statistics "
            "(means, covariances) and cross-validation folds will be unreliable",
            DataWarning,
            stacklevel=4,
        )


TASKS = ("classification", "regression")
"""What a :class:`Dataset`'s ``y`` holds: class labels, or a real target."""


def _check_task(instance, attribute, value) -> None:
    if not isinstance(value, str) or value not in TASKS:
        raise DataError(f"task={value!r}: use 'classification' (class labels) or 'regression' (a real target)")


@attrs.frozen(eq=False)
class Dataset:
    """A labelled dataset — class labels, or a real target (``task="regression"``): immutable
    and validated on construction.

    Parameters
    ----------
    X : array or scipy.sparse matrix, shape (n_samples, n_features)
        Finite float64 features (copied, read-only). A sparse matrix stays sparse (CSR; text
        data, ``load_svmlight``): methods whose formulation is linear in ``X`` fit it without
        densifying, the others refuse it (docs/data.md, "Sparse data").
    y : array, shape (n_samples,)
        Class labels of any hashable dtype (copied, read-only). At least two classes with at
        least two samples each. With ``task="regression"``: a real target, float64, finite
        and not constant (:func:`check_regression_Xy`).
    feature_names : tuple of str, optional
        Defaults to ``("x0", "x1", ...)``.
    name : str
        Used in messages and tables.
    task : {"classification", "regression"}
        What ``y`` holds. A regression data set has no classes (``classes == ()``); the methods
        whose formulation fits a real target (``l1-ls``, ``l0-ls``, ...) take it, the
        classification methods refuse it, and the other way round (docs/glm.md).

    Notes
    -----
    Constant or duplicate features, identifier-like features (a distinct integer in every one
    of at least 20 samples) and classes with fewer than 5 samples are legal; they raise a
    :class:`~fsframe.errors.DataWarning` once, at construction.
    """

    X: NDArray = attrs.field(repr=lambda a: f"array{a.shape}")
    y: NDArray = attrs.field(repr=False)
    feature_names: tuple[str, ...] = attrs.field(default=None)
    name: str = "data"
    source: str | None = attrs.field(default=None, repr=False)
    task: str = attrs.field(default="classification", kw_only=True, validator=_check_task)

    def __attrs_post_init__(self) -> None:
        regression = self.task == "regression"
        X, y = check_regression_Xy(self.X, self.y, name=self.name) if regression else check_Xy(self.X, self.y,
                                                                                                name=self.name)
        names = self.feature_names
        if names is None:
            names = tuple(f"x{j}" for j in range(X.shape[1]))
        else:
            names = tuple(str(s) for s in names)
            if len(names) != X.shape[1]:
                raise DataError(
                    f"{self.name}: {len(names)} feature names for {X.shape[1]} features"
                )
        _warn_awkward(X, None if regression else y, self.name, names)
        object.__setattr__(self, "X", _readonly(X))
        object.__setattr__(self, "y", _readonly(y))
        object.__setattr__(self, "feature_names", names)

    # -- derived values -------------------------------------------------------------------
    @property
    def classes(self) -> tuple:
        """Sorted distinct labels (``()`` for a regression target)."""
        return () if self.is_regression else tuple(np.unique(self.y).tolist())

    @property
    def is_regression(self) -> bool:
        """Whether ``y`` is a real target (``task == "regression"``)."""
        return self.task == "regression"

    @property
    def is_sparse(self) -> bool:
        """Whether ``X`` is a scipy.sparse (CSR) matrix."""
        return is_sparse(self.X)

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def class_counts(self) -> dict:
        """Samples per class (``{}`` for a regression target)."""
        if self.is_regression:
            return {}
        c, k = np.unique(self.y, return_counts=True)
        return {ci: int(ki) for ci, ki in zip(c.tolist(), k.tolist())}

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, X: ArrayLike, y: ArrayLike, *, feature_names=None, name: str = "data",
                    task: str = "classification") -> "Dataset":
        """Build from arrays (copied)."""
        return cls(X=X, y=y, feature_names=feature_names, name=name, task=task)

    def __repr__(self) -> str:
        if self.is_regression:
            return (f"Dataset({self.name!r}, {self.n_samples} x {self.n_features}, real target "
                    f"[{float(np.min(self.y)):.4g}, {float(np.max(self.y)):.4g}])")
        items = list(self.class_counts.items())
        counts = ", ".join(f"{k}: {v}" for k, v in items[:10])
        if len(items) > 10:
            counts += f", ... ({len(items) - 10} more)"
        return f"Dataset({self.name!r}, {self.n_samples} x {self.n_features}, classes {{{counts}}})"
