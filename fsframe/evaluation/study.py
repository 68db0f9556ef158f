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
"""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from typing import Any, Mapping

import attrs

from ..errors import DataFileError, InvalidOptionError

__all__ = ["BUNDLED_STUDIES", "Study", "DatasetSpec", "MethodSpec", "Protocol", "PROTOCOLS", "load_study", "study_from_dict", "study_to_toml"]

PROTOCOLS: dict[str, dict] = {
    "paper000": {"cv": 10, "repeats": 1, "scale": "standard", "retrain": None},
    "paper001": {"cv": 10, "repeats": 10, "scale": "standard", "retrain": None},
    "paper002": {"cv": 0.2, "repeats": 10, "scale": "standard", "retrain": "svm", "needs_n_features": True},
    "paper004": {"cv": 0.4, "repeats": 10, "scale": "standard", "retrain": "tuned-linear-svc",
                 "needs_n_features": True},
}
"""The source papers' protocols by name; fields given next to ``name`` in ``[protocol]`` override them."""

TUNED_C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
"""``C`` values the ``tuned-linear-svc`` retrained classifier chooses from by 3-fold CV (paper 004)."""

_PROTOCOL_KEYS = {"name", "cv", "holdout", "repeats", "scale", "retrain", "retrain_C", "n_features"}


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
class DatasetSpec:
    """A dataset of a study: a bundled name or a file (``source``) with loader options."""

    name: str
    source: str
    options: dict = attrs.field(factory=dict)

    def load(self):
        from ..io import load_dataset

        return load_dataset(self.source, **self.options)


@attrs.frozen
class MethodSpec:
    """One configuration of a study: its label and everything :func:`fsframe.fit` receives."""

    label: str
    spec: dict
    datasets: tuple | None = None  # only these datasets (None: all)


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

    def retrain_estimator(self):
        """The ``retrain=`` argument: a name, or the tuned linear SVM of paper 004."""
        if self.retrain == "tuned-linear-svc":
            from sklearn.model_selection import GridSearchCV
            from sklearn.svm import LinearSVC

            return GridSearchCV(LinearSVC(), {"C": list(TUNED_C_GRID)}, cv=3)
        return self.retrain

    def as_dict(self) -> dict:
        return {"name": self.name, "cv": self.cv, "repeats": self.repeats, "scale": self.scale,
                "retrain": self.retrain, "retrain_C": self.retrain_C, "n_features": list(self.n_features)}


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
                    out.append(MethodSpec(f"{m.label} r={r}", {**m.spec, "n_features": r}, m.datasets))
        labels = [c.label for c in out]
        dup = sorted({x for x in labels if labels.count(x) > 1})
        if dup:
            raise InvalidOptionError(f"experiment file: duplicate configuration labels {dup} on dataset {dataset!r}; "
                                     "give each [[methods]] entry its own label = \"...\"")
        if not out:
            raise InvalidOptionError(f"experiment file: no [[methods]] entry runs on dataset {dataset!r}")
        return out


BUNDLED_STUDIES = ("quickstart",)
"""Experiment files shipped with fsframe (``fsframe run quickstart``); bundled data only."""


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
    return "\n".join(lines) + "\n"


def load_study(path: str | os.PathLike) -> Study:
    """Read an experiment file (TOML) or a bundled study by name (:data:`BUNDLED_STUDIES`).
    Relative paths in a file are relative to the file; a bundled study's ``output`` is relative to
    the working directory."""
    p = Path(path)
    if not p.is_file() and str(path) in BUNDLED_STUDIES:
        from importlib import resources

        text = resources.files("fsframe.evaluation").joinpath("studies", f"{path}.toml").read_text(encoding="utf-8")
        return study_from_dict(_parse(text, str(path)), base=Path.cwd(), text=text, path=str(path))
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
    return study_from_dict(_parse(text, str(path)), base=p.resolve().parent, text=text, path=str(p))


def _parse(text: str, path: str) -> dict:
    try:
        return _toml().loads(text)
    except Exception as exc:  # tomllib.TOMLDecodeError
        raise InvalidOptionError(f"{path}: not valid TOML: {exc}") from None


