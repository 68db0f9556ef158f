"""The one-vs-rest assembly of a binary formulation's fits on more than two classes: each class's
result (:func:`_one_class`), the cut of the union of their supports to ``n_features`` groups
across classes (:func:`_cross_class_cut`), each class that lost groups re-solved on what it keeps
(:func:`_resolve_cut`), and the multi-class :class:`~fsframe.results.FitResult`
(:func:`_one_vs_rest`). :func:`fsframe.fitting.fit_resolved` runs the classes' binary fits
(:mod:`fsframe.binary_fit`) and hands them here."""

from __future__ import annotations

import time
import warnings

import attrs
import numpy as np

from .errors import SolverWarning, UnsupportedProblemError
from .fit_certificate import _recut, certificate_of
from .fit_report import _returned_vs_certified
from .method import Resolved
from .problem import Subproblem
from .results import FitResult


def _backends(parts) -> str | None:
    """``FitResult.backend`` of a one-vs-rest fit: the classes' backend, or their distinct
    backends joined by ``+`` (``None`` when none solved)."""
    names = sorted({p.backend for p in parts if p.backend})
    return "+".join(names) or None


def _cross_class_cut(coefs: np.ndarray, groups, n_groups: int, norm: str, n_features: int) -> tuple:
    """One-vs-rest's cut of the union of supports to ``n_features`` groups: each class's group
    norms (in the formulation's :attr:`~fsframe.Formulation.group_norm`) relative to that class's
    largest, the best over classes ranks a group, the ``n_features`` best are kept. ``coefs`` has
    shape ``(n_classes, *coef_shape)`` (a twin SVM's ``coef_shape`` is ``(2, n_features)``);
    ``groups`` maps each coefficient (flattened) to its group (the sparsity slot's map; ``None``:
    one coefficient per group). Returns the kept groups' indices and ``coefs`` with the other
    groups' coefficients set to zero (a copy)."""
    flat = coefs.reshape(coefs.shape[0], -1)
    g = np.arange(flat.shape[1]) if groups is None else np.asarray(groups)
    if g.shape != (flat.shape[1],) or (g.size and int(g.max()) >= n_groups):
        raise UnsupportedProblemError(
            f"one-vs-rest with n_features: the per-class coefficients (shape {coefs.shape[1:]}) do not map onto "
            f"the {n_groups} feature groups; fit each class yourself, or without n_features")
    a = np.abs(flat)
    t = np.stack([np.bincount(g, weights=row if norm == "l1" else row * row, minlength=n_groups) for row in a])
    t = t if norm == "l1" else np.sqrt(t)
    scale = np.max(t, axis=1, keepdims=True)
    score = np.max(t / np.where(scale > 0, scale, 1.0), axis=0)
    keep = np.argsort(-score, kind="stable")[:n_features]
    dropped = np.ones(n_groups, dtype=bool)
    dropped[keep] = False
    cut = flat.copy()
    cut[:, dropped[g]] = 0.0
    return keep, cut.reshape(coefs.shape)


def _one_class(res: Resolved, parts: dict, certified: list, common: dict, c) -> tuple:
    """One class's binary fit (``parts`` from :func:`_binary_fit`): ``(FitResult, the slot's group
    map)``; its certified coefficients go to ``certified``."""
    certified.append(parts.pop("certified_coef"))
    groups = parts.pop("groups")
    if parts.pop("transform") is not None:
        raise UnsupportedProblemError(
            f"formulation {res.formulation.name!r} maps the samples itself (its own kernel), which one-vs-rest "
            "cannot share across classes: fit it on two classes, or use a linear kernel")
    return FitResult(classes=("rest", c), **parts, **common), groups


