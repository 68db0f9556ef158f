"""Review R3: a hostile or careless third-party plugin breaks at most itself (hostile reprs and
attributes, non-list hook results, duplicate names inside one plugin, a transform claiming a
built-in kernel), the runtime register/unregister API refuses what it cannot honour, and the fit
driver and the kernel map refuse silently coerced or unusable options with typed errors."""

from __future__ import annotations

import types
import warnings

import attrs
import numpy as np
import pytest

import fsframe
import fsframe.plugins
from fsframe.errors import (DataError, DataWarning, FsframeWarning, InvalidOptionError, PluginError,
                            UnknownComponentError)
from fsframe.kernels import DataTransform, EmpiricalKernelMap, scale_sigma
from fsframe.surrogates.base import Surrogate


@attrs.frozen
class Dup(Surrogate):
    name = "dup"

    def phi(self, t):
        return np.asarray(t, dtype=float)


@attrs.frozen
class OtherDup(Surrogate):
    name = "dup"

    def phi(self, t):
        return 2.0 * np.asarray(t, dtype=float)


class ReprBomb(type(Surrogate)):
    def __repr__(cls):
        raise SystemExit("repr bomb")


class Unprintable(metaclass=ReprBomb):
    """Neither a Surrogate nor printable: the error message must not call its repr."""


class NameBomb(type(Surrogate)):
    @property
    def name(cls):
        raise SystemExit("name bomb")


@attrs.frozen
class NamelessBomb(Surrogate, metaclass=NameBomb):
    def phi(self, t):
        return t


@pytest.fixture
def runtime(fresh_registry):
    """``runtime(name, hook=items_or_callable, ...)``: a runtime plugin for this test only."""
    added = []

    def add(name, **hooks):
        mod = types.ModuleType(name)
        for hook, value in hooks.items():
            fn = value if callable(value) and not isinstance(value, type) else (lambda v=value: v)
            setattr(mod, f"fsframe_register_{hook}", fsframe.hookimpl(fn))
        added.append(fsframe.plugins.register(mod, name=name))

    yield add
    for name in added:
        fsframe.plugins.unregister(name)


def _registry():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FsframeWarning)
        return fsframe.plugins.get_registry()


def _errors(name):
    return [b.error for b in _registry().broken if b.plugin == name]


@pytest.mark.parametrize("items", [[Unprintable], [NamelessBomb]], ids=["repr", "name"])
def test_hostile_component_breaks_only_its_plugin(runtime, items):
    """A class whose repr or ``name`` raises SystemExit used to escape the registry build (no
    plugin, method or fit worked); now its plugin is broken and everything else works."""
    runtime("hostile", surrogates=items)
    (error,) = _errors("hostile")
    assert "fsframe_register_surrogates() returned" in error
    assert _registry().get("surrogate", "exp") is fsframe.surrogates.ExpSurrogate
    assert "l1-svm" in [m.name for m in fsframe.list_methods()]


@pytest.mark.parametrize("value, shown", [(Dup, "<class"), ("dup", "'dup'"), ({"dup": Dup}, "{'dup'")],
                         ids=["class", "string", "dict"])
def test_hook_must_return_a_list(runtime, value, shown):
    """A bare class, a string (iterated as characters, one error per character) or a dict: one
    error saying the hook did not return a list."""
    runtime("nolist", surrogates=lambda: value)
    (error,) = _errors("nolist")
    assert error.startswith(f"fsframe_register_surrogates() returned {shown}") and error.endswith("not a list")


def test_a_generator_is_accepted(runtime):
    runtime("gen", surrogates=lambda: (c for c in [Dup]))
    assert _registry().get("surrogate", "dup") is Dup and not _registry().broken


