"""Data transforms are registered components (hook ``fsframe_register_transforms``): the built-in
empirical kernel map comes through it, a plugin adds its own kernel, and the RBF width defaults to
scikit-learn's ``gamma="scale"`` rule."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from attrs.validators import gt
from sklearn.datasets import load_breast_cancer
from sklearn.metrics.pairwise import laplacian_kernel, rbf_kernel

import fsframe
from fsframe.errors import InvalidOptionError
from fsframe.kernels import DataTransform, EmpiricalKernelMap, scale_sigma


@attrs.frozen(eq=False)
class LaplacianMap(DataTransform):
    """``exp(-gamma ||x - x'||_1)`` over the training samples."""

    name = "laplacian-map"
    kernels = ("laplacian",)
    kernel: str = "laplacian"
    gamma: float = attrs.field(default=1.0, converter=float, validator=gt(0))
    X_train: np.ndarray | None = attrs.field(default=None, repr=False)

    def fit(self, X):
        return attrs.evolve(self, X_train=np.array(X, dtype=float))

    def transform(self, X):
        D = np.abs(np.asarray(X, dtype=float)[:, None, :] - self.X_train[None, :, :]).sum(axis=2)
        return np.exp(-self.gamma * D)


def test_builtin_kernel_map_is_registered_through_the_hook():
    reg = fsframe.get_registry()
    (entry,) = reg.all("transform")
    assert entry.obj is EmpiricalKernelMap and entry.plugin == "fsframe.kernels"
    assert "fsframe_register_transforms" in reg.hooks_of("fsframe.kernels")


def test_a_plugin_adds_a_kernel(add_components, binary_data):
    add_components(name="laplace", transforms=[LaplacianMap])
    X, y = binary_data
    res = fsframe.fit(X, y, method="l1-svm", kernel="laplacian", gamma=0.5)
    assert isinstance(res.transform, LaplacianMap) and res.transform.gamma == 0.5
    K = laplacian_kernel(X, X, gamma=0.5)  # scikit-learn's, an independent implementation
    np.testing.assert_allclose(res.decision_function(X), K @ res.coef + res.intercept, atol=1e-10)
    ref = fsframe.fit(K, y, method="l1-svm")
    np.testing.assert_allclose(res.coef, ref.coef, atol=1e-8)
    # the built-in kernels still work next to it, and each refuses the other's parameters
    assert fsframe.fit(X, y, method="l1-svm", kernel="rbf", sigma=2.0).transform.sigma == 2.0
    with pytest.raises(InvalidOptionError, match="unknown parameter 'sigma'"):
        fsframe.fit(X, y, method="l1-svm", kernel="laplacian", sigma=2.0)
    with pytest.raises(InvalidOptionError, match=r"'kernel' must be in \('rbf', 'linear', 'poly', 'laplacian'\)"):
        fsframe.fit(X, y, method="l1-svm", kernel="cubic")


def test_unknown_kernel_suggests_the_closest(toy):
    X, y = toy
    with pytest.raises(InvalidOptionError, match=r"got 'rfb'; did you mean 'rbf'\?"):
        fsframe.fit(X, y, method="l1-svm", kernel="rfb")


def test_default_sigma_is_the_scale_rule():
    """sigma = sqrt(n_features * X.var() / 2) is scikit-learn's gamma = 1 / (n_features * X.var())."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((40, 5)) * [1, 10, 100, 0.1, 3]
    gamma = 1.0 / (X.shape[1] * X.var())
    assert scale_sigma(X) == pytest.approx(np.sqrt(1 / (2 * gamma)))
    kmap = EmpiricalKernelMap().fit(X)
    np.testing.assert_allclose(kmap.transform(X), rbf_kernel(X, X, gamma=gamma), rtol=1e-12)
    assert kmap.params["sigma"] == pytest.approx(scale_sigma(X))
    assert EmpiricalKernelMap(sigma="scale").fit(X).sigma == kmap.sigma
    assert EmpiricalKernelMap().sigma is None  # unfitted: left to the data
    assert EmpiricalKernelMap(sigma=2.0).fit(X).sigma == 2.0  # an explicit sigma is kept
    assert scale_sigma(np.ones((4, 3))) == pytest.approx(np.sqrt(0.5))  # X.var() = 0: gamma = 1


def test_default_sigma_on_unscaled_data():
    """Breast cancer, unscaled (features up to ~4000): the old default sigma = 1 made the kernel
    matrix the identity (every sample its own feature, nothing learned); the scale rule gives a
    kernel classifier that predicts held-out samples."""
    X, y = load_breast_cancer(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:150], idx[150:450]
    res = fsframe.fit(X[tr], y[tr], method="l1-svm", kernel="rbf")
    K = res.transform.transform(X[tr])
    off = K[~np.eye(len(tr), dtype=bool)]
    assert off.mean() > 0.05  # with sigma = 1: 0.0
    assert res.transform.sigma == pytest.approx(scale_sigma(X[tr]))
    assert all(s.value == "optimal" for s in res.statuses)
    accuracy = np.mean(res.predict(X[te]) == y[te])
    assert accuracy > 0.85
