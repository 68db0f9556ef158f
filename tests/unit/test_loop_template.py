"""One loop template (issue 20 item 1): every built-in loop is a ``steps()`` generator driven by
``OuterLoop.run``; no loop keeps state on the Subproblem; a loop's own answer (a bound search's
criterion, a filter's ranking) and its probes (infeasible bounds) are data the base records; a loop
that takes no ``phi`` reports the subproblem's optimum, not a surrogate penalty it never minimised."""

from __future__ import annotations

import inspect
import time
import warnings

import attrs
import numpy as np
import pytest

import fsframe
from fsframe import Status
from fsframe.backends import EcosBackend
from fsframe.errors import ConvergenceWarning, SolverFailedError
from fsframe.loops import OuterLoop, Step
from fsframe.method import resolve
from fsframe.plugins import get_registry
from fsframe.problem import Subproblem
from fsframe.testing import FailingBackend, kit_data

@pytest.mark.parametrize("name", sorted(get_registry().names("loop")))
def test_every_builtin_loop_is_a_generator_driven_by_the_base(name):
    cls = get_registry().get("loop", name)
    assert cls.run is OuterLoop.run, f"{name} overrides run()"
    assert inspect.isgeneratorfunction(cls.steps), f"{name}.steps is not a generator"
    assert list(inspect.signature(cls.steps).parameters) == ["self", "sub", "surrogate", "run"]


@pytest.mark.parametrize("method, params", [
    ("ftsvm", {"max_iter": 4}), ("rtsvm", {}), ("greedy-l1-svm", {"max_iter": 3}), ("relieff", {}),
    ("fsv", {"max_iter": 3}), ("rfs", {"max_iter": 5}), ("fs-mpm", {"delta_pos_step": 0.3, "eps": 0.1}),
])
def test_no_loop_state_on_the_subproblem(method, params):
    """The loop's state lives in its generator: a subproblem after a run has the attributes a
    subproblem has after one plain solve, nothing the loop put there (the greedy loop's
    ``sub.greedy_state`` was one)."""
    X, y = kit_data()
    res = resolve(method, **params)
    be = fsframe.select_backend("auto", res.problem_class, quadratic="quad" in res.terms)
    plain = Subproblem(res.formulation, X, y, res.terms, be)
    plain.solve(lin=np.ones(plain.n_groups)) if "lin" in res.terms else plain.solve(quad=np.ones(plain.n_groups))
    sub = Subproblem(res.formulation, X, y, res.terms, be)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res.loop.run(sub, res.surrogate, n_features=3 if method in ("relieff", "rtsvm") else None)
    extra = set(vars(sub)) - set(vars(plain))
    assert extra == set(), extra


@attrs.frozen
class OneL1Solve(OuterLoop):
    """A loop that accepts a surrogate but minimises no phi: unit L1 weights, one solve."""

    name = "one-l1-solve"
    needs_surrogate = False
    monotone = False

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        it = sub.solve(lin=np.ones(sub.n_groups))
        yield Step(it, it.objective)
        return True, "one solve"


def test_a_loop_that_ignores_the_surrogate_reports_the_subproblem_optimum():
    """Before: the base added ``sum_j phi(t_j)`` of a surrogate the loop never used to the
    reported objective (here ``exp``: a different number from the optimum it solved) whenever
    the ``zero_tol`` cut recomputed it (a large ``zero_tol`` makes it cut)."""
    X, y = kit_data()
    res = resolve(formulation="hinge", surrogate="exp", loop="single")
    loop = OneL1Solve(zero_tol=0.3)
    be = fsframe.select_backend("auto", res.formulation.problem_class(loop.terms(None)))
    sub = Subproblem(res.formulation, X, y, loop.terms(None), be)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the cut may not hold: the uncut point returns
        out = loop.run(sub, res.surrogate)
    assert "zero_tol_cut" in out.selection
    assert out.objective == pytest.approx(out.iterate.objective, rel=1e-12)
    # an independent value: C * hinge + ||w||_1 of the returned coefficients
    w, b = out.coef, float(out.iterate.intercept[0])
    hinge = float(np.maximum(0.0, 1.0 - np.where(y == y.max(), 1.0, -1.0) * (X @ w + b)).sum())
    assert out.objective == pytest.approx(hinge + np.abs(w).sum(), rel=1e-6)