def test_two_components_with_one_name_in_one_plugin(runtime):
    """Used to make the name a 'conflict' of the plugin with itself ("registered by 'twice' and
    'twice'"); now the plugin is broken with a message saying so, and the same class listed
    twice is simply registered once."""
    runtime("twice", surrogates=[Dup, OtherDup])
    (error,) = _errors("twice")
    assert "a second Surrogate named 'dup'" in error
    assert not _registry().conflicts
    with pytest.raises(UnknownComponentError, match=r"broken plugins were skipped and may have provided it: \['twice'"):
        _registry().get("surrogate", "dup")


def test_same_class_twice_in_one_plugin(runtime):
    runtime("again", surrogates=[Dup, Dup])
    reg = _registry()
    assert reg.get("surrogate", "dup") is Dup and not reg.conflicts and not reg.broken


def test_method_using_a_broken_plugins_component_names_it(runtime, toy):
    def fail():
        raise RuntimeError("no formulation today")

    runtime("bad", formulations=fail)
    runtime("good", methods=[fsframe.MethodSpec("uses-bad", formulation="bad-f", loop="single")])
    assert "uses-bad" in _registry().names("method")  # listed (its own plugin is healthy) ...
    with pytest.raises(UnknownComponentError, match=r"unknown formulation 'bad-f'.*broken plugins.*\['bad'\]"):
        fsframe.fit(*toy, method="uses-bad")  # ... and the error says where the component went


@attrs.frozen(eq=False)
class RbfHijack(DataTransform):
    """A third-party transform claiming the built-in kernel "rbf" (its name sorts first)."""

    name = "aaa-hijack"
    kernels = ("rbf", "hijack")
    kernel: str = "rbf"

    def fit(self, X):
        return self

    def transform(self, X):
        return np.zeros((len(X), len(X)))


def _transform(name, kernels):
    def fit(self, X):
        return self

    def transform(self, X):
        return np.asarray(X, dtype=float)

    return attrs.frozen(eq=False)(type(name, (DataTransform,), {
        "__annotations__": {"kernel": str}, "name": name, "kernels": kernels, "kernel": kernels[0] if kernels else "",
        "fit": fit, "transform": transform}))


def test_transform_cannot_take_a_builtin_kernel(runtime, toy):
    """kernel="rbf" used to reach the third-party transform whose name sorted first: the built-in
    kernel map was silently replaced. The transform is now refused (a clash) and rbf stays ours."""
    runtime("hijacker", transforms=[RbfHijack])
    reg = _registry()
    assert [(c.name, c.refused.plugin, c.builtin.plugin) for c in reg.clashes] == [
        ("aaa-hijack", "hijacker", "fsframe.kernels")]
    res = fsframe.fit(*toy, method="l1-svm", C=10.0, kernel="rbf", sigma=1.0)
    assert isinstance(res.transform, EmpiricalKernelMap)
    with pytest.raises(InvalidOptionError, match="'kernel' must be in"):
        fsframe.fit(*toy, method="l1-svm", kernel="hijack")


def test_two_third_party_transforms_claiming_one_kernel(runtime, toy):
    runtime("tr-a", transforms=[_transform("cubic-a", ("cubic",))])
    runtime("tr-b", transforms=[_transform("cubic-b", ("cubic", "quartic"))])
    reg = _registry()
    assert list(reg.alias_conflicts) == [("transform", "cubic")]
    claimed = r"'cubic' is claimed by more than one transform: 'cubic-a' of 'tr-a'.*'cubic-b' of 'tr-b'"
    with pytest.raises(PluginError, match=claimed):
        fsframe.fit(*toy, method="l1-svm", kernel="cubic")
    assert isinstance(fsframe.fit(*toy, method="l1-svm", kernel="quartic").transform, reg.get("transform", "cubic-b"))
    with pytest.raises(PluginError, match="kernels value 'cubic' claimed by"):
        reg.check()


