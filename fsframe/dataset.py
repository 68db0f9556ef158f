"""The immutable, validated :class:`Dataset` every fit starts from, and the checks that make its
arrays: :func:`check_Xy` (class labels) and :func:`check_regression_Xy` (a real target). The checks
of each part live in :mod:`fsframe.data_checks`, the warnings of awkward data in
:mod:`fsframe.data_diagnostics`; every name of their ``__all__`` is importable from here too."""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from typing import Iterator

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

# re-exported: every name of the two modules' __all__ stays importable from fsframe.dataset
from .data_checks import (MIN_SAMPLES_PER_CLASS, _check_classes, _features, _labels, check_no_silent_cast,
                          is_sparse, preview, sparse_features)
from .data_diagnostics import (MIN_SAMPLES_FOR_IDENTIFIER, SMALL_CLASS_WARNING, _warn_awkward, data_diagnostics,
                               identifier_columns)
from .errors import DataError, DataWarning

__all__ = ["Dataset", "TASKS", "check_Xy", "check_regression_Xy", "check_no_silent_cast", "data_diagnostics",
           "identifier_columns", "is_sparse", "sparse_features"]


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
    counts = _check_classes(ya, name) if classes else None
    if warn:
        _warn_awkward(Xa, ya, name, counts=counts)  # the class counts checked above, not counted again
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
