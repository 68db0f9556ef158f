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
import inspect
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import NDArray

from .backends.base import Backend, SolveOptions, SolveResult
from .canonical import ProblemData
from .enums import ProblemClass
from .pyomo_ext import SLOT_TERMS, LinearMap, SparsitySlot

__all__ = ["Formulation", "BuiltModel", "AuxSolver", "accepts", "call_opt_in"]

def accepts(fn, name: str) -> bool:
    """Whether callable ``fn`` takes a parameter called ``name`` (or ``**kwargs``): the opt-in
    rule for the extra arguments fsframe passes to :meth:`Formulation.validate` and
    :meth:`Formulation.build` (pluggy's "implementations take only the arguments they name")."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def call_opt_in(fn, *args, **optional):
    """``fn(*args, **kw)`` where ``kw`` holds the entries of ``optional`` that ``fn`` names."""
    return fn(*args, **{k: v for k, v in optional.items() if accepts(fn, k)})


@attrs.frozen(eq=False)
class AuxSolver:
    """The fit's solver, handed to a formulation that solves an auxiliary problem in
    ``validate`` or ``build`` (MPM's largest feasible bound).

    A formulation opts in by naming a ``solver`` parameter: ``def validate(self, X, y, *,
    solver=None)``. It solves with :meth:`solve` (the fit's backend and options) and reports
    each auxiliary solve with :meth:`record`, so that its status appears in
    ``FitResult.statuses`` like every subproblem's.

    Attributes
    ----------
    backend : Backend
    options : SolveOptions
    """

    backend: Backend
    options: SolveOptions = attrs.field(factory=SolveOptions)
    _log: dict = attrs.field(factory=dict, init=False, repr=False)

    def solve(self, data: ProblemData, *, backend: Backend | None = None) -> SolveResult:
        """Solve ``data`` with the fit's backend and options (or ``backend``, e.g. a fallback)."""
        be = self.backend if backend is None else backend
        return be.solve(data, self.options)

    def record(self, key, statuses) -> None:
        """Report the statuses of an auxiliary result once per fit (``key`` identifies it, so a
        result shared by ``validate`` and ``build`` counts once)."""
        self._log.setdefault(key, tuple(statuses))

    @property
    def statuses(self) -> tuple:
        """Statuses of the auxiliary solves recorded, in order."""
        return tuple(s for group in self._log.values() for s in group)


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
    transform : object with ``transform(X)``, optional
        For a formulation that owns its kernel (e.g. the RBF twin SVM): the fitted map from input
        samples to the rows its coefficients apply to (``K(x, A)``); ``FitResult`` predicts through it.
    """

    model: Any
    slot: SparsitySlot
    intercept: LinearMap
    coef_shape: tuple
    info: dict = attrs.field(factory=dict)
    transform: Any = None


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
    group_norm: ClassVar[str] = "l2"
    """The norm ``||w_(j)||`` of a group's coefficient entries that the slot's magnitude ``s_j``
    equals at the optimum: ``"l2"`` (scalar groups, or groups in a second-order cone) or ``"l1"``
    (every entry split as ``u - v`` and ``s_j = sum (u + v)``, as in an LP with several coefficient
    blocks per feature, e.g. the twin SVM's ``(2, n)``). Loops read the group norms ``t_j`` in it."""
    sparse_input: ClassVar[bool] = False
    """Whether :meth:`validate`, :meth:`build` and :meth:`decision_function` take a scipy.sparse
    (CSR) ``X`` and keep memory proportional to its stored entries — a formulation linear in
    ``X`` (hinge, twin SVM, margin). Otherwise a sparse ``X`` is refused before anything is built
    (:class:`~fsframe.errors.SparseInputError` with :meth:`needs_dense`'s reason)."""
    dense_reason: ClassVar[str] = "it has not declared that it builds from a sparse X (Formulation.sparse_input)"
    """Why the formulation needs ``X`` dense, for the refusal's message (e.g. the MPM's class covariances)."""
    multiclass: ClassVar[str] = "ovr"
    """``"ovr"``: binary only, fsframe runs one-vs-rest; ``"native"``: handles any number of
    classes itself (``build`` then receives integer class codes)."""
    pricing: ClassVar[str | None] = "reduced-costs"
    """How the core prices a feature group it leaves out of a working set
    (:mod:`fsframe.working_set`): ``"reduced-costs"`` — the group's columns at zero against the
    multipliers of the rows they share with the rest (exact when a group has no rows of its own,
    as with the split ``w = u - v``, ``s_j = u_j + v_j``; sound but conservative otherwise, and a
    group whose columns are free around zero is never left out); ``None`` — always solve the full
    problem."""
    bound_params: ClassVar[tuple[str, ...]] = ()
    """Names of the model's *bound parameters* (e.g. MEMPM's ``("delta_pos", "delta_neg")``): the
    parameters a bound-search loop (``fsframe.loops.BoundSearch``) varies between solves. A
    formulation declaring them implements :meth:`with_bounds`, and ``build`` puts in
    ``BuiltModel.info["bound_limits"]`` the supremum of each bound on the training data."""

    @abc.abstractmethod
    def problem_class(self, terms: frozenset) -> ProblemClass:
        """The class of the subproblem built with slot ``terms`` (picks the backend)."""

    def needs_dense(self) -> str | None:
        """Why this formulation, with these parameters, needs a dense ``X`` (None: a sparse ``X``
        is fine). Default: :attr:`dense_reason` unless :attr:`sparse_input`; a formulation
        whose answer depends on a parameter (a kernel) overrides it."""
        return None if self.sparse_input else self.dense_reason

    def validate(self, X: NDArray, y: NDArray) -> dict:
        """Formulation-specific checks of the training data, before building (raise
        :class:`~fsframe.errors.DataError` / :class:`~fsframe.errors.InfeasibleParameterError`,
        warn :class:`~fsframe.errors.DataWarning`). Returns facts worth reporting.

        An override that needs to solve something may add a keyword parameter ``solver``: it
        then receives the fit's :class:`AuxSolver` (opt-in by name; :func:`call_opt_in`). The
        same holds for :meth:`build`."""
        return {}

    @abc.abstractmethod
    def build(self, X: NDArray, y: NDArray, terms: frozenset) -> BuiltModel:
        """Build the Pyomo model for training data ``X`` (m, n) and labels ``y``
        (``-1``/``+1`` for binary formulations) with slot ``terms``."""

    restatable_params: ClassVar[tuple[str, ...]] = ()
    """Names of parameters (besides :attr:`bound_params`) that :meth:`restate` changes in the built
    and compiled problem without rebuilding it (e.g. the hinge's ``C``, which only scales the
    slack costs in ``c``): a parameter path (:func:`fsframe.path`) over one of them keeps one
    subproblem, hence one live solver model and its basis."""

    def restate(self, built: BuiltModel, base: ProblemData, compiled, params: dict) -> ProblemData:
        """The compiled loss-only problem ``base`` restated for new values of the
        :attr:`restatable_params` (``params``, a dict by name), changing its arrays in numpy and
        the Pyomo model ``built.model`` so that it states the same problem (e.g. by
        ``model.fsframe_slot.loss.set_value(...)``); like :meth:`with_bounds`, never rebuilding
        or recompiling. Only formulations declaring :attr:`restatable_params` implement it."""
        raise NotImplementedError(f"formulation {self.name!r} declares no restatable parameters")

    def with_bounds(self, built: BuiltModel, base: ProblemData, compiled, bounds: dict) -> ProblemData:
        """The compiled loss-only problem ``base`` (``CompiledModel.base``) restated for new values
        of the :attr:`bound_params` (``bounds``, a dict by name), by changing its coefficients in
        numpy (e.g. ``base.evolve(G=...)``) — never by rebuilding or recompiling the Pyomo model.
        ``compiled`` (the :class:`~fsframe.compiler.CompiledModel`) maps the model's variables to
        columns. Only formulations declaring :attr:`bound_params` implement it."""
        raise NotImplementedError(f"formulation {self.name!r} declares no bound parameters")

    def explain_failure(self, sub, iterate):
        """A fit's first subproblem did not end ``optimal`` (``iterate``, on ``sub``, the
        :class:`~fsframe.problem.Subproblem`): return an exception that states why in the model's
        terms — typically an :class:`~fsframe.errors.InfeasibleParameterError` for a parameter
        the data cannot meet, found only now because checking it up front costs a solve (MPM's
        ``delta`` above ``delta_max``) — or ``None`` (default) to let the loop report the status.
        The outer loop raises what it returns."""
        return None

    def mask_space(self, sub):
        """The capability "can fix a feature group to zero" that the greedy mask loop needs
        (:class:`fsframe.loops.greedy.MaskSpace`, paper 003 Algorithm 1): ``None`` (default)
        when the formulation does not provide it. ``sub`` is the fit's
        :class:`~fsframe.problem.Subproblem` (built and compiled once)."""
        return None

    def decision_function(self, coef: NDArray, intercept, X: NDArray) -> NDArray:
        """``X @ coef + intercept``; positive means the class coded ``+1``."""
        return X @ coef + intercept

    @property
    def params(self) -> dict:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"
