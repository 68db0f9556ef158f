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
from typing import Any, ClassVar

import attrs
import numpy as np
from numpy.typing import NDArray

from .enums import ProblemClass
from .pyomo_ext import SLOT_TERMS, LinearMap, SparsitySlot

__all__ = ["Formulation", "BuiltModel", "FromDataSolution", "PathStart", "PROTOCOLS", "TRAITS"]

PROTOCOLS: dict[str, tuple[str, ...]] = {
    "bounds": ("bound_params", "with_bounds"),
    "restate": ("restatable_params", "restate"),
    "mask_space": ("mask_space",),
    "explain_failure": ("explain_failure",),
    "empty_model_threshold": ("empty_model_threshold",),
    "auto_values": ("auto_values",),
    "separating_loss": ("separating_loss",),
    "margins": ("margins",),
    "from_data": ("solve_from_data",),
    "quad_from_data": ("solve_quad_from_data",),
    "frontier_retries": ("frontier_retries",),
}
"""The optional protocols a formulation opts into by defining their attributes (none is a method of
the base class); :meth:`Formulation.provides` names those a formulation has. ``docs/plugins.md``
states each one's signature and contract:

* ``bounds`` — :attr:`~Formulation.bound_params` (non-empty) and ``with_bounds(built, base,
  compiled, bounds) -> ProblemData``: the problem restated for new bound values (the
  ``bound-search`` loop; ``Subproblem.set_bounds``);
* ``restate`` — :attr:`~Formulation.restatable_params` and ``restate(built, base, compiled,
  params) -> ProblemData`` (``fsframe.path`` over such a parameter keeps one subproblem);
* ``mask_space`` — ``mask_space(sub) -> fsframe.loops.MaskSpace``: can fix a feature group to
  zero (the ``greedy`` loop, paper 003 Algorithm 1);
* ``explain_failure`` — ``explain_failure(X, y, status, aux) -> Exception or None``: why the
  fit's first subproblem has no solution (its ``status``), in the model's terms (MPM: ``delta``
  above ``delta_max``, computed only then since it costs a solve); ``None`` to let the status
  stand. The fit driver calls it with the fit's :class:`fsframe.AuxSolver`.
* ``empty_model_threshold`` — ``empty_model_threshold(X, y, *, aux) -> float``: the smallest
  uniform L1 weight at which the all-zero model is optimal (where the first feature enters), with
  ``threshold_scaling`` (how it scales with the formulation's parameters); the automatic grids of
  :mod:`fsframe.grids` start there;
* ``auto_values`` — ``auto_values(name, X, y, *, n_points, aux) -> tuple or None``: the automatic
  grid of a parameter whose range the formulation knows (MPM's ``delta`` up to ``delta_max``);
* ``separating_loss`` — ``separating_loss() -> float``: a value of the loss below which every
  training sample has a positive margin (logistic: ``C log 2``), declared by a loss that reaches
  zero only at infinity; DCA and IRL1 stop where the next subproblem would have no minimiser
  (:class:`fsframe.errors.SeparationWarning`).
* ``margins`` — ``margins(X, y, coef, intercept) -> ndarray``: each training sample's margin under
  the model ``(coef, intercept)`` (``coef`` in the built model's ``coef_shape``: ``(n, K)`` for
  ``multinomial``; ``y`` as the formulation's ``build`` receives it), all positive
  exactly when the model separates the classes; with ``separating_loss``, it tells DCA and IRL1 an
  iterate separates the classes when its loss is above ``separating_loss()`` (many small margins).
* ``quad_from_data`` — ``solve_quad_from_data(X, y, quad, *, start, tol) -> fsframe.ridge.RidgeSolution
  or None``: the subproblem with the slot term ``quad`` alone (``loss + sum_j quad_j w_j^2``, EM's
  step; ``inf`` fixes a group at zero) solved from ``X`` and certified (:mod:`fsframe.ridge`), from
  ``start = (coef, intercept)``; ``None`` to decline. The fit's subproblem then takes those solves
  (:class:`fsframe.quad_path.QuadFromDataSubproblem`).
* ``frontier_retries`` — ``frontier_retries(built, base, compiled)``: a generator of ``(label,
  base)`` after the fit's first subproblem ended without a solution (and ``explain_failure`` said nothing), each ``base`` the compiled
  problem restated (in numpy, updating ``built.info`` to say how) and ``label`` what changed; the
  fit driver runs the loop on each in turn and keeps the first that solves. Exhausted, it
  restores the model and ``built.info`` as first stated (MEMPM's ``mempm_theta``: ``delta_neg`` at
  wider margins inside the feasibility frontier, docs/mempm.md).
"""

