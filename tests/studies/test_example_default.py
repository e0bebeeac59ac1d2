"""``benchcast example`` shows the default strategy's forecast with its interval (issue 32, item 12), as the
README calls it the default, beside the one law whose fits it saves."""

from __future__ import annotations

import numpy as np

from benchcast.studies.example import run_example


def test_example_shows_the_default_with_its_interval(tmp_path):
    result = run_example(tmp_path)
    summary = result.to_dict()
    assert set(summary["weights"]) == {"arc_easy", "hellaswag", "gsm8k"}
    assert all(
        summary["weights"][b] and abs(sum(summary["weights"][b].values()) - 1) < 1e-9 for b in summary["weights"]
    )
    for f in summary["forecasts"]:
        assert f["default_lower"] < f["default"] < f["default_upper"]
    inside = np.mean([f["default_lower"] <= f["true"] <= f["default_upper"] for f in summary["forecasts"]])
    assert inside >= 0.75  # 90 % intervals of the 12 held-out runs (measured: 12 of 12)
    text = str(result)
    assert "the default with its 90 % interval" in text and "90 % lower" in text and "ensemble" in text
