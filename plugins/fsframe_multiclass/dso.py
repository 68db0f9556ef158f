"""DSO-FS (paper 004, Algorithm 1): direct ``l_{2,p}`` sparsity optimisation under the multi-class
margin constraints, as an outer loop that runs the algorithm itself (it never solves the Pyomo
model of the ``margin`` formulation: the null-space parametrisation replaces it)."""

from __future__ import annotations

import time
import warnings

import attrs
import numpy as np
from attrs.validators import in_, instance_of

from fsframe import OuterLoop, SolveResult, Status, get_registry
from fsframe.errors import ConvergenceWarning, InvalidOptionError, SolverFailedError
from fsframe.loops.base import IterRecord, LoopOutcome, support_of
from fsframe.surrogates.lp import LpSurrogate
from fsframe.validators import as_int, positive_int, real, to_float

from .margin import label_matrix
from .nullspace import NullSpace, e_update_bvls, e_update_problem, l2p, row_norms, u_update

__all__ = ["DSOLoop", "outcome_from_weights", "descent_step"]


def outcome_from_weights(loop, W, intercept, *, objective, history, statuses, converged, reason, monotone,
                         result, n_features, seconds, extra=None) -> LoopOutcome:
    """A :class:`~fsframe.loops.base.LoopOutcome` for a loop that computes ``W`` (n, c) itself:
    support = rows above ``zero_tol`` times the largest norm; with ``n_features`` the ``r``
    largest rows (004 Algorithm 1, last line: "select the largest d features"), the others zeroed
    (``info["n_features_dropped"]`` counts the non-zero rows cut). ``objective(coef)`` gives the
    reported objective of the returned coefficients (fsframe's ``loss + penalty``). ``W`` with one column (two classes)
    gives a 1-D ``coef``."""
    from fsframe.problem import Iterate

    t = row_norms(W)
    scale = float(np.max(t, initial=0.0))
    support = t > max(loop.zero_tol * scale, 1e-12)
    selection = dict(extra or {})
    if n_features is not None:
        order = np.argsort(-t, kind="stable")
        keep = np.zeros_like(support)
        keep[order[:min(n_features, int(support.sum()))]] = True
        selection["n_features_dropped"] = int(np.count_nonzero(support & ~keep))
        support = keep
    coef = np.where(support[:, None], W, 0.0)
    objective = float(objective(coef))  # of the model returned (after the n_features cut)
    if coef.shape[1] == 1:  # two classes: one column, a binary model (margin.label_matrix)
        coef = coef[:, 0]
    intercept = np.atleast_1d(np.asarray(intercept, dtype=float))
    it = Iterate(status=result.status, x=None, coef=coef.ravel(), intercept=intercept,
                 t=t, loss=0.0, objective=objective, seconds=seconds, result=result)
    return LoopOutcome(iterate=it, coef=coef, support=support, objective=objective, converged=converged,
                       n_iter=len(history), history=tuple(history), monotone=monotone, reason=reason,
                       statuses=tuple(statuses), selection=selection or None)


def descent_step(loop, who: str, what: str, prev, record: IterRecord, history: list, callback) -> tuple[bool, bool]:
    """Append ``record`` to ``history``, report it to ``callback``, and return ``(rose, small)`` for
    its objective ``f`` after ``prev`` (None at the first iterate): a rise beyond ``loop.tol``
    (relative) is warned about (:class:`ConvergenceWarning`); ``small`` when the change is below
    ``loop.tol`` relative — the stopping rule of ``dso`` and ``rfs``."""
    history.append(record)
    if callback is not None:
        callback(record, None)
    f, k = record.objective, record.k
    if prev is None:
        return False, False
    rose = f > prev + loop.tol * max(1.0, abs(prev))
    if rose:
        warnings.warn(f"{who}: {what} rose from {prev:.8g} to {f:.8g} at iteration {k} (tolerance {loop.tol:g}); "
                      "the solver's accuracy may be too low for this tol", ConvergenceWarning, stacklevel=3)
    return rose, abs(prev - f) <= loop.tol * max(abs(prev), 1e-300)


