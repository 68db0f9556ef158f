"""What the conic backends (ECOS, Clarabel) share: the bounds-as-rows layout and its inverse for
multipliers, the column scaling of a quadratic objective, and the polishing of a point from the
multipliers.

Both solvers take no variable bounds, so a session folds them into the ``R_+`` block with
:meth:`ProblemData.bounds_as_rows` (fixed columns become equality rows). The solver's multipliers
then live on the expanded rows; :class:`RowsLayout` maps them back to the rows of the original
``ProblemData`` so that :func:`~fsframe.backends.base.certify` checks the problem as compiled
(bounds handled in closed form), exactly as it does for HiGHS.
"""

from __future__ import annotations

import importlib

import attrs
import numpy as np
from numpy.typing import NDArray

from .._lazy import lazy_module
from ..canonical import ProblemData

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["RowsLayout", "expand_bounds", "Prepared", "prepare", "polish_separable", "module_version"]


@attrs.frozen(eq=False)
class RowsLayout:
    """A problem with its bounds as rows, and where the original rows sit in it.

    ``rows`` is ``data.bounds_as_rows()``: its equality rows are the ``p`` original rows followed
    by one row per fixed column; its ``G`` is ``[G[:l]; -I_lo; I_up; G[l:]]``.
    """

    rows: ProblemData
    p: int  # original equality rows
    l: int  # noqa: E741 - original R_+ rows
    n_lo: int
    n_up: int

    def split_duals(self, y: NDArray, z: NDArray) -> tuple[NDArray, NDArray]:
        """Multipliers of the original ``A x = b`` and ``G x <=_K h`` rows, from those of the
        expanded problem (the bound rows' multipliers are dropped: ``certify`` recovers them in
        closed form as reduced costs)."""
        y = np.asarray(y, dtype=float)
        z = np.asarray(z, dtype=float)
        k = self.l + self.n_lo + self.n_up
        return y[: self.p], np.concatenate([z[: self.l], z[k : k + (self.rows.G.shape[0] - k)]])


def expand_bounds(data: ProblemData) -> RowsLayout:
    """:meth:`ProblemData.bounds_as_rows` plus the bookkeeping to map multipliers back."""
    rows = data.bounds_as_rows()
    n_lo_up = rows.l - data.l
    fixed = data.lb == data.ub
    n_lo = int(np.count_nonzero(np.isfinite(data.lb) & ~fixed))
    return RowsLayout(rows=rows, p=int(data.A.shape[0]), l=int(data.l), n_lo=n_lo, n_up=int(n_lo_up - n_lo))


@attrs.frozen(eq=False)
class Prepared:
    """A problem as a conic backend receives it: columns rescaled by ``scale`` (``x = scale * v``;
    ``None`` when not rescaled) and the bounds folded into rows."""

    layout: RowsLayout
    scale: NDArray | None

    def c(self, data: ProblemData) -> NDArray:
        """The objective vector of ``data`` in the rescaled columns."""
        c = np.asarray(data.c, dtype=float)
        return c if self.scale is None else c * self.scale

    def x(self, v: NDArray) -> NDArray:
        """A solution in the original columns."""
        return v if self.scale is None else v * self.scale


def prepare(data: ProblemData, *, scale: bool = True) -> Prepared:
    """Rescale the columns with large curvature, then fold the bounds into rows.

    With a quadratic objective, column ``j`` with ``P_jj > 1`` is replaced by
    ``v_j = sqrt(P_jj) x_j`` (Jacobi scaling ``x = D v``, ``D = diag(1/sqrt(max(P_jj, 1)))``):
    ``P -> DPD``, ``c -> Dc``, ``A -> AD``, ``G -> GD``, bounds ``/ D``. The problem is the same
    (row multipliers are unchanged); it is better conditioned when the weights span orders of
    magnitude, as EM's ``phi'(t)/t`` do (docs/performance.md). Columns with ``P_jj <= 1`` are left
    alone (never amplified). ``scale=False`` folds the bounds only.
    """
    factors = None
    if scale and data.has_quadratic_objective:
        d = np.asarray(data.P.diagonal(), dtype=float)
        if np.any(d > 1.0):
            factors = 1.0 / np.sqrt(np.maximum(d, 1.0))
            D = sp.diags(factors)
            data = data.evolve(c=data.c * factors, A=sp.csr_matrix(data.A @ D), G=sp.csr_matrix(data.G @ D),
                               P=sp.csc_matrix(D @ data.P @ D), lb=data.lb / factors, ub=data.ub / factors)
    return Prepared(layout=expand_bounds(data), scale=factors)


def polish_separable(data: ProblemData, x: NDArray, y: NDArray, z: NDArray) -> NDArray | None:
    """``x`` with stationarity restored exactly on the free columns whose curvature is separable.

    For a free column ``j`` (no finite bound) on which ``P`` has only its diagonal entry
    ``P_jj > 0``, the KKT condition ``c_j + P_jj x_j + (A'y + G'z)_j = 0`` gives ``x_j`` from the
    multipliers: ``x_j -= r_j / P_jj`` with ``r = c + Px + A'y + G'z``. Returns ``None`` when no
    column qualifies. The caller keeps the polished point only if it passes the certificate.
    """
    if not data.has_quadratic_objective:
        return None
    P = sp.csr_matrix(data.P)
    diag = P.diagonal()
    offdiag = np.diff(P.indptr) - (diag != 0)
    cols = ~np.isfinite(data.lb) & ~np.isfinite(data.ub) & (diag > 0) & (offdiag == 0)
    if not cols.any():
        return None
    r = data.c + P @ x + (data.A.T @ y if data.A.shape[0] else 0.0) + (data.G.T @ z if data.G.shape[0] else 0.0)
    out = np.array(x, dtype=float, copy=True)
    out[cols] -= r[cols] / diag[cols]
    return out


def module_version(module: str) -> str:
    """``module.__version__``, or ``""`` when it does not import (``available()`` says why)."""
    try:
        return str(importlib.import_module(module).__version__)
    except Exception:  # pragma: no cover - reported by available()
        return ""
