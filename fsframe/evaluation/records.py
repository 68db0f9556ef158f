"""The records of an evaluation: one :class:`FoldRecord` per fit and the :class:`CVResult` that
summarises them."""

from __future__ import annotations

import re
from typing import Sequence

import attrs
import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidOptionError
from ..results import solver_label
from .config import format_components
from .metrics import METRICS, REGRESSION_METRICS
from .report import describe_protocol, facts_text, first_line, summary_table, target_text, wrap
from .serialize import to_jsonable
from .stability import jaccard_index, kuncheva_index, nogueira_stability, selection_frequency

__all__ = ["FoldRecord", "Progress", "CVResult"]


@attrs.frozen(eq=False)
class FoldRecord:
    """The outcome of one fit on one split.

    A failed fit has ``ok=False``, ``error_type``/``error`` (and ``solver_status`` for a
    :class:`~fsframe.errors.SolverFailedError`) and ``None`` metrics; it is counted, never dropped.

    Attributes
    ----------
    accuracy, mcc : float
        Of the evaluated classifier on the test part: the selector's own model, or the classifier
        retrained on the selected features (``retrain=``).
    selector_accuracy, selector_mcc : float
        Of the selector's own sparse model (equal to the above without ``retrain``).
    r2, mse, mae, selector_r2, selector_mse, selector_mae : float or None
        A regression method's (a real target): R², mean squared and mean absolute error of the
        evaluated model's predictions on the test part (the selector's own, or the regressor
        refitted on the selected features, ``retrain=``), and of the selector's own model; its
        ``accuracy`` and ``mcc`` are ``None`` (``r2`` too on a constant test target).
    n_selected, pct_selected : int, float
        Selected features (training samples for a kernel map) and their percentage.
    n_iter, converged, monotone, objective, stop_reason, statuses
        From the :class:`~fsframe.FitResult`.
    seconds : float
        The selector's fit (``FitResult.info["seconds"]``); ``total_seconds`` also counts scaling,
        retraining and prediction.
    selected : tuple of int
        Selected feature indices (original sample indices for a kernel map).
    facts : dict
        What the fit derived from the training part (``FitResult.facts``),
        e.g. MPM's ``delta`` used and ``delta_max``.
    backend, backend_version : str or None
        The backend that solved the fit's returned model and its version (``FitResult.backend``;
        ``None``: no solver backend, e.g. RFS's linear systems).
    solved_by : str or None
        Without a solver backend, what solved the returned model as its certificate names it
        (``"dense-hinge"``: the dense EM path; ``"newton"``: EM's Newton steps); else ``None``.
    warnings : tuple of (category, message)
        Warnings raised during this fold.
    curve : tuple of (k, accuracy)
        A study's ``top_k`` protocol: the evaluated classifier on the top ``k`` ranked features
        (a regression's: (k, R²) of least squares).
    random_curve : tuple of (k, accuracy)
        The all-features row of a study with baselines: the classifier on ``k`` random features
        (mean over the random draws), for each ``k`` the protocol fixes.
    random_accuracy, reference_accuracy : float or None
        A study with baselines whose ``k`` varies: the reference classifier on as many random
        features as this fit selected (mean over draws), and on the features it selected.
    random_r2, reference_r2 : float or None
        The same for a regression (a real target): the R² of least squares on as many random
        features as this fit selected (mean over draws), and on the features it selected.
    train, test, y_pred : arrays
        The split and the evaluated classifier's test predictions.
    """

    label: str
    repeat: int
    fold: int
    n_train: int
    n_test: int
    ok: bool
    accuracy: float | None = None
    mcc: float | None = None
    selector_accuracy: float | None = None
    selector_mcc: float | None = None
    r2: float | None = None
    mse: float | None = None
    mae: float | None = None
    selector_r2: float | None = None
    selector_mse: float | None = None
    selector_mae: float | None = None
    n_selected: int | None = None
    pct_selected: float | None = None
    n_iter: int | None = None
    converged: bool | None = None
    monotone: bool | None = None
    objective: float | None = None
    stop_reason: str | None = None
    statuses: tuple = ()
    seconds: float | None = None
    total_seconds: float = 0.0
    selected: tuple = ()
    facts: dict = attrs.field(factory=dict)
    backend: str | None = None
    backend_version: str | None = None
    solved_by: str | None = None
    error_type: str | None = None
    error: str | None = None
    solver_status: str | None = None
    traceback: str | None = attrs.field(default=None, repr=False)
    warnings: tuple = attrs.field(default=(), repr=False)
    curve: tuple = attrs.field(default=(), repr=False)
    random_curve: tuple = attrs.field(default=(), repr=False)
    random_accuracy: float | None = None
    reference_accuracy: float | None = None
    random_r2: float | None = None
    reference_r2: float | None = None
    train: NDArray | None = attrs.field(default=None, repr=False)
    test: NDArray | None = attrs.field(default=None, repr=False)
    y_pred: NDArray | None = attrs.field(default=None, repr=False)

    @property
    def status(self) -> str:
        return "ok" if self.ok else "failed"

    def as_dict(self, *, arrays: bool = False) -> dict:
        """JSON-serialisable fields (the index and prediction arrays only with ``arrays=True``)."""
        out = {}
        for f in attrs.fields(FoldRecord):
            v = getattr(self, f.name)
            if f.name in ("train", "test", "y_pred"):
                if not arrays:
                    continue
                v = None if v is None else v.tolist()
            elif f.name == "warnings":
                v = [f"{c.__name__}: {m}" for c, m in v]
            out[f.name] = to_jsonable(v)
        out["status"] = self.status
        return out


