"""The overlap check the report's figure test uses finds a legend run into the panel below, and a colour bar
inside its panel clears its neighbour (#50 item 6)."""

import numpy as np
import pandas as pd
from figure_checks import overlaps

from benchcast.plots.results import runs_by_tpr
from benchcast.plots.style import legend_outside, plt


def test_a_legend_run_into_the_panel_below_is_found():
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(4, 4))  # no layout engine: the legend below has no room
    for i in range(12):
        top.plot([1, 2], [i, i + 1], label=f"curve {i}")
    bottom.plot([1, 2], [1, 2])
    bottom.set_title("below")
    legend_outside(top, "below", ncol=2)
    assert any("overlap" in line for line in overlaps(fig))
    plt.close(fig)


def test_a_panel_coloured_by_ratio_keeps_its_colour_bar_off_its_neighbour():
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5), layout="constrained")
    flops = np.geomspace(1e18, 1e22, 30)
    runs = pd.DataFrame({"flops": flops, "value": np.linspace(0.3, 0.8, 30), "tpr": np.resize([10.0, 40, 160], 30)})
    runs_by_tpr(left, runs, "fitted runs")
    left.set_xscale("log")
    right.plot(flops, np.linspace(0.3, 0.8, 30))
    right.set_ylabel("acc_norm")
    legend_outside(left, "below")
    assert overlaps(fig) == []
    bar = [a for a in left.child_axes if a.get_xlabel() == "tokens per parameter"]
    assert bar and bar[0].get_position().x1 <= left.get_position().x1  # inside its panel, not beside it
    plt.close(fig)
