"""The kit's data sets: :func:`toy_data` (hand-solvable, for :class:`StandardProblems`) and
:func:`kit_data` (the default of the checks: non-separable and imbalanced, so that a loss that
is always zero, a wrong ``C`` or a silent class reweighting cannot pass)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["toy_data", "kit_data"]


def toy_data() -> tuple[NDArray, NDArray]:
    """Ten points in the plane, separable with margin: ``+1`` at (2,1), (3,1), (2,2), (4,1),
    (3,2) and ``-1`` at their negatives. Only the pair ``±(2, 1)`` constrains ``w >= 0``, so every
    hinge problem on it reduces to the single constraint ``2 w_1 + w_2 >= 1`` (``b = 0``).

    Balanced and separable: hinge optima on it have zero loss, so it cannot tell a correct loss
    from a zero one. The checks default to :func:`kit_data`."""
    P = np.array([[2.0, 1.0], [3.0, 1.0], [2.0, 2.0], [4.0, 1.0], [3.0, 2.0]])
    return np.vstack([P, -P]), np.r_[np.ones(5), -np.ones(5)]


def kit_data(seed: int = 0, n_samples: int = 40, n_features: int = 6,
             n_positive: int = 12) -> tuple[NDArray, NDArray]:
    """A seeded binary problem that is imbalanced and not linearly separable, the default data
    of :func:`check_loop` and of formulations in :func:`parametrize_with_checks`.

    ``n_positive`` samples of class ``+1`` (default 12 of 40) and the rest ``-1``; features are
    standard normal, the first two shifted by ``y`` and ``y / 2`` so that they carry the signal.
    The last ``-1`` sample is replaced by the midpoint of the first two ``+1`` samples: an affine
    ``f`` has ``f(midpoint) = (f(x_1) + f(x_2)) / 2``, so no classifier puts the three on their
    own sides with margin, and every hinge model has a loss of at least ``2 C`` (equality at
    ``f(x_1) = f(x_2) = 1``). So the decision loss at an optimum is never zero, a wrong factor on
    ``C`` changes it, and with unequal class sizes a per-class reweighting changes it too.

    Returns ``X`` (n_samples, n_features) and ``y`` in ``{-1, +1}``.
    """
    if not 2 <= n_positive <= n_samples - 2 or n_features < 1:
        raise ValueError("kit_data: need 2 <= n_positive <= n_samples - 2 and n_features >= 1")
    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n_positive), -np.ones(n_samples - n_positive)]
    X = rng.standard_normal((n_samples, n_features))
    X[:, 0] += y
    if n_features > 1:
        X[:, 1] += 0.5 * y
    X[-1] = 0.5 * (X[0] + X[1])
    return X, y