TRAITS: dict[str, str] = {
    "native_multiclass": "handles any number of classes itself (multiclass = 'native')",
    "large_margin": "a large-margin classifier (margin rows y f(x) >= 1), whose L2 fit on any ranked subset of the "
                    "features predicts (large_margin)",
    "hard_margin": "the hard multi-class margin Y * (X W + b) >= 1 with row groups, no loss (hard_margin)",
    "l21_regression": "the problem ||X W - Y||_{2,1} + gamma ||W||_{2,1} with its gamma (l21_regression)",
    "aux_solver": "validate and build take the fit's auxiliary solver as keyword aux (aux_solver)",
}
"""Facts a formulation declares (:attr:`Formulation.traits`, or :meth:`Formulation.provides` when
they depend on parameters) that a loop may require; with :data:`PROTOCOLS` the formulation side
of ``OuterLoop.formulation_requires``. A third party may add names of its own."""

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


@attrs.frozen(eq=False)
class FromDataSolution:
    """What ``Formulation.solve_from_data`` (the ``from_data`` protocol) returns: the subproblem's
    answer computed without a Pyomo model.

    Attributes
    ----------
    coef : array of shape ``coef_shape``
    intercept : float or array
        The model's free intercept (a ``from_data`` model has one: its ``zero_tol`` cut compares
        centred column norms, :func:`fsframe.scales.offset_free`).
    objective : float
        The subproblem's objective attained by ``(coef, intercept)`` (the loss at its least
        slacks plus the slot penalty).
    status : Status
        ``OPTIMAL`` when ``certificate`` holds within its tolerance, else ``OPTIMAL_INACCURATE``.
    certificate : dict
        KKT certificate on the *full* subproblem: ``gap``, ``primal_residual``, ``dual_residual``
        (as :class:`~fsframe.backends.certificate.Certificate`'s), plus what the method reports
        (``FitResult.certificate`` keeps every key).
    backend : str
        The backend whose solver solved it (its registered name).
    backend_version : str or None
    rounds : tuple of dict
        One entry per restricted solve (``FitResult.info["from_data_rounds"]``).
    groups : int
        Groups of the final restricted problem (``FitResult.certificate["working_set"]``).
    recertify : callable, optional
        ``recertify(coef) -> (objective, certificate)``: the same for ``coef`` cut to a support
        (``intercept`` kept), which the fit calls when its loop's ``zero_tol`` cuts groups.
    restricted : callable, optional
        ``restricted(keep) -> FromDataSolution``: the subproblem solved again with the groups
        outside the boolean mask ``keep`` fixed at zero. The fit calls it when ``recertify`` does
        not certify the cut point, and takes its answer only if the objective rises by at most the
        loop's ``tol`` (else it returns the uncut solution, as the compiled path does).
    info : dict
        Reported in ``FitResult.info``.
    start : optional
        What the same subproblem's next solve along a parameter path (:func:`fsframe.path`) may
        start from, in the formulation's own terms: fsframe hands it back unread as
        ``PathStart.previous`` at the next point.
    """

    coef: Any
    intercept: Any
    objective: float
    status: Any
    certificate: dict
    backend: str
    backend_version: str | None = None
    rounds: tuple = ()
    groups: int = 0
    recertify: Any = None
    restricted: Any = None
    info: dict = attrs.field(factory=dict)
    start: Any = None


@attrs.frozen
class PathStart:
    """Given to ``solve_from_data`` as ``start=`` when the fit is a point of a parameter path
    (:func:`fsframe.path`, e.g. a tuning grid's sweep), and only to a ``solve_from_data`` that
    takes a ``start`` keyword: the same binary problem (one class of a one-vs-rest fit) is solved
    again at every point, so the formulation may solve from ``X`` where a single fit would not,
    and start from ``previous``, the ``FromDataSolution.start`` of that problem at the previous
    point (``None`` at the first point, or after a point solved on the compiled path)."""

    previous: Any = None


