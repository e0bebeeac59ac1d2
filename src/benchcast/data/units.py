"""A table's sizes checked against physics (docs/formats.md, "Units are checked against physics"): N, D and tokens
per parameter within what a language model can be, FLOPs against 6 N D, a ``tpr`` column against D / N, scores against
[0, 1]; an error names the run, the column, the value and the likely unit."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from benchcast.errors import DataError

# N: a 100 k-parameter model is below any LM ladder (the smallest Pythia has 70 M); 1e14 is 50x beyond any trained
PARAMS_RANGE = (1e5, 1e14)
# D: Pythia's first checkpoints saw 2 M tokens; the longest published runs 15 T (1.5e13)
TOKENS_RANGE = (1e5, 1e15)
# D / N: the longest-trained small models sit near 6e4 tokens per parameter (Qwen3-0.6B on 36 T tokens); a backstop
# behind the N range (N in thousands of a 10 B model), wide enough for a one-size synthetic ladder to 1e23 FLOPs
TPR_MAX = 1e7
# C where no N and D say otherwise: 6 N D at the bounds above, and 20x beyond the largest run trained (5e26)
FLOPS_RANGE = (6.0 * PARAMS_RANGE[0] * TOKENS_RANGE[0], 1e28)
# FLOPs / (6 N D): conventions that count attention, embeddings or recomputation stay within 3x of 6 N D at ladder
# sizes (the file's own convention, FlopsConvention, then follows them); a unit slip is 1e3x or more off
FLOPS_RATIO_BAND = 3.0
# a tpr column may hold the nominal ratio of rounded sizes (Apple's C4 runs: 18 .. 22 at TPR 20) but not another one
TPR_AGREEMENT = 1.25

# what a value off by a factor most likely is: (factor of the true value it holds, its unit in words)
_FLOPS_UNITS = (
    (1e-3, "thousands of FLOPs"),
    (1e-6, "MFLOPs (1e6)"),
    (1e-9, "GFLOPs (1e9)"),
    (1e-12, "TFLOPs (1e12)"),
    (1e-15, "PFLOPs (1e15)"),
    (1.0 / 8.64e19, "PF-days (8.64e19 FLOPs)"),
    (1e3, "FLOPs multiplied by 1e3"),
    (1e9, "FLOPs read as GFLOPs (multiplied by 1e9)"),
)
_COUNT_UNITS = ((1e-3, "thousands"), (1e-6, "millions"), (1e-9, "billions"), (1e-12, "trillions"))


def _likely(factor: float, units) -> str:
    """The unit a value off by ``factor`` most likely is in (within 3x of it), as a clause of an error, or ''."""
    best = min(units, key=lambda u: abs(math.log10(factor / u[0])))
    return f" - it looks like {best[1]}" if abs(math.log10(factor / best[0])) < math.log10(3.0) else ""


# where the sizes of a ladder's runs usually lie: a count too small is in the unit that brings it here
_TYPICAL = {"params": (1e7, 1e12), "tokens": (1e8, 1e14)}


def _count_unit(value: float, column: str) -> str:
    """The units (thousands, millions...) a count below its range may be in, as a clause of an error, or ''."""
    lo, hi = _TYPICAL[column]
    units = [words for factor, words in _COUNT_UNITS if value > 0 and lo <= value / factor <= hi]
    return (
        f" - it looks like {' or '.join(units)} of {'parameters' if column == 'params' else 'tokens'}" if units else ""
    )


def check_planned(params, tokens) -> None:
    """Refuse a planned run whose N or D is below any language model's, naming the unit it likely is in."""
    for option, column, values, lo in (
        ("--params", "params", params, PARAMS_RANGE[0]),
        ("--tokens", "tokens", tokens, TOKENS_RANGE[0]),
    ):
        for value in () if values is None else [float(v) for v in values]:
            if 0 < value < lo:
                likely = _count_unit(value, column)
                likely += "?" if likely else ";"
                raise DataError(
                    f"{option} {value:g} is below {lo:.0e}, smaller than any language model{likely} give "
                    f"{column} in plain units (e.g. --params 7e9 --tokens 4e12)."
                )


def _refuse(source: str, run: str, column: str, value: float, lo: float, hi: float, likely: str) -> None:
    """Raise the one error of a size outside physics: the run, the column, its value, the range expected."""
    raise DataError(
        f"{source}: run {run!r} has {column} = {value:.4g}, outside {lo:.0e} .. {hi:.0e}, the range of any language "
        f"model{likely}; give the column in plain units (parameters, tokens, FLOPs)."
    )


