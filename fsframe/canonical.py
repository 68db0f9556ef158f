"""The canonical form of a compiled convex subproblem: what every backend reads.

``ProblemData`` is ECOS's form plus variable bounds::

    minimise    1/2 x'Px + c'x + offset
    subject to  A x = b
                G x <=_K h,   K = R_+^l x SOC(q_1) x ... x SOC(q_r) x EXP^k
                lb <= x <= ub

``EXP`` is the exponential cone in Clarabel's order, ``(r, s, t)`` with ``s exp(r/s) <= t``
(:mod:`fsframe.exp_cone`); its ``k`` triples are the last rows of ``G``.

Bounds are kept apart because HiGHS takes them natively (as column bounds); conic backends
fold them into the ``R_+`` block (:meth:`ProblemData.bounds_as_rows`). This module depends on
numpy and scipy only: backends import it, never the compiler that produces it.
"""

from __future__ import annotations

import attrs
import numpy as np
from numpy.typing import NDArray

from . import exp_cone
from ._lazy import lazy_module
from .enums import ProblemClass

sp = lazy_module("scipy.sparse")  # imported on first use: the catalogue never needs it

__all__ = ["ProblemData", "Auxiliaries", "Definition"]


@attrs.frozen(eq=False)
class ProblemData:
    """A compiled convex problem (see the module docstring for the form).

    Arrays are not copied; treat them as read-only. Make changed copies with ``evolve``
    (backends then push only the changed parts, detected by identity).
    """

    c: NDArray
    A: sp.csr_matrix
    b: NDArray
    G: sp.csr_matrix
    h: NDArray
    lb: NDArray
    ub: NDArray
    l: int  # noqa: E741 - ECOS's name for the size of the R_+ block
    cones: tuple = ()
    P: sp.csc_matrix | None = None
    offset: float = 0.0
    appended_to: "ProblemData | None" = attrs.field(default=None, repr=False)
    """The problem this one extends by appending columns (same rows, its columns first, then
    new ones): a backend holding that problem live may add the columns instead of reloading
    (:mod:`fsframe.working_set`). ``None``: no such relation is claimed."""
    auxiliaries: "Auxiliaries | None" = attrs.field(default=None, repr=False)
    """The columns outside the model (slacks, epigraph variables) whose least values a closed form
    gives (:class:`Auxiliaries`): an answer is certified and returned with them settled, so that
    its objective is the one its model attains. ``None``: every column as the solver left it."""
    exp: int = attrs.field(default=0, kw_only=True)
    """Exponential cones: the last ``3 * exp`` rows of ``G``, one triple ``(r, s, t)`` each, in
    :mod:`fsframe.exp_cone`'s order (``s exp(r/s) <= t``)."""

    def settled(self, x: NDArray) -> NDArray:
        """``x`` with :attr:`auxiliaries` at their least values given the other columns (``x``
        itself when there are none)."""
        return x if self.auxiliaries is None else self.auxiliaries.settle(self, x)

    def __attrs_post_init__(self):
        n = self.c.shape[0]
        for name, M, rhs in (("A", self.A, self.b), ("G", self.G, self.h)):
            if M.shape[1] != n or M.shape[0] != rhs.shape[0]:
                raise ValueError(f"ProblemData: {name} has shape {M.shape}, rhs {rhs.shape}, n={n}")
        if self.l + sum(self.cones) + 3 * self.exp != self.G.shape[0]:
            raise ValueError("ProblemData: l + sum(cones) + 3 * exp must equal the rows of G")
        if self.P is not None and self.P.shape != (n, n):
            raise ValueError(f"ProblemData: P has shape {self.P.shape}, expected {(n, n)}")
        old = self.appended_to
        if old is not None and (old.n > n or old.A.shape[0] != self.A.shape[0] or old.G.shape[0] != self.G.shape[0]
                                or old.l != self.l or old.cones != self.cones or old.exp != self.exp):
            raise ValueError("ProblemData: appended_to names a problem with other rows or more columns")

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def has_quadratic_objective(self) -> bool:
        return self.P is not None and self.P.nnz > 0

    @property
    def problem_class(self) -> ProblemClass:
        return ProblemClass.of(self.has_quadratic_objective, bool(self.cones), bool(self.exp))

    @property
    def exp_start(self) -> int:
        """The first row of ``G`` in an exponential cone (``l + sum(cones)``)."""
        return self.l + int(sum(self.cones))

    def evolve(self, **changes) -> "ProblemData":
        """A changed copy (the claim :attr:`appended_to` is dropped unless restated)."""
        changes.setdefault("appended_to", None)
        return attrs.evolve(self, **changes)

    def objective(self, x: NDArray) -> float:
        val = float(self.c @ x) + self.offset
        if self.has_quadratic_objective:
            val += 0.5 * float(x @ (self.P @ x))
        return val

    def max_violation(self, x: NDArray) -> float:
        """Largest violation of any constraint or bound at ``x`` (absolute)."""
        viol = [0.0]
        if self.A.shape[0]:
            viol.append(float(np.max(np.abs(self.A @ x - self.b))))
        if self.G.shape[0]:
            s = self.h - self.G @ x
            if self.l:
                viol.append(float(np.max(-s[: self.l], initial=0.0)))
            k = self.l
            for q in self.cones:
                viol.append(max(0.0, float(np.linalg.norm(s[k + 1 : k + q]) - s[k])))
                k += q
            if self.exp:  # the distance of each triple to the exponential cone
                viol.append(float(np.max(exp_cone.distance(s[k:]), initial=0.0)))
        viol.append(float(np.max(self.lb - x, initial=0.0)))
        viol.append(float(np.max(x - self.ub, initial=0.0)))
        return max(viol)

    def bounds_as_rows(self) -> "ProblemData":
        """The same problem with finite bounds moved into the ``R_+`` block of ``G`` (for conic
        solvers that take no bounds). Fixed variables (``lb == ub``) become equality rows."""
        n = self.n
        fixed = np.flatnonzero(self.lb == self.ub)
        lo = np.flatnonzero(np.isfinite(self.lb) & (self.lb != self.ub))
        up = np.flatnonzero(np.isfinite(self.ub) & (self.lb != self.ub))
        E = sp.csr_matrix((np.ones(fixed.size), (np.arange(fixed.size), fixed)), shape=(fixed.size, n))
        Glo = sp.csr_matrix((-np.ones(lo.size), (np.arange(lo.size), lo)), shape=(lo.size, n))
        Gup = sp.csr_matrix((np.ones(up.size), (np.arange(up.size), up)), shape=(up.size, n))
        G = sp.vstack([self.G[: self.l], Glo, Gup, self.G[self.l :]], format="csr")
        h = np.concatenate([self.h[: self.l], -self.lb[lo], self.ub[up], self.h[self.l :]])
        A = sp.vstack([self.A, E], format="csr")
        b = np.concatenate([self.b, self.lb[fixed]])
        return attrs.evolve(self, appended_to=None, auxiliaries=None, A=A, b=b, G=G, h=h,
                            l=self.l + lo.size + up.size, lb=np.full(n, -np.inf), ub=np.full(n, np.inf))


