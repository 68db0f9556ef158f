"""The immutable, validated :class:`Dataset` every fit starts from."""

from __future__ import annotations

import warnings
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import DataError, DataWarning

__all__ = ["Dataset", "check_Xy", "data_diagnostics"]

MIN_SAMPLES_PER_CLASS = 2
"""A class needs two samples: one to train on and one to estimate any spread from."""
SMALL_CLASS_WARNING = 5


def _readonly(a: NDArray) -> NDArray:
    a = np.array(a, copy=True)
    a.flags.writeable = False
    return a


def check_Xy(X: ArrayLike, y: ArrayLike, *, name: str = "data", warn: bool = False) -> tuple[NDArray, NDArray]:
    """Validate and copy ``X`` (float64, 2-D, finite) and ``y`` (1-D, same length, >= 2 classes,
    >= 2 samples per class). Returns fresh copies; the inputs are never modified. With ``warn``,
    legal but awkward data (constant or duplicate features, classes under 5 samples) raises a
    :class:`~fsframe.errors.DataWarning`.

    Raises
    ------
    DataError
        naming the first problem found (shape, NaN/inf position, class counts, ...).
    """
    if X is None or y is None:
        raise DataError(f"{name}: X and y are required, got X={type(X).__name__}, y={type(y).__name__}")
    if np.iscomplexobj(X):
        raise DataError(f"{name}: X is complex; fsframe needs real features (split real and imaginary parts "
                        "into columns if both matter)")
    try:
        Xa = np.array(X, dtype=np.float64, copy=True)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name}: X is not numeric ({exc}); encode categorical features first") from exc
    if Xa.ndim == 1:
        raise DataError(
            f"{name}: X must be 2-D (n_samples, n_features), got a 1-D array of length {Xa.shape[0]}; "
            "use X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample"
        )
    if Xa.ndim != 2:
        raise DataError(f"{name}: X must be 2-D (n_samples, n_features), got shape {Xa.shape}")
    if Xa.shape[0] == 0 or Xa.shape[1] == 0:
        raise DataError(f"{name}: X is empty (shape {Xa.shape}); need at least one sample and one feature")
    ya = np.array(y, copy=True)
    if ya.ndim == 2 and 1 in ya.shape:
        ya = ya.ravel()
    if ya.ndim != 1:
        raise DataError(f"{name}: y must be 1-D (n_samples,), got shape {ya.shape}")
    if ya.shape[0] != Xa.shape[0]:
        raise DataError(
            f"{name}: X has {Xa.shape[0]} samples but y has {ya.shape[0]} labels; they must match"
        )
    bad = ~np.isfinite(Xa)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        kind = "NaN" if np.isnan(Xa[i, j]) else "inf"
        raise DataError(
            f"{name}: X contains {int(bad.sum())} non-finite value(s) ({kind} at sample {i}, feature {j}); "
            "impute or drop them before fitting"
        )
    if ya.dtype.kind == "f" and not np.all(np.isfinite(ya)):
        raise DataError(f"{name}: y contains NaN or inf labels")
    if ya.dtype.kind == "O":
        gone = [i for i, v in enumerate(ya) if v is None or (isinstance(v, (float, np.floating)) and not np.isfinite(v))]
        if gone:
            raise DataError(f"{name}: y contains {len(gone)} missing (None/NaN/inf) label(s), first at sample {gone[0]}")
        ya = ya.astype(str)
    classes, counts = np.unique(ya, return_counts=True)
    classes = classes.tolist()  # Python scalars: messages show 7.0, not np.float64(7.0)
    if len(classes) < 2:
        raise DataError(
            f"{name}: y has a single class ({classes[0]!r} x {counts[0]}); "
            "feature selection for classification needs at least two classes"
        )
    small = [(c, int(k)) for c, k in zip(classes, counts) if k < MIN_SAMPLES_PER_CLASS]
    if small:
        desc = ", ".join(f"{c!r} ({k} sample)" for c, k in small)
        raise DataError(
            f"{name}: class {desc} has fewer than {MIN_SAMPLES_PER_CLASS} samples; "
            "drop or merge the class"
        )
    if warn:
        _warn_awkward(Xa, ya, name)
    return Xa, ya


