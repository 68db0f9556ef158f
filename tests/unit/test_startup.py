"""Start-up stays light: what ``import fsframe`` and the catalogue commands load, in fresh interpreters.

Values, not times (timings are in ``benchmarks/bench_import.py``): each check runs a new Python
process and reads its ``sys.modules``, so a heavy import added at module level anywhere on these
paths fails here. The lazy public names must still resolve to the objects their modules define.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
import textwrap

import pytest

import fsframe
import fsframe.evaluation

# loaded where used only: model building, statistics, estimators, solvers, filters, plots
HEAVY = ("pyomo", "sklearn", "scipy.stats", "scipy.optimize", "highspy", "ecos", "clarabel", "skrebate",
         "matplotlib", "joblib")


def _run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; it must end by printing one JSON object."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


_LOADED = """
import json, sys
heavy = {heavy!r}
print(json.dumps({{"loaded": sorted(m for m in heavy if m in sys.modules), "fsframe": sorted(m for m in sys.modules
      if m.split(".")[0] in ("fsframe", "pyomo"))}}))
"""


def _loaded_after(code: str) -> dict:
    return _run(textwrap.dedent(code) + _LOADED.format(heavy=HEAVY))


def test_import_fsframe_loads_no_heavy_module():
    got = _loaded_after("import fsframe")
    assert got["loaded"] == []
    # nothing of the numerical stack at all: the package namespace is filled on first use
    assert set(got["fsframe"]) <= {"fsframe", "fsframe.errors", "fsframe._lazy"}


def test_listing_methods_through_the_cli_entry_does_not_load_pyomo():
    got = _run("""
        import contextlib, io, json, sys
        from fsframe.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(["methods", "--json"])
        methods = json.loads(buf.getvalue())["methods"]
        print(json.dumps({"rc": rc, "names": [m["name"] for m in methods],
                          "params": {m["name"]: m["parameters"] for m in methods},
                          "loaded": sorted(m for m in %r if m in sys.modules),
                          "scipy": sorted(m for m in sys.modules if m.split(".")[0] == "scipy"),
                          "fitting": "fsframe.fitting" in sys.modules}))
    """ % (HEAVY,))
    assert got["rc"] == 0
    assert got["loaded"] == [] and not got["fitting"]
    assert got["scipy"] == []  # not even scipy.sparse: canonical and the backends bind it lazily
    # the same catalogue as this (already warm) process builds, parameters included
    from fsframe.evaluation import accepted_parameters

    assert got["names"] == [m.name for m in fsframe.list_methods()]
    assert got["params"]["fsv"] == accepted_parameters("fsv")


@pytest.mark.parametrize("argv", [["--help"], ["select", "--help"], ["compare", "--help"], ["--version"]])
def test_help_and_version_load_no_command_module(argv):
    got = _run(f"""
        import contextlib, io, json, sys
        from fsframe.cli import main
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main({argv!r})
        print(json.dumps({{"rc": rc, "text": buf.getvalue(),
                          "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "pyomo", "scipy")
                                           or m in ("fsframe.fitting", "fsframe.plugins", "fsframe.cli.select"))}}))
    """)
    assert got["rc"] == 0 and got["loaded"] == []
    if argv == ["--version"]:
        assert got["text"].strip() == f"fsframe {fsframe.__version__}"
    else:
        assert "usage: fsframe" in got["text"]


def test_catalogue_and_resolve_do_not_build_models():
    got = _loaded_after("""
        import fsframe
        res = fsframe.resolve("l0-mpm")
        assert res.formulation.name == "mpm" and fsframe.list_components("formulation")
    """)
    assert got["loaded"] == []


def test_a_fit_after_a_light_import_loads_pyomo_on_use():
    got = _run("""
        import json, sys
        import numpy as np
        import fsframe
        rng = np.random.default_rng(0)
        X = rng.normal(size=(40, 6)); y = np.where(X[:, 0] + 0.1 * rng.normal(size=40) > 0, 1, -1)
        res = fsframe.fit(X, y, method="l1-svm", C=1.0)
        print(json.dumps({"selected": res.selected.tolist(), "pyomo": "pyomo" in sys.modules}))
    """)
    assert got["pyomo"] and 0 in got["selected"]


def _defining_module(package, name: str):
    return importlib.import_module(package._LAZY[name], package.__name__)


@pytest.mark.parametrize("package", [fsframe, fsframe.evaluation], ids=["fsframe", "fsframe.evaluation"])
def test_every_public_name_resolves_to_its_modules_object(package):
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []
    for name in package.__all__:
        if name in package._LAZY:
            assert getattr(package, name) is getattr(_defining_module(package, name), name), name
    assert set(package.__all__) <= set(dir(package))


def test_lazy_names_in_a_fresh_interpreter():
    got = _run("""
        import json
        import fsframe
        from fsframe import FSSelector, MethodSpec, fit
        from fsframe.fitting import fit as real_fit
        from fsframe.method import MethodSpec as real_spec
        import sklearn.base
        ok = {"fit": fit is real_fit and fsframe.fit is real_fit, "spec": MethodSpec is real_spec,
              "estimator": issubclass(FSSelector, sklearn.base.BaseEstimator),
              "submodule": fsframe.loops.DCA.name == "dca", "all": all(hasattr(fsframe, n) for n in fsframe.__all__)}
        try:
            fsframe.no_such_name
        except AttributeError as exc:
            ok["unknown"] = "no_such_name" in str(exc)
        print(json.dumps(ok))
    """)
    assert got == {"fit": True, "spec": True, "estimator": True, "submodule": True, "all": True, "unknown": True}


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        fsframe.no_such_thing  # noqa: B018
    with pytest.raises(AttributeError, match="__no_dunder__"):
        fsframe.__no_dunder__  # noqa: B018
    assert not hasattr(fsframe.evaluation, "no_such_thing")
    assert fsframe.__version__ == importlib.metadata.version("fsframe")


def test_lazy_module_imports_on_first_attribute_access():
    from fsframe._lazy import lazy_module

    got = _run("""
        import json, sys
        from fsframe._lazy import lazy_module
        sp = lazy_module("scipy.sparse")
        before = "scipy.sparse" in sys.modules
        M = sp.csr_matrix([[1.0, 0.0], [0.0, 2.0]])
        import scipy.sparse
        print(json.dumps({"before": before, "after": "scipy.sparse" in sys.modules, "sparse": sp.issparse(M),
                          "same": sp.csr_matrix is scipy.sparse.csr_matrix, "copied": "csr_matrix" in vars(sp),
                          "sum": float(M.sum())}))
    """)
    assert got == {"before": False, "after": True, "sparse": True, "same": True, "copied": True, "sum": 3.0}
    with pytest.raises(AttributeError):
        lazy_module("json").no_such_function  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        lazy_module("no_such_module_here").anything  # noqa: B018
