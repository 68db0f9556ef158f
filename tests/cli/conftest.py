"""Fixtures of the CLI / evaluation / estimator tests: ``cli(*args)`` runs ``fsframe.cli.main``
in-process and returns its exit code and captured output; small data files written on the fly
(the tests never read ../shared)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from fsframe.cli import main


@pytest.fixture
def cli(capsys):
    def run(*args: str):
        capsys.readouterr()
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return types.SimpleNamespace(code=code, out=out, err=err)

    return run


@pytest.fixture
def small_binary():
    """60 x 8, two classes of 30; features 0 and 1 carry the signal."""
    rng = np.random.default_rng(11)
    X = rng.standard_normal((60, 8))
    y = np.where(X[:, 0] - 0.7 * X[:, 1] + 0.4 * rng.standard_normal(60) > 0, 1, 0)
    return X, y


@pytest.fixture
def small_csv(tmp_path, small_binary):
    """``small_binary`` as a CSV with an id column, named features and a text label column."""
    X, y = small_binary
    path = tmp_path / "small.csv"
    names = [f"f{j}" for j in range(X.shape[1])]
    lines = ["id," + ",".join(names) + ",class"]
    for i, (row, label) in enumerate(zip(X, y)):
        lines.append(f"{1000 + i}," + ",".join(f"{v:.6f}" for v in row) + ("," + ("pos" if label else "neg")))
    path.write_text("\n".join(lines) + "\n")
    return path
