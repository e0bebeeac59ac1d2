from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import benchcast as bc

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "apple-downstream"
DCLM = SHARED / "metrics_dclm_data_mixture.subset.csv"
C4 = SHARED / "metrics_c4_mixture.subset.csv"


def require_shared(path: Path) -> Path:
    """The shared real data: CI must have it (a missing file fails there); elsewhere the test skips."""
    if not path.exists():
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI=true but the shared data is missing at {path}: the real-data tests cannot run.")
        pytest.skip(f"shared data not found at {path}")
    return path


@pytest.fixture(scope="session")
def apple_path() -> Path:
    return require_shared(DCLM)


@pytest.fixture(scope="session")
def c4_path() -> Path:
    return require_shared(C4)


@pytest.fixture(scope="session")
def apple(apple_path) -> pd.DataFrame:
    return bc.load(apple_path)


def law_table(
    law_name: str,
    theta,
    covariates: dict,
    *,
    q_rand: float = 0.0,
    metric: str = "acc",
    benchmark: str = "synthetic",
    noise: float = 0.0,
    seed: int = 0,
    extra_rows: list[dict] | None = None,
) -> pd.DataFrame:
    """A tidy table whose scores come from a law with known parameters (plus optional noise)."""
    law = bc.get_law(law_name)
    X = {k: np.asarray(v, float) for k, v in covariates.items()}
    score = law.predict_score(np.asarray(theta, float), X, q_rand)
    if noise:
        score = np.clip(score + np.random.default_rng(seed).normal(0, noise, score.shape), 1e-6, 1 - 1e-6)
    n = len(score)
    params = X.get("params", np.full(n, 1e8))
    tokens = X.get("tokens", X["flops"] / (6 * params) if "flops" in X else 20 * params)
    frame = pd.DataFrame(
        {
            # one run per distinct non-k covariate tuple (pass@k rows of a run share it)
            "run": [
                f"r{i}" for i in pd.factorize(pd.Series(list(zip(*[X[c] for c in X if c != "k"], strict=True))))[0]
            ],
            "params": params,
            "tokens": tokens,
            "flops": X.get("flops", 6 * params * tokens),
            "benchmark": benchmark,
            "metric": metric,
            "value": score,
            # the chance level the scores were made with is known: say so (no unknown-chance warning)
            "q_rand": q_rand,
        }
    )
    if "k" in X:
        frame["k"] = X["k"].astype(int)
    if "gold" in X:
        gold = frame.drop_duplicates("run").assign(metric="loglikelihood", value=-X["gold"][: frame["run"].nunique()])
        gold = gold.drop(columns=["k", "q_rand"], errors="ignore")
        frame = pd.concat([frame, gold], ignore_index=True)
    if extra_rows:
        frame = pd.concat([frame, pd.DataFrame(extra_rows)], ignore_index=True)
    return bc.validate(frame, "synthetic")
