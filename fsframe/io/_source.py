"""What every loader shares: refusing files that are not regular files, reading a bounded number
of bytes (through ``.gz``/``.bz2``), checking loader options, and locating columns."""

from __future__ import annotations

import bz2
import gzip
import os
import stat
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from ..dataset import preview
from ..errors import DataFileError, InvalidOptionError

MAX_FILE_BYTES = 1 << 30
"""The most bytes a loader reads from one file (after decompression): 1 GiB. fsframe works on
dense in-memory matrices; a larger text file is beyond what its solvers can use, and a bound keeps
a wrong path (a device, a decompression bomb) from exhausting memory."""

_LABEL_NAMES = ("target", "class", "label", "labels", "y")


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return what
    return "not a regular file"


def human_bytes(n: float) -> str:
    """``n`` bytes as ``"240 MB"`` (powers of 1000, three significant digits)."""
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:.3g} {unit}" if unit != "bytes" else f"{int(n)} bytes"
        n /= 1000
    raise AssertionError("unreachable")


def check_source(path: str | os.PathLike) -> Path:
    """``path`` as a :class:`~pathlib.Path` to an existing regular file of at most
    :data:`MAX_FILE_BYTES`, checked before anything is opened: a FIFO would block the reader
    forever and a device (``/dev/zero``) would be read until memory runs out.

    Raises
    ------
    DataFileError
        naming the file and what it is.
    """
    path = Path(path)
    try:
        st = os.stat(path)  # follows symlinks: a link to /dev/zero is a character device
    except FileNotFoundError:
        raise DataFileError(f"data file not found: {path}") from None
    except OSError as exc:
        raise DataFileError(f"cannot open {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        target = os.path.realpath(path)
        via = f" (a link to {target})" if target != os.path.abspath(path) else ""
        raise DataFileError(f"{path}{via} is {_kind(st.st_mode)}, not a regular file; fsframe reads data only "
                            "from regular files: copy the data into one first")
    if st.st_size > MAX_FILE_BYTES:
        raise DataFileError(f"{path}: {human_bytes(st.st_size)}, more than the {human_bytes(MAX_FILE_BYTES)} a "
                            "loader reads; fsframe works on dense in-memory data: select samples or features first")
    return path


def read_bytes(path: Path) -> bytes:
    """The content of a checked file, decompressed for ``.gz``/``.bz2``, at most
    :data:`MAX_FILE_BYTES` (a decompression bomb is refused, not read to the end)."""
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(path.suffix, open)
    try:
        with opener(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise DataFileError(f"{path}: not a readable {path.suffix.lstrip('.') or 'data'} file ({exc})") from exc
    if len(data) > MAX_FILE_BYTES:
        raise DataFileError(f"{path}: decompresses to more than the {human_bytes(MAX_FILE_BYTES)} a loader reads")
    return data


def read_text(path: Path) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a byte-order mark is dropped; line ends are kept)."""
    try:
        return read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFileError(f"{path}: not a readable text file ({exc})") from exc


# ----------------------------------------------------------------------------- options
def check_option(name: str, value: Any, types: tuple[type, ...], what: str, *, none: bool = True) -> None:
    """Refuse a loader option of the wrong type (``bool`` is not an ``int`` here)."""
    if value is None and none:
        return
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise InvalidOptionError(f"loader option {name}={value!r}: must be {what}")


def check_task(task: Any) -> None:
    """``task`` is ``"classification"`` (the label column holds classes) or ``"regression"`` (a
    real target)."""
    if not isinstance(task, str) or task not in ("classification", "regression"):
        raise InvalidOptionError(f"loader option task={task!r}: must be 'classification' or 'regression'")


def check_columns(name: str, value: Any) -> None:
    """A column spec (int or str) or, for ``drop_columns``, a sequence of them."""
    check_option(name, value, (list, tuple, range, np.ndarray), "a list of column indices or names, e.g. [0]",
                 none=False)
    for c in value:
        check_option(name, c, (int, np.integer, str), "a list of column indices or names, e.g. [0]", none=False)


def check_delimiter(delimiter: Any) -> None:
    """The csv module takes a one-character delimiter other than a quote or a line end."""
    check_option("delimiter", delimiter, (str,), "a one-character string such as ',', ';' or '\\t'")
    if delimiter is not None and (len(delimiter) != 1 or delimiter in "\"\r\n"):
        raise InvalidOptionError(
            f"loader option delimiter={delimiter!r}: must be one character other than a quote or a line end, "
            "such as ',', ';', '\\t' or ' ' (fields separated by runs of spaces: delimiter=' ')"
        )


# ----------------------------------------------------------------------------- columns
def is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def position(spec: int | str | None, n_cols: int) -> int | str | None:
    """A column given by index (an int or a numeric string) as a position in ``[0, n_cols)``;
    ``"name"`` for a column given by header name; ``None`` when unset or out of range."""
    if spec is None:
        return None
    if isinstance(spec, (int, np.integer)) or (isinstance(spec, str) and spec.strip().lstrip("-").isdigit()):
        idx = int(spec)
        return idx % n_cols if -n_cols <= idx < n_cols else None
    return "name"


def resolve_column(spec: int | str | None, header: list[str] | None, n_cols: int, path: Path,
                   role: str = "label column") -> int:
    """The position of a label or drop column; the default label is a header column named
    target/class/label/labels/y, else the last column."""
    if spec is None:
        if header is not None:
            lowered = [h.strip().lower() for h in header]
            for cand in _LABEL_NAMES:
                if cand in lowered:
                    return lowered.index(cand)
        return n_cols - 1
    pos = position(spec, n_cols)
    if pos == "name":
        if header is None or spec not in header:
            raise DataFileError(
                f"{path}: {role} {spec!r} not found"
                + (f"; columns are [{preview(header, k=10)}]" if header else " (the file has no header row)")
            )
        return header.index(spec)
    if pos is None:
        raise DataFileError(f"{path}: {role} {int(spec)} out of range for {n_cols} columns")
    return pos
