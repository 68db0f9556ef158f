"""Paper 001's study, Pima, repeat 7 fold 0 (seed 0): FS-MEMPM's bound search meets a probe at the
feasibility frontier (SOCP 44, ``delta_pos = 0.25``) that ECOS ends ``unknown`` (close to optimal,
fsframe's certificate failed) and that Clarabel only claims infeasible (a claim fsframe cannot
verify there). The probe is not proven feasible: the search goes on below it, and the cell answers,
with ``facts["n_undecided"] = 1``, instead of failing (docs/mempm.md, "Undecided probes")."""

from __future__ import annotations

import warnings
from pathlib import Path

import attrs
import pytest

import fsframe
from fsframe.evaluation.experiment import _plan
from fsframe.evaluation.protocols import clear_search_memo, study_cell
from fsframe.evaluation.study import load_study


def test_pima_repeat_7_fold_0_answers_with_its_undecided_probe_counted(shared_data):
    study = load_study(Path(fsframe.__file__).parent / "evaluation/studies/paper001.toml", data_dir=shared_data)
    study = attrs.evolve(study, datasets=tuple(d for d in study.datasets if d.name == "pima"))
    data, tasks, metas, _ = _plan(study)
    cells = {m["label"]: t for t, m in zip(tasks, metas)
             if (m["repeat"], m["fold"], m["seed"]) == (7, 0, 0) and m["label"] in ("FS-MEMPM c1", "FS-MEMPM c2")}
    for label, task in cells.items():
        clear_search_memo()
        X, y = data[task.data]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rec = study_cell(X, y, task.split, task.cfg, raise_errors=True)
        assert rec.ok and rec.facts["n_undecided"] == 1, label
        # the chosen point is a certified feasible one below the undecided probe's delta_pos = 0.25
        # or past it along delta_pos (criterion 1 steps on at delta_neg's frontier)
        assert rec.facts["bound"] > 0.28 and rec.n_selected >= 3, label
