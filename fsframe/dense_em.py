"""The EM subproblem of the hinge family on arrays: a Pyomo-free subproblem the EM loop drives unchanged.

``em-l0`` and ``arom`` (paper 002 eq. 7; Weston et al. 2003) solve, at every EM step, the weighted
L2-regularised hinge QP::

    min  sum_j q_j w_j^2 + C sum_i xi_i   s.t.  y_i (x_i w + b) >= 1 - xi_i,  xi >= 0

(a group with ``q_j = inf`` is fixed at ``w_j = 0``). Its dual over the live groups, with
``F = diag(y) X_live diag(1 / sqrt(2 q_live))``, is::

    min  1/2 ||F' lam||^2 - 1' lam   s.t.  y' lam = 0,  0 <= lam <= C

and the primal is ``w_live = F' lam / sqrt(2 q_live)``, ``b`` the equality's multiplier (a free
multiplier sits on its margin). The feasible set of the dual does not depend on ``q``, so every
step starts from the previous step's multipliers.

:class:`DenseHingeSubproblem` solves that dual with the dense active-set method
(:func:`fsframe.backends.box_qp.solve_box_qp`, its pivots compiled when numba is installed) on the
arrays of ``X``: no Pyomo model, no compiled ``ProblemData``, no sparse matrix per step. With the
pivots compiled, a warm step (every step after the first) is one compiled call that also finds the
intercept and the certificate's measures (:meth:`DenseHingeSubproblem._warm_step`); the same
multipliers as through :func:`~fsframe.backends.box_qp.solve_box_qp`. Each answer
is judged on the full problem from products with ``X`` (:meth:`DenseHingeSubproblem.certificate`):
the dual's box and equality, and the duality gap ``P(w, b) - D(lam)`` with the slacks at their least
values ``xi = max(0, 1 - y (X w + b))`` (primal feasibility by construction; the gap is zero exactly
when the pair is optimal, complementarity included). An answer outside
:data:`GAP_TOL` is not returned as optimal.

It offers the part of :class:`fsframe.problem.Subproblem` that :class:`fsframe.loops.em.EM` and
the base loop (:meth:`fsframe.loops.base.OuterLoop.run`: the ``n_features`` rule, paper 002's
selection, the re-solve on the selected features, the history) read, so :func:`run_dense_em`
runs the loop's own logic on it, not a copy of it. :func:`fsframe.fit` takes it for ``em-l0`` and
``arom`` (:mod:`fsframe.dense_fit`; docs/backends.md, "The EM subproblem on arrays").

Which start and which solver each step tries (the matrix-free active set, SMO's start, the crash,
the scaled attempts) is decided by the rules of :mod:`fsframe.dense_rules`, imported here by name:
a rule replaced on this module (a test's or benchmark's patch) is the one :meth:`DenseHingeSubproblem.solve`
calls; the rules' constants are read in :mod:`fsframe.dense_rules`, and so is the crash's sweep count
:data:`~fsframe.dense_rules.WARM_CRASH_SWEEPS`, which :meth:`DenseHingeSubproblem._crashed_start` reads
there at each call (a patch on :mod:`fsframe.dense_rules` takes effect).
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import attrs
import numpy as np
import scipy.sparse as sp

from .backends.base import SolveResult
from .backends import box_qp_jit
from .backends.box_qp import FREE_TOL, compiled_available, crash_start, free_set_kkt, solve_box_qp
from .backends.box_qp_pdas import solve_box_qp_pdas
from .backends.certificate import Certificate
from .backends.svm_start import svm_start
from .backends.diag_qp import CRASH_SWEEPS
from . import dense_rules
from .dense_rules import (cold_crash_from, crash_applies, nearly_diagonal, pdas_applies, svm_start_applies,
                          svm_start_fallback, warm_crash_applies, warm_scale)
from .enums import Status
from .errors import DataError, UnsupportedProblemError
from .loops.em import EM
from .problem import Iterate
from .scales import group_scale

GAP_TOL = 1e-9
"""The largest duality gap ``P - D`` (relative to ``max(1, |P|)``) and equality residual
``|y' lam|`` (relative to ``max(1, C)``) at which an answer counts as optimal."""


