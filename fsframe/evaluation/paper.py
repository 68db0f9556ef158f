"""A study beside its paper: the *digest* of a study's results (one compact JSON file, what
``benchmarks/results/`` keeps) and the page that puts every published number beside ours, with
the difference and its confidence interval (``fsframe report RESULTS --paper``).

The published numbers, their checked reasons and the comparison that judges each deviation are
:mod:`~fsframe.evaluation.paper_numbers` (every name of its ``__all__`` is importable from here
too); this module renders them, and our own results per data set, as a Markdown page with its
pictures. The page also says, for every method, whether it beats ``k`` random features on the same
classifier (the study's baselines, :mod:`~fsframe.evaluation.protocols`), with the same 95%
intervals over the splits.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..errors import DataFileError, InvalidOptionError
from .experiment import StudyResult, load_results
from .paper_numbers import STATUSES, _units, check_numbers, compare, deviation_counts, interval, load_numbers, reasons
from .plots import _pyplot
from .protocols import ALL_FEATURES
from .report import describe_protocol

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


_STATUS_WORDS = {"explained": "explained", "hypothesis": "hypothesis (untested)", "open": "open"}


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
