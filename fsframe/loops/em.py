"""EM / reweighted quadratic (paper 002 eqs. 7-9 and Prop. 3; paper 004 eqs. 10-13)."""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import ge, instance_of

from ..validators import as_int
from .base import OuterLoop, Step


@attrs.frozen
class EM(OuterLoop):
    r"""Reweighted quadratic iterations (002 eqs. 7-9)::

        (w, b)^(t) = argmin  loss + sum_j q_j^(t-1) ||w_(j)||^2,    q^(t) = surrogate.quad_weights(t^(t))

    With ``lp``/``l0`` this is 002's EM zero-norm (``q = |w|^(p-2)``, Prop. 3), with ``log`` the
    AROM scheme of Weston et al. (``q = 1 / (t (eps + t))``), and on row groups 004's
    ``l_{2,p}`` update (eq. 10).

    Numerical stability: a group whose norm falls below ``zero_tol`` times the largest gets
    ``q = inf``, i.e. its coefficients are fixed at exactly zero (bounds ``[0, 0]``) and leave the
    problem — instead of a weight ``1/t^2`` that overflows. When the HiGHS backend solves the
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
    max_iter: int = attrs.field(default=50, converter=as_int, validator=[instance_of(int), ge(1)])

    def terms(self, surrogate):
        return frozenset({"quad"})

    def _potential(self, it, surrogate):
        if not surrogate.em_majorizes:
            return None
        return it.loss + 2.0 * float(np.sum(surrogate.phi(it.t)))

    def _weights(self, it, surrogate):
        t = it.t
        cut = max(self.zero_tol * float(np.max(t, initial=0.0)), 1e-12)
        q = np.full(t.shape, np.inf)
        live = t > cut
        q[live] = surrogate.quad_weights(t[live])
        return q

    def steps(self, sub, surrogate):
        it = sub.solve(quad=np.ones(sub.n_groups))
        f = self.surrogate_objective(it, surrogate) if it.ok else None
        yield Step(it, f, monitored=None)  # the L2 start is not a descent step
        for _ in range(1, self.max_iter):
            new = sub.solve(quad=self._weights(it, surrogate))
            ok = new.ok
            yield Step(new, self.surrogate_objective(new, surrogate) if ok else None,
                       monitored=self._potential(new, surrogate) if ok else None)
            small, _ = self.small_step(new, it)
            if small:
                return True, "step below tol"
            it = new
        return False, "max_iter reached"
