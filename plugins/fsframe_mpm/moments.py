"""Class moments of the MPM family: means and low-rank covariance factors with a ridge (paper 000
eqs. 43-46), the bound conversions ``kappa <-> delta`` (000 eq. 22) and the data checks."""

from __future__ import annotations


import attrs
import numpy as np
from numpy.typing import NDArray

from fsframe.validators import to_float
from fsframe.errors import DataError


DEFAULT_RHO = 0.01
"""Default covariance ridge, relative to the mean within-class feature variance (see
:func:`class_moments`); chosen by measurement (``benchmarks/mpm_rho.py``), see ``docs/conic.md``,
section "The covariance ridge rho"."""

DEFAULT_DELTA_FRACTION = 0.9
"""``delta = DEFAULT_DELTA_FRACTION * delta_max`` when neither ``delta`` nor ``delta_fraction``
is given: paper 000 §4 asks for a high bound (0.9), which is infeasible on its own data sets."""


def kappa_of(delta: float) -> float:
    """``kappa = sqrt(delta / (1 - delta))`` (000 eq. 22)."""
    return float(np.sqrt(delta / (1.0 - delta)))


def delta_of(kappa: float) -> float:
    """The inverse of :func:`kappa_of`: ``delta = kappa^2 / (1 + kappa^2)`` (1 for ``kappa = inf``)."""
    if not np.isfinite(kappa):
        return 1.0
    return float(kappa * kappa / (1.0 + kappa * kappa))


def open_unit(name):
    """An attrs validator: ``None`` or a value in the open interval (0, 1) (a bound such as ``delta``)."""

    def check(inst, attr, value):
        if value is not None and not (0.0 < value < 1.0):
            raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return check


def opt_float(v):
    """Converter: ``None`` stays, anything else becomes a float (:func:`fsframe.validators.to_float`)."""

    return None if v is None else to_float(v)


# ------------------------------------------------------------------------------ moments
@attrs.frozen(eq=False)
class ClassMoments:
    """Means and covariance factors of the two classes, class ``+1`` first (000's ``X_1``).

    ``Sigma_k + ridge * I = F_k F_k'`` with ``F_k = [C_k, sqrt(ridge) I]`` and the centred-data
    factor ``C_k = (X_k - mu_k)' / sqrt(m_k)`` (``n x m_k``): a cone ``||F_k' w||`` has
    ``m_k (+ n)`` entries and no ``n x n`` matrix is ever formed (docs/conic.md).
    """

    mu: tuple  # (mu_1, mu_2), each shape (n,)
    C: tuple  # (C_1, C_2), shapes (n, m_1), (n, m_2)
    counts: tuple  # (m_1, m_2)
    rho: float
    ridge: float  # absolute: rho * mean within-class feature variance

    @property
    def n(self) -> int:
        return int(self.mu[0].shape[0])

    def cone_rows(self, k: int, scale: float = 1.0) -> sp.csr_matrix:
        """``scale * F_k'``: the rows of the vector inside cone ``k`` as a map of ``w``
        (shape ``(m_k [+ n], n)``; the ridge block is a sparse identity)."""
        import scipy.sparse as sp

        # written directly in CSR (the dense block's nonzeros row by row, then the ridge's
        # diagonal): one sparse construction instead of three and a vstack
        D = scale * self.C[k].T
        nz = D != 0
        counts = [nz.sum(axis=1)]
        indices = [np.nonzero(nz)[1]]
        data = [D[nz]]
        if self.ridge > 0:
            counts.append(np.ones(self.n, dtype=np.int64))
            indices.append(np.arange(self.n))
            data.append(np.full(self.n, scale * np.sqrt(self.ridge)))
        indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))]).astype(np.int64)
        return sp.csr_matrix((np.concatenate(data), np.concatenate(indices).astype(np.int64), indptr),
                             shape=(indptr.size - 1, self.n))


