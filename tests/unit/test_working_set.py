"""Working sets with certified exclusion (fsframe.working_set): the same answer as the full problem,
for every built-in formulation and loop, with the exclusion certified on the full problem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fsframe
from fsframe.backends.certificate import reduced_cost_violations, reduced_costs
from fsframe.backends.highs import HighsBackend, HighsSession
from fsframe.canonical import ProblemData
from fsframe.enums import ProblemClass, Status
from fsframe.errors import InvalidOptionError, SolverWarning
from fsframe.method import resolve, select_backend
from fsframe.problem import Subproblem
from fsframe.working_set import AGAIN, WorkingSet, WorkingSetOptions


def _data(m=24, n=150, k=4, seed=0, noise=0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    w = np.zeros(n)
    w[:k] = rng.choice([-2.0, 2.0], size=k)
    y = np.where(X @ w + noise * rng.standard_normal(m) > 0, 1, -1)
    return X, y


def _meaningful(coef, rel=1e-6):
    a = np.abs(np.asarray(coef, dtype=float))
    return a > rel * a.max()


# every built-in formulation with a sparsity slot x (single, reweighted-l1, dca, em), as resolve accepts them
ALL_COMBOS = [(f, loop, sur) for f in ("hinge", "mpm", "mempm", "mpm-equal", "margin", "l21-regression", "twsvm")
              for loop, sur in (("single", None), ("reweighted-l1", "exp"), ("dca", "exp"), ("em", "lp"))
              if not (f == "twsvm" and loop in ("dca", "em"))]


def _priced(formulation, loop):
    """Groups at a bound at zero can be priced, and so can groups whose free coefficients are
    bound only by an epigraph of their own (the multi-class row cones ``s_j >= ||W_j||``: margin,
    l21-regression; docs/working-sets.md); groups free around zero otherwise cannot: a quadratic
    penalty (EM)."""
    return formulation in ("hinge", "mpm", "mempm", "mpm-equal", "twsvm", "margin", "l21-regression") and loop != "em"


COMBOS = [c for c in ALL_COMBOS if _priced(c[0], c[1])]
UNPRICED = [c for c in ALL_COMBOS if not _priced(c[0], c[1])]


def _ids(combos):
    return ["-".join(filter(None, c)) for c in combos]


@pytest.mark.parametrize("formulation,loop,surrogate", COMBOS, ids=_ids(COMBOS))
def test_working_set_fit_equals_full_fit(formulation, loop, surrogate):
    X, y = _data(seed=[c[0] for c in ALL_COMBOS].index(formulation))
    kw = dict(formulation=formulation, loop=loop, surrogate=surrogate, max_iter=4)
    if formulation == "hinge":
        kw["C"] = 0.5
    rel = 1e-7
    if resolve(**{k: kw[k] for k in ("formulation", "loop", "surrogate")}).problem_class is ProblemClass.SOCP:
        # the loop's trajectory on an interior-point solver drifts by its tolerance (1e-8 per
        # solve); solve tightly so that the comparison measures the working set, not the solver
        # interior-point noise: the full solve leaves the ~140 "zero" coefficients at 1e-9..1e-7,
        # the working set at exactly 0; the surrogate objective sums phi over them (the subproblem
        # optima themselves agree to 1e-12)
        rel = 1e-6
        kw["backend_options"] = {"feastol": 1e-10, "abstol": 1e-10, "reltol": 1e-10}  # ECOS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, working_set=False, **kw)
        ws = fsframe.fit(X, y, working_set=WorkingSetOptions(mode=True, initial=10, batch=10), **kw)
    assert full.certificate["working_set"] is None
    if (formulation, loop) == ("l21-regression", "dca"):
        # the full path's fourth DCA step ends optimal_inaccurate on ECOS and the two paths part:
        # the supports differ by one group at ~1e-6 of the largest norm (21 against 22 groups),
        # and the working set's answer is at least as good as the full one's (8.0722282 <= 8.0722301)
        assert ws.objective <= full.objective + rel * abs(full.objective) + 1e-9
    else:
        assert np.array_equal(full.support, ws.support)
        assert ws.objective == pytest.approx(full.objective, rel=rel, abs=1e-9)
    np.testing.assert_allclose(np.asarray(ws.coef, float), np.asarray(full.coef, float), atol=1e-5)
    cert = ws.certificate
    assert cert["status"] in ("optimal", full.certificate["status"])  # never less accurate than the full solve
    # solved on a working set that left groups out, certified on the full problem
    assert cert["working_set"] is not None and cert["working_set"] < cert["n_groups"] == X.shape[1]
    assert cert["rounds"] >= 1 and cert["max_violation"] <= 1e-9
    assert abs(cert["gap"]) <= 1e-4 and cert["dual_residual"] <= 1e-4


@pytest.mark.parametrize("formulation,loop,surrogate", UNPRICED, ids=_ids(UNPRICED))
def test_groups_free_around_zero_are_solved_in_full(formulation, loop, surrogate):
    """No group of these subproblems can be priced (a quadratic penalty): even with ``mode=True``
    each is solved in full, and the certificate says so."""
    X, y = _data(seed=[c[0] for c in ALL_COMBOS].index(formulation))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fsframe.fit(X, y, formulation=formulation, loop=loop, surrogate=surrogate, max_iter=1,
                          working_set=WorkingSetOptions(mode=True, initial=10, batch=10))
    assert fit.certificate["working_set"] is None and fit.certificate["rounds"] == 0
    res = resolve(formulation=formulation, loop=loop, surrogate=surrogate)
    sub = Subproblem(res.formulation, X, y, res.terms, select_backend("auto", res.problem_class),
                     working_set=WorkingSetOptions(mode=True))
    comp = sub.compiled
    pricing = getattr(res.formulation, "pricing", None)
    if WorkingSet.possible(comp.slot, pricing, sub.ws_options):  # a pricing exists, but no group it can price
        assert not WorkingSet(comp.base, comp.slot, False, sub.ws_options).priceable.any()


def test_working_set_leaves_most_groups_out_and_certifies_on_the_full_problem():
    X, y = _data(m=60, n=1500, k=5, seed=3)
    res = fsframe.fit(X, y, "l1-svm", C=1.0)  # auto: 1500 priceable groups > 60 rows
    full = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=False)
    cert = res.certificate
    assert cert["working_set"] is not None and cert["working_set"] < 1500 / 3
    assert cert["n_groups"] == 1500 and cert["rounds"] >= 1
    assert res.objective == pytest.approx(full.objective, rel=1e-7)
    assert np.array_equal(res.support, full.support)
    # the full problem's certificate: the reported gap and residuals are those of all 1500 features
    assert abs(cert["gap"]) < 1e-8 and cert["max_violation"] == 0.0


def _late_feature_data(seed=0):
    """Feature 1 has no class-mean difference (the first working set, chosen by reduced costs at
    uniform multipliers, passes it over) but cancels the noise of feature 0, so every optimum
    uses it; 200 distractors have larger chance correlations."""
    rng = np.random.default_rng(seed)
    m = 40
    y = np.repeat([1.0, -1.0], m // 2)
    eps = rng.standard_normal(m)
    eps -= eps[y > 0].mean() * (y > 0) + eps[y < 0].mean() * (y < 0)  # zero mean in each class
    X = np.column_stack([y + 1.5 * eps, eps, 0.3 * rng.standard_normal((m, 200)) + 0.15 * y[:, None]
                         * rng.choice([-1, 1], 200)])
    return X, y


def test_a_feature_missed_by_the_first_working_set_is_found_by_pricing():
    X, y = _late_feature_data()
    res = resolve("l1-svm", C=10.0)
    be = select_backend("highs", res.problem_class)
    sub = Subproblem(res.formulation, X, y, res.terms, be, working_set=WorkingSetOptions(mode=True, initial=5))
    n = X.shape[1]
    it = sub.solve(lin=np.ones(n))
    ws = sub.working_set
    first = ws._initial(sub.compiled.data, np.zeros(n, dtype=bool))
    assert not first[1], "the construction must hide feature 1 from the first working set"
    assert abs(it.coef[1]) > 1e-3, "the optimum uses feature 1"
    assert sub.last_report.rounds >= 2 and sub.last_report.added >= 1
    full = fsframe.fit(X, y, "l1-svm", C=10.0, working_set=False)
    assert it.objective == pytest.approx(full.objective, rel=1e-7)
    np.testing.assert_allclose(it.coef, full.coef, atol=1e-6)
    sub.close()


def test_highs_grows_the_live_model_instead_of_reloading(highs_loads):
    loads = highs_loads
    X, y = _data(m=40, n=800, seed=5)
    res = resolve("l1-svm", C=1.0)
    sub = Subproblem(res.formulation, X, y, res.terms, HighsBackend(),
                     working_set=WorkingSetOptions(mode=True, initial=20, batch=20))
    it = sub.solve(lin=np.ones(800))
    assert sub.last_report.rounds >= 2
    assert len(loads) == 1  # one load, then columns appended round after round
    # the next outer-loop iteration starts from the working set reached: no new load either
    it2 = sub.solve(lin=np.full(800, 2.0))
    assert len(loads) == 1 and it2.ok
    sub.close()
    full = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=False)
    assert it.objective == pytest.approx(full.objective, rel=1e-7)


def test_restricted_problems_of_earlier_rounds_are_not_kept_alive(highs_loads):
    """Each round's restricted problem names the previous one it extends (``appended_to``); once
    that one is solved its own link is dropped, so a solve holds two restricted problems, not the
    whole chain of its rounds (at 2 000 x 20 000 their matrices summed to hundreds of MB)."""
    import gc
    import weakref

    X, y = _data(m=40, n=800, seed=5)
    res = resolve("l1-svm", C=1.0)
    sub = Subproblem(res.formulation, X, y, res.terms, HighsBackend(),
                     working_set=WorkingSetOptions(mode=True, initial=20, batch=20))
    seen = []
    orig = WorkingSet.apply

    def apply(self, data):
        R = orig(self, data)
        seen.append(weakref.ref(R))
        return R

    WorkingSet.apply = apply
    try:
        it = sub.solve(lin=np.ones(800))
    finally:
        WorkingSet.apply = orig
    gc.collect()
    assert sub.last_report.rounds >= 4 and len(highs_loads) == 1  # columns appended, never reloaded
    alive = [r() is not None for r in seen]
    assert alive[-2:] == [True, True] and not any(alive[:-2]), alive
    full = fsframe.fit(X, y, "l1-svm", C=1.0, working_set=False)
    assert it.objective == pytest.approx(full.objective, rel=1e-9)
    sub.close()


def test_reduced_cost_violations_against_a_hand_computation():
    # min -x1 - 2 x2 + x3  s.t. x1 + x2 + x3 <= 1, x >= 0; optimum x2 = 1 with z = 2
    data = ProblemData(c=np.array([-1.0, -2.0, 1.0]), A=sp.csr_matrix((0, 3)), b=np.zeros(0),
                       G=sp.csr_matrix(np.array([[1.0, 1.0, 1.0]])), h=np.array([1.0]),
                       lb=np.zeros(3), ub=np.full(3, np.inf), l=1)
    x = np.array([0.0, 1.0, 0.0])
    viol, scale = reduced_cost_violations(data, x, np.zeros(0), np.array([2.0]))
    np.testing.assert_allclose(viol, [0.0, 0.0, 0.0])  # r = (1, 0, 3): excused at x = 0 (lower bound)
    viol, _ = reduced_cost_violations(data, x, np.zeros(0), np.array([0.5]))  # a wrong multiplier
    np.testing.assert_allclose(viol, [0.5, 1.5, 0.0])  # r = (-0.5, -1.5, 1.5): x1 should enter; x2 is inside
    assert scale == 2.0


def test_pricing_rounds_exhausted_fall_back_to_the_full_problem():
    X, y = _data(m=40, n=600, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, "l1-svm", working_set=WorkingSetOptions(mode=True, initial=1, batch=1, max_rounds=2))
        full = fsframe.fit(X, y, "l1-svm", working_set=False)
    assert "pricing still found" in res.certificate["fallback"]
    assert res.objective == pytest.approx(full.objective, rel=1e-9)


def test_working_set_option_is_checked():
    X, y = _data()
    with pytest.raises(InvalidOptionError, match="working_set"):
        fsframe.fit(X, y, "l1-svm", working_set="yes")


@pytest.mark.parametrize("value", [1, 0, 1.0, "yes", None, np.int64(1)])
def test_working_set_mode_takes_auto_true_or_false_only(value):
    """``1 in ("auto", True, False)`` holds: a membership test would let 1 and 0 through, to be
    read neither as True nor as False by the code that compares with ``is``."""
    with pytest.raises(InvalidOptionError, match="mode"):
        WorkingSetOptions(mode=value)
    assert WorkingSetOptions(mode=np.bool_(True)).mode is True
    assert WorkingSetOptions(mode=np.bool_(False)).mode is False
    assert WorkingSetOptions().mode == "auto"


def test_working_set_on_conic_backends_drops_empty_rows_and_matches():
    X, y = _data(m=30, n=300, seed=4)
    for backend in ("ecos", "clarabel"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = fsframe.fit(X, y, "l1-svm", backend=backend, working_set=False)
            ws = fsframe.fit(X, y, "l1-svm", backend=backend, working_set=WorkingSetOptions(mode=True, initial=20))
        assert ws.certificate["working_set"] < 300
        assert ws.objective == pytest.approx(full.objective, rel=1e-6)
        # interior-point answers carry noise near 1e-9 on zero coefficients: compare the weights
        # that matter (a simplex answer is compared exactly above)
        assert np.array_equal(_meaningful(ws.coef), _meaningful(full.coef))


# -- verify= ------------------------------------------------------------------------------------
class _LyingSession(HighsSession):
    """HiGHS, then the point 30 % of the way to ``w = 0, b = 0`` with unit slacks (the columns
    that only loosen the rows): a feasible point with worse coefficients, whose objective is above
    the optimum the multipliers certify. (Raising the slacks alone is no lie about the model:
    fsframe settles them to the model's own.)"""

    def _invert(self, data, raw):
        sol = super()._invert(data, raw)
        if sol.x is None:
            return sol
        G = data.G.tocsc()
        loosens = np.array([np.all(G[:, j].data <= 0) and G[:, j].nnz >= 1 for j in range(data.n)])
        loosens &= np.isinf(data.ub) & (data.A.getnnz(axis=0) == 0 if data.A.shape[0] else True)
        import attrs

        return attrs.evolve(sol, x=0.7 * sol.x + 0.3 * loosens, objective=None)


class _LyingBackend(HighsBackend):
    name = "liar"

    def open(self, data, options=fsframe.backends.SolveOptions()):
        return _LyingSession(self, data, options)


def test_verify_reports_a_small_gap_on_agreeing_backends():
    X, y = _data(m=40, n=120, seed=1)
    res = fsframe.fit(X, y, "l1-svm", verify="clarabel")
    v = res.certificate["verify"]
    assert v["backend"] == "clarabel" and v["status"] == "optimal"
    assert abs(v["objective_gap"]) < 1e-6
    assert v["objective"] == pytest.approx(res.objective, rel=1e-6)


def test_verify_exposes_a_lying_backend():
    X, y = _data(m=40, n=120, seed=1)
    with pytest.warns(SolverWarning, match="verify"):
        res = fsframe.fit(X, y, "l1-svm", verify=_LyingBackend(), working_set=False)
    v = res.certificate["verify"]
    assert v["backend"] == "liar"
    assert v["status"] != Status.OPTIMAL.value  # fsframe's certificate already doubts it
    assert v["objective_gap"] < -1e-2  # the liar's objective is far above the optimum


def test_certificate_sizes_large_matrices_in_row_blocks_without_copying_them(monkeypatch):
    from fsframe.backends import kkt_terms as cert

    monkeypatch.setattr(cert, "ABS_CACHE_LIMIT", 50)
    rng = np.random.default_rng(0)
    M = sp.random(40, 30, density=0.5, format="csr", random_state=1)
    M.data -= 0.5
    before = M.data.copy()
    v = rng.random(40)
    np.testing.assert_allclose(cert.abs_rmatvec(M, v), abs(M).T @ v, rtol=1e-12)
    assert np.array_equal(M.data, before)  # the matrix is untouched


@pytest.fixture
def colon(shared_file):
    from fsframe.io import load_mat

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_mat(shared_file("colon.mat"))


@pytest.mark.parametrize("method,kw", [("l1-svm", {}), ("fsv", {}), ("em-l0", {}),
                                       (None, {"formulation": "hinge", "surrogate": "log", "loop": "dca"})])
def test_working_set_equals_full_on_colon(colon, method, kw):
    """Colon (62 x 2000, shared data): the working-set fit equals the full fit."""
    X = (colon.X - colon.X.mean(0)) / colon.X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, colon.y, method, working_set=False, **kw)
        ws = fsframe.fit(X, colon.y, method, working_set=True, **kw)
    assert np.array_equal(ws.support, full.support)
    assert ws.objective == pytest.approx(full.objective, rel=1e-7)
    if method != "em-l0":  # EM's groups are free around zero: only its fixed groups leave
        assert ws.certificate["working_set"] < 2000
    assert ws.certificate["max_violation"] <= 1e-9


