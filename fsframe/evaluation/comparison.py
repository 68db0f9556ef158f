"""Several configurations on the same splits: :func:`compare` and :class:`CompareResult`."""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Mapping

import attrs
from numpy.typing import ArrayLike

from ..dataset import Dataset
from ..errors import InvalidOptionError
from ..plugins import get_registry
from .config import _accepts, accepted_parameters
from .records import CVResult, Progress, _stats
from .report import describe_protocol, fmt, target_text, wrap
from .runner import EvaluationInterrupted, _emit_warnings, _run
from .serialize import to_jsonable

__all__ = ["compare", "CompareResult"]


@attrs.frozen(eq=False)
class CompareResult:
    """Several configurations cross-validated on the same splits (see :func:`compare`)."""

    results: tuple
    protocol: dict
    dataset: dict
    seconds: float

    def __getitem__(self, label: str) -> CVResult:
        for r in self.results:
            if r.label == label:
                return r
        raise KeyError(f"no result labelled {label!r}; labels are {[r.label for r in self.results]}")

    @property
    def labels(self) -> list[str]:
        return [r.label for r in self.results]

    @property
    def interrupted(self) -> bool:
        """True when Ctrl-C stopped the run: some configurations miss some of their fits."""
        return any(r.interrupted for r in self.results)

    COLUMNS = ("accuracy", "mcc", "n_selected", "pct_selected", "n_iter", "seconds")

    def rows(self) -> list[dict]:
        """One flat row per configuration: mean and std of every metric, stability, failures."""
        rows = []
        for r in self.results:
            s = r.summary()
            st = r.stability()
            row = {"label": r.label, "method": r.method}
            for m in r.metrics:
                row[f"{m}_mean"] = s[m]["mean"]
                row[f"{m}_std"] = s[m]["std"]
            row.update(stability=st.get("nogueira"), stability_ci_low=(st.get("nogueira_ci") or [None, None])[0],
                       stability_ci_high=(st.get("nogueira_ci") or [None, None])[1], n_fits=r.n_folds,
                       n_failed=r.n_failed, params=" ".join(f"{k}={v}" for k, v in r.params.items()))
            rows.append(to_jsonable(row))
        return rows

    def table(self, *, markdown: bool = False) -> str:
        """The paper-style table: one row per configuration, mean ± std over the fits."""
        retrain = self.protocol.get("retrain") is not None
        regression = self.protocol.get("task") == "regression"
        scores = ("r2", "mse", "mae") if regression else ("accuracy", "mcc")
        head = ["method", *(["R²", "MSE", "MAE"] if regression else ["accuracy (%)", "MCC"]), "features",
                "features (%)", "iterations", "seconds", "stability"]
        if retrain:
            head.insert(len(scores) + 1, "selector R²" if regression else "selector acc. (%)")
        if any(r.n_failed for r in self.results):
            head.append("failed")
        if not self._same_fits() or (regression and self._baselines_differ()):
            head.append("fits")
        body = []
        for r in self.results:
            s = r.summary()

            def ms(m, r=r, s=s):
                if s[m]["mean"] is None:
                    return "-"
                std = s[m]["std"]
                return fmt(s[m]["mean"], m) + ("" if std is None else f" ± {fmt(std, m)}")

            st = r.stability().get("nogueira")
            row = [r.label, *(ms(m) for m in scores), ms("n_selected"), ms("pct_selected"), ms("n_iter"),
                   fmt(s["seconds"]["mean"], "seconds"), "-" if st is None else f"{st:.2f}"]
            if retrain:
                row.insert(len(scores) + 1, ms("selector_r2" if regression else "selector_accuracy"))
            if "failed" in head:
                row.append(f"{r.n_failed}/{r.n_folds}")
            if "fits" in head:
                row.append(str(len(r.ok_folds)))
            body.append(row)
            if regression:
                body += _random_rows(r, head, retrain)
        if markdown:
            lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "--:" for i in range(len(head))) + "|"]
            lines += ["| " + " | ".join(row) + " |" for row in body]
            return "\n".join(lines)
        w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
        def line(row):
            return "  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i]) for i, c in enumerate(row)).rstrip()

        return "\n".join([line(head), "  ".join("-" * x for x in w)] + [line(row) for row in body])

    def _baselines_differ(self) -> bool:
        """Whether a regression baseline row below a method (:func:`_random_rows`) averages fewer
        fits than the method's row (a record written before every fit got them, or a
        configuration of other groups than features): the table then says each row's count."""
        return any(len(r.ok_folds) != sum(f.random_r2 is not None for f in r.ok_folds)
                   for r in self.results if any(f.random_r2 is not None for f in r.ok_folds))

    def _same_fits(self) -> bool:
        """Whether every row averages the successful fits of the same splits (a failed or missing
        fit, e.g. an interrupted run, makes the rows differ)."""
        return len({tuple((f.repeat, f.fold) for f in r.ok_folds) for r in self.results}) <= 1

    def report(self, *, markdown: bool = False) -> str:
        ds = self.dataset
        title = f"{ds['name']} ({ds['n_samples']} samples x {ds['n_features']} features, {target_text(ds)})"
        prot = f"protocol: {describe_protocol(self.protocol)}"
        solvers = sorted({r.versions.get("solver", r.backend) or "none (no solver backend)" for r in self.results})
        undefined = [r.label for r in self.results if r.stability().get("nogueira") is None]
        over = (f"mean ± std over {len(self.results[0].ok_folds)} fits on the same splits" if self._same_fits() else
                "mean ± std over each row's successful fits (column 'fits'), not all on the same splits")
        if self._same_fits() and self.protocol.get("task") == "regression" and self._baselines_differ():
            over += " (a least-squares row below a method: over the fits of column 'fits')"
        scores = ("R², MSE, MAE of the test predictions" if self.protocol.get("task") == "regression" else
                  "MCC: paper 000 eq. 60" + (" (multi-class: Gorodkin R_K)" if len(ds["classes"]) > 2 else ""))
        foot = (f"{over}; {scores}; stability: Nogueira et al. 2018"
                f"{' (-: undefined, every fit selected all or no features)' if undefined else ''}; "
                f"solver {', '.join(solvers)}; total {self.seconds:.1f} s")
        if self.interrupted:
            done, planned = sum(r.n_folds for r in self.results), sum(r.n_planned or 0 for r in self.results)
            foot = f"INTERRUPTED: {done} of {planned} planned fits finished, the rows use those; " + foot
        if markdown:
            return f"**{title}**; {prot}\n\n{self.table(markdown=True)}\n\n{foot}"
        return "\n".join([title, *wrap(prot, 110, ""), "", self.table(), "", *wrap(foot, 110, "")])

    def to_dict(self, *, arrays: bool = False) -> dict:
        return to_jsonable({"protocol": self.protocol, "dataset": self.dataset, "seconds": self.seconds,
                            "interrupted": self.interrupted,
                          "rows": self.rows(), "results": [r.to_dict(arrays=arrays) for r in self.results]})

    def __str__(self) -> str:
        return self.report()


