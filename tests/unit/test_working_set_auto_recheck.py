"""A working set chosen by ``working_set="auto"`` whose answer is not certified OPTIMAL: the full
problem is solved once more and the better-certified answer kept (the certificate's ``recheck``)."""

import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.enums import Status
from fsframe.problem import Subproblem
from fsframe.working_set import WorkingSet


def ill_scaled(m=60, n=300, seed=1):
    """60 x 300 logistic data with feature scales 1e-4 ... 1e4: ECOS ends ``optimal_inaccurate``."""
    rng = np.random.default_rng(seed)
    y = np.arange(m) % 2
    X = rng.standard_normal((m, n))
    X[:, :4] += 0.8 * y[:, None]
    X *= np.logspace(-4, 4, n)[rng.permutation(n)]
    return X, np.where(y == 1, 1, -1)


def fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fsframe.fit(X, y, method="l1-logistic", C=1.0, **kw)


def test_ecos_ill_scaled_auto_rechecks_on_the_full_problem():
    X, y = ill_scaled()
    r = fit(X, y, backend="ecos", working_set="auto")
    assert r.certificate["status"] == "optimal_inaccurate"
    # both answers only optimal_inaccurate: neither is better certified, the working set's (of lower
    # objective: 0.041030 against 0.041036) stays
    assert r.certificate["recheck"] == ("working set optimal_inaccurate, full problem optimal_inaccurate: "
                                        "kept the working set's answer")
    asked = fit(X, y, backend="ecos", working_set=True)  # asked for: no recheck
    assert "recheck" not in asked.certificate


def test_full_problem_kept_when_it_is_certified_optimal(monkeypatch):
    """The working set's answer downgraded to optimal_inaccurate (as ECOS's is above): the full
    problem's OPTIMAL answer replaces it, equal to a fit without a working set."""
    X, y = ill_scaled()
    plain = fit(X, y, backend="clarabel", working_set=False)
    invert = WorkingSet.invert

    def inaccurate(self, data, res):
        out = invert(self, data, res)
        return attrs.evolve(out, status=Status.OPTIMAL_INACCURATE) if hasattr(out, "status") else out

    monkeypatch.setattr(WorkingSet, "invert", inaccurate)
    r = fit(X, y, backend="clarabel", working_set="auto")
    assert r.certificate["recheck"] == ("working set optimal_inaccurate, full problem optimal: "
                                        "kept the full problem's answer")
    assert r.certificate["status"] == "optimal"
    assert r.certificate["working_set"] is None
    assert r.objective == pytest.approx(plain.objective, rel=1e-7)
    np.testing.assert_array_equal(r.support, plain.support)
    asked = fit(X, y, backend="clarabel", working_set=True)  # asked for: its answer stands
    assert "recheck" not in asked.certificate


class Calls(list):
    """The ``n_solves`` at each full solve; ``results``: what each returned."""


def spy_full_solves(monkeypatch):
    """Count the full problem's solves (a recheck's, a fallback's) of every fit that follows."""
    calls = Calls()
    solve_full = Subproblem._solve_full

    def counted(self, data):
        calls.append(self.n_solves)
        out = solve_full(self, data)
        counted.results.append(out)
        return out

    counted.results = []

    monkeypatch.setattr(Subproblem, "_solve_full", counted)
    calls.results = counted.results
    return calls


def test_a_recheck_runs_once_per_subproblem(monkeypatch):
    """l0-logistic (DCA) on ECOS: each of the three outer iterations' working-set answers is
    ``optimal_inaccurate``, and so was the first recheck's full answer: the next two rechecks were
    two more full solves for nothing. Now the first recheck decides for the subproblem."""
    X, y = ill_scaled()
    calls = spy_full_solves(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="l0-logistic", C=1.0, backend="ecos", working_set="auto")
    assert len(r.history) == 3
    assert calls == [0]  # the first subproblem solve's recheck only
    assert r.certificate["working_set"] is not None  # the working set's answers stand


