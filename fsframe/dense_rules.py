"""Which start and which solver a step of the dense EM path's hinge dual takes: the rules
:class:`fsframe.dense_em.DenseHingeSubproblem` reads before its attempts, and their constants.

The dual (``F = diag(y) X_live diag(1 / sqrt(2 q_live))``, ``m`` samples by ``q`` live columns;
:mod:`fsframe.dense_em`'s docstring) is tried, in this order, by the matrix-free active set where
:func:`pdas_applies` and :func:`nearly_diagonal`, from LIBSVM's SMO where :func:`svm_start_applies`,
by the compiled warm pivots (from a crash of the previous multipliers where
:func:`warm_crash_applies`), from SMO again where that failed and :func:`svm_start_fallback`, then
warm, warm on the dual scaled by :func:`warm_scale`, cold (from a crash where :func:`crash_applies`,
started from :func:`cold_crash_from`'s point where it gives one) and cold scaled (docs/backends.md,
"The EM subproblem on arrays"). Each rule reads only the dual's shape, the warm multipliers, ``F``,
the labels (:func:`cold_crash_from`) or the number of ``X``'s columns;
none solves anything. The subproblem reads the functions from
its own module's names (a test or benchmark that replaces a rule patches it on
:mod:`fsframe.dense_em`); a constant is read here, where the rules read it, and
:data:`WARM_CRASH_SWEEPS` and :data:`COLD_CRASH_SWEEPS` are read here by the subproblem's crashes at each
call: patch constants on this module.
"""

from __future__ import annotations

import numpy as np

from .backends.box_qp import FREE_TOL
from .backends.box_qp_jit import START_TOL
from .backends.diag_qp import CRASH_MAX_ROWS, CRASH_MIN_RATIO


def crash_applies(shape) -> bool:
    """Whether a cold dual with a factor ``F`` of ``shape`` ``(m, q)`` starts from a crash: the
    compiled path's dense form's rule (``q >= CRASH_MIN_RATIO * m`` and ``m <= CRASH_MAX_ROWS``), or
    ``q >= m`` at any ``m``. The crash forms ``F F'`` (``O(m^2 q)``), which capped it at
    :data:`~fsframe.backends.diag_qp.CRASH_MAX_ROWS` rows; a square or wider ``F`` (the kernel
    map's duals while EM still holds most samples) has free sets of up to ``m`` multipliers, whose
    cold pivots each factorise a KKT system of that size: at 2 000 samples of Twonorm, RBF width
    0.5, ``C = 0.1``, one fit took 231 s of CPU and 4 924 pivots cold, 3.7 s and 5 pivots crashed
    (the same answer; docs/paper002-dual.md)."""
    m, q = shape
    return bool((CRASH_MIN_RATIO * m <= q and m <= CRASH_MAX_ROWS) or q >= m)


WARM_CRASH_SWEEPS = 1
"""Sweeps of the crash (``box_qp_jit.crash``) from the previous step's multipliers before a warm
step's pivots, where :func:`warm_crash_applies`. On the first warm EM duals of the competitors
table's 10 Sonar splits (166 x 60, r = 5; CPU per solve, median over splits, one BLAS thread): the
first warm step 0.63 ms and 65-99 pivots without it, 0.26 / 0.24 / 0.33 ms and 4-16 / 1-6 / 1-2
pivots after 1 / 2 / 4 sweeps; the second 0.32 -> 0.18 / 0.22 / 0.25 ms; the third (52-58 live
columns) 0.20 -> 0.17 / 0.18 / 0.18 ms: one sweep."""


COLD_CRASH_SWEEPS = 5
"""Sweeps of the crash on a cold dual where :func:`cold_crash_from` gives its start (instead of the
compiled path's :data:`~fsframe.backends.diag_qp.CRASH_SWEEPS`, 8, from zero). On EM's first dual of
the competitors table's 10 Sonar splits (quad = 1, ``C = 1``; CPU per cold solve, median over
splits, alternately in one process, one BLAS thread; ``benchmarks/bench_em_cold_start.py``): 3 / 4 /
5 / 6 / 8 sweeps 0.77 / 0.72 / 0.72 / 0.75 / 0.82 ms, from zero with 8 sweeps 0.93 ms; on five
120 x 40 generated duals (columns on scales 1e-2 ... 1e2) 4-6 sweeps alike, 6 sweeps 100-111 pivots
on one of them: 5."""


