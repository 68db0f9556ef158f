"""The fit's dense EM path: the weighted hinge family's EM loop (``em-l0``, ``arom``) on
:class:`~fsframe.dense_em.DenseHingeSubproblem` instead of the compiled Pyomo subproblem, taken by
:func:`fsframe.fit` where it applies (:func:`_dense_em_parts`), with a fallback to the compiled
path when a step is not certified (docs/backends.md, "The EM subproblem on arrays")."""

from __future__ import annotations

import attrs
import numpy as np
import scipy.sparse as sp

from .auxiliary import AuxSolver
from .backends.base import Backend, SolveOptions
from .backends.diag_qp import _one_blas_thread
from .dense_em import DenseHingeSubproblem
from .enums import Status
from .errors import FsframeError, SolverFailedError, UnsupportedProblemError
from .fit_report import _returned_vs_certified
from .loops.em import EM
from .method import Resolved
from .plugins import get_registry
from .working_set import WorkingSetOptions

DENSE_EM_MAX_ROWS = 2000
"""The most samples at which ``from_data="auto"`` takes the dense EM path (its dual has one
multiplier per sample, solved by a dense active set; docs/performance.md, issue 19's ninth pass)."""

DENSE_EM_WIDE_MAX_ROWS = 6000
"""The most samples at which ``from_data="auto"`` takes the dense EM path for a kernel map (the fit's
``kernel`` is not ``None``: ``X`` is ``m x m``, its features the training samples), above
:data:`DENSE_EM_MAX_ROWS`. Such a dual starts from the crash (:func:`fsframe.dense_rules.crash_applies`);
the compiled path builds an ``m x m`` Pyomo model (1.9 GB against the dense path's 1.1 GB at 3 947
samples). The map's support need not collapse: at sigma 0.5 and 1 with C = 10 it keeps about half
the samples (974 of 2 000), and at 1 000 rows the dense path can fail its certificate and fall back
after far more CPU than the compiled path (158 s against 7.7 s; docs/paper002-dual.md, "What a fit
costs"). The dense path's peak memory is measured at about 3.8 ``m^2`` doubles after construction
and 6.7 ``m^2`` during the first solve (about 2 GB at 6 000 rows; docs/backends.md). A wide linear
``X`` (``n >= m`` without a kernel) keeps the :data:`DENSE_EM_MAX_ROWS` limit: the wider rule is
not measured there."""


def dense_em_takes_rows(shape, kernel: bool = False) -> bool:
    """The size part of ``from_data="auto"``'s rule: at most :data:`DENSE_EM_MAX_ROWS` rows, or, for a
    kernel map (``kernel``), at most :data:`DENSE_EM_WIDE_MAX_ROWS`."""
    m, _ = shape
    return m <= DENSE_EM_MAX_ROWS or (kernel and m <= DENSE_EM_WIDE_MAX_ROWS)


DENSE_EM_BACKEND = "highs"
"""The backend ``fit`` picks for the EM QP by default; ``from_data="auto"`` takes the dense path only
when the fit's backend is this one (a backend the user chose otherwise keeps the compiled path)."""


def dense_em_applies(res: Resolved) -> bool:
    """Whether the method is the weighted hinge EM family the dense path solves: the ``hinge``
    formulation with only the quadratic slot term, driven by :class:`~fsframe.loops.em.EM`. Both
    exactly those classes: a subclass of either may change the model (its build, bounds) or read
    what only the compiled subproblem has, so it keeps the compiled path (:func:`_subclassed`)."""
    return _family(res) and _subclassed(res) is None


def _family(res: Resolved) -> bool:
    return isinstance(res.loop, EM) and res.formulation.name == "hinge" and set(res.terms) == {"quad"}


def _subclassed(res: Resolved) -> str | None:
    """Which of the family's classes ``res`` subclasses (``None``: neither)."""
    if type(res.loop) is not EM:
        return f"the loop is {type(res.loop).__name__}, a subclass of EM"
    try:
        hinge = get_registry().get("formulation", "hinge")
    except FsframeError:  # the hinge's plugin is disabled or conflicting: not the registered hinge
        hinge = None
    if type(res.formulation) is not hinge:
        return f"the formulation is {type(res.formulation).__name__}, not the registered hinge's class"
    return None


