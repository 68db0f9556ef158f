"""Shared helpers of the experiment tests: small studies on bundled data and reading cell files
directly (independently of fsframe's own readers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsframe.evaluation.study import study_from_dict

SMALL = {
    "study": {"name": "small", "seeds": [3]},
    "protocol": {"cv": 3},
    "datasets": [{"name": "wine"}],
    "methods": [{"method": "l1-svm"}, {"method": "fsv", "alpha": [0.5, 5]}],
}


@pytest.fixture
def small_study():
    return study_from_dict(SMALL, text="# small")


@pytest.fixture
def small_spec():
    return SMALL


@pytest.fixture
def cells():
    """``cells.read(root)``, ``cells.results(root)``: the cell files of a results folder."""

    class Cells:
        read = staticmethod(read_cells)
        results = staticmethod(cell_results)

    return Cells


def read_cells(root) -> dict[str, dict]:
    """Every cell file of a results folder, by key, parsed with json only."""
    out = {}
    for p in sorted((Path(root) / "cells").glob("*.json")):
        d = json.loads(p.read_text())
        out[d["key"]] = d
    return out


def cell_results(root) -> dict[str, dict]:
    """The records of the cells without their timing fields (the only fields allowed to differ)."""
    out = {}
    for k, d in read_cells(root).items():
        r = dict(d["record"])
        for f in ("seconds", "total_seconds"):
            r.pop(f)
        out[k] = r
    return out


@pytest.fixture
def hide_module(monkeypatch):
    """``hide_module("matplotlib")``: importing that package (or a submodule) raises ImportError."""
    import builtins

    real = builtins.__import__

    def hide(prefix: str) -> None:
        def fake(name, *a, **k):
            if name.startswith(prefix):
                raise ImportError(name)
            return real(name, *a, **k)

        monkeypatch.setattr(builtins, "__import__", fake)

    return hide
