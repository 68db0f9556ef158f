"""Printing and writing: warnings and progress on stderr, aligned tables, JSON and CSV files."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
import re
import sys
import time
from typing import Sequence

from .. import errors
from .._version import fsframe_version
from .common import PROG, UsageError


class WarningPrinter:
    """Show each warning once, as one line on stderr."""

    def __init__(self, stream):
        self.stream = stream
        self.seen: set = set()

    _PREFIX = re.compile(r"^([\w.+-]+: )+")
    _SUFFIX = re.compile(r" \[in \d+ of \d+ fits\]$")

    def show(self, message, category, filename, lineno, file=None, line=None):
        # the same finding about the whole dataset and about every training part is one warning
        key = (category, self._SUFFIX.sub("", self._PREFIX.sub("", str(message))))
        if key in self.seen:
            return
        self.seen.add(key)
        print(f"{PROG}: warning: {category.__name__}: {message}", file=self.stream)


def _score_text(r) -> str:
    """A finished fit's score for the progress line: accuracy for classes, R² for a real target
    (``-`` where it is undefined, e.g. a constant test target)."""
    if r.accuracy is not None:
        return f"acc {100 * r.accuracy:.1f}%"
    r2 = getattr(r, "r2", None)
    return "R² -" if r2 is None else f"R² {r2:.3f}"


class ProgressPrinter:
    """Progress of long runs on stderr: one rewritten line on a terminal, one line per fit with
    ``--progress`` elsewhere."""

    def __init__(self, stream, mode: str | None):
        self.stream = stream
        tty = hasattr(stream, "isatty") and stream.isatty()
        self.enabled = tty if mode is None else mode == "on"
        self.inline = tty
        self.t0 = time.perf_counter()
        self.dirty = False

    def __call__(self, p) -> None:
        if not self.enabled:
            return
        r = p.record
        what = (f"{_score_text(r)}, {r.n_selected} features, {r.seconds:.2f} s" if r.ok
                else f"FAILED: {r.error_type}")
        run_done, run_total = getattr(p, "run_done", None), getattr(p, "run_total", None)
        more = run_done < run_total if run_total is not None else p.done < p.total  # this run has fits left
        eta = getattr(p, "eta", None)
        extra = f", ETA {_duration(eta)}" if eta is not None and more else ""
        slowest = getattr(p, "slowest", None)
        if slowest is not None and more:
            extra += f"; slowest running: {slowest[0]} ({slowest[1]:.0f} s)"
        skipped = getattr(p, "skipped", 0)
        if skipped:
            extra += f"; {skipped} finished earlier"
        run = f" (this run: {run_done} of {run_total})" if run_total is not None else ""
        self._emit(f"[{p.done:>{len(str(p.total))}}/{p.total}]{run} {r.label} repeat {r.repeat} fold {r.fold}: "
                   f"{what} ({time.perf_counter() - self.t0:.0f} s elapsed{extra})")

    def _emit(self, text: str) -> None:
        if self.inline:
            self.stream.write("\r\033[K" + text[:200])
            self.dirty = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.dirty:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.dirty = False


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


_NUMERIC = re.compile(r"^[-+]?(\d[\d.,]*([eE][-+]?\d+)?|inf)%?$")


def table(rows: Sequence[Sequence[str]], *, head: bool = True, indent: str = "") -> list[str]:
    """Aligned columns; columns whose cells are all numbers are right-aligned."""
    w = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    body = rows[1:] if head else rows
    right = [bool(body) and all(_NUMERIC.match(str(r[i])) for r in body) for i in range(len(w))]
    out = []
    for k, r in enumerate(rows):
        out.append(indent + "  ".join(str(c).rjust(w[i]) if right[i] else str(c).ljust(w[i])
                                      for i, c in enumerate(r)).rstrip())
        if head and k == 0:
            out.append(indent + "  ".join("-" * x for x in w))
    return out


def check_output_paths(args) -> None:
    """Refuse ``--json``/``--csv`` paths that cannot be written, before any work starts (a long
    cross-validation must not end in "cannot write"): a directory, a missing or non-directory
    parent, a place where no file can be created (probed with a temporary file), or one file for
    both outputs."""
    paths = {flag: getattr(args, flag, None) for flag in ("json", "csv")}
    paths = {flag: p for flag, p in paths.items() if p and p != "-"}
    if len(paths) == 2 and os.path.abspath(paths["json"]) == os.path.abspath(paths["csv"]):
        raise UsageError(f"--json and --csv both write {paths['json']}; give them different files")
    for flag, path in paths.items():
        where = f"--{flag} {path}"
        if os.path.isdir(path):
            raise UsageError(f"{where}: is a directory; give a file name (e.g. {os.path.join(path, 'out.' + flag)})")
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.exists(parent):
            raise UsageError(f"{where}: directory {parent} does not exist; create it first or choose another path")
        if not os.path.isdir(parent):
            raise UsageError(f"{where}: {parent} is not a directory")
        try:
            if os.path.exists(path):
                with open(path, "a", encoding="utf-8"):  # opened for writing, not changed
                    pass
            else:
                with tempfile.NamedTemporaryFile(dir=parent, prefix=".fsframe-probe-"):
                    pass
        except OSError as exc:
            raise UsageError(f"{where}: cannot write there ({exc.strerror or exc}); choose another path "
                             "(the check runs before the fits so that no results are lost)") from None


def write_text(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except OSError as exc:
        raise errors.DataFileError(f"cannot write {path}: {exc.strerror or exc}") from exc


def write_json(path: str, obj: dict) -> None:
    write_text(path, json.dumps(obj, indent=2, allow_nan=False) + "\n")


def write_csv(path: str, rows: list[dict], columns: Sequence[str] | None = None) -> None:
    buf = io.StringIO()
    cols = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    write_text(path, buf.getvalue())


def meta(args, argv) -> dict:
    return {"fsframe_version": fsframe_version(), "command": args.command, "argv": list(argv)}

