"""Conformance checks of formulations: :func:`check_formulation` builds the model for every
combination of slot terms, compiles it both ways, re-derives the objective from Pyomo and checks
the decision function against the model's loss (an oracle of :mod:`fsframe.testing.oracles`)."""

from __future__ import annotations

import itertools
import math
from typing import Callable, Iterable

import numpy as np
import pyomo.environ as pyo
from numpy.typing import NDArray
from pyomo.repn import generate_standard_repn

from ..backends.base import Backend
from ..canonical import ProblemData
from ..compiler import CompiledModel, compile_model
from ..formulation import Formulation
from ..method import select_backend
from ._util import codes as _codes
from ._util import fail as _fail
from .oracles import resolve_decision_check

__all__ = ["check_formulation", "formulation_checks"]


def _dense_rows(M, rhs, perm) -> NDArray:
    D = np.zeros((M.shape[0], perm.size))
    D[:, perm] = M.toarray()
    return np.column_stack([D, rhs])


def _sorted_rows(R: NDArray) -> NDArray:
    return R[np.lexsort(np.round(R, 12).T[::-1])] if R.shape[0] else R


def _cone_rows(data: ProblemData, perm) -> NDArray:
    """The cone rows of ``G | h``, each cone's entries after the first (``t``) in sorted order
    (a second-order cone is invariant under their permutation)."""
    R = _dense_rows(data.G[data.l:], data.h[data.l:], perm)
    out, k = [], 0
    for q in data.cones:
        out += [R[k : k + 1], _sorted_rows(R[k + 1 : k + q])]
        k += q
    return np.vstack(out) if out else R


def _same_data(who: str, fast: CompiledModel, general: CompiledModel, data_f: ProblemData, data_g: ProblemData) -> None:
    """``data_f`` and ``data_g`` state the same problem up to column and row order."""
    if len(fast.columns) != len(general.columns):
        _fail(who, f"fast path has {len(fast.columns)} columns, general path {len(general.columns)}")
    try:
        perm = np.array([general.col_index[id(v)] for v in fast.columns])
    except KeyError as exc:
        raise AssertionError(f"{who}: a column of the fast path is missing from the general path") from exc
    def close(a, b):
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=1e-12)
    checks = {
        "c": (data_f.c, data_g.c[perm]),
        "lb": (data_f.lb, data_g.lb[perm]),
        "ub": (data_f.ub, data_g.ub[perm]),
        "offset": (np.atleast_1d(data_f.offset), np.atleast_1d(data_g.offset)),
        "cones": (np.array(data_f.cones), np.array(data_g.cones)),
    }
    Pf = np.zeros((data_f.n,) * 2) if data_f.P is None else data_f.P.toarray()
    Pg = np.zeros((data_g.n,) * 2) if data_g.P is None else data_g.P.toarray()
    checks["P"] = (Pf, Pg[np.ix_(perm, perm)])
    ident = np.arange(data_f.n)
    checks["A"] = (_sorted_rows(_dense_rows(data_f.A, data_f.b, ident)),
                   _sorted_rows(_dense_rows(data_g.A, data_g.b, np.argsort(perm))))
    checks["G (R+)"] = (_sorted_rows(_dense_rows(data_f.G[: data_f.l], data_f.h[: data_f.l], ident)),
                        _sorted_rows(_dense_rows(data_g.G[: data_g.l], data_g.h[: data_g.l], np.argsort(perm))))
    checks["G (cones)"] = (_cone_rows(data_f, ident), _cone_rows(data_g, np.argsort(perm)))
    for name, (a, b) in checks.items():
        if not close(a, b):
            _fail(who, f"fast and general compile paths differ in {name}")


