"""The :class:`OuterLoop` base: one template every loop fits.

A loop is a generator, :meth:`OuterLoop.steps` ``(sub, surrogate, run)``: it chooses slot
weights (or bounds, a mask, a parameter), solves (``sub.solve(...)``) or computes an iterate
itself, and yields a :class:`Step` per iterate; it returns :class:`Finish` (or the tuple
``(converged, reason)``) when its own stopping rule fires — with its own :class:`Choice` when it
chooses the answer itself (a bound search's criterion). Loop state lives in the generator (or a
small object it owns), never on the subproblem. :meth:`OuterLoop.run` does the rest for every
loop alike:

* records the history (objective, non-zeros, status, seconds per iteration, what the step set);
* checks that the monitored objective does not rise by more than ``tol`` (relative) for loops
  that guarantee descent (DCA, MM/EM, IRL1) and reports any rise in the result
  (``monotone=False``, a :class:`~fsframe.errors.ConvergenceWarning`) instead of hiding it;
* records an infeasible probe the loop expects (``Step(probe=True)``) and goes on;
* stops on a subproblem that has no solution: raises
  :class:`~fsframe.errors.SolverFailedError` with the partial result, or with
  ``raise_on_failure=False`` keeps the last good iterate and says so;
* applies the "exactly ``r`` features" rule of 002 §3.1 (see :func:`select_exactly`), unless the
  loop chooses its answer itself (:attr:`OuterLoop.chooses`), counting and ranking the group norms
  with each class of identical data columns merged onto its lowest index
  (:meth:`~fsframe.loops.ties.Tiebreak.distinct`: a copy takes none of the ``r`` slots);
* verifies the ``zero_tol`` cut — by the certificate of the cut point when it passes
  (:meth:`~fsframe.problem.Subproblem.certified_cut`), else by a restricted re-solve — so that
  the support comes from a step that keeps optimality and the objective reported is that of the
  coefficients returned (:func:`~fsframe.loops.settle.settle`);
* reports the outcome (:class:`LoopOutcome`): coefficients zeroed outside the support, the
  objective, the statuses of every solve, and what the loop put in ``run.info``.

The template's other concerns are modules of their own: :mod:`~fsframe.loops.settle` (the
verified cut), :mod:`~fsframe.loops.separation` (the separation stop of :meth:`OuterLoop.descend`),
:mod:`~fsframe.loops.measures` (what it measures per iterate), :mod:`~fsframe.loops.requirements`
(what a loop requires of a surrogate and a formulation) and :mod:`~fsframe.loops.monitoring` (the
series whose descent a run checked).
"""

from __future__ import annotations

import abc
import time
import warnings
from typing import ClassVar, Generator, TYPE_CHECKING

import attrs
import numpy as np
from attrs.validators import instance_of
from numpy.typing import NDArray

from ..enums import Status
from ..validators import as_int, positive_int, real, to_float
from ..errors import ConvergenceWarning, PluginError, SeparationWarning, SolverFailedError, SolverWarning
from ..surrogates.base import Surrogate
from . import requirements
from .measures import _norm, _on_column_scale, _step_length, _support_size, _total
from .records import Choice, Finish, IterRecord, LoopOutcome, Run, Step
from .selection import Selection, contribution, group_scale, reference_scale, select_exactly, support_of
from .separation import SEPARATION_STOP, separated, separating
from .settle import settle
from .ties import Tiebreak

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["OuterLoop", "LoopOutcome", "IterRecord", "Step", "Finish", "Choice", "Run", "support_of",
           "reference_scale", "select_exactly", "Selection"]

INFEASIBLE = (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)

