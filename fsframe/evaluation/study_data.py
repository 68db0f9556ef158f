"""The data sets of a study: a bundled name, a file beside the experiment file, a file in the
*data folder*, or a generator.

A study shipped with fsframe (``fsframe run paper000``) cannot know where a user keeps the
papers' data sets, so its ``[[datasets]]`` entries name a ``file`` that is looked up in the data
folder — ``fsframe run --data-dir DIR``, else the environment variable :data:`DATA_ENV` — and give
the ``url`` it is downloaded from. A missing folder or file is a
:class:`~fsframe.errors.DataFileError` naming the file, the folder searched and the download
address, raised while the study is planned (before any fit)::

    [[datasets]]
    name = "sonar"
    file = "sonar.csv"                 # in the data folder
    url = "https://archive.ics.uci.edu/dataset/151"
    label_column = -1                  # any other key is a loader option (docs/data.md)

    [[datasets]]
    name = "semeion"
    file = "semeion.data"
    delimiter = " "
    onehot_labels = 10                 # the last 10 columns are a one-hot class code

    [[datasets]]
    name = "cross-planes"
    generator = "fsframe_twsvm.toy:cross_planes"   # module:function returning a Dataset or (X, y)
    n_samples = 200                                 # keyword arguments of the function
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import attrs
import numpy as np

from ..errors import DataFileError, InvalidOptionError

__all__ = ["DatasetSpec", "DATA_ENV", "data_folder"]

DATA_ENV = "FSFRAME_DATA"
"""Environment variable naming the data folder of ``file = ...`` data sets (``--data-dir`` wins)."""


def data_folder(data_dir: str | os.PathLike | None) -> tuple[Path | None, str]:
    """The data folder and where it came from: ``data_dir`` (``--data-dir``), else
    ``$FSFRAME_DATA``, else ``(None, "")``."""
    if data_dir is not None:
        return Path(data_dir), "--data-dir"
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env), f"${DATA_ENV}"
    return None, ""


@attrs.frozen
class DatasetSpec:
    """A data set of a study.

    ``source`` is a bundled name or a file path; ``file`` (a name in the data folder) and ``url``
    (where to download it) describe a data set a shipped study needs; ``generator``
    (``"module:function"``) builds one; ``note`` says what it stands for (e.g. a bundled stand-in
    for a data set of the paper we do not have); ``only`` is ``"reduced"`` for a data set used by
    the reduced run alone (``fsframe run --reduced``).
    """

    name: str
    source: str | None
    options: dict = attrs.field(factory=dict)
    file: str | None = None
    url: str | None = None
    generator: str | None = None
    note: str | None = None
    only: str | None = None
    cv: object = None  # this data set's own splits (an int: folds; a float: test fraction), e.g. 002 Table 3
    study: str = "study"
    folder_origin: str = ""

    def load(self):
        """The :class:`~fsframe.Dataset` (a missing file is a :class:`DataFileError` saying where
        to get it)."""
        from ..io import load_dataset

        options = dict(self.options)
        onehot = options.pop("onehot_labels", None)
        if self.generator is not None:
            data = _generate(self.generator, options, self.name)
        else:
            self.check_file()
            data = load_dataset(self.source, **options)
        if onehot is not None:
            data = _from_onehot(data, onehot, self.name)
        return data

    def check_file(self) -> None:
        """A :class:`DataFileError` saying where to get it when this data set reads a file that is
        not in the data folder, or no data folder is set; nothing is read (a bundled or generated
        data set passes)."""
        if self.generator is None and (self.source is None or (self.file is not None
                                                                and not Path(self.source).is_file())):
            raise DataFileError(self._missing())

    def _missing(self) -> str:
        get = f"download it from {self.url}" if self.url else "get it"
        if self.source is None:
            return (f"{self.study}: data set {self.name!r} reads the file {self.file!r} from the data folder, but no "
                    f"data folder is set: give one with --data-dir DIR (or the environment variable {DATA_ENV}) and "
                    f"{get} into it")
        folder = Path(self.source).parent
        return (f"{self.study}: data set {self.name!r} needs the file {self.file!r}, which is not in the data folder "
                f"{folder} (from {self.folder_origin}): {get} and save it there as {self.file}")


def file_source(file: str, data_dir, where: str) -> tuple[str | None, str]:
    """The path of ``file`` in the data folder (``None`` without one) and the folder's origin."""
    if os.path.isabs(file) or Path(file).name != file:
        raise InvalidOptionError(f"{where}: file = {file!r} names a file in the data folder; give its name only "
                                 "(use path = \"...\" for a file relative to the experiment file)")
    folder, origin = data_folder(data_dir)
    return (None if folder is None else str(folder / file)), origin


def _generate(target: str, options: dict, name: str):
    from ..dataset import Dataset

    module, _, func = target.partition(":")
    if not module or not func:
        raise InvalidOptionError(f"data set {name!r}: generator = {target!r}; write \"module:function\"")
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError) as exc:
        raise InvalidOptionError(f"data set {name!r}: cannot import the generator {target!r}: {exc}") from None
    out = fn(**options)
    if isinstance(out, Dataset):
        return attrs.evolve(out, name=name)
    X, y = out
    return Dataset(X=np.asarray(X, dtype=np.float64), y=np.asarray(y), name=name, source=target)


def _from_onehot(data, n_classes, name: str):
    """``data`` whose last ``n_classes - 1`` feature columns and label form a one-hot class code
    (UCI Semeion: 256 pixels then 10 indicator columns) as a data set with class labels
    ``0 .. n_classes - 1``. A row that is not one-hot is a :class:`DataFileError`."""
    from ..dataset import Dataset

    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise InvalidOptionError(f"data set {name!r}: onehot_labels = {n_classes!r}; give the number of indicator "
                                 "columns (an integer >= 2)")
    X = np.asarray(data.X, dtype=np.float64)
    if X.shape[1] < n_classes:
        raise DataFileError(f"data set {name!r}: {X.shape[1] + 1} columns cannot end in {n_classes} indicator columns")
    code = np.column_stack([X[:, X.shape[1] - (n_classes - 1):], np.asarray(data.y, dtype=np.float64)])
    if not (np.isin(code, (0.0, 1.0)).all() and (code.sum(axis=1) == 1).all()):
        bad = int(np.flatnonzero(~(np.isin(code, (0.0, 1.0)).all(axis=1) & (code.sum(axis=1) == 1)))[0])
        raise DataFileError(f"data set {name!r}: row {bad} of the last {n_classes} columns is not a one-hot code")
    names = data.feature_names[: X.shape[1] - (n_classes - 1)] if data.feature_names else None
    return Dataset(X=X[:, : X.shape[1] - (n_classes - 1)], y=np.argmax(code, axis=1), feature_names=names,
                   name=name, source=data.source)