def class_moments(X: NDArray, y: NDArray, rho: float) -> ClassMoments:
    """Class means and covariance factors of ``X`` for labels ``y`` in ``{+1, -1}``.

    The covariance is the sample (maximum-likelihood) covariance ``Xc'Xc / m_k``. The ridge is
    ``rho * s2`` with ``s2 = (||Xc_1||_F^2 + ||Xc_2||_F^2) / (m n)``, the mean within-class
    variance of a feature, so ``rho`` is scale free (the same value suits raw, standardised and
    kernel-mapped features).

    Raises
    ------
    DataError
        labels other than ``+1``/``-1``, a class with fewer than 2 samples, identical class means.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise DataError(f"MPM: X must be 2-D with one label per row, got X {X.shape} and y {y.shape}")
    labels = set(np.unique(y).tolist())
    if not labels <= {1, -1, 1.0, -1.0}:
        raise DataError(f"MPM: labels must be +1/-1 (fsframe.fit codes them), got {sorted(labels)}")
    m, n = X.shape
    _check_scale(X)
    mus, Cs, counts = [], [], []
    ss = 0.0
    for label in (1, -1):
        Xk = X[y == label]
        mk = Xk.shape[0]
        if mk < 2:
            raise DataError(
                f"MPM: class {label:+d} has {mk} sample(s); the MPM estimates a covariance per class "
                "and needs at least 2 samples in each (collect more data or merge classes)")
        mu = Xk.mean(axis=0)
        Xc = Xk - mu
        ss += float(np.sum(Xc * Xc))
        mus.append(mu)
        Cs.append(Xc.T / np.sqrt(mk))
        counts.append(mk)
    diff = float(np.linalg.norm(mus[0] - mus[1]))
    if diff <= 1e-12 * max(float(np.linalg.norm(mus[0])), float(np.linalg.norm(mus[1])), float(np.max(np.abs(X)))):
        raise DataError(
            f"MPM: the two class means coincide (||mu_1 - mu_2|| = {diff:.3g}); no hyperplane separates "
            "them with any worst-case bound, so the MPM family cannot be fitted on these features")
    ridge = float(rho) * ss / (m * n)
    return ClassMoments(mu=tuple(mus), C=tuple(Cs), counts=tuple(counts), rho=float(rho), ridge=ridge)


SCALE_RANGE = (1e-7, 1e7)
"""Largest feature magnitudes the MPM accepts. ``w'(mu_1 - mu_2) = 1`` makes ``w`` scale like
``1 / X``; outside this range ECOS and Clarabel, with absolute tolerances near 1e-8, report the
largest-bound SOCP infeasible or fail (measured on Gaussian data scaled by 10^-30 ... 10^30:
correct within 1e-7 only between 1e-6 and 1e6)."""


def _check_scale(X: NDArray) -> None:
    """Refuse features whose largest magnitude is outside :data:`SCALE_RANGE` with a
    :class:`~fsframe.errors.DataError` that says so (else the failure reads as "the class means
    coincide" or an infeasible SOCP)."""
    big = float(np.max(np.abs(X), initial=0.0))
    lo, hi = SCALE_RANGE
    if big == 0.0 or not np.isfinite(big):
        return  # zeros / non-finite values are the dataset checks' business
    if not lo <= big <= hi:
        raise DataError(
            f"MPM: the features' largest magnitude is {big:.3g}, outside [{lo:g}, {hi:g}]: at this scale the "
            "SOCP solvers' tolerances make the worst-case bound and the class-mean test meaningless (the "
            "class means would look equal, or the problem infeasible). Standardise the features (e.g. "
            "sklearn's StandardScaler, or --scale standard on the command line)")


def _singular_classes(X: NDArray, y: NDArray) -> list[tuple[int, int, int, int]]:
    """``(label, m_k, rank, n_informative)`` for each class whose covariance is singular on the
    features that are not constant overall (those carry nothing and are warned about apart).
    A class with no more samples than features is singular by counting (rank <= m_k - 1); the
    rank is computed (SVD of the ``m_k x n`` centred data) only when ``m_k > n``."""
    varying = np.ptp(X, axis=0) > 0
    n_var = int(np.count_nonzero(varying))
    out = []
    for label in (1, -1):
        Xk = X[y == label][:, varying]
        mk = Xk.shape[0]
        if mk <= n_var:
            out.append((label, mk, mk - 1, n_var))
            continue
        r = int(np.linalg.matrix_rank(Xk - Xk.mean(axis=0)))
        if r < n_var:
            out.append((label, mk, r, n_var))
    return out


