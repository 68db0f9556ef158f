"""A start for the hinge dual from LIBSVM's SMO (through scikit-learn's ``SVC``): near the optimum in
a fraction of a second where the active sets stall.

The EM subproblem's dual (:mod:`fsframe.dense_em`) is the soft-margin SVM dual

    min  1/2 ||F' lam||^2 - 1' lam   s.t.  y' lam = 0,  0 <= lam <= C,   F = diag(y) K,

whose Gram matrix ``F F'`` is ``diag(y) G diag(y)`` for the sample kernel ``G = K K'``. LIBSVM's
sequential minimal optimisation solves exactly that problem with ``G`` precomputed, moving two
multipliers at a time, so its cost does not grow with the free set: on a 3 947 x 3 758 RBF map of
Twonorm (width 1, ``C = 10``, EM step 8: 1 651 free multipliers) it reaches the optimum's free set
in 0.3 s of CPU, where the matrix-free active set crept for minutes (docs/paper002-dual.md).

LIBSVM keeps the kernel's columns in single precision, so its answer is good to about ``1e-7``
(relative duality gap ~3e-7 there whatever its tolerance), not to the certificate's ``1e-9``: it is a
*start*. The active sets take it from there (the matrix-free method: one CG on the right free set,
0.1 s there; the dense pivots: one factorisation), and the certificate judges their answer as any
other.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

SMO_TOL = 1e-6
"""LIBSVM's stopping tolerance (the largest violation of its pairwise optimality condition). Its
single-precision kernel cache bounds the accuracy at ~1e-7 whatever this is; tighter costs more
iterations for nothing the polish needs."""

SMO_MAX_ITER = 50_000_000
"""LIBSVM's iteration budget; reaching it ends the attempt (no start, the step's usual attempts
follow). The duals measured need 25 000 at 3 947 samples, but a late kernel-map step whose
columns' scales spread by 1e6 needed 2.03e7 (Twonorm, 3 946 samples, sigma 1, C = 10, 403 live
columns: 35 s of CPU; with 1e7 SMO gave up after 18 s and every later attempt failed, 271 s in all,
the fit then falling to the compiled path; with SMO's start the step certifies in 38 s)."""


def svm_start(F: NDArray, y: NDArray, C: float) -> NDArray | None:
    """The multipliers LIBSVM's SMO finds for ``min 1/2 ||F' lam||^2 - 1' lam``, ``y' lam = 0``,
    ``0 <= lam <= C`` (``F = diag(y) K``, ``y`` in ``{-1, +1}`` with both present, ``C > 0``: not
    checked here; the caller, :class:`~fsframe.dense_em.DenseHingeSubproblem`, checks them), or
    ``None`` when it does not converge within :data:`SMO_MAX_ITER` or fails. The point lies in the
    box; its equality residual is LIBSVM's (~1e-13 relative to ``C``). Forms the ``m x m`` Gram
    matrix (``O(m^2 q)``: 1.2 s of CPU at 3 947 x 3 758, one BLAS thread; 125 MB)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import SVC

    m = F.shape[0]
    gram = F @ F.T
    gram *= y[:, None]
    gram *= y[None, :]  # diag(y) F F' diag(y) = K K': the kernel SVC expects
    svc = SVC(kernel="precomputed", C=float(C), tol=SMO_TOL, max_iter=SMO_MAX_ITER, shrinking=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        try:
            svc.fit(gram, y)
        except ConvergenceWarning:
            return None
    lam = np.zeros(m)
    lam[svc.support_] = np.abs(svc.dual_coef_[0])
    np.clip(lam, 0.0, C, out=lam)
    if not np.all(np.isfinite(lam)):
        return None
    return lam
