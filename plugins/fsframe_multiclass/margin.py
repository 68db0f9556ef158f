"""The multi-class margin formulation of paper 004 (eq. 5), hard and soft, with one row group per
feature: ``W`` is ``(n, c)`` and the sparsity unit is the row norm ``||W_j||_2``."""

from __future__ import annotations

import attrs
import numpy as np

from fsframe import BuiltModel, Formulation, ProblemClass, Status
from fsframe.dataset import is_sparse
from fsframe.errors import DataError, InfeasibleParameterError
from fsframe.pyomo_ext import (LinearMap, add_linear_constraints, add_named_expressions, add_soc, add_sparsity_slot,
                               var_list)
from fsframe.validators import real, to_float

__all__ = ["MarginFormulation", "label_matrix", "class_codes", "separable_columns", "add_row_norm_epigraph"]


def class_codes(y) -> np.ndarray:
    """Integer class codes ``0..c-1`` from what fsframe passes a native formulation: the codes
    themselves (more than two classes) or ``-1``/``+1`` (two classes: ``-1`` is code 0)."""
    y = np.asarray(y)
    if np.any(y < 0):
        return (y > 0).astype(np.int64)
    codes = y.astype(np.int64)
    if not np.array_equal(codes, y) or codes.size == 0:
        raise DataError("the multi-class margin formulation expects integer class codes 0..c-1 or -1/+1 labels")
    return codes


def label_matrix(y) -> np.ndarray:
    """The one-vs-rest label matrix ``Y`` of 004 eq. 2: ``Y_ik = 1`` if sample ``i`` is in class
    ``k``, else ``-1``; shape ``(m, c)``. Two classes give the single column ``y`` (±1, code 1 is
    ``+1``): 004's two columns would be ``y`` and ``-y``, whose problem (eq. 5) is the one-column
    problem twice, mirrored (``W = [w, -w]``: the same row ranking, norms times ``sqrt(2)``)."""
    codes = class_codes(y)
    c = int(codes.max()) + 1
    if c <= 2:
        return np.where(codes == 1, 1.0, -1.0)[:, None]
    Y = -np.ones((codes.size, c))
    Y[np.arange(codes.size), codes] = 1.0
    return Y


_SEPARABLE: list = []  # (digest of X, Y, tol; answer; active samples) of the last few calls

SEPARABLE_KEPT = 16
"""How many answers :func:`separable_columns` keeps: a study's tuning fits every grid point on
each inner fold in turn (paper004: 6 values of ``p`` x 8 folds), so a fold's answer is asked for
again 8 fits later; 16 keeps it (an answer is a few hundred integers per class)."""


def separable_columns(X, Y, *, tol: float = 1e-7, active: dict | None = None) -> np.ndarray:
    """Per column ``k`` of ``Y``, whether some ``(w, b)`` has ``Y_ik (x_i w + b) >= 1`` for all ``i``.

    When ``[X, 1]`` has full row rank every column is (``X w + b = Y_k`` is solvable); otherwise
    one LP per column, ``min sum xi s.t. Y_ik (x_i w + b) + xi_i >= 1, xi >= 0`` (HiGHS through
    scipy), is separable iff its optimum is 0 (to ``tol m``). On dense ``X`` the hard-margin SVM
    (a least distance program, NNLS) is tried first: a point of it meeting that test proves the
    column separable, and only the columns it does not prove go to the LP. The answers of the last
    few data are kept (:data:`SEPARABLE_KEPT`, by a digest of ``X``, ``Y`` and ``tol``): a fit asks
    twice (the formulation's ``validate`` and DSO-FS's choice of model), a tuning grid once per
    point and fold, and on ISOLET's size the LPs took minutes.
    ``active`` (a dict): receives, per column the SVM proved, its active samples — a start for
    DSO-FS's first ``E`` step, the same program with other weights.
    """
    import hashlib

    import scipy.sparse as sp

    if is_sparse(X):
        X = sp.csr_matrix(X, dtype=float)
        h = hashlib.sha1(X.data.tobytes())
        h.update(X.indices.tobytes())
        h.update(X.indptr.tobytes())
    else:
        X = np.asarray(X, dtype=float)
        h = hashlib.sha1(np.ascontiguousarray(X).tobytes())
    Y = np.asarray(Y, dtype=float)
    h.update(np.ascontiguousarray(Y).tobytes())
    h.update(repr((X.shape, Y.shape, tol, is_sparse(X))).encode())
    key = h.hexdigest()
    for k, ans, rows in _SEPARABLE:
        if k == key:
            if active is not None:
                active.update(rows)
            return ans.copy()
    rows: dict = {}
    ans = _separable_columns(X, Y, tol, rows)
    _SEPARABLE.insert(0, (key, ans, rows))
    del _SEPARABLE[SEPARABLE_KEPT:]
    if active is not None:
        active.update(rows)
    return ans.copy()


