"""The weighted L1 hinge LP by column *and* row generation straight from ``X`` (issue 19, many rows).

The LP (Bradley & Mangasarian's L1-SVM; paper 001 eq. 2, paper 002 eqs. 1-2 with a linear
penalty)::

    min  sum_j a_j |w_j| + C sum_i xi_i
    s.t. y_i (x_i . w + b) + xi_i >= 1,   xi_i >= 0

with ``w = u - v``, ``u, v >= 0``, and its dual ``max sum_i pi_i`` over ``0 <= pi_i <= C``,
``sum_i pi_i y_i = 0``, ``|g_j| <= a_j`` where ``g = X'(pi * y)``.

:func:`solve_l1_hinge` keeps one live HiGHS LP over a few features (columns ``u_j``, ``v_j``) and a
few samples (a margin row and its ``xi_i``), and never forms the constraint matrix of the others:

* **columns** are priced by one product ``g = X'(pi * y)`` with the restricted LP's row duals
  (``pi_i = 0`` off the LP): a feature outside violates when ``|g_j| > a_j`` (its ``u_j`` or
  ``v_j`` has a negative reduced cost ``a_j -/+ g_j``);
* **rows** are priced by their margin, one product ``X w``: a sample outside violates when
  ``y_i (x_i . w + b) < 1`` (with ``xi_i = 0`` and ``pi_i = 0`` it is feasible and complementary
  otherwise). Samples well inside the margin (``> 1 + row_drop``, multiplier 0) leave the LP, each
  at most once per solve (one that comes back stays), so the LP keeps about the rows that bind;
  features at zero far from entering (``|g_j| < (1 - col_drop) a_j``) leave it the same way.

When no feature and no sample violates, the extended point ``(w, b, xi)`` with the extended
multipliers ``pi`` is optimal in the full LP: :func:`hinge_certificate` judges it from products with
``X`` (primal and dual residuals, duality gap), without any matrix of the full problem. Only
``|rows| x |new columns|`` and ``|new rows| x |columns|`` blocks of ``X`` are copied for the LP, and
for the certificate the ``m x |unpenalised|`` block of the features with weight 0; besides them
only the guesses copy: ``guess="svc"`` with non-uniform weights its priced columns, scaled (sparse
stays sparse), and ``guess="subsample"`` a fifth of the rows. ``X`` itself is read in place
(float64, any order). Measurements: docs/performance.md ("Column and row
generation from X").
"""

from __future__ import annotations

import time
import warnings

import attrs
import numpy as np
import scipy.sparse as sp

from ..errors import DataError, InvalidOptionError, SolverFailedError, SolverWarning
from .diag_qp import _one_blas_thread
from .highs import _new_highs, refuse_thread_count

__all__ = ["HingeLPResult", "solve_l1_hinge", "hinge_certificate", "CERTIFY_TOL", "COST_SCALE_BELOW"]

CERTIFY_TOL = 1e-6
"""Relative gap and residuals above which :func:`solve_l1_hinge` warns (``SolverWarning``) that the
answer is only approximately optimal (HiGHS's own feasibility tolerances are 1e-7)."""
COST_SCALE_BELOW = 0.1
"""Below this ``C`` the restricted LPs are solved with their costs divided by ``C`` (the same
optimum; the multipliers come back multiplied by ``C``): HiGHS's absolute dual feasibility
tolerance, 1e-7, would otherwise leave ``pi`` outside ``[0, C]`` by more than ``CERTIFY_TOL``
times ``C``."""

_SOLVERS = ("simplex", "ipm", "pdlp")


@attrs.frozen
class HingeLPResult:
    """The answer of :func:`solve_l1_hinge`: ``coef`` (``w``, length ``n``), ``intercept`` (``b``),
    ``slack`` (``xi``, length ``m``), ``duals`` (``pi``, length ``m``; 0 off the final LP),
    ``objective`` (the primal objective at the returned point), ``certificate`` (from
    :func:`hinge_certificate`, plus ``status``), ``features`` and ``samples`` (the final LP's,
    sorted) and ``rounds`` (one dict per restricted solve: its features and samples, the features
    and samples pricing added after it, those among them that had been dropped before
    (``returned_features``, ``returned_samples``), the features and samples dropped, LP, pricing
    and LP-update (drops and appends, ``update_seconds``; absent in the last round) CPU seconds,
    HiGHS iterations, ``cold`` (the basis dropped by ``cold_fraction``), ``warm`` (HiGHS held a
    valid basis when the solve started: every round after the first unless ``cold``) and ``guess``
    (how the first LP was started, :func:`solve_l1_hinge`'s ``guess``))."""

    coef: np.ndarray
    intercept: float
    slack: np.ndarray
    duals: np.ndarray
    objective: float
    certificate: dict
    features: np.ndarray
    samples: np.ndarray
    rounds: tuple