def test_once_the_full_answer_won_the_full_problem_is_solved(monkeypatch):
    """Clarabel, the working set's answers downgraded to optimal_inaccurate: the first recheck's
    OPTIMAL full answer wins, and every later solve is of the full problem (no working set, no
    second recheck), equal to a fit without a working set."""
    X, y = ill_scaled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = fsframe.fit(X, y, method="l0-logistic", C=1.0, backend="clarabel", working_set=False)
    invert, begin = WorkingSet.invert, WorkingSet.begin
    began = []

    def inaccurate(self, data, res):
        out = invert(self, data, res)
        return attrs.evolve(out, status=Status.OPTIMAL_INACCURATE) if hasattr(out, "status") else out

    def counted_begin(self, *a):
        began.append(1)
        return begin(self, *a)

    monkeypatch.setattr(WorkingSet, "invert", inaccurate)
    monkeypatch.setattr(WorkingSet, "begin", counted_begin)
    calls = spy_full_solves(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fsframe.fit(X, y, method="l0-logistic", C=1.0, backend="clarabel", working_set="auto")
    assert len(r.history) == len(plain.history) >= 2
    assert len(calls) == len(r.history) and calls[0] == 0  # one full solve per iteration, the first a recheck
    assert len(began) == 1  # the working set ran for the first solve only
    assert r.certificate["working_set"] is None
    assert "the full problem is solved" in r.certificate["recheck"]
    assert r.objective == pytest.approx(plain.objective, rel=1e-7)
    np.testing.assert_array_equal(r.support, plain.support)


@pytest.mark.parametrize("seed", [3, 4])
def test_on_a_status_tie_the_lower_objective_is_kept(monkeypatch, seed):
    """ECOS, both answers ``optimal_inaccurate`` (``ill_scaled(3)``, ``(4)``): the one of lower
    objective is kept. Here the working set's answer is made worse (its objective raised by 1, as
    fsframe would measure a point off the optimum); the rank on status alone kept it."""
    X, y = ill_scaled(seed=seed)
    invert = WorkingSet.invert
    calls = spy_full_solves(monkeypatch)

    def worse(self, data, res):
        out = invert(self, data, res)
        return attrs.evolve(out, objective=out.objective + 1.0) if hasattr(out, "status") else out

    monkeypatch.setattr(WorkingSet, "invert", worse)
    r = fit(X, y, backend="ecos", working_set="auto")
    assert r.certificate["recheck"] == ("working set optimal_inaccurate, full problem optimal_inaccurate: kept "
                                        "the full problem's answer (same status, lower objective)")
    assert r.certificate["working_set"] is None
    assert calls[0] == 0  # the recheck: later solves (the cut's) are of the full problem
    # the full answer's (the fit's own objective is of its cut point), not the raised one's
    assert r.objective == pytest.approx(calls.results[0].objective, rel=1e-3)


def test_the_recheck_gets_what_is_left_of_the_time_limit(monkeypatch):
    """``time_limit`` bounds the whole subproblem solve: the recheck's full solve is opened with
    what the working set left of it, not a fresh limit."""
    X, y = ill_scaled()
    invert, on = WorkingSet.invert, Subproblem._on
    limits = []

    def inaccurate(self, data, res):
        out = invert(self, data, res)
        return attrs.evolve(out, status=Status.OPTIMAL_INACCURATE) if hasattr(out, "status") else out

    def spy(self, name, data, options=None):
        if name == "_full_session":
            limits.append(None if options is None else options.time_limit)
        return on(self, name, data, options)

    monkeypatch.setattr(WorkingSet, "invert", inaccurate)
    monkeypatch.setattr(Subproblem, "_on", spy)
    r = fit(X, y, backend="clarabel", working_set="auto", time_limit=50.0)
    assert "kept the full problem's answer" in r.certificate["recheck"]
    assert limits and 0 < limits[0] < 50.0


def test_a_path_point_does_not_inherit_the_recheck_of_an_earlier_point(monkeypatch):
    """Along a C path one subproblem is restated from point to point (the hinge's ``C``, ``warm ==
    "restated"``): the
    recheck's verdict at one point must not carry over. The working set's answers are downgraded at
    the first point only, so the full problem's answer wins there; the second point tries its working
    set again (its own answer stands, certified OPTIMAL) and equals its separate fit."""
    X, y = ill_scaled()
    invert, begin = WorkingSet.invert, WorkingSet.begin
    downgrade, began = [True], []

    def inaccurate(self, data, res):
        out = invert(self, data, res)
        if downgrade and hasattr(out, "status"):
            return attrs.evolve(out, status=Status.OPTIMAL_INACCURATE)
        return out

    def counted_begin(self, *a):
        began.append(len(downgrade))
        return begin(self, *a)

    monkeypatch.setattr(WorkingSet, "invert", inaccurate)
    monkeypatch.setattr(WorkingSet, "begin", counted_begin)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = fsframe.path(X, y, "l1-svm", C=[1.0, 0.5], backend="highs", working_set="auto",
                         progress=lambda point: downgrade.clear())
    assert [q.warm for q in p.points] == ["cold", "restated"]
    first, second = (q.result for q in p.points)
    assert "kept the full problem's answer" in first.certificate["recheck"]
    assert 0 in began  # the second point's solves went through its working set again
    assert second.certificate["working_set"] is not None and "recheck" not in second.certificate
    assert second.certificate["status"] == "optimal"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = fsframe.fit(X, y, method="l1-svm", C=0.5, backend="highs", working_set="auto")
    assert second.objective == pytest.approx(alone.objective, rel=1e-7)
    np.testing.assert_array_equal(second.support, alone.support)


def test_ecos_both_inaccurate_the_user_is_told_which_answer_is_returned():
    """ECOS on ill-scaled logistic: the working set's and the full problem's answers are both
    ``optimal_inaccurate``, and the working set's (lower objective) is kept. The user gets a
    SolverWarning naming the status and which answer was kept, and a ConvergenceWarning that the
    ``zero_tol`` cut is unverified (its re-solve, on the full problem, is inexact too): so the
    answer returned is the uncut one, denser than the fit without a working set (whose inexact
    re-solve is judged within tol there), while its objective agrees with Clarabel's certified
    optimum to the accuracy ECOS reached."""
    X, y = ill_scaled()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fsframe.fit(X, y, method="l1-logistic", C=1.0, backend="ecos", working_set="auto")
    said = [str(w.message) for w in caught if issubclass(w.category, fsframe.errors.SolverWarning)]
    assert any("optimal_inaccurate" in m and "kept the working set's answer" in m for m in said), said
    cut = [str(w.message) for w in caught if issubclass(w.category, fsframe.errors.ConvergenceWarning)]
    assert any("status optimal_inaccurate" in m and "the cut is unverified" in m for m in cut), cut
    assert r.certificate["working_set"] is not None and r.certificate["status"] == "optimal_inaccurate"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, method="l1-logistic", C=1.0, backend="ecos", working_set=False)
        exact = fsframe.fit(X, y, method="l1-logistic", C=1.0, backend="clarabel", working_set=False)
    assert exact.certificate["status"] == "optimal"
    assert r.support.sum() > full.support.sum() > exact.support.sum()  # 101 > 44 > 28: the uncut answer
    assert r.objective == pytest.approx(exact.objective, rel=1e-4)
    assert full.objective == pytest.approx(exact.objective, rel=1e-4)
