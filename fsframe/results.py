"""The :class:`FitResult` every fit returns."""

from __future__ import annotations

import math
import numbers
from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .dataset import check_no_silent_cast, is_sparse, sparse_features
from .enums import Status
from .errors import DataError, PluginError, SparseInputError
from .loops.monitoring import monitored_series

__all__ = ["FitResult", "result_coef", "solver_label", "backend_text"]


def _native_multiclass(formulation, n_classes: int) -> bool:
    """Whether a formulation's model of ``n_classes`` classes is one native multi-class model
    (``Formulation.multiclass == "native"`` and more than two classes)."""
    return n_classes > 2 and getattr(formulation, "multiclass", "ovr") == "native"


def result_coef(coef, formulation, n_classes: int, n_groups: int) -> NDArray:
    """:attr:`FitResult.coef` from the coefficients of one fitted model, in its formulation's
    own layout: the one place where the layout of ``FitResult.coef`` is decided.

    A native multi-class formulation (``multiclass = "native"``, more than two classes) states its
    coefficients as ``(n_groups, n_classes)``, one row group per feature (its ``coef_shape``, the
    ``W`` of paper 004); ``FitResult.coef`` is class-major, ``(n_classes, n_groups)``, as for
    one-vs-rest. Every other model's coefficients are kept as they are (binary: ``(n_groups,)``,
    or blocks before the features such as the twin SVM's ``(2, n_groups)``).

    Raises
    ------
    PluginError
        a native multi-class formulation whose coefficients are not ``(n_groups, n_classes)``
        (its layout cannot be read without guessing).
    """
    coef = np.asarray(coef)
    if not _native_multiclass(formulation, n_classes):
        return coef
    if coef.shape != (n_groups, n_classes):
        raise PluginError(
            f"formulation {getattr(formulation, 'name', formulation)!r} (multiclass='native') returned coefficients "
            f"of shape {coef.shape} for {n_classes} classes and {n_groups} feature groups; a native multi-class "
            f"model's coefficients are (n_groups, n_classes) = ({n_groups}, {n_classes}), one row group per feature")
    return np.ascontiguousarray(coef.T)


