"""pytest glue: :func:`parametrize_with_checks` turns a list of components into one test per
component and check (scikit-learn's ``parametrize_with_checks``), with an escape for checks a
component is known to fail (``expected_failed_checks``)."""

from __future__ import annotations

import functools
from typing import Callable, Iterable

from ..backends.base import Backend
from ..formulation import Formulation
from ..loops.base import OuterLoop
from ..surrogates.base import Surrogate
from .backend import backend_checks, check_backend
from .data import kit_data
from .formulation import check_formulation, formulation_checks
from .loop import LOOP_CHECKS, check_loop
from .surrogate import check_surrogate, surrogate_checks

__all__ = ["parametrize_with_checks", "checks_of"]

_CHECKS = ((Surrogate, check_surrogate, surrogate_checks), (OuterLoop, check_loop, lambda c: list(LOOP_CHECKS)),
           (Backend, check_backend, backend_checks), (Formulation, check_formulation, formulation_checks))


def checks_of(component) -> list[str]:
    """The names of the checks the kit runs on ``component`` (a surrogate, loop, backend or
    formulation instance), as :func:`parametrize_with_checks` makes one test of each."""
    entry = next((e for e in _CHECKS if isinstance(component, e[0])), None)
    if entry is None:
        raise TypeError(f"{component!r} is not an fsframe component instance")
    return entry[2](component)


def parametrize_with_checks(components: Iterable, *, X=None, y=None, decision_loss: Callable | bool | None = None,
                            expected_failed_checks: Callable | None = None):
    """A ``pytest.mark.parametrize("component, check", ...)`` with one test per component and
    check (:func:`checks_of`: a surrogate's ``phi`` and each of its models, a loop's
    ``iterations``, ``weights``, ``descent``, ``support``, ``deterministic``, ``failure``, a
    formulation's slot-term combinations, a backend's standard problems)::

        @parametrize_with_checks([MySurrogate(), MySurrogate(a=3.0)])
        def test_conformance(component, check):
            check(component)

    An entry may be a pair ``(component, options)``: ``options`` (a dict) are passed to that
    component's check, e.g. ``(MyFormulation(), {"decision_loss": my_loss})`` or
    ``(MyLoop(), {"expected_weights": rule})``; they override the keywords below.

    ``expected_failed_checks``: a callable ``component -> {check name: reason}``; those tests are
    marked ``xfail(strict=True)`` with the reason (a check that passes again is reported), as
    scikit-learn's escape for a known gap.

    Formulations are checked on ``(X, y)``, default :func:`~fsframe.testing.kit_data` (seeded,
    imbalanced and not separable, so a zero loss or a wrong ``C`` cannot pass), with
    ``decision_loss`` (see :func:`check_formulation`: needed for a formulation without a
    registered oracle).
    """
    import pytest

    if X is None:
        X, y = kit_data()
    params = []
    for entry in components:
        comp, options = entry if isinstance(entry, tuple) else (entry, {})
        if not isinstance(options, dict):
            raise TypeError(f"parametrize_with_checks: the options of {comp!r} must be a dict, got {options!r}")
        found = next((e for e in _CHECKS if isinstance(comp, e[0])), None)
        if found is None:
            raise TypeError(f"parametrize_with_checks: {comp!r} is not an fsframe component instance")
        chk = found[1]
        if chk is check_formulation:
            options = {"X": X, "y": y, "decision_loss": decision_loss, **options}
            X_, y_ = options.pop("X"), options.pop("y")
            chk = functools.partial(lambda c, X, y, kw, **more: check_formulation(c, X, y, **kw, **more), X=X_, y=y_,
                                    kw=options)
        elif options:
            chk = functools.partial(lambda c, f, kw, **more: f(c, **kw, **more), f=chk, kw=options)
        expected = dict(expected_failed_checks(comp) or {}) if expected_failed_checks is not None else {}
        label = comp.name if isinstance(comp, Backend) else str(comp)
        names = found[2](comp)
        unknown = set(expected) - set(names)
        if unknown:
            raise ValueError(f"parametrize_with_checks: expected_failed_checks names {sorted(unknown)}, which "
                             f"{label} does not run; its checks are {names}")
        for name in names:
            marks = [pytest.mark.xfail(reason=expected[name], strict=True)] if name in expected else []
            params.append(pytest.param(comp, functools.partial(chk, checks=(name,)),
                                       id=f"{type(comp).__name__}:{label}:{name}", marks=marks))
    return pytest.mark.parametrize("component, check", params)
