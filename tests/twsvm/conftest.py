"""Data for the twin-SVM tests (puts this folder on ``sys.path`` for ``twsvm_data``)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from twsvm_data import informative_data  # noqa: E402


@pytest.fixture
def informative():
    return informative_data()


@pytest.fixture
def sonar(shared_file):
    """Sonar (208 x 60), standardised; skipped without the shared data."""
    from fsframe.io import load_dataset

    d = load_dataset(shared_file("sonar.csv"))
    X = np.asarray(d.X, dtype=float)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(np.asarray(d.y) == np.unique(d.y)[1], 1, -1)
    return X, y
