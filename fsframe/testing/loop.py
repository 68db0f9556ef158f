"""Conformance checks of outer loops: :func:`check_loop` runs a loop on a small problem and
checks every iteration against numpy and Pyomo recomputation and against the loop's oracle
(:func:`~fsframe.testing.register_loop_oracle`)."""

from __future__ import annotations

import math
import warnings
from typing import Callable

import attrs
import numpy as np
import pyomo.environ as pyo

from ..enums import Status
from ..errors import ConvergenceWarning, SolverFailedError
from ..formulation import Formulation
from ..loops.base import OuterLoop
from ..loops.selection import contribution, group_scale, support_of
from ..method import select_backend
from ..plugins import get_registry
from ..problem import Subproblem
from ..surrogates.base import Surrogate
from ._util import codes as _codes
from ._util import fail as _fail
from .backend import FailingBackend
from .data import kit_data
from .models import KitHinge
from .oracles import loop_model, resolve_decision_loss

__all__ = ["check_loop", "LOOP_CHECKS"]

_INFEASIBLE = (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED)


def _slot_penalty(sub, it) -> float:
    """``sum lin_j s_j + sum lin_w_k w_k + sum quad_j ||w_(j)||^2`` from the Pyomo Params (as
    synced by the last ``with_weights``) and Pyomo's evaluation of ``s`` and ``w``."""
    built = sub.built
    blk = built.slot.block
    sub.compiled.load_solution(it.x)
    w = np.array([pyo.value(e) for e in built.slot.coef.expressions()])
    t2 = np.bincount(built.slot.groups, weights=w * w, minlength=built.slot.n_groups)
    total = 0.0
    if "lin" in built.slot.terms:
        s = np.array([pyo.value(e) for e in built.slot.magnitude.expressions()])
        total += float(np.array([pyo.value(blk.lin[j]) for j in range(s.size)]) @ s)
    if "lin_w" in built.slot.terms:
        total += float(np.array([pyo.value(blk.lin_w[k]) for k in range(w.size)]) @ w)
    if "quad" in built.slot.terms:
        total += float(np.array([pyo.value(blk.quad[j]) for j in range(t2.size)]) @ t2)
    return total


def _run_loop(loop, surrogate, formulation, X, y, backend, **kw):
    """Run ``loop`` on a fresh subproblem; returns ``(sub, outcome, seen)`` with ``seen`` one
    ``(record, iterate, slot penalty, slot weights)`` per good iteration: the weights are the
    arguments of the ``sub.solve`` call that produced the iterate (``None`` if there was none)."""
    sub = Subproblem(formulation, X, y, loop.terms(surrogate), backend)
    calls: list[dict] = []
    solve = sub.solve

    def spy(*, lin=None, lin_w=None, quad=None, full=False):
        # Subproblem.solve's signature exactly, as a third party's wrapper would write it: a loop
        # that passes solve anything else fails the kit (a loop needing an undecided answer
        # settled asks Subproblem.second_opinion afterwards)
        calls.append({k: None if v is None else np.array(v, dtype=float)
                      for k, v in (("lin", lin), ("lin_w", lin_w), ("quad", quad))})
        return solve(lin=lin, lin_w=lin_w, quad=quad, full=full)

    sub.solve = spy
    seen = []
    try:
        out = loop.run(sub, surrogate, callback=lambda rec, it: seen.append(
            (rec, it, _slot_penalty(sub, it) if it.ok else None, calls[-1] if calls else None)), **kw)
    finally:
        sub.close()
    return sub, out, seen


def _same_weights(got, expect) -> bool:
    if got is None or expect is None:
        return got is None and expect is None
    e = np.asarray(expect, dtype=float)
    g = np.broadcast_to(np.asarray(got, dtype=float), e.shape)
    fin = np.isfinite(e)
    if not np.array_equal(np.isinf(g), np.isinf(e)):
        return False
    scale = max(1.0, float(np.max(np.abs(e[fin]), initial=0.0)))
    return bool(np.allclose(g[fin], e[fin], rtol=1e-9, atol=1e-12 * scale))


LOOP_CHECKS = ("iterations", "weights", "descent", "support", "deterministic", "failure")
"""The checks of :func:`check_loop`, in order (its ``checks=`` and
:func:`~fsframe.testing.parametrize_with_checks` name them)."""


def _group_norms(formulation, groups, w, n_groups) -> np.ndarray:
    """``t_j`` recomputed from the coefficients, in the formulation's declared group norm."""
    if getattr(formulation, "group_norm", "l2") == "l1":
        return np.bincount(groups, weights=np.abs(w), minlength=n_groups)
    return np.sqrt(np.bincount(groups, weights=w * w, minlength=n_groups))


