"""The report's figure at the target's ratio (issue #39, item 6): a planned run at another TPR than the curve's sits
on a curve and band of its own, drawn at its ratio, not off the TPR-20 curve."""

import numpy as np
import pytest
from plots.figure_checks import overlaps  # the figure tests' shared checks

from benchcast import Uncertainty
from benchcast.report.analysis import analyse_benchmark
from benchcast.report.figures import benchmark_panels, draw_forecast


@pytest.mark.slow
def test_each_planned_target_sits_on_the_curve_at_its_own_ratio(apple):
    params, tokens = [7e9, 1.3e10], [4e12, 5e12]  # TPR 571 and 385, beyond the ladder's 10-160
    report = analyse_benchmark(
        apple,
        "hellaswag",
        "acc_norm",
        target_params=params,
        target_tokens=tokens,
        uncertainty=Uncertainty(20),
        n_jobs=1,
    )
    made = report.forecast.to_frame()
    assert sorted(report.ratio_curves) == pytest.approx(sorted(made["tpr"]))  # the main curve is at TPR 20
    for ratio, (curve, bands) in report.ratio_curves.items():
        row = made[np.isclose(made["tpr"], ratio)].iloc[0]
        on_curve = np.interp(np.log(row["flops"]), np.log(report.grid), curve)
        assert on_curve == pytest.approx(row["prediction"], abs=2e-3)  # the target sits on its own curve
        main = np.interp(np.log(row["flops"]), np.log(report.grid), report.curve)
        assert abs(main - row["prediction"]) > 5 * abs(on_curve - row["prediction"])  # not on the TPR-20 one
        assert set(bands) == {0.5, 0.9}
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    draw_forecast(ax, report)
    labels = [line.get_label() for line in ax.get_lines()]
    assert all(any(f"TPR {ratio:.3g}" in label for label in labels) for ratio in report.ratio_curves)
    # the fitted runs coloured by their ratio (a colour bar inside the panel), each target's value beside its star
    assert any(inset.get_xlabel() == "tokens per parameter" for inset in ax.child_axes)
    texts = [t.get_text() for t in ax.texts]
    assert all(f"{value:.3f}" in texts for value in made["prediction"])
    # each ratio's curve named on it, the main one too (#50 item 6), the names clear of one another
    assert {f"TPR {ratio:.3g}" for ratio in report.ratio_curves} | {"TPR 20"} <= set(texts)
    fig.canvas.draw()
    named = [t.get_window_extent() for t in ax.texts if t.get_text().startswith("TPR ")]
    assert not any(a.overlaps(b) for i, a in enumerate(named) for b in named[i + 1 :])
    plt.close(fig)
    # the page's five panels as a reader sees them: no legend, colour bar or title runs into another panel
    page = benchmark_panels(report)
    assert overlaps(page) == []
    assert "targets on the curves at their own TPR" in " ".join(page.axes[0].get_title().split())
    plt.close(page)
