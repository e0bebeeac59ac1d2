"""Which recipe wins at a planned run: each recipe's default forecast (:func:`~benchcast.forecasting.answers.
forecast_default`, exactly as ``forecast`` gives it), the probability of each ordering from the forecasts' draws, the
effective-compute multiplier against a reference, where the curves cross, and the simplest alternative's ranking (each
recipe's best run at the largest compute every recipe with a forecast reaches) beside it."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.data.chance import chance_level, filter_margin
from benchcast.data.schema import COLUMNS
from benchcast.data.table import select
from benchcast.errors import BenchcastError, DataWarning
from benchcast.fitting.shared_shape import choose_shape, common_draws, fit_shape, shape_draws
from benchcast.fitting.spec import FitSpec
from benchcast.forecasting.answers import forecast_default
from benchcast.forecasting.bootstrap import ANSWER, Uncertainty
from benchcast.forecasting.compare_draws import BAND, _baseline, _matrix, _multipliers, _no_multipliers, _pairs
from benchcast.forecasting.draws import DRAWS, Draws, score_interval
from benchcast.forecasting.extrapolation import estimate, load_prior, widen
from benchcast.forecasting.flags import shared_shape_flags, short, uninformative
from benchcast.forecasting.targets import table_runs
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

REACH = 30.0  # the curves run to this multiple of the planned compute (a worse recipe's compute for the same score)
ERRORS = ("common", "independent")
SHAPES = ("auto", "default", "shared")
SELECTION = ("k", "tpr", "min_flops", "max_flops", "proxy")  # the keywords that are fields of the selection
MIN_SIZES = 4  # shape='auto': recipes with fewer sizes below the plan (median) borrow a shared shape
CURVE_POINTS = 60
MAX_PAIRS_SHOWN = 45  # the pairs of 10 recipes: more are shown in the terminal as neighbours in rank only


@dataclass(frozen=True, eq=False)
class Comparison(RichView):
    """Recipes compared at a planned run (:func:`compare`).

    Parameters
    ----------
    by : str
        The column naming each run's recipe.
    recipes : pandas.DataFrame
        Per benchmark and recipe: ``prediction``, ``lower``/``upper`` (at ``level``), ``flags``, ``note`` (why there
        is no forecast, and what the draws behind it are), ``warnings`` (the forecast's own, kept), ``rank``, and the
        simplest alternative's ``baseline`` score (each recipe's best run at ``baseline_flops``, the largest compute
        below the plan that every recipe with a forecast and a run below it reaches; see
        :func:`~benchcast.forecasting.compare_draws.best_at`), ``baseline_rank`` and ``baseline_note`` (why a recipe
        has no baseline).
    pairs : pandas.DataFrame
        Per benchmark and pair ``a``, ``b``: ``p_a_better``, ``decision`` (the better recipe, or ``'undecided'``),
        ``baseline_a_better``, ``disagree``, ``crosses_at`` (FLOPs) and ``reason`` where a recipe has no forecast.
    multipliers : pandas.DataFrame
        Per benchmark and recipe: ``multiplier`` = C_ref / C_recipe at the reference's planned score, its interval
        ``lower``/``upper``, ``crosses_at``; ``lower_censored``/``upper_censored`` (and ``point_censored``, ``'<'``
        or ``'>'``) where the value is a bound (the curve does not reach the score within ``REACH`` x the plan, or
        already scores it at its grid's start); ``note`` (why there is none, or what bounds it).
    level, decide : float
        The intervals' level; a pair is decided where ``p_a_better`` >= ``decide`` or <= 1 - ``decide``.
    errors : str
        ``'common'`` (replicate b's extrapolation error shared by every recipe) or ``'independent'``.
    curves : dict
        Per (benchmark, recipe): the compute grid, the prediction and its band there (what :meth:`plot` draws).
    target : dict
        The planned run: ``flops``, or ``params`` and ``tokens`` (the others None), and ``planned_flops``, its
        compute.
    """

    by: str
    recipes: pd.DataFrame
    pairs: pd.DataFrame
    multipliers: pd.DataFrame
    level: float
    decide: float
    errors: str
    curves: dict
    target: dict

    def to_frame(self) -> pd.DataFrame:
        """The recipes' table (``pairs`` and ``multipliers`` are attributes).

        Returns
        -------
        pandas.DataFrame
        """
        return self.recipes.copy()

    def to_dict(self) -> dict:
        """The three tables as JSON records (what ``benchcast compare --json`` prints).

        Returns
        -------
        dict
        """
        recipes = self.recipes.assign(flags=[short(f) for f in self.recipes["flags"]])
        tables = {"recipes": recipes, "pairs": self.pairs, "multipliers": self.multipliers}
        return jsonable(
            {
                "by": self.by,
                "target": self.target,
                "level": self.level,
                "decide": self.decide,
                "errors": self.errors,
                **{k: v.to_dict("records") for k, v in tables.items()},
            }
        )

    @property
    def title(self) -> str:
        """The recipes' table's title: the recipe column and the planned run."""
        return f"recipes ({self.by}) compared at {_target_words(self.target)}"

    @property
    def notes(self) -> list[str]:
        """The rule of the pairs' probabilities and of the decisions, the recipes without forecasts."""
        how = {
            "common": "common random numbers: replicate b's extrapolation error is one draw shared by every recipe "
            "(scaled by each recipe's own error and distance); the default forecasts' bootstraps over runs are "
            "independent, the shared shape's coefficients drawn jointly",
            "independent": "independent draws: each recipe's draws in an order of their own",
        }[self.errors]
        out = [
            f"p_a_better: the share of joint draws where a scores higher at the planned run ({how})",
            f"decided where p >= {self.decide:g} or p <= {1 - self.decide:.2g}, else undecided",
        ]
        methods = self.recipes.loc[self.recipes["method"] != "", ["benchmark", "method"]].drop_duplicates()
        out += [f"{r.benchmark}: forecasts by the {r.method}" for r in methods.itertuples() if r.method != "default"]
        budgets = self.recipes[["benchmark", "baseline_flops"]].drop_duplicates()
        out += [
            f"{r.benchmark}: baseline: each recipe's best run at {r.baseline_flops:.3g} FLOPs (the largest compute "
            f"below the plan that every recipe with a forecast and a run below it reaches; within x{BAND:g}, else "
            "interpolated in log C; a recipe with no run below the plan has none)"
            for r in budgets.itertuples()
            if np.isfinite(r.baseline_flops)
        ]
        out += [f"{r.benchmark}: {r.recipe}: {r.note}" for r in self.recipes.itertuples() if r.note]
        out += [f"{r.benchmark}: {r.recipe}: warning: {w}" for r in self.recipes.itertuples() for w in r.warnings]
        out += [f"{r.benchmark}: {r.recipe}: {r.baseline_note}" for r in self.recipes.itertuples() if r.baseline_note]
        said = self.multipliers.loc[~self.multipliers["note"].isin(["", "the reference"])]
        out += [f"{r.benchmark}: {r.recipe} vs {r.reference}: {r.note}" for r in said.itertuples()]
        return out

    def rich_items(self) -> list:
        """The recipes', pairs' and multipliers' tables, then the notes."""
        pct = int(round(self.level * 100))
        bounds = [f"{pct} % lower", f"{pct} % upper"]
        r = self.recipes.assign(rank=self.recipes["rank"].map(_rank), flags=self.recipes["flags"].map(short))
        r["baseline_rank"] = r["baseline_rank"].map(_rank)
        # a recipe not forecast says why in its own row (the notes below repeat it)
        unforecast = ~np.isfinite(r["prediction"].to_numpy(float)) & (r["flags"] == "")
        r.loc[unforecast, "flags"] = r.loc[unforecast, "note"]
        columns = ["benchmark", "recipe", "prediction", "lower", "upper", "rank", "baseline", "baseline_rank", "flags"]
        head = ["benchmark", "recipe", "forecast", *bounds, "rank", "baseline", "baseline rank", "flags"]
        items = [rich_table(self.title, head, r[columns].values.tolist())]
        p, shown = self.pairs.assign(disagree=self.pairs["disagree"].map({True: "yes", False: ""})), ""
        if len(p) > MAX_PAIRS_SHOWN:  # n recipes make n (n - 1) / 2 pairs: the terminal shows neighbours in rank
            place = {
                (bench, recipe): i
                for bench, group in self.recipes.groupby("benchmark", sort=False)
                for i, recipe in enumerate(group.sort_values("rank", kind="stable")["recipe"])
            }
            near = np.array(
                [
                    abs(place.get((bench, a), -9) - place.get((bench, b), 9)) == 1
                    for bench, a, b in zip(p["benchmark"], p["a"], p["b"], strict=True)
                ]
            )
            shown = f"pairs of recipes next in rank: {int(near.sum())} of {len(p)} (--json lists all)"
            p = p[near]
        p["crosses_at"] = p["crosses_at"].map(_flops)
        head = ["benchmark", "a", "b", "p_a_better", "decision", "baseline disagrees", "curves cross at", "reason"]
        columns = ["benchmark", "a", "b", "p_a_better", "decision", "disagree", "crosses_at", "reason"]
        items.append(rich_table(shown or "pairs", head, p[columns].values.tolist()))
        mm = self.multipliers
        m = mm.assign(
            crosses_at=mm["crosses_at"].map(_flops),
            multiplier=[_bound(v, c) for v, c in zip(mm["multiplier"], mm["point_censored"], strict=True)],
            lower=[_bound(v, "<" if c else "") for v, c in zip(mm["lower"], mm["lower_censored"], strict=True)],
            upper=[_bound(v, ">" if c else "") for v, c in zip(mm["upper"], mm["upper_censored"], strict=True)],
        )
        title = "effective-compute multipliers (C_ref / C_recipe at the reference's planned score)"
        head = ["benchmark", "recipe", "reference", "multiplier", *bounds, "crosses reference at", "note"]
        columns = ["benchmark", "recipe", "reference", "multiplier", "lower", "upper", "crosses_at", "note"]
        items.append(rich_table(title, head, m[columns].values.tolist()))
        return items + [Markup(escape(n), highlight=False) for n in self.notes]

    def plot(self, benchmark: str | None = None, axes=None):
        """Each recipe's curve and band to the planned run (marked), the crossings, and the pairwise probabilities.

        Parameters
        ----------
        benchmark : str, optional
            The benchmark drawn (default: the first).
        axes : pair of matplotlib.axes.Axes, optional
            The curves' and the matrix's panels (default: a new figure).

        Returns
        -------
        matplotlib.figure.Figure
        """
        from benchcast.plots.compare import plot_comparison  # matplotlib loads only when a figure is drawn

        return plot_comparison(self, benchmark, axes)


def _rank(value) -> str:
    """A rank as text ('—' where none)."""
    return "—" if not np.isfinite(value) else str(int(value))


def _flops(value) -> str:
    """A compute as text ('' where none)."""
    return "" if not np.isfinite(value) else f"{value:.3g}"


def _target_words(target: dict) -> str:
    """The planned run in words."""
    if target.get("params") is not None:
        return f"N = {target['params']:.3g}, D = {target['tokens']:.3g}"
    return f"C = {target['flops']:.3g} FLOPs"


def compare(
    table: pd.DataFrame,
    by: str,
    benchmark,
    metric: str | None = None,
    *,
    flops: float | None = None,
    params: float | None = None,
    tokens: float | None = None,
    reference: str | None = None,
    decide: float = 0.9,
    errors: str = "common",
    shape: str = "auto",
    uncertainty: Uncertainty = ANSWER,
    **settings,
) -> Comparison:
    """Compare the recipes of column ``by`` at one planned run: each recipe's default forecast, who wins and how sure,
    and the compute each is worth against a reference.

    Parameters
    ----------
    table : pandas.DataFrame
        The runs, with a column ``by`` naming each run's recipe.
    by : str
        The recipe column (a column of a tidy file, or of ``--metadata``).
    benchmark : str or list of str
        The benchmark(s); ``'NAME:METRIC'`` names its metric.
    metric : str, optional
        The metric of benchmarks that name none.
    flops : float, optional
        The planned run's compute.
    params, tokens : float, optional
        Instead: the planned run as N parameters on D tokens.
    reference : str, optional
        The recipe the multipliers are stated against (default: the best forecast, per benchmark).
    decide : float
        A pair's order is decided where ``p_a_better`` >= ``decide`` or <= 1 - ``decide``.
    errors : {'common', 'independent'}
        Whether replicate b's extrapolation error is shared by every recipe (common random numbers: the forecaster's
        own streams, one seed for all) or each recipe's draws are independent.
    shape : {'auto', 'default', 'shared'}
        ``'default'``: each recipe's default forecast; ``'shared'``: the joint fit of
        :mod:`benchcast.fitting.shared_shape` (one exponent for every recipe, or a line per recipe, as forecasting
        each recipe's largest size from the rest says); ``'auto'``: the joint fit where recipes have (median) fewer
        than 4 sizes below the planned run.
    uncertainty : Uncertainty
        The forecasts' uncertainty, as :func:`benchcast.forecast_default` takes it (its level: the intervals').
    **settings
        The selection's further fields (``k``, ``tpr``, ``min_flops``, ``max_flops``, ``proxy``) and further keywords
        of :func:`benchcast.forecast_default` (``flops_per_6nd``, ``n_jobs``, ``ray_address``).

    Returns
    -------
    Comparison
    """
    unc = uncertainty
    if not 0.5 < decide < 1:
        raise BenchcastError(f"decide must be in (0.5, 1), got {decide}.")
    if shape not in SHAPES:
        raise BenchcastError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}.")
    if errors not in ERRORS:
        raise BenchcastError(f"errors must be one of {', '.join(ERRORS)}, not {errors!r}.")
    if (flops is None) == (params is None or tokens is None):
        raise BenchcastError("give the planned run: flops=, or params= and tokens=.")
    names = _recipes(table, by)
    asked = [benchmark] if isinstance(benchmark, str | tuple) else list(benchmark)
    asked = [b if isinstance(b, tuple) else (b.partition(":")[0], b.partition(":")[2] or metric) for b in asked]
    settings_k = {key: settings.get(key) for key in ("k", "tpr", "min_flops", "max_flops")}
    for b, m in asked:  # a benchmark or metric no recipe has: the selection error `forecast` gives (its suggestion)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            select(table, b, m, settings_k["k"])
    chosen = {(b, m): select_each(table, by, names, b, m, **settings_k) for b, m in asked}
    shared = [b for (b, m) in asked if sum(isinstance(r, pd.DataFrame) for r in chosen[(b, m)].values()) >= 2]
    if not shared:
        raise BenchcastError(
            f"no benchmark asked ({', '.join(b for b, _ in asked)}) is measured on two or more recipes of '{by}': "
            "the recipes share no benchmark to compare them on."
        )
    if reference is not None and reference not in names:
        raise BenchcastError(f"reference {reference!r} is no recipe of '{by}' ({', '.join(map(str, names))}).")
    target = {"flops": flops, "params": params, "tokens": tokens}
    reach = (
        {"flops": [flops, flops * REACH]}
        if flops is not None
        else {"params": [params, params * REACH**0.5], "tokens": [tokens, tokens * REACH**0.5]}
    )
    job = SimpleNamespace(
        table=table, by=by, names=names, reach=reach, reference=reference, decide=decide, errors=errors, unc=unc
    )
    job.settings, job.shape, job.curves = settings, shape, {}
    parts = ([], [], [])
    for name, own in asked:
        *one, planned = _benchmark(job, name, own, chosen[(name, own)])
        for out, frame in zip(parts, one, strict=True):
            out.append(frame)
        target.setdefault("planned_flops", planned)
    recipes, pairs, multipliers = (pd.concat(p, ignore_index=True) for p in parts)
    if recipes["prediction"].isna().all():
        _refuse_no_forecast(table, by, recipes, chosen)
    return Comparison(by, recipes, pairs, multipliers, unc.level, decide, errors, job.curves, target)


def _recipes(table: pd.DataFrame, by: str) -> list:
    """The recipes of column ``by``, refused where the column is missing or holds one value."""
    if by not in table.columns:
        extra = [c for c in table.columns if c not in (*COLUMNS, "q_rand")]
        raise BenchcastError(
            f"no column '{by}' to compare recipes by; the data's other columns: {', '.join(extra) or 'none'} "
            "(lm-eval results and training logs take it from --metadata)."
        )
    names = sorted(table[by].dropna().unique(), key=str)
    if len(names) < 2:
        raise BenchcastError(
            f"column '{by}' holds {len(names)} recipe(s) ({', '.join(map(str, names))}): "
            "a comparison needs two or more."
        )
    return names


def _refuse_no_forecast(table, by, recipes, chosen) -> None:
    """No recipe of ``by`` has a forecast on any benchmark asked: refused, with the sizes its values span and why."""
    sizes = {}
    for runs in chosen.values():
        for name, rows in runs.items():
            if isinstance(rows, pd.DataFrame):
                count = int(np.unique(np.round(np.log10(rows["params"].to_numpy(float)), 1)).size)
                sizes[name] = max(sizes.get(name, 0), count)
    one = [str(n) for n, c in sizes.items() if c < 2]
    spans = (
        f"every value of '{by}' ({', '.join(one[:4])}{', ...' if len(one) > 4 else ''}) holds runs of one size, so "
        f"'{by}' looks like a column of sizes, not of recipes; "
        if sizes and len(one) == len(sizes)
        else ""
    )
    reasons = list(dict.fromkeys(str(n).removeprefix("no forecast: ") for n in recipes["note"] if n))
    hint = " Name the column that holds each run's recipe with --by." if spans else ""
    raise BenchcastError(
        f"no recipe of '{by}' has a forecast, so there is nothing to compare: {spans}"
        f"{'; '.join(reasons[:3]) or 'no forecast'}.{hint}"
    )


def select_each(table, by, names, benchmark, metric, k=None, **within) -> dict:
    """Per recipe: its runs of ``benchmark`` as :func:`~benchcast.data.table.select` gives them, or why none."""
    chosen = {}
    for name in names:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DataWarning)  # a task group's mean: its forecast says it again
                chosen[name] = select(table[table[by] == name], benchmark, metric, k, **within)
        except BenchcastError as exc:
            chosen[name] = str(exc)
    return chosen