class Auxiliaries:
    """The least values of a problem's auxiliary columns once its model columns are fixed: the
    loss a model attains, whatever the solver left in its slacks.

    A model (coefficients, intercept) is a few columns of the problem; the rest are auxiliaries
    (a hinge's slacks ``xi_i >= 1 - y_i f_i``, the epigraph variable of a cone). A solver's point
    may carry auxiliaries off their least values (an interior point stops inside; a row held only
    to the solver's tolerance leaves its slack short), so its objective is not the model's: a
    twin SVM's on Clarabel was 4e-9 (relative) below what its coefficients attain, Lanckriet's
    MPM's on ECOS 2e-8. :meth:`settle` sets each auxiliary column that a closed form determines
    to its least value given every other column:

    * a column with a positive cost, no quadratic term, no upper bound, in no equality row, whose
      every entry bounds it from below: an entry ``g < 0`` in an ``R_+`` row
      (``x_k >= x_k + s_r / g``, ``s = h - G x`` the row's slack) or in the head of a cone whose
      other rows it does not enter (``x_k >= x_k + (s_0 - ||s_tail||) / g``), and which shares
      none of those rows with another such column;
    * its value is the largest of those bounds and its lower bound: exact, whatever the others.

    A row the solver left violated raises its column to what the row needs (the model's slack).
    ``secondary`` columns (those the model reads besides its coefficients: the intercept) settle
    only in rows no other settled column enters: Lanckriet's MPM reads its threshold off the
    epigraph variable ``t_1 >= ||F_1'w||``, which settles to the norm; the twin SVM's intercepts
    share every row with a slack, which settles instead, so the intercept keeps its value.
    Auxiliary columns with a cost that no closed form settles keep the solver's values
    (:attr:`exact` is then ``False``): the loss is that of the model with those values, an upper
    bound of its least loss. Every built-in formulation's auxiliaries are settled exactly.

    ``definitions`` (:class:`Definition`, from the model's records: a log-sum-exp epigraph
    ``t = log sum_k exp(u_k)`` and its exponential-cone variables, residuals ``r = y - X w - b``
    defined by equality rows) set their columns first, in order, from the columns they read; the
    rule above then settles the rest. A column a definition sets is never one of the rule's.

    The columns' entries are read once per constraint matrices ``G``, ``A`` and which columns
    settle once per ``c``, ``lb``, ``ub``, ``P`` (``P``'s column pointers when it is CSC; compared by identity: a problem's arrays are
    read-only, new values come in new arrays; new arrays with the same values on the candidates,
    and candidates with the same quadratic pattern, keep the rule). A problem carries its auxiliaries in
    :attr:`ProblemData.auxiliaries`, so that a backend's answer is certified at its settled point
    (:meth:`fsframe.backends.base.BackendSession.judge`).
    """

    def __init__(self, columns: NDArray, secondary: NDArray | None = None, definitions: tuple = ()):
        self.definitions = tuple(definitions)
        defined = (np.concatenate([d.cols for d in self.definitions]) if self.definitions
                   else np.zeros(0, dtype=np.int64))
        columns = np.asarray(columns, dtype=np.int64)
        self.columns = columns[~np.isin(columns, defined)]
        self.defined = np.asarray(defined, dtype=np.int64)
        self.secondary = (np.zeros(self.columns.size, dtype=bool) if secondary is None
                          else np.isin(self.columns, np.asarray(secondary, dtype=np.int64)))
        self._pattern_of: tuple = ()  # the (G, A) the pattern was read from
        self._rule_of: tuple = ()  # the (c, lb, ub, P) the rule was decided for
        self._rule_key: tuple | None = None  # what of them the rule read (values on the candidates)
        self.cols = np.zeros(0, dtype=np.int64)  # the settled columns
        self.exact = True

    def _pattern(self, data: ProblemData) -> None:
        """The candidate columns' entries in ``G`` (rows, columns, values, the cone of a head
        entry: -1 in an ``R_+`` row, -2 in a cone's tail) and whether they enter ``A``: read once
        per constraint matrices (a slice of the candidates' columns, no copy of ``G``)."""
        cand = self.columns
        Gk = data.G[:, cand].tocoo()
        rows, idx = Gk.row.astype(np.int64), Gk.col.astype(np.int64)
        starts = data.l + np.concatenate([[0], np.cumsum(data.cones)]).astype(np.int64)
        head = np.full(rows.shape, -1, dtype=np.int64)
        in_cone = (rows >= data.l) & (rows < data.exp_start)
        if in_cone.any():
            which = np.searchsorted(starts, rows[in_cone], side="right") - 1
            head[in_cone] = np.where(rows[in_cone] == starts[which], which, -2)
        head[rows >= data.exp_start] = -2  # an exponential cone's entry: no closed form here
        in_eq = (np.bincount(data.A[:, cand].tocoo().col, minlength=cand.size) > 0 if data.A.shape[0]
                 else np.zeros(cand.size, dtype=bool))
        self._entries = (rows, idx, Gk.data, head, in_eq)
        self._starts = starts

    def _key_of(self, data: ProblemData) -> tuple:
        """What :meth:`_rule` reads of ``c``, ``lb``, ``ub`` and ``P``: their values on the
        candidates and which candidates have a quadratic term (EM changes ``P`` and the bounds of
        the coefficients at every step, never the slacks': the rule is then not decided again)."""
        cand = self.columns
        quad = None
        if data.has_quadratic_objective:
            P = data.P if data.P.format == "csc" else data.P.tocsc()
            quad = np.diff(P.indptr)[cand] > 0  # stored entries per candidate column
        return data.c[cand], data.lb[cand], data.ub[cand], quad

    def _rule(self, data: ProblemData, key: tuple) -> None:
        """Which candidates settle, for this objective and these bounds (``key``: :meth:`_key_of`)."""
        cand = self.columns
        rows, idx, vals, head, in_eq = self._entries
        c, _, ub, quad = key
        free_cost = c != 0
        ok = (c > 0) & ~np.isfinite(ub) & ~in_eq
        if quad is not None:
            free_cost |= quad
            ok &= ~quad
        # every entry a lower bound: negative, in an R_+ row or a cone's head (a tail entry is -2)
        good = (vals < 0) & (head != -2)
        ok &= np.bincount(idx[~good], minlength=cand.size) == 0
        ok &= np.isfinite(data.lb[cand]) | (np.bincount(idx, minlength=cand.size) > 0)
        # a row shared by two settled columns settles neither; a secondary column (one the model
        # reads, e.g. an intercept) settles only in rows no primary column settles (the twin SVM's
        # intercept shares every row with a slack, which settles instead)
        nrows, prim, sec = data.G.shape[0], ~self.secondary, self.secondary
        use = ok[idx] & prim[idx]
        shared = np.bincount(rows[use], minlength=nrows) > 1
        ok &= sec | (np.bincount(idx[use & shared[rows]], minlength=cand.size) == 0)
        taken = np.bincount(rows[ok[idx] & prim[idx]], minlength=nrows) > 0
        use = ok[idx] & sec[idx]
        clash = taken | (np.bincount(rows[use], minlength=nrows) > 1)
        ok &= prim | (np.bincount(idx[use & clash[rows]], minlength=cand.size) == 0)
        keep = ok[idx]
        pos = np.cumsum(ok) - 1  # column index -> position among the settled
        self.cols = cand[ok]
        self.exact = not bool(np.any(free_cost & ~ok & prim))  # (defined columns are not candidates)
        self._rows, self._pos, self._vals, self._head = rows[keep], pos[idx[keep]], vals[keep], head[keep]

    def settle(self, data: ProblemData, x: NDArray) -> NDArray:
        """``x`` with the settled auxiliary columns at their least values (a copy)."""
        src = (data.G, data.A)
        if len(self._pattern_of) != 2 or any(a is not b for a, b in zip(src, self._pattern_of)):
            self._pattern(data)
            self._pattern_of, self._rule_of, self._rule_key = src, (), None
        # P enters the rule only through its column pointers (which candidates have a quadratic
        # term): an EM step's new P on the same pattern shares them, and keeps the rule unread
        P = data.P
        rule = (data.c, data.lb, data.ub, P.indptr if P is not None and P.format == "csc" else P)
        if len(self._rule_of) != 4 or any(a is not b for a, b in zip(rule, self._rule_of)):
            key = self._key_of(data)
            old = self._rule_key
            if old is None or not all(a is b if a is None or b is None else np.array_equal(a, b)
                                      for a, b in zip(key, old)):
                self._rule(data, key)
                self._rule_key = key
            self._rule_of = rule
        x = np.array(x, dtype=float, copy=True)
        for d in self.definitions:
            x[d.cols] = d.value(x)
        if not self.cols.size:
            return x
        s = data.h - data.G @ x
        slack = s[self._rows]
        for j in np.unique(self._head[self._head >= 0]):
            a, b = self._starts[j], self._starts[j + 1]
            slack[self._head == j] = s[a] - float(np.linalg.norm(s[a + 1:b]))
        new = np.array(data.lb[self.cols], dtype=float)
        np.maximum.at(new, self._pos, x[self.cols][self._pos] + slack / self._vals)
        x[self.cols] = new
        return x