def _entries(methods) -> list[tuple[str, dict]]:
    reg = get_registry()
    if methods is None:
        return [(n, {"method": n}) for n in reg.names("method")]
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    out = []
    items = methods.items() if isinstance(methods, Mapping) else methods
    for item in items:
        if isinstance(item, str):
            out.append((item, {"method": item}))
            continue
        try:
            label, spec = item
        except (TypeError, ValueError):
            raise InvalidOptionError(f"methods entries are names, (label, params) pairs or a mapping "
                                     f"label -> params; got {item!r}") from None
        spec = dict(spec or {})
        if not any(k in spec for k in ("method", "formulation", "loop")):
            spec["method"] = label
        out.append((str(label), spec))
    if not out:
        raise InvalidOptionError("no methods to compare")
    return out


def with_common_parameters(entries: list[tuple[str, dict]], params: Mapping) -> list[tuple[str, dict]]:
    """``(label, spec)`` entries with ``params`` added to each spec that accepts them (a spec's own
    values win); a parameter no entry accepts is an error."""
    if not params:
        return list(entries)
    accepted = {label: accepted_parameters(spec.get("method"), formulation=spec.get("formulation"),
                                           surrogate=spec.get("surrogate"), loop=spec.get("loop"))
                for label, spec in entries}
    nobody = [k for k in params if not any(_accepts(acc, k) for acc in accepted.values())]
    if nobody:
        raise InvalidOptionError(f"parameter(s) {nobody} are accepted by none of {[e[0] for e in entries]}")
    return [(label, {**{k: v for k, v in params.items() if _accepts(accepted[label], k) and k not in spec}, **spec})
            for label, spec in entries]


