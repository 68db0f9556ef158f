""":class:`FSSelector`: fsframe as a scikit-learn estimator — a feature selector
(``transform``, ``get_support``, ``get_feature_names_out``) that is also a classifier
(``predict``, ``decision_function``, ``score``); :class:`FSRegressor` is its regression flavour
(least squares: ``predict`` the fitted values, ``score`` the R^2).

Parameter shape (scikit-learn's estimator rules): ``__init__`` only stores its arguments, every
argument is an explicit keyword, and validation happens in :meth:`FSSelector.fit`. The parameters
researchers tune most — ``C``, ``alpha``, ``max_iter``, ``tol`` and ``n_features`` — are
first-class (``GridSearchCV(param_grid={"C": [...], "alpha": [...]})``); ``None`` means "the
method's default". Every other component parameter goes in the ``params`` dict, and can be
tuned one key at a time as ``params__<key>`` (``{"params__eps": [1e-3, 1e-2]}``): ``set_params``
updates a copy of the dict. ``**kwargs`` in ``__init__`` would break ``get_params``/``clone``.

The estimator does not scale features: put a ``StandardScaler`` in front of it in a ``Pipeline``.
"""

from __future__ import annotations

import contextlib

import warnings
from typing import Any, Mapping

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import NotFittedError as _SkNotFittedError
from sklearn.feature_selection import SelectorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from . import errors
from .dataset import check_no_silent_cast
from .fitting import fit as _fit
from .method import sparsity_knobs

__all__ = ["FSSelector", "FSRegressor", "NotFittedError"]


class NotFittedError(errors.NotFittedError, _SkNotFittedError):
    """:class:`FSSelector` used before ``fit``: both fsframe's and scikit-learn's NotFittedError."""


_EXPLICIT = ("C", "alpha", "max_iter", "tol")


