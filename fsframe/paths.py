"""Parameter paths: one method fitted over a grid of one parameter, in order, with warm starts.

``fsframe.path(X, y, "fsv", alpha=[1, 2, 5, 10])`` gives, point by point, the result an
independent :func:`fsframe.fit` call gives (same objective, same support), faster: each point
starts from the previous one.

* A surrogate or loop parameter (``alpha``, ``p``, ``eps``, ``max_iter``...) leaves the convex
  subproblem as it is: every point solves the *same* :class:`~fsframe.problem.Subproblem` (one
  build, one compile, one live solver model, e.g. one HiGHS LP whose basis and working set carry
  over).
* A formulation's bound parameter (:attr:`Formulation.bound_params`, e.g. ``mpm-equal``'s
  ``delta``) or restatable parameter (:attr:`Formulation.restatable_params`, e.g. the hinge's
  ``C``) is restated in the compiled problem (:meth:`Subproblem.set_bounds`,
  :meth:`Subproblem.restate`): same subproblem, same live model. A formulation restates only
  when it has the ``restate`` (``bounds``) protocol (:meth:`Formulation.provides`: a subclass
  with its own ``build`` and an inherited ``restate`` or ``with_bounds`` has not); otherwise each
  point is a new build (``warm`` ``"new"`` or ``"seeded"``).
* Any other parameter (the MPM's ``delta``, a kernel's ``sigma``) gets a new subproblem whose
  working set starts from the previous point's (:meth:`Subproblem.seed_working_set`).

Each point's own certificate proves its answer on its full problem, so a warm start can change
the time, never the answer. :attr:`PathPoint.warm` says which of the above happened.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Mapping

import attrs
import numpy as np
from numpy.typing import NDArray

from .dataset import check_Xy, is_sparse, preview
from .errors import DataError, DataWarning, InvalidOptionError
from .grids import AUTO, MAX_POINTS, POINTS_PER_DECADE, GridRule, auto_rule, declared_parameter, no_grid_message, \
    stopped_growing
from .progress import progress_bar
from .fitting import (check_fit_options, check_n_features, fit_resolved, is_regression, make_options,
                      training_data, working_set_options)
from .method import Resolved, resolve, select_backend
from .problem import Subproblem
from .results import FitResult

__all__ = ["path", "PathResult", "PathPoint", "WARM_KINDS"]

WARM_KINDS = ("cold", "same", "restated", "seeded", "new")
"""How a point started (:attr:`PathPoint.warm`): ``cold`` the first point; ``same`` the previous
point's subproblem unchanged (a surrogate or loop parameter); ``restated`` the same subproblem
with bound or restatable parameters changed in place; ``seeded`` a new subproblem whose working
set starts from the previous point's; ``new`` a new subproblem from scratch (no working set)."""


@attrs.frozen(eq=False)
class PathPoint:
    """One point of a :class:`PathResult`.

    Attributes
    ----------
    value : float
        The swept parameter's value.
    n_selected : int
    support : array of bool, shape (n_groups,)
    coef, intercept
        As in :class:`~fsframe.FitResult`.
    objective : float or None
    n_iter : int
    seconds : float
        Wall time of this point (its validation included).
    certificate : dict
        ``FitResult.certificate`` of the point.
    accuracy : float or None
        Accuracy on ``validation=(X_val, y_val)`` (a fraction), if given (classification).
    warm : str
        How it started (:data:`WARM_KINDS`; for one-vs-rest, the first class's).
    result : FitResult
    r2, mse : float or None
        A regression method's (``Formulation.task == "regression"``) coefficient of determination
        and mean squared error of the fitted values on ``validation=(X_val, y_val)``, if given.
    """

    value: float
    n_selected: int
    support: NDArray
    coef: NDArray
    intercept: object
    objective: float | None
    n_iter: int
    seconds: float
    certificate: dict
    accuracy: float | None
    warm: str
    result: FitResult = attrs.field(repr=False)
    r2: float | None = None
    mse: float | None = None

    def to_dict(self) -> dict:
        """Plain values (JSON-ready): everything but ``result``; arrays as lists."""
        icpt = self.intercept
        return {"value": self.value, "n_selected": self.n_selected,
                "support": np.flatnonzero(self.support).tolist(), "coef": np.asarray(self.coef).tolist(),
                "intercept": np.asarray(icpt).tolist() if np.ndim(icpt) else float(icpt),
                "objective": self.objective, "n_iter": self.n_iter, "seconds": self.seconds,
                "certificate": _plain(self.certificate), "accuracy": self.accuracy, "warm": self.warm,
                "r2": self.r2, "mse": self.mse}


