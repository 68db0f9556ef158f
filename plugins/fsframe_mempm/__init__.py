"""Method plugin: the Minimum Error Minimax Probability Machine for feature selection
(``fs-mempm``, ``fs-mpm``) of paper 001 (Huang et al.), as SOCP formulations with *bound
parameters* that the bound-search loop (:class:`fsframe.loops.BoundSearch`, 001 Algorithm 1)
varies without rebuilding the model.

Two formulations, sharing the MPM plugin's class moments (low-rank covariance factors, ridge
``rho``) and its largest feasible bound (:func:`fsframe_mpm.largest_bound`):

* ``mempm`` (:class:`MEMPMFormulation`) — 001 eq. 6: one worst-case accuracy bound per class,
  ``delta_pos`` for class ``+1`` (001's alpha) and ``delta_neg`` for class ``-1`` (001's beta);
* ``mpm-equal`` (:class:`MPMEqualFormulation`) — the same model with one bound
  ``delta = delta_pos = delta_neg`` (001 eq. 4, Bhattacharyya's L1-MPM): the formulation FS-MPM
  searches.

The bounds enter the compiled problem through one coefficient each (see
:class:`MEMPMFormulation`), so :meth:`MEMPMFormulation.with_bounds` restates the problem for new
bounds by changing two numbers of ``A`` in numpy.
"""

from __future__ import annotations

import warnings

import attrs
import numpy as np
from attrs.validators import ge, instance_of, le, optional

from fsframe import AuxSolver, BuiltModel, Formulation, MethodSpec, ProblemClass, Status, hookimpl
from fsframe.canonical import ProblemData
from fsframe.errors import ConvergenceWarning, InfeasibleParameterError, InvalidOptionError, SolverFailedError
from fsframe.pyomo_ext import LinearMap, add_soc, add_sparsity_slot, var_list
from fsframe.validators import finite, to_float
from fsframe_mpm import (DEFAULT_DELTA_FRACTION, DEFAULT_RHO, ClassMoments, add_margin_rows, bound_report,
                         class_moments, data_warnings, delta_of, kappa_of, l1_split, lanckriet_data, largest_bound,
                         open_unit, opt_float)

__all__ = ["MEMPMFormulation", "MPMEqualFormulation", "one_sided_limits", "largest_delta_neg", "pair_data",
           "mempm_bounds"]


# ------------------------------------------------------------------------------ feasibility
def one_sided_limits(mom: ClassMoments) -> tuple[float, float]:
    """The supremum of each bound when the other tends to 0: ``delta_pos < delta_of(kappa_1)``
    with ``kappa_1 = sqrt(d' S_1^{-1} d)``, ``d = mu_1 - mu_2``, ``S_1 = F_1 F_1'`` (likewise
    ``delta_neg``). 001 eq. 6 is feasible iff some ``w`` has
    ``kappa(delta_pos) ||F_1'w|| + kappa(delta_neg) ||F_2'w|| <= w'd``; with ``delta_neg -> 0``
    this is Cauchy-Schwarz in the metric ``S_1``. Computed as the minimum-norm solution of
    ``F_k z = d`` (``||z||^2 = d' S_k^{-1} d``), never forming ``S_k``. A ``d`` outside the range
    of ``F_k`` (singular covariance without ridge) gives the limit 1."""
    d = mom.mu[0] - mom.mu[1]
    out = []
    for k in (0, 1):
        F = mom.cone_rows(k).T.toarray()  # n x (m_k [+ n])
        z, *_ = np.linalg.lstsq(F, d, rcond=None)
        resid = float(np.linalg.norm(F @ z - d))
        out.append(1.0 if resid > 1e-9 * max(1.0, float(np.linalg.norm(d))) else delta_of(float(np.linalg.norm(z))))
    return out[0], out[1]


