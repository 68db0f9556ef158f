"""The compiler reads a slot model's loss from Pyomo and its penalty from the slot's record, so an
objective changed in Pyomo any other way is refused (it was compiled as the original one: a
silent wrong answer); a loss changed through ``model.fsframe_slot.loss`` is honoured."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest

from fsframe.backends import HighsBackend
from fsframe.compiler import compile_model
from fsframe.errors import UnsupportedProblemError
from fsframe.plugins import get_registry


def _model():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    return get_registry().get("formulation", "hinge")(C=1.0).build(X, y, frozenset({"lin"})).model


def _objective(m):
    return HighsBackend().solve(compile_model(m).with_weights(lin=np.ones(3), sync=False)).objective


def _add_to_objective(m):
    m.fsframe_objective.expr = m.fsframe_slot.loss + m.fsframe_slot.penalty + 100.0


def _add_to_penalty(m):
    m.fsframe_slot.penalty.set_value(m.fsframe_slot.penalty.expr + 50.0)


def _maximise(m):
    m.fsframe_objective.sense = pyo.maximize


@pytest.mark.parametrize("edit,what", [(_add_to_objective, "redefined"), (_add_to_penalty, "redefined"),
                                       (_maximise, "maximisation")])
def test_an_objective_changed_in_pyomo_is_refused(edit, what):
    m = _model()
    edit(m)
    with pytest.raises(UnsupportedProblemError, match=what):
        compile_model(m)
    with pytest.raises(UnsupportedProblemError, match=what):
        compile_model(m, fast=False)


def test_a_loss_changed_through_the_slot_is_compiled():
    m = _model()
    before = _objective(m)
    m.fsframe_slot.loss = m.fsframe_slot.loss.expr + 100.0
    assert _objective(m) == pytest.approx(before + 100.0, rel=1e-12)
