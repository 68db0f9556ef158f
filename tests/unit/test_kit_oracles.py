"""The kit's oracle tables (:mod:`fsframe.testing.oracles`): a ``"module:QualName"`` key that
cannot apply is an error, not a silently dropped oracle, and the latest registration for a class
wins whatever the form of its key. Each test uses its own table or restores the global one."""

from __future__ import annotations

import sys

import pytest
from fsframe_svm import HingeFormulation

from fsframe.errors import PluginError
from fsframe.testing import check_formulation, hinge_loss, kit_data, oracles, register_decision_loss
from fsframe.testing.models import KitHinge
from fsframe.testing.oracles import ClassTable


class Child(HingeFormulation):
    pass


def test_a_reference_to_a_missing_class_raises():
    t = ClassTable("register_decision_loss")
    t.register("fsframe_svm:HingeFormulaton", "oracle")  # a typo, or a class renamed since
    with pytest.raises(PluginError, match=r"'fsframe_svm' has no 'HingeFormulaton'.*current name"):
        t.lookup(HingeFormulation(C=1.0))


def test_a_reference_to_a_module_that_fails_to_import_raises(tmp_path, monkeypatch):
    (tmp_path / "fsframe_kit_broken_mod.py").write_text("import fsframe_kit_no_such_dependency\nclass F:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    t = ClassTable("register_decision_loss")
    t.register("fsframe_kit_broken_mod:F", "oracle")
    try:
        with pytest.raises(PluginError, match="installed but fails to import.*fsframe_kit_no_such_dependency"):
            t.lookup(object())
    finally:
        sys.modules.pop("fsframe_kit_broken_mod", None)


def test_a_reference_to_a_non_class_raises():
    t = ClassTable("register_decision_loss")
    t.register("fsframe_svm:__all__", "oracle")
    with pytest.raises(PluginError, match="not a class"):
        t.lookup(object())


def test_a_module_not_installed_is_ignored_and_retried(tmp_path, monkeypatch):
    t = ClassTable("register_decision_loss")
    t.register("fsframe_kit_late_mod:F", "oracle")
    assert t.lookup(HingeFormulation(C=1.0)) is None  # not installed: no error, no oracle
    (tmp_path / "fsframe_kit_late_mod.py").write_text("class F:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))  # installed later: found at the next lookup
    try:
        import fsframe_kit_late_mod

        assert t.lookup(fsframe_kit_late_mod.F()) == "oracle"
    finally:
        sys.modules.pop("fsframe_kit_late_mod", None)


@pytest.mark.parametrize("first, second", [
    (HingeFormulation, "fsframe_svm:HingeFormulation"),
    ("fsframe_svm:HingeFormulation", HingeFormulation),
    ("fsframe_svm:HingeFormulation", "fsframe_svm:HingeFormulation"),
])
@pytest.mark.parametrize("lookup_between", [False, True])
def test_the_latest_registration_wins(first, second, lookup_between):
    t = ClassTable("register_decision_loss")
    t.register(first, "old")
    if lookup_between:
        assert t.lookup(Child(C=1.0)) == "old"
    t.register(second, "new")
    assert t.lookup(HingeFormulation(C=1.0)) == "new"
    assert t.lookup(Child(C=1.0)) == "new"  # along the MRO


def test_a_reregistered_decision_loss_is_the_one_check_formulation_uses(monkeypatch):
    """Through the public function: after the built-in string registration has been resolved, a
    third party's registration for the same class replaces it (a wrong loss is then rejected)."""
    monkeypatch.setattr(oracles, "_LOSSES", ClassTable("register_decision_loss"))
    register_decision_loss("fsframe_svm:HingeFormulation", lambda f: hinge_loss(f.C))
    X, y = kit_data()
    assert "decision_loss ['lin']" in check_formulation(HingeFormulation(C=1.0), X, y, terms=[{"lin"}])
    register_decision_loss("fsframe_svm:HingeFormulation", lambda f: hinge_loss(2.0 * f.C))
    with pytest.raises(AssertionError, match="decision_loss"):
        check_formulation(HingeFormulation(C=1.0), X, y, terms=[{"lin"}])


class NoOracle(KitHinge):
    """A formulation outside every table (the test empties the table for it; no plugin registers
    an oracle for the kit's own hinge)."""


def test_check_loop_says_why_it_needs_a_decision_loss(monkeypatch):
    from fsframe.loops import ReweightedL1
    from fsframe.testing import check_loop

    # decision_loss=False was reported as if none had been given ("needs decision_loss=")
    with pytest.raises(ValueError, match=r"cannot skip the decision loss \(decision_loss=False\)"):
        check_loop(ReweightedL1(max_iter=2), decision_loss=False)
    monkeypatch.setattr(oracles, "_LOSSES", ClassTable("register_decision_loss"))
    with pytest.raises(ValueError, match=r"no decision_loss is known for formulation 'kit-hinge' \(NoOracle\).*"
                                         r"register_decision_loss"):
        check_loop(ReweightedL1(max_iter=2), formulation=NoOracle(C=1.0))
