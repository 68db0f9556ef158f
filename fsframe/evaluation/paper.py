"""A study beside its paper: the *digest* of a study's results (one compact JSON file, what
``benchmarks/results/`` keeps) and the report that puts every published number beside ours, with
the difference and its confidence interval (``fsframe report RESULTS --paper``).

The published numbers are package data, typed in once per paper (``fsframe/evaluation/papers/``,
one TOML file each, every value with the table and row it comes from). The report also says, for
every method, whether it beats ``k`` random features on the same classifier (the study's
baselines, :mod:`~fsframe.evaluation.protocols`).

Confidence intervals are 95 % Student-t intervals over the splits: over the per-repeat means for
repeated k-fold cross-validation (a whole 10-fold estimate is the unit that varies), over the
folds of a single k-fold run (an approximation: folds share training samples) and over the random
splits of a hold-out protocol. A paper's number without a standard deviation is taken as exact;
with one (004 Table 1: over ``n`` trials) the difference has Welch's interval.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from pathlib import Path

import numpy as np

from ..errors import DataFileError, InvalidOptionError
from .experiment import StudyResult, load_results
from .plots import _pyplot
from .protocols import ALL_FEATURES
from .report import describe_protocol
from .study import _toml

__all__ = ["digest", "read_digest", "load_numbers", "check_numbers", "render", "run_status", "write_paper_report", "DIGEST_FORMAT",
           "BEGIN", "END", "interval", "reasons", "compare", "deviation_counts", "STATUSES"]

DIGEST_FORMAT = "fsframe-study-digest/1"
BEGIN, END = "<!-- paper-report:begin -->", "<!-- paper-report:end -->"
"""Markers of the generated part of a page: ``write_paper_report(out=page)`` replaces what lies
between them and keeps the rest of the page."""

_FOLD_FIELDS = ("repeat", "fold", "ok", "accuracy", "mcc", "n_selected", "pct_selected", "n_iter", "seconds",
                "selected", "curve", "random_curve", "random_accuracy", "reference_accuracy", "error_type")
_R = re.compile(r"^(.*) r=(\d+)$")


# ------------------------------------------------------------------------------------------- digest
def digest(result: StudyResult) -> dict:
    """The compact, JSON-ready summary of a results folder: per data set and configuration, every
    split's metrics, selected features and baselines (no split indices, no predictions)."""
    m = result.manifest
    env = m.get("environment", {})
    tables = []
    for t in result.tables:
        if t.protocol.get("task") == "regression":
            raise InvalidOptionError(
                f"the paper report renders a classification study's tables (accuracy, MCC, the papers' numbers); "
                f"the data set {t.dataset.get('name')!r} of this study has a real target: use 'fsframe report' "
                "without --paper")
        ds = {k: t.dataset.get(k) for k in ("name", "n_samples", "n_features", "classes", "class_counts", "note")}
        rows = []
        for r in t.results:
            folds = []
            for f in r.folds:
                d = {k: getattr(f, k) for k in _FOLD_FIELDS}
                d["selected"] = list(d["selected"])
                d["curve"] = [list(p) for p in d["curve"]]
                d["random_curve"] = [list(p) for p in d["random_curve"]]
                d["facts"] = {k: v for k, v in f.facts.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
                d["error"] = (f.error or "").strip().splitlines()[0][:300] if f.error else None
                folds.append(d)
            rows.append({"label": r.label, "method": r.method, "params": r.params, "n_planned": r.n_planned,
                         "folds": folds})
        tables.append({"dataset": ds, "protocol": {k: t.protocol.get(k) for k in (
            "kind", "n_splits", "repeats", "test_size", "random_state", "scale", "retrain", "name")}, "rows": rows})
    return {"format": DIGEST_FORMAT, "study": m.get("study"), "paper": m.get("paper"), "title": m.get("title"),
            "reduced": bool(m.get("reduced")), "commits": m.get("commits") or [],
            "fsframe": env.get("versions", {}).get("fsframe"), "python": env.get("python"),
            "started": m.get("started"), "finished": m.get("finished"), "interrupted": m.get("interrupted"),
            "run_datasets": m.get("run_datasets"), "engine": m.get("engine"),
            "wall_seconds": m.get("wall_seconds"), "n_cells": result.n_cells, "n_finished": result.n_finished,
            "n_failed": result.n_failed, "protocol": m.get("protocol"), "tables": tables}


def read_digest(path: str | Path) -> dict:
    """A digest written by :func:`write_paper_report` (a :class:`DataFileError` for anything else)."""
    p = Path(path)
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataFileError(f"cannot read the study digest {p}: {exc}") from None
    if not isinstance(d, dict) or d.get("format") != DIGEST_FORMAT:
        raise DataFileError(f"{p} is not a study digest (format {DIGEST_FORMAT!r}); give a results folder of "
                            "'fsframe run' or the digest 'fsframe report --paper' wrote")
    return d


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


# ------------------------------------------------------------------------------------------- baselines
def _random_pairs(table: dict, row: dict) -> dict:
    """``{k: [(repeat, method - random)]}`` in accuracy points, paired by split, for ``row``:
    at each ``k`` of its top-k curve, at its ``r``, or at its own selection size."""
    base = next((r for r in table["rows"] if r["label"] == ALL_FEATURES), None)
    rnd = {}
    if base is not None:
        for f in base["folds"]:
            if f["ok"]:
                for k, a in f["random_curve"]:
                    rnd[(f["repeat"], f["fold"], int(k))] = 100.0 * a
    out: dict = {}
    m = _R.match(row["label"])
    for f in row["folds"]:
        if not f["ok"]:
            continue
        if f["curve"]:
            for k, a in f["curve"]:
                if (f["repeat"], f["fold"], int(k)) in rnd:
                    out.setdefault(int(k), []).append((f["repeat"], 100.0 * a - rnd[(f["repeat"], f["fold"], int(k))]))
        elif m and (f["repeat"], f["fold"], int(m.group(2))) in rnd:
            k = int(m.group(2))
            out.setdefault(k, []).append((f["repeat"], 100.0 * f["accuracy"] - rnd[(f["repeat"], f["fold"], k)]))
        elif f["random_accuracy"] is not None:
            own = f["reference_accuracy"] if f["reference_accuracy"] is not None else f["accuracy"]
            out.setdefault("own", []).append((f["repeat"], 100.0 * (own - f["random_accuracy"])))
    return out


def _verdict(table: dict, pairs) -> tuple[str, str]:
    """``(text "Δ [lo, hi]", verdict)``: verdict "loses", "tie" or "beats" k random features."""
    mean, half, n = interval(_units(table, pairs))
    if mean is None:
        return "-", ""
    if half is None:
        return f"{mean:+.1f}", ""
    lo, hi = mean - half, mean + half
    return f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]", "loses" if hi < 0 else "beats" if lo > 0 else "tie"


