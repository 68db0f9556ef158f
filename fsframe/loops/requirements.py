"""What a loop requires of a surrogate and of a formulation, checked before anything is built:
:func:`missing` (the loop's :attr:`~fsframe.loops.base.OuterLoop.requires` against
``surrogate.provides()``), :func:`formulation_missing` (its
:attr:`~fsframe.loops.base.OuterLoop.formulation_requires` against ``formulation.provides()``),
each gap in the words of the refusal (:data:`FORMULATION_NEEDS`, :func:`lacking`). The loop's
methods of the same names call them; a loop overrides those for a need no capability states."""

from __future__ import annotations

from ..formulation import PROTOCOLS, TRAITS, restater_mismatch
from ..surrogates.base import PROVIDES, Surrogate

__all__ = ["FORMULATION_NEEDS", "lacking", "missing", "formulation_missing"]

FORMULATION_NEEDS = {
    "bounds": "bound parameters to search (bound_params and with_bounds)",
    "mask_space": "the capability to fix a feature group to zero (mask_space)",
    "restate": "parameters restated in place (restatable_params and restate)",
    "explain_failure": "explain_failure",
    "empty_model_threshold": "where the empty model stops being optimal (empty_model_threshold)",
    "auto_values": "an automatic grid of its own (auto_values)",
    "separating_loss": "a loss value below which the iterate separates the classes (separating_loss)",
    "margins": "the per-sample margins of a model (margins), all positive when it separates the classes",
    "from_data": "a solve of its subproblem straight from X (solve_from_data)",
    "quad_from_data": "a solve of its ridge-weighted (EM) step straight from X (solve_quad_from_data)",
    "frontier_retries": "restatements to retry after a first subproblem without a solution (frontier_retries)",
    **TRAITS,
}
"""How a refusal names each formulation capability (:data:`fsframe.formulation.PROTOCOLS`,
:data:`~fsframe.formulation.TRAITS`)."""
assert set(PROTOCOLS) <= set(FORMULATION_NEEDS)


def lacking(required, provided, describe: dict | None = None) -> list[str]:
    """The names in ``required`` absent from ``provided``, each as ``describe`` words it (the
    name itself when it has no entry): the one check of what a loop requires of a surrogate and of
    a formulation (skglm's ``check_attrs``), every gap listed at once."""
    describe = describe or {}
    return [describe.get(c, c) for c in required if c not in provided]


def missing(loop, surrogate: Surrogate | None) -> list[str]:
    """What ``surrogate`` lacks for ``loop``, each item as the refusal names it (empty if
    compatible): :attr:`~fsframe.loops.base.OuterLoop.requires` against ``surrogate.provides()``,
    and :attr:`~fsframe.loops.base.OuterLoop.needs_surrogate` /
    :attr:`~fsframe.loops.base.OuterLoop.takes_surrogate`: what
    :meth:`OuterLoop.missing <fsframe.loops.base.OuterLoop.missing>` returns unless a loop
    overrides it."""
    if surrogate is None:
        return ["a surrogate (needs_surrogate is True)"] if loop.needs_surrogate else []
    if not loop.takes_surrogate:
        return ["no surrogate (takes_surrogate is False)"]
    return lacking(loop.requires, surrogate.provides(loop.requires), PROVIDES)


def formulation_missing(loop, formulation) -> list[str]:
    """What ``formulation`` (an instance) lacks for ``loop`` (empty if compatible):
    :attr:`~fsframe.loops.base.OuterLoop.formulation_requires` against ``formulation.provides()``;
    a ``bounds`` or ``restate`` protocol lost to a ``build`` overridden below its method says so
    (:func:`~fsframe.formulation.restater_mismatch`): what
    :meth:`OuterLoop.formulation_missing <fsframe.loops.base.OuterLoop.formulation_missing>`
    returns unless a loop overrides it."""
    provided = formulation.provides()
    describe = {name: FORMULATION_NEEDS[name] + (f", but {why}" if why else "")
                for name in loop.formulation_requires if name in FORMULATION_NEEDS and name not in provided
                for why in (restater_mismatch(formulation, name),)}
    return lacking(loop.formulation_requires, provided, describe)
