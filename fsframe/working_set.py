"""Working sets with certified exclusion: solve a subproblem on a few feature groups, prove the
others stay at zero.

With ``m`` samples and ``n >> m`` features almost every group ends at zero: :class:`WorkingSet`
restricts the subproblem to a working set of groups (the others' columns left out), *prices* the
excluded groups from the restricted problem's multipliers and adds the violators, until none does.

Pricing is the Karush-Kuhn-Tucker condition of the full problem at the extended point ``(x, 0)``
with the restricted problem's multipliers ``(y, z)`` (rows that lose every column are dropped or
kept empty; their multipliers are 0): the rows' values, slacks, cone memberships and
complementarity are those of the restricted optimum, so the only condition left is stationarity
on the excluded columns. Their reduced costs

    r_E = c_E + (P x)_E + A_E' y + G_E' z

must be excused by the bounds at zero: ``r >= 0`` on a column whose lower bound is 0, ``r <= 0``
on one whose upper bound is 0 (an LP's reduced-cost test ``|A_j' pi| <= weight_j`` for the split
``w = u - v``, ``u, v >= 0``, with ``s_j = u_j + v_j``). A column free around zero (``lb < 0 <
ub``, e.g. a quadratic penalty's free ``w``) can be excluded only with a zero reduced cost, which
almost never holds: its group is always in the working set. The test is sound for any convex
problem in the canonical form (a group it keeps out is provably at zero in an optimum, to the
pricing tolerance); it is exact (never keeps a group in needlessly) when a group's columns enter
no rows of their own. The final answer is certified on the *full* problem
(:func:`~fsframe.backends.certificate.certify` at the extended point), so a user sees that the
exclusion was exact: :attr:`WorkingSetReport.max_violation` is the largest reduced cost over
*all* excluded columns the bounds do not excuse.

It is a reduction (CVXPY's ``apply``/``invert``) and never solves anything itself: ``apply`` gives
the restricted problem, ``invert`` maps its answer back to the full problem (or asks for another
round); :meth:`fsframe.problem.Subproblem.solve` drives the rounds on its backend session.

Backends that grow a live model (:attr:`~fsframe.backends.base.Backend.grows_columns`: HiGHS)
receive each restricted problem as the previous one with columns appended (``ProblemData``'s
``appended_to``) and add them warm (``addCols``); the others rebuild the restricted problem, with
rows left empty dropped (interior-point solvers need them gone). Measurements: docs/performance.md.
"""

from __future__ import annotations

import time

import attrs
import numpy as np
import scipy.sparse as sp
from attrs.validators import ge, instance_of, optional
from numpy.typing import NDArray

from .backends.base import SolveResult
from .backends.certificate import certify, judge_certificate, reduced_costs, unexcused_at
from .canonical import ProblemData
from .enums import SOLUTION_PRESENT, Status
from .epigraphs import _Epigraphs
from .errors import InvalidOptionError
from .slot import SlotMaps, exclusive_groups as _exclusive, group_columns
from .validators import as_int, finite, not_bool, positive_int, to_float

__all__ = ["WorkingSetOptions", "WorkingSet", "WorkingSetReport", "group_columns", "CSC_COPY_LIMIT", "AGAIN"]

AGAIN = "again"
"""What :meth:`WorkingSet.invert` returns when the pricing added groups: solve the next
:meth:`WorkingSet.apply` (CVXPY's reductions pattern, iterated: the caller drives the rounds)."""

CSC_COPY_LIMIT = 20_000_000
"""Constraint matrices with more stored entries than this (240 MB as CSR) are sliced by columns
straight from their CSR form each round, not through a column-major copy held for the whole fit:
at 2 000 x 20 000 the copy would be another 0.9 GB (docs/performance.md)."""