@attrs.frozen
class Progress:
    """Passed to the ``progress`` callback after each fit: ``done`` of ``total`` fits finished;
    ``record`` is the fold just finished; ``eta`` the estimated seconds left; ``slowest`` the
    ``(name, seconds running)`` of the longest-running unfinished fit; ``skipped`` the fits a
    resumed study found already finished; ``run_done`` of ``run_total`` the fits of this run
    (``None`` unless a study's run covers fewer than all it has left: ``run_study(datasets=...)``)."""

    done: int
    total: int
    record: FoldRecord
    eta: float | None = None
    slowest: tuple | None = None
    skipped: int = 0
    run_done: int | None = None
    run_total: int | None = None



def solver_of(folds: Sequence[FoldRecord], configured: str | None) -> str | None:
    """The solver of an evaluation's fits, as reported (``"clarabel 0.11.1"``): the distinct
    backend-and-version labels of the finished fits (``FoldRecord.backend``), and for fits without
    a backend the certificate's solver (``FoldRecord.solved_by``: ``"dense-hinge (fsframe's own, no
    solver backend)"``), joined by ``", "``; ``None`` when nothing named solved any of them (RFS); ``configured`` (the backend the
    configuration selected) when no fit finished."""
    done = [f for f in folds if f.ok]
    if not done:
        return configured
    labels = sorted({lab for f in done if (lab := solver_label(f.backend, f.backend_version)) is not None}
                    | {f"{f.solved_by} (fsframe's own, no solver backend)" for f in done
                       if f.backend is None and f.solved_by})
    return ", ".join(labels) or None


def _is_flag(value) -> bool:
    """Whether a fact is a yes/no flag (``bool``, NumPy's too) rather than a number."""
    return isinstance(value, (bool, np.bool_))


def _stats(values: Sequence[float]) -> dict:
    a = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if a.size == 0:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0}
    return {"mean": float(a.mean()), "std": float(a.std(ddof=1)) if a.size > 1 else None,
            "min": float(a.min()), "max": float(a.max()), "n": int(a.size)}



_NUM = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")


def _group_warnings(folds: Sequence[FoldRecord]) -> list[dict]:
    """Warnings of all folds, grouped by category and message shape (numbers masked)."""
    groups: dict[tuple, dict] = {}
    for r in folds:
        seen = set()
        for cat, msg in r.warnings:
            key = (cat, _NUM.sub("#", msg))
            if key in seen:
                continue
            seen.add(key)
            g = groups.setdefault(key, {"category": cat, "message": msg, "folds": 0})
            g["folds"] += 1
    return list(groups.values())


