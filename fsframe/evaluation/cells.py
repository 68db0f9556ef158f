"""Cells on disk: one JSON file per finished (dataset, configuration, split), written atomically,
named by a hash of everything that determines the cell's result.

The key hashes the data (its bytes), the configuration (method, components, parameters, fit
options, ``n_features``), the evaluation (scaling, retrained classifier) and the split (protocol,
seed, repeat, fold and the training indices). A rerun skips cells whose file exists; changing the
experiment file changes the keys of exactly the cells it changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from .. import errors
from .records import FoldRecord
from .serialize import to_jsonable

__all__ = ["cell_key", "CellStore", "record_to_json", "record_from_json", "TIMING_FIELDS"]

TIMING_FIELDS = ("seconds", "total_seconds")
"""Fields of a cell that measure time: the only ones that differ between runs of the same cell."""


def _canonical(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), sort_keys=True, separators=(",", ":"))


def cell_key(data_hash: str, config: dict, evaluation: dict, split: dict, train) -> str:
    """The cell's identity: SHA-256 (hex, 24 characters) of its inputs."""
    h = hashlib.sha256()
    h.update(_canonical({"data": data_hash, "config": config, "evaluation": evaluation, "split": split}).encode())
    h.update(np.asarray(train, dtype=np.int64).tobytes())
    return h.hexdigest()[:24]


def record_to_json(rec: FoldRecord, meta: dict) -> dict:
    """A cell file's content: ``meta`` (key, dataset, seed, configuration...) and the record
    with its split indices and test predictions."""
    return {**meta, "record": rec.as_dict(arrays=True)}


_BUILTIN_WARNINGS = {c.__name__: c for c in (UserWarning, RuntimeWarning, DeprecationWarning, FutureWarning)}


def _category(text: str) -> type:
    """The warning class a stored ``"Category: message"`` names (``UserWarning`` if unknown)."""
    name = text.split(":", 1)[0]
    cat = getattr(errors, name, None) or _BUILTIN_WARNINGS.get(name)
    return cat if isinstance(cat, type) and issubclass(cat, Warning) else UserWarning


def record_from_json(d: dict) -> FoldRecord:
    """The :class:`FoldRecord` a cell file holds."""
    r = dict(d["record"])
    r.pop("status", None)
    if "backend" not in r:  # a cell written before records kept the backend that solved: the configured one
        r["backend"] = d.get("backend")
    for k in ("train", "test", "y_pred"):
        if r.get(k) is not None:
            r[k] = np.asarray(r[k])
    r["statuses"] = tuple(r.get("statuses") or ())
    r["selected"] = tuple(r.get("selected") or ())
    r["facts"] = dict(r.get("facts") or {})
    for k in ("curve", "random_curve"):  # (k, accuracy) pairs: JSON keeps them as lists
        r[k] = tuple((int(a), float(b)) for a, b in r.get(k) or ())
    r["warnings"] = tuple((_category(w), w.split(": ", 1)[1] if ": " in w else w) for w in r.get("warnings") or ())
    return FoldRecord(**r)


class CellStore:
    """The ``cells/`` folder of a results directory (created if absent).

    A results folder that is a file, a ``cells`` that is not a folder, a cell path that is not a
    regular file and a folder that cannot be created, read or written are
    :class:`~fsframe.errors.DataFileError` naming the path; a cell file whose content is not a
    cell (truncated, not UTF-8, not JSON) is reported with a warning and counts as not finished."""

    def __init__(self, root: str | os.PathLike):
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise errors.DataFileError(f"results folder {root} is a file, not a folder: give another folder "
                                       "(fsframe run --out DIR) or move the file away")
        self.dir = root / "cells"
        if self.dir.exists() and not self.dir.is_dir():
            raise errors.DataFileError(f"{self.dir} is a file, not a folder: a results folder keeps its cells in the "
                                       "folder cells/; move the file away")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise errors.DataFileError(f"cannot create the results folder {self.dir}: {exc.strerror or exc}") from exc

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.json"

    def write(self, key: str, content: dict) -> None:
        """Write atomically: a temporary file in the same folder, then ``os.replace``."""
        tmp = self.dir / f".tmp-{key}-{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(to_jsonable(content), fh, allow_nan=False)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path(key))
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise errors.DataFileError(f"cannot write cell file {self.path(key)}: {exc.strerror or exc}") from exc

    def read(self, key: str) -> dict | None:
        """The cell's content, or ``None`` when absent or unreadable (then it is recomputed)."""
        p = self.path(key)
        try:
            with open(p, encoding="utf-8") as fh:
                d = json.load(fh)
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            raise errors.DataFileError(f"cell path {p} is a folder, not a cell file: move it away (the cell is then "
                                       "recomputed by 'fsframe run')") from None
        except OSError as exc:
            raise errors.DataFileError(f"cannot read cell file {p}: {exc.strerror or exc}") from exc
        except ValueError as exc:  # not UTF-8, not JSON
            _unreadable(p, str(exc))
            return None
        if not isinstance(d, dict) or not isinstance(d.get("record"), dict):
            _unreadable(p, "it holds no cell record")
            return None
        if d.get("key") != key:
            return None
        try:
            record_from_json(d)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:  # fields that are not a record's
            _unreadable(p, f"its record does not load: {type(exc).__name__}: {exc}")
            return None
        return d

    def finished(self, keys: Iterable[str], *, retry_failed: bool = True) -> dict[str, dict]:
        """The readable cells among ``keys`` (failed ones left out with ``retry_failed``)."""
        out = {}
        for k in keys:
            d = self.read(k)
            if d is not None and (d["record"].get("ok") or not retry_failed):
                out[k] = d
        return out

    def clean_temporary(self) -> int:
        """Remove temporary files a killed run left; returns their number."""
        n = 0
        for p in self.dir.glob(".tmp-*"):
            try:
                p.unlink()
                n += 1
            except OSError:
                pass
        return n


def _unreadable(path: Path, why: str) -> None:
    warnings.warn(f"cell file {path} is unreadable ({why}); the cell counts as not finished ('fsframe run' "
                  "recomputes it)", RuntimeWarning, stacklevel=4)
