"""Reference method plugin: the Minimax Probability Machine family (``mpm``, ``l1-mpm``,
``l0-mpm``) of paper 000 (Yang & Ju), as SOCP formulations.

Discovered like any third-party plugin, through the entry point ``mpm = "fsframe_mpm"`` in the
group ``fsframe`` of fsframe's own ``pyproject.toml``.

Two formulations:

* ``mpm`` (:class:`MPMFormulation`) — the chance-constrained model of 000 eqs. 43-46 with a fixed
  worst-case bound ``delta``; with the ``l1`` surrogate and loop ``single`` it is the L1-MPM
  (eqs. 12-15, Bhattacharyya 2004), with ``exp`` and ``dca`` the L0-MPM (eqs. 32-46, Algorithm 1);
  any other surrogate x loop composes (``log`` + ``reweighted-l1``, ``lp`` + ``em``, ...).
* ``mpm-max`` (:class:`MPMMaxFormulation`) — Lanckriet et al.'s MPM, which maximises the bound
  over all features (000 §2.1, eqs. 3-5); it also yields the largest feasible ``delta`` that
  ``mpm`` checks against before anything else is solved.

Kernel versions (000 §3.2, eqs. 47-58) need no code here: ``fsframe.fit(..., kernel="rbf",
sigma=...)`` applies the empirical kernel map first and the "features" become training samples.
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections import OrderedDict

import attrs
import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from attrs.validators import ge, instance_of, optional
from numpy.typing import NDArray
from pyomo.common.gc_manager import PauseGC

from fsframe import BuiltModel, Formulation, MethodSpec, ProblemClass, Status, hookimpl, select_backend
from fsframe.validators import finite, to_float
from fsframe.backends.base import Backend, SolveOptions
from fsframe.canonical import ProblemData
from fsframe.errors import (BackendUnavailableError, DataError, DataWarning, InfeasibleParameterError,
                            InvalidOptionError, SolverFailedError)
from fsframe.formulation import AuxSolver
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_soc, add_sparsity_slot, var_list

__all__ = [
    "MPMFormulation",
    "MPMMaxFormulation",
    "ClassMoments",
    "LargestBound",
    "class_moments",
    "largest_bound",
    "lanckriet_data",
    "kappa_of",
    "delta_of",
    "data_warnings",
    "bound_report",
    "DEFAULT_RHO",
    "open_unit",
    "opt_float",
    "l1_split",
    "add_margin_rows",
    "DEFAULT_DELTA_FRACTION",
]

DEFAULT_RHO = 0.01
"""Default covariance ridge, relative to the mean within-class feature variance (see
:func:`class_moments`); chosen by measurement (``benchmarks/mpm_rho.py``), see ``docs/conic.md``,
section "The covariance ridge rho"."""

DEFAULT_DELTA_FRACTION = 0.9
"""``delta = DEFAULT_DELTA_FRACTION * delta_max`` when neither ``delta`` nor ``delta_fraction``
is given: paper 000 §4 asks for a high bound (0.9), which is infeasible on its own data sets."""


def kappa_of(delta: float) -> float:
    """``kappa = sqrt(delta / (1 - delta))`` (000 eq. 22)."""
    return float(np.sqrt(delta / (1.0 - delta)))


def delta_of(kappa: float) -> float:
    """The inverse of :func:`kappa_of`: ``delta = kappa^2 / (1 + kappa^2)`` (1 for ``kappa = inf``)."""
    if not np.isfinite(kappa):
        return 1.0
    return float(kappa * kappa / (1.0 + kappa * kappa))


def open_unit(name):
    """An attrs validator: ``None`` or a value in the open interval (0, 1) (a bound such as ``delta``)."""

    def check(inst, attr, value):
        if value is not None and not (0.0 < value < 1.0):
            raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return check


def opt_float(v):
    """Converter: ``None`` stays, anything else becomes a float (:func:`fsframe.validators.to_float`)."""

    return None if v is None else to_float(v)


# ------------------------------------------------------------------------------ moments
@attrs.frozen(eq=False)
class ClassMoments:
    """Means and covariance factors of the two classes, class ``+1`` first (000's ``X_1``).

    ``Sigma_k + ridge * I = F_k F_k'`` with ``F_k = [C_k, sqrt(ridge) I]`` and the centred-data
    factor ``C_k = (X_k - mu_k)' / sqrt(m_k)`` (``n x m_k``): a cone ``||F_k' w||`` has
    ``m_k (+ n)`` entries and no ``n x n`` matrix is ever formed (DESIGN §5).
    """

    mu: tuple  # (mu_1, mu_2), each shape (n,)
    C: tuple  # (C_1, C_2), shapes (n, m_1), (n, m_2)
    counts: tuple  # (m_1, m_2)
    rho: float
    ridge: float  # absolute: rho * mean within-class feature variance

    @property
    def n(self) -> int:
        return int(self.mu[0].shape[0])

    def cone_rows(self, k: int, scale: float = 1.0) -> sp.csr_matrix:
        """``scale * F_k'``: the rows of the vector inside cone ``k`` as a map of ``w``
        (shape ``(m_k [+ n], n)``; the ridge block is a sparse identity)."""
        parts = [sp.csr_matrix(scale * self.C[k].T)]
        if self.ridge > 0:
            parts.append(sp.identity(self.n, format="csr") * (scale * np.sqrt(self.ridge)))
        return sp.vstack(parts, format="csr")


def class_moments(X: NDArray, y: NDArray, rho: float) -> ClassMoments:
    """Class means and covariance factors of ``X`` for labels ``y`` in ``{+1, -1}``.

    The covariance is the sample (maximum-likelihood) covariance ``Xc'Xc / m_k``. The ridge is
    ``rho * s2`` with ``s2 = (||Xc_1||_F^2 + ||Xc_2||_F^2) / (m n)``, the mean within-class
    variance of a feature, so ``rho`` is scale free (the same value suits raw, standardised and
    kernel-mapped features).

    Raises
    ------
    DataError
        labels other than ``+1``/``-1``, a class with fewer than 2 samples, identical class means.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DataError(f"MPM: X must be 2-D with one label per row, got X {X.shape} and y {y.shape}")
    labels = set(np.unique(y).tolist())
    if not labels <= {1, -1, 1.0, -1.0}:
        raise DataError(f"MPM: labels must be +1/-1 (fsframe.fit codes them), got {sorted(labels)}")
    m, n = X.shape
    _check_scale(X)
    mus, Cs, counts = [], [], []
    ss = 0.0
    for label in (1, -1):
        Xk = X[y == label]
        mk = Xk.shape[0]
        if mk < 2:
            raise DataError(
                f"MPM: class {label:+d} has {mk} sample(s); the MPM estimates a covariance per class "
                "and needs at least 2 samples in each (collect more data or merge classes)")
        mu = Xk.mean(axis=0)
        Xc = Xk - mu
        ss += float(np.sum(Xc * Xc))
        mus.append(mu)
        Cs.append(Xc.T / np.sqrt(mk))
        counts.append(mk)
    diff = float(np.linalg.norm(mus[0] - mus[1]))
    if diff <= 1e-12 * max(float(np.linalg.norm(mus[0])), float(np.linalg.norm(mus[1])), float(np.max(np.abs(X)))):
        raise DataError(
            f"MPM: the two class means coincide (||mu_1 - mu_2|| = {diff:.3g}); no hyperplane separates "
            "them with any worst-case bound, so the MPM family cannot be fitted on these features")
    ridge = float(rho) * ss / (m * n)
    return ClassMoments(mu=tuple(mus), C=tuple(Cs), counts=tuple(counts), rho=float(rho), ridge=ridge)


SCALE_RANGE = (1e-7, 1e7)
"""Largest feature magnitudes the MPM accepts. ``w'(mu_1 - mu_2) = 1`` makes ``w`` scale like
``1 / X``; outside this range ECOS and Clarabel, with absolute tolerances near 1e-8, report the
largest-bound SOCP infeasible or fail (measured on Gaussian data scaled by 10^-30 ... 10^30:
correct within 1e-7 only between 1e-6 and 1e6)."""


def _check_scale(X: NDArray) -> None:
    """Refuse features whose largest magnitude is outside :data:`SCALE_RANGE` with a
    :class:`~fsframe.errors.DataError` that says so (else the failure reads as "the class means
    coincide" or an infeasible SOCP)."""
    big = float(np.max(np.abs(X), initial=0.0))
    lo, hi = SCALE_RANGE
    if big == 0.0 or not np.isfinite(big):
        return  # zeros / non-finite values are the dataset checks' business
    if not lo <= big <= hi:
        raise DataError(
            f"MPM: the features' largest magnitude is {big:.3g}, outside [{lo:g}, {hi:g}]: at this scale the "
            "SOCP solvers' tolerances make the worst-case bound and the class-mean test meaningless (the "
            "class means would look equal, or the problem infeasible). Standardise the features (e.g. "
            "sklearn's StandardScaler, or --scale standard on the command line)")


def _singular_classes(X: NDArray, y: NDArray) -> list[tuple[int, int, int, int]]:
    """``(label, m_k, rank, n_informative)`` for each class whose covariance is singular on the
    features that are not constant overall (those carry nothing and are warned about apart).
    A class with no more samples than features is singular by counting (rank <= m_k - 1); the
    rank is computed (SVD of the ``m_k x n`` centred data) only when ``m_k > n``."""
    varying = np.ptp(X, axis=0) > 0
    n_var = int(np.count_nonzero(varying))
    out = []
    for label in (1, -1):
        Xk = X[y == label][:, varying]
        mk = Xk.shape[0]
        if mk <= n_var:
            out.append((label, mk, mk - 1, n_var))
            continue
        r = int(np.linalg.matrix_rank(Xk - Xk.mean(axis=0)))
        if r < n_var:
            out.append((label, mk, r, n_var))
    return out


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
    n = mom.n
    model = pyo.ConcreteModel(name="mpm-max")
    with PauseGC():
        model.w = pyo.Var(range(n))
        model.t = pyo.Var(range(2), bounds=(0, None))
    w = var_list(model.w)
    t1, t2 = model.t[0], model.t[1]
    add_linear_constraints(model, "normalise", LinearMap((mom.mu[0] - mom.mu[1])[None, :], w), lower=1.0, upper=1.0)
    add_soc(model, "cone1", LinearMap(mom.cone_rows(0), w), t1)
    add_soc(model, "cone2", LinearMap(mom.cone_rows(1), w), t2)
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


def _fallbacks(tried: Backend) -> list[Backend]:
    """Other available SOCP backends, Clarabel first (an interior-point method with iterative
    refinement; it certified every bound ECOS solved only inaccurately in our random tests)."""
    out = []
    for name in ("clarabel", "ecos"):
        if name == tried.name:
            continue
        try:
            out.append(select_backend(name, ProblemClass.SOCP))
        except (BackendUnavailableError, InvalidOptionError):
            continue
    return out


def largest_bound(X: NDArray, y: NDArray, rho: float = DEFAULT_RHO, *, moments: ClassMoments | None = None,
                  backend=None, options: SolveOptions | None = None,
                  solver: AuxSolver | None = None) -> LargestBound:
    """Solve Lanckriet et al.'s MPM (000 §2.1) on ``(X, y)``: the largest worst-case bound any
    hyperplane achieves, ``kappa*`` and ``delta_max = kappa*^2 / (1 + kappa*^2)``.

    Results are memoised on the content of ``(X, y, rho)`` and the solver (16 entries), so
    ``validate`` and ``build`` of one fit share one solve. The solver is ``backend`` (a name or a
    backend) with ``options``; else the fit's ``solver`` (:class:`fsframe.formulation.AuxSolver`,
    which ``validate``/``build`` receive) if its backend solves SOCPs; else ``"auto"``.

    The bound decides whether ``delta`` is feasible, so it must be accurate: a solve that ends
    ``optimal_inaccurate`` is refined on the other SOCP backends (Clarabel first) and the first
    certified optimum is used; when none certifies it, :class:`~fsframe.errors.SolverFailedError`.
    Every solve's status is in ``LargestBound.statuses`` and, through ``solver``, in the fit's
    ``FitResult.statuses``.

    Raises
    ------
    SolverFailedError
        when no backend gives a certified optimum (the last result is attached).
    """
    if backend is None and solver is not None and ProblemClass.SOCP in solver.backend.supports:
        backend = solver.backend
        options = solver.options if options is None else options
    be = backend if isinstance(backend, Backend) else select_backend(backend or "auto", ProblemClass.SOCP)
    options = SolveOptions() if options is None else options
    key = _digest(X, y, rho, (be.name, repr(options)))
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
    if hit is None:
        hit = _solve_bound(X, y, rho, moments, be, options)
        with _CACHE_LOCK:
            _CACHE[key] = hit
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    if solver is not None:
        solver.record(("mpm-largest-bound", key), hit.statuses)
    return hit


def _solve_bound(X, y, rho, moments, be: Backend, options: SolveOptions) -> LargestBound:
    mom = class_moments(X, y, rho) if moments is None else moments
    data = lanckriet_data(mom)
    results = [be.solve(data, options)]
    if results[-1].status is Status.OPTIMAL_INACCURATE:
        for other in _fallbacks(be):
            results.append(other.solve(data, SolveOptions(time_limit=options.time_limit)))
            if results[-1].status is Status.OPTIMAL:
                break
    res = results[-1]
    attempts = tuple(f"{r.backend}: {r.status.value}" for r in results)
    if res.status is not Status.OPTIMAL:
        how = ("; " + ", then ".join(attempts)) if len(results) > 1 else ""
        raise SolverFailedError(
            f"MPM: the largest-bound (Lanckriet) SOCP ended with status {res.status.value} on backend "
            f"{res.backend} ({res.message}){how}; the worst-case bound delta_max cannot be computed "
            "reliably, and it decides which delta is feasible. Standardise the features (their scales "
            "differ widely) or install another SOCP backend (clarabel)", result=res)
    n = mom.n
    wv, tv = res.x[:n], res.x[n:]
    tsum = float(tv.sum())
    kappa = float("inf") if tsum <= 0.0 else 1.0 / tsum
    b = float(wv @ mom.mu[0] - (tv[0] / tsum if tsum > 0 else 0.0))
    return LargestBound(kappa=kappa, delta=delta_of(kappa), w=wv, b=b, t=(float(tv[0]), float(tv[1])),
                        status=res.status, backend=res.backend, statuses=tuple(r.status for r in results),
                        attempts=attempts)


def data_warnings(X: NDArray, y: NDArray, mom: ClassMoments, bound: LargestBound) -> list[str]:
    """Warn (DataWarning) about constant features and singular class covariances; returns the
    labels of the singular classes for the fit's info. Public: the MEMPM plugin reuses it."""
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
            tail = (f"; the ridge rho={mom.rho:g} (adds {mom.ridge:.3g} = rho x mean feature variance to the "
                    f"diagonal) makes it definite, so the worst-case bound is finite (kappa*={bound.kappa:.4g}, "
                    f"delta_max={bound.delta:.4f}) but depends on rho: a larger rho trusts the sample covariance "
                    "less and keeps the model from fitting noise")
        else:
            tail = (f"; with rho=0 a direction of zero variance in both classes may separate the means, and "
                    f"then the worst-case bound is unlimited (here kappa*={bound.kappa:.4g}, "
                    f"delta_max={bound.delta:.6f}): every delta looks feasible and the MPM fits noise. "
                    f"Set rho > 0 (default {DEFAULT_RHO})")
        warnings.warn(head + tail, DataWarning, stacklevel=5)
    return [s[0] for s in sing]


def bound_report(mom: ClassMoments, bound: LargestBound, singular: list) -> dict:
    """The facts every MPM-family fit reports in ``FitResult.info`` (``delta_max``, ``rho``, ...)."""
    return {"kappa_max": bound.kappa, "delta_max": bound.delta, "delta_max_solves": bound.attempts,
            "rho": mom.rho, "ridge": mom.ridge,
            "class_sizes": tuple(int(c) for c in mom.counts), "singular_classes": tuple(singular)}


# ------------------------------------------------------------------------------ formulations
@attrs.frozen
class MPMMaxFormulation(Formulation):
    r"""Lanckriet et al.'s Minimax Probability Machine (000 §2.1, eqs. 3-5): the hyperplane
    ``w'x = b`` with the largest worst-case accuracy bound over all features::

        min  ||F_1'w|| + ||F_2'w||   s.t.  w'(mu_1 - mu_2) = 1,

    ``kappa* = 1 / optimum``, ``b = w'mu_1 - kappa* ||F_1'w||``; the bound is
    ``delta* = kappa*^2 / (1 + kappa*^2)``. ``predict`` is ``sign(w'x - b)``.

    The threshold ``b`` is not linear in the solution (``kappa*`` is its reciprocal optimum), so it
    is taken from :func:`largest_bound`, which ``validate`` runs (and memoises) before the model
    is built: the intercept map is ``-b = -w'mu_1 + kappa* t_1`` with ``kappa*`` a constant. The
    MPM has no sparsity penalty: the slot's magnitude map is zero, so method ``mpm`` (loop
    ``single``) solves exactly this SOCP. Every feature keeps a weight.

    Parameters
    ----------
    rho : float >= 0
        Covariance ridge relative to the mean within-class feature variance (:func:`class_moments`).
    """

    name = "mpm-max"
    reference = "Lanckriet, El Ghaoui, Bhattacharyya & Jordan, NIPS 14, 2002; paper 000 §2.1"
    slot_terms = frozenset({"lin"})
    sparse = False  # no penalty: surrogates are refused (they would penalise nothing)
    rho: float = attrs.field(default=DEFAULT_RHO, converter=to_float, validator=[instance_of(float), ge(0.0), finite])

    def problem_class(self, terms):
        return ProblemClass.SOCP

    def validate(self, X, y, *, solver=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, solver=solver)
        singular = data_warnings(X, y, mom, bound)
        return {**bound_report(mom, bound, singular), "kappa": bound.kappa, "delta": bound.delta}

    def build(self, X, y, terms, *, solver=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, solver=solver)
        model, slot, intercept, _ = _lanckriet_model(mom, frozenset(terms), bound.kappa)
        return BuiltModel(model=model, slot=slot, intercept=intercept, coef_shape=(mom.n,),
                          info={"kappa": bound.kappa, "delta": bound.delta})


@attrs.frozen
class MPMFormulation(Formulation):
    r"""The MPM chance constraints of paper 000 with a fixed worst-case bound ``delta``
    (eqs. 43-46; eq. 22 for ``kappa``)::

        min  penalty(w)
        s.t. w'mu_1 - b >= kappa ||F_1'w||,   b - w'mu_2 >= kappa ||F_2'w||      (43, 44)
             w'mu_1 - b >= 1,                 b - w'mu_2 >= 1                    (45)

    ``kappa = sqrt(delta / (1 - delta))``; class ``+1`` is 000's ``X_1``. The loss is zero: the
    objective is the sparsity penalty alone, so DCA minimises ``sum_j phi(|w_j|)`` over the
    feasible set (000 eqs. 32-36). ``predict`` is ``sign(w'x - b)`` (intercept ``-b``).

    Variables: a free ``w`` inside the cones and, for the slot's linear terms (``lin``,
    ``lin_w``), the split ``w = u - v`` with ``u, v >= 0`` and magnitude ``s_j = u_j + v_j``
    (eq. 46's ``t`` at the optimum). The cones are stated over ``w``, not ``u - v``: ECOS solved the
    L1-MPM 3.7x (n = 500) and 6.9x (n = 1000) faster that way (``docs/benchmarks-conic.md``). A
    quadratic slot term (EM loops) weights ``w`` directly; alone it needs no split.

    The classifier is ``sign(w'x - b)``: 000 writes ``sgn(w'x - b)`` in §1 and ``sgn(w'x + b)`` in
    §3.1, but only the minus sign matches eqs. 43-45 (class 1 on the side ``w'x > b``).

    Choosing ``delta``: the bound must stay below the largest one the data admit,
    ``delta_max = kappa*^2 / (1 + kappa*^2)`` from Lanckriet's MPM (:func:`largest_bound`); paper
    000's ``delta = 0.9`` exceeds it on Sonar (0.62), Ionosphere (0.63), Pima (0.32) and WDBC (0.77).
    ``validate`` computes ``delta_max`` before any subproblem is solved and raises
    :class:`~fsframe.errors.InfeasibleParameterError` for ``delta >= delta_max``. Give either an
    absolute ``delta`` or ``delta_fraction`` (``delta = delta_fraction * delta_max``); with neither,
    ``delta_fraction`` is :data:`DEFAULT_DELTA_FRACTION`.

    Parameters
    ----------
    delta : float in (0, 1), optional
        Worst-case probability of correct classification per class (000 eqs. 13-14).
    delta_fraction : float in (0, 1), optional
        ``delta`` as a fraction of ``delta_max`` for the training data.
    rho : float >= 0
        Covariance ridge relative to the mean within-class feature variance: ``Sigma_k`` becomes
        ``Sigma_k + rho * s2 * I`` (:func:`class_moments`). Default :data:`DEFAULT_RHO`.
    """

    name = "mpm"
    reference = "Yang & Ju, paper 000, eqs. 12-15 and 32-46; Bhattacharyya, JMLR 5, 2004"
    delta: float | None = attrs.field(default=None, converter=opt_float,
                                      validator=[optional(instance_of(float)), open_unit("delta")])
    delta_fraction: float | None = attrs.field(default=None, converter=opt_float,
                                               validator=[optional(instance_of(float)),
                                                          open_unit("delta_fraction")])
    rho: float = attrs.field(default=DEFAULT_RHO, converter=to_float, validator=[instance_of(float), ge(0.0), finite])

    def __attrs_post_init__(self):
        if self.delta is not None and self.delta_fraction is not None:
            raise InvalidOptionError(
                f"give either delta (absolute, got {self.delta}) or delta_fraction (of the largest feasible "
                f"delta, got {self.delta_fraction}), not both")

    def problem_class(self, terms):
        return ProblemClass.SOCP

    def _delta(self, bound: LargestBound) -> tuple[float, float | None]:
        if self.delta is not None:
            return self.delta, None
        frac = DEFAULT_DELTA_FRACTION if self.delta_fraction is None else self.delta_fraction
        return frac * bound.delta, frac

    def validate(self, X, y, *, solver=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, solver=solver)
        singular = data_warnings(X, y, mom, bound)
        delta, frac = self._delta(bound)
        if delta >= bound.delta:
            raise InfeasibleParameterError(
                f"delta={delta:g} is infeasible for this data: the largest worst-case bound any hyperplane "
                f"achieves is delta_max={bound.delta:.4f} (kappa*={bound.kappa:.4g}, from Lanckriet's MPM with "
                f"rho={self.rho:g}), and 000 eqs. 43-46 need delta < delta_max. Choose a smaller delta, or "
                f"delta_fraction=f to use delta = f * delta_max (e.g. delta_fraction=0.9 gives "
                f"delta={0.9 * bound.delta:.4f})",
                parameter="delta", value=float(delta), limit=float(bound.delta))
        return {**bound_report(mom, bound, singular), "delta": delta, "kappa": kappa_of(delta), "delta_fraction": frac}

    def build(self, X, y, terms, *, solver=None):
        terms = frozenset(terms)
        mom = class_moments(X, y, self.rho)
        if self.delta is not None:
            delta, frac, extra = self.delta, None, {}
        else:
            bound = largest_bound(X, y, self.rho, moments=mom, solver=solver)
            delta, frac = self._delta(bound)
            extra = {"delta_max": bound.delta, "kappa_max": bound.kappa}
        kappa = kappa_of(delta)
        n = mom.n
        split = bool(terms & {"lin", "lin_w"})
        model = pyo.ConcreteModel(name=f"mpm(delta={delta:.4g})")
        with PauseGC():
            model.w = pyo.Var(range(n))
            model.b = pyo.Var()
            if split:
                model.u = pyo.Var(range(n), bounds=(0, None))
                model.v = pyo.Var(range(n), bounds=(0, None))
        w = var_list(model.w)
        b = model.b
        magnitude = l1_split(model, w) if split else None
        wb = w + [b]
        margin1, margin2 = add_margin_rows(model, mom, wb)
        # 000 eqs. 43-44: kappa ||F_k'w|| <= +-(w'mu_k - b)
        add_soc(model, "cone1", LinearMap(mom.cone_rows(0, kappa), w), LinearMap(margin1[None, :], wb))
        add_soc(model, "cone2", LinearMap(mom.cone_rows(1, kappa), w), LinearMap(margin2[None, :], wb))
        slot = add_sparsity_slot(model, coef=LinearMap.identity(w), magnitude=magnitude, terms=terms, loss=0.0)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.array([[-1.0]]), [b]), coef_shape=(n,),
                          info={"delta": delta, "kappa": kappa, "delta_fraction": frac, **extra})