def _separable_columns(X, Y, tol: float, active: dict) -> np.ndarray:
    import scipy.sparse as sp
    from scipy.optimize import linprog

    sparse = is_sparse(X)
    m, n = X.shape
    if sparse:  # no rank shortcut (it would densify X): the LPs, on sparse rows
        Xt = sp.hstack([X, np.ones((m, 1))], format="csr")
    else:
        Xt = np.hstack([X, np.ones((m, 1))])
        if m <= n + 1 and np.linalg.matrix_rank(Xt) == m:
            return np.ones(Y.shape[1], dtype=bool)
    out = np.zeros(Y.shape[1], dtype=bool)
    cost = np.concatenate([np.zeros(n + 1), np.ones(m)])
    bounds = [(None, None)] * (n + 1) + [(0, None)] * m
    for k in range(Y.shape[1]):
        # the SVM stops at its first rows that no hard margin meets (an inseparable column) rather
        # than solve on all rows, which decides nothing the LP does not: the LP decides
        rows = None if sparse else _separable_by_ldp(Xt, Y[:, k], tol, [])
        if rows is not None:
            out[k], active[k] = True, rows
            continue
        if sparse:
            A = -sp.hstack([sp.diags(Y[:, k]) @ Xt, sp.identity(m)], format="csr")
        else:
            A = -np.hstack([Y[:, k:k + 1] * Xt, np.eye(m)])
        res = linprog(cost, A_ub=A, b_ub=-np.ones(m), bounds=bounds, method="highs")
        out[k] = res.status == 0 and res.fun <= tol * m
    return out


def _separable_by_ldp(Xt: np.ndarray, y: np.ndarray, tol: float, stuck: list | None = None) -> np.ndarray | None:
    """Whether the hard-margin SVM ``min ||w|| s.t. y ⊙ (Xt w) >= 1`` (a least distance program,
    NNLS on a working set of samples: :func:`~.nullspace.ldp_rows`) finds a ``w`` whose shortfalls
    ``max(0, 1 - y_i x_i w)`` sum to at most ``tol m`` — the LP's own test, met by a point the LP
    could have returned. Its active samples prove the column separable; None decides nothing (no
    point: the LP decides). On ISOLET's training part (936 x 617, 26 columns) the 26 LPs took
    minutes, these NNLS seconds (docs/multiclass.md). ``stuck``: the SVM stops at the first rows
    ``S`` of its working set that no hard margin meets (:func:`~.nullspace.ldp_rows`), appended
    there, rather than solve on all rows."""
    from .nullspace import ldp_rows

    out = ldp_rows(y[:, None] * Xt, np.ones(y.size), stuck=stuck)
    if out is None:
        return None
    short = np.maximum(0.0, 1.0 - y * (Xt @ out[0]))
    return np.flatnonzero(out[1] > 0) if np.isfinite(short).all() and short.sum() <= tol * y.size else None


def add_row_norm_epigraph(model, wvars: list, n: int, c: int) -> LinearMap:
    """Variables ``s_j >= ||W_j||_2`` (``n`` second-order cones over the row-major entries
    ``wvars``, ``c`` per row): the slot's ``magnitude`` map for the ``lin`` term on row groups."""
    import pyomo.environ as pyo

    model.s = pyo.Var(range(n), bounds=(0, None))
    svars = var_list(model.s)
    for j in range(n):
        add_soc(model, f"row{j}", wvars[j * c:(j + 1) * c], svars[j])
    return LinearMap.identity(svars)


