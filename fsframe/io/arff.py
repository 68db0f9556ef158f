"""Weka ARFF files with numeric features and a nominal (or numeric) class attribute."""

from __future__ import annotations

import io
import os

import numpy as np

from ..dataset import Dataset, preview
from ..errors import DataError, DataFileError
from ._source import check_option, check_source, check_task, read_text, resolve_column

__all__ = ["load_arff"]


def load_arff(path: str | os.PathLike, *, label_column: str | int | None = None, name: str | None = None,
              task: str = "classification") -> Dataset:
    """Read a Weka ARFF file with numeric features and a nominal (or numeric) class attribute.
    The label is ``label_column``, else an attribute named class/target/label, else the last;
    ``task="regression"`` reads a numeric one as a real target."""
    from scipy.io import arff

    check_option("label_column", label_column, (int, np.integer, str), "an attribute index or name")
    check_option("name", name, (str,), "a string")
    check_task(task)
    path = check_source(path)
    text = read_text(path)
    try:
        data, meta = arff.loadarff(io.StringIO(text))
    except (ValueError, NotImplementedError, arff.ParseArffError, StopIteration, IndexError, KeyError) as exc:
        raise DataFileError(f"{path}: not a readable ARFF file ({type(exc).__name__}: "
                            f"{str(exc) or 'no @relation/@attribute/@data header'})") from exc
    names = list(meta.names())
    lab = resolve_column(label_column, names, len(names), path)
    feats = [n for j, n in enumerate(names) if j != lab]
    nonnum = [n for n in feats if meta[n][0] != "numeric"]
    if nonnum:
        raise DataFileError(f"{path}: non-numeric attributes [{preview(nonnum)}]; only the class may be nominal")
    X = np.column_stack([data[n].astype(np.float64) for n in feats]) if feats else np.empty((len(data), 0))
    y = data[names[lab]]
    if y.dtype.kind == "S":
        y = np.char.decode(y, "utf-8")
        gone = np.char.strip(y) == "?"
        if gone.any():
            raise DataError(f"{path}: {int(gone.sum())} missing class value(s) '?' (first at data row "
                            f"{int(np.argmax(gone)) + 1}); drop those samples before loading")
    return Dataset(X=X, y=y, feature_names=feats, name=name or path.stem, source=str(path), task=task)