@attrs.frozen(eq=False)
class PathResult:
    """What :func:`path` returns: the points in grid order, and how the path went.

    Attributes
    ----------
    parameter : str
        The swept parameter (as given, e.g. ``"alpha"`` or ``"surrogate__alpha"``).
    method : str or None
    points : tuple of PathPoint
    seconds : float
        Wall time of the whole path.
    n_subproblems : int
        Subproblems built (1 for a path that restated or reused one throughout, per class for
        one-vs-rest).
    rule : GridRule or None
        How an automatic grid was made (its start ``entry``, direction, ratio, ``how``); None for
        a grid given as a list.
    """

    parameter: str
    method: str | None
    points: tuple
    seconds: float
    n_subproblems: int
    rule: GridRule | None = None

    @property
    def values(self) -> list:
        return [p.value for p in self.points]

    @property
    def n_selected(self) -> list:
        return [p.n_selected for p in self.points]

    @property
    def objectives(self) -> list:
        return [p.objective for p in self.points]

    @property
    def accuracies(self) -> list:
        return [p.accuracy for p in self.points]

    def to_dict(self) -> dict:
        return {"parameter": self.parameter, "method": self.method, "seconds": self.seconds,
                "n_subproblems": self.n_subproblems, "points": [p.to_dict() for p in self.points],
                "rule": None if self.rule is None else _plain(self.rule.as_dict())}

    def sweep_data(self) -> dict:
        """The input of the sweep picture (:func:`fsframe.evaluation.plots.plot_path`):
        ``{"parameter", "method", "value", "n_selected", "objective", "accuracy", "r2"}`` (accuracy
        in %, a regression's validation R² in ``r2``; ``None`` entries without validation data)."""
        return {"parameter": self.parameter, "method": self.method, "value": self.values,
                "n_selected": self.n_selected, "objective": self.objectives,
                "accuracy": [None if a is None else 100.0 * a for a in self.accuracies],
                "r2": [p.r2 for p in self.points]}

    def as_table(self) -> str:
        """A Markdown table, one row per point."""
        acc = any(p.accuracy is not None for p in self.points)
        reg = any(p.mse is not None for p in self.points)  # R² is undefined on a constant target: "-"
        head = [self.parameter, "selected", "objective", "iterations", "seconds", "working set", "warm"]
        if acc:
            head.insert(2, "accuracy")
        if reg:
            head[2:2] = ["R²", "MSE"]
        rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for p in self.points:
            cells = [f"{p.value:g}", str(p.n_selected), "-" if p.objective is None else f"{p.objective:.6g}",
                     str(p.n_iter), f"{p.seconds:.3f}", _working_set_cell(p.certificate), p.warm]
            if acc:
                cells.insert(2, "-" if p.accuracy is None else f"{100 * p.accuracy:.1f}%")
            if reg:
                cells[2:2] = ["-" if p.r2 is None else f"{p.r2:.4f}", "-" if p.mse is None else f"{p.mse:.6g}"]
            rows.append("| " + " | ".join(cells) + " |")
        return "\n".join(rows)


def _working_set_cell(cert) -> str:
    """The groups of the last subproblem's working set, ``full`` without one (one-vs-rest: per
    class, ``a/b/c``)."""
    certs = (cert or {}).get("per_class", (cert,)) if cert else ()
    sizes = [c.get("working_set") if c else None for c in certs]
    if not sizes or all(k is None for k in sizes):
        return "full"
    return "/".join("full" if k is None else str(k) for k in sizes)


def _plain(d):
    if isinstance(d, Mapping):
        return {k: _plain(v) for k, v in d.items()}
    if isinstance(d, (list, tuple)):
        return [_plain(v) for v in d]
    if isinstance(d, np.generic):
        return d.item()
    return d


