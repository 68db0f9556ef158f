"""The settle step of the loop template (:meth:`~fsframe.loops.base.OuterLoop.run`): the support
it returns comes from a step that keeps optimality, and the objective it reports is that of the
coefficients returned (:func:`settle`): the ``zero_tol`` cut verified by the certificate of the
cut point or a restricted re-solve, the re-solve on the selected features with ``n_features``,
the cut at the iterate itself after the separation stop."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import attrs
import numpy as np
from numpy.typing import NDArray

from ..enums import Status
from ..errors import ConvergenceWarning, SolverFailedError
from ..surrogates.base import Surrogate
from .selection import support_of

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["settle"]


def _penalty_negligible(loop, it: Iterate, surrogate: Surrogate | None) -> bool:
    """Whether the penalty at ``it`` (``sum_j phi(t_j)``, or the subproblem's objective minus
    its loss) is at most ``tol`` times the objective: every group is then a candidate zero."""
    if it.loss is None:
        return False
    if surrogate is not None:
        pen = float(np.sum(surrogate.phi(it.t)))
    elif it.objective is not None:
        pen = float(it.objective - it.loss)
    else:
        return False
    return pen <= loop.tol * abs(it.loss + pen)


def settle(loop, sub: Subproblem, surrogate, it: Iterate, mask: NDArray, objective, *, selecting: bool,
           first: Iterate | None = None, separated: bool = False):
    """Make the support come from a step that keeps optimality, and the objective that of
    the coefficients returned.

    When ``mask`` cuts groups whose norm is not exactly zero, the cut point is certified on
    the iterate's subproblem with its multipliers
    (:meth:`~fsframe.problem.Subproblem.certified_cut`); if the certificate does not pass, the
    subproblem is re-solved (same weights, warm) with the cut groups fixed at zero. With ``n_features``
    (``selecting``) the re-solve is the model on the selected features, with the slot weights of
    the run's ``first`` subproblem (the method's base convex model: the L2 SVM of an EM run, the
    L1 start of DCA / reweighted-l1; the late iterates' weights can be so heavy — EM's ``1/t^2``
    after a collapse — that their model predicts one class), and is taken; otherwise
    it is taken only if its optimum is within tolerance of the uncut one (``tol`` relative,
    and 1e-9 absolute). If it is not, the uncut point is kept with the groups above 1e-12 of
    the largest norm. A re-solve on a working set that ends short of ``OPTIMAL`` (e.g. ECOS's
    ``optimal_inaccurate`` on the restricted rows) is repeated once on the full problem
    (``info["zero_tol_cut_full_resolve"]``, its status), taken only certified ``OPTIMAL`` with the
    rise within tol; a cut no re-solve could judge keeps the uncut point with a warning that
    names the status. Returns ``(iterate, mask, objective, info)``.

    After the separation stop (``separated``, without ``n_features``) there is no re-solve:
    the subproblem at that iterate is the one :func:`~fsframe.loops.separation.separated` found
    out of the solvers' reach (its re-solve ends ``optimal_inaccurate`` or fails). The cut is checked at the iterate
    itself instead: it is taken when the objective of the cut coefficients is within ``tol``
    of the uncut ones' (the dropped groups are noise, e.g. 1e-10 norms), else (a large
    ``zero_tol`` dropping a group the margins need) the uncut point is kept with the groups
    above 1e-12 of the largest norm, with a ConvergenceWarning, as when a verification fails
    (``info["zero_tol_cut_verified"] = False``, ``info["zero_tol_cut_separated"] = True``)."""
    cut = mask.copy()
    if separated and not selecting:
        dropped = ~cut & (it.t > 0)
        objective = loop.objective_of(sub, it, surrogate, cut)
        if not dropped.any():
            return it, cut, objective, {}
        info = {"zero_tol_cut": int(dropped.sum()), "zero_tol_cut_verified": False,
                "zero_tol_cut_separated": True}
        keep = support_of(it.t, 1e-12)
        whole = loop.objective_of(sub, it, surrogate, keep)
        if objective <= whole + loop.tol * abs(whole) + 1e-9 * (1.0 + abs(whole)):
            return it, cut, objective, info
        warnings.warn(
            f"{loop.name}: cutting {int(dropped.sum())} groups (zero_tol={loop.zero_tol:g}) after the "
            f"separation stop raises the objective from {whole:.6g} to {objective:.6g}; returning the "
            f"uncut iterate's {int(keep.sum())} groups (a smaller zero_tol keeps the cut)",
            ConvergenceWarning, stacklevel=4)
        info["zero_tol_cut"] = 0
        return it, keep, whole, info
    base = it.objective
    probe: dict = {}
    if not selecting and cut.any() and getattr(sub.formulation, "sparse", True) \
            and _penalty_negligible(loop, it, surrogate):
        # the whole penalty is solver noise (e.g. an L1-SVM whose C is so small that w = 0 is
        # optimal): the relative rule cannot tell noise from signal, so propose the empty support
        # (a model without a penalty, ``sparse = False``, has nothing to propose it for)
        re = sub.restricted(it, np.zeros_like(cut))
        if re.ok and re.objective is not None and base is not None \
                and re.objective - base <= loop.tol * abs(base) + 1e-9 * (1.0 + abs(base)):
            re = attrs.evolve(re, cut_from=it)  # certified without the cut too (fitting)
            return re, np.zeros_like(cut), loop.objective_of(sub, re, surrogate, np.zeros_like(cut)), {
                "zero_tol_cut": int((it.t > 0).sum()), "statuses": (re.status,),
                "zero_tol_cut_rise": float(re.objective - base), "zero_tol_cut_verified": True}
        # a rejected probe gave nothing returned: its status is the probe's, not the fit's
        probe = {"zero_support_probe": re.status.value}
    dropped = ~cut & (it.t > 0)
    base_model = first is not None and first is not it  # selecting: re-solve with the first weights
    if not dropped.any() and not (selecting and base_model):
        return it, cut, objective, probe
    info: dict = {"zero_tol_cut": int(dropped.sum()), **probe}
    # the cut point itself, when the certificate still calls it optimal with the iterate's
    # multipliers (an interior-point answer's 1e-10 zeros): the re-solve would return it
    re = None if selecting else sub.certified_cut(it, cut)
    info["zero_tol_cut_resolved"] = re is None
    if re is None:
        re = sub.restricted(first if selecting and base_model else it, cut)
    info["statuses"] = (re.status,)
    within = (lambda r: r.objective - base <= loop.tol * abs(base) + 1e-9 * (1.0 + abs(base)))
    # on a working set only a certified OPTIMAL re-solve settles the cut here; an inexact one
    # (within tol or not) goes to the full re-solve below
    judged = selecting or re.status is Status.OPTIMAL or sub.working_set is None
    if re.ok and re.objective is not None and base is not None:
        info["zero_tol_cut_rise"] = float(re.objective - base)
        if selecting or (judged and within(re)):
            if not selecting:
                cut &= re.t > 0
                if info["zero_tol_cut_resolved"]:  # a re-solve with the cut groups fixed at zero
                    re = attrs.evolve(re, cut_from=it)
            info["zero_tol_cut_verified"] = True
            return re, cut, loop.objective_of(sub, re, surrogate, cut), info
    if not selecting and re.status is not Status.OPTIMAL and sub.working_set is not None \
            and base is not None:
        # a working set's re-solve that ended short of a certified optimum (ECOS's
        # optimal_inaccurate on the restricted rows) says nothing about the cut: re-solve it once
        # on the full problem, and take it only certified optimal with the rise within tol
        full = sub.restricted(it, cut, full=True)
        info["statuses"] += (full.status,)
        info["zero_tol_cut_full_resolve"] = full.status.value
        if full.status is Status.OPTIMAL and full.objective is not None:
            info["zero_tol_cut_rise"] = float(full.objective - base)
            if within(full):
                cut &= full.t > 0
                info["zero_tol_cut_verified"] = True
                full = attrs.evolve(full, cut_from=it)
                return full, cut, loop.objective_of(sub, full, surrogate, cut), info
        re = full  # the warning below speaks of the full re-solve: a rise, or its status
    info["zero_tol_cut_verified"] = False
    if selecting:
        msg = (f"{loop.name}: the re-solve on the {int(cut.sum())} selected features ended with status "
               f"{re.status.value} ({re.result.message})")
        if re.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
            warnings.warn(
                msg + ": no model on these features satisfies the formulation's constraints (e.g. MPM's "
                "bound delta); the coefficients are the chosen iterate's, cut, they violate the constraints, "
                "and no objective is reported. Ask for more features or relax the constraints",
                ConvergenceWarning, stacklevel=4)
            return it, cut, None, info
        if loop.raise_on_failure:
            raise SolverFailedError(msg + "; set raise_on_failure=False to keep the selection without "
                                    "an objective", result=re.result)
        warnings.warn(msg + "; the coefficients are the chosen iterate's, cut, and no objective is "
                      "reported", ConvergenceWarning, stacklevel=4)
        return it, cut, None, info
    if re.status is not Status.OPTIMAL:
        # the cut could not be judged: nothing says the small weights are part of the optimum
        warnings.warn(
            f"{loop.name}: the re-solve without {int(dropped.sum())} small groups (zero_tol={loop.zero_tol:g}) "
            f"ended with status {re.status.value} ({re.result.message}), so the cut is unverified; returning "
            "the uncut solution with its groups above 1e-12 of the largest norm (another backend, e.g. "
            "Clarabel, may settle the cut)", ConvergenceWarning, stacklevel=4)
    else:
        warnings.warn(
            f"{loop.name}: cutting {int(dropped.sum())} small groups (zero_tol={loop.zero_tol:g}) raises the "
            "subproblem's optimum beyond tol; returning the uncut solution, whose small weights are part of "
            "the optimum (a smaller zero_tol or a simplex backend gives a cleaner support)",
            ConvergenceWarning, stacklevel=4)
    keep = support_of(it.t, 1e-12)
    return it, keep, loop.objective_of(sub, it, surrogate, keep), info
