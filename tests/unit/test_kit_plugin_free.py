"""The conformance kit names no plugin and counts like the library (issue 20 item 4): its default
formulation is its own, plugins register their oracles through the hook
``fsframe_register_oracles``, and ``n_nonzero`` is checked with ``fsframe.loops.support_of`` on
the run's reference scale, so a correct loop whose iterates collapse is not rejected."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest

import fsframe
from fsframe.errors import PluginError
from fsframe.loops import OuterLoop, Step
from fsframe.testing import Oracle, check_formulation, check_loop, hinge_loss, kit_data
from fsframe.testing import oracles as kit_oracles

ROOT = Path(__file__).resolve().parents[2]


def test_check_loop_runs_with_the_svm_plugin_blocked():
    """Before: ``check_loop`` defaulted to the registered ``hinge`` and failed with
    ``FSFRAME_DISABLED_PLUGINS=svm``."""
    code = ("from fsframe.testing import check_loop; from fsframe.loops import DCA; "
            "from fsframe.surrogates import ExpSurrogate; import fsframe; "
            "assert 'hinge' not in fsframe.get_registry().names('formulation'); "
            "print(check_loop(DCA(max_iter=4), ExpSurrogate()))")
    env = {**os.environ, "FSFRAME_DISABLED_PLUGINS": "svm"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "iterations exp(alpha=5.0)" in out.stdout and "failure raises" in out.stdout


def test_the_kit_names_no_plugin():
    """No module of ``fsframe.testing`` names a method package of ``plugins/`` (as an import, a
    ``module:QualName`` reference or a registered name)."""
    packages = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "__init__.py").exists())
    assert "fsframe_svm" in packages
    names = "|".join(map(re.escape, fsframe.get_registry().names("formulation") + fsframe.get_registry().names("loop")))
    pattern = re.compile("|".join(map(re.escape, packages)) + rf"|get\(\s*['\"]\w+['\"],\s*['\"]({names})['\"]")
    for path in sorted((ROOT / "fsframe" / "testing").glob("*.py")):
        hits = [m.group(0) for m in pattern.finditer(path.read_text())]
        assert hits == [], (path.name, hits)


def _hinge_subclass(name):
    from fsframe_svm import HingeFormulation

    return attrs.frozen(type(name, (HingeFormulation,), {"__module__": __name__}))


def test_a_plugin_registers_its_oracles_through_the_hook(add_components):
    """A runtime plugin's ``fsframe_register_oracles`` is what the kit uses for its class; a wrong
    oracle is caught by the check; an explicit ``register_decision_loss`` wins over the hook."""
    Right = _hinge_subclass("HookedHinge")
    Wrong = _hinge_subclass("HookedWrongHinge")
    add_components(name="oracle-plugin", oracles=[Oracle("decision_loss", Right, lambda f: hinge_loss(f.C)),
                                                  Oracle("decision_loss", Wrong, lambda f: hinge_loss(2.0 * f.C))])
    X, y = kit_data()
    assert kit_oracles.decision_loss_for(Right(C=1.0)) is not None
    assert "decision_loss ['lin']" in check_formulation(Right(C=1.0), X, y, terms=[{"lin"}])
    with pytest.raises(AssertionError, match="decision_loss"):
        check_formulation(Wrong(C=1.0), X, y, terms=[{"lin"}])


def test_a_broken_oracle_hook_names_its_plugin(add_components):
    Odd = _hinge_subclass("OddHinge")
    add_components(name="bad-oracles", oracles=[("decision_loss", Odd, None)])
    with pytest.raises(PluginError, match="plugin 'bad-oracles': fsframe_register_oracles.. returned .*not an "
                                          "fsframe.testing.Oracle"):
        kit_oracles.decision_loss_for(Odd(C=1.0))


@attrs.frozen
class Collapsing(OuterLoop):
    """Two L2 solves, the second with weights 1e8: every coefficient shrinks by about 1e-8, far
    below ``zero_tol`` times the run's largest norm (the library counts no non-zero there), though
    each is large relative to the iterate's own largest."""

    name = "collapsing"
    needs_surrogate = False
    monotone = False

    def terms(self, surrogate):
        return frozenset({"quad"})

    def steps(self, sub, surrogate, run):
        for q in (1.0, 1e8):
            it = sub.solve(quad=np.full(sub.n_groups, q))
            yield Step(it, it.objective)
        return True, "two solves"


def test_the_kit_counts_nonzeros_with_the_library_rule():
    """Before: the kit counted ``t > zero_tol * max(t)`` per iterate while the base counts on the
    run's scale, and rejected this correct loop at its second iterate (6 against 0)."""
    ran = check_loop(Collapsing(), checks=["iterations", "support"])
    assert ran == ["iterations None", "support None"]
