"""Running a study (:func:`run_study`) into a results folder, resumably, and rebuilding its
results from that folder alone (:func:`load_results`).

A results folder holds ``manifest.json`` (:mod:`~fsframe.evaluation.manifest`), ``study.toml``
(the experiment file as written) and ``cells/`` (:mod:`~fsframe.evaluation.cells`). The cells run
through the same runner as :func:`fsframe.evaluation.compare`
(:func:`fsframe.evaluation.engine.execute`): serially, in a joblib pool or on a Dask cluster.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable

import attrs
import numpy as np

from ..errors import DataFileError, DataWarning, InvalidOptionError
from .cells import CellStore, cell_key, record_from_json, record_to_json
from .comparison import CompareResult
from .config import _make_config
from .engine import Task, execute
from .executor import data_fingerprint
from .manifest import environment, manifest_commits, now, read_manifest, source_commit, write_manifest
from .protocols import BaselineConfig, plan_configs, study_cell
from .records import CVResult, Progress, solver_of
from .runner import _as_data, _check_common, _emit_warnings, _runtime_components
from .serialize import environment_versions, to_jsonable
from .splits import make_splits
from .study import Study, capped_folds

__all__ = ["StudyResult", "run_study", "load_results"]


@attrs.frozen(eq=False)
class StudyResult:
    """The tables of a study: one :class:`CompareResult` per (dataset, seed), rebuilt from the cells.

    ``n_cells`` planned; ``n_skipped`` found finished by a rerun; ``n_computed`` run now;
    ``interrupted`` when Ctrl-C stopped the run (the finished cells are on disk).
    """

    root: Path
    manifest: dict
    tables: tuple
    n_cells: int
    n_skipped: int = 0
    n_computed: int = 0
    interrupted: bool = False

    @property
    def n_finished(self) -> int:
        return sum(r.n_folds for t in self.tables for r in t.results)

    @property
    def n_failed(self) -> int:
        return sum(r.n_failed for t in self.tables for r in t.results)

    def report(self, *, markdown: bool = True) -> str:
        parts = [t.report(markdown=markdown) for t in self.tables]
        return "\n\n".join(parts)


def _config_dict(cfg) -> dict:
    if isinstance(cfg, BaselineConfig):
        return cfg.config_dict()
    out = {"method": cfg.method, "formulation": cfg.formulation, "surrogate": cfg.surrogate, "loop": cfg.loop,
           "params": cfg.params, "resolved": cfg.resolved_params, "components": cfg.components,
           "fit_options": cfg.fit_options, "n_features": cfg.n_features, "backend": cfg.backend}
    if cfg.extras is not None:  # only then: the keys of studies without protocol extras are unchanged
        out["extras"] = cfg.extras.key()
    if cfg.cell_versions:  # only then: components at cell_version 0 keep their keys
        out["cell_versions"] = cfg.cell_versions
    return out


def _retrain_desc(retrain, C) -> str | None:
    if retrain is None:
        return None
    return (f"SVC(kernel='linear', C={C:g})" if retrain == "svm" else f"LinearSVC(C={C:g})"
            if retrain == "linear-svc" else "LinearRegression()" if retrain == "ls" else repr(retrain))


def _plan(study: Study):
    """Load the data, validate every configuration, draw the splits: ``(data, tasks, cell meta, groups)``."""
    prot = study.protocol
    C = _check_common(prot.scale, 1, "record", prot.retrain_estimator(), prot.retrain_C)
    data, tasks, metas, groups = [], [], [], []
    for dspec in study.datasets:
        loaded = dspec.load()
        regression = getattr(loaded, "is_regression", False)
        task = "regression" if regression else "classification"
        if regression and prot.retrain not in (None, "ls"):
            raise InvalidOptionError(f"{study.name}: data set {dspec.name!r} holds a real target; retrain = "
                                     f"{prot.retrain!r} is a classifier: use retrain = \"ls\" or none")
        if not regression and prot.retrain == "ls":
            raise InvalidOptionError(f"{study.name}: retrain = \"ls\" refits least squares, and data set "
                                     f"{dspec.name!r} holds class labels: use a classifier or none")
        X, y, dsinfo = _as_data(loaded, None, prot.scale, regression=regression)
        dsinfo = dict(dsinfo, name=dspec.name, source=dspec.source)
        if dspec.note:
            dsinfo["note"] = dspec.note
        di = len(data)
        data.append((X, y))
        dhash = data_fingerprint(X, y)
        cv = prot.cv if dspec.cv is None else dspec.cv
        drawn = {seed: make_splits(y, cv, repeats=prot.repeats, random_state=seed, X=X, regression=regression)
                 for seed in study.seeds}
        n_classes = 0 if regression else len(np.unique(y))
        n_train = int(drawn[study.seeds[0]][0][0].train.size)
        # a stratified inner CV of a training part has at most as many folds as its smallest class
        # has members: the cap of the split whose training part is the least (the same for every cell)
        cap, caps = None, {}
        tuned = {"retrain_folds": "tuned-" in f"{prot.retrain} {prot.reference}",
                 "tune_folds": any(m.tune for m in study.configurations(dspec.name))}
        if not regression and any(tuned.values()):
            worst = min((s.train for seed in study.seeds for s in drawn[seed][0]),
                        key=lambda tr: int(np.unique(y[tr], return_counts=True)[1].min()))
            for rule in (r for r in tuned if tuned[r]):
                k, note = capped_folds(getattr(prot, rule), y[worst], f"{study.name}, data set {dspec.name!r}, "
                                                                     f"inner cross-validation ({rule})")
                if note:
                    warnings.warn(note, DataWarning, stacklevel=3)
                    caps[rule] = k
            cap = int(np.unique(y[worst], return_counts=True)[1].min())
        retrain = prot.retrain_estimator(n_train, cap)
        # an n_features grid shared by data sets of different widths: each runs the r it has
        specs = [m for m in study.configurations(dspec.name) if m.spec.get("n_features", 0) <= X.shape[1]]
        if not specs:
            raise InvalidOptionError(f"{study.name}: every n_features value exceeds the {X.shape[1]} features of "
                                     f"data set {dspec.name!r}")
        configs = [_make_config(m.label, m.spec, n_features=None, scale=prot.scale, retrain=retrain, retrain_C=C,
                                n_columns=X.shape[1], n_samples=X.shape[0], n_classes=n_classes, task=task,
                                dataset=dspec.name)
                   for m in specs]
        evaluation = {"scale": prot.scale, "retrain": prot.retrain, "retrain_C": C}
        if prot.retrain in ("tuned-svm", "tuned-linear-svc"):
            evaluation["retrain_tuning"] = {"grid": list(prot.retrain_grid), "folds": retrain.cv}
        for seed in study.seeds:
            splits, protocol = drawn[seed]
            protocol = dict(protocol, scale=prot.scale, retrain=_retrain_desc(retrain, C), name=prot.name)
            if regression:
                protocol["task"] = "regression"
            group = {"dataset": dsinfo, "seed": seed, "protocol": protocol, "n_splits": len(splits),
                     "data_sha256": dhash, "configs": [], "cells": []}
            if caps:  # the record of the cap (not in the cell key: the folds themselves are)
                group["inner_folds_capped"] = caps
            cell_configs = plan_configs(prot, configs, [m.tune for m in specs], shape=X.shape,
                                        n_classes=n_classes, n_train=n_train, retrain=retrain, C=C, seed=seed,
                                        max_folds=cap,
                                        where=f"{study.name}, data set {dspec.name}", regression=regression)
            for cfg in cell_configs:
                cd = _config_dict(cfg)
                group["configs"].append({"label": cfg.label, "groups": cfg.groups, **cd})
                keys = []
                for s in splits:
                    key = cell_key(dhash, cd, evaluation, {**protocol, "repeat": s.repeat, "fold": s.fold}, s.train)
                    keys.append(key)
                    tasks.append(Task(di, s, cfg, f"{dspec.name} / {cfg.label} / seed {seed} split "
                                                  f"{s.repeat}.{s.fold}"))
                    metas.append({"key": key, "dataset": dspec.name, "seed": seed, "label": cfg.label,
                                  "repeat": s.repeat, "fold": s.fold, "backend": cfg.backend})
                group["cells"].append(keys)
            groups.append(group)
    return data, tasks, metas, groups


def run_study(study: Study, out: str | None = None, *, n_jobs: int = 1, dask: Any = None,
              progress: Callable[[Progress], None] | None = None, retry_failed: bool = True,
              datasets: tuple | list | None = None, compute: bool = True, commits: tuple | list = ()) -> StudyResult:
    """Run every cell of ``study`` not already finished in the results folder ``out`` (default:
    the study's ``output``), writing each cell as it ends, and return the rebuilt tables.

    ``datasets`` (names of the study's data sets): run only their cells, in that order of data
    sets and split by split (every row of a data set's first split, then its second, ...), so that
    a run stopped early leaves whole splits. The manifest still plans every cell of the study: the
    tables and a report say how many of the planned cells have finished, and a later run without
    ``datasets`` (or with others) computes the rest. A cell's key does not depend on it.

    ``n_jobs`` joblib processes (1: serial, -1: every core) or the Dask cluster ``dask``
    (``"local"`` or a scheduler address). Failed cells are recomputed on a rerun unless
    ``retry_failed=False``. A KeyboardInterrupt stops the run; the cells finished before it are on
    disk and the result has ``interrupted=True``. ``compute=False`` runs no cell: the manifest and
    the tables of the cells already in ``out`` (a merge of other runs' cells, docs/papers.md).
    ``commits``: source commits that computed cells in ``out`` whose files do not name theirs (a
    merge's sources, :func:`~fsframe.evaluation.archive.merge_results`), named by the manifest and
    the digest with the rest.
    """
    root = Path(out or study.output or "")
    if not str(out or study.output or ""):
        raise InvalidOptionError("no results folder: give out= (fsframe run --out DIR) or [study] output = \"...\"")
    if n_jobs == 0 or isinstance(n_jobs, bool) or not isinstance(n_jobs, int):
        raise InvalidOptionError(f"n_jobs must be a non-zero integer (-1: all cores), got {n_jobs!r}")
    commits = commits if isinstance(commits, str) else tuple(commits)  # a generator is read once
    if isinstance(commits, str) or not all(isinstance(c, str) for c in commits):
        raise InvalidOptionError(f"commits must be a list of commit names, got {commits!r}")
    check_results_folder(study, root)
    t0 = time.perf_counter()
    order = _dataset_order(study, datasets)
    data, tasks, metas, groups = _plan(study)
    store = CellStore(root)
    store.clean_temporary()
    try:
        (root / "study.toml").write_text(study.text, encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"cannot write {root / 'study.toml'}: {exc.strerror or exc}") from exc
    done_before = store.finished([m["key"] for m in metas], retry_failed=retry_failed)
    todo = [i for i, m in enumerate(metas) if m["key"] not in done_before]
    skipped = len(metas) - len(todo)
    if not compute:
        todo = []
    if order is not None:
        todo = sorted((i for i in todo if metas[i]["dataset"] in order),
                      key=lambda i: (order[metas[i]["dataset"]], metas[i]["seed"], metas[i]["repeat"],
                                     metas[i]["fold"], i))
    engine = "serial" if n_jobs == 1 and dask is None else (f"dask {dask if isinstance(dask, str) else 'client'}"
                                                             if dask is not None else f"joblib n_jobs={n_jobs}")
    commit = source_commit()
    # the commits that computed the cells this run keeps (restored from an archive or merged: not
    # necessarily ones earlier runs into ``root`` recorded), then this run's
    held = sorted({d["commit"] for d in done_before.values() if isinstance(d.get("commit"), str)})
    commits = manifest_commits(root) + held + list(commits) + [c for c in (commit,) if c]
    manifest = {"study": study.name, "study_file": study.path, "study_text": study.text, "paper": study.paper,
                "title": study.title, "reduced": study.reduced, "commits": list(dict.fromkeys(commits)),
                "protocol": study.protocol.as_dict(), "seeds": list(study.seeds), "environment": environment(),
                "engine": engine, "started": now(), "finished": None, "interrupted": None,
                "n_cells": len(metas), "n_skipped": skipped, "groups": groups,
                "run_datasets": None if order is None else list(order),
                "cells": {m["key"]: {k: m[k] for k in ("dataset", "seed", "label", "repeat", "fold", "backend")}
                          for m in metas}}
    write_manifest(root, manifest)
    cfgs = [tasks[i].cfg for i in todo]
    if (n_jobs != 1 or dask is not None) and _runtime_components(cfgs):
        import warnings

        warnings.warn("plugins registered at run time are not available to worker processes; running serially",
                      RuntimeWarning, stacklevel=2)
        n_jobs, dask = 1, None
    computed = 0

    def on_done(j, rec, clock):
        nonlocal computed
        i = todo[j]
        # a finished cell names the backend that solved it (DSO-FS: clarabel; RFS: none) and its version
        meta = dict(metas[i], backend=rec.backend if rec.ok else metas[i]["backend"],
                    backend_version=rec.backend_version, ok=rec.ok, commit=commit)
        store.write(meta["key"], record_to_json(rec, meta))
        computed += 1
        if progress is not None:
            part = {} if skipped + len(todo) == len(metas) else {"run_done": computed, "run_total": len(todo)}
            progress(Progress(skipped + computed, len(metas), rec, eta=clock.eta(), slowest=clock.slowest(),
                              skipped=skipped, **part))

    interrupted = execute(study_cell, data, [tasks[i] for i in todo], n_jobs=n_jobs, dask=dask, on_done=on_done)
    manifest.update(finished=now(), interrupted=interrupted, wall_seconds=time.perf_counter() - t0,
                    n_computed=computed)
    res = _rebuild(root, manifest, store)
    for key, d in _cell_files(store, manifest).items():
        manifest["cells"][key].update(backend=d.get("backend"), backend_version=d.get("backend_version"),
                                      ok=d["record"].get("ok"))
    write_manifest(root, manifest)
    _emit_warnings([r for t in res.tables for r in t.results])
    return attrs.evolve(res, n_skipped=skipped, n_computed=computed, interrupted=interrupted, manifest=manifest)


def check_results_folder(study: Study, root: str | os.PathLike) -> None:
    """An :class:`~fsframe.errors.InvalidOptionError` if the results folder ``root`` holds a run of
    the other of full and ``[reduced]`` (its manifest says so): a run into it would rewrite that
    run's manifest and digest as its own. A changed or renamed study file is not refused (its
    changed cells are recomputed, the rest kept), nor a folder without a readable manifest."""
    try:
        held = read_manifest(root)
    except DataFileError:
        return
    if bool(held.get("reduced")) != study.reduced:
        held_run = f"{held.get('study')!r} ({'reduced' if held.get('reduced') else 'full'})"
        run = f"{study.name!r} ({'reduced' if study.reduced else 'full'})"
        raise InvalidOptionError(f"the results folder {root} holds a run of study {held_run}, not of {run}: give "
                                 "another results folder (--out)")


def _dataset_order(study: Study, datasets) -> dict | None:
    """``{name: position}`` of the data sets a run is restricted to (``None``: every one); a name
    the study does not define is an :class:`~fsframe.errors.InvalidOptionError`."""
    if datasets is None:
        return None
    if not isinstance(datasets, (list, tuple)) or not datasets or not all(isinstance(d, str) for d in datasets):
        raise InvalidOptionError(f"datasets must be a non-empty list of data set names, got {datasets!r}")
    names = [d.name for d in study.datasets]
    unknown = [d for d in datasets if d not in names]
    if unknown:
        raise InvalidOptionError(f"{study.name}: datasets {unknown} are not data sets of this study; it has {names}")
    return {d: i for i, d in enumerate(dict.fromkeys(datasets))}


def _cell_files(store: CellStore, manifest: dict) -> dict[str, dict]:
    return store.finished(list(manifest["cells"]), retry_failed=False)


def _rebuild(root: Path, manifest: dict, store: CellStore) -> StudyResult:
    cells = _cell_files(store, manifest)
    env = manifest.get("environment", {}).get("versions", {})
    tables = []
    for g in manifest["groups"]:
        results = []
        for cfg, keys in zip(g["configs"], g["cells"]):
            folds = [record_from_json(cells[k]) for k in keys if k in cells]
            versions = environment_versions({**env, "solver": solver_of(folds, cfg["backend"])})
            prot = dict(g["protocol"], n_features=cfg["n_features"], groups=cfg["groups"])
            results.append(CVResult(label=cfg["label"], method=cfg["method"], components=cfg["components"],
                                    params=to_jsonable(cfg["resolved"]), fit_options=to_jsonable(cfg["fit_options"]),
                                    backend=cfg["backend"], protocol=prot, dataset=g["dataset"], folds=tuple(folds),
                                    seconds=float(sum(f.total_seconds for f in folds)), versions=versions,
                                    n_planned=len(keys)))
        protocol = dict(g["protocol"], n_features=None)
        tables.append(CompareResult(results=tuple(results), protocol=protocol, dataset=g["dataset"],
                                    seconds=float(manifest.get("wall_seconds") or sum(r.seconds for r in results))))
    return StudyResult(root=root, manifest=manifest, tables=tuple(tables), n_cells=len(manifest["cells"]))


def load_results(root: str) -> StudyResult:
    """The tables of a results folder, rebuilt from ``manifest.json`` and ``cells/`` alone."""
    root_p = Path(root)
    manifest = read_manifest(root_p)
    return _rebuild(root_p, manifest, CellStore(root_p))