def cold_crash_from(y, C: float, shape, n_columns: int):
    """The point a cold dual's crash starts from, or ``None`` (the crash from zero, as the compiled path's
    dense form does): on a factor ``F`` of ``shape`` ``(m, q)`` where :func:`warm_crash_applies` (at least
    ``CRASH_MIN_RATIO`` live columns per sample, ``X`` with fewer columns than rows; ``y`` the labels in
    ``{-1, +1}``, both present), the multipliers constant per class, the smaller class at ``C`` and the
    larger at ``C`` times the ratio of the classes' sizes (``y' lam = 0``, every multiplier in the box),
    with :data:`COLD_CRASH_SWEEPS` sweeps.

    From zero the crash's pairs raise the multipliers that end off zero a pair at a time; from this
    point they lower the many that end at zero, and fewer sweeps leave a start as good. On EM's first
    dual of the competitors table's 10 Sonar splits (166 x 60, quad = 1, ``C = 1``; CPU per solve,
    median over splits, one BLAS thread; ``benchmarks/bench_em_cold_start.py``): from zero 8 sweeps
    0.44 ms and 1-13 pivots after them (0.16 ms); from this point 5 sweeps 0.27 ms and 2-15 pivots
    (0.16 ms); the whole cold solve 0.93 -> 0.72 ms. On splits 0-4 at ``C = 0.1`` alike (0.29-0.40 ms
    against 0.36-0.38), at ``C = 10`` and ``100`` 0.80-1.44 ms against 1.6-2.5 ms. On 120 x 40 duals
    of generated columns on scales 1e-2 ... 1e2 the crash from zero left more free multipliers than
    the Hessian can hold on 7 of 10 seeds and was discarded for the cold pivots; from this point it
    was taken on 3 of those 7. The first duals of five such ``em-l0`` fits: 0.81-0.90 ms (63-66
    pivots from zero) -> 0.63-0.87 ms. Kernel maps (one column per sample) keep the crash from zero:
    not measured from here.

    The point is exact to ``solve_box_qp``'s check of a start (``|y' lam| <= START_TOL``, absolute):
    the rounding of the larger class's sum is taken up by one of its entries; where that cannot be
    (an entry would leave its box), ``None``, the crash from zero with the plain rule's sweeps."""
    if not warm_crash_applies(shape, n_columns):
        return None
    pos = y > 0
    n_pos = int(np.count_nonzero(pos))
    n_neg = y.size - n_pos
    small, large = min(n_pos, n_neg), max(n_pos, n_neg)
    if not small:
        return None
    larger = ~pos if n_pos == small else pos
    lam = np.full(y.size, C * (small / large))
    lam[~larger] = C
    # C * small / large summed over the larger class leaves a rounding of ~C eps sqrt(m) in y' lam,
    # over solve_box_qp's START_TOL (absolute, e = 0) from C ~ 1e6 at m = 166: one entry of the
    # larger class takes it (staying in its box); read as solve_box_qp reads the equality (E lam)
    j = int(np.flatnonzero(larger)[0])
    lam[j] = min(C, max(0.0, lam[j] - y[j] * float((y[None, :] @ lam)[0])))
    if abs(float((y[None, :] @ lam)[0])) > START_TOL:  # the crash_from solve_box_qp would ignore: the plain rule
        return None
    return lam


def warm_crash_applies(shape, n_columns: int) -> bool:
    """Whether a warm step on a factor ``F`` of ``shape`` ``(m, q)`` (``q`` of the ``n_columns``
    columns of ``X`` live) starts from a crash of the previous multipliers: the cold dual's rule for
    features (``q >= CRASH_MIN_RATIO * m``, ``m <= CRASH_MAX_ROWS``) on data with fewer columns than
    rows. EM's first reweighting moves many multipliers at once (the previous step's free set of up
    to ``q + 1`` is mostly wrong for the new weights), and each pivot of such a free set factorises a
    KKT system of its size; later steps, with fewer live columns, are left as they were. ``X`` with
    as many columns as rows or more (a kernel map, one column per sample) is not crashed: on the
    linear kernel map of Sonar's first two splits (166 x 166, ``em-l0``, r = 5) its mid-run duals
    pass the ratio and the crash made the fit 8-10 % slower (the same answers)."""
    m, q = shape
    return bool(CRASH_MIN_RATIO * m <= q and n_columns < m and m <= CRASH_MAX_ROWS)


