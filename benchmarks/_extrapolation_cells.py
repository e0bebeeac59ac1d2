"""Shared by ``extrapolation_prior.py`` and ``extrapolation_designs.py``: the four ladders, bench's
``fit_cells`` run once per ladder (cached to a pickle under /tmp), and the default ensemble rebuilt per
cell exactly as bench builds it (a strategy value's ``make``, ``Ensemble.predict``'s draws).

Everything a cell's design may use comes from its training runs (the rolling-origin forecasts inside
them); the held-out rows are only scored.
"""

from __future__ import annotations

import pickle
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.readers import load
from benchcast.errors import InsufficientDataError
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench import Dataset, fit_cells, make_cells, score_benchmarks
from benchcast.fitting.metrics import usable_points
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.extrapolation import (
    BENCH_ORIGINS,
    MIN_ORIGINS,
    PRIOR_ORIGINS,
    TAU_FLOOR,
    ErrorModel,
    Prior,
    _shrunk,
    _tau,
    _weights,
    log_errors,
    tpr_scale,
)
from benchcast.forecasting.targets import distances, frame_runs
from benchcast.studies.presets import preset_dataset

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
APPLE = DATA / "apple-downstream"
LADDERS = ("dclm", "c4", "dclm-tpr", "pythia")
# ladders measured on one file share runs: a prior "leaving a ladder out" leaves its whole file out
FILE_OF = {"dclm": "dclm", "dclm-tpr": "dclm", "c4": "c4", "pythia": "pythia"}
PYTHIA_CUTOFF = 3e21  # the 5 smallest Pythia models are fitted, the 3 largest held out


def dataset(name: str) -> Dataset:
    """One ladder as bench sees it."""
    if name == "dclm":
        return preset_dataset("apple-dclm", APPLE)
    if name == "c4":
        return preset_dataset("apple-c4", APPLE)
    if name == "dclm-tpr":
        return preset_dataset("apple-dclm-tpr", APPLE)
    if name == "pythia":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = load(DATA / "pythia" / "zero-shot", "lm-eval", metadata=ROOT / "examples/pythia/runs.yaml")
        return Dataset("pythia", table, score_benchmarks(table), (PYTHIA_CUTOFF,))
    raise ValueError(name)


def fitted_cells(name: str, n_boot: int = 50, seed: int = 0, n_jobs: int = 2, refresh: bool = False) -> dict:
    """bench's ``fit_cells`` on one ladder (the default's candidates and fallbacks only), cached."""
    path = Path(f"/tmp/benchcast_cells2_{name}_{n_boot}_{seed}.pkl")
    if path.exists() and not refresh:
        return pickle.loads(path.read_bytes())
    data = dataset(name)
    made, ladders = make_cells([data])
    start = time.perf_counter()
    fit_cells(made, [st.Combine()], uncertainty=Uncertainty(n_boot, seed), n_jobs=n_jobs, progress=False)
    out = {
        "name": name,
        "cells": made,
        "ladders": ladders,
        "seconds": time.perf_counter() - start,
        "n_boot": n_boot,
        "seed": seed,
    }
    path.write_bytes(pickle.dumps(out))
    return out


@dataclass
class Cell:
    """The default ensemble of one (ladder, benchmark, cutoff), from the training side only."""

    ladder: str
    benchmark: str
    metric: str
    status: str
    weights: dict = field(default_factory=dict)
    errors: pd.DataFrame | None = None  # blended rolling-origin forecasts along compute (training runs)
    tpr_errors: pd.DataFrame | None = None  # blended TPR-origin forecasts (None: no TPR origin)
    true: np.ndarray | None = None
    predicted: np.ndarray | None = None
    boot: np.ndarray | None = None  # (R, P) blended bootstrap draws at the held-out runs
    decades: np.ndarray | None = None  # outside the fitted runs in compute (both directions)
    tpr_decades: np.ndarray | None = None
    usable: np.ndarray | None = None

    @property
    def label(self) -> str:
        """The benchmark's name, with its metric where a file scores it by several (Pythia)."""
        return self.benchmark if self.ladder != "pythia" else f"{self.benchmark} {self.metric}"


