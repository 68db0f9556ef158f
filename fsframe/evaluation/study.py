"""Experiment files: a whole study (datasets x methods x parameter grids x protocol x seeds) in
one TOML file, read with the standard library (``tomllib``; ``tomli`` on Python 3.10).

::

    [study]
    name = "sonar-fsv"
    output = "results/sonar-fsv"      # relative to this file (fsframe run --out overrides)
    seeds = [0]

    [protocol]
    name = "paper000"                 # or spell it out: cv = 10, repeats = 1, scale = "standard"

    [[datasets]]
    path = "data/sonar.csv"           # relative to this file; or name = "breast_cancer" (bundled)
    label_column = -1                 # other keys: loader options

    [[methods]]
    method = "fsv"
    alpha = [0.5, 5]                  # a list is a grid: one configuration per value
    datasets = ["sonar"]              # optional: only on these datasets

Named protocols (:data:`PROTOCOLS`): ``paper000`` 10-fold CV (paper 000 §4); ``paper001`` 10 x
10-fold CV (paper 001); ``paper002`` 10 random 80/20 splits, exactly ``r`` features, a standard L2
SVM retrained on them (paper 002 §3.1); ``paper004`` 10 random 60/40 splits, z-scored, a linear SVM
with ``C`` tuned by 3-fold CV on the training part retrained on the top ``d`` features (paper 004).
``n_features = [r1, r2, ...]`` in ``[protocol]`` gives one configuration per ``r``.

What the papers' protocols add (:mod:`~fsframe.evaluation.protocols`): ``top_k = [...]`` (one fit
per split, the evaluated classifier on the top ``k`` features of its ranking for each ``k``),
``baselines = true`` (an *all features* row and *k random features* rows), ``tune = {p = [...]}``
in a ``[[methods]]`` entry (chosen per split by an inner cross-validation on the training part),
the retrained classifier's ``retrain_grid`` and ``retrain_folds``, and a ``[reduced]`` section:
the small version ``fsframe run STUDY --reduced`` runs (fewer data sets, splits, grid points).
Data sets of shipped studies name a ``file`` in the data folder (:mod:`~fsframe.evaluation.study_data`).
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any, Mapping

import attrs
import numpy as np

from ..errors import DataError, DataFileError, InvalidOptionError
from .study_data import DatasetSpec, file_source

__all__ = ["BUNDLED_STUDIES", "Study", "DatasetSpec", "MethodSpec", "Protocol", "PROTOCOLS", "load_study",
           "study_from_dict", "study_to_toml", "folds_for", "capped_folds"]

TUNED_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
"""Default ``C`` values a tuned retrained classifier (``tuned-svm``, ``tuned-linear-svc``) chooses
from by cross-validation on the training part (``retrain_grid`` overrides them)."""

PAPER004_C_GRID = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)
"""004 §5.1: the candidate ``C`` of the linear SVM built on the selected features."""

PAPER004_FOLDS = {"folds": 3, "large_folds": 8, "large_from": 200}
"""004 §5.1: "a 3-fold was used for datasets with less than 200 training samples, and an 8-fold
cross-validation was used for other datasets" (tuning the classifier and the methods' parameters)."""

PROTOCOLS: dict[str, dict] = {
    "paper000": {"cv": 10, "repeats": 1, "scale": "standard", "retrain": None},
    "paper001": {"cv": 10, "repeats": 10, "scale": "standard", "retrain": None},
    "paper002": {"cv": 0.2, "repeats": 10, "scale": "standard", "retrain": "svm", "needs_n_features": True},
    "paper004": {"cv": 0.4, "repeats": 10, "scale": "standard", "retrain": "tuned-svm",
                 "retrain_grid": PAPER004_C_GRID, "retrain_folds": PAPER004_FOLDS, "tune_folds": PAPER004_FOLDS,
                 "needs_n_features": True},
}
"""The source papers' protocols by name; fields given next to ``name`` in ``[protocol]`` override them."""

