"""Law selection on the user's own data: backtest every applicable law, rank, and say how far
the winner has been seen to extrapolate."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from benchcast.errors import BenchcastError, InsufficientDataError
from benchcast.evaluation.backtest import backtest
from benchcast.evaluation.metrics import mae, mre
from benchcast.fitting.spec import FitSpec, design
from benchcast.laws import available_laws, get_law

HOLDOUT_FRACTION = 0.25  # the top quarter of the log-compute range is held out


@dataclass
class Recommendation:
    benchmark: str
    ranking: pd.DataFrame
    validation_threshold: float
    extrapolation_decades: float
    best: str
    ensemble: dict | None
    failures: list[str]

    def to_dict(self) -> dict:
        return {
            "benchmark": self.benchmark,
            "best": self.best,
            "validation_threshold": self.validation_threshold,
            "extrapolation_decades": self.extrapolation_decades,
            "ensemble": self.ensemble,
            "ranking": self.ranking.to_dict("records"),
            "failures": self.failures,
        }

    def advice(self) -> str:
        row = self.ranking.iloc[0]
        text = (
            f"Trust '{self.best}' on {self.benchmark}: held-out MRE {row['test_mre']:.2f} %, 90 % interval "
            f"coverage {row.get('coverage90', float('nan')):.2f}, seen to extrapolate "
            f"{self.extrapolation_decades:.2f} decades of compute beyond its fit."
        )
        if self.ensemble and self.ensemble["test_mre"] < row["test_mre"]:
            text += (
                f" The mean of {', '.join(self.ensemble['laws'])} backtests better "
                f"(MRE {self.ensemble['test_mre']:.2f} %)."
            )
        return text


def applicable_laws(table: pd.DataFrame, spec: FitSpec) -> list[str]:
    """Every registered law that can be fitted to this selection (each law says what it needs)."""
    rows, resolved = design(table, spec)
    has_gold = bool(((table["benchmark"] == spec.benchmark) & (table["metric"] == resolved.gold_metric)).any())
    return [
        name for name in available_laws() if not get_law(name).applicable(rows, proxy=spec.proxy, has_gold=has_gold)
    ]


def recommend(
    table: pd.DataFrame,
    benchmark: str,
    metric: str | None = None,
    k: int | None = None,
    *,
    laws: list[str] | None = None,
    target_flops: float | None = None,
    tpr: float | None = None,
    proxy: str | None = None,
    n_boot: int = 200,
    seed: int = 0,
    n_jobs: int | None = None,
    holdout_fraction: float = HOLDOUT_FRACTION,
) -> Recommendation:
    """Backtest each applicable law (nested: only runs cheaper than ``target_flops``), holding out
    the top ``holdout_fraction`` of the log-compute range; rank by held-out MRE, then by how far
    90 % coverage is from nominal."""
    base = FitSpec("power", benchmark, metric, k=k, proxy=proxy, seed=seed, tpr=tpr)
    data = table if target_flops is None else table[table["flops"] < target_flops]
    rows, _ = design(data, base)
    log_c = np.log10(rows["flops"].to_numpy(float))
    span = log_c.max() - log_c.min()
    if span < 1.0:
        raise InsufficientDataError(f"{benchmark}: runs span {span:.2f} decades of compute; law selection needs more.")
    threshold = float(10 ** (log_c.max() - holdout_fraction * span))
    decades = float(log_c.max() - np.log10(threshold))
    records, predictions, failures = [], {}, []
    for law in laws or applicable_laws(data, base):
        spec = FitSpec(law, benchmark, metric, k=k, proxy=proxy, seed=seed)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bt = backtest(data, spec, threshold=threshold, tpr=tpr, n_boot=n_boot, seed=seed, n_jobs=n_jobs)
        except BenchcastError as exc:
            failures.append(f"{law}: {exc}")
            continue
        m = bt.metrics
        records.append(
            {
                "law": law,
                "test_mre": m["test_mre"],
                "test_mae": m["test_mae"],
                "coverage50": m.get("coverage50", np.nan),
                "coverage90": m.get("coverage90", np.nan),
                "train_r2": m["train_r2"],
                "n_fit": m["n_train"],
                "n_test": m["n_test"],
                "converged": bt.fit.converged,
                "at_bound": ",".join(bt.fit.diagnostics["at_bound"]),
            }
        )
        test = bt.predictions[bt.predictions["side"] == "test"]
        predictions[law] = test.set_index(["run", "k"])[["true", "predicted"]]
    if not records:
        raise BenchcastError(f"{benchmark}: no law could be backtested ({'; '.join(failures)}).")
    ranking = pd.DataFrame(records)
    ranking["coverage_gap"] = (ranking["coverage90"] - 0.9).abs()
    ranking = ranking.sort_values(["test_mre", "coverage_gap"], na_position="last").reset_index(drop=True)
    ensemble = None
    top = [law for law in ranking["law"][:3] if law in predictions]
    if len(top) >= 2:
        joined = pd.concat([predictions[law]["predicted"].rename(law) for law in top], axis=1, join="inner")
        true = predictions[top[0]]["true"].reindex(joined.index)
        for size in (2, 3)[: len(top) - 1]:
            mean = joined[top[:size]].mean(axis=1)
            candidate = {"laws": top[:size], "test_mre": mre(true, mean), "test_mae": mae(true, mean)}
            if ensemble is None or candidate["test_mre"] < ensemble["test_mre"]:
                ensemble = candidate
    return Recommendation(benchmark, ranking, threshold, decades, str(ranking["law"].iloc[0]), ensemble, failures)