def check_loop(loop: OuterLoop, surrogate: Surrogate | None = None, *, X=None, y=None,
               formulation: Formulation | None = None, decision_loss: Callable | None = None,
               expected_weights: Callable | bool | None = None, checks=None) -> list[str]:
    """Run ``loop`` (with ``surrogate``, or with every registered surrogate it accepts, default
    parameters) on a small problem and check (``checks``: a subset of :data:`LOOP_CHECKS`, all by
    default), in numpy and Pyomo:

    * ``iterations`` — at every iteration the subproblem optimum equals ``loss + penalty``, with
      the loss recomputed from the decision function and the penalty from the Pyomo slot Params at
      that iteration; the reported objective equals ``loss + sum_j phi(||w_(j)||)`` over the support
      (groups whose contribution ``||w_(j)|| ||X_j||``, :func:`fsframe.loops.selection.contribution`,
      is above ``zero_tol`` times the iterate's largest count; loops that minimise ``phi``,
      ``needs_surrogate``) or the subproblem optimum (the others); ``n_nonzero`` is the library's
      support rule (:func:`fsframe.loops.support_of` on the run's
      :func:`~fsframe.loops.reference_scale`, or on the iterate's own largest norm for a loop
      whose ``support_scale`` is ``"iterate"``) applied to group norms the kit recomputes;
    * ``weights`` — the slot weights of every ``sub.solve`` are the loop's model of the surrogate at
      the previous iterate, as the oracle registered for the loop's class or its nearest base
      states it (:func:`~fsframe.testing.register_loop_oracle`); built in:
      ``reweighted-l1`` ``lin = phi'(t_k)`` (``1`` or ``phi'(0)`` first);
      ``dca`` ``lin = g``'s slope and ``lin_w = -h'(t_k) w_k / t_k`` (``-h'(t_k) sign(w_k)`` on
      groups in the l1 norm; the L1 start or ``x = 0`` first) — both at the tilted point where
      identical data columns tie (``fsframe.loops.ties``); ``em`` ``quad = q(t_k)``
      (``phi'(t)/(2t)``, or the surrogate's ``quad_weights`` with ``weights="paper"``), ``inf`` where
      the contribution is at or below the run's floor, check steps (per-group floor ``c / ||X_j||``,
      capped) where ``phi'(0)`` is finite (``1`` first); ``single``
      ``phi'(0)`` (or 1) / unit quadratic weights. ``expected_weights``: a callable
      ``(k, previous iterate or None, surrogate, sub) -> {"lin": ..., "lin_w": ..., "quad": ...}``
      overriding the oracle, ``False`` to skip; a loop without an oracle and without it is
      skipped and the skip is named in the returned checks;
    * ``descent`` — for loops declaring ``monotone``, recomputed by the kit, not taken from the loop's
      ``monotone`` flag or its monitored values: ``loss + sum_j phi(t_j)`` at the solver's point for
      ``reweighted-l1`` and ``dca`` (not after a tilted point), for ``em`` ``loss + sum_j phi(t_j)``
      (majoriser's weights) or ``loss + 2 sum_j phi(t_j)`` (``quad_weights = phi'(t)/t``) on its
      normal steps after the L2 start (none for ``weights="paper"`` with ``em_majorizes = False``,
      ``lp``/``l0``, whose weights ``t^(p-2)`` have no finite potential at ``p = 0``) — the
      oracle's ``potential`` — each
      allowed to rise by ``tol`` (relative) as the loop itself; for a loop without an oracle only
      the loop's own monitored values (the check's name says so);
    * ``support`` — the returned coefficients vanish outside the support;
    * ``deterministic`` — two runs give identical coefficients;
    * ``failure`` — a subproblem failure (injected through :class:`FailingBackend`) raises
      :class:`~fsframe.errors.SolverFailedError` carrying its status, and with
      ``raise_on_failure=False`` returns the last good iterate with ``converged=False``.

    The default problem is the kit's own soft-margin hinge (:class:`~fsframe.testing.KitHinge`,
    ``C = 1``; no plugin needed) on :func:`~fsframe.testing.kit_data` (40 x 6, 12 against 28
    samples, not separable).
    """
    checks = LOOP_CHECKS if checks is None else tuple(checks)
    unknown = set(checks) - set(LOOP_CHECKS)
    if unknown:
        raise ValueError(f"check_loop: unknown checks {sorted(unknown)}; the checks are {list(LOOP_CHECKS)}")
    if formulation is None:
        formulation = KitHinge(C=1.0)
    lacking = loop.formulation_missing(formulation)
    if lacking:
        raise ValueError(f"check_loop: loop {loop.name!r} needs {', '.join(lacking)} of the formulation, which "
                         f"{formulation.name!r} lacks; pass formulation= one that provides "
                         f"{list(loop.formulation_requires)} (and its decision_loss)")
    if X is None:
        X, y = kit_data()
    X = np.asarray(X, dtype=float)
    yc = _codes(formulation, np.asarray(y))
    if decision_loss is False:
        raise ValueError("check_loop cannot skip the decision loss (decision_loss=False): it recomputes every "
                         "iteration's objective from it; pass decision_loss=<callable (decision values, y codes) "
                         "-> loss>")
    loss_fn = resolve_decision_loss(formulation, decision_loss)
    if loss_fn is None:
        raise ValueError(f"check_loop: no decision_loss is known for formulation {formulation.name!r} "
                         f"({type(formulation).__qualname__}); pass decision_loss=<callable (decision values, "
                         "y codes) -> loss>, or register one for the class with "
                         "fsframe.testing.register_decision_loss")
    if surrogate is not None:
        surrogates = [surrogate]
    elif loop.needs_surrogate:
        surrogates = [cls() for cls in (e.obj for e in get_registry().all("surrogate")) if not loop.missing(cls())]
    else:
        surrogates = [None]
    ran = []
    for sur in surrogates:
        who = f"loop {loop} with surrogate {sur}"
        terms = loop.terms(sur)
        backend = select_backend("auto", formulation.problem_class(terms), quadratic="quad" in terms)
        n_iter = None
        if set(checks) - {"failure"}:
            done, n_iter = _check_run(who, loop, sur, formulation, X, yc, backend, loss_fn, expected_weights, checks)
            ran += done
        if "failure" in checks:
            ran += _check_failure(who, loop, sur, formulation, X, yc, backend, n_iter)
    return ran


