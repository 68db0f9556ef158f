"""Lazy public names for a package (:pep:`562`), so that importing it stays light.

A package lists ``name -> module`` in a table and defines ``__getattr__``/``__dir__`` from
:func:`lazy_attribute` and :func:`lazy_dir`. The first access to a listed name imports its module
and stores the value in the package namespace (later accesses are ordinary lookups); an unlisted
name that is a submodule of the package is imported too, as an eager ``__init__`` importing its
submodules would have made it available. ``from package import name`` goes through the same path.
:func:`lazy_module` stands for a third-party module imported on first attribute access.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Iterable, Mapping

__all__ = ["lazy_attribute", "lazy_dir", "lazy_module"]


def lazy_attribute(package: str, table: Mapping[str, str], name: str):
    """The value of ``package.name``: ``name`` of the module ``table[name]`` (relative to
    ``package``), else the submodule ``package.name``; stored in the package namespace.

    Raises
    ------
    AttributeError
        When ``name`` is neither listed nor a submodule (dunder names are never imported).
    """
    namespace = sys.modules[package].__dict__
    if name in table:
        value = getattr(importlib.import_module(table[name], package), name)
    elif name.startswith("__"):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    else:
        try:
            value = importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.{name}":  # the submodule exists but an import inside it failed
                raise
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    namespace[name] = value
    return value


def lazy_dir(package: str, names: Iterable[str]) -> list[str]:
    """``dir(package)``: what is loaded so far and the lazily available ``names``."""
    return sorted(set(sys.modules[package].__dict__) | set(names))


class _LazyModule(types.ModuleType):
    """Stands for a module until its first attribute access, which imports it and copies its
    namespace in (later accesses are plain attribute lookups, as fast as on the module itself)."""

    def __getattr__(self, attr: str):
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


def lazy_module(name: str) -> types.ModuleType:
    """A stand-in for the module ``name`` (e.g. ``sp = lazy_module("scipy.sparse")``) that imports
    it on first attribute access. Nothing is imported before, and ``sys.modules`` is untouched
    until then; use it for a module every function of a catalogue-path module may need but
    importing the catalogue must not load (SciPy's sparse matrices: ~0.2 s)."""
    return _LazyModule(name)
