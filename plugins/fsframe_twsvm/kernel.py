"""The RBF kernel of the twin SVM (paper 003 eqs. 13-14 and 19) and the fitted map predictions go
through; shared by the formulation and its mask space."""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from fsframe.errors import DataError

__all__ = ["rbf_kernel", "MaskedRBF"]


def rbf_kernel(X: NDArray, Y: NDArray, width: float) -> NDArray:
    """``exp(-||x - y||^2 / (2 width^2))`` for every row pair of ``X`` and ``Y``."""
    sq = np.sum(X * X, axis=1)[:, None] + np.sum(Y * Y, axis=1)[None, :] - 2.0 * (X @ Y.T)
    return np.exp(-np.maximum(sq, 0.0) / (2.0 * width**2))


@attrs.frozen(eq=False)
class MaskedRBF:
    """The kernel rows of a fitted RBF twin SVM: ``x -> K(x E, A E)`` (003 eq. 19).

    A data transform for predictions (``FitResult.transform``): ``A`` the training samples,
    ``E = diag(mask)`` the selected input features, ``width`` the RBF width."""

    X_train: NDArray = attrs.field(repr=False)
    mask: NDArray
    width: float
    support_of: str = "training samples"
    """What the fit's support indexes: ``"training samples"`` (L1-TWSVM's ``u``) or
    ``"features"`` (the greedy loop's mask ``E``)."""

    def transform(self, X) -> NDArray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.X_train.shape[1]:
            raise DataError(f"X has shape {X.shape}; the model was fitted on {self.X_train.shape[1]} features")
        return rbf_kernel(X[:, self.mask], self.X_train[:, self.mask], self.width)

    @property
    def params(self) -> dict:
        return {"kernel": "rbf", "width": self.width, "n_masked_features": int(self.mask.sum())}