class DenseHingeSubproblem:
    """The weighted hinge QP of an EM step on the arrays of ``X`` (module docstring).

    Parameters
    ----------
    X : array, shape (m, n)
        The training data, dense (one group per column).
    y_pm : array, shape (m,)
        Labels in ``{-1, +1}``, both present (one class: :class:`~fsframe.errors.DataError`, as
        :func:`fsframe.fit` raises).
    C : float
        The hinge's weight.

    An iterate's ``x`` (and ``result.x``) is ``(w, b, xi)``, its ``weights["quad"]`` the ``q`` it was
    solved at, ``result.duals["lam"]`` the dual point. Each step makes up to four attempts, each
    judged by :meth:`certificate`, and returns the first certified one: from the previous step's
    multipliers, then from them on the dual scaled by :func:`~fsframe.dense_rules.warm_scale` (when ``F``'s scale is far
    from 1: a vanishing Hessian whose pivots end "singular"), then cold (a warm start can stall where a cold one does not), then cold on the
    dual scaled by ``a = ||F||_2`` (``F / a``, ``f / a^2``: the same minimiser, ``b = a^2 nu``; it
    rescues columns on large or spread scales). A step none of them certifies is
    ``numerical_error`` with each attempt's outcome in its message (the loop then stops as on any
    failed solve; :func:`fsframe.fit` then runs the compiled path).
    """

    is_built = True  # "built" as the loops read it (below): the groups are the columns of X, no kernel
    working_set = None
    aux = None
    build_seconds = compile_seconds = 0.0
    backend_name = "dense-hinge"
    formulation = SimpleNamespace(name="hinge", sparse=True)  # what the base's zero_tol cut reads of it

    def __init__(self, X, y_pm, C: float):
        if sp.issparse(X):
            raise UnsupportedProblemError("DenseHingeSubproblem: X must be a dense array (the compiled path takes "
                                          "scipy.sparse X)")
        self.X = np.ascontiguousarray(X, dtype=float)
        # contiguous: a strided y_pm (a column of a label matrix, Y[:, 0]) is legal input, and the
        # compiled warm step is typed for contiguous arrays
        self.y = np.ascontiguousarray(y_pm, dtype=float)
        if self.X.ndim != 2 or self.y.shape != (self.X.shape[0],) or not np.all(np.abs(self.y) == 1):
            raise UnsupportedProblemError("DenseHingeSubproblem: X must be 2-D and y_pm its labels in {-1, +1}")
        if self.y.size and np.all(self.y == self.y[0]):
            raise DataError(f"DenseHingeSubproblem needs samples of both classes; y_pm has only {self.y[0]:+.0f} "
                            "(as fsframe.fit refuses one class)")
        if not np.all(np.isfinite(self.X)):
            raise UnsupportedProblemError("DenseHingeSubproblem: X has non-finite entries")
        self.C = float(C)
        if not (np.isfinite(self.C) and self.C > 0):
            raise UnsupportedProblemError(f"DenseHingeSubproblem: C must be finite and > 0, got {C!r}")
        m, n = self.X.shape
        self.n_groups = n
        self._YX = self.y[:, None] * self.X
        self._E = self.y[None, :]
        self._lo, self._hi, self._f = np.zeros(m), np.full(m, self.C), -np.ones(m)
        self._warm: np.ndarray | None = None
        self._no_h = np.zeros((1, 1))  # the compiled step's stand-in Hessian when it reads F
        # the compiled warm step (_warm_step), decided once per subproblem (a fit's): None without
        # numba or with FSFRAME_NO_JIT set when the subproblem is made
        self._compiled_step = box_qp_jit.compiled_hinge() if compiled_available() else None
        # what fsframe.loops.em.group_magnitudes reads: each group's largest |entry| in its column
        # (_ColumnMaxima: those maxima as the matrix reads them, without a sparse copy of X per fit)
        # and the groups' columns, one per group (the rows of an n x 1 array: no list of n arrays per fit)
        # one pass of column maxima and minima for both the |entries|' maxima and the column scale's
        # constant-column test (np.ptp: the same maxima and minima again; ~11 us of a fit on Sonar)
        colmax, ptp = _column_extremes(self.X)
        self.compiled = SimpleNamespace(
            base=SimpleNamespace(c=np.zeros(n), A=None, G=_ColumnMaxima(colmax)),
            slot=SimpleNamespace(group_cols=np.arange(n).reshape(n, 1), groups=np.arange(n), exclusive=True))
        # what the loops read of a built model: no kernel map (the groups are X's columns, so
        # identical columns are merged as on the compiled path), the coefficients' shape, and a
        # free intercept (selection.offset_free reads its variable's bounds: the column scale of the
        # reported support is centred)
        free_b = SimpleNamespace(is_variable_type=lambda: True, fixed=False, lb=None, ub=None)
        self.built = SimpleNamespace(transform=None, coef_shape=(n,), info={},
                                     intercept=SimpleNamespace(matrix=_ONE, vars=[free_b]))
        self.solves = 0
        self.pivots = 0
        # the column scale every iterate carries (fsframe.scales.group_scale, as the compiled
        # subproblem's iterates do): the loops' support rule reads it off the iterate, not afresh
        self.column_scale = group_scale(self, ptp)

    # -- what the loops read ---------------------------------------------------------------------
    def group_norms(self, coef):
        return np.abs(np.asarray(coef, dtype=float))

    def solve(self, *, quad=None, lin=None, lin_w=None, full: bool = False) -> Iterate:
        """Solve at the slot weights ``quad`` (``inf``: the group fixed at zero); only ``quad``."""
        if lin is not None or lin_w is not None or quad is None:
            raise UnsupportedProblemError("DenseHingeSubproblem solves the quadratic slot only (quad=...)")
        t0 = time.perf_counter()
        quad = np.asarray(quad, dtype=float)
        if quad.ndim and quad.shape != (self.n_groups,):
            raise UnsupportedProblemError(f"DenseHingeSubproblem: quad has shape {quad.shape}, expected a scalar or "
                                          f"({self.n_groups},) (one weight per column of X)")
        q = quad.copy() if quad.ndim else np.full(self.n_groups, float(quad))
        if not (q > 0).all():  # nan fails it too
            raise UnsupportedProblemError("DenseHingeSubproblem: quad weights must be > 0 (inf fixes a group)")
        warm, self._warm = self._warm, None
        previous = warm  # the previous step's multipliers (warm becomes SMO's start where that is taken)
        live = np.isfinite(q)
        # the live columns' indices and weights, once per step: the compiled warm step takes both
        # (nonzero()[0] is np.flatnonzero's array without its Python wrapper; q[idx] the values of
        # q[live] by integer index, cheaper at these sizes: docs/performance.md, sixteenth pass (d))
        idx = live.nonzero()[0]
        q_live = q[idx]
        s = 1.0 / np.sqrt(2.0 * q_live)
        # the scaling of this step's weights, F = YX[:, live] * s: formed afresh every solve (by the
        # compiled warm step into this buffer when it runs, _warm_step)
        # compiled: the warm attempt is the compiled pivots' (numba; none without), which SMO's fallback
        # follows; without them the general path's attempts below run in their order, warm first
        compiled = self._compiled_step is not None
        form = warm is not None and compiled
        F = np.empty((self.y.size, s.size)) if form else self._YX[:, live] * s
        # the attempts, each judged by the certificate, the first certified one returned: from the
        # previous step's multipliers; cold (a warm start can end where a cold one does not); cold on
        # the dual scaled by a = ||F||_2 (F / a, f / a^2: the same minimiser, b = a^2 nu), which puts
        # the pivots' systems on a unit scale when X's columns are large or spread
        # (the norm is computed only when that attempt is reached: an SVD of F, off the usual path).
        # A warm start that fails is first tried again on the dual scaled by F's largest row norm
        # (warm_scale: the same minimiser; no SVD), before the cold attempts: late EM steps of a kernel
        # map whose weights q grow without bound have an F of entries ~1e-5, a Hessian ~1e-10 I,
        # and pivots the LU judges singular; cold, the pivots then add one free multiplier at a time
        # (thousands of factorisations of up to m rows: docs/paper002-dual.md, "What a fit costs")
        failures, iterations, cert = [], 0, None
        kinds = (["warm", "warm scaled"] if warm is not None else []) + ["cold", "scaled"]
        fast = None
        crash_ok = form  # the warm crash's rule, also after a failed matrix-free attempt (which clears form)
        if pdas_applies((self.y.size, s.size), warm, self.C):
            # a wide dual first by the matrix-free active set (its free set changes in blocks, no
            # m x m factorisation); refused or failed, the attempts below run as without it. Cold or
            # warm, only on a nearly diagonal F F' (a narrow RBF width), where its CG converges: with
            # fewer live columns than rows F F' has rank q < m, and a free set larger than q is singular
            if form:
                F, form = self._YX[:, live] * s, False
            if nearly_diagonal(F):
                cert, lam, w, b, its, _ = self._pdas("pdas", F, q, live, s, warm, failures)
                iterations += its
                if cert is not None:
                    kind, kinds = "pdas", []
        smo_tried = False
        if cert is None and svm_start_applies((self.y.size, s.size), warm, self.C):
            # not certified yet, on a dual whose free sets reach hundreds or thousands of multipliers:
            # from SMO's multipliers (good to ~1e-7, on the optimum's free set), polished by the
            # matrix-free method (one CG there, whatever F F' looks like); failing that, the attempts
            # below start from them. SMO not converged: from the previous step's, as without it
            if form:
                F, form = self._YX[:, live] * s, False
            warm, kinds, found, its = self._smo_attempt(F, q, live, s, warm, kinds, failures)
            smo_tried, iterations = True, iterations + its
            if found is not None:
                kind, (cert, lam, w, b) = "smo", found
        # the compiled warm attempt starts from a crash of the previous multipliers (not SMO's) where
        # warm_crash_applies (numpy's F: the crash forms F F' from it); when that attempt fails, the
        # general path's "warm" starts from the previous multipliers themselves
        crashed = crash_ok and cert is None and warm is previous
        start = self._crashed_start(F.shape, live, s, warm) if crashed else None
        if start is not None:
            F, form = start[1], False
        # the warm attempt in one compiled call where it can be (_warm_step); None: the general path
        if cert is None and warm is not None:
            fast = self._warm_step(F, q, live, s, warm if start is None else start[0], form=form, cols=(idx, q_live))
        if fast is not None:
            # the first attempt of kinds ("warm", or "warm from smo" after SMO's start), or the crashed one
            kind = kinds[0] if start is None else "warm crashed"
            kinds = kinds[1:] if start is None else kinds
            lam, w, b, cert, its = fast
            self.solves += 1
            self.pivots += its
            iterations += its
            if lam is None:  # the pivots' status, as solve_box_qp reports it from this start
                failures.append(f"{kind}: {cert.replace('_', ' ')}")
                cert = None
            elif not cert["optimal"]:
                # refused: refined on its free set as the general path's points are (_certified), on
                # numpy's F (the buffer's Hessian case leaves it unfilled; the general path forms it anyway)
                if form:
                    F, form = self._YX[:, live] * s, False
                found = self._certified(kind, F, q, live, s, lam, w, b, cert, failures)
                if found is None:
                    cert = None
                else:
                    lam, w, b, cert = found
        if cert is None and form:  # numpy's F for the general path: its layout (F-ordered), its BLAS products' bits
            F = self._YX[:, live] * s
        if cert is None and warm is not None and compiled and not smo_tried and svm_start_fallback(F.shape):
            # the compiled warm attempt did not certify (failed, or left the step to the general path)
            # on a dual SMO's rule did not pick (few free multipliers, few live
            # columns: a late EM step of a kernel map): SMO's multipliers, polished as above, before
            # the attempts below, which then start from them ("warm from smo", on the general path). On
            # Twonorm (3 947 samples, sigma 1, C = 10, a late step) the attempts below alone ended in
            # iteration limits after 166 s, and the fit then went to the compiled path for hours
            warm, kinds, found, its = self._smo_attempt(F, q, live, s, warm, kinds, failures)
            iterations += its
            if found is not None:
                kind, (cert, lam, w, b) = "smo", found
        # the cold attempt from the classes' balanced point (dense_rules.cold_crash_from, fewer sweeps)
        # where it gives one, then, not certified, the cold attempt from zero as without it ("cold
        # from zero"); "scaled" as without it (40 mixed-scale 100 x 25 em-l0 fits: 5 of them left the
        # dense path with "scaled" the only other attempt, none with this one)
        balanced = None if cert is not None or "cold" not in kinds else cold_crash_from(self.y, self.C, F.shape,
                                                                                         self.n_groups)
        if balanced is not None:
            kinds = [k for a in kinds for k in ((a, "cold from zero") if a == "cold" else (a,))]
        for kind in kinds if cert is None else ():
            scale = 1.0
            if kind == "scaled":
                scale = float(np.linalg.norm(F, 2)) if F.size else 1.0
                if not (np.isfinite(scale) and scale > 0 and scale != 1.0):
                    break
            elif kind.startswith("warm scaled"):  # also "warm scaled from smo"
                scale = warm_scale(F)
                if scale is None:
                    continue
            # a cold dual starts from a crash under the compiled path's dense form's rule (docs/backends.md),
            # and at any size when F is square or wider (a kernel map's first steps, one column per
            # sample: without the crash each pivot factorises a free set of up to m multipliers)
            origin = balanced if kind == "cold" else None
            crash = (CRASH_SWEEPS if crash_applies(F.shape) else 0) if origin is None else dense_rules.COLD_CRASH_SWEEPS
            res = solve_box_qp(F if scale == 1.0 else F / scale, self._f if scale == 1.0 else self._f / scale ** 2,
                               self._E, np.zeros(1), self._lo, self._hi, start=warm if kind.startswith("warm") else None,
                               crash=0 if kind.startswith("warm") else crash, crash_from=origin)
            iterations += int(res.iterations or 0)
            judged = self._judged(kind, res, F, q, live, s, scale, failures)
            if judged is not None:
                lam, w, b, cert, _ = judged
                break
        if cert is None:
            return self._failed(q, "dense hinge dual: " + "; ".join(failures), iterations, time.perf_counter() - t0)
        self._warm = lam
        xi = cert["xi"]
        loss = self.C * float(xi.sum())
        x = _stacked(w, b, xi)
        seconds = time.perf_counter() - t0
        message = "dense hinge dual: optimal" + (f" ({kind}; {'; '.join(failures)})" if failures else
                                                 f" ({kind})" if kind in ("pdas", "smo") else "")
        result = SolveResult(Status.OPTIMAL, x, cert["primal"], self.backend_name, seconds, iterations=iterations,
                             message=message,
                             duals={"lam": lam}, certificate=_measures(cert))
        coef, intercept, t = _frozen(w, np.array([b]), np.abs(w))
        return Iterate(Status.OPTIMAL, x, coef, intercept, t, loss, cert["primal"], seconds, result,
                       weights={"quad": q}, column_scale=self.column_scale)

    def _pdas(self, kind: str, F, q, live, s, start, failures: list):
        """The matrix-free attempt from ``start``: ``(cert, lam, w, b, iterations, point)``, the
        first four ``None`` unless certified (its reason then in ``failures``); ``point``: the
        method's multipliers when it ended optimal by its own test (certified or not), else ``None``."""
        res = solve_box_qp_pdas(F, self._f, self.y, 0.0, self._lo, self._hi, start=start)
        its = int(res.iterations or 0)
        point = res.lam if res.status == "optimal" else None
        judged = self._judged(kind, res, F, q, live, s, 1.0, failures)
        if judged is None:
            return None, None, None, None, its, point
        lam, w, b, cert, _ = judged
        return cert, lam, w, b, its, point

    def _smo_attempt(self, F, q, live, s, warm, kinds, failures: list):
        """SMO's start (:func:`~fsframe.backends.svm_start.svm_start`) polished by the matrix-free
        method from it: ``(warm, kinds, found, iterations)``. SMO converged: its multipliers (the
        polish's, where that ended optimal by its own test but the certificate refused it) as the
        step's start and :data:`_AFTER_START`, the attempts that then follow from them (a warm step's
        or a cold one's alike: the previous multipliers are not tried again), with ``found`` the
        polish's ``(cert, lam, w, b)`` when the certificate passes it (its reason in ``failures``
        otherwise, ``found`` then ``None``). SMO not converged: ``warm`` and ``kinds`` as given (the
        attempts run as without it), ``found`` ``None``, no iterations."""
        smo = svm_start(F, self.y, self.C)
        if smo is None:
            return warm, kinds, None, 0
        cert, lam, w, b, its, point = self._pdas("smo", F, q, live, s, smo, failures)
        if cert is not None:
            return smo, list(_AFTER_START), (cert, lam, w, b), its
        # the polish optimal by its own test but refused by the certificate (its free-set solve by CG
        # off by rounding: a late kernel-map step whose columns' scales spread by 1e6): the attempts
        # below start from its point, which has the optimum's free set (the active set then needs a
        # pivot or none), not from SMO's (Twonorm, 3 946 samples, sigma 1, C = 10, a step with 118 live
        # columns: from SMO's the active set ran into its iteration limit and every attempt failed;
        # from the polish's it certified in one pivot, 0.24 s)
        return smo if point is None else point, list(_AFTER_START), None, its

    def _crashed_start(self, shape, live, s, warm):
        """``(start, F)`` for the compiled warm attempt: the previous multipliers ``warm`` after
        :data:`~fsframe.dense_rules.WARM_CRASH_SWEEPS` sweeps of the crash (``box_qp._crashed``: the
        pairs keep ``y' lam = 0`` and the box), and numpy's ``F`` it ran on; ``None`` (the warm
        start as it is) where :func:`~fsframe.dense_rules.warm_crash_applies` says no, ``warm`` is
        off the equality, or the crash found no better start (``box_qp.crash_start``'s cases)."""
        if warm is None or not warm_crash_applies(shape, self.n_groups):
            return None
        # np.clip's values without its Python wrapper (~0.8 us of the step): the bounds are finite,
        # and a nan in warm stays nan either way
        lam = np.minimum(np.maximum(warm, self._lo), self._hi)
        if not abs(float(self.y @ lam)) <= box_qp_jit.START_TOL:
            return None
        F = self._YX[:, live] * s
        crashed = crash_start(F, self._f, self._E, _ZERO, self._lo, self._hi, lam,
                              dense_rules.WARM_CRASH_SWEEPS)
        return None if crashed is None else (crashed, F)

    def _judged(self, kind: str, res, F, q, live, s, scale: float, failures: list):
        """``(lam, w, b, cert, pivots)`` of a solver's result on the dual scaled by ``scale`` when it is
        optimal and :meth:`certificate` certifies it; otherwise ``None``, its reason appended to
        ``failures`` (counted in ``solves`` and ``pivots`` either way)."""
        self.solves += 1
        self.pivots += int(res.iterations or 0)
        if res.status != "optimal":
            failures.append(f"{kind}: {res.status.replace('_', ' ')}")
            return None
        lam, b = res.lam, float(res.nu[0]) * scale ** 2
        w = np.zeros(self.n_groups)
        w[live] = s * (F.T @ lam)
        found = self._certified(kind, F, q, live, s, lam, w, b, self.certificate(q, w, b, lam), failures)
        return None if found is None else (*found, int(res.iterations or 0))

    def _certified(self, kind: str, F, q, live, s, lam, w, b: float, cert: dict, failures: list):
        """``(lam, w, b, cert)`` of a point its solver called optimal, ``cert`` its :meth:`certificate`:
        the point itself when certified; refused, the point :meth:`_refined` makes of it when that is
        certified (``"<kind>: refined"`` in ``failures``: the message names the step that certified
        it); else ``None``, the refusal of the solver's point in ``failures``. ``F``: the dual's
        unscaled factor, ``b`` the unscaled intercept."""
        if cert["optimal"]:
            return lam, w, b, cert
        refined = self._refined(F, lam, b, q, live, s)
        if refined is None:
            failures.append(_refusal(kind, cert))
            return None
        failures.append(f"{kind}: refined")
        return refined

    def _refined(self, F, lam, b: float, q, live, s):
        """One Newton step on the free set's KKT residual of a point its solver called optimal but
        the certificate refused: ``(lam, w, b, cert)`` when the refined point is certified, else
        ``None``. The step solves the bordered system ``[F_f F_f', y_f; y_f', 0]`` (``y_f`` the free
        samples' labels, the equality's row; :func:`~fsframe.backends.box_qp.free_set_kkt`, the
        matrix the pivots factorise) by least squares
        (an SVD: it stays accurate where the live columns' scales spread by 1e6 and the solver's own
        factorisation of the free set loses digits — a late EM step of a kernel map, Twonorm at
        3 946 samples: the active set's point had gap 3.5e-8, one step gives 5.6e-12). Only for free
        sets up to :data:`REFINE_MAX_FREE` multipliers (the system is dense in them); the bounds'
        multipliers are left where the solver put them."""
        free = (lam > 0.0) & (lam < self.C)
        n_free = int(free.sum())
        if not 0 < n_free <= REFINE_MAX_FREE:
            return None
        a = self.y[free]
        Ff = F[free]
        K = free_set_kkt(Ff, self._E[:, free])  # the bordered system, as the pivots' (box_qp), from Ff
        # the reduced gradient on the free set with the equality's multiplier (b = nu) and y' lam
        residual = np.concatenate([Ff @ (F.T @ lam) + self._f[free] + a * b, [float(self.y @ lam)]])
        step = np.linalg.lstsq(K, residual, rcond=None)[0]
        new = lam.copy()
        new[free] -= step[:n_free]
        if not np.all((new[free] >= 0.0) & (new[free] <= self.C)):
            return None
        b_new = b - float(step[n_free])
        w = np.zeros(self.n_groups)
        w[live] = s * (F.T @ new)
        cert = self.certificate(q, w, b_new, new)
        return (new, w, b_new, cert) if cert["optimal"] else None

    def _warm_step(self, F, q, live, s, warm, form: bool = False, cols=None):
        """The warm attempt of :meth:`solve` as one compiled call
        (:func:`fsframe.backends.box_qp_jit.hinge_warm_step`: the pivots of
        :func:`~fsframe.backends.box_qp.solve_box_qp` from ``warm``, the intercept's midpoint rule and
        :meth:`certificate`'s measures, without the numpy calls around each): ``(lam, w, b, cert,
        pivots)``; ``(None, None, None, status, pivots)`` when the pivots end otherwise than optimal
        (``solve_box_qp``'s status from this start, its pivots being these); or ``None`` when the
        pivots are not compiled (numba missing, ``FSFRAME_NO_JIT`` set when the subproblem was made,
        numba refusing the step: warned once) or the step needs what only the general path has (an
        infeasible start, the Python shrinking of a free set the new Hessian cannot hold): the
        general path then runs the warm attempt from the start, as without this call.

        ``form``: ``F`` is an unfilled buffer (C-ordered), which the compiled call fills with
        ``YX[:, live] * s`` (``hinge_warm_step(form_f=True)``: each entry numpy's product) for its
        own use; the general path after a ``None`` forms its own (numpy's, F-ordered: the BLAS
        products there round by layout).

        ``cols``: ``(np.flatnonzero(live), q[live])`` where the caller has them (:meth:`solve`);
        ``None``: found here."""
        step = self._compiled_step
        if step is None:
            return None
        m, nq = F.shape
        use_h = nq > m  # as the general path: the m x m Hessian once when it is the smaller
        if use_h and form:  # the Hessian from numpy's F, as before
            F, form = self._YX[:, live] * s, False
        H = F @ F.T if use_h else self._no_h
        # the compiled call takes F C-ordered (as its buffer and its warm-up): numpy's F-ordered
        # YX[:, live] * s (the crashed start's) would compile a second specialisation, ~19 s CPU
        # on the first fit; the loops read the same values either way
        F = np.ascontiguousarray(F)
        lam, w_live, xi, measures = np.empty(m), np.empty(nq), np.empty(m), np.empty(6)
        idx, q_live = (live.nonzero()[0], q[live]) if cols is None else cols
        try:
            code, its, b, status = step(F, H, use_h, self._f, self.y, self._lo, self._hi, warm, 10 * m + 100, self.X,
                                self._YX, idx, s, q_live, self.C, GAP_TOL, FREE_TOL, lam, w_live, xi,
                                measures, form)
        except Exception as exc:  # numba failing to compile the step on its first call: the general path
            if not box_qp_jit.is_compile_error(exc):
                raise
            box_qp_jit.disable_hinge(exc)
            self._compiled_step = None
            return None
        if code == box_qp_jit.HINGE_DEFER:
            return None
        if code == box_qp_jit.HINGE_FAILED:  # the general path's status from this start (the same pivots)
            return None, None, None, box_qp_jit.STATUS[status], int(its)
        w = np.zeros(self.n_groups)
        w[idx] = w_live
        gap, equality, box, stationarity, primal, dual = measures.tolist()
        cert = {"gap": gap, "equality": equality, "box": box, "stationarity": stationarity, "xi": xi,
                "primal": primal, "dual": dual, "optimal": code == box_qp_jit.HINGE_CERTIFIED}
        return lam, w, float(b), cert, int(its)

    def certificate(self, q, w, b: float, lam) -> dict:
        """Judge ``(w, b)`` with the dual point ``lam`` on the full problem at weights ``q``: the
        dual's box and equality residuals and the duality gap ``P - D``, where ``P = C sum xi +
        sum q w^2`` with ``xi = max(0, 1 - y (X w + b))`` and ``D = 1' lam - 1/4 sum_j g_j^2 / q_j``,
        ``g = X' (y * lam)`` (live groups). Weak duality makes ``P - D >= 0`` for every feasible
        pair, with equality exactly at an optimum; the gap is measured relative to ``max(1, |P|)``.
        Returns the measures, ``xi``, ``P`` and ``optimal``."""
        live = np.isfinite(q)
        xi = np.maximum(0.0, 1.0 - self.y * (self.X[:, live] @ w[live] + b))
        primal = self.C * float(xi.sum()) + float(q[live] @ (w[live] ** 2))
        g = self._YX[:, live].T @ lam
        dual = float(lam.sum()) - 0.25 * float((g * g) @ (1.0 / q[live]))
        gap = (primal - dual) / max(1.0, abs(primal))
        equality = abs(float(self.y @ lam)) / max(1.0, self.C)
        box = max(0.0, float(-lam.min(initial=0.0)), float(lam.max(initial=0.0)) - self.C) / max(1.0, self.C)
        # the primal's w must be the dual's: w_j = g_j / (2 q_j) (stationarity in w)
        stationarity = float(np.max(np.abs(w[live] - g / (2.0 * q[live])), initial=0.0)) / max(
            1.0, float(np.max(np.abs(w), initial=0.0)))
        ok = bool(abs(gap) <= GAP_TOL and equality <= GAP_TOL and box <= GAP_TOL and stationarity <= GAP_TOL
                  and np.all(w[~live] == 0.0))
        return {"gap": gap, "equality": equality, "box": box, "stationarity": stationarity, "xi": xi,
                "primal": primal, "dual": dual, "optimal": ok}

    def restricted(self, it: Iterate, keep, *, full: bool = False) -> Iterate:
        """Re-solve at ``it``'s weights with the groups outside ``keep`` fixed at zero.

        The re-solve starts from the previous solve's multipliers (the last EM step's, for the
        model on the selected features) held to what the smaller dual can take
        (:func:`_held_start`): their free set may be larger than the ``r + 1`` multipliers a dual
        on ``r`` live columns holds free, and the active set would first shrink it in Python
        (``box_qp._regularize``). The answer still comes from :meth:`solve`'s pivots and
        certificate; only the start differs (docs/performance.md, "Issue 19 at a glance")."""
        q = np.array(it.weights["quad"], dtype=float)
        q[~np.asarray(keep, dtype=bool)] = np.inf
        if self._warm is not None:
            self._warm = _held_start(self._warm, self.y, self.C, int(np.isfinite(q).sum()) + 1)
        return self.solve(quad=q)

    def at_support(self, it: Iterate, keep) -> tuple[float, float]:
        """``(loss, penalty)`` of ``it``'s model with the groups outside ``keep`` set to zero."""
        keep = np.asarray(keep, dtype=bool)
        w = np.where(keep, it.coef, 0.0)
        q = it.weights["quad"]
        live = np.isfinite(q) & (w != 0)
        xi = np.maximum(0.0, 1.0 - self.y * (self.X @ w + float(it.intercept[0])))
        return self.C * float(xi.sum()), float(q[live] @ (w[live] ** 2))

    def certified_cut(self, it: Iterate, keep) -> Iterate | None:
        """``it`` with the groups outside ``keep`` set to zero, when that point still passes
        :meth:`certificate` at ``it``'s weights with ``it``'s multipliers; else ``None`` (the base
        then re-solves: :meth:`restricted`)."""
        keep = np.asarray(keep, dtype=bool)
        q = it.weights["quad"]
        w = np.where(keep, it.coef, 0.0)
        b = float(it.intercept[0])
        cert = self.certificate(q, w, b, it.result.duals["lam"])
        if not cert["optimal"]:
            return None
        x = _stacked(w, b, cert["xi"])
        result = attrs.evolve(it.result, x=x, objective=cert["primal"], certificate=_measures(cert))
        w, t = _frozen(w, np.abs(w))
        return attrs.evolve(it, x=x, coef=w, t=t, loss=self.C * float(cert["xi"].sum()),
                            objective=cert["primal"], result=result)

    def close(self) -> None:
        self._warm = None

    def _failed(self, q, message: str, iterations, seconds: float) -> Iterate:
        result = SolveResult(Status.NUMERICAL_ERROR, None, None, self.backend_name, seconds, iterations=iterations,
                             message=message)
        return Iterate(Status.NUMERICAL_ERROR, None, None, None, None, None, None, seconds, result,
                       weights={"quad": q})


