"""Reference method plugin: the Minimax Probability Machine family (``mpm``, ``l1-mpm``,
``l0-mpm``) of paper 000 (Yang & Ju), as SOCP formulations.

The entry point ``mpm`` of fsframe's own distribution (``pyproject.toml``), found and registered
like a third-party plugin. Modules: :mod:`fsframe_mpm.moments` (class moments, ``kappa``),
:mod:`fsframe_mpm.bound` (the largest feasible bound), :mod:`fsframe_mpm.oracles` (what the
conformance kit expects), this module (the formulations and methods).

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


import attrs
import numpy as np
from attrs.validators import ge, instance_of, optional
from numpy.typing import NDArray

from fsframe import BuiltModel, Formulation, MethodSpec, ProblemClass, hookimpl
from fsframe.validators import finite, to_float
from fsframe.errors import InfeasibleParameterError, InvalidOptionError
from fsframe.pyomo_ext import LinearMap, add_linear_constraints, add_soc, add_sparsity_slot, var_list

from .bound import LargestBound, _lanckriet_model, bound_report, data_warnings, lanckriet_data, largest_bound
from .oracles import mpm_max_decision
from .moments import (DEFAULT_DELTA_FRACTION, DEFAULT_RHO, SCALE_RANGE, ClassMoments, _singular_classes, class_moments,
                      delta_of, kappa_of, open_unit, opt_float)

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
    "SCALE_RANGE",
]
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
    # delta=None: from delta_max (000 eqs. 43-46) and the delta_fraction used
    data_facts = ("delta", "kappa", "delta_max", "kappa_max", "ridge", "delta_fraction")
    dense_reason = ("its chance constraints are stated on each class's centred samples X_k - 1 mu_k' "
                    "(the covariance factor of the cones, m_k x n), which are dense whatever the sparsity of X "
                    "(the cones are already over samples, m_k + 1 entries, never an n x n covariance)")
    reference = "Lanckriet, El Ghaoui, Bhattacharyya & Jordan, NIPS 14, 2002; paper 000 §2.1"
    slot_terms = frozenset({"lin"})
    sparse = False  # no penalty: surrogates are refused (they would penalise nothing)
    traits = frozenset({"aux_solver"})  # validate and build solve the largest bound
    rho: float = attrs.field(default=DEFAULT_RHO, converter=to_float, validator=[instance_of(float), ge(0.0), finite])

    def problem_class(self, terms):
        return ProblemClass.SOCP

    def validate(self, X, y, *, aux=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, aux=aux)
        singular = data_warnings(X, y, mom, bound)
        return {**bound_report(mom, bound, singular), "kappa": bound.kappa, "delta": bound.delta}

    def build(self, X, y, terms, *, aux=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, aux=aux)
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
    Give either an absolute ``delta`` or ``delta_fraction`` (``delta = delta_fraction *
    delta_max``); with neither, ``delta_fraction`` is :data:`DEFAULT_DELTA_FRACTION`. A fraction
    needs ``delta_max`` (one more SOCP, :func:`largest_bound`), computed in ``validate``. An absolute
    ``delta`` costs no such solve: the first subproblem decides, and only when it does not end
    optimal is ``delta_max`` computed (:meth:`explain_failure`); either way ``delta >= delta_max``
    raises :class:`~fsframe.errors.InfeasibleParameterError` naming ``delta_max``, and
    ``FitResult.info`` holds ``delta_max`` only when it was computed.

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
    # delta=None: from delta_max (000 eqs. 43-46) and the delta_fraction used
    data_facts = ("delta", "kappa", "delta_max", "kappa_max", "ridge", "delta_fraction")
    dense_reason = ("its chance constraints are stated on each class's centred samples X_k - 1 mu_k' "
                    "(the covariance factor of the cones, m_k x n), which are dense whatever the sparsity of X "
                    "(the cones are already over samples, m_k + 1 entries, never an n x n covariance)")
    reference = "Yang & Ju, paper 000, eqs. 12-15 and 32-46; Bhattacharyya, JMLR 5, 2004"
    traits = frozenset({"aux_solver"})  # delta_fraction needs the largest bound (validate, build)
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

    def _needs_bound(self, X, y, mom: ClassMoments) -> bool:
        """Whether validation needs ``delta_max`` before anything is solved: for ``delta_fraction``
        (``delta`` is a fraction of it), and with ``rho = 0`` and a singular class covariance
        (the warning's substance is that the bound is then unlimited). An absolute ``delta`` is
        checked by the first subproblem instead (:meth:`explain_failure`)."""
        return self.delta is None or (mom.ridge == 0 and bool(_singular_classes(X, y)))

    def _infeasible(self, delta: float, bound: LargestBound) -> InfeasibleParameterError:
        return InfeasibleParameterError(
            f"delta={delta:g} is infeasible for this data: the largest worst-case bound any hyperplane "
            f"achieves is delta_max={bound.delta:.4f} (kappa*={bound.kappa:.4g}, from Lanckriet's MPM with "
            f"rho={self.rho:g}), and 000 eqs. 43-46 need delta < delta_max. Choose a smaller delta, or "
            f"delta_fraction=f to use delta = f * delta_max (e.g. delta_fraction=0.9 gives "
            f"delta={0.9 * bound.delta:.4f})",
            parameter="delta", value=float(delta), limit=float(bound.delta))

    def validate(self, X, y, *, aux=None):
        mom = class_moments(X, y, self.rho)
        bound = largest_bound(X, y, self.rho, moments=mom, aux=aux) if self._needs_bound(X, y, mom) else None
        singular = data_warnings(X, y, mom, bound)
        if bound is None:  # an absolute delta: feasibility is decided by the first subproblem
            return {**bound_report(mom, None, singular), "delta": self.delta, "kappa": kappa_of(self.delta),
                    "delta_fraction": None}
        delta, frac = self._delta(bound)
        if delta >= bound.delta:
            raise self._infeasible(delta, bound)
        return {**bound_report(mom, bound, singular), "delta": delta, "kappa": kappa_of(delta), "delta_fraction": frac}

    def auto_values(self, name, X, y, *, n_points, aux=None):
        """delta_fraction from 0.01 to 0.999 of the largest feasible bound delta_max, the gap to 1 log-spaced.

        The automatic grid of the bound (:mod:`fsframe.grids`; None for other parameters):
        ``delta_fraction = 1 - g`` with the gap ``g`` log-spaced from 0.99 down to 0.001 (``delta``:
        the same times the largest feasible bound ``delta_max``, :func:`largest_bound`). Near
        ``delta = 0`` the cones are inactive and the L1 model keeps the fewest features its
        mean-difference constraints allow; the support grows as ``delta`` nears ``delta_max``,
        where the points crowd. ``delta_fraction`` carries over from the data the grid was made on
        to its cross-validation folds, whose ``delta_max`` differ."""
        if name not in ("delta", "delta_fraction"):
            return None
        fractions = 1.0 - np.logspace(np.log10(0.99), -3.0, max(2, int(n_points)))
        if name == "delta_fraction":
            return tuple(float(f) for f in fractions)
        bound = largest_bound(X, y, self.rho, aux=aux)
        return tuple(float(bound.delta * f) for f in fractions)

    def explain_failure(self, X, y, status, aux):
        """The first subproblem of a fit with an absolute ``delta`` did not end optimal
        (``status``): compute ``delta_max`` now (one largest-bound SOCP, :func:`largest_bound`,
        through the fit's auxiliary solver ``aux``) and, when ``delta >= delta_max``, return the
        :class:`~fsframe.errors.InfeasibleParameterError` that names it. ``None`` otherwise (the
        delta is feasible: solver trouble, reported as such), and for a subproblem stopped by the
        time limit, which says nothing about ``delta`` (another solve under the same limit would
        only report its own)."""
        from fsframe import Status

        if self.delta is None:  # delta_fraction: validate checked delta < delta_max already
            return None
        if status is Status.TIME_LIMIT:
            return None
        bound = largest_bound(X, y, self.rho, aux=aux)
        return self._infeasible(self.delta, bound) if self.delta >= bound.delta else None

    def build(self, X, y, terms, *, aux=None):
        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC

        terms = frozenset(terms)
        mom = class_moments(X, y, self.rho)
        if self.delta is not None:
            delta, frac, extra = self.delta, None, {}
        else:
            bound = largest_bound(X, y, self.rho, moments=mom, aux=aux)
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
        add_soc(model, "cone1", LinearMap(mom.cone_rows(0, kappa), w), LinearMap(margin1[None, :], wb), defer=True)
        add_soc(model, "cone2", LinearMap(mom.cone_rows(1, kappa), w), LinearMap(margin2[None, :], wb), defer=True)
        slot = add_sparsity_slot(model, coef=LinearMap.identity(w), magnitude=magnitude, terms=terms, loss=0.0)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap(np.array([[-1.0]]), [b]), coef_shape=(n,),
                          info={"delta": delta, "kappa": kappa, "delta_fraction": frac, **extra})


def l1_split(model, w: list) -> LinearMap:
    """The split ``w = u - v``, ``u, v >= 0`` (``model.u``, ``model.v`` already declared) as recorded
    equalities; returns the magnitude map ``s = u + v`` for the sparsity slot."""
    import scipy.sparse as sp

    n = len(w)
    uv = var_list(model.u, model.v)
    I = sp.identity(n, format="csr")
    add_linear_constraints(model, "split", LinearMap(sp.hstack([I, -I, -I], format="csr"), uv + w),
                           lower=0.0, upper=0.0, defer=True)  # u - v = w (rows made on request)
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
def fsframe_register_oracles():
    from fsframe.testing import Oracle, mpm_margin_loss  # the conformance kit loads Pyomo: only when it asks

    # the margin rows of 000 eq. 45, read off the decision values (the MPM's loss is zero)
    return [Oracle("decision_loss", MPMFormulation, lambda f: mpm_margin_loss()),
            Oracle("decision_check", MPMMaxFormulation, mpm_max_decision)]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("mpm", formulation="mpm-max", surrogate=None, loop="single",
                   reference="Lanckriet et al., NIPS 14, 2002; paper 000 §2.1 (baseline of Table 3)",
                   description="Minimax Probability Machine: the largest worst-case bound, all features (one SOCP)"),
        MethodSpec("l1-mpm", formulation="mpm", surrogate="l1", loop="single",
                   sparsity="delta_fraction",
                   reference="Bhattacharyya, JMLR 5, 2004; paper 000 eqs. 12-15",
                   description="min ||w||_1 under the MPM chance constraints with bound delta (one SOCP)"),
        MethodSpec("l0-mpm", formulation="mpm", surrogate="exp", loop="dca", defaults={"alpha": 5.0, "max_iter": 100},
                   sparsity="delta_fraction",
                   reference="Yang & Ju, paper 000, eqs. 32-46, Algorithm 1",
                   description="exp surrogate of ||w||_0 under the MPM chance constraints, by DCA (SOCPs), "
                               "started from the L1-MPM solution; max_iter 100 (Algorithm 1 has no cap; "
                               "Sonar needs 24 steps at tol 1e-5)"),
    ]