@pytest.fixture(scope="module")
def mempm_data():
    rng = np.random.default_rng(3)
    m, n = 60, 8
    y = np.where(np.arange(m) < 25, 1.0, -1.0)
    X = rng.standard_normal((m, n)) * np.where(y[:, None] > 0, 0.7, 1.4)
    X[:, :3] += 0.9 * y[:, None]
    return X, y


def test_a_failed_search_chooses_among_the_points_found(mempm_data):
    """Bound search with ``raise_on_failure=False``: solver trouble at SOCP 12 ends the search,
    which still chooses by its criterion among the feasible points before it (its own
    :class:`~fsframe.loops.Choice`); the failed status is reported, not recorded as a point."""
    X, y = mempm_data
    kw = dict(method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05)
    failing = FailingBackend(EcosBackend(), 12, Status.ERROR)  # an error, not an undecided probe
    with pytest.warns(ConvergenceWarning, match="the search stops and chooses among the points found"):
        r = fsframe.fit(X, y, backend=failing, raise_on_failure=False, **kw)
    assert not r.converged and r.info["stop_reason"] == "subproblem failed: error"
    assert r.n_iter == len(r.history) == 11
    assert Status.ERROR in r.statuses
    feas = [h for h in r.history if h.params["feasible"]]
    best = max(feas, key=lambda h: (h.params["score"], h.params["bound"], -h.n_nonzero))
    assert r.info["chosen_socp"] == best.k and r.info["score"] == best.params["score"]
    with pytest.raises(SolverFailedError, match=r"subproblem 11 \(at delta_pos=.*\) ended with status error"):
        fsframe.fit(X, y, backend=failing, **kw)


def test_an_undecided_probe_is_settled_by_another_backend(mempm_data):
    """A probe that ends with neither a solution nor a claim (``unknown``: ECOS inaccurate, its
    certificate failed) is put to the other backends: from SOCP 12 on every probe is theirs. A
    feasible one is their certified optimum (a candidate); one they only claim infeasible (a claim
    fsframe cannot verify at the frontier) stays undecided, counted, and not feasible. The search
    chooses where ECOS's own does (the same SOCP, its bounds within the search's eps)."""
    X, y = mempm_data
    kw = dict(method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05)
    ref = fsframe.fit(X, y, backend="ecos", **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, backend=FailingBackend(EcosBackend(), 12, Status.UNKNOWN), **kw)
    later = r.history[11:len(ref.history)]
    assert any(h.params["feasible"] for h in later)  # decided (and solved) by another backend
    assert r.facts["n_undecided"] == sum(bool(h.params.get("undecided")) for h in r.history)
    assert all(not h.params["feasible"] for h in r.history if h.params.get("undecided"))
    # (the selection is not compared: the final re-solve with the small weights fixed at zero is
    # the injected backend's too, so it fails and the uncut solution is returned, warned)
    assert r.info["chosen_socp"] == ref.info["chosen_socp"]
    assert r.info["delta_pos"] == pytest.approx(ref.info["delta_pos"], abs=0.05)
    assert r.info["bound"] == pytest.approx(ref.info["bound"], abs=0.05)