def test_large_matrices_are_sliced_from_csr_without_a_column_copy(monkeypatch):
    import fsframe.working_set as wsmod

    X, y = _data(m=40, n=600, seed=7)
    ref = fsframe.fit(X, y, "l1-svm", working_set=True)
    monkeypatch.setattr(wsmod, "CSC_COPY_LIMIT", 0)
    res = fsframe.fit(X, y, "l1-svm", working_set=True)
    assert res.objective == pytest.approx(ref.objective, rel=1e-12)
    assert np.array_equal(res.support, ref.support)
    assert res.certificate["rounds"] == ref.certificate["rounds"]


def test_group_columns_and_exclusivity_count_the_magnitude_columns():
    from fsframe.slot import SlotMaps
    from fsframe.working_set import _exclusive, group_columns

    # w_j = column j (j = 0, 1); magnitude s_j = u_j + v_j over columns 2 + 2j, 3 + 2j
    W = sp.csr_matrix(np.array([[1.0, 0, 0, 0, 0, 0], [0, 1.0, 0, 0, 0, 0]]))
    S = sp.csr_matrix(np.array([[0, 0, 1.0, 1.0, 0, 0], [0, 0, 0, 0, 1.0, 1.0]]))
    slot = SlotMaps(W=W, S=S, groups=np.array([0, 1]), n_groups=2, terms=frozenset({"lin"}),
                    group_cols=(np.array([0]), np.array([1])), exclusive=True)
    assert [c.tolist() for c in group_columns(slot)] == [[0, 2, 3], [1, 4, 5]]
    assert _exclusive(slot)
    shared = SlotMaps(W=W, S=sp.csr_matrix(np.array([[0, 0, 1.0, 1.0, 0, 0], [0, 0, 0, 1.0, 1.0, 0]])),
                      groups=np.array([0, 1]), n_groups=2, terms=frozenset({"lin"}),
                      group_cols=(np.array([0]), np.array([1])), exclusive=True)
    assert not _exclusive(shared)  # column 3 in both magnitudes: no working set


