"""attrs converters and validators shared by components (public: plugins use them too)."""

from __future__ import annotations

import math
import numbers

import numpy as _np

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


def positive_int(instance, attribute, value):
    """attrs validator: an ``int`` >= 1 that is not a ``bool`` (``max_iter=True`` is a mistake,
    not 1); a typed :class:`~fsframe.errors.InvalidOptionError` naming the option."""
    not_bool(instance, attribute, value)
    if not isinstance(value, int):
        raise InvalidOptionError(f"'{attribute.name}' must be <class 'int'>, got {value!r}")
    if value < 1:
        raise InvalidOptionError(f"'{attribute.name}' must be >= 1, got {value!r}")


def real(lower: float = 0.0, upper: float = float("inf"), hint: str = ""):
    """attrs validator: a finite ``float`` in the open interval ``(lower, upper)``, not a
    ``bool``; a typed :class:`~fsframe.errors.InvalidOptionError` naming the option (``hint``
    is appended to its message). Use with ``converter=to_float``."""
    def check(instance, attribute, value):
        not_bool(instance, attribute, value)
        if not isinstance(value, float):
            raise InvalidOptionError(f"'{attribute.name}' must be a number, got {value!r}")
        if not math.isfinite(value):
            raise InvalidOptionError(f"'{attribute.name}' must be finite, got {value!r}")
        if not lower < value < upper:
            raise InvalidOptionError(f"'{attribute.name}' must be > {lower:g}"
                                     + (f" and < {upper:g}" if math.isfinite(upper) else "") + f", got {value!r}"
                                     + (f"{hint}" if hint else ""))
    return check


def to_float(value):
    """attrs converter: ``float(value)`` for real numbers; booleans and anything else are kept
    for the validator to refuse by name."""
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (int, float, _np.integer, _np.floating)):
        return value
    return float(value)
