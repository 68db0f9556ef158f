"""pytest glue: :func:`parametrize_with_checks` turns a list of components into one test per
component, each paired with its ``check_*`` (scikit-learn's ``parametrize_with_checks``)."""

from __future__ import annotations

import functools
from typing import Callable, Iterable

from ..backends.base import Backend
from ..formulation import Formulation
from ..loops.base import OuterLoop
from ..surrogates.base import Surrogate
from .backend import check_backend
from .data import kit_data
from .formulation import check_formulation
from .loop import check_loop
from .surrogate import check_surrogate

__all__ = ["parametrize_with_checks"]

_CHECKS = ((Surrogate, check_surrogate), (OuterLoop, check_loop), (Backend, check_backend),
           (Formulation, check_formulation))


def parametrize_with_checks(components: Iterable, *, X=None, y=None, decision_loss: Callable | bool | None = None):
    """A ``pytest.mark.parametrize("component, check", ...)`` over ``components`` (surrogate,
    loop, backend or formulation instances), each paired with its ``check_*``::

        @parametrize_with_checks([MySurrogate(), MySurrogate(a=3.0)])
        def test_conformance(component, check):
            check(component)

    An entry may be a pair ``(component, options)``: ``options`` (a dict) are passed to that
    component's check, e.g. ``(MyFormulation(), {"decision_loss": my_loss})`` or
    ``(MyLoop(), {"expected_weights": rule})``; they override the keywords below.

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
        chk = next((c for kind, c in _CHECKS if isinstance(comp, kind)), None)
        if chk is None:
            raise TypeError(f"parametrize_with_checks: {comp!r} is not an fsframe component instance")
        if chk is check_formulation:
            options = {"X": X, "y": y, "decision_loss": decision_loss, **options}
            X_, y_ = options.pop("X"), options.pop("y")
            chk = functools.partial(lambda c, X, y, kw: check_formulation(c, X, y, **kw), X=X_, y=y_, kw=options)
        elif options:
            chk = functools.partial(lambda c, f, kw: f(c, **kw), f=chk, kw=options)
        label = comp.name if isinstance(comp, Backend) else str(comp)
        params.append(pytest.param(comp, chk, id=f"{type(comp).__name__}:{label}"))
    return pytest.mark.parametrize("component, check", params)
