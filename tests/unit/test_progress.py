"""The one progress helper (issue 22): on in terminals and notebooks, off when nothing interactive is
attached; driven by the loop driver's callback (every loop, the bound search and DSO-FS included),
by the path driver and by FSSelectorCV."""

from __future__ import annotations

import io
import sys
import types

import numpy as np
import pytest

import fsframe
from fsframe.errors import InvalidOptionError
from fsframe.progress import Progress, interactive, progress_bar

pytestmark = pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning",
                                        "ignore::fsframe.errors.ConvergenceWarning")


class Tty(io.StringIO):
    def isatty(self):
        return True


def data(m=40, n=6, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([1, -1], m // 2)
    X = rng.standard_normal((m, n))
    X[:, :2] += y[:, None]
    return X, y


def test_off_without_a_terminal_on_with_one():
    quiet = io.StringIO()
    bar = progress_bar(None, total=3, desc="path", stream=quiet, delay=0.0)
    bar.step(None, "a")
    bar.close()
    assert bar.mode is None and quiet.getvalue() == ""
    tty = Tty()
    bar = progress_bar(None, total=3, desc="path", stream=tty, delay=0.0)
    for k in range(3):
        bar.step(None, f"point {k}")
    bar.close()
    out = tty.getvalue()
    assert bar.mode == "terminal" and "\r\x1b[K" in out and "path [3/3] point 2" in out and out.endswith("\n")
    assert "ETA" in out.split("\r")[2]  # [1/3] and [2/3] estimate the rest
    forced = io.StringIO()  # asked for outside a terminal: one line per step (a log file)
    bar = progress_bar(True, stream=forced)
    bar.step(None, "x")
    bar.step(None, "y")
    assert forced.getvalue().startswith("[1] x (0s)\n[2] y") and "\r" not in forced.getvalue()
    never = Tty()
    progress_bar(False, stream=never).step(None, "x")
    assert never.getvalue() == ""


def test_short_runs_stay_silent_and_the_environment_switch():
    tty = Tty()
    bar = progress_bar(None, stream=tty, delay=3600.0)  # the default waits DELAY seconds
    bar.step(None, "quick")
    bar.close()
    assert tty.getvalue() == ""


def test_environment_turns_the_default_off(monkeypatch):
    monkeypatch.setenv("FSFRAME_PROGRESS", "0")
    assert progress_bar(None, stream=Tty()).mode is None
    monkeypatch.setenv("FSFRAME_PROGRESS", "1")
    assert progress_bar(None, stream=io.StringIO()).mode == "lines"


def test_notebook_line_is_one_updated_output(monkeypatch):
    shown = []

    class Handle:
        def update(self, obj):
            shown.append(("update", obj.text))

    class Shell:
        pass

    Shell.__name__ = "ZMQInteractiveShell"
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: Shell()
    display = types.ModuleType("IPython.display")
    display.Pretty = type("Pretty", (), {"__init__": lambda self, text: setattr(self, "text", text)})

    def show(obj, display_id=False):
        shown.append(("display", obj.text))
        return Handle()

    display.display = show
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    assert interactive(io.StringIO()) == "notebook"
    bar = progress_bar(None, total=2, desc="fit", stream=io.StringIO(), delay=0.0)
    bar.step(None, "one")
    bar.step(None, "two")
    assert [k for k, _ in shown] == ["display", "update"] and "fit [2/2] two" in shown[-1][1]


def test_fit_steps_once_per_subproblem_through_the_loop_callback():
    X, y = data()
    seen, also = [], []
    r = fsframe.fit(X, y, "fsv", progress=seen.append, callback=lambda rec, it: also.append(rec.k))
    assert [rec.k for rec in seen] == [h.k for h in r.history] == also  # the user's callback still runs


@pytest.mark.parametrize("method, params", [("fs-mpm", {}), ("dso-fs", {"n_features": 2})])
def test_bound_search_and_dso_report_progress(method, params):
    X, y = data(m=40, n=5, seed=2)
    seen = []
    r = fsframe.fit(X, y, method, progress=seen.append, **params)
    assert len(seen) == len(r.history) > 1


def test_path_steps_once_per_point():
    X, y = data()
    seen = []
    p = fsframe.path(X, y, "l1-svm", C=[0.1, 1.0], progress=seen.append)
    assert seen == list(p.points)


def test_bad_progress_is_a_typed_error():
    with pytest.raises(InvalidOptionError, match="progress must be None"):
        progress_bar("yes")
    assert isinstance(progress_bar(None, stream=io.StringIO()), Progress)
