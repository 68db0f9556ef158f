"""001's choice among a bound search's feasible points (§3.2, the Remark on ``t``): criterion 1
(the largest bound), criterion 2 (``bound / NSF``) and the family ``bound / t(NSF)`` between them,
with the ties' order (:class:`~fsframe.loops.bound_search.BoundSearch` chooses by it)."""

from __future__ import annotations

import math
import numbers
from typing import Callable

import numpy as np

from ..errors import InvalidOptionError

__all__ = ["T_FAMILY", "criterion_score"]

T_FAMILY: dict[str, Callable[[float], float]] = {"log": math.log, "sqrt": math.sqrt}
"""Named adjustment factors ``t(NSF)`` of 001's Remark (``bound / t(NSF)``)."""



def _t_function(criterion) -> Callable[[float], float]:
    """``t`` of the criterion: ``1`` for criterion 1, ``NSF`` for criterion 2, else the named or
    given function, clipped to ``[1, NSF]`` (001's Remark: ``1 <= t <= NSF``). A value that is not
    a real number (a string, ``None``, a bool) or is NaN is an
    :class:`~fsframe.errors.InvalidOptionError` naming it."""
    if criterion == 1:
        return lambda nsf: 1.0
    if criterion == 2:
        return lambda nsf: float(nsf)
    fn = T_FAMILY[criterion] if isinstance(criterion, str) else criterion

    def t(nsf):
        v = fn(nsf)
        real = not isinstance(v, (bool, np.bool_)) and isinstance(v, numbers.Real)
        if not real or math.isnan(v):
            raise InvalidOptionError(
                f"criterion {getattr(fn, '__name__', fn)!r}: t(NSF={nsf}) returned "
                f"{'NaN' if real else f'{v!r}, not a real number'}; the criterion bound / t(NSF) needs a real t "
                "(clipped to [1, NSF], 001's Remark)")
        return min(max(float(v), 1.0), float(nsf))

    return t


def criterion_score(bound: float, nsf: int, criterion) -> float:
    """``bound / t(NSF)`` (001 §3.2: criterion 1 ``t = 1``, criterion 2 ``t = NSF``, the Remark's
    family in between); ``-inf`` for an empty selection."""
    if nsf < 1:
        return -math.inf
    return bound / _t_function(criterion)(nsf)


def _check_criterion(inst, attr, value):
    if value in (1, 2) and not isinstance(value, bool):
        return
    if isinstance(value, str) and value in T_FAMILY:
        return
    if callable(value) and not isinstance(value, (str, int, float)):
        return
    raise ValueError(f"criterion must be 1, 2, one of {sorted(T_FAMILY)} or a callable t(NSF), got {value!r}")


def _criterion(v):
    if isinstance(v, str) and v.strip() in ("1", "2"):
        return int(v)
    if isinstance(v, float) and v in (1.0, 2.0):
        return int(v)
    return v


def _rank(kept) -> tuple:
    """The criterion's order of a kept ``(k, params, iterate, nsf)``: score, then the larger bound,
    then fewer features (001 §3.2's choice with its ties)."""
    _, params, _, nsf = kept
    return params["score"], params["bound"], -nsf
