"""Protocol 5 of SPEC §5: fit below a moving cutoff, forecast the most expensive runs, and see
how the error and every parameter move with decades of extrapolation."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.data.table import within_compute
from benchcast.errors import BenchcastError
from benchcast.evaluation.backtest import BacktestResult, _interval_metrics, _scored
from benchcast.evaluation.backtest_result import write_table_and_figure
from benchcast.evaluation.evaluate import Cutoffs, evaluate
from benchcast.evaluation.refusals import refused_cell
from benchcast.fitting.spec import FitSpec, design
from benchcast.forecasting.bootstrap import NO_INTERVAL, Uncertainty
from benchcast.laws import get_law
from benchcast.plots.labels import figure_title, metric_label
from benchcast.utils.display import WrittenView
from benchcast.utils.rich_view import Markup, RichView, rich_table

SETTLE_TOLERANCE = 0.10


@dataclass(frozen=True, eq=False)
class CutoffResult(RichView, WrittenView):
    """The cutoff backtest of one law on one benchmark: one row per cutoff. It reads as its table
    (``result["mre"]``, ``len(result)``), as the DataFrame it replaces did.

    Parameters
    ----------
    law, benchmark : str
    table : DataFrame
        One row per cutoff: cutoff and target compute, decades of extrapolation and of training
        data, MAE, MRE, interval coverage (with replicates), convergence and every parameter.
    n_boot : int
        Bootstrap replicates per cutoff (0: no intervals).
    metric : str, optional
        The metric (``pass@8`` for pass@k at k = 8), named in the figure's title.
    tpr : float, optional
        Tokens per parameter of the runs (None: all), named in the figure's title.
    interval : {'extrapolation', 'bootstrap'}
        The kind of interval whose coverage the rows hold (with ``n_boot`` > 0).
    """

    law: str
    benchmark: str
    table: pd.DataFrame
    n_boot: int = 0
    metric: str | None = None
    tpr: float | None = None
    interval: str = "extrapolation"

    def __getitem__(self, key):
        return self.table[key]

    def __len__(self) -> int:
        return len(self.table)

    def __getattr__(self, name: str):
        if name == "table" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.table, name)

    @property
    def param_names(self) -> list[str]:
        """The law's parameters, in its order."""
        return list(get_law(self.law).param_names)

    @property
    def settled(self) -> dict:
        """Per parameter: where it settles (:func:`settling`)."""
        return settling(self.table, self.param_names)

    def to_frame(self) -> pd.DataFrame:
        """One row per cutoff."""
        return self.table

    def to_dict(self) -> dict:
        """One element of ``benchcast cutoff --json``'s list (``interval``: the coverage's kind; None: none)."""
        return {
            "law": self.law,
            "cutoffs": self.table.to_dict("records"),
            "settling": self.settled,
            "interval": self.interval if self.n_boot else None,
        }

    @property
    def title(self) -> str:
        n_targets = self.table["n_target_runs"].iloc[0] if len(self.table) else 0
        return (
            f"{self.law} on {self.benchmark}: cutoff backtest "
            f"({n_targets} target run(s), replicates at the target's compute included)"
            + (
                f"; {self.interval} interval coverage in --json/--out from {self.n_boot} bootstrap replicates"
                if self.n_boot
                else ""
            )
        )

    @property
    def notes(self) -> list[str]:
        return [str(item.text).strip() for item in self.rich_items()[1:]]

    def rich_items(self) -> list:
        """The table of cutoffs, then where each parameter settles."""
        names = self.param_names
        records = self.table.to_dict("records")
        rows = [
            [f"{r['cutoff_flops']:.3g}", r["extrapolation_decades"], r["training_decades"], r["mae"], r["mre"]]
            + [refused_cell(r.get("n_refused", 0), r.get("n_held_out", 0))]
            + [r[n] for n in names]
            + [(r.get("flags") or "") + (f" ({r['at_search_limit']})" if r.get("at_search_limit") else "")]
            for r in records
        ]
        columns = ["cutoff C", "extrap. dec.", "train dec.", "MAE", "MRE %", "refused", *names, "flags"]
        items = [rich_table(self.title, columns, rows)]
        for kinds in dict.fromkeys(r.get("flags") or "" for r in records):
            if kinds:  # one line per kind of flag: its cutoffs, and the reasons at the first of them
                rows_of = [r for r in records if r.get("flags") == kinds]
                cutoffs = ", ".join(f"{r['cutoff_flops']:.3g}" for r in rows_of)
                line = f"  {kinds} at cutoff(s) {cutoffs} (at {cutoffs.split(',')[0]}: {rows_of[0]['flag_reasons']})"
                items.append(Markup(escape(line), highlight=False))
        for name, s in self.settled.items():
            items.append(
                Markup(
                    f"  {name}: within 10% of the final fit from {s['training_decades']:.2f} decades of "
                    f"training compute ({s['extrapolation_decades']:.2f} decades of extrapolation)"
                )
            )
        return items

    def plot(self, ax=None):
        """The figure of error, coverage and width, and every parameter, against decades of extrapolation."""
        from benchcast.plots.figures import plot_cutoff  # matplotlib loads only when a figure is drawn

        frame = self.table.assign(n_boot=self.n_boot) if self.n_boot else self.table
        return plot_cutoff(
            frame,
            self.param_names,
            figure_title(self.benchmark, self.metric, self.tpr, f"{self.law} cutoff backtest"),
            law=self.law,
            ax=ax,
        )

    def write(self, out: str | Path, figure_format: str = "png", dpi: int | None = None) -> None:
        """``cutoff-<law>-<benchmark>.csv`` and the figure of :meth:`plot` into the folder ``out``."""
        write_table_and_figure(out, f"cutoff-{self.law}-{self.benchmark}", self.table, self.plot, figure_format, dpi)