def compare(
    data_or_X: Dataset | ArrayLike,
    y: ArrayLike | None = None,
    methods: Iterable | Mapping | str | None = None,
    *,
    cv: Any = 10,
    repeats: int = 1,
    scale: str = "standard",
    n_jobs: int = 1,
    random_state: int | None = 0,
    n_features: int | None = None,
    retrain: Any = None,
    retrain_C: float = 1.0,
    progress: Callable[[Progress], None] | None = None,
    on_error: str = "record",
    dask: Any = None,
    **params,
) -> CompareResult:
    """Cross-validate several configurations on the same splits (a paired comparison).

    ``methods`` is a list of method names (``None``: every registered method), a comma-separated
    string, or labelled configurations — ``[("fsv a=1", {"method": "fsv", "alpha": 1}), ...]`` or
    a mapping label -> parameters (a label that is a method name needs no ``"method"`` key).
    ``**params`` apply to every configuration that accepts them (``alpha`` reaches ``fsv`` but
    not ``l1-svm``); a parameter no configuration accepts is an error. Other arguments as in
    :func:`cross_validate`; all fits of all configurations share one pool of ``n_jobs`` workers (or the
    Dask cluster ``dask``: ``"local"`` or a scheduler address).
    """
    entries = with_common_parameters(_entries(methods), params)
    t0 = time.perf_counter()
    results, protocol, interrupted = _run(data_or_X, y, entries, cv=cv, repeats=repeats, scale=scale, n_jobs=n_jobs,
                             random_state=random_state, n_features=n_features, retrain=retrain,
                             retrain_C=retrain_C, progress=progress, on_error=on_error, dask=dask)
    _emit_warnings(results)
    out = CompareResult(results=tuple(results), protocol=protocol, dataset=results[0].dataset,
                        seconds=time.perf_counter() - t0)
    if interrupted:
        raise EvaluationInterrupted(out)
    return out


def _random_rows(r, head: list, retrain: bool) -> list[list[str]]:
    """A regression study's baseline rows (``baselines = true``), R² only (the other cells
    ``-``). Below a method whose support size varies: least squares on the k features it selected
    (without ``retrain``; with it, the method's row is that) and on k random features (the mean
    over the draws), k its own selection size in each split. Below the all-features row, when the
    protocol fixes k (``n_features``): least squares on k random features for each k."""
    rows = []

    def row(label, vals, ks):
        st, k = _stats(vals), _stats(ks)
        cells = {"method": label,
                 "R²": "-" if st["mean"] is None else fmt(st["mean"], "r2") + (
                     "" if st["std"] is None else f" ± {fmt(st['std'], 'r2')}"),
                 "features": fmt(k["mean"], "n_selected") + ("" if k["std"] is None else f" ± {fmt(k['std'], 'n_selected')}"),
                 "fits": str(len(vals))}
        rows.append([cells.get(h, "-") for h in head])

    fixed: dict[int, list] = {}
    for f in r.ok_folds:
        for k, v in f.random_curve:
            fixed.setdefault(int(k), []).append(v)
    for k in sorted(fixed):
        row(f"least squares on {k} random features", fixed[k], [k] * len(fixed[k]))
    ok = [f for f in r.ok_folds if f.random_r2 is not None]
    if ok:
        ks = [f.n_selected for f in ok]
        if not retrain:
            row(f"{r.label}: least squares on its k features", [f.reference_r2 for f in ok], ks)
        row(f"{r.label}: least squares on k random features", [f.random_r2 for f in ok], ks)
    return rows
