"""ECOS backend (``ecos``, Domahidi, Chu & Boyd 2013): LPs, SOCPs and exponential-cone programs by a
primal-dual interior point method; a convex quadratic objective enters through a rotated-cone
epigraph.

ECOS solves ``min c'x  s.t.  A x = b,  h - G x in K``, ``K = R_+^l x SOC(q_1) x ... x EXP^k`` (its
exponential cone orders a triple ``(r, t, s)`` where fsframe's is ``(r, s, t)``: the rows and their
multipliers are permuted on the way in and out) — fsframe's
:class:`~fsframe.canonical.ProblemData` without the bounds, which a session folds into the
``R_+`` block (:meth:`ProblemData.bounds_as_rows`). Its multipliers already follow fsframe's
convention ``L = c'x + y'(Ax - b) + z'(Gx - h)``, ``z in K``; they are mapped back to the rows of
the compiled problem, and the base template certifies every answer (docs/backends.md).

Quadratic objective ``1/2 x'Px``: with ``P = F'F`` (:func:`~fsframe.linalg.psd_factor`) and one
epigraph column ``tau_i`` per row of ``F``, ``1/2 (F_i x)^2 <= tau_i`` is the rotated cone
``||(F_i x, tau_i - 1/2)|| <= tau_i + 1/2``; the objective becomes ``c'x + sum_i tau_i`` (one cone
per row: a single cone ``1/2 ||F x||^2 <= tau`` is less accurate). Columns with large curvature
are rescaled first (:func:`~fsframe.backends.conic.prepare`).

Re-solves: ECOS has no warm start, so a session calls ECOS again, but keeps the converted,
stacked ``csc_matrix`` data (ECOS rejects scipy sparse *arrays*) and rebuilds only what changed:
``c`` every time; the bound rows, the column scaling and the epigraph cone when ``lb``, ``ub`` or
``P`` change.

Options (``SolveOptions.backend_options``): ``feastol``, ``abstol``, ``reltol`` (default 1e-8),
``feastol_inacc``, ``abstol_inacc``, ``reltol_inacc`` (the "close to optimal" tolerances),
``max_iters`` (default 100), ``nitref`` (iterative refinement steps). With a quadratic objective
the three main tolerances default to :data:`QP_TOLERANCE` (through the epigraph, a gap ``eps`` in
the objective leaves ``x`` accurate only to about ``sqrt(eps)``). When an answer to a quadratic
problem fails the certificate, further candidates follow (:meth:`EcosSession._retries`): a
re-solve at :data:`QP_RETRY_TOLERANCE` (not the default: ECOS then stalls on some unbounded
problems), one without the column scaling, then each answer *polished* — on free columns where
``P`` is diagonal the KKT condition gives ``x_j`` from the multipliers
(:func:`~fsframe.backends.conic.polish_separable`). Explicit tolerances switch the re-solve off.
ECOS has no time limit: ``time_limit`` is refused (use ``max_iters`` or ``backend="clarabel"``).
Ctrl-C during a solve (ECOS's exit flag -4) raises :class:`KeyboardInterrupt`. Constraint
entries of magnitude ``1e15`` or more are refused with a typed error naming the scale.

Exit flags (``ecos.h``): 0 optimal, 1 primal infeasible, 2 dual infeasible (unbounded),
10/11/12 the same reached only to the reduced "inaccurate" tolerances (``ECOS_INACC_OFFSET``),
-1 iteration limit, -2 search direction unreliable, -3 ``s`` or ``z`` left the cone, -4
interrupted, -7 fatal, -87 "not converged yet" (internal; never expected to escape).
The measurements behind these choices are in docs/performance.md.
"""

from __future__ import annotations


import attrs
import numpy as np

from .._lazy import lazy_module
from ..canonical import ProblemData
from ..enums import ProblemClass, Status
from ..errors import InvalidOptionError
from ..linalg import psd_factor
from .base import Backend, BackendSession, RawSolution, SolveFailure, SolveOptions, SolveResult, check_magnitudes
from .conic import module_version, polish_separable, prepare

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["EcosBackend", "ECOS_STATUS", "ECOS_OPTIONS"]

