"""The fit driver's inputs, checked before any work starts: ``fit``'s solver options
(:func:`make_options`) and own options (:func:`check_fit_options`, :func:`working_set_options`),
the training data (:func:`training_data`, with a DataFrame's column names), the task of a method
against its data (:func:`is_regression`, :func:`check_task`, :func:`task_mismatch`) and the
counts (:func:`check_n_features`, :func:`check_classes`, :func:`default_n_features`).
:func:`fsframe.fitting.fit` runs them; :mod:`fsframe.fitting` re-exports every name of ``__all__``."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np

from .backends.base import SolveOptions
from .compiler.cones import CONE_FORMS
from .dataset import Dataset, check_regression_Xy, check_Xy
from .errors import DataError, DataWarning, FsframeError, InvalidOptionError, UnsupportedProblemError
from .method import Resolved, _reason
from .plugins import get_registry
from .working_set import WorkingSetOptions

__all__ = ["make_options", "check_fit_options", "working_set_options", "is_regression", "training_data",
           "task_methods", "task_mismatch", "check_task", "check_n_features", "check_classes", "default_n_features"]


def make_options(*, time_limit=None, verbose=False, backend_options=None) -> SolveOptions:
    """:class:`SolveOptions` from :func:`fit`'s keywords; a bad value is an
    :class:`~fsframe.errors.InvalidOptionError` naming it (a bool or a string is not a time
    limit; ``backend_options`` is a mapping)."""
    if time_limit is not None and (not isinstance(time_limit, numbers.Real)
                                   or isinstance(time_limit, (bool, np.bool_))):
        raise InvalidOptionError(
            f"invalid solver option: time_limit must be a number of seconds or None, got {time_limit!r}")
    if backend_options is not None and not isinstance(backend_options, Mapping):
        raise InvalidOptionError(
            f"invalid solver option: backend_options must be a mapping (dict), got {backend_options!r}")
    try:
        return SolveOptions(time_limit=None if time_limit is None else float(time_limit), verbose=verbose,
                            backend_options=backend_options or {})
    except (TypeError, ValueError) as exc:
        raise InvalidOptionError(f"invalid solver option: {_reason(exc)}") from exc


def _flag(name: str, value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise InvalidOptionError(f"{name} must be True or False, got {value!r}")


def check_fit_options(*, fast=True, keep_model=False, cone_form="substitute", verbose=False) -> dict:
    """The fit driver's own options, checked before any work starts (normalised: numpy booleans
    become ``bool``); a bad value is an :class:`~fsframe.errors.InvalidOptionError` naming it."""
    if not isinstance(cone_form, str) or cone_form not in CONE_FORMS:
        raise InvalidOptionError(f"cone_form must be one of {CONE_FORMS}, got {cone_form!r}")
    return dict(fast=_flag("fast", fast), keep_model=_flag("keep_model", keep_model), cone_form=cone_form,
                verbose=_flag("verbose", verbose))


def working_set_options(value) -> WorkingSetOptions:
    """:class:`~fsframe.working_set.WorkingSetOptions` from ``fit``'s ``working_set=``
    (``"auto"``, True, False, or the options themselves); anything else is an
    :class:`~fsframe.errors.InvalidOptionError`."""
    if isinstance(value, WorkingSetOptions):
        return value
    if isinstance(value, (bool, np.bool_)) or value == "auto":
        return WorkingSetOptions(mode=value)
    raise InvalidOptionError(f"working_set must be 'auto', True, False or a WorkingSetOptions, got {value!r}")


def _column_names(X) -> tuple | None:
    """A DataFrame's column names when they are all strings, None when none is (scikit-learn's
    rule for ``feature_names_in_``); string and non-string names mixed are a
    :class:`~fsframe.errors.DataError`, as in scikit-learn. Duplicate names are kept, with a
    warning (``selected_names`` cannot tell them apart; ``selected`` can)."""
    cols = getattr(X, "columns", None)
    if cols is None or isinstance(X, np.ndarray):
        return None
    cols = list(cols)
    strings = [isinstance(c, str) for c in cols]
    if not cols or not any(strings):
        return None
    if not all(strings):
        kinds = sorted({type(c).__name__ for c in cols})
        raise DataError(f"X's column names mix strings and other types ({kinds}); names are kept only when all are "
                        "strings: convert them (X.columns = X.columns.astype(str)) or drop them")
    names = tuple(str(c) for c in cols)
    repeated = sorted({n for n in names if names.count(n) > 1}) if len(set(names)) < len(names) else []
    if repeated:
        warnings.warn(f"X has duplicate column names {repeated}: result.selected_names cannot tell those columns "
                      "apart (result.selected gives their positions)", DataWarning, stacklevel=4)
    return names


def is_regression(formulation) -> bool:
    """Whether ``formulation`` fits a real target (``Formulation.task == "regression"``: least
    squares) rather than class labels."""
    return getattr(formulation, "task", "classification") == "regression"


def training_data(X, y, *, regression: bool = False, method: str | None = None) -> tuple:
    """``(X, y, feature_names)`` of :func:`fit`'s ``X``/``y`` (or a Dataset), checked and copied;
    with ``regression`` the target is a real vector (:func:`fsframe.dataset.check_regression_Xy`).
    ``method`` (its name) is named in the message of a task mismatch."""
    if isinstance(X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        if X.is_regression != regression:
            raise InvalidOptionError(task_mismatch(method, regression, X))
        return (X.X.copy() if X.is_sparse else np.array(X.X)), np.array(X.y), X.feature_names
    names = _column_names(X)
    if regression:
        Xa, ya = check_regression_Xy(X, y, warn=True)
        return Xa, ya, names
    try:
        Xa, ya = check_Xy(X, y, warn=True)
    except DataError as exc:  # a real target given to a classification method: say that, not "classes"
        yv = np.asarray(y) if y is not None else None
        # a float y of many values (diabetes' integer-valued target) may be a real target; integer codes
        # are class labels, and the continuous-y message already points to least squares
        if (yv is None or yv.dtype.kind != "f" or yv.ndim != 1 or np.unique(yv).size <= 2
                or "real target" in str(exc)):
            raise
        who = "the method" if method is None else repr(method)
        raise DataError(f"{exc}. If y is a real target ({np.unique(yv).size} distinct numbers), {who} is a "
                        f"classification method; the methods that take a real target: "
                        f"{', '.join(task_methods(True))}") from exc
    return Xa, ya, names


def task_methods(regression: bool) -> list[str]:
    """The registered methods whose formulation fits a real target (``regression``) or class labels."""
    from .method import list_methods

    reg = get_registry()
    out = []
    for m in list_methods():
        try:
            form = reg.get("formulation", m.formulation)
        except FsframeError:  # a method naming a missing or conflicting formulation: unusable either way
            continue
        if is_regression(form) == regression:
            out.append(m.name)
    return out


def task_mismatch(labels, regression: bool, data=None, *, name: str = "data", n_classes: int = 0) -> str:
    """The message of methods meeting the other task's data set (``data``: a
    :class:`~fsframe.dataset.Dataset`, or its ``name`` and ``n_classes``): names the methods
    (``labels``: a name or a list of them), what they fit, and the data."""
    if data is not None:
        name, n_classes = data.name, len(data.classes)
    labels = [labels] if isinstance(labels, str) or labels is None else list(labels)
    many = len(labels) > 1
    who = ("the method" if labels == [None] else ", ".join(repr(lab) for lab in labels)) + (" are" if many else " is")
    kind = "regression method" + ("s" if many else "")
    if regression:
        return (f"{who} {'' if many else 'a '}{kind} (fitting a real target) and data set {name!r} holds "
                f"{n_classes} class labels: choose a classification method, or load a real target "
                "(Dataset(..., task='regression'); command line --task regression)")
    kind = "classification method" + ("s" if many else "")
    return (f"{who} {'' if many else 'a '}{kind} and data set {name!r} holds a real target "
            f"(task='regression'): choose a method that takes a real target ({', '.join(task_methods(True))}), "
            "or load class labels")


def check_task(res: Resolved, data) -> None:
    """Raise :class:`~fsframe.errors.InvalidOptionError` before any work when the method of ``res``
    and the :class:`~fsframe.dataset.Dataset` ``data`` are for different tasks (a regression method
    on class labels, a classification method on a real target), naming both; then
    :func:`check_classes` on the data's classes."""
    regression = is_regression(res.formulation)
    if regression != data.is_regression:
        raise InvalidOptionError(task_mismatch(res.method or res.formulation.name, regression, data))
    check_classes(res, len(data.classes))