def test_mpm_cones_shrink_to_the_working_set_and_auto_uses_one():
    """An MPM cone ``||[C_k'; sqrt(ridge) I] w||`` keeps, in a restricted problem, its samples' rows
    and the ridge rows of the working set's features only (``1 + m_k + |W|`` entries, not
    ``1 + m_k + n``); ``auto`` counts only the rows no group owns alone (margins, samples), so an
    MPM with n >> m is solved on a working set; later DCA steps start from the last support and
    not from every group ever priced in. Same optimum and support as the full problem."""
    import fsframe_mpm as mpm

    X, y = _data(m=40, n=400, seed=6, noise=0.3)
    yy = np.where(y == 1, 1.0, -1.0)
    delta = 0.8 * mpm.largest_bound(X, yy, mpm.DEFAULT_RHO).delta
    seen = []
    real = Subproblem._solve_restricted

    def spy(self, data):
        seen.append((data.n, data.cones))
        return real(self, data)

    opts = {"feastol": 1e-10, "abstol": 1e-10, "reltol": 1e-10}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, "l0-mpm", delta=delta, backend="ecos", working_set=False, max_iter=6,
                           backend_options=opts)
        Subproblem._solve_restricted = spy
        sizes = []
        try:
            ws = fsframe.fit(X, y, "l0-mpm", delta=delta, backend="ecos", max_iter=6, backend_options=opts,
                             callback=lambda rec, it: sizes.append(it.report.size))  # working_set="auto"
        finally:
            Subproblem._solve_restricted = real
    assert ws.certificate["working_set"] is not None and ws.certificate["max_violation"] <= 1e-9
    assert np.array_equal(ws.support, full.support)
    assert ws.objective == pytest.approx(full.objective, rel=1e-6)
    m1 = int(np.sum(y == 1))
    for n_cols, cones in seen:
        n_feat = (n_cols - 1) // 3  # columns (w, u, v) per feature, and b
        assert cones == (1 + m1 + n_feat, 1 + (40 - m1) + n_feat)
    # later steps start from the last support (and what pricing added), not from every group ever priced in
    assert len(sizes) >= 3 and max(sizes[1:]) < sizes[0]
    assert sizes[-1] <= int(np.count_nonzero(_meaningful(ws.coef))) + 5


