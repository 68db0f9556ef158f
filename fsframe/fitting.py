"""The fit driver: :func:`fit` resolves the components (:func:`fsframe.method.resolve`), validates
the fit options, picks the backend, applies the data transform (kernel map) and runs the outer
loop on one binary subproblem, or one per class (one-vs-rest) for binary formulations on more
than two classes."""

from __future__ import annotations

import numbers
import time
import warnings
from collections.abc import Callable, Mapping

import attrs
import numpy as np
from numpy.typing import ArrayLike

from .backends.base import Backend, SolveOptions
from .compiler.cones import CONE_FORMS
from .dataset import Dataset, check_Xy, is_sparse
from .errors import (BackendUnavailableError, DataError, DataWarning, IncompatibleComponentsError, InvalidOptionError,
                     SolverWarning, UnknownComponentError, UnsupportedProblemError)
from .formulation import AuxSolver, call_opt_in
from .method import Resolved, _reason, resolve, select_backend
from .problem import Iterate, Subproblem
from .progress import progress_bar
from .results import FitResult
from .working_set import WorkingSetOptions

__all__ = ["CONE_FORMS", "fit", "fit_resolved", "make_options", "check_fit_options", "check_n_features",
           "training_data", "working_set_options", "certificate_of"]

#: The compiler's ways of writing second-order cones (see :func:`fsframe.compiler.compile_model`).


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


VERIFY_TOL = 1e-5
"""Objective gap between the fit's backend and the ``verify=`` backend above which a
:class:`~fsframe.errors.SolverWarning` is raised (ten times the certificate's default tolerance):
relative for objectives above 1, absolute below (an objective near 0, e.g. a reweighted step
whose weights all but vanish, has no relative precision)."""


def certificate_of(it: Iterate) -> dict:
    """The certificate of the subproblem that gave the returned model (``FitResult.certificate``):
    its status and backend, fsframe's KKT certificate on the *full* problem (``gap``,
    ``primal_residual``, ``dual_residual``: see :class:`~fsframe.backends.certificate.Certificate`),
    and how the working set went (``working_set`` groups of ``n_groups``, ``rounds``, and
    ``max_violation``: the largest reduced cost over the excluded features that their bounds do
    not excuse, relative to the size of its own terms — 0 when the exclusion was exact or nothing was
    excluded)."""
    res = it.result
    out = {"status": res.status.value, "backend": res.backend}
    cert = res.certificate
    if cert is not None:
        out.update(gap=float(cert.gap), primal_residual=float(cert.primal_residual),
                   dual_residual=float(cert.dual_residual))
    rep = it.report
    if rep is not None:
        out.update(working_set=rep.size if rep.used else None, n_groups=rep.n_groups, rounds=rep.rounds,
                   added=rep.added, max_violation=rep.max_violation)
        if rep.fallback:
            out["fallback"] = rep.fallback
    return out


def _returned_vs_certified(certificate: dict, coef, certified, objective) -> None:
    """Say whether the returned coefficients are the certified subproblem's answer.

    A loop may return its iterate cut to a support (the exactly-``r`` selection when the re-solve
    on the selected features failed, or groups below 1e-12 of the largest norm): the certificate
    then describes the uncut point. ``cut_distance`` is the largest coefficient change;
    ``certifies_returned`` is False (and ``status`` says ``cut``) when that change is beyond
    rounding (1e-9 of the largest coefficient) or the loop reported no objective."""
    coef = np.asarray(coef, dtype=float).ravel()
    certified = np.asarray(certified, dtype=float).ravel()
    # another shape: not comparable, so not certified (None keeps the certificate valid JSON)
    dist = float(np.max(np.abs(coef - certified), initial=0.0)) if coef.shape == certified.shape else None
    ok = (objective is not None and dist is not None
          and dist <= 1e-9 * max(1.0, float(np.max(np.abs(certified), initial=0.0))))
    certificate["cut_distance"] = dist
    certificate["certifies_returned"] = bool(ok)
    if not ok:
        certificate["certified_status"] = certificate["status"]
        certificate["status"] = "cut"


def _recut(certificate: dict, coef, certified, objective) -> dict:
    """``certificate`` (a copy) judged again for coefficients cut after the binary fit (one-vs-rest's
    cross-class cut to ``n_features``)."""
    if not certificate or certified is None:
        return certificate
    out = dict(certificate)
    if "certified_status" in out:  # judged against the certified point afresh
        out["status"] = out.pop("certified_status")
    _returned_vs_certified(out, coef, certified, objective)
    return out


def _verify_backend(verify, res: Resolved) -> Backend | None:
    """The ``verify=`` backend, checked before the fit runs (an unknown name, or a backend that
    cannot solve the method's subproblems, is an error up front, not after a long fit)."""
    if verify is None:
        return None
    try:
        return select_backend(verify, res.problem_class, quadratic="quad" in res.terms)
    except (UnknownComponentError, IncompatibleComponentsError, BackendUnavailableError) as exc:
        raise type(exc)(f"verify={getattr(verify, 'name', verify)!r}: {exc}") from None


