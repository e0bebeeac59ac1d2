"""The forecast report's sections: the summary table and one section per benchmark."""

from __future__ import annotations

import numpy as np

import benchcast.report.html as h
from benchcast.evaluation.refusals import refused_cell
from benchcast.forecasting.flags import describe
from benchcast.laws import get_law
from benchcast.plots.figures import plot_kscan
from benchcast.plots.labels import metric_label
from benchcast.report.analysis import BenchmarkReport, profile_summary
from benchcast.report.figures import benchmark_figure, embed, judged


def parameter_table(fit) -> str:
    """A fit's parameters: value, standard error (or why none) and bound."""
    from benchcast.fitting.diagnostics import identified_stderr

    bounds = fit.bounds
    errors = identified_stderr(fit.params, fit.stderr, fit.diagnostics.rmse)
    rows = []
    presolved = set(fit.law_object.param_names[: fit.law_object.n_presolved])  # a first stage, fitted to the proxy
    for name, value in fit.params.items():
        bound = f"constraint active: {bounds.active[name]}" if name in bounds.active else bounds.flags.get(name, "")
        error = errors.get(name)
        missing = "stage 1 (fitted to the proxy)" if name in presolved else "not identified"
        rows.append([name, value, *([] if not fit.stderr else [missing if error is None else error]), bound])
    caption = f"Fitted parameters of {fit.law}"
    if not fit.stderr:  # the report's forecast fits skip them (recommend's fits, quiet)
        caption += " (standard errors not computed: the forecast's fits do not need them)"
    columns = ["parameter", "value", *(["std. error"] if fit.stderr else []), "bound"]
    return h.table(columns, rows, caption=caption, spec=".5g")


def _interval(row, level: int) -> str:
    """A forecast row's interval at ``level`` as text."""
    return f"{row[f'lower{level}']:.3f} – {row[f'upper{level}']:.3f}"


def summary_section(
    reports: list[BenchmarkReport], targets: list[float], n_boot: int, interval: str = "extrapolation"
) -> str:
    """The summary: one sortable row per benchmark with its forecaster, forecasts, intervals and backtest."""
    # the table stays narrow (it scrolled sideways with rows 700 px tall: a planned run's description in each
    # header, the reason and the warnings in cells): targets by a short name with a key, words below the table
    named = [isinstance(c, str) for c in targets]
    short = [
        f"T{i + 1}" if is_named else f"{c:.2g}" for i, (c, is_named) in enumerate(zip(targets, named, strict=True))
    ]
    columns = ["benchmark", "metric", "forecast by"]
    for c in short:
        columns += [f"forecast @ {c}", "50 % | 90 % interval", "decades beyond the data"]
    columns += ["backtest MRE %", "backtest refused", "backtest 90 % coverage", "warnings"]
    rows, words = [], []
    for r in reports:
        link = h.Markup(f'<a href="#{anchor(r)}">{h.esc(r.benchmark)}</a>')
        row = [link, metric_label(r.metric, r.k), _strategy_label(r)]
        for f in r.forecast.to_frame().to_dict("records"):
            intervals = h.Markup(f"{h.esc(_interval(f, 50))}<br>{h.esc(_interval(f, 90))}")
            row += [f["prediction"], intervals, round(f["decades"], 2)]
        m = r.validation.metrics
        coverage90 = m.get("coverage90", float("nan"))
        held_out = int((r.validation.predictions["side"] == "test").sum())
        refused = refused_cell(m.get("n_refused", 0), held_out)  # the MRE is over the rest (evaluation.refusals)
        coverage = coverage90 if np.isfinite(coverage90) else "— (" + m.get("interval_note", "no interval") + ")"
        row += [m["test_mre"], refused, coverage, len(r.warnings)]
        rows.append(row)
        warned = "".join(f"<li class=warn>{h.esc(w)}</li>" for w in r.warnings)
        words.append(
            f'<li><a href="#{anchor(r)}">{h.esc(r.benchmark)}</a>: {h.esc(r.choice.reason)}'
            + (f"<ul>{warned}</ul>" if warned else "")
            + "</li>"
        )
    key = "; ".join(f"{s} = {h.esc(t)}" for s, t, n in zip(short, targets, named, strict=True) if n)
    key = f"<p>Targets: {key}.</p>" if any(named) else ""
    kind = (
        "widened by the error of extrapolating measured on rolling origins inside the runs (where a benchmark's "
        "runs are too few to measure it, no interval, and a warning says why)"
        if interval == "extrapolation"
        else "alone (--interval bootstrap: without the error of extrapolating)"
    )
    note = (
        f"Intervals are prediction intervals (where one new run's score lies): a bootstrap over runs with "
        f"{n_boot} replicates per law, {kind}; an ensemble's draws are its laws' draws mixed with their weights, "
        "as recommend, forecast and bench make them. The backtest columns score the forecast the page shows on runs "
        "it did not see: the strategy as bench backtests it (its laws fitted below the threshold, weighted and "
        "blended there), or the law chosen by you."
    )
    table = h.table(columns, rows, caption="One row per benchmark (sortable)", sortable=True, text_columns=3)
    why = "".join(words)
    return (
        f'<section id="summary"><h2>Summary</h2>{key}{table}<p class="muted">{h.esc(note)}</p>'
        f"<h3>Why each forecaster, and each benchmark's warnings</h3><ul>{why}</ul></section>"
    )


