"""What the conformance kit expects of the MPM formulations, stated without their code (the hook
``fsframe_register_oracles`` registers it)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["mpm_max_decision"]


def mpm_max_decision(formulation):
    """Lanckriet's MPM (``mpm-max``) has the loss ``||F_1'w|| + ||F_2'w||``, not a function of the
    decision values; what they must satisfy: the normalisation ``w'(mu_1 - mu_2) = 1`` (000 eq. 5),
    i.e. ``mean f[+1] - mean f[-1] = 1``, and ``f(mu_1) = kappa* ||F_1'w|| > 0`` (class ``+1`` on
    the positive side)."""
    def check(f, y, model_loss):
        f1, f2 = float(np.mean(f[y > 0])), float(np.mean(f[y < 0]))
        if not (math.isclose(f1 - f2, 1.0, rel_tol=1e-6, abs_tol=1e-6) and f1 > 0):
            return (f"mpm-max decision values: mean f over class +1 minus over class -1 = {f1 - f2!r} (must be 1, "
                    f"000 eq. 5) and mean f over class +1 = {f1!r} (must be > 0)")
        return None
    return check