def _verify(sub: Subproblem, it: Iterate, verify, options: SolveOptions) -> dict:
    """Re-solve the subproblem of ``it`` (its slot weights, the full problem) on the backend
    ``verify`` and compare objectives; warn when they disagree by more than :data:`VERIFY_TOL`."""
    data = sub.compiled.with_weights(**it.weights, sync=False) if it.weights else sub.compiled.data
    be = select_backend(verify, data.problem_class, quadratic=data.has_quadratic_objective)
    res = be.solve(data, options)
    out = {"backend": be.name, "status": res.status.value, "objective": res.objective}
    if res.ok and it.objective is not None and res.objective is not None:
        scale = max(abs(it.objective), abs(res.objective), 1.0)  # relative above 1, absolute below
        gap = (it.objective - res.objective) / scale
        out.update(objective_gap=float(gap),
                   coef_distance=float(np.max(np.abs(sub.compiled.coef(res.x) - it.coef), initial=0.0)))
        if abs(gap) > VERIFY_TOL:
            warnings.warn(
                f"verify: backend {be.name!r} finds objective {res.objective:.10g} for the last subproblem, "
                f"{it.result.backend!r} reported {it.objective:.10g} (relative gap {gap:.2e} > "
                f"{VERIFY_TOL:g}); one of the solvers is inaccurate on this problem", SolverWarning, stacklevel=5)
    else:
        warnings.warn(f"verify: backend {be.name!r} ended {res.status.value} on the last subproblem "
                      f"({res.message}); the fit's answer is not confirmed", SolverWarning, stacklevel=5)
    return out


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


def _binary_fit(res: Resolved, X, y_pm, backend: Backend, options: SolveOptions, n_features, fast, cone_form,
                keep_model, callback=None, ws: WorkingSetOptions = WorkingSetOptions(), verify=None,
                reuse=None, key=None) -> dict:
    solver = AuxSolver(backend, options)  # formulations' auxiliary solves use the fit's backend (opt-in)
    info = dict(call_opt_in(res.formulation.validate, X, y_pm, solver=solver) or {})

    def make() -> Subproblem:
        return Subproblem(res.formulation, X, y_pm, res.terms, backend, options, fast=fast, cone_form=cone_form,
                          solver=solver, working_set=ws)

    # ``reuse(key, res, make)`` (a parameter path, fsframe.path) hands out a subproblem it keeps
    # open across fits; otherwise the fit owns one
    sub = make() if reuse is None else reuse(key, res, make)
    try:
        out = res.loop.run(sub, res.surrogate, n_features=n_features, callback=callback)
        certificate = certificate_of(out.iterate) if out.iterate.result is not None else {}
        if certificate and out.iterate.coef is not None:
            _returned_vs_certified(certificate, out.coef, out.iterate.coef, out.objective)
        if verify is not None and out.iterate.x is not None and sub.is_built:
            certificate["verify"] = _verify(sub, out.iterate, verify, options)
    finally:
        if reuse is None:
            sub.close()
    if sub.is_built:  # a loop that never solved the model (DSO-FS, filters) leaves it unbuilt
        info.update(sub.built.info)
    info.update(build_seconds=sub.build_seconds, compile_seconds=sub.compile_seconds,
                solve_seconds=float(sum(r.seconds for r in out.history)), stop_reason=out.reason,
                backend_version=out.iterate.result.backend_version, **(out.selection or {}))
    if keep_model:
        info["model"] = sub.compiled.sync_model()  # holds the last iteration's slot weights
        info["compiled"] = sub.compiled
    coef = out.coef.reshape(sub.built.coef_shape) if sub.is_built else np.asarray(out.coef)
    intercept = out.iterate.intercept
    intercept = float(intercept[0]) if intercept.size == 1 else intercept
    transform = out.transform
    if transform is None and sub.is_built:  # never build a model only to read its transform
        transform = sub.built.transform
    return dict(coef=coef, intercept=intercept, support=out.support, transform=transform, objective=out.objective,
                n_iter=out.n_iter, converged=out.converged, history=out.history,
                statuses=solver.statuses + out.statuses, monotone=out.monotone, info=info, certificate=certificate,
                certified_coef=out.iterate.coef)


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
        :class:`~fsframe.loops.base.IterRecord`: ``k``, ``objective``, ``n_nonzero``, ``seconds``);
        e.g. to record or stop a long fit (progress: ``progress=``).
    working_set : "auto", bool or WorkingSetOptions
        Solve every subproblem on a working set of feature groups, pricing the others from the
        multipliers (:mod:`fsframe.working_set`; same answer, certified on the full problem).
        ``"auto"`` (default) does so when the formulation can price its groups and they
        outnumber the constraint rows four times (and are at least 200); ``result.certificate`` reports it.
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
    Xa, ya, names = training_data(X, y)
    res = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop, **params)
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

    return step


