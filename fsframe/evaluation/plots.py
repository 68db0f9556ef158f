"""Pictures of evaluation results (matplotlib, the optional extra ``fsframe[plot]``).

Each kind has a *data* function (plain numbers from the cells; what the tests check) and a
drawing function writing PNG and SVG:

* ``accuracy_vs_features``: accuracy against the number of selected features per method, mean
  and standard deviation over the splits (papers 002 Fig. 1 and 004 style);
* ``frequency``: the fraction of splits that selected each feature, per configuration (paper 001
  Fig. 1 style);
* ``sweep``: accuracy and support size against one parameter a method's grid varies
  (``alpha``, ``delta``, ``C``...);
* ``trace``: objective and support size per outer-loop iteration of one fit
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
           "figures_for", "plot_path", "PLOT_KINDS"]

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


def accuracy_vs_features_data(table) -> dict:
    """``{method: {"r": [...], "n_selected": [...], "accuracy": [...], "accuracy_std": [...]}}`` over
    the rows of a :class:`CompareResult` whose labels end in `` r=<n>`` (a ``n_features`` grid);
    accuracy in %. Empty when the table has no such rows."""
    out: dict[str, dict] = {}
    for res in table.results:
        m = _R.match(res.label)
        if not m or not res.ok_folds:
            continue
        acc = 100.0 * res.values("accuracy")
        d = out.setdefault(m.group(1), {"r": [], "n_selected": [], "accuracy": [], "accuracy_std": []})
        d["r"].append(int(m.group(2)))
        d["n_selected"].append(float(res.values("n_selected").mean()))
        mean, std = _stats(acc)
        d["accuracy"].append(mean)
        d["accuracy_std"].append(std)
    for d in out.values():
        order = np.argsort(d["r"], kind="stable")
        for k in d:
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
    "n_selected": [...], "n_selected_std": [...]}}`` for each method with several rows that differ
    in exactly one numeric parameter (``n_features`` rows are left to :func:`accuracy_vs_features_data`)."""
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
        d = {"value": [], "accuracy": [], "accuracy_std": [], "n_selected": [], "n_selected_std": []}
        for i in order:
            r = rows[i]
            a, sa = _stats(100.0 * r.values("accuracy"))
            n, sn = _stats(r.values("n_selected"))
            d["value"].append(float(vals[i]))
            d["accuracy"].append(a)
            d["accuracy_std"].append(sa)
            d["n_selected"].append(n)
            d["n_selected_std"].append(sn)
        out[(method, k)] = d
    return out


def trace_data(result) -> dict:
    """``{"series": [{"name", "iteration", "objective", "n_nonzero"}]}`` from a
    :class:`~fsframe.FitResult`'s history (one series per class of a one-vs-rest fit)."""
    parts = [(f"class {r.classes[1]}", r) for r in result.per_class] if result.per_class else [("fit", result)]
    series = []
    for name, r in parts:
        h = [x for x in r.history if x.objective is not None]
        series.append({"name": name, "iteration": [int(x.k) for x in h], "objective": [float(x.objective) for x in h],
                       "n_nonzero": [int(x.n_nonzero) for x in h]})
    return {"series": series}


def path_data(result) -> dict:
    """``{"parameter", "method", "value", "n_selected", "objective", "accuracy"}`` of a
    :class:`~fsframe.paths.PathResult` (its :meth:`~fsframe.paths.PathResult.sweep_data`; accuracy in
    %, ``None`` without validation data), points sorted by value."""
    d = result.sweep_data()
    order = np.argsort(d["value"], kind="stable")
    return {**d, **{k: [d[k][i] for i in order] for k in ("value", "n_selected", "objective", "accuracy")}}


def plot_path(result, stem, *, title: str = "") -> list[Path]:
    """Draw a parameter path (:func:`fsframe.path`) as ``stem.png`` and ``stem.svg``: support size,
    objective and, when the path had validation data, accuracy against the swept parameter."""
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


def draw(kind: str, data: dict, stem, *, title: str = "") -> list[Path]:
    """Draw ``data`` (from the matching ``*_data`` function) as ``stem.png`` and ``stem.svg``."""
    plt = _pyplot()
    if kind == "accuracy_vs_features":
        fig, ax = plt.subplots(figsize=(6, 4))
        n = len(data)
        for i, (m, d) in enumerate(data.items()):  # methods side by side (x offset 3% per method)
            x = np.asarray(d["r"], dtype=float) * (1 + 0.03 * (i - (n - 1) / 2))
            ax.errorbar(x, d["accuracy"], yerr=d["accuracy_std"], marker="o", capsize=3, label=m)
        ax.set_xscale("log")
        ax.set_xticks(data[next(iter(data))]["r"], [str(r) for r in data[next(iter(data))]["r"]])
        ax.set_xlabel("selected features r")
        ax.set_ylabel("test accuracy (%)")
        ax.legend()
    elif kind == "frequency":
        labels = list(data)
        fig, axes = plt.subplots(len(labels), 1, figsize=(7, 1.6 + 1.4 * len(labels)), squeeze=False, sharex=True)
        for ax, lab in zip(axes[:, 0], labels):
            f = data[lab]["frequency"]
            ax.bar(np.arange(len(f)), f, width=0.8)
            ax.set_ylim(0, 1)
            ax.set_ylabel("freq.")
            ax.set_title(lab, fontsize=9, loc="left")
        axes[-1, 0].set_xlabel("feature index")
    elif kind == "sweep":
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for (m, k), d in data.items():
            axes[0].errorbar(d["value"], d["accuracy"], yerr=d["accuracy_std"], marker="o", capsize=3, label=f"{m} ({k})")
            axes[1].errorbar(d["value"], d["n_selected"], yerr=d["n_selected_std"], marker="o", capsize=3,
                             label=f"{m} ({k})")
        for ax, yl in zip(axes, ("test accuracy (%)", "selected features")):
            ax.set_xscale("log" if all(v > 0 for d in data.values() for v in d["value"]) else "linear")
            ax.set_xlabel("parameter value")
            ax.set_ylabel(yl)
        axes[0].legend(fontsize=8)
    elif kind == "trace":
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for s in data["series"]:
            axes[0].plot(s["iteration"], s["objective"], marker="o", label=s["name"])
            axes[1].plot(s["iteration"], s["n_nonzero"], marker="o", label=s["name"])
        axes[0].set_ylabel("objective")
        axes[1].set_ylabel("support size")
        for ax in axes:
            ax.set_xlabel("outer iteration")
        if len(data["series"]) > 1:
            axes[1].legend(fontsize=8)
    elif kind == "path":
        panels = [("n_selected", "selected features"), ("objective", "objective")]
        if any(a is not None for a in data["accuracy"]):
            panels.append(("accuracy", "validation accuracy (%)"))
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
        x = np.asarray(data["value"], dtype=float)
        for ax, (key, label) in zip(axes[0], panels):
            v = np.array([np.nan if a is None else a for a in data[key]], dtype=float)
            ax.plot(x, v, marker="o", label=data.get("method") or "")
            ax.set_xscale("log" if np.all(x > 0) and x.max() > 10 * x.min() else "linear")
            ax.set_xlabel(data["parameter"])
            ax.set_ylabel(label)
    else:
        raise ValueError(f"unknown plot kind {kind!r}; kinds are {PLOT_KINDS}")
    if title:
        fig.suptitle(title, fontsize=10)
    try:
        return _save(fig, stem)
    finally:
        plt.close(fig)


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