def cutoff_backtest(
    table: pd.DataFrame,
    spec: FitSpec,
    *,
    n_targets: int = 1,
    tpr: float | None = None,
    min_points: int | None = None,
    progress: bool | None = None,
    uncertainty: Uncertainty = NO_INTERVAL,
) -> CutoffResult:
    """Protocol 5: fit below a moving cutoff, predict the ``n_targets`` most expensive runs.

    Replicate runs at a target's compute (same C, another seed) are held out with the target,
    never fitted, so every cutoff lies below the targets and still extrapolates. Cutoffs are the
    distinct compute values of the remaining runs, from the ``min_points``-th cheapest run on.
    One row per cutoff: cutoff and target compute, decades of extrapolation
    (log10 target C / cutoff C), decades of training data, MAE, MRE and every parameter.

    Parameters
    ----------
    table : DataFrame
    spec : FitSpec
    n_targets : int
        The most expensive runs to forecast.
    tpr : float, optional
        The runs' tokens per parameter.
    min_points : int, optional
        Runs a cutoff needs below it (default: the law's parameters + 2).
    progress : bool, optional
    uncertainty : Uncertainty
        Bootstrap replicates per cutoff (0: no intervals), seed, the kind of interval whose coverage is measured
        and its levels.

    Returns
    -------
    CutoffResult
    """
    n_boot, interval = uncertainty.n_boot, uncertainty.interval
    spec = replace(spec, tpr=spec.tpr if tpr is None else tpr)
    rows, resolved = design(table, spec)
    splitter = Cutoffs(n_targets, min_points or get_law(spec.law).n_params + 2)
    try:
        by_run, replicate = splitter.targets(rows)
    except BenchcastError as exc:
        raise BenchcastError(f"{spec.benchmark}: {exc}") from None
    targets, pool = list(by_run.index[replicate]), by_run[~replicate]
    target_flops = float(np.exp(np.mean(np.log(by_run[targets].to_numpy(float)))))
    # the cutoff backtest's selection is the spec's whole selection (its compute range too), held-out side included
    within = within_compute(table, spec.min_flops, spec.max_flops)
    if spec.max_k is not None and "k" in within:  # the cutoff backtest's rows are the spec's k <= max_k, both sides
        within = within[~(within["k"].to_numpy(float) > spec.max_k)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame, models, metas = evaluate(
            spec,
            within,
            splitter,
            uncertainty=uncertainty,
            confidence=True,
            return_models=True,
            skip_failed=True,
            progress=progress,
            n_jobs=1,
        )
    records = []
    for (cutoff, split), model, meta in zip(frame.groupby("split", sort=True), models, metas, strict=True):
        result = next(iter(model.fits.values()))
        predictions, metrics = _scored(split)
        if n_boot:
            _interval_metrics(predictions, metrics, split.reset_index(drop=True), uncertainty, meta)
        bt = BacktestResult(spec.law, spec.benchmark, "cutoff", float(cutoff), result, predictions, metrics)
        records.append(
            {
                "cutoff_flops": float(cutoff),
                "target_flops": target_flops,
                "n_target_runs": len(targets),
                "extrapolation_decades": float(np.log10(target_flops / cutoff)),
                "training_decades": float(np.log10(cutoff / pool.iloc[0])),
                "n_train": result.diagnostics.n_used,
                "mae": bt.metrics["test_mae"],
                "mre": bt.metrics["test_mre"],  # over the target forecasts not refused; n_refused beside it
                "n_refused": bt.metrics["n_refused"],
                "n_held_out": bt.metrics["n_test"] + bt.metrics["n_refused"],
                # coverage, and why it is missing where the bootstrap gave no interval
                **{key: v for key, v in bt.metrics.items() if key.startswith("coverage") or key == "interval_note"},
                **({"interval": interval, **_interval_widths(bt.predictions)} if n_boot else {}),
                "converged": result.converged,
                **_flag_columns(result, bt.predictions),
                **result.params,
            }
        )
    metric = metric_label(resolved.metric, resolved.k)
    return CutoffResult(spec.law, spec.benchmark, pd.DataFrame(records), n_boot, metric, resolved.tpr, interval)


def _flag_columns(result, predictions: pd.DataFrame) -> dict:
    """A cutoff's flags: parameters at a search limit, the rules its target forecasts break, and why."""
    test = predictions[predictions["side"] == "test"]
    kinds = [k for k in dict.fromkeys(test.get("flag_kinds", pd.Series(dtype=str))) if k]
    reasons = [t for t in dict.fromkeys(test.get("flags", pd.Series(dtype=str))) if t]
    return {
        "at_search_limit": ", ".join(result.bounds.at_search_limit),
        "refused": bool(test["refused"].any()) if "refused" in test else False,
        "flags": "; ".join(kinds),
        "flag_reasons": "; ".join(reasons),
    }


def _interval_widths(predictions: pd.DataFrame) -> dict:
    """Median width of the 50 % and 90 % prediction intervals at the held-out (target) runs."""
    test = predictions[predictions["side"] == "test"]
    out = {}
    for pct in (50, 90):  # a level without bounds has no width
        width = pd.Series(test.get(f"upper{pct}", np.nan) - test.get(f"lower{pct}", np.nan), dtype=float).dropna()
        out[f"width{pct}"] = float(width.median()) if len(width) else float("nan")
    return out


def settling(cutoffs: pd.DataFrame, param_names: list[str], tolerance: float = SETTLE_TOLERANCE) -> dict:
    """Per parameter: the training decades after which every fit stays within ``tolerance`` of the final one."""
    out = {}
    if cutoffs.empty:
        return out
    ordered = cutoffs.sort_values("cutoff_flops")
    for name in param_names:
        values = ordered[name].to_numpy(float)
        final = values[-1]
        close = np.abs(values - final) <= tolerance * max(abs(final), 1e-12)
        # first index from which all later fits stay close
        bad = np.flatnonzero(~close)
        start = int(bad[-1] + 1) if bad.size else 0
        out[name] = {
            "final": float(final),
            "training_decades": float(ordered["training_decades"].iloc[start]),
            "extrapolation_decades": float(ordered["extrapolation_decades"].iloc[start]),
            "settled_before_final": bool(start < len(values) - 1),
        }
    return out