@pytest.mark.parametrize("kernels", ["rbf2", (), ("ok", 3)], ids=["string", "empty", "non-string"])
def test_transform_kernels_must_be_a_tuple_of_strings(runtime, toy, kernels):
    """kernels="rbf2" (a string) used to make kernel="r" select the plugin (a substring match)."""
    runtime("badkernels", transforms=[_transform("zz-bad", kernels)])
    (error,) = _errors("badkernels")
    assert "'kernels'" in error and "not a non-empty tuple of strings" in error
    with pytest.raises(InvalidOptionError, match="'kernel' must be in"):
        fsframe.fit(*toy, method="l1-svm", kernel="r")


def test_runtime_register_and_unregister(fresh_registry):
    mod = types.ModuleType("late")
    mod.fsframe_register_surrogates = fsframe.hookimpl(lambda: [Dup])
    before = _registry()
    assert "dup" not in before.names("surrogate")
    name = fsframe.plugins.register(mod, name="late")
    assert _registry() is not before and _registry().get("surrogate", "dup") is Dup
    fsframe.plugins.unregister(name)
    assert "dup" not in _registry().names("surrogate")
    with pytest.raises(PluginError, match="no plugin named 'late' was registered"):
        fsframe.plugins.unregister("late")  # used to pass silently (a typo went unnoticed)
    with pytest.raises(PluginError, match="'svm' is the name of a built-in plugin"):
        fsframe.plugins.register(mod, name="svm")


def test_did_you_mean_ignores_case(toy):
    """``formulation__c`` (for ``C``) used to get no suggestion: difflib is case-sensitive."""
    with pytest.raises(InvalidOptionError, match=r"'formulation' has no parameter 'c'; did you mean 'C'\?"):
        fsframe.fit(*toy, method="l1-svm", formulation__c=1.0)
    with pytest.raises(InvalidOptionError, match=r"unknown parameter 'c'.*did you mean 'C'\?"):
        fsframe.fit(*toy, method="l1-svm", c=1.0)


def test_method_info_is_dict_like():
    """``"name" in info`` and ``dict(info)`` raised KeyError(0); ``info.get`` did not exist."""
    info = next(m for m in fsframe.list_methods() if m.name == "l1-svm")
    assert "name" in info and "nope" not in info and 0 not in info
    assert dict(info)["loop"] == "single" and info.get("plugin") == "svm" and info.get("nope", 7) == 7
    assert list(info) == list(info.keys())[:len(list(info))] and info.keys()[0] == "name"


@pytest.mark.parametrize("option, value, message", [
    ("time_limit", True, "time_limit must be a number of seconds or None, got True"),
    ("time_limit", np.True_, "time_limit must be a number"),
    ("time_limit", "5", "time_limit must be a number"),
    ("backend_options", 0, "backend_options must be a mapping"),
    ("backend_options", [("time_limit", 1.0)], "backend_options must be a mapping"),
])
def test_fit_option_coercions_are_refused(toy, option, value, message):
    """``time_limit=True`` used to become a 1-second limit and ``backend_options=0`` nothing."""
    with pytest.raises(InvalidOptionError, match=message):
        fsframe.fit(*toy, method="l1-svm", **{option: value})


def test_numpy_numbers_are_fine_as_time_limits(toy):
    res = fsframe.fit(*toy, method="l1-svm", C=10.0, time_limit=np.float64(30.0), n_features=np.int64(1))
    assert res.objective == pytest.approx(0.5) and res.support.sum() == 1


@pytest.mark.parametrize("param, value, message", [
    ("sigma", True, "'sigma' must be a positive number or 'scale', got True"),
    ("sigma", "1.5", "'sigma' must be a positive number or 'scale'"),
    ("sigma", 1e-200, "2\\*sigma\\*\\*2 a finite, normal float"),
    ("sigma", 1e200, "2\\*sigma\\*\\*2 a finite, normal float"),
    ("coef0", True, "expected a number, got True"),
    ("degree", True, "'degree' must be an integer, got True"),
])
def test_kernel_parameter_coercions_are_refused(toy, param, value, message):
    """``sigma=1e-200`` used to fit on a kernel matrix of NaNs (2 sigma^2 underflows to 0) and
    report objective 0.0; ``sigma=True``/``coef0=True`` became 1.0; ``sigma="1.5"`` a float."""
    kernel = "rbf" if param == "sigma" else "poly"
    with pytest.raises(InvalidOptionError, match=message):
        fsframe.fit(*toy, method="l1-svm", kernel=kernel, **{param: value})