def _grid(params: dict, n_features, method) -> tuple[str, list | None]:
    """The one swept parameter and its values, checked; ``None`` values for an automatic grid
    (the parameter given as ``"auto"``, or no grid at all and the method's declared sparsity
    parameter, :attr:`MethodSpec.sparsity`). ``n_features`` may be swept like a parameter."""
    listed = [k for k, v in params.items() if isinstance(v, (list, tuple, np.ndarray))]
    auto = [k for k, v in params.items() if isinstance(v, str) and v == AUTO]
    if isinstance(n_features, (list, tuple, np.ndarray)):
        listed.append("n_features")
    elif isinstance(n_features, str) and n_features == AUTO:
        auto.append("n_features")
    if len(listed) + len(auto) > 1:
        raise InvalidOptionError(f"path sweeps one parameter per call, got grids for {sorted(listed + auto)}: fix all "
                                 "but one to a single value (or run one path per parameter)")
    if auto:
        return auto[0], None
    if not listed:
        declared = declared_parameter(method)
        if declared is None:
            raise InvalidOptionError(
                "path needs one parameter given as a list of values, e.g. alpha=[1, 2, 5], or as 'auto' for an "
                f"automatic grid (got {sorted(params) or 'no parameters'}); " + no_grid_message(method))
        if declared in params or (declared == "n_features" and n_features is not None):
            raise InvalidOptionError(f"{declared!r} is fixed, so there is nothing to sweep: give it as a list of "
                                     f"values, or as {declared}='auto' for the automatic grid")
        return declared, None
    name = listed[0]
    raw = n_features if name == "n_features" else params[name]
    values = list(np.asarray(raw, dtype=object).ravel()) if isinstance(raw, np.ndarray) else list(raw)
    if not values:
        raise InvalidOptionError(f"the grid of {name!r} is empty: give at least one value")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
            raise InvalidOptionError(f"the grid of {name!r} holds {v!r}: path sweeps numbers only")
        if not math.isfinite(float(v)):
            raise InvalidOptionError(f"the grid of {name!r} holds the non-finite value {v!r}: give finite numbers")
    return name, [v.item() if isinstance(v, np.generic) else v for v in values]