ECOS_STATUS = {
    0: Status.OPTIMAL,  # ECOS_OPTIMAL
    1: Status.INFEASIBLE,  # ECOS_PINF: certificate of primal infeasibility
    2: Status.UNBOUNDED,  # ECOS_DINF: certificate of dual infeasibility
    10: Status.OPTIMAL_INACCURATE,  # ECOS_OPTIMAL + ECOS_INACC_OFFSET
    11: Status.INFEASIBLE,  # ECOS_PINF + ECOS_INACC_OFFSET (certificate to reduced accuracy)
    12: Status.UNBOUNDED,  # ECOS_DINF + ECOS_INACC_OFFSET
    -1: Status.ITERATION_LIMIT,  # ECOS_MAXIT
    -2: Status.NUMERICAL_ERROR,  # ECOS_NUMERICS: search direction unreliable
    -3: Status.NUMERICAL_ERROR,  # ECOS_OUTCONE: s or z got outside the cone
    -4: Status.ERROR,  # ECOS_SIGINT: interrupted (a session raises KeyboardInterrupt instead)
    -7: Status.ERROR,  # ECOS_FATAL
    -87: Status.ERROR,  # ECOS_NOT_CONVERGED_YET (internal)
}
"""Every ECOS exit flag and its fsframe status."""

_INACCURATE = {10, 11, 12}
ECOS_SIGINT = -4
"""ECOS's exit flag when it caught Ctrl-C: a session raises :class:`KeyboardInterrupt`."""
MAX_MAGNITUDE = 1e15
"""Largest constraint entry accepted (:func:`~fsframe.backends.base.check_magnitudes`): ECOS's
interior point squares its data, so entries near 1e150 overflow."""

QP_TOLERANCE = 1e-9
"""Default ``feastol``/``abstol``/``reltol`` when the objective is quadratic (see the module docstring)."""
QP_RETRY_TOLERANCE = 1e-10
"""Tolerance of the one re-solve when a quadratic problem's answer fails the certificate."""

ECOS_OPTIONS = {
    "feastol": float, "abstol": float, "reltol": float,
    "feastol_inacc": float, "abstol_inacc": float, "reltol_inacc": float,
    "max_iters": int, "nitref": int,
}
"""ECOS settings accepted in ``backend_options`` and their types."""


def check_ecos_options(options: SolveOptions) -> dict:
    """ECOS keyword arguments from ``options``; raises :class:`InvalidOptionError` on an unknown
    name, a value of the wrong type or sign, or a time limit."""
    if options.time_limit is not None:
        raise InvalidOptionError(
            "ecos has no time limit; bound its work with backend_options={'max_iters': ...} or use "
            "backend='clarabel', which honours time_limit")
    kwargs: dict = {}
    for key, val in options.backend_options.items():
        kind = ECOS_OPTIONS.get(key)
        if kind is None:
            raise InvalidOptionError(f"ecos: unknown option {key!r}; accepted: {sorted(ECOS_OPTIONS)}")
        if kind is int:
            if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < 0:
                raise InvalidOptionError(f"ecos: option {key} must be a non-negative integer, got {val!r}")
            kwargs[key] = int(val)
        else:
            if isinstance(val, bool) or not isinstance(val, (int, float, np.floating, np.integer)) \
                    or not np.isfinite(val) or val <= 0:
                raise InvalidOptionError(f"ecos: option {key} must be a positive number, got {val!r}")
            kwargs[key] = float(val)
    kwargs["verbose"] = bool(options.verbose)
    return kwargs


class EcosBackend(Backend):
    """ECOS: LP, SOCP, exponential cones, and QP through a rotated-cone epigraph. Preferred for
    SOCP by ``backend="auto"`` (HiGHS keeps LP/QP, Clarabel takes exponential cones)."""

    name = "ecos"
    supports = frozenset({ProblemClass.LP, ProblemClass.QP, ProblemClass.SOCP, ProblemClass.EXP})
    auto_skips = frozenset({ProblemClass.EXP})
    required_modules = ("ecos",)
    status_map = ECOS_STATUS
    preference = 1
    native_quadratic = False
    honours_time_limit = False
    reference = "Domahidi, Chu & Boyd, ECOS: an SOCP solver for embedded systems, ECC 2013"

    @classmethod
    def version(cls) -> str:
        return module_version("ecos")

    def check_options(self, options: SolveOptions) -> None:
        check_ecos_options(options)

    def open(self, data: ProblemData, options: SolveOptions = SolveOptions()) -> BackendSession:
        self.require()
        self.check_supports(data)
        check_magnitudes(data, MAX_MAGNITUDE, "ecos")
        return EcosSession(self, data, options)


@attrs.frozen(eq=False)
class _Form:
    """A problem as ECOS receives it: columns (possibly rescaled), bounds as rows, the epigraph
    factor of ``P`` and the stacked ``(G, h, dims, A, b)``."""

    prep: object
    epi: sp.csr_matrix | None
    stacked: tuple

    @classmethod
    def of(cls, data: ProblemData, *, scale: bool = True, reduce: bool = True) -> "_Form":
        prep = prepare(data, scale=scale, reduce=reduce)
        rows = prep.layout.rows
        epi = psd_factor(rows.P) if rows.has_quadratic_objective else None
        return cls(prep, epi, _stack(rows, epi))

    def c(self, data: ProblemData) -> np.ndarray:
        c = self.prep.c(data)
        return c if self.epi is None else np.concatenate([c, np.ones(self.epi.shape[0])])


