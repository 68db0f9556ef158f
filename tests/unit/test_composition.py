"""Every (formulation, surrogate, loop) triple of the registry: the valid ones run and their
results are value-checked in numpy (``fsframe.testing.check_fit_result``); the invalid ones
raise IncompatibleComponentsError naming the missing capability. Registered methods, and
one-vs-rest on iris and wine, likewise."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas
import pytest

import fsframe
from fsframe.errors import ConvergenceWarning, IncompatibleComponentsError, SolverWarning
from fsframe.plugins import get_registry
from fsframe.surrogates import PROVIDES
from fsframe.testing import check_fit_result

REG = get_registry()
TRIPLES = [(f, s, l) for f in REG.names("formulation") for s in [*REG.names("surrogate"), None]
           for l in REG.names("loop")]


def expected_refusal(f, s, l):
    """What :func:`fsframe.fit` must refuse for this triple, from the registry's declarations: the
    capabilities the loop reports the surrogate lacks (``loop.missing``, which must include every
    declared requirement absent from ``surrogate.provides()``), else the slot terms the loop needs
    (``loop.terms``) that the formulation class does not build (``slot_terms``). ``None``: it runs."""
    loop = REG.get("loop", l)()
    sur = None if s is None else REG.get("surrogate", s)()
    form = REG.get("formulation", f)
    # a formulation without a sparsity penalty (Formulation.sparse) refuses every surrogate
    unpenalised = [re.escape("has no sparsity penalty")] if (not form.sparse and sur is not None) else []
    miss = loop.missing(sur)
    if sur is not None:
        assert {PROVIDES.get(c, c) for c in loop.requires if c not in sur.provides()} <= set(miss), (l, s, miss)
    # what the loop needs of the formulation (a bound search: declared bound parameters)
    fmiss = [re.escape(m) for m in loop.formulation_missing(form())]
    if miss:
        return [re.escape(m) for m in miss] + fmiss + unpenalised
    lacking = loop.terms(sur) - form.slot_terms
    if lacking:
        return [re.escape(f"cannot build slot terms {sorted(lacking)}")] + fmiss + unpenalised
    return (fmiss + unpenalised) or None


# The slot terms the reference formulations document (hinge: "lin", "lin_w" on w = u - v, "quad" on a
# free w; mpm: the same, eqs. 43-46; mpm-max: no penalty, so only the inert "lin"). The refusals above
# are derived from these declarations; a narrower declaration would turn runnable triples into
# predicted refusals, so it is pinned here.
DOCUMENTED_SLOT_TERMS = {"hinge": {"lin", "lin_w", "quad"}, "mpm": {"lin", "lin_w", "quad"}, "mpm-max": {"lin"}}


@pytest.mark.parametrize("name", sorted(DOCUMENTED_SLOT_TERMS))
def test_reference_formulations_declare_their_slot_terms(name):
    assert REG.get("formulation", name).slot_terms == DOCUMENTED_SLOT_TERMS[name]


def _mpm_quantities(res, X, y):
    """``w``, ``b``, the class means, ``||F_k'w||`` and a scale for the MPM family's checks."""
    from fsframe_mpm import class_moments

    w, b = np.asarray(res.coef, dtype=float), -float(res.intercept)
    y_pm = np.where(np.asarray(y) == res.classes[1], 1.0, -1.0)
    mom = class_moments(X, y_pm, res.formulation.rho)
    mu1, mu2 = mom.mu
    n1, n2 = (float(np.linalg.norm(mom.cone_rows(k) @ w)) for k in (0, 1))
    return w, b, mu1, mu2, n1, n2, max(1.0, abs(w @ mu1), abs(w @ mu2), abs(b))


def check_mpm_values(res, X, y):
    """The MPM family has no loss in ``check_fit_result``: check its values here, from the class
    moments (class +1 is 000's X_1; ``b = -intercept``), to 1e-6 relative.

    * ``mpm`` (000 eqs. 43-46): the loss is 0, so a surrogate loop reports ``sum_j phi(|w_j|)`` and
      ``single`` ``phi'(0) ||w||_1``; ``w'mu_1 - b >= 1``, ``b - w'mu_2 >= 1`` (eq. 45) and
      ``w'mu_1 - b >= kappa ||F_1'w||``, ``b - w'mu_2 >= kappa ||F_2'w||`` (eqs. 43-44) with
      ``kappa = sqrt(delta / (1 - delta))`` (eq. 22) for the reported ``delta < delta_max``;
    * ``mpm-max`` (000 eqs. 3-5): the loss is ``||F_1'w|| + ||F_2'w|| = 1 / kappa*`` under
      ``w'(mu_1 - mu_2) = 1``, ``b = w'mu_1 - kappa* ||F_1'w||``; the slot multiplies nothing, so
      ``single`` without a surrogate (the only way it runs: ``Formulation.sparse`` is False) reports the loss."""
    rel = 1e-6
    w, b, mu1, mu2, n1, n2, scale = _mpm_quantities(res, X, y)
    loop, sur = res.loop, res.surrogate
    if res.formulation.name == "mpm":
        loss = 0.0
        delta = res.info["delta"]
        assert 0 < delta < res.info["delta_max"]
        kappa = np.sqrt(delta / (1 - delta))  # 000 eq. 22
        assert w @ mu1 - b >= 1 - rel * scale and b - w @ mu2 >= 1 - rel * scale  # 000 eq. 45
        assert w @ mu1 - b >= kappa * n1 - rel * scale and b - w @ mu2 >= kappa * n2 - rel * scale  # 43-44
    else:
        loss = n1 + n2
        kappa = res.info["kappa"]
        assert w @ (mu1 - mu2) == pytest.approx(1.0, rel=rel)
        assert loss == pytest.approx(1.0 / kappa, rel=rel)
        assert b == pytest.approx(w @ mu1 - kappa * n1, rel=rel, abs=rel * scale)
    if loop.needs_surrogate:
        pen = float(np.sum(sur.phi(np.abs(w[res.support]))))
    elif res.formulation.name == "mpm":
        pen = (1.0 if sur is None else float(sur.derivative(np.zeros(1))[0])) * float(np.sum(np.abs(w)))
    else:
        pen = 0.0
    assert res.objective == pytest.approx(loss + pen, rel=rel), (res.objective, loss, pen)
    return ["mpm values"]


def check_mempm_values(res, X, y):
    """MEMPM (001 eq. 6; ``mpm-equal``: one bound for both classes): margins >= 1 and
    ``w'mu_1 - b >= kappa(delta_pos) ||F_1'w||``, ``b - w'mu_2 >= kappa(delta_neg) ||F_2'w||`` at the
    reported bounds (the chosen ones for a bound search), to 1e-6 relative; the loss is 0, so a
    surrogate loop reports ``sum_j phi(|w_j|)`` and ``single``/``bound-search`` ``phi'(0) ||w||_1``."""
    from fsframe_mpm import kappa_of

    rel = 1e-6
    w, b, mu1, mu2, n1, n2, scale = _mpm_quantities(res, X, y)
    a = res.info.get("delta_pos", res.info.get("delta"))
    c = res.info.get("delta_neg", res.info.get("delta"))
    assert 0 < a < 1 and 0 < c < 1
    assert w @ mu1 - b >= 1 - rel * scale and b - w @ mu2 >= 1 - rel * scale
    assert w @ mu1 - b >= kappa_of(a) * n1 - rel * scale and b - w @ mu2 >= kappa_of(c) * n2 - rel * scale
    sur = res.surrogate
    if res.loop.needs_surrogate:
        pen = float(np.sum(sur.phi(np.abs(w[res.support]))))
    else:
        pen = (1.0 if sur is None else float(sur.derivative(np.zeros(1))[0])) * float(np.sum(np.abs(w)))
    assert res.objective == pytest.approx(pen, rel=rel), (res.objective, pen)
    return ["mempm values"]


def check_twsvm_values(res, X, y):
    """The twin SVM's loss is no function of its decision values (the distance difference): its
    objective is recomputed here from both surfaces (003 eqs. 7-8): the sum of the two block
    objectives, the penalty ``phi`` of the "l1" group norms ``t_j = |w1_j| + |w2_j|``."""
    f = res.formulation
    pos = np.asarray(y) == res.classes[1]
    W = np.asarray(res.coef, dtype=float)
    F = X @ W.T + np.asarray(res.intercept)
    loss = (f.c11 * np.abs(F[pos, 0]).sum() + f.c12 * np.maximum(1 + F[~pos, 0], 0).sum()
            + f.c21 * np.abs(F[~pos, 1]).sum() + f.c22 * np.maximum(1 - F[pos, 1], 0).sum())
    t = np.abs(W).sum(axis=0)
    sur = res.surrogate
    if res.loop.needs_surrogate:
        pen = float(np.sum(sur.phi(t)))
    else:
        pen = (1.0 if sur is None else float(sur.derivative(np.zeros(1))[0])) * float(t.sum())
    assert res.objective == pytest.approx(loss + pen, rel=1e-6), (res.objective, loss, pen)
    return ["twsvm values"]


def _data_for(formulation: str, binary_data, hard: bool = True):
    """``binary_data``, made separable (its labels without the noise) for the hard-margin
    ``margin`` formulation (004 eq. 5, its default ``C=None``), which refuses non-separable data by
    design (tests/multiclass/test_dso.py checks that typed error)."""
    X, y = binary_data
    if formulation == "margin" and hard:
        y = np.where(X[:, 0] + 0.5 * X[:, 1] > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("f, s, l", TRIPLES, ids=[f"{f}+{s}+{l}" for f, s, l in TRIPLES])
def test_every_triple(binary_data, f, s, l):
    """A triple runs exactly when the registry's declarations say it can (``expected_refusal``), and
    its result is value-checked; a refusal names every gap."""
    soft = f == "margin" and l != "dso"  # the soft margin (C=1) for the generic loops; dso is hard only
    X, y = _data_for(f, binary_data, hard=not soft)
    refusal = expected_refusal(f, s, l)
    kw = dict(formulation=f, surrogate=s or "none", loop=l, **({"C": 1.0} if soft else {}))
    if refusal is not None:
        with pytest.raises(IncompatibleComponentsError) as exc:
            fsframe.fit(X, y, **kw)
        for gap in refusal:
            assert re.search(gap, str(exc.value)), (gap, str(exc.value))
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # some triples stop at max_iter
        if f in ("mempm", "mpm-equal", "mpm") and l == "em":
            # EM's quadratic weights (1/t at t -> 0; for MPM with scad, the majoriser's floor weight
            # phi'(c)/(2c) of the groups below the floor) make a few of the MPM family's SOCPs end
            # only optimal_inaccurate on Clarabel here (reported as a SolverWarning; values checked below)
            warnings.simplefilter("ignore", SolverWarning)
        try:
            res = fsframe.fit(X, y, **kw)
        except IncompatibleComponentsError as exc:
            pytest.fail(f"{f}+{s}+{l} was refused, but the registry's declarations predict it runs: {exc}")
    ran = check_fit_result(res, X, y)
    assert res.n_iter >= 1 and len(res.history) == res.n_iter
    if f in ("mpm", "mpm-max"):
        ran += check_mpm_values(res, X, y)
    elif f in ("mempm", "mpm-equal"):
        ran += check_mempm_values(res, X, y)
    elif f == "twsvm":
        ran += check_twsvm_values(res, X, y)
    else:  # any other formulation must have a loss check_fit_result recomputes
        assert "objective recomputed" in ran, (f, ran)


@pytest.mark.parametrize("name", REG.names("method"))
def test_every_method(binary_data, name):
    X, y = _data_for(REG.get("method", name).formulation, binary_data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        res = fsframe.fit(X, y, method=name)
    check_fit_result(res, X, y)
    spec = REG.get("method", name)
    assert (res.formulation.name, res.loop.name) == (spec.formulation, spec.loop)
    assert (res.surrogate.name if res.surrogate else None) == spec.surrogate


@pytest.mark.parametrize("dataset", ["iris", "wine"])
@pytest.mark.parametrize("method", ["l1-svm", "fsv", "em-l0"])
def test_one_vs_rest(dataset, method):
    ds = fsframe.load_dataset(dataset)
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    res = fsframe.fit(X, ds.y, method=method)
    assert len(res.per_class) == len(ds.classes) and res.coef.shape == (len(ds.classes), X.shape[1])
    check_fit_result(res, X, ds.y)
    # each class's model is the binary fit of that class against the rest
    for r, c in zip(res.per_class, ds.classes):
        alone = fsframe.fit(X, np.where(ds.y == c, 1, -1), method=method)
        np.testing.assert_array_equal(r.coef, alone.coef)
        assert r.intercept == alone.intercept
    assert res.info["strategy"] == "one-vs-rest"
    # regression: a per-class result's labels are ("rest", c), of mixed types
    pred = res.per_class[0].predict(X)
    assert set(pred.tolist()) <= {"rest", str(ds.classes[0])}
    assert np.mean(res.predict(X) == ds.y) > 0.85


def test_one_vs_rest_with_n_features():
    ds = fsframe.load_dataset("wine")
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    res = fsframe.fit(X, ds.y, method="em-l0", n_features=4)
    assert res.n_selected == 4
    assert np.all(res.coef[:, ~res.support] == 0)
    for r in res.per_class:
        assert not np.any(r.support & ~res.support)
        assert np.all(r.coef[~r.support] == 0)
        # the groups of the chosen iterate = those kept + those dropped by the binary rule and the union's cut
        k = r.info["n_features_iterate"]
        assert r.history[k].n_nonzero == r.n_selected + r.info["n_features_dropped"]
        # the objective is that of the coefficients returned: a class the union cut took groups from
        # is re-solved on the ones it keeps, so it has one too, and a certificate of its own
        assert r.objective is not None and r.certificate["certifies_returned"]
        assert r.info.get("union_cut_resolved", True)
    check_fit_result(res, X, ds.y)


def test_one_vs_rest_cut_counts_a_class_left_without_features():
    X = np.random.default_rng(7).standard_normal((30, 6))
    y = np.where(X[:, 2] > 0.5, 2, np.where(X[:, 0] > 0, 1, 0))
    res = fsframe.fit(X, y, method="em-l0", n_features=1)
    assert res.n_selected == 1
    empty = [r for r in res.per_class if r.n_selected == 0]
    assert empty, "this data leaves one class without a feature after the cut"
    for r in empty:
        assert r.info["n_features_dropped"] == r.history[r.info["n_features_iterate"]].n_nonzero >= 1


# ------------------------------------------------------------------ fit options, names, records
@pytest.mark.parametrize("option, value, message", [
    ("fast", "no", "fast must be True or False, got 'no'"),
    ("keep_model", "x", "keep_model must be True or False, got 'x'"),
    ("verbose", 1, "verbose must be True or False, got 1"),
    ("cone_form", "bogus", r"cone_form must be one of \('substitute', 'auxiliary'\), got 'bogus'"),
])
def test_fit_options_are_checked_before_the_fit(toy, monkeypatch, option, value, message):
    """A typed error naming the option, before any model is built (not a plain ValueError at
    compile time, not a silent truthiness test)."""
    import fsframe.binary_fit

    def no_subproblem(*a, **k):
        raise AssertionError("a subproblem was built before the options were checked")

    monkeypatch.setattr(fsframe.binary_fit, "Subproblem", no_subproblem)
    with pytest.raises(fsframe.errors.InvalidOptionError, match=message):
        fsframe.fit(*toy, method="l1-svm", **{option: value})


def test_numpy_booleans_are_accepted(toy):
    res = fsframe.fit(*toy, method="l1-svm", C=10.0, fast=np.bool_(False), keep_model=np.True_)
    assert res.objective == pytest.approx(0.5) and "model" in res.info


class FrameLike:
    """What fit needs of a pandas DataFrame: ``columns`` and ``__array__``."""

    def __init__(self, X, columns):
        self._X, self.columns = np.asarray(X), list(columns)

    def __array__(self, dtype=None, copy=None):
        return self._X if dtype is None else self._X.astype(dtype)


@pytest.mark.parametrize("make", [
    lambda X, cols: FrameLike(X, cols),
    lambda X, cols: pandas.DataFrame(X, columns=cols),  # pandas: a test extra
], ids=["frame-like", "pandas"])
def test_dataframe_column_names_are_kept(toy, make):
    X, y = toy
    res = fsframe.fit(make(X, ["height", "width"]), y, method="l1-svm", C=10.0)
    assert res.selected_names == ["height"]
    assert list(res.feature_names) == ["height", "width"]
    # non-string column names (a default RangeIndex) are not names, as in scikit-learn
    assert fsframe.fit(make(X, [0, 1]), y, method="l1-svm", C=10.0).feature_names is None


@pytest.mark.parametrize("kwargs, hint", [
    ({"method": "l1svm"}, "unknown method 'l1svm'; did you mean 'l1-svm'?"),
    ({"method": "fsv", "alpah": 2.0}, "unknown parameter 'alpah'.*; did you mean 'alpha'?"),
    ({"method": "fsv", "max_iters": 3}, "did you mean 'max_iter'?"),
    ({"method": "fsv", "loop__tols": 3}, "'loop' has no parameter 'tols'; did you mean 'tol'?"),
    ({"formulation": "hinge", "surrogate": "expo", "loop": "dca"}, "unknown surrogate 'expo'; did you mean 'exp'?"),
    ({"method": "fsv", "backend": "higs"}, "unknown backend 'higs'; did you mean 'highs'?"),
])
def test_did_you_mean(toy, kwargs, hint):
    """The suggestion comes before the long list of valid names."""
    with pytest.raises(fsframe.errors.InvalidOptionError) as exc:
        fsframe.fit(*toy, **kwargs)
    text = str(exc.value)
    assert re.search(hint, text), text
    assert text.index("did you mean") < max(text.find("registered"), text.find("accept"))


def test_list_methods_returns_records():
    methods = fsframe.list_methods()
    assert all(isinstance(m, fsframe.MethodInfo) for m in methods)
    svm = next(m for m in methods if m.name == "l1-svm")
    assert (svm.formulation, svm.surrogate, svm.loop, svm.plugin) == ("hinge", "l1", "single", "svm")
    assert svm.distribution == "fsframe" and svm.defaults == {"C": 1.0}
    assert svm["loop"] == svm.loop  # dict-style access still works
    with pytest.raises(KeyError):
        svm["nope"]
    assert [m.name for m in methods] == sorted(m.name for m in methods)


def test_public_backend_selection_and_compat_names():
    """select_backend is public (fsframe, fsframe.plugins); fsframe.method keeps the names other
    modules import from it."""
    import fsframe.fitting
    import fsframe.method
    import fsframe.plugins

    assert fsframe.select_backend is fsframe.plugins.select_backend is fsframe.method.select_backend
    assert fsframe.select_backend("auto", fsframe.ProblemClass.SOCP).name == "ecos"
    assert fsframe.fitting.fit is fsframe.fit
    assert "sigma" in fsframe.method.transform_parameters("rbf")
    assert fsframe.method.transform_parameters() == ["kernel", "coef0", "degree", "sigma"]


def test_parameter_names_are_read_once_per_class_and_handed_out_as_copies():
    # resolve routes parameters by fsframe.method.parameter_names, kept per class (attrs fields are
    # fixed when the class is made): each call hands out its own list, and a subclass made at run
    # time has its own names, not its parent's
    import attrs

    from fsframe.method import parameter_names, resolve

    cls = REG.get("loop", "em")
    expected = [f.name for f in attrs.fields(cls) if f.init and not f.name.startswith("_") and f.name != "X_train"]
    first = parameter_names(cls)
    assert first == expected
    first.append("not_a_parameter")
    assert parameter_names(cls) == expected  # the caller's change is its own
    sub = attrs.define(frozen=True)(type("WithExtra", (cls,), {"__annotations__": {"extra": int},
                                                               "extra": attrs.field(default=0)}))
    assert parameter_names(sub) == expected + ["extra"]
    with pytest.raises(fsframe.errors.InvalidOptionError, match="not_a_parameter"):
        resolve("em-l0", not_a_parameter=1)
