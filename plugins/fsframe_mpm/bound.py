"""The largest feasible worst-case bound (Lanckriet et al.'s MPM, paper 000 §2.1 eqs. 3-5), solved
through the fit's auxiliary solver (refined on another backend when inaccurate) and cached per data
set."""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections import OrderedDict

import attrs
import numpy as np
from numpy.typing import NDArray

from fsframe import AuxSolver, ProblemClass, Status
from fsframe.backends.base import SolveOptions, SolveResult
from fsframe.canonical import ProblemData
from fsframe.plugins import backends_for
from fsframe.errors import DataWarning, SolverFailedError
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_soc, add_sparsity_slot, var_list

from .moments import DEFAULT_RHO, ClassMoments, _singular_classes, class_moments, delta_of

# ------------------------------------------------------------------------------ Lanckriet MPM
@attrs.frozen(eq=False)
class LargestBound:
    """Lanckriet et al.'s MPM on the data: the largest worst-case bound and its classifier.

    ``kappa = 1 / min(||F_1'w|| + ||F_2'w||)`` over ``w'(mu_1 - mu_2) = 1``; ``delta`` is the
    bound ``kappa^2 / (1 + kappa^2)``; ``b = w'mu_1 - kappa ||F_1'w||``.
    """

    kappa: float
    delta: float
    w: NDArray
    b: float
    t: tuple  # (||F_1'w||, ||F_2'w||)
    status: object
    backend: str
    statuses: tuple = ()  # every solve it took, e.g. (OPTIMAL_INACCURATE on ecos, OPTIMAL on clarabel)
    attempts: tuple = ()  # "backend: status" per solve


_CACHE: OrderedDict = OrderedDict()
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 16


def _digest(X: NDArray, y: NDArray, rho: float, solver: tuple) -> tuple:
    h = hashlib.blake2b(digest_size=16)
    Xc = np.ascontiguousarray(X, dtype=float)
    h.update(np.asarray(Xc.shape, dtype=np.int64).tobytes())
    h.update(Xc.tobytes())
    h.update(np.ascontiguousarray(y, dtype=float).tobytes())
    return h.hexdigest(), float(rho), solver


def _lanckriet_model(mom: ClassMoments, terms: frozenset, kappa_star: float):
    """Pyomo model of ``min t_1 + t_2  s.t.  ||F_k'w|| <= t_k,  w'(mu_1 - mu_2) = 1`` with a
    sparsity slot whose magnitude map is zero (the MPM has no penalty: whatever weight a loop
    puts on ``lin`` multiplies nothing). Intercept ``-b = -w'mu_1 + kappa_star t_1``."""
    import scipy.sparse as sp

    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC

    n = mom.n
    model = pyo.ConcreteModel(name="mpm-max")
    with PauseGC():
        model.w = pyo.Var(range(n))
        model.t = pyo.Var(range(2), bounds=(0, None))
    w = var_list(model.w)
    t1, t2 = model.t[0], model.t[1]
    add_linear_constraints(model, "normalise", LinearMap((mom.mu[0] - mom.mu[1])[None, :], w), lower=1.0, upper=1.0)
    add_soc(model, "cone1", LinearMap(mom.cone_rows(0), w), t1, defer=True)
    add_soc(model, "cone2", LinearMap(mom.cone_rows(1), w), t2, defer=True)
    loss = t1 + t2
    slot = add_sparsity_slot(model, coef=LinearMap.identity(w), magnitude=LinearMap(sp.csr_matrix((n, n)), w),
                             terms=terms, loss=loss)
    intercept = LinearMap(np.concatenate([-mom.mu[0], [kappa_star]])[None, :], w + [t1])
    return model, slot, intercept, (w, t1, t2)