def _stacked(w, b: float, xi) -> np.ndarray:
    """``np.concatenate([w, [b], xi])`` (an iterate's ``x``), filled into one new array (~0.2 us
    less: no list and no array of ``[b]``)."""
    n = w.size
    x = np.empty(n + 1 + xi.size)
    x[:n] = w
    x[n] = b
    x[n + 1:] = xi
    return x


def _frozen(*arrays) -> tuple:
    """``arrays`` made read-only, as every iterate's model of this subproblem is: the iterate then
    keeps what the loops read of it several times per step (:attr:`fsframe.problem.Iterate.point`),
    and nothing can change the model under it."""
    for a in arrays:
        a.setflags(write=False)  # the flag set as ``a.flags.writeable = False`` does, without a flags object
    return arrays


_AFTER_START = ("warm from smo", "warm scaled from smo", "cold", "scaled")
"""The attempts of :meth:`DenseHingeSubproblem.solve` after SMO's start (:meth:`~DenseHingeSubproblem._smo_attempt`),
in order: from SMO's multipliers, from them on the scaled dual, cold, cold on the scaled dual; the first
two named for the start they take (a step's message then tells them from the previous multipliers')."""

REFINE_MAX_FREE = 2000
"""The largest free set :meth:`DenseHingeSubproblem._refined` refines (a dense ``(n + 1)^2`` SVD:
~3 s of CPU at 2 000)."""

