"""Bad data and bad parameters raise the right typed error from fsframe.errors, with a message
that names the problem; legal-but-awkward data warns and still gives the right answer; inputs
are never modified; the same data and seed give the same result."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.errors import (
    DataError,
    DataWarning,
    IncompatibleComponentsError,
    InvalidOptionError,
    UnknownComponentError,
)


@pytest.fixture
def Xy(binary_data):
    return binary_data


# ------------------------------------------------------------------------------ data
@pytest.mark.parametrize("bad, match", [
    (np.nan, r"1 non-finite value\(s\) \(NaN at sample 3, feature 2\)"),
    (np.inf, r"1 non-finite value\(s\) \(inf at sample 3, feature 2\)"),
    (-np.inf, r"\(inf at sample 3, feature 2\)"),
])
def test_non_finite(Xy, bad, match):
    X, y = Xy
    X = X.copy()
    X[3, 2] = bad
    with pytest.raises(DataError, match=match):
        fsframe.fit(X, y, method="l1-svm")
    with pytest.raises(DataError, match=match):
        fsframe.Dataset.from_arrays(X, y)


def test_shapes_and_classes(Xy):
    X, y = Xy
    cases = [
        ((X, np.ones(30)), r"single class \(1\.0 x 30\)"),
        ((X, np.r_[y[:-1], 7.0]), r"class 7\.0 \(1 sample\) has fewer than 2 samples"),
        ((X, y[:-1]), "X has 30 samples but y has 29 labels"),
        ((X[:0], y[:0]), r"X is empty \(shape \(0, 6\)\)"),
        ((X[:, :0], y), r"X is empty \(shape \(30, 0\)\)"),
        ((X[:, 0], y), "X must be 2-D .* got a 1-D array of length 30; use X.reshape"),
        ((X[None], y), r"X must be 2-D .* got shape \(1, 30, 6\)"),
        ((X, np.c_[y, y]), r"y must be 1-D .* got shape \(30, 2\)"),
        ((X.astype(str).astype(object) + "x", y), "X is not numeric"),
        ((None, y), "X and y are required"),
    ]
    for (Xb, yb), match in cases:
        with pytest.raises(DataError, match=match):
            fsframe.fit(Xb, yb, method="l1-svm")


def test_y_with_nan_or_none(Xy):
    X, y = Xy
    with pytest.raises(DataError, match="y contains NaN or inf"):
        fsframe.fit(X, np.r_[y[:-1], np.nan], method="l1-svm")
    for missing in (None, np.nan, float("nan")):
        with pytest.raises(DataError, match=r"y contains 1 missing \(None/NaN/inf\) label\(s\), first at sample 29"):
            fsframe.fit(X, np.array(["a", "b"] * 14 + ["a", missing], dtype=object), method="l1-svm")


def test_complex_X(Xy):
    X, y = Xy
    with pytest.raises(DataError, match="X is complex"):
        fsframe.fit(X + 1j, y, method="l1-svm")


def test_masked_arrays_are_refused_unless_nothing_is_masked(Xy):
    """Regression: a masked array was used with the mask ignored (the data under the mask was fitted)."""
    X, y = Xy
    mask = np.zeros(X.shape, dtype=bool)
    mask[1, 2] = mask[5, 0] = True
    Xm = np.ma.masked_array(X.copy(), mask=mask)
    before = (Xm.data.tobytes(), Xm.mask.tobytes())
    with pytest.raises(DataError, match=r"X is a masked array with 2 masked value\(s\) \(first at sample 1, "
                                        r"feature 2\); .*X.filled\(value\)"):
        fsframe.fit(Xm, y, method="l1-svm")
    assert (Xm.data.tobytes(), Xm.mask.tobytes()) == before
    ym = np.ma.masked_array(y, mask=np.arange(30) == 4)
    with pytest.raises(DataError, match=r"y is a masked array with 1 masked value\(s\) \(first at sample 4\)"):
        fsframe.Dataset.from_arrays(X, ym)
    # nothing masked: the data is used as is, with the plain array's result
    clear = fsframe.fit(np.ma.masked_array(X, mask=False), np.ma.masked_array(y), method="l1-svm")
    plain = fsframe.fit(X, y, method="l1-svm")
    np.testing.assert_array_equal(clear.coef, plain.coef)
    assert clear.classes == plain.classes


def _put(X, where, value):
    out = X.astype(object)
    out[where] = value
    return out


def test_estimator_refuses_masks_and_dates(Xy):
    """Regression: FSSelector went through scikit-learn's conversion, which drops masks and casts dates."""
    from fsframe.estimator import FSSelector

    X, y = Xy
    Xm = np.ma.masked_array(X, mask=np.arange(X.size).reshape(X.shape) == 7)
    with pytest.raises(DataError, match=r"FSSelector: X is a masked array with 1 masked value\(s\) \(first at sample 1, feature 1\)"):
        FSSelector(method="l1-svm").fit(Xm, y)
    with pytest.raises(DataError, match=r"FSSelector: y is a masked array"):
        FSSelector(method="l1-svm").fit(X, np.ma.masked_array(y, mask=np.arange(30) == 0))
    with pytest.raises(DataError, match=r"FSSelector: X has dtype datetime64\[s\]"):
        FSSelector(method="l1-svm").fit((X * 1e3).astype("datetime64[s]"), y)
    sel = FSSelector(method="l1-svm").fit(np.ma.masked_array(X, mask=False), y)
    np.testing.assert_array_equal(sel.coef_, FSSelector(method="l1-svm").fit(X, y).coef_)
    with pytest.raises(DataError, match=r"FSSelector: X is a masked array"):
        sel.predict(Xm)