# -- pricing and rescue on hand-made problems (each column its own group) ----------------------
def _singleton_slot(n):
    from fsframe.slot import SlotMaps

    return SlotMaps(W=sp.identity(n, format="csr"), S=None, groups=np.arange(n), n_groups=n,
                    terms=frozenset({"lin"}), group_cols=tuple(np.array([j]) for j in range(n)), exclusive=True)


def _solve_on_working_set(data, start, **options):
    """``WorkingSet.solve`` of ``data`` from the working set ``start`` (groups), HiGHS on each
    restricted problem; returns ``(result, working set)``."""
    ws = WorkingSet(data, _singleton_slot(data.n), grows=False, options=WorkingSetOptions(mode=True, **options))
    ws.seed(start)
    be = HighsBackend()
    ws.begin(data, np.zeros(0, dtype=np.int64))
    res = AGAIN
    while res is AGAIN:  # the reduction's rounds, as Subproblem.solve drives them
        res = ws.invert(data, be.solve(ws.apply(data), fsframe.backends.SolveOptions()))
    return res, ws


@pytest.mark.parametrize("d, joins", [(1e-8, True), (3e-9, True), (5e-10, False)])
def test_a_group_just_over_tol_joins_the_working_set(d, joins):
    """min -x0 - (1 + d) x1 + x2  s.t.  x0 + x1 + x2 <= 1, x >= 0, from the working set {0, 2}:
    the restricted optimum x0 = 1 has the multiplier z = 1, so x1's reduced cost is -d against
    terms of size 1 + d: a relative violation d / (1 + d). Over ``tol`` (1e-9) it must join (a
    second round); within ``tol`` it stays out (x0 = 1 stands, d worse, as the tolerance allows).
    A tolerance read 100 times too large leaves x1 out at d = 1e-8 and 3e-9 while the certificate
    (1e-6) calls x0 = 1 optimal."""
    data = ProblemData(c=np.array([-1.0, -(1.0 + d), 1.0]), A=sp.csr_matrix((0, 3)), b=np.zeros(0),
                       G=sp.csr_matrix(np.ones((1, 3))), h=np.array([1.0]), lb=np.zeros(3),
                       ub=np.full(3, np.inf), l=1)
    res, ws = _solve_on_working_set(data, [0, 2])
    assert ws.options.tol == 1e-9
    assert res.status is Status.OPTIMAL and ws.report.used
    assert bool(ws.active[1]) == joins
    assert ws.report.added == int(joins) and ws.report.rounds == 1 + int(joins)
    if joins:
        # with x1 in, the optimum is x1 = 1; a simplex may stop at x0 = 1 too, whose reduced cost
        # -d is within its own dual tolerance (HiGHS 1e-7): the objective within that of -(1 + d)
        assert res.objective == pytest.approx(-(1.0 + d), abs=1e-7)
    else:
        np.testing.assert_allclose(res.x, [1.0, 0.0, 0.0], atol=1e-12)
        assert ws.report.max_violation == pytest.approx(d / (1.0 + d), rel=1e-6)


