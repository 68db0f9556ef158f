"""Conformance check of a fit: :func:`check_fit_result` recomputes what a
:class:`~fsframe.FitResult` reports (support, decision function, predictions, objective) from its
coefficients."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._util import codes as _codes
from ._util import fail as _fail
from .oracles import resolve_decision_loss

__all__ = ["check_fit_result"]


def check_fit_result(result, X, y, *, decision_loss: Callable | None = None, rtol: float = 1e-5) -> list[str]:
    """Check a :class:`~fsframe.FitResult` of ``X, y`` against numpy recomputation:

    * the layout of ``coef`` (:func:`fsframe.results.result_coef`): the last axis indexes the
      feature groups and, with more than two classes, the first axis the classes;
    * the coefficients vanish exactly outside ``support`` and not inside it (per group);
    * ``decision_function`` is the formulation's on ``(coef, intercept)`` and ``predict`` its sign
      (binary), argmax (one-vs-rest) or itself (a regression: ``classes == ()``);
    * with a decision loss (given, or registered for the formulation's class as for :func:`check_formulation`), the objective:
      ``loss + penalty`` recomputed from the returned coefficients (``sum_j phi(||w_(j)||)`` for
      surrogate loops, ``phi'(0) ||w||_1`` or ``||w||^2`` for ``single``, and for any other loop
      without a surrogate — a plugin's, with weights of its own — the penalty at the weights the
      result records, ``info["penalty_weights"]``) to ``rtol``, with no allowance, with or
      without ``n_features``: the reported objective is that of the model returned. Without a
      decision loss, or without an objective (a one-vs-rest class cut by the union), the
      objective check is skipped and named so;
    * one-vs-rest: the support is the union of the per-class supports and each class is checked.
    """
    X = np.asarray(X, dtype=float)
    who = f"fit result of {result.method or (result.formulation, result.surrogate, result.loop)}"
    ran = []
    if result.per_class:
        if not np.array_equal(result.support, np.any([r.support for r in result.per_class], axis=0)):
            _fail(who, "the one-vs-rest support is not the union of the per-class supports")
        d = result.decision_function(X)
        for i, (r, c) in enumerate(zip(result.per_class, result.classes)):
            yc = np.where(np.asarray(y) == c, 1.0, -1.0)
            ran += check_fit_result(r, X, yc, decision_loss=decision_loss, rtol=rtol)
            if not np.array_equal(np.asarray(result.coef)[i], np.asarray(r.coef)):
                _fail(who, f"coef[{i}] is not class {c!r}'s coefficients (classes come first in coef)")
            if not np.allclose(d[:, i], r.decision_function(X)):
                _fail(who, f"decision_function column {i} is not class {c!r}'s")
        pred = np.asarray(result.classes, dtype=object)[np.argmax(d, axis=1)]
        if not np.array_equal(result.predict(X).astype(str), pred.astype(str)):
            _fail(who, "predict is not the argmax of the decision function")
        return ran + ["one-vs-rest union"]
    coef = np.asarray(result.coef, dtype=float)
    n_groups = result.support.shape[0]
    if coef.shape[-1] != n_groups:
        _fail(who, f"coef has shape {coef.shape}: its last axis must index the {n_groups} feature groups "
                   "(fsframe.results.result_coef)")
    if len(result.classes) > 2 and coef.shape[0] != len(result.classes):
        _fail(who, f"coef has shape {coef.shape}: a model of {len(result.classes)} classes has them on its first "
                   "axis (fsframe.results.result_coef)")
    flat = coef.reshape(-1, n_groups)
    if getattr(result.formulation, "group_norm", "l2") == "l1":
        t = np.sum(np.abs(flat), axis=0)
    else:
        t = np.sqrt(np.sum(flat * flat, axis=0))
    if np.any(t[~result.support] != 0) or np.any(t[result.support] == 0):
        _fail(who, "coefficients are non-zero outside the support or zero inside it")
    f = result.formulation.decision_function(result.formulation_coef(), result.intercept, X)
    if not np.allclose(result.decision_function(X), f):
        _fail(who, "decision_function differs from the formulation's")
    classes = np.asarray(result.classes, dtype=object)
    if not result.classes:  # a regression (Formulation.task == "regression"): predict is the fitted value
        if not np.allclose(result.predict(X), f):
            _fail(who, "predict of a regression is not its decision function (the fitted values)")
    elif f.ndim == 1 and not np.array_equal(result.predict(X).astype(str), classes[(f > 0).astype(np.intp)].astype(str)):
        _fail(who, "predict is not the sign of the decision function")
    ran.append("support/decision consistent")
    if result.objective is None:
        return ran + ["objective: none reported"]
    loss_fn = resolve_decision_loss(result.formulation, decision_loss)
    if loss_fn is None:
        why = "decision_loss=False" if decision_loss is False else f"no decision_loss for {result.formulation.name!r}"
        return ran + [f"objective skipped ({why})"]
    loop, sur = result.loop, result.surrogate
    recorded = result.info.get("penalty_weights")
    if not loop.needs_surrogate and getattr(loop, "penalty", None) is None and recorded is not None:
        # a loop with weights of its own: the penalty at the weights of the reported subproblem
        # (a loop that solved no subproblem, e.g. RFS, records none: the unit-weight rule below)
        pen = _recorded_penalty(recorded, np.asarray(result.formulation_coef(), dtype=float).ravel(), t, who)
        return ran + _compare(result, loss_fn(f, _codes(result.formulation, np.asarray(y))), pen, rtol, who,
                              "objective recomputed") + ["penalty at the recorded weights"]
    if not loop.needs_surrogate:
        if getattr(loop, "penalty", "l1") == "l2":
            def pen_of(x):
                return np.asarray(x, dtype=float) ** 2
        else:
            d0 = 1.0 if sur is None else float(np.asarray(sur.derivative(np.zeros(1)))[0])

            def pen_of(x):
                return d0 * np.asarray(x, dtype=float)
    else:
        def pen_of(x):
            return np.asarray(sur.phi(np.asarray(x, dtype=float)), dtype=float)
    loss = loss_fn(f, _codes(result.formulation, np.asarray(y)))
    return ran + _compare(result, loss, float(np.sum(pen_of(t))), rtol, who, "objective recomputed")


def _compare(result, loss: float, pen: float, rtol: float, who: str, done: str) -> list[str]:
    """The objective is loss + penalty at the returned coefficients, with or without n_features
    (groups outside the support are exactly zero): no allowance."""
    tol = rtol * max(1.0, abs(result.objective))
    if not abs(result.objective - (loss + pen)) <= tol:
        _fail(who, f"objective {result.objective!r}, recomputed loss + penalty {loss + pen!r} "
                   f"(loss {loss!r}, penalty {pen!r}, tolerance {tol:.3g})")
    return [done]


def _recorded_penalty(recorded: dict, coef: np.ndarray, t: np.ndarray, who: str) -> float:
    """``sum_j lin_j t_j + lin_w'w + sum_i quad[groups_i] w_i^2`` from ``info["penalty_weights"]``
    (:meth:`fsframe.problem.Subproblem.penalty_weights`) and the returned coefficients."""
    groups = np.asarray(recorded["groups"])
    if groups.shape != coef.shape:
        _fail(who, f"info['penalty_weights'] maps {groups.size} coefficients to groups, the result has {coef.size}")
    pen = 0.0
    if recorded.get("lin") is not None:
        pen += float(np.asarray(recorded["lin"], dtype=float) @ t)
    if recorded.get("lin_w") is not None:
        pen += float(np.asarray(recorded["lin_w"], dtype=float) @ coef)
    if recorded.get("quad") is not None:
        pen += float(np.asarray(recorded["quad"], dtype=float)[groups] @ (coef * coef))
    return pen