def _same_kernel(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a transform whose equality is not a bool (arrays): assume changed
        return False


def _restatement(old: Resolved, new: Resolved):
    """``(bounds, restated)`` that turn ``old``'s subproblem into ``new``'s in place, or None when a
    new subproblem is needed."""
    f0, f1 = old.formulation, new.formulation
    if type(f0) is not type(f1) or old.terms != new.terms or not _same_kernel(old.kernel, new.kernel):
        return None
    changed = {a.name for a in attrs.fields(type(f1)) if getattr(f0, a.name) != getattr(f1, a.name)}
    # provides(): a subclass whose build is its own but whose restate (with_bounds) is inherited
    # is not restated
    caps = f1.provides()
    bound = tuple(getattr(f1, "bound_params", ())) if "bounds" in caps else ()
    restatable = tuple(getattr(f1, "restatable_params", ())) if "restate" in caps else ()
    if not changed <= set(bound) | set(restatable):
        return None
    if bound and any(getattr(f1, b, None) is None for b in bound):
        return None  # a bound set from the data (delta_fraction): let a new build compute it
    return ({b: getattr(f1, b) for b in bound} if bound else {},
            {k: getattr(f1, k) for k in restatable if k in changed})


class _Chains:
    """The ``reuse`` hook of :func:`fsframe.fitting.fit_resolved`: one subproblem per binary
    problem (``key``), carried from point to point."""

    def __init__(self):
        self.subs: dict = {}
        self.resolved: dict = {}
        self.n_built = 0
        self.warm: list = []
        self.backend_name = ""  # the backend of the point being fitted (set by path)
        # the from_data path's start of each binary problem for its next point (fsframe.from_data)
        self.from_data_starts: dict = {}

    def __call__(self, key, res: Resolved, make) -> Subproblem:
        prev, prev_res = self.subs.get(key), self.resolved.get(key)
        kind = "cold"
        if prev is None:
            sub = make()
        else:
            how = _restatement(prev_res, res) if prev.backend.name == self.backend_name else None
            if how is not None:
                bounds, restated = how
                if bounds and prev.is_built:
                    prev.set_bounds(**bounds)
                if restated and prev.is_built:
                    prev.restate(**restated)
                prev.formulation = res.formulation
                sub, kind = prev, ("restated" if restated or (bounds and bounds != _bounds_of(prev_res)) else "same")
            else:
                ws = prev.working_set
                active = None if ws is None or ws.active is None else ws.active.copy()
                prev.close()
                sub = make()
                kind = "seeded" if active is not None and sub.seed_working_set(active) else "new"
        if sub is not prev:
            self.n_built += 1
        self.subs[key], self.resolved[key] = sub, res
        self.warm.append(kind)
        return sub

    def close(self) -> None:
        for sub in self.subs.values():
            sub.close()


def _bounds_of(res: Resolved) -> dict:
    return {b: getattr(res.formulation, b) for b in getattr(res.formulation, "bound_params", ())}



def _validation_data(validation, Xa, ya) -> tuple:
    """``(X_val, y_val)`` checked as held-out data: numbers, finite, as many features as the
    training X, labels of the same length (errors say "validation"); any number of classes. Labels
    the training y never has are counted wrong by the accuracy: a warning names them."""
    if not isinstance(validation, (tuple, list)) or len(validation) != 2:
        raise InvalidOptionError("validation must be a pair (X_val, y_val)")
    Xv, yv = check_Xy(*validation, name="validation", classes=False)
    if Xv.shape[1] != Xa.shape[1]:
        raise InvalidOptionError(f"validation X has {Xv.shape[1]} features, the training X {Xa.shape[1]}")
    unseen = sorted(set(np.unique(yv).tolist()) - set(np.unique(ya).tolist()), key=repr)
    if unseen:
        warnings.warn(f"validation y has labels the training y never has ({preview(unseen)}); no model can predict "
                      "them, so their samples count as errors in every point's accuracy", DataWarning, stacklevel=3)
    return Xv, yv


def _regression_validation(validation, Xa) -> tuple:
    """``(X_val, y_val)`` of a regression method: numbers, finite, a real target, as many
    features as the training X."""
    if not isinstance(validation, (tuple, list)) or len(validation) != 2:
        raise InvalidOptionError("validation must be a pair (X_val, y_val)")
    Xv, yv = check_Xy(*validation, name="validation", classes=False)
    if yv.dtype.kind not in "iuf" or not np.all(np.isfinite(yv.astype(float))):
        raise DataError("validation: a regression target must be finite real numbers")
    if Xv.shape[1] != Xa.shape[1]:
        raise InvalidOptionError(f"validation X has {Xv.shape[1]} features, the training X {Xa.shape[1]}")
    return Xv, yv.astype(np.float64)


def _regression_scores(fr, Xv, yv) -> tuple:
    """``(r2, mse)`` of the fitted values ``fr.predict(Xv)`` on the real target ``yv`` (R² is
    ``1 - SS_res / SS_tot``; ``None`` when ``yv`` is constant)."""
    res = yv - np.asarray(fr.predict(Xv), dtype=float)
    ss_tot = float(np.sum((yv - yv.mean()) ** 2))
    mse = float(np.mean(res ** 2))
    return (None if ss_tot == 0.0 else 1.0 - float(np.sum(res ** 2)) / ss_tot), mse


def path(X, y=None, method: str | None = None, *, formulation: str | None = None, surrogate: str | None = None,
         loop: str | None = None, backend="auto", n_features=None, validation=None,
         time_limit: float | None = None, backend_options: Mapping | None = None, verbose: bool = False,
         fast: bool = True, cone_form: str = "substitute", working_set="auto",
         points_per_decade: int = POINTS_PER_DECADE, max_points: int = MAX_POINTS, progress=None,
         **params) -> PathResult:
    """Fit ``method`` at every value of one parameter, in the order given, with warm starts; or
    over an automatic grid of the method's sparsity parameter.

    Parameters
    ----------
    X, y, method, formulation, surrogate, loop, backend, time_limit, backend_options,
    verbose, fast, cone_form, working_set
        As in :func:`fsframe.fit`.
    n_features : int, list of int or "auto", optional
        Exactly ``r`` features at every point (an int), or the swept parameter itself (a list, or
        ``"auto"``: log-spaced integers from 1, :func:`fsframe.grids.integer_grid`).
    validation : (X_val, y_val), optional
        Held-out data: each point reports its accuracy on it (:attr:`PathPoint.accuracy`); for a
        regression method (a real ``y``: ``l1-ls``, ``log-ls``, ...), the R² and mean squared
        error of its fitted values (:attr:`PathPoint.r2`, :attr:`PathPoint.mse`).
    points_per_decade, max_points : int
        Density and length of an automatic grid (:mod:`fsframe.grids`).
    progress : bool or callable, optional
        Progress of the path, one step per point (:func:`fsframe.progress.progress_bar`): None (default)
        shows a bar when the session is interactive (a terminal or a notebook), True always,
        False never; a callable receives each :class:`PathPoint`.
    **params
        Component parameters as in :func:`fsframe.fit`, at most one of them given as a list (or
        tuple, 1-d array) of finite numbers: the grid, e.g. ``alpha=[1, 2, 5]``, ``C=[0.1, 1]``,
        ``delta=[0.2, 0.3]``, ``loop__tol=[...]``. The order is kept (sort it for the sweep
        picture); warm starts help most between neighbouring values. ``C="auto"`` (any
        parameter with an automatic grid) asks for the automatic grid; with no grid at all, the
        method's declared sparsity parameter (:attr:`MethodSpec.sparsity`) is gridded
        automatically: from the value where the first feature enters (derived from the
        formulation's optimality conditions), log-spaced, until the support stops growing
        (:attr:`PathResult.rule` says how).

    Returns
    -------
    PathResult
        Point ``k`` equals ``fsframe.fit(X, y, method, <parameter>=grid[k], ...)`` (its own
        certificate proves it), with :attr:`PathPoint.warm` saying how it started.

    Raises
    ------
    InvalidOptionError
        two grids, an empty grid, a value that is not a finite number, no grid for a method that
        declares no sparsity parameter, a parameter without an automatic grid for these
        components, or any value :func:`fsframe.fit` would refuse (an unknown parameter, an
        invalid value): every point of a given grid is resolved before anything is solved.

    The inputs are never modified.
    """
    t_start = time.perf_counter()
    flags = check_fit_options(fast=fast, cone_form=cone_form, verbose=verbose)
    name, grid = _grid(params, n_features, method)
    form = resolve(method, formulation=formulation, surrogate=surrogate, loop=loop).formulation
    regression = is_regression(form)
    Xa, ya, names = training_data(X, y, regression=regression, method=method or form.name)
    if validation is None:
        Xv, yv = None, None
    else:
        Xv, yv = (_regression_validation(validation, Xa) if regression else _validation_data(validation, Xa, ya))
    fixed = {k: v for k, v in params.items() if k != name}
    comps = dict(formulation=formulation, surrogate=surrogate, loop=loop)
    sweep_r = name == "n_features"
    base = resolve(method, **comps, **fixed)
    if is_sparse(Xa):
        base.check_sparse_input(Xa.shape)  # before an automatic grid reads the data
    if not sweep_r:
        check_n_features(n_features, base, Xa)
    rule = None
    if grid is None:
        rule = auto_rule(Xa, ya, base, name, fixed=fixed, method=method, components=comps,
                         points_per_decade=points_per_decade, max_points=max_points)
        values = rule.candidates()
        resolved = None
        if rule.empty:
            warnings.warn(f"path: {rule.how}", DataWarning, stacklevel=2)
    else:
        values = grid
        if sweep_r:
            for v in grid:
                check_n_features(v, base, Xa)
            resolved = [base] * len(grid)
        else:
            resolved = [resolve(method, **comps, **fixed, **{name: v}) for v in grid]
    ws = working_set_options(working_set)
    options = make_options(time_limit=time_limit, verbose=flags["verbose"], backend_options=backend_options)
    chains = _Chains()
    points: list = []
    bar = progress_bar(progress, total=None if grid is None else len(grid), desc=f"path {method or ''} {name}")
    try:
        for k, value in enumerate(values):
            res = base if sweep_r else (resolved[k] if resolved is not None else
                                        resolve(method, **comps, **fixed, **{name: value}))
            r = int(value) if sweep_r else n_features
            t0 = time.perf_counter()
            be = select_backend(backend, res.problem_class, quadratic="quad" in res.terms, time_limit=time_limit)
            be.check_options(options)
            chains.backend_name = be.name
            before = len(chains.warm)
            fr = fit_resolved(res, Xa, ya, names, be, options, n_features=r, fast=flags["fast"],
                              cone_form=flags["cone_form"], ws=ws, t_start=t0, reuse=chains)
            acc = r2 = mse = None
            if Xv is not None and regression:
                r2, mse = _regression_scores(fr, Xv, yv)
            elif Xv is not None:
                acc = float(np.mean(fr.predict(Xv) == yv))
            points.append(PathPoint(
                value=r if sweep_r else value, n_selected=int(np.count_nonzero(fr.support)),
                support=np.asarray(fr.support), coef=fr.coef, intercept=fr.intercept, objective=fr.objective,
                n_iter=fr.n_iter, seconds=time.perf_counter() - t0, certificate=fr.certificate, accuracy=acc,
                warm=chains.warm[before] if len(chains.warm) > before else "new", result=fr, r2=r2, mse=mse))
            bar.step(points[-1], f"{name}={value:g}: {points[-1].n_selected} selected")
            if rule is not None and (rule.values is None or sweep_r) and \
                    stopped_growing([q.n_selected for q in points], rule.patience):
                break
    finally:
        bar.close()
        chains.close()
    return PathResult(parameter=name, method=method, points=tuple(points), seconds=time.perf_counter() - t_start,
                      n_subproblems=chains.n_built, rule=rule)