def lanckriet_data(mom: ClassMoments):
    """The SOCP of :func:`_lanckriet_model` in compiled form, built straight from numpy (columns
    ``w`` (n), ``t_1``, ``t_2``): ``largest_bound`` runs on every fit, and building and compiling
    the Pyomo model cost a quarter of its time at n = 1000. A test checks that both statements give
    the same problem."""
    import scipy.sparse as sp

    n = mom.n
    blocks, cones = [], []
    for k in (0, 1):
        R = mom.cone_rows(k)
        t_row = sp.csr_matrix(([-1.0], ([0], [n + k])), shape=(1, n + 2))
        blocks.append(sp.vstack([t_row, sp.hstack([-R, sp.csr_matrix((R.shape[0], 2))])], format="csr"))
        cones.append(1 + R.shape[0])
    G = sp.vstack(blocks, format="csr")
    A = sp.csr_matrix(np.concatenate([mom.mu[0] - mom.mu[1], [0.0, 0.0]])[None, :])
    lb = np.full(n + 2, -np.inf)
    lb[n:] = 0.0
    return ProblemData(c=np.r_[np.zeros(n), 1.0, 1.0], A=A, b=np.ones(1), G=G, h=np.zeros(G.shape[0]), lb=lb,
                       ub=np.full(n + 2, np.inf), l=0, cones=tuple(cones))


def largest_bound(X: NDArray, y: NDArray, rho: float = DEFAULT_RHO, *, moments: ClassMoments | None = None,
                  backend=None, options: SolveOptions | None = None, aux: AuxSolver | None = None) -> LargestBound:
    """Solve Lanckriet et al.'s MPM (000 §2.1) on ``(X, y)``: the largest worst-case bound any
    hyperplane achieves, ``kappa*`` and ``delta_max = kappa*^2 / (1 + kappa*^2)``.

    Results are memoised on the content of ``(X, y, rho)`` and the solver (16 entries), so
    ``validate`` and ``build`` of one fit share one solve. The solve goes through ``aux`` (the
    fit's :class:`fsframe.AuxSolver`, which ``validate``/``build``/``explain_failure`` receive);
    outside a fit, through one on ``backend`` (a name, ``"auto"`` or a backend) with ``options``.

    The bound decides whether ``delta`` is feasible, so it must be accurate: a solve that ends
    ``optimal_inaccurate`` is refined on the other SOCP backends (:meth:`fsframe.AuxSolver.refined`)
    and the first certified optimum is used; when none certifies it,
    :class:`~fsframe.errors.SolverFailedError`. Every solve's status is in
    ``LargestBound.statuses`` and, through ``aux``, in the fit's ``FitResult.statuses``.

    Raises
    ------
    SolverFailedError
        when no backend gives a certified optimum (the last result is attached).
    """
    if aux is None or backend is not None:
        aux = AuxSolver.default(ProblemClass.SOCP, "auto" if backend is None else backend, options)
    be = aux.backend_for(ProblemClass.SOCP)
    key = _digest(X, y, rho, (be.name, repr(aux.options)))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        hit = _solve_bound(X, y, rho, moments, be, aux)
        with _CACHE_LOCK:
            _CACHE[key] = hit
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    aux.record(("mpm-largest-bound", key), hit.statuses)
    return hit


def _remedy(res: SolveResult, results: tuple, aux: AuxSolver) -> str:
    """What to change after the largest-bound solve failed, by how it failed: a time or iteration
    limit is lifted; a numerical failure is met by standardising the features or by an SOCP
    backend not yet tried (never one that already failed here)."""
    if res.status is Status.TIME_LIMIT:
        limit = aux.options.time_limit
        return ("The solve stopped at the time limit" + (f" of {limit:g} s per solve" if limit is not None else "")
                + ": raise time_limit (or leave it unset)")
    if res.status is Status.ITERATION_LIMIT:
        return f"{res.backend} stopped at its iteration limit: raise it through backend_options"
    tried = {r.backend for r in results}
    others = [b.name for b in backends_for(ProblemClass.SOCP) if b.name not in tried and b.available()]
    return ("Standardise the features (their scales differ widely)"
            + (f", or solve on another SOCP backend (backend={others[0]!r})" if others else ""))


