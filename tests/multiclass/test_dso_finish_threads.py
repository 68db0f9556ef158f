"""DSO-FS's convex finish solves its SOCPs on one Clarabel thread (``finish_threads``, measured to
cost several times less CPU on a shared machine: docs/multiclass.md): the answer is the one
Clarabel's own thread count gives — CVXPY's optimum at ``p = 1``, the same KKT point at
``p < 1``, both certified — and the finish's solves really run with the threads asked for."""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import fsframe
from fsframe import SolveOptions
from fsframe.backends.clarabel import ClarabelBackend
from fsframe.errors import ConvergenceWarning
from fsframe_multiclass.dso import DSOLoop
from fsframe_multiclass.margin import label_matrix
from fsframe_multiclass.nullspace import row_norms


def _data(seed=3, m=24, n=60, c=4):
    """Wide multi-class data (``m < n``: the hard margin holds, the finish runs)."""
    rng = np.random.default_rng(seed)
    y = np.arange(m) % c
    X = rng.normal(size=(m, n))
    X[:, :3] += 2.0 * rng.normal(size=(c, 3))[y]  # three informative features
    return X, y


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fsframe.fit(X, y, method="dso-fs", **kw)


def _order(r, n):
    t = row_norms(np.asarray(r.coef, dtype=float).reshape(-1, n).T)
    return np.argsort(-t, kind="stable")[:r.n_selected].tolist()


def _cvxpy_l21(X, y):
    """004 eq. 5 at ``p = 1`` with the bias row in the norm (eq. 2), solved by CVXPY."""
    Y = label_matrix(y)
    W, b = cp.Variable((X.shape[1], Y.shape[1])), cp.Variable(Y.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(cp.norm(W, 2, axis=1)) + cp.norm(b, 2)),
                      [cp.multiply(Y, X @ W + np.ones((X.shape[0], 1)) @ b[None, :]) >= 1])
    prob.solve(solver=cp.CLARABEL)
    return prob.value


@pytest.mark.parametrize("p", [0.5, 1.0])
def test_one_thread_and_clarabels_choice_give_the_same_certified_answer(p):
    X, y = _data()
    fits = {t: _fit(X, y, p=p, finish_threads=t) for t in (0, 1)}
    for r in fits.values():
        assert r.info["finish"] == "convex" and r.certificate["status"] == "optimal"
    a, b = fits[0], fits[1]
    assert _order(a, X.shape[1]) == _order(b, X.shape[1])
    assert b.objective == pytest.approx(a.objective, rel=1e-8)
    if p == 1.0:
        best = _cvxpy_l21(X, y)
        for r in fits.values():
            assert r.info["l2p_with_bias_row"] == pytest.approx(best, rel=1e-6)


@pytest.mark.parametrize("threads", [None, 0, 2])
def test_the_finish_solves_with_the_threads_asked(monkeypatch, threads):
    seen = []
    solve = ClarabelBackend.solve

    def spy(self, data, options=SolveOptions()):
        seen.append(options.backend_options.get("max_threads"))
        return solve(self, data, options)

    monkeypatch.setattr(ClarabelBackend, "solve", spy)
    X, y = _data()
    r = _fit(X, y, p=1.0, **({} if threads is None else {"finish_threads": threads}))
    assert r.certificate["status"] == "optimal"
    assert r.info["finish_rows"] > 0 and seen  # the finish ran on Clarabel
    assert set(seen) == {1 if threads is None else threads}  # every SOCP of the finish (default: one thread)


def test_the_fits_own_choice_and_other_backends_are_left_alone():
    loop = DSOLoop()
    given = SolveOptions(backend_options={"max_threads": 0, "tol_feas": 1e-8})
    assert loop._finish_options(given, "clarabel") is given
    plain = SolveOptions(time_limit=5.0, backend_options={"tol_feas": 1e-8})
    assert loop._finish_options(plain, "ecos") is plain
    out = loop._finish_options(plain, "clarabel")
    assert out.backend_options == {"tol_feas": 1e-8, "max_threads": 1} and out.time_limit == 5.0
    assert plain.backend_options == {"tol_feas": 1e-8}  # the fit's options are not mutated


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_a_bad_thread_count_is_refused(bad):
    from fsframe.errors import FsframeError

    with pytest.raises((FsframeError, ValueError, TypeError)):
        _fit(*_data(), p=1.0, finish_threads=bad)


def _clarabel_threads_seen(monkeypatch) -> list:
    """The ``max_threads`` of every Clarabel solver built from now on (the test's end restores)."""
    import clarabel

    seen, make = [], clarabel.DefaultSolver

    def spy(P, q, A, b, cones, settings):
        seen.append(settings.max_threads)
        return make(P, q, A, b, cones, settings)

    monkeypatch.setattr(clarabel, "DefaultSolver", spy)
    return seen


def test_the_cell_benchmarks_thread_option_reaches_the_finish(monkeypatch, load_script):
    """``benchmarks/paper004_cell_cpu.py --clarabel-threads N`` runs every Clarabel solver on ``N``
    threads: the finish's SOCPs too, whose options carry ``finish_threads`` (1) otherwise; the
    answer is the one-thread fit's."""
    from fsframe.backends import clarabel as fs_clarabel

    bench = load_script("benchmarks/paper004_cell_cpu.py", "paper004_cell_cpu")
    X, y = _data()
    ref = _fit(X, y, p=1.0)
    monkeypatch.setattr(fs_clarabel, "clarabel_settings", fs_clarabel.clarabel_settings)  # restored after
    monkeypatch.setattr(fs_clarabel, "DEFAULT_THREADS", fs_clarabel.DEFAULT_THREADS)
    seen = _clarabel_threads_seen(monkeypatch)
    bench.clarabel_threads(3)
    bench.clarabel_threads(2)  # a second call replaces the first count
    r = _fit(X, y, p=1.0)
    assert r.info["finish_rows"] > 0 and seen and set(seen) == {2}
    assert r.certificate["status"] == "optimal" and r.objective == pytest.approx(ref.objective, rel=1e-8)


def test_max_threads_in_backend_options_reaches_clarabel_only_on_the_clarabel_backend(monkeypatch):
    """What docs/backends.md says of ``backend_options={"max_threads": ...}`` on DSO-FS: the options
    go to the fit's backend, so HiGHS (the default) refuses it with a typed error, and with
    ``backend="clarabel"`` every Clarabel solver of the fit (E steps and finish) gets it."""
    from fsframe.errors import InvalidOptionError

    seen = _clarabel_threads_seen(monkeypatch)
    X, y = _data()
    with pytest.raises(InvalidOptionError, match="max_threads"):
        _fit(X, y, p=1.0, backend_options={"max_threads": 2})
    with pytest.raises(InvalidOptionError, match="clarabel: unknown option 'threads'"):
        _fit(X, y, p=1.0, backend_options={"threads": 1})
    seen.clear()
    r = _fit(X, y, p=1.0, backend="clarabel", backend_options={"max_threads": 2})
    assert r.certificate["status"] == "optimal" and r.info["finish_rows"] > 0
    assert seen and set(seen) == {2}