@attrs.frozen(eq=False)
class FitResult:
    """The outcome of :func:`fsframe.fit`.

    Attributes
    ----------
    coef : array, shape (n_features,) binary, (n_classes, n_features) multi-class
        Coefficients on the (possibly kernel-mapped) features; zero outside ``support``. One
        layout for every method (:func:`result_coef`): the **last axis indexes the features**
        (the groups: training samples for a kernel map) and, with more than two classes, the
        **first axis the classes** in ``classes`` order — one-vs-rest and native multi-class
        formulations alike (scikit-learn's ``coef_`` layout). A formulation with several
        coefficient blocks per model keeps them in between: the twin SVM's two planes are
        ``(2, n_features)``, one-vs-rest ``(n_classes, 2, n_features)``.
        :meth:`formulation_coef` gives them back in the formulation's own layout.
    intercept : float, or array of shape (n_classes,)
    support : array of bool, shape (n_groups,)
        Selected features (training samples for a kernel map).
    objective : float or None
        The objective at the returned iterate: ``loss + sum phi(||w_(j)||)`` for surrogate loops
        (EM included; its descent check monitors ``loss + 2 sum phi`` separately), the subproblem
        optimum for ``single``. For one-vs-rest: the sum over classes. With ``n_features``, the
        objective of the iterate the ``r`` features were taken from, before the weaker groups were
        zeroed (``info["n_features_iterate"]``; ``info["n_features_dropped"]`` counts the groups
        zeroed; for one-vs-rest, per class, including the groups the cut of the union to ``r``
        removed): the truncated model was never solved, so it has no optimum to report.
    n_iter : int
        Convex subproblems solved (the largest over classes for one-vs-rest).
    converged : bool
    history : tuple of IterRecord
        One record per subproblem (``objective``, ``n_nonzero``, ``status``, ``seconds``...);
        for one-vs-rest, the records of every class in order (see ``per_class``).
    statuses : tuple of Status
    monotone : bool
        False if the monitored objective rose beyond tolerance (see the loop's warning).
    classes : tuple
        Sorted labels; the binary decision function is positive for ``classes[1]``.
    method, formulation, surrogate, loop
        What ran, with every parameter value (the exact inputs).
    backend : str or None
        The backend that solved the subproblem of the returned model (``info["backend_version"]``
        is its version): the fit's backend, or the one a loop solves its own steps on (DSO-FS's
        ``E`` steps on Clarabel); ``None`` when no backend solved it (RFS's linear systems). One-vs-rest:
        the classes' backends joined by ``+`` when they differ.
    params : dict
        The parameters as resolved (method defaults plus user values).
    info : dict
        Timings (``build_seconds``, ``compile_seconds``, ``solve_seconds``, ``seconds``),
        formulation facts (e.g. MPM's ``kappa``), the stop reason and, for a model a subproblem
        solved, ``penalty_weights``: the slot weights of that subproblem
        (:meth:`fsframe.problem.Subproblem.penalty_weights`), from which a surrogate-free loop's
        objective is recomputed (:func:`fsframe.testing.check_fit_result`).
    per_class : tuple of FitResult
        One-vs-rest: the binary results, in class order.
    certificate : dict
        For the subproblem that gave the returned model: its status and backend, fsframe's KKT
        certificate on the full problem (``gap``, ``primal_residual``, ``dual_residual``), the
        working set (``working_set`` groups of ``n_groups``, ``rounds``, ``max_violation``: the
        largest unexcused reduced cost over the excluded features, relative) and, with
        ``fit(..., verify=...)``, ``verify`` (the second backend's status, objective and
        ``objective_gap``). ``status`` is ``"cut"`` (``certified_status`` the point's own) when the
        returned coefficients are that point cut to a support (``certifies_returned`` False,
        ``cut_distance`` the change). A ``zero_tol`` cut's re-solve is checked on the problem it
        was cut from too, and ``certified_on`` says which problem the measures are of
        (``cut_problem``, ``unfixed_problem``: docs/working-sets.md). One-vs-rest: ``{"per_class": (...)}``. See
        :func:`fsframe.fit_certificate.certificate_of`.
    """

    coef: NDArray
    intercept: Any
    support: NDArray
    objective: float | None
    n_iter: int
    converged: bool
    history: tuple
    statuses: tuple
    monotone: bool
    classes: tuple
    method: str | None
    formulation: Any
    surrogate: Any
    loop: Any
    backend: str | None
    params: dict
    info: dict = attrs.field(factory=dict)
    per_class: tuple = ()
    transform: Any = attrs.field(default=None, repr=False)
    feature_names: tuple | None = attrs.field(default=None, repr=False)
    certificate: dict = attrs.field(factory=dict, repr=False)

    def formulation_coef(self) -> NDArray:
        """:attr:`coef` in the formulation's own layout, what ``formulation.decision_function``
        takes: ``coef.T`` (``(n_features, n_classes)``) for a native multi-class model, ``coef``
        otherwise (see :func:`result_coef`)."""
        if not self.per_class and _native_multiclass(self.formulation, len(self.classes)):
            return np.asarray(self.coef).T
        return self.coef

    # -- selection ----------------------------------------------------------------------------
    @property
    def selected(self) -> NDArray:
        """Indices of the selected features."""
        return np.flatnonzero(self.support)

    @property
    def monotone_checked(self) -> bool:
        """Whether the loop checked the descent of an objective over this fit
        (:func:`fsframe.loops.monitoring.monitored_series`): when False, :attr:`monotone` is True only
        because nothing was monitored (``em-l0`` with ``weights="paper"`` has no potential)."""
        return self.loop is not None and monitored_series(self.loop, self.surrogate, self.history) is not None

    @property
    def monotone_text(self) -> str:
        """``yes`` or ``NO`` (:attr:`monotone`) for a fit whose descent was checked, else
        ``not checked``: what :meth:`summary` and ``fsframe select`` print."""
        if not self.monotone_checked:
            return "not checked (no monitored objective)"
        return "yes" if self.monotone else "NO"

    @property
    def n_selected(self) -> int:
        return int(np.count_nonzero(self.support))

    @property
    def selected_names(self) -> list:
        if self.feature_names is None:
            return self.selected.tolist()
        return [self.feature_names[j] for j in self.selected]

    # -- prediction ---------------------------------------------------------------------------
    def _features(self, X: ArrayLike) -> NDArray:
        X = check_no_silent_cast(X, "X", name="prediction data")  # masks and dates are no numbers
        if is_sparse(X):  # kept sparse: every formulation's decision function is X @ coef at heart
            if self.transform is not None:
                raise SparseInputError("X is a scipy.sparse matrix and this model predicts through a kernel map, "
                                       "which needs X dense: pass X.toarray()")
            X = sparse_features(X, "prediction data")
        try:
            X = X if is_sparse(X) else np.asarray(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"X is not numeric ({exc})") from exc
        if X.ndim != 2:
            raise DataError(f"X must be 2-D, got shape {X.shape}")
        bad = np.zeros(0, dtype=bool) if is_sparse(X) else ~np.isfinite(X)
        if bad.any():
            i, j = map(int, np.argwhere(bad)[0])
            raise DataError(f"X contains {int(bad.sum())} non-finite value(s) (first at sample {i}, feature {j}); "
                            "impute or drop them before predicting")
        if self.transform is not None:
            return self.transform.transform(X)
        n = self.support.shape[0]  # one group per feature: the last axis of coef
        if X.shape[1] != n:
            raise DataError(f"X has {X.shape[1]} features, the model was fitted on {n}")
        return X

    def decision_function(self, X: ArrayLike) -> NDArray:
        """``X @ coef + intercept`` (after the kernel map, if any): shape (n_samples,) binary,
        (n_samples, n_classes) one-vs-rest or native multi-output (the formulation's
        ``decision_function``)."""
        Z = self._features(X)
        if self.per_class:
            return np.column_stack([r.formulation.decision_function(r.coef, r.intercept, Z) for r in self.per_class])
        return self.formulation.decision_function(self.formulation_coef(), self.intercept, Z)

    def predict(self, X: ArrayLike) -> NDArray:
        """Class labels: the sign of the decision function (binary) or its argmax (one-vs-rest,
        native multi-output); for a regression (``classes == ()``: least squares) the fitted values
        ``X @ coef + intercept``."""
        d = self.decision_function(X)
        if not self.classes:
            return d
        classes = np.asarray(self.classes, dtype=object)
        if d.ndim == 1:
            out = classes[(d > 0).astype(np.intp)]  # object indexing: labels of mixed types (("rest", 3))
        else:
            out = classes[np.argmax(d, axis=1)]
        try:
            return out.astype(np.asarray(self.classes).dtype)
        except (TypeError, ValueError):
            return out

    @property
    def facts(self) -> dict:
        """What the fit derived from its training data as parameters of the model: the entries of
        ``info`` that the formulation, loop, surrogate or kernel map declares in its
        ``data_facts`` (:attr:`fsframe.Formulation.data_facts`), e.g. MPM's bound ``delta``
        actually used, ``delta_max``, ``kappa`` and ``kappa_max`` (paper 000 eqs. 22 and 43-46),
        DSO-FS's ``rank``; a parameter left to the data (``delta=None``) is reported with the value
        used. The other numbers of ``info`` (counters, a cut's rise) are :attr:`details`.
        One-vs-rest: every class's facts, keyed ``"name[class]"``."""
        return self._numbers(True)

    @property
    def details(self) -> dict:
        """The fit's bookkeeping: the real-number entries of ``info`` that are neither timings nor
        :attr:`facts` (``zero_tol_cut``, ``n_socps``, ``lps_solved``, ...). One-vs-rest: keyed
        ``"name[class]"``."""
        return self._numbers(False)

    def _numbers(self, facts: bool) -> dict:
        if self.per_class:
            out: dict = {}
            for c, r in zip(self.classes, self.per_class):
                out.update({f"{k}[{c}]": v for k, v in r._numbers(facts).items()})
            return out
        declared = {k for c in (self.formulation, self.loop, self.surrogate, self.transform)
                    for k in getattr(c, "data_facts", ())}
        return {k: (int(v) if isinstance(v, numbers.Integral) else float(v)) for k, v in self.info.items()
                if isinstance(v, numbers.Real) and not isinstance(v, bool) and not k.endswith("seconds")
                and math.isfinite(v) and (k in declared) == facts}

    # -- presentation ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        obj = "None" if self.objective is None else f"{self.objective:.6g}"
        statuses = sorted({getattr(s, "value", str(s)) for s in self.statuses})
        return (f"FitResult(method={self.method!r}, selected={self.n_selected} of {len(self.support)}, "
                f"objective={obj}, n_iter={self.n_iter}, converged={self.converged}, "
                f"statuses={statuses}, backend={self.backend!r})")

    def summary(self, *, top: int = 10) -> str:
        """A readable multi-line summary: the model with every parameter (those left to the data
        with the value used), what the fit derived from the data (:attr:`facts`), the selected
        features (the ``top`` first), objective, iterations, convergence, solver statuses and time.
        ``print(result)`` shows the same; :meth:`to_dict` has everything, JSON-ready."""
        facts = self.facts
        comps = [c for c in (self.formulation, self.surrogate, self.loop) if c is not None]
        model = " + ".join(_component_text(c, facts) for c in comps)
        what = "features" if self.transform is None else getattr(self.transform, "support_of", "training samples")
        lines = [f"{self.method or 'custom'}: {model}; {backend_text(self.backend, solved=solved_by(self))}"
                 + (f"; one-vs-rest over {len(self.classes)} classes" if self.per_class else "")]
        shown = {k for c in comps if attrs.has(type(c)) for k in attrs.fields_dict(type(c))}
        extra = {k: v for k, v in facts.items() if k not in shown}
        if extra:
            lines.append("  from the data: " + ", ".join(f"{k}={_num(v)}" for k, v in extra.items()))
        details = {k: v for k, v in self.details.items() if k not in shown}
        if details:
            lines.append("  details: " + ", ".join(f"{k}={_num(v)}" for k, v in details.items()))
        names = self.selected_names
        listed = ", ".join(str(n) for n in names[:top]) + (f", ... ({len(names) - top} more)" if len(names) > top else "")
        lines.append(f"  selected {self.n_selected} of {len(self.support)} {what}" + (f": {listed}" if names else ""))
        obj = "-" if self.objective is None else f"{self.objective:.6g}"
        reason = self.info.get("stop_reason")
        lines.append(f"  objective {obj}; {self.n_iter} iteration{'s' if self.n_iter != 1 else ''}; converged: "
                     f"{'yes' if self.converged else 'NO'}{f' ({reason})' if reason else ''}; "
                     f"monotone: {self.monotone_text}")
        statuses = sorted({getattr(s, "value", str(s)) for s in self.statuses})
        seconds = self.info.get("seconds")
        lines.append(f"  solver statuses: {', '.join(statuses) or '-'}"
                     + ("" if seconds is None else f"; {seconds:.3g} s"))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def to_dict(self) -> dict:
        """A JSON-serialisable record (what ``fsframe select --json`` writes as ``result``)."""
        return {
            "method": self.method,
            "formulation": str(self.formulation),
            "surrogate": None if self.surrogate is None else str(self.surrogate),
            "loop": str(self.loop),
            "backend": self.backend,
            "n_selected": self.n_selected,
            "selected": self.selected.tolist(),
            "objective": self.objective,
            "n_iter": self.n_iter,
            "converged": self.converged,
            "monotone": self.monotone,
            "statuses": [s.value if isinstance(s, Status) else str(s) for s in self.statuses],
            "info": {k: v for k, v in self.info.items() if isinstance(v, (int, float, str, bool, type(None)))},
            "facts": self.facts,
            "certificate": self.certificate,
        }