def cells(cache: dict, strategy: str = "ensemble") -> list[Cell]:
    """The default ensemble (or a fixed law fitted in the cache, e.g. ``'power'``) per cell, as bench builds it
    (a strategy value's ``make``): members, weights, blended rolling-origin forecasts,
    and the blended bootstrap draws and distances at the held-out runs, as ``Ensemble.predict`` makes them before
    it widens them (here each design widens them)."""
    out, unc = [], Uncertainty(cache["n_boot"], cache.get("seed", 0))
    for bench_cell in cache["cells"]:
        bench_name, metric, held = bench_cell.benchmark, bench_cell.metric, bench_cell.held
        try:
            made = st.parse_strategy(strategy).make(bench_cell)
        except st.NoForecast as why:
            out.append(Cell(cache["name"], bench_name, metric, why.status))
            continue
        cell = Cell(cache["name"], bench_name, metric, "ok")
        out.append(cell)
        runs, extra = frame_runs(held)
        _, outside, beyond = distances(runs, made.fits.values())
        errors = made.errors_
        axis = errors["axis"] if "axis" in errors else pd.Series("compute", index=errors.index)
        cell.weights = dict(made.weights_)
        cell.errors = errors[axis == "compute"]
        tpr = errors[axis == "tpr"]
        cell.tpr_errors = tpr if (beyond > 0).any() and len(tpr) else None
        cell.true = held["value"].to_numpy(float)
        cell.predicted = made.predict(runs, Uncertainty(0), extra=extra).members
        cell.predicted = sum(w * cell.predicted[law] for law, w in cell.weights.items())
        # the draws predict widens (a study of widenings): the bootstrap-only forecast's, kept by the Forecast
        boot = made.predict(runs, replace(unc, interval="bootstrap"), extra=extra).draws
        if not boot:
            continue
        _, index, draws = boot[0]
        values = np.full((draws.values.shape[0], len(runs)), np.nan)
        values[:, index] = draws.values
        cell.boot, cell.decades, cell.tpr_decades = values, outside, beyond
        q_rand = float(next(iter(made.fits.values())).spec.q_rand)
        cell.usable = usable_points(cell.true, q_rand, bench_name)
    return out


def own_models(cell_list: list[Cell], *, drift: bool, tails: bool = False) -> dict:
    """Each cell's own error model (no pooling; cells with fewer than MIN_ORIGINS origins left out)."""
    out = {}
    for cell in cell_list:
        if cell.status != "ok" or cell.errors is None:
            continue
        try:
            out[cell.label] = estimate_design(with_tpr(cell), drift=drift, tails=tails)
        except InsufficientDataError:
            continue
    return out


def with_tpr(cell: Cell) -> pd.DataFrame:
    """The cell's blended rolling-origin forecasts, along compute and (where any) along TPR."""
    frames = [cell.errors.assign(axis="compute")]
    if cell.tpr_errors is not None and len(cell.tpr_errors):
        frames.append(cell.tpr_errors)
    return pd.concat(frames, ignore_index=True)


def ladder_summary(cell_list: list[Cell]) -> dict:
    """One ladder's entry of the prior: means over its benchmarks of log tau (about the drift, and without
    drift), drift and (geometric) tau_tpr, from the training side's rolling-origin forecasts only."""
    with_drift, without = own_models(cell_list, drift=True), own_models(cell_list, drift=False)
    names = sorted(with_drift)
    if not names:
        return {"log_tau": None, "n_benchmarks": 0, "n_origins": 0}
    logs = [float(np.log(max(with_drift[b].tau, TAU_FLOOR))) for b in names]
    logs0 = [float(np.log(max(without[b].tau, TAU_FLOOR))) for b in names]
    tpr = [with_drift[b].tau_tpr for b in names if with_drift[b].tau_tpr is not None]
    return {
        "log_tau": float(np.mean(logs)),
        "log_tau_nodrift": float(np.mean(logs0)),
        "tau": float(np.exp(np.mean(logs))),
        "tau_nodrift": float(np.exp(np.mean(logs0))),
        "drift": float(np.mean([with_drift[b].drift for b in names])),
        "tau_tpr": float(np.exp(np.mean(np.log(tpr)))) if tpr else None,
        "n_benchmarks": len(names),
        "n_origins": int(sum(with_drift[b].n_origins for b in names)),
        "benchmarks": {
            b: {
                "tau": with_drift[b].tau,
                "tau_nodrift": without[b].tau,
                "drift": with_drift[b].drift,
                "tau_tpr": with_drift[b].tau_tpr,
                "n_origins": with_drift[b].n_origins,
            }
            for b in names
        },
    }