_DEFINITION_KINDS = ("affine", "exp", "logsumexp")


@attrs.frozen(eq=False)
class Definition:
    """Columns whose value at an optimum a closed form of other columns gives: the least value of
    an auxiliary variable (:class:`Auxiliaries` sets them first).

    ``x[cols] = f(matrix @ x + const)`` with ``f`` by ``kind``: ``"affine"`` the identity (a
    residual defined by equality rows), ``"exp"`` elementwise ``exp`` (an exponential cone's
    ``t >= s exp(r / s)`` at ``s = 1``, tight at the optimum when ``t`` carries a cost through
    the rows it is in), ``"logsumexp"`` — ``matrix`` stacks ``K`` blocks of ``len(cols)`` rows and
    ``x[cols] = log sum_k exp(block_k @ x + const_k)`` (a log-sum-exp epigraph, the logistic
    loss with ``K = 2`` and one block of zeros). A definition may read columns an earlier one set.
    """

    cols: NDArray = attrs.field(converter=lambda a: np.asarray(a, dtype=np.int64))
    matrix: object  # scipy sparse, shape (rows, n)
    const: NDArray = attrs.field(converter=lambda a: np.asarray(a, dtype=float))
    kind: str = attrs.field(default="affine")

    def __attrs_post_init__(self):
        if self.kind not in _DEFINITION_KINDS:
            raise ValueError(f"Definition: kind must be one of {_DEFINITION_KINDS}, got {self.kind!r}")
        k = self.cols.size
        rows = self.matrix.shape[0]
        if self.const.shape != (rows,) or (rows != k if self.kind != "logsumexp" else rows % max(k, 1)):
            raise ValueError(f"Definition: {rows} rows and {self.const.shape} constants for {k} columns "
                             f"({self.kind})")

    def value(self, x: NDArray) -> NDArray:
        """The defined columns' values at ``x``."""
        u = self.matrix @ x + self.const
        if self.kind == "affine":
            return u
        if self.kind == "exp":
            with np.errstate(over="ignore"):
                return np.exp(u)
        U = u.reshape(-1, self.cols.size)  # (K, k)
        top = U.max(axis=0)
        return top + np.log(np.exp(U - top).sum(axis=0))
