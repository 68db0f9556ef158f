"""Defects at the seams between issue 13's parts (working sets, certificates, paths, lazy imports,
deferred rows, one-vs-rest), each found in review and fixed; one test per finding."""

from __future__ import annotations

import warnings

import attrs

import numpy as np
import pytest

import fsframe


def _data(m=60, n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    w = np.zeros(n)
    w[:5] = [3.0, -2.0, 2.0, 1.5, -1.0]
    y = np.sign(X @ w + 0.3 * rng.standard_normal(m))
    return X, y


# -- finding 1: one-vs-rest's cross-class cut left the per-class certificates "optimal" -----------
def test_one_vs_rest_union_cut_resolves_each_class_on_what_it_keeps():
    """With ``n_features=r`` one-vs-rest keeps the r features of the union that score highest. A
    class that lost features is re-solved on the ones it keeps (its subproblem, still open), so its
    coefficients are a certified optimum with the objective they attain: here the L1-SVM on those
    columns, fitted directly. (Before: the coefficients were zeroed without re-solving, the
    objective unknown, the certificate 'cut'.)"""
    X, _ = _data()
    rng = np.random.default_rng(3)
    y3 = rng.integers(0, 3, X.shape[0])
    X = X.copy()
    X[:, 0] += y3
    X[:, 1] -= y3
    full = fsframe.fit(X, y3, "l1-svm")
    res = fsframe.fit(X, y3, "l1-svm", n_features=3)
    assert res.n_selected == 3 and res.objective is not None
    n_cut = 0
    for c, (pc, cert) in enumerate(zip(res.per_class, res.certificate["per_class"])):
        assert cert is pc.certificate
        assert cert["certifies_returned"] is True and cert["status"] == "optimal"
        if pc.info["n_features_union_cut"]:
            n_cut += 1
            assert pc.info["union_cut_resolved"] is True
            alone = fsframe.fit(X[:, pc.support], (y3 == c).astype(int), "l1-svm", n_features=int(pc.support.sum()))
            np.testing.assert_allclose(pc.coef[pc.support], alone.coef, rtol=1e-6, atol=1e-8)
            assert pc.objective == pytest.approx(alone.objective, rel=1e-7)
    assert n_cut >= 1  # the data make the union of the classes' supports exceed 3
    for cert in full.certificate["per_class"]:
        assert cert["certifies_returned"] is True and cert["status"] == "optimal"


def test_one_vs_rest_union_cut_whose_resolve_fails_is_marked_cut(monkeypatch):
    """When a class's re-solve on the kept features fails, its coefficients are cut without
    re-solving: no objective, a certificate that says 'cut' (the uncut point's status kept as
    ``certified_status``), a SolverWarning naming the class, and the failed status recorded."""
    import fsframe.one_vs_rest
    from fsframe.problem import Subproblem

    X, _ = _data()
    rng = np.random.default_rng(3)
    y3 = rng.integers(0, 3, X.shape[0])
    X = X.copy()
    X[:, 0] += y3
    X[:, 1] -= y3
    real = Subproblem.restricted

    def failing(self, it, keep):
        out = real(self, it, keep)
        res = attrs.evolve(out.result, status=fsframe.Status.NUMERICAL_ERROR, x=None, message="injected")
        return attrs.evolve(out, status=res.status, x=None, result=res)

    resolve_cut = fsframe.one_vs_rest._resolve_cut

    def resolve_cut_failing(*args):  # the class's re-solve after the cross-class cut fails, nothing else
        with monkeypatch.context() as m:
            m.setattr(Subproblem, "restricted", failing)
            return resolve_cut(*args)

    monkeypatch.setattr(fsframe.one_vs_rest, "_resolve_cut", resolve_cut_failing)
    with pytest.warns(fsframe.errors.SolverWarning, match="re-solve on the 3 features"):
        res = fsframe.fit(X, y3, "l1-svm", n_features=3)
    cut = [pc for pc in res.per_class if pc.info["n_features_union_cut"]]
    assert cut and res.objective is None
    for pc in cut:
        cert = pc.certificate
        assert pc.objective is None and pc.info["union_cut_resolved"] is False
        assert cert["status"] == "cut" and cert["certified_status"] == "optimal"
        assert cert["certifies_returned"] is False and cert["cut_distance"] > 1e-6
        assert pc.statuses[-1] is fsframe.Status.NUMERICAL_ERROR


# -- finding 2: docs/plugins.md left out what issue 13 added to the Formulation contract ---------
def test_plugin_guide_documents_every_formulation_member():
    """``pricing`` defaults to working sets for every third-party formulation; a plugin author must
    read what that assumes (and ``restatable_params``/``restate``/``explain_failure``) in the guide."""
    from pathlib import Path

    from fsframe.formulation import PROTOCOLS, TRAITS, Formulation

    doc = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()
    members = [k for k in vars(Formulation) if not k.startswith("_") and k != "params"]
    assert "pricing" in members and "provides" in members
    # the protocols a formulation opts into (not members of the base) and the declared traits
    members += [a for names in PROTOCOLS.values() for a in names] + list(PROTOCOLS) + list(TRAITS)
    missing = [k for k in members if f"`{k}" not in doc]
    assert missing == []


# -- finding 3: set_bounds/restate left the working set's pricing structure stale --------------
def _floored_hinge():
    import attrs

    from fsframe_svm import HingeFormulation

    @attrs.frozen
    class FlooredHinge(HingeFormulation):
        """The hinge with a bound parameter ``floor``: ``u_k >= floor`` (so ``w_k >= floor``) on one
        feature ``k``, restated through ``lb`` (a third-party ``with_bounds`` may change bounds)."""

        name = "floored-hinge"
        bound_params = ("floor",)
        k: int = 0
        floor: float = 0.0

        def with_bounds(self, built, base, compiled, bounds):
            lb = np.array(base.lb, dtype=float)
            lb[compiled.cols([built.model.u[self.k]])[0]] = float(bounds["floor"])
            return base.evolve(lb=lb)

    return FlooredHinge


@pytest.mark.parametrize("backend", ["highs", "clarabel"])
def test_set_bounds_that_move_a_bound_away_from_zero_reprices_the_working_set(backend):
    """A group whose column is bounded away from zero cannot be priced (it is not at zero): after
    ``set_bounds`` moved ``u_k``'s lower bound to 0.5 the working set must take group ``k`` in,
    not keep it out as priced at the old bounds (the answer then broke ``u_k >= 0.5``)."""
    from fsframe.method import select_backend
    from fsframe.problem import Subproblem
    from fsframe.working_set import WorkingSetOptions

    X, y = _data(m=40, n=300, seed=2)
    n = X.shape[1]
    F = _floored_hinge()
    be = select_backend(backend, fsframe.ProblemClass.LP)
    sub = Subproblem(F(k=0), X, y, frozenset({"lin"}), be, working_set=WorkingSetOptions(mode=True, initial=5))
    it = sub.solve(lin=np.ones(n))
    ws = sub.working_set
    assert ws is not None and it.ok
    k = int(np.flatnonzero(~ws.active)[-1])  # a group the working set leaves out
    sub.close()

    def solve(mode):
        s = Subproblem(F(k=k), X, y, frozenset({"lin"}), be, working_set=WorkingSetOptions(mode=mode, initial=5))
        s.solve(lin=np.ones(n))
        s.set_bounds(floor=0.5)
        out = s.solve(lin=np.ones(n))
        s.close()
        return out, s, int(s.compiled.cols([s.built.model.u[k]])[0])

    full, _, col = solve(False)
    part, s, _ = solve(True)
    assert full.ok and full.x[col] >= 0.5 - 1e-7
    assert part.ok, part.result.message
    assert part.x[col] >= 0.5 - 1e-7
    assert part.objective == pytest.approx(full.objective, rel=1e-6)
    assert not s.working_set.priceable[k]


# -- finding 4: fsframe select's certificate line hid that the returned model was cut -----------
def test_certificate_line_says_when_the_returned_coefficients_are_not_certified():
    """``l1-mpm`` with ``n_features=3``: the re-solve on 3 features is infeasible (MPM's bound) and
    the returned coefficients are the certified point cut to 3 (status ``cut``); the CLI line
    printed only the KKT gap of the uncut point, as if it certified the model returned. The same
    for a one-vs-rest class cut across classes."""
    from fsframe.cli.select import certificate_line

    X, y = _data(m=60, n=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = fsframe.fit(X, y, "l1-mpm", n_features=3)
    assert res.certificate["status"] == "cut"
    line = certificate_line(res.certificate)
    assert "not certified" in line and "cut" in line
    ok = fsframe.fit(X, y, "l1-svm", n_features=3)
    assert "not certified" not in certificate_line(ok.certificate)
    rng = np.random.default_rng(3)
    y3 = rng.integers(0, 3, X.shape[0])
    X3 = X.copy()
    X3[:, 0] += y3
    X3[:, 1] -= y3
    ovr = fsframe.fit(X3, y3, "l1-svm", n_features=3)  # classes cut across classes are re-solved: certified
    assert all(c["status"] == "optimal" for c in ovr.certificate["per_class"])
    assert "not certified" not in certificate_line(ovr.certificate)


# -- finding 5: a one-vs-rest path's table said "full" for working-set solves ------------------
def test_path_table_reports_the_working_set_of_one_vs_rest_points():
    """``PathResult.as_table`` read ``certificate["working_set"]``, which a one-vs-rest point keeps
    per class (``certificate["per_class"]``): every point showed ``full``."""
    X, _ = _data(m=40, n=600, seed=1)
    rng = np.random.default_rng(1)
    y3 = rng.integers(0, 3, X.shape[0])
    X = X.copy()
    X[:, 0] += 2 * y3
    X[:, 1] -= 2 * y3
    res = fsframe.path(X, y3, "l1-svm", C=[0.1, 1.0], working_set=True)
    rows = res.as_table().splitlines()[2:]
    for p, row in zip(res.points, rows):
        sizes = [c["working_set"] for c in p.certificate["per_class"]]
        assert all(k is not None and k < 600 for k in sizes)
        assert row.split("|")[6].strip() == "/".join(map(str, sizes))
    off = fsframe.path(X, y3, "l1-svm", C=[0.1, 1.0], working_set=False)
    assert all(row.split("|")[6].strip() == "full" for row in off.as_table().splitlines()[2:])


# -- finding 6: lazy delta_max blamed a time limit on the largest-bound SOCP --------------------
def test_a_time_limit_on_the_first_mpm_subproblem_is_not_explained_by_delta_max():
    """The MPM computes ``delta_max`` only when the first subproblem fails, to say whether
    ``delta`` is infeasible. A subproblem stopped by ``time_limit`` says nothing about ``delta``:
    the fit then also solved the largest-bound SOCP under the same limit and raised *its* time
    limit ("delta_max cannot be computed reliably"), an error about a problem the user never
    asked for, instead of reporting the time limit of the fit's own subproblem."""

    from fsframe import Status
    from fsframe_mpm import MPMFormulation

    calls = []

    class Solver:  # any solve here is the largest-bound SOCP
        def __getattr__(self, name):
            calls.append(name)
            raise AssertionError("delta_max was computed for a time limit")

    X, y = _data(m=30, n=20)
    f = MPMFormulation(delta=0.5)
    for status in (Status.TIME_LIMIT,):
        assert f.explain_failure(X, y, status, Solver()) is None
    assert calls == []
    # an infeasible first subproblem still gets its explanation (delta above delta_max)
    X2, y2 = _data(m=300, n=5, seed=4)
    y2 = np.where(np.random.default_rng(0).random(300) < 0.5, y2, -y2)  # nearly inseparable
    with pytest.raises(fsframe.errors.InfeasibleParameterError, match="delta_max"):
        fsframe.fit(X2, y2, "l1-mpm", delta=0.99)


# -- finding 7: a restated MPM bound left FitResult.info describing the first bound -------------
def test_restated_bounds_are_what_the_result_reports():
    """``fsframe.path(..., delta=[...])`` on ``mpm-equal`` restates ``delta`` in place
    (``set_bounds``): the point's ``info`` said ``delta`` and ``kappa`` of the *first* point (the
    build's record overwrote the fit's own). The bound search (``fs-mpm``) reported the chosen
    ``delta`` with the build's default ``kappa``. ``kappa`` must be ``sqrt(delta / (1 - delta))``
    (001 eq. 6) of the reported ``delta`` everywhere."""
    X, y = _data(m=40, n=100, seed=1)
    kw = dict(formulation="mpm-equal", surrogate="l1", loop="single")
    res = fsframe.path(X, y, delta=[0.3, 0.6], **kw)
    assert [p.warm for p in res.points] == ["cold", "restated"]
    for d, p in zip([0.3, 0.6], res.points):
        one = fsframe.fit(X, y, delta=d, **kw)
        for key in ("delta", "kappa_pos", "kappa_neg"):
            assert p.result.info[key] == pytest.approx(one.info[key], rel=1e-12), key
        assert p.result.info["kappa_pos"] == pytest.approx(np.sqrt(d / (1 - d)), rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for method, names in (("fs-mpm", ("delta", "delta")), ("fs-mempm", ("delta_pos", "delta_neg"))):
            info = fsframe.fit(X[:, :60], y, method).info
            for name, kappa in zip(names, ("kappa_pos", "kappa_neg")):
                d = info[name]
                assert info[kappa] == pytest.approx(np.sqrt(d / (1 - d)), rel=1e-12), (method, name)