RETRAINS = ("svm", "linear-svc", "tuned-svm", "tuned-linear-svc")
"""Retrained classifiers by name: ``SVC(kernel="linear", C=retrain_C)``, ``LinearSVC(C=retrain_C)``
and the same with ``C`` chosen from ``retrain_grid`` by ``retrain_folds``-fold CV."""

_PROTOCOL_KEYS = {"name", "cv", "holdout", "repeats", "scale", "retrain", "retrain_C", "n_features", "top_k",
                  "baselines", "reference", "random_draws", "retrain_grid", "retrain_folds", "tune_folds"}
_REDUCED_KEYS = {"datasets", "methods", "seeds", "output", "tune", "cv", "holdout", "repeats", "n_features", "top_k",
                 "random_draws", "retrain_grid", "retrain_folds", "tune_folds"}


def folds_for(rule, n_train: int) -> int:
    """The folds of an inner cross-validation: ``rule`` is an int, or
    ``{"folds": a, "large_folds": b, "large_from": m}`` (``a`` folds below ``m`` training samples,
    ``b`` from ``m`` on: 004 §5.1's 3 and 8 at 200)."""
    if isinstance(rule, Mapping):
        return int(rule["large_folds"] if n_train >= rule["large_from"] else rule["folds"])
    return int(rule)


def capped_folds(rule, y_train, where: str = "inner cross-validation") -> tuple[int, str | None]:
    """The folds of a stratified inner cross-validation of the training labels ``y_train``: the
    rule's (:func:`folds_for`) capped by the smallest class's count there, since stratified
    ``k``-fold CV needs ``k`` members of every class (ORL: 6 per class in a 60 % training part of
    240 samples, where 004's rule asks for 8 folds). Returns the folds and, when the cap binds, a
    sentence saying so (the caller warns with it); :class:`~fsframe.errors.DataError` naming the
    class when it has fewer than 2 training samples (no stratified split exists)."""
    k = folds_for(rule, len(y_train))
    labels, counts = np.unique(np.asarray(y_train), return_counts=True)
    i = int(np.argmin(counts))
    smallest = int(counts[i])
    label = labels[i].item() if hasattr(labels[i], "item") else labels[i]
    if smallest < 2:
        raise DataError(f"{where}: class {label!r} has {smallest} training sample(s); a stratified inner "
                        "cross-validation needs at least 2 of every class")
    if k > smallest:
        return smallest, (f"{where}: {k}-fold CV capped to {smallest} folds: class {label!r} has only "
                          f"{smallest} training samples")
    return k, None


def _toml():
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli
    except ImportError:
        raise InvalidOptionError("reading experiment files on Python 3.10 needs tomli: pip install tomli") from None
    return tomli


@attrs.frozen
class MethodSpec:
    """One configuration of a study: its label and everything :func:`fsframe.fit` receives;
    ``tune`` maps parameters to the grid an inner cross-validation chooses from in each split."""

    label: str
    spec: dict
    datasets: tuple | None = None  # only these datasets (None: all)
    tune: dict | None = None


