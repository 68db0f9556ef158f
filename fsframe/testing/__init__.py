"""Public conformance kit for fsframe components (after scikit-learn's ``check_estimator`` and
CVXPY's ``StandardTestLPs``).

Plugin authors run these in their own CI::

    from fsframe.testing import check_surrogate, check_backend, check_loop, check_formulation

    def test_my_surrogate():
        check_surrogate(MySurrogate(a=2.0))

Each ``check_*`` raises :class:`AssertionError` naming the component and the property that
failed, and returns the names of the checks it ran (a check runs only for the capabilities the
component declares). Every expected value is derived independently of the code under test: by
finite differences, by the definition of a concave penalty, by a hand-solved problem
(:class:`StandardProblems`), by re-reading the Pyomo model, or by an oracle registered for the
component's class (:mod:`fsframe.testing.oracles`).

Modules: ``surrogate`` (:func:`check_surrogate`), ``formulation`` (:func:`check_formulation`),
``loop`` (:func:`check_loop`), ``backend`` (:func:`check_backend`, :class:`FailingBackend`),
``fit_result`` (:func:`check_fit_result`), ``problems`` (:class:`StandardProblems`), ``data``
(:func:`toy_data`, :func:`kit_data`), ``models`` (:class:`KitHinge`, the kit's own formulation:
the checks need no plugin), ``oracles`` (the registration functions, :class:`Oracle` for the hook
``fsframe_register_oracles``, and the core components' oracles), ``pytest_glue``
(:func:`parametrize_with_checks`: one test per component and check).
"""

from .backend import FailingBackend, check_backend
from .data import kit_data, toy_data
from .fit_result import check_fit_result
from .formulation import check_formulation
from .loop import LOOP_CHECKS, check_loop
from .models import KitHinge
from .oracles import (
    LoopModel,
    Oracle,
    hinge_loss,
    mpm_margin_loss,
    register_decision_check,
    register_decision_loss,
    register_em_weights,
    register_loop_oracle,
)
from .problems import StandardProblem, StandardProblems
from .pytest_glue import checks_of, parametrize_with_checks
from .surrogate import DEFAULT_GRID, check_surrogate, surrogate_checks

__all__ = [
    "check_surrogate",
    "check_formulation",
    "check_backend",
    "check_loop",
    "check_fit_result",
    "parametrize_with_checks",
    "checks_of",
    "StandardProblem",
    "StandardProblems",
    "FailingBackend",
    "hinge_loss",
    "mpm_margin_loss",
    "toy_data",
    "kit_data",
    "DEFAULT_GRID",
    "LoopModel",
    "Oracle",
    "KitHinge",
    "LOOP_CHECKS",
    "surrogate_checks",
    "register_loop_oracle",
    "register_decision_loss",
    "register_decision_check",
    "register_em_weights",
]
