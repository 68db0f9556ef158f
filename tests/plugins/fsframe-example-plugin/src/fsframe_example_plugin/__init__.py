"""Example third-party fsframe plugin: the SCAD penalty and a SCAD-SVM method.

Installed as the distribution ``fsframe-example-plugin``; fsframe finds it through the entry
point ``example = "fsframe_example_plugin"`` in the group ``fsframe``.
"""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import gt, instance_of

from fsframe import MethodSpec, Surrogate, hookimpl
from fsframe.surrogates.base import DCSplit

__all__ = ["SCADSurrogate"]


@attrs.frozen
class SCADSurrogate(Surrogate):
    r"""The smoothly clipped absolute deviation (SCAD) penalty of Fan & Li (2001)::

        phi(t) = lam * t                                   0 <= t <= lam
               = (2 a lam t - t^2 - lam^2) / (2 (a - 1))   lam < t <= a lam
               = lam^2 (a + 1) / 2                         t > a lam

    with ``phi'(t) = lam`` on ``[0, lam]``, ``(a lam - t) / (a - 1)`` on ``(lam, a lam]`` and ``0``
    beyond (Fan & Li, eq. 2.7: ``p'(t) = lam {I(t <= lam) + (a lam - t)_+ / ((a - 1) lam) I(t > lam)}``).
    ``phi`` is concave, non-decreasing, ``phi(0) = 0`` and constant beyond ``a lam``: every large
    coefficient costs the same, as in the zero-norm (scaled by ``lam^2 (a + 1) / 2``).

    Models: the DC split ``g(t) = lam t``, ``h(t) = lam t - phi(t)`` (``h = 0`` on ``[0, lam]``,
    ``(t - lam)^2 / (2 (a - 1))`` on ``(lam, a lam]``, linear beyond; convex because ``phi'`` does
    not increase); the EM / local quadratic approximation weights ``phi'(t) / t`` (Fan & Li §3.3).

    Parameters
    ----------
    lam : float > 0
        Threshold: the penalty is ``lam * t`` below it.
    a : float > 2
        Fan & Li recommend 3.7.

    References
    ----------
    J. Fan and R. Li, "Variable selection via nonconcave penalized likelihood and its oracle
    properties", J. Amer. Statist. Assoc. 96(456):1348-1360, 2001.
    H. Zou and R. Li, "One-step sparse estimates in nonconcave penalized likelihood models",
    Ann. Statist. 36(4):1509-1533, 2008 (local linear approximation).
    """

    name = "scad"
    reference = "Fan & Li, JASA 96:1348-1360, 2001, eq. 2.7"
    lam: float = attrs.field(default=1.0, converter=float, validator=[instance_of(float), gt(0)])
    a: float = attrs.field(default=3.7, converter=float, validator=[instance_of(float), gt(2)])

    def phi(self, t):
        t = np.asarray(t, dtype=float)
        lam, a = self.lam, self.a
        mid = (2 * a * lam * t - t * t - lam * lam) / (2 * (a - 1))
        return np.where(t <= lam, lam * t, np.where(t <= a * lam, mid, lam * lam * (a + 1) / 2))

    def derivative(self, t):
        t = np.asarray(t, dtype=float)
        lam, a = self.lam, self.a
        return np.where(t <= lam, lam, np.maximum(a * lam - t, 0.0) / (a - 1))

    def dc_split(self):
        lam = self.lam
        return DCSplit(lin=lam, h=lambda t: lam * np.asarray(t, dtype=float) - self.phi(t),
                       grad_h=lambda t: lam - self.derivative(t))

    def quad_weights(self, t):
        t = np.asarray(t, dtype=float)
        out = np.full(t.shape, np.inf)
        np.divide(self.derivative(t), t, out=out, where=t > 0)
        return out


@hookimpl
def fsframe_register_surrogates():
    return [SCADSurrogate]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("scad-svm", formulation="hinge", surrogate="scad", loop="reweighted-l1",
                   defaults={"C": 1.0, "lam": 1.0, "a": 3.7},
                   reference="Fan & Li 2001 (SCAD); Zou & Li 2008 (local linear approximation)",
                   description="hinge loss + SCAD penalty by local linear approximation (reweighted L1 LPs)"),
    ]