@pytest.mark.parametrize("make, match", [
    (lambda X: (X * 1e3).astype("datetime64[s]"), r"X has dtype datetime64\[s\] \(dates or durations\)"),
    (lambda X: (X * 1e3).astype("timedelta64[ms]"), r"X has dtype timedelta64\[ms\] \(dates or durations\)"),
    (lambda X: X.astype(str), r"X holds text \(dtype <U\d+\), not numbers"),
    (lambda X: X.astype(str).astype(object), r"X is not numeric: str value '-?0\.\d+' at sample 0, feature 0"),
    (lambda X: _put(X, (0, 3), None), r"X has a missing value \(None at sample 0, feature 3\)"),
    (lambda X: _put(X, (2, 5), 1 + 2j), r"X is not numeric: complex value \(1\+2j\) at sample 2, feature 5"),
    (lambda X: __import__("scipy.sparse").sparse.csr_matrix(X + 1j), r"X is complex"),  # sparse: accepted if real
])
def test_x_that_float64_would_misread(Xy, make, match):
    """Regression: dates, numeric text and None in object arrays were converted to float64 silently."""
    X, y = Xy
    with pytest.raises(DataError, match=match):
        fsframe.fit(make(X), y, method="l1-svm")


def test_object_arrays_of_numbers_are_numbers(Xy):
    X, y = Xy
    a = fsframe.fit(X.astype(object), y.astype(object), method="l1-svm")
    b = fsframe.fit(X, y, method="l1-svm")
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.classes == b.classes == (-1.0, 1.0)


@pytest.mark.parametrize("labels", [
    [1, "1", 2] * 10,                               # a list: numpy would make three strings of it
    np.array([1, "1", 2] * 10, dtype=object),
    np.array([True, 1, 0] * 10, dtype=object),      # True == 1: merged by np.unique
])
def test_labels_of_mixed_types_are_refused(Xy, labels):
    """Regression: labels {1, "1", 2} collapsed to two classes ("1" and "2")."""
    X, _ = Xy
    with pytest.raises(DataError, match=r"y mixes label types: .*convert every label to one type"):
        fsframe.fit(X, labels, method="l1-svm")


