"""Shared by ``extrapolation_prior.py`` and ``extrapolation_designs.py``: the four ladders, bench's
``fit_cells`` run once per ladder (cached to a pickle under /tmp), and the default ensemble rebuilt per
cell exactly as bench builds it (``evaluation.strategies.strategy_ensemble``, ``Ensemble.predict``'s draws).

Everything a cell's design may use comes from its training runs (the rolling-origin forecasts inside
them); the held-out rows are only scored.
"""

from __future__ import annotations

import pickle
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from benchcast.data.readers import load
from benchcast.errors import InsufficientDataError
from benchcast.evaluation import strategies as st
from benchcast.evaluation.bench import fit_cells
from benchcast.evaluation.bench_cells import Dataset, score_benchmarks
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.extrapolation import TAU_FLOOR, estimate
from benchcast.forecasting.targets import distances, frame_runs
from benchcast.laws.questions import spans_tprs
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
    path = Path(f"/tmp/benchcast_cells_{name}_{n_boot}_{seed}.pkl")
    if path.exists() and not refresh:
        return pickle.loads(path.read_bytes())
    data = dataset(name)
    ladders = st.cell_ladders([data])
    extra = {data.name: tuple(dict.fromkeys(sum((sum(p, ()) for p in ladders.values()), ())))}
    start = time.perf_counter()
    outcomes, _, held_out = fit_cells(
        [data], (), choosers=[], n_boot=n_boot, seed=seed, n_jobs=n_jobs, progress=False, extra_laws=extra
    )
    out = {
        "name": name,
        "benchmarks": data.benchmarks,
        "cutoffs": data.cutoffs,
        "ladders": ladders,
        "several": {c: spans_tprs(st.runs_of(data, c)) for c in data.cutoffs},
        "outcomes": outcomes,
        "held_out": held_out,
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
    (:func:`benchcast.evaluation.strategies.strategy_ensemble`): members, weights, blended rolling-origin forecasts,
    and the blended bootstrap draws and distances at the held-out runs, as ``Ensemble.predict`` makes them before
    it widens them (here each design widens them)."""
    out, dname = [], next(iter(cache["ladders"]))[0]
    unc = Uncertainty(cache["n_boot"], cache.get("seed", 0))
    for cutoff in cache["cutoffs"]:
        laws, fallbacks = cache["ladders"][(dname, cutoff)]
        for bench_name, metric in cache["benchmarks"]:
            key4 = (dname, bench_name, metric, cutoff)
            if key4 not in cache["held_out"]:
                continue
            cell_outcomes = {k[4]: o for k, o in cache["outcomes"].items() if tuple(k[:4]) == key4}
            made, _ = st.strategy_ensemble(strategy, cell_outcomes, {}, laws, None, fallbacks)
            cell = Cell(cache["name"], bench_name, metric, made if isinstance(made, str) else "ok")
            out.append(cell)
            if isinstance(made, str):
                continue
            held, _top = cache["held_out"][key4]
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
            draws = made._draws(runs, unc, "prediction", extra)  # the draws predict widens (a study of widenings)
            if draws is None:
                continue
            cell.boot, cell.decades, cell.tpr_decades = draws.values, outside, beyond
            cell.usable = st.usable(made, cell.true, bench_name)
    return out


def own_models(cell_list: list[Cell], *, drift: bool, tails: bool = False) -> dict:
    """Each cell's own error model (no pooling; cells with fewer than MIN_ORIGINS origins left out)."""
    out = {}
    for cell in cell_list:
        if cell.status != "ok" or cell.errors is None:
            continue
        try:
            out[cell.label] = estimate(with_tpr(cell), drift=drift, tails=tails)
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
        },  # fmt: skip
    }
