"""Helpers of the whole-EM-fit tests on kernel maps (``test_box_qp_pdas.py``, ``test_svm_start.py``):
a generated Twonorm, a recorder of each dense EM step's message and the comparison of two fits."""

from __future__ import annotations

import numpy as np

import fsframe.dense_em as de


def twonorm_like(m, seed=0):
    """Twonorm's generator (Breiman 1996): two 20-dimensional Gaussians, unit covariance, means
    +-(a, ..., a) with a = 2 / sqrt(20), standardised."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(m) < 0.5, 1, -1)
    X = rng.standard_normal((m, 20)) + y[:, None] * (2.0 / np.sqrt(20.0))
    return (X - X.mean(0)) / X.std(0), y


def record_messages(mp, messages: list) -> None:
    """Patches (``mp``: a monkeypatch context) ``DenseHingeSubproblem.solve`` to append each step's
    result message to ``messages``."""
    solve = de.DenseHingeSubproblem.solve

    def recording(self, **kw):
        it = solve(self, **kw)
        messages.append(it.result.message)
        return it

    mp.setattr(de.DenseHingeSubproblem, "solve", recording)


def assert_same_fit(ours, ref):
    """Two EM fits on the dense path alike: EM iterations, support, each iteration's count, the
    objective (1e-8 relative), ``ours`` certified."""
    assert ours.info["solver_path"] == ref.info["solver_path"] == "dense_em"
    assert ours.n_iter == ref.n_iter
    assert np.array_equal(np.flatnonzero(ours.coef), np.flatnonzero(ref.coef))
    assert [h.n_nonzero for h in ours.history] == [h.n_nonzero for h in ref.history]
    assert abs(ours.objective - ref.objective) <= 1e-8 * max(1.0, abs(ref.objective))
    assert ours.certificate["status"] == "optimal"
