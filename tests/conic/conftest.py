"""Fixtures of the conic tests: real data when ``../shared/data`` is present, seeded random data
otherwise (so the comparisons with CVXPY run everywhere)."""

from __future__ import annotations

import numpy as np
import pytest
from conic_data import FILES, data_dir, load, random_mpm_data


@pytest.fixture
def mpm_data():
    """Sonar (standardised) when the shared data are present, else seeded random data."""
    if (data_dir() / FILES["sonar"][0]).exists():
        return ("sonar",) + load("sonar")
    return ("random",) + random_mpm_data()


@pytest.fixture
def small_socp():
    """A tiny L1-MPM-shaped SOCP on random data, compiled (for backend tests)."""
    from fsframe.compiler import compile_model
    from fsframe_mpm import MPMFormulation

    X, y = random_mpm_data(m=40, n=8, seed=3)
    built = MPMFormulation(delta=0.3).build(X, y, frozenset({"lin"}))
    compiled = compile_model(built.model)
    return compiled.with_weights(lin=np.ones(8), sync=False)