def _owner(cls: type, attr: str):
    """The class of ``cls``'s MRO that defines ``attr``, or None."""
    return next((k for k in cls.__mro__ if attr in vars(k)), None)


_RESTATERS = {"bounds": "with_bounds", "restate": "restate", "quad_from_data": "solve_quad_from_data"}
"""The protocols of :data:`PROTOCOLS` that rewrite or re-solve the built problem, each with its
method: it must be written for the model ``build`` makes (:func:`_written_for_build`). A
``solve_quad_from_data`` inherited by a subclass with its own ``build`` (a class-weighted loss
that repeats rows) would solve the parent's loss."""


def _written_for_build(cls: type, method: str) -> bool:
    """Whether ``cls``'s ``method`` (``restate``, ``with_bounds``, ``solve_quad_from_data``) is
    written for the model its ``build`` makes: the class that defines ``method`` is the class
    that defines ``build`` or a subclass of it (it knew that ``build``: a subclass that only wraps
    ``method``, calling ``super()``, still has the protocol). A subclass that overrides ``build`` (a class-weighted
    hinge that puts ``C`` elsewhere, a bound row stated another way; also through a mixin) but
    inherits ``method`` would be restated by the parent's rule, which drops what the subclass's
    ``build`` did with the parameter: it has no such protocol until it defines its own
    (``docs/plugins.md``)."""
    own, build = _owner(cls, method), _owner(cls, "build")
    return own is not None and build is not None and issubclass(own, build)


