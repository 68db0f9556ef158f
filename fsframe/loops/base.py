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
  coefficients returned (:meth:`OuterLoop._settle`);
* reports the outcome (:class:`LoopOutcome`): coefficients zeroed outside the support, the
  objective, the statuses of every solve, and what the loop put in ``run.info``.
"""

from __future__ import annotations

import abc
import math
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
from ..formulation import PROTOCOLS, TRAITS, restater_mismatch
from ..surrogates.base import PROVIDES, Surrogate
from .records import Choice, Finish, IterRecord, LoopOutcome, Run, Step
from .selection import Selection, contribution, group_scale, reference_scale, select_exactly, support_of
from .ties import Tiebreak

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["OuterLoop", "LoopOutcome", "IterRecord", "Step", "Finish", "Choice", "Run", "support_of",
           "reference_scale", "select_exactly", "Selection", "lacking", "monitored_series"]

INFEASIBLE = (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)

FORMULATION_NEEDS = {
    "bounds": "bound parameters to search (bound_params and with_bounds)",
    "mask_space": "the capability to fix a feature group to zero (mask_space)",
    "restate": "parameters restated in place (restatable_params and restate)",
    "explain_failure": "explain_failure",
    "empty_model_threshold": "where the empty model stops being optimal (empty_model_threshold)",
    "auto_values": "an automatic grid of its own (auto_values)",
    "separating_loss": "a loss value below which the iterate separates the classes (separating_loss)",
    "margins": "the per-sample margins of a model (margins), all positive when it separates the classes",
    "from_data": "a solve of its subproblem straight from X (solve_from_data)",
    "quad_from_data": "a solve of its ridge-weighted (EM) step straight from X (solve_quad_from_data)",
    "frontier_retries": "restatements to retry after a first subproblem without a solution (frontier_retries)",
    **TRAITS,
}
"""How a refusal names each formulation capability (:data:`fsframe.formulation.PROTOCOLS`,
:data:`~fsframe.formulation.TRAITS`)."""
assert set(PROTOCOLS) <= set(FORMULATION_NEEDS)


def lacking(required, provided, describe: dict | None = None) -> list[str]:
    """The names in ``required`` absent from ``provided``, each as ``describe`` words it (the
    name itself when it has no entry): the one check of what a loop requires of a surrogate and of
    a formulation (skglm's ``check_attrs``), every gap listed at once."""
    describe = describe or {}
    return [describe.get(c, c) for c in required if c not in provided]


def monitored_series(loop, surrogate, history) -> tuple[list, str] | None:
    """``(values, what they are)`` whose descent ``loop`` checked over ``history``, or None when it
    checked none: the records' ``monitored`` values (the base driver, :meth:`OuterLoop.run`), or,
    for a loop with its own driver that guarantees descent (DSO-FS), the objective it reports,
    which is what such a driver checks."""
    if any(getattr(h, "monitored", None) is not None for h in history):
        return [getattr(h, "monitored", None) for h in history], loop.monitored_quantity(surrogate)
    if getattr(type(loop), "monotone", False) and type(loop).run is not OuterLoop.run:
        return [h.objective for h in history], "the objective it reports (its own driver checks its descent)"
    return None


SEPARATION_STOP = "separated classes, saturated surrogate"  # the stop reason of the separation stop


def _norm(v: np.ndarray) -> float:
    """``float(np.linalg.norm(v))`` of a real vector, bitwise (numpy forms ``sqrt(v . v)`` too),
    without its dispatch: the loops measure two or three steps per iterate (other dtypes, shapes:
    numpy's own; a strided vector too: numpy copies it to contiguous first, and BLAS's strided dot
    rounds otherwise)."""
    if v.dtype != np.float64 or v.ndim != 1 or not v.flags.c_contiguous:
        return float(np.linalg.norm(v))
    return math.sqrt(float(v.dot(v)))


_F8 = np.dtype(np.float64)
_MAX = np.maximum.reduce
"""The reduction ``ndarray.max`` runs (numpy's ``_methods._amax`` calls it with the same arguments),
called without that Python wrapper."""


def _largest(a) -> float:
    """``float(np.max(a, initial=0.0))``, bitwise (the same reduction), without numpy's dispatch for
    an ndarray: the loops take two or three per iterate."""
    return float(_MAX(a, None, None, None, False, 0.0)) if type(a) is np.ndarray else float(np.max(a, initial=0.0))


def _step_length(new: Iterate, old_point: NDArray, point: NDArray | None = None) -> float:
    """``_norm(new.point - old_point)``, the step the base records and a loop's stopping rule
    measures (:meth:`OuterLoop.small_step`), formed once per pair: kept on ``new`` (its memo, as
    :attr:`~fsframe.problem.Iterate.point`) when both points are read-only, and returned again only
    for the same two point objects — a point is kept only while its iterate's model is read-only
    (:attr:`~fsframe.problem.Iterate.point` asks at every reading), so the same objects are the same
    values. Another ``old_point``, a writeable point or an iterate without a memo: formed afresh.
    ``point``: ``new.point`` when the caller has just read it."""
    point = new.point if point is None else point
    memo = getattr(new, "_memo", None)
    kept = memo.get("step") if type(memo) is dict else None
    if kept is not None and kept[0] is old_point and kept[1] is point:
        return kept[2]
    step = _norm(point - old_point)
    if kept is None and type(memo) is dict and not point.flags.writeable and not old_point.flags.writeable:
        memo["step"] = (old_point, point, step)
    return step


def _support_size(a, zero_tol: float, scale: float, run_scale: bool) -> tuple[int, float]:
    """``(int(support_of(a, zero_tol, ref).sum()), max(scale, _largest(a)))`` with ``ref`` that new
    scale when ``run_scale`` (else 0.0): the base's count of an iterate's non-zeros and the run's
    scale after it, the same numbers, from one reduction of ``a`` instead of two (a non-empty
    float64 ndarray; anything else goes through :func:`support_of` and :func:`_largest` as they are)."""
    if type(a) is not np.ndarray or a.dtype != _F8 or not a.size:
        scale = max(scale, _largest(a))
        return int(support_of(a, zero_tol, scale if run_scale else 0.0).sum()), scale
    raw = float(_MAX(a, None))  # support_of's reduction (a.max()); _largest's (initial=0.0) is this or 0.0
    scale = max(scale, raw if not raw < 0.0 else 0.0)
    cut = max(zero_tol * max(raw, scale if run_scale else 0.0), 1e-12)
    return int(np.count_nonzero(a > cut)), scale


def _total(a) -> float:
    """``float(np.sum(a))``, bitwise (the same reduction), without numpy's dispatch for an ndarray."""
    return float(a.sum()) if type(a) is np.ndarray else float(np.sum(a))


def _on_column_scale(it: Iterate, sub: Subproblem | None) -> Iterate:
    """``it`` carrying ``sub``'s column scale (:attr:`~fsframe.problem.Iterate.column_scale`,
    :func:`~fsframe.scales.group_scale`), the one the reported objective's support rule
    reads: ``it`` itself when it carries one already, when there is no ``sub`` or when ``sub`` has
    none (its model not built, its groups not the columns of ``sub.X``). A stand-in iterate without
    the field (a test's scripted solve, not an attrs class) counts as carrying none and is
    returned as it is."""
    if sub is None or getattr(it, "column_scale", None) is not None or not (
            attrs.has(type(it)) and "column_scale" in attrs.fields_dict(type(it))):
        return it
    scale = group_scale(sub)
    return it if scale is None else attrs.evolve(it, column_scale=scale)


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
        compatible): :attr:`requires` against ``surrogate.provides()``, and
        :attr:`needs_surrogate` / :attr:`takes_surrogate`. Override it only for a need no
        capability states (call ``super()`` and append)."""
        if surrogate is None:
            return ["a surrogate (needs_surrogate is True)"] if self.needs_surrogate else []
        if not self.takes_surrogate:
            return ["no surrogate (takes_surrogate is False)"]
        return lacking(self.requires, surrogate.provides(self.requires), PROVIDES)

    def formulation_missing(self, formulation) -> list[str]:
        """What ``formulation`` (an instance) lacks for this loop (empty if compatible):
        :attr:`formulation_requires` against ``formulation.provides()``; a ``bounds`` or
        ``restate`` protocol lost to a ``build`` overridden below its method says so
        (:func:`~fsframe.formulation.restater_mismatch`)."""
        provided = formulation.provides()
        describe = {name: FORMULATION_NEEDS[name] + (f", but {why}" if why else "")
                    for name in self.formulation_requires if name in FORMULATION_NEEDS and name not in provided
                    for why in (restater_mismatch(formulation, name),)}
        return lacking(self.formulation_requires, provided, describe)

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
        scale (:func:`_on_column_scale`), so an override of any signature it has had,
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
            why = self.separated(it, surrogate, sub)
            if why is not None:
                warnings.warn(f"{self.name}: stopped before iteration {k}: {why}", SeparationWarning, stacklevel=3)
                return False, f"{SEPARATION_STOP}: {why}"
            at, tilt = ties.point(it)
            new = advance(at)
            if not new.ok or new.status is Status.OPTIMAL_INACCURATE:
                evidence = self._separating(it, sub)
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

    def separated(self, it: Iterate, surrogate: Surrogate, sub: Subproblem | None) -> str | None:
        """Why the subproblem linearised at ``it`` has no minimiser within reach, or ``None``.

        For a formulation whose loss vanishes only at infinity (protocol ``separating_loss``:
        logistic, multinomial): ``it``'s loss below ``separating_loss()`` means every training
        sample has a positive margin (a term with a margin at most 0 is at least ``C log 2``), so
        along ``it``'s own direction, ``s (w, b)`` with ``s -> inf``, the loss tends to 0. The
        linearised penalty (DCA's ``g' - h'`` and IRL1's weight are both ``phi'(t_j)``) charges
        ``rho = sum_j phi'(t_j) t_j`` per unit of ``s``. When ``rho <= tol * max(1, f)`` (``f``
        the loop's objective at ``it``) the next subproblem's minimiser lies where the loss is
        below what a solver resolves (margins near ``log(C m / rho)``), and with ``rho = 0`` in
        double precision (exp: ``alpha t_j > 36`` on every selected group) there is none: solvers
        stall (``optimal_inaccurate``, or a failure). Paper 000's convergence result assumes
        bounded iterates; on separated classes they are not."""
        evidence = self._separating(it, sub)
        support = support_of(contribution(it.t, group_scale(sub)), self.zero_tol)
        if evidence is None or not support.any() or "derivative" not in surrogate.provides(("derivative",)):
            return None
        t = it.t[support]
        rho = float(np.sum(np.asarray(surrogate.derivative(t), dtype=float) * t))
        f = self.surrogate_objective(it, surrogate, raw=True)
        if not rho <= self.tol * max(1.0, abs(f)):
            return None
        return (f"the iterate separates the training classes ({evidence}) and the penalty no longer holds the "
                f"scale of its {int(support.sum())} selected groups "
                f"(sum_j phi'(t_j) t_j = {rho:.3g} <= tol * f): the next subproblem's loss vanishes only at "
                "infinity, so its minimiser is out of the solvers' reach or does not exist. The support is this "
                "iterate's; the coefficients' scale is arbitrary. The classes are (nearly) separable at this C: "
                "for a bounded model lower C (or the surrogate's alpha), or use an EM or log method")

    @staticmethod
    def _separating(it: Iterate, sub: Subproblem | None) -> str | None:
        """Why ``it`` separates the training classes (every margin positive), or ``None`` (also
        without the protocols): its loss below the formulation's ``separating_loss()`` (every
        margin positive then), or else the formulation's ``margins(X, y, coef, intercept)`` all
        positive — a loss above ``C log 2`` can still separate (many small positive margins)."""
        form = getattr(sub, "formulation", None)
        bound = getattr(form, "separating_loss", None)
        if bound is None or it.loss is None:
            return None
        limit = float(bound())
        if it.loss < limit:
            return f"loss {it.loss:.3g} < {limit:.3g}: every margin positive"
        margins = getattr(form, "margins", None)
        if margins is None or it.coef is None:
            return None
        coef = np.asarray(it.coef, dtype=float)
        if sub.is_built:  # the model's shape (BuiltModel.coef_shape: a row per class for multinomial)
            coef = coef.reshape(sub.built.coef_shape)
        m = np.asarray(margins(sub.X, sub.y, coef, it.intercept), dtype=float)
        if m.size and np.all(m > 0):
            return f"every margin positive, the smallest {float(m.min()):.3g}; loss {it.loss:.3g}"
        return None

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
        the subproblem at that iterate is the one :meth:`separated` found out of the solvers' reach
        (its re-solve ends ``optimal_inaccurate`` or fails). The cut is checked at the iterate
        itself instead: it is taken when the objective of the cut coefficients is within ``tol``
        of the uncut ones' (the dropped groups are noise, e.g. 1e-10 norms), else (a large
        ``zero_tol`` dropping a group the margins need) the uncut point is kept with the groups
        above 1e-12 of the largest norm, with a ConvergenceWarning, as when a verification fails
        (``info["zero_tol_cut_verified"] = False``, ``info["zero_tol_cut_separated"] = True``)."""
        cut = mask.copy()
        if separated and not selecting:
            dropped = ~cut & (it.t > 0)
            objective = self.objective_of(sub, it, surrogate, cut)
            if not dropped.any():
                return it, cut, objective, {}
            info = {"zero_tol_cut": int(dropped.sum()), "zero_tol_cut_verified": False,
                    "zero_tol_cut_separated": True}
            keep = support_of(it.t, 1e-12)
            whole = self.objective_of(sub, it, surrogate, keep)
            if objective <= whole + self.tol * abs(whole) + 1e-9 * (1.0 + abs(whole)):
                return it, cut, objective, info
            warnings.warn(
                f"{self.name}: cutting {int(dropped.sum())} groups (zero_tol={self.zero_tol:g}) after the "
                f"separation stop raises the objective from {whole:.6g} to {objective:.6g}; returning the "
                f"uncut iterate's {int(keep.sum())} groups (a smaller zero_tol keeps the cut)",
                ConvergenceWarning, stacklevel=4)
            info["zero_tol_cut"] = 0
            return it, keep, whole, info
        base = it.objective
        probe: dict = {}
        if not selecting and cut.any() and getattr(sub.formulation, "sparse", True) \
                and self._penalty_negligible(it, surrogate):
            # the whole penalty is solver noise (e.g. an L1-SVM whose C is so small that w = 0 is
            # optimal): the relative rule cannot tell noise from signal, so propose the empty support
            # (a model without a penalty, ``sparse = False``, has nothing to propose it for)
            re = sub.restricted(it, np.zeros_like(cut))
            if re.ok and re.objective is not None and base is not None \
                    and re.objective - base <= self.tol * abs(base) + 1e-9 * (1.0 + abs(base)):
                re = attrs.evolve(re, cut_from=it)  # certified without the cut too (fitting)
                return re, np.zeros_like(cut), self.objective_of(sub, re, surrogate, np.zeros_like(cut)), {
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
        within = (lambda r: r.objective - base <= self.tol * abs(base) + 1e-9 * (1.0 + abs(base)))
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
                return re, cut, self.objective_of(sub, re, surrogate, cut), info
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
                    return full, cut, self.objective_of(sub, full, surrogate, cut), info
            re = full  # the warning below speaks of the full re-solve: a rise, or its status
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
        if re.status is not Status.OPTIMAL:
            # the cut could not be judged: nothing says the small weights are part of the optimum
            warnings.warn(
                f"{self.name}: the re-solve without {int(dropped.sum())} small groups (zero_tol={self.zero_tol:g}) "
                f"ended with status {re.status.value} ({re.result.message}), so the cut is unverified; returning "
                "the uncut solution with its groups above 1e-12 of the largest norm (another backend, e.g. "
                "Clarabel, may settle the cut)", ConvergenceWarning, stacklevel=4)
        else:
            warnings.warn(
                f"{self.name}: cutting {int(dropped.sum())} small groups (zero_tol={self.zero_tol:g}) raises the "
                "subproblem's optimum beyond tol; returning the uncut solution, whose small weights are part of "
                "the optimum (a smaller zero_tol or a simplex backend gives a cleaner support)",
                ConvergenceWarning, stacklevel=4)
        keep = support_of(it.t, 1e-12)
        return it, keep, self.objective_of(sub, it, surrogate, keep), info

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
        as the :class:`~fsframe.errors.SeparationWarning` names it, unverified (see :meth:`_settle`)."""
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
        chosen, mask, objective, cut = self._settle(sub, surrogate, iterates[idx], mask, good[idx].objective,
                                                    selecting=rule is not None, first=iterates[0],
                                                    separated=separated)
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