def _resolve_cut(res: Resolved, r: FitResult, out, sub: Subproblem | None, keep: np.ndarray, coef_cut, certified):
    """Class ``r`` after the union of the classes' supports was cut to the groups ``keep``: its
    subproblem re-solved at the returned model's weights (its own features; the groups the loop
    dropped stay fixed at zero) with the groups outside ``keep`` fixed at zero too
    (``Subproblem.restricted``), so that the model returned is the optimum on the class's features
    that survive the cut, its objective the one it attains and its certificate its own. When the loop computed its model itself (no solved point) or the re-solve
    fails, the coefficients are cut without re-solving: no objective, a certificate marked ``cut``,
    and a warning for the failure."""
    lost = int(np.count_nonzero(r.support & ~keep))
    info = {**r.info, "n_features_dropped": r.info.get("n_features_dropped", 0) + lost,
            "n_features_union_cut": lost}
    it = out.iterate
    if sub is not None and it.x is not None and sub.is_built:
        re = sub.restricted(it, keep & r.support)
        if re.ok:
            coef = re.coef.reshape(np.shape(r.coef))
            objective = res.loop.objective_of(sub, re, res.surrogate, keep)
            certificate = certificate_of(re)
            if r.certificate.get("path") == "dense_em":  # the dense EM path's re-solve: its record as the fit's
                certificate.update(path="dense_em", objective=float(re.result.objective))
            _returned_vs_certified(certificate, coef, re.coef, objective)
            intercept = re.intercept
            intercept = float(intercept[0]) if intercept.size == 1 else intercept
            return attrs.evolve(r, coef=coef, intercept=intercept, support=r.support & keep, objective=objective,
                                certificate=certificate, statuses=r.statuses + (re.status,),
                                info={**info, "union_cut_resolved": True})
        warnings.warn(f"one-vs-rest: class {r.classes[1]!r}'s re-solve on the {int(keep.sum())} features kept across "
                      f"classes ended with status {re.status.value} ({re.result.message}); its coefficients are cut "
                      "without re-solving and no objective is reported", SolverWarning, stacklevel=4)
        info = {**info, "union_cut_resolved": False}
        statuses = r.statuses + (re.status,)
    else:
        statuses = r.statuses
    return attrs.evolve(r, coef=coef_cut, support=r.support & keep, objective=None, statuses=statuses,
                        certificate=_recut(r.certificate, coef_cut, certified, None), info=info)


def _one_vs_rest(res: Resolved, per: list, certified: list, groups, outcomes: list, held: dict, classes,
                 n_features, auto, t_start, common) -> FitResult:
    """The one-vs-rest result of the classes' fits ``per``: the union of their supports, cut to
    ``n_features`` groups across classes when larger (:func:`_cross_class_cut`), each class that
    lost groups re-solved on what it keeps (:func:`_resolve_cut`)."""
    supports = np.array([r.support for r in per])
    support = supports.any(axis=0)
    coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    if n_features is not None and support.sum() > n_features:
        kept, cut = _cross_class_cut(coefs, groups, support.size, getattr(res.formulation, "group_norm", "l2"),
                                     n_features)
        support = np.zeros_like(support)
        support[kept] = True
        per = [r if not np.any(r.support & ~support) else
               _resolve_cut(res, r, outcomes[i], held.get(c), support, cut[i], certified[i])
               for i, (r, c) in enumerate(zip(per, classes))]
        coefs = np.array([np.asarray(r.coef, dtype=float) for r in per])
    info = {"seconds": time.perf_counter() - t_start,
            "build_seconds": sum(r.info["build_seconds"] for r in per),
            "compile_seconds": sum(r.info["compile_seconds"] for r in per),
            "solve_seconds": sum(r.info["solve_seconds"] for r in per),
            "strategy": "one-vs-rest", **({} if auto is None else {"n_features_default": auto})}
    if any("quad_solves" in r.info for r in per):  # EM's steps from X, summed over the classes
        info["quad_solves"] = sum(r.info.get("quad_solves", 0) for r in per)
        info["quad_fallbacks"] = tuple(f"class {c!r}: {msg}" for r, c in zip(per, classes)
                                       for msg in r.info.get("quad_fallbacks", ()))
    objs = [r.objective for r in per]
    certificate = {"per_class": tuple(r.certificate for r in per)}
    return FitResult(
        coef=coefs, intercept=np.array([r.intercept for r in per], dtype=float), support=support,
        objective=None if any(o is None for o in objs) else float(sum(objs)),
        n_iter=max(r.n_iter for r in per), converged=all(r.converged for r in per),
        history=tuple(h for r in per for h in r.history), statuses=tuple(s for r in per for s in r.statuses),
        monotone=all(r.monotone for r in per), classes=classes, info=info, per_class=tuple(per),
        certificate=certificate, backend=_backends(per), **common)

