"""DSO-FS (paper 004, Algorithm 1): direct ``l_{2,p}`` sparsity optimisation under the multi-class
margin constraints, as an outer loop that computes its iterates itself (it never solves the Pyomo
model of the ``margin`` formulation: the null-space parametrisation replaces it), followed by a
convex finish that makes the answer exact at ``p = 1`` (docs/multiclass.md)."""

from __future__ import annotations

import time
import warnings

import attrs
import numpy as np
from attrs.validators import and_, ge, in_, instance_of

from fsframe import AuxSolver, ProblemClass, SolveOptions, SolveResult, Status
from fsframe.errors import ConvergenceWarning, DataWarning, InfeasibleParameterError, SolverFailedError
from fsframe.loops import Choice, Finish, OuterLoop, Step
from fsframe.validators import as_int, not_bool, positive_int, real, to_float

from .convex import (RowModel, kkt_certificate, polish, reweighted_l2, reweighted_rounds, solve_rows, solve_weighted,
                     start_rows, weighted_rounds)
from .margin import label_matrix, separable_columns
from .nullspace import NullSpace, e_update_bvls, e_update_ldp, e_update_problem, l2p, row_norms, u_update

__all__ = ["DSOLoop", "MARGIN_TOL", "FINISH_MAX_MARGINS"]

FINISH_MAX_MARGINS = 2500
"""``finish="auto"`` runs the convex finish when the model has at most this many margins ``m c``:
each interior-point iteration on this SOCP factors a dense matrix of that order (measured on 2
cores: Yale's 60 % split, 1 485 margins, about a minute per solve; ORL's, 9 600, one solve had not
ended after 11 CPU-minutes; docs/multiclass.md)."""

MARGIN_TOL = 1e-6
"""A margin ``Y_ik (x_i W_k + b_k)`` below ``1 - MARGIN_TOL`` counts as broken (``info["margins_broken"]``)."""

SOFT_MARGIN_CALL = "fit(X, y, formulation='margin', surrogate='lp', loop='em', p=0.5, C=1.0)"
"""The soft-margin composition DSO-FS's messages advise (tested to run)."""

INFEASIBLE = (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)


def _cut(W: np.ndarray, zero_tol: float) -> np.ndarray:
    """``W`` with the rows at most ``zero_tol`` times the largest norm set to zero."""
    t = row_norms(W)
    return np.where((t > max(zero_tol * float(np.max(t, initial=0.0)), 1e-300))[:, None], W, 0.0)


def _no_solution(result: SolveResult):
    """The :class:`~fsframe.problem.Iterate` of a solve without a solution."""
    from fsframe.problem import Iterate

    return Iterate(result.status, None, None, None, None, None, None, 0.0, result)


@attrs.define
class _State:
    """What one DSO-FS run counts besides its steps (owned by :meth:`DSOLoop.steps`): Algorithm 1's
    steps and its last ``||W||_{2,p}``, ``E`` steps rejected or solved by BVLS, the statuses of solves that are no step (a failure the run goes on
    from), the result of the finish's last solve, and whether the finish ended above Algorithm 1."""

    a1_steps: int = 0
    a1_l2p: float | None = None
    rejected: int = 0
    fallbacks: int = 0
    statuses: list = attrs.field(factory=list)
    last: SolveResult | None = None
    monotone: bool = True
    active: dict = attrs.field(factory=dict)  # per class column, the margins active in the last LDP step


