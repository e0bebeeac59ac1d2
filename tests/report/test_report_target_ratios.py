"""The report's figure at the target's ratio (issue #39, item 6): a planned run at another TPR than the curve's sits
on a curve and band of its own, drawn at its ratio, not off the TPR-20 curve."""

import numpy as np
import pytest

from benchcast.report.analysis import analyse_benchmark
from benchcast.report.figures import draw_forecast


@pytest.mark.slow
def test_each_planned_target_sits_on_the_curve_at_its_own_ratio(apple):
    params, tokens = [7e9, 1.3e10], [4e12, 5e12]  # TPR 571 and 385, beyond the ladder's 10-160
    report = analyse_benchmark(
        apple, "hellaswag", "acc_norm", target_params=params, target_tokens=tokens, n_boot=20, n_jobs=1
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
    # the fitted runs coloured by their ratio (a colour bar), each target's value beside its star
    assert any(other.get_ylabel() == "tokens per parameter" for other in fig.axes if other is not ax)
    texts = [t.get_text() for t in ax.texts]
    assert all(f"{value:.3f}" in texts for value in made["prediction"])
    plt.close(fig)
