"""Pictures of evaluation results (matplotlib, the optional extra ``fsframe[plot]``).

Each kind has a *data* function (plain numbers from the cells; what the tests check) and a
drawing function writing PNG and SVG:

* ``accuracy_vs_features``: accuracy against the number of selected features per method, mean
  and standard deviation over the splits (papers 002 Fig. 1 and 004 style);
* ``frequency``: the fraction of splits that selected each feature, per configuration (paper 001
  Fig. 1 style);
* ``sweep``: accuracy and support size against one parameter a method's grid varies
  (``alpha``, ``delta``, ``C``...);
* ``trace``: the objective the loop monitors (or, when it monitors none, the reported one, and
  why) and the support size per outer-loop iteration of one fit
  (``fsframe select DATA --method M --plot trace.png``);
* ``path``: support size, objective and (with validation data) accuracy against the swept
  parameter of a parameter path (:func:`fsframe.path`, :func:`plot_path`).
"""

from __future__ import annotations

import re
from pathlib import Path
import numpy as np

from ..errors import BackendUnavailableError, DataFileError

__all__ = ["accuracy_vs_features_data", "frequency_data", "sweep_data", "trace_data", "path_data", "draw",
           "figure", "figures_for", "plot_path", "PLOT_KINDS"]

PLOT_KINDS = ("accuracy_vs_features", "frequency", "sweep", "trace", "path")
_R = re.compile(r"^(.*) r=(\d+)$")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BackendUnavailableError('pictures need matplotlib: pip install "fsframe[plot]" (tables and JSON '
                                      "need nothing more)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _stats(v) -> tuple[float, float]:
    a = np.asarray(v, dtype=np.float64)
    return float(a.mean()), float(a.std(ddof=1)) if a.size > 1 else 0.0


def _test_score(table) -> tuple[str, float, str]:
    """``(metric, factor, axis label)`` of a table's test score: accuracy in %, or R² for a
    regression (``protocol["task"] == "regression"``)."""
    if table.protocol.get("task") == "regression":
        return "r2", 1.0, "test R²"
    return "accuracy", 100.0, "test accuracy (%)"


def accuracy_vs_features_data(table) -> dict:
    """``{method: {"r": [...], "n_selected": [...], "accuracy": [...], "accuracy_std": [...],
    "score_label": ...}}`` over the rows of a :class:`CompareResult` whose labels end in
    `` r=<n>`` (a ``n_features`` grid); accuracy in % (a regression's table: R², and
    ``score_label`` says which). Empty when the table has no such rows."""
    out: dict[str, dict] = {}
    metric, factor, label = _test_score(table)
    for res in table.results:
        m = _R.match(res.label)
        if not m or not res.ok_folds:
            continue
        acc = factor * res.values(metric)
        d = out.setdefault(m.group(1), {"r": [], "n_selected": [], "accuracy": [], "accuracy_std": [],
                                        "score_label": label})
        d["r"].append(int(m.group(2)))
        d["n_selected"].append(float(res.values("n_selected").mean()))
        mean, std = _stats(acc)
        d["accuracy"].append(mean)
        d["accuracy_std"].append(std)
    for d in out.values():
        order = np.argsort(d["r"], kind="stable")
        for k in d:
            if k != "score_label":
                d[k] = [d[k][i] for i in order]
    return out


def frequency_data(table) -> dict:
    """``{label: {"features": names, "frequency": [...]}}``: per configuration, the fraction of its
    successful fits that selected each feature (kernel maps, which select samples, left out)."""
    out = {}
    for res in table.results:
        f = res.frequency
        if f is None or not res.ok_folds:
            continue
        names = res.dataset.get("feature_names") or [f"x{j}" for j in range(f.size)]
        out[res.label] = {"features": list(names), "frequency": [float(x) for x in f]}
    return out


def sweep_data(table) -> dict:
    """``{(method, parameter): {"value": [...], "accuracy": [...], "accuracy_std": [...],
    "n_selected": [...], "n_selected_std": [...], "score_label": ...}}`` for each method with several
    rows that differ in exactly one numeric parameter (``n_features`` rows are left to
    :func:`accuracy_vs_features_data`); a regression's "accuracy" is its R²."""
    metric, factor, label = _test_score(table)
    groups: dict[str, list] = {}
    for res in table.results:
        if _R.match(res.label) or not res.ok_folds:
            continue
        groups.setdefault(res.method or res.label.split(" ")[0], []).append(res)
    out = {}
    for method, rows in groups.items():
        if len(rows) < 2:
            continue
        keys = set().union(*(r.params for r in rows))
        varying = [k for k in sorted(keys) if len({repr(r.params.get(k)) for r in rows}) > 1]
        if len(varying) != 1:
            continue
        k = varying[0]
        vals = [r.params.get(k) for r in rows]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
            continue
        order = np.argsort(vals, kind="stable")
        d = {"value": [], "accuracy": [], "accuracy_std": [], "n_selected": [], "n_selected_std": [],
             "score_label": label}
        for i in order:
            r = rows[i]
            a, sa = _stats(factor * r.values(metric))
            n, sn = _stats(r.values("n_selected"))
            d["value"].append(float(vals[i]))
            d["accuracy"].append(a)
            d["accuracy_std"].append(sa)
            d["n_selected"].append(n)
            d["n_selected_std"].append(sn)
        out[(method, k)] = d
    return out


def trace_data(result) -> dict:
    """``{"series": [{"name", "iteration", "objective", "monitored", "n_nonzero"}], "monitored": label}``
    from a :class:`~fsframe.FitResult`'s history (one series per class of a one-vs-rest fit).

    ``objective`` is the reported objective of each iterate; ``monitored`` the quantity whose
    descent the loop checks (``IterRecord.monitored``; ``None`` where nothing is checked, e.g. the
    L2 start of EM), and the top-level ``"monitored"`` says which quantity it is
    (:meth:`fsframe.OuterLoop.monitored_quantity`), or why nothing is monitored — so the picture
    shows what "monotone: yes" is about."""
    from ..loops.monitoring import monitored_series

    parts = [(f"class {r.classes[1]}", r) for r in result.per_class] if result.per_class else [("fit", result)]
    loop, surrogate = result.loop, result.surrogate
    series, label = [], None
    for name, r in parts:
        h = [x for x in r.history if x.objective is not None]
        mon = monitored_series(loop, surrogate, h)
        if mon is not None:
            label = mon[1]
        series.append({"name": name, "iteration": [int(x.k) for x in h], "objective": [float(x.objective) for x in h],
                       "monitored": [None] * len(h) if mon is None else
                       [None if v is None else float(v) for v in mon[0]],
                       "n_nonzero": [int(x.n_nonzero) for x in h]})
    if label is None:
        why = (f"loop {loop.name!r} guarantees no descent" if not getattr(loop, "monotone", True) else
               f"loop {loop.name!r} with surrogate {getattr(surrogate, 'name', None)!r} has no monotone quantity "
               "to check")
        series = [dict(s, note=why) for s in series]
    return {"series": series, "monitored": label,
            "objective": "loss + Σ φ(t_j) on the support (reported)" if surrogate is not None else "objective"}


def path_data(result) -> dict:
    """``{"parameter", "method", "value", "n_selected", "objective", "accuracy", "r2"}`` of a
    :class:`~fsframe.paths.PathResult` (its :meth:`~fsframe.paths.PathResult.sweep_data`; accuracy in
    %, a regression's validation R² in ``r2``, ``None`` without validation data), points sorted by value."""
    d = result.sweep_data()
    order = np.argsort(d["value"], kind="stable")
    return {**d, **{k: [d[k][i] for i in order] for k in ("value", "n_selected", "objective", "accuracy", "r2")}}


def plot_path(result, stem, *, title: str = "") -> list[Path]:
    """Draw a parameter path (:func:`fsframe.path`) as ``stem.png`` and ``stem.svg``: support size,
    objective and, when the path had validation data, accuracy (a real target: R²) against the
    swept parameter."""
    return draw("path", path_data(result), stem, title=title)


def _save(fig, stem: Path) -> list[Path]:
    stem = Path(stem)
    if stem.suffix.lower() in (".png", ".svg"):
        stem = stem.with_suffix("")
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    where = f"cannot write the pictures {paths[0]} and {paths[1]}"
    blocker = next((p for p in reversed(stem.parents) if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise DataFileError(f"{where}: {blocker} is a file, not a folder")
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(paths[0], dpi=110, bbox_inches="tight")
        fig.savefig(paths[1], bbox_inches="tight")
    except OSError as exc:  # a read-only folder, a full disk, a picture path that is a folder
        raise DataFileError(f"{where}: {exc.strerror or exc} ({exc.filename or stem.parent})") from exc
    return paths


MAX_TICKS = 7
"""Labelled ticks on a parameter axis at most: more grid values are thinned (evenly by position)."""


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def _value_axis(ax, values, label: str, *, integer: bool = False) -> None:
    """A parameter axis (x): logarithmic when the values are positive and span more than a decade;
    ticks at the grid values themselves (thinned to :data:`MAX_TICKS`, turned when crowded),
    labelled as the values (``0.03``, ``1``, ``300``; never ``3×10⁰``), no minor ticks."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullFormatter, NullLocator

    v = sorted({float(x) for x in values if x is not None and np.isfinite(float(x))})
    if v and v[0] > 0 and v[-1] > 10 * v[0]:
        ax.set_xscale("log")
    if v:
        idx = np.unique(np.round(np.linspace(0, len(v) - 1, min(len(v), MAX_TICKS))).astype(int))
        ticks = [v[i] for i in idx]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FixedFormatter([str(int(t)) if integer else _fmt(t) for t in ticks]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax._fsframe_ticks = (ticks, integer)  # thinned further by _declutter if the labels collide
    ax.set_xlabel(label)


def _declutter(fig) -> None:
    """Drop every other labelled grid value (keeping the first and the last) on each parameter axis
    whose tick labels come closer than 8 pixels once drawn, until none do."""
    from matplotlib.ticker import FixedFormatter, FixedLocator

    for ax in fig.axes:
        spec = getattr(ax, "_fsframe_ticks", None)
        if spec is None:
            continue
        ticks, integer = spec
        while len(ticks) > 2:
            fig.canvas.draw()
            r = fig.canvas.get_renderer()
            boxes = [t.get_window_extent(r).padded(4) for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
            if all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:])):  # 8 px apart at least
                break
            ticks = ticks[::2] if (len(ticks) - 1) % 2 == 0 else ticks[:-1:2] + [ticks[-1]]
            ax.xaxis.set_major_locator(FixedLocator(ticks))
            ax.xaxis.set_major_formatter(FixedFormatter([str(int(t)) if integer else _fmt(t) for t in ticks]))


def _integer_axis(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _frequency_features(data: dict, limit: int = 40) -> list[int]:
    """The features a frequency picture shows: all of them up to ``limit``, else the ``limit``
    selected most often by any configuration (in index order)."""
    freq = np.array([d["frequency"] for d in data.values()])
    n = freq.shape[1]
    if n <= limit:
        return list(range(n))
    top = np.argsort(-freq.max(axis=0), kind="stable")[:limit]
    return sorted(int(j) for j in top if freq[:, j].max() > 0) or list(range(limit))


def draw(kind: str, data: dict, stem, *, title: str = "") -> list[Path]:
    """Draw ``data`` (from the matching ``*_data`` function) as ``stem.png`` and ``stem.svg``."""
    plt = _pyplot()
    fig = figure(kind, data, title=title)
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)


def figure(kind: str, data: dict, *, title: str = ""):
    """The matplotlib figure of ``data`` (from the matching ``*_data`` function); the caller closes it."""
    plt = _pyplot()
    if kind == "accuracy_vs_features":
        fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
        n = len(data)
        for i, (m, d) in enumerate(data.items()):  # methods side by side (x offset 3% per method)
            x = np.asarray(d["r"], dtype=float) * (1 + 0.03 * (i - (n - 1) / 2))
            ax.errorbar(x, d["accuracy"], yerr=d["accuracy_std"], marker="o", capsize=3, label=m)
        _value_axis(ax, [r for d in data.values() for r in d["r"]], "selected features r", integer=True)
        ax.set_ylabel(next(iter(data.values())).get("score_label", "test accuracy (%)"))
        ax.legend()
    elif kind == "frequency":
        labels = list(data)
        cols = _frequency_features(data)
        names = data[labels[0]]["features"]
        fig, axes = plt.subplots(len(labels), 1, figsize=(max(7, 0.22 * len(cols) + 2), 1.0 + 1.5 * len(labels)),
                                 squeeze=False, sharex=True, layout="constrained")
        for ax, lab in zip(axes[:, 0], labels):
            f = np.asarray(data[lab]["frequency"])[cols]
            ax.bar(np.arange(len(cols)), f, width=0.8)
            ax.set_ylim(0, 1)
            ax.set_ylabel("freq.")
            ax.set_title(lab, fontsize=9, loc="left", pad=4)
        last = axes[-1, 0]
        last.set_xticks(np.arange(len(cols)), [str(names[j]) for j in cols], rotation=90, fontsize=7)
        shown = "every feature" if len(cols) == len(names) else f"the {len(cols)} features selected most often"
        last.set_xlabel(f"feature ({shown})")
    elif kind == "sweep":
        params = sorted({k for (_, k) in data})  # one row of panels per parameter: C and alpha never share an axis
        fig, axes = plt.subplots(len(params), 2, figsize=(9, 3.2 * len(params)), squeeze=False, layout="constrained")
        for row, p in zip(axes, params):
            values = []
            for (m, k), d in data.items():
                if k != p:
                    continue
                values += d["value"]
                row[0].errorbar(d["value"], d["accuracy"], yerr=d["accuracy_std"], marker="o", capsize=3, label=m)
                row[1].errorbar(d["value"], d["n_selected"], yerr=d["n_selected_std"], marker="o", capsize=3, label=m)
            score = next(iter(data.values())).get("score_label", "test accuracy (%)")
            for ax, yl in zip(row, (score, "selected features")):
                _value_axis(ax, values, p)
                ax.set_ylabel(yl)
            row[0].legend(fontsize=8)
    elif kind == "trace":
        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.6), layout="constrained")
        label = data.get("monitored")
        for s in data["series"]:
            mon = [np.nan if v is None else v for v in s.get("monitored", [])]
            if label is not None and any(np.isfinite(mon)):
                axes[0].plot(s["iteration"], mon, marker="o", label=s["name"])
            else:
                axes[0].plot(s["iteration"], s["objective"], marker="o", label=s["name"])
            axes[1].plot(s["iteration"], s["n_nonzero"], marker="o", label=s["name"])
        if label is not None:
            axes[0].set_ylabel("monitored objective")
            axes[0].set_title(f"monitored (its descent is checked):\n{label}", fontsize=8, loc="left")
        else:
            note = data["series"][0].get("note", "no monotone quantity is checked") if data["series"] else ""
            axes[0].set_ylabel("objective (reported)")
            axes[0].set_title(f"{data.get('objective', 'objective')}\nnot monitored: {note}", fontsize=8, loc="left")
        axes[1].set_ylabel("support size")
        axes[1].set_title("selected groups per iterate", fontsize=8, loc="left")
        for ax in axes:
            ax.set_xlabel("outer iteration")
            _integer_axis(ax)
        if len(data["series"]) > 1:
            axes[1].legend(fontsize=8)
    elif kind == "path":
        panels = [("n_selected", "selected features"), ("objective", "objective")]
        if any(a is not None for a in data["accuracy"]):
            panels.append(("accuracy", "validation accuracy (%)"))
        if any(a is not None for a in data.get("r2", ())):  # a real target: R² of the fitted values
            panels.append(("r2", "validation R²"))
        fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.6), squeeze=False,
                                 layout="constrained")
        x = np.asarray(data["value"], dtype=float)
        for ax, (key, label) in zip(axes[0], panels):
            v = np.array([np.nan if a is None else a for a in data[key]], dtype=float)
            ax.plot(x, v, marker="o", label=data.get("method") or "")
            _value_axis(ax, x, data["parameter"], integer=data["parameter"] == "n_features")
            ax.set_ylabel(label)
    else:
        raise ValueError(f"unknown plot kind {kind!r}; kinds are {PLOT_KINDS}")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.get_layout_engine().set(h_pad=0.1, w_pad=0.1)  # room between a panel's title and the panel above
    _declutter(fig)
    return fig


def figures_for(table) -> list[tuple[str, dict]]:
    """The pictures a table supports: ``[(kind, data)]`` with non-empty data."""
    out = []
    for kind, fn in (("accuracy_vs_features", accuracy_vs_features_data), ("sweep", sweep_data),
                     ("frequency", frequency_data)):
        d = fn(table)
        if kind == "frequency" and len(d) > MAX_PANELS:
            d = _largest_r(d)
        if d:
            out.append((kind, d))
    return out


MAX_PANELS = 8
"""A frequency picture with more configurations shows, per method, the one with the largest ``r``."""


def _largest_r(freq: dict) -> dict:
    best: dict[str, tuple[int, str]] = {}
    for label in freq:
        m = _R.match(label)
        base, r = (m.group(1), int(m.group(2))) if m else (label, 1 << 30)
        if base not in best or r > best[base][0]:
            best[base] = (r, label)
    keep = [lab for _, lab in best.values()][:MAX_PANELS]
    return {lab: freq[lab] for lab in keep}


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"