def _benchmark(job, benchmark, metric, chosen):
    """One benchmark's three tables and the planned compute; fills ``job.curves``."""
    first = {key: values[0] for key, values in job.reach.items()}
    target = table_runs(job.table, **first, given=job.settings.get("flops_per_6nd"))
    planned = float(target.flops[0])
    sizes = [r.loc[r["flops"] < planned, "params"].nunique() for r in chosen.values() if isinstance(r, pd.DataFrame)]
    joint = job.shape == "shared" or (job.shape == "auto" and sizes and np.median(sizes) < MIN_SIZES)
    rows, draws, grids = (_joint if joint else _each)(job, benchmark, metric, chosen, target)
    frame = pd.DataFrame(rows)
    frame["rank"] = frame["prediction"].rank(ascending=False, method="min")
    budget, frame["baseline"], frame["baseline_note"] = _baseline(
        [chosen[n] for n in frame["recipe"]], planned, frame["prediction"].notna().to_numpy()
    )
    frame["baseline_flops"] = budget
    frame["baseline_rank"] = frame["baseline"].rank(ascending=False, method="min")
    point_curves = {n: (grid, job.curves[(benchmark, n)]["prediction"]) for n, (grid, _) in grids.items()}
    pairs = _pairs(frame, draws, point_curves, planned, job.decide, benchmark)
    ok = [n for n in frame.loc[frame["prediction"].notna(), "recipe"] if n in draws]
    best, reference = frame[frame["recipe"].isin(ok)], job.reference
    if reference is not None and reference not in ok:  # never silently swapped for another recipe
        mults = _no_multipliers(benchmark, reference, frame, f"reference {reference} has no forecast on {benchmark}")
    elif not ok:
        mults = _no_multipliers(benchmark, None, frame, "no recipe has a forecast")
    else:
        ref = reference if reference is not None else best.loc[best["prediction"].idxmax(), "recipe"]
        mults = _multipliers(benchmark, ref, draws, grids, point_curves, planned, job.unc.level, frame)
    return frame, pairs, mults, planned