@attrs.frozen
class DSOLoop(OuterLoop):
    r"""Algorithm 1 of paper 004 (DSO-FS) for ``min ||W||_{2,p} s.t. Y ⊙ X W >= 1`` (eq. 5), the
    bias absorbed into ``W`` as the row of a column of ones (eq. 2; that row counts in the norm,
    as in the paper, and is returned as the intercept), then a convex finish. The history reports
    ``||W||_{2,p}`` with that row (Theorem 1's quantity); ``result.objective`` is fsframe's
    ``loss + sum_j phi(||W_j||)`` of the returned features, ``sum_j ||W_j||^p`` (the hard margin has
    no loss).

    Algorithm 1: the null space ``W = P U + Q + [L E; 0]`` (eqs. 7-8,
    :class:`~.nullspace.NullSpace`). From ``E^0``, ``Sigma^0 = I`` each iteration

    1. ``U^{k+1} = argmin ||Sigma^k (P U + G)||_F^2`` (closed form, eqs. 11-14,
       :func:`~.nullspace.u_update`);
    2. ``V^k = P U^{k+1} + Q + [L E^k; 0]``, ``Lambda^k = diag(||v_i^k||^(p/2-1))``;
    3. ``E^{k+1} = argmin ||Lambda^k (L E + H)||_F^2 s.t. Y ⊙ E >= 0``, a convex QP. For the hard
       margin it is solved exactly by least distance programming (``e_solver="auto"``/``"ldp"``,
       :func:`~.nullspace.e_update_ldp`: NNLS per class, no QP solver); ``"qp"`` solves
       :func:`~.nullspace.e_update_problem` on backend ``e_backend`` (the substitute's default),
       ``"bvls"`` by bounded least squares (scipy). A step that raises ``||W||_{2,p}`` above
       ``||V^k||_{2,p}`` (which the exact one cannot, Lemma 2: with the exact step only by
       rounding, once the step gains nothing) is not taken, ``E^{k+1} = E^k`` (counted in
       ``info["e_steps_rejected"]``);
    4. ``W^{k+1}``, ``Sigma^{k+1} = diag(||w_i^{k+1}||^(p/2-1))``;

    until ``||W||_{2,p}`` decreases by less than ``tol`` (relative). Theorem 1 (monotone) is
    checked: a rise beyond ``tol`` is reported, ``monotone=False``.

    Theorem 2 (the limit is the global optimum at ``p = 1``) does not hold for the alternation:
    when pivot rows of ``W1`` vanish, their weights freeze the ``U`` step and the iterates settle
    above the optimum, in exact arithmetic too (docs/multiclass.md gives a 4 x 4 example 2.24x
    above). Hence the finish (``finish="convex"``, :mod:`.convex`): at ``p = 1`` the convex model
    itself, solved on a working set of rows started from Algorithm 1's support and priced over all
    rows, exact; for ``p < 1`` reweighted-l1 steps from Algorithm 1's point (each an SOCP on the
    rows still non-zero, ``sum_j ||W_j||^p`` non-increasing) to a KKT point of eq. 6.
    ``finish="none"`` returns Algorithm 1's point as written (004's reported behaviour).

    Where ``[X, 1]`` has full row rank, ``X W = Y + E`` is solvable for every ``E`` and the model is
    the hard margin. Otherwise (``m > rank``) 004 §2 uses the least-squares substitute
    ``X W = X X⁺ (Y + E)``, which breaks margins; ``margin`` decides: ``"auto"`` keeps the hard
    margin when an LP says it is feasible (``E`` then stays in the range of ``[X, 1]``, from a
    feasible ``E^0``) and otherwise uses the substitute with a :class:`~fsframe.errors.DataWarning`;
    ``"hard"`` raises :class:`~fsframe.errors.InfeasibleParameterError` instead;
    ``"least-squares"`` always uses the substitute (004 as written). ``info["margins_broken"]``
    counts the broken margins of the returned model (before an ``n_features`` cut).

    ``FitResult.certificate`` judges the returned ``W`` (:func:`~.convex.kkt_certificate`: fsframe's
    certificate at that point, with the multipliers of a solve): at ``p = 1`` a KKT/duality check of
    the convex model over all rows (``"optimal"``: the global optimum); for ``p < 1`` the
    reweighted-l1 subproblem that gave it (``"optimal"``: a KKT point of eq. 6 to the finish's
    ``tol``, not a global optimum — the model is not convex). With ``finish="none"`` the multipliers
    come from one extra solve of that model (at ``p < 1`` with the returned point's own weights), so
    the certificate says how far Algorithm 1 stopped from it (``info["model_optimum"]`` at ``p = 1``),
    with a :class:`~fsframe.errors.ConvergenceWarning` when it fails.

    Parameters
    ----------
    finish : {"auto", "convex", "none"}
        ``"convex"``: after Algorithm 1, the convex model solved exactly (``p = 1``) or reweighted-l1
        steps to a KKT point (``p < 1``); ``"none"``: Algorithm 1's point, as 004 writes it;
        ``"auto"``: ``"convex"`` up to :data:`FINISH_MAX_MARGINS` margins ``m c``, beyond that
        ``"none"`` with a :class:`~fsframe.errors.ConvergenceWarning` (the certificate says how far).
    margin : {"auto", "hard", "least-squares"}
        The model when ``m > rank [X, 1]``: ``"auto"`` the hard margin if an LP finds it feasible, else
        004 §2's least-squares substitute (with a warning); ``"hard"`` raises instead of substituting;
        ``"least-squares"`` always the substitute (004 as written).
    finish_backend : str
        The registered backend of the finish's SOCPs and of the certificate's solve (default
        ``"clarabel"``).
    finish_threads : int
        Clarabel's ``max_threads`` for the finish's SOCPs (default 1; 0: Clarabel's choice, all
        cores). One thread: measured 1.4-6x less CPU on Yale's fits than Clarabel's default on a
        shared 2-core machine, with the same answer (docs/multiclass.md), and deterministic. A
        ``max_threads`` in the fit's ``backend_options`` wins, which it can hold only with
        ``backend="clarabel"``: the fit's ``backend_options`` go to its backend too, and HiGHS (the
        default) refuses ``max_threads`` (docs/backends.md).
    e_solver : {"auto", "ldp", "qp", "bvls"}
        ``"auto"``: LDP for the hard margin, the QP for the substitute. BVLS has no equality rows:
        the hard margin with ``m > rank`` uses the LDP (then the QP) instead.
    e_backend : str
        The registered backend of the ``E`` QP (default ``"clarabel"``: HiGHS's QP solver stops with
        numerical errors on these weights, measured on Colon).
    bvls_fallback : bool
        When the QP has no verified solution (Clarabel stops short on the degenerate ``E`` of
        rank-deficient data, ``m > rank X``), solve that step by BVLS instead (counted in
        ``info["e_steps_bvls"]``; not for the hard margin with ``m > rank``, which BVLS cannot state);
        ``False`` makes it a failure (raise, or with ``raise_on_failure=False`` keep the last iterate).
    max_iter : int
        Default 100 (Algorithm 1's iterations; the ``p < 1`` finish takes at most as many steps).
    tol : float
        Default 1e-4 (relative decrease of ``||W||_{2,p}``; the finish's rule too).
    """

    name = "dso"
    data_facts = ("rank",)  # rank [X, 1], which decides the hard margin's feasible start
    reference = "Peng & Fan, paper 004, Algorithm 1, eqs. 7-14, Theorems 1-2"
    requires = ("lp_norm",)  # phi(t) = t**p exactly, 0 < p <= 1: lp with eps = 0, or l1 (p = 1)
    formulation_requires = ("hard_margin",)  # 004 eq. 5: margin with C unset
    chooses = True  # the last point, its n_features largest rows, with the certificate of that W
    monotone = True
    support_scale = "iterate"  # every iterate meets the margins: its own largest row is the scale
    max_iter: int = attrs.field(default=100, converter=as_int, validator=positive_int)
    tol: float = attrs.field(default=1e-4, converter=to_float, validator=real(0))
    finish: str = attrs.field(default="auto", validator=in_(("auto", "convex", "none")))
    margin: str = attrs.field(default="auto", validator=in_(("auto", "hard", "least-squares")))
    finish_backend: str = attrs.field(default="clarabel", validator=instance_of(str))
    finish_threads: int = attrs.field(default=1, converter=as_int, validator=and_(not_bool, instance_of(int), ge(0)))
    e_solver: str = attrs.field(default="auto", validator=in_(("auto", "ldp", "qp", "bvls")))
    e_backend: str = attrs.field(default="clarabel", validator=instance_of(str))
    bvls_fallback: bool = attrs.field(default=True, validator=instance_of(bool))

    def terms(self, surrogate):
        return frozenset({"quad"})

    def formulation_missing(self, formulation):
        """The base's gaps, with the way out when the hard margin is missing (a soft ``margin``,
        ``C`` set): the call that runs a soft margin (tested to run)."""
        miss = super().formulation_missing(formulation)
        if miss:
            miss[-1] += (" (paper 004 eq. 5: the 'margin' formulation with C unset, on which dso-fs runs 004 §2's "
                         "least-squares substitute where no W meets the hard margins, and says so; for a soft margin "
                         f"use the generic composition instead, e.g. fsframe.{SOFT_MARGIN_CALL})")
        return miss

    # -- the model ---------------------------------------------------------------------------------
    def _hard_model(self, X, Y, ns: NullSpace, active: dict) -> tuple[bool, list]:
        """``(hard, bad_columns)``: whether Algorithm 1 runs on the hard margin (True wherever
        ``[X, 1]`` has full row rank; for ``m > rank`` per ``margin``, feasibility per class column
        by the hard-margin SVM or an LP, :func:`~.margin.separable_columns`, whose active samples
        start ``active``)."""
        if ns.consistent:
            return True, []
        if self.margin == "least-squares":
            return False, []
        ok = separable_columns(X, Y, active=active)
        bad = np.flatnonzero(~ok).tolist()
        if not bad:
            return True, []
        if self.margin == "hard":
            raise InfeasibleParameterError(
                f"dso: the hard-margin constraints Y ⊙ (XW + 1bᵀ) >= 1 (paper 004 eq. 5) have no solution on this "
                f"data: class column(s) {bad} cannot be separated from the rest by any hyperplane. Use margin='auto' "
                "(004 §2's least-squares substitute, which breaks some margins and says how many) or a soft margin, "
                f"e.g. fsframe.{SOFT_MARGIN_CALL}", parameter="margin", value=None, limit=None)
        return False, bad

    def _step(self, W, n: int, p: float, result: SolveResult, seconds: float, *, monitored: bool = True) -> Step:
        """The :class:`~fsframe.loops.Step` of the point ``W`` (``n`` feature rows, then the bias
        row): its ``||W||_{2,p}`` with the bias row reported (Theorem 1's quantity), and monitored
        unless the point need not lie below the previous (a working-set round of the finish)."""
        from fsframe.problem import Iterate

        f = l2p(W, p)
        coef, groups = self._layout(W, n)
        it = Iterate.computed(coef, W[n], row_norms(W[:n]), groups=groups, loss=0.0, objective=f, seconds=seconds,
                              backend=result.backend, status=result.status)
        return Step(it, f, f if monitored else None)

    @staticmethod
    def _layout(W, n: int):
        """The feature rows of ``W`` in the formulation's layout and the group of each entry:
        ``W`` (n, c) with row ``j`` feature ``j``'s group; one column (two classes) gives ``(n,)``,
        a binary model (:func:`~.margin.label_matrix`)."""
        if W.shape[1] == 1:
            return W[:n, 0], np.arange(n)
        return W[:n], np.repeat(np.arange(n), W.shape[1]).reshape(n, W.shape[1])

    # -- Algorithm 1 -------------------------------------------------------------------------------
    def _e_step(self, aux, ns, H, Y, V, p, hard, Xt, U, active: dict):
        """``(E, result, fell_back)``; ``E`` is None when no solution was found. BVLS has no
        equality rows, so the hard margin with ``m > rank`` takes the LDP or the QP. ``active``:
        the LDP's working sets across iterations (:func:`~.nullspace.e_update_ldp`)."""
        ranged = hard and not ns.consistent
        if hard and (self.e_solver == "auto" or self.e_solver == "ldp" or (self.e_solver == "bvls" and ranged)):
            t0 = time.perf_counter()
            E = e_update_ldp(ns, Xt, U, Y, V, p, active)
            if E is not None:
                return E, SolveResult(Status.OPTIMAL, None, None, "scipy-nnls", time.perf_counter() - t0), False
        if self.e_solver != "bvls" or ranged:
            res = aux.solve(e_update_problem(ns, H, Y, V, p, hard=hard), backend=self.e_backend)
            if res.ok:
                m, c = Y.shape
                E = res.x[:m * c].reshape(c, m).T
                return np.where(Y > 0, np.maximum(E, 0.0), np.minimum(E, 0.0)), res, False  # bounds to tolerance
            if not self.bvls_fallback or ranged:
                return None, res, False
        t0 = time.perf_counter()
        E = e_update_bvls(ns, H, Y, V, p)
        ok = bool(np.all(np.isfinite(E)))
        return (E if ok else None), SolveResult(Status.OPTIMAL if ok else Status.ERROR, None, None, "scipy-bvls",
                                                time.perf_counter() - t0), self.e_solver != "bvls"

    def _e_start(self, aux, ns, Y, p, hard, Xt, active: dict):
        """``E^0``: 0 as in Algorithm 1 where ``Y`` is in the range of ``[X, 1]`` (or for the
        substitute); for the hard margin with ``m > rank``, the ``E`` step at ``U = 0`` with unit
        weights (the feasible ``E`` whose ``W1 = L (Y + E)`` is smallest)."""
        if not hard or ns.consistent:
            return np.zeros_like(Y), None
        E, res, _ = self._e_step(aux, ns, ns.N, Y, np.ones((ns.m0, Y.shape[1])), p, hard, Xt,
                                 np.zeros((ns.n0, Y.shape[1])), active)
        if E is None:
            raise SolverFailedError.of(f"dso: the feasible start E^0 of the hard margin (m > rank [X, 1]) ended with "
                                       f"status {res.status.value} ({res.message}) on backend {res.backend}; "
                                       "margin='least-squares' runs 004 §2's substitute instead", result=res)
        return E, res

    def _algorithm1(self, aux, ns, Xt, Y, p, hard, state: _State):
        """Algorithm 1's iterations, one :class:`~fsframe.loops.Step` each; returns ``(W, E,
        converged, reason)``. A failed ``E`` step is yielded as a step without a solution (the base
        raises :class:`~fsframe.errors.SolverFailedError`) unless ``raise_on_failure=False`` and an
        iterate exists: then Algorithm 1 stops at the last iterate, with a warning, and the finish
        and the certificate go on from it."""
        n = ns.m0 + ns.n0 - 1
        E, res0 = self._e_start(aux, ns, Y, p, hard, Xt, state.active)
        if res0 is not None:
            aux.record((self.name, "E^0"), (res0.status,))
        t_piv = np.ones(n + 1)  # Sigma^0 = I (row norms 1), in pivot order
        W, prev = None, None
        for k in range(self.max_iter):
            t0 = time.perf_counter()
            U = u_update(ns, ns.N + ns.L @ E, t_piv, p)
            H = ns.N - ns.M @ U
            V = H + ns.L @ E  # the pivot rows of V^k
            E_new, result, fell_back = self._e_step(aux, ns, H, Y, V, p, hard, Xt, U, state.active)
            state.fallbacks += fell_back
            if E_new is None:
                if W is None or self.raise_on_failure:  # OuterLoop.run raises at this step, never resumes
                    yield Step(_no_solution(result), None, params={"step": "E update", "iteration": k})
                state.statuses.append(result.status)
                warnings.warn(f"dso: the E update of iteration {k} ended with status {result.status.value} "
                              f"({result.message}) on backend {result.backend}; Algorithm 1 stops at the last iterate",
                              ConvergenceWarning, stacklevel=4)
                return W, E, False, f"subproblem failed: {result.status.value}"
            W_v = ns.assemble(U, E)  # V^k: after the U step
            W = ns.assemble(U, E_new)
            if l2p(W, p) > l2p(W_v, p):  # Lemma 2 forbids it: rounding (or an inexact QP); keep E^k
                W, state.rejected = W_v, state.rejected + 1
            else:
                E = E_new
            t_piv = row_norms(W)[ns.perm]
            step = self._step(W, n, p, result, time.perf_counter() - t0)
            yield step
            f = state.a1_l2p = step.objective
            state.a1_steps += 1
            if prev is not None and abs(prev - f) <= self.tol * max(abs(prev), 1e-300):
                return W, E, True, "||W||_2,p decrease below tol"
            prev = f
        return W, E, False, "max_iter reached"

    # -- the finish and the certificate -----------------------------------------------------------
    def _rounds(self, solves, n: int, p: float, state: _State):
        """Relay the solves of a generator of :mod:`.convex` as steps, unmonitored (a working-set
        round's restricted optimum may lie above the point the finish started from: only the
        finish's end point must not, checked by :meth:`_finish`); a round proven infeasible (rows
        that cannot meet the margins, which the working set then widens) is a probe. Returns
        the generator's value."""
        while True:
            try:
                sol = next(solves)
            except StopIteration as stop:
                return stop.value
            state.last = sol.res
            if sol.W is not None:
                yield self._step(sol.W, n, p, sol.res, sol.seconds, monitored=False)
            elif sol.res.status in INFEASIBLE:
                yield Step(_no_solution(sol.res), None, params={"step": "convex finish round"}, probe=True)
            else:  # the finish ends here without a solution: dso decides (raise, or Algorithm 1's point)
                state.statuses.append(sol.res.status)

    def _finish(self, model: RowModel, W, p, solve, state: _State):
        """The convex finish from Algorithm 1's ``W``, its solves yielded as steps: returns
        ``(solved or None, converged, reason, info)``. Its end point must not lie above ``W`` (at
        ``p = 1`` ``W`` is feasible for the model the finish solves; for ``p < 1`` each reweighted step
        descends): a rise beyond ``tol`` is reported like Theorem 1's (``monotone=False``)."""
        n = model.Xt.shape[1] - 1
        start = l2p(W, p)
        info: dict = {}
        if p == 1.0:
            sol, added = yield from self._rounds(weighted_rounds(model, np.ones(W.shape[0]), self._start(model, W),
                                                                 solve), n, p, state)
            info = {"finish_rows": int(sol.rows.size), "finish_rows_priced_in": added}
            if sol.W is None:
                return None, False, f"convex finish ended {sol.res.status.value}", info
            ok, why = True, "convex finish: the p = 1 model solved, priced over all rows"
        else:
            sol, ok, why = yield from self._rounds(
                reweighted_rounds(model, W, p, solve, zero_tol=self.zero_tol, tol=self.tol, max_iter=self.max_iter), n, p,
                state)
            why = "convex finish: " + why
            if sol is None:
                return None, ok, why, info
        sol = yield from self._polish(model, sol, solve, info, p, state)
        end = l2p(sol.W, p)
        if end > start + self.tol * max(1.0, start):
            state.monotone = False
            warnings.warn(f"dso: the convex finish ended at ||W||_2,p = {end:.8g}, above Algorithm 1's {start:.8g} "
                          f"(tolerance {self.tol:g}); the solver's accuracy may be too low", ConvergenceWarning,
                          stacklevel=4)
        return sol, ok, why, info

    def _start(self, model: RowModel, W):
        """The ``p = 1`` model's first working set: ``W``'s largest rows and the bias row."""
        start = start_rows(row_norms(_cut(W, self.zero_tol)), np.ones(W.shape[0]), model.Xt.shape[0])
        start[-1] = True
        return start

    def _solve_p1(self, model: RowModel, W, solve):
        """The ``p = 1`` model solved exactly, the working set started from ``W``'s largest rows."""
        return solve_weighted(model, np.ones(W.shape[0]), self._start(model, W), solve)[0]

    def _polish(self, model, sol, solve, info: dict, p: float, state: _State):
        """:func:`~.convex.polish` (a new solve is yielded as a step); ``info["zero_tol_cut_rise"]``:
        what the cut cost (relative)."""
        out = polish(model, sol, solve, self.zero_tol)
        if out is not sol:
            if out.res is not sol.res:  # a new solve
                state.last = out.res
                yield self._step(out.W, model.Xt.shape[1] - 1, p, out.res, out.seconds, monitored=False)
            before, after = float(sol.omega[sol.rows] @ row_norms(sol.W[sol.rows])), \
                float(out.omega[out.rows] @ row_norms(out.W[out.rows]))
            info["zero_tol_cut"] = int(np.count_nonzero(row_norms(sol.W) > 0) - np.count_nonzero(row_norms(out.W) > 0))
            info["zero_tol_cut_rise"] = (after - before) / max(abs(before), 1e-300)
        return out

    def _certify(self, model: RowModel, W, E, p, solve, sol, tol: float):
        """``(SolveResult, extra info, statuses)`` describing the returned ``(W, E)`` (see the class
        docstring); ``sol`` is the finish's last solve, None for Algorithm 1's point: then the
        multipliers come from one reweighted-l2 step at ``W`` (hard margin: NNLS, cheap) or one solve
        of the substitute's model (when affordable), whose status is returned to be recorded."""
        extra, statuses = {}, []
        if sol is None:
            t = row_norms(W)
            omega = np.ones(t.size)
            if p < 1.0:
                omega[t == 0] = np.inf
                omega[t > 0] = t[t > 0] ** (p - 1.0)
            omega /= omega[np.isfinite(omega)].min()
            if model.hard:
                sol = reweighted_l2(model, W, omega)
            elif self._affordable(model):
                sol = (self._solve_p1(model, W, solve) if p == 1.0 else
                       solve_rows(model, np.flatnonzero(t > 0), omega, solve))
            else:
                res = SolveResult(Status.UNKNOWN, None, None, "none", 0.0,
                                  message=f"not certified: the substitute's model has {model.Y.size} margin rows, "
                                          f"beyond FINISH_MAX_MARGINS={FINISH_MAX_MARGINS}")
                return res, extra, statuses
            statuses.append(sol.res.status)
        res = sol.res
        if sol.D is None:
            return attrs.evolve(res, message=res.message + "; the returned W is not certified"), extra, statuses
        status, cert, message = kkt_certificate(model, W, E, sol, tol=tol)
        if p == 1.0:
            extra["model_lower_bound"] = float(cert.dual_bound)
        return (attrs.evolve(res, status=status, certificate=cert, x=None, message=message.lstrip("; ")), extra,
                statuses)

    def _finish_options(self, options: SolveOptions, backend: str) -> SolveOptions:
        """The fit's solver options for the finish's SOCPs, with Clarabel's ``max_threads`` set to
        ``finish_threads`` unless the fit's ``backend_options`` give it."""
        given = options.backend_options
        if backend != "clarabel" or "max_threads" in given:
            return options
        return attrs.evolve(options, backend_options={**given, "max_threads": self.finish_threads})

    def _affordable(self, model: RowModel) -> bool:
        return model.Y.size <= FINISH_MAX_MARGINS

    # -- the run -------------------------------------------------------------------------------------
    def steps(self, sub, surrogate, run):
        """Algorithm 1's iterations, then the finish's solves, one step each (their ``||W||_{2,p}``
        with the bias row in the history); returns the certified ``W`` as a
        :class:`~fsframe.loops.Choice` (see the class docstring). The ``E`` steps and the finish's
        SOCPs go through the fit's auxiliary solver (``run.aux``), on ``e_backend`` and
        ``finish_backend``."""
        p = float(surrogate.p)
        aux = run.aux if run.aux is not None else AuxSolver(sub.backend, sub.options)  # outside a fit
        X = np.asarray(sub.X, dtype=float)
        Y = label_matrix(sub.y)
        m, n = X.shape
        t_start = time.perf_counter()
        Xt = np.hstack([X, np.ones((m, 1))])
        ns = NullSpace.of(Xt, Y)
        state = _State()
        hard, bad = self._hard_model(X, Y, ns, state.active)
        run.info["rank"] = ns.m0
        if bad:
            run.info["inseparable_columns"] = bad
        finish_be = aux.backend_for(ProblemClass.SOCP, backend=self.finish_backend)
        finish_opts = self._finish_options(aux.options, finish_be.name)

        def solve(data):
            return finish_be.solve(data, finish_opts)

        W, E, converged, reason = yield from self._algorithm1(aux, ns, Xt, Y, p, hard, state)
        run.info.update(algorithm1_iterations=state.a1_steps, algorithm1_l2p=state.a1_l2p, algorithm1_stop=reason)
        model = RowModel(Xt, Y, None if hard else ns.Q1.T)
        sol, fin = None, {}
        finish = self.finish
        if finish == "auto":
            finish = "convex" if self._affordable(model) else "none"
            if finish == "none":
                warnings.warn(
                    f"dso: the convex finish is skipped: its interior-point solves factor a dense matrix of the order "
                    f"of the m c = {Y.size} margins (more than FINISH_MAX_MARGINS={FINISH_MAX_MARGINS}); returning "
                    "Algorithm 1's point, with a certificate of how far it is from the model's optimum. "
                    "finish='convex' forces the finish", ConvergenceWarning, stacklevel=3)
        if finish == "convex":
            sol, ok, why, fin = yield from self._finish(model, W, p, solve, state)
            if sol is None:
                last = state.last
                msg = f"dso: the convex finish ended with status {last.status.value} ({last.message}) on backend " \
                      f"{last.backend}"
                if self.raise_on_failure:
                    raise SolverFailedError(msg + "; set raise_on_failure=False to keep Algorithm 1's point, or "
                                            "finish='none'", result=last)
                warnings.warn(msg + "; returning Algorithm 1's point", ConvergenceWarning, stacklevel=3)
                converged, reason = False, f"{reason}; {why}"
            else:
                W, E = sol.W, (sol.E if sol.E is not None else E)
                converged, reason = ok, f"{reason}; {why}"
                if not ok:
                    warnings.warn(f"dso: the convex finish stopped at max_iter={self.max_iter} before its stopping rule "
                                  "held", ConvergenceWarning, stacklevel=3)
        W = _cut(W, self.zero_tol)
        result, cert_info, more = self._certify(model, W, E, p, solve, sol, aux.options.cert_tol)
        run.info.update({"e_steps_rejected": state.rejected, "e_steps_bvls": state.fallbacks, "finish": finish,
                         **fin, **cert_info, **self._margin_report(model, W, hard, bad, ns),
                         "l2p_with_bias_row": l2p(W, p), "l2p_features": l2p(W[:n], p)})
        if finish == "none" and result.status is not Status.OPTIMAL:
            self._warn_uncertified(run.info, p, result)
        why_fewer = (f"At p = {p:g} the l_(2,p) solution is this sparse. " if finish == "convex" else "")
        choice = self._choose(W, n, p, result, run.n_features, why_fewer, (*state.statuses, *more),
                              time.perf_counter() - t_start)
        return Finish(converged, reason, choice, monotone=state.monotone)

    def _choose(self, W, n: int, p: float, result: SolveResult, r, why_fewer: str, statuses, seconds) -> Choice:
        """The answer: ``W``'s feature rows above ``zero_tol`` times the largest norm; with
        ``n_features`` the ``r`` largest (004 Algorithm 1, last line: "select the largest d
        features"; ``info["n_features_dropped"]`` counts the non-zero rows cut), fewer non-zero rows
        than asked warned about (:class:`~fsframe.errors.ConvergenceWarning`, ``why_fewer`` the
        reason) and counted (``info["n_features_missing"]``). The objective is ``sum_j ||W_j||^p``
        of the rows returned; the iterate is ``W`` with ``result``, the certificate of that ``W``
        (a cut to ``n_features`` then shows as ``status="cut"`` in ``FitResult.certificate``)."""
        from fsframe.problem import Iterate

        t = row_norms(W[:n])
        support = t > max(self.zero_tol * float(np.max(t, initial=0.0)), 1e-12)
        info = {}
        if r is not None:
            have = int(support.sum())
            if have < r:
                info["n_features_missing"] = r - have
                warnings.warn(f"{self.name}: n_features={r} asked, {have} returned: only {have} rows of W are non-zero "
                              f"(above zero_tol={self.zero_tol:g} times the largest row norm); the others are zero and "
                              f"have no ranking. {why_fewer}Ask for at most {have} features or make the model less "
                              "sparse", ConvergenceWarning, stacklevel=4)
            keep = np.zeros_like(support)
            keep[np.argsort(-t, kind="stable")[:min(r, have)]] = True
            info["n_features_dropped"] = int(np.count_nonzero(support & ~keep))
            support = keep
        objective = float(np.sum(row_norms(np.where(support[:, None], W[:n], 0.0)) ** p))
        coef, groups = self._layout(W, n)
        it = Iterate(result.status, None, np.array(coef, dtype=float), np.atleast_1d(np.asarray(W[n], dtype=float)),
                     t, 0.0, objective, seconds, result, groups=groups)
        return Choice(it, support, objective, info, tuple(statuses))

    def _warn_uncertified(self, info: dict, p: float, result: SolveResult) -> None:
        """Algorithm 1 as written (``finish="none"``) stopped where the certificate fails: say how far."""
        f = info["l2p_with_bias_row"]
        if p == 1.0 and result.certificate is not None and info.get("model_lower_bound", 0) > 0:
            low = info["model_lower_bound"]
            what = (f"||W||_2,1 = {f:.6g}, up to {f / low - 1:.2%} above the optimum of its convex model (p = 1; its "
                    f"certificate bounds the optimum below by {low:.6g}; Theorem 2 does not hold for the U/E "
                    "alternation, docs/multiclass.md)")
        else:
            what = f"a point that is not a KKT point of 004 eq. 6 (certificate {result.status.value}: {result.message})"
        warnings.warn(f"dso: Algorithm 1 as written (finish='none') stopped at {what}; finish='convex' continues from "
                      "there to the optimum (p = 1) or a KKT point (p < 1)", ConvergenceWarning, stacklevel=3)

    def _margin_report(self, model: RowModel, W, hard: bool, bad: list, ns: NullSpace) -> dict:
        """``info`` on the margins of the returned ``W``; warns when the substitute breaks some."""
        marg = model.margins(W)
        broken = int(np.count_nonzero(marg < 1.0 - MARGIN_TOL))
        worst = float(max(0.0, 1.0 - float(np.min(marg, initial=1.0))))
        out = {"margin": "hard" if hard or ns.consistent else "least-squares", "margins_broken": broken,
               "largest_margin_violation": worst}
        if out["margin"] == "least-squares" and broken:
            why = (f"class column(s) {bad} cannot be separated by any hyperplane (an LP decided), so" if bad else
                   "margin='least-squares':")
            warnings.warn(
                f"dso: {why} Algorithm 1 ran on 004 §2's least-squares substitute X W = X X⁺ (Y + E) "
                f"(m={model.Xt.shape[0]} > rank [X, 1]={ns.m0}); the returned model breaks {broken} of the "
                f"{marg.size} margins Y ⊙ (XW + 1bᵀ) >= 1 (largest violation {worst:.3g}). A soft margin keeps "
                f"them as slacks: fsframe.{SOFT_MARGIN_CALL}", DataWarning, stacklevel=3)
        return out
