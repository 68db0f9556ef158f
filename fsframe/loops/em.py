"""EM / reweighted quadratic (paper 002 eqs. 7-9 and Prop. 3; paper 004 eqs. 10-13)."""

from __future__ import annotations

import warnings

import attrs
import numpy as np

from attrs.validators import and_, ge, in_, instance_of

from ..errors import ConvergenceWarning, InvalidOptionError
from ..surrogates.base import PROVIDES
from ..validators import as_int, finite, not_bool, positive_int, to_float
from .base import OuterLoop, Step
from .measures import _F8, _largest, _support_size, _total
from .selection import contribution, group_scale, support_of
from .ties import Tiebreak


MAX_WEIGHT = 1e12
"""A group whose EM weight ``q_j``, measured in units of its data (``q_j / max(1, a_j)^2`` with
``a_j`` the largest constraint entry of its columns, see :func:`group_magnitudes`), exceeds this
is fixed at zero. Such a weight holds ``w_(j)`` within about ``1e-12 * C * ||x_j||`` of zero
anyway, and HiGHS refuses Hessian entries above 1e15 (its ``large_matrix_value``): this happens
when the iterates (or the L2 start itself) are all near zero, e.g. a class that no hyperplane
separates from the rest. In data units the rule is scale-invariant, as EM is (002: ``q = 1/w^2``):
an absolute cap fixed every group of features on a scale of 1e6 or more (``w`` near 1e-6, so
``q`` near 1e12) and HiGHS returned an empty model as optimal."""


def group_magnitudes(sub) -> np.ndarray:
    """Per sparsity group, the largest magnitude of a constraint entry (``A``, ``G``) in the
    group's columns: the scale of its features, the unit in which :data:`MAX_WEIGHT` is read."""
    data = sub.compiled.base
    n = data.c.shape[0]
    colmax = np.zeros(n)
    for M in (data.A, data.G):
        if M is not None and M.shape[0] and M.nnz:
            colmax = np.maximum(colmax, np.asarray(abs(M).max(axis=0).todense()).ravel())
    group_cols = sub.compiled.slot.group_cols
    if type(group_cols) is np.ndarray and group_cols.ndim == 2 and group_cols.shape[1]:
        # the groups' columns as the rows of an array (the dense EM subproblem's n x 1): each row's
        # largest, and 0 — the maxima the pass below takes one at a time, in one reduction
        return np.maximum(colmax[group_cols.astype(np.int64, copy=False)].max(axis=1), 0.0)
    out = np.zeros(len(group_cols))
    if out.size:  # one vectorised pass (a Python loop over 2000 groups cost ~10 ms per fit)
        sizes = np.fromiter((c.size for c in group_cols), dtype=np.int64, count=len(group_cols))
        cols = np.concatenate(group_cols).astype(np.int64, copy=False)
        np.maximum.at(out, np.repeat(np.arange(out.size), sizes), colmax[cols])
    return out


def top_settled(norms: list, r: int, iterates: int, ratio: float) -> bool:
    """Whether the ``r`` largest group norms have *settled* (:class:`EM`'s ``early_stop`` rule):
    the last ``iterates + 1`` entries of ``norms`` (group norms per iterate, oldest first) have
    the same ``r`` largest groups (ties by index, as :func:`~fsframe.loops.selection.select_exactly`
    orders them), and in the last one the ``r``-th largest norm is at least ``ratio`` times the
    ``(r + 1)``-th. ``False`` while fewer iterates were seen or an iterate has at most ``r`` groups."""
    if iterates < 1 or len(norms) < iterates + 1:
        return False
    last = np.asarray(norms[-1], dtype=float)
    if last.size <= r:
        return False
    order = np.argsort(-last, kind="stable")
    if not last[order[r - 1]] >= ratio * last[order[r]]:
        return False
    top = np.sort(order[:r])
    return all(np.array_equal(np.sort(np.argsort(-np.asarray(t, dtype=float), kind="stable")[:r]), top)
               for t in norms[-iterates - 1:-1])


