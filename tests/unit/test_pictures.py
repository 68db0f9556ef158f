"""The pictures a reader of ``fsframe report``, ``select --plot`` and ``path --plot`` sees (issue
22), checked on the drawn figures: feature names on frequency plots, one axis per swept parameter,
log axes labelled with the grid values and free of colliding labels, panel titles clear of the
panel above, the trace showing the objective the loop monitors (and saying which) on whole-number
iterations."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import fsframe
from fsframe.evaluation.plots import MAX_TICKS, draw, figure, path_data, trace_data

pytestmark = pytest.mark.filterwarnings("ignore::fsframe.errors.DataWarning",
                                        "ignore::fsframe.errors.ConvergenceWarning")


@pytest.fixture
def fig_of():
    made = []

    def make(kind, data, **kw):
        f = figure(kind, data, **kw)
        made.append(f)
        f.canvas.draw()
        return f

    yield make
    for f in made:
        plt.close(f)


def labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]


def no_collisions(fig, ax) -> bool:
    r = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(r).padded(2) for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    return all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])  # not even touching


def test_frequency_plot_names_features_and_titles_clear_the_panel_above(fig_of):
    names = [f"gene_{j}" for j in range(30)]
    rng = np.random.default_rng(0)
    data = {f"method {k}": {"features": names, "frequency": list(rng.uniform(size=30) * (rng.uniform(size=30) > .5))}
            for k in range(4)}
    fig = fig_of("frequency", data)
    axes = fig.axes
    assert labels(axes[-1]) == names
    r = fig.canvas.get_renderer()
    for above, ax in zip(axes, axes[1:]):
        title = ax.title.get_window_extent(r)
        assert title.y1 < above.get_window_extent(r).y0 - 2  # a gap: the title does not touch the panel above
    # many features: the ones selected most often, by name
    wide = {"m": {"features": [f"w{j}" for j in range(500)],
                  "frequency": [1.0 if j % 50 == 7 else 0.0 for j in range(500)]}}
    shown = labels(fig_of("frequency", wide).axes[-1])
    assert shown == [f"w{j}" for j in range(7, 500, 50)]


def test_sweep_puts_each_parameter_on_its_own_axes(fig_of):
    data = {("l1-svm", "C"): {"value": [0.01, 0.1, 1.0, 10.0, 100.0], "accuracy": [90, 92, 95, 94, 93],
                              "accuracy_std": [1] * 5, "n_selected": [2, 4, 8, 12, 15], "n_selected_std": [0] * 5},
            ("fsv", "alpha"): {"value": [1.0, 3.0, 10.0], "accuracy": [94, 95, 93], "accuracy_std": [1] * 3,
                               "n_selected": [9, 6, 4], "n_selected_std": [0] * 3}}
    fig = fig_of("sweep", data)
    grids = {"C": ["0.01", "0.1", "1", "10", "100"], "alpha": ["1", "3", "10"]}  # the grid values, as numbers
    assert sorted(ax.get_xlabel() for ax in fig.axes) == ["C", "C", "alpha", "alpha"]  # never one axis for both
    for ax in fig.axes:
        assert labels(ax) == grids[ax.get_xlabel()] and no_collisions(fig, ax)


def test_log_axes_label_grid_values_without_collisions(fig_of):
    rng = np.random.default_rng(1)
    y = np.repeat([1, -1], 30)
    X = rng.standard_normal((60, 20))
    X[:, :4] += 0.8 * y[:, None]
    p = fsframe.path(X, y, "l1-svm")  # an automatic grid: many values over several decades
    assert len(p.values) > MAX_TICKS
    fig = fig_of("path", path_data(p))
    for ax in fig.axes:
        ticks = labels(ax)
        assert 2 <= len(ticks) <= MAX_TICKS
        assert all("$" not in t and "10^" not in t and "×" not in t for t in ticks)
        assert [float(t) for t in ticks] == pytest.approx([float(f"{v:.3g}") for v in ax.get_xticks()])
        assert all(min(abs(t / v - 1) for v in p.values) < 1e-12 for t in ax.get_xticks())  # grid values only
        assert no_collisions(fig, ax)
    r = fig.canvas.get_renderer()
    boxes = [ax.get_tightbbox(r) for ax in fig.axes]  # y labels do not run into the panel on their left
    assert all(a.x1 <= b.x0 for a, b in zip(boxes, boxes[1:]))


def test_trace_shows_the_monitored_objective_or_says_none_is(fig_of):
    rng = np.random.default_rng(2)
    y = np.repeat([1, -1], 30)
    X = rng.standard_normal((60, 12))
    X[:, :3] += y[:, None]
    fsv = fsframe.fit(X, y, "fsv")
    d = trace_data(fsv)
    mon = d["series"][0]["monitored"]
    assert d["monitored"] == fsv.loop.monitored_quantity(fsv.surrogate)
    assert mon == [h.monitored for h in fsv.history] and all(b <= a + 1e-9 * abs(a) for a, b in zip(mon, mon[1:]))
    fig = fig_of("trace", d)
    line = fig.axes[0].get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), mon)
    assert "monitored" in fig.axes[0].get_title(loc="left") and d["monitored"] in fig.axes[0].get_title(loc="left")
    for ax in fig.axes:
        assert all(float(t).is_integer() for t in ax.get_xticks())
    em = fsframe.fit(X, y, "em-l0")  # lp with p = 0: no potential to monitor
    e = trace_data(em)
    assert e["monitored"] is None and all(v is None for v in e["series"][0]["monitored"])
    fig = fig_of("trace", e)
    assert "not monitored" in fig.axes[0].get_title(loc="left") and fig.axes[0].get_ylabel() == "objective (reported)"
    from fsframe.cli.select import monotone_text

    assert monotone_text(em).startswith("not checked") and monotone_text(fsv) == "yes"
    # the summary and the CLI say the same, from FitResult.monotone_text (the summary said "yes")
    assert not em.monotone_checked and "monotone: not checked" in em.summary()
    assert fsv.monotone_checked and "monotone: yes" in fsv.summary()


def test_every_kind_renders_to_files(tmp_path):
    data = {"m": {"r": [1, 3, 10], "n_selected": [1, 3, 10], "accuracy": [80, 90, 95], "accuracy_std": [1, 1, 1]}}
    paths = draw("accuracy_vs_features", data, tmp_path / "avf.png", title="t")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size > 1000 for p in paths)
