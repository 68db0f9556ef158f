"""The empirical kernel map: a data transform that turns any linear formulation nonlinear.

``K(X, X_train)`` replaces ``X``: the model is ``f(x) = sum_i beta_i k(x, x_i) + b`` and the
"features" being selected are training samples (000 §3.2 eqs. 47-58; 002 §2.5). Nothing in a
formulation knows about kernels.
"""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import ge, gt, in_, instance_of
from numpy.typing import ArrayLike, NDArray

from .validators import as_int, finite
from .errors import DataError

__all__ = ["EmpiricalKernelMap", "KERNELS"]

KERNELS = ("rbf", "linear", "poly")


@attrs.frozen(eq=False)
class EmpiricalKernelMap:
    """``Phi(x) = (k(x, x_1), ..., k(x, x_m))`` over the training samples ``x_i``.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly"}
        ``rbf``: ``exp(-||x - x'||^2 / (2 sigma^2))`` (Gaussian of width ``sigma``);
        ``linear``: ``x . x'``; ``poly``: ``(x . x' + coef0) ** degree``.
    sigma : float > 0
        RBF width. Paper 000 §4.1.2 selects it from ``{2^i, i = -3..3}``.
    degree : int >= 1
    coef0 : float >= 0
    """

    kernel: str = attrs.field(default="rbf", validator=in_(KERNELS))
    sigma: float = attrs.field(default=1.0, converter=float, validator=[gt(0), finite])
    degree: int = attrs.field(default=3, converter=as_int, validator=[instance_of(int), ge(1)])
    coef0: float = attrs.field(default=1.0, converter=float, validator=[ge(0), finite])
    X_train: NDArray | None = attrs.field(default=None, repr=False)

    def fit(self, X: ArrayLike) -> "EmpiricalKernelMap":
        """A copy holding the training samples."""
        X = np.array(X, dtype=float, copy=True)
        X.flags.writeable = False
        return attrs.evolve(self, X_train=X)

    def transform(self, X: ArrayLike) -> NDArray:
        if self.X_train is None:
            raise DataError("EmpiricalKernelMap.transform before fit")
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.X_train.shape[1]:
            raise DataError(f"X has shape {X.shape}; the kernel map was fitted on {self.X_train.shape[1]} features")
        G = X @ self.X_train.T
        if self.kernel == "linear":
            return G
        if self.kernel == "poly":
            return (G + self.coef0) ** self.degree
        sq = np.sum(X * X, axis=1)[:, None] + np.sum(self.X_train**2, axis=1)[None, :] - 2.0 * G
        return np.exp(-np.maximum(sq, 0.0) / (2.0 * self.sigma**2))

    @property
    def params(self) -> dict:
        return {"kernel": self.kernel, "sigma": self.sigma, "degree": self.degree, "coef0": self.coef0}
