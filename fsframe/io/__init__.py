"""Dataset loaders: CSV/TSV, LIBSVM/svmlight, ARFF, MATLAB ``.mat``, scikit-learn's bundled
datasets and the synthetic generator of paper 000 §4.2.

Every loader returns a validated :class:`~fsframe.dataset.Dataset`; every failure to read is a
:class:`~fsframe.errors.DataFileError` naming the file and what was wrong with it, and a loader
option of the wrong type or value is an :class:`~fsframe.errors.InvalidOptionError` naming the
option. Only regular files are read (a FIFO or a device is refused before it is opened), and at
most 1 GiB of them (``fsframe.io._source.MAX_FILE_BYTES``).
"""

from __future__ import annotations

import inspect
import os
from pathlib import Path
from typing import Callable

import numpy as np

from ..dataset import Dataset
from ..errors import DataError, DataFileError
from ._source import check_source, check_task
from .arff import load_arff
from .matlab import load_mat
from .svmlight import load_svmlight
from .text import load_csv

__all__ = [
    "load_dataset",
    "load_csv",
    "load_svmlight",
    "load_arff",
    "load_mat",
    "load_bundled",
    "bundled_task",
    "make_synthetic",
    "BUNDLED",
]


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
def _sk(loader: str, task: str = "classification") -> Callable[[], Dataset]:
    def load() -> Dataset:
        import sklearn.datasets as skd

        b = getattr(skd, loader)()
        names = getattr(b, "feature_names", None)
        return Dataset(X=b.data, y=b.target, feature_names=None if names is None else list(names),
                       name=loader.removeprefix("load_"), source=f"sklearn.datasets.{loader}", task=task)

    load.task = task
    return load


BUNDLED: dict[str, Callable[[], Dataset]] = {
    "breast_cancer": _sk("load_breast_cancer"),
    "wine": _sk("load_wine"),
    "iris": _sk("load_iris"),
    "digits": _sk("load_digits"),
    "diabetes": _sk("load_diabetes", "regression"),
    "synthetic": make_synthetic,
}
"""Datasets available offline on every machine (scikit-learn ships them; the synthetic one is
generated). ``diabetes`` (442 patients, 10 features, a real target: disease progression after one
year) is a regression data set (``task="regression"``); the others hold class labels."""


def bundled_task(name: str) -> str:
    """The task of the bundled data set ``name``: ``"regression"`` or ``"classification"``."""
    return getattr(BUNDLED[name.replace("-", "_").lower()], "task", "classification")


def load_bundled(name: str, *, task: str | None = None) -> Dataset:
    """One of :data:`BUNDLED` by name (``breast_cancer`` is UCI WDBC). ``task``, when given, must
    be the data set's own (``diabetes`` is a regression; the others are classifications)."""
    key = name.replace("-", "_").lower()
    if key not in BUNDLED:
        raise DataFileError(f"unknown bundled dataset {name!r}; bundled are {sorted(BUNDLED)}")
    if task is not None:
        check_task(task)
        own = bundled_task(key)
        if task != own:
            raise DataError(f"bundled dataset {name!r} is a {own} data set, not a {task} one "
                            f"(regression: {sorted(k for k in BUNDLED if bundled_task(k) == 'regression')})")
    return BUNDLED[key]()


_EXT = {
    ".csv": "csv", ".tsv": "csv", ".data": "csv", ".txt": "csv", ".dat": "csv",
    ".svm": "svmlight", ".libsvm": "svmlight", ".svmlight": "svmlight",
    ".arff": "arff", ".mat": "mat",
}


def load_dataset(source: str | os.PathLike, *, format: str | None = None, **options) -> Dataset:
    """Load a dataset from a file path or a bundled name.

    ``format`` is one of ``csv``, ``svmlight``, ``arff``, ``mat``, or inferred from the extension
    (``.gz`` and ``.bz2`` are looked through). ``options`` go to the matching ``load_*`` function;
    ``task="regression"`` reads the label column of a file as a real target (a bundled data set
    has its own task: ``diabetes`` is a regression).
    """
    text = os.fspath(source)
    path = Path(text)
    if format is None and not path.exists() and text.replace("-", "_").lower() in BUNDLED:
        task = options.pop("task", None)
        if options:
            raise DataError(f"bundled dataset {text!r} takes no loader options, got {sorted(options)}")
        return load_bundled(text, task=task)
    if not path.exists():
        raise DataFileError(
            f"data file not found: {text} (bundled dataset names are {sorted(BUNDLED)})"
        )
    if path.is_dir():
        raise DataFileError(f"{text} is a directory, not a data file")
    check_source(path)
    if format is None:
        suffix = Path(path.stem).suffix if path.suffix in (".gz", ".bz2") else path.suffix
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