def check_n_features(n_features, res: Resolved, Xa) -> None:
    """Raise :class:`~fsframe.errors.InvalidOptionError` for an ``n_features`` that is not a
    positive integer at most the number of groups (features, or samples for a kernel map)."""
    if n_features is None:
        return
    if not isinstance(n_features, (int, np.integer)) or isinstance(n_features, bool) or n_features < 1:
        raise InvalidOptionError(f"n_features must be a positive integer, got {n_features!r}")
    n_groups = Xa.shape[0] if res.kernel is not None else Xa.shape[1]
    if n_features > n_groups:
        raise InvalidOptionError(f"n_features={n_features} exceeds the {n_groups} available features")


def check_classes(res: Resolved, n_classes: int) -> None:
    """Raise :class:`~fsframe.errors.UnsupportedProblemError` before any work when the
    formulation declares two classes only (``Formulation.multiclass == "binary"``) and the labels
    hold more; and :class:`~fsframe.errors.InvalidOptionError` when a regression formulation
    (``task = "regression"``) meets ``n_classes > 0`` class labels (a data set of classes: the
    command line, cross-validation, studies), rather than regress on the class codes."""
    if n_classes and is_regression(res.formulation):
        raise InvalidOptionError(
            f"{res.method or res.formulation.name!r} is a regression method (formulation {res.formulation.name!r} fits "
            f"a real target) and the data hold {n_classes} class labels; choose a classification method, or give a "
            "real target (a Dataset with task='regression', command line --task regression)")
    if n_classes > 2 and res.formulation.multiclass == "binary":
        raise UnsupportedProblemError(
            f"formulation {res.formulation.name!r} fits two classes only (multiclass='binary'), y has {n_classes}: "
            "fit one class against another (or against the rest) yourself, or choose a method whose formulation "
            "runs one-vs-rest or is multi-class")


def default_n_features(res: Resolved, n_groups: int) -> int | None:
    """The ``n_features`` a fit uses when none is given: ``None`` (the method's own sparsity decides
    the support), except for a loop that only ranks the features (``OuterLoop.sparse`` is False:
    ``svm-weights``, ``relieff``, ``mrmr``, ``rfs``), which would keep every feature: it keeps the
    better half of its ranking, ``max(1, n_groups // 2)`` — scikit-learn's ``RFE`` default for a
    ranking with no count given. ``FitResult.info["n_features_default"]`` records it."""
    return None if res.loop.sparse else max(1, n_groups // 2)

