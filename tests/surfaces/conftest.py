"""Fixtures of the surface matrix: the tiny data sets (``surface_data``) as CSV files and the
in-process command line."""

from __future__ import annotations

import types
import warnings

import pytest

from fsframe.cli import main
from surface_data import tiny


@pytest.fixture(scope="session")
def tiny_csv(tmp_path_factory):
    """``tiny_csv[n_classes]``: the data of :func:`tiny` as a CSV file (columns ``f0..``, label
    column ``class``; ``tiny_csv[0]``, the regression, ``target``: a command reads it with
    ``--task regression``), written at full precision so that a command reads the same numbers."""
    root = tmp_path_factory.mktemp("surfaces")
    out = {}
    for c in (0, 2, 3):
        X, y = tiny(c)
        path = root / f"tiny{c}.csv"
        lines = [",".join(f"f{j}" for j in range(X.shape[1])) + (",target" if c == 0 else ",class")]
        lines += [",".join(repr(float(v)) for v in row) + "," + (repr(float(label)) if c == 0 else str(int(label)))
                  for row, label in zip(X, y)]
        path.write_text("\n".join(lines) + "\n")
        out[c] = path
    return out


@pytest.fixture
def cli(capsys):
    """``cli(*args)``: ``fsframe.cli.main`` in-process; its exit code and captured output."""

    def run(*args):
        capsys.readouterr()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return types.SimpleNamespace(code=code, out=out, err=err)

    return run
