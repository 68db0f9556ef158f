"""The suite's hypothesis profile (``tests/conftest.py``): the same examples on every run, no
example database (nothing found on one machine replays on another), so a test that passes here
passes on every fresh clone with the same hypothesis version."""

from __future__ import annotations

from hypothesis import settings


def test_hypothesis_is_derandomised_without_a_database():
    s = settings.default
    assert s.derandomize is True
    assert s.database is None
    assert s.deadline is None
