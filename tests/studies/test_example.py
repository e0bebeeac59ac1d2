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


def test_run_example_forecasts_close_to_truth(tmp_path):
    summary = run_example(tmp_path).to_dict()
    assert (tmp_path / "example.png").stat().st_size > 10_000
    for bench in summary["benchmarks"]:
        assert bench["n_test"] == 4 and bench["test_mre"] < 10.0
    # forecasts track the true law better than the binomial noise of one run would suggest
    err = [abs(f["predicted"] - f["truth_law"]) for f in summary["forecasts"]]
    assert max(err) < 0.03


def test_example_cli_json_in_one_process_is_the_example_over_workers(tmp_path):
    proc = run_cli("example", "--out", tmp_path / "one", "--json", "-j", "1")
    assert proc.returncode == 0, proc.stderr
    serial = json.loads(proc.stdout)
    assert serial["figure"].endswith("example.png")
    spread = run_example(tmp_path / "two", n_jobs=2).to_dict()
    for key in ("benchmarks", "weights", "forecasts"):
        _same(serial[key], json.loads(json.dumps(spread[key])))


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