def test_object_labels_keep_their_values(Xy):
    """Regression: object labels were compared as text, so 1 and 1.0 made two classes."""
    X, y = Xy
    mixed = np.array([float(v) if i % 2 else int(v) for i, v in enumerate(y)], dtype=object)
    assert {type(v) for v in mixed} == {float, int}
    ds = fsframe.Dataset.from_arrays(X, mixed)
    assert ds.classes == (-1, 1) and ds.class_counts == fsframe.Dataset.from_arrays(X, y).class_counts
    with pytest.raises(DataError, match=r"y is complex"):
        fsframe.fit(X, y + 0j, method="l1-svm")
    tuples = np.empty(30, dtype=object)
    tuples[:] = [(i % 2,) for i in range(30)]
    with pytest.raises(DataError, match=r"y holds tuple labels \(e.g. \(0,\)\); use strings or numbers"):
        fsframe.fit(X, tuples, method="l1-svm")


def test_continuous_labels_are_named_and_the_message_is_short(Xy):
    """Regression: a continuous y gave an error listing every value (6 477 characters on 569 samples)."""
    X, _ = Xy
    rng = np.random.default_rng(3)
    Xl, yl = rng.standard_normal((569, 4)), rng.standard_normal(569)
    with pytest.raises(DataError, match=r"y looks continuous \(569 distinct float values in 569 samples: "
                                        r"(-?\d\.\d+(e-?\d+)?, ){5}\.\.\.\); .*discretise") as exc:
        fsframe.fit(Xl, yl, method="l1-svm")
    assert len(str(exc.value)) < 300
    with pytest.raises(DataError, match=r"30 of 30 classes have fewer than 2 samples \(0, 1, 2, 3, 4, \.\.\. "
                                        r"\(25 more\)\)") as exc:
        fsframe.fit(X, np.arange(30), method="l1-svm")
    assert len(str(exc.value)) < 200


def test_identifier_like_column_warns(Xy):
    """Regression: an id column (a distinct integer per sample) became a feature without a word."""
    X, y = Xy
    ids = np.random.default_rng(0).permutation(30) * 7 + 842302
    with pytest.warns(DataWarning, match=r"feature 6 \('id'\) holds a distinct integer in every sample "
                                         r"\(\d+, \d+, \d+, \.\.\.\), like a sample id"):
        fsframe.Dataset.from_arrays(np.c_[X, ids], y, feature_names=[*"abcdef", "id"])
    from fsframe.dataset import data_diagnostics

    assert data_diagnostics(np.c_[X, ids, np.arange(30)])["identifiers"] == [6, 7]
    # integers with a repeat, non-integers, and fewer than 20 samples are not reported
    repeat = ids.copy()
    repeat[3] = repeat[4]
    assert data_diagnostics(np.c_[X, repeat, ids + 0.5])["identifiers"] == []
    assert data_diagnostics(np.c_[X, ids][:19])["identifiers"] == []


def test_dataset_repr_is_short():
    rng = np.random.default_rng(0)
    ds = fsframe.Dataset.from_arrays(rng.standard_normal((60, 2)), np.repeat(np.arange(12), 5), name="many")
    assert repr(ds) == ("Dataset('many', 60 x 2, classes {0: 5, 1: 5, 2: 5, 3: 5, 4: 5, 5: 5, 6: 5, 7: 5, 8: 5, 9: 5, "
                        "... (2 more)})")


def test_dataset_subset_is_gone():
    """Dead code out: Dataset.subset had no caller (datasets are sliced as arrays by the evaluation)."""
    assert not hasattr(fsframe.Dataset, "subset")


def test_predict_refuses_non_finite(Xy):
    X, y = Xy
    r = fsframe.fit(X, y, method="l1-svm")
    Xb = X.copy()
    Xb[4, 1] = np.nan
    for call in (r.predict, r.decision_function):
        with pytest.raises(DataError, match=r"1 non-finite value\(s\) \(first at sample 4, feature 1\)"):
            call(Xb)