@attrs.frozen
class MarginFormulation(Formulation):
    r"""Multi-class large-margin constraints of 004 eq. 5, ``Y ⊙ (X W + 1 bᵀ) >= 1``, with ``Y`` the
    one-vs-rest ±1 label matrix (eq. 2) and one sparsity group per feature (the row ``W_j``)::

        hard (C=None, 004 eq. 5):   min penalty(W)                    s.t. Y ⊙ (X W + 1 bᵀ) >= 1
        soft (C>0, 004 §6):         min penalty(W) + C sum_ik xi_ik   s.t. Y ⊙ (X W + 1 bᵀ) >= 1 - xi, xi >= 0

    ``penalty`` is the sparsity slot on the row norms ``||W_j||_2``: ``lp`` on it is 004's
    ``||W||_{2,p}^p`` (eq. 1), and ``fit(X, y, formulation="margin", surrogate="lp", loop="em", p=...)``
    is the generic composition of 004 eq. 10 (the intercept ``b`` unpenalised; Algorithm 1
    absorbs it into ``W``, see ``dso-fs``). ``coef`` is ``W`` of shape ``(n, c)``, ``intercept``
    is ``b`` (``c``,), ``decision_function`` is ``X W + b`` (``m, c``) and ``predict`` its argmax.
    Two classes give one column (see :func:`label_matrix`): ``coef`` (``n``,), a scalar
    intercept and a binary decision function, as every binary fsframe model.

    The ``lin`` term writes the epigraph ``s_j >= ||W_j||_2`` as ``n`` second-order cones
    (an SOCP); ``quad`` and ``lin_w`` keep an LP/QP (``lin_w`` alone: ``W = U - V``, ``U, V >= 0``).

    Parameters
    ----------
    C : float > 0 or None
        ``None`` (default): the hard margin of 004. On data that no ``W`` separates, a loop's
        first subproblem is infeasible and the fit raises
        :class:`~fsframe.errors.InfeasibleParameterError` naming the class columns and the soft
        margin as the remedy (:meth:`explain_failure`). DSO-FS never solves this model: it checks
        the margins itself and runs 004 §2's least-squares substitute or raises its own error.
    """

    name = "margin"
    data_facts = ("n_classes",)
    multiclass = "native"
    sparse_input = True  # the rows are Y ⊙ (X W + 1 bᵀ): kron(X, I_c) of a CSR X stays CSR
    traits = frozenset({"large_margin"})
    reference = "Peng & Fan, paper 004, eqs. 1-5 (hard margin) and §6 (soft margin)"
    C: float | None = attrs.field(default=None, converter=attrs.converters.optional(to_float),
                                  validator=attrs.validators.optional(real(0)))

    def provides(self):
        """Adds ``hard_margin`` (paper 004 eq. 5, what DSO-FS solves) when ``C`` is ``None``."""
        return super().provides() | ({"hard_margin"} if self.C is None else set())

    def problem_class(self, terms):
        if "lin" in terms:
            return ProblemClass.SOCP
        return ProblemClass.QP if "quad" in terms else ProblemClass.LP

    def validate(self, X, y):
        return {"n_classes": label_matrix(y).shape[1]}

    def explain_failure(self, X, y, status, aux):
        """A hard margin (``C=None``) whose first subproblem is infeasible: the class columns no
        hyperplane separates from the rest (one LP each, :func:`separable_columns`), as a typed
        error naming the soft margin. (DSO-FS never solves this model: it decides the case itself.)"""
        if self.C is not None or status not in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED):
            return None
        ok = separable_columns(X, label_matrix(y))
        if ok.all():
            return None
        bad = np.flatnonzero(~ok).tolist()
        return InfeasibleParameterError(
            f"margin: the hard-margin constraints Y ⊙ (XW + 1bᵀ) >= 1 (paper 004 eq. 5) have no solution on "
            f"this data: class column(s) {bad} cannot be separated from the rest by any hyperplane. Use the "
            "soft margin, e.g. fit(..., formulation='margin', C=1.0), which adds slacks weighted by C",
            parameter="C", value=None, limit=None)

    def build(self, X, y, terms):
        import scipy.sparse as sp

        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC
        from pyomo.core.expr.numeric_expr import LinearExpression

        m, n = X.shape
        Y = label_matrix(y)
        c = Y.shape[1]
        model = pyo.ConcreteModel(name=f"margin(C={self.C})")
        # lin_w without lin: W = U - V with U, V >= 0, as the binary hinge (fsframe_svm) splits it; the
        # solvers meet the margin rows to their tolerance more tightly than with a free W
        split = "lin_w" in terms and "lin" not in terms
        magnitude = None
        with PauseGC():
            if split:
                model.u = pyo.Var(range(n * c), bounds=(0, None))
                model.v = pyo.Var(range(n * c), bounds=(0, None))
                uv = var_list(model.u, model.v)
                coef = LinearMap(sp.hstack([sp.identity(n * c), -sp.identity(n * c)]), uv)
                wvars = add_named_expressions(model, "W", coef)
            else:
                model.W = pyo.Var(range(n * c))  # row-major: entry j*c + k is W[j, k]
                wvars = var_list(model.W)
                coef = LinearMap.identity(wvars)
            model.b = pyo.Var(range(c))
            bvars = var_list(model.b)
            xis = []
            if self.C is not None:
                model.xi = pyo.Var(range(m * c), bounds=(0, None))
                xis = var_list(model.xi)
        y_vec = Y.ravel()  # row (i, k) at i*c + k
        blocks = [sp.diags(y_vec) @ sp.kron(sp.csr_matrix(X), sp.identity(c)),
                  sp.diags(y_vec) @ sp.kron(np.ones((m, 1)), sp.identity(c))]
        if xis:
            blocks.append(sp.identity(m * c))
        M = sp.hstack(blocks, format="csr")
        add_linear_constraints(model, "margin", LinearMap(M, wvars + bvars + xis), lower=1.0)
        if "lin" in terms:
            magnitude = add_row_norm_epigraph(model, wvars, n, c)
        loss = 0.0 if not xis else LinearExpression(constant=0.0, linear_coefs=[self.C] * (m * c), linear_vars=xis)
        slot = add_sparsity_slot(model, coef=coef, groups=np.repeat(np.arange(n), c), magnitude=magnitude,
                                 terms=terms, loss=loss)
        return BuiltModel(model=model, slot=slot, intercept=LinearMap.identity(bvars),
                          coef_shape=(n, c) if c > 1 else (n,),
                          info={"n_classes": c})