def test_a_wrapper_of_solve_with_its_signature_runs_the_second_opinions(mempm_data, monkeypatch):
    """``Subproblem.solve`` takes ``lin``, ``lin_w``, ``quad`` and ``full``, nothing else: a third
    party's wrapper written to that signature runs a bound search whose undecided probes are put to
    another backend (the search asks :meth:`Subproblem.second_opinion` itself). The probes from SOCP
    12 on are the other backends' answers (the injected backend answers ``unknown``), or undecided
    with what they said; the wrapper saw each probe's solve. Planted (``solve(..., decide=True)`` as
    before): the wrapper's TypeError."""
    X, y = mempm_data
    real, calls, seen = Subproblem.solve, [], []

    def wrapper(self, *, lin=None, lin_w=None, quad=None, full=False):
        calls.append(lin)
        return real(self, lin=lin, lin_w=lin_w, quad=quad, full=full)

    monkeypatch.setattr(Subproblem, "solve", wrapper)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        r = fsframe.fit(X, y, method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05,
                        backend=FailingBackend(EcosBackend(), 12, Status.UNKNOWN),
                        callback=lambda rec, it: seen.append((it.result.backend, it.result.message)))
    assert len(seen) == r.n_iter > 12 and all("injected" not in msg for _, msg in seen[:11])
    # every later probe was put to the others: their answer, or undecided with what they said
    assert all("injected failure" in msg and ("solved on" in msg if who != "failing" else "second opinion" in msg)
               for who, msg in seen[11:])
    assert {who for who, _ in seen[11:]} - {"failing"}
    assert any(h.params["feasible"] for h in r.history[11:])
    assert len(calls) >= r.n_iter  # each probe's solve went through the wrapper (and the final re-solve)


def test_a_second_opinion_gets_the_limit_less_the_probes_time_and_counts_as_backend_time(mempm_data, monkeypatch):
    """``Subproblem.second_opinion`` hands the other backends the subproblem's time limit less what
    the undecided probe took (its ``seconds``; the probe sleeps 0.4 s here), and adds their time
    (a 0.3 s sleep each) to ``last_timings["backend"]``. Planted (the limit counted from the
    second opinion's start, ``_clock()``): the whole 5 s is handed on; planted (``last_timings``
    left alone): the backend time is the probe's only."""
    from fsframe.backends import ClarabelBackend, HighsBackend
    from fsframe.testing.backend import _FailingSession

    X, y = mempm_data
    real_probe, given, timings = _FailingSession.solve, [], []

    def slow_probe(self, data=None):
        if self.count + 1 == self.backend.fail_at:  # the first undecided probe only
            time.sleep(0.4)
        return real_probe(self, data)

    monkeypatch.setattr(_FailingSession, "solve", slow_probe)
    monkeypatch.setattr(FailingBackend, "honours_time_limit", True)
    monkeypatch.setattr(EcosBackend, "honours_time_limit", True)
    for backend in (ClarabelBackend, HighsBackend, EcosBackend):
        def other(self, data, options=None, _real=backend.solve):
            if len(given) < 3:
                given.append(options.time_limit)
                time.sleep(0.3)
            return _real(self, data, options)
        monkeypatch.setattr(backend, "solve", other)
    real_opinion = Subproblem.second_opinion

    def opinion(self, it):
        n = len(given)
        out = real_opinion(self, it)
        if n == 0 and given:  # the first probe's second opinion
            timings.append((self.last_timings["backend"], len(given)))
        return out

    monkeypatch.setattr(Subproblem, "second_opinion", opinion)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fsframe.fit(X, y, method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05, time_limit=5.0,
                    backend=FailingBackend(ClarabelBackend(), 3, Status.UNKNOWN))
    assert given and given[0] <= 5.0 - 0.4
    (backend_seconds, asked), = timings
    assert backend_seconds >= 0.4 + 0.3 * asked