@attrs.frozen
class Protocol:
    """How each dataset is split and evaluated (see :func:`fsframe.evaluation.cross_validate`)."""

    name: str | None
    cv: Any
    repeats: int
    scale: str
    retrain: str | None
    retrain_C: float
    n_features: tuple = (None,)
    top_k: tuple = ()
    baselines: bool = False
    reference: str = "svm"
    random_draws: int = 5
    retrain_grid: tuple = TUNED_C_GRID
    retrain_folds: Any = 3
    tune_folds: Any = 3

    def retrain_estimator(self, n_train: int = 0, max_folds: int | None = None):
        """The ``retrain=`` argument: a name, or for ``tuned-*`` a ``GridSearchCV`` over
        ``retrain_grid`` with the folds ``retrain_folds`` gives for ``n_train`` training samples,
        at most ``max_folds`` (the smallest class's training count: :func:`capped_folds`)."""
        if self.retrain in ("tuned-linear-svc", "tuned-svm"):
            from sklearn.model_selection import GridSearchCV
            from sklearn.svm import SVC, LinearSVC

            base = LinearSVC() if self.retrain == "tuned-linear-svc" else SVC(kernel="linear")
            k = folds_for(self.retrain_folds, n_train)
            return GridSearchCV(base, {"C": list(self.retrain_grid)}, cv=k if max_folds is None else min(k, max_folds))
        return self.retrain

    def as_dict(self) -> dict:
        out = {"name": self.name, "cv": self.cv, "repeats": self.repeats, "scale": self.scale,
               "retrain": self.retrain, "retrain_C": self.retrain_C, "n_features": list(self.n_features)}
        if self.retrain in ("tuned-linear-svc", "tuned-svm"):
            out.update(retrain_grid=list(self.retrain_grid), retrain_folds=self.retrain_folds)
        if self.top_k:
            out["top_k"] = list(self.top_k)
        if self.baselines:
            out.update(baselines=True, reference=self.reference, random_draws=self.random_draws)
        return out


@attrs.frozen
class Study:
    """A parsed experiment file."""

    name: str
    datasets: tuple
    methods: tuple
    protocol: Protocol
    seeds: tuple
    output: str | None
    text: str = ""  # the file as written (kept in the manifest)
    path: str | None = None
    paper: str | None = None  # the paper whose numbers `fsframe report --paper` shows beside ours
    title: str | None = None
    reduced: bool = False  # this is the [reduced] version of the file

    def configurations(self, dataset: str | None = None) -> list[MethodSpec]:
        """Every method configuration (of one dataset: those not restricted to others) crossed
        with the protocol's ``n_features`` values."""
        if dataset is None:
            return [c for d in self.datasets for c in self.configurations(d.name)]
        out = []
        for m in self.methods:
            if m.datasets is not None and dataset not in m.datasets:
                continue
            for r in self.protocol.n_features:
                if r is None:
                    out.append(m)
                else:
                    out.append(MethodSpec(f"{m.label} r={r}", {**m.spec, "n_features": r}, m.datasets, m.tune))
        labels = [c.label for c in out]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise InvalidOptionError(f"experiment file: duplicate configuration labels {dup} on dataset {dataset!r}; "
                                     "give each [[methods]] entry its own label = \"...\"")
        if not out:
            raise InvalidOptionError(f"experiment file: no [[methods]] entry runs on dataset {dataset!r}")
        return out


BUNDLED_STUDIES = ("quickstart", "paper000", "paper001", "paper002", "paper002-dual", "paper003", "paper004")
"""Experiment files shipped with fsframe (``fsframe run quickstart``): ``quickstart`` on bundled
data; ``paper000`` ... ``paper004`` (and ``paper002-dual``) the papers' protocols on their data sets (read from the
data folder, docs/papers.md; ``--reduced`` runs on bundled data)."""


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise InvalidOptionError(f"{v!r} cannot be written to an experiment file")


def study_to_toml(study: Study) -> str:
    """The experiment file of ``study`` (each configuration as its own [[methods]] entry; a value
    that is itself a list is written as a one-point grid)."""
    p = study.protocol
    lines = ["[study]", f"name = {_toml_value(study.name)}", f"seeds = {_toml_value(list(study.seeds))}"]
    if study.output:
        lines.append(f"output = {_toml_value(study.output)}")
    lines += ["", "[protocol]"]
    if p.name:
        lines.append(f"name = {_toml_value(p.name)}")
    lines += [f"cv = {_toml_value(p.cv)}", f"repeats = {p.repeats}", f"scale = {_toml_value(p.scale)}",
              f"retrain = {_toml_value(p.retrain or 'none')}", f"retrain_C = {p.retrain_C!r}"]
    if p.n_features != (None,):
        lines.append(f"n_features = {_toml_value(list(p.n_features))}")
    extra = {k: v for k, v in p.as_dict().items() if k in _PROTOCOL_KEYS - {"name", "cv", "repeats", "scale",
                                                                           "retrain", "retrain_C", "n_features"}}
    lines += [f"{k} = {_toml_value(v)}" for k, v in extra.items()]
    for d in study.datasets:
        lines += ["", "[[datasets]]", f"name = {_toml_value(d.name)}"]
        if d.source != d.name:
            lines.append(f"path = {_toml_value(d.source)}")
        lines += [f"{k} = {_toml_value(v)}" for k, v in d.options.items()]
    for m in study.methods:
        lines += ["", "[[methods]]", f"label = {_toml_value(m.label)}"]
        if m.datasets is not None:
            lines.append(f"datasets = {_toml_value(list(m.datasets))}")
        lines += [f"{k} = {_toml_value([v] if isinstance(v, list) else v)}" for k, v in m.spec.items()
                  if v is not None]
        if m.tune:
            lines.append(f"tune = {_toml_value(m.tune)}")
    return "\n".join(lines) + "\n"


