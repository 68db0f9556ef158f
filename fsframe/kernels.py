"""Data transforms, and the built-in one: the empirical kernel map.

A data transform replaces ``X`` before any formulation sees it. The empirical kernel map turns
any linear formulation nonlinear: ``K(X, X_train)`` replaces ``X``, the model is
``f(x) = sum_i beta_i k(x, x_i) + b`` and the "features" being selected are training samples
(paper 000 §3.2 eqs. 47-58; paper 002 §2.5). Nothing in a formulation knows about kernels.

Transforms are components like the others: registered through the hook
``fsframe_register_transforms`` (this module is a default plugin registering
:class:`EmpiricalKernelMap`), chosen by ``fit(..., kernel=NAME)``: the registered transform whose
:attr:`DataTransform.kernels` contains ``NAME`` is built with ``kernel=NAME`` and the other
parameters it declares.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import attrs
import numpy as np
from attrs.validators import ge, gt, in_, instance_of, optional
from numpy.typing import ArrayLike, NDArray

from .errors import DataError
from .hookspecs import hookimpl
from .validators import as_int, finite

__all__ = ["DataTransform", "EmpiricalKernelMap", "KERNELS", "scale_sigma"]

KERNELS = ("rbf", "linear", "poly")


class DataTransform(abc.ABC):
    """Base of data transforms (a frozen attrs class in practice).

    A subclass declares

    ``name`` : ClassVar[str]
        Registry key (shown by ``fsframe plugins``).
    ``kernels`` : ClassVar[tuple[str, ...]]
        The values of ``fit(..., kernel=...)`` it implements; the chosen value is passed to its
        constructor as ``kernel=``, so it has an attrs field ``kernel``. Its other init fields are
        the parameters ``fit`` routes to it (``sigma``, ...).
    ``groups`` : ClassVar[str]
        What the columns of its output are, for reports: ``"samples"`` (a kernel map: one column
        per training sample) or ``"features"``.

    and implements :meth:`fit` (a fitted copy; never modifies ``X``) and :meth:`transform`.
    """

    name: ClassVar[str]
    kernels: ClassVar[tuple[str, ...]]
    groups: ClassVar[str] = "samples"

    @abc.abstractmethod
    def fit(self, X: ArrayLike) -> "DataTransform":
        """A fitted copy of this transform, learned from the training data ``X``."""

    @abc.abstractmethod
    def transform(self, X: ArrayLike) -> NDArray:
        """``X`` (array, shape (n_samples, n_features)) mapped; needs a fitted transform."""

    @property
    def params(self) -> dict:
        """The parameter values (reported in results)."""
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.init and f.repr}


def scale_sigma(X: ArrayLike) -> float:
    """The RBF width of scikit-learn's ``gamma="scale"`` rule.

    scikit-learn's ``SVC`` uses ``gamma = 1 / (n_features * X.var())`` for
    ``exp(-gamma ||x - x'||^2)``; with ``exp(-||x - x'||^2 / (2 sigma^2))`` that is
    ``sigma = sqrt(n_features * X.var() / 2)``. A constant ``X`` (variance 0) gets ``gamma = 1``
    as in scikit-learn, i.e. ``sigma = sqrt(1/2)``.

    Raises
    ------
    DataError
        ``X``'s scale is so extreme (variance overflowing, or ``sigma**2`` not a normal float)
        that the kernel cannot be evaluated: standardise ``X``.
    """
    X = np.asarray(X, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        var = float(X.var())
    if var == 0.0:
        return float(np.sqrt(0.5))
    sigma = float(np.sqrt(X.shape[1] * var / 2.0))  # not via gamma, which overflows for tiny var
    if not _usable_width(sigma):
        raise DataError(f"the RBF width from X's variance ({var:.3g}) is {sigma:.3g}: X's scale is too extreme for "
                        "the kernel to be evaluated; standardise X (e.g. sklearn's StandardScaler)")
    return sigma


def _usable_width(sigma: float) -> bool:
    """``2 sigma^2`` is a positive, finite, normal float (the RBF divides by it)."""
    two_s2 = 2.0 * sigma * sigma
    return bool(np.isfinite(two_s2) and two_s2 >= np.finfo(float).tiny)


def _sigma(value):
    """``None`` or ``"scale"`` (the data-driven default), else a real number (not a bool or
    another string)."""
    if value is None or (isinstance(value, str) and value == "scale"):
        return None
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"'sigma' must be a positive number or 'scale', got {value!r}")
    return float(value)


def _real(value):
    """attrs converter: a real number as float; a bool is refused (``True`` is not ``1.0``)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _not_bool(instance, attribute, value):
    """attrs validator: a bool is not a number here (``True`` is not ``1``)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{attribute.name!r} must be an integer, got {value!r}")


def _width(instance, attribute, value):
    """attrs validator: an RBF width whose ``2 sigma^2`` is a positive normal float."""
    if value is not None and not _usable_width(value):
        raise ValueError(f"'sigma' must be positive with 2*sigma**2 a finite, normal float "
                         f"(about 1e-154 < sigma < 1e154), got {value!r}")


@attrs.frozen(eq=False)
class EmpiricalKernelMap(DataTransform):
    """``Phi(x) = (k(x, x_1), ..., k(x, x_m))`` over the training samples ``x_i``.

    Parameters
    ----------
    kernel : {"rbf", "linear", "poly"}
        ``rbf``: ``exp(-||x - x'||^2 / (2 sigma^2))`` (Gaussian of width ``sigma``);
        ``linear``: ``x . x'``; ``poly``: ``(x . x' + coef0) ** degree``.
    sigma : float > 0, ``"scale"`` or None
        RBF width. ``None``/``"scale"`` (default): from the training data by scikit-learn's
        ``gamma="scale"`` rule, ``sigma = sqrt(n_features * X.var() / 2)`` (:func:`scale_sigma`);
        the fitted map reports the value used. Paper 000 §4.1.2 selects it from
        ``{2^i, i = -3..3}`` on standardised data.
    degree : int >= 1
    coef0 : float >= 0
    """

    name = "empirical-kernel-map"
    kernels = KERNELS

    kernel: str = attrs.field(default="rbf", validator=in_(KERNELS))
    sigma: float | None = attrs.field(default=None, converter=_sigma, validator=optional([gt(0), finite, _width]))
    degree: int = attrs.field(default=3, converter=as_int,
                              validator=[_not_bool, instance_of(int), ge(1)])
    coef0: float = attrs.field(default=1.0, converter=_real, validator=[ge(0), finite])
    X_train: NDArray | None = attrs.field(default=None, repr=False)

    def fit(self, X: ArrayLike) -> "EmpiricalKernelMap":
        """A copy holding the training samples (and the RBF width, if it was left to the data)."""
        X = np.array(X, dtype=float, copy=True)
        X.flags.writeable = False
        sigma = self.sigma
        if self.kernel == "rbf" and sigma is None:
            sigma = scale_sigma(X)
        return attrs.evolve(self, X_train=X, sigma=sigma)

    def transform(self, X: ArrayLike) -> NDArray:
        if self.X_train is None:
            raise DataError("EmpiricalKernelMap.transform before fit")
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.X_train.shape[1]:
            raise DataError(f"X has shape {X.shape}; the kernel map was fitted on {self.X_train.shape[1]} features")
        with np.errstate(over="ignore", invalid="ignore"):
            K = self._kernel(X)
        if not np.all(np.isfinite(K)):
            raise DataError(f"the {self.kernel} kernel matrix has non-finite entries (X's scale overflows it"
                            + (f" at degree {self.degree}" if self.kernel == "poly" else "")
                            + "); standardise X")
        return K

    def _kernel(self, X: NDArray) -> NDArray:
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


@hookimpl
def fsframe_register_transforms():
    return [EmpiricalKernelMap]
