"""The memo of finished bound searches (:class:`SearchMemo`) and the block that shares it
(:func:`sharing_visits`): a search equal to a recorded one but for its ``criterion`` replays the
recorded SOCPs instead of solving them again (001's Algorithm 1 visits points by feasibility alone)."""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from typing import Iterator

import attrs
import numpy as np

from .base import OuterLoop

__all__ = ["SearchMemo", "SharedSearches", "sharing_visits", "subproblem_fingerprint"]


class SearchMemo:
    """The visits of finished bound searches, kept by a key the caller gives (:func:`sharing_visits`)
    and the ``fingerprint`` of the subproblem searched (:func:`subproblem_fingerprint`: its data,
    backend and solve options), so that a search with the same inputs and another ``criterion``
    replays them instead of solving again. 001's Algorithm 1 (``search="bisection"``) visits points
    by feasibility alone: criteria 1, 2 and any ``t`` visit the same SOCPs and differ only in the
    choice among them and its re-solve. One key holds one search per subproblem: a multi-class
    fit's one-vs-rest searches (one binary problem each) are kept side by side, and each is replayed
    only for its own problem. ``size`` searches are kept, the least recently used dropped first when
    a search is recorded under a new key and fingerprint (one recorded again replaces its entry and
    drops nothing), except those recorded inside a :func:`sharing_visits` block still open: a
    block's searches stay whole however many its fit runs (a one-vs-rest fit of ORL's 40 classes
    runs 40, more than ``size``), also while blocks in other threads record theirs, so the next
    block of that key replays every one. When its block ends they are ordinary entries, dropped
    least recently used first by the next search recorded under a new key and fingerprint: after
    such a search the memo holds ``size`` searches or fewer besides the open blocks' (a key reused
    on other data in later blocks keeps no search of the earlier data beyond that). ``hits`` and
    ``misses`` count searches replayed and searches solved, ``partial`` the solved ones that
    replayed some visits first, ``refused`` the lookups whose key was kept only for other
    subproblems (other data, e.g. another split or another class of a multi-class fit, or another
    backend): the key is only a hint. Thread-safe (a lock)."""

    def __init__(self, size: int = 16):
        self.size = int(size)
        self._kept: "OrderedDict[object, tuple]" = OrderedDict()
        self._lock = threading.Lock()
        self._open: set = set()  # the blocks (SharedSearches.block) still open: their searches stay
        self.hits = 0
        self.misses = 0
        self.partial = 0
        self.refused = 0

    def get(self, key, loop: OuterLoop, lin: np.ndarray, formulation=None, fingerprint=None) -> list | None:
        """The recorded visits of ``key`` when they were made by a search equal to ``loop`` in
        every field but ``criterion``, with the same slot weights ``lin``, of an equal
        ``formulation``, on data and backend of the same ``fingerprint``; else ``None``."""
        with self._lock:
            got = self._kept.get((key, fingerprint))
            if got is None:
                self.refused += any(k == key for k, _ in self._kept)  # the key kept for other subproblems
                return None
            if got[0] != _without_criterion(loop) or not np.array_equal(got[1], lin):
                return None
            try:
                if not bool(got[2] == formulation):
                    return None
            except Exception:  # a formulation whose fields do not compare (arrays): not shared
                return None
            self._kept.move_to_end((key, fingerprint))
            return got[3]

    def put(self, key, loop: OuterLoop, lin: np.ndarray, visits: list, formulation=None,
            fingerprint=None, block=None) -> None:
        """Keep ``visits`` (``(point, iterate)`` pairs) under ``key`` and ``fingerprint``: of each
        iterate only what a replay reads (status, point, coefficients, intercept, group norms,
        objective; the solver's raw answer is dropped). ``block`` is the recording
        :func:`sharing_visits` block's token (:attr:`SharedSearches.block`): while that block is
        open the entry is not dropped to make room."""
        kept = [(point, _lean(it)) for point, it in visits]
        with self._lock:
            new = (key, fingerprint) not in self._kept
            self._kept[(key, fingerprint)] = (_without_criterion(loop), np.array(lin), formulation, kept, block)
            self._kept.move_to_end((key, fingerprint))
            while new and len(self._kept) > self.size:
                old = next((k for k, e in self._kept.items() if e[4] is None or e[4] not in self._open), None)
                if old is None:  # only open blocks' searches are left: they stay whole
                    break
                del self._kept[old]

    def _opened(self, block) -> None:
        with self._lock:
            self._open.add(block)

    def _closed(self, block) -> None:
        with self._lock:
            self._open.discard(block)

    def count(self, *, replayed: bool, partial: bool = False) -> None:
        """Count one finished search: replayed (a hit), else solved (a miss; ``partial`` when it
        replayed some visits first). Under the lock, as every other count."""
        with self._lock:
            if replayed:
                self.hits += 1
            else:
                self.misses += 1
                self.partial += bool(partial)

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self.hits = self.misses = self.partial = self.refused = 0

    def __len__(self) -> int:
        return len(self._kept)


