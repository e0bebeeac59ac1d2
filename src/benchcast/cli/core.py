"""Core commands: laws, inspect, fit, predict (the library is imported inside the commands: ``--help`` loads none
of it)."""

import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from benchcast.cli.app import app
from benchcast.cli.common import console, emit_json, refuse_nothing_forecast, rich_table, user_errors
from benchcast.cli.groups import SOURCE, DataSource
from benchcast.cli.options import Benchmark, FlopsPer6ND, Json, MaxFlops, Metric, MinFlops, Proxy, Samples, Seed, Tpr
from benchcast.errors import BenchcastError, FitWarning

if TYPE_CHECKING:
    from benchcast.fitting.result import FitResult


@app.command("laws")
@user_errors
def laws_command(json: Json = False) -> None:
    """List every law in the registry with its formula, parameters and stated constraints."""
    from benchcast.laws import available_laws, get_law

    described = [get_law(name).describe() for name in available_laws()]
    if json:
        emit_json(described)
        return
    columns = ["name", "formula", "covariates", "target", "loss", "constraints", "reference"]
    rows = []
    for d in described:
        joined = {"covariates": ", ".join(d["covariates"] + d["fit_covariates"])}
        joined["constraints"] = "; ".join(d["constraints"]) or "-"
        rows.append([(d | joined)[c] for c in columns])
    console.print(rich_table("Laws", columns, rows))


@app.command("inspect")
@user_errors
def inspect_command(
    source: DataSource = SOURCE,
    every: Annotated[
        bool, typer.Option("--all", help="List every subtask of a family (MMLU, CrowS-Pairs...) on its own rows.")
    ] = False,
    samples: Samples = None,
    json: Json = False,
) -> None:
    """Show the runs, benchmarks, metrics, chance levels and compute range found in a data file."""
    from benchcast.data.chance import chance_summary
    from benchcast.data.readers import final_checkpoints
    from benchcast.data.table import summary

    table = source.read(samples=samples, checkpoints="all")
    checkpoints = checkpoint_summary(table)
    table = final_checkpoints(table, str(source.data))  # the runs are the final checkpoints, by every fit's rule
    info = summary(table)
    info |= {"checkpoints": checkpoints | {"runs_with_final": int(table["run"].nunique())}} if checkpoints else {}
    info |= read_from(table)
    info["chance"] = chance_summary(table)
    info["chance_unknown"] = [f"{b}:{m}" for b, by in info["chance"].items() for m, e in by.items() if not e["known"]]
    if json:
        emit_json(info)
        return
    tprs = ", ".join(f"{t:g} ({n})" for t, n in zip(info["tpr"], info["tpr_runs"], strict=True))
    console.print(
        f"[bold]{escape(str(source.data))}[/]: {info['runs']} runs, {info['rows']} rows; compute "
        f"{info['flops_min']:.3g} .. {info['flops_max']:.3g} FLOPs; params "
        f"{info['params_min']:.3g} .. {info['params_max']:.3g}; TPR (runs) {tprs}"
    )
    if checkpoints:
        console.print(escape(_checkpoint_text(info["checkpoints"])), highlight=False)
    if "families" in info:
        families_read = "; ".join(
            f"{f} ({e['columns'] if 'columns' in e else str(e['pairs']) + ' (benchmark, metric) pairs'}: "
            f"{', '.join(e['metrics'])})"
            for f, e in info["families"].items()
        )
        console.print(escape(f"columns read: {families_read}"), highlight=False)
    if "params_source" in info:
        sources = ", ".join(f"{source} ({n} runs)" for source, n in info["params_source"].items())
        console.print(escape(f"N (params) from: {sources}"), highlight=False)
    if info["rows_without_value"]:
        console.print(
            f"{info['rows_without_value']} row(s) without a value (a NaN score): not fitted; every fit that selects "
            "their run counts them as dropped (score is NaN)",
            highlight=False,
        )
    benchmarks = info["benchmarks"]
    families = {} if every else subtask_families(list(benchmarks))
    in_family = {name for members in families.values() for name in members}
    rows = []
    for bench, metrics in benchmarks.items():
        if bench in in_family:
            continue
        for metric, entry in metrics.items():
            level = _chance_text(info["chance"].get(bench, {}).get(metric))
            rows.append([bench, metric, entry["runs"], ",".join(map(str, entry.get("k", []))), level])
    for family, members in families.items():
        metrics = sorted({metric for name in members for metric in benchmarks[name]})
        runs = sorted({entry["runs"] for name in members for entry in benchmarks[name].values()})
        shown_runs = str(runs[0]) if len(runs) == 1 else f"{runs[0]}..{runs[-1]}"
        known = f" ({KNOWN_FAMILIES[family]})" if family in KNOWN_FAMILIES else ""
        levels = {_chance_text(e) for name in members for e in info["chance"].get(name, {}).values()}
        label = f"{family}{known}: {len(members)} subtasks"
        rows.append([label, ", ".join(metrics), shown_runs, "", " / ".join(sorted(levels))])
    console.print(rich_table("Benchmarks", ["benchmark", "metric", "runs", "k", "chance level"], rows))
    if info["chance_unknown"]:
        console.print(
            f"chance level unknown for {len(info['chance_unknown'])} score metric(s): "
            f"{escape(', '.join(info['chance_unknown'][:8]))}{' ...' if len(info['chance_unknown']) > 8 else ''}; "
            "a fit takes it as 0 and warns. Give --q-rand BENCHMARK=VALUE, a q_rand column, or lm-eval samples "
            "(--samples).",
            highlight=False,
        )
    for by in info["chance"].values():
        for entry in by.values():
            if entry["source"].startswith("conflict"):
                console.print(escape(entry["source"]), highlight=False)
    if families:
        console.print(
            "subtasks are grouped by family (fit one by its own name, e.g. "
            f"{escape(next(iter(families.values()))[0])}); --all lists every row, --json keeps everything",
            highlight=False,
        )


