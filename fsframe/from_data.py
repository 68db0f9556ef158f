"""The fit's path that solves the subproblem straight from ``X`` (the formulation's ``from_data``
protocol, docs/working-sets.md "Many rows"): whether it applies (:func:`_from_data`), the loop's
``zero_tol`` cut of its solution (:func:`_settle_cut`) and the binary fit's parts
(:func:`_from_data_parts`)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np

from .auxiliary import AuxSolver
from .backends.base import Backend, SolveOptions
from .enums import Status
from .errors import ConvergenceWarning, PluginError, SolverWarning, UnsupportedProblemError
from .fit_report import _returned_vs_certified, _solved_by
from .formulation import FromDataSolution, PathStart
from .method import Resolved
from .quad_path import quad_path_applies
from .working_set import WorkingSetOptions


def _from_data(res: Resolved, X, y_pm, backend: Backend, options: SolveOptions, n_features, ws: WorkingSetOptions,
               keep_model, verify, callback=None, reuse=None, key=None):
    """The subproblem solved straight from ``X`` (the formulation's ``from_data`` protocol), or
    ``None`` for the compiled path: when ``ws.from_data`` allows it, the loop is one convex solve
    (its ``convex_weights``), and nothing asks for what only the compiled path has (``n_features``,
    ``keep_model``, ``verify``, a user's ``callback``, which takes the loop's iterate). Forced
    (``from_data=True``), every obstacle is an :class:`~fsframe.errors.UnsupportedProblemError`
    naming it. Along a path (``reuse`` with a ``from_data_starts`` dict, :func:`fsframe.path`),
    a ``solve_from_data`` that takes ``start`` gets a :class:`~fsframe.formulation.PathStart`
    with the previous point's ``FromDataSolution.start`` of the binary problem ``key``, and this
    point's is kept for the next."""
    gate = _from_data_gate(res, X.shape[1], n_features, ws, keep_model, verify, callback)
    if gate is None:
        return None
    weights, why = gate
    forced = ws.from_data is True
    name = res.formulation.name
    if why is not None:
        if forced:
            raise UnsupportedProblemError(f"working_set=WorkingSetOptions(from_data=True): {why}; use from_data='auto'")
        return None
    starts = getattr(reuse, "from_data_starts", None)
    along = {} if starts is None or not _takes_start(res.formulation.solve_from_data) else \
        {"start": PathStart(starts.get(key))}
    sol = res.formulation.solve_from_data(X, y_pm, res.terms, weights, backend=backend.name, options=options,
                                          force=forced, **along)
    if along:
        starts[key] = getattr(sol, "start", None)
    if sol is not None and not isinstance(sol, FromDataSolution):
        raise PluginError(f"formulation {name!r}: solve_from_data returned {type(sol).__name__}, not a "
                          "fsframe.formulation.FromDataSolution or None")
    if sol is None and forced:
        raise PluginError(f"formulation {name!r}: solve_from_data declined with force=True (it must solve or raise)")
    return None if sol is None else (sol, weights)


def _from_data_gate(res: Resolved, n_groups: int, n_features, ws: WorkingSetOptions, keep_model, verify,
                    callback):
    """The framework's half of the rule of :func:`_from_data` (the formulation's
    ``solve_from_data`` then solves or declines): ``None`` when the path is not considered
    (``from_data=False``, ``working_set=False`` unless forced, or the subproblem's quad path
    instead), else ``(weights, why)``: the loop's ``convex_weights`` and why the path does not
    apply (``None`` when it does)."""
    forced = ws.from_data is True
    if ws.from_data is False or (ws.mode is False and not forced):
        return None
    weights_of = getattr(res.loop, "convex_weights", None)
    weights = weights_of(res.surrogate, n_groups) if weights_of is not None else None
    if weights is None and quad_path_applies(res.formulation, res.terms):  # the subproblem's quad path instead
        return None
    why = None
    if "from_data" not in res.formulation.provides():
        why = f"formulation {res.formulation.name!r} does not solve its subproblem from X (the from_data protocol)"
    elif weights is None:
        why = f"loop {res.loop.name!r} is not one convex solve with an L1 penalty (single, penalty='l1')"
    elif n_features is not None:
        why = "n_features asks for the exactly-r rule, whose re-solve needs the compiled problem"
    elif keep_model:
        why = "keep_model asks for the Pyomo model, which this path never builds"
    elif verify is not None:
        why = "verify= re-solves the compiled subproblem on a second backend"
    elif getattr(callback, "user_callback", callback) is not None:
        why = "callback= is called with the loop's iterate, which this path never builds"
    return weights, why


def from_data_along_path(res: Resolved, shape: tuple, backend: str, options: SolveOptions, n_features,
                         ws: WorkingSetOptions, *, keep_model=False, verify=None, callback=None) -> bool:
    """Whether :func:`fsframe.path`'s points of ``res`` at ``shape`` (samples, features) are solved
    from ``X``: the rule of :func:`_from_data` (:func:`_from_data_gate`) with, in place of
    ``solve_from_data``'s own decline, the formulation's ``from_data_on_path(m, n, *, terms,
    weights, backend, options)`` (the hinge's: on HiGHS, no ``time_limit``, from 500 samples and as
    many features); ``backend`` is the name the fit resolved. Forced (``from_data=True``) every
    point is solved from ``X`` or the fit raises. The study's tuning sweep asks this to choose its
    order (docs/working-sets.md, "Many rows")."""
    gate = _from_data_gate(res, shape[1], n_features, ws, keep_model, verify, callback)
    if gate is None or gate[1] is not None:
        return False
    if ws.from_data is True:
        return True
    on_path = getattr(res.formulation, "from_data_on_path", None)
    return on_path is not None and bool(on_path(*shape, terms=res.terms, weights=gate[0], backend=backend,
                                                options=options))


def _takes_start(solve) -> bool:
    """Whether a ``solve_from_data`` takes the ``start`` keyword (:class:`~fsframe.formulation.PathStart`;
    one written before it existed does not, and is called without it)."""
    try:
        params = inspect.signature(solve).parameters
    except (TypeError, ValueError):
        return False
    return "start" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _group_norms(coef: np.ndarray) -> np.ndarray:
    """The groups' norms of a coefficient array (the last axis indexes the groups)."""
    return np.abs(coef) if coef.ndim == 1 else np.sqrt((coef.reshape(-1, coef.shape[-1]) ** 2).sum(axis=0))


def _settle_cut(res: Resolved, sol, coef, t, support, lin, info: dict):
    """The loop's ``zero_tol`` cut of a :class:`~fsframe.formulation.FromDataSolution`, by the
    compiled loop's rule (:func:`fsframe.loops.settle.settle`): when the whole penalty is within the loop's ``tol``
    of the objective, the empty support is proposed first (``sol.restricted`` with nothing kept);
    then the cut point is taken when ``sol.recertify`` certifies it; else the subproblem is solved
    again with the cut groups fixed at zero (``sol.restricted``) and taken when it is certified
    OPTIMAL and its objective rises by at most ``tol`` (relative, and 1e-9 absolute; an inexact
    re-solve within tol is refused, as on the compiled path's working sets); its certificate is then of that restricted
    problem, and says so (``certified_on = "cut problem"``: the protocol gives no way to certify
    the re-solve's point on the problem without the cut). Returns ``(coef, intercept, support,
    objective, certificate, status)`` of the point taken, or ``None`` for the solution as it is
    (with a ConvergenceWarning when a cut was refused)."""
    tol = float(getattr(res.loop, "tol", 1e-5))
    base = sol.objective
    dropped = int(np.count_nonzero((t > 0) & ~support))
    if dropped:
        info["zero_tol_cut"] = dropped

    def within(new) -> bool:  # only a certified OPTIMAL re-solve settles the cut (as on a working set)
        return new.status is Status.OPTIMAL and new.objective is not None and base is not None \
            and new.objective - base <= tol * abs(base) + 1e-9 * (1.0 + abs(base))

    def taken(new, keep):  # a restricted re-solve's answer: its certificate is of the cut problem
        info["zero_tol_cut_rise"] = float(new.objective - base)
        info["zero_tol_cut_verified"] = True
        new_coef = np.asarray(new.coef, dtype=float)
        return (new_coef, new.intercept, keep, new.objective, {**new.certificate, "certified_on": "cut problem"},
                new.status)

    penalty = float(np.sum(lin * t))
    if support.any() and sol.restricted is not None and getattr(res.formulation, "sparse", True) \
            and base is not None and penalty <= tol * abs(base):
        # the whole penalty is solver noise (an L1-SVM whose C is so small that w = 0 is optimal):
        # the relative rule cannot tell noise from signal, so propose the empty support
        empty = np.zeros_like(support)
        re = sol.restricted(empty)
        if within(re):
            info["zero_tol_cut"] = int(np.count_nonzero(t > 0))
            return taken(re, empty)
        info["zero_support_probe"] = re.status.value
    if not dropped:  # nothing to cut: the solution as it is
        return None
    if sol.recertify is not None:
        cut_coef = coef * support
        objective, cert = sol.recertify(cut_coef)
        if cert.get("status") == "optimal":  # the duals still prove the cut point (1e-10 zeros)
            info["zero_tol_cut_resolved"] = False
            return cut_coef, sol.intercept, support, objective, dict(cert), Status.OPTIMAL
    if sol.restricted is not None:
        info["zero_tol_cut_resolved"] = True
        re = sol.restricted(support)
        if within(re):
            return taken(re, support & (_group_norms(np.asarray(re.coef, dtype=float)) > 0))
        if re.objective is not None and base is not None:
            info["zero_tol_cut_rise"] = float(re.objective - base)
    info["zero_tol_cut_verified"] = False
    warnings.warn(
        f"{res.loop.name}: cutting {dropped} small groups (zero_tol={getattr(res.loop, 'zero_tol', 1e-6):g}) "
        "raises the subproblem's optimum beyond tol; returning the uncut solution, whose small weights are "
        "part of the optimum (a smaller zero_tol or a simplex backend gives a cleaner support)",
        ConvergenceWarning, stacklevel=6)
    return None


def _from_data_parts(res: Resolved, X, sol, weights: dict, backend: Backend, info: dict, aux: AuxSolver, callback,
                     seconds: float) -> dict:
    """:func:`_binary_fit`'s parts from a :class:`~fsframe.formulation.FromDataSolution` solved on
    ``X``: the loop's ``zero_tol`` cut (:func:`_settle_cut`, the compiled loop's rule, on each
    group's contribution ``|w_j| ||X_j - mean_j||``), one history record, the certificate with
    ``path = "from_data"``."""
    from .loops.records import IterRecord
    from .loops.selection import columns_scale, contribution, support_of

    coef = np.asarray(sol.coef, dtype=float)
    t = _group_norms(coef)
    # the from_data protocol's models fit a free intercept (FromDataSolution.intercept): centred norms
    support = support_of(contribution(t, columns_scale(X, t.size, centred=True)), getattr(res.loop, "zero_tol", 1e-6))
    lin = np.asarray(weights["lin"], dtype=float)
    status, certified = sol.status, coef
    objective, cert, intercept = sol.objective, dict(sol.certificate), sol.intercept
    if support.any() or ((t > 0) & ~support).any():  # the empty support proposed, or a cut
        took = _settle_cut(res, sol, coef, t, support, lin, info)
        if took is None:  # the uncut solution, with the groups above 1e-12 of the largest norm
            support = support_of(t, 1e-12)
            if (support != (t > 0)).any():
                coef = coef * support  # the last axis indexes the groups
                if sol.recertify is not None:
                    objective = sol.recertify(coef)[0]
        else:
            coef, intercept, support, objective, cert, status = took
            certified, t = coef, _group_norms(coef)
    loss = None if objective is None else float(objective - np.sum(lin[support] * t[support]))
    record = IterRecord(0, objective, int(support.sum()), status, seconds, None, loss)
    if callback is not None:  # the progress bar's only (it reads the record): a user's declines the path
        callback(record, None)
    rounds = tuple(dict(r) for r in sol.rounds)
    certificate = {"status": status.value, "backend": sol.backend,
                   "gap": float(cert.get("gap", np.nan)), "primal_residual": float(cert.get("primal_residual", np.nan)),
                   "dual_residual": float(cert.get("dual_residual", np.nan)), "path": "from_data",
                   "working_set": sol.groups, "n_groups": int(t.size), "rounds": len(rounds),
                   "added": int(sum(r.get("added_features", 0) for r in rounds)),
                   "max_violation": float(cert.get("max_violation", 0.0))}
    certificate.update({k: v for k, v in cert.items() if k not in certificate and k != "status"})
    _returned_vs_certified(certificate, coef, certified, objective)
    if status is not Status.OPTIMAL:
        warnings.warn(f"{res.formulation.name}: the subproblem solved from X is certified only to "
                      f"gap {certificate['gap']:.1e}, residuals {certificate['primal_residual']:.1e} / "
                      f"{certificate['dual_residual']:.1e}", SolverWarning, stacklevel=5)
    info.update(sol.info, build_seconds=0.0, compile_seconds=0.0, solve_seconds=seconds, stop_reason="single solve",
                backend_version=sol.backend_version or backend.version(), solver_path="from_data",
                from_data_rounds=rounds)
    if objective is not None:
        info["penalty_weights"] = {"lin": lin, "lin_w": None, "quad": None, "groups": np.arange(t.size)}
    intercept = np.asarray(intercept, dtype=float)
    intercept = float(intercept.ravel()[0]) if intercept.size == 1 else intercept
    return dict(coef=coef, intercept=intercept, support=support, transform=None, objective=objective,
                backend=_solved_by(sol), n_iter=1, converged=True, history=(record,),
                statuses=aux.statuses + (status,), monotone=True, info=info, certificate=certificate,
                certified_coef=certified, groups=None, outcome=None)
