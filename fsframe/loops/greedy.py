"""The greedy mask loop (paper 003, Algorithm 1 — FTSVM; Algorithm 2 — RTSVM ranking).

A 0/1 feature mask ``E`` is alternated with the model: fix ``E`` and solve the convex problem
(the groups outside ``E`` are fixed at zero through the bounds of their columns — the compiled
problem is neither rebuilt nor recompiled, and the solver session is re-used warm); fix the
model and sweep single flips of ``E`` that lower

    f(E) = sigma tr(E) + loss(E; model)                                     (003 eq. 24)

by more than ``tol``, evaluated in numpy without solving; re-solve; stop when

    F = sigma tr(E) + the subproblem's optimum under E                     (003 eq. 21)

decreases by less than ``tol``. The initial ``E`` keeps the features whose score
(eqs. 22-23: the loss of each feature alone, normalised to sum 1) is at least ``1/n``.

A formulation joins the loop by declaring the capability "can fix a feature group to zero":
:meth:`fsframe.formulation.Formulation.mask_space` returns a :class:`MaskSpace` — how to solve
under a mask, the loss of eq. 24 as a function of the model's outputs, and eq. 22's values.
:class:`LinearMaskSpace` is the space of every linear formulation whose slot groups are the
feature columns of its coefficient blocks (the twin SVM's ``(2, n)``, the hinge SVM's ``(n,)``):
it maintains ``R = X E W + b`` and updates it in O(m) per flip (flipping ``j`` adds or removes
``X_j W_j``).
"""

from __future__ import annotations

import abc
import time
import warnings
from typing import Callable, TYPE_CHECKING

import attrs
import numpy as np
from attrs.converters import optional as optional_conv
from attrs.validators import and_, ge, in_, instance_of, optional
from numpy.typing import NDArray

from ..errors import ConvergenceWarning, DataError, IncompatibleComponentsError
from ..validators import as_int, finite, positive_int, real, to_float
from .base import OuterLoop, Step, support_of
from .selection import contribution, group_scale

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["Greedy", "MaskSpace", "MaskEvaluator", "LinearMaskSpace", "LinearMaskEvaluator", "mask_space_of", "check_mask"]

LossFn = Callable[[NDArray], NDArray]
"""``loss(R)``: the formulation's loss at model outputs ``R`` of shape ``(..., m, K)`` (one
column per coefficient block), reduced over the last two axes (shape ``(...)``)."""


class MaskEvaluator(abc.ABC):
    """``loss(E)`` at fixed model coefficients (eq. 24 without ``sigma tr E``), incrementally.

    Attributes ``mask`` (the current ``E``) and ``value`` (its loss)."""

    mask: NDArray
    value: float

    @abc.abstractmethod
    def trial(self, j: int) -> float:
        """The loss with ``E_jj`` flipped (the state is unchanged until :meth:`commit`)."""

    @abc.abstractmethod
    def commit(self, j: int) -> None:
        """Flip ``E_jj`` for good (after :meth:`trial` of the same ``j``)."""

    @abc.abstractmethod
    def scratch(self, mask: NDArray) -> float:
        """The loss at ``mask`` computed from scratch (the reference of the incremental path)."""


class MaskSpace(abc.ABC):
    """What the greedy loop needs from a formulation (see the module docstring).

    Attributes ``n_features`` (the mask's length) and ``lps_per_solve``."""

    n_features: int
    lps_per_solve: int = 1

    @abc.abstractmethod
    def solve(self, mask: NDArray) -> Iterate:
        """Solve the model under ``E = diag(mask)`` (warm; no rebuild)."""

    @abc.abstractmethod
    def evaluator(self, it: Iterate, mask: NDArray) -> MaskEvaluator:
        """eq. 24's loss at ``it``'s coefficients, starting from ``mask``."""

    @abc.abstractmethod
    def feature_values(self, it: Iterate) -> NDArray:
        """eq. 22: the loss of each feature alone at ``it``'s coefficients (shape ``(n_features,)``)."""

    def objective(self, it: Iterate, mask: NDArray) -> float:
        """eq. 21 without ``sigma tr E`` at ``it`` (solved under ``mask``): by default the
        subproblem's optimum."""
        return float(it.objective)

    def transform(self, mask: NDArray):
        """The prediction transform of the model under ``mask`` (``None``: the model's own)."""
        return None


