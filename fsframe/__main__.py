"""``python -m fsframe``: the command line (see :mod:`fsframe.cli`)."""

import sys

from .cli import main

sys.exit(main())