def _exp_order(n_exp: int) -> np.ndarray:
    """Row permutation of ``n_exp`` exponential-cone triples between fsframe's order ``(r, s, t)``
    (``s exp(r/s) <= t``) and ECOS's ``(x, y, z)`` with ``z exp(x/z) <= y``, i.e. ``(r, t, s)``;
    its own inverse."""
    return (3 * np.arange(n_exp)[:, None] + np.array([0, 2, 1])).ravel()


def _stack(rows: ProblemData, F) -> tuple:
    """ECOS's ``(G, h, dims, A, b)``: the ``R_+`` and second-order cone rows of ``rows``, then the
    epigraph cones of ``P = F'F`` (if any), then the exponential cones in ECOS's order (ECOS
    takes the cones in the order ``l``, ``q``, ``e``)."""
    n = rows.n
    split = rows.exp_start
    G, h, A, b = rows.G[:split], rows.h[:split], rows.A, rows.b
    q = list(rows.cones)
    k = 0
    if F is not None:
        # one epigraph column tau_i per row of F and the cones (tau_i + 1/2, F_i x, tau_i - 1/2):
        # rows 3i, 3i+1, 3i+2 of h - G[x; tau] in SOC(3)
        k = F.shape[0]
        Fc = F.tocoo()
        i3 = 3 * np.arange(k)
        rows_ = np.concatenate([3 * Fc.row + 1, i3, i3 + 2])
        cols_ = np.concatenate([Fc.col, n + np.arange(k), n + np.arange(k)])
        vals_ = np.concatenate([-Fc.data, -np.ones(2 * k)])
        Gq = sp.csr_matrix((vals_, (rows_, cols_)), shape=(3 * k, n + k))
        G = sp.vstack([sp.hstack([G, sp.csr_matrix((G.shape[0], k))]), Gq])
        h = np.concatenate([h, np.tile([0.5, 0.0, -0.5], k)])
        A = sp.hstack([A, sp.csr_matrix((A.shape[0], k))])
        q.extend([3] * k)
    if rows.exp:
        order = _exp_order(rows.exp)
        Ge = rows.G[split:][order]
        if k:
            Ge = sp.hstack([Ge, sp.csr_matrix((Ge.shape[0], k))])
        G = sp.vstack([G, Ge])
        h = np.concatenate([h, rows.h[split:][order]])
    # ECOS needs canonical CSC: sorted indices and no duplicate entries (a hand-made ProblemData
    # may repeat a (row, column); ECOS then fails in its setup with a RuntimeError)
    Gc = sp.csc_matrix(G, dtype=float)
    Gc.sum_duplicates()
    Ac = None
    if A.shape[0]:
        Ac = sp.csc_matrix(A, dtype=float)
        Ac.sum_duplicates()
    dims = {"l": int(rows.l), "q": [int(v) for v in q], "e": int(rows.exp)}
    return Gc, np.ascontiguousarray(h, dtype=float), dims, Ac, np.ascontiguousarray(b, dtype=float)


def _row_duals(rows: ProblemData, z, n_epi: int) -> np.ndarray:
    """ECOS's multipliers of :func:`_stack`'s rows back in the order of ``rows.G`` (the epigraph
    cones' dropped, the exponential cones' un-permuted)."""
    z = np.asarray(z, dtype=float)
    split = rows.exp_start
    if not rows.exp:
        return z[:split]
    tail = z[split + 3 * n_epi:]
    return np.concatenate([z[:split], tail[_exp_order(rows.exp)]])


