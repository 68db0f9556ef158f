"""Cross-validated evaluation of feature-selection methods.

:func:`cross_validate` runs one method over stratified folds (or repeated random splits) and
returns a :class:`CVResult`: one :class:`FoldRecord` per fit (accuracy, MCC, selected features,
iterations, seconds, solver statuses, or the error that stopped it), mean ± std summaries and the
stability of the selection across folds. :func:`compare` runs several methods on the *same* splits
and returns a :class:`CompareResult` (the paper-style table).

Protocols of the source papers (docs/evaluation.md):

* 000 — 10-fold CV; TSA (accuracy, eq. 59), MCC (eq. 60), PSF (% selected features), iterations:
  ``cross_validate(data, method, cv=10)``;
* 001 — 10 x 10-fold CV; number of selected features, accuracy, selection frequency / stability:
  ``cross_validate(data, method, cv=10, repeats=10)``;
* 002 — 10 random 80/20 splits; exactly ``r`` features; a standard L2 SVM retrained on them:
  ``cross_validate(data, method, cv=0.2, repeats=10, n_features=r, retrain="svm")``;
* 004 — 10 random 60/40 splits, z-scored features; a linear SVM on the top ``d`` features:
  ``cv=0.4, repeats=10, n_features=d, retrain=<any scikit-learn classifier>`` (e.g. a
  ``GridSearchCV`` over ``SVC(kernel="linear", C)``, LIBSVM's linear SVM as 004 §5.1 cites it, for
  the paper's inner tuning of ``C``).

Every preprocessing step (standardisation, the retrained classifier) is fitted on the training
part of each split only. Splits depend only on ``y``, the protocol and ``random_state``: runs are
reproducible, and methods compared with the same seed see the same splits. Inputs are never
modified.

Modules, by concern:

* one evaluation — :mod:`~fsframe.evaluation.splits` (the protocols' splits), :mod:`~.preprocess`
  (scaling, the retrained classifier), :mod:`~.config` (method configurations), :mod:`~.runner`
  (:func:`cross_validate`), :mod:`~.comparison` (:func:`compare`), :mod:`~.engine` (the one
  runner of the cells) and :mod:`~.executor` / :mod:`~.distributed` (where they run: this
  process, a joblib pool, a Dask cluster);
* its measures and records — :mod:`~.metrics`, :mod:`~.stability`, :mod:`~.records`
  (:class:`FoldRecord`, :class:`CVResult`), :mod:`~.report` (text), :mod:`~.serialize` (JSON,
  versions), :mod:`~.plots` (pictures);
* studies — :mod:`~.study` (the experiment file; the shipped ones in ``studies/``),
  :mod:`~.study_data` (its data sets and the data folder), :mod:`~.protocols` (what the papers'
  protocols compute beyond one fit), :mod:`~.evaluator` (the evaluated classifier of a protocol), :mod:`~.experiment`
  (:func:`~.experiment.run_study` into a results folder, resumably), :mod:`~.cells` (one file per
  finished cell), :mod:`~.manifest` (what ran, where), :mod:`~.archive` (cells to commit and
  restore), :mod:`~.pages` (the report page);
* the papers — :mod:`~.paper_numbers` (the published numbers, package data in ``papers/``, and
  their comparison with ours) and :mod:`~.paper` (a study's digest and the page beside its paper).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attribute, lazy_dir

if TYPE_CHECKING:  # what static tools see; at run time these load lazily (see __getattr__)
    from .comparison import CompareResult, compare
    from .config import accepted_parameters, component_dict, format_components
    from .metrics import METRIC_LABELS, METRICS, accuracy_score, mae_score, mcc_score, mse_score, r2_score
    from .preprocess import SCALINGS, scale_fit_transform
    from .records import CVResult, FoldRecord, Progress
    from .report import describe_protocol, facts_text
    from .runner import AUTO_PARALLEL_SECONDS, EvaluationInterrupted, cross_validate
    from .serialize import environment_versions, to_jsonable
    from .splits import MAX_SEED, Split, make_splits
    from .stability import StabilityEstimate, jaccard_index, kuncheva_index, nogueira_stability, selection_frequency

__all__ = [
    "cross_validate",
    "compare",
    "CVResult",
    "CompareResult",
    "FoldRecord",
    "Split",
    "Progress",
    "StabilityEstimate",
    "EvaluationInterrupted",
    "make_splits",
    "accuracy_score",
    "mcc_score",
    "r2_score",
    "mse_score",
    "mae_score",
    "selection_frequency",
    "nogueira_stability",
    "kuncheva_index",
    "jaccard_index",
    "accepted_parameters",
    "component_dict",
    "format_components",
    "facts_text",
    "describe_protocol",
    "scale_fit_transform",
    "to_jsonable",
    "environment_versions",
    "SCALINGS",
    "METRICS",
    "METRIC_LABELS",
    "MAX_SEED",
    "AUTO_PARALLEL_SECONDS",
]

#: public name -> its submodule, imported on first access: ``fsframe methods`` needs
#: :func:`accepted_parameters` without the fit driver (and Pyomo) that the runner imports
_LAZY: dict[str, str] = {
    "CompareResult": ".comparison",
    "compare": ".comparison",
    "accepted_parameters": ".config",
    "component_dict": ".config",
    "format_components": ".config",
    "METRIC_LABELS": ".metrics",
    "METRICS": ".metrics",
    "accuracy_score": ".metrics",
    "mcc_score": ".metrics",
    "r2_score": ".metrics",
    "mse_score": ".metrics",
    "mae_score": ".metrics",
    "SCALINGS": ".preprocess",
    "scale_fit_transform": ".preprocess",
    "CVResult": ".records",
    "FoldRecord": ".records",
    "Progress": ".records",
    "describe_protocol": ".report",
    "facts_text": ".report",
    "AUTO_PARALLEL_SECONDS": ".runner",
    "EvaluationInterrupted": ".runner",
    "cross_validate": ".runner",
    "environment_versions": ".serialize",
    "to_jsonable": ".serialize",
    "MAX_SEED": ".splits",
    "Split": ".splits",
    "make_splits": ".splits",
    "StabilityEstimate": ".stability",
    "jaccard_index": ".stability",
    "kuncheva_index": ".stability",
    "nogueira_stability": ".stability",
    "selection_frequency": ".stability",
}


def __getattr__(name: str):
    return lazy_attribute(__name__, _LAZY, name)


def __dir__() -> list[str]:
    return lazy_dir(__name__, __all__)
