"""Columns and row blocks as the compiler reads them, and their assembly into :class:`ProblemData`."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from ..canonical import Definition, ProblemData
from ..errors import UnsupportedProblemError
from ..pyomo_ext import LinearBlock, LinearMap

__all__ = ["ProblemBuilder", "assemble", "definitions", "remap_columns"]


class ProblemBuilder:
    """The columns (Pyomo variables, in order of first use) and the row blocks read so far.

    A linear block is ``(rows, lower, upper, owned)``: a CSR matrix over the global columns
    known so far (widened when assembled) with bounds ``lower <= row <= upper``, ``owned`` when
    its arrays are the builder's own (not a record's: those are never changed); a cone block is ``(data, columns, indptr, const, q)``:
    the rows of ``-G`` and ``h`` of one cone of size ``q``; an exponential block is
    ``(rows, const, k)``: the ``3k`` rows of ``-G`` (triples ``(r, s, t)`` of ``k`` cones, in order)
    over the columns known so far, and their ``h``.
    """

    def __init__(self):
        self.col_index: dict[int, int] = {}
        self.columns: list = []
        self.blocks: list = []
        self.cone_blocks: list = []
        self.exp_blocks: list = []
        self.paths = {"recorded": 0, "direct": 0, "general": 0, "cones": 0, "exp_cones": 0}

    def col(self, v) -> int:
        """The column of variable ``v`` (a new one on first use)."""
        key = id(v)
        j = self.col_index.get(key)
        if j is None:
            if not v.is_continuous():
                raise UnsupportedProblemError(
                    f"variable {v.name} is {v.domain}: fsframe compiles continuous convex problems only")
            j = len(self.columns)
            self.col_index[key] = j
            self.columns.append(v)
        return j

    def cols(self, vars) -> NDArray:
        """The columns of ``vars`` (known ones looked up in bulk)."""
        got = list(map(self.col_index.get, map(id, vars)))
        if None in got:
            col = self.col
            got = [col(v) if j is None else j for v, j in zip(vars, got)]
        return np.array(got, dtype=np.int64).reshape(len(got))

    def add_map_rows(self, lmap: LinearMap, lower, upper, path: str) -> None:
        """Rows ``lower <= lmap <= upper``, read by ``path``."""
        M = lmap.matrix
        cols = self.cols(lmap.vars)
        R = sp.csr_matrix((M.data, cols[M.indices], M.indptr), shape=(M.shape[0], len(self.columns)))
        self.blocks.append((R, lower - lmap.const, upper - lmap.const, False))  # shares the record's values
        self.paths[path] += M.shape[0]

    def add_block(self, block: LinearBlock) -> None:
        """The rows of a recorded block, read from its record (the *recorded* path).

        Named expressions among its atoms are expanded straight into global columns (one sparse
        product, no intermediate copy over local columns); the rows are a new matrix the
        assembly may then negate in place."""
        exp = block.expansion
        if exp is None:
            self.add_map_rows(block.atoms, block.lower, block.upper, "recorded")
            return
        M = block.atoms.matrix
        cols = self.cols(exp.vars)
        E = exp.matrix
        Eg = sp.csr_matrix((E.data, cols[E.indices], E.indptr), shape=(E.shape[0], len(self.columns)))
        R = (M @ Eg).tocsr()
        _sort_rows(R)
        const = block.atoms.const + M @ exp.const
        self.blocks.append((R, block.lower - const, block.upper - const, True))
        self.paths["recorded"] += M.shape[0]

    def add_row(self, coefs, vars, lower, upper, path: str) -> None:
        """One row ``lower <= coefs @ vars <= upper``, read by ``path``."""
        cols = self.cols(vars)
        R = sp.csr_matrix((np.asarray(coefs, dtype=float), cols, np.array([0, len(cols)])),
                          shape=(1, len(self.columns)))
        self.blocks.append((R, np.array([lower]), np.array([upper]), True))
        self.paths[path] += 1

    def add_cone(self, cone: LinearMap) -> None:
        """The second-order cone ``||cone[1:]|| <= cone[0]``."""
        cols = self.cols(cone.vars)
        M = cone.matrix
        self.cone_blocks.append((M.data, cols[M.indices], M.indptr, cone.const, M.shape[0]))
        self.paths["cones"] += 1


    def add_exp(self, r: LinearMap, s: LinearMap, t: LinearMap) -> None:
        """The exponential cones ``(r_i, s_i, t_i)`` (``k``-row maps): ``s_i exp(r_i/s_i) <= t_i``."""
        k = r.n_rows
        parts = []
        for lmap in (r, s, t):
            M = lmap.matrix
            cols = self.cols(lmap.vars)
            parts.append(sp.csr_matrix((M.data, cols[M.indices], M.indptr), shape=(k, len(self.columns))))
        n = len(self.columns)
        for P in parts:
            P.resize((k, n))
        order = np.arange(3 * k).reshape(3, k).T.ravel()  # (r_0, s_0, t_0, r_1, ...)
        rows = sp.vstack(parts, format="csr")[order]
        const = np.concatenate([r.const, s.const, t.const])[order]
        self.exp_blocks.append((rows, const, k))
        self.paths["exp_cones"] += k


def _sort_rows(R, chunk: int = 1 << 21) -> None:
    """``R.sort_indices()``, faster when every row lists its columns in the same relative order
    (a product of rows with one sparsity pattern, as for dense data): the order of row 0 is
    applied to blocks of rows at once and checked; any other matrix is sorted row by row."""
    m = R.shape[0]
    lens = np.diff(R.indptr)
    if m < 2 or lens.min() != lens.max() or lens[0] < 2:
        R.sort_indices()
        return
    k = int(lens[0])
    idx, val = R.indices.reshape(m, k), R.data.reshape(m, k)  # views
    perm = np.argsort(idx[0], kind="stable")
    sorted_ = True
    for a in range(0, m, max(1, chunk // k)):
        rows = slice(a, min(m, a + max(1, chunk // k)))
        idx[rows] = idx[rows][:, perm]
        val[rows] = val[rows][:, perm]
        sorted_ = sorted_ and bool((np.diff(idx[rows], axis=1) > 0).all())
    R.has_sorted_indices = sorted_
    if not sorted_:
        R.sort_indices()


def _negated(R, owned: bool):
    """``-R``, in place when the builder owns ``R`` (not a record's matrix)."""
    if owned:
        np.negative(R.data, out=R.data)
        return R
    return -R


def _split_rows(blocks: list, n: int):
    """Equality rows ``(A, b)`` and the ``R_+`` rows of ``(G, h)`` (upper bounds, then negated
    lower bounds) of the linear blocks, as lists of matrices and right-hand sides. The blocks'
    own matrices are consumed (negated in place); every matrix returned is the caller's."""
    eq_rows, eq_rhs, g_rows, g_rhs = [], [], [], []
    for R, lo, up, owned in blocks:
        R.resize((R.shape[0], n))
        lo = np.asarray(lo, dtype=float)
        up = np.asarray(up, dtype=float)
        eq = lo == up
        if eq.all():
            eq_rows.append(R if owned else R.copy())
            eq_rhs.append(up)
            continue
        if eq.any():
            eq_rows.append(R[eq])
            eq_rhs.append(up[eq])
        fin_up = np.isfinite(up) & ~eq
        fin_lo = np.isfinite(lo) & ~eq
        if fin_up.any():
            g_rows.append((R if owned else R.copy()) if fin_up.all() else R[fin_up])
            g_rhs.append(up[fin_up])
        if fin_lo.any():
            # the only use of the whole R: negate it in place when the builder owns it
            g_rows.append(_negated(R, owned) if fin_lo.all() and not fin_up.any() else -(R if fin_lo.all() else R[fin_lo]))
            g_rhs.append(-lo[fin_lo])
    return eq_rows, eq_rhs, g_rows, g_rhs


def _stack(rows: list, rhs: list, n: int):
    if len(rows) == 1 and rows[0].format == "csr":
        M = rows[0]  # one block: no copy (vstack copies even one)
    else:
        M = sp.vstack(rows, format="csr") if rows else sp.csr_matrix((0, n))
    M.resize((M.shape[0], n))
    # a variable listed twice in one row (a Pyomo LinearExpression or a LinearMap may repeat one)
    # leaves two entries in one (row, column): HiGHS and ECOS reject that; sum them. A no-op check
    # for rows already in canonical form.
    M.sum_duplicates()
    return M, (np.concatenate(rhs) if rhs else np.zeros(0))


def _column_bounds(columns: list) -> tuple[NDArray, NDArray]:
    """The variables' bounds; a fixed variable's value is both."""
    n = len(columns)
    bnds = [v.bounds for v in columns]  # one domain lookup per column instead of two
    lb = np.array([-np.inf if lo is None else float(lo) for lo, _ in bnds], dtype=float).reshape(n)
    ub = np.array([np.inf if up is None else float(up) for _, up in bnds], dtype=float).reshape(n)
    for k in [k for k, v in enumerate(columns) if v.fixed]:
        lb[k] = ub[k] = float(columns[k].value)
    return lb, ub


def assemble(bld: ProblemBuilder, c: NDArray, P, offset: float) -> ProblemData:
    """The :class:`ProblemData` of everything ``bld`` read, with objective ``(c, P, offset)``."""
    n = len(bld.columns)
    eq_rows, eq_rhs, g_rows, g_rhs = _split_rows(bld.blocks, n)
    l = int(sum(r.shape[0] for r in g_rows))  # noqa: E741
    cones = []
    for data, idx, ptr, const, q in bld.cone_blocks:
        g_rows.append(-sp.csr_matrix((data, idx, ptr), shape=(q, n)))
        g_rhs.append(np.asarray(const, dtype=float))
        cones.append(int(q))
    n_exp = 0
    for rows, const, k in bld.exp_blocks:
        rows.resize((rows.shape[0], n))
        g_rows.append(-rows)
        g_rhs.append(np.asarray(const, dtype=float))
        n_exp += int(k)
    A, b = _stack(eq_rows, eq_rhs, n)
    G, h = _stack(g_rows, g_rhs, n)
    lb, ub = _column_bounds(bld.columns)
    return ProblemData(c=c, A=A, b=b, G=G, h=h, lb=lb, ub=ub, l=l, cones=tuple(cones), P=P, offset=offset, exp=n_exp)


def definitions(records, bld: ProblemBuilder) -> tuple:
    """The :class:`~fsframe.canonical.Definition` of each intact definition record whose
    variables are all columns, over the columns of ``bld`` (a variable of its map that is no
    column is unused by the model and counts as 0)."""
    n = len(bld.columns)
    out = []
    for rec in records:
        if not rec.intact():
            continue
        cols = [bld.col_index.get(id(v)) for v in rec.targets]
        if None in cols:
            continue
        lmap = rec.lmap
        where = np.array([bld.col_index.get(id(v), -1) for v in lmap.vars], dtype=np.int64)
        out.append(Definition(cols=cols, matrix=remap_columns(lmap.matrix, where, n), const=lmap.const, kind=rec.kind))
    return tuple(out)


def remap_columns(A, where: NDArray, n: int) -> sp.csr_matrix:
    """``A`` (CSR) with column ``j`` moved to column ``where[j]`` of ``n`` (``-1``: dropped), in
    canonical form (sorted, duplicates summed): the CSR arrays remapped in place of a round trip
    through COO (least squares' residual rows at p = 5 000 hold 2.5 million entries)."""
    A = sp.csr_matrix(A)
    new = where[A.indices]
    keep = new >= 0
    if keep.all():
        data, indices, indptr = A.data.copy(), new, A.indptr.copy()  # copies: the record keeps its own arrays
    else:
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        counts = np.bincount(rows[keep], minlength=A.shape[0])
        data, indices, indptr = A.data[keep], new[keep], np.concatenate([[0], np.cumsum(counts)])
    mat = sp.csr_matrix((data, indices, indptr), shape=(A.shape[0], n))
    mat.sum_duplicates()  # sorts the indices too; a no-op when the map keeps the column order
    return mat
