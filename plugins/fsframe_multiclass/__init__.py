"""Multi-class method plugin (paper 004): the multi-class margin formulation with one row group per
feature, DSO-FS (Algorithm 1) and RFS (Nie et al. 2010).

Registered as the default plugin ``multiclass`` (see ``fsframe.plugins.DEFAULT_PLUGINS``).
"""

from __future__ import annotations

from fsframe import MethodSpec, hookimpl

from .dso import DSOLoop
from .margin import MarginFormulation, label_matrix
from .rfs import L21RegressionFormulation, RFSLoop

__all__ = ["MarginFormulation", "DSOLoop", "L21RegressionFormulation", "RFSLoop", "label_matrix"]


@hookimpl
def fsframe_register_formulations():
    return [MarginFormulation, L21RegressionFormulation]


@hookimpl
def fsframe_register_loops():
    return [DSOLoop, RFSLoop]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("dso-fs", formulation="margin", surrogate="lp", loop="dso", defaults={"p": 0.5},
                   sparsity="n_features",
                   reference="Peng & Fan, paper 004, Algorithm 1, eqs. 7-14",
                   description="direct l_{2,p} sparsity under multi-class margin constraints (null space, "
                               "closed-form U, QP for E); ranks features by ||W_j||_2"),
        MethodSpec("rfs", formulation="l21-regression", surrogate=None, loop="rfs", defaults={"gamma": 1.0},
                   sparsity="n_features",
                   reference="Nie, Huang, Cai & Ding, NIPS 2010 (RFS); paper 004 §5 baseline",
                   description="min ||XW - Y||_{2,1} + gamma ||W||_{2,1} by iteratively reweighted linear "
                               "systems; ranks features by ||W_j||_2"),
    ]
