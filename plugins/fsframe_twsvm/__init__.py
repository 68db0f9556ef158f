"""Method plugin: twin-SVM feature selection (paper 003) — ``l1-twsvm``, ``ftsvm``, ``rtsvm``.

* formulation ``twsvm`` (:class:`TwinL1Formulation`): L1-TWSVM's two LPs (eqs. 11-12; kernel
  eqs. 13-14 with ``kernel="rbf"``), coefficients of shape ``(2, d)``;
* ``ftsvm``: the greedy mask loop (``fsframe.loops.greedy``, Algorithm 1) on it, linear or RBF;
* ``rtsvm``: the ranking of eq. 23 (Algorithm 2), with ``n_features=r`` the ``r`` best.

The entry point ``twsvm`` of fsframe's own distribution (``pyproject.toml``), shipped from ``plugins/``.
"""

from __future__ import annotations

from fsframe import MethodSpec, hookimpl

from .formulation import MaskedRBF, TwinL1Formulation, rbf_kernel, twin_distances
from .masked import RBFMaskEvaluator, RBFMaskSpace, twin_loss, twin_mask_space

__all__ = ["TwinL1Formulation", "MaskedRBF", "rbf_kernel", "twin_distances", "twin_loss", "twin_mask_space",
           "RBFMaskSpace", "RBFMaskEvaluator"]

@hookimpl
def fsframe_register_formulations():
    return [TwinL1Formulation]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("l1-twsvm", formulation="twsvm", surrogate=None, loop="single", defaults={},
                   reference="paper 003 eqs. 7-14",
                   description="L1-norm twin SVM: two LPs, support = union of both surfaces' features"),
        MethodSpec("ftsvm", formulation="twsvm", surrogate=None, loop="greedy", defaults={"mode": "select"},
                   reference="paper 003 eqs. 15-24, Algorithm 1",
                   description="greedy feature mask on L1-TWSVM (linear or kernel='rbf')"),
        MethodSpec("rtsvm", formulation="twsvm", surrogate=None, loop="greedy", defaults={"mode": "rank"},
                   reference="paper 003 eqs. 22-23, Algorithm 2",
                   description="rank features by eq. 23 after L1-TWSVM; n_features=r keeps the r best"),
    ]
