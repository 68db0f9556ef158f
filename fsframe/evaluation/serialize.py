"""JSON-ready values and the environment record of an evaluation."""

from __future__ import annotations

import importlib.metadata as md
import math
import platform
from typing import Mapping

import numpy as np

__all__ = ["to_jsonable", "environment_versions"]


def to_jsonable(v):
    """``v`` with numpy scalars and arrays, tuples and mappings turned into JSON types; non-finite
    floats become ``None``, other objects their ``str``."""
    if isinstance(v, dict):
        return {str(k): to_jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return to_jsonable(v.tolist())
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, (str, int, bool)) or v is None:
        return v
    return str(v)



def environment_versions(extra: Mapping[str, str] | None = None) -> dict:
    """Versions of Python, fsframe and the numerical / solver packages (those installed)."""
    out = {"python": platform.python_version()}
    for dist in ("fsframe", "numpy", "scipy", "scikit-learn", "pyomo", "highspy", "ecos", "clarabel", "pluggy"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    if extra:
        out.update(extra)
    return out

