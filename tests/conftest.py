"""Shared fixtures of fsframe's test suite.

* Hypothesis runs under the ``fsframe`` profile: ``derandomize=True`` (the same examples on every
  run and machine with the same hypothesis version), its example database off (a failure found on
  one machine is not replayed on the next: every example it ever found is kept in the test as an
  explicit ``@example``), no deadline (solver calls vary in time).
* ``--update-golden`` rewrites ``tests/golden/*.json`` instead of comparing with them.
* ``shared_data`` is ``<repo>/../shared/data`` (or ``$FSFRAME_SHARED_DATA``); tests that use it
  are skipped when the folder is absent, as in a fresh clone.
"""

from __future__ import annotations

import os
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import fsframe
import fsframe.plugins

ROOT = Path(__file__).resolve().parents[1]

settings.register_profile(
    "fsframe", derandomize=True, database=None, deadline=None, max_examples=60, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("fsframe")


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/*.json from the current code instead of comparing")


@pytest.fixture
def update_golden(request) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture(scope="session")
def load_script():
    """Import a repository script that is not a package module (``benchmarks/...``, ``docs/...``):
    ``load_script("benchmarks/competitors.py")`` returns the module (named ``name``, default
    the file's stem)."""
    import importlib.util

    def load(rel: str, name: str | None = None):
        path = ROOT / rel
        spec = importlib.util.spec_from_file_location(name or path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load


def shared_data_dir() -> Path:
    """``$FSFRAME_SHARED_DATA``, else ``<repo>/../shared/data``."""
    env = os.environ.get("FSFRAME_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} is absent (set FSFRAME_SHARED_DATA)")
    return path


@pytest.fixture
def shared_file(shared_data):
    def get(name: str) -> Path:
        p = shared_data / name
        if not p.exists():
            pytest.skip(f"{p} is absent")
        return p

    return get


@pytest.fixture
def fresh_registry():
    """Rebuild the plugin registry before and after the test (for tests that change plugins,
    environment variables or entry points)."""
    fsframe.plugins.reset_registry()
    yield
    fsframe.plugins.reset_registry()


@pytest.fixture
def add_components(fresh_registry):
    """Register components at run time, for this test only:
    ``add_components(surrogates=[Cls], formulations=[...], name="probe")`` (keyword = the hook's
    suffix: formulations, surrogates, loops, backends, methods)."""
    added = []

    def add(name="test-probe", **kinds):
        plugin = types.SimpleNamespace()
        for kind, items in kinds.items():
            setattr(plugin, f"fsframe_register_{kind}", fsframe.hookimpl(lambda items=tuple(items): list(items)))
        added.append(fsframe.plugins.register(plugin, name=name))

    yield add
    for name in added:
        fsframe.plugins.unregister(name)


@pytest.fixture
def toy():
    """:func:`fsframe.testing.toy_data`: 10 separable points whose hinge problems are solved by hand."""
    from fsframe.testing import toy_data

    return toy_data()


@pytest.fixture
def binary_data():
    """A seeded 30 x 6 binary problem, not separable: y = sign(x0 + 0.5 x1 + noise), as ``±1``."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 6))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.standard_normal(30) > 0, 1.0, -1.0)
    return X, y


@pytest.fixture
def highs_loads(monkeypatch):
    """The column counts of every problem a HiGHS session loads from scratch (``_load``), in
    order: a warm re-solve or appended columns add nothing (working sets, paths)."""
    from fsframe.backends.highs import HighsSession

    calls = []
    orig = HighsSession._load

    def counting(self, data):
        calls.append(data.n)
        return orig(self, data)

    monkeypatch.setattr(HighsSession, "_load", counting)
    return calls