@attrs.frozen(eq=False)
class CVResult:
    """The outcome of :func:`cross_validate`: every fold and the summaries derived from them.

    Attributes
    ----------
    label : str
        The method name (or ``formulation+surrogate+loop``), or the label given to :func:`compare`.
    method : str or None
    components : dict
        The formulation, surrogate, loop and kernel map with every parameter value.
    params : dict
        The parameters as resolved (method defaults plus user values), and ``fit_options``.
    protocol : dict
        Splitting (kind, folds, repeats, test size, seed), scaling, retraining, ``n_features``.
    dataset : dict
        Name, shape, classes and class counts, feature names.
    folds : tuple of FoldRecord
        In split order (repeat, fold).
    seconds : float
        Wall time of the whole evaluation.
    versions : dict
        Python, fsframe, numpy, scipy, scikit-learn, pyomo, the solver packages, and the solver
        version reported by the backend.
    n_planned : int or None
        The fits the protocol planned; more than ``n_folds`` when the run was interrupted
        (:class:`EvaluationInterrupted`), and ``folds`` then holds the finished fits only.
    """

    label: str
    method: str | None
    components: dict
    params: dict
    fit_options: dict
    backend: str
    protocol: dict
    dataset: dict
    folds: tuple
    seconds: float
    versions: dict
    n_planned: int | None = None

    # -- folds ------------------------------------------------------------------------------
    @property
    def ok_folds(self) -> list[FoldRecord]:
        return [f for f in self.folds if f.ok]

    @property
    def failed_folds(self) -> list[FoldRecord]:
        return [f for f in self.folds if not f.ok]

    @property
    def n_folds(self) -> int:
        return len(self.folds)

    @property
    def n_failed(self) -> int:
        return len(self.failed_folds)

    @property
    def interrupted(self) -> bool:
        """True when Ctrl-C stopped the run before every planned fit finished."""
        return self.n_planned is not None and self.n_folds < self.n_planned

    def values(self, metric: str) -> NDArray:
        """The per-fold values of ``metric`` over the successful folds."""
        if metric not in attrs.fields_dict(FoldRecord):
            raise InvalidOptionError(f"unknown metric {metric!r}; metrics are {list(METRICS)}")
        return np.array([getattr(f, metric) for f in self.ok_folds], dtype=np.float64)

    # -- summaries ------------------------------------------------------------------------------
    @property
    def metrics(self) -> tuple[str, ...]:
        """:data:`METRICS` (classification) or :data:`REGRESSION_METRICS` (a real target:
        ``protocol["task"] == "regression"``), with the selector's own scores after a retrain."""
        retrained = self.protocol.get("retrain") is not None
        if self.protocol.get("task") == "regression":
            return REGRESSION_METRICS + (("selector_r2", "selector_mse", "selector_mae") if retrained else ())
        return METRICS + (("selector_accuracy", "selector_mcc") if retrained else ())

    def summary(self) -> dict:
        """``{metric: {mean, std, min, max, n}}`` over the successful folds (``std`` with
        ``ddof=1``). With repeated k-fold CV each entry also has ``repeat_std``: the standard
        deviation of the per-repeat means."""
        out = {}
        repeats = self.protocol.get("repeats", 1)
        for m in self.metrics:
            vals = [getattr(f, m) for f in self.ok_folds]
            s = _stats(vals)
            if self.protocol.get("kind") == "k-fold" and repeats > 1:
                per = [_stats([getattr(f, m) for f in self.ok_folds if f.repeat == r])["mean"] for r in range(repeats)]
                s["repeat_std"] = _stats(per)["std"]
            out[m] = s
        return out

    def facts(self) -> dict:
        """``{name: {mean, std, min, max, n}}`` of the numbers the fits derived from their training
        parts (``FoldRecord.facts``, e.g. MPM's ``delta`` and ``delta_max``), over the successful
        folds. Yes/no facts (e.g. ``ranking_only``) are no numbers: :meth:`flags` counts them."""
        names = list(dict.fromkeys(k for f in self.ok_folds for k in f.facts if not _is_flag(f.facts[k])))
        return {k: _stats([f.facts.get(k) for f in self.ok_folds]) for k in names}

    def flags(self) -> dict:
        """``{name: number of successful folds where it holds}`` of the yes/no facts of the folds
        (e.g. ``ranking_only``: the cell asked the method for its ranking alone)."""
        names = list(dict.fromkeys(k for f in self.ok_folds for k in f.facts if _is_flag(f.facts[k])))
        return {k: sum(bool(f.facts.get(k)) for f in self.ok_folds) for k in names}

    def resolved_parameters(self) -> dict:
        """Values used for component parameters left to the data (``None``, e.g. MPM's ``delta``):
        the value when every fold used the same, else ``"<mean> (mean over folds)"``."""
        out = {}
        for k, s in self.facts().items():
            if s["n"]:
                out[k] = s["mean"] if s["min"] == s["max"] else f"{s['mean']:.4g} (mean over folds)"
        return out

    # -- selection stability ----------------------------------------------------------------------
    @property
    def selection_matrix(self) -> NDArray | None:
        """Boolean ``(n_ok_folds, n_features)``: row ``i`` marks the features fold ``i`` selected
        (``None`` for a kernel map, whose "features" are training samples)."""
        if self.protocol.get("groups") == "samples":
            return None
        d = self.dataset["n_features"]
        Z = np.zeros((len(self.ok_folds), d), dtype=bool)
        for i, f in enumerate(self.ok_folds):
            Z[i, list(f.selected)] = True
        return Z

    @property
    def frequency(self) -> NDArray | None:
        """Fraction of the successful folds that selected each feature (001, Fig. 1)."""
        Z = self.selection_matrix
        return None if Z is None else selection_frequency(Z)

    def stability(self, alpha: float = 0.05) -> dict:
        """Nogueira et al.'s estimate with its ``1 - alpha`` confidence interval (the headline),
        Kuncheva's index (when every fold selected the same number of features) and the mean
        pairwise Jaccard index, over the successful folds."""
        Z = self.selection_matrix
        if Z is None:
            return {"nogueira": None, "note": "a kernel map selects training samples; stability across folds "
                    "is not defined", "n_sets": len(self.ok_folds)}
        est = nogueira_stability(Z, alpha=alpha)
        return {"nogueira": est.value, "nogueira_variance": est.variance, "nogueira_ci": [est.ci_low, est.ci_high],
                "alpha": alpha, "kuncheva": kuncheva_index(Z), "jaccard": jaccard_index(Z), "n_sets": est.n_sets,
                "note": est.note}

    @property
    def warnings(self) -> list[dict]:
        """Warnings raised in the folds, grouped: ``{category, message (first seen), folds}``."""
        return _group_warnings(self.folds)

    # -- export --------------------------------------------------------------------------------
    def to_dict(self, *, arrays: bool = False) -> dict:
        """Everything, JSON-serialisable: parameters, protocol, dataset, versions, summary,
        stability, per-feature frequencies and every fold."""
        freq = self.frequency
        names = self.dataset.get("feature_names")
        return to_jsonable({
            "label": self.label, "method": self.method, "components": self.components, "params": self.params,
            "fit_options": self.fit_options, "backend": self.backend, "protocol": self.protocol,
            "dataset": self.dataset, "versions": self.versions, "seconds": self.seconds,
            "n_folds": self.n_folds, "n_failed": self.n_failed, "n_planned": self.n_planned,
            "interrupted": self.interrupted, "summary": self.summary(),
            "stability": self.stability(), "facts": self.facts(), "flags": self.flags(),
            "frequency": None if freq is None else {str(names[j]) if names else str(j): float(freq[j])
                                                   for j in range(freq.size)},
            "warnings": [{"category": w["category"].__name__, "message": w["message"], "folds": w["folds"]}
                         for w in self.warnings],
            "folds": [f.as_dict(arrays=arrays) for f in self.folds],
        })

    FOLD_COLUMNS = ("label", "repeat", "fold", "status", "n_train", "n_test", "accuracy", "mcc", "selector_accuracy",
                    "selector_mcc", "n_selected", "pct_selected", "n_iter", "converged", "objective", "seconds",
                    "total_seconds", "selected", "error_type", "error", "solver_status")

    @property
    def fold_columns(self) -> tuple[str, ...]:
        """The CSV columns: :attr:`FOLD_COLUMNS`, a regression's scores in place of accuracy and MCC."""
        if self.protocol.get("task") != "regression":
            return self.FOLD_COLUMNS
        i = self.FOLD_COLUMNS.index("accuracy")
        return (self.FOLD_COLUMNS[:i] + ("r2", "mse", "mae", "selector_r2", "selector_mse", "selector_mae")
                + self.FOLD_COLUMNS[i + 4:])

    def fold_rows(self) -> list[dict]:
        """One flat row per fold (the CSV layout of :attr:`fold_columns`): ``selected`` joined with spaces."""
        rows = []
        for f in self.folds:
            d = f.as_dict()
            d["selected"] = " ".join(str(j) for j in f.selected)
            rows.append({c: d.get(c) for c in self.fold_columns})
        return rows

    # -- text ----------------------------------------------------------------------------------
    def describe_protocol(self) -> str:
        return describe_protocol(self.protocol)

    def report(self, *, top: int = 10) -> str:
        """A readable multi-line report (what ``fsframe select --cv`` prints)."""
        ds = self.dataset
        lines = [f"{self.label} on {ds['name']} ({ds['n_samples']} samples x {ds['n_features']} features, "
                 f"{target_text(ds)})"]
        lines += wrap(f"protocol: {self.describe_protocol()}", 110)
        solver = self.versions.get("solver", self.backend)
        lines += wrap(f"model: {format_components(self.components, resolved=self.resolved_parameters())}; "
                      f"{'backend ' + solver if solver else 'no solver backend'}", 110)
        facts = facts_text(self.facts(), self.components)
        if facts:
            lines += wrap(f"from the data, per training part: {facts}", 110)
        n_ok = len(self.ok_folds)
        flags = ", ".join(f"{k.replace('_', ' ')} in {n} of {n_ok} folds" for k, n in self.flags().items() if n)
        if flags:
            lines += wrap(f"cells: {flags}", 110)
        lines.append("")
        lines.extend(summary_table(self))
        lines.append("")
        st = self.stability()
        Z = self.selection_matrix
        if st.get("nogueira") is not None:
            lo, hi = st["nogueira_ci"]
            extra = f"; Kuncheva {st['kuncheva']:.3f}" if st.get("kuncheva") is not None else ""
            lines.append(f"  stability (Nogueira et al. 2018): {st['nogueira']:.3f}, "
                         f"{100 * (1 - st['alpha']):.0f}% CI [{lo:.3f}, {hi:.3f}] over {st['n_sets']} feature sets"
                         f"{extra}; mean Jaccard {st['jaccard']:.3f}")
        elif Z is not None:
            lines.append(f"  stability: {st.get('note') or 'undefined'}")
        else:
            lines.append(f"  stability: {st['note']}")
        if Z is not None and Z.shape[0]:
            names = ds["feature_names"]
            freq = selection_frequency(Z)
            always = np.flatnonzero(freq == 1.0)
            if always.size:
                shown = ", ".join(names[j] for j in always[:top])
                more = f", ... ({always.size - top} more)" if always.size > top else ""
                lines.extend(wrap(f"selected in every fold ({always.size}): {shown}{more}"))
            some = [j for j in np.argsort(-freq, kind="stable") if 0 < freq[j] < 1.0]
            if some:
                shown = ", ".join(f"{names[j]} {100 * freq[j]:.0f}%" for j in some[:top])
                more = f", ... ({len(some) - top} more)" if len(some) > top else ""
                lines.extend(wrap(f"selected in some folds ({len(some)}): {shown}{more}"))
            never = int(np.count_nonzero(freq == 0))
            if never:
                lines.append(f"  never selected: {never} of {freq.size} features")
        failed = self.failed_folds
        if self.interrupted:
            lines.append(f"  INTERRUPTED: {self.n_folds} of {self.n_planned} planned fits finished; the summaries "
                         "use those")
        lines.append(f"  {len(failed)} of {self.n_folds} fits failed; total {self.seconds:.1f} s")
        for f in failed[:5]:
            lines.append(f"    repeat {f.repeat} fold {f.fold}: {f.error_type}: {first_line(f.error)}")
        if len(failed) > 5:
            lines.append(f"    ... {len(failed) - 5} more (see the JSON output)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