def pair_data(mom: ClassMoments, delta_pos: float) -> ProblemData:
    """The SOCP ``min t_2  s.t.  ||F_1'w|| <= t_1, ||F_2'w|| <= t_2, w'd - kappa(delta_pos) t_1 >= 1``
    (columns ``w``, ``t_1``, ``t_2``, as :func:`fsframe_mpm.lanckriet_data`, whose cones it reuses):
    ``1 / t_2*`` is the largest ``kappa(delta_neg)`` feasible with ``delta_pos`` in 001 eq. 6 (the
    ratio ``(w'd - kappa_1 ||F_1'w||) / ||F_2'w||`` is scale free, so fixing its numerator's
    lower bound at 1 and minimising the denominator maximises it)."""
    import scipy.sparse as sp

    base = lanckriet_data(mom)
    n = mom.n
    row = sp.csr_matrix(np.concatenate([-(mom.mu[0] - mom.mu[1]), [kappa_of(delta_pos), 0.0]])[None, :])
    G = sp.vstack([row, base.G], format="csr")
    c = np.zeros(n + 2)
    c[n + 1] = 1.0
    return ProblemData(c=c, A=sp.csr_matrix((0, n + 2)), b=np.zeros(0), G=G, h=np.r_[-1.0, base.h], lb=base.lb,
                       ub=base.ub, l=1, cones=base.cones)


def largest_delta_neg(mom: ClassMoments, delta_pos: float, aux: AuxSolver) -> float:
    """The largest ``delta_neg`` feasible with ``delta_pos`` in 001 eq. 6 (0 when ``delta_pos``
    itself is infeasible), by one SOCP (:func:`pair_data`) through ``aux`` (the fit's
    :class:`fsframe.AuxSolver`); its status is recorded in the fit's statuses.

    Raises
    ------
    SolverFailedError
        when the SOCP neither solves nor is proven infeasible.
    """
    res = aux.solve(pair_data(mom, delta_pos))
    aux.record(("mempm-largest-delta-neg", float(delta_pos)), (res.status,))
    if res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
        return 0.0
    if not res.ok:
        raise SolverFailedError.of(
            f"MEMPM: the SOCP for the largest delta_neg at delta_pos={delta_pos:g} ended with status "
            f"{res.status.value} ({res.message}); try backend='clarabel'", result=res)
    t2 = float(res.x[mom.n + 1])
    return 1.0 if t2 <= 0.0 else delta_of(1.0 / t2)


BOUND_GRID_STEP = 0.01
"""The step of the line search over ``delta_pos`` of :func:`mempm_bounds` (then refined)."""

LIMIT_GAP = 1e-4
"""How far below its one-sided limit :func:`mempm_bounds` searches ``delta_pos`` (the SOCP for the
largest ``delta_neg`` fails numerically at the limit itself): eq. 5's value is then at most
``theta LIMIT_GAP`` below its supremum."""

FRONTIER_MARGIN = 1e-6
"""How far below the largest ``kappa(delta_neg)`` :func:`mempm_bounds` places its ``delta_neg``
(relatively): at the largest value itself 001 eq. 5's feasible set is a single ray, which a solver
may call infeasible."""

RETRY_MARGINS = (1e-5, 1e-4, 1e-3, 1e-2)
"""The wider margins a ``mempm_theta`` fit retries, in turn, when its model stated at
:data:`FRONTIER_MARGIN` ends without a solution (a singular class covariance, ``rho=0`` with a class
smaller than the features, makes the thin feasible set numerically infeasible): each retry restates
``delta_neg`` in numpy (:meth:`MEMPMFormulation.frontier_retries`); ``info["frontier_margin"]`` says
which margin the returned hyperplane was solved at."""


def frontier_delta(b_max: float, margin: float) -> float:
    """``delta_neg`` a relative ``margin`` inside the frontier ``b_max`` (in ``kappa``)."""
    return delta_of(kappa_of(b_max) * (1.0 - margin)) if b_max > 0.0 else b_max