def check_sizes(out: pd.DataFrame, given: pd.DataFrame, source: str) -> None:
    """Refuse runs whose sizes no language model has; ``given`` says which sizes the file gave (not derived)."""
    first = ~out["run"].duplicated().to_numpy()
    run = out["run"].to_numpy()[first]
    sizes = {c: out[c].to_numpy(float)[first] for c in ("params", "tokens", "flops", "tpr")}
    has = {c: given[c].to_numpy(bool)[first] for c in given.columns}
    for column, (lo, hi) in (("params", PARAMS_RANGE), ("tokens", TOKENS_RANGE)):
        values = sizes[column]
        for i in np.flatnonzero(has[column] & ((values < lo) | (values > hi))):
            _refuse(source, run[i], column, values[i], lo, hi, _count_unit(values[i], column))
    derived_tpr = sizes["tokens"] / sizes["params"]
    both = has["params"] & has["tokens"]
    for i in np.flatnonzero(both & (derived_tpr > TPR_MAX)):
        _refuse(source, run[i], "tokens / params", derived_tpr[i], 0.0, TPR_MAX, " - N in thousands or millions?")
    if "tpr" in has:
        agree = np.abs(np.log(sizes["tpr"] / derived_tpr)) <= math.log(TPR_AGREEMENT)
        for i in np.flatnonzero(has["tpr"] & both & ~agree):
            raise DataError(
                f"{source}: run {run[i]!r} has tpr = {sizes['tpr'][i]:.4g} but tokens / params = {derived_tpr[i]:.4g} "
                f"(D = {sizes['tokens'][i]:.4g}, N = {sizes['params'][i]:.4g}); a tpr column is D / N (within "
                f"{TPR_AGREEMENT - 1:.0%}): mend it or drop it (it is then computed)."
            )
    measured = has["flops"] & both  # FLOPs / (6 N D): within the band of 1, and within it of the runs' median
    ratio = sizes["flops"] / (6.0 * sizes["params"] * sizes["tokens"])
    for i in np.flatnonzero(measured & (np.abs(np.log(ratio)) > math.log(FLOPS_RATIO_BAND))):
        raise DataError(
            f"{source}: run {run[i]!r} has flops = {sizes['flops'][i]:.4g}, {ratio[i]:.3g} x its 6 N D "
            f"({6.0 * sizes['params'][i] * sizes['tokens'][i]:.4g} FLOPs for N = {sizes['params'][i]:.4g}, "
            f"D = {sizes['tokens'][i]:.4g}); training compute lies within {FLOPS_RATIO_BAND:g}x of 6 N D"
            + _likely(ratio[i], _FLOPS_UNITS)
            + ". Give FLOPs, or leave the column out (C = 6 N D is then used)."
        )
    median = float(np.median(ratio[measured])) if measured.any() else 1.0
    for i in np.flatnonzero(measured & (np.abs(np.log(ratio / median)) > math.log(FLOPS_RATIO_BAND))):
        raise DataError(
            f"{source}: run {run[i]!r} has flops = {ratio[i]:.3g} x its 6 N D, while the file's runs have a median "
            f"of {median:.3g} x; one file counts FLOPs one way (more than {FLOPS_RATIO_BAND:g}x apart is another "
            "unit or a typo): mend that run's flops, or leave the column out."
        )
    lo, hi = FLOPS_RANGE  # compute with no N and D to hold it against
    for i in np.flatnonzero(has["flops"] & ~both & ((sizes["flops"] < lo) | (sizes["flops"] > hi))):
        low = sizes["flops"][i] < lo
        _refuse(source, run[i], "flops", sizes["flops"][i], lo, hi, " - in GFLOPs, TFLOPs or PF-days?" if low else "")


def check_scores(values: pd.Series, runs: pd.Series, what: str, source: str) -> None:
    """Refuse scores outside [0, 1], naming the first run; values all within 0 .. 100 are called percentages."""
    outside = (~values.between(0.0, 1.0) & values.notna()).to_numpy(bool)
    if not outside.any():
        return
    row = int(np.flatnonzero(outside)[0])
    shown = values[outside]
    percent = bool(shown.between(0.0, 100.0).all() and shown.max() > 2.0)
    raise DataError(
        f"{source}: {what} must lie in [0, 1], but run {runs.iloc[row]!r} has {float(values.iloc[row]):.6g}"
        + (
            f" ({int(outside.sum())} score(s) above 1, all within 0 .. 100: percentages? divide the column by 100)."
            if percent
            else "."
        )
    )
