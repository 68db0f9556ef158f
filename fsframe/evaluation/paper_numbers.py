"""A study's results beside its paper's published numbers: the numbers (package data,
``fsframe/evaluation/papers/``, one TOML file a paper, every value with the table and row it comes
from) read and checked, the checked reasons typed in beside them, and every published number
compared with ours — the difference, its 95% interval, and whether it deviates
(:func:`compare`, :func:`deviation_counts`). The page that shows them is
:mod:`~fsframe.evaluation.paper`'s.

Confidence intervals are 95 % Student-t intervals over the splits: over the per-repeat means for
repeated k-fold cross-validation (a whole 10-fold estimate is the unit that varies), over the
folds of a single k-fold run (an approximation: folds share training samples) and over the random
splits of a hold-out protocol. A paper's number without a standard deviation is taken as exact;
with one (004 Table 1: over ``n`` trials) the difference has Welch's interval.
"""

from __future__ import annotations

import fnmatch
import math
import re

import numpy as np

from ..errors import DataFileError, InvalidOptionError
from .study import _toml

__all__ = ["load_numbers", "check_numbers", "interval", "reasons", "compare", "deviation_counts", "STATUSES"]

STATUSES = ("explained", "hypothesis", "open")
"""A reason's ``status``: *explained* (checked: computed, or read in the paper), *hypothesis* (the
best guess, untested) or *open* (the cause is not known)."""

_NOT_RUN, _NOT_RUN_YET = "not in this run", "not run yet"
_COUNTS = ("n_selected", "n_iter")  # a count differs or not even where no interval can be drawn


# ------------------------------------------------------------------------------------------- published numbers
def load_numbers(paper: str) -> dict:
    """The published numbers of ``paper`` (``"paper000"`` ...), from the package data."""
    from importlib import resources

    if not re.fullmatch(r"[\w-]+", paper or ""):
        raise InvalidOptionError(f"no published numbers named {paper!r}")
    res = resources.files("fsframe.evaluation").joinpath("papers", f"{paper}.toml")
    if not res.is_file():
        raise InvalidOptionError(f"fsframe has no published numbers of {paper!r}")
    numbers = _toml().loads(res.read_text(encoding="utf-8"))
    check_numbers(numbers, f"{paper}.toml")
    return numbers


def check_numbers(numbers: dict, where: str = "the published numbers") -> None:
    """A :class:`DataFileError` unless every table of ``numbers`` has a name of its own, every row
    a ``row`` text of its own within its table and as many values (and standard deviations, when
    given) as columns, and every reason names cells of its table (:func:`reasons`): a typo drops no
    published number from the report and puts no reason beside the wrong one."""
    names = [tab.get("name") for tab in numbers.get("tables", [])]
    for name in names:
        if names.count(name) > 1:
            raise DataFileError(f"{where}: two tables are named {name!r}; each table needs a name of its own")
    for tab in numbers.get("tables", []):
        texts = [row.get("row") for row in tab.get("rows", [])]
        for row in tab.get("rows", []):
            what = f"{where}, {tab.get('name')!r}, row {row.get('row')!r}"
            if texts.count(row.get("row")) > 1:
                raise DataFileError(f"{what}: two rows have this 'row' text; each row needs one of its own")
            k = len(_heads(tab, row))
            labels = row.get("labels", tab.get("labels")) or []
            for key, seq in (("labels", labels), ("values", row.get("values") or []), ("std", row.get("std"))):
                if seq is not None and len(seq) != k:
                    raise DataFileError(f"{what}: {len(seq)} {key} for its {k} columns")
        reasons(tab)  # a reason beside a row or column the table lacks fails here, not in a report


# ------------------------------------------------------------------------------------------- statistics
def interval(values, alpha: float = 0.05) -> tuple[float | None, float | None, int]:
    """``(mean, half width of the 1 - alpha Student-t interval, n)``; ``None`` half width below 2 values."""
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if a.size == 0:
        return None, None, 0
    if a.size < 2:
        return float(a.mean()), None, 1
    from scipy.stats import t

    return float(a.mean()), float(t.ppf(1 - alpha / 2, a.size - 1) * a.std(ddof=1) / math.sqrt(a.size)), int(a.size)


