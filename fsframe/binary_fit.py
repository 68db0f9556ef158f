"""One binary (or native multi-class, or regression) subproblem's fit: :func:`_binary_fit` takes the
dense EM path (:mod:`fsframe.dense_fit`), the path from the data (:mod:`fsframe.from_data`), or
builds the subproblem and runs the outer loop on it (:func:`_run_loop`), with the formulation's
account of a first subproblem without a solution (:func:`_explained`) and its retries
(:func:`_retried`); the certificate and the ``verify=`` re-solve from
:mod:`fsframe.fit_certificate`. :func:`fsframe.fitting.fit_resolved` calls it once, or once per
class (:mod:`fsframe.one_vs_rest`); :mod:`fsframe.fitting` re-exports every name of ``__all__``."""

from __future__ import annotations

import time
import warnings

import attrs
import numpy as np

from .auxiliary import AuxSolver
from .backends.base import Backend, SolveOptions
from .dense_fit import FALLBACK_RAISED, _dense_em_parts
from .enums import Status
from .errors import SolverFailedError, SolverWarning
from .fit_certificate import _verify, certificate_of
from .fit_report import _returned_vs_certified, _solved_by, certified_on
from .from_data import _from_data, _from_data_parts
from .method import Resolved
from .problem import Subproblem
from .quad_path import QuadFromDataSubproblem, quad_path_applies
from .working_set import WorkingSetOptions

__all__ = ["validate_formulation"]


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

