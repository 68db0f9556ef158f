"""A fit's convex subproblem: built once, compiled once, solved many times."""

from __future__ import annotations

import time

import attrs
import numpy as np
from numpy.typing import NDArray

from .enums import UNDECIDED, Status
from .backends.base import Backend, SolveOptions, SolveResult
from .backends.certificate import certify, judge_certificate
from .canonical import Auxiliaries
from .compiler import CompiledModel, compile_model
from .errors import FsframeError, IncompatibleComponentsError, SolverFailedError, UnsupportedProblemError
from .formulation import PROTOCOLS, BuiltModel, Formulation, restater_mismatch
from .scales import group_scale
from .slot import slot_penalty, slot_weights
from .working_set import AGAIN, WorkingSet, WorkingSetOptions, WorkingSetReport, group_columns

__all__ = ["Subproblem", "Iterate"]


_clock = time.perf_counter
"""The clock a subproblem's time budget is counted on (a stub in tests)."""

CUT_TOL_FLOOR = 1e-9
"""The finest tolerance :meth:`Subproblem.certified_cut` judges a cut point at (an uncut answer
certified to 1e-11 does not ask its cut for the same)."""


def _accuracy(cert) -> float:
    """The accuracy a certificate shows: the largest of ``|gap|`` and the residuals."""
    return max(abs(cert.gap), cert.primal_residual, cert.dual_residual)


def _read_only(a) -> bool:
    """Whether ``a`` is a numpy array nothing can write through (its own flag and its base's; not a
    writeable view taken before the array was frozen, which numpy does not track)."""
    if type(a) is np.ndarray and a.base is None:  # an array of its own (a dense EM iterate's): its flag alone
        return not a.flags.writeable
    if not isinstance(a, np.ndarray):
        return False
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        a = a.base
    return a is None


@attrs.frozen(eq=False)
class Iterate:
    """One solved subproblem, read back into model terms.

    ``coef`` are the slot's coefficient entries, ``t`` the group norms ``||w_(j)||``, ``seconds``
    the wall time of update + solve. ``loss`` and ``objective`` are those the model
    ``(coef, intercept)`` attains, not those of the solver's point: ``loss`` with the auxiliary
    columns (slacks, epigraph variables) at their least values given the model
    (:class:`~fsframe.canonical.Auxiliaries`), ``objective`` that loss plus the slot's penalty at
    ``coef`` and the iterate's weights (:func:`~fsframe.slot.slot_penalty`). The solver's point
    and its objective are ``result.x`` and ``result.objective``.
    An iterate a loop computed itself (:meth:`computed`) carries ``groups``, the group of each
    coefficient entry (of ``coef``'s shape); a solved one reads them from the subproblem's slot.
    ``column_scale``: each group's column norm in the subproblem's data, on which the reported
    objective judges the support (:meth:`~fsframe.loops.base.OuterLoop.reported_objective` hands
    :meth:`~fsframe.loops.base.OuterLoop.surrogate_objective` the iterate carrying it); ``None``
    (the raw group norms) until then.
    """

    status: Status
    x: NDArray | None
    coef: NDArray | None
    intercept: NDArray | None
    t: NDArray | None
    loss: float | None
    objective: float | None  # the subproblem's objective at the model: loss + penalty at these weights
    seconds: float
    result: SolveResult
    weights: dict = attrs.field(factory=dict, repr=False)  # the slot weights it was solved at
    report: WorkingSetReport | None = attrs.field(default=None, repr=False)  # how it was solved (working set)
    groups: NDArray | None = attrs.field(default=None, repr=False)  # a computed iterate's groups
    # the zero_tol cut's re-solve: the iterate it was cut from (its subproblem has the cut groups
    # free), on which the returned point is certified (Subproblem.certify_unfixed)
    cut_from: "Iterate | None" = attrs.field(default=None, repr=False)
    # each group's column scale (fsframe.scales.group_scale of its subproblem), on which the
    # reported objective judges the support (OuterLoop.surrogate_objective); None: the raw norms
    column_scale: NDArray | None = attrs.field(default=None, repr=False)
    # what the loops read several times per step, kept for iterates whose model is read-only (point)
    _memo: dict = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def computed(cls, coef: NDArray, intercept, t: NDArray, *, groups: NDArray, loss: float | None,
                 objective: float | None, seconds: float, backend: str = "numpy",
                 status: Status = Status.OPTIMAL) -> "Iterate":
        """An iterate a loop computed without solving the subproblem (an algorithm of its own in
        numpy, as DSO-FS's and RFS's steps): ``coef`` in any shape, ``groups`` the group of each
        of its entries (same shape), ``t`` the group norms. Its result says ``backend``."""
        res = SolveResult(status, None, objective, backend, seconds)
        return cls(status, None, np.asarray(coef, dtype=float), np.atleast_1d(np.asarray(intercept, dtype=float)),
                   np.asarray(t, dtype=float), loss, objective, seconds, res, groups=np.asarray(groups))

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def point(self) -> NDArray:
        """``(w, b)``: the vector whose step DCA's stopping rule measures (000 Alg. 1).

        Kept after its first reading when ``coef`` and ``intercept`` are read-only arrays (an
        iterate whose model cannot change, as the dense EM path's, :mod:`fsframe.dense_em`): the
        loops read it several times per step. The kept vector is read-only too; for writeable
        ``coef`` or ``intercept`` it is formed at every reading, so a change to them shows. Whether
        they are read-only is asked at every reading: a pickled or copied iterate (whose arrays come
        back writeable) or one whose flags were turned back forms its point afresh, and a reading
        that finds them writeable drops what was kept (the point, and the step
        :func:`~fsframe.loops.measures._step_length` kept from it). Changing the model in place and
        freezing it again with no reading in between is not supported (the kept point would be
        the old one)."""
        memo = self._memo
        coef, intercept = self.coef, self.intercept
        frozen = _read_only(coef) and _read_only(intercept)
        if frozen and "point" in memo:
            return memo["point"]
        if not frozen and memo:  # writeable now: what was kept (the point, the step from it) may go stale
            memo.pop("point", None)
            memo.pop("step", None)
        if type(coef) is np.ndarray and type(intercept) is np.ndarray and intercept.ndim == 1:
            point = np.concatenate((coef.ravel(), intercept))  # what np.ravel and np.atleast_1d give them
        else:
            point = np.concatenate([np.ravel(coef), np.atleast_1d(intercept)])
        if frozen:
            point.flags.writeable = False
            memo["point"] = point
        return point


