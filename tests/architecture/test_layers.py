"""fsframe's imports go one way, down the layers of docs/architecture.md.

Every module of ``fsframe/`` and ``plugins/`` is parsed with :mod:`ast` (imports at any depth,
inside functions and ``if TYPE_CHECKING:`` blocks included; relative imports resolved, and
``from pkg import name`` read as an import of the submodule ``pkg.name`` when there is one). The
test fails on

* an import of a module of a higher layer than the importer's;
* a function-level import of a module of the importer's own layer: if the layers hold, an import
  cycle can only run within a layer, so such an import is one dodging a cycle (lazy imports of
  lower layers and of third-party libraries are fine);
* a module of layers 0-2 importing Pyomo (backends read the canonical form only);
* a module of ``fsframe/`` importing a package of ``plugins/`` (built-ins are named as strings
  and imported by ``importlib``);
* a plugin importing a private fsframe module or name (``fsframe._x``, ``from fsframe.x import
  _y``) or reaching one as an attribute (``fsframe.x._y``);
* a module of ``fsframe/`` that :data:`LAYERS` does not place (a new module must be placed);
* a relative import that climbs above the top-level package (an ``ImportError`` when it runs,
  which for a function-level import is only when it is called);
* an import cycle among the modules of ``fsframe/`` and ``plugins/`` (every import counted, at any
  depth: a cycle a function-level import hides inside a plugin package is one; a package's
  ``__init__`` importing a submodule that imports a name of that ``__init__`` is one too).

Imports by name count like import statements: ``importlib.import_module("fsframe.x")`` (or
``import_module`` taken from importlib, or ``__import__``) with a literal name, relative names
resolved against ``__package__``; only the plugin-package rule does not apply to them (naming a
built-in plugin's module as a string is how the registry loads it). In ``fsframe/``, reaching a
module as an attribute (``import fsframe.canonical`` then ``fsframe.compiler.compile_model``)
counts as importing it.

The table is the target layering; a listed module that does not exist (yet) is fine. Violations
that exist today in code other branches are changing are listed in :data:`KNOWN_UNTIL_MERGE`,
one comment each; an entry that no longer occurs fails the test, so the set only shrinks.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import attrs
import pytest

# ------------------------------------------------------------------------------------ the table
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("vocabulary", ("fsframe.enums", "fsframe.errors", "fsframe.validators", "fsframe.hookspecs",
                    "fsframe._lazy", "fsframe._version")),
    ("canonical form", ("fsframe.canonical", "fsframe.exp_cone", "fsframe.linalg")),
    ("solvers and surrogates", ("fsframe.backends", "fsframe.surrogates", "fsframe.ridge")),
    ("model building and compiling", ("fsframe.pyomo_ext", "fsframe.pyomo_records", "fsframe.compiler", "fsframe.slot",
                                      "fsframe.formulation", "fsframe.kernels")),
    ("subproblem and loops", ("fsframe.scales", "fsframe.problem", "fsframe.quad_path", "fsframe.working_set",
                              "fsframe.epigraphs", "fsframe.loops", "fsframe.dense_rules", "fsframe.dense_em",
                              "fsframe.results", "fsframe.data_checks", "fsframe.data_diagnostics", "fsframe.dataset",
                              "fsframe.io", "fsframe.progress")),
    ("registry and methods", ("fsframe.registry", "fsframe.plugins", "fsframe.method", "fsframe.auxiliary")),
    ("fit driver", ("fsframe.fit_report", "fsframe.from_data", "fsframe.dense_fit", "fsframe.fit_inputs",
                    "fsframe.fit_certificate", "fsframe.binary_fit", "fsframe.one_vs_rest", "fsframe.fitting",
                    "fsframe.paths", "fsframe.grids")),
    ("evaluation, estimator, kit", ("fsframe.evaluation", "fsframe.estimator", "fsframe.testing", "fsframe.tuning")),
    ("CLI commands", ("fsframe.cli.common", "fsframe.cli.output", "fsframe.cli.params", "fsframe.cli.evaluate",
                      "fsframe.cli.methods", "fsframe.cli.plugins", "fsframe.cli.select", "fsframe.cli.compare",
                      "fsframe.cli.run", "fsframe.cli.tune")),
    ("public API and CLI", ("fsframe.cli", "fsframe.__main__", "fsframe")),
)
"""Lowest first. An entry covers the module and, if it is a package, every module in it; the
root ``fsframe`` covers ``fsframe/__init__.py`` only."""

NO_PYOMO_BELOW = 3  # layers 0-2 never import Pyomo
ROOT_PACKAGE = "fsframe"
REPO = Path(__file__).resolve().parents[2]

KNOWN_UNTIL_MERGE: frozenset[tuple[str, str, str]] = frozenset()
# (rule, importer, imported): violations tolerated while a change is in flight; empty since the
# house issue's branches merged (an entry must come with a comment and leave with its change).


# ------------------------------------------------------------------------------------ the checker
@attrs.frozen
class Violation:
    rule: str  # "upward", "cycle-dodge", "pyomo", "plugin-package", "private", "unplaced", "beyond-top", "cycle"
    importer: str
    imported: str
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.rule, self.importer, self.imported)

    def __str__(self) -> str:
        return f"{self.rule}: {self.importer} (line {self.line}) -> {self.imported}"


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(base: Path, packages: list[str]) -> dict[str, Path]:
    """Module name -> file, for every ``.py`` file of the packages ``packages`` under ``base``."""
    out = {}
    for pkg in packages:
        for path in sorted((base / pkg).rglob("*.py")):
            out[_module_name(path, base)] = path
    return out


def layer_of(module: str, layers=LAYERS, root: str = ROOT_PACKAGE) -> int | None:
    """The layer of ``module`` by its longest listed prefix (the root package only exactly)."""
    index = {m: k for k, (_, mods) in enumerate(layers) for m in mods}
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        name = ".".join(parts[:end])
        if name in index and (name != root or name == module):
            return index[name]
    return None


@attrs.frozen
class Import:
    target: str  # the module imported
    names: tuple  # names taken from it (from-imports), else ()
    line: int
    in_function: bool
    dynamic: bool = False  # by name, through importlib.import_module or __import__


class _ImportVisitor(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: set[str]):
        self.package = module if is_package else module.rpartition(".")[0]
        self.known = known
        self.depth = 0
        self.imports: list[Import] = []
        self.aliases: dict[str, str] = {}  # local name -> module, for attribute checks
        self.attributes: list[tuple[str, str, int]] = []  # (module, attribute, line)
        self.beyond_top: list[tuple[str, int]] = []  # (relative import as written, line)
        self.import_module_names: set[str] = set()  # local names of importlib.import_module

    def _visit_function(self, node):
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _visit_function

    def visit_Import(self, node: ast.Import):
        for a in node.names:
            self.imports.append(Import(a.name, (), node.lineno, self.depth > 0))
            if a.asname:
                self.aliases[a.asname] = a.name
            else:
                self.aliases.setdefault(a.name.split(".")[0], a.name.split(".")[0])

    def _resolve(self, level: int, name: str | None) -> str | None:
        """The absolute name of a relative import, or ``None`` when it climbs above the top."""
        base = self.package.split(".") if self.package else []
        if level - 1 >= len(base):
            return None
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def visit_ImportFrom(self, node: ast.ImportFrom):
        mod = self._resolve(node.level, node.module) if node.level else node.module
        if mod is None:
            self.beyond_top.append(("." * node.level + (node.module or ""), node.lineno))
            return
        if mod == "importlib":
            self.import_module_names.update(a.asname or a.name for a in node.names if a.name == "import_module")
        for a in node.names:
            sub = f"{mod}.{a.name}"
            if sub in self.known:  # from pkg import submodule
                self.imports.append(Import(sub, (), node.lineno, self.depth > 0))
                self.aliases[a.asname or a.name] = sub
            else:
                self.imports.append(Import(mod, (a.name,), node.lineno, self.depth > 0))

    def _by_name(self, func) -> bool:
        """Whether ``func`` is ``importlib.import_module``, ``import_module`` or ``__import__``."""
        if isinstance(func, ast.Name):
            return func.id == "__import__" or func.id in self.import_module_names
        return (isinstance(func, ast.Attribute) and func.attr == "import_module"
                and isinstance(func.value, ast.Name) and self.aliases.get(func.value.id) == "importlib")

    def visit_Call(self, node: ast.Call):
        arg = node.args[0] if node.args else None
        if self._by_name(node.func) and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            name = arg.value
            if name.startswith("."):
                package = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "package"), None)
                # only relative to this module's own package can be resolved here
                if isinstance(package, ast.Name) and package.id == "__package__":
                    level = len(name) - len(name.lstrip("."))
                    mod = self._resolve(level, name.lstrip(".") or None)
                    if mod is None:
                        self.beyond_top.append((name, node.lineno))
                    else:
                        self.imports.append(Import(mod, (), node.lineno, self.depth > 0, dynamic=True))
            else:
                self.imports.append(Import(name, (), node.lineno, self.depth > 0, dynamic=True))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        chain = []
        cur = node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id in self.aliases:
            mod = self.aliases[cur.id]
            for attr in reversed(chain):
                self.attributes.append((mod, attr, node.lineno))
                mod = f"{mod}.{attr}"
            return  # the chain is recorded whole
        self.generic_visit(node)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def check(base: Path, core: str = ROOT_PACKAGE, plugins_dir: str = "plugins", layers=LAYERS) -> list[Violation]:
    """Every violation of the rules of this module's docstring in the tree under ``base``."""
    core_mods = discover(base, [core])
    plugin_root = base / plugins_dir
    plugin_pkgs = sorted(p.name for p in plugin_root.iterdir() if (p / "__init__.py").exists()) if plugin_root.is_dir() else []
    plugin_mods = discover(plugin_root, plugin_pkgs)
    # a listed module counts as one even before it exists: `from . import fitting` imports it
    known = set(core_mods) | set(plugin_mods) | {m for _, mods in layers for m in mods}
    out: list[Violation] = []
    edges: dict[str, dict[str, int]] = {}  # module -> module it imports -> first line
    for name, path in {**core_mods, **plugin_mods}.items():
        visitor = _ImportVisitor(name, path.name == "__init__.py", known)
        visitor.visit(ast.parse(path.read_text(), filename=str(path)))
        out.extend(Violation("beyond-top", name, written, line) for written, line in visitor.beyond_top)
        if name in core_mods:
            out.extend(_check_core(name, visitor, layers, core, plugin_pkgs, known))
        else:
            out.extend(_check_plugin(name, visitor, core))
        mine = edges.setdefault(name, {})
        for imp in visitor.imports:
            by_name = imp.dynamic and imp.target.split(".")[0] in plugin_pkgs  # the registry's loading: no edge
            if (imp.target in core_mods or imp.target in plugin_mods) and not by_name:
                mine.setdefault(imp.target, imp.line)
    out.extend(_cycles(edges))
    return sorted(out, key=lambda v: (v.importer, v.line, v.rule, v.imported))