@pytest.mark.filterwarnings("ignore::fsframe.errors.ConvergenceWarning")
def test_integral_numpy_parameters_are_accepted(Xy):
    X, y = Xy
    a = fsframe.fit(X, y, method="fsv", max_iter=np.int64(3), n_features=np.int64(2))
    b = fsframe.fit(X, y, method="fsv", max_iter=3, n_features=2)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.params["max_iter"] == 3 and a.n_iter == b.n_iter


def test_errors_are_value_errors(Xy):
    """Code that does not know fsframe can catch ValueError."""
    X, y = Xy
    with pytest.raises(ValueError):
        fsframe.fit(X, y[:-1], method="l1-svm")
    with pytest.raises(ValueError):
        fsframe.fit(X, y, method="l1-svm", C=-1.0)


def test_constant_column_warns_and_is_ignored(Xy):
    """A constant feature costs |w_j| but only shifts the intercept: L1-SVM gives it weight 0
    and the same optimum as without it."""
    X, y = Xy
    Xc = np.c_[X[:, :3], np.full(30, 4.0), X[:, 3:]]
    with pytest.warns(DataWarning, match=r"1 constant feature\(s\) \[3\]"):
        with_const = fsframe.fit(Xc, y, method="l1-svm")
    plain = fsframe.fit(X, y, method="l1-svm")
    assert with_const.coef[3] == 0.0
    assert with_const.objective == pytest.approx(plain.objective, rel=1e-9)
    np.testing.assert_allclose(np.delete(with_const.coef, 3), plain.coef, atol=1e-8)


def test_duplicate_column_warns_and_keeps_the_optimum(Xy):
    """|a| + |b| >= |a + b|: a duplicated feature cannot lower the L1-SVM optimum, and the weights
    of the two copies sum to the original weight."""
    X, y = Xy
    Xd = np.c_[X, X[:, 0]]
    with pytest.warns(DataWarning, match=r"1 pair\(s\) of identical features \[\(0, 6\)\]: DCA, EM and "
                      r"reweighted-l1 keep the lowest index of each \(with n_features always"):
        dup = fsframe.fit(Xd, y, method="l1-svm")
    plain = fsframe.fit(X, y, method="l1-svm")
    assert dup.objective == pytest.approx(plain.objective, rel=1e-9)
    assert dup.coef[0] + dup.coef[6] == pytest.approx(plain.coef[0], abs=1e-8)


def test_small_class_warns(Xy):
    X, y = Xy
    yy = y.copy()
    idx = np.flatnonzero(yy == 1)
    yy[idx[3:]] = -1  # three positives
    with pytest.warns(DataWarning, match="the smallest class has 3 samples"):
        fsframe.fit(X, yy, method="l1-svm")