def checkpoint_summary(table) -> dict:
    """Checkpoints per run where a table has several steps per run ({} where it has none)."""
    if "step" not in table.columns:
        return {}
    series = table["series"] if "series" in table.columns else table["run"]
    per_run = table.groupby(series)["step"].nunique()
    return {
        "runs": int(len(per_run)),
        "checkpoints": int(per_run.sum()),
        "per_run": [int(per_run.min()), int(per_run.max())],
    }


def _checkpoint_text(c: dict) -> str:
    """The checkpoints line of ``inspect``."""
    per_run = f"{c['per_run'][0]}" if c["per_run"][0] == c["per_run"][1] else f"{c['per_run'][0]}..{c['per_run'][1]}"
    return (
        f"checkpoints: {c['checkpoints']} of {c['runs']} runs ({per_run} per run); fits use each run's final "
        f"checkpoint ({c['runs_with_final']} runs have one; the runs above are those)"
    )


def read_from(table) -> dict:
    """A training-log table's column families (columns read, metrics) and each run's N source ({} for others)."""
    from benchcast.data.training_logs import COLUMNS_READ

    out = {}
    if "family" in table.columns:
        read = dict(table.attrs.get(COLUMNS_READ) or ())
        out["families"] = {
            str(family): {
                **(
                    {"columns": int(read[family])}
                    if family in read
                    else {"pairs": int(rows[["benchmark", "metric"]].drop_duplicates().shape[0])}
                ),
                "metrics": sorted(map(str, rows["metric"].unique())),
            }
            for family, rows in table.groupby("family", sort=True)
        }
    if "params_source" in table.columns:
        by_run = table.drop_duplicates("run")
        out["params_source"] = {str(k): int(v) for k, v in by_run["params_source"].value_counts().items()}
    return out


def _chance_text(entry: dict | None) -> str:
    """A chance level as the inspect table shows it: value and the start of its source."""
    if entry is None:
        return "-"
    if not entry["known"]:
        return "conflict" if entry["source"].startswith("conflict") else "unknown"
    return f"{entry['q_rand']:.4g} ({entry['source'].split(':')[0].split(' (')[0]})"


MIN_FAMILY = 5  # benchmarks sharing a name prefix that make a family of subtasks
KNOWN_FAMILIES = {"hendrycksTest-*": "MMLU", "mmlu_*": "MMLU", "crows_pairs_*": "CrowS-Pairs"}


