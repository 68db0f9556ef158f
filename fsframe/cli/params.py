"""What ``fsframe methods NAME`` says about each parameter of a component: its meaning, from the
numpydoc "Parameters" section of the component's docstring (or of a base class's, e.g. the
outer loops' ``max_iter`` and ``tol``), its default and its valid range, read from the attrs
validators the component declares (``gt(0)``, ``in_(...)``, ``instance_of(float)``,
:func:`fsframe.validators.finite` ...). Nothing is written twice: a component documents its
parameters once, in its own docstring and validators."""

from __future__ import annotations

import inspect
import re
from typing import Any

import attrs

from ..validators import finite

__all__ = ["ParameterDoc", "parameter_docs", "numpydoc_parameters", "describe_validator"]

_SECTION = re.compile(r"^(\w[\w ]*)\n-{3,}\s*$", re.M)
_ENTRY = re.compile(r"^(\*{0,2}[A-Za-z_][\w, ]*?)\s*(?::\s*(.*))?$")


@attrs.frozen
class ParameterDoc:
    """One parameter: ``name``, ``default``, ``valid`` (range and type from the validators; with
    a custom validator, followed by the docstring's type line),
    ``type`` (as the docstring writes it) and ``meaning`` (its docstring description)."""

    name: str
    default: Any
    valid: str
    type: str
    meaning: str

    def as_dict(self) -> dict:
        return attrs.asdict(self)


def numpydoc_parameters(doc: str | None) -> dict[str, tuple[str, str]]:
    """``{name: (type, description)}`` from the "Parameters" section of a numpydoc docstring
    (``a, b : float`` documents both; the description is joined into one paragraph)."""
    if not doc:
        return {}
    doc = inspect.cleandoc(doc)
    heads = list(_SECTION.finditer(doc))
    start = next((i for i, m in enumerate(heads) if m.group(1).strip() == "Parameters"), None)
    if start is None:
        return {}
    end = heads[start + 1].start() if start + 1 < len(heads) else len(doc)
    out: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    typ, desc = "", []
    for line in doc[heads[start].end():end].splitlines():
        if line and not line[0].isspace():
            for n in names:
                out[n] = (typ, " ".join(desc))
            m = _ENTRY.match(line.strip())
            names = [n.strip() for n in m.group(1).split(",")] if m else []
            typ, desc = ((m.group(2) or "").strip(), []) if m else ("", [])
        elif line.strip():
            desc.append(line.strip())
    for n in names:
        out[n] = (typ, " ".join(desc))
    return out


def describe_validator(v) -> list[str]:
    """Readable conditions of an attrs validator (``["float", "> 0", "finite"]``): ``and_`` lists,
    ``optional``, ``instance_of``, ``in_``, the comparison validators and ``finite``; a custom
    validator is ``"?"`` (its docstring entry says what it accepts)."""
    if v is None:
        return []
    if getattr(v, "conditions", None) is not None:  # a validator that describes itself
        return list(v.conditions)
    if isinstance(v, (list, tuple)):
        return [c for x in v for c in describe_validator(x)]
    inner = getattr(v, "_validators", None)
    if inner is not None:  # and_(...)
        return describe_validator(list(inner))
    if type(v).__name__ == "_OptionalValidator":
        conds = describe_validator(v.validator) or ["?"]
        return conds[:-1] + [conds[-1] + " or None"]
    if hasattr(v, "bound") and hasattr(v, "compare_op"):  # lt, le, ge, gt
        return [f"{v.compare_op} {v.bound!r}"]
    if hasattr(v, "options"):  # in_
        return ["one of " + ", ".join(repr(o) for o in v.options)]
    if type(v).__name__ == "_InstanceOfValidator":
        types = v.type if isinstance(v.type, tuple) else (v.type,)
        return [" or ".join(t.__name__ for t in types)]
    if v is finite:
        return ["finite"]
    return ["?"]  # a custom check: the docstring's type line says what it accepts


def _docs_in_mro(cls) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for klass in reversed(cls.__mro__):  # the class's own entry wins over a base's
        found.update(numpydoc_parameters(klass.__dict__.get("__doc__")))
    return found


def parameter_docs(cls, defaults: dict | None = None) -> list[ParameterDoc]:
    """The documentation of every init parameter of an attrs component class; ``defaults``
    (a method's) override the class defaults."""
    defaults = defaults or {}
    docs = _docs_in_mro(cls)
    out = []
    for f in attrs.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        default = defaults.get(f.name, f.default)
        if isinstance(default, attrs.Factory):
            default = default.factory() if not default.takes_self else None
        if default is attrs.NOTHING:
            default = "(required)"
        typ, meaning = docs.get(f.name, ("", ""))
        conds = describe_validator(f.validator)
        valid = ", ".join(c for c in conds if c != "?")
        if "?" in conds and typ:
            valid = f"{valid}; {typ}" if valid else typ
        out.append(ParameterDoc(name=f.name, default=default, valid=valid, type=typ, meaning=meaning))
    return out