PDAS_MIN_ROWS = 1000
"""The fewest samples at which a wide dual is first tried by the matrix-free active set
(:func:`pdas_applies`)."""

PDAS_MIN_RATIO = 0.5
"""... and the fewest live columns per sample (``q >= PDAS_MIN_RATIO * m``)."""

PDAS_MIN_FREE = 0.1
"""... and, from a warm start, the fewest free multipliers (``0 < lam_i < C``) in it per sample: a
step that starts from a few dozen free multipliers (a wide RBF map, sigma = 4) is the active set's
(a few cheap pivots), where the matrix-free method's CG meets a nearly singular ``F_N F_N'`` and
gives up after :data:`~fsframe.backends.box_qp_pdas.CG_MAX_ITER` steps (0.4 s of 1.1 at 1 000
samples of Twonorm, sigma 4, ``C = 10``, before this rule)."""


def pdas_applies(shape, warm=None, C: float = 1.0) -> bool:
    """Whether a dual with a factor ``F`` of ``shape`` ``(m, q)`` is first solved by
    :func:`~fsframe.backends.box_qp_pdas.solve_box_qp_pdas`: at least :data:`PDAS_MIN_ROWS` samples,
    :data:`PDAS_MIN_RATIO` live columns per sample and, from a warm start ``warm`` (the previous
    step's multipliers, box ``[0, C]``), :data:`PDAS_MIN_FREE` free multipliers per sample — a kernel
    map's steps while EM holds most samples on the margin, whose free sets reach hundreds or
    thousands of multipliers (docs/paper002-dual.md). Its answer is judged by the same certificate;
    refused or failed, the step's other attempts follow."""
    m, q = shape
    if not (m >= PDAS_MIN_ROWS and q >= PDAS_MIN_RATIO * m):
        return False
    if warm is None:
        return True
    return _free_count(warm, C) >= PDAS_MIN_FREE * m


SVM_START_MIN_ROWS = 1000
"""The fewest samples at which a wide dual starts from LIBSVM's SMO (:func:`svm_start_applies`)."""

SVM_START_MAX_ROWS = 6000
"""The most samples at which a dual starts from LIBSVM's SMO: its start forms the ``m x m`` Gram
matrix (``m^2`` doubles: 288 MB at 6 000 samples, 3.2 GB at 20 000) beside the ``m x q`` factor. 6 000
is the largest kernel map the dense EM path takes by itself
(:data:`fsframe.dense_fit.DENSE_EM_WIDE_MAX_ROWS`), whose factor is as large as that Gram; a dense fit
asked for beyond it is not given a second array of that size."""


def svm_start_applies(shape, warm=None, C: float = 1.0) -> bool:
    """Whether a dual with a factor ``F`` of ``shape`` ``(m, q)`` starts from
    :func:`~fsframe.backends.svm_start.svm_start` rather than from the previous step's multipliers
    ``warm`` (box ``[0, C]``): from :data:`SVM_START_MIN_ROWS` to :data:`SVM_START_MAX_ROWS` samples, and either
    :data:`PDAS_MIN_RATIO` live columns per sample (a kernel map's steps while EM keeps most of its
    columns) or, warm, :data:`PDAS_MIN_FREE` free multipliers per sample. There the free sets reach
    hundreds or thousands of multipliers, which the pivots add one at a time (each a factorisation
    of the free set's size) and the matrix-free method's predictions can fail to find; SMO's pairs do
    not see the free set's size."""
    m, q = shape
    if not SVM_START_MIN_ROWS <= m <= SVM_START_MAX_ROWS:
        return False
    if q >= PDAS_MIN_RATIO * m:
        return True
    if warm is None:
        return False
    return _free_count(warm, C) >= PDAS_MIN_FREE * m


def svm_start_fallback(shape) -> bool:
    """Whether a dual with a factor ``F`` of ``shape`` ``(m, q)`` whose compiled warm attempt did not
    certify tries :func:`~fsframe.backends.svm_start.svm_start` before the remaining attempts (when
    :func:`svm_start_applies` did not already): from :data:`SVM_START_MIN_ROWS` to
    :data:`SVM_START_MAX_ROWS` samples, at any width. The step asks only where the fit has the compiled
    warm step (the subproblem's compiled flag, set once per fit): then also when that step handed the
    dual back to the general path uncertified. Without the compiled pivots (numba missing,
    ``FSFRAME_NO_JIT``) the step does not ask: its attempts are the general path's, warm first."""
    return bool(SVM_START_MIN_ROWS <= shape[0] <= SVM_START_MAX_ROWS)


