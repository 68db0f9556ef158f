"""``fsframe methods NAME`` prints each parameter's meaning, default and valid range, read from the
component's own docstring (numpydoc "Parameters") and attrs validators (issue 8 §5)."""

from __future__ import annotations

import json

import attrs
from attrs.validators import ge, gt, in_, instance_of, le, optional

from fsframe.cli.params import describe_validator, numpydoc_parameters, parameter_docs
from fsframe.validators import finite


def _custom(inst, attr, value):
    if value == 3:
        raise ValueError("no threes")


@attrs.frozen
class _Base:
    """A base.

    Parameters
    ----------
    tol : float
        Tolerance of the base.
    """

    tol: float = attrs.field(default=1e-3, validator=[gt(0), finite])


@attrs.frozen
class _Widget(_Base):
    """A widget.

    Long prose that mentions alpha : not an entry.

    Parameters
    ----------
    alpha, beta : float >= 0
        Two weights that share
        one description.
    mode : str
        How.
    q : int in {1, 2}, optional
        Checked by a custom validator.

    References
    ----------
    gamma : not a parameter
        This is another section.
    """

    alpha: float = attrs.field(default=1.0, validator=[instance_of(float), ge(0.0), le(10.0)])
    beta: float = attrs.field(default=2.0, validator=ge(0.0))
    mode: str = attrs.field(default="a", validator=in_(("a", "b")))
    q: int | None = attrs.field(default=None, validator=[optional(instance_of(int)), _custom])
    gamma: int = attrs.field(default=0)


def test_numpydoc_section_is_parsed():
    docs = numpydoc_parameters(_Widget.__doc__)
    assert docs["alpha"] == ("float >= 0", "Two weights that share one description.")
    assert docs["beta"] == docs["alpha"]
    assert docs["mode"] == ("str", "How.")
    assert "gamma" not in docs  # a later section is not a parameter
    assert numpydoc_parameters("no sections") == {} and numpydoc_parameters(None) == {}


def test_validators_are_described():
    f = attrs.fields_dict(_Widget)
    assert describe_validator(f["alpha"].validator) == ["float", ">= 0.0", "<= 10.0"]
    assert describe_validator(f["mode"].validator) == ["one of 'a', 'b'"]
    assert describe_validator(f["tol"].validator) == ["> 0", "finite"]
    assert describe_validator(f["q"].validator) == ["int or None", "?"]
    assert describe_validator(None) == []


def test_parameter_docs_combine_docstring_validators_and_defaults():
    docs = {d.name: d for d in parameter_docs(_Widget, {"alpha": 5.0})}
    assert list(docs) == ["tol", "alpha", "beta", "mode", "q", "gamma"]
    assert docs["alpha"].default == 5.0 and docs["beta"].default == 2.0  # the method's default wins
    assert docs["alpha"].valid == "float, >= 0.0, <= 10.0"
    assert docs["tol"].meaning == "Tolerance of the base." and docs["tol"].valid == "> 0, finite"
    assert docs["q"].valid == "int or None; int in {1, 2}, optional"  # custom check: the doc's type line
    assert docs["gamma"].meaning == "" and docs["gamma"].valid == ""


def test_methods_name_prints_meaning_default_and_range(cli):
    r = cli("methods", "l0-mpm")
    assert r.code == 0, r.err
    out = r.out
    assert "      alpha = 5.0   [float, > 0, finite, < 1000000000.0]" in out
    assert "Steepness; ``alpha -> inf`` gives the indicator" in out  # ExpSurrogate's docstring
    assert "      max_iter = 100   [int, >= 1]" in out  # the method's default, not the loop's 20
    assert "Maximum number of convex subproblems." in out  # OuterLoop's docstring
    assert "      delta = None   [float or None; float in (0, 1), optional]" in out
    assert "Worst-case probability of correct classification" in out
    r = cli("methods", "em-l0")
    assert "      p = 0.0   [float, >= 0.0, <= 1.0]" in r.out and "0 is the zero-norm" in r.out


def test_methods_name_json_has_the_parameter_docs(cli):
    r = cli("methods", "fsv", "--json")
    data = json.loads(r.out)
    docs = data["parameter_docs"]
    c = next(p for p in docs["formulation"]["parameters"] if p["name"] == "C")
    assert docs["formulation"]["name"] == "hinge"
    assert c == {"name": "C", "default": 1.0, "valid": "float, > 0, finite", "type": "float > 0",
                 "meaning": "Weight of the hinge loss."}
