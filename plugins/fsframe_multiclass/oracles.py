"""What the conformance kit expects of this plugin's formulations, stated without their code (the
hook ``fsframe_register_oracles`` registers it)."""

from __future__ import annotations

import numpy as np

__all__ = ["multiclass_margin_loss", "l21_regression_loss"]


def _labels(y) -> np.ndarray:
    """Paper 004 eq. 2's ±1 one-vs-rest matrix from the codes the kit passes (one ±1 column for two
    classes), written here again so that the oracle shares no code with the formulation."""
    y = np.asarray(y)
    codes = (y > 0).astype(np.int64) if np.any(y < 0) else y.astype(np.int64)
    if codes.max() <= 1:
        return np.where(codes == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((codes.size, int(codes.max()) + 1))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


def multiclass_margin_loss(C):
    """``decision_loss=`` for the multi-class margin of paper 004 (``margin``): ``C * sum_ik
    max(0, 1 - Y_ik F_ik)`` (soft), 0 for the hard margin (``C=None``)."""
    return lambda f, y: 0.0 if C is None else float(C * np.sum(np.maximum(
        0.0, 1.0 - _labels(y) * np.reshape(f, (len(f), -1)))))


def l21_regression_loss(gamma: float):
    """``decision_loss=`` for ``l21-regression`` (RFS): ``(1/gamma) sum_i ||F_i - Y_i||_2``."""
    return lambda f, y: float(np.sum(np.linalg.norm(np.reshape(f, (len(f), -1)) - _labels(y), axis=1)) / gamma)