def load_study(path: str | os.PathLike, *, data_dir: str | os.PathLike | None = None, reduced: bool = False) -> Study:
    """Read an experiment file (TOML) or a bundled study by name (:data:`BUNDLED_STUDIES`).
    Relative paths in a file are relative to the file; a bundled study's ``output`` is relative to
    the working directory. ``file = ...`` data sets are looked up in ``data_dir`` (else
    ``$FSFRAME_DATA``); ``reduced`` gives the study's ``[reduced]`` version."""
    p = Path(path)
    kw = dict(data_dir=data_dir, reduced=reduced)
    if not p.is_file() and str(path) in BUNDLED_STUDIES:
        from importlib import resources

        text = resources.files("fsframe.evaluation").joinpath("studies", f"{path}.toml").read_text(encoding="utf-8")
        return study_from_dict(_parse(text, str(path)), base=Path.cwd(), text=text, path=str(path), **kw)
    if not p.is_file():
        what = "is a folder, not an experiment file" if p.is_dir() else "not found"
        raise DataFileError(f"experiment file {path} {what} (bundled studies: {', '.join(BUNDLED_STUDIES)})")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"cannot read the experiment file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataFileError(f"experiment file {path} is not UTF-8 text ({exc}); TOML files are UTF-8: save it "
                            "as UTF-8") from None
    return study_from_dict(_parse(text, str(path)), base=p.resolve().parent, text=text, path=str(p), **kw)


def _parse(text: str, path: str) -> dict:
    try:
        return _toml().loads(text)
    except Exception as exc:  # tomllib.TOMLDecodeError
        raise InvalidOptionError(f"{path}: not valid TOML: {exc}") from None