def mempm_bounds(mom: ClassMoments, theta: float, aux: AuxSolver, limit: float,
                 tol: float = 1e-6) -> tuple[float, float, float, int]:
    """The MEMPM's own bounds (001 eq. 5, Huang et al.'s MEMPM): ``max theta alpha + (1 - theta)
    beta`` over ``alpha = delta_pos`` and ``beta = delta_neg``, without any sparsity term. For each
    ``alpha`` the largest feasible ``beta`` is one SOCP (:func:`largest_delta_neg`), so the problem
    is a line search over ``alpha`` (001 §3.1: "L ... steps for linearly searching alpha"):
    ``alpha`` on a grid of step :data:`BOUND_GRID_STEP` below its one-sided limit ``limit``, then
    golden-section refinement between the best grid point's neighbours to ``tol`` (the value is
    taken to be unimodal there). ``alpha`` is searched from the first grid point up: eq. 5's
    supremum can be the degenerate corner ``alpha -> 0`` (``beta`` its own limit), a classifier
    with no guarantee for class ``+1``, which the search leaves out as a grid from 0.01 does.
    Returns ``(alpha, beta, bound, n_socps)``."""
    def value(a):
        b = largest_delta_neg(mom, a, aux)
        return theta * a + (1.0 - theta) * b, b

    grid = np.arange(BOUND_GRID_STEP, limit, BOUND_GRID_STEP)
    if grid.size == 0:
        grid = np.array([0.5 * limit])
    vals = [value(float(a)) for a in grid]
    n = len(vals)
    i = int(np.argmax([v[0] for v in vals]))
    best = (vals[i][0], float(grid[i]), vals[i][1])
    lo = float(grid[max(i - 1, 0)])  # delta_pos >= the first grid point: not the corner (0, its limit)
    # the supremum may be the corner (limit, 0), where the SOCP degenerates: stop LIMIT_GAP short of it
    hi = float(grid[i + 1]) if i + 1 < grid.size else max(float(grid[i]), limit - LIMIT_GAP)
    g = 0.5 * (np.sqrt(5.0) - 1.0)
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = value(c), value(d)
    n += 2
    for a, f in ((c, fc), (d, fd)):
        if f[0] > best[0]:
            best = (f[0], a, f[1])
    while hi - lo > tol:
        if fc[0] >= fd[0]:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = value(c)
            a, f = c, fc
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = value(d)
            a, f = d, fd
        n += 1
        if f[0] > best[0]:
            best = (f[0], a, f[1])
    return best[1], best[2], best[0], n