class FSSelector(ClassifierMixin, SelectorMixin, BaseEstimator):
    """Embedded feature selection by approximate L0 minimisation, as a scikit-learn estimator.

    Parameters
    ----------
    method : str, default="fsv"
        A registered method (``fsframe.list_methods()``), or ``None`` with ``formulation`` and
        ``loop`` (and ``surrogate``) for any compatible triple.
    C, alpha, max_iter, tol : optional
        Loss weight (formulation), surrogate steepness, outer-loop iteration limit and tolerance.
        ``None`` keeps the method's default. A value the chosen components do not accept (e.g.
        ``alpha`` for ``l1-svm``) is an :class:`~fsframe.errors.InvalidOptionError` at ``fit``.
    n_features : int, optional
        Select exactly this many features (paper 002 §3.1).
    formulation, surrogate, loop : str, optional
        Override the method's components.
    backend : str, default="auto"
    params : dict, optional
        Any other parameter of :func:`fsframe.fit` (``eps``, ``p``, ``zero_tol``, ``time_limit``,
        ``loop__tol`` ...). Kernel maps (``kernel=``) select training samples, not features, and
        are refused here; use :func:`fsframe.fit`.

    Attributes
    ----------
    coef_ : array, shape (1, n_features_in_) for two classes, (n_classes, n_features_in_) for more
        One row per class (one-vs-rest or one native multi-class model alike; scikit-learn's
        layout): ``FitResult.coef`` with its leading axes flattened, so a formulation with several
        coefficient blocks per model has one row per block (the twin SVM's two planes:
        ``(2, n_features_in_)``, ``(2 n_classes, n_features_in_)`` one-vs-rest).
    intercept_ : array, shape (coef_.shape[0],)
    support_ : array of bool, shape (n_features_in_,)
        The selected features (``get_support()``).
    n_iter_ : int
        Convex subproblems solved (the largest over classes for one-vs-rest).
    classes_ : array, shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : array of str
        When ``X`` has string column names.
    result_ : fsframe.FitResult
        Everything else: objective, history, solver statuses, timings, resolved parameters.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), FSSelector("fsv", C=1.0, alpha=5.0)).fit(X, y)
    >>> pipe[-1].get_support().sum() < X.shape[1]
    True
    """

    def __init__(self, method: str | None = "fsv", *, C: float | None = None, alpha: float | None = None,
                 n_features: int | None = None, max_iter: int | None = None, tol: float | None = None,
                 formulation: str | None = None, surrogate: str | None = None, loop: str | None = None,
                 backend: str = "auto", params: Mapping[str, Any] | None = None):
        self.method = method
        self.C = C
        self.alpha = alpha
        self.n_features = n_features
        self.max_iter = max_iter
        self.tol = tol
        self.formulation = formulation
        self.surrogate = surrogate
        self.loop = loop
        self.backend = backend
        self.params = params

    # -- parameters ---------------------------------------------------------------------------
    def set_params(self, **params):
        """As scikit-learn's, plus ``params__<key>=value``, which sets one entry of ``params``
        (on a copy of the dict)."""
        nested = {k[len("params__"):]: params.pop(k) for k in list(params) if k.startswith("params__")}
        if params:
            super().set_params(**params)
        if nested:
            new = dict(self.params or {})
            new.update(nested)
            self.params = new
        return self

    def _fit_kwargs(self) -> dict:
        extra = self.params
        if extra is None:
            extra = {}
        elif not isinstance(extra, Mapping):
            raise errors.InvalidOptionError(f"params must be a dict or None, got {type(extra).__name__}")
        extra = dict(extra)
        kw = {k: getattr(self, k) for k in _EXPLICIT if getattr(self, k) is not None}
        clash = sorted(set(kw) & set(extra))
        if clash:
            raise errors.InvalidOptionError(f"{clash} given both as FSSelector arguments and in params; give each once")
        reserved = sorted(set(extra) & {"method", "formulation", "surrogate", "loop", "backend", "n_features"})
        if reserved:
            raise errors.InvalidOptionError(f"{reserved} are FSSelector arguments; do not put them in params")
        if extra.get("kernel") is not None:
            raise errors.InvalidOptionError(
                "FSSelector selects features; a kernel map (kernel=...) selects training samples. "
                "Use fsframe.fit(X, y, kernel=...) for the kernel methods")
        if extra.get("keep_model"):
            raise errors.InvalidOptionError("keep_model is not supported by FSSelector (use fsframe.fit)")
        kw.update(extra)
        kw.setdefault("progress", False)  # inside searches and pipelines: params={"progress": True} to see it
        return kw

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X, y):
        """Select features and fit the sparse classifier.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix, shape (n_samples, n_features)
            Finite. Not modified. Sparse input stays sparse for methods whose formulation is
            linear in ``X`` (hinge, twin SVM, margin); the others raise
            :class:`~fsframe.errors.SparseInputError`.
        y : array-like, shape (n_samples,)
            Class labels (any type); two classes or more (one-vs-rest).

        Returns
        -------
        self
        """
        self._refuse_regression()
        X, classes, y_idx = self._training_data(X, y)
        kw = self._fit_kwargs()
        result = _fit(X, y_idx, method=self.method, formulation=self.formulation, surrogate=self.surrogate,
                      loop=self.loop, backend=self.backend, n_features=self.n_features, **kw)
        self.classes_ = classes
        self.result_ = result
        # FitResult.coef has the features on its last axis (fsframe.results.result_coef): every
        # leading axis (classes, a formulation's blocks) becomes a row of scikit-learn's 2-D coef_
        self.coef_ = np.asarray(result.coef, dtype=np.float64).reshape(-1, X.shape[1]).copy()
        self.intercept_ = np.asarray(result.intercept, dtype=np.float64).reshape(-1).copy()
        self.support_ = np.asarray(result.support, dtype=bool).copy()
        self.n_iter_ = int(result.n_iter)
        if not self.support_.any():
            warnings.warn(
                f"FSSelector({self.method!r}) selected no feature: transform() returns an empty array and "
                "predict() a constant class. Weaken the sparsity pressure ("
                + ", ".join(advice for _, advice in sparsity_knobs(result.formulation, result.surrogate))
                + ") or set n_features", errors.FsframeWarning, stacklevel=2)
        return self

    def _named(self) -> str:
        """The method as the user chose it: ``'fsv'``, or with the components given beside (or
        instead of) it, ``'fsv' with formulation='hinge'``."""
        over = ", ".join(f"{k}={getattr(self, k)!r}" for k in ("formulation", "surrogate", "loop")
                         if getattr(self, k) is not None)
        if not over:
            return repr(self.method)
        return f"{self.method!r} with {over}" if self.method else over

    def _refuse_regression(self) -> None:
        """A method that fits a real target (``Formulation.task == "regression"``) is refused,
        typed, before ``y`` is read as class labels."""
        from .fitting import is_regression
        from .method import resolve

        if is_regression(resolve(self.method, formulation=self.formulation, surrogate=self.surrogate,
                                 loop=self.loop).formulation):
            who = type(self).__name__
            raise errors.InvalidOptionError(
                f"{who} selects for a classifier; {self._named()} fits a real target: use FSRegressor "
                "(FSRegressorCV to tune it)")

    def _training_data(self, X, y) -> tuple:
        """``(X, classes, class codes of y)``, checked as scikit-learn and fsframe check them
        (``X`` float64, CSR when sparse)."""
        who = type(self).__name__
        X, y = check_no_silent_cast(X, "X", name=who), check_no_silent_cast(y, "y", name=who)
        with _typed_data_errors(who):
            X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse="csr")
        if type_of_target(y) == "continuous":  # a real target: name the method and those that take one
            from .fitting import task_methods

            raise errors.DataError(
                f"{who}: y is a real target (continuous values, not class labels); "
                f"{self._named()} is a classification method: select for a real target with "
                f"FSRegressor and a method that takes one ({', '.join(task_methods(True))})")
        with _typed_data_errors(who):
            check_classification_targets(y)
        classes, y_idx = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise errors.DataError(f"{who} needs samples of at least two classes; y has 1 class ({classes[0]!r})")
        return X, classes, y_idx

    # -- selector -----------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        try:
            check_is_fitted(self, ("support_", "result_"))
        except _SkNotFittedError as exc:
            raise NotFittedError(str(exc)) from None

    def _get_support_mask(self):
        self._check_fitted()
        return self.support_

    def transform(self, X):
        """``X`` reduced to the selected features (scikit-learn's ``SelectorMixin.transform``);
        an ``X`` that is not a matrix of the fit's feature count raises
        :class:`~fsframe.errors.DataError` naming the expected and the given counts."""
        self._check_fitted()
        with _typed_data_errors(type(self).__name__):
            return super().transform(X)

    # -- classifier ---------------------------------------------------------------------------
    def decision_function(self, X):
        """Shape (n_samples,) for two classes (positive for ``classes_[1]``), else
        (n_samples, n_classes) one-vs-rest scores."""
        return self._decision(X)

    def _decision(self, X):
        self._check_fitted()
        who = type(self).__name__
        with _typed_data_errors(who):
            X = validate_data(self, check_no_silent_cast(X, "X", name=who), reset=False, dtype=np.float64,
                              accept_sparse="csr")
        return np.asarray(self.result_.decision_function(X), dtype=np.float64)

    def predict(self, X):
        """Class labels: the sign of the decision function (two classes) or its argmax."""
        d = self.decision_function(X)
        idx = (d > 0).astype(np.intp) if d.ndim == 1 else np.argmax(d, axis=1)
        return self.classes_[idx]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # methods linear in X fit CSR as is; the others raise SparseInputError
        tags.input_tags.allow_nan = False
        return tags