def study_from_dict(data: Mapping, *, base: str | os.PathLike = ".", text: str = "", path: str | None = None) -> Study:
    """A :class:`Study` from the parsed TOML (a mapping with ``study``, ``protocol``, ``datasets``, ``methods``)."""
    where = path or "experiment"
    unknown = sorted(set(data) - {"study", "protocol", "datasets", "methods"})
    if unknown:
        raise InvalidOptionError(f"{where}: unknown sections {unknown}; use [study], [protocol], [[datasets]], [[methods]]")
    for key, kind, how in (("study", Mapping, "a table [study]"), ("protocol", Mapping, "a table [protocol]"),
                           ("datasets", list, "an array of tables [[datasets]]"),
                           ("methods", list, "an array of tables [[methods]]")):
        if key in data and not isinstance(data[key], kind):
            raise InvalidOptionError(f"{where}: {key} must be {how}, got {type(data[key]).__name__} {data[key]!r}")
    head = dict(data.get("study", {}))
    bad = sorted(set(head) - {"name", "output", "seeds", "seed"})
    if bad:
        raise InvalidOptionError(f"{where}: [study] does not take {bad} (name, output, seeds)")
    seeds = head.get("seeds", [head.get("seed", 0)])
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                                                          for s in seeds):
        raise InvalidOptionError(f"{where}: seeds must be a non-empty list of integers >= 0, got {seeds!r}")
    base = Path(base)
    for key in ("name", "output"):
        if head.get(key) is not None and not isinstance(head[key], str):
            raise InvalidOptionError(f"{where}: [study] {key} = {head[key]!r}; it must be a string")
    name = str(head.get("name") or (Path(path).stem if path else "study"))
    output = head.get("output")
    if output is not None:
        output = os.path.normpath(base / output) if not os.path.isabs(output) else str(output)
    datasets = tuple(_dataset(d, base, where, i) for i, d in enumerate(data.get("datasets") or []))
    if not datasets:
        raise InvalidOptionError(f"{where}: no [[datasets]]; add one, e.g. [[datasets]] name = \"breast_cancer\"")
    names = [d.name for d in datasets]
    if len(set(names)) < len(names):
        raise InvalidOptionError(f"{where}: duplicate dataset names {names}; give each a name = \"...\"")
    methods = tuple(m for i, entry in enumerate(data.get("methods") or []) for m in _methods(entry, where, i))
    if not methods:
        raise InvalidOptionError(f"{where}: no [[methods]]; add one, e.g. [[methods]] method = \"fsv\"")
    unknown_ds = sorted({x for m in methods for x in (m.datasets or ()) if x not in names})
    if unknown_ds:
        raise InvalidOptionError(f"{where}: methods name datasets {unknown_ds} that [[datasets]] does not define "
                                 f"(defined: {names})")
    study = Study(name=name, datasets=datasets, methods=methods, protocol=_protocol(data.get("protocol"), where),
                  seeds=tuple(seeds), output=output, text=text, path=path)
    study.configurations()  # duplicate labels, datasets without methods fail here
    return study


def _dataset(d, base: Path, where: str, i: int) -> DatasetSpec:
    if not isinstance(d, Mapping):
        raise InvalidOptionError(f"{where}: datasets[{i}] must be a table")
    d = dict(d)
    name, path = d.pop("name", None), d.pop("path", None)
    for key, v in (("name", name), ("path", path)):
        if v is not None and not isinstance(v, str):
            raise InvalidOptionError(f"{where}: datasets[{i}]: {key} = {v!r}; it must be a string")
    if path is None and name is None:
        raise InvalidOptionError(f"{where}: datasets[{i}] needs name = \"<bundled>\" or path = \"<file>\"")
    if path is None:
        return DatasetSpec(name=str(name), source=str(name), options=d)
    full = Path(path) if os.path.isabs(path) else Path(os.path.normpath(base / path))
    return DatasetSpec(name=str(name or Path(path).name.split(".")[0]), source=str(full), options=d)


def _methods(entry, where: str, i: int) -> list[MethodSpec]:
    if not isinstance(entry, Mapping):
        raise InvalidOptionError(f"{where}: methods[{i}] must be a table")
    spec = dict(entry)
    label = spec.pop("label", None)
    only = spec.pop("datasets", None)
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
    if "n_features" in spec:
        raise InvalidOptionError(f"{where}: methods[{i}]: put n_features in [protocol] (one value or a list)")
    for k, v in grid.items():
        if not v:
            raise InvalidOptionError(f"{where}: methods[{i}]: {k} = [] is an empty grid")
    fixed = {k: v for k, v in spec.items() if k not in grid}
    out = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        suffix = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in point.items())
        out.append(MethodSpec(f"{base} {suffix}" if suffix else str(base), {**fixed, **point}, only))
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
    if base.pop("needs_n_features", False) and nf == (None,):
        raise InvalidOptionError(f"{where}: protocol {name} selects exactly r features: add n_features = [r1, r2, ...] "
                                 "to [protocol]")
    for r in nf:
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise InvalidOptionError(f"{where}: n_features values must be positive integers, got {r!r}")
    retrain = p.get("retrain", base["retrain"])
    retrain = None if retrain == "none" else retrain
    if retrain not in (None, "svm", "linear-svc", "tuned-linear-svc"):
        raise InvalidOptionError(f"{where}: retrain = {retrain!r}; use svm, linear-svc or tuned-linear-svc")
    retrain_C = _number(p.get("retrain_C", 1.0), where, "retrain_C", "a positive number")
    return Protocol(name=name, cv=p.get("cv", base["cv"]), repeats=p.get("repeats", base["repeats"]),
                    scale=p.get("scale", base["scale"]), retrain=retrain, retrain_C=retrain_C, n_features=nf)


def _number(value, where: str, key: str, what: str) -> float:
    """A [protocol] value that must be a number (TOML int or float), as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidOptionError(f"{where}: [protocol] {key} = {value!r}; it must be {what}")
    return float(value)