def _per_repeat(table: dict) -> int | None:
    """The folds of one repeat of a repeated k-fold protocol (``None`` for any other)."""
    p = table["protocol"]
    if p.get("kind") == "k-fold" and (p.get("repeats") or 1) > 1 and p.get("n_splits"):
        return int(p["n_splits"])  # k-fold's n_splits is k (fsframe.evaluation.splits.make_splits)
    return None


def _incomplete(table: dict, folds: list) -> int:
    """How many of ``folds`` (``(repeat, value)``) belong to repeats not every fold of which has run
    (a stopped run): the interval leaves them out while a complete repeat exists (:func:`_units`)."""
    k = _per_repeat(table)
    if k is None:
        return 0
    count: dict = {}
    for rep, _ in folds:
        count[rep] = count.get(rep, 0) + 1
    return sum(n for n in count.values() if n < k) if any(n >= k for n in count.values()) else 0


def _units(table: dict, folds: list) -> list[float]:
    """Per-split values grouped as the interval's units: per-repeat means for repeated k-fold CV,
    over the complete repeats only (a repeat of which a stopped run holds some folds estimates with
    fewer; when no repeat is complete, the folds themselves are the units, as for one k-fold run)."""
    k = _per_repeat(table)
    if k is not None:
        count: dict = {}
        for rep, _ in folds:
            count[rep] = count.get(rep, 0) + 1
        complete = {rep for rep, n in count.items() if n >= k}
        if complete:
            by = {}
            for rep, v in folds:
                if v is not None and rep in complete:
                    by.setdefault(rep, []).append(v)
            return [float(np.mean(v)) for _, v in sorted(by.items())]
    return [v for _, v in folds if v is not None]


def _metric(f: dict, metric: str):
    if not f["ok"]:
        return None
    if metric.startswith("accuracy@"):
        k = int(metric.split("@", 1)[1])
        return next((100.0 * a for kk, a in f["curve"] if kk == k), None)
    v = f.get(metric if metric not in ("error", "mcc100") else {"error": "accuracy", "mcc100": "mcc"}[metric])
    if v is None:
        return None
    return {"accuracy": 100.0 * v, "error": 100.0 * (1.0 - v), "mcc100": 100.0 * v}.get(metric, float(v))


def _row_values(table: dict, row: dict, metric: str) -> list[float]:
    return _units(table, [(f["repeat"], _metric(f, metric)) for f in row["folds"]])


def _find(table: dict, label: str) -> tuple[dict | None, str]:
    """The row labelled ``label``; a pattern with ``*`` picks the matching row with the best mean
    accuracy (as 001 tuned C on the test folds) and says which."""
    rows = table["rows"]
    if "*" not in label:
        return next((r for r in rows if r["label"] == label), None), ""
    match = [r for r in rows if fnmatch.fnmatchcase(r["label"], label)]
    if not match:
        return None, ""
    best = max(match, key=lambda r: (interval(_row_values(table, r, "accuracy"))[0] or -1.0))
    return best, f" (best of {len(match)} on the test folds: {best['label']})"


# ------------------------------------------------------------------------------------------- reasons and deviations
def _heads(table: dict, row: dict) -> list[str]:
    """The paper's column headers of ``row`` (a row with its own ``labels`` has only those columns)."""
    if "labels" not in row:
        return list(table["headers"])
    known = table.get("labels", [])
    return [table["headers"][known.index(x)] if x in known else x for x in row["labels"]]


