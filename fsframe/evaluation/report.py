"""Text of the evaluation reports: the protocol in words, number formats, the summary table."""

from __future__ import annotations

import textwrap

from .metrics import METRIC_LABELS

__all__ = ["describe_protocol", "facts_text"]


def wrap(text: str, width: int = 100, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + "    " if indent else "",
                         break_on_hyphens=False) or [""]


def first_line(s: str | None, width: int = 160) -> str:
    s = (s or "").strip().splitlines()[0] if s else ""
    return s if len(s) <= width else s[: width - 3] + "..."


def describe_protocol(p: dict) -> str:
    if p["kind"] == "k-fold":
        rep = f"{p['repeats']} x " if p["repeats"] > 1 else ""
        text = f"{rep}{p['n_splits']}-fold {'stratified ' if p.get('stratified', True) else ''}CV"
    elif p["kind"] == "holdout":
        tr = round(100 * (1 - p["test_size"]))
        strat = "stratified " if p.get("stratified", True) else ""
        text = f"{p['repeats']} {strat}random {tr}/{100 - tr} split{'s' if p['repeats'] > 1 else ''}"
    else:
        text = f"{p['n_splits']} splits ({p['kind']})"
    text += f", seed {p['random_state']}"
    scale = p.get("scale", "none")
    text += {"standard": ", standardised on each training part", "minmax": ", min-max scaled on each training part",
             "maxabs": ", divided by each feature's largest |value| on each training part",
             "none": ", unscaled"}[scale]
    if p.get("n_features") is not None:
        text += f", exactly {p['n_features']} features"
    if p.get("retrain") is not None:
        text += f", {p['retrain']} retrained on the selected features"
    return text


def fmt(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind in ("accuracy", "selector_accuracy"):
        return f"{100 * v:.2f}"
    if kind in ("mcc", "selector_mcc"):
        return f"{v:.3f}"
    if kind in ("r2", "selector_r2"):
        return f"{v:.4f}"
    if kind in ("mse", "mae", "selector_mse", "selector_mae"):
        return f"{v:.4g}"
    if kind == "seconds":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if kind in ("n_selected", "n_iter"):
        return f"{v:.1f}"
    return f"{v:.1f}"


def fmt_mm(v: float | None, kind: str) -> str:
    if v is None:
        return "-"
    if kind in ("n_selected", "n_iter"):
        return f"{v:g}"
    return fmt(v, kind)


def target_text(ds: dict) -> str:
    """``"3 classes"``, or ``"real target"`` for a regression's data (``task`` in the dataset)."""
    return "real target" if ds.get("task") == "regression" else f"{len(ds['classes'])} classes"


def facts_text(facts: dict, components: dict) -> str:
    """``delta 0.6875 ± 0.0121 [0.6712, 0.7020], delta_max ...``: the facts of
    :meth:`CVResult.facts` (or plain numbers of one fit), leaving out those that merely repeat a
    value shown in the model line (MPM's ``rho``; a constant ``delta_fraction`` filled in by
    ``format_components(resolved=...)``)."""
    params = {k: v for c in components.values() if c for k, v in c.items() if k != "name"}
    parts = []
    for k, s in facts.items():
        if not isinstance(s, dict):
            s = {"mean": s, "std": None, "min": s, "max": s, "n": 1}
        constant = s["min"] == s["max"]
        base = k.split("[", 1)[0]  # one-vs-rest: "delta[2]" is class 2's delta
        if not s["n"] or (base in params and constant and params[base] in (None, s["min"])
                          and (k == base or params[base] is not None or _same_for_all(facts, base))):
            continue  # shown in the model line
        if s["min"] == s["max"]:
            parts.append(f"{k} {s['mean']:.4g}")
        else:
            std = "" if s["std"] is None else f" ± {s['std']:.2g}"
            parts.append(f"{k} {s['mean']:.4g}{std} [{s['min']:.4g}, {s['max']:.4g}]")
    return ", ".join(parts)


def _same_for_all(facts: dict, base: str) -> bool:
    vals = {(s["min"], s["max"]) if isinstance(s, dict) else (s, s) for k, s in facts.items() if k.startswith(base + "[")}
    return len(vals) == 1


def summary_table(res) -> list[str]:
    summ = res.summary()
    rows = [("", "mean", "std", "min", "max")]
    for m in res.metrics:
        s = summ[m]
        rows.append((METRIC_LABELS[m], fmt(s["mean"], m), fmt(s["std"], m), fmt_mm(s["min"], m), fmt_mm(s["max"], m)))
    w = [max(len(r[i]) for r in rows) for i in range(5)]
    out = []
    for i, r in enumerate(rows):
        pm = "±" if i else " "
        out.append(f"  {r[0]:<{w[0]}}  {r[1]:>{w[1]}} {pm} {r[2]:<{w[2]}}   {r[3]:>{w[3]}}  {r[4]:>{w[4]}}".rstrip())
    return out

