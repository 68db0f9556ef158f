"""attrs converters and validators shared by components (public: plugins use them too)."""

from __future__ import annotations

import math
import numbers

__all__ = ["as_int", "finite"]


def as_int(value):
    """attrs converter: an integral number (``numpy.int64(5)``, ``5``) becomes ``int``; anything
    else (``bool``, ``2.5``, a string) is returned as is for the validator to reject."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def finite(instance, attribute, value):
    """attrs validator: a finite number (``inf`` and ``nan`` are refused)."""
    if not math.isfinite(value):
        raise ValueError(f"{attribute.name!r} must be finite, got {value!r}")
