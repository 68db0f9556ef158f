"""How a fit reports the model it returns: which registered backend solved the subproblem that gave
it (:func:`_solved_by`), which problem its certificate is of (:func:`certified_on`) and whether
the certificate describes the returned coefficients or the point they were cut from
(:func:`_returned_vs_certified`). Shared by the compiled path (:mod:`fsframe.binary_fit`,
:mod:`fsframe.fit_certificate`, :mod:`fsframe.one_vs_rest`) and the path that solves from ``X``
(:mod:`fsframe.from_data`)."""

from __future__ import annotations

import numpy as np

from .plugins import get_registry


def _returned_vs_certified(certificate: dict, coef, certified, objective) -> None:
    """Say whether the returned coefficients are the certified subproblem's answer.

    A loop may return its iterate cut to a support (the exactly-``r`` selection when the re-solve
    on the selected features failed, or groups below 1e-12 of the largest norm): the certificate
    then describes the uncut point. ``cut_distance`` is the largest coefficient change;
    ``certifies_returned`` is False (and ``status`` says ``cut``) when that change is beyond
    rounding (1e-9 of the largest coefficient) or the loop reported no objective."""
    coef = np.asarray(coef, dtype=float).ravel()
    certified = np.asarray(certified, dtype=float).ravel()
    # another shape: not comparable, so not certified (None keeps the certificate valid JSON)
    dist = float(np.max(np.abs(coef - certified), initial=0.0)) if coef.shape == certified.shape else None
    ok = (objective is not None and dist is not None
          and dist <= 1e-9 * max(1.0, float(np.max(np.abs(certified), initial=0.0))))
    certificate["cut_distance"] = dist
    certificate["certifies_returned"] = bool(ok)
    if not ok:
        certificate["certified_status"] = certificate["status"]
        certificate["status"] = "cut"


def _solved_by(result) -> str | None:
    """The registered backend that solved the subproblem of the returned model (``result``, its
    :class:`~fsframe.backends.SolveResult`); ``None`` when no backend did — a loop that computes
    its model itself (RFS's linear systems, a BVLS step) labels its result with a name no backend
    has. A loop may solve on another backend than the fit's (DSO-FS's ``E`` steps on Clarabel)."""
    name = getattr(result, "backend", None)
    return name if name and name in get_registry().names("backend") else None


CERTIFICATE_MEASURES = ("status", "gap", "primal_residual", "dual_residual")


def certified_on(certificate: dict, unfixed: dict | None) -> None:
    """Say which problem ``certificate`` (a fit's, its measures those of a ``zero_tol`` cut's
    re-solve, the cut groups fixed at zero) is of. ``unfixed`` is the returned point certified on
    the problem it was cut from, the cut groups free
    (:meth:`fsframe.problem.Subproblem.certify_unfixed`). When it is ``optimal`` there, its
    measures replace the top-level ones (``certified_on = "unfixed problem"``) and the re-solve's
    own go to ``cut_problem``. Otherwise the top-level ones stay the cut problem's
    (``certified_on = "cut problem"``) and ``unfixed_problem`` holds what the check on the problem
    without the cut found (``None``: no multipliers to check with). A failed check there is no proof
    the cut point is not optimal: the multipliers of the cut groups' rows are the solvers'
    leftovers."""
    if unfixed is not None and unfixed.get("status") == "optimal":
        certificate["cut_problem"] = {k: certificate[k] for k in CERTIFICATE_MEASURES if k in certificate}
        certificate.update({k: unfixed[k] for k in CERTIFICATE_MEASURES if k in unfixed})
        certificate["certified_on"] = "unfixed problem"
        return
    certificate["certified_on"] = "cut problem"
    certificate["unfixed_problem"] = unfixed
