"""Helpers shared by the checks of :mod:`fsframe.testing`: failure messages and label codes."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..formulation import Formulation

EPS = np.finfo(float).eps


def fail(who: str, what: str) -> None:
    """Raise the kit's :class:`AssertionError`, naming the component and the property."""
    raise AssertionError(f"{who}: {what}")


def where(mask: NDArray, *arrays) -> str:
    """The entries of ``arrays`` at the first ``True`` of ``mask``, for a failure message."""
    i = int(np.flatnonzero(mask)[0])
    return ", ".join(f"{np.ravel(a)[i].item()!r}" for a in arrays)


def codes(formulation: Formulation, y: NDArray) -> NDArray:
    """Labels as the formulation's ``build`` receives them: ``±1`` (the larger label is ``+1``)
    for a binary formulation, integer codes for a native multi-class one, the real target itself
    for a regression (``Formulation.task == "regression"``)."""
    if getattr(formulation, "task", "classification") == "regression":
        return np.asarray(y, dtype=float)
    classes = np.unique(y)
    if formulation.multiclass == "native":
        return np.searchsorted(classes, y)
    if classes.size != 2:
        raise ValueError(f"{formulation.name} is binary: y must have two classes, got {classes.size}")
    return np.where(y == classes[1], 1.0, -1.0)
