"""HiGHS keeps one thread scheduler per process, started by its first solve: a solve asking for
another ``threads`` does not run (model status Not Set). The tests of that refusal share its loop
here (the folder's ``conftest.py`` puts it on ``sys.path``)."""

from __future__ import annotations

import pytest

from fsframe.errors import InvalidOptionError


def refused_threads(solve, threads, want: float, rel: float) -> int:
    """Call ``solve(t)`` for each ``t`` of ``threads``; a refusal must be an
    :class:`InvalidOptionError` naming ``threads=t`` and the Not Set status, a solve that runs must
    reach the objective ``want`` (to ``rel``). Returns how many were refused."""
    refused = 0
    for t in threads:
        try:
            r = solve(t)
        except InvalidOptionError as exc:
            assert f"threads={t}" in str(exc) and "Not Set" in str(exc)
            refused += 1
        else:
            assert r.objective == pytest.approx(want, rel=rel)
    return refused
