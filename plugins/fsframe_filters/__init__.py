"""Filter method plugin: ReliefF and mRMR rank the features; the formulation's L2 model is then
fitted on the top ``n_features`` (paper 004 §5's filter baselines).

The entry point ``filters`` of fsframe's own distribution (``pyproject.toml``), found like a third party's.
"""

from __future__ import annotations

import attrs
import numpy as np
from attrs.validators import in_

from fsframe import MethodSpec, OuterLoop, hookimpl
from fsframe.loops import Step
from fsframe.validators import as_int, positive_int, real, to_float

from .scores import discretize, mrmr_order, mutual_info_with, relieff_scores

__all__ = ["FilterLoop", "ReliefFLoop", "MRMRLoop", "relieff_scores", "mrmr_order", "discretize",
           "mutual_info_with"]


@attrs.frozen
class FilterLoop(OuterLoop):
    """Base of the filter loops: :meth:`ranking` orders the features (best first); the loop keeps
    the first ``n_features`` (``fsframe.fit`` gives a ranking the better half by default) and
    solves the formulation once with unit quadratic weights on them and the others fixed at zero —
    the L2 model on the selected features (e.g. the soft-margin ``margin`` SVM), so the result
    predicts. The support is the ranking's top ``n_features`` whatever the model's weights;
    ``info["ranking"]`` is the order computed (best first), ``info["scores"]`` the filter's
    scores. A failed solve raises :class:`~fsframe.errors.SolverFailedError` (there is no earlier
    iterate to keep). The ranking needs no model (``ranks_without_model``): a study's top-k cells
    ask :meth:`ranking` for it alone and solve nothing (docs/papers.md)."""

    needs_surrogate = False
    takes_surrogate = False  # a filter ranks features; it penalises nothing
    formulation_requires = ("large_margin",)  # models whose L2 fit on the ranked features predicts
    monotone = False
    sparse = False  # it ranks: without n_features, fsframe.fit keeps the better half of the ranking
    chooses = True  # the ranking's top n_features
    ranks_without_model = True  # ranking() needs no solve: a study's top-k cells ask for it alone
    penalty = "l2"  # the objective is loss + sum_j ||w_j||^2 of the model on the kept features
    max_iter: int = attrs.field(default=1, converter=as_int, validator=positive_int)

    def terms(self, surrogate):
        return frozenset({"quad"})

    def ranking(self, X, y, n_select: int) -> tuple[np.ndarray, np.ndarray]:
        """``(order, scores)``: feature indices best first (at least ``n_select`` of them), from
        the training part ``X`` and its class codes ``y`` alone."""
        raise NotImplementedError

    def steps(self, sub, surrogate, run):
        n_keep = sub.X.shape[1] if run.n_features is None else int(run.n_features)
        order, scores = self.ranking(sub.X, sub.y, n_keep)
        run.info.update(ranking=order, scores=scores)
        keep = np.zeros(sub.n_groups, dtype=bool)
        keep[order[:n_keep]] = True
        it = sub.solve(quad=np.where(keep, 1.0, np.inf))
        yield Step(it, it.objective if it.ok else None, None, support=keep)
        return True, "filter ranking"


@attrs.frozen
class ReliefFLoop(FilterLoop):
    """ReliefF (Kononenko 1994) by skrebate, ``n_neighbors`` nearest hits and misses per class."""

    name = "relieff"
    # 1: skrebate told the labels are classes (label_type); before, more than 10 classes were scored
    # as a regression target, so study cells computed then are recomputed (docs/experiments.md)
    cell_version = 1
    reference = "Kira & Rendell 1992; Kononenko 1994; skrebate (Urbanowicz et al. 2018); paper 004 §5"
    n_neighbors: int = attrs.field(default=10, converter=as_int, validator=positive_int)

    def ranking(self, X, y, n_select):
        s = relieff_scores(X, y, n_neighbors=self.n_neighbors)
        return np.argsort(-s, kind="stable"), s


@attrs.frozen
class MRMRLoop(FilterLoop):
    """mRMR (Peng, Long & Ding 2005): incremental max-relevance min-redundancy on features
    discretised at ``mean ± zcut * std``; ``criterion`` MID (difference) or MIQ (quotient). Only
    the first ``n_features`` are ranked (the search is incremental)."""

    name = "mrmr"
    reference = "Peng, Long & Ding, IEEE TPAMI 27:1226-1238, 2005; paper 004 §5"
    criterion: str = attrs.field(default="mid", validator=in_(("mid", "miq")))
    zcut: float = attrs.field(default=1.0, converter=to_float, validator=real(0, 10))

    def ranking(self, X, y, n_select):
        return mrmr_order(X, y, n_select, criterion=self.criterion, zcut=self.zcut)


@hookimpl
def fsframe_register_loops():
    return [ReliefFLoop, MRMRLoop]


@hookimpl
def fsframe_register_methods():
    return [
        MethodSpec("relieff", formulation="margin", surrogate=None, loop="relieff", defaults={"C": 1.0},
                   sparsity="n_features",
                   reference="Kononenko 1994 via skrebate; paper 004 §5 baseline",
                   description="ReliefF ranking (skrebate); the soft-margin L2 model on the top n_features"),
        MethodSpec("mrmr", formulation="margin", surrogate=None, loop="mrmr", defaults={"C": 1.0},
                   sparsity="n_features",
                   reference="Peng, Long & Ding, TPAMI 2005; paper 004 §5 baseline",
                   description="mRMR (MID) ranking on scikit-learn's mutual information; the soft-margin "
                               "L2 model on the top n_features"),
    ]
