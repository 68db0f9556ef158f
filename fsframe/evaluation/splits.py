"""The train/test splits of an evaluation protocol (k-fold, repeated k-fold, random hold-out
splits, a scikit-learn splitter or explicit index pairs)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import DataError, DataWarning, InvalidOptionError

__all__ = ["Split", "make_splits", "MAX_SEED"]


@attrs.frozen(eq=False)
class Split:
    """One train/test split: repeat and fold numbers (0-based) and sample indices."""

    repeat: int
    fold: int
    train: NDArray = attrs.field(repr=lambda a: f"<{a.size} samples>")
    test: NDArray = attrs.field(repr=lambda a: f"<{a.size} samples>")


MAX_SEED = 2**32 - 1
"""The largest ``random_state`` (scikit-learn's splitters seed numpy's ``RandomState``, which takes
``0 <= seed < 2**32``)."""


def _check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidOptionError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise InvalidOptionError(f"{name} must be an integer between {minimum} and {maximum}, got {value!r}")
    return int(value)


def make_splits(y: ArrayLike, cv: Any = 10, *, repeats: int = 1, random_state: int | None = 0,
                X: ArrayLike | None = None, regression: bool = False) -> tuple[list[Split], dict]:
    """The splits of a protocol and its description.

    ``cv`` is

    * an int ``k >= 2`` (at most the size of the largest class; a warning when it exceeds the
      smallest): stratified ``k``-fold CV, shuffled with ``random_state``, repeated
      ``repeats`` times (scikit-learn's ``RepeatedStratifiedKFold``; the first repeat of a
      10 x 10 run is the 1 x 10 run with the same seed);
    * a float in (0, 1): ``repeats`` stratified random splits with this test fraction
      (``StratifiedShuffleSplit``; papers 002 and 004);
    * a scikit-learn splitter (anything with ``split(X, y)``), or an iterable of
      ``(train_indices, test_indices)`` pairs (then ``repeats`` must be 1).

    ``random_state`` is an int in ``[0, MAX_SEED]`` or ``None``. With ``regression`` (a real
    target: nothing to stratify) the int and float protocols are plain shuffled ``KFold`` /
    ``ShuffleSplit`` (scikit-learn's ``RepeatedKFold``, ``ShuffleSplit``), ``"stratified": False``.

    Returns ``(splits, protocol)`` where ``protocol`` is a JSON-serialisable description.
    """
    y = np.asarray(y)
    n = y.shape[0]
    repeats = _check_int("repeats", repeats, 1)
    if random_state is not None:
        random_state = _check_int("random_state", random_state, 0, MAX_SEED)
    if regression and isinstance(cv, (int, np.integer, float, np.floating)) and not isinstance(cv, bool):
        return _regression_splits(n, cv, repeats, random_state)
    _, counts = np.unique(y, return_counts=True)
    smallest, largest = int(counts.min()), int(counts.max())
    if isinstance(cv, (bool, str, bytes)):  # a str has .split(), but is no splitter
        raise InvalidOptionError(f"cv must be an int (folds), a float in (0, 1) (test fraction) or a splitter, got {cv!r}")
    if isinstance(cv, (int, np.integer)):
        k = _check_folds(cv, n)
        if k > largest:  # scikit-learn's StratifiedKFold refuses this too, in its own words
            raise DataError(f"cv={k} folds, but no class has more than {largest} samples (class sizes "
                            f"{sorted(counts.tolist())}): stratified {k}-fold CV cannot place every class in "
                            f"every fold. The largest usable fold count is {largest}; cv <= {smallest} keeps "
                            "every class in every test fold")
        if k > smallest:
            warnings.warn(f"the smallest class has {smallest} samples, fewer than cv={k} folds: some test "
                          "folds will miss that class", DataWarning, stacklevel=3)
        from sklearn.model_selection import RepeatedStratifiedKFold

        splitter = RepeatedStratifiedKFold(n_splits=k, n_repeats=repeats, random_state=random_state)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # sklearn's version of the warning above
            pairs = list(splitter.split(np.zeros((n, 1)), y))
        splits = [Split(i // k, i % k, tr, te) for i, (tr, te) in enumerate(pairs)]
        protocol = {"kind": "k-fold", "stratified": True, "n_splits": k, "repeats": repeats,
                    "test_size": None, "random_state": random_state}
    elif isinstance(cv, (float, np.floating)):
        frac = float(cv)
        if not 0.0 < frac < 1.0:
            raise InvalidOptionError(f"cv={cv!r}: a float cv is the test fraction of random splits and must lie in (0, 1)")
        from sklearn.model_selection import StratifiedShuffleSplit

        n_test = math.ceil(frac * n)
        if n_test < len(counts) or n - n_test < len(counts):
            raise DataError(f"cv={frac}: {n_test} test and {n - n_test} training samples cannot both hold "
                            f"all {len(counts)} classes")
        splitter = StratifiedShuffleSplit(n_splits=repeats, test_size=frac, random_state=random_state)
        pairs = list(splitter.split(np.zeros((n, 1)), y))
        splits = [Split(i, 0, tr, te) for i, (tr, te) in enumerate(pairs)]
        protocol = {"kind": "holdout", "stratified": True, "n_splits": 1, "repeats": repeats,
                    "test_size": frac, "random_state": random_state}
    else:
        if repeats != 1:
            raise InvalidOptionError("repeats applies to cv=<int> or cv=<float>; a splitter or explicit splits "
                                     "carry their own repetitions")
        if hasattr(cv, "split"):
            Xs = np.zeros((n, 1)) if X is None else X
            pairs = list(cv.split(Xs, y))
            desc = type(cv).__name__
        else:
            try:
                pairs = [(np.asarray(tr), np.asarray(te)) for tr, te in cv]
            except (TypeError, ValueError) as exc:
                raise InvalidOptionError(
                    f"cv must be an int, a float in (0, 1), a splitter with split(X, y) or an iterable of "
                    f"(train, test) index pairs, got {type(cv).__name__}") from exc
            desc = "explicit"
        if not pairs:
            raise InvalidOptionError("cv produced no splits")
        k = None
        if hasattr(cv, "n_repeats") and isinstance(getattr(cv, "cvargs", None), dict) and "n_splits" in cv.cvargs:
            k = int(cv.cvargs["n_splits"])
        splits = []
        for i, (tr, te) in enumerate(pairs):
            tr, te = _check_indices(tr, n, i, "train"), _check_indices(te, n, i, "test")
            splits.append(Split(i // k if k else 0, i % k if k else i, tr, te))
        protocol = {"kind": desc, "stratified": None, "n_splits": len(pairs), "repeats": 1,
                    "test_size": None, "random_state": random_state}
    return splits, protocol


def _check_folds(cv, n: int) -> int:
    """``cv`` as a number of folds for ``n`` samples: at least 2, at most ``n``."""
    k = int(cv)
    if k < 2:
        raise InvalidOptionError(f"cv={k}: k-fold cross-validation needs at least 2 folds")
    if k > n:
        raise DataError(f"cv={k} folds but only {n} samples")
    return k


def _regression_splits(n: int, cv, repeats: int, random_state) -> tuple[list[Split], dict]:
    """Shuffled k-fold (repeated) or random hold-out splits of ``n`` samples of a real target."""
    if isinstance(cv, (int, np.integer)):
        k = _check_folds(cv, n)
        from sklearn.model_selection import RepeatedKFold

        pairs = list(RepeatedKFold(n_splits=k, n_repeats=repeats, random_state=random_state).split(np.zeros((n, 1))))
        _warn_one_sample_tests(sum(te.size < 2 for _, te in pairs), len(pairs), f"cv={k} folds of {n} samples",
                               f"use at most {n // 2} folds" if n // 2 >= 2 else
                               "use more samples (every test fold needs two, and k-fold at least two folds)")
        return ([Split(i // k, i % k, tr, te) for i, (tr, te) in enumerate(pairs)],
                {"kind": "k-fold", "stratified": False, "n_splits": k, "repeats": repeats, "test_size": None,
                 "random_state": random_state})
    frac = float(cv)
    if not 0.0 < frac < 1.0:
        raise InvalidOptionError(f"cv={cv!r}: a float cv is the test fraction of random splits and must lie in (0, 1)")
    n_test = math.ceil(frac * n)
    if n_test < 1 or n - n_test < 2:
        raise DataError(f"cv={frac}: {n_test} test and {n - n_test} training samples; a regression needs at least "
                        "two training samples and one test sample")
    _warn_one_sample_tests(repeats if n_test < 2 else 0, repeats, f"cv={frac} of {n} samples",
                           f"give a test fraction above {round_up(1 / n)}")
    from sklearn.model_selection import ShuffleSplit

    pairs = list(ShuffleSplit(n_splits=repeats, test_size=frac, random_state=random_state).split(np.zeros((n, 1))))
    return ([Split(i, 0, tr, te) for i, (tr, te) in enumerate(pairs)],
            {"kind": "holdout", "stratified": False, "n_splits": 1, "repeats": repeats, "test_size": frac,
             "random_state": random_state})


def round_up(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, rounded up (a bound that advice says to exceed:
    "above 0.111" for 1/9 would still hold out one sample of nine; this says 0.112)."""
    if not x > 0:
        return f"{x:g}"
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(x)))
    return f"{math.ceil(x * scale - 1e-9) / scale:g}"


def _warn_one_sample_tests(n_one: int, n_splits: int, what: str, fix: str) -> None:
    """A :class:`~fsframe.errors.DataWarning` when ``n_one`` of the splits of a real target test on
    one sample: their R² is undefined (``1 - SS_res / SS_tot`` with ``SS_tot = 0``)."""
    if n_one:
        warnings.warn(f"{what}: {n_one} of {n_splits} test parts hold one sample, where R² is undefined "
                      f"(shown as -, left out of its mean; MSE and MAE are scored); {fix} for an R² in every split",
                      DataWarning, stacklevel=4)


def _check_indices(idx, n: int, i: int, what: str) -> NDArray:
    a = np.asarray(idx)
    if a.dtype == bool:
        if a.shape != (n,):
            raise InvalidOptionError(f"split {i}: boolean {what} mask has shape {a.shape}, expected ({n},)")
        a = np.flatnonzero(a)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "iu":
        raise InvalidOptionError(f"split {i}: {what} indices must be a non-empty 1-D integer array")
    if a.min() < 0 or a.max() >= n:
        raise InvalidOptionError(f"split {i}: {what} indices out of range for {n} samples")
    return a.astype(np.intp)