# ------------------------------------------------------------------------------ parameters
@pytest.mark.parametrize("kwargs, error, match", [
    ({"method": "nope"}, UnknownComponentError, r"unknown method 'nope'; registered methods are \[.*'fsv'"),
    ({"method": "fsv", "surrogate": "cubic"}, UnknownComponentError, "unknown surrogate 'cubic'"),
    ({"formulation": "hinge", "surrogate": "exp", "loop": "newton"}, UnknownComponentError, "unknown loop 'newton'"),
    ({"method": "fsv", "backend": "gurobi"}, UnknownComponentError, "unknown backend 'gurobi'"),
    ({"surrogate": "exp"}, InvalidOptionError, "give a method= or both formulation= and loop="),
    ({"method": "fsv", "gamma": 1.0}, InvalidOptionError, "unknown parameter 'gamma' for method 'fsv'"),
    ({"method": "fsv", "loop__alpha": 1.0}, InvalidOptionError, "'loop' has no parameter 'alpha'; it accepts"),
    ({"method": "fsv", "solver__alpha": 1.0}, InvalidOptionError, "prefixes are"),
    ({"method": "fsv", "C": -1.0}, InvalidOptionError, "formulation 'hinge'.*'C'"),
    ({"method": "fsv", "alpha": 0.0}, InvalidOptionError, "surrogate 'exp'.*'alpha'"),
    ({"method": "fsv", "max_iter": 0}, InvalidOptionError, "loop 'reweighted-l1'.*'max_iter'"),
    ({"method": "fsv", "tol": -1.0}, InvalidOptionError, "'tol'"),
    ({"method": "fsv", "init": "random"}, InvalidOptionError, "'init'"),
    ({"method": "em-l0", "p": 1.5}, InvalidOptionError, "surrogate 'lp'.*'p'"),
    ({"method": "fsv", "n_features": 0}, InvalidOptionError, "n_features must be a positive integer, got 0"),
    ({"method": "fsv", "n_features": 7}, InvalidOptionError, "n_features=7 exceeds the 6 available features"),
    ({"method": "fsv", "sigma": 1.0}, InvalidOptionError, r"kernel parameters \['sigma'\] given without kernel="),
    ({"method": "l1-svm", "backend_options": {"no_such_highs_option": 1}}, InvalidOptionError, "no_such_highs_option"),
    ({"method": "em-l0", "backend_options": {"qp_form": "sideways"}}, InvalidOptionError, "qp_form must be"),
    ({"method": "fsv", "C": np.inf}, InvalidOptionError, "'C' must be finite, got inf"),
    ({"method": "fsv", "alpha": np.inf}, InvalidOptionError, "'alpha' must be finite"),
    ({"method": "fsv", "max_iter": 2.5}, InvalidOptionError, "loop 'reweighted-l1'.*'max_iter' must be <class 'int'>"),
    ({"method": "fsv", "time_limit": -1}, InvalidOptionError, "invalid solver option: 'time_limit' must be >= 0"),
    ({"method": "fsv", "time_limit": "soon"}, InvalidOptionError, "invalid solver option"),
    ({"method": "fsv", "kernel": "cubic"}, InvalidOptionError, r"kernel map.*'kernel' must be in \('rbf'"),
    ({"method": "fsv", "kernel": "rbf", "sigma": 0.0}, InvalidOptionError, "kernel map.*'sigma' must be > 0"),
    ({"method": "fsv", "kernel": "rbf", "sigma": np.nan}, InvalidOptionError, "kernel map.*'sigma'"),
    ({"method": "fsv", "kernel": "poly", "degree": 2.5}, InvalidOptionError, "kernel map.*'degree'"),
])
def test_unknown_or_invalid(Xy, kwargs, error, match):
    X, y = Xy
    with pytest.raises(error, match=match):
        fsframe.fit(X, y, **kwargs)


def test_dataset_and_y(Xy):
    X, y = Xy
    with pytest.raises(InvalidOptionError, match="pass either a Dataset or X and y"):
        fsframe.fit(fsframe.Dataset.from_arrays(X, y), y, method="fsv")


def test_ambiguous_parameter(Xy, add_components):
    """A parameter two components accept must be routed explicitly (kind__name)."""
    from fsframe.surrogates.base import Surrogate

    @attrs.frozen
    class WithC(Surrogate):
        name = "with-c"
        C: float = 1.0

        def phi(self, t):
            return np.asarray(t, dtype=float) * self.C

        def derivative(self, t):
            return np.full(np.shape(t), self.C)

    add_components(surrogates=[WithC])
    X, y = Xy
    with pytest.raises(InvalidOptionError,
                       match=r"'C' is accepted by \['formulation', 'surrogate'\]; write it as formulation__C or surrogate__C"):
        fsframe.fit(X, y, formulation="hinge", surrogate="with-c", loop="single", C=2.0)
    res = fsframe.fit(X, y, formulation="hinge", surrogate="with-c", loop="single",
                      formulation__C=2.0, surrogate__C=3.0)
    assert res.formulation.C == 2.0 and res.surrogate.C == 3.0