def _random_weights(rng, comp: CompiledModel, terms: frozenset, *, with_inf: bool) -> dict:
    s = comp.slot
    w = {}
    if "lin" in terms:
        w["lin"] = rng.uniform(0.5, 2.0, s.n_groups)
    if "quad" in terms:
        w["quad"] = rng.uniform(0.5, 2.0, s.n_groups)
    if "lin_w" in terms:
        raw = rng.uniform(-1.0, 1.0, s.W.shape[0])
        norms = np.sqrt(np.bincount(s.groups, weights=raw * raw, minlength=s.n_groups))
        cap = w["lin"] if "lin" in w else np.ones(s.n_groups)
        w["lin_w"] = raw / np.maximum(norms, 1e-12)[s.groups] * (0.5 * cap)[s.groups]
    if with_inf and s.n_groups > 1 and s.exclusive and ("lin" in w or "quad" in w):
        j = int(rng.integers(0, s.n_groups))
        w["lin" if "lin" in w else "quad"][j] = np.inf
        if "lin_w" in w:
            w["lin_w"][s.groups == j] = 0.0
    return w


def _pyomo_objective(who: str, comp: CompiledModel, data: ProblemData) -> None:
    """Re-derive ``c``, ``P`` and the offset from the Pyomo objective (after a synced
    ``with_weights``) with ``generate_standard_repn`` and compare them with ``data``."""
    objs = list(comp.model.component_data_objects(pyo.Objective, active=True))
    repn = generate_standard_repn(objs[0].expr, quadratic=True, compute_values=True)
    if repn.nonlinear_expr is not None:
        _fail(who, "the objective has a nonlinear part")
    n = data.n
    c = np.zeros(n)
    P = np.zeros((n, n))
    for v, a in zip(repn.linear_vars, repn.linear_coefs):
        c[comp.col_index[id(v)]] += float(a)
    for (v1, v2), a in zip(repn.quadratic_vars or (), repn.quadratic_coefs or ()):
        i, j = comp.col_index[id(v1)], comp.col_index[id(v2)]
        P[i, j] += float(a)
        P[j, i] += float(a)
    fixed = np.array([v.fixed for v in comp.columns])
    by_weights = (data.lb == data.ub) & (comp.base.lb != comp.base.ub)  # fixed by an infinite weight
    if np.any(data.lb[fixed] != data.ub[fixed]) or np.any(by_weights & ~fixed):
        _fail(who, "the Pyomo model's fixed variables are not the columns with_weights fixed")
    free = ~fixed
    Pd = np.zeros((n, n)) if data.P is None else data.P.toarray()
    xf = np.where(fixed, data.lb, 0.0)
    offset = data.offset + float(data.c @ xf) + 0.5 * float(xf @ Pd @ xf)
    if not np.allclose(c[free], (data.c + Pd @ xf)[free], rtol=1e-10, atol=1e-10):
        _fail(who, "with_weights c differs from the Pyomo objective's linear part")
    if not np.allclose(P[np.ix_(free, free)], Pd[np.ix_(free, free)], rtol=1e-10, atol=1e-10):
        _fail(who, "with_weights P differs from the Pyomo objective's quadratic part")
    if not math.isclose(float(repn.constant), offset, rel_tol=1e-10, abs_tol=1e-10):
        _fail(who, f"objective constant {float(repn.constant)!r} differs from the offset {offset!r}")


def _model_values(comp: CompiledModel, built, x: NDArray) -> tuple[NDArray, NDArray, float]:
    """Coefficients, intercept and loss evaluated in Pyomo after loading ``x`` into the model."""
    comp.load_solution(x)
    coef = np.array([pyo.value(e) for e in built.slot.coef.expressions()])
    icpt = np.array([pyo.value(e) for e in built.intercept.expressions()])
    return coef, icpt, float(pyo.value(built.slot.block.loss))


def _check_constraints(who: str, model, tol: float) -> None:
    for con in model.component_data_objects(pyo.Constraint, active=True):
        val = pyo.value(con.body)
        lo = None if con.lower is None else pyo.value(con.lower)
        up = None if con.upper is None else pyo.value(con.upper)
        scale = tol * (1.0 + abs(val))
        if (lo is not None and val < lo - scale) or (up is not None and val > up + scale):
            _fail(who, f"the solution violates Pyomo constraint {con.name}: {lo} <= {val} <= {up}")