def solver_label(backend: str | None, version=None) -> str | None:
    """``"highs 1.16.0"`` (a backend and its version), ``"highs"``, or ``None`` (no backend)."""
    if not backend:
        return None
    return f"{backend} {version}" if version else str(backend)


def backend_text(backend: str | None, version=None, solved: str | None = None) -> str:
    """``backend highs 1.16.0``; a model computed without one: ``solved by dense-hinge (fsframe's
    own, no solver backend)`` when ``solved`` (:func:`solved_by`) names what did, else ``no solver
    backend``."""
    label = solver_label(backend, version)
    if label is not None:
        return f"backend {label}"
    return f"solved by {solved} (fsframe's own, no solver backend)" if solved else "no solver backend"


def solved_by(res) -> str | None:
    """What solved a fit without a solver backend, as its certificate names it (the dense EM
    path's ``"dense-hinge"``, EM's ``"newton"`` steps); ``None`` for a backend's fit."""
    if res.backend is not None:
        return None
    cert = res.certificate if not res.per_class else res.per_class[0].certificate
    label = (cert or {}).get("backend")
    return None if not label else str(label)


def _num(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _component_text(obj, facts: dict) -> str:
    """``mpm(delta=0.6875, delta_fraction=0.9, rho=0.01)``: a component's name and init parameters,
    those left to the data (``None``) filled in from ``facts``."""
    name = getattr(obj, "name", None) or type(obj).__name__
    if not attrs.has(type(obj)):
        return str(name)
    items = []
    for f in attrs.fields(type(obj)):
        if not (f.init and f.repr) or f.name.startswith("_"):
            continue
        v = getattr(obj, f.name)
        if v is None and f.name in facts:
            items.append(f"{f.name}={_num(facts[f.name])}")
        elif v is None and any(k.startswith(f.name + "[") for k in facts):
            items.append(f"{f.name}=<per class, below>")
        elif isinstance(v, (str, int, float, bool, type(None))):
            items.append(f"{f.name}={v!r}")
    return f"{name}(" + ", ".join(items) + ")"