def _mode(value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    return value


def _typed(*validators):
    """attrs validator: ``validators`` in turn, their refusal an
    :class:`~fsframe.errors.InvalidOptionError` naming the option (``batch=0`` or ``batch=-1``
    would otherwise take no violators, or all but one, round after round)."""

    def check(instance, attribute, value):
        for v in validators:
            try:
                v(instance, attribute, value)
            except InvalidOptionError:
                raise
            except (TypeError, ValueError) as exc:
                why = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
                raise InvalidOptionError(f"WorkingSetOptions({attribute.name}={value!r}): {why}") from None

    return check


def _bool_or_auto(instance, attribute, value):
    """``"auto"``, True or False, nothing else (``1 in ("auto", True, False)`` holds: 1 would pass
    ``in_`` and then mean neither)."""
    if not (value is True or value is False or (isinstance(value, str) and value == "auto")):
        raise ValueError(f"must be 'auto', True or False, got {value!r}")


@attrs.frozen
class WorkingSetOptions:
    """How the core solves subproblems on working sets (``fit(..., working_set=...)``).

    Parameters
    ----------
    mode : ``"auto"``, True or False
        ``"auto"``: when the formulation allows it (:attr:`Formulation.pricing`) and the groups
        that can be priced are at least ``min_groups`` and more than ``min_ratio`` times the
        constraint rows (not counting the rows a group owns alone, which leave with it); on a
        problem with exponential cones (the logistic losses) more than ``min_ratio_exp`` times the
        rows that hold a group's column (a sample's margin, not the cone rows around it); True:
        whenever the formulation allows it and some group can be priced (and, in :func:`fsframe.fit`,
        on the compiled path: ``em-l0``'s dense path is not taken, docs/backends.md); False: always the full
        problem.
    initial : int, optional
        Groups in the first working set (default ``max(100, rows // 2)``, ``rows`` the rows that
        hold some group's column, not counting the rows a group owns alone, the rows that define
        an auxiliary, nor the rows of auxiliaries alone such as a logistic loss's cone rows in
        ``t_i`` and ``v_i``), chosen by the size of their reduced costs at uniform multipliers.
    batch : int, optional
        Most violating groups added per round (default: the larger of 100 and half the working set).
    tol : float
        A group violates when a reduced cost of its columns, unexcused by the bounds, exceeds
        ``tol`` times the size of the terms that make up that column's reduced cost
        (``max(|c_k + (P x)_k|, |(A'y)_k|, |(G'z)_k|)``; a scale shared by all columns lets one
        column of large terms, e.g. the slacks at a large ``C``, hide real violations).
    max_rounds : int
        Pricing rounds before the full problem is solved instead.
    min_groups, min_ratio : int, float
        The ``"auto"`` rule's thresholds (200 groups, 4 times the rows: at m = 200 the working set
        wins from n = 1 000 on, 0.41 s against 0.63 s in full; docs/performance.md).
    min_ratio_exp : float
        ``min_ratio`` for problems with exponential cones, counting only the rows that hold a
        group's column (default 1: an interior-point solve pays for the dense columns of ``X``,
        and ``l1-logistic`` on a working set was 1.3-12.7 times cheaper than the full problem from
        ``n = m`` on, m = 200 and 500, on Clarabel and ECOS; docs/performance.md, "Logistic:
        the automatic working-set rule").
    from_data : ``"auto"``, True or False
        Whether a fit whose loop is one convex solve (``single``, ``penalty="l1"``) solves it
        straight from ``X`` when the formulation offers it (the ``from_data`` protocol: the hinge's
        column and row generation, docs/working-sets.md "Many rows"): ``"auto"`` when the
        formulation expects it to win on these data (and ``mode`` is not False); True always (an
        :class:`~fsframe.errors.UnsupportedProblemError` naming why when it cannot); False never.
        Likewise for an EM fit (slot term ``quad`` alone) on a formulation with the
        ``quad_from_data`` protocol (``logistic``, ``least-squares``): its steps by Newton's method
        from ``X`` (docs/glm.md, "EM steps from X"), taken unless this is False (then the
        backend's cone or QP path).
    """

    mode: object = attrs.field(default="auto", converter=_mode, validator=_typed(_bool_or_auto))
    initial: int | None = attrs.field(default=None, converter=as_int, validator=_typed(optional(positive_int)))
    batch: int | None = attrs.field(default=None, converter=as_int, validator=_typed(optional(positive_int)))
    tol: float = attrs.field(default=1e-9, converter=to_float, validator=_typed(instance_of(float), ge(0), finite))
    max_rounds: int = attrs.field(default=60, converter=as_int, validator=_typed(positive_int))
    min_groups: int = attrs.field(default=200, converter=as_int, validator=_typed(not_bool, instance_of(int), ge(0)))
    min_ratio: float = attrs.field(default=4.0, converter=to_float, validator=_typed(instance_of(float), ge(0), finite))
    min_ratio_exp: float = attrs.field(default=1.0, converter=to_float,
                                       validator=_typed(instance_of(float), ge(0), finite))
    from_data: object = attrs.field(default="auto", converter=_mode, validator=_typed(_bool_or_auto))


@attrs.frozen
class WorkingSetReport:
    """How the last subproblem was solved: ``used`` (a working set, or the full problem),
    ``size`` (groups in the final working set), ``n_groups``, ``rounds`` (restricted solves),
    ``added`` (groups the pricing added), ``max_violation`` (the largest unexcused reduced cost
    over the excluded columns, relative to each column's own terms; 0 when none is excluded), ``fallback`` (why the full
    problem was solved instead of a working set, if it was), ``full_resolve`` (the solve was asked for
    on the full problem, bypassing the working set: the ``zero_tol`` cut's re-solve,
    :meth:`fsframe.problem.Subproblem.restricted` with ``full=True``), ``recheck`` (a working set
    chosen by ``"auto"`` whose answer was not certified OPTIMAL: the full problem was solved once
    more, and which answer was kept; empty otherwise)."""

    used: bool
    size: int
    n_groups: int
    rounds: int = 0
    added: int = 0
    max_violation: float = 0.0
    fallback: str = ""
    full_resolve: bool = False
    recheck: str = ""

    def as_dict(self) -> dict:
        return attrs.asdict(self)


class WorkingSet:
    """The working set of one fit's subproblem, kept across its solves (outer-loop iterations
    start from the groups the previous solve used: support and recent violators).

    Parameters
    ----------
    base : ProblemData
        The compiled loss-only problem (its rows, columns and bounds).
    slot : SlotMaps
    grows : bool
        The backend appends columns to a live model (keep every row, append columns in order).
    options : WorkingSetOptions
    cert_tol : float or None
        The certificate's tolerance (:attr:`~fsframe.backends.base.SolveOptions.cert_tol`) for
        judging the answer on the full problem; ``None``: certification is off
        (``SolveOptions(certify=False)``), the solver's status stands.
    """

    def __init__(self, base: ProblemData, slot: SlotMaps, grows: bool, options: WorkingSetOptions,
                 cert_tol: float | None = 1e-6):
        self.options = options
        self.cert_tol = cert_tol
        self.grows = grows
        self.slot = slot
        n = self.n = base.n
        self.n_groups = slot.n_groups
        self.group_cols = gc = group_columns(slot)
        in_group = np.zeros(n, dtype=bool)
        if self.n_groups:
            in_group[np.concatenate(gc)] = True
        self.groupless_cols = np.flatnonzero(~in_group)  # columns of no group (b, slacks): always in
        # columns sorted by group, and where each group starts: per-group reductions in bulk
        sizes = np.fromiter((len(c) for c in gc), dtype=np.int64, count=self.n_groups)
        self._perm = np.concatenate(gc).astype(np.int64) if self.n_groups else np.zeros(0, dtype=np.int64)
        self._starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if self.n_groups else self._perm
        self._nonempty = sizes > 0
        self._col_group = np.full(n, -1, dtype=np.int64)
        self._col_group[self._perm] = np.repeat(np.arange(self.n_groups), sizes)
        self._rows = self._empty_rows = None
        self.read_pricing(base)
        self._structure = None
        self._defs: tuple | None = None  # ((A, G, P), rows and columns of _definitions) for that problem
        self.active: NDArray | None = None  # groups in the working set, or None before the first solve
        self.order: list = []  # active groups in the order they joined (the column order)
        self._last: ProblemData | None = None  # the restricted problem last solved (to append to)
        self._last_cols: NDArray | None = None
        self._fixed = np.zeros(self.n_groups, dtype=bool)  # groups fixed at zero in the current solve
        self._last_src: tuple = ()  # the full problem's A and G that _last was cut from
        self._next: NDArray | None = None  # a rebuilt restriction's next start (support and violators added)
        self._added = np.zeros(self.n_groups, dtype=bool)  # groups priced in during the current solve
        self.report: WorkingSetReport | None = None

    def read_pricing(self, base: ProblemData) -> None:
        """Which groups can be priced (:attr:`priceable`), and the equality rows that *define* a
        column free around zero from its group's other columns (``w_j - u_j + v_j = 0``).

        A column at a bound at zero (``lb == 0`` or ``ub == 0``) is priced by the sign of its
        reduced cost. A column free around zero is priced when it is defined: it has a non-zero
        entry in exactly one equality row with ``b = 0`` whose entries all lie in its group, the
        row has no other free column, and no other row of its group alone holds it. At the
        group's zero that row's multiplier is then ``lambda = -r_f / a_f`` (stationarity on the
        free column ``f``), which carries ``r_f`` over to the other columns of the row. A column
        bounded away from zero, or free and undefined, keeps its group in every working set."""
        n, lb, ub = self.n, base.lb, base.ub
        free = (lb < 0) & (ub > 0)
        away = (lb > 0) | (ub < 0)
        defined = np.zeros(n, dtype=bool)
        self._def_rows = np.zeros(0, dtype=np.int64)
        self._def_free = np.zeros(0, dtype=np.int64)
        self._def_coef = np.zeros(0)
        A = base.A.tocsr()
        if A.nnz and free.any():
            counts = np.diff(A.indptr)
            row_of = np.repeat(np.arange(A.shape[0]), counts)
            g = self._col_group[A.indices]
            starts = A.indptr[:-1][counts > 0]
            local = np.zeros(A.shape[0], dtype=bool)
            local[counts > 0] = ((np.minimum.reduceat(g, starts) == np.maximum.reduceat(g, starts))
                                 & (np.minimum.reduceat(g, starts) >= 0))
            isfree = free[A.indices] & (A.data != 0)
            nfree = np.zeros(A.shape[0], dtype=np.int64)
            nfree[counts > 0] = np.add.reduceat(isfree.astype(np.int64), starts)
            defrow = local & (nfree == 1) & (base.b == 0)
            sel = isfree & defrow[row_of]
            fcol, frow, fcoef = A.indices[sel].astype(np.int64), row_of[sel], A.data[sel]
            # a free column in a local row that does not define it, or defined twice: not priced
            other = free[A.indices] & local[row_of] & ~sel
            bad = (np.bincount(fcol, minlength=n) > 1) | (np.bincount(A.indices[other], minlength=n) > 0)
            ok = ~bad[fcol]
            self._def_rows, self._def_free, self._def_coef = frow[ok], fcol[ok], fcoef[ok]
            defined[self._def_free] = True
            self._def_matrix = A[self._def_rows]
            self._def_group = self._col_group[self._def_free]
        self._epi = _Epigraphs.read(base, free, self._col_group, self.n_groups)
        covered = ~away & (~free | defined | self._epi.covered)
        self.priceable = ~self._group_reduce(~covered, np.logical_or)

    def wanted(self, base: ProblemData) -> bool:
        """Whether this subproblem is solved on a working set (see :class:`WorkingSetOptions`)."""
        n_price = int(np.count_nonzero(self.priceable))
        if self.options.mode is False or self.n_groups < 2:
            return False
        if self.options.mode is True:
            # nothing to price (every group free around zero, e.g. EM's quadratic penalty): the
            # only groups a working set could leave out are those fixed at zero, which the
            # backends already drop at no cost (measured slower through a working set)
            return n_price > 0
        # a defining row leaves the bound but stays in every restricted problem (its residual
        # column is kept): with fewer priceable groups than samples (tall least squares) the
        # rounds cost more than the full problem (measured 1.6x at 1 000 x 250, 2.2x at 4 000 x 250)
        if n_price < self.options.min_groups or n_price <= int(self._definitions(base)[0].size):
            return False
        if base.exp:
            # an interior-point solve with exponential cones costs by the dense columns it holds,
            # not by a basis the rows bound: the loss's cone rows around a sample's margin (four
            # per sample, and the sum of the logistic epigraph) hold no feature and do not count
            return n_price > self.options.min_ratio_exp * self._feature_rows(base)
        return n_price > self.options.min_ratio * self._bounding_rows(base)

    def _bounding_rows(self, data: ProblemData) -> int:
        """Rows that every restricted problem keeps *as constraints*: the shared rows of ``A`` and
        ``G`` (:meth:`_shared_rows`; a group's own rows leave with it) less the equality rows
        that only define an auxiliary (:meth:`_definitions`: a least-squares residual ``r_i = y_i
        - x_i w - b``). A defining row eliminates its column: the restricted problem is then a
        problem in the working set's columns alone (``min |w_W|_1 + C/2 ||y - X_W w_W - b||^2``),
        whose size the rows do not bound as a hinge's margin rows bound an LP's basis."""
        rows = self._shared_rows(data.A) + self._shared_rows(data.G)
        return rows - int(self._definitions(data)[0].size)

    def _definitions(self, data: ProblemData) -> tuple:
        """``(rows, cols)``: the equality rows of ``A`` that define a column of no group with a
        quadratic cost — a column free (``lb = -inf``, ``ub = inf``), of no group, with a diagonal
        entry in ``P`` and no other entry, that appears in this row of ``A`` and in no other row of
        ``A`` or ``G``. Decided once per ``(A, G, P)``."""
        key = (data.A, data.G, data.P)
        if self._defs is not None and all(a is b for a, b in zip(self._defs[0], key)):
            return self._defs[1]
        out = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        if data.P is not None and data.A.shape[0] and self.groupless_cols.size:
            P = data.P.tocsc()
            A = data.A.tocsc()
            cand = np.zeros(data.n, dtype=bool)
            cand[self.groupless_cols] = True
            cand &= np.isneginf(data.lb) & np.isposinf(data.ub) & (P.diagonal() > 0) & (np.diff(P.indptr) == 1)
            cand &= np.diff(A.indptr) == 1
            if data.G.shape[0]:
                cand &= np.diff(data.G.tocsc().indptr) == 0
            cols = np.flatnonzero(cand)
            rows = A.indices[A.indptr[cols]].astype(np.int64)
            # one defined column per row (a row holding two would eliminate neither)
            one = np.bincount(rows, minlength=A.shape[0])[rows] == 1
            out = (rows[one], cols[one])
        self._defs = (key, out)
        return out

    def _feature_rows(self, data: ProblemData) -> int:
        """Shared rows (:meth:`_shared_rows`) that hold a column of some group, less the defining
        rows (:meth:`_definitions`): the distinct linear functions of the features the problem
        sees, which bound how many groups an optimum needs. A row in auxiliaries alone does not
        count: the logistic loss's epigraph has five rows per sample (two exponential cones of
        three rows, the sum ``v_1 + v_2 <= 1``) of which only the margin row ``-y_i (x_i w + b) -
        t_i`` holds features, so a sample counts once, not five times (issue 23)."""
        rows = self._shared_rows(data.A, touching=True) + self._shared_rows(data.G, touching=True)
        return max(rows - int(self._definitions(data)[0].size), 0)

    def _shared_rows(self, M, touching: bool = False) -> int:
        """Rows of ``M`` that are not one group's own (entries in several groups, or in a column
        of none): the rows a restricted problem keeps whatever the working set. A group's own rows
        (an MPM ridge row, its split ``w_j = u_j - v_j``) leave with the group. ``touching``:
        only those with an entry in some group's column."""
        M = M.tocsr()
        counts = np.diff(M.indptr)
        starts = M.indptr[:-1][counts > 0]
        if not starts.size:
            return 0
        g = self._col_group[M.indices]
        lo, hi = np.minimum.reduceat(g, starts), np.maximum.reduceat(g, starts)
        shared = (lo != hi) | (lo < 0)
        if touching:
            shared &= hi >= 0
        return int(np.count_nonzero(shared))

    @staticmethod
    def possible(slot: SlotMaps | None, pricing, options: WorkingSetOptions) -> bool:
        """Whether a working set can be considered at all: options allow it, the formulation
        declares a pricing, and the slot's groups own their columns (none shared, counting the
        columns of the magnitude map: :func:`group_columns`)."""
        if options.mode is False or pricing is None or slot is None or slot.n_groups < 2:
            return False
        return _exclusive(slot)

    def seed(self, groups) -> None:
        """Start the next solve from ``groups`` (a boolean mask or indices), e.g. the working set
        of the previous point of a parameter path."""
        mask = np.zeros(self.n_groups, dtype=bool)
        mask[np.asarray(groups)] = True
        self.active = mask | ~self.priceable
        self.order = list(np.flatnonzero(self.active))
        self._last = None
        self._next = None

    # -- structure (column-sliceable copies of the constraint matrices) ------------------------
    def _struct(self, data: ProblemData):
        """``(A, G, A_cols, G_cols)``: the constraint matrices and column-sliceable forms of them
        (CSC copies, or for a matrix above :data:`CSC_COPY_LIMIT` entries the CSR matrix itself,
        sliced by a pass over its entries each round instead of being held twice)."""
        s = self._structure
        if s is None or s[0] is not data.A or s[1] is not data.G:
            cols = [M.tocsc() if M.nnz <= CSC_COPY_LIMIT else M for M in (data.A, data.G)]
            s = (data.A, data.G, *cols)
            self._structure = s
        return s

    def _initial(self, data: ProblemData, fixed: NDArray) -> NDArray:
        """The first working set: every group that cannot be priced, plus the priceable ones
        whose reduced costs at uniform multipliers (``y = 1``, ``z = 1``) most favour entering."""
        live = self.priceable & ~fixed
        active = ~self.priceable & ~fixed
        k = self.options.initial or max(100, self._feature_rows(data) // 2)
        if live.sum() <= k:
            return active | live
        top = self._best(data, live, k)
        active = active.copy()
        active[top] = True
        return active

    def _best(self, data: ProblemData, live: NDArray, k: int) -> NDArray:
        """The ``k`` groups among ``live`` whose reduced costs at uniform multipliers (``y = 1``,
        ``z = 1``; a row that defines an auxiliary, :meth:`_definitions`, at its multiplier in the
        empty model), relative to their costs, are largest: a guess at the groups that enter."""
        ones_y, ones_z = np.ones(data.A.shape[0]), np.ones(data.G.shape[0])
        rows, cols = self._definitions(data)
        if rows.size:
            # a defining row's multiplier where every other column is 0: its column is then
            # b_i / a_i, and stationarity on it gives y_i = -(c + P x)_col / a_i (least squares:
            # -C y_i, so the score is |Xᵀ y| C: the residuals' correlation, the pricing's own test)
            a = np.asarray(data.A.tocsc()[rows, cols]).ravel()
            x = data.b[rows] / a
            ones_y[rows] = -(np.asarray(data.c)[cols] + data.P.diagonal()[cols] * x) / a
        ones_z[self._epi.rows] = 0.0  # a group's own epigraph rows: its multipliers are the pricing's
        g = (data.A.T @ ones_y if data.A.shape[0] else 0.0) + (data.G.T @ ones_z if data.G.shape[0] else 0.0)
        score = np.abs(g) / (np.abs(np.asarray(data.c)) + 1e-12)
        per_group = self._group_reduce(score)
        # an epigraph group s_j >= ||w_j||: its free w_j costs nothing, s_j all of it (||g_w|| / c_s)
        per_group[self._epi.groups] = self._epi.scores(data, g)
        per_group = np.where(live, per_group, -np.inf)
        return np.argsort(-per_group, kind="stable")[:k]

    # -- one solve, as a reduction: begin, then apply / invert until invert answers ----------------
    def begin(self, data: ProblemData, fixed_groups: NDArray, time_limit: float | None = None) -> None:
        """Start solving ``data`` (the full problem at this iteration's weights): ``fixed_groups``
        are fixed at zero by infinite weights (never in the working set). ``time_limit`` (seconds)
        bounds the rounds together: a restricted solve that hits it, or a round that would start
        after it, ends with :attr:`Status.TIME_LIMIT` and no solution (as a full solve would), not
        with more rounds or a full solve under a fresh limit (so up to twice ``time_limit``)."""
        self._t_start, self._time_limit = time.perf_counter(), time_limit
        fixed = np.zeros(self.n_groups, dtype=bool)
        fixed[fixed_groups] = True
        if self.active is None:
            self.active = self._initial(data, fixed)
            self.order = list(np.flatnonzero(self.active))
        else:
            # groups fixed since the last solve stay in (a live model keeps their columns at [0, 0];
            # a rebuilt problem leaves them out, see _columns): released, they are back at once
            if not self.grows:
                self._last = None
                if self._next is not None:
                    # a rebuilt restricted problem costs what it holds: start from the last
                    # solve's support and the violators it added, not from every group ever added
                    # (a group needed again is priced back in; the answer is certified either way)
                    self.active = self._next.copy()
                    self.order = list(np.flatnonzero(self.active))
            new = ~self.priceable & ~fixed & ~self.active
            if new.any():
                self._join(np.flatnonzero(new))
        self._fixed = fixed
        self._rounds = self._added = 0
        self._joined = np.zeros(self.n_groups, dtype=bool)  # groups the pricing added during this solve

    def apply(self, data: ProblemData) -> ProblemData:
        """The restricted problem of the next round: ``data`` on the working set's columns (the
        caller solves it, on a backend session it keeps, and hands the answer to :meth:`invert`)."""
        R, cols = self._restrict(data, self._fixed)
        self._rounds += 1
        self._last, self._last_cols, self._last_src = R, cols, (data.A, data.G)
        return R

    def invert(self, data: ProblemData, res: SolveResult):
        """The restricted answer ``res`` read back as the full problem's: a :class:`SolveResult`
        of ``data``, certified on it, when the pricing finds no excluded group that violates; the
        :data:`AGAIN` marker when violators joined the working set (call :meth:`apply` again);
        ``None`` when the full problem must be solved instead (:attr:`report` says why)."""
        R, cols = self._last, self._last_cols
        if res.status is Status.TIME_LIMIT:
            self._finish(fallback=f"restricted problem ended {res.status.value}")
            return attrs.evolve(res, x=None, objective=None, duals=None, certificate=None,
                                solve_time=time.perf_counter() - self._t_start)
        fixed = self._fixed
        free = self.priceable & ~self.active & ~fixed
        if res.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED) and free.any() \
                and self._rounds < self.options.max_rounds:
            # too few groups to meet the constraints (e.g. an MPM bound): double the working set
            more = self._best(data, free, max(self._size(), self.options.batch or 100))
            self._join(more)
            self._added += int(more.size)
            return self._again(res)
        if res.status not in SOLUTION_PRESENT or res.duals is None:
            self.report = WorkingSetReport(False, self._size(), self.n_groups, self._rounds, self._added,
                                           fallback=f"restricted problem ended {res.status.value}")
            return None
        x, y, z = self._extend(data, R, cols, res)
        excluded = ~self.active & ~fixed
        if not excluded.any():
            # only groups fixed at zero are out (any reduced cost is excused at bounds [0, 0]):
            # nothing to price
            self._finish()
            return self._full_result(data, res, x, y, z)
        r, col_scale = reduced_costs(data, x, y, z, per_column=True)
        y, carried = self._define(data, r, y, excluded)
        if carried is not None:  # what the defining rows carried over counts in those columns' size
            col_scale = np.maximum(col_scale, carried)
        z, carried = self._epi.price(data, r, z, excluded)
        if carried is not None:
            col_scale = np.maximum(col_scale, carried)
        viol = unexcused_at(data, x, r)
        gviol = self._group_max(viol / col_scale, excluded)  # relative to each column's own terms
        violators = np.flatnonzero(gviol > self.options.tol)
        if violators.size == 0:
            out = self._full_result(data, res, x, y, z)
            if not self.grows:
                ax = np.abs(x)
                ax[self.groupless_cols] = 0.0
                # an interior-point solver leaves zeros at 1e-10: the support on the scale of the answer
                support = self._group_reduce(ax > 1e-6 * float(ax.max(initial=0.0)), np.logical_or)
                self._next = support | self._joined | ~self.priceable
            self._finish(max_violation=float(np.max(gviol, initial=0.0)))
            return out
        if self._rounds >= self.options.max_rounds:
            self._finish(fallback=f"pricing still found {violators.size} violating groups after {self._rounds} rounds")
            return None
        batch = self.options.batch or max(100, self._size() // 2)
        take = violators[np.argsort(-gviol[violators], kind="stable")[:batch]]
        self._join(take)
        self._joined[take] = True
        self._added += int(take.size)
        return self._again(res)

    def _again(self, res: SolveResult):
        """:data:`AGAIN`, or the time-limit answer if the next round would start after it."""
        limit = self._time_limit
        if limit is not None and time.perf_counter() - self._t_start >= limit:
            self._finish(fallback=f"time limit {limit:g} s reached after {self._rounds} rounds")
            return SolveResult(Status.TIME_LIMIT, None, None, res.backend, time.perf_counter() - self._t_start,
                               backend_version=res.backend_version,
                               message=f"working set: time limit reached after {self._rounds} pricing rounds, "
                                       "before the exclusion was certified")
        return AGAIN

    def _finish(self, *, max_violation: float = 0.0, fallback: str = "") -> None:
        self.report = WorkingSetReport(True, self._size(), self.n_groups, self._rounds, self._added, max_violation,
                                       fallback)

    def _define(self, data: ProblemData, r: NDArray, y: NDArray, excluded: NDArray) -> tuple:
        """For the defining rows of the ``excluded`` groups (see :meth:`read_pricing`): their
        multipliers ``lambda = -r_f / a_f`` written into ``y`` (returned, a copy) and their
        contribution added to ``r`` in place, so that ``r`` and ``y`` are the full problem's.
        Returns ``(y, |D|'|lambda|)``: the new ``y`` and the size of what was carried to each
        column (``None`` when nothing was)."""
        if not self._def_rows.size:
            return y, None
        on = excluded[self._def_group]
        if not on.any():
            return y, None
        lam = -r[self._def_free[on]] / self._def_coef[on]
        D = self._def_matrix[on]
        r += D.T @ lam
        r[self._def_free[on]] = 0.0  # exactly: the definition makes stationarity hold
        y = y.copy()
        y[self._def_rows[on]] = lam
        return y, abs(D).T @ np.abs(lam)

    def _join(self, groups: NDArray) -> None:
        groups = [int(g) for g in groups if not self.active[g]]
        self.active[groups] = True
        self.order.extend(groups)

    def _group_reduce(self, colvals: NDArray, ufunc=np.maximum) -> NDArray:
        """Per group, ``ufunc`` reduced over its columns' ``colvals`` (groups without columns: the
        reduction's identity, 0 / False)."""
        out = np.zeros(self.n_groups, dtype=np.asarray(colvals).dtype)
        if self._perm.size:
            vals = ufunc.reduceat(np.asarray(colvals)[self._perm], self._starts[self._nonempty])
            out[self._nonempty] = vals
        return out

    def _group_max(self, colvals: NDArray, which: NDArray) -> NDArray:
        """Per group, the largest of ``colvals`` over its columns (0 for groups not in ``which``)."""
        return np.where(which, np.maximum(self._group_reduce(colvals), 0.0), 0.0)

    def _size(self) -> int:
        """Groups in the working set that are not fixed at zero."""
        return int(np.count_nonzero(self.active & ~self._fixed))

    def _columns(self) -> NDArray:
        gc = self.group_cols
        # a live model keeps fixed groups' columns (appended once, bounds [0, 0]); a rebuilt
        # restricted problem leaves them out
        order = self.order if self.grows else [g for g in self.order if not self._fixed[g]]
        parts = [self.groupless_cols] + [gc[g] for g in order]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)

    def _rescue(self, M, rows: NDArray, fixed: NDArray) -> list:
        """For each row in ``rows``, the free group (neither fixed nor active) of its largest entry."""
        out = []
        for i in rows:
            row = M.getrow(int(i))
            for c in row.indices[np.argsort(-np.abs(row.data), kind="stable")]:
                g = self._group_of_col(int(c))
                if g is not None and not fixed[g] and not self.active[g]:
                    out.append(g)
                    break
        return out

    def _group_of_col(self, c: int):
        g = int(self._col_group[c])
        return None if g < 0 else g

    def _restrict(self, data: ProblemData, fixed: NDArray):
        """The restricted problem on the working set's columns, and those columns.

        A row left without columns that zero does not satisfy (a normalisation
        ``w'(mu_1 - mu_2) = 1``) brings in the group of its largest entry first."""
        _, _, A_csc, G_csc = self._struct(data)
        while True:
            cols = self._columns()
            A = A_csc[:, cols].tocsr()
            G = G_csc[:, cols].tocsr()
            need = []
            for M, Mr, rhs, bad_at_zero in ((data.A, A, data.b, data.b != 0),
                                             (data.G, G, data.h, data.h < 0)):
                if not Mr.shape[0]:
                    continue
                empty = np.diff(Mr.indptr) == 0
                if M is data.G:
                    empty[data.l:] = False  # cones: left to the solver (a cone of zeros holds at zero)
                need.extend(self._rescue(M, np.flatnonzero(empty & bad_at_zero), fixed))
            if not need:
                break
            self._join(np.unique(need))
        P = None
        if data.P is not None:
            P = data.P[cols][:, cols].tocsc()
        b, h, l, cones = data.b, data.h, data.l, data.cones
        self._rows = None
        if not self.grows:
            A, b, G, h, l, cones, self._rows = _drop_empty_rows(A, b, G, h, l, cones)
        else:
            # rows kept without entries: whatever multiplier the solver gives them weighs on the
            # excluded columns in the full problem; 0 is always a valid one (see _extend)
            self._empty_rows = (np.diff(A.indptr) == 0, np.diff(G.indptr) == 0)
        R = ProblemData(c=data.c[cols], A=A, b=b, G=G, h=h, lb=data.lb[cols], ub=data.ub[cols], l=l,
                        cones=cones, P=P, offset=data.offset, exp=data.exp)
        last = self._last
        # the claim "R is the last problem with columns appended" holds only when the old columns
        # keep their entries: the same source matrices (``Subproblem.set_bounds`` may restate them)
        if (self.grows and last is not None and last.n <= R.n and len(self._last_src) == 2
                and self._last_src[0] is data.A and self._last_src[1] is data.G
                and np.array_equal(self._last_cols, cols[: last.n])):
            if last.appended_to is not None:
                # ``last`` has been solved (the backend holds it live): its own claim is spent.
                # Kept, it would hold every restricted problem of the solve alive through the
                # chain (their G's summed to hundreds of MB at 2 000 x 20 000)
                object.__setattr__(last, "appended_to", None)
            R = R.evolve(appended_to=last)
        return R, cols

    def _extend(self, data: ProblemData, R: ProblemData, cols: NDArray, res: SolveResult):
        """The restricted answer in the full problem's columns and rows."""
        x = np.zeros(data.n)
        x[cols] = res.x
        y_r = np.asarray(res.duals["y"], dtype=float)
        z_r = np.asarray(res.duals["z"], dtype=float)
        if self._rows is None:
            y_r, z_r = y_r.copy(), z_r.copy()
            y_r[self._empty_rows[0]] = 0.0
            z_r[self._empty_rows[1]] = 0.0
            return x, y_r, z_r
        eq_keep, g_keep = self._rows
        y = np.zeros(data.A.shape[0])
        y[eq_keep] = y_r
        z = np.zeros(data.G.shape[0])
        z[g_keep] = z_r
        return x, y, z

    def _full_result(self, data: ProblemData, res: SolveResult, x, y, z) -> SolveResult:
        """The restricted answer as an answer to the full problem (its auxiliaries settled, as
        every backend's answer: :meth:`~fsframe.backends.base.BackendSession.judge`), certified on
        it."""
        x = data.settled(x)
        cert = certify(data, x, y, z)
        status, extra = res.status, res.message
        if status is Status.OPTIMAL and self.cert_tol is not None:
            status, more = judge_certificate(cert, self.cert_tol)
            extra += more
        return attrs.evolve(res, x=x, objective=data.objective(x), duals={"y": y, "z": z}, certificate=cert,
                            status=status, message=extra)


def _drop_empty_rows(A, b, G, h, l, cones):
    """Drop rows left without entries that hold at zero: equality rows with ``b = 0``, ``R_+``
    rows with ``h >= 0``, whole cones without entries whose ``h`` lies in the cone, and, inside a
    cone that stays, the entries of its vector part without columns and with ``h = 0`` (they add
    nothing to its norm: an MPM covariance cone keeps its samples' rows and the ridge rows of the
    working set's features, ``1 + m_k + |W|`` entries instead of ``1 + m_k + n``; a multiplier 0
    on a dropped entry keeps ``z`` in the dual cone and complementary). Exponential cones (the
    rows after the second-order cones) are kept whole.
    Returns the reduced data and the kept rows ``(eq_keep, g_keep)``."""
    a_nnz = np.diff(A.indptr)
    eq_keep = np.flatnonzero((a_nnz > 0) | (b != 0))
    g_nnz = np.diff(G.indptr)
    keep = np.zeros(G.shape[0], dtype=bool)
    keep[:l] = (g_nnz[:l] > 0) | (h[:l] < 0)
    new_cones = []
    k = l
    for q in cones:
        seg = slice(k, k + q)
        if np.any(g_nnz[seg] > 0) or np.linalg.norm(h[k + 1:k + q]) > h[k]:
            inner = (g_nnz[k + 1:k + q] > 0) | (h[k + 1:k + q] != 0)
            keep[k] = True
            keep[k + 1:k + q] = inner
            new_cones.append(1 + int(np.count_nonzero(inner)))
        k += q
    keep[k:] = True  # exponential cones
    g_keep = np.flatnonzero(keep)
    new_l = int(np.count_nonzero(keep[:l]))
    if eq_keep.size != A.shape[0]:
        A, b = A[eq_keep], b[eq_keep]
    if g_keep.size != G.shape[0]:
        G, h = G[g_keep], h[g_keep]
    return A, b, G, h, new_l, tuple(new_cones), (eq_keep, g_keep)
