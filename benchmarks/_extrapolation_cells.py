"""Shared by ``extrapolation_prior.py`` and ``extrapolation_designs.py``: the four ladders, bench's
``fit_cells`` run once per ladder (cached to a pickle under /tmp), and the default ensemble rebuilt per
cell exactly as ``evaluation.strategies.plan_strategy`` + ``forecasting.strategy.blend_forecast`` build it.

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
from benchcast.forecasting.distance import members_decades, members_outside
from benchcast.forecasting.draws import ScoreDraws
from benchcast.forecasting.extrapolation import TAU_FLOOR, estimate, rolling_origin
from benchcast.forecasting.strategy import MemberForecast
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
    path = Path(f"/tmp/h30x_cells_{name}_{n_boot}_{seed}.pkl")
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
    }
    out["tpr_errors"] = {
        key: rolling_origin(o.fit, axes=("tpr",))
        for key, o in outcomes.items()
        if o.fit is not None and not o.error and out["several"][key[3]]
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


def _blend_tpr(cache: dict, key4: tuple, weights: dict) -> pd.DataFrame | None:
    frames = {}
    for law in weights:
        frame = cache["tpr_errors"].get((*key4, law))
        if frame is None or frame.empty:
            return None
        frames[law] = frame.set_index(["side", "run", "k"])
    first = next(iter(frames.values()))
    wide = pd.concat([f["predicted"].rename(law) for law, f in frames.items()], axis=1, join="inner")
    wide = wide.join(first[["tpr_decades", "true", "converged"]])
    wide["predicted"] = sum(w * wide[law].to_numpy(float) for law, w in weights.items())
    columns = ["axis", "side", "run", "k", "tpr_decades", "true", "predicted", "converged"]
    return wide.reset_index().assign(axis="tpr")[columns]


def cells(cache: dict, strategy: str = "ensemble") -> list[Cell]:
    """The default ensemble (or a fixed law fitted in the cache, e.g. ``'power'``) per cell: members, weights,
    blended errors and draws at the held-out runs."""
    out, dname = [], next(iter(cache["ladders"]))[0]
    for cutoff in cache["cutoffs"]:
        laws, fallbacks = cache["ladders"][(dname, cutoff)]
        for bench_name, metric in cache["benchmarks"]:
            key4 = (dname, bench_name, metric, cutoff)
            if key4 not in cache["held_out"]:
                continue
            cell_outcomes = {k[4]: o for k, o in cache["outcomes"].items() if k[:4] == key4}
            plan = st.plan_strategy(strategy, cell_outcomes, {}, laws, None, fallbacks)
            cell = Cell(cache["name"], bench_name, metric, plan.status)
            out.append(cell)
            if plan.status != "ok":
                continue
            held, _top = cache["held_out"][key4]
            weights = {law: float(w) for law, w in plan.weights.items() if w > 0}
            members = {
                law: MemberForecast(
                    cell_outcomes[law].predicted,
                    cell_outcomes[law].boot,
                    cell_outcomes[law].flops_max,
                    fit=cell_outcomes[law].fit,
                )
                for law in weights
            }
            flops = held["flops"].to_numpy(float)
            tpr = (held["tokens"] / held["params"]).to_numpy(float)
            _, beyond = members_decades(list(members.values()), flops, tpr)
            cell.weights, cell.errors = weights, plan.errors
            cell.tpr_errors = _blend_tpr(cache, key4, weights) if (beyond > 0).any() else None
            cell.true = held["value"].to_numpy(float)
            cell.predicted = sum(w * np.asarray(members[law].predicted, float) for law, w in weights.items())
            if any(members[law].boot is None for law in weights):
                continue
            cell.boot = ScoreDraws.blend({law: members[law].boot for law in weights}, weights).values
            cell.decades = members_outside(list(members.values()), flops)
            cell.tpr_decades = beyond
            cell.usable = st.usable(cell_outcomes, plan.weights, cell.true, bench_name)
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
