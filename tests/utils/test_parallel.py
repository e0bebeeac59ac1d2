"""parallel_map: the process pool and Ray give the same grid bit for bit; a missing Ray says how
to install it."""

import math
import sys

import pandas as pd
import pytest

import benchcast as bc
from benchcast.evaluation.sweep import sweep
from benchcast.utils.parallel import parallel_map


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_ray_grid_is_bit_identical_to_the_process_pool(apple, local_ray):
    # power_floor runs the engine's numerical path (Huber loss, grid of starts, batched Levenberg-Marquardt)
    spec = bc.FitSpec("power_floor", "arc_easy", "acc_norm")
    grid = [3e20, 1e21, 3e21, 6e21]
    pool = sweep(apple, spec, thresholds=grid, tpr=20, min_flops=3e18, n_jobs=2, progress=False)
    on_ray = sweep(apple, spec, thresholds=grid, tpr=20, min_flops=3e18, backend="ray", progress=False)
    assert len(pool.table) == len(grid)
    pd.testing.assert_frame_equal(pool.table, on_ray.table, check_exact=True)
    assert pool.critical == on_ray.critical and pool.note == on_ray.note
    assert parallel_map(math.sqrt, [9.0, 1.0, 4.0], backend="ray") == [3.0, 1.0, 2.0]  # order kept


def test_missing_ray_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(bc.BenchcastError, match=r"pip install 'benchcast\[ray\]'"):
        parallel_map(math.sqrt, [1.0], ray_address="auto")
    with pytest.raises(bc.BenchcastError, match="unknown parallel backend"):
        parallel_map(math.sqrt, [1.0], backend="dask")
