"""Shared by every command: exit codes, the usage error, parsing of ``KEY=VALUE`` arguments."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .. import errors

__all__ = ["UsageError", "parse_value", "parse_assignment", "EXIT_OK", "EXIT_FAILURE", "EXIT_USAGE", "EXIT_INTERRUPTED"]

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell convention for Ctrl-C
PROG = "fsframe"
RESERVED = {"method", "formulation", "surrogate", "loop", "n_features", "random_state", "cv", "repeats", "scale",
            "n_jobs", "retrain", "retrain_C", "progress", "on_error", "keep_model"}
KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class UsageError(errors.InvalidOptionError):
    """A command-line argument that cannot be used (exit status 2)."""


# ============================================================================== value parsing
def parse_value(text: str) -> Any:
    """A ``--set`` value: ``none``/``null`` -> None; ``true``/``false`` (also yes/no, on/off) ->
    bool; an integer literal -> int; a float literal (``1e-3``, ``inf``) -> float; text starting
    with ``[`` or ``{`` -> JSON; anything else (quotes stripped) -> str."""
    s = text.strip()
    low = s.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    try:
        return int(s)
    except ValueError:
        pass
    try:
        v = float(s)
    except ValueError:
        pass
    else:
        if math.isnan(v):
            raise UsageError(f"value {text!r} is NaN")
        return v
    if s[:1] in "[{":
        try:
            return json.loads(s)
        except json.JSONDecodeError as exc:
            raise UsageError(f"value {text!r} looks like JSON but does not parse: {exc}") from None
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def parse_assignment(text: str, *, allow_prefix: bool = False) -> tuple[str | None, str, Any]:
    """``key=value`` (or ``method:key=value`` with ``allow_prefix``) -> (prefix, key, value)."""
    if "=" not in text:
        raise UsageError(f"--set {text!r}: expected key=value (e.g. --set C=0.5)")
    key, value = text.split("=", 1)
    key = key.strip()
    prefix = None
    if allow_prefix and ":" in key:
        prefix, key = (p.strip() for p in key.split(":", 1))
        if not prefix:
            raise UsageError(f"--set {text!r}: empty method name before ':'")
    if not KEY.match(key):
        raise UsageError(f"--set {text!r}: {key!r} is not a parameter name")
    if key in RESERVED:
        flag = {"method": "--method", "formulation": "--formulation", "surrogate": "--surrogate", "loop": "--loop",
                "n_features": "--n-features", "random_state": "--seed", "cv": "--cv", "repeats": "--repeats",
                "scale": "--scale", "n_jobs": "--jobs", "retrain": "--retrain", "retrain_C": "--retrain-C"}.get(key)
        raise UsageError(f"--set {key}=...: {'use ' + flag if flag else 'not available from the command line'}")
    return prefix, key, parse_value(value)


def label_column(text: str | None):
    if text is None:
        return None
    return int(text) if re.fullmatch(r"-?\d+", text.strip()) else text


GRID_FLAGS = ("alpha", "C", "delta")
"""Parameters with a flag of their own in ``fsframe path`` (``--alpha 1,2,5``); any other through
``--grid KEY=V1,V2``."""


def check_task(args, data) -> None:
    """Raise :class:`~fsframe.errors.InvalidOptionError` when the command's method and the data set
    it loaded are for different tasks (a regression method on class labels, a classification
    method on a real target: :func:`fsframe.fit_inputs.check_task`), naming both."""
    from ..fit_inputs import check_task as check
    from ..method import resolve

    check(resolve(args.method, formulation=args.formulation, surrogate=args.surrogate, loop=args.loop), data)