def _obstacle(X, backend: Backend, options: SolveOptions, keep_model, verify, callback, reuse) -> str | None:
    """Why the dense path cannot take this fit even when forced (``None``: it can)."""
    if reuse is not None and not getattr(reuse, "holds_only", False):
        return "fsframe.path carries each compiled subproblem from point to point"
    if sp.issparse(X):
        return "X is sparse (the dense EM path works on a dense array)"
    if keep_model:
        return "keep_model asks for the Pyomo model, which this path never builds"
    if verify is not None:
        return "verify= re-solves the compiled subproblem on a second backend"
    if getattr(callback, "user_callback", callback) is not None:
        return "callback= would see the dense path's iterates and again the compiled path's on a fallback"
    if options.time_limit is not None or options.backend_options:
        return "time_limit / backend_options are a backend's options, which the dense path has none of"
    return None


def _dense_em_parts(res: Resolved, X, y_pm, backend: Backend, options: SolveOptions, n_features,
                    ws: WorkingSetOptions, keep_model, verify, callback, info: dict, aux: AuxSolver, reuse=None,
                    key=None) -> dict | None:
    """:func:`fsframe.binary_fit._binary_fit`'s parts from the EM loop run on
    :class:`~fsframe.dense_em.DenseHingeSubproblem`, or ``None`` for the compiled path.

    Taken when ``ws.from_data`` is ``"auto"`` (and ``working_set`` is ``"auto"``: neither False nor
    True, which asks for the compiled path's working set), the method is the
    weighted hinge EM family (:func:`dense_em_applies`), ``X`` is dense with at most
    :data:`DENSE_EM_MAX_ROWS` rows, or a kernel map's with at most :data:`DENSE_EM_WIDE_MAX_ROWS`
    (:func:`dense_em_takes_rows`), the backend is :data:`DENSE_EM_BACKEND`, and nothing asks for
    what only the compiled path has (``keep_model``, ``verify``, a user's ``callback``,
    ``time_limit``, ``backend_options``, :func:`fsframe.path`); forced by ``from_data=True`` (any
    backend, any size), where
    each remaining obstacle is an :class:`~fsframe.errors.UnsupportedProblemError` naming it.

    Fallback: when a step of the dense run is not certified OPTIMAL (a step without a solution
    raises whatever the loop's ``raise_on_failure``: the compiled re-run honours it), or the
    returned model is not when judged again, or (``"auto"`` only) the run asks for what only the
    compiled subproblem has (an ``AttributeError`` of the dense subproblem itself, or an
    :class:`~fsframe.errors.UnsupportedProblemError`; any other ``AttributeError`` is raised), the
    fit is run again on the compiled path; ``info["dense_em_fallback"]`` says why (the first
    uncertified step and its own message), :func:`fsframe.fit` warns with it
    (:class:`~fsframe.errors.SolverWarning`), and this returns ``None``. The run holds BLAS to one thread, as the compiled
    path's dual QP does."""
    forced = ws.from_data is True
    if ws.from_data is False or (isinstance(ws.mode, bool) and not forced) or not _family(res):
        return None
    sub_why = _subclassed(res)
    if sub_why is not None:
        if forced:
            raise UnsupportedProblemError(f"working_set=WorkingSetOptions(from_data=True): {sub_why}; the dense "
                                          "EM path solves the plain hinge EM only (a subclass may change the "
                                          "model); use from_data='auto' (the compiled path)")
        return None
    why = _obstacle(X, backend, options, keep_model, verify, callback, reuse)
    if why is not None:
        if forced:
            raise UnsupportedProblemError(f"working_set=WorkingSetOptions(from_data=True): {why}; use "
                                          "from_data='auto'")
        return None
    if not forced and (not dense_em_takes_rows(X.shape, res.kernel is not None) or backend.name != DENSE_EM_BACKEND):
        return None
    def make() -> DenseHingeSubproblem:
        return DenseHingeSubproblem(X, y_pm, res.formulation.C)

    # one-vs-rest with n_features holds each class's subproblem, to re-solve a class that the union
    # cut leaves fewer features (fsframe.one_vs_rest._resolve_cut: DenseHingeSubproblem.restricted)
    sub = make() if reuse is None else reuse(key, res, make)
    # the run raises on a step without a solution (the fallback re-runs the fit under the user's
    # raise_on_failure); each step that is not certified OPTIMAL is kept to name it in the record
    loop = res.loop if res.loop.raise_on_failure else attrs.evolve(res.loop, raise_on_failure=True)
    uncertified = []

    def watch(rec, it):
        if it.status is not Status.OPTIMAL:
            uncertified.append((rec.k, it.result.message if it.result is not None else it.status.value))

    # one BLAS thread, as the compiled path's dual QP (docs/performance.md): the products here
    # (the crash's F @ F.T, the dual's m x m steps, the certificate) are small
    with _one_blas_thread():
        try:
            out = loop.run(sub, res.surrogate, n_features=n_features, callback=watch)
        except SolverFailedError as exc:
            info["dense_em_fallback"] = f"a dense step failed: {exc}"
            return None
        except (AttributeError, UnsupportedProblemError) as exc:
            if forced or not _needs_compiled(exc, sub):
                raise  # an AttributeError elsewhere is a bug of the run: not hidden behind a fallback
            # "auto": something in the run needs what only the compiled subproblem has
            info["dense_em_fallback"] = f"{FALLBACK_RAISED} {type(exc).__name__}: {exc}"
            return None
        finally:
            if reuse is None:
                sub.close()
        if uncertified or out.iterate.status is not Status.OPTIMAL or out.iterate.x is None:
            step, msg = uncertified[0] if uncertified else (out.n_iter, out.reason)
            info["dense_em_fallback"] = f"step {step} not certified optimal ({msg})"
            return None
        parts = _parts(res, sub, out, info, aux)
    if parts is None:
        info["dense_em_fallback"] = "the returned model is not certified on the full problem"
    return parts