@attrs.frozen
class DSOLoop(OuterLoop):
    r"""Algorithm 1 of paper 004 (DSO-FS) for ``min ||W||_{2,p} s.t. Y ⊙ X W >= 1`` (eq. 5), the
    bias absorbed into ``W`` as the row of a column of ones (eq. 2; that row counts in the norm,
    as in the paper, and is returned as the intercept). The history reports ``||W||_{2,p}`` with that
    row (Theorem 1's quantity); ``result.objective`` is fsframe's ``loss + sum_j phi(||W_j||)`` of
    the returned features, ``sum_j ||W_j||^p`` (the hard margin has no loss).

    Setup: the null space ``W = P U + Q + [L E; 0]`` (eqs. 7-8, :class:`~.nullspace.NullSpace`).
    From ``E^0 = 0``, ``Sigma^0 = I`` each iteration

    1. ``U^{k+1} = argmin ||Sigma^k (P U + G)||_F^2`` (closed form, eqs. 11-14,
       :func:`~.nullspace.u_update`);
    2. ``V^k = P U^{k+1} + Q + [L E^k; 0]``, ``Lambda^k = diag(||v_i^k||^(p/2-1))``;
    3. ``E^{k+1} = argmin ||Lambda^k (L E + H)||_F^2 s.t. Y ⊙ E >= 0`` — a convex QP
       (:func:`~.nullspace.e_update_problem`) solved on backend ``e_backend`` (``e_solver="qp"``)
       or by bounded least squares (``"bvls"``, scipy). The weights span many orders of
       magnitude as rows vanish; a step whose inexact solution raises ``||W||_{2,p}`` above
       ``||V^k||_{2,p}`` (which the exact one cannot, Lemma 2) is rejected, ``E^{k+1} = E^k``
       (counted in ``info["e_steps_rejected"]``);
    4. ``W^{k+1}``, ``Sigma^{k+1} = diag(||w_i^{k+1}||^(p/2-1))``.

    Theorem 1: ``||W^k||_{2,p}`` does not increase (checked: a rise beyond ``tol`` is reported,
    ``monotone=False``). Stops when it decreases by less than ``tol`` (relative). Theorem 2: with
    ``p = 1`` the limit is the global optimum of the convex problem. The ``l_{2,p}`` exponent is
    the ``lp`` surrogate's ``p`` (``0 < p <= 1``, ``eps = 0``). Runs on any data: where
    ``X W = Y + E`` is inconsistent (``m > rank X``) the least-squares solution space is used, as in
    §2 (the margin then holds in the least-squares sense only).

    Parameters
    ----------
    e_solver : {"qp", "bvls"}
    e_backend : str
        The registered backend of the ``E`` QP (default ``"clarabel"``: HiGHS's QP solver stops with
        numerical errors on these weights, measured on Colon).
    bvls_fallback : bool
        When the QP has no verified solution (Clarabel stops short on the degenerate ``E`` of
        rank-deficient data, ``m > rank X``), solve that step by BVLS instead (counted in
        ``info["e_steps_bvls"]``); ``False`` makes it a failure (raise, or with
        ``raise_on_failure=False`` keep the last iterate).
    max_iter : int
        Default 100.
    tol : float
        Default 1e-4 (relative decrease of ``||W||_{2,p}``).
    """

    name = "dso"
    formulations = ("margin",)
    reference = "Peng & Fan, paper 004, Algorithm 1, eqs. 7-14, Theorems 1-2"
    requires = ()
    monotone = True
    max_iter: int = attrs.field(default=100, converter=as_int, validator=positive_int)
    tol: float = attrs.field(default=1e-4, converter=to_float, validator=real(0))
    e_solver: str = attrs.field(default="qp", validator=in_(("qp", "bvls")))
    e_backend: str = attrs.field(default="clarabel", validator=instance_of(str))
    bvls_fallback: bool = attrs.field(default=True, validator=instance_of(bool))

    def missing(self, surrogate):
        if not isinstance(surrogate, LpSurrogate) or not 0 < surrogate.p <= 1 or surrogate.eps != 0:
            return ["the l_{2,p} norm: surrogate 'lp' with 0 < p <= 1 and eps = 0"]
        return []

    def terms(self, surrogate):
        return frozenset({"quad"})

    def steps(self, sub, surrogate):  # pragma: no cover - run() is the algorithm
        raise NotImplementedError("dso runs Algorithm 1 in run()")

    def _e_step(self, sub, ns, H, Y, V, p):
        """``(E, result, fell_back)``; ``E`` is None when no solution was found."""
        if self.e_solver == "qp":
            backend = get_registry().get("backend", self.e_backend)()
            res = sub.solver.solve(e_update_problem(ns, H, Y, V, p), backend=backend)
            if res.ok:
                m, c = Y.shape
                E = res.x[:m * c].reshape(c, m).T
                return np.where(Y > 0, np.maximum(E, 0.0), np.minimum(E, 0.0)), res, False  # bounds to tolerance
            if not self.bvls_fallback:
                return None, res, False
        t0 = time.perf_counter()
        E = e_update_bvls(ns, H, Y, V, p)
        ok = bool(np.all(np.isfinite(E)))
        return (E if ok else None), SolveResult(Status.OPTIMAL if ok else Status.ERROR, None, None, "scipy-bvls",
                                                time.perf_counter() - t0), self.e_solver == "qp"

    def run(self, sub, surrogate, *, n_features=None, callback=None):
        if getattr(sub.formulation, "C", None) is not None:
            raise InvalidOptionError(f"dso: Algorithm 1 solves the hard margin of 004 eq. 5, but the margin formulation "
                                     f"has C={sub.formulation.C}; leave C=None (the soft margin runs with loop 'em', "
                                     "'dca' or 'reweighted-l1')")
        p = float(surrogate.p)
        X = np.asarray(sub.X, dtype=float)
        Y = label_matrix(sub.y)
        m, n = X.shape
        t_start = time.perf_counter()
        ns = NullSpace.of(np.hstack([X, np.ones((m, 1))]), Y)
        setup = time.perf_counter() - t_start
        E = np.zeros_like(Y)
        t_piv = np.ones(n + 1)  # Sigma^0 = I (row norms 1), in pivot order
        history, statuses = [], []
        prev, W, monotone, rejected, fallbacks = None, None, True, 0, 0
        converged, reason = False, "max_iter reached"
        result = SolveResult(Status.OPTIMAL, None, None, "numpy", 0.0)
        for k in range(self.max_iter):
            t0 = time.perf_counter()
            K = ns.N + ns.L @ E
            U = u_update(ns, K, t_piv, p)
            H = ns.N - ns.M @ U
            V = H + ns.L @ E  # the pivot rows of V^k
            E_new, result, fell_back = self._e_step(sub, ns, H, Y, V, p)
            fallbacks += fell_back
            statuses.append(result.status)
            if E_new is None:
                msg = (f"dso: the E update (QP) of iteration {k} ended with status {result.status.value} "
                       f"({result.message}) on backend {result.backend}")
                if W is None or self.raise_on_failure:
                    raise SolverFailedError(msg + ("" if W is None else
                                                   "; set raise_on_failure=False to keep the last iterate"),
                                            result=result)
                warnings.warn(msg + "; returning the last iterate", ConvergenceWarning, stacklevel=2)
                reason = f"subproblem failed: {result.status.value}"
                break
            W_v = ns.assemble(U, E)  # V^k: after the U step
            W = ns.assemble(U, E_new)
            if l2p(W, p) > l2p(W_v, p):  # an E step the solver's accuracy made worse than E^k: keep E^k
                W, rejected = W_v, rejected + 1
            else:
                E = E_new
            t_piv = row_norms(W)[ns.perm]
            f = l2p(W, p)
            nnz = int(support_of(row_norms(W[:n]), self.zero_tol).sum())
            step = None if prev is None else prev - f
            rec = IterRecord(k, f, nnz, result.status, time.perf_counter() - t0 + (setup if k == 0 else 0.0), step, 0.0)
            rose, small = descent_step(self, "dso", "||W||_2,p", prev, rec, history, callback)
            monotone &= not rose
            if small:
                converged, reason = True, "||W||_2,p decrease below tol"
                break
            prev = f
        if not converged and reason == "max_iter reached":
            warnings.warn(f"dso: stopped at max_iter={self.max_iter} before its stopping rule held",
                          ConvergenceWarning, stacklevel=2)
        return outcome_from_weights(
            self, W[:n], W[n], objective=lambda coef: float(np.sum(row_norms(coef) ** p)), history=history, statuses=statuses,
            converged=converged, reason=reason, monotone=monotone, result=result, n_features=n_features,
            seconds=time.perf_counter() - t_start,
            extra={"rank": ns.m0, "e_steps_rejected": rejected, "e_steps_bvls": fallbacks,
                   "l2p_with_bias_row": history[-1].objective,
                   "l2p_features": l2p(W[:n], p)})
