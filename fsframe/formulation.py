"""The :class:`Formulation` contract: a classification model stated as a Pyomo model with a
sparsity slot.

A formulation builds, once per fit, the convex subproblem every outer-loop iteration solves::

    minimise    loss(w, b, xi) + penalty(w)
    subject to  the formulation's constraints (linear rows, second-order cones)

where ``penalty`` is the sparsity slot created by :func:`fsframe.pyomo_ext.add_sparsity_slot`:
mutable weights on the group-norm epigraph ``s_j >= ||w_(j)||`` (``lin``), on the coefficients
themselves (``lin_w``, for DCA) and on the squared group norms (``quad``, for EM). Loops ask for
the terms they need; the formulation builds only those.

Contract of :meth:`Formulation.build` (checked by ``fsframe.testing.check_formulation``):

* returns a :class:`BuiltModel` whose ``model`` is a ``pyomo.environ.ConcreteModel`` with one
  active objective, the slot's ``fsframe_objective``;
* the slot's ``coef`` map gives the model coefficients ``w`` (``n_coef`` entries, reshaped to
  ``coef_shape``), its ``groups`` the feature each entry belongs to;
* ``intercept`` maps the solution to the intercept(s), so that
  :meth:`Formulation.decision_function` reproduces the classifier;
* the model does not depend on the slot weights (they are Params), so it is built once.
"""

from __future__ import annotations

import abc
import contextlib
import contextvars
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import NDArray

from .enums import ProblemClass
from .pyomo_ext import SLOT_TERMS, LinearMap, SparsitySlot

__all__ = ["Formulation", "BuiltModel", "fit_solver", "using_solver"]

_SOLVER: contextvars.ContextVar = contextvars.ContextVar("fsframe_fit_solver", default=None)


def fit_solver():
    """``(backend, options)`` of the fit in progress, or ``None`` outside :func:`fsframe.fit`.

    For a formulation that solves an auxiliary problem in ``validate`` or ``build`` (MPM's
    largest feasible bound): it should use the backend and options the user chose for the fit."""
    return _SOLVER.get()


@contextlib.contextmanager
def using_solver(backend, options):
    """Make ``(backend, options)`` what :func:`fit_solver` returns inside the block."""
    token = _SOLVER.set((backend, options))
    try:
        yield
    finally:
        _SOLVER.reset(token)


@attrs.frozen(eq=False)
class BuiltModel:
    """What :meth:`Formulation.build` returns.

    Attributes
    ----------
    model : pyomo ConcreteModel
    slot : SparsitySlot
    intercept : LinearMap
        One row per output (1 for a binary model).
    coef_shape : tuple of int
        Shape of the coefficient array (``(n_features,)`` for a binary linear model).
    info : dict
        Formulation-specific values worth reporting (e.g. MPM's ``kappa``).
    """

    model: Any
    slot: SparsitySlot
    intercept: LinearMap
    coef_shape: tuple
    info: dict = attrs.field(factory=dict)


@attrs.frozen
class Formulation(abc.ABC):
    """Base class of formulations. Subclasses are frozen attrs classes whose fields are the
    model's parameters (``C``, ``delta``, ...), validated on construction."""

    name: ClassVar[str]
    reference: ClassVar[str] = ""
    slot_terms: ClassVar[frozenset] = SLOT_TERMS
    """The sparsity-slot terms this formulation can build."""
    sparse: ClassVar[bool] = True
    """``False`` for a model without a sparsity penalty (its slot's magnitude map is zero, e.g.
    Lanckriet's MPM): it runs only without a surrogate, with loop ``single``."""
    multiclass: ClassVar[str] = "ovr"
    """``"ovr"``: binary only, fsframe runs one-vs-rest; ``"native"``: handles any number of
    classes itself (``build`` then receives integer class codes)."""

    @abc.abstractmethod
    def problem_class(self, terms: frozenset) -> ProblemClass:
        """The class of the subproblem built with slot ``terms`` (picks the backend)."""

    def validate(self, X: NDArray, y: NDArray) -> dict:
        """Formulation-specific checks of the training data, before building (raise
        :class:`~fsframe.errors.DataError` / :class:`~fsframe.errors.InfeasibleParameterError`,
        warn :class:`~fsframe.errors.DataWarning`). Returns facts worth reporting."""
        return {}

    @abc.abstractmethod
    def build(self, X: NDArray, y: NDArray, terms: frozenset) -> BuiltModel:
        """Build the Pyomo model for training data ``X`` (m, n) and labels ``y``
        (``-1``/``+1`` for binary formulations) with slot ``terms``."""

    def decision_function(self, coef: NDArray, intercept, X: NDArray) -> NDArray:
        """``X @ coef + intercept``; positive means the class coded ``+1``."""
        return X @ coef + intercept

    @property
    def params(self) -> dict:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"
