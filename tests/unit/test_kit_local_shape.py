"""``check_surrogate`` sees a local loss of concavity of ``phi`` (and so of convexity of a DC
split's ``h``) that random midpoints miss: a surrogate declaring only ``dc_split`` has no
derivative whose monotonicity would show it."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from fsframe.surrogates import ExpSurrogate, LogSurrogate
from fsframe.surrogates.base import DCSplit, Surrogate
from fsframe.testing import check_surrogate


def _bump(t, c):
    """``c ((t - 1)_+)^2`` up to ``t = 1.1``, then linear (C^1): curvature ``2c`` on ``[1, 1.1]``."""
    u = np.clip(np.asarray(t, dtype=float) - 1.0, 0.0, 0.1)
    return c * (u * u + 0.2 * np.maximum(np.asarray(t, dtype=float) - 1.1, 0.0))


def _dbump(t, c):
    return 2.0 * c * np.clip(np.asarray(t, dtype=float) - 1.0, 0.0, 0.1)


@attrs.frozen
class BumpedExp(Surrogate):
    """``1 - exp(-t) + bump``, with ``g = t`` and ``h = t - phi`` (exact split, exact ``grad_h``).
    With ``c = 0.5`` the bump's curvature 1 beats ``exp(-1)`` on ``[1, 1.1]``: ``phi`` is convex
    there and ``h`` concave; with ``c = 0.1`` (curvature 0.2) both stay as they must."""

    name = "bumped-exp"
    c: float = 0.5

    def phi(self, t):
        t = np.asarray(t, dtype=float)
        return -np.expm1(-t) + _bump(t, self.c)

    def dc_split(self):
        return DCSplit(lin=1.0, h=lambda t: np.asarray(t, dtype=float) - self.phi(t),
                       grad_h=lambda t: -np.expm1(-np.asarray(t, dtype=float)) - _dbump(t, self.c))


def test_a_local_convex_bump_is_rejected():
    assert BumpedExp().capabilities() == frozenset({"dc_split"})
    with pytest.raises(AssertionError, match=r"phi is not concave: its secant slopes on t, t', t'' = 0\.95"):
        check_surrogate(BumpedExp(c=0.5))


def test_a_bump_that_keeps_phi_concave_passes():
    assert "dc h convex" in check_surrogate(BumpedExp(c=0.1))


@pytest.mark.parametrize("sur", [ExpSurrogate(alpha=50.0), LogSurrogate(eps=1e-3), LogSurrogate(eps=1.0)])
def test_the_secant_test_accepts_sharp_surrogates(sur):
    ran = check_surrogate(sur, t=np.r_[np.logspace(-12, 4, 400), np.linspace(0.0, 1e-2, 300)])
    assert "midpoint-concave" in ran
