"""The :class:`FitResult` every fit returns."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
from numpy.typing import ArrayLike, NDArray

from .enums import Status

__all__ = ["FitResult"]


@attrs.frozen(eq=False)
class FitResult:
    """The outcome of :func:`fsframe.fit`.

    Attributes
    ----------
    coef : array, shape (n_features,) for binary problems, (n_classes, n_features) one-vs-rest
        Coefficients on the (possibly kernel-mapped) features; zero outside ``support``.
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
    method, formulation, surrogate, loop, backend
        What ran, with every parameter value (the exact inputs).
    params : dict
        The parameters as resolved (method defaults plus user values).
    info : dict
        Timings (``build_seconds``, ``compile_seconds``, ``solve_seconds``, ``seconds``),
        formulation facts (e.g. MPM's ``kappa``) and the stop reason.
    per_class : tuple of FitResult
        One-vs-rest: the binary results, in class order.
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
    backend: str
    params: dict
    info: dict = attrs.field(factory=dict)
    per_class: tuple = ()
    transform: Any = attrs.field(default=None, repr=False)
    feature_names: tuple | None = attrs.field(default=None, repr=False)

    # -- selection ----------------------------------------------------------------------------
    @property
    def selected(self) -> NDArray:
        """Indices of the selected features."""
        return np.flatnonzero(self.support)

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
        from .errors import DataError

        try:
            X = np.asarray(X, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"X is not numeric ({exc})") from exc
        if X.ndim != 2:
            raise DataError(f"X must be 2-D, got shape {X.shape}")
        bad = ~np.isfinite(X)
        if bad.any():
            i, j = map(int, np.argwhere(bad)[0])
            raise DataError(f"X contains {int(bad.sum())} non-finite value(s) (first at sample {i}, feature {j}); "
                            "impute or drop them before predicting")
        if self.transform is not None:
            return self.transform.transform(X)
        n = self.coef.shape[-1]
        if X.shape[1] != n:
            raise DataError(f"X has {X.shape[1]} features, the model was fitted on {n}")
        return X

    def decision_function(self, X: ArrayLike) -> NDArray:
        """``X @ coef + intercept`` (after the kernel map, if any): shape (n_samples,) binary,
        (n_samples, n_classes) one-vs-rest."""
        Z = self._features(X)
        if self.per_class:
            return np.column_stack([r.formulation.decision_function(r.coef, r.intercept, Z) for r in self.per_class])
        return self.formulation.decision_function(self.coef, self.intercept, Z)

    def predict(self, X: ArrayLike) -> NDArray:
        """Class labels: the sign of the decision function (binary) or its argmax (one-vs-rest)."""
        d = self.decision_function(X)
        classes = np.asarray(self.classes, dtype=object)
        if d.ndim == 1:
            out = classes[(d > 0).astype(np.intp)]  # object indexing: labels of mixed types (("rest", 3))
        else:
            out = classes[np.argmax(d, axis=1)]
        try:
            return out.astype(np.asarray(self.classes).dtype)
        except (TypeError, ValueError):
            return out

    def summary(self) -> dict:
        """A JSON-serialisable summary."""
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
        }