def _cycles(edges: dict[str, dict[str, int]]) -> list[Violation]:
    """A ``"cycle"`` violation for every import between two modules of one strongly connected
    component of the import graph (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comp: dict[str, int] = {}

    def visit(v: str) -> None:  # recursive: its depth is the longest import chain (a few dozen)
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            while True:
                w = stack.pop()
                on.discard(w)
                comp[w] = index[v]
                if w == v:
                    break

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return [Violation("cycle", a, b, line) for a, targets in edges.items() for b, line in targets.items()
            if a != b and comp[a] == comp[b]]


def _check_core(name: str, visitor: _ImportVisitor, layers, core: str, plugin_pkgs: list[str],
                known: set[str]) -> list[Violation]:
    mine = layer_of(name, layers, core)
    if mine is None:
        return [Violation("unplaced", name, "-", 0)]
    out = []
    # a module reached as an attribute of an imported one is used as if imported where it is used
    reached = [Import(f"{mod}.{attr}", (), line, False) for mod, attr, line in visitor.attributes
               if f"{mod}.{attr}" in known]
    for imp in [*visitor.imports, *reached]:
        top = imp.target.split(".")[0]
        if top in plugin_pkgs and not imp.dynamic:
            out.append(Violation("plugin-package", name, imp.target, imp.line))
        elif top == "pyomo" and mine < NO_PYOMO_BELOW:
            out.append(Violation("pyomo", name, imp.target, imp.line))
        elif top == core:
            theirs = layer_of(imp.target, layers, core)
            if theirs is None:
                out.append(Violation("unplaced", name, imp.target, imp.line))
            elif theirs > mine:
                out.append(Violation("upward", name, imp.target, imp.line))
            elif theirs == mine and imp.in_function:
                out.append(Violation("cycle-dodge", name, imp.target, imp.line))
    return out


def _check_plugin(name: str, visitor: _ImportVisitor, core: str) -> list[Violation]:
    out = []
    for imp in visitor.imports:
        if imp.target.split(".")[0] != core:
            continue
        if any(map(_private, imp.target.split("."))):
            out.append(Violation("private", name, imp.target, imp.line))
            continue
        out.extend(Violation("private", name, f"{imp.target}.{n}", imp.line) for n in imp.names if _private(n))
    for mod, attr, line in visitor.attributes:
        if mod.split(".")[0] == core and _private(attr):
            out.append(Violation("private", name, f"{mod}.{attr}", line))
    return out


# ------------------------------------------------------------------------------------ the tests
def test_imports_follow_the_layers():
    found = check(REPO)
    new = [str(v) for v in found if v.key not in KNOWN_UNTIL_MERGE]
    assert not new, "imports against docs/architecture.md's layers:\n" + "\n".join(new)


def test_known_exceptions_still_occur():
    """An entry of KNOWN_UNTIL_MERGE that no longer occurs is removed from the set."""
    found = {v.key for v in check(REPO)}
    stale = sorted(KNOWN_UNTIL_MERGE - found)
    assert not stale, f"remove from KNOWN_UNTIL_MERGE (fixed): {stale}"


def test_every_listed_layer_entry_is_a_module_name():
    """The table is about fsframe's modules and lists each once."""
    names = [m for _, mods in LAYERS for m in mods]
    assert len(names) == len(set(names))
    assert all(m == ROOT_PACKAGE or m.startswith(ROOT_PACKAGE + ".") for m in names)


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


