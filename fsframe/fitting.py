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
from .dataset import Dataset, check_regression_Xy, check_Xy, is_sparse
from .errors import (BackendUnavailableError, DataError, DataWarning, FsframeError,
                     IncompatibleComponentsError, InvalidOptionError, SolverWarning, UnknownComponentError,
                     UnsupportedProblemError)
from .auxiliary import AuxSolver
from .enums import Status
from .fit_report import _returned_vs_certified, _solved_by, certified_on
from .dense_fit import FALLBACK_RAISED, _dense_em_parts
from .from_data import _from_data, _from_data_parts
from .errors import SolverFailedError
from .method import Resolved, _reason, resolve, select_backend
from .plugins import get_registry
from .problem import Iterate, Subproblem
from .progress import progress_bar
from .quad_path import QuadFromDataSubproblem, quad_path_applies
from .results import FitResult, result_coef
from .working_set import WorkingSetOptions

__all__ = ["CONE_FORMS", "fit", "fit_resolved", "make_options", "check_fit_options", "check_n_features",
           "check_classes", "default_n_features",
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
:class:`~fsframe.errors.SolverWarning` is raised (ten times the certificate's default tolerance),
relative to the size of the objective's terms (the larger objective, or the sum of the
magnitudes of its terms when they cancel: an objective near 0 reached through terms of size 40,
a DCA step's, has no relative precision of its own). Both objectives are those the two models
attain (:meth:`~fsframe.problem.Subproblem.model_objective`)."""


def certificate_of(it: Iterate) -> dict:
    """The certificate of the subproblem that gave the returned model (``FitResult.certificate``):
    its status and backend, fsframe's KKT certificate on the *full* problem (``gap``,
    ``primal_residual``, ``dual_residual``: see :class:`~fsframe.backends.certificate.Certificate`),
    and how the working set went (``working_set`` groups of ``n_groups``, ``rounds``, and
    ``max_violation``: the largest reduced cost over the excluded features that their bounds do
    not excuse, relative to the size of its own terms — 0 when the exclusion was exact or nothing was
    excluded; ``fallback``: why a working set fell back to the full problem; ``full_resolve``:
    True when the returned model is the ``zero_tol`` cut's re-solve on the full problem, asked for
    past the working set; ``recheck``: a working set chosen by ``working_set="auto"`` ended
    without an OPTIMAL certificate, the full problem was solved once more and the better-certified
    answer kept (the lower attained objective on a status tie) — which one, with both statuses;
    ``working_set`` is then None when the full problem's was kept. The recheck runs once per
    fit: after it, the fit solves the full problem when the full answer won, and stops rechecking
    otherwise; a path's next point decides afresh; docs/working-sets.md)."""
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
        if rep.full_resolve:  # the zero_tol cut's re-solve on the full problem (not a working set's fallback)
            out["full_resolve"] = True
        if rep.recheck:  # "auto"'s working set uncertified: the full problem solved once more
            out["recheck"] = rep.recheck
    return out


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
    ``verify`` and compare the objectives the two models attain (each model's loss at its least
    slacks plus the penalty of its coefficients, :meth:`Subproblem.model_objective`: not the
    objectives of the solvers' points, which may differ by what each solver left in its slacks);
    warn when they disagree by more than :data:`VERIFY_TOL`."""
    data = sub.compiled.with_weights(**it.weights, sync=False) if it.weights else sub.compiled.data
    be = select_backend(verify, data.problem_class, quadratic=data.has_quadratic_objective)
    res = be.solve(data, options)
    other = sub.model_objective(res.x, it.weights, size=True) if res.ok and res.x is not None else None
    out = {"backend": be.name, "status": res.status.value, "objective": None if other is None else other[0]}
    if other is not None and it.objective is not None:
        other, size = other
        # relative to the size of the objectives' terms: an L1-SVM optimum of 5e-4 is compared to
        # 1e-5 of itself (a rule relative to max(1, |objective|) let a 2 % disagreement pass), a
        # DCA step's objective of 1e-7, reached through terms of size 40, to 1e-5 of 40
        scale = max(abs(it.objective), abs(other), size, sub.model_objective(it.x, it.weights, size=True)[1],
                    np.finfo(float).tiny)
        gap = (it.objective - other) / scale
        out.update(objective_gap=float(gap),
                   coef_distance=float(np.max(np.abs(sub.compiled.coef(res.x) - it.coef), initial=0.0)))
        if abs(gap) > VERIFY_TOL:
            warnings.warn(
                f"verify: backend {be.name!r} finds objective {other:.10g} for the last subproblem, "
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


def _backends(parts) -> str | None:
    """``FitResult.backend`` of a one-vs-rest fit: the classes' backend, or their distinct
    backends joined by ``+`` (``None`` when none solved)."""
    names = sorted({p.backend for p in parts if p.backend})
    return "+".join(names) or None


def validate_formulation(formulation, X, y, aux: AuxSolver) -> dict:
    """``formulation.validate`` on the training data; with the keyword ``aux`` (the fit's
    auxiliary solver) when the formulation declares the trait ``aux_solver``."""
    kw = {"aux": aux} if "aux_solver" in formulation.provides() else {}
    return dict(formulation.validate(X, y, **kw) or {})


def _explained(formulation, X, y, status, aux: AuxSolver):
    """The formulation's account of a first subproblem without a solution (the
    ``explain_failure`` protocol), or ``None``."""
    explain = getattr(formulation, "explain_failure", None)
    return None if explain is None else explain(X, y, status, aux)


def _run_loop(res: Resolved, sub: Subproblem, X, y, aux: AuxSolver, n_features, callback):
    """``res.loop.run`` on ``sub``; when the first subproblem does not end optimal, the
    formulation may say why in its own terms (``explain_failure``: MPM's ``delta`` above
    ``delta_max``), through the fit's auxiliary solver, and that error is raised instead."""
    first = [True]

    def watch(rec, it):
        if first and it is not None and it.ok and it.status is not Status.OPTIMAL:  # inaccurate: the model may know why
            err = _explained(res.formulation, X, y, it.status, aux)
            if err is not None:
                raise err
        first.clear()
        if callback is not None:
            callback(rec, it)

    try:
        return res.loop.run(sub, res.surrogate, n_features=n_features, callback=watch)
    except SolverFailedError as exc:
        if first and exc.partial is not None and exc.partial[2] is None:  # no iterate had a solution
            err = _explained(res.formulation, X, y, exc.status, aux)
            if err is not None:
                raise err from exc
            out = _retried(res, sub, n_features, watch, aux, exc)
            if out is not None:
                return out
        raise


def _retried(res: Resolved, sub: Subproblem, n_features, watch, aux: AuxSolver, failed: SolverFailedError):
    """The formulation's retries after a first subproblem without a solution (the
    ``frontier_retries`` protocol: each a ``(label, base)``, ``base`` a restated compiled problem
    and ``label`` what it changed, the formulation's ``built.info`` saying which): the loop's
    outcome on the first that solves, else ``None``. The failed attempts' statuses join the fit's
    statuses. When every retry fails, the subproblem is given back as first stated (the
    formulation restores its own state when its retries are exhausted) and the first failure's
    message lists the retries and their statuses. MEMPM's ``mempm_theta`` widens its margin
    inside the frontier (docs/mempm.md)."""
    retries = getattr(res.formulation, "frontier_retries", None)
    if retries is None or not sub.is_built:
        return None
    first, original, tried = failed, sub.compiled.base, []
    for k, (label, base) in enumerate(retries(sub.built, sub.compiled.base, sub.compiled)):
        aux.record(("frontier-retry", k), (failed.status,))
        sub.install(base)
        try:
            return res.loop.run(sub, res.surrogate, n_features=n_features, callback=watch)
        except SolverFailedError as exc:
            if exc.partial is None or exc.partial[2] is not None:
                raise
            failed = exc
            tried.append(f"{label} ({getattr(exc.status, 'value', exc.status)})")
    if tried:
        sub.install(original)
        first.args = (f"{first.args[0] if first.args else first}; retried at {', '.join(tried)}: none solved, "
                      "the model is left as first stated",) + first.args[1:]
    return None


def _binary_fit(res: Resolved, X, y_pm, backend: Backend, options: SolveOptions, n_features, fast, cone_form,
                keep_model, callback=None, ws: WorkingSetOptions = WorkingSetOptions(), verify=None,
                reuse=None, key=None) -> dict:
    aux = AuxSolver(backend, options)  # every solve besides the subproblem's goes through it
    info = validate_formulation(res.formulation, X, y_pm, aux)
    t0 = time.perf_counter()
    dense = _dense_em_parts(res, X, y_pm, backend, options, n_features, ws, keep_model, verify, callback, info, aux,
                            reuse, key)
    if dense is not None:  # the hinge EM family on arrays (None: not taken, or fell back; info says which)
        return dense
    if "dense_em_fallback" in info:  # a dense step failed: the compiled path, even when from_data=True forced it
        ws = attrs.evolve(ws, from_data=False)
    if info.get("dense_em_fallback", "").startswith(FALLBACK_RAISED):  # not a step's accuracy: warned of
        warnings.warn(f"the dense EM path fell back to the compiled path: {info['dense_em_fallback']} "
                      "(info['dense_em_fallback']; docs/backends.md)", SolverWarning, stacklevel=4)
    direct = _from_data(res, X, y_pm, backend, options, n_features, ws, keep_model, verify, callback, reuse, key)
    if direct is not None:
        return _from_data_parts(res, X, direct[0], direct[1], backend, info, aux, callback, time.perf_counter() - t0)

    def make() -> Subproblem:
        if ws.from_data is not False and quad_path_applies(res.formulation, res.terms):  # EM's steps from X
            return QuadFromDataSubproblem(res.formulation, X, y_pm, res.terms, backend, options, fast=fast,
                                          cone_form=cone_form, aux=aux, working_set=ws, force=ws.from_data is True)
        return Subproblem(res.formulation, X, y_pm, res.terms, backend, options, fast=fast, cone_form=cone_form,
                          aux=aux, working_set=ws)

    # ``reuse(key, res, make)`` (a parameter path, fsframe.path) hands out a subproblem it keeps
    # open across fits; otherwise the fit owns one
    sub = make() if reuse is None else reuse(key, res, make)
    sub.new_fit()  # a reused subproblem's recheck verdict was its previous point's
    try:
        out = _run_loop(res, sub, X, y_pm, aux, n_features, callback)
        certificate = certificate_of(out.iterate) if out.iterate.result is not None else {}
        if certificate and getattr(out.iterate, "cut_from", None) is not None:  # the zero_tol cut's re-solve
            certified_on(certificate, sub.certify_unfixed(out.iterate))
        if certificate and out.iterate.coef is not None:
            _returned_vs_certified(certificate, out.coef, out.iterate.coef, out.objective)
        if verify is not None and out.iterate.x is not None and sub.is_built:
            certificate["verify"] = _verify(sub, out.iterate, verify, options)
    finally:
        if reuse is None:
            sub.close()
    if sub.is_built:  # a loop that never solved the model (DSO-FS, filters) leaves it unbuilt
        info.update(sub.built.info)
        if out.iterate.x is not None and out.objective is not None:
            # the weights of the subproblem whose objective is reported: a surrogate-free loop's
            # objective (loss + this penalty) can be recomputed from the coefficients alone
            # (a zero_tol cut's re-solve: the weights it was cut from, not the inf that fixed the cut groups)
            unfixed = getattr(out.iterate, "cut_from", None)
            info["penalty_weights"] = sub.penalty_weights(out.iterate.weights if unfixed is None else unfixed.weights)
    if isinstance(sub, QuadFromDataSubproblem):  # EM's steps from X: how many, and those the backend took instead
        info.update(quad_solves=sub.quad_solves, quad_fallbacks=tuple(sub.fallbacks))
    solved_by = _solved_by(out.iterate.result)
    info.update(build_seconds=sub.build_seconds, compile_seconds=sub.compile_seconds,
                solve_seconds=float(sum(r.seconds for r in out.history)), stop_reason=out.reason,
                backend_version=(out.iterate.result.backend_version or None) if solved_by else None,
                **(out.selection or {}))
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
                backend=solved_by,
                n_iter=out.n_iter, converged=out.converged, history=out.history,
                statuses=aux.statuses + out.statuses, monotone=out.monotone, info=info, certificate=certificate,
                certified_coef=out.iterate.coef, groups=sub.compiled.slot.groups if sub.is_built else None,
                outcome=out)


def _cross_class_cut(coefs: np.ndarray, groups, n_groups: int, norm: str, n_features: int) -> tuple:
    """One-vs-rest's cut of the union of supports to ``n_features`` groups: each class's group
    norms (in the formulation's :attr:`~fsframe.Formulation.group_norm`) relative to that class's
    largest, the best over classes ranks a group, the ``n_features`` best are kept. ``coefs`` has
    shape ``(n_classes, *coef_shape)`` (a twin SVM's ``coef_shape`` is ``(2, n_features)``);
    ``groups`` maps each coefficient (flattened) to its group (the sparsity slot's map; ``None``:
    one coefficient per group). Returns the kept groups' indices and ``coefs`` with the other
    groups' coefficients set to zero (a copy)."""
    flat = coefs.reshape(coefs.shape[0], -1)
    g = np.arange(flat.shape[1]) if groups is None else np.asarray(groups)
    if g.shape != (flat.shape[1],) or (g.size and int(g.max()) >= n_groups):
        raise UnsupportedProblemError(
            f"one-vs-rest with n_features: the per-class coefficients (shape {coefs.shape[1:]}) do not map onto "
            f"the {n_groups} feature groups; fit each class yourself, or without n_features")
    a = np.abs(flat)
    t = np.stack([np.bincount(g, weights=row if norm == "l1" else row * row, minlength=n_groups) for row in a])
    t = t if norm == "l1" else np.sqrt(t)
    scale = np.max(t, axis=1, keepdims=True)
    score = np.max(t / np.where(scale > 0, scale, 1.0), axis=0)
    keep = np.argsort(-score, kind="stable")[:n_features]
    dropped = np.ones(n_groups, dtype=bool)
    dropped[keep] = False
    cut = flat.copy()
    cut[:, dropped[g]] = 0.0
    return keep, cut.reshape(coefs.shape)


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
        :class:`~fsframe.loops.base.IterRecord`: ``k``, ``objective``, ``n_nonzero``, ``seconds``;
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


def _one_class(res: Resolved, parts: dict, certified: list, common: dict, c) -> tuple:
    """One class's binary fit (``parts`` from :func:`_binary_fit`): ``(FitResult, the slot's group
    map)``; its certified coefficients go to ``certified``."""
    certified.append(parts.pop("certified_coef"))
    groups = parts.pop("groups")
    if parts.pop("transform") is not None:
        raise UnsupportedProblemError(
            f"formulation {res.formulation.name!r} maps the samples itself (its own kernel), which one-vs-rest "
            "cannot share across classes: fit it on two classes, or use a linear kernel")
    return FitResult(classes=("rest", c), **parts, **common), groups


def _resolve_cut(res: Resolved, r: FitResult, out, sub: Subproblem | None, keep: np.ndarray, coef_cut, certified):
    """Class ``r`` after the union of the classes' supports was cut to the groups ``keep``: its
    subproblem re-solved at the returned model's weights (its own features; the groups the loop
    dropped stay fixed at zero) with the groups outside ``keep`` fixed at zero too
    (``Subproblem.restricted``), so that the model returned is the optimum on the class's features
    that survive the cut, its objective the one it attains and its certificate its own. When the loop computed its model itself (no solved point) or the re-solve
    fails, the coefficients are cut without re-solving: no objective, a certificate marked ``cut``,
    and a warning for the failure."""
    lost = int(np.count_nonzero(r.support & ~keep))
    info = {**r.info, "n_features_dropped": r.info.get("n_features_dropped", 0) + lost,
            "n_features_union_cut": lost}
    it = out.iterate
    if sub is not None and it.x is not None and sub.is_built:
        re = sub.restricted(it, keep & r.support)
        if re.ok:
            coef = re.coef.reshape(np.shape(r.coef))
            objective = res.loop.objective_of(sub, re, res.surrogate, keep)
            certificate = certificate_of(re)
            if r.certificate.get("path") == "dense_em":  # the dense EM path's re-solve: its record as the fit's
                certificate.update(path="dense_em", objective=float(re.result.objective))
            _returned_vs_certified(certificate, coef, re.coef, objective)
            intercept = re.intercept
            intercept = float(intercept[0]) if intercept.size == 1 else intercept
            return attrs.evolve(r, coef=coef, intercept=intercept, support=r.support & keep, objective=objective,
                                certificate=certificate, statuses=r.statuses + (re.status,),
                                info={**info, "union_cut_resolved": True})
        warnings.warn(f"one-vs-rest: class {r.classes[1]!r}'s re-solve on the {int(keep.sum())} features kept across "
                      f"classes ended with status {re.status.value} ({re.result.message}); its coefficients are cut "
                      "without re-solving and no objective is reported", SolverWarning, stacklevel=4)
        info = {**info, "union_cut_resolved": False}
        statuses = r.statuses + (re.status,)
    else:
        statuses = r.statuses
    return attrs.evolve(r, coef=coef_cut, support=r.support & keep, objective=None, statuses=statuses,
                        certificate=_recut(r.certificate, coef_cut, certified, None), info=info)


def _one_vs_rest(res: Resolved, per: list, certified: list, groups, outcomes: list, held: dict, classes,
                 n_features, auto, t_start, common) -> FitResult:
    """The one-vs-rest result of the classes' fits ``per``: the union of their supports, cut to
    ``n_features`` groups across classes when larger (:func:`_cross_class_cut`), each class that
    lost groups re-solved on what it keeps (:func:`_resolve_cut`)."""
    supports = np.array([r.support for r in per])
    support = supports.any(axis=0)
    coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    if n_features is not None and support.sum() > n_features:
        kept, cut = _cross_class_cut(coefs, groups, support.size, getattr(res.formulation, "group_norm", "l2"),
                                     n_features)
        support = np.zeros_like(support)
        support[kept] = True
        per = [r if not np.any(r.support & ~support) else
               _resolve_cut(res, r, outcomes[i], held.get(c), support, cut[i], certified[i])
               for i, (r, c) in enumerate(zip(per, classes))]
        coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    info = {"seconds": time.perf_counter() - t_start,
            "build_seconds": sum(r.info["build_seconds"] for r in per),
            "compile_seconds": sum(r.info["compile_seconds"] for r in per),
            "solve_seconds": sum(r.info["solve_seconds"] for r in per),
            "strategy": "one-vs-rest", **({} if auto is None else {"n_features_default": auto})}
    if any("quad_solves" in r.info for r in per):  # EM's steps from X, summed over the classes
        info["quad_solves"] = sum(r.info.get("quad_solves", 0) for r in per)
        info["quad_fallbacks"] = tuple(f"class {c!r}: {msg}" for r, c in zip(per, classes)
                                       for msg in r.info.get("quad_fallbacks", ()))
    objs = [r.objective for r in per]
    certificate = {"per_class": tuple(r.certificate for r in per)}
    return FitResult(
        coef=coefs, intercept=np.array([r.intercept for r in per], dtype=float), support=support,
        objective=None if any(o is None for o in objs) else float(sum(objs)),
        n_iter=max(r.n_iter for r in per), converged=all(r.converged for r in per),
        history=tuple(h for r in per for h in r.history), statuses=tuple(s for r in per for s in r.statuses),
        monotone=all(r.monotone for r in per), classes=classes, info=info, per_class=tuple(per),
        certificate=certificate, backend=_backends(per), **common)