def test_scale_sigma_on_constant_data_and_one_feature():
    """scikit-learn's rule: gamma = 1/(n_features var), gamma = 1 when var = 0."""
    assert scale_sigma(np.full((5, 3), 7.0)) == pytest.approx(np.sqrt(0.5))
    x = np.array([[0.0], [1.0], [3.0]])
    gamma = 1.0 / (1 * x.var())
    assert scale_sigma(x) == pytest.approx(np.sqrt(1.0 / (2.0 * gamma)))
    from sklearn.metrics.pairwise import rbf_kernel

    K = EmpiricalKernelMap(kernel="rbf", sigma="scale").fit(x).transform(x)
    np.testing.assert_allclose(K, rbf_kernel(x, x, gamma=gamma), rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_scale_sigma_at_extreme_scales_is_a_data_error(toy, scale):
    """X * 1e-160 used to raise attrs' ValueError (sigma 0.0), X * 1e160 a ZeroDivisionError."""
    X, y = toy
    with pytest.raises(DataError, match="standardise X"):
        fsframe.fit(X * scale, y, method="l1-svm", kernel="rbf")


def test_poly_kernel_overflow_is_a_data_error(toy):
    X, y = toy
    with pytest.raises(DataError, match="poly kernel matrix has non-finite entries.*degree 400"):
        fsframe.fit(X * 1e3, y, method="l1-svm", kernel="poly", degree=400)


class FrameLike:
    def __init__(self, X, columns):
        self._X, self.columns = np.asarray(X), list(columns)

    def __array__(self, dtype=None, copy=None):
        return self._X if dtype is None else self._X.astype(dtype)


def test_dataframe_mixed_column_names_are_a_data_error(toy):
    """Mixed str/int names used to be dropped silently (FSSelector, through scikit-learn, refuses them)."""
    X, y = toy
    with pytest.raises(DataError, match=r"mix strings and other types \(\['int', 'str'\]\)"):
        fsframe.fit(FrameLike(X, ["height", 1]), y, method="l1-svm")


def test_dataframe_duplicate_and_numpy_string_names(toy):
    X, y = toy
    with pytest.warns(DataWarning, match=r"duplicate column names \['a'\]"):
        res = fsframe.fit(FrameLike(X, ["a", "a"]), y, method="l1-svm", C=10.0)
    assert res.feature_names == ("a", "a") and list(res.selected) == [0]
    res = fsframe.fit(FrameLike(X, [np.str_("h"), np.str_("w")]), y, method="l1-svm", C=10.0)
    assert res.feature_names == ("h", "w") and all(type(n) is str for n in res.feature_names)


@pytest.mark.parametrize("kwargs, message", [
    (dict(name="m", formulation=None, loop="single"), "'formulation' must be a non-empty string"),
    (dict(name="m", formulation="hinge", loop=""), "'loop' must be a non-empty string"),
    (dict(name="m", formulation="hinge", loop="single", surrogate=3), "'surrogate'"),
    (dict(name="m", formulation="hinge", loop="single", defaults={1: 2.0}), "keyed by parameter names"),
])
def test_method_spec_fields_are_checked_when_made(runtime, kwargs, message):
    """``MethodSpec(formulation=None)`` used to register and fail later with "give a method= or both
    formulation= and loop="; now the spec is refused when made, so its plugin is broken with the reason."""
    with pytest.raises(TypeError, match=message):
        fsframe.MethodSpec(**kwargs)

    def methods():
        return [fsframe.MethodSpec(**kwargs)]

    runtime("badspec", methods=methods)
    (error,) = _errors("badspec")
    assert "fsframe_register_methods() raised TypeError" in error and message.strip("'") .split("'")[0] in error