def _free_count(lam, C: float) -> int:
    """The multipliers strictly inside the box ``[0, C]`` (by :data:`FREE_TOL`)."""
    return int(np.count_nonzero((lam > FREE_TOL * C) & (lam < (1.0 - FREE_TOL) * C)))


PDAS_COLD_OFFDIAG = 1.0
"""A cold dual (no warm start to judge by) is tried by the matrix-free method only when ``F F'`` is
this close to its diagonal (:func:`nearly_diagonal`)."""


def nearly_diagonal(F) -> bool:
    """Whether ``||(F F' - D) z|| <= PDAS_COLD_OFFDIAG ||D z||`` for ``D`` the diagonal of ``F F'``
    and one fixed Gaussian ``z`` (seed 0): two products with ``F``. On Twonorm's kernel maps (1 000
    samples, the first EM step) the ratio is 6e-5, 0.03, 10 and 35 at sigma 0.5, 1, 2 and 4: the
    matrix-free method's diagonally preconditioned CG converges in a few steps on the first two and
    gives up on the others, where the cold step is the active set's (the crash and a few dozen free
    multipliers: 8.8 s against 18.5 s for a whole fit at 3 947 samples, sigma 4, ``C = 10``).

    Warm steps are judged by it too: ``F F'`` of rank ``q < m`` (fewer live columns than samples, or
    duplicate samples) is far from its diagonal unless its rows' norms are very uneven (on its null
    space ``(F F' - D) z = -D z``, a ratio of 1), and there the free sets the method predicts are
    singular: a 2 000 x 1 200 linear ``em-l0`` fit took
    61.4 s of CPU with the matrix-free attempts (each "singular" or an iteration limit) against
    52.5 s without.

    A sample repeated with the other label (two opposite rows of ``F``, :func:`_repeated_rows`) is
    refused too: a few such pairs barely move the ratio, but the dual is then unbounded along the
    pair on any free set holding both, and the method's CG fails there. A sample repeated with its
    own label (two equal rows) is not: that singular system is consistent and the method solves it."""
    m = F.shape[0]
    z = np.random.default_rng(0).standard_normal(m)
    Fs = _unit_scaled(F)
    dz = np.einsum("ij,ij->i", Fs, Fs) * z
    off = Fs @ (Fs.T @ z) - dz
    return bool(np.linalg.norm(off) <= PDAS_COLD_OFFDIAG * np.linalg.norm(dz)) and not _repeated_rows(F)


def _unit_scaled(F):
    """``F`` itself, or scaled by a power of two (exactly) to a largest entry in ``[1, 2)`` when that
    entry lies outside ``[2**-400, 2**400]``: the ratio of :func:`nearly_diagonal` does not depend on
    ``F``'s scale, but at such scales its squares underflow (an ``F`` of entries ~1e-170 gave ``off``
    and ``D z`` both 0, and any ``F`` passed) or overflow. The copy only then."""
    largest = max(float(F.max(initial=0.0)), -float(F.min(initial=0.0)))
    if largest == 0.0 or not np.isfinite(largest) or 2.0**-400 <= largest <= 2.0**400:
        return F
    return np.ldexp(F, -np.frexp(largest)[1] + 1)


def _repeated_rows(F) -> bool:
    """Whether two rows of ``F = diag(y) K`` are opposite, ``F_j = -F_i``: a sample repeated with the
    other label (on a linear map also ``x_j = -x_i`` with one label, refused alike). An RBF map of
    such a pair passes the ratio of :func:`nearly_diagonal` (one pair moves it little), but with the
    hinge dual's ``f = -1`` and equality ``y' lam = 0`` the direction ``d = e_i + e_j`` keeps
    ``F' lam`` and ``y' lam`` and lowers ``f' lam``: a free set holding both has no solution, and the
    matrix-free method's predictions that free both fail (its attempt is then time lost before the
    active set). Equal rows (a sample repeated with its label) give ``d = e_i - e_j``, along which
    ``f' d = 0``: a consistent singular system, solved, so they are not refused.

    Exact, at the cost of one product with ``F``: the rows are placed by ``|F_i g|`` for one fixed
    Gaussian ``g``, and every run of values within the product's rounding bound of each other
    (``h = |F_i g|`` of two opposite rows differ by at most that bound, so any row placed between
    them joins their run) goes to :func:`_opposite_rows`, which compares rows exactly. A run holds
    one row except at such pairs, equal rows or ties of ``|F_i g|`` (a third row ``b`` with ``b g =
    a g`` beside ``a`` and ``-a``: comparing only neighbours missed that pair). The
    rows of ``F`` are finite."""
    m, n = F.shape
    if m < 2:
        return False
    g = np.random.default_rng(1).standard_normal(n)
    h = np.abs(F @ g)
    order = np.argsort(h, kind="stable")
    near = np.diff(h[order]) <= 2.0 * _product_rounding(F, g)
    in_run = np.zeros(m, dtype=bool)
    in_run[:-1] |= near
    in_run[1:] |= near
    return _opposite_rows(F, order[in_run])


