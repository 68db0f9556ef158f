"""The tiny data sets of the surface matrix (binary and three classes) and one reference fit of
each (method, classes) cell, shared by the tests that compare a surface with it."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import fsframe


def tiny(n_classes: int, *, per_class: int = 10, n_features: int = 5, seed: int = 0):
    """``n_classes = 0``: a regression on 20 samples, the real target ``2 x_0 - x_1`` plus noise 0.3
    (the cells of methods whose formulation declares ``task = "regression"``). Otherwise ``per_class`` samples of each class around the vertices of a regular polygon of radius 3 in
    features 0 and 1 (noise 0.6), and ``n_features - 2`` noise features: every class is linearly
    separable from the rest, so the hard margin of paper 004 (``dso-fs``) applies too."""
    rng = np.random.default_rng(seed)
    if n_classes == 0:
        X = rng.normal(size=(2 * per_class, n_features))
        return X, 2.0 * X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=2 * per_class)
    angles = 2 * np.pi * np.arange(n_classes) / n_classes
    centers = 3.0 * np.column_stack([np.cos(angles), np.sin(angles)])
    y = np.repeat(np.arange(n_classes), per_class)
    X = rng.normal(scale=0.6, size=(y.size, n_features))
    X[:, :2] += centers[y]
    return X, y


@functools.lru_cache(maxsize=None)
def reference_fit(method: str, n_classes: int):
    """``fsframe.fit`` of ``method`` on ``tiny(n_classes)`` with its defaults (each cell once)."""
    X, y = tiny(n_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method=method)


def run_surface(surface: str, method: str, n_classes: int, request, tmp_path) -> None:
    """Run the surface matrix's check ``surface`` (a test function of ``test_surface_matrix``) for
    one cell, with the fixtures it asks for: the files that rerun the matrix with a solve path
    forced (from_data, the dense EM path, the Newton steps) share it."""
    import inspect

    import test_surface_matrix as matrix

    test = getattr(matrix, surface)
    wanted = inspect.signature(test).parameters
    fixtures = {name: request.getfixturevalue(name) for name in wanted
                if name not in ("method", "n_classes", "tmp_path")}
    if "tmp_path" in wanted:
        fixtures["tmp_path"] = tmp_path
    test(method, n_classes, **fixtures)


def run_tiny_study(name: str, methods, tiny_csv, tmp_path) -> tuple[list, str]:
    """``fsframe run`` a study of ``methods`` on the two- and three-class tiny data sets (2-fold CV,
    seed 0), then ``fsframe report``: the cells' JSON and the report's Markdown."""
    import json

    from fsframe.cli import main

    lines = ['[study]', f'name = "{name}"', 'seeds = [0]', '', '[protocol]', 'cv = 2', 'scale = "none"', '']
    for c in (2, 3):
        lines += ['[[datasets]]', f'name = "tiny{c}"', f'path = "{tiny_csv[c].as_posix()}"', '']
    for m in methods:
        lines += ['[[methods]]', f'method = "{m}"', 'datasets = ["tiny2", "tiny3"]', '']
    (tmp_path / "study.toml").write_text("\n".join(lines))
    out = tmp_path / "results"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["run", str(tmp_path / "study.toml"), "--out", str(out), "--jobs", "1", "--no-progress"]) == 0
        assert main(["report", str(out), "--no-plots"]) == 0
    cells = [json.loads(p.read_text()) for p in sorted((out / "cells").glob("*.json"))]
    return cells, (out / "report.md").read_text()