def l1_split(model, w: list) -> LinearMap:
    """The split ``w = u - v``, ``u, v >= 0`` (``model.u``, ``model.v`` already declared) as recorded
    equalities; returns the magnitude map ``s = u + v`` for the sparsity slot."""
    n = len(w)
    uv = var_list(model.u, model.v)
    I = sp.identity(n, format="csr")
    add_linear_constraints(model, "split", LinearMap(sp.hstack([I, -I, -I], format="csr"), uv + w),
                           lower=0.0, upper=0.0)  # u - v = w
    return LinearMap(sp.hstack([I, I], format="csr"), uv)


def add_margin_rows(model, mom: ClassMoments, wb: list) -> tuple[NDArray, NDArray]:
    """The margin rows ``w'mu_1 - b >= 1``, ``b - w'mu_2 >= 1`` over ``wb = w + [b]`` (000 eq. 45,
    001 eqs. 4 and 6); returns their coefficient rows ``(margin1, margin2)``."""
    margin1 = np.concatenate([mom.mu[0], [-1.0]])
    margin2 = np.concatenate([-mom.mu[1], [1.0]])
    add_linear_constraints(model, "margin", LinearMap(np.vstack([margin1, margin2]), wb), lower=1.0)
    return margin1, margin2


@hookimpl
def fsframe_register_formulations():
    return [MPMFormulation, MPMMaxFormulation]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("mpm", formulation="mpm-max", surrogate=None, loop="single",
                   reference="Lanckriet et al., NIPS 14, 2002; paper 000 §2.1 (baseline of Table 3)",
                   description="Minimax Probability Machine: the largest worst-case bound, all features (one SOCP)"),
        MethodSpec("l1-mpm", formulation="mpm", surrogate="l1", loop="single",
                   reference="Bhattacharyya, JMLR 5, 2004; paper 000 eqs. 12-15",
                   description="min ||w||_1 under the MPM chance constraints with bound delta (one SOCP)"),
        MethodSpec("l0-mpm", formulation="mpm", surrogate="exp", loop="dca", defaults={"alpha": 5.0, "max_iter": 100},
                   reference="Yang & Ju, paper 000, eqs. 32-46, Algorithm 1",
                   description="exp surrogate of ||w||_0 under the MPM chance constraints, by DCA (SOCPs), "
                               "started from the L1-MPM solution; max_iter 100 (Algorithm 1 has no cap; "
                               "Sonar needs 24 steps at tol 1e-5)"),
    ]
