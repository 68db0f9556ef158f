"""What is fitted on each training part besides the selector: feature scaling and the classifier
retrained on the selected features."""

from __future__ import annotations

from numpy.typing import ArrayLike, NDArray
import numpy as np

from ..errors import InvalidOptionError

__all__ = ["SCALINGS", "scale_fit_transform"]

SCALINGS = ("standard", "minmax", "none")
"""``standard``: z-score with the training part's mean and (population) standard deviation;
``minmax``: map the training part's range to [0, 1]; ``none``: the data as given. A constant
training column is centred and left unscaled (divisor 1), as scikit-learn's scalers do."""


def _scale(Xtr: NDArray, Xte: NDArray, kind: str) -> tuple[NDArray, NDArray]:
    if kind == "none":
        return Xtr, Xte
    if kind == "standard":
        shift = Xtr.mean(axis=0)
        div = Xtr.std(axis=0)
    else:  # minmax
        shift = Xtr.min(axis=0)
        div = Xtr.max(axis=0) - shift
    tiny = div < 10 * np.finfo(np.float64).eps * np.maximum(1.0, np.abs(shift))
    div = np.where(tiny, 1.0, div)
    return (Xtr - shift) / div, (Xte - shift) / div


def scale_fit_transform(X: ArrayLike, kind: str = "standard") -> NDArray:
    """``X`` scaled with its own statistics (see :data:`SCALINGS`); a new array."""
    if kind not in SCALINGS:
        raise InvalidOptionError(f"scale={kind!r}; use one of {list(SCALINGS)}")
    Xa = np.array(X, dtype=np.float64)
    return _scale(Xa, Xa[:0], kind)[0]



def _retrain_estimator(retrain, C: float):
    if isinstance(retrain, str):
        if retrain == "svm":
            from sklearn.svm import SVC

            return SVC(kernel="linear", C=C)
        if retrain == "linear-svc":
            from sklearn.svm import LinearSVC

            return LinearSVC(C=C)
        raise InvalidOptionError(f"retrain={retrain!r}; use 'svm' (SVC(kernel='linear')), 'linear-svc' "
                                 "(LinearSVC) or a scikit-learn classifier")
    if not (hasattr(retrain, "fit") and hasattr(retrain, "predict")):
        raise InvalidOptionError(f"retrain must be 'svm', 'linear-svc' or a classifier with fit/predict, got {retrain!r}")
    from sklearn.base import clone

    return clone(retrain)

