"""The main job of the bundled example: fit the synthetic ladder's benchmarks below a threshold,
forecast the larger runs against the true laws, save the fits and a figure."""

from __future__ import annotations

from pathlib import Path

from benchcast.data.example import EXAMPLE_THRESHOLD, TRUE_LAWS, load_example, true_score
from benchcast.evaluation.backtest import backtest
from benchcast.fitting.spec import FitSpec
from benchcast.plots.figures import curve, draw_backtest, flops_grid, panel_grid, save_figure


def run_example(out_dir: str | Path = "benchcast-example", law: str = "power") -> dict:
    """The main job end to end: fit each benchmark below the threshold, forecast the larger
    runs, report errors, save the fits and a figure. Returns a JSON-ready summary.

    Parameters
    ----------
    out_dir : str or Path
        Folder for the saved fits and ``example.png``.
    law : str
        The law fitted to every benchmark of the synthetic example.

    Returns
    -------
    dict
        ``law``, ``threshold`` (FLOPs), per-benchmark errors, the forecasts, the figure's path and ``out_dir``.
    """
    out_dir = Path(out_dir)
    table = load_example()
    results, forecasts = [], []
    fig, axes = panel_grid(len(TRUE_LAWS))
    for ax, (bench, (metric, *_)) in zip(axes, TRUE_LAWS.items(), strict=True):
        bt = backtest(table, FitSpec(law=law, benchmark=bench, metric=metric), threshold=EXAMPLE_THRESHOLD)
        bt.fit.save(out_dir / f"fit-{bench}.json")
        test = bt.predictions[bt.predictions["side"] == "test"]
        for row in test.itertuples():
            forecasts.append(
                {
                    "benchmark": bench,
                    "run": row.run,
                    "flops": row.flops,
                    "true": row.true,
                    "predicted": row.predicted,
                    "truth_law": float(true_score(bench, row.flops)),
                }
            )
        results.append({"benchmark": bench, "metric": metric, "params": bt.fit.params, **bt.metrics})
        grid = flops_grid(bt.predictions)
        draw_backtest(
            ax,
            bt.predictions,
            {law: curve(bt.fit, grid)},
            f"{bench} ({metric})",
            EXAMPLE_THRESHOLD,
            dropped=bt.fit.dropped,
        )
        ax.plot(grid, true_score(bench, grid), color="0.5", ls=":", lw=1, label="true law")
        ax.legend(fontsize=6)  # every panel: each has its own dropped runs and reasons
    figure = save_figure(fig, out_dir / "example.png")
    return {
        "law": law,
        "threshold": EXAMPLE_THRESHOLD,
        "benchmarks": results,
        "forecasts": forecasts,
        "figure": str(figure),
        "out_dir": str(out_dir),
    }