@attrs.frozen
class OuterLoop(abc.ABC):
    """Base class of outer loops.

    Parameters
    ----------
    max_iter : int
        Maximum number of convex subproblems.
    tol : float
        Relative tolerance of the stopping rules and of the monotonicity check.
    zero_tol : float in (0, 1)
        A group counts as selected when its norm exceeds ``zero_tol`` times the largest (of the
        run). The cut is verified: the subproblem is re-solved with the cut groups fixed at zero
        and the cut is kept only if the optimum holds (see :meth:`run`).
    raise_on_failure : bool
        Raise :class:`~fsframe.errors.SolverFailedError` when a subproblem has no solution
        (default), or stop and return the last good iterate.
    """

    name: ClassVar[str]
    reference: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    """What the loop needs of the surrogate: names of :data:`fsframe.surrogates.PROVIDES`
    (``"dc_split"``, ``"slope_at_zero"``, ...), matched against ``surrogate.provides()``. A loop
    whose needs depend on its parameters makes it a property (``single``: ``derivative`` only for
    ``penalty="l1"``)."""
    formulation_requires: ClassVar[tuple[str, ...]] = ()
    """What the loop needs of the formulation: protocols (:data:`fsframe.formulation.PROTOCOLS`:
    ``"bounds"``, ``"mask_space"``, ...) and traits (:data:`fsframe.formulation.TRAITS`:
    ``"large_margin"``, ...), matched against ``formulation.provides()``."""
    needs_surrogate: ClassVar[bool] = True
    """``True``: a surrogate must be given (its ``phi`` is what the loop minimises, and the
    reported objective is ``loss + sum_j phi(t_j)``); ``False``: it is optional (``single`` and
    ``bound-search`` take its slope at zero as the L1 weight), and the reported objective is the
    subproblem's optimum."""
    takes_surrogate: ClassVar[bool] = True
    """``False`` for a loop that refuses every surrogate (``greedy``, ``rfs``, the filters: they
    penalise nothing through ``phi``)."""
    monotone: ClassVar[bool] = True
    """Whether theory guarantees the monitored objective does not increase."""
    data_facts: ClassVar[tuple[str, ...]] = ()
    """The keys of the fit's ``info`` that the loop derives from the training data as parameters
    (DSO-FS's ``rank``): :attr:`FitResult.facts <fsframe.results.FitResult.facts>`, as
    :attr:`Formulation.data_facts <fsframe.Formulation.data_facts>` for a formulation; the loop's
    counters and diagnostics are bookkeeping (:attr:`FitResult.details <fsframe.results.FitResult.details>`)."""
    sparse_input: ClassVar[bool] = False
    """Whether the loop works on a scipy.sparse ``X``: True for a loop that reaches the data only
    through the subproblem's solves (``sub.solve``); a loop that reads ``sub.X`` itself (a mask
    search, a closed-form algorithm, a filter) keeps the default, and a sparse ``X`` is refused."""
    sparse: ClassVar[bool] = True
    """``False`` for a loop with no sparsity of its own, which only *ranks* the features (a filter
    score, the weights of an L2 model, RFS's row norms that never reach zero): without
    ``n_features`` it would keep every feature, so :func:`fsframe.fit` then keeps the better half
    of the ranking (:func:`fsframe.fit_inputs.default_n_features`). A loop for which it depends on a
    parameter (``single`` with ``penalty="l2"``) makes it a property."""
    chooses: ClassVar[bool] = False
    """``True`` for a loop that chooses its answer itself: it reads ``run.n_features`` and returns
    a :class:`Choice` (or yields steps with a ``support``); the base then applies neither its
    ``n_features`` rule (stop at the first iterate with at most ``r`` groups, 002 §3.1) nor its
    verified ``zero_tol`` cut to that answer."""
    ranks_without_model: ClassVar[bool] = False
    """``True`` for a loop whose feature ranking comes from the data alone, before and apart
    from the model it then fits (a filter): it defines ``ranking(X, y, n_select)`` returning
    ``(order, scores)`` — the order it stores as ``info["ranking"]`` — so that a caller that needs
    only the ranking (a study's top-k cells, docs/papers.md) asks for it and solves nothing.
    ``X`` is the training part as :func:`fsframe.fit` passes it on, ``y`` its class codes."""
    support_scale: ClassVar[str] = "run"
    """What ``zero_tol`` is relative to when the base counts an iterate's non-zeros
    (:func:`support_of`): ``"run"`` — the largest group norm of the run so far
    (:func:`reference_scale`: an iterate that collapsed towards zero counts none); ``"iterate"``
    — its own largest (a search whose solves are not a sequence, as the bound search's NSF,
    001's footnote)."""

    max_iter: int = attrs.field(default=20, converter=as_int, validator=positive_int)
    tol: float = attrs.field(default=1e-5, converter=to_float, validator=real(0))
    zero_tol: float = attrs.field(default=1e-6, converter=to_float, validator=real(0, 1))
    raise_on_failure: bool = attrs.field(default=True, validator=instance_of(bool))

    # -- what the loop needs ------------------------------------------------------------------
    @abc.abstractmethod
    def terms(self, surrogate: Surrogate | None) -> frozenset:
        """The sparsity-slot terms the subproblem needs for this surrogate."""

    def missing(self, surrogate: Surrogate | None) -> list[str]:
        """What ``surrogate`` lacks for this loop, each item as the refusal names it (empty if
        compatible): :func:`fsframe.loops.requirements.missing`. Override it only for a need no
        capability states (call ``super()`` and append)."""
        return requirements.missing(self, surrogate)

    def formulation_missing(self, formulation) -> list[str]:
        """What ``formulation`` (an instance) lacks for this loop (empty if compatible):
        :func:`fsframe.loops.requirements.formulation_missing`. Override it only for a need no
        capability states (call ``super()`` and append)."""
        return requirements.formulation_missing(self, formulation)

    @abc.abstractmethod
    def steps(self, sub: Subproblem, surrogate: Surrogate | None, run: Run) -> Generator[Step, None, Finish]:
        """Yield one :class:`Step` per iterate; return :class:`Finish` (or ``(converged,
        reason)``). ``run`` carries the fit's ``n_features`` and the loop's report (``run.info``)."""

    def monitored_quantity(self, surrogate: Surrogate | None) -> str:
        """What :attr:`IterRecord.monitored` holds, in words (the trace picture's label): by
        default the raw objective ``loss + sum_j phi(t_j)`` that DCA and IRL1 guarantee to decrease."""
        return "loss + Σ φ(t_j), at the solver's point"

    # -- shared helpers -------------------------------------------------------------------------
    def small_step(self, new: Iterate, old: Iterate) -> tuple[bool, float]:
        old_point = old.point
        step = _step_length(new, old_point)  # the base measured it already when it recorded new
        return step <= self.tol * max(1.0, _norm(old_point)), step

    def small_decrease(self, f_new: float, f_old: float) -> bool:
        return f_new >= f_old - self.tol * max(1.0, abs(f_old))

    def surrogate_objective(self, it: Iterate, surrogate: Surrogate, *, raw: bool = False,
                            sub: Subproblem | None = None) -> float:
        """``loss + sum_j phi(||w_(j)||)``.

        Reported (default): groups outside the support (contribution below ``zero_tol`` times the
        largest, :func:`~fsframe.loops.selection.contribution` on the column scale the iterate
        carries, :attr:`~fsframe.problem.Iterate.column_scale` — every iterate
        :meth:`~fsframe.problem.Subproblem.solve` returns carries its subproblem's — else on
        ``sub``'s, the rule the cut and ``history[].n_nonzero`` use; the raw norms when there is
        neither, as for an iterate a loop computed itself) count as zero, so the
        objective agrees with the support and coefficients returned — it
        matters for ``l0``/``lp`` at small ``p``, where a norm of 1e-10 costs 1 or 1e-5.
        ``raw=True``: the exact value at the solver's point, the quantity DCA and MM theory
        guarantee to decrease, used by stopping rules and the monotonicity check."""
        if raw:
            t = it.t
        else:
            it = _on_column_scale(it, sub)
            kept = support_of(contribution(it.t, getattr(it, "column_scale", None)), self.zero_tol)
            t = np.where(kept, it.t, 0.0)
        return it.loss + _total(surrogate.phi(t))

    def reported_objective(self, it: Iterate, surrogate: Surrogate, sub: Subproblem | None = None) -> float:
        """:meth:`surrogate_objective` as reported, on ``sub``'s column scale when ``it`` carries
        none: it is called as ``surrogate_objective(it, surrogate)`` with the iterate carrying that
        scale (:func:`~fsframe.loops.measures._on_column_scale`), so an override of any signature it has had,
        ``(self, it, surrogate, *, raw=False)`` or with ``sub=None`` as well, is called alike and
        finds the scale on ``it``."""
        return self.surrogate_objective(_on_column_scale(it, sub), surrogate)

    def surrogate_step(self, it: Iterate, surrogate: Surrogate, sub: Subproblem | None = None) -> "Step":
        """A :class:`Step` reporting the support-rule objective and monitoring the raw one."""
        if not it.ok:
            return Step(it, None, None)
        return Step(it, self.reported_objective(it, surrogate, sub),
                    self.surrogate_objective(it, surrogate, raw=True))

    def descend(self, it: Iterate, advance, surrogate: Surrogate, sub: Subproblem | None = None
                ) -> Generator[Step, None, tuple[bool, str]]:
        """The descent tail DCA and IRL1 share: yield ``it``, then ``advance(it)`` until the step
        ``||(w,b)^{k+1} - (w,b)^k||`` or the decrease of the raw objective
        ``loss + sum_j phi(t_j)`` falls below ``tol`` (both relative), or ``max_iter`` solves.

        With ``sub``, identical features split evenly are tilted once towards one member before
        the loop linearises (:mod:`fsframe.loops.ties`): the step from the tilted point is not
        monitored and does not stop the loop."""
        ties = Tiebreak(self, sub)
        step = self.surrogate_step(it, surrogate, sub)
        yield step
        f = step.monitored
        for k in range(1, self.max_iter):
            why = separated(self, it, surrogate, sub)
            if why is not None:
                warnings.warn(f"{self.name}: stopped before iteration {k}: {why}", SeparationWarning, stacklevel=3)
                return False, f"{SEPARATION_STOP}: {why}"
            at, tilt = ties.point(it)
            new = advance(at)
            if not new.ok or new.status is Status.OPTIMAL_INACCURATE:
                evidence = separating(it, sub)
                if evidence is not None:
                    warnings.warn(
                        f"{self.name}: subproblem {k} ended {new.status.value} after an iterate that separates the "
                        f"training classes ({evidence}). On separated "
                        "classes the loss vanishes only at infinity and the iterates grow without bound; the "
                        "exponential cones' entries exp(-margin) then leave what the solvers resolve. The classes "
                        "are (nearly) separable at this C: lower C (or the surrogate's alpha), or use an EM or "
                        "log method", SeparationWarning, stacklevel=3)
            step = self.surrogate_step(new, surrogate, sub)
            yield Step(new, step.objective, None) if tilt else step
            if not tilt:
                small, _ = self.small_step(new, it)
                if small:
                    return True, "step below tol"
                if self.small_decrease(step.monitored, f):
                    return True, "objective decrease below tol"
            it, f = new, step.monitored
        return False, "max_iter reached"

    def objective_of(self, sub: Subproblem, it: Iterate, surrogate: Surrogate | None, mask: NDArray) -> float:
        """The objective the loop reports for the coefficients returned: those of ``it`` with the
        groups outside ``mask`` (norms at most 1e-12 of the largest, or fixed at zero) set to zero
        — ``loss + sum_j phi(t_j)`` for a loop that minimises ``phi`` (:attr:`needs_surrogate`),
        else the subproblem's objective (loss plus the slot's penalty: a loop that takes a
        surrogate's slope only, or none). The loss is the model's
        (:meth:`~fsframe.problem.Subproblem.at_support`: its slacks at their least values, at
        the coefficients returned), never the solver's point's."""
        if it.x is None:  # computed by the loop itself (Iterate.computed): its objective is the loop's
            return it.objective
        loss, penalty = sub.at_support(it, mask)
        if surrogate is None or not self.needs_surrogate:
            return loss + penalty
        return loss + float(np.sum(surrogate.phi(np.where(mask, it.t, 0.0))))

    def _warn_selection(self, sel: Selection, r: int) -> None:
        k, got = sel.index, int(sel.mask.sum())
        if got < r:
            warnings.warn(
                f"{self.name}: n_features={r} asked, {got} selected: no iterate had {r} non-zero weights "
                f"(at most {max(sel.counts)}; per iterate {list(sel.counts)}). The first subproblem already "
                "keeps fewer features than asked (an L1-type solution has at most about as many non-zeros as "
                "samples); weaken the sparsity pressure (e.g. a larger C) or choose a smaller n_features",
                ConvergenceWarning, stacklevel=4)
        elif sel.collapsed:
            warnings.warn(
                f"{self.name}: the iterates collapsed below n_features={r} (meaningful non-zeros per iterate "
                f"{list(sel.counts)}); the {r} features are the largest of iterate {k}, the last with at least "
                f"{r}. Weaken the sparsity pressure (e.g. a larger C) if later iterates matter",
                ConvergenceWarning, stacklevel=4)

    # -- the driver ------------------------------------------------------------------------------
    def run(self, sub: Subproblem, surrogate: Surrogate | None, *, n_features: int | None = None,
            callback=None) -> LoopOutcome:
        """Drive :meth:`steps` and report (see the module docstring). ``callback(record,
        iterate)`` is called after every recorded step."""
        run = Run(n_features=n_features, aux=sub.aux)
        gen = self.steps(sub, surrogate, run)
        rule = None if self.chooses else n_features  # the base's n_features rule
        history: list[IterRecord] = []
        good: list[Step] = []
        statuses: list[Status] = []
        monotone, failed = True, False
        finish = Finish(False, "max_iter reached")
        prev_obj = prev_point = None
        scale = 0.0
        ties, distinct = None, []  # n_features counts and ranks distinct columns (loops.ties)
        while True:
            t0 = time.perf_counter()
            try:
                step = next(gen)
            except StopIteration as stop:
                finish = Finish.of(stop.value)
                break
            it = step.iterate
            statuses.append(it.status)
            k = len(history)
            if not it.ok:
                history.append(IterRecord(k, None, None, it.status, time.perf_counter() - t0, params=step.params))
                # expected: recorded, the loop goes on (a probe no backend could decide, which the
                # loop marks ``params["undecided"]``, too: the loop has counted and warned)
                if step.probe and (it.status in INFEASIBLE or (step.params or {}).get("undecided")):
                    if callback is not None:
                        callback(history[-1], it)
                    continue
                gen.close()
                failed = True
                finish = self._failed(it, k, history, good, step.params)
                break
            # the non-zeros the loop decides on: with n_features, the rule's (raw norms, identical
            # columns merged onto their lowest index: a copy takes no slot, loops.ties); without, the
            # zero_tol cut's (each group's contribution |w_j| ||X_j||, selection.contribution)
            if rule is not None:
                if ties is None:  # once the model is built (a loop that never builds it has no classes)
                    ties = Tiebreak(self, sub if getattr(sub, "is_built", False) else None)
                distinct.append(ties.distinct(it))
                counted = distinct[-1]
            else:
                counted = contribution(it.t, group_scale(sub))
            nnz, scale = _support_size(counted, self.zero_tol, scale, self.support_scale == "run")
            point = it.point
            step_len = None if prev_point is None else _step_length(it, prev_point, point)
            mon = step.monitored
            history.append(IterRecord(k, step.objective, nnz, it.status, time.perf_counter() - t0,
                                      step_len, it.loss, step.params, monitored=mon if self.monotone else None))
            if (self.monotone and mon is not None and prev_obj is not None
                    and mon > prev_obj + self.tol * max(1.0, abs(prev_obj))):
                monotone = False
                warnings.warn(
                    f"{self.name}: monitored objective rose from {prev_obj:.8g} to {mon:.8g} at "
                    f"iteration {k} (tolerance {self.tol:g}); the solver's accuracy may be too low for this tol",
                    ConvergenceWarning, stacklevel=3)
            good.append(step)
            prev_obj, prev_point = mon, point
            if callback is not None:
                callback(history[-1], it)
            if rule is not None and nnz <= rule:
                gen.close()
                finish = Finish(True, f"reached n_features={rule} non-zero groups")
                break
        if not good:
            raise PluginError(f"loop {self.name!r}: steps() ended without a solved iterate; a loop yields at least "
                              "one Step with a solution, or raises")
        if not finish.converged and finish.reason == "max_iter reached":
            warnings.warn(f"{self.name}: stopped at max_iter={self.max_iter} before its stopping rule held",
                          ConvergenceWarning, stacklevel=2)
        monotone = monotone and finish.monotone  # a rise the loop found where its steps could not show it
        out = self._answer(sub, surrogate, good, finish.choice, rule,
                           separated=finish.reason.startswith(SEPARATION_STOP), distinct=distinct)
        chosen, mask, objective, info, transform = out
        statuses.extend(info.pop("statuses", ()))
        coef = np.array(chosen.coef, dtype=float)
        if transform is None:  # a transform re-maps the samples: its support indexes its own inputs (greedy RBF)
            groups = chosen.groups if chosen.groups is not None else sub.compiled.slot.groups
            coef[~mask[groups]] = 0.0
        return LoopOutcome(iterate=chosen, coef=coef, support=mask, objective=objective, converged=finish.converged,
                           n_iter=len(history) - failed, history=tuple(history), monotone=monotone,
                           reason=finish.reason, statuses=tuple(statuses), selection={**run.info, **info} or None,
                           transform=transform)

    def _failed(self, it: Iterate, k: int, history: list, good: list, params) -> Finish:
        """A subproblem without a solution: raise, or (``raise_on_failure=False``, after a good
        iterate) warn and stop at the last good one."""
        at = "" if not params else f" (at {', '.join(f'{a}={v!r}' for a, v in params.items())})"
        msg = (f"{self.name}: subproblem {k}{at} ended with status {it.status.value} "
               f"({it.result.message}) on backend {it.result.backend}")
        if not good or self.raise_on_failure:
            partial = (self, tuple(history), good[-1].iterate if good else None)
            raise SolverFailedError.of(
                msg + ("; no solution was found" if not good else
                       "; set raise_on_failure=False to keep the last good iterate"),
                result=it.result, partial=partial)
        warnings.warn(msg + "; returning the last good iterate", ConvergenceWarning, stacklevel=4)
        return Finish(False, f"subproblem failed: {it.status.value}")

    def _answer(self, sub: Subproblem, surrogate, good: list, choice: Choice | None, rule, *,
                separated: bool = False, distinct: list | None = None):
        """``(iterate, support, objective, info, transform)``: the loop's :class:`Choice`; or the
        last step with the support the loop chose; or the base's choice (the ``n_features`` rule or
        the last iterate) with its verified ``zero_tol`` cut. A solved answer ``optimal_inaccurate``
        is warned about (:class:`~fsframe.errors.SolverWarning`); a :class:`Choice` the loop computed
        itself (no solver point: DSO-FS's ``W`` with its certificate's verdict) is the loop's to
        report. After the separation stop (``separated``) the last iterate is cut at ``zero_tol``
        as the :class:`~fsframe.errors.SeparationWarning` names it, unverified (see
        :func:`~fsframe.loops.settle.settle`)."""
        if choice is not None:
            if choice.iterate.x is not None:
                self._warn_inaccurate([choice.iterate])
            return (choice.iterate, np.asarray(choice.support, dtype=bool), choice.objective,
                    {**choice.info, "statuses": tuple(choice.statuses)}, choice.transform)
        last = good[-1]
        if last.support is not None:
            self._warn_inaccurate([last.iterate])
            support = np.asarray(last.support, dtype=bool)
            if last.transform is not None:  # the support indexes the transform's inputs, not the groups:
                return last.iterate, support, last.iterate.objective, {}, last.transform  # solved as returned
            return last.iterate, support, self.objective_of(sub, last.iterate, surrogate, support), {}, None
        iterates = [s.iterate for s in good]
        self._warn_inaccurate(iterates)
        selection = {}
        if rule is not None:
            # ranked on ``distinct`` (per iterate, the norms with identical columns merged: loops.ties)
            ranked = iterates if not distinct else [
                it if d is it.t else attrs.evolve(it, t=d) for it, d in zip(iterates, distinct)]
            sel = select_exactly(ranked, rule, self.zero_tol)
            idx, mask = sel.index, sel.mask
            selection = {"n_features_iterate": idx, "n_features_dropped": int(sel.counts[idx] - mask.sum())}
            self._warn_selection(sel, rule)
        elif separated:  # the support the SeparationWarning names (separated(): the iterate's own scale)
            idx = len(iterates) - 1
            mask = support_of(contribution(iterates[idx].t, group_scale(sub)), self.zero_tol)
        else:  # each group's contribution |w_j| ||X_j|| against the run's largest (selection.contribution)
            idx = len(iterates) - 1
            cols = group_scale(sub)
            mask = support_of(contribution(iterates[idx].t, cols), self.zero_tol, reference_scale(iterates, cols))
        chosen, mask, objective, cut = settle(self, sub, surrogate, iterates[idx], mask, good[idx].objective,
                                              selecting=rule is not None, first=iterates[0], separated=separated)
        if chosen is not iterates[idx] and chosen.status is Status.OPTIMAL_INACCURATE:
            warnings.warn(
                f"{self.name}: the re-solve that gives the returned model (on its {int(mask.sum())} selected "
                f"groups) was solved only to {Status.OPTIMAL_INACCURATE.value} ({chosen.result.message}); its "
                "objective and coefficients may be off by more than the solver's tolerance — standardise the "
                "features, tighten the backend's tolerances or try another backend", SolverWarning, stacklevel=3)
        return chosen, mask, objective, {**selection, **cut}, good[idx].transform

    def _warn_inaccurate(self, iterates: list) -> None:
        inaccurate = [it for it in iterates if it.status is Status.OPTIMAL_INACCURATE]
        if inaccurate:
            # "auto"'s working set rechecked on the full problem (Subproblem._recheck_full): which answer was taken
            rechecks = [it.report.recheck for it in inaccurate if getattr(it.report, "recheck", "")]
            which = f"; {rechecks[0]} (the recheck: certificate['recheck'])" if rechecks else ""
            warnings.warn(
                f"{self.name}: {len(inaccurate)} of {len(iterates)} subproblems were solved only to "
                f"{Status.OPTIMAL_INACCURATE.value} (first: {inaccurate[0].result.message}){which}; the result may be "
                "off by more than the solver's tolerance — tighten the backend's tolerances or try another backend",
                SolverWarning, stacklevel=4)
