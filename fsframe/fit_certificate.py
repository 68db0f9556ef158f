"""What a fit says of the subproblem that gave its model: :func:`certificate_of` (the
``FitResult.certificate`` of a binary fit), :func:`_recut` (a certificate judged again after
one-vs-rest's cross-class cut), and the ``verify=`` second opinion (:func:`_verify_backend`, checked
before the fit runs; :func:`_verify`, the re-solve on that backend against :data:`VERIFY_TOL`).
:mod:`fsframe.fitting` re-exports every name of ``__all__``."""

from __future__ import annotations

import warnings

import numpy as np

from .backends.base import Backend, SolveOptions
from .errors import BackendUnavailableError, IncompatibleComponentsError, SolverWarning, UnknownComponentError
from .fit_report import _returned_vs_certified
from .method import Resolved, select_backend
from .problem import Iterate, Subproblem

__all__ = ["VERIFY_TOL", "certificate_of"]


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

