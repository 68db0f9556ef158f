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
* applies the "exactly ``r`` features" rule of 002 §3.1 (see :func:`select_exactly`).
"""

from __future__ import annotations

import abc
import time
import warnings
from typing import ClassVar, Generator

import attrs
import numpy as np
from attrs.validators import ge, gt, instance_of
from numpy.typing import NDArray

from ..enums import Status
from ..validators import as_int, finite
from ..errors import ConvergenceWarning, SolverFailedError, SolverWarning
from ..problem import Iterate, Subproblem
from ..surrogates.base import Surrogate

__all__ = ["OuterLoop", "LoopOutcome", "IterRecord", "Step", "support_of", "select_exactly"]


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
    selection: dict | None = None  # the n_features rule: which iterate, how many groups it dropped


def support_of(t: NDArray, zero_tol: float) -> NDArray:
    """Groups whose norm exceeds ``zero_tol`` times the largest norm (and 1e-12 absolutely)."""
    t = np.asarray(t, dtype=float)
    if t.size == 0:
        return np.zeros(0, dtype=bool)
    cut = max(zero_tol * float(np.max(t)), 1e-12)
    return t > cut


def select_exactly(iterates: list[Iterate], r: int, zero_tol: float) -> tuple[int, NDArray]:
    """Choose an iterate and its ``r`` strongest groups (002 §3.1, after Weston et al. 2003).

    The paper stops "at the last iteration where ||w||_0 <= r" and keeps "the r largest
    features of w". We read it so that exactly ``r`` features result whenever possible: take
    the first iterate with at most ``r`` non-zero groups; if it has fewer than ``r`` and an
    earlier iterate exists, take the one before (the last with more than ``r``); if no iterate
    gets down to ``r``, take the last. Then keep its ``r`` largest group norms.
    Returns ``(index, mask)``.
    """
    nnz = [int(support_of(it.t, zero_tol).sum()) for it in iterates]
    k = next((i for i, c in enumerate(nnz) if c <= r), len(iterates) - 1)
    if nnz[k] < r and k > 0:
        k -= 1
    t = iterates[k].t
    order = np.argsort(-t, kind="stable")
    keep = order[: min(r, int(np.count_nonzero(t > 0)))]
    mask = np.zeros(t.shape[0], dtype=bool)
    mask[keep] = True
    return k, mask


@attrs.frozen
class OuterLoop(abc.ABC):
    """Base class of outer loops.

    Parameters
    ----------
    max_iter : int
        Maximum number of convex subproblems.
    tol : float
        Relative tolerance of the stopping rules and of the monotonicity check.
    zero_tol : float
        A group counts as selected when its norm exceeds ``zero_tol`` times the largest.
    raise_on_failure : bool
        Raise :class:`~fsframe.errors.SolverFailedError` when a subproblem has no solution
        (default), or stop and return the last good iterate.
    """

    name: ClassVar[str]
    reference: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    """Surrogate capabilities the loop needs (see :data:`fsframe.surrogates.CAPABILITIES`)."""
    needs_surrogate: ClassVar[bool] = True
    monotone: ClassVar[bool] = True
    """Whether theory guarantees the monitored objective does not increase."""

    max_iter: int = attrs.field(default=20, converter=as_int, validator=[instance_of(int), ge(1)])
    tol: float = attrs.field(default=1e-5, converter=float, validator=[gt(0), finite])
    zero_tol: float = attrs.field(default=1e-6, converter=float, validator=[gt(0), finite])
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

    @abc.abstractmethod
    def steps(self, sub: Subproblem, surrogate: Surrogate | None) -> Generator[Step, None, tuple[bool, str]]:
        """Yield one :class:`Step` per subproblem; return ``(converged, reason)``."""

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
            nnz = int(support_of(it.t, self.zero_tol).sum())
            step_len = None if prev_point is None else float(np.linalg.norm(it.point - prev_point))
            history.append(IterRecord(k, step.objective, nnz, it.status, time.perf_counter() - t0,
                                      step_len, it.loss))
            mon = step.monitored
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
            idx, mask = select_exactly(good, n_features, self.zero_tol)
            selection = {"n_features_iterate": idx,
                         "n_features_dropped": int(support_of(good[idx].t, self.zero_tol).sum() - mask.sum())}
        else:
            idx = len(good) - 1
            mask = support_of(good[idx].t, self.zero_tol)
        chosen = good[idx]
        coef = chosen.coef.copy()
        coef[~mask[sub.compiled.slot.groups]] = 0.0
        return LoopOutcome(iterate=chosen, coef=coef, support=mask, objective=objectives[idx], converged=converged,
                           n_iter=len(good), history=tuple(history), monotone=monotone, reason=reason,
                           statuses=tuple(statuses), selection=selection)
