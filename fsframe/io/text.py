"""Delimited text files: CSV, TSV, UCI ``.data`` (optionally gzip- or bzip2-compressed)."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..dataset import Dataset, preview
from ..errors import DataError, DataFileError
from ._source import (
    check_columns,
    check_delimiter,
    check_option,
    check_task,
    check_source,
    is_number,
    position,
    read_text,
    resolve_column,
)

__all__ = ["load_csv"]

_HEADER_PROBE_ROWS = 100
"""Rows below the first compared with it to decide whether it is a header."""


def _has_header(rows: list[list[str]], skip: set[int], missing: Sequence[str]) -> bool:
    """A first row is a header when one of its fields is text above a column that holds numbers
    (outside the label and dropped columns, which may hold text: class names, sample ids). A
    column of text in every row (an unnamed label column) is no evidence of a header."""
    first, below = rows[0], rows[1:_HEADER_PROBE_ROWS + 1]
    for j, f in enumerate(first):
        if j in skip or f in missing or is_number(f):
            continue
        if not below or any(is_number(r[j]) for r in below):
            return True
    return False


def _text_column_error(path: Path, arr: np.ndarray, feat: list[int], lab: int,
                       names: list[str] | None) -> DataFileError:
    """The error for a non-numeric feature: where it is and, for a column of text in every row
    with few distinct values (an unnamed label column), how to make it the label."""
    j = next((c for c in feat if not all(is_number(v) for v in arr[:, c])), None)
    if j is None:  # numpy parses more strictly than float(): no column to point at
        return DataFileError(f"{path}: a feature value is not a number numpy can parse; check the file's number format")
    col = arr[:, j].astype(str)
    i = next(r for r, v in enumerate(col) if not is_number(v))
    where = f"column {j}" + (f" ({names[j]!r})" if names else "")
    distinct = sorted(set(np.char.strip(col).tolist()))
    if not any(is_number(v) for v in col) and len(distinct) <= max(2, len(col) // 2):
        hint = (f"{where} holds text in every row ({len(distinct)} distinct values: {preview(distinct)}) and "
                f"labels are read from column {lab} now: if {where} holds the labels, pass label_column={j} "
                f"(command line: --label-column {j}); otherwise encode it as numbers or drop it with "
                f"drop_columns=[{j}] (--drop-columns {j})")
    else:
        hint = f"encode categorical columns as numbers or drop them with drop_columns=[{j}] (--drop-columns {j})"
    return DataFileError(f"{path}: non-numeric feature value {col[i].strip()!r} (data row {i + 1}, {where}); {hint}")


def _labels(labels: np.ndarray) -> np.ndarray:
    """Label text as integers when every label is an integral number, as floats when every label
    is a finite number, else as strings."""
    if not all(is_number(v) for v in labels):
        return labels
    num = labels.astype(np.float64)
    if not np.all(np.isfinite(num)):
        return num  # check_Xy names the NaN/inf labels
    return num.astype(np.int64) if np.all(num == np.round(num)) else num


def load_csv(
    path: str | os.PathLike,
    *,
    label_column: int | str | None = None,
    drop_columns: Sequence[int | str] = (),
    delimiter: str | None = None,
    header: bool | None = None,
    missing: Sequence[str] = ("?", "", "NA", "nan", "NaN"),
    name: str | None = None,
    task: str = "classification",
) -> Dataset:
    """Read a delimited text file (``.csv``, ``.tsv``, ``.data``, ``.txt``, optionally ``.gz``).

    Parameters
    ----------
    label_column : int or str, optional
        Index (negative counts from the end) or header name of the label column. Default: a
        header column named target/class/label/y, else the last column.
    drop_columns : sequence of int or str
        Columns to ignore (e.g. an id column: ``drop_columns=[0]`` for UCI ``wdbc.data``).
    delimiter : str, optional
        One character. Default: tab for ``.tsv``/``.tsv.gz``, otherwise sniffed among
        ``, ; \\t`` and space.
    header : bool, optional
        Default: detected (a first row with text above a column of numbers is a header).
    missing : sequence of str
        Field values read as missing. Missing feature values are an error (impute first).
    task : {"classification", "regression"}
        What the label column holds: class labels, or a real target (never guessed from the
        values: docs/data.md, "Regression targets").

    Raises
    ------
    DataFileError
        the file is missing, not a regular file, too large, not text, ragged, or has text in a
        feature column (naming the column, and suggesting ``label_column`` when it looks like one).
    DataError
        missing values, or data :class:`~fsframe.dataset.Dataset` refuses.
    InvalidOptionError
        an option of the wrong type or value (``delimiter=';;'``, ``missing='NA'``).
    """
    check_option("label_column", label_column, (int, np.integer, str), "a column index or header name")
    check_columns("drop_columns", drop_columns)
    check_delimiter(delimiter)
    check_option("header", header, (bool,), "True, False or None (detect)")
    check_option("missing", missing, (list, tuple, set, frozenset), "a list of strings, e.g. ['?', 'NA']", none=False)
    check_option("name", name, (str,), "a string")
    check_task(task)
    path = check_source(path)
    text = read_text(path)
    if not text.strip():
        raise DataFileError(f"{path}: the file is empty")
    if delimiter is None:
        stem = path.name.rsplit(".", 1)[0] if path.suffix in (".gz", ".bz2") else path.name
        if stem.endswith(".tsv"):
            delimiter = "\t"
        else:
            try:
                delimiter = csv.Sniffer().sniff(text[:4096], delimiters=",;\t ").delimiter
            except csv.Error:
                delimiter = ","
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True) if r]
    if delimiter == " ":
        rows = [[f for f in r if f != ""] for r in rows]
    width = len(rows[0])
    ragged = [i for i, r in enumerate(rows) if len(r) != width]
    if ragged:
        raise DataFileError(
            f"{path}: row {ragged[0] + 1} has {len(rows[ragged[0]])} fields, expected {width} "
            f"(delimiter {delimiter!r}); pass delimiter= if it was guessed wrongly"
        )
    first = rows[0]
    if header is None:
        # a column given by name needs a header
        positions = [position(c, width) for c in (label_column, *drop_columns)]
        if "name" in positions:
            header = True
        else:
            skip = {width - 1 if label_column is None else positions[0], *positions[1:]}
            header = _has_header(rows, skip, missing)
    names = [f.strip() for f in first] if header else None
    body = rows[1:] if header else rows
    if not body:
        raise DataFileError(f"{path}: no data rows")
    lab = resolve_column(label_column, names, width, path)
    drop = {resolve_column(c, names, width, path, role="drop column") for c in drop_columns}
    if lab in drop:
        raise DataFileError(f"{path}: the label column {lab} is also listed in drop_columns")
    feat = [j for j in range(width) if j != lab and j not in drop]
    arr = np.array(body, dtype=object)
    labels = arr[:, lab].astype(str)
    labels = np.char.strip(labels)
    gone = np.isin(labels, list(missing))
    if gone.any():
        raise DataError(f"{path}: {int(gone.sum())} missing label(s) (first at data row {int(np.argmax(gone)) + 1}: "
                        f"{str(labels[np.argmax(gone)])!r}); drop those samples before loading")
    raw = arr[:, feat].astype(str)
    miss = np.isin(np.char.strip(raw), list(missing))
    if miss.any():
        i, j = np.argwhere(miss)[0]
        raise DataError(
            f"{path}: {int(miss.sum())} missing feature value(s) (first at data row {i + 1}, "
            f"column {feat[j]}: {str(raw[i, j])!r}); impute or drop them before loading"
        )
    try:
        X = raw.astype(np.float64)
    except ValueError as exc:
        raise _text_column_error(path, arr, feat, lab, names) from exc
    fnames = [names[j] for j in feat] if names else None
    return Dataset(X=X, y=_labels(labels), feature_names=fnames, name=name or path.name.split(".")[0],
                   source=str(path), task=task)
