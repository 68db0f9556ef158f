"""attrs converters and validators shared by components (public: plugins use them too)."""

from __future__ import annotations

import math
import numbers

import numpy as _np
from attrs.validators import and_, ge, gt, instance_of, lt

from .errors import InvalidOptionError

__all__ = ["as_int", "finite", "not_bool", "positive_int", "real", "to_float"]


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


def not_bool(instance, attribute, value):
    """attrs validator: refuse ``True``/``False`` where a number is expected (``C=True`` is a
    mistake, not 1.0); a typed :class:`~fsframe.errors.InvalidOptionError` naming the option."""
    if isinstance(value, (bool, _np.bool_)):
        raise InvalidOptionError(f"'{attribute.name}' must be a number, not the boolean {value!r}")


not_bool.conditions = ()  # nothing to add to a description: "int" already says it (fsframe methods NAME)

positive_int = and_(not_bool, instance_of(int), ge(1))
"""attrs validator: an ``int`` >= 1 that is not a ``bool`` (``max_iter=True`` is a mistake, not 1)."""


def real(lower: float = 0, upper: float | None = None):
    """attrs validator: a finite ``float`` above ``lower`` (and below ``upper``). With
    ``converter=to_float`` a ``bool`` stays a ``bool`` and is refused by name (``C=True`` is a
    mistake, not 1.0). Composed of attrs' own validators, so that ``fsframe methods NAME`` can
    describe the range."""
    return and_(*[instance_of(float), gt(lower), finite] + ([] if upper is None else [lt(upper)]))


def to_float(value):
    """attrs converter: ``float(value)`` for real numbers; booleans and anything else are kept
    as they are, for ``instance_of(float)`` to refuse by name."""
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        return value
    return float(value)
