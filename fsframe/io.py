"""Dataset loaders: CSV/TSV, LIBSVM/svmlight, ARFF, MATLAB ``.mat``, scikit-learn's bundled
datasets and the synthetic generator of paper 000 §4.2.

Every loader returns a validated :class:`~fsframe.dataset.Dataset`; every failure to read is a
:class:`~fsframe.errors.DataFileError` naming the file and what was wrong with it.
"""

from __future__ import annotations

import csv
import gzip
import inspect
import io
import os
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from .dataset import Dataset
from .errors import DataError, DataFileError

__all__ = [
    "load_dataset",
    "load_csv",
    "load_svmlight",
    "load_arff",
    "load_mat",
    "load_bundled",
    "make_synthetic",
    "BUNDLED",
]

_LABEL_NAMES = ("target", "class", "label", "labels", "y")


# ----------------------------------------------------------------------------- helpers
def _open_text(path: Path):
    try:
        if path.suffix == ".gz":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
        return open(path, encoding="utf-8", newline="")
    except OSError as exc:
        raise DataFileError(f"cannot open {path}: {exc.strerror or exc}") from exc


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _position(spec: int | str | None, n_cols: int) -> int | str | None:
    """A column given by index (an int or a numeric string) as a position in ``[0, n_cols)``;
    ``"name"`` for a column given by header name; ``None`` when unset or out of range."""
    if spec is None:
        return None
    if isinstance(spec, (int, np.integer)) or (isinstance(spec, str) and spec.strip().lstrip("-").isdigit()):
        idx = int(spec)
        return idx % n_cols if -n_cols <= idx < n_cols else None
    return "name"


def _resolve_column(spec: int | str | None, header: list[str] | None, n_cols: int, path: Path,
                    role: str = "label column") -> int:
    if spec is None:
        if header is not None:
            lowered = [h.strip().lower() for h in header]
            for cand in _LABEL_NAMES:
                if cand in lowered:
                    return lowered.index(cand)
        return n_cols - 1
    pos = _position(spec, n_cols)
    if pos == "name":
        if header is None or spec not in header:
            raise DataFileError(
                f"{path}: {role} {spec!r} not found"
                + (f"; columns are {header[:20]}" if header else " (the file has no header row)")
            )
        return header.index(spec)
    if pos is None:
        raise DataFileError(f"{path}: {role} {int(spec)} out of range for {n_cols} columns")
    return pos