@pytest.mark.parametrize("surrogate, loop, missing", [
    ("lp", "dca", "it must provide dc_split"),
    ("l0", "dca", "it must provide dc_split"),
    ("l0", "single", "it must provide derivative"),
    ("l0", "reweighted-l1", "it must provide derivative"),
    ("lp", "single", "it must provide a finite derivative at 0"),
])
def test_incompatible_components_name_the_capability(Xy, surrogate, loop, missing):
    X, y = Xy
    with pytest.raises(IncompatibleComponentsError, match=f"surrogate '{surrogate}'.*loop '{loop}': {missing}"):
        fsframe.fit(X, y, formulation="hinge", surrogate=surrogate, loop=loop)


def test_loop_without_surrogate(Xy):
    X, y = Xy
    with pytest.raises(IncompatibleComponentsError,
                       match=r"no surrogate was given, but loop 'em' needs a surrogate \(needs_surrogate is True\)"):
        fsframe.fit(X, y, formulation="hinge", surrogate="none", loop="em")


@pytest.mark.parametrize("formulation, loop, missing", [
    ("hinge", "bound-search", r"bound parameters to search \(bound_params and with_bounds\)"),
    ("mpm", "greedy", r"the capability to fix a feature group to zero \(mask_space\)"),
    ("mpm", "relieff", r"large_margin"),
    ("hinge", "rfs", r"l21_regression"),
])
def test_formulation_requirements_are_named(Xy, formulation, loop, missing):
    """A loop's ``formulation_requires`` is checked against ``formulation.provides()`` before any
    solve; the refusal names the missing protocol or trait (no name list of formulations)."""
    X, y = Xy
    with pytest.raises(IncompatibleComponentsError,
                       match=f"formulation '{formulation}' is not compatible with loop '{loop}': it must provide.*{missing}"):
        fsframe.fit(X, y, formulation=formulation, loop=loop)


def test_every_gap_in_one_message(Xy):
    """skglm's check_attrs: the surrogate's and the formulation's gaps are refused together."""
    X, y = Xy
    with pytest.raises(IncompatibleComponentsError) as err:
        fsframe.fit(X, y, formulation="hinge", surrogate="l0", loop="bound-search")
    msg = str(err.value)
    assert "it must provide derivative, a finite derivative at 0 (slope_at_zero)" in msg
    assert "bound parameters to search" in msg


def test_a_loop_without_a_surrogate_refuses_one(Xy):
    X, y = Xy
    with pytest.raises(IncompatibleComponentsError,
                       match=r"loop 'greedy' takes no surrogate \(takes_surrogate is False\), got surrogate 'exp'"):
        fsframe.fit(X, y, formulation="hinge", surrogate="exp", loop="greedy")


def test_backend_without_the_problem_class(Xy, fresh_registry):
    """A backend that cannot solve QPs is refused for an EM fit, naming the class."""
    from fsframe import ProblemClass
    from fsframe.backends import HighsBackend

    class LPOnly(HighsBackend):
        name = "lp-only"
        supports = frozenset({ProblemClass.LP})

    X, y = Xy
    with pytest.raises(IncompatibleComponentsError, match=r"backend 'lp-only' cannot solve QP subproblems"):
        fsframe.fit(X, y, method="em-l0", backend=LPOnly())


# ------------------------------------------------------------------------------ no mutation, determinism
def test_inputs_are_not_modified(Xy):
    X, y = Xy
    X = np.asfortranarray(X)  # a layout fsframe must not "fix" in place
    y_str = np.where(y > 0, "pos", "neg")
    ds = fsframe.Dataset.from_arrays(X, y_str)
    before = [(a.tobytes(), a.dtype, a.shape, a.strides, a.flags.writeable) for a in (X, y, y_str, ds.X, ds.y)]
    for method in ("l1-svm", "fsv", "em-l0"):
        fsframe.fit(X, y, method=method)
        fsframe.fit(X, y_str, method=method, n_features=2)
        fsframe.fit(ds, method=method)
    after = [(a.tobytes(), a.dtype, a.shape, a.strides, a.flags.writeable) for a in (X, y, y_str, ds.X, ds.y)]
    assert before == after


