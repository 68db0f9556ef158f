"""The tiny data sets of the surface matrix (binary and three classes) and one reference fit of
each (method, classes) cell, shared by the tests that compare a surface with it."""

from __future__ import annotations

import functools
import warnings

import numpy as np

import fsframe


def tiny(n_classes: int, *, per_class: int = 10, n_features: int = 5, seed: int = 0):
    """``per_class`` samples of each class around the vertices of a regular polygon of radius 3 in
    features 0 and 1 (noise 0.6), and ``n_features - 2`` noise features: every class is linearly
    separable from the rest, so the hard margin of paper 004 (``dso-fs``) applies too."""
    rng = np.random.default_rng(seed)
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