# ----------------------------------------------------------------------------- CSV / TSV
def load_csv(
    path: str | os.PathLike,
    *,
    label_column: int | str | None = None,
    drop_columns: Sequence[int | str] = (),
    delimiter: str | None = None,
    header: bool | None = None,
    missing: Sequence[str] = ("?", "", "NA", "nan", "NaN"),
    name: str | None = None,
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
        Default: tab for ``.tsv``/``.tsv.gz``, otherwise sniffed among ``, ; \\t`` and space.
    header : bool, optional
        Default: detected (a first row with a non-numeric feature field is a header).
    missing : sequence of str
        Field values read as missing. Missing feature values are an error (impute first).
    """
    path = Path(path)
    if not path.exists():
        raise DataFileError(f"data file not found: {path}")
    with _open_text(path) as fh:
        try:
            text = fh.read()
        except (UnicodeDecodeError, OSError, EOFError, gzip.BadGzipFile) as exc:
            raise DataFileError(f"{path}: not a readable text file ({exc})") from exc
    if not text.strip():
        raise DataFileError(f"{path}: the file is empty")
    if delimiter is None:
        stem = path.name[:-3] if path.name.endswith(".gz") else path.name
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
        # a header row has a non-numeric field outside the label and dropped columns (which may
        # hold text: class names, sample ids); a column given by name needs a header
        specs = [label_column, *drop_columns]
        positions = [_position(c, width) for c in specs]
        if "name" in positions:
            header = True
        else:
            skip = {width - 1 if label_column is None else positions[0], *positions[1:]}
            header = any(not _is_number(f) for j, f in enumerate(first) if j not in skip and f not in missing)
    names = [f.strip() for f in first] if header else None
    body = rows[1:] if header else rows
    if not body:
        raise DataFileError(f"{path}: no data rows")
    lab = _resolve_column(label_column, names, width, path)
    drop = {_resolve_column(c, names, width, path, role="drop column") for c in drop_columns}
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
        bad = next((str(v) for v in raw.ravel() if not _is_number(v)), "?")
        raise DataFileError(
            f"{path}: non-numeric feature value {bad!r}; encode categorical columns or drop them "
            "with drop_columns="
        ) from exc
    if all(_is_number(v) for v in labels):
        num = labels.astype(np.float64)
        labels = num.astype(np.int64) if np.all(num == np.round(num)) else num
    fnames = [names[j] for j in feat] if names else None
    return Dataset(X=X, y=labels, feature_names=fnames, name=name or path.name.split(".")[0], source=str(path))


# ----------------------------------------------------------------------------- svmlight
def load_svmlight(path: str | os.PathLike, *, n_features: int | None = None, name: str | None = None) -> Dataset:
    """Read a LIBSVM/svmlight file (``label idx:value ...``) into a dense dataset."""
    from sklearn.datasets import load_svmlight_file

    path = Path(path)
    if not path.exists():
        raise DataFileError(f"data file not found: {path}")
    try:
        X, y = load_svmlight_file(str(path), n_features=n_features)
    except (ValueError, OSError, UnicodeDecodeError) as exc:
        raise DataFileError(f"{path}: not a valid LIBSVM/svmlight file ({exc})") from exc
    y = y.astype(np.int64) if np.all(y == np.round(y)) else y
    return Dataset(X=X.toarray(), y=y, name=name or path.stem, source=str(path))


# ----------------------------------------------------------------------------- ARFF
def load_arff(path: str | os.PathLike, *, label_column: str | int | None = None, name: str | None = None) -> Dataset:
    """Read a Weka ARFF file with numeric features and a nominal (or numeric) class attribute.
    The label is ``label_column``, else an attribute named class/target/label, else the last."""
    from scipy.io import arff

    path = Path(path)
    if not path.exists():
        raise DataFileError(f"data file not found: {path}")
    try:
        with _open_text(path) as fh:
            data, meta = arff.loadarff(fh)
    except (ValueError, NotImplementedError, arff.ParseArffError, OSError, UnicodeDecodeError,
            StopIteration, IndexError, KeyError) as exc:
        raise DataFileError(f"{path}: not a readable ARFF file ({type(exc).__name__}: {str(exc) or 'no @relation/@attribute/@data header'})"
                            ) from exc
    names = list(meta.names())
    lab = _resolve_column(label_column, names, len(names), path)
    feats = [n for j, n in enumerate(names) if j != lab]
    nonnum = [n for n in feats if meta[n][0] != "numeric"]
    if nonnum:
        raise DataFileError(f"{path}: non-numeric attributes {nonnum[:5]}; only the class may be nominal")
    X = np.column_stack([data[n].astype(np.float64) for n in feats]) if feats else np.empty((len(data), 0))
    y = data[names[lab]]
    if y.dtype.kind == "S":
        y = np.char.decode(y, "utf-8")
        gone = np.char.strip(y) == "?"
        if gone.any():
            raise DataError(f"{path}: {int(gone.sum())} missing class value(s) '?' (first at data row "
                            f"{int(np.argmax(gone)) + 1}); drop those samples before loading")
    return Dataset(X=X, y=y, feature_names=feats, name=name or path.stem, source=str(path))


# ----------------------------------------------------------------------------- MATLAB
def load_mat(path: str | os.PathLike, *, x_key: str | None = None, y_key: str | None = None,
             name: str | None = None) -> Dataset:
    """Read a MATLAB v4–v7.2 ``.mat`` file holding a sample matrix and a label vector (keys
    ``X``/``Y`` by default, matched case-insensitively, as in the ASU feature-selection repository)."""
    import scipy.io

    path = Path(path)
    if not path.exists():
        raise DataFileError(f"data file not found: {path}")
    try:
        content = scipy.io.loadmat(str(path))
    except NotImplementedError as exc:
        raise DataFileError(
            f"{path}: MATLAB v7.3 (HDF5) files are not supported; re-save it in MATLAB with "
            "save(..., '-v7')"
        ) from exc
    except (ValueError, OSError, TypeError, IndexError, KeyError, EOFError,
            scipy.io.matlab.MatReadError) as exc:
        raise DataFileError(f"{path}: not a readable MATLAB .mat file ({type(exc).__name__}: {exc})") from exc
    keys = {k.lower(): k for k in content if not k.startswith("__")}

    def pick(explicit, candidates, what):
        if explicit is not None:
            if explicit not in content:
                raise DataFileError(f"{path}: no variable {explicit!r}; it holds {sorted(keys.values())}")
            return content[explicit]
        for c in candidates:
            if c in keys:
                return content[keys[c]]
        raise DataFileError(
            f"{path}: no {what} variable (looked for {candidates}); it holds {sorted(keys.values())}; "
            f"pass {'x_key' if what == 'feature' else 'y_key'}="
        )

    X = pick(x_key, ("x", "data", "fea", "features"), "feature")
    y = pick(y_key, ("y", "label", "labels", "gnd", "target"), "label")
    if hasattr(X, "toarray"):
        X = X.toarray()
    try:
        X = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise DataFileError(f"{path}: the feature variable is not a numeric matrix "
                            f"(MATLAB class {getattr(X, 'dtype', type(X))}: {exc})") from exc
    y = np.asarray(y).ravel()
    if y.dtype.kind == "O":
        raise DataFileError(f"{path}: the label variable is a cell or struct array; store numeric labels")
    if y.dtype.kind == "f" and np.all(y == np.round(y)):
        y = y.astype(np.int64)
    return Dataset(X=X, y=y, name=name or path.stem, source=str(path))


# ----------------------------------------------------------------------------- synthetic
def make_synthetic(
    n_samples: int = 50,
    n_features: int = 1000,
    n_informative: int = 10,
    *,
    random_state: int | None = 0,
) -> Dataset:
    """The synthetic problem of paper 000 §4.2 (after Bhattacharyya 2004).

    Each label is +1 or -1 with probability 0.5. Feature ``i = 1..n_informative`` is drawn as
    ``y * N(-i, 1)`` — the OCR reads "drawn asyN(-i, 1)", which we read as ``y · N(−i, 1)``:
    mean ``−i·y``, unit variance, so larger ``i`` is more discriminative. The remaining
    ``n_features − n_informative`` features are ``N(0, 1)`` noise. The informative features are
    the first ``n_informative`` columns (named ``informative_1`` ...).
    """
    if n_informative > n_features:
        raise DataError(f"n_informative={n_informative} exceeds n_features={n_features}")
    if n_samples < 4:
        raise DataError(f"n_samples={n_samples}: need at least 4 samples for two classes of two")
    rng = np.random.default_rng(random_state)
    for _ in range(100):
        y = rng.choice(np.array([-1, 1]), size=n_samples)
        if min((y == 1).sum(), (y == -1).sum()) >= 2:
            break
    X = rng.standard_normal((n_samples, n_features))
    i = np.arange(1, n_informative + 1)
    X[:, :n_informative] = y[:, None] * (X[:, :n_informative] - i[None, :])
    names = [f"informative_{k}" for k in i] + [f"noise_{k}" for k in range(1, n_features - n_informative + 1)]
    return Dataset(X=X, y=y, feature_names=names, name="synthetic-000", source="make_synthetic")


# ----------------------------------------------------------------------------- bundled
def _sk(loader: str) -> Callable[[], Dataset]:
    def load() -> Dataset:
        import sklearn.datasets as skd

        b = getattr(skd, loader)()
        names = getattr(b, "feature_names", None)
        return Dataset(X=b.data, y=b.target, feature_names=None if names is None else list(names),
                       name=loader.removeprefix("load_"), source=f"sklearn.datasets.{loader}")

    return load


BUNDLED: dict[str, Callable[[], Dataset]] = {
    "breast_cancer": _sk("load_breast_cancer"),
    "wine": _sk("load_wine"),
    "iris": _sk("load_iris"),
    "digits": _sk("load_digits"),
    "synthetic": make_synthetic,
}
"""Datasets available offline on every machine (scikit-learn ships them; the synthetic one is generated)."""


def load_bundled(name: str) -> Dataset:
    """One of :data:`BUNDLED` by name (``breast_cancer`` is UCI WDBC)."""
    key = name.replace("-", "_").lower()
    if key not in BUNDLED:
        raise DataFileError(f"unknown bundled dataset {name!r}; bundled are {sorted(BUNDLED)}")
    return BUNDLED[key]()


_EXT = {
    ".csv": "csv", ".tsv": "csv", ".data": "csv", ".txt": "csv", ".dat": "csv",
    ".svm": "svmlight", ".libsvm": "svmlight", ".svmlight": "svmlight",
    ".arff": "arff", ".mat": "mat",
}


def load_dataset(source: str | os.PathLike, *, format: str | None = None, **options) -> Dataset:
    """Load a dataset from a file path or a bundled name.

    ``format`` is one of ``csv``, ``svmlight``, ``arff``, ``mat``, or inferred from the extension
    (``.gz`` is looked through). ``options`` go to the matching ``load_*`` function.
    """
    text = os.fspath(source)
    path = Path(text)
    if format is None and not path.exists() and text.replace("-", "_").lower() in BUNDLED:
        if options:
            raise DataError(f"bundled dataset {text!r} takes no loader options, got {sorted(options)}")
        return load_bundled(text)
    if not path.exists():
        raise DataFileError(
            f"data file not found: {text} (bundled dataset names are {sorted(BUNDLED)})"
        )
    if path.is_dir():
        raise DataFileError(f"{text} is a directory, not a data file")
    if format is None:
        suffix = Path(path.name[:-3]).suffix if path.name.endswith(".gz") else path.suffix
        format = _EXT.get(suffix.lower())
        if format is None:
            raise DataFileError(
                f"{text}: cannot infer the format from extension {suffix!r}; pass format= "
                f"(one of csv, svmlight, arff, mat)"
            )
    loaders = {"csv": load_csv, "svmlight": load_svmlight, "arff": load_arff, "mat": load_mat}
    if format not in loaders:
        raise DataFileError(f"unknown format {format!r}; use one of {sorted(loaders)}")
    loader = loaders[format]
    try:
        inspect.signature(loader).bind(path, **options)
    except TypeError as exc:
        raise DataError(f"loader {format!r} does not accept these options: {exc}") from exc
    return loader(path, **options)
