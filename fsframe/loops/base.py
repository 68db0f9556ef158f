"""The :class:`OuterLoop` base: drives a sequence of convex subproblems and owns convergence.

A loop is a small generator, :meth:`OuterLoop.steps`, that chooses slot weights, calls
``sub.solve(...)`` and yields each :class:`~fsframe.problem.Iterate` with the value of the
objective it monitors; it returns ``(converged, reason)`` when its own stopping rule fires.
:meth:`OuterLoop.run` does the rest for every loop alike:

* records the history (objective, non-zeros, status, seconds per iteration);
* checks that the monitored objective does not rise by more than ``tol`` (relative) for loops
  that guarantee descent (DCA, MM/EM, IRL1) and reports any rise in the result
  (``monotone=False``, a :class:`~fsframe.errors.ConvergenceWarning`) instead of hiding it;
* stops on a subproblem that has no solution: raises
  :class:`~fsframe.errors.SolverFailedError` with the partial result, or with
  ``raise_on_failure=False`` keeps the last good iterate and says so;
* applies the "exactly ``r`` features" rule of 002 §3.1 (see :func:`select_exactly`);
* verifies the ``zero_tol`` cut by a restricted re-solve, so that the support comes from a step
  that keeps optimality and the objective reported is that of the coefficients returned
  (:meth:`OuterLoop._settle`).
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
from ..errors import ConvergenceWarning, SolverFailedError, SolverWarning
from ..surrogates.base import Surrogate

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["OuterLoop", "LoopOutcome", "IterRecord", "Step", "support_of", "select_exactly", "Selection",
           "monitored_series"]


@attrs.frozen
class IterRecord:
    """One outer-loop iteration."""

    k: int
    objective: float | None
    n_nonzero: int | None
    status: Status
    seconds: float
    step: float | None = None
    loss: float | None = None
    params: dict | None = None  # a bound search's (bounds, feasible, bound value, ...) at this solve
    monitored: float | None = None  # the quantity whose descent the loop checks (OuterLoop.monitored_quantity)

    def as_dict(self) -> dict:
        d = attrs.asdict(self)
        d["status"] = self.status.value
        return d


_SAME = object()


@attrs.frozen(eq=False)
class Step:
    """What a loop's generator yields.

    ``objective`` is reported (history, result); ``monitored`` is the quantity whose descent
    theory guarantees (default: the objective; ``None``: no check for this step).
    """

    iterate: Iterate
    objective: float | None
    monitored: float | None = attrs.field(default=_SAME)

    def __attrs_post_init__(self):
        if self.monitored is _SAME:
            object.__setattr__(self, "monitored", self.objective)


@attrs.frozen(eq=False)
class LoopOutcome:
    iterate: Iterate  # the chosen iterate
    coef: NDArray  # its coefficients after the n_features rule
    support: NDArray
    objective: float | None
    converged: bool
    n_iter: int
    history: tuple
    monotone: bool
    reason: str
    statuses: tuple
    selection: dict | None = None  # the n_features rule (iterate, groups dropped) and the zero_tol cut's check
    transform: object | None = None  # a loop that changes the model's rows (greedy RBF mask): predict through it


def support_of(t: NDArray, zero_tol: float, scale: float = 0.0) -> NDArray:
    """Groups whose norm exceeds ``zero_tol`` times ``max(largest norm, scale)`` (and 1e-12
    absolutely). ``scale`` is the run's reference magnitude (the largest group norm of any of
    its iterates): an iterate that collapsed towards zero has no meaningful non-zero left even
    if its own largest norm is 1e-9."""
    t = np.asarray(t, dtype=float)
    if t.size == 0:
        return np.zeros(0, dtype=bool)
    cut = max(zero_tol * max(float(np.max(t)), scale), 1e-12)
    return t > cut


def reference_scale(iterates) -> float:
    """The largest group norm over ``iterates`` (the scale meaningful non-zeros are measured on)."""
    return max((float(np.max(it.t, initial=0.0)) for it in iterates), default=0.0)


@attrs.frozen
class Selection:
    """What :func:`select_exactly` chose: the iterate ``index``, the kept groups ``mask``, the
    meaningful non-zeros per iterate (``counts``), and whether the loop ``collapsed`` below
    ``r`` (an iterate after the chosen one had fewer than ``r``). Unpacks as ``(index, mask)``."""

    index: int
    mask: NDArray
    counts: tuple
    collapsed: bool

    def __iter__(self):  # ``idx, mask = select_exactly(...)``
        return iter((self.index, self.mask))


def select_exactly(iterates: list[Iterate], r: int, zero_tol: float) -> Selection:
    """Choose an iterate and its ``r`` strongest groups (002 §3.1, after Weston et al. 2003).

    The paper stops "at the last iteration where ||w||_0 <= r" and keeps "the r largest
    features of w". Non-zeros are counted as meaningful on the run's scale
    (:func:`support_of` with :func:`reference_scale`), so an iterate whose weights all shrank to
    1e-8 counts as empty. Take the last iterate that still has at least ``r`` meaningful
    non-zeros (the loop stops at the first with at most ``r``, so this is that one when it has
    exactly ``r``, else the one before it) and keep its ``r`` largest group norms. When no iterate
    has ``r`` (e.g. an L1 start keeps fewer than ``r`` features when samples are few), take the
    one with the most and keep all of its meaningful non-zeros: fewer than ``r`` result.
    """
    scale = reference_scale(iterates)
    counts = tuple(int(support_of(it.t, zero_tol, scale).sum()) for it in iterates)
    enough = [i for i, c in enumerate(counts) if c >= r]
    k = enough[-1] if enough else int(np.argmax(counts))
    t = iterates[k].t
    order = np.argsort(-t, kind="stable")
    keep = order[: min(r, counts[k])]
    mask = np.zeros(t.shape[0], dtype=bool)
    mask[keep] = True
    return Selection(k, mask, counts, collapsed=any(c < r for c in counts[k + 1:]))


def monitored_series(loop, surrogate, history) -> tuple[list, str] | None:
    """``(values, what they are)`` whose descent ``loop`` checked over ``history``, or None when it
    checked none: the records' ``monitored`` values (the base driver, :meth:`OuterLoop.run`), or,
    for a loop with its own driver that guarantees descent (DSO-FS, RFS), the objective it
    reports, which is what such a driver checks."""
    if any(getattr(h, "monitored", None) is not None for h in history):
        return [getattr(h, "monitored", None) for h in history], loop.monitored_quantity(surrogate)
    if getattr(type(loop), "monotone", False) and type(loop).run is not OuterLoop.run:
        return [h.objective for h in history], "the objective it reports (its own driver checks its descent)"
    return None


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
    """Surrogate capabilities the loop needs (see :data:`fsframe.surrogates.CAPABILITIES`)."""
    needs_surrogate: ClassVar[bool] = True
    formulations: ClassVar[tuple | None] = None
    """Names of the formulations the loop runs on (``None``: any). A loop that runs its own
    algorithm on one model (DSO-FS on ``margin``, RFS on ``l21-regression``) names it; ``resolve``
    refuses the others."""
    monotone: ClassVar[bool] = True
    """Whether theory guarantees the monitored objective does not increase."""
    sparse_input: ClassVar[bool] = False
    """Whether the loop works on a scipy.sparse ``X``: True for a loop that reaches the data only
    through the subproblem's solves (``sub.solve``); a loop that reads ``sub.X`` itself (a mask
    search, a closed-form algorithm, a filter) keeps the default, and a sparse ``X`` is refused."""

    max_iter: int = attrs.field(default=20, converter=as_int, validator=positive_int)
    tol: float = attrs.field(default=1e-5, converter=to_float, validator=real(0))
    zero_tol: float = attrs.field(default=1e-6, converter=to_float, validator=real(0, 1))
    raise_on_failure: bool = attrs.field(default=True, validator=instance_of(bool))

    # -- what the loop needs ------------------------------------------------------------------
    @abc.abstractmethod
    def terms(self, surrogate: Surrogate | None) -> frozenset:
        """The sparsity-slot terms the subproblem needs for this surrogate."""

    def missing(self, surrogate: Surrogate | None) -> list[str]:
        """Capabilities ``surrogate`` lacks for this loop (empty if compatible)."""
        if surrogate is None:
            return ["a surrogate"] if self.needs_surrogate else []
        caps = surrogate.capabilities()
        return [c for c in self.requires if c not in caps]

    def formulation_missing(self, formulation) -> list[str]:
        """What ``formulation`` (class or instance) lacks for this loop (empty if compatible);
        e.g. a bound search needs declared bound parameters. The default: any formulation, or only
        those named in :attr:`formulations` when a loop declares them."""
        if self.formulations is not None and formulation.name not in self.formulations:
            return [f"to be one of the formulations {list(self.formulations)} this loop runs on"]
        return []

    @abc.abstractmethod
    def steps(self, sub: Subproblem, surrogate: Surrogate | None) -> Generator[Step, None, tuple[bool, str]]:
        """Yield one :class:`Step` per subproblem; return ``(converged, reason)``."""

    def monitored_quantity(self, surrogate: Surrogate | None) -> str:
        """What :attr:`IterRecord.monitored` holds, in words (the trace picture's label): by
        default the raw objective ``loss + sum_j phi(t_j)`` that DCA and IRL1 guarantee to decrease."""
        return "loss + Σ φ(t_j), at the solver's point"

    # -- shared helpers -------------------------------------------------------------------------
    def small_step(self, new: Iterate, old: Iterate) -> tuple[bool, float]:
        step = float(np.linalg.norm(new.point - old.point))
        return step <= self.tol * max(1.0, float(np.linalg.norm(old.point))), step

    def small_decrease(self, f_new: float, f_old: float) -> bool:
        return f_new >= f_old - self.tol * max(1.0, abs(f_old))

    def surrogate_objective(self, it: Iterate, surrogate: Surrogate, *, raw: bool = False) -> float:
        """``loss + sum_j phi(||w_(j)||)``.

        Reported (default): groups outside the support (norm below ``zero_tol`` times the largest)
        count as zero, so the objective agrees with the support and coefficients returned — it
        matters for ``l0``/``lp`` at small ``p``, where a norm of 1e-10 costs 1 or 1e-5.
        ``raw=True``: the exact value at the solver's point, the quantity DCA and MM theory
        guarantee to decrease, used by stopping rules and the monotonicity check."""
        t = it.t if raw else np.where(support_of(it.t, self.zero_tol), it.t, 0.0)
        return it.loss + float(np.sum(surrogate.phi(t)))

    def surrogate_step(self, it: Iterate, surrogate: Surrogate) -> "Step":
        """A :class:`Step` reporting the support-rule objective and monitoring the raw one."""
        if not it.ok:
            return Step(it, None, None)
        return Step(it, self.surrogate_objective(it, surrogate),
                    self.surrogate_objective(it, surrogate, raw=True))

    def descend(self, it: Iterate, advance, surrogate: Surrogate) -> Generator[Step, None, tuple[bool, str]]:
        """The descent tail DCA and IRL1 share: yield ``it``, then ``advance(it)`` until the step
        ``||(w,b)^{k+1} - (w,b)^k||`` or the decrease of the raw objective
        ``loss + sum_j phi(t_j)`` falls below ``tol`` (both relative), or ``max_iter`` solves."""
        step = self.surrogate_step(it, surrogate)
        yield step
        f = step.monitored
        for _ in range(1, self.max_iter):
            new = advance(it)
            step = self.surrogate_step(new, surrogate)
            yield step
            small, _ = self.small_step(new, it)
            if small:
                return True, "step below tol"
            if self.small_decrease(step.monitored, f):
                return True, "objective decrease below tol"
            it, f = new, step.monitored
        return False, "max_iter reached"

    def objective_of(self, it: Iterate, surrogate: Surrogate | None, mask: NDArray) -> float:
        """The objective the loop reports for the coefficients returned: ``it``'s, with the groups
        outside ``mask`` (norms at most 1e-12 of the largest, or fixed at zero) set to zero —
        ``loss + sum_j phi(t_j)``, or the subproblem's optimum without a surrogate."""
        if surrogate is None:
            return it.objective
        return it.loss + float(np.sum(surrogate.phi(np.where(mask, it.t, 0.0))))

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

    def _penalty_negligible(self, it: Iterate, surrogate: Surrogate | None) -> bool:
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
        return pen <= self.tol * abs(it.loss + pen)

    def _settle(self, sub: Subproblem, surrogate, it: Iterate, mask: NDArray, objective, *, selecting: bool,
                first: Iterate | None = None):
        """Make the support come from a step that keeps optimality, and the objective that of
        the coefficients returned.

        When ``mask`` cuts groups whose norm is not exactly zero, the iterate's subproblem is
        re-solved (same weights, warm) with the cut groups fixed at zero. With ``n_features``
        (``selecting``) the re-solve is the model on the selected features, with the slot weights of
        the run's ``first`` subproblem (the method's base convex model: the L2 SVM of an EM run, the
        L1 start of DCA / reweighted-l1; the late iterates' weights can be so heavy — EM's ``1/t^2``
        after a collapse — that their model predicts one class), and is taken; otherwise
        it is taken only if its optimum is within tolerance of the uncut one (``tol`` relative,
        and 1e-9 absolute). If it is not, the uncut point is kept with the groups above 1e-12 of
        the largest norm. Returns ``(iterate, mask, objective, info)``."""
        cut = mask.copy()
        base = it.objective
        statuses: tuple = ()
        if not selecting and cut.any() and self._penalty_negligible(it, surrogate):
            # the whole penalty is solver noise (e.g. an L1-SVM whose C is so small that w = 0 is
            # optimal): the relative rule cannot tell noise from signal, so propose the empty support
            re = sub.restricted(it, np.zeros_like(cut))
            statuses = (re.status,)
            if re.ok and re.objective is not None and base is not None \
                    and re.objective - base <= self.tol * abs(base) + 1e-9 * (1.0 + abs(base)):
                return re, np.zeros_like(cut), self.objective_of(re, surrogate, np.zeros_like(cut)), {
                    "zero_tol_cut": int((it.t > 0).sum()), "statuses": statuses,
                    "zero_tol_cut_rise": float(re.objective - base), "zero_tol_cut_verified": True}
        dropped = ~cut & (it.t > 0)
        base_model = first is not None and first is not it  # selecting: re-solve with the first weights
        if not dropped.any() and not (selecting and base_model):
            return it, cut, objective, ({"statuses": statuses} if statuses else {})
        info: dict = {"zero_tol_cut": int(dropped.sum())}
        re = sub.restricted(first if selecting and base_model else it, cut)
        info["statuses"] = statuses + (re.status,)
        if re.ok and re.objective is not None and base is not None:
            gap = re.objective - base
            info["zero_tol_cut_rise"] = float(gap)
            if selecting or gap <= self.tol * abs(base) + 1e-9 * (1.0 + abs(base)):
                if not selecting:
                    cut &= re.t > 0
                info["zero_tol_cut_verified"] = True
                return re, cut, self.objective_of(re, surrogate, cut), info
        info["zero_tol_cut_verified"] = False
        if selecting:
            msg = (f"{self.name}: the re-solve on the {int(cut.sum())} selected features ended with status "
                   f"{re.status.value} ({re.result.message})")
            if re.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
                warnings.warn(
                    msg + ": no model on these features satisfies the formulation's constraints (e.g. MPM's "
                    "bound delta); the coefficients are the chosen iterate's, cut, they violate the constraints, "
                    "and no objective is reported. Ask for more features or relax the constraints",
                    ConvergenceWarning, stacklevel=4)
                return it, cut, None, info
            if self.raise_on_failure:
                raise SolverFailedError(msg + "; set raise_on_failure=False to keep the selection without "
                                        "an objective", result=re.result)
            warnings.warn(msg + "; the coefficients are the chosen iterate's, cut, and no objective is "
                          "reported", ConvergenceWarning, stacklevel=4)
            return it, cut, None, info
        warnings.warn(
            f"{self.name}: cutting {int(dropped.sum())} small groups (zero_tol={self.zero_tol:g}) raises the "
            "subproblem's optimum beyond tol; returning the uncut solution, whose small weights are part of "
            "the optimum (a smaller zero_tol or a simplex backend gives a cleaner support)",
            ConvergenceWarning, stacklevel=4)
        keep = support_of(it.t, 1e-12)
        return it, keep, self.objective_of(it, surrogate, keep), info

    # -- the driver ------------------------------------------------------------------------------
    def run(self, sub: Subproblem, surrogate: Surrogate | None, *, n_features: int | None = None,
            callback=None) -> LoopOutcome:
        history: list[IterRecord] = []
        good: list[Iterate] = []
        objectives: list[float | None] = []
        statuses: list[Status] = []
        monotone = True
        reason, converged = "max_iter reached", False
        gen = self.steps(sub, surrogate)
        prev_obj = None
        prev_point = None
        scale = 0.0
        k = 0
        while True:
            t0 = time.perf_counter()
            try:
                step = next(gen)
            except StopIteration as stop:
                converged, reason = stop.value if stop.value is not None else (True, "loop finished")
                break
            it = step.iterate
            statuses.append(it.status)
            if k == 0 and not good and it.status is not Status.OPTIMAL:  # the model may know why
                err = sub.formulation.explain_failure(sub, it)
                if err is not None:
                    gen.close()
                    raise err
            if not it.ok:
                rec = IterRecord(k, None, None, it.status, time.perf_counter() - t0)
                history.append(rec)
                msg = (f"{self.name}: subproblem {k} ended with status {it.status.value} "
                       f"({it.result.message}) on backend {it.result.backend}")
                if not good or self.raise_on_failure:
                    partial = (self, tuple(history), good[-1] if good else None)
                    raise SolverFailedError(
                        msg + ("; no solution was found" if not good else
                               "; set raise_on_failure=False to keep the last good iterate"),
                        result=it.result, partial=partial)
                warnings.warn(msg + "; returning the last good iterate", ConvergenceWarning, stacklevel=3)
                reason, converged = f"subproblem failed: {it.status.value}", False
                break
            scale = max(scale, float(np.max(it.t, initial=0.0)))
            nnz = int(support_of(it.t, self.zero_tol, scale).sum())
            step_len = None if prev_point is None else float(np.linalg.norm(it.point - prev_point))
            mon = step.monitored
            history.append(IterRecord(k, step.objective, nnz, it.status, time.perf_counter() - t0,
                                      step_len, it.loss, monitored=mon if self.monotone else None))
            if (self.monotone and mon is not None and prev_obj is not None
                    and mon > prev_obj + self.tol * max(1.0, abs(prev_obj))):
                monotone = False
                warnings.warn(
                    f"{self.name}: monitored objective rose from {prev_obj:.8g} to {mon:.8g} at "
                    f"iteration {k} (tolerance {self.tol:g}); the solver's accuracy may be too low for this tol",
                    ConvergenceWarning, stacklevel=3)
            good.append(it)
            objectives.append(step.objective)
            prev_obj = mon
            prev_point = it.point
            if callback is not None:
                callback(history[-1], it)
            k += 1
            if n_features is not None and nnz <= n_features:
                gen.close()
                reason, converged = f"reached n_features={n_features} non-zero groups", True
                break
        if not converged and reason == "max_iter reached":
            warnings.warn(f"{self.name}: stopped at max_iter={self.max_iter} before its stopping rule held",
                          ConvergenceWarning, stacklevel=2)
        inaccurate = [it for it in good if it.status is Status.OPTIMAL_INACCURATE]
        if inaccurate:
            warnings.warn(
                f"{self.name}: {len(inaccurate)} of {len(good)} subproblems were solved only to "
                f"{Status.OPTIMAL_INACCURATE.value} (first: {inaccurate[0].result.message}); the result may be off "
                "by more than the solver's tolerance — tighten the backend's tolerances or try another backend",
                SolverWarning, stacklevel=2)
        selection = None
        if n_features is not None:
            sel = select_exactly(good, n_features, self.zero_tol)
            idx, mask = sel.index, sel.mask
            selection = {"n_features_iterate": idx,
                         "n_features_dropped": int(sel.counts[idx] - mask.sum())}
            self._warn_selection(sel, n_features)
        else:
            idx = len(good) - 1
            mask = support_of(good[idx].t, self.zero_tol, reference_scale(good))
        chosen, mask, objective, cut = self._settle(sub, surrogate, good[idx], mask, objectives[idx],
                                                    selecting=n_features is not None, first=good[0])
        statuses.extend(cut.pop("statuses", ()))
        if chosen is not good[idx] and chosen.status is Status.OPTIMAL_INACCURATE:
            warnings.warn(
                f"{self.name}: the re-solve that gives the returned model (on its {int(mask.sum())} selected "
                f"groups) was solved only to {Status.OPTIMAL_INACCURATE.value} ({chosen.result.message}); its "
                "objective and coefficients may be off by more than the solver's tolerance — standardise the "
                "features, tighten the backend's tolerances or try another backend", SolverWarning, stacklevel=2)
        selection = {**(selection or {}), **cut} or None
        coef = chosen.coef.copy()
        coef[~mask[sub.compiled.slot.groups]] = 0.0
        return LoopOutcome(iterate=chosen, coef=coef, support=mask, objective=objective, converged=converged,
                           n_iter=len(good), history=tuple(history), monotone=monotone, reason=reason,
                           statuses=tuple(statuses), selection=selection)
