"""The bound search of paper 001 (Algorithm 1, criteria 1 and 2, the Remark on ``t``): an outer
loop that varies the *formulation's* bound parameters, not the sparsity weights. Its criteria are
:mod:`fsframe.loops.bound_criteria`, its memo of searches :mod:`fsframe.loops.bound_memo`; every
name of their ``__all__`` is importable from here too."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import attrs
import numpy as np
from attrs.validators import ge, instance_of, le

from ..enums import UNDECIDED, Status
from ..errors import ConvergenceWarning, DataWarning, InfeasibleParameterError, InvalidOptionError
from ..validators import as_int, positive_int, real, to_float
from .base import INFEASIBLE, Choice, Finish, OuterLoop, Step, support_of
# re-exported: every name of the two modules' __all__ stays importable from fsframe.loops.bound_search
from .bound_criteria import T_FAMILY, _check_criterion, _criterion, _rank, criterion_score
from .bound_memo import _SHARING, SearchMemo, SharedSearches, sharing_visits, subproblem_fingerprint
from .selection import contribution, group_scale

if TYPE_CHECKING:  # annotations only: importing it loads the compiler (and Pyomo)
    from ..problem import Iterate, Subproblem

__all__ = ["BoundSearch", "T_FAMILY", "criterion_score", "SearchMemo", "SharedSearches", "sharing_visits",
           "subproblem_fingerprint"]


MIN_RESOLUTION = 1e-8
"""The smallest ``eps``, ``delta_pos_step`` and ``zero_tol`` the search accepts. The SOCP backends
(ECOS, Clarabel) decide feasibility, and return the weights that should be zero, to about 1e-8
(their default feasibility tolerance): a narrower bisection bracket, a smaller step or a smaller NSF
threshold would measure solver noise. (``eps=1e-300`` once ran 10 000 SOCPs: below ~1e-16 the
bisection's midpoint no longer moves in floating point, and only ``max_iter`` ended the search.)"""


SEARCHES = ("bisection", "grid")
"""The ways :class:`BoundSearch` visits two bounds: 001's Algorithm 1 as written, or a coarse grid
of the second bound refined by bisection."""


def _open_unit(inst, attr, value):
    if not 0.0 < value < 1.0:
        raise ValueError(f"{attr.name} must lie in (0, 1), got {value!r}")


def _resolvable(inst, attr, value):
    if not MIN_RESOLUTION <= value < 1.0:
        raise ValueError(f"{attr.name} must lie in [{MIN_RESOLUTION:g}, 1), got {value!r}: the SOCP solvers resolve "
                         f"bounds and weights to about {MIN_RESOLUTION:g}, so a finer {attr.name} measures their "
                         "noise (and can only end at max_iter)")


@attrs.frozen
class BoundSearch(OuterLoop):
    r"""Search the formulation's bound parameters (001 Algorithm 1) and choose one solution by
    ``max bound / t(NSF)``.

    The formulation declares its bound parameters (:attr:`fsframe.Formulation.bound_params`) and
    restates its compiled problem for new values (:meth:`fsframe.Formulation.with_bounds`); every
    visited point is one convex solve with the L1 slot weights ``phi'(0)`` (1 without a surrogate),
    so ``mempm`` + ``l1`` gives FS-MEMPM (001 eq. 6) and ``mpm-equal`` + ``l1`` FS-MPM (001 eq. 4).

    *Two bounds* ``(p, q)`` (MEMPM's ``delta_pos``, ``delta_neg``; 001's alpha, beta), Algorithm 1:
    ``p`` steps up from ``delta_pos0`` by ``delta_pos_step`` (line 2, ``while alpha_i < 1``); for each
    ``p`` the bracket ``[q_0, q_n] = [delta_neg0, 1]`` is bisected (lines 4-11, with the OCR'd
    line 4 read as ``while |q_0 - q_n| > eps``): the midpoint is solved, a feasible one raises
    ``q_0``, an infeasible one lowers ``q_n``; every feasible ``(p, q, w, b)`` is kept (lines 12-14).
    ``q_0`` restarts at ``delta_neg0`` for each ``p`` (Algorithm 1 never resets it, which would
    carry a ``q`` feasible for a smaller ``p`` into a larger one). The range is cut by what any
    hyperplane achieves (the formulation's ``bound_limits``): ``p`` stops below the limit of
    ``delta_pos`` (as ``delta_neg -> 0``) and ``q_n`` starts at the limit of ``delta_neg``; the
    search also stops at the first ``p`` whose bracket holds no feasible ``q`` (feasibility is
    monotone: a larger ``p`` has none either).

    *One bound* ``p`` (MPM's ``delta``; 001 §4 omits FS-MPM's search as "similar and even simpler"):
    ``p`` steps up from ``delta_pos0`` by ``delta_pos_step`` while below its limit ``delta_max``
    (solving each), and the bracket between the last feasible step and the first infeasible one (or
    the limit) is bisected to ``eps``.

    Infeasibility is a status the search uses (``infeasible``, ``infeasible_or_unbounded``), never an
    exception. A probe that ends with neither a solution nor a claim (:data:`~fsframe.enums.UNDECIDED`)
    is put to the other backends (:meth:`~fsframe.problem.Subproblem.second_opinion`); still undecided, it is not
    proven feasible: treated as infeasible by the bracket, never a candidate, warned and counted
    (``info["n_undecided"]``, a fact). Any other failed solve is solver trouble:
    :class:`~fsframe.errors.SolverFailedError`, or with ``raise_on_failure=False`` the search stops
    there and chooses among the points found.

    Choice (001 §3.2): with ``bound = theta p + (1 - theta) q`` (``p`` for one bound) and ``NSF``
    the number of features with ``|w_j| / max|w| > zero_tol`` (001's footnote: 0.001), criterion 1
    maximises ``bound``, criterion 2 ``bound / NSF``, and a name (``"log"``, ``"sqrt"``) or a
    callable ``t`` gives ``bound / t(NSF)`` with ``t`` clipped to ``[1, NSF]`` (001's Remark); ties go
    to the larger bound, then to fewer features. Criterion 2 never selects more features than
    criterion 1, and ``t`` with ``t(N)`` and ``N / t(N)`` non-decreasing lies between them.

    The chosen solution's weights below ``zero_tol`` of the largest are then fixed at zero and the
    subproblem re-solved at the chosen bounds (one more SOCP): the coefficients returned satisfy the
    constraints on exactly the selected features. If that re-solve fails, the chosen solution is
    returned uncut (``info["nsf_cut_verified"] = False``, a warning). The footnote's rule compares
    raw weights, so it assumes features on comparable scales: where it judges a feature of the
    chosen solution otherwise than its contribution ``|w_j| ||X_j||`` does (the other loops' cut,
    docs/methods.md "What zero_tol compares"), a :class:`~fsframe.errors.DataWarning` names the
    feature, and the paper's rule stands.

    ``history``: one record per SOCP of the search with ``params`` = the bounds, ``feasible``,
    ``bound`` and ``score`` (feasible points), so the trade-off curve can be plotted.
    ``n_iter`` = SOCPs of the search; ``info``: the chosen bounds by name (``delta_pos``,
    ``delta_neg`` or ``delta``), ``bound``, ``score``, ``criterion``, ``n_socps`` (with the re-solve),
    ``n_feasible``, ``n_infeasible``, ``n_undecided``, ``n_inaccurate`` (feasible points solved only
    ``optimal_inaccurate``; every status is also in ``FitResult.statuses``), ``search``.

    *The grid search* (``search="grid"``, two bounds; not in 001): Algorithm 1's bisection starts
    at the middle of ``[delta_neg0, limit]`` and, when that point is feasible, only moves up, so
    criterion 2, which is largest at small bounds with few features, is decided by where the
    bisection looks (docs/paper001.md, "Gap 2"). The grid search keeps Algorithm 1's steps of
    ``p`` and, for each, visits ``q = delta_neg0 + j grid_step`` (``j = 1, 2, ...``) upwards to the
    first infeasible one, then bisects the bracket below it to ``eps`` (the feasibility frontier,
    where criterion 1 chooses, as in Algorithm 1). Then the criterion's best point so far is
    refined: ``q`` is bisected between it and its grid neighbour above (the midpoint kept when it
    is feasible and at least as good by the criterion), then ``p`` between it and the next step.
    Every visited point is kept and the criterion chooses among all of them.

    Parameters
    ----------
    criterion : 1, 2, "log", "sqrt" or callable
        001's criterion 1, 2, or ``bound / t(NSF)``.
    theta : float in [0, 1]
        Weight of the first bound in ``theta p + (1 - theta) q`` (001 eq. 5).
    delta_pos0 : float in (0, 1)
        Start of the stepped bound (001's alpha_0).
    delta_pos_step : float in [1e-8, 1)
        Its step (001's alpha_step); at least :data:`MIN_RESOLUTION`.
    delta_neg0 : float in [0, 1)
        Lower end of each bisection bracket (001's beta_0); two bounds only.
    eps : float in [1e-8, 1)
        Bisection termination: the bracket's width (001's epsilon); at least
        :data:`MIN_RESOLUTION`, what the solvers resolve.
    zero_tol : float in [1e-8, 1)
        NSF threshold on ``|w_j| / max|w|`` (001: 0.001); at least :data:`MIN_RESOLUTION`.
    search : "bisection" or "grid"
        001's Algorithm 1 as written, or the grid of the second bound refined by bisection
        (above; two bounds only).
    grid_step : float in [1e-8, 1)
        The grid's step in the second bound (``search="grid"``).
    max_iter : int
        Cap on the number of SOCPs of the search; a search it cuts short is reported
        (``converged`` False, a :class:`~fsframe.errors.ConvergenceWarning`).
    """

    name = "bound-search"
    data_facts = ("n_undecided",)  # probes no backend could decide (treated as not proven feasible)
    reference = "paper 001 Algorithm 1, criteria 1 and 2, Remark on t"
    requires = ("derivative", "slope_at_zero")
    formulation_requires = ("bounds",)
    needs_surrogate = False
    monotone = False
    chooses = True  # by the criterion, among the feasible points (001 §3.2)
    support_scale = "iterate"  # NSF: |w_j| / max|w| > zero_tol per solve (001's footnote)

    max_iter: int = attrs.field(default=10000, converter=as_int, validator=positive_int)
    zero_tol: float = attrs.field(default=1e-3, converter=to_float, validator=[real(0, 1), _resolvable])
    criterion: object = attrs.field(default=2, converter=_criterion, validator=_check_criterion)
    theta: float = attrs.field(default=0.5, converter=to_float, validator=[instance_of(float), ge(0.0), le(1.0)])
    delta_pos0: float = attrs.field(default=0.05, converter=to_float, validator=[instance_of(float), _open_unit])
    delta_pos_step: float = attrs.field(default=0.05, converter=to_float,
                                        validator=[instance_of(float), _open_unit, _resolvable])
    delta_neg0: float = attrs.field(default=0.0, converter=to_float,
                                    validator=[instance_of(float), ge(0.0), attrs.validators.lt(1.0)])
    eps: float = attrs.field(default=1e-3, converter=to_float, validator=[instance_of(float), _open_unit, _resolvable])
    search: str = attrs.field(default="bisection", validator=attrs.validators.in_(SEARCHES))
    grid_step: float = attrs.field(default=0.1, converter=to_float,
                                   validator=[instance_of(float), _open_unit, _resolvable])

    def terms(self, surrogate):
        return frozenset({"lin"})

    # -- the search ----------------------------------------------------------------------------
    def steps(self, sub: Subproblem, surrogate, run):
        if run.n_features is not None:
            raise InvalidOptionError(
                f"loop {self.name!r} chooses the number of features by its criterion (criterion=1, 2 or t); "
                "n_features cannot be combined with it")
        names = tuple(sub.formulation.bound_params)
        if not names or len(names) > 2:
            raise InvalidOptionError(f"loop {self.name!r} searches formulations with one or two bound parameters; "
                                     f"{sub.formulation.name!r} declares {names}")
        if self.search == "grid" and len(names) != 2:
            raise InvalidOptionError(
                f"loop {self.name!r}: search='grid' grids the second of two bounds; {sub.formulation.name!r} has "
                f"one ({names[0]}), whose search already steps its whole range: use search='bisection'")
        limits = dict(sub.built.info.get("bound_limits") or {})
        lim = [min(1.0, float(limits.get(nm, 1.0))) for nm in names]
        weight = 1.0 if surrogate is None else float(surrogate.derivative(np.zeros(1))[0])
        st = _Search(sub, names, np.full(sub.n_groups, weight))
        shared = _SHARING.get() if self.search == "bisection" else None  # the grid's refinement follows the criterion
        if shared is not None:
            st.fingerprint = subproblem_fingerprint(sub)
            st.replay, st.record = shared.memo.get(shared.key, self, st.lin, sub.formulation, st.fingerprint), []
        p0 = self.delta_pos0
        if p0 >= lim[0]:
            raise InfeasibleParameterError(
                f"{self.name}: the search starts at {names[0]}={p0:g}, but no hyperplane reaches it: the largest "
                f"feasible {names[0]} is {lim[0]:.4f}" + (" (as delta_neg -> 0)" if len(names) == 2 else "")
                + f" on this data. Start lower (delta_pos0 < {lim[0]:.4f})",
                parameter="delta_pos0", value=p0, limit=lim[0])
        try:
            if len(names) == 2:
                if self.delta_neg0 >= lim[1]:
                    raise InfeasibleParameterError(
                        f"{self.name}: delta_neg0={self.delta_neg0:g} is above the largest feasible {names[1]} "
                        f"({lim[1]:.4f}, as delta_pos -> 0); start lower", parameter="delta_neg0",
                        value=self.delta_neg0, limit=lim[1])
                reason = yield from self._two(st, lim)
            else:
                reason = yield from self._one(st, lim[0])
            converged = True
        except _Stop as stop:
            reason, converged = stop.reason, False
            if stop.capped and st.kept:
                warnings.warn(
                    f"{self.name}: stopped at max_iter={self.max_iter} SOCPs before the search ended; the solution "
                    f"is chosen among the {len(st.kept)} feasible points found so far. Raise max_iter, or "
                    f"coarsen delta_pos_step={self.delta_pos_step:g} / eps={self.eps:g}", ConvergenceWarning,
                    stacklevel=3)
        if not st.kept:
            raise InfeasibleParameterError(
                f"{self.name}: no feasible point from the start {names[0]}={p0:g}"
                + (f", {names[1]} > {self.delta_neg0:g}" if len(names) == 2 else "")
                + f" ({st.n} SOCPs; {reason}). The largest feasible {names[0]} is {lim[0]:.4f} on this data"
                + (f" (the MPM's equal bound: {sub.built.info['delta_max']:.4f})" if "delta_max" in sub.built.info
                   and len(names) == 2 else "")
                + ("; raise max_iter" if reason.startswith("max_iter") else "; start lower"),
                parameter="delta_pos0", value=p0, limit=lim[0])
        if shared is not None:
            replayed = st.replay is not None and st.n_replayed == len(st.record) == len(st.replay)
            shared.memo.count(replayed=replayed, partial=st.n_replayed > 0)
            if replayed:
                shared.replayed += 1
            else:
                shared.solved += 1
                shared.memo.put(shared.key, self, st.lin, st.record, sub.formulation, st.fingerprint, shared.block)
        return Finish(converged, reason, self._choose(st))

    def _two(self, st: "_Search", lim):
        """Algorithm 1: step the first bound, bisect the second (a generator of steps; returns the
        reason it ended). With ``search="grid"`` the second bound is first visited on the grid up to
        its first infeasible value, the bracket below that bisected, and the best point refined."""
        grid, i = self.search == "grid", 0
        while True:
            p = self.delta_pos0 + i * self.delta_pos_step
            if p >= lim[0]:
                reason = f"{st.names[0]} reached its limit {lim[0]:.4f}"
                break
            lo, hi, found, j = self.delta_neg0, lim[1], False, 1
            while grid and (q := self.delta_neg0 + j * self.grid_step) < lim[1]:
                if not (yield from self._visit(st, (p, q))):
                    hi = q
                    break
                lo, found, j = q, True, j + 1
            while hi - lo > self.eps:
                q = 0.5 * (lo + hi)
                if (yield from self._visit(st, (p, q))):
                    lo, found = q, True
                else:
                    hi = q
            if not found:
                reason = f"no feasible {st.names[1]} above {self.delta_neg0:g} at {st.names[0]}={p:.4g}"
                break
            i += 1
        if grid and st.kept:
            best = max(st.kept, key=_rank)
            p, q = best[1][st.names[0]], best[1][st.names[1]]
            q = yield from self._refine(st, lambda v: (p, v), q, min(q + self.grid_step, lim[1]), best)
            yield from self._refine(st, lambda v: (v, q), p, min(p + self.delta_pos_step, lim[0]),
                                    max(st.kept, key=_rank))
            reason += "; the best point refined"
        return reason

    def _refine(self, st: "_Search", at, lo: float, hi: float, best: tuple):
        """Bisect ``[lo, hi]`` along one bound (``at(v)``: the point): a midpoint that is feasible and
        ranks at least as high as ``best`` (a kept point) raises ``lo``, any other lowers ``hi``.
        Returns ``lo``."""
        while hi - lo > self.eps:
            v = 0.5 * (lo + hi)
            if (yield from self._visit(st, at(v))) and _rank(st.kept[-1]) >= _rank(best):
                lo, best = v, st.kept[-1]
            else:
                hi = v
        return lo

    def _one(self, st: "_Search", lim: float):
        """One bound: step up while feasible, then bisect the last bracket."""
        i, last, hi = 0, None, lim
        while True:
            p = self.delta_pos0 + i * self.delta_pos_step
            if p >= lim:
                break
            if not (yield from self._visit(st, (p,))):
                hi = p
                break
            last = p
            i += 1
        if last is None:
            return f"{st.names[0]}={self.delta_pos0:g} infeasible"
        lo = last
        while hi - lo > self.eps:
            q = 0.5 * (lo + hi)
            if (yield from self._visit(st, (q,))):
                lo = q
            else:
                hi = q
        return f"{st.names[0]} bracketed within eps={self.eps:g} below {hi:.6g}"

    def _visit(self, st: "_Search", point: tuple):
        """Solve at ``point`` (the bounds, in order) and yield it as a probe step; returns True
        when feasible. Solver trouble (neither a solution nor a proven infeasibility) is yielded
        as a failed step (the base raises), or with ``raise_on_failure=False`` and points found
        ends the search there."""
        if st.n >= self.max_iter:
            raise _Stop(f"max_iter={self.max_iter} SOCPs reached", capped=True)
        bounds = dict(zip(st.names, point))
        v = len(st.record) if st.record is not None else -1
        if st.replay is not None and v < len(st.replay) and st.replay[v][0] == point:
            it = st.replay[v][1]  # the same SOCP, solved by a search that chose by another criterion
            st.n_replayed += 1
        else:
            st.replay = None  # (a search asking for another point than the recorded one) solves from here on
            st.sub.set_bounds(**bounds)
            # a probe neither solved nor claimed is put to the other backends: the search needs it settled
            it = st.sub.second_opinion(st.sub.solve(lin=st.lin))
        if st.record is not None:
            st.record.append((point, it))
        st.statuses.append(it.status)
        bound = point[0] if len(point) == 1 else self.theta * point[0] + (1.0 - self.theta) * point[1]
        params = {**bounds, "feasible": bool(it.ok), "bound": bound}
        if it.ok:
            nsf = int(support_of(it.t, self.zero_tol).sum())
            params["score"] = criterion_score(bound, nsf, self.criterion)
            st.kept.append((st.n, params, it, nsf))
        elif it.status in INFEASIBLE:
            st.n_infeasible += 1
        elif it.status in UNDECIDED:
            # no backend proved the point feasible (a certified or usable optimum) or infeasible:
            # not proven feasible, so the bracket treats it as infeasible (conservative: the
            # search can only stop below the frontier), and it is never a candidate
            st.n_undecided += 1
            params["undecided"] = True
            warnings.warn(f"{self.name}: the SOCP at {bounds} is undecided: it ended with status {it.status.value} "
                          f"({it.result.message}) on backend {it.result.backend}; the search treats it as not proven "
                          "feasible (info['n_undecided'])", ConvergenceWarning, stacklevel=4)
        elif not self.raise_on_failure and st.kept:
            warnings.warn(f"{self.name}: the SOCP at {bounds} ended with status {it.status.value} ({it.result.message}) "
                          f"on backend {it.result.backend}; the search stops and chooses among the points found",
                          ConvergenceWarning, stacklevel=4)
            st.unrecorded.append(it.status)
            raise _Stop(f"subproblem failed: {it.status.value}")
        st.n += 1
        yield Step(it, it.objective if it.ok else None, None, params=params, probe=True)
        return it.ok

    def _warn_scales(self, sub, it) -> None:
        """001's footnote counts and cuts on the raw weights, ``|w_j| / max|w| > zero_tol``, which
        assumes features on comparable scales; a feature in small units (a large column, a small
        weight) is then cut though it contributes, and one in large units kept though it does not.
        Kept as the paper's rule: a :class:`~fsframe.errors.DataWarning` names the features of the
        chosen solution that the contributions ``|w_j| ||X_j||`` (the ``zero_tol`` cut of the other
        loops, :func:`~fsframe.loops.selection.contribution`) judge the other way."""
        cols = group_scale(sub)
        if cols is None:
            return
        raw = support_of(it.t, self.zero_tol)
        by_contribution = support_of(contribution(it.t, cols), self.zero_tol)
        if np.array_equal(raw, by_contribution):
            return
        cut, kept = np.flatnonzero(by_contribution & ~raw), np.flatnonzero(raw & ~by_contribution)
        said = "; ".join(f"{what} {idx.tolist()}" for what, idx in (
            ("cut though they contribute", cut), ("kept though they do not", kept)) if idx.size)
        warnings.warn(
            f"{self.name}: the features are on different scales (column norms {float(cols.min()):.3g} to "
            f"{float(cols.max()):.3g}) and 001's rule |w_j| / max|w| > zero_tol={self.zero_tol:g} judges features "
            f"of the chosen solution otherwise than their contributions |w_j| ||X_j|| do: {said}. Standardise the "
            "features (docs/methods.md, \"What zero_tol compares\")", DataWarning, stacklevel=4)

    def _choose(self, st: "_Search") -> Choice:
        """001 §3.2's choice among the feasible points, re-solved at its bounds with the weights
        below ``zero_tol`` fixed at zero. With ``search="grid"`` a point whose re-solve fails (its
        small weights were needed: the refinement runs up to such edges) gives way to the next best
        (``info["n_cut_failed"]``); only when every one fails is the best returned uncut."""
        order = sorted(range(len(st.kept)), key=lambda i: _rank(st.kept[i]), reverse=True)
        statuses, failed = list(st.unrecorded), []
        for j in order if self.search == "grid" else order[:1]:
            k, params, it, _ = st.kept[j]
            mask = support_of(it.t, self.zero_tol)
            point = tuple(params[nm] for nm in st.names)
            st.sub.set_bounds(**dict(zip(st.names, point)))  # the subproblem (and its record) at the chosen point
            if not np.any(~mask & (it.t > 0)):
                chosen, verified = it, None
                break
            re = st.sub.restricted(it, mask)
            statuses.append(re.status)
            if re.ok:
                chosen, verified, mask = re, True, mask & (re.t > 0)
                break
            failed.append((j, re.status))
        else:
            j, status = failed[0]
            k, params, it, _ = st.kept[j]
            point = tuple(params[nm] for nm in st.names)
            st.sub.set_bounds(**dict(zip(st.names, point)))
            chosen, verified, n_cut = it, False, int((~support_of(it.t, self.zero_tol)).sum())
            mask = support_of(it.t, 1e-12)
            warnings.warn(
                f"{self.name}: the re-solve with the {n_cut} weights below zero_tol={self.zero_tol:g} of the largest "
                f"fixed at zero ended with status {status.value}; returning the chosen solution uncut (its support "
                "counts every non-zero weight)", ConvergenceWarning, stacklevel=3)
        self._warn_scales(st.sub, it)
        info = {**dict(zip(st.names, point)), "bound": params["bound"], "score": params["score"],
                "criterion": str(self.criterion) if not callable(self.criterion) else getattr(
                    self.criterion, "__name__", "callable"),
                "chosen_socp": k, "search": self.search, "n_feasible": len(st.kept), "n_infeasible": st.n_infeasible,
                "n_undecided": st.n_undecided,
                "n_inaccurate": sum(s is Status.OPTIMAL_INACCURATE for s in st.statuses)}
        if verified is not None:
            info["nsf_cut_verified"] = verified
        if self.search == "grid":
            info["n_cut_failed"] = len(failed)
        info["n_socps"] = st.n + len(statuses) - len(st.unrecorded)
        objective = float(sum(st.sub.at_support(chosen, mask)))  # the model's loss + lin'||w_(j)||
        return Choice(chosen, mask, objective, info, statuses=tuple(statuses))


class _Stop(Exception):
    def __init__(self, reason: str, *, capped: bool = False):
        self.reason = reason
        self.capped = capped  # max_iter cut the search short


@attrs.define
class _Search:
    """The search's own state: the subproblem it restates, the feasible points found (with the
    step index the base recorded them under), and its counts."""

    sub: Subproblem
    names: tuple
    lin: np.ndarray
    n: int = 0  # SOCPs yielded (the base's history index of the next one)
    kept: list = attrs.field(factory=list)  # (k, params, iterate, nsf) of each feasible point
    statuses: list = attrs.field(factory=list)  # every visit's status
    unrecorded: list = attrs.field(factory=list)  # a failed visit that ended the search (not yielded)
    n_infeasible: int = 0
    n_undecided: int = 0  # probes no backend could decide, treated as not proven feasible
    replay: list | None = None  # (point, iterate) of each visit of an equal search (sharing_visits)
    record: list | None = None  # this search's (point, iterate) visits, kept when sharing
    n_replayed: int = 0
    fingerprint: str | None = None  # subproblem_fingerprint, when sharing
