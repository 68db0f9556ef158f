"""The checks of a data set's parts, one at a time, that :func:`fsframe.dataset.check_Xy` composes:
``X`` as float64 (dense, or CSR for a scipy.sparse ``X``) refusing what a cast would misread (masks,
dates, text, other non-numbers, complex values), labels of one kind, and the class counts. Also the
two helpers every message and every sparse branch of fsframe use: :func:`preview` and
:func:`is_sparse`."""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import DataError

__all__ = ["check_no_silent_cast", "is_sparse", "preview", "sparse_features"]

MIN_SAMPLES_PER_CLASS = 2
"""A class needs two samples: one to train on and one to estimate any spread from."""


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


def _check_classes(ya: NDArray, name: str) -> NDArray:
    """Refuse ``ya`` with one class or a class under :data:`MIN_SAMPLES_PER_CLASS` samples; returns
    the class counts (``np.unique``'s order), which the data's diagnostics read again."""
    classes, counts = np.unique(ya, return_counts=True)
    classes = classes.tolist()  # Python scalars: messages show 7.0, not np.float64(7.0)
    if len(classes) < 2:
        raise DataError(
            f"{name}: y has a single class ({classes[0]!r} x {counts[0]}); "
            "feature selection for classification needs at least two classes"
        )
    small = [(c, int(k)) for c, k in zip(classes, counts) if k < MIN_SAMPLES_PER_CLASS]
    if not small:
        return counts
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