def _compiled_twin(q):
    """``(weights, count)``, the compiled twins of the weight function ``q`` and of its surrogate's
    reported penalty (:func:`~fsframe.backends.box_qp_jit.em_zero_norm_weights`: the whole of
    :meth:`EM._weights` in one call; :func:`~fsframe.backends.box_qp_jit.em_zero_norm_count`: the
    ``sum_j phi(t_j)`` of the reported objective; the same bits) when ``q`` is the ``quad_weights``
    of a built-in zero-norm surrogate (``l0``, or ``lp`` with ``p = 0`` and ``eps = 0``; not a
    subclass) and the compiled pivots are in use (the ``fast`` extra, ``FSFRAME_NO_JIT`` not
    set); else ``None``: every other surrogate, a third party's included, keeps numpy's path."""
    from ..surrogates.lp import L0Surrogate, LpSurrogate

    owner = getattr(q, "__self__", None)
    kind = type(owner)
    if not (kind is L0Surrogate or (kind is LpSurrogate and owner.p == 0.0 and owner.eps == 0.0)):
        return None
    if getattr(q, "__func__", None) is not kind.quad_weights:
        return None
    from ..backends import box_qp, box_qp_jit

    return box_qp_jit.compiled_em_twins() if box_qp.compiled_available() else None


def _plain(*arrays) -> bool:
    """Whether every one of ``arrays`` is a C-contiguous float64 vector (what the compiled twin takes)."""
    for a in arrays:  # a loop, not all() over a generator: the EM loop asks three times per step
        if not (type(a) is np.ndarray and a.dtype == _F8 and a.ndim == 1 and a.flags.c_contiguous):
            return False
    return True


_BOOL = np.dtype(np.bool_)  # compared as a dtype (as measures._F8): no conversion per check


MAX_CHECKS = 4
"""Check steps per run (see :class:`EM`): a group the check revives may fall back to the floor and
be revived again; after this many checks that revive, the loop stops and says so."""

FLOOR_RATIO = 1e3
"""Cap of a group's floor ``c_j = c / ||X_j||`` in the check step (see :class:`EM`), as a multiple
of the largest group norm of the iterate checked: a column that is constant up to rounding
(``||X_j||`` ~1e-16) would otherwise put ``c_j`` near ``1e16 c`` and its weight ``q(c_j)`` near
0, and the check QP turns singular (HiGHS stops at its iteration limit)."""


