"""A subproblem whose ridge-weighted solves (slot term ``quad`` only: EM's steps) the formulation
solves straight from ``X`` (the ``quad_from_data`` protocol, docs/plugins.md; docs/glm.md "EM
steps from X"): :class:`QuadFromDataSubproblem` and :func:`quad_path_applies`."""

from __future__ import annotations

import time

import numpy as np

from .backends.base import SolveResult
from .enums import Status
from .errors import UnsupportedProblemError
from .problem import Iterate, Subproblem
from .working_set import WorkingSetReport

__all__ = ["QuadFromDataSubproblem", "quad_path_applies"]

LOSS_RTOL = 1e-9
"""How far (relative) the compiled model's loss at the Newton point may be from the loss
``solve_quad_from_data`` reports before the step is declined (a model its method was not written for)."""


def quad_path_applies(formulation, terms) -> bool:
    """Whether a subproblem of ``formulation`` with slot ``terms`` can take the quad path: the slot
    has the ``quad`` term alone (the loop solves ``loss + sum_j q_j ||w_(j)||^2``, EM's step) and
    the formulation offers the ``quad_from_data`` protocol."""
    return frozenset(terms) == frozenset({"quad"}) and "quad_from_data" in formulation.provides()


class QuadFromDataSubproblem(Subproblem):
    """A :class:`~fsframe.problem.Subproblem` whose solves with the slot weight ``quad`` alone go
    to the formulation's ``solve_quad_from_data(X, y, quad, *, start, tol)`` (Newton's method on
    the smooth, strongly convex step, certified by its gradient: :mod:`fsframe.ridge`), warm from
    the previous solve. The model is still built and compiled (once, never solved): the answer is
    written into its columns (coefficients and intercept; the auxiliaries — a logistic loss's
    epigraph, the residuals — settled from them), so loss, penalty, cut, ``keep_model`` and
    ``verify=`` read it as any backend's. A solve with other weights goes to the compiled problem
    on the fit's backend, as does every solve when the formulation declines (returns ``None``):
    then ``force`` (``WorkingSetOptions(from_data=True)``) raises an
    :class:`~fsframe.errors.UnsupportedProblemError` instead. A step whose certificate is not
    OPTIMAL (its gap bound beyond ``cert_tol``, or a Newton system that cannot be factored), or
    whose point gives the compiled model a loss other than the one the formulation minimised
    (beyond :data:`LOSS_RTOL` relative), is solved again by the backend (:attr:`fallbacks` keeps
    why); forced, it raises :class:`~fsframe.errors.UnsupportedProblemError`. The iterate's result says backend
    ``"newton"`` and carries the certificate (``gap`` the relative bound on the objective's
    distance to the optimum; status OPTIMAL only when it is within ``options.cert_tol``)."""

    def __init__(self, *args, force: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.force = force
        self._start: tuple | None = None
        self._columns: tuple | None = None
        self.quad_solves = 0
        self.fallbacks: list[str] = []  # the messages of the steps not certified, solved by the backend instead

    def _model_columns(self) -> tuple | None:
        """``(coef_cols, intercept_col)``: the compiled columns the coefficients and the intercept
        are (the slot's ``W`` a selection of columns with entries 1, the intercept one column);
        ``None`` when the model is not of that shape."""
        if self._columns is None:
            comp = self.compiled
            W = comp.slot.W.tocsr()
            ok = (W.shape[0] == self.n_groups and np.array_equal(comp.slot.groups, np.arange(self.n_groups))
                  and np.all(np.diff(W.indptr) == 1) and np.all(W.data == 1.0))
            ivars = self.built.intercept.vars
            icol = comp.col_index.get(id(ivars[0]), -1) if len(ivars) == 1 else -1
            imap = self.built.intercept.matrix.toarray()
            ok = (ok and icol >= 0 and imap.shape == (1, 1) and imap[0, 0] == 1.0
                  and not np.any(self.built.intercept.const))
            self._columns = (W.indices.copy(), icol) if ok else ()
        return self._columns or None

    def solve(self, *, lin=None, lin_w=None, quad=None, full: bool = False) -> Iterate:
        if lin is not None or lin_w is not None or quad is None:
            return super().solve(lin=lin, lin_w=lin_w, quad=quad, full=full)
        t0 = time.perf_counter()
        try:
            self.compiled.with_weights(quad=quad)  # validated as the compiled path does; kept for keep_model
        except ValueError as exc:
            res = SolveResult(Status.ERROR, None, None, "newton", 0.0, message=f"slot weights rejected: {exc}")
            return Iterate(res.status, None, None, None, None, None, None, time.perf_counter() - t0, res,
                           {"quad": quad})
        q = np.array(np.broadcast_to(np.asarray(quad, dtype=float), (self.n_groups,)))
        cols = self._model_columns()
        sol = None
        if cols is not None:
            try:
                sol = self.formulation.solve_quad_from_data(self.X, self.y, q, start=self._start,
                                                            tol=self.options.cert_tol)
            except np.linalg.LinAlgError as exc:  # a Newton system not positive definite in double precision
                why = f"the Newton system could not be factored ({exc})"
                if self.force:
                    raise UnsupportedProblemError(f"WorkingSetOptions(from_data=True): {why}; "
                                                  f"use from_data='auto'") from exc
                self.fallbacks.append(why)
                return super().solve(quad=quad, full=full)
        if sol is None:
            if self.force:
                why = ("the model's coefficients are not its own columns" if cols is None else
                       "the formulation declined (a free group's weight is not positive)")
                raise UnsupportedProblemError(f"WorkingSetOptions(from_data=True): the quad path cannot solve this "
                                              f"step: {why}; use from_data='auto'")
            return super().solve(quad=quad, full=full)
        if sol.status is not Status.OPTIMAL:
            # not certified within cert_tol (e.g. a logistic curvature in b too small to bound b*(w)):
            # this step goes to the backend, as without the protocol; forced, it is an error
            if self.force:
                raise UnsupportedProblemError(f"WorkingSetOptions(from_data=True): the Newton step is not "
                                              f"certified within cert_tol={self.options.cert_tol:g} "
                                              f"({sol.status.value}: {sol.message}); use from_data='auto'")
            self.fallbacks.append(sol.message)
            return super().solve(quad=quad, full=full)
        x = np.zeros(self.compiled.base.n)
        x[cols[0]] = sol.coef
        x[cols[1]] = sol.intercept
        x = self.settle(x)
        loss = self.compiled.base.objective(x)
        if not abs(loss - sol.loss) <= LOSS_RTOL * max(abs(loss), abs(sol.loss), 1.0):
            # the compiled model's loss is not the one solve_quad_from_data minimised (a build the
            # formulation's method was not written for): the answer is not this problem's
            why = (f"the compiled model's loss at the Newton point ({loss:.17g}) is not the loss "
                   f"solve_quad_from_data minimised ({sol.loss:.17g})")
            if self.force:
                raise UnsupportedProblemError(f"WorkingSetOptions(from_data=True): {why}; use from_data='auto'")
            self.fallbacks.append(why)
            return super().solve(quad=quad, full=full)
        self._start = (sol.coef, sol.intercept)
        seconds = time.perf_counter() - t0
        res = SolveResult(sol.status, x, sol.objective, "newton", seconds, iterations=sol.iterations,
                          message=sol.message, certificate=sol.certificate)
        self.n_solves += 1
        self.quad_solves += 1
        self.last_report = WorkingSetReport(False, self.n_groups, self.n_groups, full_resolve=full)
        self.last_timings = {"update": 0.0, "open": 0.0, "backend": seconds, "solver": seconds, "read": 0.0}
        coef = self.compiled.coef(x)
        intercept = self.compiled.evaluate(self.built.intercept, x)
        t = self.group_norms(coef)
        penalty = self.penalty(coef, t, {"quad": quad})
        return Iterate(sol.status, x, coef, intercept, t, loss, loss + penalty, seconds, res, {"quad": quad},
                       self.last_report)

    def close(self) -> None:
        self._start = None
        super().close()

