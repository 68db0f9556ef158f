"""The evidence of a claim made through the dual of a diagonal QP (:mod:`fsframe.backends.diag_qp`).

An unbounded dual proves the primal infeasible, an infeasible dual the primal unbounded (or
infeasible). Neither HiGHS's QP solver nor the dense active-set method returns a ray, so
:class:`DualRays` finds the evidence by a small LP over the dual's rows: :meth:`DualRays._dual_ray`
(the dual's direction of descent, which is the primal's Farkas certificate) and
:meth:`DualRays._primal_ray` (the dual's Farkas certificate mapped to a primal direction of
descent). The base checks it like any backend's (docs/backends.md, "Claims through the dual").
"""

from __future__ import annotations

import numpy as np

from .._lazy import lazy_module
from ..canonical import ProblemData
from ..enums import Status
from .base import RawSolution
from .claims import check_infeasibility

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["DualRays"]


class DualRays:
    """The dual form's evidence of claims, mixed into
    :class:`~fsframe.backends.diag_qp.DualQPSession`: it uses the session's ``_pieces(data)`` (the
    column sets and the dual's rows), ``make_inner``, ``backend``, ``inner_opts`` and ``options``."""

    def _ray_lp(self, lp: ProblemData) -> np.ndarray | None:
        """The solution of ``lp`` (a small LP over the dual's rows, its variables in ``[-1, 1]``) by
        the inner solver, when it has a negative objective; ``None`` otherwise or on any trouble
        (the evidence is optional: the claim then stands unverified, as before)."""
        try:
            session = self.make_inner(self.backend, lp, self.inner_opts, check_convex=False)
            try:
                res = session.solve(lp)
            finally:
                session.close()
        except Exception:  # noqa: BLE001 - no evidence is no failed solve
            return None
        if res.status is not Status.OPTIMAL or res.x is None or not np.all(np.isfinite(res.x)):
            return None
        return res.x if float(lp.c @ res.x) < 0 else None

    def _dual_ray(self, data: ProblemData) -> dict | None:
        """A direction along which the dual decreases without bound, as the primal's Farkas
        certificate ``{"y", "z"}``; ``None`` if none is found.

        Along ``dlam`` the dual's objective is ``1/2 dlam'H dlam t^2 + f'dlam t``: it falls without
        end when ``H dlam = 0`` (``K_Q' dlam = 0``, ``H = K_Q D^-1 K_Q'``) and ``f'dlam < 0``, and
        ``dlam`` is a recession direction of the dual's constraints (``Kt_free dlam = 0``,
        ``G_d dlam <= 0``, ``dlam_z >= 0``). Such a ``dlam`` is the primal's Farkas certificate
        itself, ``(y, z) = (dlam[:p], dlam[p:])``: its reduced costs ``K'dlam`` vanish on the
        quadratic and free columns and have the sign their finite bound excuses on the others,
        and its margin is ``-f'dlam`` (:func:`~fsframe.backends.claims.check_infeasibility`).
        Found by the LP ``min f'dlam`` over those constraints with ``dlam`` in ``[-1, 1]`` (``dlam_z``
        in ``[0, 1]``)."""
        pc = self._pieces(data)
        rows, p, m = pc["rows"], pc["p"], pc["m"]
        KQt = sp.csr_matrix(pc["KQ"].T) if pc["Q"].size else sp.csr_matrix((0, m))
        lp = ProblemData(c=pc["f"], A=sp.vstack([KQt, rows.Kt_free], format="csr"),
                         b=np.zeros(KQt.shape[0] + rows.Kt_free.shape[0]), G=rows.dual_G,
                         h=np.zeros(rows.dual_G.shape[0]), l=rows.dual_G.shape[0],
                         lb=np.concatenate([np.full(p, -1.0), np.zeros(m - p)]), ub=np.ones(m))
        dlam = self._ray_lp(lp)
        return None if dlam is None else {"y": dlam[:p], "z": dlam[p:]}

    def _primal_ray(self, data: ProblemData) -> dict | None:
        """The dual's Farkas certificate (its constraints have no solution), mapped to a direction
        of unbounded descent of the primal ``{"dx"}``; ``None`` if none is found.

        The dual's constraints are ``Kt_free lam = -c_free``, ``G_d lam <= h_d`` (``G_d = [-K_lb';
        K_ub']``, ``h_d = (c_lb, -c_ub)``), ``lam_z >= 0``. A Farkas certificate ``(y_d, z_d >= 0)``
        has reduced costs ``r = Kt_free' y_d + G_d' z_d`` that vanish on the free ``lam_y`` and are
        non-negative on ``lam_z`` (excused by ``lam_z >= 0``), and a margin ``-(b_d'y_d + h_d'z_d)
        > 0``. Mapped as the point is (:meth:`_recover`: ``x_free = -y_d``, ``x_lb = lb + z_d``,
        ``x_ub = ub - z_d``), ``dx = (-y_d, z_d^lb, -z_d^ub)`` on the linear columns (0 on the
        quadratic and fixed ones) has ``[A; G] dx = -r``: ``A dx = 0``, ``G dx <= 0``, within its
        bounds' directions, ``P dx = 0``, and ``c'dx = b_d'y_d + h_d'z_d < 0``
        (:func:`~fsframe.backends.claims.check_unboundedness`). Found by the LP
        ``min b_d'y_d + h_d'z_d`` over those conditions with ``y_d`` in ``[-1, 1]``, ``z_d`` in ``[0, 1]``."""
        pc = self._pieces(data)
        rows, p = pc["rows"], pc["p"]
        R_lb, R_ub, R_free = pc["R_lb"], pc["R_ub"], pc["R_free"]
        nf, ni = R_free.size, R_lb.size + R_ub.size
        if nf + ni == 0:
            return None
        Rt = sp.hstack([rows.Kt_free.T, rows.dual_G.T], format="csr")  # r = Rt (y_d, z_d)
        lp = ProblemData(c=np.concatenate([pc["b"], pc["h"]]), A=Rt[:p], b=np.zeros(p), G=-Rt[p:],
                         h=np.zeros(Rt.shape[0] - p), l=Rt.shape[0] - p,
                         lb=np.concatenate([np.full(nf, -1.0), np.zeros(ni)]), ub=np.ones(nf + ni))
        v = self._ray_lp(lp)
        if v is None:
            return None
        dx = np.zeros(data.n)
        dx[R_free] = -v[:nf]
        dx[R_lb] = v[nf:nf + R_lb.size]
        dx[R_ub] = -v[nf + R_lb.size:]
        return {"dx": dx}

    def _infeasible_claim(self, data: ProblemData, what: str, iterations) -> RawSolution | None:
        """An ``INFEASIBLE`` candidate with the dual's ray (:meth:`_dual_ray`) when a form's answer
        says the dual is unbounded and the ray proves it (checked here so that a form whose answer
        the ray does not bear out goes on to the next form; the base checks it again)."""
        ray = self._dual_ray(data)
        if ray is None or not check_infeasibility(data, ray["y"], ray["z"], self.options.cert_tol)[0]:
            return None
        return RawSolution(status=Status.INFEASIBLE, iterations=iterations, ray=ray,
                           message=f"{what}; the primal is infeasible (the dual's ray)")