class EcosSession(BackendSession):
    """Holds ECOS's converted data; see the module docstring for what a re-solve rebuilds and
    which further attempts follow an answer that fails the certificate."""

    def __init__(self, backend: EcosBackend, data: ProblemData, options: SolveOptions):
        super().__init__(backend, data, options)
        self.kwargs = check_ecos_options(options)
        self._form = None  # for the current (structure, lb, ub, P)

    def _load(self, data: ProblemData) -> None:
        self._form = _Form.of(data)

    def _update(self, data: ProblemData) -> None:
        old = self._loaded
        structure_same = (data.A is old.A and data.G is old.G and data.b is old.b and data.h is old.h
                          and data.l == old.l and data.cones == old.cones)
        elim = self._form.prep.elim if self._form is not None else None
        if not structure_same or data.lb is not old.lb or data.ub is not old.ub or data.P is not old.P \
                or (elim is not None and not elim.valid_for(data)):
            self._form = _Form.of(data)

    def _solve_raw(self, data: ProblemData, form: _Form | None = None, tol: float | None = None):
        import ecos

        form = self._form if form is None else form
        G, h, dims, A, b = form.stacked
        kwargs = self.kwargs
        if form.epi is not None:
            kwargs = {**{k: QP_TOLERANCE for k in ("feastol", "abstol", "reltol")}, **kwargs}
        if tol is not None:
            kwargs = {**kwargs, **{k: tol for k in ("feastol", "abstol", "reltol")}}
        c = form.c(data)
        try:
            raw = ecos.solve(c, G, h, dims, A, b, **kwargs) if A is not None else ecos.solve(c, G, h, dims, **kwargs)
        except (ValueError, TypeError, RuntimeError) as exc:  # ECOS's input checks; its setup failing
            raise SolveFailure(Status.ERROR, f"ECOS rejected the problem: {exc}") from exc
        return form, raw

    def _invert(self, data: ProblemData, raw) -> RawSolution:
        form, raw = raw
        info = raw["info"]
        flag = int(info["exitFlag"])
        if flag == ECOS_SIGINT:  # ECOS caught Ctrl-C and returned: the user asked to stop
            raise KeyboardInterrupt("ECOS was interrupted")
        status = self.backend.map_status(flag)
        message = str(info.get("infostring", "")) + (" (to the reduced 'inaccurate' tolerances)"
                                                    if flag in _INACCURATE else "")
        x = duals = None
        n_epi = 0 if form.epi is None else form.epi.shape[0]
        if status in (Status.OPTIMAL, Status.OPTIMAL_INACCURATE, Status.ITERATION_LIMIT):
            x = form.prep.x(np.asarray(raw["x"], dtype=float)[: form.prep.n])
            y, z = form.prep.duals(data, x, raw["y"], _row_duals(form.prep.layout.rows, raw["z"], n_epi))
            duals = {"y": y, "z": z}
        ray = None
        if status is Status.INFEASIBLE and raw.get("y") is not None and raw.get("z") is not None:
            # ECOS's (y, z): A'y + G'z = 0, b'y + h'z = -1, z in K*
            ray = form.prep.ray(data, y=raw["y"], z=_row_duals(form.prep.layout.rows, raw["z"], n_epi))
        elif status is Status.UNBOUNDED and raw.get("x") is not None:  # ECOS's x: c'x = -1, A x = 0, G x <=_K 0
            ray = form.prep.ray(data, v=np.asarray(raw["x"], dtype=float)[: form.prep.n])
        return RawSolution(status=status, x=x, duals=duals, iterations=int(info["iter"]), message=message,
                           raw={"exit_flag": flag, "info": info, "result": raw}, ray=ray)

    def _retries(self, data: ProblemData, tried: list[SolveResult]):
        """After an answer that is not ``OPTIMAL``: when fixed columns were eliminated
        (:func:`~fsframe.backends.conic.eliminate`), the whole problem as given; then, for a
        quadratic objective whose answer missed the certificate, a re-solve at
        :data:`QP_RETRY_TOLERANCE` (unless tolerances were given), one without the column
        scaling, then each answer polished (:func:`~fsframe.backends.conic.polish_separable`)."""
        first = tried[0]
        if self._form is None:  # the conversion itself failed: nothing to vary
            return
        if self._form.prep.elim is not None:  # the problem as given, without the elimination
            whole = _Form.of(data, reduce=False)
            cand = self._invert(data, self._solve_raw(data, whole))
            yield attrs.evolve(cand, message=f"{cand.message} (re-solved without eliminating the fixed columns)")
        cert = first.certificate
        if self._form.epi is None or cert is None or cert.ok(self.options.cert_tol):
            return  # no certificate, or one that holds (an answer the solver calls inaccurate)
        attempts = []
        if not any(k in self.options.backend_options for k in ("feastol", "abstol", "reltol")):
            attempts.append((self._form, QP_RETRY_TOLERANCE, f"re-solved at tolerance {QP_RETRY_TOLERANCE:g}"))
        if self._form.prep.scale is not None:
            attempts.append((_Form.of(data, scale=False), None, "re-solved without the column scaling"))
        for form, tol, what in attempts:
            cand = self._invert(data, self._solve_raw(data, form, tol))
            yield attrs.evolve(cand, message=f"{cand.message} ({what} after the certificate failed)")
        for r in list(tried):
            if r.certificate is None or r.x is None:
                continue
            x = polish_separable(data, r.x, r.duals["y"], r.duals["z"])
            if x is not None:
                yield RawSolution(status=Status.OPTIMAL, x=x, duals=r.duals, iterations=0, raw=r.raw, message=(
                    r.message.split("; fsframe certificate failed")[0]
                    + " (x polished from the multipliers on free columns with separable curvature)"))

    def _choose(self, tried: list[SolveResult]) -> SolveResult:
        return tried[0]