def _check_run(who, loop, sur, formulation, X, yc, backend, loss_fn, expected_weights, checks) -> tuple:
    """The checks on one run (and, for ``deterministic``, a second); ``(names, n_iter)``."""
    ran = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sub, out, seen = _run_loop(loop, sur, formulation, X, yc, backend)
    rose = [w for w in caught if issubclass(w.category, ConvergenceWarning) and "rose" in str(w.message)]
    groups = sub.compiled.slot.groups
    losses, scale = [], 0.0
    if len(seen) != out.n_iter or not 1 <= out.n_iter <= loop.max_iter:
        _fail(who, f"n_iter={out.n_iter} but {len(seen)} iterations were reported (max_iter={loop.max_iter})")
    if [r.k for r, _, _, _ in seen] != list(range(len(seen))):  # every reported iteration
        _fail(who, "iteration records are not numbered 0, 1, ...")
    if any(not it.ok and it.status not in _INFEASIBLE for _, it, _, _ in seen):
        _fail(who, "the loop reported an iterate without a solution that is not a proven infeasibility")
    seen = [s for s in seen if s[1].ok]  # a search over parameters reports its infeasible points too
    for rec, it, pen, _ in seen:
        w = np.asarray(it.coef)
        b = float(it.intercept[0]) if np.size(it.intercept) == 1 else it.intercept
        loss = loss_fn(formulation.decision_function(w.reshape(sub.built.coef_shape), b, X), yc)
        losses.append(loss)
        if "iterations" not in checks:
            continue
        if not math.isclose(loss + pen, it.objective, rel_tol=1e-6, abs_tol=1e-6):
            _fail(who, f"iteration {rec.k}: subproblem optimum {it.objective!r} != loss + penalty {loss + pen!r}")
        t = _group_norms(formulation, groups, w, sub.n_groups)
        c = contribution(t, group_scale(sub))  # each group's |w_j| ||X_j||, as the loop counts without n_features
        expect = (loss + float(np.sum(sur.phi(np.where(support_of(c, loop.zero_tol), t, 0.0))))
                  if loop.needs_surrogate and sur is not None else it.objective)
        if rec.objective is None or not math.isclose(rec.objective, expect, rel_tol=1e-6, abs_tol=1e-6):
            _fail(who, f"iteration {rec.k}: reported objective {rec.objective!r}, recomputed {expect!r}")
        scale = max(scale, float(np.max(c, initial=0.0)))
        nnz = int(support_of(c, loop.zero_tol, scale if loop.support_scale == "run" else 0.0).sum())
        if rec.n_nonzero != nnz:
            _fail(who, f"iteration {rec.k}: n_nonzero={rec.n_nonzero}, the library's support rule on the group "
                       f"norms gives {nnz}")
    if "iterations" in checks:
        ran.append(f"iterations {sur}")
    model = loop_model(loop, sur, sub)
    if "weights" in checks:
        ran += _check_weights(who, loop, sur, sub, seen, model, expected_weights)
    if "descent" in checks:
        ran += _check_descent(who, loop, sur, seen, losses, model, out, rose)
    if "support" in checks:
        off = ~out.support[groups]
        if np.any(out.coef[off] != 0):
            _fail(who, "returned coefficients are non-zero outside the support")
        ran.append(f"support {sur}")
    if "deterministic" in checks:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _, again, _ = _run_loop(loop, sur, formulation, X, yc, backend)
        if not np.array_equal(again.coef, out.coef):
            _fail(who, "two runs on the same data gave different coefficients")
        ran.append(f"deterministic {sur}")
    return ran, out.n_iter


