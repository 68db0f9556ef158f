"""The ``fsframe`` command line (also ``python -m fsframe``).

Commands: ``methods``, ``plugins``, ``select``, ``path``, ``compare``, ``run`` (an experiment file) and ``report``
(``fsframe COMMAND --help``; reference with examples: docs/cli.md, docs/experiments.md).

Exit status: 0 success; 2 bad usage or bad input (one line on stderr naming the problem; add
``--debug`` for the traceback); 1 a solver failure (including any failed fit in a
cross-validation, whose results are still printed and written). Heavy modules (scikit-learn's
model selection, joblib) are imported only by the commands that use them.

Modules: :mod:`~fsframe.cli.parser` (flags), one module per command (:mod:`~.methods`,
:mod:`~.plugins`, :mod:`~.select`, :mod:`~.compare`, :mod:`~.run`), :mod:`~.evaluate` (what select and compare
share), :mod:`~.output` and :mod:`~.common`.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from typing import Sequence

from .. import errors
from .common import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, PROG, UsageError, parse_assignment, parse_value
from .output import WarningPrinter
from .parser import build_parser

__all__ = ["main", "parse_value", "parse_assignment", "build_parser", "UsageError"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 solver failure, 2 bad usage/input)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: --help, --version (0) or a usage error (2)
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    debug = getattr(args, "debug", False)
    printer = WarningPrinter(sys.stderr)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = printer.show
        try:
            return args.func(args, argv)
        except errors.SolverFailedError as exc:
            return _fail(exc, debug, EXIT_FAILURE)
        except errors.FsframeError as exc:
            return _fail(exc, debug, EXIT_USAGE)
        except KeyboardInterrupt:
            print(f"\n{PROG}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        except BrokenPipeError:  # e.g. piped into head
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            return EXIT_OK
        except Exception as exc:  # a bug: say so, briefly unless --debug
            if debug:
                traceback.print_exc()
            else:
                print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback, "
                      "and please report it)", file=sys.stderr)
            return EXIT_FAILURE


def _fail(exc: BaseException, debug: bool, code: int) -> int:
    if debug:
        traceback.print_exc()
    kind = type(exc).__name__
    text = str(exc).strip() or kind
    print(f"{PROG}: error: {text}" + ("" if isinstance(exc, UsageError) else f" [{kind}]"), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
