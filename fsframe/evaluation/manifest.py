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

__all__ = ["environment", "write_manifest", "read_manifest", "source_commit", "MANIFEST"]

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


def source_commit() -> str | None:
    """The git commit of the fsframe source that runs (``None`` outside a git checkout, e.g. an
    installed wheel), with ``+dirty`` when tracked files of ``fsframe/`` or ``plugins/`` (the code)
    differ from it."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ":/fsframe", ":/plugins"],
                               cwd=here, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def write_manifest(root: str | os.PathLike, manifest: dict) -> None:
    from ..errors import DataFileError

    path = Path(root) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(to_jsonable(manifest), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise DataFileError(f"cannot write the manifest {path}: {exc.strerror or exc}") from exc


#: What :func:`read_manifest` checks a manifest holds (what the tables are rebuilt from).
_GROUP_FIELDS = {"configs": list, "cells": list, "protocol": dict, "dataset": dict}
_CONFIG_FIELDS = ("label", "method", "components", "resolved", "fit_options", "backend", "n_features", "groups")
_DATASET_FIELDS = ("name", "n_samples", "n_features", "classes")
_OPTIONAL_FIELDS = {"environment": dict, "seeds": list, "wall_seconds": (int, float, type(None))}


def manifest_commits(root: str | os.PathLike) -> list[str]:
    """The source commits the manifest of the results folder ``root`` names: every run into the
    folder, including one that resumed it and computed nothing (none without a readable manifest)."""
    from ..errors import DataFileError

    try:
        commits = read_manifest(root).get("commits") or []
    except DataFileError:
        return []
    return [c for c in commits if isinstance(c, str)]


def read_manifest(root: str | os.PathLike) -> dict:
    """The manifest of the results folder ``root``; a folder without one, and a manifest that
    cannot be read (not UTF-8, not JSON, truncated) or lacks what the tables are rebuilt from
    (``cells``, ``groups`` and their fields), are :class:`~fsframe.errors.DataFileError` naming
    the file and what is wrong."""
    from ..errors import DataFileError

    path = Path(root) / MANIFEST
    if not path.is_file():
        what = f"{path} is a folder, not a file" if path.exists() else f"no {MANIFEST}"
        raise DataFileError(f"{root} is not a results folder ({what}); give the folder 'fsframe run' wrote")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DataFileError(f"cannot read the manifest {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:  # not UTF-8, not JSON (e.g. truncated)
        raise DataFileError(f"the manifest {path} is not readable JSON ({exc}); it is written by 'fsframe run': "
                            "rerun the study to rewrite it") from None
    problem = _manifest_problem(data)
    if problem:
        raise DataFileError(f"the manifest {path} {problem}; it is written by 'fsframe run': rerun the study to "
                            "rewrite it")
    return data


def _manifest_problem(d) -> str | None:
    """What a parsed manifest lacks of the structure the tables are rebuilt from, or None."""
    if not isinstance(d, dict):
        return f"holds a JSON {type(d).__name__}, not an object"
    for key, kind in (("cells", dict), ("groups", list)):
        if key not in d:
            return f"has no {key!r}"
        if not isinstance(d[key], kind):
            return f"has a {key!r} that is not a JSON {'object' if kind is dict else 'array'}"
    for key, kinds in _OPTIONAL_FIELDS.items():
        if key in d and not isinstance(d[key], kinds):
            return f"has a {key!r} of type {type(d[key]).__name__}"
    for i, g in enumerate(d["groups"]):
        if not isinstance(g, dict):
            return f"has a group {i} that is not an object"
        bad = [k for k, kind in _GROUP_FIELDS.items() if not isinstance(g.get(k), kind)]
        if bad:
            return f"has a group {i} without valid {bad}"
        if len(g["configs"]) != len(g["cells"]):
            return f"has a group {i} with {len(g['configs'])} configurations but {len(g['cells'])} cell lists"
        missing = [k for k in _DATASET_FIELDS if k not in g["dataset"]]
        if missing:
            return f"has a group {i} whose dataset lacks {missing}"
        for j, (cfg, keys) in enumerate(zip(g["configs"], g["cells"])):
            if not isinstance(cfg, dict) or any(k not in cfg for k in _CONFIG_FIELDS):
                return f"has a configuration {j} of group {i} without all of {list(_CONFIG_FIELDS)}"
            if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
                return f"has cell keys of configuration {j} of group {i} that are not a list of strings"
    return None