def training_data(X, y) -> tuple:
    """``(X, y, feature_names)`` of :func:`fit`'s ``X``/``y`` (or a Dataset), checked and copied."""
    if isinstance(X, Dataset):
        if y is not None:
            raise InvalidOptionError("pass either a Dataset or X and y, not both")
        return (X.X.copy() if X.is_sparse else np.array(X.X)), np.array(X.y), X.feature_names
    names = _column_names(X)
    Xa, ya = check_Xy(X, y, warn=True)
    return Xa, ya, names


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
    classes = tuple(np.unique(ya).tolist())
    if Z.shape[1] > 5 * Z.shape[0]:
        warnings.warn(f"n_features={Z.shape[1]} is much larger than n_samples={Z.shape[0]}: many sparse "
                      "solutions fit the training data equally well; check the selection's stability",
                      DataWarning, stacklevel=3)
    common = dict(method=res.method, formulation=res.formulation, surrogate=res.surrogate, loop=res.loop,
                  backend=be.name, params=res.params, transform=transform, feature_names=names)
    if len(classes) == 2 or res.formulation.multiclass == "native":
        if len(classes) == 2:
            y_code = np.where(ya == classes[1], 1.0, -1.0)
        else:
            y_code = np.searchsorted(np.asarray(classes), ya)
        parts = _binary_fit(res, Z, y_code, be, options, n_features, fast, cone_form, keep_model, callback, ws, verify,
                            reuse, None)
        parts["info"]["seconds"] = time.perf_counter() - t_start
        own = parts.pop("transform")
        parts.pop("certified_coef")
        if own is not None:  # a formulation or loop that owns its kernel rows
            common["transform"] = own
        return FitResult(classes=classes, **parts, **common)
    # one-vs-rest
    per, certified = [], []
    for c in classes:
        y_pm = np.where(ya == c, 1.0, -1.0)
        parts = _binary_fit(res, Z, y_pm, be, options, n_features, fast, cone_form, keep_model, callback, ws, verify,
                            reuse, c)
        certified.append(parts.pop("certified_coef"))
        if parts.pop("transform") is not None:
            raise UnsupportedProblemError(
                f"formulation {res.formulation.name!r} maps the samples itself (its own kernel), which one-vs-rest "
                "cannot share across classes: fit it on two classes, or use a linear kernel")
        per.append(FitResult(classes=("rest", c), **parts, **common))
    supports = np.array([r.support for r in per])
    support = supports.any(axis=0)
    coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    if n_features is not None and support.sum() > n_features:
        scale = np.max(np.abs(coefs), axis=1, keepdims=True)
        score = np.max(np.abs(coefs) / np.where(scale > 0, scale, 1.0), axis=0)
        keep = np.argsort(-score, kind="stable")[:n_features]
        support = np.zeros_like(support)
        support[keep] = True
        coefs[:, ~support] = 0.0
        # the groups this cross-class cut removes are counted with the ones the binary rule dropped;
        # a class that lost groups has no known objective (its coefficients were cut, not re-solved),
        # and its certificate describes the uncut point (_returned_vs_certified says so)
        per = [attrs.evolve(r, coef=coefs[i], support=r.support & support,
                            objective=None if np.any(r.support & ~support) else r.objective,
                            certificate=_recut(r.certificate, coefs[i], certified[i],
                                               None if np.any(r.support & ~support) else r.objective),
                            info={**r.info, "n_features_dropped": r.info.get("n_features_dropped", 0)
                                  + int(np.count_nonzero(r.support & ~support)),
                                  "n_features_union_cut": int(np.count_nonzero(r.support & ~support))})
               for i, r in enumerate(per)]
    info = {"seconds": time.perf_counter() - t_start,
            "build_seconds": sum(r.info["build_seconds"] for r in per),
            "compile_seconds": sum(r.info["compile_seconds"] for r in per),
            "solve_seconds": sum(r.info["solve_seconds"] for r in per),
            "strategy": "one-vs-rest"}
    objs = [r.objective for r in per]
    certificate = {"per_class": tuple(r.certificate for r in per)}
    return FitResult(
        coef=coefs, intercept=np.array([r.intercept for r in per], dtype=float), support=support,
        objective=None if any(o is None for o in objs) else float(sum(objs)),
        n_iter=max(r.n_iter for r in per), converged=all(r.converged for r in per),
        history=tuple(h for r in per for h in r.history), statuses=tuple(s for r in per for s in r.statuses),
        monotone=all(r.monotone for r in per), classes=classes, info=info, per_class=tuple(per),
        certificate=certificate, **common)
