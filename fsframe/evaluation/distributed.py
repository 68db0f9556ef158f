"""Running cells on a Dask cluster (``distributed``, the optional extra ``fsframe[dask]``).

``dask="local"`` starts a :class:`distributed.LocalCluster` on the loopback interface (one
single-threaded worker process per job); any other string is a scheduler address
(``tcp://host:8786``); a :class:`distributed.Client` is used as given. The data of each dataset is
scattered to the workers once; every cell is one task running the same cell function as a serial
run (:func:`fsframe.evaluation.executor.run_cell`), so the results are the same bits. Workers need
fsframe and the plugins of the methods they run installed; a cell whose method a worker lacks fails
with a message saying so.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

from ..errors import BackendUnavailableError, InvalidOptionError
from .executor import RunClock, run_cell

__all__ = ["dask_client", "dask_execute"]


def _require():
    try:
        import distributed
    except ImportError:
        raise BackendUnavailableError("--dask / dask= needs the 'distributed' package: pip install \"fsframe[dask]\" "
                                      "(or run with --jobs N, joblib, on one machine)") from None
    return distributed


@contextlib.contextmanager
def dask_client(spec: Any, n_workers: int = 2):
    """A Dask client for ``spec`` (``"local"``, an address or a Client), closed on exit if made here."""
    distributed = _require()
    if isinstance(spec, distributed.Client):
        yield spec
        return
    if not isinstance(spec, str) or not spec:
        raise InvalidOptionError(f"dask must be 'local', a scheduler address (tcp://host:8786) or a "
                                 f"distributed.Client, got {spec!r}")
    if spec == "local":
        from joblib import cpu_count

        n = cpu_count() if n_workers is None or n_workers < 1 else n_workers  # -1: one worker per core
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                           dashboard_address=None)
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    try:
        client = distributed.Client(spec, timeout=30)
    except (OSError, ValueError, TimeoutError) as exc:
        raise InvalidOptionError(f"cannot reach the Dask scheduler at {spec}: {exc}; start one "
                                 "(dask scheduler; dask worker ADDRESS) or use --dask local") from None
    try:
        yield client
    finally:
        client.close()


def dask_execute(fold_fn: Callable, data: Sequence[tuple], tasks: Sequence, spec: Any, *, n_jobs: int,
                 raise_errors: bool, on_done: Callable | None) -> bool:
    """:func:`fsframe.evaluation.engine.execute` on a Dask cluster (see there)."""
    distributed = _require()
    with dask_client(spec, n_workers=2 if n_jobs == 1 else n_jobs) as client:  # -1: every core
        slots = max(1, sum(client.nthreads().values()))
        clock = RunClock([t.name for t in tasks], slots)
        shared = [client.scatter(list(pair), broadcast=True) for pair in data]
        futures = [client.submit(run_cell, fold_fn, i, shared[t.data][0], shared[t.data][1], t.split, t.cfg,
                                 raise_errors, pure=False, key=f"fsframe-cell-{i}-{id(tasks)}")
                   for i, t in enumerate(tasks)]
        try:
            for fut in distributed.as_completed(futures):
                i, rec = fut.result()
                clock.finished(i)
                if on_done is not None:
                    on_done(i, rec, clock)
        except KeyboardInterrupt:
            client.cancel(futures)
            return True
    return False