def test_an_empty_row_that_zero_violates_brings_in_its_largest_entry():
    """min sum_j x_j  s.t.  0.001 x0 + 5 x1 + 0.5 x2 = 1, x >= 0, from the working set {3} (a
    column outside the row): the row is left without columns and ``b = 1 != 0``, so the restricted
    problem would be infeasible. The rescue brings in the group of the largest entry, x1: its
    restricted optimum x1 = 0.2 (multiplier 0.2 on the row) prices every other column out
    (reduced costs 1 - 0.2 a_j >= 0), one round. Rescuing the smallest entry (x0 = 1000) would
    need a second round to find x1."""
    a = np.array([0.001, 5.0, 0.5, 0.0])
    data = ProblemData(c=np.ones(4), A=sp.csr_matrix(a[None, :]), b=np.array([1.0]),
                       G=sp.csr_matrix((0, 4)), h=np.zeros(0), lb=np.zeros(4), ub=np.full(4, np.inf), l=0)
    res, ws = _solve_on_working_set(data, [3])
    assert res.status is Status.OPTIMAL and ws.report.used
    assert ws.order == [3, 1]  # the start, then the rescued group of the largest entry
    assert ws.report.rounds == 1 and ws.report.added == 0
    np.testing.assert_allclose(res.x, [0.0, 0.2, 0.0, 0.0], atol=1e-12)
    assert res.objective == pytest.approx(0.2, rel=1e-12)
    np.testing.assert_allclose(res.duals["y"], [-0.2], rtol=1e-9)  # reduced costs c + A'y: 1 - 5 (0.2) = 0


def _badly_scaled_l21(seed=1, m=40, n=200):
    """Columns scaled over 1e-4..1e4, three classes driven by features 0-3 (l21-regression's
    one-hot targets): ECOS's interior point leaves ~45 groups at 1e-12..3e-11 of the largest."""
    rng = np.random.default_rng(seed)
    scale = np.logspace(-4, 4, n)[rng.permutation(n)]
    X = rng.normal(size=(m, n)) * scale
    Z = X[:, :4] / np.abs(X[:, :4]).mean(0)
    rng.normal(size=(4 + m, 3))  # draws of regression targets this classification test does not use
    y = np.argmax(Z @ rng.normal(size=(4, 3)) + rng.gumbel(size=(m, 3)), axis=1)
    return X, y