CLEAN = {
    "fsframe/__init__.py": "from .method import fit\nfrom . import errors\n",
    "fsframe/errors.py": "class FsframeError(Exception): ...\n",
    "fsframe/canonical.py": "import numpy\nfrom .errors import FsframeError\n",
    "fsframe/backends/__init__.py": "from .highs import Highs\n",
    "fsframe/backends/highs.py": """
        from ..canonical import ProblemData
        from . import base
        def solve():
            import highspy  # lazy third-party import: fine
            from ..errors import FsframeError  # lazy import of a lower layer: fine
        """,
    "fsframe/backends/base.py": "from fsframe import errors\n",
    "fsframe/method.py": """
        from .backends.highs import Highs
        import importlib
        import fsframe.errors
        BUILTIN = ['plug_a']
        def load(name):
            importlib.import_module(name)  # a name the checker cannot read: not checked
            importlib.import_module("plug_a")  # a built-in plugin named as a string: fine
            importlib.import_module(".backends.highs", __package__)  # lower layer by name: fine
            return fsframe.errors.FsframeError  # a lower module reached as an attribute: fine
        """,
    "plugins/plug_a/__init__.py": "import fsframe\nfrom fsframe.errors import FsframeError\nfsframe.method.fit\n",
}


def test_a_clean_tree_passes(tmp_path):
    assert check(_tree(tmp_path, CLEAN)) == []