def test_a_probe_no_backend_decides_is_not_proven_feasible(mempm_data, monkeypatch):
    """A probe no backend can decide does not fail the fit: it is warned, counted
    (``facts["n_undecided"]``), recorded as not feasible, and never a candidate — the search
    chooses among the feasible points of the probes before it, as it would had they been
    infeasible."""
    X, y = mempm_data
    kw = dict(method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05)
    monkeypatch.setattr(Subproblem, "_second_opinion", lambda self, data, options, res, started: res)
    with pytest.warns(ConvergenceWarning, match="undecided.*not proven feasible"):
        r = fsframe.fit(X, y, backend=FailingBackend(EcosBackend(), 12, Status.UNKNOWN), **kw)
    undecided = [h for h in r.history if h.params.get("undecided")]
    assert undecided and r.facts["n_undecided"] == len(undecided) == sum(h.status is Status.UNKNOWN for h in r.history)
    assert all(h.k >= 11 and not h.params["feasible"] and h.objective is None for h in undecided)
    feas = [h for h in r.history if h.params["feasible"]]
    assert feas and all(h.k < 11 for h in feas)
    best = max(feas, key=lambda h: (h.params["score"], h.params["bound"], -h.n_nonzero))
    assert r.info["chosen_socp"] == best.k and r.objective is not None


def test_probes_are_recorded_and_counted(mempm_data):
    """An infeasible probe is a history record (no objective, no non-zeros, its bounds) that
    neither stops the search nor counts as solver trouble; feasible records count NSF per
    iterate (001's footnote: ``|w_j| / max|w| > zero_tol``, the loop's ``support_scale``)."""
    X, y = mempm_data
    seen = []
    r = fsframe.fit(X, y, method="fs-mempm", rho=0.01, delta_pos_step=0.1, eps=0.05,
                    callback=lambda rec, it: seen.append((rec, it)))
    assert len(seen) == r.n_iter == len(r.history)
    probes = [(rec, it) for rec, it in seen if not rec.params["feasible"]]
    assert probes and all(it.status in (Status.INFEASIBLE, Status.INFEASIBLE_OR_UNBOUNDED) for _, it in probes)
    assert all(rec.objective is None and rec.n_nonzero is None for rec, _ in probes)
    for rec, it in seen:
        if rec.params["feasible"]:
            assert rec.n_nonzero == int(np.count_nonzero(it.t > 1e-3 * it.t.max()))


@attrs.frozen
class AuxUsingLoop(OuterLoop):
    """A loop that solves a problem of its own through ``run.aux`` (as DSO-FS's ``E`` step will):
    ``min x + 2 y  s.t.  x + y >= 1, x, y >= 0`` (optimum 1 at (1, 0)), then one L1 solve."""

    name = "aux-using"
    needs_surrogate = False
    monotone = False

    def terms(self, surrogate):
        return frozenset({"lin"})

    def steps(self, sub, surrogate, run):
        import scipy.sparse as sp

        from fsframe.canonical import ProblemData

        lp = ProblemData(c=np.array([1.0, 2.0]), A=sp.csr_matrix((0, 2)), b=np.zeros(0),
                         G=sp.csr_matrix([[-1.0, -1.0]]), h=np.array([-1.0]), lb=np.zeros(2),
                         ub=np.full(2, np.inf), l=1)
        res = run.aux.solve(lp)
        run.aux.record("tiny-lp", (res.status,))
        run.info.update(aux_x=res.x.tolist(), aux_backend=res.backend)
        it = sub.solve(lin=np.ones(sub.n_groups))
        yield Step(it, it.objective)
        return True, "one solve"


def test_a_loop_solves_its_own_problems_through_run_aux(add_components):
    """The one route of auxiliary solves: the fit driver's AuxSolver reaches the loop as
    ``run.aux``, solves on the fit's backend, and its recorded statuses come first in
    ``FitResult.statuses`` (as a formulation's do)."""
    add_components(loops=[AuxUsingLoop])
    X, y = kit_data()
    r = fsframe.fit(X, y, formulation="hinge", loop="aux-using", backend="clarabel")
    np.testing.assert_allclose(r.info["aux_x"], [1.0, 0.0], atol=1e-7)
    assert r.info["aux_backend"] == "clarabel"
    assert r.statuses[0] is Status.OPTIMAL  # the loop's auxiliary LP, then the subproblems
    assert r.statuses[1:1 + r.n_iter] == tuple(h.status for h in r.history)