# -- the designs studied (benchmarks/extrapolation_designs.md): the package's estimate() with the drift, Student-t
# tails and the file's other benchmarks pooled in, which the package left out


def estimate_design(
    errors: pd.DataFrame | None,
    prior: Prior | None = None,
    others=None,
    *,
    drift: bool = False,
    tails: bool = False,
    prior_origins: float = PRIOR_ORIGINS,
    bench_origins: float = BENCH_ORIGINS,
) -> ErrorModel:
    """The pooling rule of the studied designs: log tau (and drift) the weighted mean of the own, the other
    benchmarks' and the prior's."""
    rows = log_errors(errors)
    n_own = int(rows["origin_decades"].nunique()) if len(rows) else 0
    parts, source = [], []  # (weight, log tau (None: own, measured about the pooled drift), drift)
    unconverged = 0
    if n_own >= MIN_ORIGINS:
        parts.append((float(n_own), None, float(np.mean(_slopes(rows)[0])) if drift else 0.0))
        source.append("own")
        unconverged = int((~rows.groupby("origin_decades")["converged"].all().astype(bool)).sum())
    others = [o for o in (others or ()) if o is not None]
    if len(others) >= 2 and bench_origins > 0:
        logs = [np.log(max(o.tau, TAU_FLOOR)) for o in others]
        parts.append((bench_origins, float(np.mean(logs)), float(np.mean([o.drift for o in others]))))
        source.append(f"benchmarks ({len(others)})")
    if prior is not None and prior_origins > 0:
        nodrift = prior.log_tau if prior.log_tau_nodrift is None else prior.log_tau_nodrift
        parts.append((prior_origins, prior.log_tau if drift else nodrift, prior.drift))
        source.append(f"prior ({len(prior.ladders)} ladder{'s' * (len(prior.ladders) != 1)})")
    if not parts:
        raise InsufficientDataError(
            f"only {n_own} inner forecast origin(s) with usable points and no prior or other benchmarks to pool: "
            "the extrapolation error cannot be estimated (the bootstrap-only interval is interval='bootstrap')."
        )
    weight = np.array([p[0] for p in parts]) / sum(p[0] for p in parts)
    slope = float(np.dot(weight, [p[2] for p in parts])) if drift else 0.0
    logs = [p[1] for p in parts]
    own = source[0] == "own"
    if own:  # the benchmark's own scatter, about the drift the model uses
        tau = _own_scale(rows, slope) if drift else _tau(rows["e"], rows["d"], _weights(rows))
        logs[0] = np.log(max(tau, TAU_FLOOR))
    own_tpr, reach = tpr_scale(errors)
    tau_tpr = _shrunk(own_tpr, reach, None if prior is None else prior.tau_tpr)
    return ErrorModel(
        float(np.exp(np.dot(weight, logs))),
        slope,
        float(max(n_own if own else 0, 2) + 1) if tails else np.inf,
        tau_tpr,
        "+".join(source),
        n_own if own else 0,
        int(len(rows)) if own else 0,
        unconverged,
        float(tau) if own else None,
    )


def _slopes(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    # each origin's drift (least-squares slope of e on d through 0), and each forecast's origin index
    index = rows.groupby("origin_decades").ngroup().to_numpy()
    e, d = rows["e"].to_numpy(float), rows["d"].to_numpy(float)
    return np.bincount(index, e * d) / np.bincount(index, d * d), index


def _own_scale(rows: pd.DataFrame, slope: float) -> float:
    # the scatter within origins about their own drift, and the origins' drifts about ``slope`` as a new
    # origin's would scatter about it, var (1 + 1/m)
    (slopes, index), d, m = _slopes(rows), rows["d"].to_numpy(float), rows["origin_decades"].nunique()
    within = _tau(rows["e"].to_numpy(float) - slopes[index] * d, d, _weights(rows))
    between = np.sum((slopes - slope) ** 2) / max(m - 1, 1) * (1 + 1 / m)
    return float(np.sqrt(within**2 + between))