def _check(X, y, C, weights):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=float)  # no copy when it is CSR float64 already
    else:
        X = np.asarray(X)
        if X.dtype != np.float64:
            X = X.astype(float)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise DataError(f"solve_l1_hinge: X must be a 2-D array with at least 2 samples and 1 feature, "
                        f"got shape {X.shape}")
    data = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(data)):
        raise DataError("solve_l1_hinge: X has NaN or infinite entries")
    m, n = X.shape
    try:
        y = np.asarray(y, dtype=float).ravel()
    except (TypeError, ValueError):
        raise DataError("solve_l1_hinge: y must hold the labels -1 and +1 as numbers") from None
    if y.shape != (m,):
        raise DataError(f"solve_l1_hinge: y has {y.size} labels for {m} samples")
    if not np.all((y == 1.0) | (y == -1.0)):
        raise DataError("solve_l1_hinge: y must hold the labels -1 and +1")
    if (y > 0).all() or (y < 0).all():
        raise DataError("solve_l1_hinge: y holds one class only")
    C = _number("C", C)
    if not (np.isfinite(C) and C > 0):
        raise InvalidOptionError(f"solve_l1_hinge: C must be a finite number > 0, got {C!r}")
    try:
        a = np.ones(n) if weights is None else np.array(weights, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InvalidOptionError("solve_l1_hinge: weights must be numbers >= 0 (inf fixes a feature at zero)") from None
    if a.shape != (n,):
        raise InvalidOptionError(f"solve_l1_hinge: weights has {a.size} entries for {n} features")
    if np.isnan(a).any() or (a < 0).any():
        raise InvalidOptionError("solve_l1_hinge: weights must be >= 0 (inf fixes a feature at zero), "
                                 "without NaN")
    return X, y, C, a


def _number(name: str, val) -> float:
    """``val`` as a float, or an InvalidOptionError naming ``name`` (not a bare TypeError)."""
    if isinstance(val, bool):
        raise InvalidOptionError(f"solve_l1_hinge: {name} must be a number, got {val!r}")
    try:
        return float(val)
    except (TypeError, ValueError):
        raise InvalidOptionError(f"solve_l1_hinge: {name} must be a number, got {val!r}") from None


def _block(X, rows, cols) -> np.ndarray:
    """The dense block ``X[rows][:, cols]``: the LP's copies of ``X`` (besides them, ``guess="svc"``
    with non-uniform weights copies the priced columns, scaled, and ``guess="subsample"`` its rows)."""
    if sp.issparse(X):
        return X[rows][:, cols].toarray()
    return X[np.ix_(rows, cols)]


def hinge_certificate(X, y, C, weights, coef, intercept, slack, duals) -> dict:
    """KKT certificate of the full weighted L1 hinge LP at ``(coef, intercept, slack)`` with row
    multipliers ``duals``, from two products with ``X`` (``X w`` and ``X'(pi * y)``), every
    quantity relative to the size of its own terms:

    * ``primal_residual``: the largest ``(1 - y_i (x_i . w + b) - xi_i)_+`` and ``(-xi_i)_+``,
      relative to ``max(1, |y_i x_i . w|, |b|, |xi_i|)``;
    * ``dual_residual``: the largest of ``(|g_j| - a_j)_+ / max(a_j, |g_j|)`` (``g = X'(pi * y)``;
      for ``a_j = 0`` relative to ``sum_i |pi_i x_ij|``),
      ``|sum_i pi_i y_i| / sum_i pi_i`` and ``pi``'s distance outside ``[0, C]`` relative to ``C``;
    * ``gap``: ``(primal - dual) / max(|primal|, |dual|)`` with ``primal = sum_j a_j |w_j| + C
      sum_i xi_i`` and ``dual = sum_i pi_i`` (weak duality makes it >= 0 up to the residuals);
      relative, not to ``max(1, |primal|)``: an optimum of 4e-6 (``X`` scaled by 1e6) stopped 17 %
      above by the solver's absolute tolerances is a gap of 0.15, not 7e-7.

    ``max_violation`` is the dual residual of the columns alone (the features' pricing test);
    ``balance`` and ``box`` its parts from ``sum_i pi_i y_i`` and from ``pi`` outside ``[0, C]``.
    """
    X, y, C, a = _check(X, y, C, weights)
    w = np.asarray(coef, dtype=float).ravel()
    xi = np.asarray(slack, dtype=float).ravel()
    pi = np.asarray(duals, dtype=float).ravel()
    m, n = X.shape
    for name, v, size in (("coef", w, n), ("slack", xi, m), ("duals", pi, m)):
        if v.shape != (size,):
            raise DataError(f"hinge_certificate: {name} has {v.size} entries for {size}")
    xw = X @ w
    margin = y * (xw + intercept)
    scale = np.maximum.reduce([np.ones_like(margin), np.abs(xw), np.full_like(margin, abs(intercept)), np.abs(xi)])
    primal_res = float(max(np.max((1.0 - margin - xi) / scale, initial=0.0), np.max(-xi, initial=0.0)))
    g = X.T @ (pi * y)
    g = np.asarray(g).ravel()
    finite = np.isfinite(a)
    col_scale = np.maximum(np.where(finite, a, 0.0), np.abs(g))
    zero = np.flatnonzero(finite & (a == 0))
    if zero.size:  # an unpenalised feature needs g_j = 0: judged against the size of g_j's terms
        col_scale[zero] = np.abs(_block(X, np.arange(X.shape[0]), zero)).T @ np.abs(pi)
    col_viol = np.where(finite & (col_scale > 0), (np.abs(g) - np.where(finite, a, 0.0)) / np.where(col_scale > 0, col_scale, 1.0), 0.0)
    max_violation = float(max(np.max(col_viol, initial=0.0), 0.0))
    psum = float(np.sum(np.abs(pi)))
    balance = abs(float(pi @ y)) / psum if psum > 0 else 0.0
    box = float(max(np.max(-pi, initial=0.0), np.max(pi - C, initial=0.0))) / C
    dual_res = max(max_violation, balance, box)
    support = w != 0
    if (~finite & support).any():
        raise DataError("hinge_certificate: a feature with an infinite weight is non-zero")
    primal = float(np.sum(a[support] * np.abs(w[support])) + C * np.sum(xi))
    dual = float(np.sum(pi))
    return {"gap": (primal - dual) / max(abs(primal), abs(dual), 1e-300), "primal_residual": primal_res,
            "dual_residual": float(dual_res), "max_violation": max_violation, "balance": balance, "box": box,
            "primal_objective": primal, "dual_objective": dual}


class _LiveLP:
    """The restricted LP in HiGHS: rows are samples (``rows``, in LP order), columns are ``b``,
    one ``xi_i`` per LP row and ``u_j``, ``v_j`` per feature (``feats``, in LP order, after them)."""

    def __init__(self, X, y, C, a, solver, options):
        import highspy

        self.highspy = highspy
        self.X, self.y, self.C, self.a = X, y, C, a
        # costs in units of C below COST_SCALE_BELOW: HiGHS's absolute dual feasibility tolerance
        # (1e-7) then bounds the multipliers' distance outside [0, C] relative to C, as the
        # certificate judges it (at C = 1e-9 the unscaled duals sit 1e-9 = C above the box)
        self.scale = 1.0 / C if C < COST_SCALE_BELOW else 1.0
        self.h = _new_highs(False)  # no banner on standard output (a command's JSON may go there)
        self.h.setOptionValue("solver", solver)
        self.threads = (options or {}).get("threads")
        for key, val in (options or {}).items():
            if self.h.setOptionValue(key, val) == highspy.HighsStatus.kError:
                raise InvalidOptionError(f"solve_l1_hinge: HiGHS refused the option {key}={val!r}")
        # column codes: -1 is b, -(2 + i) the slack xi_i, 2j / 2j + 1 the u_j / v_j of feature j
        self.codes = np.array([-1], dtype=np.int64)
        self.rows = np.zeros(0, dtype=np.int64)
        self.feats = np.zeros(0, dtype=np.int64)
        self._ok(self.h.addCols(1, np.zeros(1), np.array([-np.inf]), np.array([np.inf]), 0,
                                np.zeros(1, np.int32), np.zeros(0, np.int32), np.zeros(0)), "addCols")

    def _ok(self, status, what):
        if status == self.highspy.HighsStatus.kError:
            raise SolverFailedError(f"solve_l1_hinge: HiGHS {what} failed")

    def add_features(self, J):
        if J.size == 0:
            return
        B = _block(self.X, self.rows, J) * self.y[self.rows, None]  # |rows| x |J|
        M = sp.csc_matrix(np.concatenate([B, -B], axis=1))
        M.eliminate_zeros()
        k = 2 * J.size
        cost = np.concatenate([self.a[J], self.a[J]]) * self.scale
        self._ok(self.h.addCols(k, cost, np.zeros(k), np.full(k, np.inf), M.nnz, M.indptr.astype(np.int32),
                                M.indices.astype(np.int32), M.data), "addCols")
        self.codes = np.concatenate([self.codes, 2 * J, 2 * J + 1])
        self.feats = np.concatenate([self.feats, J])

    def add_samples(self, I):
        if I.size == 0:
            return
        k = I.size
        self._ok(self.h.addCols(k, np.full(k, self.C * self.scale), np.zeros(k), np.full(k, np.inf), 0,
                                np.zeros(k, np.int32), np.zeros(0, np.int32), np.zeros(0)), "addCols")
        xi_pos = self.codes.size + np.arange(k)
        self.codes = np.concatenate([self.codes, -(2 + I)])
        pos = self.positions()
        yi = self.y[I]
        parts = [yi[:, None], np.ones((k, 1))]
        cols = [np.full((k, 1), pos["b"]), xi_pos[:, None]]
        if self.feats.size:
            B = _block(self.X, I, self.feats) * yi[:, None]
            parts += [B, -B]
            cols += [np.broadcast_to(pos["u"], B.shape), np.broadcast_to(pos["v"], B.shape)]
        vals = np.concatenate(parts, axis=1)
        idx = np.concatenate(cols, axis=1)
        M = sp.csr_matrix((vals.ravel(), idx.ravel(), np.arange(0, vals.size + 1, vals.shape[1])),
                          shape=(k, self.codes.size))
        M.eliminate_zeros()
        self._ok(self.h.addRows(k, np.ones(k), np.full(k, np.inf), M.nnz, M.indptr.astype(np.int32),
                                M.indices.astype(np.int32), M.data), "addRows")
        self.rows = np.concatenate([self.rows, I])

    def drop_samples(self, I):
        """Remove the margin rows of samples ``I`` and their slack columns (both at rest when the
        sample is inside the margin: basic row activity, non-basic ``xi_i = 0``)."""
        if I.size == 0:
            return
        where = np.flatnonzero(np.isin(self.rows, I))
        cols = np.flatnonzero(np.isin(self.codes, -(2 + I)))
        self._ok(self.h.deleteRows(where.size, where.astype(np.int32)), "deleteRows")
        self._ok(self.h.deleteCols(cols.size, cols.astype(np.int32)), "deleteCols")
        self.rows = np.delete(self.rows, where)
        self.codes = np.delete(self.codes, cols)

    def drop_features(self, J):
        """Remove the columns ``u_j``, ``v_j`` of features ``J`` (at zero, non-basic)."""
        if J.size == 0:
            return
        cols = np.flatnonzero(np.isin(self.codes, np.concatenate([2 * J, 2 * J + 1])))
        self._ok(self.h.deleteCols(cols.size, cols.astype(np.int32)), "deleteCols")
        self.codes = np.delete(self.codes, cols)
        self.feats = self.feats[~np.isin(self.feats, J)]

    def positions(self) -> dict:
        c = self.codes
        nonneg = c >= 0
        u = np.flatnonzero(nonneg & (c % 2 == 0))
        v = np.flatnonzero(nonneg & (c % 2 == 1))
        return {"b": int(np.flatnonzero(c == -1)[0]), "u": u, "v": v}

    def solve(self):
        ran = self.h.run()
        status = self.h.getModelStatus()
        refuse_thread_count(ran, status, self.threads, "solve_l1_hinge: HiGHS did not run the LP with highs_options")
        if status != self.highspy.HighsModelStatus.kOptimal:
            raise SolverFailedError(f"solve_l1_hinge: the restricted LP ({self.rows.size} samples, "
                                    f"{self.feats.size} features) ended {self.h.modelStatusToString(status)}")
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value, dtype=float)
        pi_rows = np.asarray(sol.row_dual, dtype=float)
        m, n = self.X.shape
        w = np.zeros(n)
        c = self.codes
        u = np.flatnonzero((c >= 0) & (c % 2 == 0))
        v = np.flatnonzero((c >= 0) & (c % 2 == 1))
        w[c[u] // 2] += x[u]
        w[c[v] // 2] -= x[v]
        b = float(x[c == -1][0])
        xi = np.zeros(m)
        s = np.flatnonzero(c <= -2)
        xi[-c[s] - 2] = x[s]
        pi = np.zeros(m)
        pi[self.rows] = pi_rows / self.scale
        info = self.h.getInfo()
        return w, b, xi, pi, int(info.simplex_iteration_count), int(info.ipm_iteration_count)


GUESS_FROM = 40_000
"""``guess="auto"`` takes the first-order guess (:func:`_prox_guess`) from ``m * n`` entries of ``X``
on; below it the correlation start. Measured: a tie at 60 x 300, the guess 0.69x the CPU at
100 x 400 and 0.3x at 1 000 x 10 000, 2.4x at 30 x 60 (docs/performance.md, "A cheap guess
for the first LP")."""
_GUESS_NAMES = ("auto", "correlation", "prox", "svc", "subsample")


def _guess_how(guess, m: int, n: int) -> str:
    if guess is None:
        return "correlation"
    if isinstance(guess, str):
        if guess not in _GUESS_NAMES:
            raise InvalidOptionError(f"solve_l1_hinge: guess must be one of {_GUESS_NAMES}, None or a pair "
                                     f"(features, samples), got {guess!r}")
        if guess == "auto":
            return "prox" if m * n >= GUESS_FROM else "correlation"
        return guess
    return "given"


def _given_guess(guess, m: int, n: int):
    """``guess = (features, samples)``: integer indices (or boolean masks) into ``X``'s columns and rows."""
    if not isinstance(guess, (tuple, list)) or len(guess) != 2:
        raise InvalidOptionError("solve_l1_hinge: guess must be a name, None or a pair (features, samples) "
                                 f"given as a tuple or list, got {type(guess).__name__}")
    feats, rows = guess
    out = []
    for name, idx, size in (("features", feats, n), ("samples", rows, m)):
        if isinstance(idx, (str, bytes)):
            raise InvalidOptionError(f"solve_l1_hinge: guess's {name} must be integer indices or a boolean mask")
        arr = np.asarray(idx)
        if arr.ndim != 1:
            raise InvalidOptionError(f"solve_l1_hinge: guess's {name} must be 1-D (integer indices or a boolean "
                                     f"mask), got {arr.ndim}-D")
        if arr.dtype == bool:
            if arr.size != size:
                raise InvalidOptionError(f"solve_l1_hinge: guess's {name} mask has {arr.size} entries for {size}")
            arr = np.flatnonzero(arr)
        elif arr.size == 0:
            arr = np.zeros(0, dtype=np.int64)
        elif not np.issubdtype(arr.dtype, np.integer):
            raise InvalidOptionError(f"solve_l1_hinge: guess's {name} must be integer indices or a boolean mask")
        elif arr.size == size and np.isin(arr, (0, 1)).all() and np.unique(arr).size < size:
            # a 0/1 vector as long as the axis is a mask written in integers, not indices {0, 1}
            raise InvalidOptionError(f"solve_l1_hinge: guess's {name} is a 0/1 integer array of length {size}: "
                                     f"pass a boolean mask (dtype=bool) or the indices")
        if arr.size and (arr.min() < 0 or arr.max() >= size):
            raise InvalidOptionError(f"solve_l1_hinge: guess's {name} index outside 0..{size - 1}")
        out.append(np.unique(arr.astype(np.int64)))
    return out[0], out[1]


def _rows_near(margin, m: int, row_drop):
    """The samples a guess puts in the first LP: those with margin below ``1 + row_drop`` (every
    sample when rows are never dropped)."""
    if row_drop is None:
        return np.arange(m)
    return np.flatnonzero(margin < 1.0 + row_drop)


def _prox_guess(X, y, C, a, priced, row_drop, iters: int = 300, mu: float = 1.0, **_lp_options):
    """Accelerated proximal gradient (FISTA) on the LP's objective with the hinge smoothed over a
    width ``mu`` (Huber): ``iters`` iterations of two products with ``X``; its non-zeros and the
    samples near its margin start the LP. Only a guess: the generation decides."""
    with _one_blas_thread():  # OpenBLAS's threads on these products: 5-8x the CPU on a busy machine
        return _prox_guess_run(X, y, C, a, priced, row_drop, iters, mu)


def _prox_guess_run(X, y, C, a, priced, row_drop, iters, mu):
    m, n = X.shape
    pen = np.where(priced, a, np.inf)
    pen[np.isfinite(a) & (a == 0)] = 0.0
    # ||X||_2^2 by power iteration from a fixed-seed random start: ones / sqrt(n) is orthogonal to
    # every row of X = [X0, -X0], and with the columns paired (x0, -x0, x1, -x1, ...) X v was exactly
    # 0, s = 0 and the step ~1000x too large (the guess took 210 of 300 features)
    v = np.random.default_rng(0).standard_normal(n)
    v /= np.linalg.norm(v)
    s = 0.0
    for _ in range(15):
        v = np.asarray(X.T @ np.asarray(X @ v).ravel()).ravel()
        s = float(np.linalg.norm(v))
        if s == 0.0:
            break
        v /= s
    if s == 0.0:  # X v = 0 from this start too: the Frobenius bound ||X||_F^2 >= ||X||_2^2
        s = float(X.multiply(X).sum()) if sp.issparse(X) else float(np.sum(X * X))
    step = mu / (C * (1.1 * s + m))
    w = np.zeros(n)
    b = 0.0
    zw, zb, tk = w, b, 1.0
    thr = step * pen
    for _ in range(iters):
        h = np.clip((1.0 - y * (np.asarray(X @ zw).ravel() + zb)) / mu, 0.0, 1.0) * y
        wn = zw + step * C * np.asarray(X.T @ h).ravel()
        bn = zb + step * C * float(h.sum())
        wn = np.sign(wn) * np.maximum(np.abs(wn) - thr, 0.0)
        tn = (1.0 + np.sqrt(1.0 + 4.0 * tk * tk)) / 2.0
        zw = wn + ((tk - 1.0) / tn) * (wn - w)
        zb = bn + ((tk - 1.0) / tn) * (bn - b)
        w, b, tk = wn, bn, tn
    margin = y * (np.asarray(X @ w).ravel() + b)
    return np.flatnonzero(w), _rows_near(margin, m, row_drop)


def _svc_guess(X, y, C, a, priced, row_drop, **_lp_options):
    """scikit-learn's ``LinearSVC(penalty="l1", loss="squared_hinge", dual=False)`` at the matching
    ``C`` (the squared hinge, not the LP's: only a guess)."""
    import warnings as _w

    from sklearn.svm import LinearSVC

    m, n = X.shape
    cols = np.flatnonzero(priced)
    if cols.size == 0:
        return cols, np.arange(m)
    pa = a[cols]
    uniform = cols.size == n and np.all(pa == pa[0])
    if uniform:
        Z = X
    elif sp.issparse(X):  # sparse stays sparse: its columns scaled (a densified X was 390 MB at 500 x 40 000)
        Z = X[:, cols] @ sp.diags(1.0 / pa)
    else:
        Z = _block(X, np.arange(m), cols) / pa
    with _w.catch_warnings():
        _w.simplefilter("ignore")
        svc = LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=C / (pa[0] if uniform else 1.0),
                        tol=1e-2, max_iter=200, random_state=0).fit(Z, y)
    coef = np.zeros(n)
    coef[cols] = svc.coef_.ravel() if uniform else svc.coef_.ravel() / pa  # Z's columns are X's / a_j
    margin = y * (np.asarray(X @ coef).ravel() + float(svc.intercept_[0]))
    return np.flatnonzero(coef), _rows_near(margin, m, row_drop)


def _subsample_guess(X, y, C, a, priced, row_drop, fraction: float = 0.2, *, solver="simplex",
                     highs_options=None, col_drop=0.5):
    """The LP itself (by generation, with the caller's ``solver``, ``highs_options``, ``row_drop``
    and ``col_drop``) on a fifth of the samples (every other class kept, a fixed seed), ``C``
    scaled by ``m / m_sub``: its support and the samples near its margin."""
    m, n = X.shape
    rng = np.random.default_rng(0)
    sub = np.sort(rng.permutation(m)[:max(2, int(fraction * m))])
    for cls in (-1.0, 1.0):
        if not (y[sub] == cls).any():
            sub = np.union1d(sub, np.flatnonzero(y == cls)[:1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverWarning)
        r = solve_l1_hinge(X[sub], y[sub], C * m / sub.size, np.where(np.isfinite(a), a, np.inf), guess=None,
                           solver=solver, highs_options=highs_options, row_drop=row_drop, col_drop=col_drop)
    margin = y * (np.asarray(X @ r.coef).ravel() + r.intercept)
    return np.flatnonzero(r.coef), _rows_near(margin, m, row_drop)


_GUESSES = {"prox": _prox_guess, "svc": _svc_guess, "subsample": _subsample_guess}


def solve_l1_hinge(X, y, C: float = 1.0, weights=None, *, initial: int | None = None, batch: int | None = None,
                   row_drop: float | None = 0.5, tol: float = 1e-9, max_rounds: int = 200,
                   col_drop: float | None = 0.5, solver: str = "simplex",
                   highs_options: dict | None = None, on_round=None,
                   cold_fraction: float | None = None, guess="auto") -> HingeLPResult:
    """Solve ``min sum_j a_j |w_j| + C sum_i (1 - y_i (x_i . w + b))_+`` (``a = weights``, default
    1: the L1-SVM) by column and row generation from ``X`` (module docstring).

    Parameters
    ----------
    X : (m, n) float array or SciPy sparse matrix
        Read in place: a float64 ``X`` is never copied (blocks of the LP's rows and columns are).
    y : (m,) labels in {-1, +1}, both present.
    C : float > 0
    weights : (n,) array of ``a_j >= 0``, optional
        ``inf`` fixes a feature at zero; features of weight 0 start in the LP.
    initial : int, optional
        Features in the first LP of the correlation start (``guess=None``, or ``"auto"`` below
        :data:`GUESS_FROM`): those with the largest ``|X'y| / a_j`` (default ``max(100, m // 2)``).
    batch : int, optional
        The most violating features (largest ``|g_j| / a_j``) added per round (default
        ``max(100, half the LP's features)``); every violating sample is added.
    row_drop : float or None
        A sample in the LP with margin above ``1 + row_drop`` and multiplier 0 leaves it (at most
        once per solve); ``None`` keeps every sample (columns only).
    col_drop : float in [0, 1) or None
        A feature in the LP at zero with ``|g_j| < (1 - col_drop) a_j`` (far from entering) leaves
        it (at most once per solve; its columns are non-basic, so the basis stays valid); ``None``
        keeps every feature that entered. The default 0.5 measured 0.80x the CPU of ``None`` at
        1 000 x 10 000 (docs/performance.md).
    tol : float >= 0
        Relative pricing tolerance: a feature violates when ``|g_j| > a_j (1 + tol)``, a sample
        when its margin is below ``1 - tol max(1, |x_i . w|, |b|)``.
    max_rounds : int
        Restricted solves before :class:`~fsframe.errors.SolverFailedError` (never a silent
        partial answer).
    solver : ``"simplex"`` (default; each round warm from the last basis), ``"ipm"`` or ``"pdlp"``
        HiGHS's method for the restricted LPs.
    highs_options : dict, optional
        Further HiGHS options (e.g. ``{"threads": 1}``).
    on_round : callable, optional
        Called with each round's dict (``HingeLPResult.rounds``) as soon as the round is priced:
        progress of a long solve.
    cold_fraction : float > 0 or None
        A round whose appended features reach this fraction of the LP's features, or whose
        appended samples reach it of the LP's samples, is solved cold (HiGHS's basis dropped,
        presolve on: ``cold`` in that round's dict); ``None`` (default) keeps every round warm
        from the last basis (docs/performance.md, "Column and row generation from X").
    guess : ``"auto"`` (default), ``None``, ``"prox"``, ``"svc"``, ``"subsample"`` or a pair ``(features, samples)``
        What the first LP holds. ``None``: the correlation start (``initial`` features, every
        sample). ``"prox"``: the non-zeros of 300 accelerated proximal gradient steps on the LP's
        objective with the hinge smoothed, and the samples with margin below ``1 + row_drop``
        under those weights (every sample when ``row_drop`` is ``None``). ``"svc"``: the same from
        scikit-learn's ``LinearSVC`` on the squared hinge; ``"subsample"``: from this LP on a fifth
        of the samples. ``"auto"``: ``"prox"`` from :data:`GUESS_FROM` entries of ``X`` on, the
        correlation start below (docs/performance.md, "A cheap guess for the first LP"). A pair
        gives the features and samples as a tuple or list of two 1-D parts, each integer indices
        or a boolean mask (a 0/1 integer array as long as the axis is refused: pass it as
        ``dtype=bool``). Every guess leaves out features of infinite weight; features of weight 0
        start in the LP whatever the guess. Only the start: pricing adds what a guess missed, so
        whenever the certificate passes, any guess ends at the same optimum value (on badly scaled
        data, e.g. ``X * 1e8``, a guess may end elsewhere, with a ``SolverWarning``); among tied
        optima (e.g. duplicate columns) the support depends on the start. ``"subsample"`` solves
        its LP with this call's ``solver``, ``highs_options``, ``row_drop`` and ``col_drop``.
        Each round's dict records ``guess``: ``how``, the guessed ``features`` (those of finite
        positive weight, before the weight-0 ones are added) and ``samples``, its CPU ``seconds``
        and ``hits`` (the guessed features non-zero after that round).

    Returns
    -------
    HingeLPResult
        Certified on the full LP (:func:`hinge_certificate`); a gap or residual above
        :data:`CERTIFY_TOL` is a :class:`~fsframe.errors.SolverWarning` and ``status``
        ``"optimal_inaccurate"``.
    """
    X, y, C, a = _check(X, y, C, weights)
    if solver not in _SOLVERS:
        raise InvalidOptionError(f"solve_l1_hinge: solver must be one of {_SOLVERS}, got {solver!r}")
    if not (np.isfinite(_number("tol", tol)) and tol >= 0):
        raise InvalidOptionError(f"solve_l1_hinge: tol must be a finite number >= 0, got {tol!r}")
    if row_drop is not None and not (np.isfinite(_number("row_drop", row_drop)) and row_drop >= 0):
        raise InvalidOptionError(f"solve_l1_hinge: row_drop must be >= 0 or None, got {row_drop!r}")
    if col_drop is not None and not (np.isfinite(_number("col_drop", col_drop)) and 0 <= col_drop < 1):
        raise InvalidOptionError(f"solve_l1_hinge: col_drop must be in [0, 1) or None, got {col_drop!r}")
    if cold_fraction is not None and not (np.isfinite(_number("cold_fraction", cold_fraction)) and cold_fraction > 0):
        raise InvalidOptionError(f"solve_l1_hinge: cold_fraction must be a number > 0 or None, got {cold_fraction!r}")
    for name, val, optional in (("initial", initial, True), ("batch", batch, True), ("max_rounds", max_rounds, False)):
        if (val is not None or not optional) and (isinstance(val, bool) or not isinstance(val, (int, np.integer))
                                                  or val < 1):
            raise InvalidOptionError(f"solve_l1_hinge: {name} must be an integer >= 1, got {val!r}")
    m, n = X.shape
    finite = np.isfinite(a)
    free = np.flatnonzero(finite & (a == 0))
    priced = finite & (a > 0)
    how = _guess_how(guess, m, n)
    g0 = time.process_time()
    if how == "correlation":
        k0 = max(100, m // 2) if initial is None else int(initial)
        score = np.abs(np.asarray(X.T @ y).ravel())
        score = np.where(priced, score / np.where(priced, a, 1.0), -np.inf)
        first = np.argsort(-score, kind="stable")[:min(k0, int(priced.sum()))]
        first_rows = np.arange(m)
    elif how == "given":
        first, first_rows = _given_guess(guess, m, n)
    else:
        first, first_rows = _GUESSES[how](X, y, C, a, priced, row_drop, solver=solver,
                                          highs_options=highs_options, col_drop=col_drop)
    # every guess in one place: a feature fixed at zero (weight inf) never enters, and the record
    # counts the guessed features, not the unpenalised ones every start adds
    first = first[priced[first]]
    guessed = np.zeros(n, dtype=bool)
    guessed[first] = True
    guess_info = {"how": how, "features": int(first.size), "samples": int(first_rows.size),
                  "seconds": time.process_time() - g0}

    first = np.union1d(first, free)
    lp = _LiveLP(X, y, C, a, solver, highs_options)
    lp.add_samples(np.sort(first_rows))
    lp.add_features(first)
    dropped_once = np.zeros(m, dtype=bool)
    dropped_feat = np.zeros(n, dtype=bool)
    rounds = []
    cold = False
    for _ in range(max_rounds):
        t0 = time.process_time()
        if cold:
            lp.h.clearSolver()  # the model stays; its basis goes, presolve runs again
        warm = bool(lp.h.getBasis().valid)  # HiGHS keeps it across addCols/addRows/deleteRows/deleteCols
        w, b, xi, pi, it_s, it_i = lp.solve()
        t1 = time.process_time()
        # rows: margins of every sample (one product X w)
        xw = np.asarray(X @ w).ravel()
        margin = y * (xw + b)
        out_rows = np.ones(m, dtype=bool)
        out_rows[lp.rows] = False
        row_scale = np.maximum(1.0, np.maximum(np.abs(xw), abs(b)))
        add_rows = np.flatnonzero(out_rows & (margin < 1.0 - tol * row_scale))
        # columns: g = X'(pi * y), pi = 0 off the LP
        g = np.asarray(X.T @ (pi * y)).ravel()
        out_cols = priced.copy()
        out_cols[lp.feats] = False
        ratio = np.zeros(n)
        ratio[out_cols] = np.abs(g[out_cols]) / a[out_cols]
        viol = np.flatnonzero(out_cols & (ratio > 1.0 + tol))
        t2 = time.process_time()
        info = {"features": int(lp.feats.size), "samples": int(lp.rows.size), "lp_seconds": t1 - t0,
                "pricing_seconds": t2 - t1, "simplex_iterations": it_s, "ipm_iterations": it_i,
                "added_features": 0, "added_samples": int(add_rows.size),
                "returned_samples": int(dropped_once[add_rows].sum()), "dropped_samples": 0,
                "returned_features": 0, "dropped_features": 0, "cold": cold, "warm": warm,
                "guess": dict(guess_info, hits=int(np.count_nonzero(w[guessed])))}
        if viol.size == 0 and add_rows.size == 0:
            rounds.append(info)
            if on_round is not None:
                on_round(dict(info))
            break
        k = max(100, lp.feats.size // 2) if batch is None else int(batch)
        take = viol[np.argsort(-ratio[viol], kind="stable")[:k]]
        info["added_features"] = int(take.size)
        info["returned_features"] = int(dropped_feat[take].sum())
        drop = np.zeros(0, dtype=np.int64)
        if row_drop is not None:
            inside = np.zeros(m, dtype=bool)
            inside[lp.rows] = True
            drop = np.flatnonzero(inside & ~dropped_once & (margin > 1.0 + row_drop) & (pi == 0.0))
            dropped_once[drop] = True
        info["dropped_samples"] = int(drop.size)
        if col_drop is not None:
            inlp = np.zeros(n, dtype=bool)
            inlp[lp.feats] = True
            fdrop = np.flatnonzero(inlp & priced & ~dropped_feat & (w == 0.0) & (np.abs(g) < (1.0 - col_drop) * a))
            dropped_feat[fdrop] = True
            lp.drop_features(fdrop)
            info["dropped_features"] = int(fdrop.size)
        lp.drop_samples(drop)
        cold = cold_fraction is not None and (take.size >= cold_fraction * max(1, lp.feats.size)
                                              or add_rows.size >= cold_fraction * max(1, lp.rows.size))
        lp.add_samples(add_rows)
        lp.add_features(np.sort(take))
        info["update_seconds"] = time.process_time() - t2
        rounds.append(info)
        if on_round is not None:
            on_round(dict(info))
    else:
        raise SolverFailedError(f"solve_l1_hinge: {max_rounds} rounds without an optimum of the full LP "
                                f"({lp.feats.size} features, {lp.rows.size} samples in the last LP)")
    # the slacks: the LP's, raised to the hinge the returned (w, b) attain (the last round's X w).
    # A sample outside the LP has margin >= 1 - tol, not >= 1: at C = 1e3 its (1 - margin)_+
    # left out was 3.4e-7 of the objective; objective and slack are now what (coef, intercept) attain
    xi = np.maximum(xi, np.maximum(1.0 - margin, 0.0))
    cert = hinge_certificate(X, y, C, a, w, b, xi, pi)
    worst = max(abs(cert["gap"]), cert["primal_residual"], cert["dual_residual"])
    cert["status"] = "optimal" if worst <= CERTIFY_TOL else "optimal_inaccurate"
    if worst > CERTIFY_TOL:
        warnings.warn(f"solve_l1_hinge: the answer is certified only to {worst:.1e} (gap {cert['gap']:.1e}, "
                      f"primal residual {cert['primal_residual']:.1e}, dual residual {cert['dual_residual']:.1e})",
                      SolverWarning, stacklevel=2)
    return HingeLPResult(coef=w, intercept=b, slack=xi, duals=pi, objective=cert["primal_objective"],
                         certificate=cert, features=np.sort(lp.feats), samples=np.sort(lp.rows),
                         rounds=tuple(rounds))