def _check_weights(who, loop, sur, sub, seen, model, given) -> list[str]:
    if given is False:
        return [f"weights {sur}: skipped (expected_weights=False)"]
    if given is not None and given is not True:
        def weights(k, prev):
            return given(k, prev, sur, sub)
        note = "expected_weights"
    elif model is not None:
        weights, note = model.weights, model.note
    else:
        return [f"weights {sur}: skipped (the kit has no model of loop {loop.name!r}; pass expected_weights= "
                "or register_loop_oracle)"]
    prev = None
    for rec, it, _, got in seen:
        if got is None:
            _fail(who, f"iteration {rec.k}: no sub.solve call produced the iterate (the kit reads the weights there)")
        expect = weights(rec.k, prev)
        for term in ("lin", "lin_w", "quad"):
            e = expect.get(term)
            if not _same_weights(got.get(term), e):
                _fail(who, f"iteration {rec.k}: slot weights {term} = {got.get(term)!r}, the loop's model of the "
                           f"surrogate at the previous iterate ({note}) gives {None if e is None else np.asarray(e)!r}")
        prev = it
    return [f"weights {sur} ({note})"]


def _check_descent(who, loop, sur, seen, losses, model, out, rose) -> list[str]:
    if not loop.monotone:
        return []
    if out.monotone is False or rose:
        _fail(who, f"the monitored objective rose: {[str(w.message) for w in rose]}")
    if model is None:
        return [f"descent {sur}: the loop's own monitored values (the kit has no model of loop {loop.name!r})"]
    monitored = model.potential
    if monitored is None:
        return [f"descent {sur}: skipped ({model.no_potential})"]
    prev = None
    for (rec, it, _, _), loss in zip(seen, losses):
        m = monitored(rec.k, it, loss)
        if m is not None and prev is not None and m > prev + loop.tol * max(1.0, abs(prev)):
            _fail(who, f"iteration {rec.k}: the objective theory says decreases, recomputed by the kit, rose from "
                       f"{prev!r} to {m!r} (tolerance {loop.tol:g} relative)")
        prev = m
    return [f"descent {sur} (recomputed)"]


def _check_failure(who, loop, sur, formulation, X, yc, backend, n_iter=None) -> list[str]:
    if n_iter is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            n_iter = _run_loop(loop, sur, formulation, X, yc, backend)[1].n_iter
    fail_at = 2 if n_iter >= 2 else 1
    # a hard failure (status "error"): an undecided one (numerical_error, unknown, iteration_limit) a
    # loop may put to another backend first (the bound search's feasibility probes, docs/mempm.md,
    # "Undecided probes"), which answers it, so the run rightly goes on
    failing = FailingBackend(backend, fail_at, Status.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            _run_loop(loop, sur, formulation, X, yc, failing)
    except SolverFailedError as exc:
        if exc.status is not Status.ERROR or "status error" not in str(exc):
            _fail(who, f"SolverFailedError must carry and name the failed status, got {exc.status} / {exc}")
    else:
        _fail(who, f"an injected failure at solve {fail_at} did not raise SolverFailedError")
    soft = attrs.evolve(loop, raise_on_failure=False)
    if fail_at == 1:
        try:
            _run_loop(soft, sur, formulation, X, yc, FailingBackend(backend, 1, Status.ERROR))
        except SolverFailedError:
            return ["failure raises"]
        _fail(who, "a failure of the first subproblem must raise even with raise_on_failure=False")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, out, seen = _run_loop(soft, sur, formulation, X, yc, FailingBackend(backend, fail_at, Status.ERROR))
    if out.converged or out.n_iter != fail_at - 1:
        _fail(who, f"raise_on_failure=False: converged={out.converged}, n_iter={out.n_iter}; expected the "
                   f"{fail_at - 1} good iterate(s) and converged=False")
    if not np.allclose(out.iterate.coef, seen[-1][1].coef):
        _fail(who, "raise_on_failure=False did not return the last good iterate")
    if not any(issubclass(w.category, ConvergenceWarning) for w in caught):
        _fail(who, "raise_on_failure=False returned without a ConvergenceWarning")
    return ["failure raises", "failure keeps last good iterate"]