FALLBACK_RAISED = "the dense run raised"
"""How ``info["dense_em_fallback"]`` begins when the dense run raised (the fallback ``fit`` warns of:
the others are a step's accuracy running out, said in ``info`` only; docs/backends.md, "Fallback")."""


def _needs_compiled(exc: Exception, sub: DenseHingeSubproblem) -> bool:
    """Whether ``exc`` says the run asked for what only the compiled subproblem has: an
    :class:`~fsframe.errors.UnsupportedProblemError`, or an ``AttributeError`` for an attribute
    the dense subproblem ``sub`` itself lacks (``exc.obj is sub``); any other ``AttributeError``
    propagates."""
    return isinstance(exc, UnsupportedProblemError) or getattr(exc, "obj", None) is sub


def _parts(res: Resolved, sub: DenseHingeSubproblem, out, info: dict, aux: AuxSolver) -> dict | None:
    """The fit's parts of a dense run ``out``, its certificate judged afresh on the returned
    iterate (the returned model, the weights it was solved at, its multipliers); ``None`` when
    that judgement is not OPTIMAL."""
    it = out.iterate
    q = np.asarray(it.weights["quad"], dtype=float)
    w, b = np.asarray(it.coef, dtype=float), float(it.intercept[0])
    cert = sub.certificate(q, w, b, it.result.duals["lam"])
    if not cert["optimal"]:
        return None
    certificate = {"status": Status.OPTIMAL.value,
                   "backend": sub.backend_name, "gap": float(cert["gap"]),
                   "primal_residual": max(float(cert["equality"]), float(cert["box"])),
                   "dual_residual": float(cert["stationarity"]), "path": "dense_em", "objective": float(cert["primal"]),
                   "working_set": None, "n_groups": int(sub.n_groups), "rounds": 0, "added": 0, "max_violation": 0.0}
    unfixed = getattr(it, "cut_from", None)
    if unfixed is not None:  # the zero_tol cut's re-solve: certified on the problem with the cut groups fixed
        certificate["certified_on"] = "cut problem"
    _returned_vs_certified(certificate, out.coef, it.coef, out.objective)
    weights = (it if unfixed is None else unfixed).weights["quad"]
    quad = np.where(np.isfinite(weights), weights, 0.0)
    info.update(build_seconds=0.0, compile_seconds=0.0, solve_seconds=float(sum(r.seconds for r in out.history)),
                stop_reason=out.reason, backend_version=None, solver_path="dense_em", dense_em_pivots=sub.pivots,
                penalty_weights={"lin": None, "lin_w": None, "quad": quad, "groups": np.arange(sub.n_groups)},
                **(out.selection or {}))
    return dict(coef=np.asarray(out.coef, dtype=float).reshape(sub.n_groups), intercept=float(b),
                support=out.support, transform=None, objective=out.objective, backend=None, n_iter=out.n_iter,
                converged=out.converged, history=out.history, statuses=aux.statuses + out.statuses,
                monotone=out.monotone, info=info, certificate=certificate, certified_coef=it.coef,
                groups=np.arange(sub.n_groups), outcome=out)