def test_an_inaccurate_working_set_re_solve_does_not_keep_the_cut_groups():
    """The zero_tol cut's re-solve on the working set ends ``optimal_inaccurate`` on ECOS (a rise
    of 8e-7, beyond tol): that says nothing about the cut, so it is re-solved once on the full
    problem, certified optimal there with the rise within tol, and taken. It used to keep the
    uncut point's 91 groups (45 of them at 1e-12..3e-11) with a warning that they were part of
    the optimum, while the full problem selects 46."""
    X, y = _badly_scaled_l21()
    kw = dict(formulation="l21-regression", loop="single", backend="ecos")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = fsframe.fit(X, y, working_set=False, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ws = fsframe.fit(X, y, working_set=True, **kw)
    assert not [w for w in caught if "part of the optimum" in str(w.message)]
    W = np.asarray(full.formulation_coef()).reshape(X.shape[1], -1)
    norms = np.linalg.norm(W, axis=1)
    assert len(full.selected) == int((norms > 1e-8 * norms.max()).sum()) == 46
    assert ws.selected.tolist() == full.selected.tolist()
    assert ws.objective == pytest.approx(full.objective, rel=1e-6)
    # the working set's re-solve was inaccurate; the full re-solve certified the cut
    assert ws.statuses[1:] == (Status.OPTIMAL_INACCURATE, Status.OPTIMAL)
    assert ws.info["zero_tol_cut_full_resolve"] == "optimal"
    assert ws.info["zero_tol_cut_verified"] is True
    assert ws.certificate["status"] == "optimal" and ws.certificate["full_resolve"] is True
    assert ws.certificate["certified_on"] in ("cut problem", "unfixed problem")
    assert "fallback" not in ws.certificate  # no working set fell back: the cut asked for the full problem


@pytest.mark.parametrize("planted", ["numerical_error", "rise", "inaccurate"])
def test_an_unverifiable_cut_keeps_the_uncut_iterate_and_names_the_status(monkeypatch, planted):
    """When the full re-solve cannot certify the cut either, the uncut iterate is kept: a full
    re-solve that fails, or ends ``optimal_inaccurate`` even with its optimum within tol, is named
    by its status (not "part of the optimum"); one certified optimal whose optimum rises beyond tol
    keeps the old wording, which is then true."""
    import attrs

    X, y = _badly_scaled_l21()
    real = Subproblem.restricted

    def planted_full(self, it, keep, *, full=False):
        re = real(self, it, keep, full=full)
        if not full:
            return re
        if planted == "rise":
            return attrs.evolve(re, objective=re.objective * 1.01)
        if planted == "inaccurate":  # the full re-solve's point, its optimum within tol, but not certified
            return attrs.evolve(re, status=Status.OPTIMAL_INACCURATE,
                                result=attrs.evolve(re.result, status=Status.OPTIMAL_INACCURATE, message="planted"))
        res = re.result.__class__(Status.NUMERICAL_ERROR, None, None, "ecos", 0.0, message="planted")
        return re.__class__(res.status, None, None, None, None, None, None, 0.0, res, re.weights)

    monkeypatch.setattr(Subproblem, "restricted", planted_full)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ws = fsframe.fit(X, y, formulation="l21-regression", loop="single", backend="ecos", working_set=True)
    msgs = [str(w.message) for w in caught if "zero_tol=" in str(w.message)]
    assert len(msgs) == 1
    if planted == "rise":
        assert "part of the optimum" in msgs[0] and "unverified" not in msgs[0]
        assert ws.info["zero_tol_cut_full_resolve"] == "optimal"
        assert ws.info["zero_tol_cut_rise"] > 1e-3 * ws.objective
    elif planted == "inaccurate":
        assert "optimal_inaccurate (planted)" in msgs[0] and "part of the optimum" not in msgs[0]
        assert ws.info["zero_tol_cut_full_resolve"] == "optimal_inaccurate"
    else:
        assert "numerical_error (planted)" in msgs[0] and "part of the optimum" not in msgs[0]
        assert ws.info["zero_tol_cut_full_resolve"] == "numerical_error"
    assert ws.info["zero_tol_cut_verified"] is False
    assert len(ws.selected) > 46  # the uncut iterate's groups above 1e-12 of the largest, not a silent cut


def test_an_inexact_working_set_re_solve_within_tol_still_goes_to_the_full_problem(monkeypatch):
    """A working set's re-solve of the cut that ends ``optimal_inaccurate`` does not settle the cut
    even when its optimum is within tol (an inexact point of a constrained problem may break its
    rows): it is re-solved on the full problem, which certifies it here."""
    import attrs

    X, y = _badly_scaled_l21()
    real = Subproblem.restricted

    def planted_ws(self, it, keep, *, full=False):
        re = real(self, it, keep, full=full)
        if full:
            return re
        return attrs.evolve(re, status=Status.OPTIMAL_INACCURATE, objective=it.objective,
                            result=attrs.evolve(re.result, status=Status.OPTIMAL_INACCURATE, message="planted"))

    monkeypatch.setattr(Subproblem, "restricted", planted_ws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ws = fsframe.fit(X, y, formulation="l21-regression", loop="single", backend="ecos", working_set=True)
    assert ws.info["zero_tol_cut_full_resolve"] == "optimal"
    assert ws.info["zero_tol_cut_verified"] is True
    assert len(ws.selected) == 46


def _relaxed_l21(k):
    """l21-regression with a restatable ``relax``: group ``k``'s row cone becomes
    ``s_k + relax >= ||W_k||`` (the head row's ``h``), no longer an epigraph of its own at
    ``relax > 0`` (``W_k`` moves freely inside a ball of radius ``relax`` at ``s_k = 0``)."""
    import attrs

    from fsframe_multiclass import L21RegressionFormulation

    @attrs.frozen
    class RelaxedL21(L21RegressionFormulation):
        name = "relaxed-l21-regression"
        restatable_params = ("relax",)

        def restate(self, built, base, compiled, params):
            s = compiled.cols([built.model.s[k]])[0]
            head = base.G.tocsc()[:, s].indices  # s_k's only row: its cone's head (coefficient -1)
            assert head.size == 1
            h = np.array(base.h, dtype=float)
            h[head] = float(params["relax"])
            return base.evolve(h=h)

    return RelaxedL21()


def test_a_restated_cone_that_is_no_longer_an_epigraph_is_not_priced():
    """``restate`` changing ``h`` (not ``A`` or the bounds) must make the working set re-read its
    epigraphs: group ``k``, left out and priced as ``s_k >= ||W_k||`` before, is
    ``s_k + 0.5 >= ||W_k||`` after, which the epigraph pricing cannot price (its ``W_k`` is
    nonzero at no cost), so it joins every working set and the answer is the full problem's."""
    from fsframe.backends import ClarabelBackend

    X, y = _data(m=30, n=60, seed=4)
    n = X.shape[1]
    probe = Subproblem(_relaxed_l21(0), X, y, frozenset({"lin"}), ClarabelBackend(),
                       working_set=WorkingSetOptions(mode=True, initial=3, batch=2))
    probe.solve(lin=np.full(n, 2.0))
    assert probe.working_set is not None
    k = int(np.flatnonzero(probe.working_set.priceable & ~probe.working_set.active)[0])
    probe.close()

    def solve(mode):
        sub = Subproblem(_relaxed_l21(k), X, y, frozenset({"lin"}), ClarabelBackend(),
                         working_set=WorkingSetOptions(mode=mode, initial=3, batch=2))
        sub.solve(lin=np.full(n, 2.0))
        sub.restate(relax=0.5)
        it = sub.solve(lin=np.full(n, 2.0))
        sub.close()
        return sub, it

    _, full = solve(False)
    sub, part = solve(True)
    assert not sub.working_set.priceable[k] and sub.working_set.active[k]
    assert full.status is part.status is Status.OPTIMAL
    W = np.asarray(full.coef).reshape(n, -1)
    assert np.linalg.norm(W[k]) > 0.05  # the relaxed group is used: leaving it at zero is wrong
    assert part.objective == pytest.approx(full.objective, rel=1e-6)
    np.testing.assert_allclose(part.coef, full.coef, atol=1e-5)


def _epigraph_group_lasso(m=12, n_soc=6, n_pair=6, seed=5):
    """``min r + sum_j lam_j s_j  s.t.  ||M w - y|| <= r`` with epigraph rows of non-unit
    coefficients: per SOC group ``||(3 w_j1, -0.5 w_j2)|| <= 2 s_j`` (G rows ``-2 s``, ``-3 w``,
    ``0.5 w``), per pair group ``3 w_j - 2 s_j <= 0`` and ``-0.8 w_j - 1.5 s_j <= 0``. Columns: the SOC
    groups' ``(w_j1, w_j2, s_j)``, the pair groups' ``(w_j, s_j)``, then ``r``. Returns the data,
    its slot maps and ``(M, y, lam)``."""
    from fsframe.slot import SlotMaps

    rng = np.random.default_rng(seed)
    w_cols, s_cols, groups, col = [], [], [], 0
    for j in range(n_soc + n_pair):
        k = 2 if j < n_soc else 1
        w_cols += list(range(col, col + k))
        groups += [j] * k
        s_cols.append(col + k)
        col += k + 1
    n, r = col + 1, col
    n_w, n_g = len(w_cols), n_soc + n_pair
    M = rng.normal(size=(m, n_w))
    y = M[:, :2] @ np.array([1.0, -1.0]) + M[:, 12:14] @ np.array([0.8, 0.5]) + 0.05 * rng.normal(size=m)
    lam = np.linspace(0.6, 1.4, n_g) * 0.6 * np.linalg.norm(M.T @ y) / np.linalg.norm(y) / np.sqrt(n_g)
    rows, cols, vals, h = [], [], [], []

    def row(entries, rhs=0.0):
        for c, v in entries:
            rows.append(len(h)), cols.append(c), vals.append(v)
        h.append(rhs)

    for j in range(n_soc, n_g):  # the linear pairs (the R_+ block comes first)
        w, s = w_cols[n_soc * 2 + j - n_soc], s_cols[j]
        row([(w, 3.0), (s, -2.0)])
        row([(w, -0.8), (s, -1.5)])
    l = len(h)
    row([(r, -1.0)])  # the residual cone: r >= ||M w - y||
    for i in range(m):
        row([(w_cols[e], -M[i, e]) for e in range(n_w)], -y[i])
    for j in range(n_soc):  # the group cones: 2 s_j >= ||(3 w_j1, -0.5 w_j2)||
        row([(s_cols[j], -2.0)])
        row([(w_cols[2 * j], -3.0)])
        row([(w_cols[2 * j + 1], 0.5)])
    c = np.zeros(n)
    c[r] = 1.0
    c[s_cols] = lam
    lb = np.full(n, -np.inf)
    lb[s_cols] = 0.0
    data = ProblemData(c=c, A=sp.csr_matrix((0, n)), b=np.zeros(0),
                       G=sp.csr_matrix((vals, (rows, cols)), shape=(len(h), n)), h=np.array(h), lb=lb,
                       ub=np.full(n, np.inf), l=l, cones=(1 + m,) + (3,) * n_soc)
    W = sp.csr_matrix((np.ones(n_w), (np.arange(n_w), w_cols)), shape=(n_w, n))
    S = sp.csr_matrix((np.ones(n_g), (np.arange(n_g), s_cols)), shape=(n_g, n))
    gcols = tuple(np.array([c for c, g in zip(w_cols, groups) if g == j]) for j in range(n_g))
    slot = SlotMaps(W=W, S=S, groups=np.array(groups), n_groups=n_g, terms=frozenset({"lin"}),
                    group_cols=gcols, exclusive=True)
    return data, slot, (M, y, lam, np.array(w_cols), np.array(groups))


def test_epigraph_rows_with_non_unit_coefficients_are_priced_to_the_full_optimum():
    """The epigraph pricing divides by each entry's coefficient and pays the head's: on rows
    ``-2 s``, ``-3 w``, ``0.5 w`` (cones) and ``3 w - 2 s``, ``-0.8 w - 1.5 s`` (pairs) a working set
    started from two groups prices the others in to the full problem's optimum (Clarabel, and
    CVXPY on the same problem), certified on the full problem."""
    import cvxpy as cp

    from fsframe.backends import ClarabelBackend, SolveOptions

    data, slot, (M, y, lam, w_cols, groups) = _epigraph_group_lasso()
    be = ClarabelBackend()
    full = be.solve(data, SolveOptions())
    ws = WorkingSet(data, slot, grows=False, options=WorkingSetOptions(mode=True, initial=2, batch=1))
    assert ws.priceable.all()  # every group read as an epigraph of its own, whatever its coefficients
    ws.seed([0, 11])
    ws.begin(data, np.zeros(0, dtype=np.int64))
    res = AGAIN
    while res is AGAIN:
        res = ws.invert(data, be.solve(ws.apply(data), SolveOptions(certify=False)))
    assert full.status is res.status is Status.OPTIMAL
    assert ws.report.used and ws.report.rounds >= 2 and ws.report.added >= 1
    assert ws.report.max_violation <= 1e-9 and ws.report.size < slot.n_groups
    cert = res.certificate
    assert abs(cert.gap) <= 1e-7 and cert.dual_residual <= 1e-7

    def norms(x):
        return np.sqrt(np.bincount(groups, weights=x[w_cols] ** 2, minlength=slot.n_groups))

    t_full, t_ws = norms(full.x), norms(res.x)
    assert np.array_equal(t_full > 1e-6 * t_full.max(), t_ws > 1e-6 * t_ws.max())
    assert 2 <= int((t_ws > 1e-6 * t_ws.max()).sum()) < slot.n_groups - 2
    assert res.objective == pytest.approx(full.objective, rel=1e-7)
    # CVXPY on the same problem, written from the rows' meaning
    w = cp.Variable(M.shape[1])
    pen = []
    for j in range(slot.n_groups):
        e = np.flatnonzero(groups == j)
        if e.size == 2:
            pen.append(lam[j] * cp.norm(cp.hstack([3 * w[e[0]], -0.5 * w[e[1]]])) / 2)
        else:  # s_j >= max(1.5 w, -0.8 w / 1.5)
            pen.append(lam[j] * cp.maximum(1.5 * w[e[0]], -0.8 * w[e[0]] / 1.5))
    prob = cp.Problem(cp.Minimize(cp.norm(M @ w - y) + sum(pen)))
    prob.solve(solver=cp.CLARABEL)
    assert res.objective == pytest.approx(prob.value, rel=1e-6)
    # the pricing itself at the full optimum: with the zero groups' own multipliers removed, it
    # must restore the cone entries' (unique by stationarity, z_e = -r_w / a_e, a_e = -3 or 0.5)
    # and leave every such group's reduced costs settled (r_w = 0, r_s >= 0)
    zero = t_full <= 1e-6 * t_full.max()
    epi = ws._epi
    soc_zero = np.flatnonzero(zero[: slot.n_groups // 2])
    assert soc_zero.size and zero[slot.n_groups // 2:].any()  # both kinds left out at zero
    out = zero[epi.groups]  # per epigraph: its group is at zero
    own = np.concatenate([epi.head_rows[out & (epi.head_rows >= 0)], epi.ent_rows[out[epi.ent_cone]],
                          epi.pair_rows[out[epi.pair_idx]].ravel()])
    z0 = np.array(full.duals["z"], dtype=float)
    z0[own] = 0.0
    r, _ = reduced_costs(data, full.x, full.duals["y"], z0)
    z1, _ = epi.price(data, r, z0, zero)
    ent = np.isin(epi.groups[epi.ent_cone], soc_zero)
    np.testing.assert_allclose(z1[epi.ent_rows[ent]], np.asarray(full.duals["z"])[epi.ent_rows[ent]], atol=1e-7)
    zcols = np.concatenate([slot.group_cols[j] for j in np.flatnonzero(zero)])
    np.testing.assert_allclose(r[zcols], 0.0, atol=1e-12)
    assert r[epi.s_cols[np.isin(epi.groups, np.flatnonzero(zero))]].min() >= -1e-8