# ------------------------------------------------------------------------------ formulations
@attrs.frozen
class MEMPMFormulation(Formulation):
    r"""The feature-selection MEMPM of paper 001, eq. 6 (001 eq. 5 for the classifier)::

        min  penalty(w)                                   (L1: (u + v)'e, w = u - v)
        s.t. w'mu_1 - b >= kappa(delta_pos) ||F_1'w||,    b - w'mu_2 >= kappa(delta_neg) ||F_2'w||
             w'mu_1 - b >= 1,                              b - w'mu_2 >= 1

    with ``kappa(a) = sqrt(a / (1 - a))``, ``F_k F_k' = Sigma_k + ridge I`` the MPM plugin's
    covariance factors (never an ``n x n`` matrix) and class ``+1`` 001's ``x``. ``predict`` is
    ``sign(w'x - b)`` (intercept ``-b``). With ``delta_pos = delta_neg`` it is the MPM formulation
    (001 eq. 4 = paper 000 eqs. 43-46).

    How the model is stated: the margin rows (recorded), cone epigraphs ``||F_k'w|| <= r_k`` with
    constant coefficients, and the two *bound rows* ``w'mu_1 - b = kappa_1 r_1``,
    ``b - w'mu_2 = kappa_2 r_2`` whose ``kappa_k`` are
    mutable Pyomo Params (``model.kappa``). Each ``kappa_k`` is one coefficient of the compiled
    ``A``, so :meth:`with_bounds` restates the problem for new bounds in numpy and writes the
    Params, and the bound search never rebuilds or recompiles the model.

    Choosing the bounds: the pair must be feasible — each bound below its one-sided limit
    (:func:`one_sided_limits`) and ``delta_neg`` at most :func:`largest_delta_neg` of
    ``delta_pos``; ``validate`` checks this before anything else is solved and raises
    :class:`~fsframe.errors.InfeasibleParameterError` stating the limit. A bound not given is
    :data:`fsframe_mpm.DEFAULT_DELTA_FRACTION` times the MPM's ``delta_max`` (an MPM then).

    Parameters
    ----------
    delta_pos, delta_neg : float in (0, 1), optional
        Worst-case accuracy bounds of class ``+1`` and ``-1`` (001's alpha and beta).
    rho : float >= 0
        Covariance ridge relative to the mean within-class feature variance
        (:func:`fsframe_mpm.class_moments`).
    mempm_theta : float in [0, 1], optional
        The MEMPM classifier of 001 eq. 5 ("before feature selection"): the formulation chooses
        its own bounds, ``max mempm_theta delta_pos + (1 - mempm_theta) delta_neg`` over all
        hyperplanes, by a line search over ``delta_pos`` (:func:`mempm_bounds`), and states the
        model at them (``delta_neg`` a relative :data:`FRONTIER_MARGIN` inside the frontier, where
        the feasible hyperplanes are one ray up to scale). Use it with ``loop="single"``: the
        ``w`` returned is then eq. 5's up to that margin (``info["bound"]`` is eq. 5's objective).
        Not combined with given bounds, nor with the bound search (which varies the bounds).
    """

    name = "mempm"
    data_facts = ("delta", "delta_pos", "delta_neg", "kappa_pos", "kappa_neg", "bound", "delta_max", "kappa_max",
                  "ridge", "delta_neg_max", "mempm_socps", "bound_attained",  # the bounds chosen, the largest the data admit
                  "frontier_margin", "frontier_retries", "alpha_at_floor", "alpha_at_ceiling")  # mempm_theta's line search
    dense_reason = ("its chance constraints are stated on each class's centred samples X_k - 1 mu_k' "
                    "(the covariance factor of the cones, m_k x n), which are dense whatever the sparsity of X "
                    "(the cones are already over samples, m_k + 1 entries, never an n x n covariance)")
    reference = "Huang, King, Lyu et al., paper 001 eq. 6 (MEMPM: Huang et al., JMLR 7, 2006)"
    bound_params = ("delta_pos", "delta_neg")
    traits = frozenset({"aux_solver"})  # validate and build solve the largest bound(s)
    delta_pos: float | None = attrs.field(default=None, converter=opt_float,
                                          validator=[optional(instance_of(float)), open_unit("delta_pos")])
    delta_neg: float | None = attrs.field(default=None, converter=opt_float,
                                          validator=[optional(instance_of(float)), open_unit("delta_neg")])
    rho: float = attrs.field(default=DEFAULT_RHO, converter=to_float, validator=[instance_of(float), ge(0.0), finite])
    mempm_theta: float | None = attrs.field(default=None, converter=opt_float,
                                            validator=optional([instance_of(float), ge(0.0), le(1.0)]))

    def problem_class(self, terms):
        return ProblemClass.SOCP

    @property
    def sparse(self) -> bool:  # type: ignore[override]
        """With ``mempm_theta`` the model is stated on eq. 5's frontier, where the feasible
        hyperplanes are one ray up to scale: a sparsity surrogate has nothing to choose among, so
        :func:`fsframe.fit` refuses one (and with it a DCA, EM or reweighting loop) and asks for
        ``surrogate=None, loop="single"``."""
        return self.mempm_theta is None

    def _bounds(self) -> tuple[float | None, float | None]:
        """``(delta_pos, delta_neg)`` as given (``None``: a fraction of ``delta_max``)."""
        return self.delta_pos, self.delta_neg

    def _resolved(self, bound) -> tuple[float, float]:
        default = DEFAULT_DELTA_FRACTION * bound.delta
        a, b = self._bounds()
        return (default if a is None else a), (default if b is None else b)

    def bounds_dict(self, a: float, b: float) -> dict:
        """The bound parameters as this formulation names them."""
        return {"delta_pos": a, "delta_neg": b}

    def validate(self, X, y, *, aux=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, aux=aux)
        singular = data_warnings(X, y, mom, bound)
        if self.mempm_theta is not None:
            if self.delta_pos is not None or self.delta_neg is not None:
                raise InvalidOptionError(
                    f"{self.name}: mempm_theta={self.mempm_theta:g} chooses the bounds (001 eq. 5); "
                    f"do not also give delta_pos={self.delta_pos!r}, delta_neg={self.delta_neg!r}")
            return bound_report(mom, bound, singular)  # the bounds: build's line search
        a, b = self._resolved(bound)
        lim_a, lim_b = one_sided_limits(mom)
        given = self._bounds()
        if given[0] is not None or given[1] is not None:
            self._check_pair(mom, a, b, lim_a, lim_b, bound, aux)
        return {**bound_report(mom, bound, singular), **self.bounds_dict(a, b),
                "kappa_pos": kappa_of(a), "kappa_neg": kappa_of(b)}

    def _check_pair(self, mom, a, b, lim_a, lim_b, bound, aux) -> None:
        names = list(self.bounds_dict(a, b))
        hint = (f"The largest equal bound (the MPM's) is delta_max={bound.delta:.4f}; the one-sided limits are "
                f"delta_pos < {lim_a:.4f}, delta_neg < {lim_b:.4f}. Or let method 'fs-mempm' search the bounds")
        if a >= lim_a:
            raise InfeasibleParameterError(
                f"{names[0]}={a:g} is infeasible for this data: no hyperplane reaches it even with delta_neg -> 0 "
                f"(largest feasible delta_pos: {lim_a:.4f}, 001 eq. 6). {hint}",
                parameter=names[0], value=float(a), limit=float(lim_a))
        top = largest_delta_neg(mom, a, aux if aux is not None else AuxSolver.default(ProblemClass.SOCP))
        if b >= top:
            raise InfeasibleParameterError(
                f"{names[-1]}={b:g} is infeasible with delta_pos={a:g}: the largest feasible delta_neg for this "
                f"delta_pos is {top:.4f} (001 eq. 6). {hint}", parameter=names[-1], value=float(b), limit=float(top))

    def build(self, X, y, terms, *, aux=None):
        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC

        terms = frozenset(terms)
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, aux=aux)
        lim_a, lim_b = one_sided_limits(mom)
        eq5 = {}
        if self.mempm_theta is None:
            a, b = self._resolved(bound)
        else:
            aux = aux if aux is not None else AuxSolver.default(ProblemClass.SOCP)
            a, b_max, value, n_socps = mempm_bounds(mom, self.mempm_theta, aux, lim_a)
            if b_max >= 1.0:  # t2 <= 0: no finite kappa(delta_neg) bounds the SOCP
                raise InfeasibleParameterError(
                    f"{self.name}: 001 eq. 5 is unbounded in delta_neg at delta_pos={a:.4g}: class -1's "
                    "covariance is singular along a direction that separates the classes; give rho > 0",
                    parameter="rho", value=self.rho, limit=b_max)
            b = frontier_delta(b_max, FRONTIER_MARGIN)
            if not 0.0 < b < 1.0:
                raise InfeasibleParameterError(
                    f"{self.name}: 001 eq. 5 has no hyperplane with delta_neg > 0 at its best delta_pos={a:.4g} "
                    "(the class means coincide?)", parameter="mempm_theta", value=self.mempm_theta, limit=b_max)
            eq5 = {"bound": value, "bound_attained": self._attained(a, b), "delta_neg_max": b_max, "mempm_socps": n_socps, "frontier_margin": FRONTIER_MARGIN,
                   "alpha_at_floor": int(self._at_floor(a, lim_a)), "alpha_at_ceiling": int(self._at_ceiling(a, lim_a))}
        n = mom.n
        split = bool(terms & {"lin", "lin_w"})
        model = pyo.ConcreteModel(name=f"{self.name}(delta_pos={a:.4g}, delta_neg={b:.4g})")
        with PauseGC():
            model.w = pyo.Var(range(n))
            model.b = pyo.Var()
            model.r = pyo.Var(range(2), bounds=(0.0, None))  # r_k >= ||F_k'w||
            if split:
                model.u = pyo.Var(range(n), bounds=(0, None))
                model.v = pyo.Var(range(n), bounds=(0, None))
        model.kappa = pyo.Param(range(2), mutable=True, initialize={0: kappa_of(a), 1: kappa_of(b)})
        w = var_list(model.w)
        magnitude = l1_split(model, w) if split else None
        wb = w + [model.b]
        margin1, margin2 = add_margin_rows(model, mom, wb)  # 001 eq. 6, rows 3-4
        add_soc(model, "cone1", LinearMap(mom.cone_rows(0), w), model.r[0], defer=True)
        add_soc(model, "cone2", LinearMap(mom.cone_rows(1), w), model.r[1], defer=True)
        # 001 eq. 6, rows 1-2, as the bound rows margin_k - kappa_k r_k = 0 (kappa_k a mutable Param):
        # with r_k >= ||F_k'w|| free above, this is margin_k >= kappa_k ||F_k'w||. An equality, not
        # an inequality: Clarabel failed numerically on EM's large quadratic weights with the latter
        rows = (margin1, margin2)
        model.bound = pyo.Constraint(range(2), rule=lambda m, k: pyo.quicksum(
            float(a) * v for a, v in zip(rows[k], wb) if a != 0.0) - m.kappa[k] * m.r[k] == 0)
        slot = add_sparsity_slot(model, coef=LinearMap.identity(w), magnitude=magnitude, terms=terms, loss=0.0)
        info = {**self.bounds_dict(a, b), "kappa_pos": kappa_of(a), "kappa_neg": kappa_of(b),
                "delta_max": bound.delta, "kappa_max": bound.kappa,
                "bound_limits": self.limits(lim_a, lim_b, bound.delta), **eq5}
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.array([[-1.0]]), [model.b]),
                          coef_shape=(n,), info=info)

    def _at_floor(self, a: float, lim_a: float) -> bool:
        """Whether eq. 5's line search ended on its first grid point (``delta_pos`` =
        :data:`BOUND_GRID_STEP`, up to the golden section's tolerance): the value still rises
        towards the corner ``delta_pos -> 0`` that the search leaves out (small ``mempm_theta``
        favours ``delta_neg``), so the answer is the search's floor, not an optimum of eq. 5 —
        warned, and ``info["alpha_at_floor"]`` is 1."""
        if lim_a <= BOUND_GRID_STEP or a > BOUND_GRID_STEP + 2e-6:
            return False
        warnings.warn(
            f"{self.name}: mempm_theta={self.mempm_theta:g}: 001 eq. 5's line search ended at its floor "
            f"delta_pos={a:g} (the first grid point): theta * delta_pos + (1 - theta) * delta_neg still rises "
            "towards the corner delta_pos -> 0 (a classifier with no guarantee for class +1), which the search "
            "leaves out; the hyperplane returned is at that floor, not at an optimum of eq. 5 "
            "(info['alpha_at_floor'] = 1). A larger mempm_theta balances the classes", ConvergenceWarning,
            stacklevel=2)
        return True

    def _at_ceiling(self, a: float, lim_a: float) -> bool:
        """Whether eq. 5's line search ended at its ceiling, :data:`LIMIT_GAP` below the limit of
        ``delta_pos`` (up to the golden section's tolerance): the degenerate corner of a class +1
        whose covariance is singular (fewer samples than features at ``rho = 0``), where
        ``delta_pos -> 1`` and the SOCP degenerates — warned, and ``info["alpha_at_ceiling"]`` is 1."""
        if a < lim_a - LIMIT_GAP - 2e-6:
            return False
        warnings.warn(
            f"{self.name}: mempm_theta={self.mempm_theta:g}: 001 eq. 5's line search ended at its ceiling "
            f"delta_pos={a:g}, {LIMIT_GAP:g} below the limit {lim_a:.4g} (class +1's covariance is singular "
            "along a direction: fewer samples than features at rho = 0?): the value still rises towards the corner "
            "the search leaves out; the hyperplane returned is at that ceiling, not at an optimum of eq. 5 "
            "(info['alpha_at_ceiling'] = 1). A rho > 0 regularises the covariance", ConvergenceWarning,
            stacklevel=2)
        return True

    def limits(self, lim_a: float, lim_b: float, delta_max: float) -> dict:
        """``BuiltModel.info["bound_limits"]``: the supremum of each bound parameter."""
        return {"delta_pos": lim_a, "delta_neg": lim_b}

    def kappas(self, bounds: dict) -> tuple[float, float]:
        """``(kappa_1, kappa_2)`` of the two bound rows for the bound parameters ``bounds``."""
        return kappa_of(bounds["delta_pos"]), kappa_of(bounds["delta_neg"])

    def frontier_retries(self, built, base, compiled):
        """The fit's retries after a failed first solve (the ``frontier_retries`` protocol of
        :func:`fsframe.fit`): with ``mempm_theta``, ``("frontier_margin=...", base)`` with ``base``
        restated at ``delta_neg`` each of :data:`RETRY_MARGINS` inside the frontier in turn (the same
        ``delta_pos``), ``built.info`` updated to match (``delta_neg``, ``frontier_margin``,
        ``frontier_retries``, ``bound_attained``). Exhausted (every retry failed), the Params
        ``model.kappa`` and ``built.info`` are restored to the first statement. Nothing without
        ``mempm_theta`` (given bounds are the user's: a failure there is reported)."""
        if self.mempm_theta is None:
            return
        info0, kappa0 = dict(built.info), [built.model.kappa[k].value for k in range(2)]
        a, b_max = built.info["delta_pos"], built.info["delta_neg_max"]
        for k, margin in enumerate(RETRY_MARGINS, 1):
            b = frontier_delta(b_max, margin)
            restated = self._kappas_restated(built, base, compiled, {"delta_pos": a, "delta_neg": b})
            built.info.update(frontier_margin=margin, frontier_retries=k, bound_attained=self._attained(a, b))
            yield f"frontier_margin={margin:g}", restated
        for k, value in enumerate(kappa0):
            built.model.kappa[k].set_value(value)
        built.info.clear()
        built.info.update(info0)

    def _attained(self, a: float, b: float) -> float:
        """001 eq. 5's objective ``theta * delta_pos + (1 - theta) * delta_neg`` at the stated pair."""
        return self.mempm_theta * a + (1.0 - self.mempm_theta) * b

    def with_bounds(self, built, base, compiled, bounds):
        """``base`` with the bound rows' coefficients ``kappa_k`` replaced (001 eq. 6 for new
        bounds): two entries of ``A`` change, found as the entries of the ``r_k`` columns in the
        rows that also hold ``b`` (a cone's auxiliary definition holds ``r_k`` but not ``b``); the
        Params ``model.kappa`` are set too, so the Pyomo model states the problem the next solve
        sees."""
        if self.mempm_theta is not None:
            raise InvalidOptionError(
                f"{self.name}: mempm_theta={self.mempm_theta:g} chooses the bounds itself (001 eq. 5); a loop that "
                "varies them (the bound search) cannot be combined with it: use loop='single'")
        return self._kappas_restated(built, base, compiled, bounds)

    def _kappas_restated(self, built, base, compiled, bounds):
        import scipy.sparse as sp

        for name, value in bounds.items():
            if name not in self.bound_params or not (0.0 < float(value) < 1.0):
                raise ValueError(f"{self.name}: bound {name}={value!r}: the bounds are {self.bound_params}, in (0, 1)")
        kap = self.kappas({**dict(zip(self.bound_params, (None,) * len(self.bound_params))), **bounds})
        model = built.model
        A = base.A
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        col_b, col_r = compiled.cols([model.b])[0], compiled.cols([model.r[0], model.r[1]])
        with_b = set(rows[A.indices == col_b].tolist())
        data = A.data.copy()
        for k, col in enumerate(col_r):
            pos = [i for i in np.flatnonzero(A.indices == col) if rows[i] in with_b]
            if len(pos) != 1 or data[pos[0]] == 0.0:
                raise RuntimeError(f"{self.name}: the bound row of r_{k + 1} was not found in the compiled problem")
            data[pos[0]] = np.sign(data[pos[0]]) * kap[k]
            model.kappa[k].set_value(kap[k])
        # the record the fit reports (FitResult.info) describes the problem the model now states
        built.info.update({name: float(value) for name, value in bounds.items()})
        built.info.update(kappa_pos=kap[0], kappa_neg=kap[1])
        return base.evolve(A=sp.csr_matrix((data, A.indices, A.indptr), shape=A.shape))


