"""The manifest of a results folder: what ran, where and with what.

``manifest.json`` holds the fsframe and dependency versions, Python, the platform, the BLAS/OpenMP
libraries (threadpoolctl), the experiment file as written, the seeds, start and end times, the
engine (serial, joblib, Dask), the datasets and configurations, and the plan: every cell with its
key, and, once finished, its backend and backend version. Written atomically at the start and
rewritten at the end (an interrupted run leaves the start's version, with ``finished: null``).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata as md
import json
import os
import platform
from pathlib import Path

from .serialize import environment_versions, to_jsonable

__all__ = ["environment", "write_manifest", "read_manifest", "MANIFEST"]

MANIFEST = "manifest.json"
_EXTRA = ("joblib", "threadpoolctl", "attrs", "dask", "distributed", "matplotlib", "tomli")


def environment() -> dict:
    """Versions (fsframe, numerical and solver packages, the optional engines), Python, platform, BLAS."""
    versions = environment_versions()
    for dist in _EXTRA:
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    try:
        from threadpoolctl import threadpool_info

        blas = [{k: v for k, v in d.items() if k in ("internal_api", "version", "num_threads", "threading_layer",
                                                     "architecture", "filepath")} for d in threadpool_info()]
    except Exception as exc:  # threadpoolctl cannot inspect every platform
        blas = [{"error": str(exc)}]
    return {"versions": versions, "python": platform.python_version(),
            "python_implementation": platform.python_implementation(), "platform": platform.platform(),
            "machine": platform.machine(), "node": platform.node(), "cpu_count": os.cpu_count(), "blas": blas}


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_manifest(root: str | os.PathLike, manifest: dict) -> None:
    path = Path(root) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(to_jsonable(manifest), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(root: str | os.PathLike) -> dict:
    from ..errors import DataFileError

    path = Path(root) / MANIFEST
    if not path.is_file():
        raise DataFileError(f"{root} is not a results folder (no {MANIFEST}); give the folder 'fsframe run' wrote")
    return json.loads(path.read_text(encoding="utf-8"))
