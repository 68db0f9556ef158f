"""What is fitted on each training part besides the selector: feature scaling and the classifier
retrained on the selected features."""

from __future__ import annotations

from numpy.typing import ArrayLike, NDArray
import numpy as np

from ..dataset import is_sparse
from ..errors import InvalidOptionError, SparseInputError

__all__ = ["SCALINGS", "scale_fit_transform", "check_scaling"]

SCALINGS = ("standard", "minmax", "maxabs", "none")
"""``standard``: z-score with the training part's mean and (population) standard deviation;
``minmax``: map the training part's range to [0, 1]; ``maxabs``: divide each feature by its
largest magnitude on the training part (no shift: the one scaling that keeps a sparse matrix
sparse, scikit-learn's ``MaxAbsScaler``); ``none``: the data as given. A constant training
column is centred and left unscaled (divisor 1), as scikit-learn's scalers do; an all-zero one
(``maxabs``) is left as it is."""

_CENTRED = ("standard", "minmax")


def _scale(Xtr: NDArray, Xte: NDArray, kind: str) -> tuple[NDArray, NDArray]:
    if kind == "none":
        return Xtr, Xte
    if is_sparse(Xtr) or is_sparse(Xte):
        return _scale_sparse(Xtr, Xte, kind)
    if kind == "standard":
        shift = Xtr.mean(axis=0)
        div = Xtr.std(axis=0)
    elif kind == "minmax":
        shift = Xtr.min(axis=0)
        div = Xtr.max(axis=0) - shift
    else:  # maxabs
        shift = np.zeros(Xtr.shape[1])
        div = np.max(np.abs(Xtr), axis=0, initial=0.0)
    tiny = div < 10 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(shift))
    div = np.where(tiny, 1.0, div)
    return (Xtr - shift) / div, (Xte - shift) / div


def check_scaling(X, kind: str) -> None:
    """Refuse a scaling that would densify ``X``: a shift (``standard``, ``minmax``) of a sparse
    ``X`` turns its zeros into stored values (a :class:`~fsframe.errors.SparseInputError`)."""
    if kind in _CENTRED and is_sparse(X):
        raise SparseInputError(
            f"scale={kind!r} shifts every feature (centring), which turns the zeros of a sparse X into stored "
            "values: the dense matrix, in memory. Use scale='maxabs' (command line: --scale maxabs), which "
            "only divides, or 'none'")


def _scale_sparse(Xtr, Xte, kind: str):
    """``maxabs`` on CSR matrices (columns scaled in place of a copy, the stored entries only);
    a shift (``standard``, ``minmax``) would fill every zero: refused."""
    check_scaling(Xtr if is_sparse(Xtr) else Xte, kind)
    import scipy.sparse as sp

    Xtr, Xte = sp.csr_matrix(Xtr, dtype=np.float64), sp.csr_matrix(Xte, dtype=np.float64)
    div = np.asarray(abs(Xtr).max(axis=0).todense()).ravel() if Xtr.shape[0] else np.zeros(Xtr.shape[1])
    div = np.where(div > 0, div, 1.0)
    out = []
    for M in (Xtr, Xte):
        M = M.copy()
        M.data /= div[M.indices]
        out.append(M)
    return out[0], out[1]


def scale_fit_transform(X: ArrayLike, kind: str = "standard") -> NDArray:
    """``X`` scaled with its own statistics (see :data:`SCALINGS`); a new array (a new CSR
    matrix for a sparse ``X``, with ``maxabs`` or ``none``)."""
    if kind not in SCALINGS:
        raise InvalidOptionError(f"scale={kind!r}; use one of {list(SCALINGS)}")
    if is_sparse(X):
        return _scale(X, X[:0], kind)[0] if kind != "none" else X.copy()
    Xa = np.array(X, dtype=np.float64)
    return _scale(Xa, Xa[:0], kind)[0]


def _retrain_estimator(retrain, C: float):
    if isinstance(retrain, str):
        if retrain == "ls":  # a regression's refit: ordinary least squares (with intercept) on the selected features
            from sklearn.linear_model import LinearRegression

            return LinearRegression()
        if retrain == "svm":
            from sklearn.svm import SVC

            return SVC(kernel="linear", C=C)
        if retrain == "linear-svc":
            from sklearn.svm import LinearSVC

            return LinearSVC(C=C)
        raise InvalidOptionError(f"retrain={retrain!r}; use 'svm' (SVC(kernel='linear')), 'linear-svc' "
                                 "(LinearSVC) or a scikit-learn classifier; for a regression method 'ls' "
                                 "(LinearRegression) or a scikit-learn regressor")
    if not (hasattr(retrain, "fit") and hasattr(retrain, "predict")):
        raise InvalidOptionError(f"retrain must be 'svm', 'linear-svc' or a classifier with fit/predict, got {retrain!r}")
    from sklearn.base import clone

    return clone(retrain)