class Subproblem:
    """Build ``formulation`` on ``(X, y)`` with slot ``terms``, compile it, and solve it
    repeatedly for new slot weights on ``backend``.

    The model is built and compiled on first use (:attr:`built`, :attr:`compiled`, the first
    :meth:`solve`): a loop that never solves the Pyomo model (a closed-form algorithm such as
    DSO-FS, paper 004 Algorithm 1, or a filter ranking) reads the training data :attr:`X`,
    :attr:`y` and costs no build. Attributes ``build_seconds`` and ``compile_seconds`` record the
    one-off costs (0 while not built). ``aux`` is the fit's :class:`fsframe.AuxSolver` (the fit
    driver's; ``None`` outside a fit), passed to ``formulation.build`` when the formulation
    declares the trait ``aux_solver``, and to the loop as ``run.aux``.

    Every solve goes through a working set of feature groups when ``working_set`` says so and
    the formulation's pricing allows it (:mod:`fsframe.working_set`): the answer is that of the
    full problem, certified on it. :attr:`working_set` (``None`` when the full problem is solved)
    keeps the groups across solves; :attr:`last_report` says how the last solve went.
    """

    def __init__(self, formulation: Formulation, X: NDArray, y: NDArray, terms: frozenset, backend: Backend,
                 options: SolveOptions = SolveOptions(), *, fast: bool = True, cone_form: str = "substitute",
                 aux=None, working_set: WorkingSetOptions = WorkingSetOptions()):
        self.formulation = formulation
        self.X = X
        self.y = y
        self.terms = frozenset(terms)
        self.backend = backend
        self.options = options
        self.aux = aux
        self._fast = fast
        self._cone_form = cone_form
        self._built: BuiltModel | None = None
        self._compiled: CompiledModel | None = None
        self.build_seconds = 0.0
        self.compile_seconds = 0.0
        self.session = None
        self.n_solves = 0
        self.last_timings: dict = {}
        self.ws_options = working_set
        self.working_set: WorkingSet | None = None
        self._ws_decided = False
        self._full_session = None  # the full problem's session when a working set falls back
        # "auto"'s recheck of an uncertified working-set answer (_recheck_full): "on" until one has
        # run, then "off" (the full problem was no better certified) or "full" (its answer won);
        # one fit's (new_fit sets it back: a path's next point decides afresh)
        self._recheck = "on"
        self.last_report: WorkingSetReport | None = None
        self._auxiliaries: Auxiliaries | None = None

    def new_fit(self) -> None:
        """Start a fit on this subproblem (a parameter path, :func:`fsframe.path`, carries one from
        point to point): what ``"auto"``'s recheck decided (:meth:`_recheck_full`) belongs to the fit
        before, so the working set is tried again and a point's answer does not depend on the
        path's history. The working set's groups stay (a warm start; the answer is certified on the
        full problem either way)."""
        self._recheck = "on"

    @property
    def is_built(self) -> bool:
        """Whether the Pyomo model has been built (and compiled)."""
        return self._compiled is not None

    def _build(self) -> None:
        t0 = time.perf_counter()
        kw = {"aux": self.aux} if "aux_solver" in self.formulation.provides() else {}
        built = self.formulation.build(self.X, self.y, self.terms, **kw)
        t1 = time.perf_counter()
        compiled = compile_model(built.model, fast=self._fast, cone_form=self._cone_form)
        self.build_seconds = t1 - t0
        self.compile_seconds = time.perf_counter() - t1
        self._built, self._compiled = built, compiled
        if compiled.slot is not None:  # answers come back with the model's auxiliaries settled
            compiled.base = compiled.data = self._with_auxiliaries(compiled.base)

    @property
    def built(self) -> BuiltModel:
        """The formulation's :class:`~fsframe.formulation.BuiltModel` (built on first access)."""
        if self._compiled is None:
            self._build()
        return self._built

    @property
    def compiled(self) -> CompiledModel:
        """The compiled model (built and compiled on first access)."""
        if self._compiled is None:
            self._build()
        return self._compiled

    @property
    def n_groups(self) -> int:
        return self.compiled.slot.n_groups

    @property
    def n_coef(self) -> int:
        return int(self.compiled.slot.W.shape[0])

    @property
    def column_scale(self) -> NDArray | None:
        """Each group's column norm in this subproblem's data, centred where its model is
        offset-free (:func:`fsframe.scales.group_scale`), or ``None``: what the iterates
        :meth:`solve` returns carry (:attr:`Iterate.column_scale`), so that a loop's reported
        objective judges the support by contribution however it is called."""
        return group_scale(self)

    def group_norms(self, coef: NDArray) -> NDArray:
        """``t_j``, in the formulation's declared group norm (:attr:`Formulation.group_norm`)."""
        return self.compiled.group_norms(coef, getattr(self.formulation, "group_norm", "l2"))

    def solve(self, *, lin=None, lin_w=None, quad=None, full: bool = False) -> Iterate:
        """Set the slot weights (see :meth:`CompiledModel.with_weights`) and solve. ``full``
        solves the full problem even when the subproblem has a working set (in a session of its
        own; the working set is left as it was). A loop that needs an undecided answer settled
        asks :meth:`second_opinion` afterwards."""
        t0 = time.perf_counter()
        weights = {k: v for k, v in (("lin", lin), ("lin_w", lin_w), ("quad", quad)) if v is not None}
        try:
            data = self.compiled.with_weights(lin=lin, lin_w=lin_w, quad=quad)
        except ValueError as exc:  # weights a surrogate made non-finite (overflow): a failed step, not an escape
            res = SolveResult(Status.ERROR, None, None, self.backend.name, 0.0,
                              message=f"slot weights rejected: {exc}")
            return Iterate(res.status, None, None, None, None, None, None, time.perf_counter() - t0, res, weights)
        t1 = time.perf_counter()
        ws = self._working_set()  # decided first: a working set's sessions are set up by then
        rechecked = ws is not None and self._recheck == "full"  # an earlier recheck's full answer won
        if full or rechecked:
            ws = None
        t2 = _clock()
        res = None
        if ws is not None:  # the reduction's rounds: restrict, solve here, read back (or round again)
            ws.begin(data, self._fixed_groups(lin, quad), self.options.time_limit)
            res = AGAIN
            while res is AGAIN:
                res = ws.invert(data, self._solve_restricted(ws.apply(data)))
            self.last_report = ws.report
            if (res is not None and res.status not in (Status.OPTIMAL, Status.TIME_LIMIT)
                    and self.ws_options.mode == "auto" and self._recheck == "on"):  # a time limit is not spent twice
                res = self._recheck_full(data, res, t2)
        if res is None:  # no working set, or it fell back to the full problem
            res = self._solve_full(data)
            if ws is None:
                self.last_report = WorkingSetReport(
                    False, self.n_groups, self.n_groups, full_resolve=full,
                    recheck="an earlier recheck kept the full problem's answer: the full problem is solved"
                    if rechecked and not full else "")
        self.n_solves += 1
        t3 = time.perf_counter()
        # where the time of this solve went (benchmarks/bench_core.py, docs/performance.md)
        self.last_timings = {"update": t1 - t0, "open": t2 - t1, "backend": t3 - t2,
                             "solver": float(res.solve_time or 0.0), "read": 0.0}
        it = self._read(res, weights, t3 - t0)
        if it.x is not None:
            self.last_timings["read"] = time.perf_counter() - t3
        return it

    def second_opinion(self, it: Iterate) -> Iterate:
        """``it`` (an iterate of :meth:`solve`) settled by the other built-in backends when it ended
        with neither a solution nor a claim (:data:`~fsframe.enums.UNDECIDED`: status ``unknown``,
        ``numerical_error``, ``iteration_limit``; e.g. ECOS inaccurate with fsframe's certificate
        failed): the same problem at the same slot weights is put to them
        (:meth:`_second_opinion`), and a certified optimum or a verified claim is the answer;
        otherwise ``it`` with what they said. Any other ``it`` is returned as it is. For a loop
        that needs the question settled (the bound search's feasibility probes): ``solve`` itself
        never asks, so a wrapper of ``solve`` sees the loop's calls as they always were. The time
        limit is the subproblem's, counted from the start of ``it``'s solve (its ``seconds``), and
        the others' time is added to :attr:`last_timings`' ``"backend"`` (``it``'s solve's)."""
        if it.status not in UNDECIDED or it.result is None:
            return it
        t0 = time.perf_counter()
        data = self.compiled.with_weights(**it.weights)
        res = self._second_opinion(data, self.options, it.result, _clock() - it.seconds)
        spent = time.perf_counter() - t0
        self.last_timings = {**self.last_timings, "backend": self.last_timings.get("backend", 0.0) + spent}
        return self._read(res, it.weights, it.seconds + spent)

    def _read(self, res: SolveResult, weights: dict, seconds: float) -> Iterate:
        """The iterate of ``res``, a solve of this subproblem at the slot ``weights``."""
        if res.x is None or not res.ok:
            return Iterate(res.status, None, None, None, None, None, res.objective, seconds, res, weights,
                           self.last_report)
        # the backend's answer comes with the model's auxiliaries settled (the problem carries
        # them): its loss is the model's, and so is an intercept read off an auxiliary (Lanckriet's
        # MPM reads b = w'mu_1 - kappa* t_1 off the epigraph variable, then ||F_1'w||)
        x = res.x
        coef = self.compiled.coef(x)
        intercept = self.compiled.evaluate(self.built.intercept, x)
        t = self.group_norms(coef)
        loss = self.compiled.base.objective(x)
        # the weights with_weights validated above (slot_weights again cost ~35 µs per EM step)
        penalty = slot_penalty(self.compiled.slot, self.compiled.last_slot_weights, coef, t)
        return Iterate(res.status, x, coef, intercept, t, loss, loss + penalty, seconds, res,
                       weights, self.last_report, column_scale=self.column_scale)

    # -- what a model attains --------------------------------------------------------------------
    def settle(self, x: NDArray) -> NDArray:
        """``x`` (a copy) with the columns outside the model's coefficients and magnitudes that a
        closed form determines at their least values given them
        (:class:`~fsframe.canonical.Auxiliaries`: the hinge's slacks become
        ``max(0, 1 - y_i f_i)``, an epigraph variable the norm it bounds), whatever the solver
        left in them. Backends return their answers settled already (the compiled problem
        carries its :attr:`~fsframe.canonical.ProblemData.auxiliaries`); this settles a point
        changed since, e.g. with groups cut to zero."""
        return np.array(self._with_auxiliaries(self.compiled.base).settled(x), dtype=float)

    def _with_auxiliaries(self, base):
        """``base`` carrying the model's :class:`~fsframe.canonical.Auxiliaries`: every column
        but the slot's coefficients and magnitudes, the intercept's columns secondary, and the
        model's recorded definitions (:attr:`CompiledModel.definitions`)."""
        if self._auxiliaries is None:
            comp = self.compiled
            model = np.zeros(comp.base.n, dtype=bool)
            model[comp.slot.W.indices] = True
            if comp.slot.S is not None:
                model[comp.slot.S.indices] = True
            icols = [comp.col_index.get(id(v), -1) for v in self.built.intercept.vars]
            self._auxiliaries = Auxiliaries(np.flatnonzero(~model), secondary=[c for c in icols if c >= 0],
                                            definitions=comp.definitions)
        return base if base.auxiliaries is self._auxiliaries else base.evolve(auxiliaries=self._auxiliaries,
                                                                       appended_to=base.appended_to)

    def model_loss(self, x: NDArray) -> float:
        """The loss the model in ``x`` (its coefficients) attains: the loss-only problem's
        objective at :meth:`settle`'s point."""
        return self.compiled.base.objective(self.settle(x))

    def penalty(self, coef: NDArray, t: NDArray, weights: dict) -> float:
        """The slot's penalty of ``coef`` (group norms ``t``) at the slot ``weights`` of a solve
        (:func:`~fsframe.slot.slot_penalty`)."""
        return slot_penalty(self.compiled.slot, slot_weights(self.compiled.slot, **weights), coef, t)

    def penalty_weights(self, weights: dict) -> dict:
        """The slot ``weights`` of a solve as plain arrays, enough to recompute :meth:`penalty` from
        a model's coefficients alone (what ``FitResult.info["penalty_weights"]`` records):
        ``lin`` per group (0 for a group fixed at zero or without a magnitude), ``lin_w`` per
        coefficient, ``quad`` per group (``None`` for an absent term), and ``groups``, the group of
        each coefficient (coefficients in the formulation's layout, flattened). Then
        ``sum_j lin_j t_j + lin_w'w + sum_i quad[groups_i] w_i^2`` is the penalty, ``t_j`` the
        group norms."""
        slot = self.compiled.slot
        sw = slot_weights(slot, **weights)
        lin = None
        if sw.lin is not None:
            lin = np.where(np.diff(slot.S.indptr) > 0, sw.lin, 0.0) if slot.S is not None else np.zeros_like(sw.lin)
        return {"lin": lin, "lin_w": None if sw.lin_w is None else np.array(sw.lin_w, dtype=float),
                "quad": None if sw.quad is None else np.array(sw.quad, dtype=float),
                "groups": np.array(slot.groups)}

    def model_objective(self, x: NDArray, weights: dict, *, size: bool = False):
        """The subproblem's objective at slot ``weights`` that the model in ``x`` attains
        (:meth:`model_loss` plus :meth:`penalty` of its coefficients), e.g. of another backend's
        answer (``verify=``). With ``size``, ``(objective, size)``: ``size`` is the sum of the
        magnitudes of its terms (``|c_k x_k|``, the quadratic and penalty terms), the scale an
        objective that nearly cancels (a DCA step's) is compared on."""
        slot, base = self.compiled.slot, self.compiled.base
        xs = self.settle(x)
        coef = slot.W @ xs
        t = self.group_norms(coef)
        sw = slot_weights(slot, **weights)
        value = base.objective(xs) + slot_penalty(slot, sw, coef, t)
        if not size:
            return value
        ax = np.abs(xs)
        mag = float(np.abs(base.c) @ ax) + abs(base.offset)
        if base.has_quadratic_objective:
            mag += 0.5 * float(ax @ (abs(base.P) @ ax))
        sw_abs = attrs.evolve(sw, lin_w=None if sw.lin_w is None else np.abs(sw.lin_w))
        return value, mag + slot_penalty(slot, sw_abs, np.abs(coef), t)

    def at_support(self, it: Iterate, keep: NDArray) -> tuple[float, float]:
        """``(loss, penalty)`` of ``it``'s model with the groups outside ``keep`` set to zero: its
        own when they already are, else recomputed with their columns (coefficients and
        magnitudes) zeroed. A slot whose groups share columns cannot zero one group alone: the
        uncut loss is kept (such cuts are of groups below 1e-12 of the largest norm)."""
        keep = np.asarray(keep, dtype=bool)
        cut = ~keep & (it.t > 0)
        if not cut.any() or not self.compiled.slot.exclusive:
            return it.loss, it.objective - it.loss
        slot = self.compiled.slot
        x = it.x.copy()
        gc = group_columns(slot)
        x[np.concatenate([gc[j] for j in np.flatnonzero(cut)]).astype(np.int64)] = 0.0
        coef = it.coef.copy()
        coef[cut[slot.groups]] = 0.0
        return self.model_loss(x), self.penalty(coef, np.where(cut, 0.0, it.t), it.weights)

    def certified_cut(self, it: Iterate, keep: NDArray) -> Iterate | None:
        """``it`` with the groups outside ``keep`` set to zero, when that point is still a
        certified optimum of ``it``'s subproblem; else ``None`` (re-solve instead:
        :meth:`restricted`).

        The cut point (the cut groups' coefficient and magnitude columns zeroed, the auxiliaries
        settled, inside its bounds) is judged on the *full* subproblem at ``it``'s slot weights with
        ``it``'s multipliers by the certificate every answer passes
        (:func:`~fsframe.backends.certificate.certify`, :func:`~fsframe.backends.certificate.judge_certificate`
        at the accuracy the solver reached on the uncut point: the largest of its certificate's
        gap and residuals, floored at :data:`CUT_TOL_FLOOR`, at most ``cert_tol``). If it is
        ``OPTIMAL`` there, it is optimal, to that tolerance, for the subproblem with the cut groups
        fixed at zero as well (a subset of the feasible set that contains it): what a restricted
        re-solve would return, without the solve. An interior-point backend's answer carries such
        cuts — its zeros are ``1e-10``, not exact — so this saves the second solve there. ``None``
        when ``it`` is not ``OPTIMAL`` (an inaccurate answer is never upgraded), when there is
        nothing to judge with (no point, certificate or multipliers, certification off, groups
        sharing columns) or when the certificate does not pass."""
        keep = np.asarray(keep, dtype=bool)
        res = it.result
        duals = res.duals or {}
        slot = self.compiled.slot
        if (it.x is None or it.status is not Status.OPTIMAL or not self.options.certify or res.certificate is None
                or duals.get("y") is None or duals.get("z") is None or not slot.exclusive):
            return None
        t0 = time.perf_counter()
        data = self.compiled.with_weights(**it.weights, sync=False)
        y, z = np.asarray(duals["y"], dtype=float), np.asarray(duals["z"], dtype=float)
        if y.shape != (data.A.shape[0],) or z.shape != (data.G.shape[0],) or it.x.shape != (data.n,):
            return None
        x = it.x.copy()
        cut = ~keep & (it.t > 0)
        if cut.any():
            gc = group_columns(slot)
            x[np.concatenate([gc[j] for j in np.flatnonzero(cut)]).astype(np.int64)] = 0.0
        x = np.clip(data.settled(x), data.lb, data.ub)
        cert = certify(data, x, y, z)
        # judged at the accuracy the solver reached on the uncut point (what a re-solve would
        # reach), not only at cert_tol: cutting Clarabel's 1e-7 norms on an L1-SVM at C = 27 raised
        # the objective by 7e-6 (relative), within cert_tol's rule but 300 times the answer's gap
        status, _ = judge_certificate(cert, min(self.options.cert_tol, max(_accuracy(res.certificate), CUT_TOL_FLOOR)))
        if status is not Status.OPTIMAL:
            return None
        coef = self.compiled.coef(x)
        t = self.group_norms(coef)
        loss = self.compiled.base.objective(x)
        seconds = time.perf_counter() - t0
        result = attrs.evolve(res, x=x, objective=data.objective(x), certificate=cert, status=status,
                              solve_time=0.0, message=res.message + "; groups cut to zero, the point certified again")
        return Iterate(status, x, coef, self.compiled.evaluate(self.built.intercept, x), t, loss,
                       loss + self.penalty(coef, t, it.weights), seconds, result, it.weights, it.report,
                       column_scale=self.column_scale)

    def certify_unfixed(self, it: Iterate) -> dict | None:
        """The certificate of ``it``'s point (a ``zero_tol`` cut's re-solve, its cut groups fixed at
        zero) on the subproblem of the iterate it was cut from (``it.cut_from``: the cut groups
        free, at its slot weights): ``{"status", "gap", "primal_residual", "dual_residual"}``
        (:func:`~fsframe.backends.certificate.certify`, judged at ``cert_tol``). Any multipliers
        make a valid certificate; two are tried and the better kept: the re-solve's own (their
        entries for the cut groups' rows are whatever the solver left, the rows being slack) and
        the uncut iterate's (optimal for the problem without the cut: the gap then measures how far
        the cut point's objective is above that problem's optimum). ``OPTIMAL`` means the returned
        point is an optimum of the problem without the cut, not only of the cut one. ``None`` when
        there is nothing to certify with (no point or multipliers, certification off, no
        ``cut_from``). The point judged is ``it``'s model: the columns of the groups non-zero in
        ``cut_from`` and zero in ``it`` zeroed (what the solver left in their magnitudes is no part of
        the model) and the auxiliaries settled, as :meth:`certified_cut` judges its point."""
        src = it.cut_from
        if src is None or it.x is None or not self.options.certify:
            return None
        data = self.compiled.with_weights(**src.weights, sync=False)
        if it.x.shape != (data.n,):
            return None
        x = it.x.copy()
        # the point judged is the model's, built as certified_cut builds it: the cut groups' columns
        # (coefficients and magnitudes) zeroed, the auxiliaries settled. The re-solve fixes a cut
        # group's coefficients at zero, not its magnitude columns: an interior-point solver leaves
        # s_j >= |w_j| = 0 at its centre (1.3 on an L1-logistic), which priced at lin_j is no part
        # of the model's objective but made the gap 0.45 where the true excess was 4.5e-3
        slot = self.compiled.slot
        cut = (np.asarray(src.t) > 0) & ~(np.asarray(it.t) > 0) if np.shape(src.t) == np.shape(it.t) else None
        if cut is not None and cut.any() and slot.exclusive:
            gc = group_columns(slot)
            x[np.concatenate([gc[j] for j in np.flatnonzero(cut)]).astype(np.int64)] = 0.0
        x = np.clip(data.settled(x), data.lb, data.ub)
        best = None
        for res in (it.result, src.result):
            duals = res.duals or {}
            if duals.get("y") is None or duals.get("z") is None:
                continue
            y, z = np.asarray(duals["y"], dtype=float), np.asarray(duals["z"], dtype=float)
            if y.shape != (data.A.shape[0],) or z.shape != (data.G.shape[0],):
                continue
            cert = certify(data, x, y, z)
            worst = max(abs(cert.gap), cert.primal_residual, cert.dual_residual)
            if best is None or worst < best[0]:
                best = (worst, cert)
        if best is None:
            return None
        cert = best[1]
        status, _ = judge_certificate(cert, self.options.cert_tol)
        return {"status": status.value, "gap": float(cert.gap), "primal_residual": float(cert.primal_residual),
                "dual_residual": float(cert.dual_residual)}

    # -- working sets ------------------------------------------------------------------------
    def _working_set(self) -> WorkingSet | None:
        if not self._ws_decided:
            self._ws_decided = True
            comp = self.compiled
            pricing = getattr(self.formulation, "pricing", None)
            if WorkingSet.possible(comp.slot, pricing, self.ws_options):
                grows = self.backend.grows_columns and not ("quad" in self.terms or comp.base.has_quadratic_objective)
                ws = WorkingSet(comp.base, comp.slot, grows, self.ws_options,
                                self.options.cert_tol if self.options.certify else None)
                self.working_set = ws if ws.wanted(comp.base) else None
        return self.working_set

    def _fixed_groups(self, lin, quad) -> NDArray:
        fixed = np.zeros(self.n_groups, dtype=bool)
        for v in (lin, quad):
            if v is not None:
                fixed |= np.isinf(np.broadcast_to(np.asarray(v, dtype=float), (self.n_groups,)))
        return np.flatnonzero(fixed)

    def _on(self, name: str, data, options: SolveOptions | None = None) -> SolveResult:
        """Solve ``data`` on the session ``name`` (opened on first use: a refusal to open, e.g.
        data on a scale the solver cannot represent, is a typed error that propagates); solver
        trouble during the solve is a status, so the loop's ``raise_on_failure`` decides."""
        t0 = _clock()  # the time limit counts the session's set-up too
        session = getattr(self, name)
        if session is None:
            session = self.backend.open(data, self.options if options is None else options)
            setattr(self, name, session)
        try:
            res = session.solve(data)
        except (UnsupportedProblemError, SolverFailedError) as exc:
            return SolveResult(Status.ERROR, None, None, self.backend.name, _clock() - t0,
                               message=f"{type(exc).__name__}: {exc}")
        if res.claim is not None and not res.claim.verified:
            return self._second_opinion(data, options or self.options, res, t0)
        return res

    def _second_opinion(self, data, options: SolveOptions, res: SolveResult, started: float) -> SolveResult:
        """A claim of infeasibility or unboundedness that fsframe could not verify (or refuted),
        put to the other built-in backends that solve the problem's class, in their ``auto``
        order: the first certified optimum refutes the claim and is the answer (its message names
        the claim); a verified claim from another backend is the answer; otherwise ``res``, with
        what the others said. One extra solve per backend, only on this rare path.

        ``options.time_limit`` is the budget of the whole subproblem, counted from ``started``
        (:func:`_clock`, before the session was opened, when it was): each other backend gets what
        is left of it, and none is asked once it is spent (the message says so)."""
        from .backends import ClarabelBackend, EcosBackend, HighsBackend

        said = []
        # the first backend's own options mean nothing to the others; a time limit only to those
        # that honour one
        options = attrs.evolve(options, backend_options={})
        limit = options.time_limit
        others = sorted((b for b in (HighsBackend, ClarabelBackend, EcosBackend)
                         if b.name != self.backend.name and data.problem_class in b.supports and b.available()
                         and (limit is None or b.honours_time_limit)),
                        key=lambda b: b.preference)
        for other in others:
            if limit is not None:
                left = limit - (_clock() - started)
                if left <= 0:
                    said.append(f"{', '.join(b.name for b in others[others.index(other):])}: not asked, the time "
                                f"limit of {limit:g} s was spent")
                    break
                options = attrs.evolve(options, time_limit=left)
            try:
                alt = other().solve(data, options)
            except FsframeError as exc:  # e.g. data on a scale it cannot represent: no opinion
                said.append(f"{other.name}: {type(exc).__name__}")
                continue
            claim = f"{res.backend} claimed {res.status.value} ({res.message})"
            if alt.status is Status.OPTIMAL or (alt.claim is not None and alt.claim.verified):
                return attrs.evolve(alt, message=f"{alt.message}; {claim}, not verified: solved on {alt.backend} "
                                                 "instead")
            said.append(f"{other.name}: {alt.status.value} ({alt.message})")
        if not said:
            return res
        return attrs.evolve(res, message=f"{res.message}; a second opinion from {'; '.join(said)}")

    def _recheck_full(self, data, res: SolveResult, started: float) -> SolveResult:
        """A working set that ``"auto"`` chose (not one asked for) ended without an OPTIMAL
        certificate on the full problem (ECOS on ill-scaled exponential-cone data): solve the full
        problem once and keep the better-certified answer — OPTIMAL over an answer that is only
        usable, usable over none; on a tie the one of lower objective (both are fsframe's values at
        the solvers' settled points; the working set's when equal). The report's ``recheck`` says
        which was kept, with both statuses. Not after a ``time_limit`` stop (the limit is not spent
        twice), and the recheck gets what is left of ``time_limit`` since this solve's working set
        began (``started``, :func:`_clock`); none once it is spent.

        Once per fit (:meth:`new_fit`): if the full problem's answer was kept, the full problem is
        solved for the rest of the fit (:meth:`solve`); if it was not, it was no better certified
        either, and the fit's later uncertified working-set answers are not rechecked (each recheck
        would be one more full solve per outer iteration, for nothing). The next point of a path
        decides afresh."""
        limit = self.options.time_limit
        left = None if limit is None else limit - (_clock() - started)
        if left is not None and left <= 0:
            self.last_report = attrs.evolve(
                self.last_report, recheck=f"working set {res.status.value}, full problem not solved: the time "
                                          f"limit of {limit:g} s was spent")
            return res
        full = self._solve_full(data) if left is None else self._solve_full_within(data, left)

        def rank(r):
            good = r.x is not None and r.ok
            return 2 if good and r.status is Status.OPTIMAL else 1 if good else 0

        tie = rank(full) == rank(res) > 0 and full.objective is not None and res.objective is not None
        keep_full = rank(full) > rank(res) or (tie and full.objective < res.objective)
        self._recheck = "full" if keep_full else "off"
        why = " (same status, lower objective)" if keep_full and tie else ""
        self.last_report = attrs.evolve(
            self.last_report, used=self.last_report.used and not keep_full,
            recheck=(f"working set {res.status.value}, full problem {full.status.value}: kept the "
                     f"{'full problem' if keep_full else 'working set'}'s answer{why}"))
        return full if keep_full else res

    def _solve_full_within(self, data, seconds: float) -> SolveResult:
        """The full problem solved once under a time limit of ``seconds`` (what is left of the
        subproblem's): a session opened for this solve and closed after it (a session's limit is
        set when it opens; the full problem's own session keeps the whole ``time_limit``)."""
        kept, self._full_session = self._full_session, None
        try:
            return self._on("_full_session", data, attrs.evolve(self.options, time_limit=seconds))
        finally:
            if self._full_session is not None:
                self._full_session.close()
            self._full_session = kept

    def _solve_restricted(self, data) -> SolveResult:
        # a restricted answer is certified once, on the full problem, by the working set
        # (WorkingSet._full_result, the same rule): not also round by round here
        return self._on("session", data, attrs.evolve(self.options, certify=False))

    def _solve_full(self, data) -> SolveResult:
        # with a working set, the full problem (a fallback) has a session of its own
        return self._on("session" if self.working_set is None else "_full_session", data)

    def set_bounds(self, **bounds) -> None:
        """Restate the subproblem for new values of the formulation's bound parameters
        (:attr:`Formulation.bound_params`) through its ``with_bounds`` (the ``bounds`` protocol,
        :data:`fsframe.formulation.PROTOCOLS`): the compiled problem's coefficients change in numpy;
        the Pyomo model is neither rebuilt nor recompiled. The next :meth:`solve` uses them (the
        backend session reloads what changed)."""
        self._protocol("bounds")
        self._restated(self.formulation.with_bounds(self.built, self.compiled.base, self.compiled, bounds))

    def restate(self, **params) -> None:
        """Restate the subproblem for new values of the formulation's restatable parameters
        (:attr:`Formulation.restatable_params`) through its ``restate`` (the ``restate``
        protocol), as :meth:`set_bounds` does for bound parameters: no rebuild, no recompile."""
        self._protocol("restate")
        self._restated(self.formulation.restate(self.built, self.compiled.base, self.compiled, params))

    def install(self, base) -> None:
        """Install ``base``, the compiled problem restated by the formulation itself (a retry of
        :func:`fsframe.fit`, the ``frontier_retries`` protocol), as :meth:`set_bounds` does."""
        self._restated(base)

    def _protocol(self, name: str) -> None:
        if name not in self.formulation.provides():
            why = restater_mismatch(self.formulation, name)
            if why is None:
                why = f"{' and '.join(PROTOCOLS[name])}; docs/plugins.md"
            raise IncompatibleComponentsError(f"formulation {self.formulation.name!r} does not implement the {name!r} "
                                              f"protocol ({why})")

    def _restated(self, base) -> None:
        """Install the restated ``base``; a working set re-reads which groups it can price when the
        rows or bounds it read them from changed (a bound moved away from zero keeps a group in)."""
        old, self.compiled.base = self.compiled.base, self._with_auxiliaries(base)
        base = self.compiled.base
        ws = self.working_set
        if ws is not None and (base.A is not old.A or base.lb is not old.lb or base.ub is not old.ub
                               or base.G is not old.G or base.h is not old.h):  # G, h: the epigraph rows
            ws.read_pricing(base)

    def seed_working_set(self, groups) -> bool:
        """Start the next solve's working set from ``groups`` (a boolean mask or indices over the
        groups, e.g. the working set of the previous point of a parameter path); returns whether
        this subproblem uses a working set at all (if not, nothing is seeded)."""
        ws = self._working_set()
        if ws is not None:
            ws.seed(groups)
        return ws is not None

    def restricted(self, it: Iterate, keep: NDArray, *, full: bool = False) -> Iterate:
        """Re-solve the subproblem of ``it`` (its slot weights) with the groups outside ``keep``
        fixed at zero (an infinite ``lin`` or ``quad`` weight; see
        :meth:`CompiledModel.with_weights`); warm, in the same session. ``full``: on the full
        problem, bypassing the working set (:meth:`solve`)."""
        keep = np.asarray(keep, dtype=bool)
        weights = {k: np.array(np.broadcast_to(np.asarray(v, dtype=float), np.shape(v) or (self.n_groups,)))
                   for k, v in it.weights.items()}
        key = next((k for k in ("lin", "quad") if k in weights), None)
        if key is None:
            key = "lin" if "lin" in self.terms else "quad"
            weights[key] = np.zeros(self.n_groups)
        w = np.array(np.broadcast_to(weights[key], (self.n_groups,)))
        w[~keep] = np.inf
        weights[key] = w
        return self.solve(**weights, full=full)

    def close(self) -> None:
        for name in ("session", "_full_session"):
            sess = getattr(self, name)
            if sess is not None:
                sess.close()
                setattr(self, name, None)