def _solve_bound(X, y, rho, moments, be, aux: AuxSolver) -> LargestBound:
    mom = class_moments(X, y, rho) if moments is None else moments
    data = lanckriet_data(mom)
    results = aux.refined(data, backend=be)
    res = results[-1]
    attempts = tuple(f"{r.backend}: {r.status.value}" for r in results)
    if res.status is not Status.OPTIMAL:
        how = ("; " + ", then ".join(attempts)) if len(results) > 1 else ""
        raise SolverFailedError.of(
            f"MPM: the largest-bound (Lanckriet) SOCP ended with status {res.status.value} on backend "
            f"{res.backend} ({res.message}){how}; the worst-case bound delta_max cannot be computed "
            f"reliably, and it decides which delta is feasible. {_remedy(res, results, aux)}", result=res)
    n = mom.n
    wv, tv = res.x[:n], res.x[n:]
    tsum = float(tv.sum())
    kappa = float("inf") if tsum <= 0.0 else 1.0 / tsum
    b = float(wv @ mom.mu[0] - (tv[0] / tsum if tsum > 0 else 0.0))
    return LargestBound(kappa=kappa, delta=delta_of(kappa), w=wv, b=b, t=(float(tv[0]), float(tv[1])),
                        status=res.status, backend=res.backend, statuses=tuple(r.status for r in results),
                        attempts=attempts)


def data_warnings(X: NDArray, y: NDArray, mom: ClassMoments, bound: LargestBound | None) -> list[str]:
    """Warn (DataWarning) about constant features and singular class covariances; returns the
    labels of the singular classes for the fit's info. Public: the MEMPM plugin reuses it.

    ``bound`` may be ``None`` when the fit has not needed the largest bound (an absolute ``delta``
    is checked by the first subproblem instead): the warning then omits its numbers."""
    const = np.flatnonzero(np.ptp(X, axis=0) == 0)
    if const.size:
        warnings.warn(
            f"MPM: {const.size} constant feature(s) {const[:10].tolist()}{'...' if const.size > 10 else ''}: "
            "they have zero variance and equal class means, so they cannot help separate the classes; "
            "their weights are undetermined in the MPM (absorbed by the threshold b) and set to zero by "
            "a sparsity penalty. Drop them to make the problem smaller", DataWarning, stacklevel=5)
    sing = _singular_classes(X, y)
    for label, mk, rank, nv in sing:
        head = (f"MPM: the covariance of class {label:+d} is singular ({mk} samples, {nv} non-constant "
                f"features, rank {rank} < {nv})")
        if mom.ridge > 0:
            value = "" if bound is None else f" (kappa*={bound.kappa:.4g}, delta_max={bound.delta:.4f})"
            tail = (f"; the ridge rho={mom.rho:g} (adds {mom.ridge:.3g} = rho x mean feature variance to the "
                    f"diagonal) makes it definite, so the worst-case bound is finite{value} but depends on rho: "
                    "a larger rho trusts the sample covariance less and keeps the model from fitting noise")
        else:
            value = "" if bound is None else f" (here kappa*={bound.kappa:.4g}, delta_max={bound.delta:.6f})"
            tail = (f"; with rho=0 a direction of zero variance in both classes may separate the means, and "
                    f"then the worst-case bound is unlimited{value}: every delta looks feasible and the MPM fits "
                    f"noise. Set rho > 0 (default {DEFAULT_RHO})")
        warnings.warn(head + tail, DataWarning, stacklevel=5)
    return [s[0] for s in sing]


def bound_report(mom: ClassMoments, bound: LargestBound | None, singular: list) -> dict:
    """The facts every MPM-family fit reports in ``FitResult.info`` (``delta_max``, ``rho``, ...);
    without ``bound`` (not needed by the fit) the ``delta_max`` entries are left out."""
    known = {} if bound is None else {"kappa_max": bound.kappa, "delta_max": bound.delta,
                                      "delta_max_solves": bound.attempts}
    return {**known, "rho": mom.rho, "ridge": mom.ridge,
            "class_sizes": tuple(int(c) for c in mom.counts), "singular_classes": tuple(singular)}