def formulation_checks(formulation: Formulation) -> list[str]:
    """The checks :func:`check_formulation` runs (its ``checks=`` names them): one per non-empty
    combination of the slot terms it declares, ``"terms lin"``, ``"terms lin+quad"``, ..."""
    return ["terms " + "+".join(c) for r in range(1, len(formulation.slot_terms) + 1)
            for c in itertools.combinations(sorted(formulation.slot_terms), r)]


def check_formulation(formulation: Formulation, X, y, *, backend: Backend | str = "auto",
                      decision_loss: Callable | bool | None = None, seed: int = 0, n_weights: int = 2,
                      terms: Iterable[frozenset] | None = None, checks=None) -> list[str]:
    """Check a formulation's model on data ``(X, y)`` for every non-empty combination of the slot
    terms it declares (or ``terms``; or ``checks``, a subset of :func:`formulation_checks`):

    * ``build`` returns a real Pyomo ``ConcreteModel`` with exactly one active objective, the slot's;
    * the fast compile path equals the general path (same matrices up to column/row order), and
      both give the same optimum and coefficients on ``backend`` for random slot weights
      (one group fixed by an infinite weight);
    * ``c``, ``P`` and the offset of :meth:`CompiledModel.with_weights` equal the Pyomo objective
      re-derived with ``generate_standard_repn`` after the synced update;
    * at the optimum, Pyomo's own evaluation satisfies every constraint, its objective equals the
      reported one, the slot's coefficient/intercept maps agree with the compiled ones, and
      the decision function agrees with the model (check ``"decision_loss <terms>"``):
      ``decision_loss(decision_function(coef, intercept, X), y)`` equals the model's loss.

    ``decision_loss``: a callable ``(decision values, y codes) -> loss``; ``None`` (default) takes
    the oracle registered for the formulation's class or its nearest base
    (:func:`~fsframe.testing.register_decision_loss`; built in: the hinge formulation,
    :func:`hinge_loss` with its ``C``, and the ``mpm`` formulation, :func:`mpm_margin_loss`: 0
    when the margin rows of 000 eq. 45 hold), else the registered decision-value check
    (:func:`~fsframe.testing.register_decision_check`; built in for ``mpm-max``, whose loss is no
    function of the decision values: ``"decision values <terms>"``, ``mean f[+1] - mean f[-1] = 1``
    and ``mean f[+1] > 0``). Any other formulation raises :class:`ValueError` unless
    ``decision_loss`` is given or is ``False``, which skips the check and says so in the returned
    names (``"decision_loss skipped (decision_loss=False) <terms>"``).

    The data should not be separable (e.g. :func:`~fsframe.testing.kit_data`): on separable data
    a hinge optimum has zero loss, and a loss that is always zero or a wrong ``C`` passes.

    Returns the names of the checks that ran.
    """
    who = f"formulation {formulation}"
    X = np.asarray(X, dtype=float)
    yc = _codes(formulation, np.asarray(y))
    formulation.validate(X, yc)
    dname, dcheck = resolve_decision_check(formulation, decision_loss)
    rng = np.random.default_rng(seed)
    if checks is not None:
        names = formulation_checks(formulation)
        if set(checks) - set(names):
            raise ValueError(f"check_formulation: unknown checks {sorted(set(checks) - set(names))}; its checks are "
                             f"{names}")
        terms = [name.split(" ", 1)[1].split("+") for name in checks]
    combos = ([frozenset(t) for t in terms] if terms is not None else
              [frozenset(c) for r in range(1, len(formulation.slot_terms) + 1)
               for c in itertools.combinations(sorted(formulation.slot_terms), r)])
    ran = []
    for combo in combos:
        tag = f"{who} terms={sorted(combo)}"
        built = formulation.build(X, yc, combo)
        if not isinstance(built.model, pyo.ConcreteModel):
            _fail(tag, f"build returned a {type(built.model).__name__}, not a Pyomo ConcreteModel")
        objs = list(built.model.component_data_objects(pyo.Objective, active=True))
        if len(objs) != 1 or objs[0] is not built.slot.objective:
            _fail(tag, f"the model must have one active objective, the slot's; it has {len(objs)}")
        if built.slot.terms != combo:
            _fail(tag, f"the slot was built with terms {sorted(built.slot.terms)}")
        # structure: the fast path with auxiliary cone variables reads the same columns as the
        # general path; values: the default fast path (cones substituted) solves the same problem
        fast_aux = compile_model(built.model, fast=True, cone_form="auxiliary")
        general = compile_model(built.model, fast=False)
        _same_data(tag, fast_aux, general, fast_aux.data, general.data)
        fast = compile_model(built.model, fast=True) if fast_aux.data.cones else fast_aux
        pc = formulation.problem_class(combo)
        be = select_backend(backend, pc) if isinstance(backend, str) else backend
        ran.append(f"build+compile {sorted(combo)}")
        solvable = bool(combo & {"lin", "quad"})
        for k in range(n_weights):
            weights = _random_weights(rng, fast, combo, with_inf=k > 0)
            df = fast.with_weights(**weights, sync=True)
            _pyomo_objective(tag, fast, df)
            dg = general.with_weights(**weights, sync=False)
            _same_data(tag, fast_aux, general, fast_aux.with_weights(**weights, sync=False), dg)
            if df.problem_class is not pc:
                _fail(tag, f"problem_class() says {pc.value}, the compiled problem is {df.problem_class.value}")
            if not solvable:
                continue
            rf, rg = be.solve(df), be.solve(dg)
            if rf.ok != rg.ok or (not rf.ok and rf.status is not rg.status):
                _fail(tag, f"fast path status {rf.status.value}, general path {rg.status.value}")
            if not rf.ok:
                if k == 0:
                    _fail(tag, f"no solution for random weights: {rf.status.value} ({rf.message})")
                continue  # fixing a group at zero may leave no feasible point (e.g. MPM); both agree
            # interior-point conic solvers stop at a ~1e-8 relative gap, and the two paths state the
            # cones differently (substituted vs auxiliary columns): optima to 1e-6, coefficients
            # to about the gap's root
            otol, wtol = (1e-6, 1e-3) if df.cones else (1e-7, 1e-6)
            if not math.isclose(rf.objective, rg.objective, rel_tol=otol, abs_tol=otol):
                _fail(tag, f"fast path optimum {rf.objective!r} != general path optimum {rg.objective!r}")
            wf, wg = fast.coef(rf.x), general.coef(rg.x)
            if not np.allclose(wf, wg, rtol=10 * wtol, atol=wtol * max(1.0, float(np.max(np.abs(wf))))):
                _fail(tag, f"fast and general paths give different coefficients: {wf} vs {wg}")
            coef, icpt, loss = _model_values(general, built, rg.x)
            _check_constraints(tag, built.model, 1e-6)
            pobj = float(pyo.value(built.slot.objective))
            if not math.isclose(pobj, rg.objective, rel_tol=1e-7, abs_tol=1e-7):
                _fail(tag, f"Pyomo evaluates the objective at the solution as {pobj!r}, the backend said {rg.objective!r}")
            if not (np.allclose(coef, wg, atol=1e-9) and np.allclose(icpt, general.evaluate(built.intercept, rg.x), atol=1e-9)):
                _fail(tag, "the slot's coefficient/intercept maps differ between Pyomo and the compiled model")
            if dcheck is not None:
                b = float(icpt[0]) if icpt.size == 1 else icpt
                f = formulation.decision_function(coef.reshape(built.coef_shape), b, X)
                msg = dcheck(np.asarray(f, dtype=float), yc, loss)
                if msg is not None:
                    _fail(tag, msg)
        ran.append(f"{'weights+solve' if solvable else 'weights'} {sorted(combo)}")
        if solvable:
            ran.append(f"{dname} {sorted(combo)}")
    return ran