def _product_rounding(F, g) -> float:
    """A bound on the rounding error of every entry of ``F @ g``, doubled: ``n eps sum_j |F_ij g_j|
    <= n eps max|F| ||g||_1`` for the sum's roundings, plus ``n`` times the smallest subnormal for the
    products that underflow (each at most half of it). From the largest entry, not the squared row
    norms: those underflow for rows of norm below ~1e-154, and a bound of 0 there kept opposite rows
    apart unless their products rounded alike."""
    n = F.shape[1]
    largest = max(float(F.max(initial=0.0)), -float(F.min(initial=0.0)))
    tiny = float(np.finfo(float).smallest_subnormal)
    return 2.0 * n * (np.finfo(float).eps * largest * float(np.abs(g).sum()) + tiny)


def _opposite_rows(F, rows=None) -> bool:
    """Whether two of the rows ``rows`` (indices; all when ``None``) of ``F`` are opposite, compared
    exactly: each row signed so that its first non-zero entry is positive (``+ 0.0`` turns ``-0.0``
    into ``0.0``), the signed rows sorted by their bytes, and a pair of equal signed rows of
    different signs found between neighbours (a run of equal signed rows holding both signs has such
    a neighbour pair). Two zero rows are opposite. For finite rows (a NaN leading two rows would
    call them opposite). One copy of the rows compared: 121 MB more for a 72 MB ``F`` of duplicate
    rows, where copies of the rows, the signed rows and the sorted keys took 216 MB."""
    # one copy, C-ordered for the rows' bytes (F[rows] is one already)
    G = np.array(F, dtype=float, order="C") if rows is None else np.ascontiguousarray(F[rows], dtype=float)
    m, n = G.shape
    if m < 2 or n == 0:  # rows of no entries: all zero
        return m >= 2
    sign = np.sign(G[np.arange(m), np.argmax(G != 0, axis=1)])
    if np.count_nonzero(sign == 0) >= 2:
        return True
    G *= np.where(sign == 0, 1.0, sign)[:, None]
    G += 0.0
    keys = G.view(np.dtype((np.void, G.itemsize * G.shape[1]))).ravel()
    order = np.argsort(keys, kind="stable")
    sign = sign[order]
    for i in range(0, m - 1, _COMPARED_ROWS):  # neighbours by blocks: the sorted keys not copied whole
        k = keys[order[i : i + _COMPARED_ROWS + 1]]
        if np.any((k[1:] == k[:-1]) & (sign[i + 1 : i + k.size] != sign[i : i + k.size - 1])):
            return True
    return False


_COMPARED_ROWS = 1024
"""Rows whose sorted keys :func:`_opposite_rows` compares at once."""


WARM_SCALE_RANGE = (1e-2, 1e2)
"""The warm start is tried again on a scaled dual (``warm_scale``) only when ``F``'s largest row norm
lies outside this range: on a unit scale the same pivots would fail the same way."""


def warm_scale(F) -> float | None:
    """The scale ``a`` of the warm start's second attempt: ``F``'s largest row norm (the square root of
    the largest diagonal entry of ``F F'``; ``a <= ||F||_2 <= sqrt(m) a``, without an SVD), or ``None``
    when that attempt is not worth making: ``a`` inside :data:`WARM_SCALE_RANGE`, zero or not finite."""
    a = float(np.sqrt(np.max(np.einsum("ij,ij->i", F, F), initial=0.0))) if F.size else 0.0
    lo, hi = WARM_SCALE_RANGE
    if not (np.isfinite(a) and a > 0) or lo <= a <= hi:
        return None
    return a