def subtask_families(names: list[str]) -> dict[str, list[str]]:
    """Benchmarks grouped under the shortest name prefix that MIN_FAMILY or more share, as long as it stays."""

    def sharing(prefix: str) -> set[str]:
        return {n for n in names if n == prefix or (n.startswith(prefix) and n[len(prefix)] in "-_")}

    families: dict[str, list[str]] = {}
    for name in names:
        # the name itself is a candidate too: a family's root (crows_pairs_english) belongs to it
        cuts = [i for i, char in enumerate(name) if char in "-_"] + [len(name)]
        found = None
        for cut in cuts:
            members = sharing(name[:cut])
            if found is None and len(members) >= MIN_FAMILY:
                found = (cut, members)
            elif found is not None and members == found[1]:
                found = (cut, members)  # a longer name for the same family
            elif found is not None:
                break
        if found is not None:
            prefix = name[: found[0]]
            separator = next(n[len(prefix)] for n in sorted(found[1]) if len(n) > len(prefix))
            families.setdefault(f"{prefix}{separator}*", []).append(name)
    return {family: sorted(members) for family, members in sorted(families.items())}


def print_fit(result: "FitResult", json: bool) -> None:
    if json:
        emit_json(result.to_dict())
        return
    # str() is the fit report; its section headings are its unindented lines ('Fit: ...', 'Parameters:'): bold
    for line in str(result).splitlines():
        if line and not line.startswith(" "):
            heading, colon, rest = line.partition(":")
            console.print(Text(heading + colon, style="bold underline") + Text(rest))
        else:
            console.print(Text(line), highlight=False)


def refuse_unused_settings(
    law, *, k: int | None = None, proxy: str | None = None, max_k: int | None = None, gold_metric: str = "loglikelihood"
) -> None:
    """Refuse the fit options that ``law`` has no use for (they would be dropped without a word)."""
    if k is not None and not law.per_k:
        raise BenchcastError(
            f"--k picks the one k a per-k law is fitted at; law {law.name!r} fits every k at once "
            "(bound them with --max-k)."
        )
    if proxy is not None and "proxy" not in law.fit_covariates:
        raise BenchcastError(f"--proxy is the covariate of two-stage laws; law {law.name!r} does not use one.")
    if max_k is not None and "k" not in law.covariates:
        raise BenchcastError(
            f"--max-k bounds the k of laws with k as a covariate (passk_compute); law {law.name!r} is fitted "
            "at one k: give it with --k."
        )
    if gold_metric != "loglikelihood" and "gold" not in law.covariates:
        raise BenchcastError(f"--gold-metric names the gold law's covariate; law {law.name!r} does not use one.")


def refuse_unused_proxy(laws: list[str], proxy: str | None) -> None:
    """Refuse ``--proxy`` when none of the laws compared uses one (with several, one that does is enough)."""
    from benchcast.laws import get_law

    if proxy is None or any("proxy" in get_law(name).fit_covariates for name in laws):
        return
    if len(laws) == 1:
        refuse_unused_settings(get_law(laws[0]), proxy=proxy)
    raise BenchcastError(
        f"--proxy is the covariate of two-stage laws; none of the laws given ({', '.join(laws)}) uses one: "
        "drop --proxy, or add a two-stage law with --law."
    )