def restater_mismatch(formulation, protocol: str) -> str | None:
    """Why ``formulation`` lacks ``protocol`` (``"bounds"``, ``"restate"``) although it has the
    protocol's attributes: its method comes from a class above the one that defines ``build``
    (:func:`_written_for_build`), in words that say how to comply; ``None`` when that is not
    the reason (the protocol is there, or its attributes are missing)."""
    method = _RESTATERS.get(protocol)
    if method is None or not all(getattr(formulation, a, None) for a in PROTOCOLS[protocol]):
        return None
    cls = type(formulation)
    own, build = _owner(cls, method), _owner(cls, "build")
    if own is None or build is None or issubclass(own, build):
        return None
    return (f"`{method}` comes from {own.__name__} while `build` comes from {build.__name__}; define `{method}` in "
            f"{cls.__name__} (a `super()` wrapper suffices; docs/plugins.md)")


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
    data_facts: ClassVar[tuple[str, ...]] = ()
    """The keys of the fit's ``info`` (from :meth:`validate` and ``BuiltModel.info``) whose values
    the formulation derives from the training data as parameters of the model (MPM's ``delta``
    and ``kappa`` from ``delta_max``): :attr:`FitResult.facts <fsframe.results.FitResult.facts>`,
    the "from the data" line. Every other number in ``info`` is bookkeeping
    (:attr:`FitResult.details <fsframe.results.FitResult.details>`)."""
    sparse_input: ClassVar[bool] = False
    """Whether :meth:`validate`, :meth:`build` and :meth:`decision_function` take a scipy.sparse
    (CSR) ``X`` and keep memory proportional to its stored entries — a formulation linear in
    ``X`` (hinge, twin SVM, margin). Otherwise a sparse ``X`` is refused before anything is built
    (:class:`~fsframe.errors.SparseInputError` with :meth:`needs_dense`'s reason)."""
    dense_reason: ClassVar[str] = "it has not declared that it builds from a sparse X (Formulation.sparse_input)"
    """Why the formulation needs ``X`` dense, for the refusal's message (e.g. the MPM's class covariances)."""
    multiclass: ClassVar[str] = "ovr"
    """``"ovr"``: a binary model, which fsframe runs one-vs-rest on more than two classes;
    ``"native"``: one model of any number of classes (``build`` then receives integer class codes,
    and its coefficients are ``(n_groups, n_classes)``, one row group per feature: see
    :func:`fsframe.results.result_coef`); ``"binary"``: two classes only, more are refused before
    any work (:class:`~fsframe.errors.UnsupportedProblemError`)."""
    task: ClassVar[str] = "classification"
    """``"classification"``: ``build`` receives class codes (``-1``/``+1``, or integers for a native
    multi-class model); ``"regression"``: a real target, passed as given (least squares).
    :func:`fsframe.fit` validates ``y`` accordingly, ``FitResult.classes`` is then ``()`` and
    ``predict`` the fitted values; the surfaces that load data sets (the command line,
    cross-validation, studies) take it on a regression data set (``Dataset(task="regression")``)
    and refuse it on class labels with a typed error, and :class:`fsframe.FSRegressor` is its
    estimator."""
    pricing: ClassVar[str | None] = "reduced-costs"
    """How the core prices a feature group it leaves out of a working set
    (:mod:`fsframe.working_set`): ``"reduced-costs"`` — the group's columns at zero against the
    multipliers of the rows they share with the rest (exact when a group has no rows of its own,
    as with the split ``w = u - v``, ``s_j = u_j + v_j``; sound but conservative otherwise, and a
    group whose columns are free around zero is never left out); ``None`` — always solve the full
    problem."""
    bound_params: ClassVar[tuple[str, ...]] = ()
    """Names of the model's *bound parameters* (e.g. MEMPM's ``("delta_pos", "delta_neg")``): the
    parameters a bound-search loop (``fsframe.loops.BoundSearch``) varies between solves. With
    ``with_bounds`` it makes the ``bounds`` protocol (:data:`PROTOCOLS`), and ``build`` puts in
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

        A formulation that must solve something here or in :meth:`build` declares the trait
        ``aux_solver`` (:attr:`traits`): both are then called with the keyword ``aux``, the fit's
        :class:`fsframe.AuxSolver` (the one route of auxiliary solves)."""
        return {}

    @abc.abstractmethod
    def build(self, X: NDArray, y: NDArray, terms: frozenset) -> BuiltModel:
        """Build the Pyomo model for training data ``X`` (m, n) and labels ``y``
        (``-1``/``+1`` for binary formulations) with slot ``terms``."""

    restatable_params: ClassVar[tuple[str, ...]] = ()
    """Names of parameters (besides :attr:`bound_params`) that a formulation with the ``restate``
    protocol changes in the built and compiled problem without rebuilding it (e.g. the hinge's
    ``C``, which only scales the slack costs in ``c``): a parameter path (:func:`fsframe.path`)
    over one of them keeps one subproblem, hence one live solver model and its basis."""
    traits: ClassVar[frozenset] = frozenset()
    """Facts about the model a loop may require (see :data:`TRAITS`), declared as data, e.g.
    ``frozenset({"large_margin"})``; :meth:`provides` adds them."""

    def provides(self) -> frozenset[str]:
        """What this instance offers the loops (``OuterLoop.formulation_requires``): every
        protocol of :data:`PROTOCOLS` whose attributes it defines (non-empty), ``native_multiclass``
        when :attr:`multiclass` is ``"native"``, and its :attr:`traits`. ``restate``, ``bounds``
        and ``quad_from_data`` count only when the class that defines ``restate``
        (``with_bounds``, ``solve_quad_from_data``) is the class that defines ``build`` or a
        subclass of it (a subclass that rebuilds the model opts in by defining its own). Override it (calling
        ``super()``) for a fact that depends on a parameter (the margin's ``hard_margin`` when
        ``C`` is ``None``)."""
        caps = {name for name, attrs_ in PROTOCOLS.items() if all(getattr(self, a, None) for a in attrs_)}
        # the owners' test only for the restaters it has (~1 us each, and provides() is asked per fit)
        caps -= {name for name, method in _RESTATERS.items()
                 if name in caps and not _written_for_build(type(self), method)}
        if self.multiclass == "native":
            caps.add("native_multiclass")
        return frozenset(caps | set(self.traits))

    def decision_function(self, coef: NDArray, intercept, X: NDArray) -> NDArray:
        """``X @ coef + intercept``; positive means the class coded ``+1``."""
        return X @ coef + intercept

    @property
    def params(self) -> dict:
        return attrs.asdict(self)

    def __str__(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"