def data_diagnostics(X: NDArray) -> dict[str, Any]:
    """Constant and duplicate columns of ``X`` (indices), computed in bulk."""
    constant = np.flatnonzero(np.ptp(X, axis=0) == 0)
    # duplicates: hash columns through a random projection, confirm exactly
    rng = np.random.default_rng(0)
    key = X.T @ rng.standard_normal(X.shape[0])
    order = np.argsort(key, kind="stable")
    # BLAS may sum identical columns in a different order (by position): equal columns get keys
    # that differ in the last bits, so candidates are keys within a tolerance, confirmed exactly
    tol = 1e-9 * max(1.0, float(np.max(np.abs(key), initial=0.0)))
    dup: list[tuple[int, int]] = []
    for i, a in enumerate(order[:-1]):
        for b in order[i + 1:]:
            if key[b] - key[a] > tol:
                break
            if np.array_equal(X[:, a], X[:, b]):
                dup.append((int(min(a, b)), int(max(a, b))))
                break
    return {"constant": constant.tolist(), "duplicate_pairs": sorted(dup)}


def _warn_awkward(X: NDArray, y: NDArray, name: str) -> None:
    diag = data_diagnostics(X)
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
            f"{diag['duplicate_pairs'][:5]}: sparse methods keep an arbitrary one of each pair, "
            "so the selected index may change between solvers",
            DataWarning,
            stacklevel=4,
        )
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < SMALL_CLASS_WARNING:
        warnings.warn(
            f"{name}: the smallest class has {counts.min()} samples; class statistics "
            "(means, covariances) and cross-validation folds will be unreliable",
            DataWarning,
            stacklevel=4,
        )


@attrs.frozen(eq=False)
class Dataset:
    """A labelled classification dataset: immutable and validated on construction.

    Parameters
    ----------
    X : array, shape (n_samples, n_features)
        Finite float64 features (copied, read-only).
    y : array, shape (n_samples,)
        Class labels of any hashable dtype (copied, read-only). At least two classes with at
        least two samples each.
    feature_names : tuple of str, optional
        Defaults to ``("x0", "x1", ...)``.
    name : str
        Used in messages and tables.

    Notes
    -----
    Constant or duplicate features and classes with fewer than 5 samples are legal; they
    raise a :class:`~fsframe.errors.DataWarning` once, at construction.
    """

    X: NDArray = attrs.field(repr=lambda a: f"array{a.shape}")
    y: NDArray = attrs.field(repr=False)
    feature_names: tuple[str, ...] = attrs.field(default=None)
    name: str = "data"
    source: str | None = attrs.field(default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        X, y = check_Xy(self.X, self.y, name=self.name, warn=True)
        names = self.feature_names
        if names is None:
            names = tuple(f"x{j}" for j in range(X.shape[1]))
        else:
            names = tuple(str(s) for s in names)
            if len(names) != X.shape[1]:
                raise DataError(
                    f"{self.name}: {len(names)} feature names for {X.shape[1]} features"
                )
        object.__setattr__(self, "X", _readonly(X))
        object.__setattr__(self, "y", _readonly(y))
        object.__setattr__(self, "feature_names", names)

    # -- derived values -------------------------------------------------------------------
    @property
    def classes(self) -> tuple:
        """Sorted distinct labels."""
        return tuple(np.unique(self.y).tolist())

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def class_counts(self) -> dict:
        c, k = np.unique(self.y, return_counts=True)
        return {ci: int(ki) for ci, ki in zip(c.tolist(), k.tolist())}

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, X: ArrayLike, y: ArrayLike, *, feature_names=None, name: str = "data") -> "Dataset":
        """Build from arrays (copied)."""
        return cls(X=X, y=y, feature_names=feature_names, name=name)

    def subset(self, rows: ArrayLike | None = None, features: ArrayLike | None = None) -> "Dataset":
        """A new dataset with the given sample rows and/or feature columns (index or bool mask)."""
        X, y, names = self.X, self.y, np.asarray(self.feature_names, dtype=object)
        if rows is not None:
            X, y = X[rows], y[rows]
        if features is not None:
            X, names = X[:, features], names[features]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            return Dataset(X=X, y=y, feature_names=tuple(names), name=self.name, source=self.source)

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}: {v}" for k, v in self.class_counts.items())
        return f"Dataset({self.name!r}, {self.n_samples} x {self.n_features}, classes {{{counts}}})"