@attrs.frozen
class EM(OuterLoop):
    r"""Reweighted quadratic iterations (002 eqs. 7-9)::

        (w, b)^(t) = argmin  loss + sum_j q_j^(t-1) ||w_(j)||^2,    q^(t) = q(t^(t))

    **Weights** (``weights=``):

    * ``"majorizer"`` (default): ``q(t) = phi'(t) / (2 t)``, the curvature of the quadratic (in
      ``t``) majoriser of the concave ``phi`` at ``t^k``, so EM is a majorise-minimise scheme for
      the objective every loop reports, ``loss + sum_j phi(t_j)``: at ``p = 1`` (``lp``, or ``l1``)
      it is the classical IRLS of the (group) lasso and reaches the convex optimum of
      ``loss + sum_j ||w_(j)||``, the optimum ``single`` and ``reweighted-l1`` reach with the same
      ``C``. A surrogate without a derivative (``l0``, ``lp`` with ``p = 0``: the zero-norm, whose
      ``phi'`` is 0 wherever it exists) has no majoriser: its own ``quad_weights`` are used (002
      eq. 9, ``1/t^2``).
    * ``"paper"``: the surrogate's ``quad_weights`` as the papers write them — 002 eq. 9 and
      Prop. 3 with ``gamma = 1`` (``lp``: ``t^(p-2)``), AROM's ``phi'(t)/t`` (Weston et al.), 004
      eq. 10. A fixed point is then a stationary point of ``loss + kappa sum_j phi(t_j)`` with
      ``kappa = 2 t q(t) / phi'(t)``: 2 for ``exp``/``log``/``l1``, ``2/p`` for ``lp`` — the same
      model with the loss weight ``C / kappa``. The methods ``em-l0`` and ``arom`` use it.

    With ``lp``/``l0`` on row groups this is 004's ``l_{2,p}`` update (eq. 10).

    **Early stop with ``n_features``** (``early_stop=K``, off by default). With ``n_features=r``
    the run ends at the first iterate with at most ``r`` meaningful non-zeros (or when EM
    converges), and its answer is the ``r`` largest groups of the last iterate that still has
    ``r`` (002 §3.1). The ``r`` largest groups are often the same long before that. With
    ``early_stop=K`` the run also ends after a regular step whose ``r`` largest groups are those of
    the ``K`` iterates before it and whose ``r``-th largest norm is at least ``early_stop_ratio``
    (default 5) times the ``(r + 1)``-th (:func:`top_settled`); the answer is then those ``r``
    groups (the iterate still has more than ``r`` meaningful non-zeros, so
    :func:`~fsframe.loops.selection.select_exactly` takes it), and the returned model is the same
    re-solve on them as after a full run.

    *What it guarantees*: the steps up to the stop are those of the full run, every answer is
    judged by the certificate as before, and the re-solve on the selected features is unchanged:
    when the selection equals the full run's, so does the model (up to the solver's accuracy).
    *What it does not*: that the selection equals the full run's. No bound keeps a selected group
    from shrinking later — under the zero-norm's weights (002 eq. 9) a step gives ``w_j`` proportional
    to ``t_j^2 g_j`` with ``g = X'Y lam`` (``lam`` the step's dual), so the ratio of two groups'
    norms becomes ``(t_a / t_b)^2 |g_a / g_b|``, and ``|g_a|`` has no lower bound — so the rule is a
    heuristic, measured, not proven: on 200 seeded instances of Sonar, Ionosphere and Colon and 195
    generated and breast-cancer ones (docs/performance.md, "Issue 19 at a glance") ratio 5 changed no
    selection at any ``K`` from 1 to 8, and ratio 2 changed one. That is why it is opt-in.

    **Zeros.** Let ``c = zero_tol * T`` (``T`` the largest group contribution ``||w_(j)|| ||X_j||``
    seen in the run so far, :func:`~fsframe.loops.selection.contribution`, the measure the base's
    ``zero_tol`` cut uses: the L2 start's, typically; a floor that followed a collapsing iterate
    down would let the weights reach 1e24, which HiGHS rejects). A group whose contribution falls
    to ``c`` is fixed at exactly zero (``q = inf``, bounds ``[0, 0]``): it leaves the problem, and
    the weights ``q`` near 0 (up to ``q(c_j)``, ~1e6 times the others) leave the QPs, which they
    make hard to solve accurately. The floor of group ``j`` in its own units is ``c_j = c /
    ||X_j||``: on raw norms a feature measured in small units (a column of norm 1e4, a weight of
    1e-5 that the model uses) fell below ``zero_tol`` of the largest weight and was fixed at zero,
    silently (``em`` on the lasso's objective dropped a feature of its convex optimum).
    002 prescribes no threshold (its zeros are exact), so the rule is the library's; without a
    column scale (groups that are not the columns of ``X``) the norms are compared.

    * Where ``phi'(0)`` is infinite (``lp`` with ``p < 1``, ``l0``) that is final: zero is a local
      minimum of ``t^p`` in every direction (its slope is infinite), no first-order condition asks
      for the group back (002's zeros are absorbing: ``q = t^(p-2)`` is infinite at 0).
    * Where ``phi'(0)`` is finite (``exp``, ``log``, ``l1``, ``lp`` with ``p = 1`` or ``eps > 0``)
      zero is optimal only while the group's gradient stays below ``psi'(0) = lim 2 t q(t)`` (at
      ``p = 1``: the KKT condition of the group lasso), and a group can touch the floor on the way
      (a feature orthogonal to the L2 start's multipliers has weight exactly 0 there). So when the
      step rule holds with groups fixed, a **check step** solves the subproblem once more with every
      group at its weight ``q(max(t_j, c_j))`` — the fixed ones at the floor's ``q(c_j)``, the curvature
      of the majoriser at ``c_j = c / ||X_j||`` (capped at :data:`FLOOR_RATIO` times the largest
      ``t``; a constant column, ``||X_j|| = 0``, stays fixed) — and a fixed group whose contribution
      comes out above ``c`` (the convex model at the floor grows it: its gradient exceeds about
      ``2 c_j q(c_j)``) is revived and the iterations
      go on from there; if none is, the loop has converged and ends with one more step from the
      check's point with the held groups back at zero (exact zeros in the answer). At
      most :data:`MAX_CHECKS` checks revive groups; a run that needs more stops with a
      :class:`~fsframe.errors.ConvergenceWarning`. A check step whose solve fails is not taken:
      the loop stops, converged, and warns that the zeros were not checked.

    A group whose weight exceeds :data:`MAX_WEIGHT` (1e12) in the units of its data is fixed at
    zero too, so no finite weight leaves the range the solvers handle, whatever the scale of
    ``w``. When the HiGHS backend solves the subproblem in its dual (``n`` larger than the number
    of rows), ``1/q`` enters as the scaling ``diag(t^2)`` of the kernel: Weston's multiplicative
    update ``w = |w^k| ⊙ v``.

    **Identical features.** Two identical columns get the same weight ``q`` from an even split, and
    the split then stays even for ever (``em-l0`` kept both copies, one of ``n_features`` wasted). The
    first time a class of identical groups is split evenly, the weights are those of the point
    tilted towards its member of lowest index (:class:`~fsframe.loops.ties.Tiebreak`, as DCA and
    ``reweighted-l1`` do); the step from it is not monitored and does not stop the loop. With
    ``n_features`` the base (and ``early_stop``) count and rank the norms with each class merged
    onto its lowest index, so a copy that still holds weight when ``r`` is reached takes no slot.

    **The empty model.** Without ``n_features``, a run whose last iterate has no meaningful non-zero
    after one that had some (every weight driven to zero, e.g. a class of 3 samples among 15) ends
    with a :class:`~fsframe.errors.ConvergenceWarning` naming the counts per iterate.

    The first subproblem uses ``q = 1`` (the standard L2 SVM), as 002 and AROM start. Stops when
    the step ``||(w,b)^{t+1} - (w,b)^t||`` falls below ``tol`` (relative). **Monitored** (must not
    rise; checked): ``loss + kappa sum_j phi(t_j)``, the majorise-minimise potential, with
    ``kappa = 1`` for the majoriser's weights and 2 for ``quad_weights = phi'(t)/t``
    (``Surrogate.em_majorizes``); nothing for ``lp``/``l0`` with ``"paper"`` (``t^(p-2)`` has no
    finite potential at ``p = 0``), nor for the L2 start, a check step and the step that ends the
    run after it: convergence by step size. The reported objective is ``loss + sum_j phi(t_j)`` in
    both modes.

    Parameters
    ----------
    weights : {"majorizer", "paper"}
        ``"majorizer"`` (default): ``q = phi'(t) / (2 t)``, so EM minimises the reported
        ``loss + sum phi``; ``"paper"``: the surrogate's ``quad_weights`` (002, AROM: the model with
        ``C / kappa``), as the methods ``em-l0`` and ``arom`` use.
    early_stop : int
        ``K >= 1``: with ``n_features``, end the run once the ``n_features`` largest groups have been
        the same for ``K + 1`` iterates with the gap ``early_stop_ratio`` (above); 0 (default): off.
        Refused without ``n_features``.
    early_stop_ratio : float
        The least ratio of the ``r``-th to the ``(r + 1)``-th largest group norm for ``early_stop``
        (``>= 1``; default 5).
    """

    name = "em"
    sparse_input = True  # reaches the data only through sub.solve
    reference = "Huang, King & Lyu, paper 002, eqs. 7-9; Weston et al. 2003; Peng & Fan, paper 004"
    max_iter: int = attrs.field(default=50, converter=as_int, validator=positive_int)
    weights: str = attrs.field(default="majorizer", validator=in_(("majorizer", "paper")))
    early_stop: int = attrs.field(default=0, converter=as_int, validator=and_(not_bool, instance_of(int), ge(0)))
    early_stop_ratio: float = attrs.field(default=5.0, converter=to_float,
                                          validator=and_(instance_of(float), ge(1.0), finite))

    @property
    def requires(self):  # type: ignore[override]
        # the majoriser's weights need phi' (else the surrogate's quad_weights): see missing
        return ("quad_weights",) if self.weights == "paper" else ()

    def terms(self, surrogate):
        return frozenset({"quad"})

    def missing(self, surrogate):
        """:meth:`OuterLoop.missing`, and with ``weights="majorizer"`` a surrogate that has neither
        ``phi'`` (the majoriser's weights) nor ``quad_weights`` (their stand-in where ``phi'`` is
        missing, the zero-norm's)."""
        miss = super().missing(surrogate)
        if surrogate is not None and not miss and self.weights == "majorizer":
            provided = surrogate.provides(("derivative", "quad_weights"))
            if "derivative" not in provided and "quad_weights" not in provided:
                miss.append(f"{PROVIDES['derivative']} or {PROVIDES['quad_weights']}")
        return miss

    def monitored_quantity(self, surrogate):
        if surrogate is not None and self.majorizes(surrogate):
            return "loss + Σ φ(t_j), the EM majoriser's potential"
        if surrogate is not None and surrogate.em_majorizes:
            return "loss + 2 Σ φ(t_j), the potential of the weights phi'(t)/t"
        return "nothing: these weights majorise no potential"

    def majorizes(self, surrogate) -> bool:
        """Whether the weights are the majoriser's ``phi'(t) / (2 t)`` (``weights="majorizer"`` and
        a surrogate with a derivative) rather than the surrogate's ``quad_weights``."""
        return self.weights == "majorizer" and "derivative" in surrogate.capabilities()

    def rule(self, surrogate) -> tuple:
        """``(q, revivable)``: the weight function ``t -> q(t)`` (``t > 0``) for ``surrogate``, and
        whether a group fixed at the floor may be revived (``phi'(0)`` finite: check steps)."""
        revivable = "derivative" in surrogate.capabilities() and bool(np.isfinite(surrogate.derivative(np.zeros(1))[0]))
        if self.majorizes(surrogate):
            def q(t):
                t = np.asarray(t, dtype=float)
                return surrogate.derivative(t) / (2.0 * t)
            return q, revivable
        return surrogate.quad_weights, revivable

    def _reports_plainly(self) -> bool:
        """Whether this loop reports the base's objective (neither :meth:`reported_objective` nor
        :meth:`surrogate_objective` overridden): only then may :meth:`_reported` form it compiled."""
        kind = type(self)
        return (kind.reported_objective is OuterLoop.reported_objective
                and kind.surrogate_objective is OuterLoop.surrogate_objective)

    def _weighs_plainly(self) -> bool:
        """Whether this loop forms the base's weights (neither :meth:`_weights` nor :meth:`_capped`
        overridden): only then may :meth:`_weights` take the compiled twin, which does the whole
        step, the cap included; a subclass keeps numpy's path with its own overrides."""
        kind = type(self)
        return kind._weights is EM._weights and kind._capped is EM._capped

    def _reported(self, it, surrogate, sub, count):
        """:meth:`reported_objective` of ``it``; with ``count`` (the compiled zero-norm penalty,
        :func:`_compiled_twin`) and an iterate carrying its column scale, ``it.loss`` plus that
        count: the same float."""
        t, scale = it.t, getattr(it, "column_scale", None)
        if count is not None and _plain(t, scale) and t.shape == scale.shape:
            return it.loss + count(t, scale, self.zero_tol)
        return self.reported_objective(it, surrogate, sub)

    def _potential(self, it, surrogate):
        if self.majorizes(surrogate):
            return it.loss + _total(surrogate.phi(it.t))
        if surrogate.em_majorizes:
            return it.loss + 2.0 * _total(surrogate.phi(it.t))
        return None

    @staticmethod
    def _limit(magnitudes):
        """Per group, the largest weight :meth:`_capped` keeps: :data:`MAX_WEIGHT` in the units of
        its data (formed once per run)."""
        return MAX_WEIGHT * np.maximum(1.0, magnitudes) ** 2

    @staticmethod
    def _capped(w, fixed, limit):
        """Fix (``inf``) the groups whose weight is inf, nan, or pins them at zero anyway (above
        ``limit``, :meth:`_limit`: :data:`MAX_WEIGHT` in the units of their data)."""
        fixed |= ~(w <= limit)
        w[fixed] = np.inf
        return w

    def _weights(self, it, q, cut: float, fixed: np.ndarray, limit: np.ndarray, cols=None, sizes=None, twin=None):
        """The weights of the step from ``it`` (``sizes``: its contributions when the caller has them;
        ``limit``: :meth:`_limit`; ``twin``: :func:`_compiled_twin` of ``q``, the same weights in one
        compiled call)."""
        t = it.t
        sizes = contribution(t, cols) if sizes is None else sizes
        if (twin is not None and _plain(t, sizes, limit) and fixed.dtype == _BOOL and fixed.flags.c_contiguous
                and t.shape == sizes.shape == limit.shape == fixed.shape):
            return twin(t, sizes, float(cut), fixed, limit)
        fixed |= sizes <= cut  # at the floor: out of the problem
        w = np.full(t.shape, np.inf)
        live = ~fixed
        w[live] = q(t[live])
        return self._capped(w, fixed, limit)

    @staticmethod
    def _floor(cut: float, cols, t) -> tuple:
        """``(floor, dead)``: per group, the norm ``c_j`` whose contribution is ``cut`` (``cut /
        ||X_j||``; ``cut`` itself without a column scale) capped at :data:`FLOOR_RATIO` times the
        largest norm in ``t``, and the groups whose column is constant (``||X_j|| = 0``: no weight of
        theirs contributes, so the check keeps them fixed)."""
        t = np.asarray(t, dtype=float)
        if cols is None or np.shape(cols) != t.shape:
            return np.full(t.shape, cut), np.zeros(t.shape, dtype=bool)
        dead = ~(cols > 0)
        floor = np.divide(cut, cols, out=np.full(t.shape, cut), where=~dead)
        top = _largest(t)
        if top > 0:  # a column of norm 1e-16 (rounding) would put c_j at 1e16 c: a near-singular check QP
            floor = np.minimum(floor, FLOOR_RATIO * top)
        return floor, dead

    def steps(self, sub, surrogate, run):
        """:meth:`_steps`, and a :class:`~fsframe.errors.ConvergenceWarning` when the run ends on the
        empty model without ``n_features`` (:meth:`_warn_empty`)."""
        counts: list[int] = []
        scale = 0.0
        n_features = getattr(run, "n_features", None)
        gen = self._steps(sub, surrogate, run)
        cols = None
        try:
            if n_features is not None:  # no counts to keep (_warn_empty is for runs without n_features)
                return (yield from gen)
            while True:
                try:
                    step = next(gen)
                except StopIteration as stop:
                    finish = stop.value
                    break
                it = step.iterate
                if n_features is None and it.ok and it.t is not None:  # the counts _warn_empty reads
                    cols = group_scale(sub) if cols is None else cols  # built by the first solve
                    nnz, scale = _support_size(contribution(it.t, cols), self.zero_tol, scale, True)
                    counts.append(nnz)
                yield step
        finally:
            gen.close()  # the base closes this generator when n_features is reached: close the inner one
        self._warn_empty(counts, n_features)
        return finish

    def _warn_empty(self, counts: list[int], n_features) -> None:
        """Without ``n_features``, say so when the last iterate has no meaningful non-zero while an
        earlier one had some: the weights ``q`` of every group grew until all of them fell to zero
        (002's ``1/t^2`` does this when the loss of a few samples cannot hold any feature, e.g. a
        class of 3 samples among 15), and the answer is the empty model, which predicts by its
        intercept alone. (With ``n_features`` the base takes the last iterate that had ``r`` and
        warns of the collapse itself.)"""
        if n_features is not None or len(counts) < 2 or counts[-1] > 0 or max(counts) == 0:
            return
        warnings.warn(
            f"{self.name}: the iterates collapsed to the empty model (meaningful non-zeros per iterate {counts}): "
            "every feature's weight fell to zero and the model predicts by its intercept alone. The sparsity "
            "pressure outweighs the loss at this C (e.g. a very small class): a larger C, or n_features=r "
            "(the r largest groups of the last iterate that still has r)", ConvergenceWarning, stacklevel=4)

    def _steps(self, sub, surrogate, run):
        r = getattr(run, "n_features", None) if self.early_stop else None  # only early_stop reads the run
        if self.early_stop and r is None:
            raise InvalidOptionError(f"{self.name}: early_stop={self.early_stop} ends the run when the n_features "
                                     "largest groups settle; it needs n_features (or leave early_stop=0)")
        it = sub.solve(quad=np.ones(sub.n_groups))
        f = self.reported_objective(it, surrogate, sub) if it.ok else None
        yield Step(it, f, monitored=None)  # the L2 start is not a descent step
        ties = Tiebreak(self, sub)  # identical features: the even split tilted once (fsframe.loops.ties)
        # the regular iterates' group norms for early_stop, identical columns merged as n_features ranks them
        norms = [ties.distinct(it)] if self.early_stop else None
        q, revivable = self.rule(surrogate)
        twins = _compiled_twin(q)  # the built-in zero-norm's weights and penalty compiled (same bits)
        twin = None if twins is None or not self._weighs_plainly() else twins[0]
        count = (twins[1] if twins is not None and self._reports_plainly() and getattr(q, "__self__", None) is surrogate
                 else None)

        def report(i):
            return self._reported(i, surrogate, sub, count)

        def weigh(at, cut, sizes):  # without the twin, _weights called as before it had that argument
            args = (at, q, cut, fixed, limit, cols, sizes)
            return self._weights(*args) if twin is None else self._weights(*args, twin)

        fixed = np.zeros(sub.n_groups, dtype=bool)
        limit = self._limit(group_magnitudes(sub))  # the weight cap per group, once per run
        cols = group_scale(sub)  # the cut's measure: each group's contribution (selection.contribution)

        def size(i):
            return contribution(i.t, cols)

        # the current iterate's contributions and their largest, formed once per iterate
        sizes = size(it)
        top = _largest(sizes)
        scale = top
        checks = 0
        solves = 1
        while solves < self.max_iter:
            cut = max(self.zero_tol * max(top, scale), 1e-12)
            at, tilt = ties.point(it)
            new = sub.solve(quad=weigh(at, cut, sizes if at is it else None))
            solves += 1
            ok = new.ok
            yield Step(new, report(new) if ok else None,
                       monitored=self._potential(new, surrogate) if ok and not tilt else None)
            small = self.small_step(new, it)[0] and not tilt  # the step from a tilted point stops nothing
            it = new
            sizes = size(it)
            top = _largest(sizes)
            scale = max(scale, top)
            if norms is not None and ok:  # resumed: the base counted more than r meaningful non-zeros
                norms.append(ties.distinct(it))
                if top_settled(norms, r, self.early_stop, self.early_stop_ratio):
                    return True, (f"early_stop: the {r} largest groups the same at {self.early_stop + 1} iterates, "
                                  f"the {r}-th at least {self.early_stop_ratio:g} times the next")
            if not small:
                continue
            if not (revivable and fixed.any()):
                return True, "step below tol"
            if solves + 2 > self.max_iter:  # the check and the step after it
                return False, "max_iter reached"
            # the check step: the fixed groups back at the floor's weight
            cut = max(self.zero_tol * scale, 1e-12)
            held = fixed.copy()
            floor, dead = self._floor(cut, cols, it.t)
            w = self._capped(q(np.maximum(it.t, floor)), dead.copy(), limit)
            check = sub.solve(quad=w)
            solves += 1
            if not check.ok:
                warnings.warn(
                    f"{self.name}: the check of the {int(held.sum())} groups fixed at zero (a solve with their "
                    f"weight at the floor) ended with status {check.status.value} ({check.result.message}); the "
                    "zeros were not checked against the convex model's optimality conditions",
                    ConvergenceWarning, stacklevel=4)
                return True, "step below tol; the zeroed groups could not be checked"
            yield Step(check, report(check), monitored=None)
            it = check
            sizes = size(it)
            top = _largest(sizes)
            revived = held & (sizes > cut)
            if norms is not None:
                norms.append(ties.distinct(it))
            scale = max(scale, top)
            if not revived.any():  # one more step, the held groups back at zero: the answer has exact zeros
                cut = max(self.zero_tol * scale, 1e-12)
                last = sub.solve(quad=weigh(it, cut, sizes))
                yield Step(last, report(last) if last.ok else None,
                           monitored=None)
                return True, f"step below tol; the {int(held.sum())} zeroed groups checked"
            checks += 1
            if checks >= MAX_CHECKS:
                warnings.warn(
                    f"{self.name}: {int(revived.sum())} groups fixed at zero came back at check {checks} (the convex "
                    f"model at the floor grows them); stopping after {MAX_CHECKS} checks — the result may lie above "
                    "the optimum; a smaller zero_tol or more max_iter may help", ConvergenceWarning, stacklevel=4)
                return False, f"zeroed groups revived at {checks} checks"
            fixed &= ~revived
        return False, "max_iter reached"
