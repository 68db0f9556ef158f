"""The installed version of fsframe, read from the distribution metadata on first use only
(:mod:`importlib.metadata` costs tens of milliseconds to import: ``fsframe --help`` skips it)."""

from __future__ import annotations

import functools

__all__ = ["fsframe_version"]


@functools.cache
def fsframe_version() -> str:
    """``importlib.metadata.version("fsframe")``, or ``"0+unknown"`` when fsframe is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fsframe")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"