# ------------------------------------------------------------------------------------------- rendering
def _fmt(v, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def _ms(values, digits=2) -> str:
    a = [v for v in values if v is not None]
    if not a:
        return "-"
    return f"{np.mean(a):.{digits}f}" + (f" ± {np.std(a, ddof=1):.{digits}f}" if len(a) > 1 else "")


STATUSES = ("explained", "hypothesis", "open")
"""A reason's ``status``: *explained* (checked: computed, or read in the paper), *hypothesis* (the
best guess, untested) or *open* (the cause is not known)."""

_STATUS_WORDS = {"explained": "explained", "hypothesis": "hypothesis (untested)", "open": "open"}
_NOT_RUN, _NOT_RUN_YET = "not in this run", "not run yet"
_COUNTS = ("n_selected", "n_iter")  # a count differs or not even where no interval can be drawn


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


def _headline(counts: dict) -> str:
    """The first line of the block beside the paper: deviations among the judged numbers, what is
    shown without a verdict, what has not run, and the deviations' reasons by status."""
    by_status = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    unjudged = counts["compared"] - counts["judged"]
    return (f"**Deviations: {counts['deviate']} of the {counts['judged']} judged numbers** (the 95% interval of "
            "ours − paper excludes 0, or, with no interval, a count differs)"
            + (f"; {unjudged} more compared but not judged (one split or a share: no interval)" if unjudged else "")
            + (f"; **{counts['not_run']} not run yet**" if counts["not_run"] else "") + "; "
            + (f"**{counts['unexplained']} of the deviations without a reason yet**" if counts["unexplained"]
               else "every deviation found has a reason")
            + (f" ({by_status})" if by_status else ""))


def _beside(d: dict, numbers: dict) -> list[str]:
    cells = compare(d, numbers)
    tabs = {tab["name"]: reasons(tab) for tab in numbers.get("tables", [])}
    out = [_headline(deviation_counts(d, numbers, cells)) + ". The reasons are typed in beside the paper's numbers "
           f"(`fsframe/evaluation/papers/{d.get('paper')}.toml`): *explained* (checked), *hypothesis* (the best "
           "guess, untested) or *open* (the cause is not known).", ""]
    number = 0
    for tab in numbers.get("tables", []):
        rs = tabs[tab["name"]]
        mine = [c for c in cells if c["table"] == tab["name"]]
        used = list(dict.fromkeys(c["reason"] for c in mine if c["reason"] is not None))  # numbered as they appear
        ref = {j: number + k + 1 for k, j in enumerate(used)}
        number += len(used)
        out += [f"**{d.get('paper')}, {tab['name']}**: {tab['caption']}.", "",
                "| row | column | paper | ours [95% CI] | ours − paper [95% CI] | n | why |",
                "|---|---|--:|--:|--:|--:|---|"]
        for c in mine:
            why = f"[{ref[c['reason']]}]" if c["reason"] is not None else "**no reason yet**" if c["deviates"] else ""
            if c["ours"] is None:
                out.append(f"| {c['row']} | {c['label']} | {c['paper']} | {c['note']} | | |" + (f" {why} |" if why else " |"))
            else:
                out.append(f"| {c['row']} | {c['label']} | {c['paper']} | {c['ours']} | {c['difference']} | "
                           f"{c['n']} |" + (f" {why} |" if why else " |"))
        out.append("")
        if used:
            out += [f"[{ref[j]}] **{_STATUS_WORDS[rs[j]['status']]}:** {rs[j]['why'].rstrip('.')}.  " for j in used]
            out[-1] = out[-1].rstrip()
            out.append("")
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


def _dataset_section(d: dict, table: dict, images: str | None) -> list[str]:
    ds = table["dataset"]
    note = f" — {ds['note']}" if ds.get("note") else ""
    out = [f"### {ds['name']} ({ds['n_samples']} x {ds['n_features']}, {len(ds['classes'])} classes){note}", ""]
    varying = any(f["random_accuracy"] is not None for r in table["rows"] for f in r["folds"])
    head = ["row", "accuracy (%)", "MCC", "features", "features (%)", "iterations", "seconds"]
    if varying:
        head.append("reference on own − on k random features (points)")
    head.append("failed")
    # a run that has not finished every planned cell (stopped, or restricted to other data sets)
    # says per row how many of its splits have: a row of dashes is "not run yet", not a failure
    partial = any(len(r["folds"]) < (r.get("n_planned") or 0) for r in table["rows"])
    if partial:
        head.append("splits run")
    out += ["| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 1)]
    findings: dict[str, list] = {"loses": [], "tie": []}
    replayed: list[str] = []
    for r in table["rows"]:
        ok = [f for f in r["folds"] if f["ok"]]
        n_replayed = sum(bool((f.get("facts") or {}).get("search_replayed")) for f in ok)
        cells = [r["label"], _ms([100 * f["accuracy"] for f in ok]), _ms([f["mcc"] for f in ok], 3),
                 _ms([f["n_selected"] for f in ok], 1), _ms([f["pct_selected"] for f in ok], 1),
                 _ms([f["n_iter"] for f in ok], 1), _ms([f["seconds"] for f in ok], 3) + ("†" if n_replayed else "")]
        if n_replayed:
            replayed.append(f"{r['label']} ({n_replayed} of {len(ok)})")
        pairs = _random_pairs(table, r) if r["label"] != ALL_FEATURES else {}
        if varying:
            text, verdict = _verdict(table, pairs.get("own", [])) if "own" in pairs else ("-", "")
            cells.append(text)
            if verdict in findings:
                findings[verdict].append((r["label"], "its own k", text))
        failed = len(r["folds"]) - len(ok)
        cells.append(f"{failed}/{len(r['folds'])}" + (f" ({r['folds'][[f['ok'] for f in r['folds']].index(False)]['error_type']})"
                                                      if failed else ""))
        if partial:
            cells.append(f"{len(r['folds'])} of {r.get('n_planned') or 0}")
        out.append("| " + " | ".join(cells) + " |")
        ks = [k for k in pairs if k != "own"]
        for k in ks:  # a loss at any k; a tie at the largest k only (the paper's table)
            text, verdict = _verdict(table, pairs[k])
            if verdict == "loses" or (verdict == "tie" and k == max(ks)):
                findings[verdict].append((r["label"], f"k = {k}", text))
    out.append("")
    if replayed:
        out += ["† Seconds of splits whose bound search was replayed from another row's (the same search, "
                "another criterion; docs/mempm.md, \"One search for several criteria\"): the replay's, not the "
                "search's: " + "; ".join(replayed) + ".", ""]
    out += _curve_table(table)
    for verdict, words in (("loses", "**Loses to k random features**"),
                           ("tie", "Not distinguishable from k random features (95% CI of the difference holds 0)")):
        if findings[verdict]:
            items = "; ".join(f"{label} at {k}: {text}" for label, k, text in findings[verdict])
            out += [f"{words}, same classifier, paired by split (accuracy points): {items}.", ""]
    if not findings["loses"] and any(_random_pairs(table, r) for r in table["rows"]):
        out += ["No method loses to k random features here (paired by split, 95% CI).", ""]
    if images and _series(table):
        out += [f"![{ds['name']}: accuracy against the number of features]({images}/{_image(d, table)})", ""]
    return out


def _image(d: dict, table: dict) -> str:
    return f"{d.get('study') or 'study'}-{table['dataset']['name']}-accuracy.png"


def _series(table: dict) -> dict:
    """``{row: {k: [accuracy % per split]}}``: the top-k curves (or the ``r=`` rows of an
    ``n_features`` grid) and the ``k`` random features of the all-features row."""
    curves = any(f["curve"] for r in table["rows"] for f in r["folds"])
    series: dict[str, dict] = {}
    for r in table["rows"]:
        m = _R.match(r["label"])
        for f in r["folds"]:
            if not f["ok"]:
                continue
            if curves and f["curve"]:
                for k, a in f["curve"]:
                    series.setdefault(r["label"], {}).setdefault(int(k), []).append(100 * a)
            elif m:
                series.setdefault(m.group(1), {}).setdefault(int(m.group(2)), []).append(100 * f["accuracy"])
            if r["label"] == ALL_FEATURES:
                for k, a in f["random_curve"]:
                    series.setdefault("k random features", {}).setdefault(int(k), []).append(100 * a)
    return {} if list(series) in ([], ["k random features"]) else series


def _curve_table(table: dict) -> list[str]:
    """Accuracy against ``k`` (:func:`_series`) as a Markdown table."""
    series = _series(table)
    if not series:
        return []
    ks = sorted({k for s in series.values() for k in s})
    out = ["Accuracy (%) against the number of features k (mean ± std over the splits):", "",
           "| row | " + " | ".join(f"k={k}" for k in ks) + " |", "|---|" + "--:|" * len(ks)]
    for label, s in series.items():
        out.append(f"| {label} | " + " | ".join(_ms(s.get(k, []), 1) for k in ks) + " |")
    return out + [""]


def _retrain_words(d: dict, table: dict) -> str | None:
    """The retrained classifier in words: a tuned one by its grid and folds (the study's protocol)."""
    p = d.get("protocol") or {}
    if str(p.get("retrain", "")).startswith("tuned-"):
        folds = p.get("retrain_folds")
        how = (f"{folds['folds']}-fold below {folds['large_from']} training samples, else {folds['large_folds']}-fold"
               if isinstance(folds, dict) else f"{folds}-fold")
        base = "LinearSVC" if p["retrain"] == "tuned-linear-svc" else "SVC(kernel='linear')"
        return f"{base} with C from {{{', '.join(f'{c:g}' for c in p.get('retrain_grid', []))}}} by {how} CV"
    return table["protocol"].get("retrain")


def run_status(d: dict, *, count: bool = True) -> str:
    """What a digest (or a manifest with ``n_finished``) knows of its runs: ``finished <time>`` when
    the last run ended with every planned cell; else ``partial: N of M cells`` and how the last run
    ended — interrupted (Ctrl-C) at a time, ended (restricted to some data sets, or with cells
    that failed to load) at a time, or not at all: no end time is written until a run ends, so it
    was stopped (killed) or is still going. ``count=False`` leaves out ``N of M cells`` (a page
    that says it already)."""
    n, total = d.get("n_finished"), d.get("n_cells")
    end, started = d.get("finished"), d.get("started") or "?"
    if end and not d.get("interrupted") and n == total:
        return f"finished {end}"
    parts = [] if n == total else [f"partial: {n} of {total} cells" if count else "partial"]
    sets = d.get("run_datasets")
    run = "the last run" + (f" (data sets {', '.join(sets)})" if sets else "")
    if not end:
        parts.append(f"{run}, started {started}, has not ended (stopped, or still running)")
    elif d.get("interrupted"):
        parts.append(f"{run} was interrupted at {end}")
    else:
        parts.append(f"{run} ended {end}")
    return "; ".join(parts)


def render(d: dict, *, numbers: dict | None = None, images: str | None = None) -> str:
    """The Markdown report of a digest: what ran, the paper's numbers beside ours, and per data set
    our table, the accuracy-against-k table (and its picture, ``images/<study>-<data set>-accuracy.png``,
    when ``images`` names the pictures' folder relative to the page) and the comparison with ``k``
    random features."""
    kind = "REDUCED run (`--reduced`: fewer data sets, splits and grid points; not the paper's protocol)" \
        if d.get("reduced") else "full protocol"
    commits = ", ".join(c[:12] + ("+dirty" if c.endswith("+dirty") else "") for c in d.get("commits") or []) or "unknown"
    tables = d["tables"]
    prot = describe_protocol({**tables[0]["protocol"], "retrain": _retrain_words(d, tables[0])}) if tables else ""
    out = [f"## {d.get('title') or d.get('study')}: {kind}", "",
           f"Study `{d.get('study')}`; {prot}. {d['n_finished']} of {d['n_cells']} cells finished, "
           f"{d['n_failed']} failed; fsframe {d.get('fsframe')} at commit {commits}, Python {d.get('python')}; "
           f"{run_status(d, count=False)}"
           + (f", {d['wall_seconds']:.0f} s of wall time in the last run ({d.get('engine')})"
              if d.get("wall_seconds") else "") + ".", ""]
    if numbers:
        out += [f"### Beside the paper ({numbers.get('paper')})", ""]
        out += _beside(d, numbers)
    if numbers:
        out += ["n: the units of the interval (the splits; the repeats' means for repeated k-fold CV, over the "
                "complete repeats only: the splits of an unfinished repeat are counted apart and left out). A number "
                "the paper gives without its spread is taken as exact.", ""]
    out += ["### Our results", "",
            "Mean ± std over the splits. *all features*: the evaluated classifier on every feature. "
            "*k random features*: the same classifier on random subsets of as many features (the same "
            "subsets for every method), the difference paired by split with its 95% CI.", ""]
    for table in tables:
        out += _dataset_section(d, table, images)
    return "\n".join(out).rstrip() + "\n"


def _draw(d: dict, folder: Path) -> None:
    """The accuracy-against-``k`` picture of every data set that has one (:func:`_series`), as PNG
    in ``folder`` (named as :func:`render` links them)."""
    for table in d["tables"]:
        series = _series(table)
        if not series:
            continue
        plt = _pyplot()
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        for label, s in series.items():
            ks = sorted(s)
            mean = [float(np.mean(s[k])) for k in ks]
            sd = [float(np.std(s[k], ddof=1)) if len(s[k]) > 1 else 0.0 for k in ks]
            style = dict(ls="--", color="0.4") if label == "k random features" else {}
            ax.errorbar(ks, mean, yerr=sd, marker="o", ms=3, capsize=2, label=label, **style)
        name = table["dataset"]["name"]
        ax.set(xlabel="number of features k", ylabel="test accuracy (%)",
               title=f"{name}: accuracy against k (mean ± std over the splits)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fig.savefig(folder / _image(d, table), dpi=90)
        except OSError as exc:
            raise DataFileError(f"cannot write {folder / _image(d, table)}: {exc.strerror or exc}") from exc
        finally:
            plt.close(fig)


def write_paper_report(results: str | Path, out: str | Path | None = None, *, plots: bool = True) -> tuple[Path, dict]:
    """Render the report of ``results`` (a results folder of ``fsframe run``, whose digest is
    written there as ``digest.json``, or a digest file) into ``out`` (default: ``paper.md`` beside
    the results). An existing page keeps everything outside the :data:`BEGIN`/:data:`END` markers.
    Pictures go to ``img/`` beside the page. Returns the page and the digest."""
    src = Path(results)
    if src.is_dir():
        d = digest(load_results(str(src)))
        _write(src / "digest.json", json.dumps(d, indent=None, separators=(",", ":")) + "\n")
    else:
        d = read_digest(src)
    page = Path(out) if out is not None else (src if src.is_dir() else src.parent) / "paper.md"
    numbers = load_numbers(d["paper"]) if d.get("paper") else None
    if plots:
        _draw(d, page.parent / "img")
    body = render(d, numbers=numbers, images="img" if plots else None)
    text = f"{BEGIN}\n{body}{END}\n"
    if page.is_file():
        old = page.read_text(encoding="utf-8")
        if BEGIN in old and END in old:
            text = old[: old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
            text = text if text.endswith("\n") else text + "\n"
    _write(page, text)
    return page, d


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"cannot write {path}: {exc.strerror or exc}") from exc