def backtested(report: BenchmarkReport) -> str:
    """What the page's backtests judge, in a sentence: the forecaster the page shows."""
    if report.choice.named:
        return f"{report.strategy} (law chosen by you), fitted to the runs at or below each threshold"
    laws = ", ".join(report.choice.strategy.weights_)
    return (
        f"the {judged(report)}, as bench backtests it: at each threshold its laws ({laws}) are fitted to the runs "
        "at or below it, weighted by their rolling-origin forecasts there, and their bootstrap draws blended"
        + (" and widened by the error of extrapolating measured there" if report.interval == "extrapolation" else "")
        + " into its forecasts and intervals of the runs above it (bench's numbers for this benchmark and threshold)"
    )


def _strategy_label(report: BenchmarkReport) -> str:
    """The forecast's strategy as the page names it: 'ensemble (...)', or 'power (law chosen by you)'."""
    return f"{report.strategy} (law chosen by you)" if report.choice.named else report.strategy


def anchor(report: BenchmarkReport) -> str:
    """The HTML id of a benchmark's section (non-alphanumerics as '-')."""
    return "bench-" + "".join(ch if ch.isalnum() else "-" for ch in report.benchmark)


def benchmark_section(r: BenchmarkReport, figure_format: str = "png", dpi: int | None = None) -> str:
    """One benchmark's section: forecaster, fit, figure, forecasts, runs, parameters, ranking, profile and k-scan."""
    fit, d = r.fit, r.fit.diagnostics
    counts = r.runs["status"].value_counts()
    run_rows = [[status, int(n)] for status, n in counts.items()]
    members = "".join(
        f"<li>{h.esc(name)} (weight {weight:.2f}): <code>{h.esc(get_law(name).formula)}</code></li>"
        for name, weight in r.weights.items()
    )
    shown = ("flops", "params", "tokens", "tpr", "prediction", "lower50", "upper50", "lower90", "upper90", "decades")
    forecasts = [
        [*(f.get(c, np.nan) for c in shown), describe(f["flags"])] for f in r.forecast.to_frame().to_dict("records")
    ]
    given = "; ".join(f"{law}: {words}" for law, words in r.covariates.items())
    parts = [
        f'<section class="bench" id="{anchor(r)}"><h2>{h.esc(r.benchmark)} '
        f'<span class="muted">({h.esc(metric_label(r.metric, r.k))})</span></h2>',
        f"<p><strong>Forecast by:</strong> {h.esc(_strategy_label(r))}. "
        f"<strong>Why:</strong> {h.esc(r.choice.reason)}.</p>",
        f"<ul>{members}</ul>",
        f"<p>Backtested: {h.esc(backtested(r))}.</p>",
        f"<p>Runs and fit of {h.esc(fit.law)}"
        + ("" if r.choice.named or len(r.weights) == 1 else ", the member with the lowest error inside the runs")
        + f": fitted on {d.n_used} runs spanning {d.flops_min:.3g} – {d.flops_max:.3g} FLOPs "
        f"({d.decades:.2f} decades); in-sample RMSE {d.rmse:.4f}, R² {d.r2:.3f}; chance level "
        f"{fit.settings['q_rand']:.3g} ({h.esc(fit.settings.get('q_rand_source', ''))}).</p>",
        h.warnings_list(r.warnings),
        h.figure(
            benchmark_figure(r, figure_format, dpi),
            f"{r.benchmark}: runs, the forecast of {_strategy_label(r)} with 50 and 90 % bands, backtest of "
            f"{judged(r)}, its error and coverage versus decades of extrapolation",
            "Top left: the forecast (fitted, dropped and held-out runs are drawn differently; the strategy's curve "
            "and its 50 %/90 % prediction bands out to the target compute, each member law as a thin dashed line). "
            f"Top right: the backtest of {judged(r)}"
            + ("" if r.choice.named else " (its curve blended from its members' curves, thin and dashed)")
            + f". Bottom: the backtests of {judged(r)}: absolute error, their intervals' coverage "
            "(n: the held-out points behind each bin) and the intervals' median width versus decades beyond the "
            "largest fitted run.",
        ),
        h.table(
            ["target C (FLOPs)", "N", "D", "TPR", "forecast", "50 % lower", "50 % upper", "90 % lower", "90 % upper"]
            + ["decades", "flags"],
            forecasts,
            caption=f"Forecasts ({r.n_boot} bootstrap replicates)",
            text_columns=0,
            spec=".4g",
        ),
        f"<p>Covariates each law was given at the targets: {h.esc(given)}.</p>" if r.covariates else "",
        h.table(["runs", "count"], run_rows, caption="Runs in the forecast fit"),
        *(parameter_table(member) for member in r.members.values()),
    ]
    if r.choice.ranking is not None:
        rk = r.choice.ranking
        head = [
            "law",
            "inner MRE %",
            "inner MSLE",
            "extrapolation spread per decade",
            "fitted runs",
            "constraint active",
            "at search limit",
        ]
        ranked = [
            [x.law, x.inner_mre, x.inner_msle, x.tau, x.n_fit, x.constraint_active, x.at_search_limit]
            for x in rk.itertuples()
        ]
        caption = (
            "Laws compared by their rolling-origin forecasts inside the runs (each fitted below an origin, "
            "scored on the runs above it; none of the page's held-out runs is used)"
        )
        parts.append(h.table(head, ranked, caption=caption, sortable=True))
    summary = profile_summary(r.profile)
    if not summary.empty:
        head = ["decades beyond fit", "held-out points", "MAE", "50 % coverage", "90 % coverage"]
        binned = [[x.decades, int(x.n), x.mae, x.coverage50, x.coverage90] for x in summary.itertuples()]
        caption = f"Backtest error and coverage of {judged(r)} versus extrapolation"
        parts.append(h.table(head, binned, caption=caption, text_columns=0))
    if r.passk is not None:
        scan, fits = r.passk
        names = get_law("compute").param_names
        parts.append("<h3>pass@k</h3>")
        parts.append(
            h.figure(
                embed(plot_kscan(scan, fits, list(names)), figure_format, dpi),
                f"{r.benchmark}: the compute law's parameters versus k, and -log pass@k versus compute for each k",
                "Each parameter of the compute law (S1) versus k (error bars are one standard error cut at the "
                "parameter's bounds; a red x marks a fit at a search limit, a hollow circle a law's constraint "
                "reached), then -log pass@k versus compute, one colour per k, "
                "with the law fitted at each k (the figure of benchcast kscan).",
            )
        )
        ok = scan.dropna(subset=[names[0]])
        scanned = [
            [int(x["k"]), *[x[n] for n in names], x["n_used"], x["r2"], x["constraint_active"], x["at_search_limit"]]
            for x in ok.to_dict("records")
        ]
        head = ["k", *names, "points", "R²", "constraint active", "at search limit"]
        parts.append(h.table(head, scanned, caption="compute law fitted at each k", text_columns=0))
    parts.append("</section>")
    return "\n".join(parts)
