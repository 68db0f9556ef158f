"""MATLAB v4–v7.2 ``.mat`` files holding a sample matrix and a label vector."""

from __future__ import annotations

import os

import numpy as np

from ..dataset import Dataset, is_sparse, preview
from ..errors import DataFileError
from ._source import check_option, check_source, check_task

__all__ = ["load_mat"]


def load_mat(path: str | os.PathLike, *, x_key: str | None = None, y_key: str | None = None,
             name: str | None = None, task: str = "classification") -> Dataset:
    """Read a MATLAB v4–v7.2 ``.mat`` file holding a sample matrix and a label vector (keys
    ``X``/``Y`` by default, matched case-insensitively, as in the ASU feature-selection repository;
    ``task="regression"``: the label vector is a real target).
    A MATLAB sparse feature matrix is kept sparse (CSR).

    Raises
    ------
    DataFileError
        not a readable ``.mat`` file (v7.3/HDF5 is named as such), no feature or label variable,
        or one that is not real numbers (complex, char, cell or struct arrays are refused, never
        cast).
    """
    import scipy.io

    for key, value in (("x_key", x_key), ("y_key", y_key), ("name", name)):
        check_option(key, value, (str,), "a string")
    check_task(task)
    path = check_source(path)
    try:
        content = scipy.io.loadmat(str(path))
    except NotImplementedError as exc:
        raise DataFileError(
            f"{path}: MATLAB v7.3 (HDF5) files are not supported; re-save it in MATLAB with "
            "save(..., '-v7')"
        ) from exc
    except (ValueError, OSError, TypeError, IndexError, KeyError, EOFError, MemoryError,
            scipy.io.matlab.MatReadError) as exc:
        raise DataFileError(f"{path}: not a readable MATLAB .mat file ({type(exc).__name__}: {exc})") from exc
    keys = {k.lower(): k for k in content if not k.startswith("__")}
    held = preview(sorted(keys.values()), k=10)

    def pick(explicit, candidates, what):
        if explicit is not None:
            if explicit not in content:
                raise DataFileError(f"{path}: no variable {explicit!r}; it holds [{held}]")
            return content[explicit]
        for c in candidates:
            if c in keys:
                return content[keys[c]]
        raise DataFileError(
            f"{path}: no {what} variable (looked for {candidates}); it holds [{held}]; "
            f"pass {'x_key' if what == 'feature' else 'y_key'}="
        )

    X = pick(x_key, ("x", "data", "fea", "features"), "feature")
    y = pick(y_key, ("y", "label", "labels", "gnd", "target"), "label")
    sparse = is_sparse(X)  # a MATLAB sparse matrix stays sparse (docs/data.md, "Sparse data")
    if is_sparse(y):
        y = y.toarray()
    if np.iscomplexobj(X) or np.iscomplexobj(y):
        which = "feature" if np.iscomplexobj(X) else "label"
        raise DataFileError(f"{path}: the {which} variable is complex; fsframe needs real numbers (store the real "
                            "and imaginary parts as separate features if both matter)")
    if getattr(X, "dtype", np.dtype(object)).kind in "USV":
        raise DataFileError(f"{path}: the feature variable is a char array, not a numeric matrix")
    try:
        X = X.astype(np.float64) if sparse else np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFileError(f"{path}: the feature variable is not a numeric matrix "
                            f"(MATLAB class {getattr(X, 'dtype', type(X))}: {exc})") from exc
    y = np.asarray(y).ravel()
    if y.dtype.kind == "O":
        raise DataFileError(f"{path}: the label variable is a cell or struct array; store numeric labels")
    if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    return Dataset(X=X, y=y, name=name or path.stem, source=str(path), task=task)
