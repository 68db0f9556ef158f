"""The report page of a results folder (``fsframe report RESULTS``): every table and picture,
rebuilt from the cells, in Markdown or HTML."""

from __future__ import annotations

import html
from pathlib import Path

from ..errors import DataFileError
from .paper import run_status
from .plots import draw, figures_for, slug

__all__ = ["write_report"]

_CAPTIONS = {"accuracy_vs_features": "Test accuracy against the number of selected features (mean ± std over splits)",
             "frequency": "Selection frequency of each feature over the splits",
             "sweep": "Accuracy and support size against the swept parameter (mean ± std over splits)"}


def _caption(kind: str, table) -> str:
    """The caption of a picture of ``table`` (a regression's score is R², not accuracy)."""
    text = _CAPTIONS[kind]
    if table.protocol.get("task") == "regression":
        text = text.replace("Test accuracy", "Test R²").replace("Accuracy", "R²")
    return text


def _lower_first(text: str) -> str:
    """``text`` with its first letter lower-cased unless its first word is a symbol or acronym:
    "Test R²" -> "test R²", "R² and support size" stays (``str.lower`` would write r²)."""
    first = text.split(" ", 1)[0]
    return text if len(first) > 1 and not first[1:].islower() else text[:1].lower() + text[1:]


def write_report(result, *, fmt: str = "md", plots: bool = True) -> Path:
    """Write ``report.md`` (or ``report.html``) and the pictures (``img/*.png`` and ``.svg``) into the
    results folder of ``result`` (a :class:`~fsframe.evaluation.experiment.StudyResult`); returns the page."""
    root = Path(result.root)
    m = result.manifest
    env = m.get("environment", {})
    sections = []
    for t in result.tables:
        seed = t.protocol.get("random_state")
        name = f"{t.dataset['name']}" + (f" (seed {seed})" if len(m.get("seeds", [])) > 1 else "")
        images = []
        if plots:
            for kind, data in figures_for(t):
                stem = root / "img" / f"{slug(name)}-{kind}"
                draw(kind, data, stem, title=f"{name}: {_lower_first(_caption(kind, t).split(' (')[0])}")
                images.append((_caption(kind, t), f"img/{stem.name}.png"))
        sections.append((name, t, images))
    status = run_status({**m, "n_finished": result.n_finished, "n_cells": result.n_cells})
    head = (f"study {m.get('study')}: {m.get('n_cells')} cells, engine {m.get('engine')}, started {m.get('started')}, "
            f"{status}; fsframe "
            f"{env.get('versions', {}).get('fsframe', '?')}, Python {env.get('python', '?')}, {env.get('platform', '?')}")
    missing = result.n_cells - result.n_finished
    if missing:
        head += f"; {missing} planned cells have no result yet (rerun fsframe run to finish them)"
    if fmt == "html":
        body = [f"<h1>{html.escape(str(m.get('study')))}</h1>", f"<p>{html.escape(head)}</p>"]
        for name, t, images in sections:
            body.append(f"<h2>{html.escape(name)}</h2>")
            body.append(f"<pre>{html.escape(t.report())}</pre>")
            for caption, src in images:
                body.append(f'<figure><img src="{src}" alt="{html.escape(caption)}"><figcaption>'
                            f"{html.escape(caption)}</figcaption></figure>")
        return _write(root / "report.html", "<!doctype html>\n<meta charset=\"utf-8\">\n<title>fsframe report</title>\n"
                      + "\n".join(body) + "\n")
    lines = [f"# {m.get('study')}", "", head, ""]
    for name, t, images in sections:
        lines += [f"## {name}", "", t.report(markdown=True), ""]
        for caption, src in images:
            lines += [f"![{caption}]({src})", ""]
    return _write(root / "report.md", "\n".join(lines))


def _write(page: Path, text: str) -> Path:
    try:
        page.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"cannot write the report page {page}: {exc.strerror or exc}") from exc
    return page