@attrs.frozen
class MPMEqualFormulation(MEMPMFormulation):
    r"""The MPM as a MEMPM with one bound ``delta = delta_pos = delta_neg`` (001 eq. 4; paper 000
    eqs. 43-46): the formulation FS-MPM searches. Same model as :class:`MEMPMFormulation` (the
    same optimum as ``mpm``'s L1-MPM at the same ``delta``); its one bound parameter is
    ``delta``, limited by the MPM's largest feasible bound ``delta_max``
    (:func:`fsframe_mpm.largest_bound`).

    Parameters
    ----------
    delta : float in (0, 1), optional
        Worst-case accuracy bound of both classes; default
        :data:`fsframe_mpm.DEFAULT_DELTA_FRACTION` times ``delta_max``.
    rho : float >= 0
    """

    name = "mpm-equal"
    reference = "paper 001 eq. 4 (Bhattacharyya, JMLR 5, 2004); paper 000 eqs. 43-46"
    bound_params = ("delta",)
    delta_pos: float | None = attrs.field(default=None, init=False)
    delta_neg: float | None = attrs.field(default=None, init=False)
    delta: float | None = attrs.field(default=None, converter=opt_float,
                                      validator=[optional(instance_of(float)), open_unit("delta")])
    mempm_theta: float | None = attrs.field(default=None, init=False)

    def _bounds(self):
        return self.delta, self.delta

    def bounds_dict(self, a, b):
        return {"delta": a}

    def _check_pair(self, mom, a, b, lim_a, lim_b, bound, aux):
        if a >= bound.delta:
            raise InfeasibleParameterError(
                f"delta={a:g} is infeasible for this data: the largest worst-case bound any hyperplane achieves "
                f"is delta_max={bound.delta:.4f} (Lanckriet's MPM, rho={self.rho:g}). Choose a smaller delta, or "
                "let method 'fs-mpm' search it", parameter="delta", value=float(a), limit=float(bound.delta))

    def limits(self, lim_a, lim_b, delta_max):
        return {"delta": delta_max}

    def kappas(self, bounds):
        k = kappa_of(bounds["delta"])
        return k, k


@hookimpl
def fsframe_register_formulations():
    return [MEMPMFormulation, MPMEqualFormulation]


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle, mpm_margin_loss  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", MEMPMFormulation, lambda f: mpm_margin_loss())]  # 001 eq. 6's margin rows


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("fs-mempm", formulation="mempm", surrogate="l1", loop="bound-search",
                   reference="paper 001 eq. 6, Algorithm 1, criteria 1 and 2",
                   description="L1-MEMPM with the bounds delta_pos, delta_neg searched by 001's Algorithm 1 "
                               "(step delta_pos, bisect delta_neg), chosen by criterion 1, 2 or bound/t(NSF)"),
        MethodSpec("fs-mpm", formulation="mpm-equal", surrogate="l1", loop="bound-search",
                   reference="paper 001 §2.2 and §4 (FS-MPM with criteria 1 and 2)",
                   description="L1-MPM with its one bound delta searched (stepped, then bisected at the "
                               "feasibility limit), chosen by criterion 1, 2 or bound/t(NSF)"),
    ]
