"""LIBSVM/svmlight files (``label index:value ...``), read into a sparse (CSR) dataset; a width
implausible for the indices used (a typo such as ``1000000:0.5``) is refused."""

from __future__ import annotations

import io
import os
import re

import numpy as np

from ..dataset import Dataset
from ..errors import DataFileError, InvalidOptionError
from ._source import check_option, check_source, check_task, human_bytes, read_bytes

__all__ = ["load_svmlight", "MAX_EMPTY_COLUMN_RATIO"]

MAX_EMPTY_COLUMN_RATIO = 100
"""Without an explicit ``n_features``, a file whose width (largest index) exceeds both 10 000 and
this many times the number of distinct indices it uses is refused as implausible: almost every
column would be zero (a typo such as ``1000000:0.5``)."""

_INDEX = re.compile(rb"(\d+):")


def _huge_index(data: bytes) -> str:
    for k, line in enumerate(data.splitlines(), start=1):
        for m in _INDEX.finditer(line):
            if int(m.group(1)) >= 2**31 - 1:
                return f" (index {int(m.group(1))} on line {k})"
    return ""


def load_svmlight(path: str | os.PathLike, *, n_features: int | None = None, name: str | None = None,
                  task: str = "classification") -> Dataset:
    """Read a LIBSVM/svmlight file (``label idx:value ...``, optionally ``.gz``/``.bz2``) into a
    dataset whose ``X`` is a CSR matrix: memory proportional to the stored entries, whatever the
    width. Methods linear in ``X`` fit it as it is; the others refuse it with a
    :class:`~fsframe.errors.SparseInputError` (densify with ``Dataset(X=ds.X.toarray(), ...)``
    when it fits).

    Parameters
    ----------
    n_features : int, optional
        The number of features (at least the largest index). Default: the largest index in the
        file, refused when implausible (see :data:`MAX_EMPTY_COLUMN_RATIO`); give it to read a
        file whose width is real.
    task : {"classification", "regression"}
        What the first field of each line holds: a class label, or a real target.

    Raises
    ------
    DataFileError
        not a svmlight file; an index beyond 2**31; an implausible width.
    """
    from sklearn.datasets import load_svmlight_file

    check_option("n_features", n_features, (int, np.integer), "a positive integer")
    if n_features is not None and n_features < 1:
        raise InvalidOptionError(f"loader option n_features={n_features!r}: must be a positive integer")
    check_option("name", name, (str,), "a string")
    check_task(task)
    path = check_source(path)
    data = read_bytes(path)
    try:
        X, y = load_svmlight_file(io.BytesIO(data), n_features=None if n_features is None else int(n_features))
    except OverflowError as exc:
        raise DataFileError(f"{path}: a feature index does not fit a 32-bit integer{_huge_index(data)}; "
                            "the file is corrupt or not a svmlight file") from exc
    except (ValueError, UnicodeDecodeError, MemoryError) as exc:
        raise DataFileError(f"{path}: not a valid LIBSVM/svmlight file ({exc})") from exc
    m, n = X.shape
    used = np.unique(X.indices).size
    if n_features is None and n > 10_000 and n > MAX_EMPTY_COLUMN_RATIO * used:
        raise DataFileError(
            f"{path}: the largest feature index makes {n} features, but only {used} distinct indices occur; "
            f"almost every column of the {m} x {n} matrix would be empty (its dense form {human_bytes(8.0 * m * n)}). "
            f"If the width is real, pass n_features={n} (command line: --loader-opt n_features={n})"
        )
    y = y.astype(np.int64) if np.all(np.isfinite(y)) and np.all(y == np.round(y)) else y
    return Dataset(X=X, y=y, name=name or path.stem, source=str(path), task=task)