def study_from_dict(data: Mapping, *, base: str | os.PathLike = ".", text: str = "", path: str | None = None,
                    data_dir: str | os.PathLike | None = None, reduced: bool = False) -> Study:
    """A :class:`Study` from the parsed TOML (a mapping with ``study``, ``protocol``, ``datasets``,
    ``methods`` and optionally ``reduced``); with ``reduced=True`` its ``[reduced]`` version."""
    where = path or "experiment"
    unknown = sorted(set(data) - {"study", "protocol", "datasets", "methods", "reduced"})
    if unknown:
        raise InvalidOptionError(f"{where}: unknown sections {unknown}; use [study], [protocol], [[datasets]], "
                                 "[[methods]], [reduced]")
    for key, kind, how in (("study", Mapping, "a table [study]"), ("protocol", Mapping, "a table [protocol]"),
                           ("datasets", list, "an array of tables [[datasets]]"),
                           ("methods", list, "an array of tables [[methods]]"),
                           ("reduced", Mapping, "a table [reduced]")):
        if key in data and not isinstance(data[key], kind):
            raise InvalidOptionError(f"{where}: {key} must be {how}, got {type(data[key]).__name__} {data[key]!r}")
    head = dict(data.get("study", {}))
    bad = sorted(set(head) - {"name", "output", "seeds", "seed", "paper", "title"})
    if bad:
        raise InvalidOptionError(f"{where}: [study] does not take {bad} (name, output, seeds, paper, title)")
    cut = dict(data.get("reduced") or {})
    if reduced and "reduced" not in data:
        raise InvalidOptionError(f"{where}: the study has no [reduced] section, so it has no reduced version; run it "
                                 "without --reduced")
    bad = sorted(set(cut) - _REDUCED_KEYS)
    if bad:
        raise InvalidOptionError(f"{where}: [reduced] does not take {bad}; keys are {sorted(_REDUCED_KEYS)}")
    seeds = (cut if reduced and "seeds" in cut else head).get("seeds", [head.get("seed", 0)])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                          for s in seeds):
        raise InvalidOptionError(f"{where}: seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    base = Path(base)
    for key in ("name", "output", "paper", "title"):
        if head.get(key) is not None and not isinstance(head[key], str):
            raise InvalidOptionError(f"{where}: [study] {key} = {head[key]!r}; it must be a string")
    name = str(head.get("name") or (Path(path).stem if path else "study"))
    output = head.get("output")
    if reduced:
        name = f"{name}-reduced"
        output = cut.get("output", f"{output}-reduced" if output else None)
    if output is not None:
        output = os.path.normpath(base / output) if not os.path.isabs(output) else str(output)
    every = tuple(_dataset(d, base, where, i, data_dir, name) for i, d in enumerate(data.get("datasets") or []))
    names = [d.name for d in every]
    if len(set(names)) < len(names):
        raise InvalidOptionError(f"{where}: duplicate dataset names {names}; give each a name = \"...\"")
    datasets = _chosen_datasets(every, cut if reduced else None, where)
    if not datasets:
        raise InvalidOptionError(f"{where}: no [[datasets]]; add one, e.g. [[datasets]] name = \"breast_cancer\"")
    methods = tuple(m for i, entry in enumerate(data.get("methods") or []) for m in _methods(entry, where, i))
    if not methods:
        raise InvalidOptionError(f"{where}: no [[methods]]; add one, e.g. [[methods]] method = \"fsv\"")
    unknown_ds = sorted({x for m in methods for x in (m.datasets or ()) if x not in names})
    if unknown_ds:
        raise InvalidOptionError(f"{where}: methods name datasets {unknown_ds} that [[datasets]] does not define "
                                 f"(defined: {names})")
    protocol = dict(data.get("protocol") or {"name": "paper000"})
    if reduced:
        methods = _reduce_methods(methods, cut, where)
        protocol.update({k: v for k, v in cut.items() if k in _PROTOCOL_KEYS})
        if "holdout" in cut:
            protocol.pop("cv", None)
        elif "cv" in cut:
            protocol.pop("holdout", None)
    kept = {d.name for d in datasets}
    methods = tuple(m for m in methods if m.datasets is None or kept & set(m.datasets))
    study = Study(name=name, datasets=datasets, methods=methods, protocol=_protocol(protocol, where),
                  seeds=tuple(seeds), output=output, text=text, path=path, paper=head.get("paper"),
                  title=head.get("title"), reduced=reduced)
    study.configurations()  # duplicate labels, datasets without methods fail here
    return study


def _chosen_datasets(every: tuple, cut: dict | None, where: str) -> tuple:
    """The data sets of the full run (those not marked ``only = "reduced"``) or of the reduced one
    (those ``[reduced] datasets`` names, default every data set of the full run)."""
    if cut is None:
        return tuple(d for d in every if d.only != "reduced")
    wanted = cut.get("datasets")
    if wanted is None:
        return tuple(d for d in every if d.only != "full")
    if not isinstance(wanted, list) or not all(isinstance(x, str) for x in wanted):
        raise InvalidOptionError(f"{where}: [reduced] datasets = [\"name\", ...] lists dataset names")
    by_name = {d.name: d for d in every}
    missing = [x for x in wanted if x not in by_name]
    if missing:
        raise InvalidOptionError(f"{where}: [reduced] datasets names {missing}, not defined in [[datasets]]")
    return tuple(by_name[x] for x in wanted)


def _reduce_methods(methods: tuple, cut: dict, where: str) -> tuple:
    """``[reduced] methods = [labels]`` keeps those configurations; ``[reduced] tune = {p = [...]}``
    replaces the tuning grid of ``p`` wherever a method tunes it."""
    keep = cut.get("methods")
    if keep is not None:
        labels = [m.label for m in methods]
        if not isinstance(keep, list) or any(k not in labels for k in keep):
            raise InvalidOptionError(f"{where}: [reduced] methods = {keep!r} must list configuration labels among "
                                     f"{labels}")
        methods = tuple(m for m in methods if m.label in keep)
    grids = _tune_table(cut.get("tune"), where, "[reduced] tune") if "tune" in cut else {}
    if grids:
        methods = tuple(attrs.evolve(m, tune={k: grids.get(k, v) for k, v in m.tune.items()}) if m.tune else m
                        for m in methods)
    return methods


def _dataset(d, base: Path, where: str, i: int, data_dir, study: str) -> DatasetSpec:
    if not isinstance(d, Mapping):
        raise InvalidOptionError(f"{where}: datasets[{i}] must be a table")
    d = dict(d)
    name, path, file, gen = d.pop("name", None), d.pop("path", None), d.pop("file", None), d.pop("generator", None)
    url, note, only, bundled = d.pop("url", None), d.pop("note", None), d.pop("only", None), d.pop("bundled", None)
    for key, v in (("name", name), ("path", path), ("file", file), ("generator", gen), ("url", url), ("note", note),
                   ("bundled", bundled)):
        if v is not None and not isinstance(v, str):
            raise InvalidOptionError(f"{where}: datasets[{i}]: {key} = {v!r}; it must be a string")
    if only not in (None, "reduced", "full"):
        raise InvalidOptionError(f"{where}: datasets[{i}]: only = {only!r}; use \"reduced\" or \"full\"")
    given = [k for k, v in (("path", path), ("file", file), ("generator", gen), ("bundled", bundled)) if v is not None]
    if len(given) > 1:
        raise InvalidOptionError(f"{where}: datasets[{i}] gives {' and '.join(given)}; give one")
    cv = d.pop("cv", None)
    if cv is not None and (isinstance(cv, bool) or not isinstance(cv, (int, float))):
        raise InvalidOptionError(f"{where}: datasets[{i}]: cv = {cv!r}; give folds (an integer) or a test fraction")
    extra = dict(url=url, note=note, only=only, study=where, cv=cv)
    if gen is not None:
        if name is None:
            raise InvalidOptionError(f"{where}: datasets[{i}]: a generator data set needs name = \"...\"")
        return DatasetSpec(name=name, source=None, options=d, generator=gen, **extra)
    if file is not None:
        source, origin = file_source(file, data_dir, f"{where}: datasets[{i}]")
        return DatasetSpec(name=str(name or Path(file).name.split(".")[0]), source=source, options=d, file=file,
                           folder_origin=origin, **extra)
    if bundled is not None:  # a bundled data set under another name (name = "wdbc", bundled = "breast_cancer")
        return DatasetSpec(name=str(name or bundled), source=bundled, options=d, **extra)
    if path is None and name is None:
        raise InvalidOptionError(f"{where}: datasets[{i}] needs name = \"<bundled>\", path = \"<file>\", "
                                 "file = \"<file in the data folder>\" or generator = \"module:function\"")
    if path is None:
        return DatasetSpec(name=str(name), source=str(name), options=d, **extra)
    full = Path(path) if os.path.isabs(path) else Path(os.path.normpath(base / path))
    return DatasetSpec(name=str(name or Path(path).name.split(".")[0]), source=str(full), options=d, **extra)


def _tune_table(value, where: str, what: str) -> dict:
    if not isinstance(value, Mapping) or not value:
        raise InvalidOptionError(f"{where}: {what} must be a table of grids, e.g. tune = {{C = [0.1, 1, 10]}}")
    out = {}
    for k, v in value.items():
        if not isinstance(v, list) or not v:
            raise InvalidOptionError(f"{where}: {what}: {k} = {v!r} must be a non-empty list (the grid the inner "
                                     "cross-validation chooses from)")
        out[str(k)] = list(v)
    return out


def _methods(entry, where: str, i: int) -> list[MethodSpec]:
    if not isinstance(entry, Mapping):
        raise InvalidOptionError(f"{where}: methods[{i}] must be a table")
    spec = dict(entry)
    label = spec.pop("label", None)
    only = spec.pop("datasets", None)
    tune = _tune_table(spec.pop("tune"), where, f"methods[{i}]: tune") if "tune" in spec else None
    if only is not None:
        if isinstance(only, str):
            only = [only]
        if not isinstance(only, list) or not all(isinstance(x, str) for x in only):
            raise InvalidOptionError(f"{where}: methods[{i}]: datasets = [\"name\", ...] lists dataset names")
        only = tuple(only)
    if not any(k in spec for k in ("method", "formulation", "loop")):
        raise InvalidOptionError(f"{where}: methods[{i}] needs method = \"<name>\" (or formulation and loop)")
    base = label or spec.get("method") or "+".join(str(spec[k]) for k in ("formulation", "surrogate", "loop") if k in spec)
    grid = {k: v for k, v in spec.items() if isinstance(v, list)}
    if isinstance(spec.get("n_features"), list):
        raise InvalidOptionError(f"{where}: methods[{i}]: put an n_features grid in [protocol]; a [[methods]] entry "
                                 "takes one value (the method's own number of features, e.g. RTSVM's top r)")
    for k, v in grid.items():
        if not v:
            raise InvalidOptionError(f"{where}: methods[{i}]: {k} = [] is an empty grid")
    both = sorted(set(grid) & set(tune or ()))
    if both:
        raise InvalidOptionError(f"{where}: methods[{i}]: {both} both a grid (one row per value) and tuned (chosen "
                                 "per split); give one")
    fixed = {k: v for k, v in spec.items() if k not in grid}
    out = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        suffix = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items())
        out.append(MethodSpec(f"{base} {suffix}" if suffix else str(base), {**fixed, **point}, only, tune))
    return out