@contextlib.contextmanager
def _typed_data_errors(who: str):
    """scikit-learn's input validation (NaN/inf, shapes, label types, a feature count that differs
    from the fit's) raises plain ``ValueError``; re-raise it as :class:`~fsframe.errors.DataError`
    (a ``ValueError`` too) with the same message, so every bad input is typed."""
    try:
        yield
    except errors.FsframeError:
        raise
    except ValueError as exc:
        raise errors.DataError(f"{who}: {exc}") from exc


class FSRegressor(RegressorMixin, FSSelector):
    """:class:`FSSelector` for a real target: a feature selector that is a scikit-learn regressor
    (``predict`` gives ``X @ coef_ + intercept_``, ``score`` the coefficient of determination
    R^2). Its method must fit a regression (``Formulation.task == "regression"``: ``l1-ls`` /
    ``lasso``, ``l0-ls``, ``em-ls``, ``log-ls``); a classification method is an
    :class:`~fsframe.errors.InvalidOptionError` at ``fit``. Parameters as :class:`FSSelector`'s
    (default method ``"l1-ls"``, where ``C = 1 / (n_samples * alpha_lasso)`` gives scikit-learn's
    ``Lasso(alpha_lasso)``); ``coef_`` has shape ``(n_features_in_,)`` and ``intercept_`` is a
    float, as scikit-learn's linear regressors.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(50, 8))
    >>> y = X[:, 0] - 2 * X[:, 3] + 0.1 * rng.normal(size=50)
    >>> reg = FSRegressor("l1-ls", C=1.0).fit(X, y)
    >>> reg.get_support().nonzero()[0].tolist(), reg.score(X, y) > 0.99
    ([0, 3], True)
    """

    def __init__(self, method: str | None = "l1-ls", *, C: float | None = None, alpha: float | None = None,
                 n_features: int | None = None, max_iter: int | None = None, tol: float | None = None,
                 formulation: str | None = None, surrogate: str | None = None, loop: str | None = None,
                 backend: str = "auto", params: Mapping[str, Any] | None = None):
        super().__init__(method, C=C, alpha=alpha, n_features=n_features, max_iter=max_iter, tol=tol,
                         formulation=formulation, surrogate=surrogate, loop=loop, backend=backend, params=params)

    def fit(self, X, y):
        """Select features and fit the sparse regression on the real target ``y``."""
        X, y = self._regression_data(X, y)
        kw = self._fit_kwargs()
        result = _fit(X, y, method=self.method, formulation=self.formulation, surrogate=self.surrogate,
                      loop=self.loop, backend=self.backend, n_features=self.n_features, **kw)
        self.result_ = result
        self.coef_ = np.asarray(result.coef, dtype=np.float64).reshape(-1).copy()
        self.intercept_ = float(np.asarray(result.intercept, dtype=np.float64).reshape(-1)[0])
        self.support_ = np.asarray(result.support, dtype=bool).copy()
        self.n_iter_ = int(result.n_iter)
        return self

    def _regression_data(self, X, y) -> tuple:
        """``(X, y)`` checked as scikit-learn checks a regressor's (dense float64 ``X``, numeric
        ``y``), after refusing a sparse ``X`` and a classification method, typed."""
        from .fitting import is_regression
        from .method import resolve

        import scipy.sparse as sp

        who = type(self).__name__
        if sp.issparse(X):
            raise errors.SparseInputError(
                f"{who} takes a dense X: the least-squares formulation is not built from a sparse X; densify "
                "it explicitly with X.toarray() if it fits in memory")
        X, y = check_no_silent_cast(X, "X", name=who), check_no_silent_cast(y, "y", name=who)
        with _typed_data_errors(who):
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, accept_sparse=False)
        res = resolve(self.method, formulation=self.formulation, surrogate=self.surrogate, loop=self.loop)
        if not is_regression(res.formulation):
            raise errors.InvalidOptionError(
                f"{who} needs a regression method; {res.method or res.formulation.name!r} fits class labels "
                f"(use {'FSSelectorCV' if who.endswith('CV') else 'FSSelector'})")
        return X, y

    def predict(self, X):
        """The fitted values ``X @ coef_ + intercept_``."""
        import scipy.sparse as sp

        if sp.issparse(X):
            raise errors.SparseInputError("FSRegressor takes a dense X (see fit)")
        return self._decision(X)

    @property
    def decision_function(self):
        """A regressor has none (scikit-learn's convention): use :meth:`predict`."""
        raise AttributeError("FSRegressor has no decision_function: predict gives the fitted values")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False  # least squares is built from a dense X (SparseInputError)
        return tags