@pytest.mark.parametrize("file,text,expected", [
    # a backend importing the compiler (a higher layer)
    ("fsframe/backends/highs.py", "from ..compiler import compile_model\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    # ... even inside a function, even as `from .. import compiler`
    ("fsframe/backends/highs.py", "def f():\n    from .. import compiler\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    # a low module importing the public API package (a name of fsframe/__init__)
    ("fsframe/canonical.py", "from . import fit\n", ("upward", "fsframe.canonical", "fsframe")),
    # a function-level import within one layer: a dodged cycle
    ("fsframe/backends/highs.py", "def f():\n    from .base import x\n",
     ("cycle-dodge", "fsframe.backends.highs", "fsframe.backends.base")),
    ("fsframe/canonical.py", "import pyomo.environ as pyo\n", ("pyomo", "fsframe.canonical", "pyomo.environ")),
    ("fsframe/method.py", "def f():\n    import plug_a\n", ("plugin-package", "fsframe.method", "plug_a")),
    ("plugins/plug_a/__init__.py", "from fsframe.method import _helper\n",
     ("private", "plug_a", "fsframe.method._helper")),
    ("plugins/plug_a/__init__.py", "from fsframe._types import finite\n",
     ("private", "plug_a", "fsframe._types")),
    ("plugins/plug_a/__init__.py", "import fsframe.method as m\nm._helper()\n",
     ("private", "plug_a", "fsframe.method._helper")),
    # a module the table does not place
    ("fsframe/newthing.py", "x = 1\n", ("unplaced", "fsframe.newthing", "-")),
    # imports by name count like import statements
    ("fsframe/backends/highs.py", "import importlib\ndef f():\n    importlib.import_module('fsframe.compiler')\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    ("fsframe/backends/highs.py", "from importlib import import_module as im\nim('..compiler', package=__package__)\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    ("fsframe/canonical.py", "pyo = __import__('pyomo.environ')\n", ("pyomo", "fsframe.canonical", "pyomo.environ")),
    ("plugins/plug_a/__init__.py", "import importlib\nimportlib.import_module('fsframe._types')\n",
     ("private", "plug_a", "fsframe._types")),
    # an aliased module import, and a higher module reached as an attribute of the package
    ("fsframe/backends/highs.py", "import fsframe.compiler as y\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    ("fsframe/backends/highs.py", "import fsframe.canonical\ndef f():\n    return fsframe.compiler.compile_model\n",
     ("upward", "fsframe.backends.highs", "fsframe.compiler")),
    # relative imports above the top-level package (an ImportError once the function runs)
    ("fsframe/backends/highs.py", "def f():\n    from ... import x\n",
     ("beyond-top", "fsframe.backends.highs", "...")),
    ("fsframe/backends/highs.py", "def f():\n    from .... import errors\n",
     ("beyond-top", "fsframe.backends.highs", "....")),
    ("plugins/plug_a/__init__.py", "from .. import fsframe\n", ("beyond-top", "plug_a", "..")),
])
def test_a_planted_violation_is_caught(tmp_path, file, text, expected):
    base = _tree(tmp_path, {**CLEAN, file: text})
    found = [v.key for v in check(base) if v.rule != "cycle"]  # an upward import may close a cycle too
    assert found == [expected]


@pytest.mark.parametrize("files, expected", [
    # a cycle inside a plugin package, hidden by a function-level import (the twin SVM's was one)
    ({"plugins/plug_a/__init__.py": "from .model import F\n",
      "plugins/plug_a/model.py": "class F:\n    def space(self):\n        from .space import make\n",
      "plugins/plug_a/space.py": "from .model import F\ndef make(): ...\n"},
     {("cycle", "plug_a.model", "plug_a.space"), ("cycle", "plug_a.space", "plug_a.model")}),
    # a submodule taking a name of its package's __init__, which imports it
    ({"plugins/plug_a/__init__.py": "from .model import F\nG = 1\n",
      "plugins/plug_a/model.py": "from . import G\nclass F: ...\n"},
     {("cycle", "plug_a", "plug_a.model"), ("cycle", "plug_a.model", "plug_a")}),
    # two plugin packages importing each other
    ({"plugins/plug_a/__init__.py": "import plug_b\n", "plugins/plug_b/__init__.py": "import plug_a\n"},
     {("cycle", "plug_a", "plug_b"), ("cycle", "plug_b", "plug_a")}),
])
def test_a_planted_cycle_is_caught(tmp_path, files, expected):
    found = {v.key for v in check(_tree(tmp_path, {**CLEAN, **files}))}
    assert found == expected


def test_layer_of_uses_the_longest_listed_prefix():
    assert layer_of("fsframe.backends.highs") == layer_of("fsframe.backends") == 2
    assert layer_of("fsframe.compiler.rows") == 3
    assert layer_of("fsframe") == layer_of("fsframe.cli.parser") == 9
    assert layer_of("fsframe.cli.select") == 8  # commands sit below the parser that imports them on use
    assert layer_of("fsframe.brand_new") is None  # the root entry covers fsframe/__init__ only