def _protocol(p, where: str) -> Protocol:
    p = dict(p or {"name": "paper000"})
    bad = sorted(set(p) - _PROTOCOL_KEYS)
    if bad:
        raise InvalidOptionError(f"{where}: [protocol] does not take {bad}; keys are {sorted(_PROTOCOL_KEYS)}")
    name = p.get("name")
    if name is not None and (not isinstance(name, str) or name not in PROTOCOLS):
        raise InvalidOptionError(f"{where}: unknown protocol {name!r}; named protocols are {sorted(PROTOCOLS)}, or "
                                 "spell it out (cv = 10, repeats = 1, ...)")
    base = dict(PROTOCOLS.get(name, {"cv": 10, "repeats": 1, "scale": "standard", "retrain": None}))
    if "holdout" in p:
        if "cv" in p:
            raise InvalidOptionError(f"{where}: [protocol] gives cv and holdout; give one")
        p["cv"] = _number(p.pop("holdout"), where, "holdout", "the test fraction, a number in (0, 1)")
    nf = p.get("n_features")
    nf = tuple(nf) if isinstance(nf, list) else (nf,)
    top_k = _positive_ints(p.get("top_k", []), where, "top_k")
    if top_k and nf != (None,):
        raise InvalidOptionError(f"{where}: [protocol] gives n_features and top_k; give one (top_k: one fit per split "
                                 "and the classifier on the top k of its ranking; n_features: one fit per r)")
    if base.pop("needs_n_features", False) and nf == (None,) and not top_k:
        raise InvalidOptionError(f"{where}: protocol {name} selects exactly r features: add n_features = [r1, r2, ...] "
                                 "(or top_k = [k1, k2, ...]) to [protocol]")
    for r in nf:
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise InvalidOptionError(f"{where}: n_features values must be positive integers, got {r!r}")
    retrain = p.get("retrain", base["retrain"])
    retrain = None if retrain == "none" else retrain
    if retrain not in (None, "ls", *RETRAINS):
        raise InvalidOptionError(f"{where}: retrain = {retrain!r}; use none or one of {', '.join(RETRAINS)} "
                                 "(classification), or ls (least squares on the selected features, a real target)")
    retrain_C = _number(p.get("retrain_C", 1.0), where, "retrain_C", "a positive number")
    if retrain in ("tuned-svm", "tuned-linear-svc") and retrain_C != 1.0:
        # the grid chooses the evaluated C, and the inner score takes the grid search's estimator as
        # it is (C = 1): a retrain_C here would be read by nothing
        raise InvalidOptionError(f"{where}: retrain_C = {retrain_C!r} with retrain = {retrain!r}: a tuned classifier "
                                 "takes C from retrain_grid by cross-validation and the inner score uses C = 1; drop "
                                 "retrain_C (or use retrain = \"svm\" / \"linear-svc\" with a fixed C)")
    baselines = p.get("baselines", False)
    if not isinstance(baselines, bool):
        raise InvalidOptionError(f"{where}: [protocol] baselines = {baselines!r}; it must be true or false")
    reference = p.get("reference", "svm")
    if not isinstance(reference, str):
        raise InvalidOptionError(f"{where}: [protocol] reference = {reference!r}; give a retrained classifier "
                                 f"({', '.join(RETRAINS)}) or a method name")
    draws = p.get("random_draws", 5)
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise InvalidOptionError(f"{where}: [protocol] random_draws = {draws!r}; it must be an integer >= 1")
    grid = p.get("retrain_grid", base.get("retrain_grid", TUNED_C_GRID))
    grid = tuple(_number(c, where, "retrain_grid", "a list of positive numbers") for c in grid)
    if not grid or min(grid) <= 0:
        raise InvalidOptionError(f"{where}: [protocol] retrain_grid must be a non-empty list of positive numbers")
    folds = {k: _fold_rule(p.get(k, base.get(k, 3)), where, k) for k in ("retrain_folds", "tune_folds")}
    return Protocol(name=name, cv=p.get("cv", base["cv"]), repeats=p.get("repeats", base["repeats"]),
                    scale=p.get("scale", base["scale"]), retrain=retrain, retrain_C=retrain_C, n_features=nf,
                    top_k=tuple(sorted(set(top_k))), baselines=baselines, reference=reference, random_draws=draws,
                    retrain_grid=grid, **folds)


def _positive_ints(v, where: str, key: str) -> tuple:
    if not isinstance(v, list) or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in v):
        raise InvalidOptionError(f"{where}: [protocol] {key} = {v!r}; it must be a list of positive integers")
    return tuple(v)


def _fold_rule(rule, where: str, key: str):
    """An int >= 2, or ``{folds, large_folds, large_from}`` (see :func:`folds_for`)."""
    if isinstance(rule, Mapping):
        if set(rule) != {"folds", "large_folds", "large_from"} or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in rule.values()) \
                or min(rule["folds"], rule["large_folds"]) < 2:
            raise InvalidOptionError(f"{where}: [protocol] {key} = {dict(rule)!r}; give an integer >= 2 or "
                                     "{folds = 3, large_folds = 8, large_from = 200}")
        return dict(rule)
    if isinstance(rule, bool) or not isinstance(rule, int) or rule < 2:
        raise InvalidOptionError(f"{where}: [protocol] {key} = {rule!r}; it must be an integer >= 2 (folds)")
    return rule


def _number(value, where: str, key: str, what: str) -> float:
    """A [protocol] value that must be a number (TOML int or float), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOptionError(f"{where}: [protocol] {key} = {value!r}; it must be {what}")
    return float(value)
