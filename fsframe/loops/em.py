"""EM / reweighted quadratic (paper 002 eqs. 7-9 and Prop. 3; paper 004 eqs. 10-13)."""

from __future__ import annotations

import attrs
import numpy as np

from ..validators import as_int, positive_int
from .base import OuterLoop, Step


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
    out = np.zeros(len(group_cols))
    if out.size:  # one vectorised pass (a Python loop over 2000 groups cost ~10 ms per fit)
        sizes = np.fromiter((c.size for c in group_cols), dtype=np.int64, count=len(group_cols))
        cols = np.concatenate(group_cols).astype(np.int64, copy=False)
        np.maximum.at(out, np.repeat(np.arange(out.size), sizes), colmax[cols])
    return out


@attrs.frozen
class EM(OuterLoop):
    r"""Reweighted quadratic iterations (002 eqs. 7-9)::

        (w, b)^(t) = argmin  loss + sum_j q_j^(t-1) ||w_(j)||^2,    q^(t) = surrogate.quad_weights(t^(t))

    With ``lp``/``l0`` this is 002's EM zero-norm (``q = |w|^(p-2)``, Prop. 3), with ``log`` the
    AROM scheme of Weston et al. (``q = 1 / (t (eps + t))``), and on row groups 004's
    ``l_{2,p}`` update (eq. 10).

    Numerical stability: a group whose norm falls below the floor ``zero_tol * T`` gets
    ``q = inf``, i.e. its coefficients are fixed at exactly zero (bounds ``[0, 0]``) and leave the
    problem for good (EM's zeros are absorbing: ``q = t^(p-2)`` is infinite at 0) — instead of a
    weight ``1/t^2`` that overflows. ``T`` is the largest group norm seen in the run so far (the
    L2 start's, typically), not the current iterate's: when the iterates collapse towards zero
    (a sparsity pressure too strong for the data), a floor relative to the current iterate would
    follow them down and let the finite weights reach 1e24, which HiGHS rejects; with ``T``
    they stay below ``quad_weights(zero_tol * T)``. A group whose weight exceeds
    :data:`MAX_WEIGHT` (1e12) is fixed at zero too, so no finite weight leaves the range the
    solvers handle, whatever the scale of ``w``. When the HiGHS backend solves the
    subproblem in its dual (``n`` larger than the number of rows), ``1/q`` enters as the scaling
    ``diag(t^2)`` of the kernel: Weston's multiplicative update ``w = |w^k| ⊙ v``.

    The first subproblem uses ``q = 1`` (the standard L2 SVM), as 002 and AROM start.
    Stops when the step ``||(w,b)^{t+1} - (w,b)^t||`` falls below ``tol`` (relative). The
    monotone quantity of this majorise-minimise scheme is ``loss + 2 sum_j phi(t_j)`` for
    surrogates whose weights are ``phi'(t)/t`` (exp, log, l1: ``Surrogate.em_majorizes``); it is
    checked for those. ``lp``/``l0`` (weights ``t^(p-2)``) have no finite potential at ``p = 0``:
    no check, convergence by step size. The reported objective is ``loss + sum_j phi(t_j)`` for all.
    """

    name = "em"
    reference = "Huang, King & Lyu, paper 002, eqs. 7-9; Weston et al. 2003; Peng & Fan, paper 004"
    requires = ("quad_weights",)
    max_iter: int = attrs.field(default=50, converter=as_int, validator=positive_int)

    def terms(self, surrogate):
        return frozenset({"quad"})

    def _potential(self, it, surrogate):
        if not surrogate.em_majorizes:
            return None
        return it.loss + 2.0 * float(np.sum(surrogate.phi(it.t)))

    def _weights(self, it, surrogate, scale: float, fixed: np.ndarray, magnitudes: np.ndarray):
        t = it.t
        cut = max(self.zero_tol * max(float(np.max(t, initial=0.0)), scale), 1e-12)
        fixed |= t <= cut  # absorbing: once at the floor, out of the problem
        q = np.full(t.shape, np.inf)
        live = ~fixed
        q[live] = surrogate.quad_weights(t[live])
        # inf, nan, or a weight that pins the group at zero anyway (in the units of its data)
        fixed |= ~(q <= MAX_WEIGHT * np.maximum(1.0, magnitudes) ** 2)
        q[fixed] = np.inf
        return q

    def steps(self, sub, surrogate, run):
        it = sub.solve(quad=np.ones(sub.n_groups))
        f = self.surrogate_objective(it, surrogate) if it.ok else None
        yield Step(it, f, monitored=None)  # the L2 start is not a descent step
        fixed = np.zeros(sub.n_groups, dtype=bool)
        magnitudes = group_magnitudes(sub)
        scale = float(np.max(it.t, initial=0.0))
        for _ in range(1, self.max_iter):
            new = sub.solve(quad=self._weights(it, surrogate, scale, fixed, magnitudes))
            ok = new.ok
            yield Step(new, self.surrogate_objective(new, surrogate) if ok else None,
                       monitored=self._potential(new, surrogate) if ok else None)
            small, _ = self.small_step(new, it)
            if small:
                return True, "step below tol"
            it = new
            scale = max(scale, float(np.max(it.t, initial=0.0)))
        return False, "max_iter reached"
