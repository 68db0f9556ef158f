"""The monitored series of a finished run: the values whose descent a loop checked
(:func:`monitored_series`), which
:attr:`FitResult.monotone_checked <fsframe.results.FitResult.monotone_checked>` and the trace
picture (:mod:`fsframe.evaluation.plots`) read."""

from __future__ import annotations

from .base import OuterLoop

__all__ = ["monitored_series"]


def monitored_series(loop, surrogate, history) -> tuple[list, str] | None:
    """``(values, what they are)`` whose descent ``loop`` checked over ``history``, or None when it
    checked none: the records' ``monitored`` values (the base driver,
    :meth:`~fsframe.loops.base.OuterLoop.run`), or, for a loop with its own driver that guarantees
    descent (DSO-FS), the objective it reports, which is what such a driver checks."""
    if any(getattr(h, "monitored", None) is not None for h in history):
        return [getattr(h, "monitored", None) for h in history], loop.monitored_quantity(surrogate)
    if getattr(type(loop), "monotone", False) and type(loop).run is not OuterLoop.run:
        return [h.objective for h in history], "the objective it reports (its own driver checks its descent)"
    return None
