"""What a loop and the :class:`~fsframe.loops.base.OuterLoop` base exchange: the :class:`Step` a
loop's generator yields, the :class:`Finish` it returns (with its own :class:`Choice` when it
chooses the answer itself), the :class:`Run` the base hands it, and the records the base keeps
(:class:`IterRecord`, :class:`LoopOutcome`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
from numpy.typing import NDArray

from ..enums import Status

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate

__all__ = ["IterRecord", "Step", "Finish", "Choice", "Run", "LoopOutcome"]


@attrs.frozen
class IterRecord:
    """One outer-loop iteration. ``n_nonzero`` is what the loop decides on at that iterate: with
    ``n_features``, the groups the stop counts (raw norms, identical columns merged onto their
    lowest index: :meth:`fsframe.loops.ties.Tiebreak.distinct`); without, the groups the
    ``zero_tol`` cut would keep (each group's contribution ``|w_j| ||X_j||``,
    :func:`fsframe.loops.selection.contribution`), both on the run's scale. For EM this count is
    by contribution while EM's own fixing of groups at zero compares the raw norms (002's rule):
    a group counted here may be one its next step fixes, and one fixed may still count until its
    weight falls below the cut."""

    k: int
    objective: float | None
    n_nonzero: int | None
    status: Status
    seconds: float
    step: float | None = None
    loss: float | None = None
    params: dict | None = None  # what the loop set for this solve (Step.params: a bound search's bounds, ...)
    monitored: float | None = None  # the quantity whose descent the loop checks (OuterLoop.monitored_quantity)

    def as_dict(self) -> dict:
        d = attrs.asdict(self)
        d["status"] = self.status.value
        return d


_SAME = object()


@attrs.frozen(eq=False)
class Step:
    """What a loop's generator yields: one iterate, and what the base records of it.

    Attributes
    ----------
    iterate : Iterate
        A solved subproblem (``sub.solve(...)``), or an iterate the loop computed itself
        (:meth:`fsframe.problem.Iterate.computed`: DSO-FS's and RFS's numpy steps).
    objective : float or None
        The objective reported for it (history, result).
    monitored : float or None
        The quantity theory says does not rise (default: ``objective``; ``None``: no check for
        this step). Checked only for loops declaring ``monotone``.
    params : dict, optional
        What the loop changed for this solve (a bound search's bounds, a greedy mask's size, ...):
        recorded in the history (``IterRecord.params``).
    support : array of bool, optional
        The groups this iterate selects, when the loop chooses them itself (the greedy loop's
        mask ``E``, a filter's ranked features); ``None``: the base's ``zero_tol`` rule, with its
        verified cut. The base zeroes the coefficients outside it.
    transform : object, optional
        How this iterate predicts, when the loop changes the model's rows (the greedy loop's
        RBF mask): ``FitResult`` predicts through it. The ``support`` then indexes the
        transform's inputs (features inside the kernel), not the coefficients' groups, and the
        coefficients are returned as they are.
    probe : bool
        The loop expects this solve may be infeasible (a bound search's probe): a proven
        infeasibility is recorded and the loop goes on; any other failure is solver trouble.
    """

    iterate: Iterate
    objective: float | None
    monitored: float | None = attrs.field(default=_SAME)
    params: dict | None = None
    support: NDArray | None = None
    transform: object | None = None
    probe: bool = False

    def __attrs_post_init__(self):
        if self.monitored is _SAME:
            object.__setattr__(self, "monitored", self.objective)


@attrs.frozen(eq=False)
class Choice:
    """The answer of a loop that chooses it itself (a bound search's criterion, the last iterate
    of an algorithm computed in numpy with its ``r`` largest groups).

    Attributes
    ----------
    iterate : Iterate
        The chosen iterate: one the loop yielded, or a re-solve it made to reach the answer.
    support : array of bool
        The groups selected; the base zeroes the coefficients outside them.
    objective : float or None
        The objective of the coefficients returned.
    info : dict
        Reported in ``FitResult.info``.
    statuses : tuple
        Statuses of solves that made the answer but are no step (a verifying re-solve).
    transform : object, optional
        As :attr:`Step.transform`.
    """

    iterate: Iterate
    support: NDArray
    objective: float | None
    info: dict = attrs.field(factory=dict)
    statuses: tuple = ()
    transform: object | None = None


@attrs.frozen
class Finish:
    """What a loop's generator returns: whether its stopping rule held, why it stopped, and its
    own :class:`Choice` (``None``: the base chooses). A plain tuple ``(converged, reason)`` is
    read as ``Finish(converged, reason)``.

    ``monotone=False`` reports a rise the loop's own check found where its steps' ``monitored``
    values could not show it (DSO-FS's finish ending above Algorithm 1's point, its rounds in
    between unmonitored); the loop warns, and ``FitResult.monotone`` is then False."""

    converged: bool
    reason: str
    choice: Choice | None = None
    monotone: bool = True

    @classmethod
    def of(cls, value) -> "Finish":
        if value is None:
            return cls(True, "loop finished")
        return value if isinstance(value, Finish) else cls(*value)


@attrs.define
class Run:
    """What the base hands a loop's :meth:`~fsframe.loops.base.OuterLoop.steps`: the fit's
    ``n_features`` (for a loop that chooses its answer itself: ``OuterLoop.chooses``; the base
    applies its own rule to the others); ``info``, a dict the loop fills with what it reports
    (``FitResult.info``), kept even when a failed subproblem ends the run; and ``aux``, the fit's
    :class:`fsframe.AuxSolver` for any problem the loop solves besides the subproblem
    (``None`` outside a fit)."""

    n_features: int | None = None
    info: dict = attrs.field(factory=dict)
    aux: object = None


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
