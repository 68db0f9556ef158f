"""Hook specifications of fsframe, and the ``hookimpl`` marker plugins use.

Every component kind is registered through one hook returning a list. The core components
(``fsframe.surrogates``, ``fsframe.loops``, ``fsframe.backends``, ``fsframe.kernels``) are
default plugins of the host; the method packages in ``plugins/`` (``fsframe_svm``,
``fsframe_mpm``, ...) are entry points of fsframe's own distribution; all go through these same
hooks. A third-party package adds components the way fsframe's method packages do, by declaring an
entry point in the group ``fsframe``::

    [project.entry-points.fsframe]
    my_plugin = "my_package.plugin_module"

and implementing any of the hooks below in that module with ``@fsframe.hookimpl``.
Implementations take no arguments today; specs may gain keyword arguments later, which
implementations may opt into by naming them (pluggy's "opt-in arguments").
"""

from __future__ import annotations

import pluggy

__all__ = ["hookspec", "hookimpl", "PROJECT_NAME"]

PROJECT_NAME = "fsframe"
hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def fsframe_register_formulations():
    """Register classification formulations.

    :return: a list of :class:`fsframe.Formulation` subclasses, each with a unique ``name``.
    """


@hookspec
def fsframe_register_surrogates():
    """Register L0-norm surrogates.

    :return: a list of :class:`fsframe.Surrogate` subclasses, each with a unique ``name``.
    """


@hookspec
def fsframe_register_loops():
    """Register outer loops (DCA, EM, reweighting, ...).

    :return: a list of :class:`fsframe.OuterLoop` subclasses, each with a unique ``name``.
    """


@hookspec
def fsframe_register_backends():
    """Register solver backends.

    :return: a list of :class:`fsframe.Backend` subclasses, each with a unique ``name``.
    """


@hookspec
def fsframe_register_methods():
    """Register named methods: recipes of formulation, surrogate, loop and default parameters.

    :return: a list of :class:`fsframe.MethodSpec`, each with a unique ``name``.
    """


@hookspec
def fsframe_register_transforms():
    """Register data transforms applied to ``X`` before the formulation sees it (kernel maps).

    A transform is chosen with ``fit(..., kernel=NAME)``: the one whose ``kernels`` contains
    ``NAME`` is built with ``kernel=NAME`` and the parameters it declares (``sigma``, ...). The
    built-in empirical kernel map (``rbf``, ``linear``, ``poly``) is registered through this hook.

    :return: a list of :class:`fsframe.kernels.DataTransform` subclasses, each with a unique
        ``name`` and a non-empty tuple of ``kernels`` strings. A third-party transform claiming a
        built-in kernel (``rbf``, ``linear``, ``poly``) is refused; a kernel claimed by two
        third-party transforms is unusable until one is removed.
    """


@hookspec
def fsframe_register_oracles():
    """Register what the conformance kit (``fsframe.testing``) expects of your components, stated
    independently of their code: a formulation's loss recomputed from its decision values, a
    loop's update rule, a surrogate's EM weight convention (docs/testing.md).

    Called only by the kit, at its first lookup of an oracle; import ``fsframe.testing`` inside
    the implementation (it loads Pyomo). A plugin's oracle applies to the class and its
    subclasses; one registered at run time (``fsframe.testing.register_decision_loss``, ...) wins
    over it.

    :return: a list of :class:`fsframe.testing.Oracle`, e.g.
        ``[Oracle("decision_loss", MyFormulation, lambda f: hinge_loss(f.C))]``.
    """