def check_mask(mask: NDArray, n: int) -> NDArray:
    """``mask`` as booleans of shape ``(n,)``; :class:`DataError` if it is not, or removes every feature."""
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (n,):
        raise DataError(f"a feature mask must have shape ({n},), got {mask.shape}")
    if not mask.any():
        raise DataError("a feature mask that removes every feature leaves no model to fit; keep at least one "
                        "feature (the greedy loop never proposes the empty mask)")
    return mask


class LinearMaskEvaluator(MaskEvaluator):
    """eq. 24's loss of a linear model ``R = X E W + b`` with O(m) updates per flip.

    Parameters
    ----------
    X : array (m, n)
    W : array (n, K)
        The coefficient blocks (one column per block).
    b : array (K,)
    mask : array of bool (n,)
    loss : LossFn
    """

    def __init__(self, X: NDArray, W: NDArray, b: NDArray, mask: NDArray, loss: LossFn):
        self.X, self.W, self.b, self.loss = X, W, np.asarray(b, dtype=float).reshape(1, -1), loss
        self.mask = np.array(mask, dtype=bool)
        self.R = X[:, self.mask] @ W[self.mask] + self.b
        self.value = float(loss(self.R))
        self._pending = None

    def _delta(self, j: int) -> NDArray:
        d = self.X[:, j, None] * self.W[j][None, :]  # X_j w_j: the O(m K) change of flipping j
        return -d if self.mask[j] else d

    def trial(self, j):
        R = self.R + self._delta(j)
        self._pending = (j, R)
        return float(self.loss(R))

    def commit(self, j):
        if self._pending is None or self._pending[0] != j:
            self.trial(j)
        self.R = self._pending[1]
        self.mask[j] = ~self.mask[j]
        self.value = float(self.loss(self.R))
        self._pending = None

    def scratch(self, mask):
        mask = np.asarray(mask, dtype=bool)
        return float(self.loss(self.X[:, mask] @ self.W[mask] + self.b))


class LinearMaskSpace(MaskSpace):
    """The mask space of a linear formulation whose slot group ``j`` is feature column ``j`` of
    every coefficient block (coef of shape ``(n,)`` or ``(K, n)``).

    Solving under a mask sets an infinite slot weight on the groups outside it (bounds
    ``[0, 0]`` on their columns; :func:`fsframe.slot.weighted_problem`), the other groups keeping
    ``base_weight``.
    """

    def __init__(self, sub: Subproblem, loss: LossFn, *, base_weight: float = 1.0, lps_per_solve: int = 1):
        X = np.asarray(sub.X, dtype=float)
        self.sub, self.X, self.loss, self.base_weight = sub, X, loss, float(base_weight)
        self.n_features = X.shape[1]
        self.lps_per_solve = lps_per_solve
        shape = tuple(sub.built.coef_shape)
        self.K = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        want = np.tile(np.arange(self.n_features), self.K)
        if shape[-1] != self.n_features or not np.array_equal(sub.compiled.slot.groups, want):
            raise IncompatibleComponentsError(
                f"formulation {sub.formulation.name!r}: the greedy mask needs slot group j = feature column j of "
                f"each coefficient block; coef_shape is {shape} for {self.n_features} features")

    def blocks(self, it: Iterate) -> tuple[NDArray, NDArray]:
        """``(W, b)``: ``it``'s coefficients as an ``(n, K)`` matrix and its intercepts."""
        return it.coef.reshape(self.K, self.n_features).T, np.asarray(it.intercept, dtype=float).reshape(self.K)

    def solve(self, mask):
        mask = check_mask(mask, self.n_features)
        return self.sub.solve(lin=np.where(mask, self.base_weight, np.inf))

    def evaluator(self, it, mask):
        W, b = self.blocks(it)
        return LinearMaskEvaluator(self.X, W, b, check_mask(mask, self.n_features), self.loss)

    def feature_values(self, it):
        W, b = self.blocks(it)
        R = self.X.T[:, :, None] * W[:, None, :] + b  # (n, m, K): each feature alone
        return np.asarray(self.loss(R), dtype=float)


def mask_space_of(sub: Subproblem) -> MaskSpace:
    """The formulation's :class:`MaskSpace`, or :class:`IncompatibleComponentsError`."""
    make = getattr(sub.formulation, "mask_space", None)
    space = make(sub) if make is not None else None
    if space is None:
        raise IncompatibleComponentsError(
            f"formulation {sub.formulation.name!r} cannot fix a feature group to zero (no mask_space): the greedy "
            "loop needs it; use e.g. formulation 'twsvm' or 'hinge'")
    return space