def _row(benchmark, name, chosen) -> dict:
    """A recipe's row before its forecast."""
    row = {
        "benchmark": benchmark,
        "recipe": name,
        "metric": "",
        "n_runs": 0,
        "method": "",
        "prediction": np.nan,
        "lower": np.nan,
        "upper": np.nan,
        "flags": (),
        "note": "",
        "warnings": (),
    }
    if isinstance(chosen, pd.DataFrame):
        row["metric"], row["n_runs"] = str(chosen["metric"].iloc[0]), int(chosen["run"].nunique())
    else:
        row["note"] = f"no forecast: {chosen}"
    return row


def _each(job, benchmark, metric, chosen, target):
    """Each recipe's default forecast (the one forecaster, as ``forecast`` gives it) and its draws along compute."""
    rows, draws, grids, unc, settings, errors = [], {}, {}, job.unc, job.settings, job.errors
    for i, name in enumerate(job.names):
        row = _row(benchmark, name, chosen[name])
        rows.append(row)
        if row["note"]:
            continue
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # kept in the recipe's row and the notes, once each
                chosen_runs = {key: settings[key] for key in SELECTION if key in settings}
                spec = FitSpec("power", benchmark, metric, **chosen_runs)
                rest = {key: value for key, value in settings.items() if key not in SELECTION}
                runs = job.table[job.table[job.by] == name]
                out = forecast_default(runs, spec, curves="confidence", **job.reach, uncertainty=unc, **rest)
        except BenchcastError as exc:
            row["note"] = f"no forecast: {exc}"
            continue
        finally:
            row["warnings"] = tuple(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
        point = out.take([0])
        lower, upper = point.interval(unc.level)
        row.update(
            method="default",
            prediction=float(point.prediction[0]),
            lower=float(lower[0]),
            upper=float(upper[0]),
            flags=tuple(point.flags[0]),
            note=point.meta.note,
        )
        curve = list(out.curves.values())[-1] if np.isfinite(row["prediction"]) and out.curves else None
        values, cut = (None, "") if curve is None else _matrix(curve)
        if values is None:
            row["note"] = row["note"] or "no draws behind the forecast (no interval): left out of the pairs"
            continue
        grid = curve.runs.flops
        at = int(np.argmin(np.abs(np.log(grid) - np.log(out.runs.flops[0]))))
        law, law_cut = _matrix(curve, "confidence")  # the law's curve (no new run's residual): the multipliers' draws
        said = [cut or law_cut]
        if law is None or law.shape != values.shape:
            law = values
            said.append("multipliers from the prediction draws (a new run's residual included): no law draws")
        row["note"] = "; ".join(n for n in (row["note"], *said) if n)
        values, law = _order(values, errors, unc.seed, i), _order(law, errors, unc.seed, i)
        draws[name], grids[name] = values[:, at], (grid, law)
        lo, hi = curve.interval(0.9)
        job.curves[(benchmark, name)] = {
            "flops": grid,
            "prediction": curve.prediction,
            "lower": lo,
            "upper": hi,
            "runs": chosen[name][["flops", "value"]],
        }
    return rows, draws, grids


def _order(values: np.ndarray, errors: str, seed: int, i: int) -> np.ndarray:
    """A recipe's draws in their own order (``errors='independent'``) or as made (common random numbers)."""
    return values if errors == "common" else values[np.random.default_rng([seed, i, 52]).permutation(len(values))]


def _joint(job, benchmark, metric, chosen, target):
    """The shared shape fitted to every recipe's runs below the plan, widened as the default's draws are."""
    names, unc, errors, planned = job.names, job.unc, job.errors, float(target.flops[0])
    rows = [_row(benchmark, n, chosen[n]) for n in names]
    pts, chance, why, fitted = _points(names, chosen, benchmark, planned)
    target_tpr, target_n = float(target.tpr[0]), float(target.params[0])
    for i, row in enumerate(rows):
        if not row["note"] and i not in chance:
            row["note"] = f"no forecast: {why.get(i, 'no run below the planned run')}"
    kind, words = choose_shape(pts, chance)
    shape = fit_shape(pts, kind) if len(chance) > 1 else None
    if shape is None:
        few = f"the joint fit needs two or more recipes with runs above chance + margin; {len(chance)} has them"
        reason = f"the joint fit ({kind}) has no residual degree of freedom" if len(chance) > 1 else few
        for row in rows:
            row["note"] = row["note"] or f"no forecast: {reason}"
        return rows, {}, {}
    grid = np.unique(np.append(np.geomspace(10 ** pts[:, 1].min(), planned * REACH * 1.5, CURVE_POINTS), planned))
    at, x = int(np.searchsorted(grid, planned)), np.log10(grid)
    common = common_draws(shape, DRAWS, np.random.default_rng([unc.seed, 52]))  # parametric: cheap, many
    model = estimate(None, load_prior())
    draws, grids = {}, {}
    for i, q in chance.items():
        if kind == "separate" and len(np.unique(pts[pts[:, 0] == i, 1])) < 2:
            rows[i]["note"] = "no forecast: one size, no line of its own"
            continue
        z, residual = shape_draws(shape, i, x, common, np.random.default_rng([unc.seed, 52, i]))
        decades = np.maximum(x - shape.tops[i][0], 0)
        values, law = (q + (1 - q) * np.exp(-np.exp(v)) for v in (z + residual, z))
        if unc.interval == "extrapolation":
            values, law = (widen(v, decades, model, unc.seed) for v in (values, law))
        values, law = _order(values, errors, unc.seed, i), _order(law, errors, unc.seed, i)
        point = q + (1 - q) * np.exp(-np.exp(shape.predict(i, x)))
        (lo, hi), band = score_interval(Draws(values), unc.level), score_interval(Draws(values), 0.9)
        flags = shared_shape_flags(
            fitted[i],
            planned,
            target_tpr if np.isfinite(target_tpr) else None,
            target_n if np.isfinite(target_n) else None,
        )
        # the 90 % band at the plan by the rule every forecast's is flagged by (no refits here: parametric draws)
        wide = uninformative(float(band[0][at]), float(band[1][at]), q)
        flags = (*flags, wide) if wide is not None else flags
        rows[i].update(method=words, prediction=float(point[at]), lower=float(lo[at]), upper=float(hi[at]), flags=flags)
        draws[names[i]], grids[names[i]] = values[:, at], (grid, law)
        runs = chosen[names[i]][["flops", "value"]]
        job.curves[(benchmark, names[i])] = {
            "flops": grid,
            "prediction": point,
            "lower": band[0],
            "upper": band[1],
            "runs": runs,
        }
    return rows, draws, grids


def _points(names, chosen, benchmark, planned, margin=None) -> tuple[np.ndarray, dict, dict, dict]:
    """The joint fit's points (recipe, log10 C, log(-log Q')), chance levels, why none, and their runs."""
    points, chance, why, fitted = [], {}, {}, {}
    for i, name in enumerate(names):
        runs = chosen[name]
        runs = runs[runs["flops"] < planned] if isinstance(runs, pd.DataFrame) else runs
        if not isinstance(runs, pd.DataFrame) or not len(runs):
            continue
        level = chance_level(benchmark, str(runs["metric"].iloc[0]), table=runs)
        if not level.known:
            why[i] = f"chance level unknown ({level.source}); the joint fit needs it: give --q-rand"
            continue
        q = level.value
        given = runs["margin"].dropna().unique() if "margin" in runs.columns else ()
        m = filter_margin(benchmark, margin if margin is not None else (given[0] if len(given) == 1 else None))
        best = runs.groupby("flops")["value"].max()  # each size's best run (its best settings), as the baseline's
        share = (best.to_numpy(float) - q) / (1 - q)
        keep = (best.to_numpy(float) > q + m) & (share < 1)  # log(-log Q') needs Q' below 1
        if not keep.any():
            why[i] = f"no run above chance + margin ({q:.3g} + {m:.3g}) below the planned run"
            continue
        points += [(i, np.log10(c), np.log(-np.log(v))) for c, v in zip(best.index[keep], share[keep], strict=True)]
        chance[i] = q
        fitted[i] = runs[runs["flops"].isin(best.index[keep])]
    return np.array(points, float).reshape(-1, 3), chance, why, fitted


def _bound(value: float, censored) -> str:
    """A multiplier as text: ``< x`` / ``> x`` where it is a bound, '' where none."""
    if not np.isfinite(value):
        return ""
    text = f"1/{1 / value:.3g}" if value < 1 else f"{value:.3g}"
    return {"<": f"< {text}", ">": f"> {text}"}.get(censored, text)