def _lean(it):
    """``it`` without the solver's raw answer (``result.raw``), which a replay never reads."""
    if getattr(it.result, "raw", None) is None:
        return it
    return attrs.evolve(it, result=attrs.evolve(it.result, raw=None))


def subproblem_fingerprint(sub) -> str:
    """A digest of what a search's SOCPs depend on besides the loop: the subproblem's data (``X``
    and ``y`` by value, dense or sparse), its backend's name and its solve options. A
    :class:`SearchMemo` replays an entry only for the fingerprint it was recorded with."""
    import hashlib

    import scipy.sparse as sp

    h = hashlib.sha256()
    for a in (sub.X, sub.y):
        if sp.issparse(a):
            a = sp.csr_matrix(a)
            parts = (a.data, a.indices, a.indptr)
        else:
            parts = (np.asarray(a),)
        h.update(repr(getattr(a, "shape", None)).encode())
        for part in parts:
            part = np.ascontiguousarray(part)
            h.update(part.dtype.str.encode())
            h.update(part.tobytes() if part.dtype.kind != "O" else repr(part.tolist()).encode())
    h.update(repr((getattr(sub.backend, "name", sub.backend), getattr(sub, "options", None))).encode())
    return h.hexdigest()


_SHARING: contextvars.ContextVar = contextvars.ContextVar("bound_search_sharing", default=None)


@attrs.define
class SharedSearches:
    """What the searches inside one :func:`sharing_visits` block did (the object the block
    yields): ``replayed`` and ``solved`` count its own searches, whatever other threads or
    interleaved blocks do with the same memo meanwhile (the memo's ``hits`` and ``misses`` are
    the process's totals). The counters need no lock: the block's object is reached only through a
    :class:`contextvars.ContextVar` set by the block, so only searches run in that context (one
    after the other; a thread started inside does not inherit it) increment them."""

    memo: SearchMemo
    key: object
    replayed: int = 0
    solved: int = 0
    block: object = attrs.field(factory=object, eq=False, repr=False)  # tags the searches it records


@contextlib.contextmanager
def sharing_visits(memo: SearchMemo, key) -> Iterator[SharedSearches]:
    """Within this block a :class:`~fsframe.loops.bound_search.BoundSearch` with ``search="bisection"``
    records its visits in ``memo`` under ``key`` (hashable), or replays those recorded there by a search equal to it but
    for ``criterion``, with the same slot weights (the L1 weights ``phi'(0)``: 1 with the ``l1``
    surrogate and without one, so a search without a surrogate is FS-MEMPM's): each
    visited point's solved iterate is reused instead of solving that SOCP, and only the choice and
    its re-solve at the chosen bounds are computed. ``key`` is a hint: an entry is replayed only
    when the subproblem's data, backend and solve options are those it was recorded with
    (:func:`subproblem_fingerprint`; the memo keeps a search per key and fingerprint, so the
    one-vs-rest searches of a multi-class fit each replay their own; a key kept only for other
    subproblems is solved afresh and counted in ``memo.refused``),
    and the loop's fields, the weights and the formulation (``==``) agree. Replayed visits are
    checked point by point against the ones the search asks for (a search that asks for another point solves from there on). The
    answer is the one a search without the memo returns; the history's seconds are the replay's.
    Yields the block's own account (:class:`SharedSearches`)."""
    share = SharedSearches(memo, key)
    memo._opened(share.block)
    token = _SHARING.set(share)
    try:
        yield share
    finally:
        _SHARING.reset(token)
        memo._closed(share.block)


def _without_criterion(loop: OuterLoop) -> OuterLoop:
    return attrs.evolve(loop, criterion=1)