@attrs.frozen
class Greedy(OuterLoop):
    r"""Greedy mask search (003 Algorithm 1, FTSVM) or score ranking (Algorithm 2, RTSVM).

    ``mode="select"`` (Algorithm 1): solve with ``E = I``; ``E_jj = 0`` where the score of
    eq. 23 is below ``threshold`` (default ``1/n``); then alternate (i) solve under ``E`` and
    (ii) sweeps over ``j = 1..n`` flipping ``E_jj`` when eq. 24 drops by more than ``tol``, until
    a whole sweep lowers it by at most ``tol`` (or ``max_sweeps`` sweeps); stop when eq. 21 drops
    by less than ``tol`` (relative to ``max(1, |F|)``), or after ``max_iter`` solves. A flip
    that would empty ``E`` is never proposed, and an initial ``E`` the threshold empties keeps
    the best-scored feature (documented fallback: a model needs a feature).
    ``mode="rank"`` (Algorithm 2): solve with ``E = I`` and rank by eq. 23; with ``n_features=r``
    keep the ``r`` best, otherwise those at or above ``threshold``; re-solve on them.

    With ``n_features=r`` in ``select`` mode, a final ``E`` larger than ``r`` keeps its ``r``
    best-scored features (eq. 23 at the last solve) and is re-solved. The support is ``E``.
    The reported objective is the subproblem's optimum under ``E`` (as for ``single``); eq. 21
    (``sigma tr E`` + that optimum) is the monitored one, whose descent the run checks.
    ``FitResult.info`` reports ``eq21`` (per solve), ``lps_solved``, ``flips_evaluated``,
    ``flips_kept``, ``sweeps``, ``feature_scores`` (of the first solve) and ``sweep_seconds``.

    Parameters
    ----------
    sigma : float >= 0
        Cost per selected feature (eqs. 16-24).
    threshold : float in (0, 1) or None
        Initial-mask score cut (``None``: ``1/n``).
    max_sweeps : int
        ``k`` of Algorithm 1: at most ``k n`` flips per sweep phase.
    mode : {"select", "rank"}
    keep : {"low", "high"}
        Which end of eq. 23's scores is best (kept by the initial mask, ranked first by
        ``rank``). The paper keeps scores at or above ``1/n`` (``"high"``). But eq. 22 is the
        loss of a feature *alone*, so an informative feature has a *low* value, and a weight
        the L1 solve set to zero leaves the constant loss of the intercept alone: with
        ``"high"`` the initial mask drops the informative features, and in the linear case no
        flip brings them back (a masked feature's weight is zero, so adding it leaves eq. 24
        unchanged and costs ``sigma``). ``"low"`` (default) keeps the scores at or below ``1/n``;
        see ``docs/twsvm.md`` for the measured difference.
    """

    name = "greedy"
    reference = "paper 003 Algorithms 1 and 2 (FTSVM, RTSVM); Bradley & Mangasarian RFSVM"
    needs_surrogate = False
    takes_surrogate = False  # each selected feature costs sigma (003 eq. 21); no phi
    formulation_requires = ("mask_space",)
    monotone = True
    chooses = True  # the support is the mask E; n_features is Algorithm 2's r (or E's r best)
    tol: float = attrs.field(default=1e-6, converter=to_float, validator=real(0))
    sigma: float = attrs.field(default=1e-3, converter=to_float, validator=and_(instance_of(float), ge(0), finite))
    threshold: float | None = attrs.field(default=None, converter=optional_conv(to_float),
                                          validator=optional(real(0, 1)))
    max_sweeps: int = attrs.field(default=50, converter=as_int, validator=positive_int)
    mode: str = attrs.field(default="select", validator=in_(("select", "rank")))
    keep: str = attrs.field(default="low", validator=in_(("low", "high")))

    def terms(self, surrogate):
        return frozenset({"lin"})

    # eq. 21 at a solve under mask E
    def _objective(self, space: "MaskSpace", it: Iterate, mask: NDArray) -> float | None:
        if not it.ok or it.objective is None:
            return None
        return self.sigma * float(mask.sum()) + space.objective(it, mask)

    def _sweep(self, ev: MaskEvaluator, stats: dict) -> bool:
        """Flip sweeps (Algorithm 1 step 5); True if some flip was kept."""
        n = ev.mask.size
        kept = False
        cur = self.sigma * float(ev.mask.sum()) + ev.value
        t0 = time.perf_counter()
        for _ in range(self.max_sweeps):
            drop = 0.0
            stats["sweeps"] += 1
            for j in range(n):
                if ev.mask[j] and ev.mask.sum() == 1:
                    continue  # never the empty mask
                new = self.sigma * float(ev.mask.sum() + (-1 if ev.mask[j] else 1)) + ev.trial(j)
                stats["flips_evaluated"] += 1
                if cur - new > self.tol:
                    ev.commit(j)
                    stats["flips_kept"] += 1
                    drop += cur - new
                    cur = new
                    kept = True
            if drop <= self.tol:
                break
        stats["sweep_seconds"] += time.perf_counter() - t0
        return kept

    def steps(self, sub, surrogate, run):
        space = mask_space_of(sub)
        n = space.n_features
        r = run.n_features
        stats = run.info  # reported in FitResult.info, also when a failed solve ends the run
        stats.update(lps_solved=0, flips_evaluated=0, flips_kept=0, sweeps=0, sweep_seconds=0.0, eq21=[])
        thr = 1.0 / n if self.threshold is None else self.threshold
        scale = 0.0  # the run's largest group contribution (the base's support rule, selection.contribution)

        def solve(mask):
            nonlocal scale
            it = space.solve(mask)
            stats["lps_solved"] += space.lps_per_solve
            if it.ok:
                c = contribution(it.t, group_scale(sub))
                scale = max(scale, float(np.max(c, initial=0.0)))
                stats["eq21"].append(self._objective(space, it, mask))
                stats.update(n_in_mask=int(mask.sum()), n_nonzero_groups=int(support_of(c, self.zero_tol, scale).sum()))
            return it

        def step(it, mask, monitored=True):
            # reported: the subproblem's optimum (as for ``single``); monitored: eq. 21; the support is E
            return Step(it, it.objective if it.ok else None, self._objective(space, it, mask) if monitored else None,
                        support=mask.copy(), transform=space.transform(mask))

        mask = np.ones(n, dtype=bool)
        it = solve(mask)
        yield step(it, mask, monitored=False)  # step 1: E = I
        values = space.feature_values(it)
        total = float(values.sum())
        scores = values / total if total > 0 else np.full(n, 1.0 / n)  # eq. 23
        stats["feature_scores"] = scores.tolist()
        # the best first: the lowest eq. 23 score (keep="low") or the highest (keep="high", the paper's text)
        best = scores if self.keep == "low" else -scores
        order = np.argsort(best, kind="stable")
        if self.mode == "rank":
            keep = order[:r] if r is not None else np.flatnonzero(best <= (thr if self.keep == "low" else -thr))
            mask = np.zeros(n, dtype=bool)
            mask[keep if len(keep) else order[:1]] = True
            it = solve(mask)
            yield step(it, mask, monitored=False)
            return True, "ranked by eq. 23"
        mask = best <= (thr if self.keep == "low" else -thr)  # step 2
        if not mask.any():
            mask[order[0]] = True
        it = solve(mask)  # step 3
        f = self._objective(space, it, mask)
        yield step(it, mask)
        converged, reason = False, "max_iter reached"
        for _ in range(2, self.max_iter):
            ev = space.evaluator(it, mask)
            if not self._sweep(ev, stats):
                converged, reason = True, "no flip lowers eq. 24 by more than tol"
                break
            mask = ev.mask.copy()
            it = solve(mask)  # step 6
            f_new = self._objective(space, it, mask)
            yield step(it, mask)
            if f_new is None:
                break
            if self.small_decrease(f_new, f):  # step 7
                converged, reason = True, "eq. 21 decrease below tol"
                break
            f = f_new
        if r is not None and mask.sum() > r:
            values = space.feature_values(it)
            vals = values[mask] if self.keep == "low" else -values[mask]
            keep = np.flatnonzero(mask)[np.argsort(vals, kind="stable")[:r]]
            mask = np.zeros(n, dtype=bool)
            mask[keep] = True
            it = solve(mask)
            yield step(it, mask, monitored=False)
            reason += f"; kept the {r} best-scored features of E"
        if r is not None and mask.sum() < r:
            warnings.warn(f"greedy: n_features={r} asked, the mask keeps {int(mask.sum())} (lower sigma "
                          "to keep more)", ConvergenceWarning, stacklevel=3)
        return converged, reason