def test_dataset_copies_and_freezes(Xy):
    X, y = Xy
    X2 = X.copy()
    ds = fsframe.Dataset.from_arrays(X2, y)
    X2[0, 0] = 99.0
    assert ds.X[0, 0] == X[0, 0]
    with pytest.raises(ValueError):
        ds.X[0, 0] = 1.0
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        ds.name = "other"


@pytest.mark.parametrize("method", ["l1-svm", "fsv", "em-l0", "arom", "svm-weights"])
def test_deterministic(Xy, method):
    X, y = Xy
    a = fsframe.fit(X, y, method=method)
    b = fsframe.fit(X, y, method=method)
    np.testing.assert_array_equal(a.coef, b.coef)
    assert a.intercept == b.intercept and a.objective == b.objective
    assert [r.n_nonzero for r in a.history] == [r.n_nonzero for r in b.history]


@pytest.mark.parametrize("layout", ["C", "F"])
def test_duplicate_detection_is_exact(layout):
    """Regression: identical columns got projection keys differing in the last bits (BLAS sums
    by position), so duplicates went unreported. Near-duplicates must not be reported."""
    from fsframe.dataset import data_diagnostics

    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 11))
    X[:, 6] = X[:, 0]  # a position whose key differs by 1e-15 on OpenBLAS
    X[:, 10] = X[:, 0]
    X[:, 9] = X[:, 2] + 1e-12
    X[:, 5] = 3.0
    d = data_diagnostics(np.asarray(X, order=layout))
    assert d["constant"] == [5]
    assert len(d["duplicate_pairs"]) == 2
    assert {j for pair in d["duplicate_pairs"] for j in pair} == {0, 6, 10}


def test_predict_refuses_masked_and_date_X():
    """Regression: FitResult.predict cast a masked X (mask ignored) and dates to float silently."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.where(X[:, 0] > 0, 1, -1)
    r = fsframe.fit(X, y, method="l1-svm")
    masked = np.ma.masked_array(X, mask=np.zeros_like(X, dtype=bool))
    masked.mask[2, 1] = True
    with pytest.raises(DataError, match="mask"):
        r.predict(masked)
    with pytest.raises(DataError, match="date|time"):
        r.predict((np.datetime64("2020-01-01") + np.arange(90)).reshape(30, 3))
    np.testing.assert_array_equal(r.predict(np.ma.masked_array(X)), r.predict(X))  # nothing masked: fine


def test_huge_integral_values_are_no_identifier_column():
    """Regression: X scaled by 1e150 is integral in floating point; the identifier check called it a
    sample id (and its message cast the values to int64 with an overflow warning)."""
    from fsframe.dataset import identifier_columns

    X = np.random.default_rng(0).standard_normal((30, 2)) * 1e150
    assert identifier_columns(X) == []
    assert identifier_columns(np.column_stack([np.arange(30.0), X[:, 0]])) == [0]


def test_the_duplicate_search_projects_on_seed_0s_normal_draw_kept_read_only():
    # data_diagnostics hashes columns through default_rng(0).standard_normal(m), drawn once per m:
    # the kept draw is that one, read-only (no caller can change the next fit's hashing), and a
    # fresh length draws afresh
    from fsframe import data_diagnostics as diagnostics

    for m in (30, 31, 30):
        v = diagnostics._projection(m)
        assert np.array_equal(v, np.random.default_rng(0).standard_normal(m)) and not v.flags.writeable
        with pytest.raises(ValueError):
            v[0] = 1.0
    X = np.random.default_rng(3).standard_normal((31, 5))
    X[:, 4] = X[:, 1]
    assert diagnostics.data_diagnostics(X)["duplicate_pairs"] == [(1, 4)]
