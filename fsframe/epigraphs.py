"""The pricing of epigraph groups for :class:`~fsframe.working_set.WorkingSet`: a group whose
columns are a magnitude ``s_j`` and free coefficients ``w_j`` bound by rows of its own,
``s_j >= ||w_j||`` (a second-order cone, or a pair of linear rows), is priced as a whole, the
multipliers of its own rows written in closed form (see :class:`_Epigraphs`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .canonical import ProblemData


class _Epigraphs:
    """The groups whose columns are a magnitude ``s_j`` and free coefficients ``w_j`` bound by
    rows of the group's own, ``s_j >= ||w_j||``: a second-order cone ``(s_j, w_j)`` (the
    multinomial's row norms) or the pair of linear rows ``w_j - s_j <= 0``, ``-w_j - s_j <= 0``
    (a free ``w_j`` with ``s_j >= |w_j|``). Left out at zero, such a group's own rows hold with
    equality, so their multipliers are free in the dual cone: stationarity on ``w_j`` fixes them
    (``z_w = -r_w`` per entry, scaled by the row's coefficient) and ``s_j``'s reduced cost pays
    their head, which the cone needs to be at least their norm. The group stays at zero exactly
    when ``||r_w|| <= r_s`` (the group lasso's test ``||X_jᵀ v|| <= weight_j``; one entry: the
    L1 test ``|X_jᵀ v| <= weight_j``)."""

    def __init__(self, n: int, groups, s_cols, head_rows, head_coef, ent_cone, ent_rows, ent_cols, ent_coef,
                 pair_rows, pair_coef, covered, rows):
        self.groups = groups  # per epigraph: its group
        self.s_cols, self.head_rows, self.head_coef = s_cols, head_rows, head_coef  # head: coefficient of s (< 0)
        # second-order cones: the entries' epigraph, G row, column and coefficient (one entry per row)
        self.ent_cone, self.ent_rows, self.ent_cols, self.ent_coef = ent_cone, ent_rows, ent_cols, ent_coef
        # linear pairs (epigraph index into the arrays above, whose head_rows is then -1):
        # rows (k, 2) and their coefficients on w: [[row with +w, row with -w]], and on s
        self.pair_rows, self.pair_coef = pair_rows, pair_coef
        self.covered = covered  # columns (w and s) whose pricing this accounts for
        self.rows = rows  # every G row of an epigraph
        self.n = n
        self.pair_idx = self.pair_w = np.zeros(0, dtype=np.int64)  # per pair: its epigraph, its w column

    @classmethod
    def read(cls, data: ProblemData, free: NDArray, col_group: NDArray, n_groups: int) -> "_Epigraphs":
        """The epigraph groups of ``data`` (see the class): a group qualifies when its own rows
        (every entry in its columns; in ``A`` or ``G``) are exactly one such epigraph with
        ``h = 0``, each free column of the group is one entry of it, and ``s_j`` (``lb <= 0``,
        ``ub = inf``) is in no other row of its own."""
        n = data.n
        ints = np.zeros(0, dtype=np.int64)
        none = cls(n, ints, ints, ints, np.zeros(0), ints, ints, ints, np.zeros(0), np.zeros((0, 2), dtype=np.int64),
                   np.zeros((0, 4)), np.zeros(n, dtype=bool), ints)
        G = data.G.tocsr()
        if not G.shape[0] or not free.any() or not n_groups:
            return none
        local_g = _local_groups(G, col_group)
        own_rows = np.bincount(local_g[local_g >= 0], minlength=n_groups)
        if data.A.shape[0]:
            la = _local_groups(data.A.tocsr(), col_group)
            own_rows = own_rows + np.bincount(la[la >= 0], minlength=n_groups)
        counts = np.diff(G.indptr)
        h = data.h
        lb, ub = data.lb, data.ub
        found = {}  # group -> (kind, rows, s, head coefficient, [(row, col, coef)])
        bad = set()
        # second-order cones of one group: head (s, coefficient < 0), then one free entry per row
        k = data.l
        for q in data.cones:
            rows = np.arange(k, k + q)
            k += q
            g = local_g[rows]
            if q < 2 or g[0] < 0 or np.any(g != g[0]) or np.any(h[rows] != 0) or np.any(counts[rows] != 1):
                continue
            vals = G.data[G.indptr[rows]]
            cols = G.indices[G.indptr[rows]]
            s = int(cols[0])
            if vals[0] >= 0 or not (lb[s] <= 0 and np.isposinf(ub[s])) or not free[cols[1:]].all() \
                    or np.unique(cols).size != q:
                continue
            gg = int(g[0])
            (bad.add(gg) if gg in found else found.__setitem__(gg, ("soc", rows, s, float(vals[0]),
                                                                    list(zip(rows[1:], cols[1:], vals[1:])))))
        # linear pairs: two rows of one group, each with s (coefficient < 0) and w (free, +/-)
        cand = np.flatnonzero((local_g[:data.l] >= 0) & (counts[:data.l] == 2) & (h[:data.l] == 0))
        pairs: dict = {}
        for i in cand:
            lo, hi = G.indptr[i], G.indptr[i + 1]
            c, v = G.indices[lo:hi], G.data[lo:hi]
            pairs.setdefault((int(min(c)), int(max(c))), []).append((int(i), dict(zip(c.tolist(), v.tolist()))))
        for (c0, c1), rows in pairs.items():
            if len(rows) != 2:
                continue
            (i1, d1), (i2, d2) = rows
            for s, w in ((c0, c1), (c1, c0)):
                if d1[s] < 0 and d2[s] < 0 and d1[w] * d2[w] < 0 and free[w] and lb[s] <= 0 and np.isposinf(ub[s]):
                    gg = int(col_group[s])
                    plus, minus = ((i1, d1), (i2, d2)) if d1[w] > 0 else ((i2, d2), (i1, d1))
                    entry = ("pair", np.array([plus[0], minus[0]]), s,
                             np.array([plus[1][w], minus[1][w], plus[1][s], minus[1][s]]), w)
                    (bad.add(gg) if gg in found else found.__setitem__(gg, entry))
                    break
        keep = []
        for gg, e in found.items():
            if gg in bad or own_rows[gg] != len(e[1]):
                continue
            ws = [c for _, c, _ in e[4]] if e[0] == "soc" else [e[4]]
            gcols = np.flatnonzero(col_group == gg)
            # every free column of the group is an entry (nothing else free around zero in it)
            if set(np.flatnonzero(free & (col_group == gg)).tolist()) - set(ws) - {e[2]}:
                continue
            if not set(ws) <= set(gcols.tolist()):
                continue
            keep.append((gg, e))
        if not keep:
            return none
        keep.sort(key=lambda t: t[0])
        groups = np.array([gg for gg, _ in keep], dtype=np.int64)
        s_cols = np.array([e[2] for _, e in keep], dtype=np.int64)
        head_rows = np.array([e[1][0] if e[0] == "soc" else -1 for _, e in keep], dtype=np.int64)
        head_coef = np.array([e[3] if e[0] == "soc" else 0.0 for _, e in keep])
        ent = [(i, r, c, v) for i, (_, e) in enumerate(keep) if e[0] == "soc" for r, c, v in e[4]]
        ent_cone = np.array([t[0] for t in ent], dtype=np.int64)
        ent_rows = np.array([t[1] for t in ent], dtype=np.int64)
        ent_cols = np.array([t[2] for t in ent], dtype=np.int64)
        ent_coef = np.array([t[3] for t in ent], dtype=float)
        pr = [(i, e) for i, (_, e) in enumerate(keep) if e[0] == "pair"]
        pair_idx = np.array([i for i, _ in pr], dtype=np.int64)
        pair_rows = np.array([e[1] for _, e in pr], dtype=np.int64).reshape(-1, 2)
        pair_coef = np.array([e[3] for _, e in pr], dtype=float).reshape(-1, 4)
        pair_w = np.array([e[4] for _, e in pr], dtype=np.int64)
        covered = np.zeros(n, dtype=bool)
        covered[s_cols] = True
        covered[ent_cols] = True
        covered[pair_w] = True
        rows = np.concatenate([head_rows[head_rows >= 0], ent_rows, pair_rows.ravel()]).astype(np.int64)
        out = cls(n, groups, s_cols, head_rows, head_coef, ent_cone, ent_rows, ent_cols, ent_coef,
                  pair_rows, pair_coef, covered, rows)
        out.pair_idx, out.pair_w = pair_idx, pair_w
        return out

    def scores(self, data: ProblemData, g: NDArray) -> NDArray:
        """Per epigraph, ``||g_w|| / c_s``: how much its group's entries favour entering at the
        gradient ``g`` of the shared rows (:meth:`~fsframe.working_set.WorkingSet._best`)."""
        norm2 = np.zeros(self.groups.size)
        if self.ent_cols.size:
            np.add.at(norm2, self.ent_cone, (g[self.ent_cols] / self.ent_coef) ** 2 * self.head_coef[self.ent_cone] ** 2)
        if self.pair_rows.size:
            norm2[self.pair_idx] = g[self.pair_w] ** 2
        c = np.abs(np.asarray(data.c, dtype=float)[self.s_cols])
        return np.sqrt(norm2) / (c + 1e-12)

    def price(self, data: ProblemData, r: NDArray, z: NDArray, excluded: NDArray) -> tuple:
        """For the epigraphs of the ``excluded`` groups: their rows' multipliers written into
        ``z`` (returned, a copy) and their contribution added to ``r`` in place, so that ``r`` and
        ``z`` are the full problem's: ``r_w = 0`` and ``r_s`` reduced by what the head needs (it
        stays ``>= 0``, or ``= 0`` for a free ``s``, exactly when the group may stay out; else
        it is ``-(needed - r_s)``, the violation). Returns ``(z, size carried to each column)``,
        ``(z, None)`` when no epigraph is excluded."""
        on = excluded[self.groups] if self.groups.size else np.zeros(0, dtype=bool)
        if not on.any():
            return z, None
        z = z.copy()
        carried = np.zeros(self.n)
        rs = r[self.s_cols]
        # second-order cones: entry e of cone i, G coefficient a_e on w: z_e = -r_w / a_e; the head
        # (coefficient -h < 0 on s) needs z_0 >= ||z_e||, and pays h z_0 out of r_s
        e_on = on[self.ent_cone] if self.ent_cone.size else np.zeros(0, dtype=bool)
        if e_on.any():
            cone, rows, cols, coef = self.ent_cone[e_on], self.ent_rows[e_on], self.ent_cols[e_on], self.ent_coef[e_on]
            ze = -r[cols] / coef
            norm = np.sqrt(np.bincount(cone, weights=ze ** 2, minlength=self.groups.size))
            hs = -self.head_coef  # > 0 on the cones
            soc = on & (self.head_rows >= 0)
            need = norm * hs
            z0 = np.where(rs >= need, rs / np.where(hs > 0, hs, 1.0), norm)  # all of r_s when it suffices
            z[rows] = ze
            z[self.head_rows[soc]] = z0[soc]
            r[cols] = 0.0
            r[self.s_cols[soc]] = rs[soc] - hs[soc] * z0[soc]
            carried[cols] = np.abs(coef * ze)
            carried[self.s_cols[soc]] = hs[soc] * z0[soc]
        if self.pair_rows.size:
            p_on = on[self.pair_idx]
            if p_on.any():
                idx = self.pair_idx[p_on]
                w = self.pair_w[p_on]
                (ep, em, ap, am), rows = self.pair_coef[p_on].T, self.pair_rows[p_on]
                rw, rsp = r[w], rs[idx]
                # rows  ep w + ap s <= 0 (ep > 0, ap < 0) and  em w + am s <= 0 (em < 0, am < 0):
                # the cheapest multipliers making r_w + ep z_p + em z_m = 0, then more of both along
                # (-em, ep) (which keeps r_w = 0) until s's reduced cost is spent
                zp = np.where(rw < 0, -rw / ep, 0.0)
                zm = np.where(rw > 0, -rw / em, 0.0)
                need = -(ap * zp + am * zm)
                t = np.maximum(rsp - need, 0.0) / (-(ap * -em) - (am * ep))
                zp, zm = zp + t * -em, zm + t * ep
                z[rows[:, 0]], z[rows[:, 1]] = zp, zm
                r[w] = 0.0
                paid = -(ap * zp + am * zm)
                r[self.s_cols[idx]] = rsp - paid
                carried[w] = np.abs(ep * zp) + np.abs(em * zm)
                carried[self.s_cols[idx]] = paid
        return z, carried


def _local_groups(M, col_group: NDArray) -> NDArray:
    """Per row of the CSR matrix ``M``, the group that holds every entry of it (``-1``: a row
    with entries of several groups, of a column of no group, or without entries)."""
    counts = np.diff(M.indptr)
    out = np.full(M.shape[0], -1, dtype=np.int64)
    nz = counts > 0
    if not nz.any():
        return out
    g = col_group[M.indices]
    starts = M.indptr[:-1][nz]
    lo, hi = np.minimum.reduceat(g, starts), np.maximum.reduceat(g, starts)
    out[nz] = np.where((lo == hi) & (lo >= 0), lo, -1)
    return out