@app.command("fit")
@user_errors
def fit_command(
    source: DataSource = SOURCE,
    law: Annotated[str, typer.Option("--law", "-l", help="Law name (see `benchcast laws`).")] = "power",
    benchmark: Benchmark = ...,
    metric: Metric = None,
    max_flops: MaxFlops = None,
    min_flops: MinFlops = None,
    tpr: Tpr = None,
    k: Annotated[int | None, typer.Option(help="k of a pass@k metric (per-k laws).")] = None,
    max_k: Annotated[int | None, typer.Option(help="Largest k used by passk_compute.")] = None,
    proxy: Proxy = None,
    gold_metric: Annotated[str, typer.Option(help="Metric holding the gold log-likelihood.")] = "loglikelihood",
    seed: Seed = 0,
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the fit artifact (JSON) here.")] = None,
    json: Json = False,
) -> None:
    """Fit a law to one benchmark and metric."""
    from benchcast.fitting.api import fit
    from benchcast.laws import get_law

    refuse_unused_settings(get_law(law), k=k, proxy=proxy, max_k=max_k, gold_metric=gold_metric)
    table = source.read()
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            result = fit(
                table,
                law,
                benchmark,
                metric,
                k,
                max_flops=max_flops,
                min_flops=min_flops,
                tpr=tpr,
                max_k=max_k,
                proxy=proxy,
                gold_metric=gold_metric,
                seed=seed,
            )
    except BenchcastError:  # the warnings it gave first are said with its error: they often say why
        for item in caught:
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
        raise
    for item in caught:  # the fit report lists the fit's own warnings: print each once, not also on stderr
        if json or not any(str(item.message).endswith(w) for w in result.warnings):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    if out is not None:  # the artifact holds the fit's rolling origins: a forecast of it reads them
        from benchcast.forecasting.extrapolation import with_rolling_origins

        with_rolling_origins(result).save(out)
    print_fit(result, json)
    if out is not None and not json:
        console.print(escape(f"saved fit to {out}"))


@app.command("predict")
@user_errors
def predict_command(
    fit_file: Annotated[Path, typer.Argument(help="A fit artifact written by `benchcast fit --out`.")],
    flops: Annotated[list[float] | None, typer.Option("--flops", "-C", help="Training compute (repeatable).")] = None,
    params: Annotated[float | None, typer.Option("--params", "-N", help="Parameters N.")] = None,
    tokens: Annotated[float | None, typer.Option("--tokens", "-D", help="Training tokens D.")] = None,
    k: Annotated[int | None, typer.Option(help="Attempts k (passk_compute).")] = None,
    gold: Annotated[float | None, typer.Option(help="Gold NLL G = -log GoldProb (gold law).")] = None,
    flops_per_6nd: FlopsPer6ND = None,
    json: Json = False,
) -> None:
    """Predict the score of a fitted law at a compute (or N and D) and k."""
    import numpy as np

    from benchcast.fitting.result import FitResult

    result = FitResult.load(fit_file)
    if not flops and params is None and tokens is None and gold is None:
        raise BenchcastError("give --flops C, or --params N and --tokens D (or --gold G for the gold law).")
    from benchcast.forecasting.answers import forecast
    from benchcast.forecasting.bootstrap import NO_INTERVAL
    from benchcast.forecasting.flags import describe

    query = {"flops": flops, "params": params, "tokens": tokens, "k": k, "gold": gold}
    query = {key: v for key, v in query.items() if v is not None}
    # the one forecaster without an interval: a planned run at the fit's FLOPs convention, every flag
    made = forecast(
        result,
        uncertainty=NO_INTERVAL,
        flops_per_6nd=flops_per_6nd,
        **{**query, "flops": flops and np.asarray(flops, float)},
    )
    score, flags = np.atleast_1d(made.prediction), made.flags
    convention = next((c for c in made.points["convention"] if c), "")
    if json:
        flag_docs = [[f.to_dict() for f in point] for point in flags]
        placement = {"flops_convention": convention} if convention else {}
        emit_json({"law": result.law, "query": query, **placement, "prediction": score, "flags": flag_docs})
    else:
        shown = ", ".join(f"{key}={v}" for key, v in query.items())
        values = ", ".join(f"{v:.4f}" if math.isfinite(v) else "—" for v in score)
        console.print(
            escape(f"{result.law} on {result.spec.benchmark} ({result.spec.metric}): {shown} -> ")
            + f"[bold]{escape(values)}[/]",
            highlight=False,
        )
        if convention:
            console.print(escape(f"  planned run placed at {convention}"), highlight=False)
        for point in flags:
            if point:
                console.print(escape(f"  {describe(point)}"), highlight=False)
    # as forecast and plan: an answer of refusals only is no success (issue 32 item 12)
    refuse_nothing_forecast(score, [describe(point) for point in flags], f"{result.law} from {fit_file}")
