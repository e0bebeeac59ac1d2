import json

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli

from benchcast.data.example import example_path, generate_ladder, load_example
from benchcast.studies.example import run_example


def test_bundled_ladder_is_reproducible():
    shipped = pd.read_csv(example_path())
    regenerated = generate_ladder()
    assert list(shipped["run"]) == list(regenerated["run"])
    assert np.allclose(shipped["value"], regenerated["value"], rtol=1e-9)
    table = load_example()
    assert table["run"].nunique() == 17 and {"arc_easy", "hellaswag", "gsm8k"} == set(table["benchmark"])


@pytest.fixture(scope="module")
def spread(tmp_path_factory):
    """The example study over two workers, run once for the tests below (each run is the whole study)."""
    folder = tmp_path_factory.mktemp("example")
    return folder, run_example(folder, n_jobs=2)


def test_run_example_forecasts_close_to_truth(spread):
    folder, result = spread
    summary = result.to_dict()
    assert (folder / "example.png").stat().st_size > 10_000
    for bench in summary["benchmarks"]:
        assert bench["n_test"] == 4 and bench["test_mre"] < 10.0
    # forecasts track the true law better than the binomial noise of one run would suggest
    err = [abs(f["predicted"] - f["truth_law"]) for f in summary["forecasts"]]
    assert max(err) < 0.03


def test_example_cli_json_in_one_process_is_the_example_over_workers(spread, tmp_path):
    """One process (-j 1, the figure as SVG) gives the numbers of the run over two workers; the figure is written in
    the format asked and no PNG beside it."""
    proc = run_cli("example", "--out", tmp_path / "one", "--figure-format", "svg", "--json", "-j", "1")
    assert proc.returncode == 0, proc.stderr
    serial = json.loads(proc.stdout)
    assert serial["figure"].endswith("example.svg")
    assert (tmp_path / "one" / "example.svg").read_bytes().startswith(b"<?xml")
    assert not (tmp_path / "one" / "example.png").exists()
    spread = spread[1].to_dict()
    for key in ("benchmarks", "weights", "forecasts"):
        _same(serial[key], json.loads(json.dumps(spread[key])))


def test_example_shows_the_default_with_its_interval(spread):
    """``benchcast example`` shows the default strategy's forecast with its interval (issue 32, item 12), as the
    README calls it the default, beside the one law whose fits it saves."""
    result = spread[1]
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


def _same(one, two):
    """Equal structure and text; numbers to rel 1e-9 (the two runs are different processes)."""
    if isinstance(one, dict):
        assert one.keys() == two.keys()
        for key in one:
            _same(one[key], two[key])
    elif isinstance(one, list):
        assert len(one) == len(two)
        for a, b in zip(one, two, strict=True):
            _same(a, b)
    elif isinstance(one, float):
        assert one == pytest.approx(two, rel=1e-9, nan_ok=True)
    else:
        assert one == two
