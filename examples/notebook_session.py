# %% [markdown]
# # A notebook session with benchcast
#
# Fit, forecast, plot and display results from Python, as one would in Jupyter (the `# %%` cells open
# as a notebook in VS Code, or with `jupytext --to notebook`). Run as a script from the repository root:
#
#     python examples/notebook_session.py [DATA] [OUT]
#
# DATA defaults to the Apple DCLM runs beside the clone (`../shared/data/apple-downstream/...`);
# figures go to OUT (default `benchcast-notebook/`). In a notebook, each result shows as a table
# (`_repr_html_`) when it is the last expression of a cell; here `show` prints what the cell would show.

# %%
import os
import sys
from pathlib import Path

import matplotlib.pyplot as plt

import benchcast as bc
from benchcast import FitSpec, Uncertainty

ROOT = Path(__file__).resolve().parents[1]
DATA = (
    Path(sys.argv[1])
    if len(sys.argv) > 1
    else ROOT.parent / "shared/data/apple-downstream/metrics_dclm_data_mixture.subset.csv"
)
OUT = Path(sys.argv[2]) if len(sys.argv) > 2 else Path("benchcast-notebook")
OUT.mkdir(parents=True, exist_ok=True)
N_BOOT = int(os.environ.get("BENCHCAST_N_BOOT", "200"))  # replicates behind every interval (recommend's default)


def show(result) -> None:
    """What a notebook cell shows: the result's table (its `_repr_html_`); here, its text."""
    print(result, end="\n\n")


# %% [markdown]
# ## The data: one validated table

# %%
table = bc.load(DATA)
facts = bc.summary(table)  # what `benchcast inspect` prints, as a dict
print(f"{facts['runs']} runs, {facts['flops_min']:.3g} .. {facts['flops_max']:.3g} FLOPs, TPR {facts['tpr']}")

# %% [markdown]
# ## The default forecast: the ensemble of `power_floor` and `bnsl_monotone`
#
# `forecast_default` is `benchcast forecast DATA -b ...`: each target is forecast from the runs cheaper
# than it, with the laws weighted by their rolling-origin forecasts inside those runs and a prediction
# interval widened by the extrapolation error measured there. `recommend` gives the same number with
# the comparison of laws behind it.

# %%
default = bc.forecast_default(
    table,
    FitSpec("power", "arc_easy", metric="acc_norm", tpr=20),
    flops=[1e22, 1e23],
    uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, levels=0.9),
)
show(default)
advice = bc.recommend(
    table,
    FitSpec("power", "arc_easy", metric="acc_norm", tpr=20),
    target_flops=1e23,
    uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, levels=0.9),
)
show(advice)

# %%
runs = bc.select(table, "arc_easy", "acc_norm", tpr=20)
ax = default.plot(runs=runs)
ax.figure.savefig(OUT / "default_forecast.svg")

# %% [markdown]
# ## One law, fitted and inspected
#
# A fit explains itself: parameters with standard errors, convergence, the law's own constraints
# that are active, and the runs it dropped and why.

# %%
fit = bc.fit(table, law="power_floor", benchmark="arc_easy", metric="acc_norm", tpr=20, max_flops=6e21)
print(fit.report())
show(fit.diagnostics)

# %%
fc = bc.forecast(fit, flops=[1e22, 1e23], uncertainty=Uncertainty(n_boot=N_BOOT, seed=0, levels=0.9))
show(fc)

# %% [markdown]
# ## Plots on your own axes
#
# Every result has `plot(ax=None)`: it draws into the Axes you give and returns it, so the figure is yours
# to restyle. These are the functions the command line and the report draw with.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(15, 4.5), layout="constrained")
fit.plot(ax=left)
fc.plot(ax=right, fit=fit)
right.set_title("power_floor forecast, fitted on C ≤ 6e21 FLOPs")
fig.savefig(OUT / "fit_and_forecast.png", dpi=200)

# %% [markdown]
# ## Backtests: judged on runs the fit never saw

# %%
spec = bc.FitSpec("power_floor", "arc_easy", "acc_norm")
replicates = Uncertainty(N_BOOT, seed=0)
bt_floor = bc.backtest(table, spec, threshold=6e21, tpr=20, uncertainty=replicates)
bt_bnsl = bc.backtest(table, spec.replace(law="bnsl_monotone"), threshold=6e21, tpr=20, uncertainty=replicates)
show(bt_floor)
ax = bt_floor.plot()
bt_bnsl.plot(ax=plt.subplots(layout="constrained")[1]).figure.savefig(OUT / "backtest_bnsl_monotone.pdf")
ax.figure.savefig(OUT / "backtest_power_floor.png", dpi=200)

# %% [markdown]
# ## The forecast distribution itself
#
# `ScoreDraws` holds the bootstrap draws per point: any level, any quantile.

# %%
draws = bc.bootstrap(fit, uncertainty=Uncertainty(n_boot=N_BOOT, seed=0)).draws(flops=[1e23])
lower50, upper50 = draws.interval(0.5)
upper95 = draws.quantile(0.95)[0]
print(f"50 % bootstrap interval at 1e23 FLOPs: [{lower50[0]:.4f}, {upper50[0]:.4f}]; 95th percentile {upper95:.4f}")
print(f"figures written to {OUT}/")
