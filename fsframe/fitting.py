"""The fit driver: :func:`fit` resolves the components (:func:`fsframe.method.resolve`), validates
the fit options, picks the backend, applies the data transform (kernel map) and runs the outer
loop on one binary subproblem, or one per class (one-vs-rest) for binary formulations on more
than two classes.

By concern: the options and input checks are :mod:`fsframe.fit_inputs`, the certificate and the
``verify=`` re-solve :mod:`fsframe.fit_certificate`, one binary subproblem's fit with its retries
:mod:`fsframe.binary_fit`, the multi-class assembly :mod:`fsframe.one_vs_rest`; every name of the
``__all__`` of the first three is importable from here too."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from .backends.base import Backend, SolveOptions
# re-exported: every name of the __all__ of fit_inputs, fit_certificate and binary_fit stays importable from here
from .binary_fit import _binary_fit, validate_formulation
from .compiler.cones import CONE_FORMS
from .dataset import Dataset, is_sparse
from .errors import DataWarning
from .fit_certificate import VERIFY_TOL, _verify_backend, certificate_of
from .fit_inputs import (check_classes, check_fit_options, check_n_features, check_task, default_n_features,
                         is_regression, make_options, task_methods, task_mismatch, training_data, working_set_options)
from .method import Resolved, resolve, select_backend
from .one_vs_rest import _one_class, _one_vs_rest
from .progress import progress_bar
from .results import FitResult, result_coef
from .working_set import WorkingSetOptions

__all__ = ["CONE_FORMS", "fit", "fit_resolved", "make_options", "check_fit_options", "check_n_features",
           "check_classes", "default_n_features",
           "training_data", "working_set_options", "certificate_of"]

#: The compiler's ways of writing second-order cones (see :func:`fsframe.compiler.compile_model`).


def fit(
    X: ArrayLike | Dataset,
    y: ArrayLike | None = None,
    method: str | None = None,
    *,
    formulation: str | None = None,
    surrogate: str | None = None,
    loop: str | None = None,
    backend: str | Backend = "auto",
    n_features: int | None = None,
    time_limit: float | None = None,
    backend_options: Mapping | None = None,
    verbose: bool = False,
    fast: bool = True,
    cone_form: str = "substitute",
    keep_model: bool = False,
    callback: Callable | None = None,
    working_set="auto",
    verify: str | Backend | None = None,
    progress=None,
    **params,
) -> FitResult:
    """Select features by (approximate) L0 minimisation.

    Parameters
    ----------
    X : array, shape (n_samples, n_features), DataFrame or Dataset
        A DataFrame's string column names (a Dataset's feature names) become
        ``result.feature_names`` and ``result.selected_names``; non-string names (a RangeIndex)
        are ignored, strings mixed with other types are a :class:`~fsframe.errors.DataError`
        (scikit-learn's rule), duplicate names are kept with a warning.
    y : array, shape (n_samples,)
        Any labels; two classes fit one binary model, more fit one-vs-rest (binary formulations)
        with the union of supports.
    method : str, optional
        A registered method (``fsframe.list_methods()``). Without it, give ``formulation=``,
        ``loop=`` and (if the loop needs one) ``surrogate=``: any compatible triple runs.
    backend : str or Backend
        ``"auto"`` (HiGHS for LP/QP, ECOS for SOCP) or a registered backend name.
    n_features : int, optional
        Select exactly this many features (002 §3.1; see :func:`fsframe.loops.select_exactly`).
        Without it a method's own sparsity decides, except for a method that only ranks the
        features (``svm-weights``, ``relieff``, ``mrmr``, ``rfs``: ``OuterLoop.sparse`` is False),
        which keeps the better half of its ranking (:func:`default_n_features`).
    time_limit, backend_options, verbose
        Passed to the solver (see :class:`fsframe.backends.SolveOptions`).
    fast : bool
    cone_form : {"substitute", "auxiliary"}
        Compiler paths (see :func:`fsframe.compiler.compile_model`).
    keep_model : bool
        Keep the Pyomo model (holding the last iteration's slot weights) and the compiled
        problem in ``result.info``.
    callback : callable, optional
        Called as ``callback(record, iterate)`` after every outer-loop iteration (an
        :class:`~fsframe.loops.records.IterRecord`: ``k``, ``objective``, ``n_nonzero``, ``seconds``;
        the loop's :class:`~fsframe.problem.Iterate`); e.g. to record or stop a long fit
        (progress: ``progress=``). A callback keeps the fit on the compiled path:
        ``working_set="auto"`` then never solves from ``X``, and ``WorkingSetOptions(from_data=True)``
        with a callback is an :class:`~fsframe.errors.UnsupportedProblemError`.
    working_set : "auto", bool or WorkingSetOptions
        Solve every subproblem on a working set of feature groups, pricing the others from the
        multipliers (:mod:`fsframe.working_set`; same answer, certified on the full problem).
        ``"auto"`` (default) does so when the formulation can price its groups and they
        outnumber the constraint rows four times (and are at least 200); ``result.certificate`` reports it.
        A loop that is one convex solve (``l1-svm``) may instead solve it straight from ``X``, when
        the formulation offers it (the ``from_data`` protocol; the hinge's column and row
        generation from 500 samples on): ``WorkingSetOptions(from_data=True)`` forces that,
        ``from_data=False`` (or ``working_set=False``) never (docs/working-sets.md, "Many rows").
        The same option chooses the dense EM path of ``em-l0`` and ``arom`` (the EM subproblem on
        the arrays of ``X``, :mod:`fsframe.dense_fit`; ``"auto"`` on dense data up to 2 000 rows,
        a kernel map up to 6 000, not with ``working_set=True`` or False; falling back to the compiled path when a step is not certified; docs/backends.md).
    progress : None, bool or callable
        Progress of the fit, one step per convex subproblem, through the loop's callback
        (:func:`fsframe.progress.progress_bar`): None shows it in an interactive session (a
        terminal or a notebook) once the fit has run for 2 s; True always; False never.
    verify : str or Backend, optional
        Re-solve the subproblem that gave the returned model on this second backend (e.g.
        ``"clarabel"``) and report the objective gap in ``result.certificate["verify"]``; a gap
        above :data:`VERIFY_TOL` is a :class:`~fsframe.errors.SolverWarning`.
    **params
        Component parameters (``C``, ``alpha``, ``eps``, ``p``, ``delta``, ``max_iter``, ``tol``,
        ``kernel``, ``sigma``, ...), routed by name; ``kind__name`` routes explicitly.

    Returns
    -------
    FitResult

    Raises
    ------
    InvalidOptionError
        a bad option (``fast``, ``keep_model``, ``verbose`` not booleans, an unknown ``cone_form``,
        ``n_features``, a ``time_limit`` that is not a number (``True``, ``"5"``),
        ``backend_options`` not a mapping) or parameter, before any work starts; see
        :func:`fsframe.method.resolve` for the other errors.

    The inputs are never modified.
    """
    t_start = time.perf_counter()
    flags = check_fit_options(fast=fast, keep_model=keep_model, cone_form=cone_form, verbose=verbose)
    fast, keep_model, verbose = flags["fast"], flags["keep_model"], flags["verbose"]
    res = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop, **params)
    Xa, ya, names = training_data(X, y, regression=is_regression(res.formulation),
                                  method=method or res.formulation.name)
    check_n_features(n_features, res, Xa)
    ws = working_set_options(working_set)
    options = make_options(time_limit=time_limit, verbose=verbose, backend_options=backend_options)
    be = select_backend(backend, res.problem_class, quadratic="quad" in res.terms, time_limit=time_limit)
    be.check_options(options)
    verify_be = _verify_backend(verify, res)  # checked before any work starts
    bar = progress_bar(progress, desc=f"fit {method or res.loop.name}")
    try:
        return fit_resolved(res, Xa, ya, names, be, options, n_features=n_features, fast=fast, cone_form=cone_form,
                            keep_model=keep_model, callback=with_progress(callback, bar), ws=ws, verify=verify_be,
                            t_start=t_start)
    finally:
        bar.close()


def with_progress(callback, bar):
    """The loop callback that also steps ``bar`` (one step per subproblem; ``callback`` as given
    when the bar is off)."""
    if not bar.enabled:
        return callback

    def step(record, iterate):
        if callback is not None:
            callback(record, iterate)
        obj = "-" if record.objective is None else f"{record.objective:.6g}"
        bar.step(record, f"iteration {record.k}: objective {obj}, {record.n_nonzero} selected")

    step.user_callback = callback  # the from_data path tells the bar (record only) from a user's callback
    return step


def fit_resolved(res: Resolved, Xa, ya, names, be: Backend, options: SolveOptions, *, n_features=None, fast=True,
                 cone_form="substitute", keep_model=False, callback=None, ws: WorkingSetOptions = WorkingSetOptions(),
                 verify=None, t_start=None, reuse=None) -> FitResult:
    """The body of :func:`fit` once its inputs are checked: the components ``res`` on the training
    data ``(Xa, ya)`` with backend ``be``. ``reuse(key, res, make)``, when given, supplies the
    subproblem of each binary problem (``key``: ``None``, or the class of a one-vs-rest problem)
    and keeps it open (:func:`fsframe.path`'s warm starts); ``make()`` builds the one
    :func:`fit` would."""
    t_start = time.perf_counter() if t_start is None else t_start
    verify = _verify_backend(verify, res)
    if is_sparse(Xa):
        res.check_sparse_input(Xa.shape)
    transform = None
    Z = Xa
    if res.kernel is not None:
        transform = res.kernel.fit(Xa)
        Z = transform.transform(Xa)
        names = None
    regression = is_regression(res.formulation)
    classes = () if regression else tuple(np.unique(ya).tolist())
    check_classes(res, len(classes))
    auto = default_n_features(res, Z.shape[1]) if n_features is None else None
    n_features = n_features if auto is None else auto
    if Z.shape[1] > 5 * Z.shape[0]:
        warnings.warn(f"n_features={Z.shape[1]} is much larger than n_samples={Z.shape[0]}: many sparse "
                      "solutions fit the training data equally well; check the selection's stability",
                      DataWarning, stacklevel=3)
    common = dict(method=res.method, formulation=res.formulation, surrogate=res.surrogate, loop=res.loop,
                  params=res.params, transform=transform, feature_names=names)
    if regression or len(classes) == 2 or res.formulation.multiclass == "native":
        if regression:  # a real target, as given; FitResult.classes is () and predict is the fitted value
            y_code = np.asarray(ya, dtype=float)
        elif len(classes) == 2:
            y_code = np.where(ya == classes[1], 1.0, -1.0)
        else:
            y_code = np.searchsorted(np.asarray(classes), ya)
        parts = _binary_fit(res, Z, y_code, be, options, n_features, fast, cone_form, keep_model, callback, ws, verify,
                            reuse, None)
        parts["info"]["seconds"] = time.perf_counter() - t_start
        if auto is not None:
            parts["info"]["n_features_default"] = auto
        parts["coef"] = result_coef(parts["coef"], res.formulation, len(classes), np.size(parts["support"]))
        own = parts.pop("transform")
        parts.pop("certified_coef")
        parts.pop("groups")
        parts.pop("outcome")
        if own is not None:  # a formulation or loop that owns its kernel rows
            common["transform"] = own
        return FitResult(classes=classes, **parts, **common)
    # one-vs-rest; with n_features each class's subproblem stays open until the union of the
    # supports is cut to n_features, so that a class that loses groups is re-solved on its final support
    held: dict = {}

    def holding(key, res_, make):
        sub = make() if reuse is None else reuse(key, res_, make)
        held[key] = sub
        return sub

    holding.holds_only = reuse is None  # only held for the union cut: the dense EM path may use it (fsframe.dense_fit)

    per, certified, groups, outcomes = [], [], None, []
    try:
        for c in classes:
            y_pm = np.where(ya == c, 1.0, -1.0)
            parts = _binary_fit(res, Z, y_pm, be, options, n_features, fast, cone_form, keep_model, callback, ws,
                                verify, holding if n_features is not None else reuse, c)
            outcomes.append(parts.pop("outcome"))
            r, groups = _one_class(res, parts, certified, common, c)
            per.append(r)
        return _one_vs_rest(res, per, certified, groups, outcomes, held, classes, n_features, auto, t_start, common)
    finally:
        if reuse is None:
            for sub in held.values():
                sub.close()