_ZERO = np.zeros(1)
"""The right-hand side of the dual's one equality ``y' lam = 0`` (read only)."""
_ZERO.flags.writeable = False

_ONE = sp.csr_matrix(np.ones((1, 1)))
"""The intercept's map of every :class:`DenseHingeSubproblem` (one free variable ``b``; read only,
by :func:`fsframe.scales.offset_free`): made once, not once per fit (~80 us a fit)."""



def _column_extremes(X: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(np.abs(X).max(axis=0, initial=0.0), np.ptp(X, axis=0))``, bit for bit, from one maximum and
    one minimum per column, without the ``m x n`` copy ``np.abs(X)`` would hold (at a 6 000-sample
    kernel map, 288 MB at construction). An ``X`` without rows: zeros, and ``None`` for the ``ptp``
    it has none of."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1]), None
    hi, lo = X.max(axis=0), X.min(axis=0)
    return np.maximum(np.maximum(hi, 0.0), 0.0 - np.minimum(lo, 0.0)), hi - lo


class _ColumnMaxima:
    """The columns' largest ``|entries|`` of ``X`` as :func:`fsframe.loops.em.group_magnitudes`
    reads a constraint matrix (``shape``, ``nnz``, ``abs(M).max(axis=0).todense()``): the values
    ``abs(G).max(axis=0)`` gave for ``G = |X|`` as a scipy matrix, without building one per fit."""

    def __init__(self, colmax):
        self._colmax = np.asarray(colmax, dtype=float)
        self.shape = (1, self._colmax.size)
        self.nnz = int(np.count_nonzero(self._colmax))

    def __abs__(self):
        return self

    def max(self, axis=None):
        if axis != 0:
            raise UnsupportedProblemError("DenseHingeSubproblem's column maxima are read per column (axis=0)")
        return self

    def todense(self):
        return self._colmax[None, :]


def _held_start(lam, y, C: float, hold: int):
    """The multipliers ``lam`` (a feasible point of the hinge dual, ``y' lam = 0`` and ``0 <= lam
    <= C``) with at most ``hold`` of them free, as a start for a dual whose Hessian and equality
    hold no more (:meth:`DenseHingeSubproblem.restricted`: ``hold`` = the live columns + 1). ``lam``
    itself (not copied) when it has no more free, or when the point below would not be feasible;
    else a new array: the free multipliers nearest a bound (the most held, by
    ``min(lam_i, C - lam_i)``, the first in index order among equals) go to that bound, and the
    equality's residual ``y' lam`` this leaves is taken up by the ``hold`` still free, one after
    the other in the same order, each within its box (every ``y_i`` is ``+-1``: ``lam_i - y_i res``
    puts the residual on it). The active set then starts from a free set it can factorise, instead
    of shrinking the larger one first along null-space directions (``box_qp._regularize``, SVDs in
    Python: 0.2-0.45 ms at Sonar's size, r = 5); it is a start only: the pivots and the certificate
    decide the answer, and a start that is not feasible is not taken by them (the cold start
    instead). Feasible means ``|y' out| <= 0.1 * box_qp_jit.START_TOL``, an absolute tolerance as the
    pivots' own start test is: at very large ``C`` (1e6 on 400 samples) the rounding of ``y' out``
    can exceed it, and ``lam`` is returned (the start the re-solve had before; slower, not wrong)."""
    free = (lam > 0.0) & (lam < C)
    n_free = int(np.count_nonzero(free))
    if n_free <= hold:
        return lam
    idx = np.flatnonzero(free)
    order = idx[np.argsort(np.minimum(lam[idx], C - lam[idx]), kind="stable")]
    out = lam.copy()
    extra = order[:n_free - hold]
    out[extra] = np.where(out[extra] < 0.5 * C, 0.0, C)
    res = float(y @ out)
    for i in order[n_free - hold:]:
        v = min(max(out[i] - y[i] * res, 0.0), C)
        res -= y[i] * (out[i] - v)
        out[i] = v
    if not abs(float(y @ out)) <= 0.1 * box_qp_jit.START_TOL:
        return lam
    return out


def _refusal(kind: str, cert: dict) -> str:
    """An attempt the certificate refused, in :meth:`DenseHingeSubproblem.solve`'s message."""
    return f"{kind}: not certified (gap {cert['gap']:.2e}, equality {cert['equality']:.2e}, box {cert['box']:.2e})"


def _measures(cert: dict) -> Certificate:
    """:meth:`DenseHingeSubproblem.certificate`'s measures as a solve's
    :class:`~fsframe.backends.certificate.Certificate` (what ``FitResult.certificate`` reads):
    the dual's equality and box as the primal residual of the dual problem, stationarity in ``w``
    as the dual residual, the dual objective as the bound."""
    return Certificate(primal_residual=max(float(cert["equality"]), float(cert["box"])),
                       dual_residual=float(cert["stationarity"]), dual_bound=float(cert["dual"]),
                       gap=float(cert["gap"]))


def run_dense_em(loop, surrogate, X, y_pm, C: float, *, n_features: int | None = None, callback=None):
    """``loop.run`` (an :class:`fsframe.loops.em.EM`) on :class:`DenseHingeSubproblem`: the loop's
    steps and the base's rules unchanged. Returns the :class:`~fsframe.loops.records.LoopOutcome`."""
    if not isinstance(loop, EM):
        raise UnsupportedProblemError(f"run_dense_em drives the EM loop, not {type(loop).__name__}")
    sub = DenseHingeSubproblem(X, y_pm, C)
    try:
        return loop.run(sub, surrogate, n_features=n_features, callback=callback)
    finally:
        sub.close()
