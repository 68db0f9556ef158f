"""The one runner of every evaluation: :func:`execute` runs cells serially, in a joblib pool
(:mod:`~fsframe.evaluation.executor`) or on a Dask cluster (:mod:`~fsframe.evaluation.distributed`).
:func:`fsframe.evaluation.compare`, :func:`~fsframe.evaluation.cross_validate` and ``fsframe run``
studies all go through it."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from .distributed import dask_execute
from .executor import RunClock, Task, local_execute
from .records import FoldRecord

__all__ = ["execute", "Task"]


def execute(fold_fn: Callable, data: Sequence[tuple], tasks: Sequence[Task], *, n_jobs: int = 1,
            dask: Any = None, raise_errors: bool = False,
            on_done: Callable[[int, FoldRecord, RunClock], None] | None = None) -> bool:
    """Run ``tasks`` with ``fold_fn(X, y, split, cfg, raise_errors)``; call ``on_done(index, record,
    clock)`` in this process as each cell finishes (in finishing order). ``dask`` is ``None``,
    ``"local"``, a scheduler address or a ``distributed.Client``; otherwise ``n_jobs`` joblib
    processes (1: serial, -1: every core).

    Returns True when a KeyboardInterrupt stopped the run (the cells finished before it were
    handed to ``on_done``; those in flight are lost).
    """
    if not tasks:
        return False
    if dask is not None:
        return dask_execute(fold_fn, data, tasks, dask, n_jobs=n_jobs, raise_errors=raise_errors, on_done=on_done)
    return local_execute(fold_fn, data, tasks, n_jobs=n_jobs, raise_errors=raise_errors, on_done=on_done)