def reasons(table: dict) -> list[dict]:
    """The checked reasons of one ``[[tables]]`` entry of a paper data file: each
    ``[[tables.reasons]]`` names the rows it explains (``rows``, the rows' ``row`` texts), optionally
    the columns (``columns``, the table's ``headers``; default every column of those rows), a
    one-line ``why`` and a ``status`` (:data:`STATUSES`, required: nothing counts as checked by
    default). A reason naming a
    row or a column the table does not have, or a cell another reason already explains, is a
    :class:`~fsframe.errors.DataFileError`: a reason must stay beside the number it concerns."""
    heads_of = {row["row"]: _heads(table, row) for row in table.get("rows", [])}
    out, taken = [], {}
    where = f"the reasons of {table.get('name')!r}"
    for i, r in enumerate(table.get("reasons", [])):
        if not isinstance(r, dict) or not isinstance(r.get("why"), str) or not r["why"].strip():
            raise DataFileError(f"{where}: reason {i + 1} has no one-line 'why'")
        if "\n" in r["why"].strip():
            raise DataFileError(f"{where}: reason {i + 1}'s 'why' must be one line")
        status = r.get("status")
        if status not in STATUSES:
            raise DataFileError(f"{where}: reason {i + 1} has status {status!r}; one of {', '.join(STATUSES)}")
        rows = r.get("rows")
        if not isinstance(rows, list) or not rows or not all(isinstance(x, str) for x in rows):
            raise DataFileError(f"{where}: reason {i + 1} names no rows (rows = [\"...\"], the rows' 'row' texts)")
        cells = []
        for name in rows:
            if name not in heads_of:
                raise DataFileError(f"{where}: reason {i + 1} names the row {name!r}, which the table does not have "
                                    f"(its rows: {', '.join(repr(x) for x in heads_of)})")
            cols = r.get("columns", heads_of[name])
            if not isinstance(cols, list) or not cols or not all(isinstance(x, str) for x in cols):
                raise DataFileError(f"{where}: reason {i + 1}'s 'columns' must name one or more of the table's "
                                    "headers (leave it out for every column of its rows)")
            for col in cols:
                if col not in heads_of[name]:
                    raise DataFileError(f"{where}: reason {i + 1} names the column {col!r} of the row {name!r}, "
                                        f"which has only {', '.join(repr(x) for x in heads_of[name])}")
                if (name, col) in taken:
                    raise DataFileError(f"{where}: reasons {taken[(name, col)] + 1} and {i + 1} both explain "
                                        f"{name!r}, {col!r}")
                taken[(name, col)] = i
                cells.append((name, col))
        out.append({"why": " ".join(r["why"].split()), "status": status, "cells": cells})
    return out


def compare(d: dict, numbers: dict) -> list[dict]:
    """Every published number of ``numbers`` beside the digest ``d``, one dict per cell of the
    paper's tables: ``table``, ``row``, ``column`` (the paper's header), ``label`` (the header as
    the report shows it: with the study's row a ``*`` pattern chose), ``paper``, ``ours``, ``difference`` and ``n`` (texts, or
    ``None`` where nothing is compared), ``note`` (why nothing is), ``deviates`` (the 95% interval of
    ours − paper excludes 0; with no interval, a count that differs; ``None`` where nothing is
    compared or no interval decides) and ``reason`` (the index into :func:`reasons` of the table,
    or ``None``)."""
    check_numbers(numbers)
    out = []
    by_ds = {t["dataset"]["name"]: t for t in d["tables"]}
    for tab in numbers.get("tables", []):
        why = {cell: j for j, r in enumerate(reasons(tab)) for cell in r["cells"]}
        n_paper = tab.get("n")
        for row in tab["rows"]:
            labels = row.get("labels", tab.get("labels"))
            heads = _heads(tab, row)
            std = row.get("std") or [None] * len(labels)
            table = by_ds.get(row["dataset"]) if row["dataset"] else None
            for head, label, value, sd in zip(heads, labels, row["values"], std):
                c = {"table": tab["name"], "row": row["row"], "column": head, "label": head,
                     "paper": f"{value}" + (f" ± {sd}" if sd is not None else ""), "ours": None,
                     "difference": None, "n": None, "note": None, "deviates": None,
                     "reason": why.get((row["row"], head))}
                out.append(c)
                if not row["dataset"] or not label:
                    c["note"] = "no copy of this data set" if not row["dataset"] else "no counterpart in fsframe"
                    continue
                found, how = _find(table, label) if table is not None else (None, "")
                if found is None:
                    c["note"] = _NOT_RUN if table is None else f"no row {label!r}"
                    continue
                c["label"] = head + how
                vals = _row_values(table, found, row["metric"])
                mean, half, n = interval(vals)
                if mean is None:  # a planned row none of whose cells has finished is not run yet, not failed
                    c["note"] = "no successful split" if found.get("folds") else \
                        f"{_NOT_RUN_YET} (0 of {found.get('n_planned') or 0} splits)"
                    continue
                c["ours"] = f"{mean:.2f}" + (f" [{mean - half:.2f}, {mean + half:.2f}]" if half is not None else "")
                dm, h = _difference(vals, value, sd, n_paper)
                c["difference"] = f"{dm:+.2f}" + (_ends(dm - h, dm + h) if h is not None else "")
                if h is not None:
                    c["deviates"] = dm - h > 0 or dm + h < 0
                elif sd is not None and n_paper:  # one split of ours beside the paper's spread: not judged,
                    c["deviates"] = None            # a count's mean (11.6 ± 2.1) is no exact number to differ from
                else:
                    c["deviates"] = dm != 0 if row["metric"] in _COUNTS else None
                left = _incomplete(table, [(f["repeat"], None) for f in found["folds"]])
                c["n"] = f"{n} (+{left} splits of an unfinished repeat, left out)" if left else f"{n}"
    return out


