"""Progress of long runs — a parameter path, a bound search, DSO-FS, any single fit — in a terminal
and in a notebook alike, and off when nothing interactive is attached (a script writing to a file,
a test run, a worker process).

One helper, :func:`progress_bar`, serves every driver: :func:`fsframe.fit` steps it from the outer
loop's callback (one step per convex subproblem, whatever the loop), :func:`fsframe.path` once
per point, :class:`fsframe.tuning.FSSelectorCV` once per fold. Loops know nothing of it.

``progress=None`` (the default everywhere) shows progress only in an interactive session and
only for a run longer than :data:`DELAY` seconds, so quick fits stay silent; ``True`` shows it
wherever it is asked (one line per step outside a terminal); ``False`` never; a callable
receives every step's item instead. The environment variable ``FSFRAME_PROGRESS=0`` turns the
default off (``1`` turns it on as ``True`` would).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable

__all__ = ["progress_bar", "Progress", "interactive", "DELAY"]

DELAY = 2.0
"""Seconds a run must last before its progress appears (with ``progress=None``)."""


def _in_notebook() -> bool:
    """Whether this process is a Jupyter kernel (IPython loaded and its shell the kernel's)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # an IPython too old or half-imported: no notebook
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def interactive(stream=None) -> str | None:
    """``"notebook"`` in a Jupyter kernel, ``"terminal"`` when ``stream`` (default stderr) is a
    terminal, else None."""
    if _in_notebook():
        return "notebook"
    stream = sys.stderr if stream is None else stream
    try:
        return "terminal" if stream.isatty() else None
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return None


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    """A progress line: :meth:`step` once per unit of work, :meth:`close` at the end.

    ``mode`` is ``"terminal"`` (one line on ``stream``, rewritten), ``"lines"`` (one line per step,
    for a log file when progress is asked for outside a terminal), ``"notebook"`` (one output line
    of the cell, updated) or None (silent; ``callback`` still receives every item)."""

    def __init__(self, mode: str | None, *, total: int | None = None, desc: str = "", stream=None,
                 callback: Callable[[Any], None] | None = None, delay: float = 0.0):
        self.mode, self.total, self.desc = mode, total, desc
        self.stream = sys.stderr if stream is None else stream
        self.callback, self.delay = callback, delay
        self.done = 0
        self.t0 = time.perf_counter()
        self.shown = False
        self._handle = None
        self.last = ""

    @property
    def enabled(self) -> bool:
        return self.mode is not None or self.callback is not None

    def line(self, text: str = "") -> str:
        """The text shown after ``done`` steps: ``desc [done/total] text (elapsed, ETA)``."""
        elapsed = time.perf_counter() - self.t0
        count = f"[{self.done}/{self.total}]" if self.total else f"[{self.done}]"
        eta = ""
        if self.total and 0 < self.done < self.total:
            eta = f", ETA {_duration(elapsed / self.done * (self.total - self.done))}"
        return " ".join(p for p in (self.desc, count, text) if p) + f" ({_duration(elapsed)}{eta})"

    def step(self, item: Any = None, text: str = "") -> None:
        self.done += 1
        if self.callback is not None:
            self.callback(item)
        if self.mode is None:
            return
        self.last = self.line(text)
        if not self.shown and time.perf_counter() - self.t0 < self.delay:
            return
        self._show(self.last)

    def _show(self, text: str) -> None:
        self.shown = True
        if self.mode == "notebook":
            from IPython.display import Pretty, display

            if self._handle is None:
                self._handle = display(Pretty(text), display_id=True)
            else:
                self._handle.update(Pretty(text))
            return
        if self.mode == "lines":
            self.stream.write(text + "\n")
        else:
            self.stream.write("\r\033[K" + text[:200])
        self.stream.flush()

    def close(self) -> None:
        """End the line (a terminal line is kept, with its last state, on its own line)."""
        if self.shown and self.mode == "terminal":
            self.stream.write("\n")
            self.stream.flush()
        self.shown = False


def progress_bar(progress=None, *, total: int | None = None, desc: str = "", stream=None,
                 delay: float | None = None) -> Progress:
    """The progress of one run (see the module docstring for ``progress``).

    Raises
    ------
    InvalidOptionError
        ``progress`` is not None, a bool or a callable.
    """
    from .errors import InvalidOptionError

    if progress is None:
        env = os.environ.get("FSFRAME_PROGRESS", "").strip()
        if env == "0":
            return Progress(None)
        mode = interactive(stream) or ("lines" if env == "1" else None)
        return Progress(mode, total=total, desc=desc, stream=stream, delay=DELAY if delay is None else delay)
    if isinstance(progress, bool):
        mode = (interactive(stream) or "lines") if progress else None
        return Progress(mode, total=total, desc=desc, stream=stream, delay=0.0 if delay is None else delay)
    if callable(progress):
        return Progress(None, total=total, desc=desc, callback=progress)
    raise InvalidOptionError(f"progress must be None (interactive sessions only), True, False or a callable, "
                             f"got {progress!r}")
