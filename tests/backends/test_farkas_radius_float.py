"""The float Farkas radius with its error bound (``fsframe.backends.claims.farkas_radius``) is
never larger than the exact rational one (``_farkas_radius_exact``), and equal to it to rounding
where it decides; where rounding cannot decide, the exact computation does."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from fsframe.backends import claims
from fsframe.backends.claims import _farkas_radius_exact, _farkas_radius_float, farkas_radius
from fsframe.canonical import ProblemData


def problem(A, b, G, h, lb, ub) -> ProblemData:
    n = len(lb)
    return ProblemData(c=np.zeros(n), A=sp.csr_matrix(np.asarray(A, dtype=float).reshape(-1, n)),
                       b=np.asarray(b, dtype=float), G=sp.csr_matrix(np.asarray(G, dtype=float).reshape(-1, n)),
                       h=np.asarray(h, dtype=float), l=len(h), lb=np.asarray(lb, dtype=float),
                       ub=np.asarray(ub, dtype=float))


def near_parallel(eps, h0=-3.0, bound=np.inf):
    """``x1 + x2 <= h0``, ``-x1 - (1 - eps) x2 <= 0``, ``|x2| <= bound``."""
    return problem(np.zeros((0, 2)), [], [[1.0, 1.0], [-1.0, -(1.0 - eps)]], [h0, 0.0],
                   [-np.inf, -bound], [np.inf, bound])


@pytest.mark.parametrize("k, rel", [(20, 3e-9), (40, 3e-3), (52, 1e-12)])
def test_a_reduced_cost_at_rounding_is_summed_exactly(k, rel):
    """``r = (1 - 1, 2^-k)``: ``r_1`` cancels to 0 and, at ``k = 52``, ``r_2`` is within the float
    sums' rounding (its sign open): those columns are summed exactly, so the radius is the exact
    ``3 * 2^k`` to rounding (finite: ``r_2`` is not taken for 0). At 20 and 40 the float sum of
    ``r_2`` cancels but its sign is certain (its bound ``2 gamma_4 * 2`` is 1.9e-9 of it at ``k =
    20``, 2e-3 at 40): its interval is kept, and the radius is below the exact one by about that."""
    data, z = near_parallel(2.0 ** -k), np.ones(2)
    exact = _farkas_radius_exact(data, np.zeros(0), z)
    fast = _farkas_radius_float(data, np.zeros(0), z)
    assert exact == 3 * 2.0 ** k
    assert Fraction(fast) <= Fraction(exact) and fast == pytest.approx(exact, rel=rel)
    assert farkas_radius(data, np.zeros(0), z) == exact  # 4 non-zeros: below EXACT_RADIUS_NNZ


def test_a_reduced_cost_that_underflows_is_not_taken_for_zero():
    """``1e-300 x <= -1`` with ``x`` free and ``z = 1e-300``: ``r = 1e-600 > 0`` exactly, 0.0 in
    float. Classified by its float, the column was taken for a zero reduced cost and the radius was
    ``inf`` (a global claim) where only ``R = 1e300`` holds. Classified by the exact sum's sign it
    is finite, positive and below the exact one; a radius beyond the largest float is that float."""
    d = problem(np.zeros((0, 1)), [], [[1e-300]], [-1.0], [-np.inf], [np.inf])
    z = np.array([1e-300])
    exact = _farkas_radius_exact(d, np.zeros(0), z)
    fast = _farkas_radius_float(d, np.zeros(0), z)
    assert exact == pytest.approx(1e300, rel=1e-12)
    assert fast is not None and 0 < fast <= exact and np.isfinite(fast)
    kept, claims.EXACT_RADIUS_NNZ = claims.EXACT_RADIUS_NNZ, 0
    try:
        assert np.isfinite(farkas_radius(d, np.zeros(0), z))
    finally:
        claims.EXACT_RADIUS_NNZ = kept
    huge = problem(np.zeros((0, 1)), [], [[1e-300]], [-1e300], [-np.inf], [np.inf])  # R = 1e300 / 1e-600
    assert _farkas_radius_exact(huge, np.zeros(0), z) == np.finfo(float).max  # 1e900 overflowed float()
    assert _farkas_radius_float(huge, np.zeros(0), z) == np.finfo(float).max


def test_the_hand_computed_radii():
    """``tests/backends/test_claims.py``'s cases, on the float path: ``R = 3 * 2^40`` (below it by
    its interval, 2e-3 wide), no answer for a margin that is not positive (the exact sums give ``0``), ``inf``
    where the bound excuses ``r_2``."""
    assert _farkas_radius_float(near_parallel(2.0 ** -40), np.zeros(0), np.ones(2)) == pytest.approx(3 * 2.0 ** 40,
                                                                                                  rel=3e-3)
    assert _farkas_radius_float(near_parallel(2.0 ** -40), np.zeros(0), np.array([0.0, 1.0])) is None  # d = 0:
    assert _farkas_radius_exact(near_parallel(2.0 ** -40), np.zeros(0), np.array([0.0, 1.0])) == 0.0  # exact decides
    assert _farkas_radius_float(near_parallel(2.0 ** -40, bound=2.0 ** 40), np.zeros(0), np.ones(2)) == np.inf


floats = st.one_of(st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
                   st.sampled_from([0.0, 1.0, -1.0, 0.5, 1.0 - 2.0 ** -52, 1e-300, 2.0 ** -40, -1e-300, 1e300,
                                    -1e300, 2.0 ** -1074, 3e-310, -3e-310]))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.integers(1, 4), st.integers(0, 3), st.integers(1, 4), st.data())
def test_the_float_radius_is_never_larger_than_the_exact_one(n, p, q, data):
    """Random small systems, certificates and boxes (entries that cancel, ``1 - 2^-52``, tiny ones):
    the float radius is at most the exact one; 0, finite or infinite where the exact one is; and
    ``farkas_radius`` beyond ``EXACT_RADIUS_NNZ`` (set to 0 here) returns it, or the exact one
    where it declines. (How close it comes depends on cancellation in
    ``r``: a reduced cost just above its error bound keeps only a few digits.)"""
    draw = data.draw
    A = [[draw(floats) for _ in range(n)] for _ in range(p)]
    G = [[draw(floats) for _ in range(n)] for _ in range(q)]
    y = np.array([draw(floats) for _ in range(p)])
    z = np.abs(np.array([draw(floats) for _ in range(q)]))
    b = [draw(floats) for _ in range(p)]
    h = [draw(floats) for _ in range(q)]
    box = st.sampled_from([np.inf, 1.0, 10.0, 0.0])
    lb = [-draw(box) for _ in range(n)]
    ub = [draw(box) for _ in range(n)]
    d = problem(A, b, G, h, lb, ub)
    exact = _farkas_radius_exact(d, y, z)
    fast = _farkas_radius_float(d, y, z)
    if fast is not None:
        assert fast <= exact
        if np.isfinite(exact) and exact > 0:
            assert 0 < fast
        else:
            assert fast == exact
    assert farkas_radius(d, y, z) == exact  # below EXACT_RADIUS_NNZ
    kept, claims.EXACT_RADIUS_NNZ = claims.EXACT_RADIUS_NNZ, 0
    try:
        assert farkas_radius(d, y, z) == (exact if fast is None else fast)
    finally:
        claims.EXACT_RADIUS_NNZ = kept


def test_terms_lost_to_rounding_do_not_enlarge_the_radius():
    """``x1 <= -3`` and a thousand rows ``1e-17 x1 <= 0``, ``z = 1``: the float sum of ``r_1`` is
    ``1.0`` (each ``1e-17`` is lost against the 1), the exact one ``1 + 1e-14``, so a radius from
    the float sums without their error bound (planted: ``err = 0``, ``m_err = 0``) is
    ``3 - 4e-15``, above the exact ``3 - 3e-14``. With the bound it is below, within 1e-12."""
    rows = 1001
    G = np.zeros((rows, 1))
    G[0, 0], G[1:, 0] = 1.0, 1e-17
    h = np.zeros(rows)
    h[0] = -3.0
    d = problem(np.zeros((0, 1)), [], G, h, [-np.inf], [np.inf])
    z = np.ones(rows)
    exact = _farkas_radius_exact(d, np.zeros(0), z)
    fast = _farkas_radius_float(d, np.zeros(0), z)
    assert 3.0 - 4e-14 < exact < 3.0 - 2e-14
    assert fast is not None and Fraction(fast) <= Fraction(exact) and fast == pytest.approx(exact, rel=1e-12)


def test_a_certificate_at_rounding_everywhere_is_left_to_the_exact_sums(monkeypatch):
    """Every reduced cost within rounding of 0 (a solver's certificate, ``G'z`` zero to its
    tolerance): summing each column exactly cost more than the exact radius (26 s against 16 s at a
    million non-zeros). Beyond ``EXACT_RADIUS_NNZ`` with more than half the non-zeros in such
    columns the float path declines and ``farkas_radius`` returns the exact radius; a certificate
    whose reduced costs have a certain sign keeps the float one (below the exact, close to it)."""
    rng = np.random.default_rng(0)
    m, n = 20, 200

    def instance(noise):
        G = rng.standard_normal((m, n))
        z = rng.uniform(0.5, 1.5, m)
        G[-1] = -(z[:-1] @ G[:-1]) / z[-1] + noise * rng.standard_normal(n)
        h = rng.uniform(0, 1, m)
        h[-1] = -(z[:-1] @ h[:-1]) / z[-1] - 1.0
        return problem(np.zeros((0, n)), [], G, h, np.full(n, -np.inf), np.full(n, np.inf)), z

    monkeypatch.setattr(claims, "EXACT_RADIUS_NNZ", 1000)
    d, z = instance(0.0)
    exact = _farkas_radius_exact(d, np.zeros(0), z)
    assert 0 < exact < np.inf
    assert _farkas_radius_float(d, np.zeros(0), z) is None
    assert farkas_radius(d, np.zeros(0), z) == exact
    d, z = instance(1e-6)  # |r_k| ~1e-6, E_k ~1e-13: certain, though beyond 1e-9 of it
    exact = _farkas_radius_exact(d, np.zeros(0), z)
    fast = _farkas_radius_float(d, np.zeros(0), z)
    assert fast is not None and Fraction(fast) <= Fraction(exact) and fast == pytest.approx(exact, rel=1e-6)
    assert farkas_radius(d, np.zeros(0), z) == fast
