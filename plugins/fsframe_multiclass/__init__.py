"""Multi-class method plugin (paper 004): the multi-class margin formulation with one row group per
feature, DSO-FS (Algorithm 1 and the convex finish of :mod:`.convex`) and RFS (Nie et al. 2010).

The entry point ``multiclass`` of fsframe's own distribution (``pyproject.toml``), found like a third party's.
"""

from __future__ import annotations

from fsframe import MethodSpec, hookimpl

from .dso import DSOLoop
from .margin import MarginFormulation, label_matrix
from .oracles import l21_regression_loss, multiclass_margin_loss
from .rfs import L21RegressionFormulation, RFSLoop

__all__ = ["MarginFormulation", "DSOLoop", "L21RegressionFormulation", "RFSLoop", "label_matrix"]


@hookimpl
def fsframe_register_formulations():
    return [MarginFormulation, L21RegressionFormulation]


@hookimpl
def fsframe_register_loops():
    return [DSOLoop, RFSLoop]


@hookimpl
def fsframe_register_oracles():
    from fsframe.testing import Oracle  # the conformance kit loads Pyomo: only when it asks

    return [Oracle("decision_loss", MarginFormulation, lambda f: multiclass_margin_loss(f.C)),
            Oracle("decision_loss", L21RegressionFormulation, lambda f: l21_regression_loss(f.gamma))]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("dso-fs", formulation="margin", surrogate="lp", loop="dso", defaults={"p": 0.5},
                   reference="Peng & Fan, paper 004, Algorithm 1, eqs. 7-14",
                   description="direct l_{2,p} sparsity under multi-class margin constraints (Algorithm 1, "
                               "then a convex finish: exact at p = 1); ranks features by ||W_j||_2"),
        MethodSpec("rfs", formulation="l21-regression", surrogate=None, loop="rfs", defaults={"gamma": 1.0},
                   reference="Nie, Huang, Cai & Ding, NIPS 2010 (RFS); paper 004 §5 baseline",
                   description="min ||XW - Y||_{2,1} + gamma ||W||_{2,1} by iteratively reweighted linear "
                               "systems; ranks features by ||W_j||_2"),
    ]
