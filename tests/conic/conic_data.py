"""Data helpers of the conic tests (imported by ``conftest.py`` and the test modules; pytest puts
this folder on ``sys.path``)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import fsframe

ROOT = Path(__file__).resolve().parents[2]


def data_dir() -> Path:
    env = os.environ.get("FSFRAME_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


FILES = {
    "sonar": ("sonar.csv", {"label_column": -1}),
    "ionosphere": ("ionosphere.data", {"label_column": -1}),
    "wdbc": ("wdbc.data", {"label_column": 1, "drop_columns": [0]}),
    "pima": ("pima-indians-diabetes.csv", {"label_column": -1}),
    "colon": ("colon.mat", {}),
}


def load(name: str, *, standardise: bool = True):
    """``(X, y)`` of a shared data set with ``y`` coded ``+1`` for the second sorted label (as
    ``fsframe.fit`` codes it); skips the test when the file is absent."""
    fname, kw = FILES[name]
    path = data_dir() / fname
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fsframe.errors.DataWarning)
        ds = fsframe.load_dataset(path, **kw)
    X = np.array(ds.X, dtype=float)
    if standardise:
        sd = X.std(0)
        X = (X - X.mean(0)) / np.where(sd > 0, sd, 1.0)
    y = np.where(ds.y == ds.classes[1], 1.0, -1.0)
    return X, y


def random_mpm_data(m: int = 120, n: int = 30, seed: int = 11):
    """Gaussian features, the first 5 shifted by 0.7 y (balanced classes)."""
    rng = np.random.default_rng(seed)
    y = np.where(np.arange(m) % 2 == 0, 1.0, -1.0)
    X = rng.standard_normal((m, n))
    X[:, :5] += 0.7 * y[:, None]
    return X, y
