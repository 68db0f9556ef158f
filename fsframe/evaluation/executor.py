"""Where the cells of an evaluation run: in this process, in a joblib pool or on a Dask cluster.

A *cell* is one fit of one configuration on one split of one dataset. Every engine runs the same
cell function (:func:`run_cell`) on the same inputs, with one BLAS thread, so a cell's result does
not depend on where it ran (bit for bit, timing fields aside). Finished cells are handed to the
caller in the order they finish (``on_done``), so a caller can store each one at once and an
interrupted run loses only the cells in flight.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any, Callable, Sequence

import attrs
import numpy as np

from ..dataset import is_sparse
from ..errors import UnknownComponentError
from ..plugins import get_registry
from .records import FoldRecord

__all__ = ["Task", "run_cell", "local_execute", "RunClock", "data_fingerprint"]


@attrs.frozen(eq=False)
class Task:
    """One cell to run: ``data`` indexes the list of ``(X, y)`` pairs given to :func:`execute`."""

    data: int
    split: Any  # fsframe.evaluation.splits.Split
    cfg: Any  # fsframe.evaluation.config._Config
    name: str = ""


def _missing_components(cfg) -> list[str]:
    """Components ``cfg`` names that this process's registry lacks."""
    reg = get_registry()
    names = [("method", cfg.method), ("backend", cfg.backend)]
    names += [(kind, (cfg.components.get(kind) or {}).get("name")) for kind in ("formulation", "surrogate", "loop")]
    return [f"{kind} {name!r}" for kind, name in names
            if name and name != "none" and name not in reg.entries.get(kind, {})]


def run_cell(fold_fn: Callable, i: int, X, y, split, cfg, raise_errors: bool) -> tuple[int, FoldRecord]:
    """Run one cell with one BLAS/OpenMP thread (so that serial, pooled and cluster runs agree to the
    bit); a component missing in this process (a worker without the plugin) fails the cell with a
    message saying so."""
    missing = _missing_components(cfg)
    if missing:
        msg = (f"{', '.join(missing)} not installed on worker {platform.node()} (pid {os.getpid()}): install "
               "the package providing it on every worker (pip install <plugin>), then rerun")
        if raise_errors:
            raise UnknownComponentError(msg)
        return i, FoldRecord(label=cfg.label, repeat=split.repeat, fold=split.fold, n_train=int(split.train.size),
                             n_test=int(split.test.size), ok=False, error_type="UnknownComponentError", error=msg,
                             train=split.train, test=split.test)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return i, fold_fn(X, y, split, cfg, raise_errors)


class RunClock:
    """Estimated time left and the slowest cell in flight.

    ``slots`` cells run at once; a cell counts as running from the moment a slot frees for it (the
    submission order is the start order in every engine), which is exact for a serial run and an
    estimate for a pool or a cluster.
    """

    def __init__(self, names: Sequence[str], slots: int):
        self.names = list(names)
        self.slots = max(1, int(slots))
        self.t0 = time.perf_counter()
        self.unfinished: list[int] = list(range(len(names)))
        self.started: dict[int, float] = {}
        self.done = 0
        self._fill()

    def _fill(self) -> None:
        now = time.perf_counter()
        for j in self.unfinished[: self.slots]:
            self.started.setdefault(j, now)

    def finished(self, j: int) -> None:
        if j in self.started:
            self.started.pop(j)
        try:
            self.unfinished.remove(j)
        except ValueError:
            pass
        self.done += 1
        self._fill()

    def eta(self) -> float | None:
        """Seconds left: the mean pace so far times the cells left."""
        if not self.done:
            return None
        return (time.perf_counter() - self.t0) / self.done * len(self.unfinished)

    def slowest(self) -> tuple[str, float] | None:
        """``(name, seconds running)`` of the longest-running unfinished cell."""
        if not self.started:
            return None
        j = min(self.started, key=lambda k: self.started[k])
        return self.names[j], time.perf_counter() - self.started[j]


def local_execute(fold_fn: Callable, data: Sequence[tuple], tasks: Sequence[Task], *, n_jobs: int = 1,
                  raise_errors: bool = False,
                  on_done: Callable[[int, FoldRecord, RunClock], None] | None = None) -> bool:
    """:func:`fsframe.evaluation.engine.execute` in this process (``n_jobs=1``) or a joblib pool."""
    if n_jobs != 1 and len(tasks) > 1:
        from joblib import cpu_count

        slots = min(cpu_count() if n_jobs < 0 else n_jobs, len(tasks))
    else:
        slots = 1
    clock = RunClock([t.name for t in tasks], slots)
    try:
        if slots == 1:
            results = (run_cell(fold_fn, i, *data[t.data], t.split, t.cfg, raise_errors) for i, t in enumerate(tasks))
        else:
            from joblib import Parallel, delayed

            results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
                delayed(run_cell)(fold_fn, i, *data[t.data], t.split, t.cfg, raise_errors)
                for i, t in enumerate(tasks))
        for i, rec in results:
            clock.finished(i)
            if on_done is not None:
                on_done(i, rec, clock)
    except KeyboardInterrupt:  # Ctrl-C: stop; what finished was already handed over
        return True
    return False


def data_fingerprint(X, y) -> str:
    """SHA-256 of the data's shape, dtype and bytes (features and labels): a cell's data identity."""
    import hashlib

    h = hashlib.sha256()
    ya = np.asarray(y)
    if is_sparse(X):  # the canonical CSR arrays (a dense twin of the data hashes differently)
        Xc = X.tocsr()
        Xc.sum_duplicates()
        h.update(repr(("csr", Xc.shape, Xc.dtype.str)).encode())
        for a in (Xc.indptr.astype(np.int64), Xc.indices.astype(np.int64), Xc.data):
            h.update(np.ascontiguousarray(a).tobytes())
    else:
        Xa = np.ascontiguousarray(X)
        h.update(repr((Xa.shape, Xa.dtype.str)).encode())
        h.update(Xa.tobytes())
    h.update(repr(ya.tolist()).encode())
    return h.hexdigest()
