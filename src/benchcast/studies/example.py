"""The main job of the bundled example: fit the synthetic ladder's benchmarks below a threshold,
forecast the larger runs against the true laws, save the fits and a figure. The forecasts shown are the
package's default (the ensemble of the laws with support, with its 90 % prediction interval, as
``forecast DATA`` gives it from the runs below the threshold) beside the one law the fits are saved for."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.data.example import EXAMPLE_THRESHOLD, TRUE_LAWS, load_example, true_score
from benchcast.evaluation.backtest import backtest
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.answers import forecast_default
from benchcast.forecasting.bootstrap import Uncertainty
from benchcast.forecasting.forecast import bound_column
from benchcast.utils.jsonable import jsonable
from benchcast.utils.parallel import parallel_map
from benchcast.utils.rich_view import Markup, RichView, rich_table

BENCHMARK_COLUMNS = ["benchmark", "metric", "fitted", "held out", "R2 (fit)", "MAE", "MRE %"]
FORECAST_COLUMNS = ["benchmark", "run", "flops", "observed", "default", "90 % lower", "90 % upper", "law", "true law"]
DEFAULT_LEVEL, EXAMPLE_REPLICATES = 0.9, 200  # fewer than the default's 1500 per law: the job stays a few seconds


@dataclass
class ExampleResult(RichView):
    """What the bundled example measured: each benchmark's backtest and the held-out forecasts."""

    law: str
    threshold: float
    benchmarks: list[dict]
    forecasts: list[dict]
    figure: str
    out_dir: str
    weights: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Every field (what ``example --json`` prints)."""
        return jsonable({f.name: getattr(self, f.name) for f in fields(self)})

    def _benchmark_rows(self) -> list[list]:
        """The per-benchmark table's rows."""
        keys = ["benchmark", "metric", "n_train", "n_test", "train_r2", "test_mae", "test_mre"]
        return [[b[key] for key in keys] for b in self.benchmarks]

    def to_frame(self) -> pd.DataFrame:
        """One row per benchmark: runs fitted and held out, R2 of the fit, MAE and MRE % of the forecasts."""
        return pd.DataFrame(self._benchmark_rows(), columns=BENCHMARK_COLUMNS)

    @property
    def title(self) -> str:
        return f"Backtest of '{self.law}' on the bundled ladder (fit C <= {self.threshold:.1e})"

    @property
    def notes(self) -> list[str]:
        """What the forecasts are, and where the figure and the fits were saved."""
        mixes = "; ".join(
            f"{b}: " + ", ".join(f"{law} {w:.2f}" for law, w in ws.items()) for b, ws in self.weights.items()
        )
        return [
            f"default: the package's default strategy (the ensemble, as `forecast DATA --n-boot {EXAMPLE_REPLICATES}` "
            f"gives it) from the runs at or below {self.threshold:.2g} FLOPs, with its {DEFAULT_LEVEL:.0%} prediction "
            f"interval ({EXAMPLE_REPLICATES} bootstrap replicates per law); weights {mixes}. law: '{self.law}' alone "
            "(its fits are saved).",
            f"figure: {self.figure}; fits: {self.out_dir}/fit-*.json",
        ]

    def rich_items(self) -> list:
        """The backtest per benchmark, the held-out forecasts, and where the figure and fits are."""
        held = "Forecasts for the held-out runs: the default with its 90 % interval, and the law"
        forecasts = [
            [f["benchmark"], f["run"], f"{f['flops']:.3g}", f["true"], f.get("default", np.nan)]
            + [f.get("default_lower", np.nan), f.get("default_upper", np.nan), f["predicted"], f["truth_law"]]
            for f in self.forecasts
        ]
        return [
            rich_table(self.title, BENCHMARK_COLUMNS, self._benchmark_rows()),
            rich_table(held, FORECAST_COLUMNS, forecasts),
            *(Markup(escape(note)) for note in self.notes),
        ]