def _ends(lo: float, hi: float) -> str:
    """`` [lo, hi]`` with two decimals, or as many more as an end needs not to read as ±0.00 (an
    interval that just excludes 0 must not look as if it held it)."""
    small = [abs(e) for e in (lo, hi) if 0 < abs(e) < 0.005]
    digits = min(8, max(2, -math.floor(math.log10(min(small))))) if small else 2
    return f" [{lo:+.{digits}f}, {hi:+.{digits}f}]"


def deviation_counts(d: dict, numbers: dict, cells: list | None = None) -> dict:
    """``{"compared", "judged", "not_run", "deviate", "unexplained", "explained", "hypothesis",
    "open"}``: how many published numbers are compared with ours, how many of those an interval
    (or a count) judges (:func:`compare`; a number of one split, or a share, is shown but not
    judged), how many have a counterpart in the study that has not run yet, how many judged ones
    deviate, how many of the deviating ones have no reason, and the deviating ones per reason status.
    ``cells``: :func:`compare`'s answer, when the caller has it."""
    cells = compare(d, numbers) if cells is None else cells
    tabs = {tab["name"]: reasons(tab) for tab in numbers.get("tables", [])}
    dev = [c for c in cells if c["deviates"]]
    out = {"compared": sum(c["ours"] is not None for c in cells), "judged": sum(c["deviates"] is not None for c in cells),
           "not_run": sum((c["note"] or "").startswith((_NOT_RUN, _NOT_RUN_YET)) for c in cells),
           "deviate": len(dev), "unexplained": sum(c["reason"] is None for c in dev)}
    for s in STATUSES:
        out[s] = sum(c["reason"] is not None and tabs[c["table"]][c["reason"]]["status"] == s for c in dev)
    return out


def _difference(vals, value, sd, n_paper) -> tuple[float, float | None]:
    """``(ours − paper, half width of its 95% interval or None)``: Student's t over our units, or
    Welch's where the paper gives its standard deviation over ``n_paper`` trials."""
    mean, half, n = interval(vals)
    dm = mean - value
    if sd is None or not n_paper:
        return dm, half
    a = np.asarray(vals, dtype=np.float64)
    if a.size < 2:  # one split of ours: its own spread is unknown, so the paper's alone is no interval
        return dm, None
    from scipy.stats import t

    v1 = a.var(ddof=1) / a.size
    v2 = sd ** 2 / n_paper
    if v1 + v2 == 0:  # no spread on either side (the paper's sd 0.00, our splits all equal): exact
        return dm, 0.0
    df = (v1 + v2) ** 2 / (v1 ** 2 / (a.size - 1) + v2 ** 2 / (n_paper - 1))
    return dm, float(t.ppf(0.975, df) * math.sqrt(v1 + v2))