def _benchmark_job(law: str, item: tuple) -> tuple:
    """One benchmark of the example: its backtest of ``law`` and the default's forecasts of the held-out runs."""
    bench, metric = item
    table = load_example()
    below = table[table["flops"] <= EXAMPLE_THRESHOLD]  # what the default may see: the runs below the threshold
    bt = backtest(table, FitSpec(law=law, benchmark=bench, metric=metric), threshold=EXAMPLE_THRESHOLD)
    test = bt.predictions[bt.predictions["side"] == "test"]
    unc = Uncertainty(EXAMPLE_REPLICATES, levels=DEFAULT_LEVEL)
    made = forecast_default(
        below, FitSpec("power", bench, metric), flops=test["flops"].unique(), uncertainty=unc, n_jobs=1
    )
    bounds = {bound_column(side, DEFAULT_LEVEL): side for side in ("lower", "upper")}
    weights = next((m.weights for m in made.metas if m.weights), {})
    return bt, made.to_frame().rename(columns=bounds).set_index("flops"), weights


def run_example(
    out_dir: str | Path = "benchcast-example",
    law: str = "power",
    figure_format: str = "png",
    dpi: int | None = None,
    n_jobs: int | None = None,
) -> ExampleResult:
    """The main job end to end: fit below the threshold, forecast the larger runs, report errors, save the fits."""
    from benchcast.plots.options import check_figure_options

    figure_format, dpi = check_figure_options(figure_format, dpi)  # before any work
    from benchcast.plots.results import interval_bars
    from benchcast.plots.style import legend_outside, panel_grid, save_figure

    out_dir = Path(out_dir)
    items = [(bench, metric) for bench, (metric, *_) in TRUE_LAWS.items()]
    done = parallel_map(partial(_benchmark_job, law), items, n_jobs=n_jobs, description="example", progress=False)
    results, forecasts, weights = [], [], {}
    fig, axes = panel_grid(len(TRUE_LAWS), 4.2, 3.4, max_cols=3)
    for ax, (bench, metric), (bt, default, weights[bench]) in zip(axes, items, done, strict=True):
        bt.fit.save(out_dir / f"fit-{bench}.json")
        test = bt.predictions[bt.predictions["side"] == "test"]
        for row in test.itertuples():
            at = default.loc[row.flops]
            forecasts.append(
                {
                    "benchmark": bench,
                    "run": row.run,
                    "flops": row.flops,
                    "true": row.true,
                    "predicted": row.prediction,
                    "default": float(at["prediction"]),
                    "default_lower": float(at["lower"]),
                    "default_upper": float(at["upper"]),
                    "truth_law": float(true_score(bench, row.flops)),
                }
            )
        results.append({"benchmark": bench, "metric": metric, "params": bt.fit.params, **bt.metrics})
        bt.plot(ax, title=f"synthetic {bench}, {metric}", legend="below")
        shown = default.reset_index()
        bars = ("flops", "prediction", "lower", "upper")
        interval_bars(ax, *(shown[c].to_numpy(float) for c in bars), "black", "default (ensemble) 90 % interval", lw=1)
        ax.scatter(
            shown["flops"], shown["prediction"], marker="*", s=60, color="black", zorder=6, label="default forecast"
        )
        grid = np.geomspace(*ax.get_xlim(), 200)
        ax.plot(grid, true_score(bench, grid), color="0.5", ls=":", lw=1, label="true law")
        legend_outside(ax, "below")  # every panel: each has its own dropped runs and reasons
    fig.suptitle(f"{law} fitted below {EXAMPLE_THRESHOLD:.2g} FLOPs on the bundled synthetic ladder", fontsize=10)
    figure = save_figure(fig, out_dir / f"example.{figure_format}", figure_format, dpi)
    return ExampleResult(law, EXAMPLE_THRESHOLD, results, forecasts, str(figure), str(out_dir), weights)
