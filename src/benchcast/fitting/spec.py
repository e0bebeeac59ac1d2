"""What to fit, as one frozen, typed object: :class:`FitSpec`, and :func:`design`, which resolves it against a table
(the rows a fit sees and the spec with every default filled in; ARCHITECTURE.md, "Data flow")."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, fields, replace

import numpy as np
import pandas as pd

from benchcast.data.chance import chance_level, suggested_chance
from benchcast.data.covariates import attach_covariates
from benchcast.data.schema import COLUMNS, is_loss_metric
from benchcast.data.table import inconsistent_k, parse_metric, select
from benchcast.data.units import check_scores
from benchcast.errors import BenchcastError, DataWarning, SelectionError
from benchcast.laws import Law, get_law


@dataclass(frozen=True)
class FitSpec:
    """The selection and settings of a fit (None means: the law's or the data's default)."""

    law: str
    benchmark: str
    metric: str | None = None
    k: int | None = None
    # selection of runs
    min_flops: float | None = None
    max_flops: float | None = None
    tpr: float | None = None
    runs: tuple[str, ...] | None = None
    max_k: int | None = None  # passk_compute: largest k fitted
    # settings
    q_rand: float | None = None
    margin: float | None = None
    proxy: str | None = None  # 'benchmark:metric' of a proxy loss, for the two-stage laws (None: the law's default)
    gold_metric: str = "loglikelihood"  # same-benchmark metric holding the gold log-likelihood
    loss: str | None = None
    huber_delta: float | None = None
    seed: int = 0
    # filled in by design(): where the chance level came from
    q_rand_source: str | None = None

    def __post_init__(self):
        if self.runs is not None and not isinstance(self.runs, tuple):
            object.__setattr__(self, "runs", tuple(str(r) for r in self.runs))
        for name in ("min_flops", "max_flops", "tpr"):
            value = getattr(self, name)
            if value is not None and not (np.isfinite(value) and value > 0):
                raise BenchcastError(f"{name} must be a positive finite number, got {value!r}.")
        if self.max_k is not None and self.max_k < 1:
            raise BenchcastError(f"max_k must be at least 1, got {self.max_k!r}.")
        if self.k is not None and not (self.k >= 1 and float(self.k).is_integer()):
            raise BenchcastError(f"k must be a whole number of attempts, at least 1, got {self.k!r}.")
        if self.loss is not None and self.loss not in ("lsq", "huber"):
            raise BenchcastError(f"loss must be 'lsq' or 'huber', got {self.loss!r}.")
        if self.huber_delta is not None and not self.huber_delta > 0:
            raise BenchcastError(f"huber_delta must be positive, got {self.huber_delta!r}.")

    def to_dict(self) -> dict:
        """The spec as a JSON-ready dict (``runs`` a list).

        Returns
        -------
        dict
            Every field by name.
        """
        out = asdict(self)
        out["runs"] = list(self.runs) if self.runs is not None else None
        return out

    @classmethod
    def from_dict(cls, doc: dict) -> FitSpec:
        """A spec from the dict :meth:`to_dict` writes (unknown fields are an error).

        Parameters
        ----------
        doc : dict
            Fields by name.

        Returns
        -------
        FitSpec
            The spec.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise BenchcastError(f"unknown fit setting(s) {unknown}.")
        return cls(**doc)

    def replace(self, **changes) -> FitSpec:
        """A copy with some fields changed (:func:`dataclasses.replace`).

        Parameters
        ----------
        **changes
            New values of fields, by name.

        Returns
        -------
        FitSpec
            The new spec.
        """
        return replace(self, **changes)


def _resolve_metric(law: Law, table: pd.DataFrame, spec: FitSpec) -> tuple[str | None, int | None]:
    metric, k = spec.metric, spec.k
    if metric is None and law.default_metric:
        metric = law.default_metric
    if metric is not None:
        metric, parsed = parse_metric(metric)
        k = parsed if k is None else k
    return metric, (k if law.per_k else None)


def warn_unknown_chance(table: pd.DataFrame, benchmark: str, metric: str) -> None:
    """Warn that a benchmark's chance level is unknown (taken as 0), with an estimate to give instead."""
    level, where = suggested_chance(table, benchmark, metric)
    # only what the data or the task state: the cheapest runs' mean score is above chance, not chance
    hint = (
        f"the data state {level:.4g} ({where}): --q-rand {benchmark}={level:.4g}"
        if level is not None
        else "neither the data nor benchcast's table of tasks state its choices: for n answer choices it is 1/n"
    )
    warnings.warn(
        f"the chance level of {benchmark} ({metric}) is unknown, so it is taken as 0 - wrong for a multiple-choice "
        f"task. Give it with --q-rand {benchmark}=VALUE or a q_rand column in the data; {hint}.",
        DataWarning,
        stacklevel=3,
    )


def warn_pooled_runs(rows: pd.DataFrame, benchmark: str) -> None:
    """Warn where runs at one N and D differ in a text column of the file (``recipe``): fitted as replicates."""
    sizes = [c for c in ("params", "tokens", "flops") if c in rows]
    text = [
        c
        for c in rows.columns
        if c not in COLUMNS and not pd.api.types.is_numeric_dtype(rows[c]) and "seed" not in c.lower()
    ]
    if not sizes or not text:
        return
    by_run = rows.drop_duplicates("run")
    shared = by_run[by_run.duplicated(sizes, keep=False)]
    for column in text:
        try:
            spread = shared.groupby(sizes, dropna=False)[column].nunique()
        except TypeError:  # values that cannot be compared (lists): no recipe column
            continue
        if (spread > 1).any():
            values = sorted(str(v) for v in shared[column].dropna().unique())
            shown = ", ".join(repr(v) for v in values[:3]) + (", ..." if len(values) > 3 else "")
            warnings.warn(
                f"{benchmark}: {len(shared)} runs share an N and D with others but differ in column {column!r} "
                f"({len(values)} values: {shown}); they are fitted as replicate seeds of one ladder. If they are "
                f"different recipes, `benchcast compare --by {column}` compares them, and a file of one {column}'s "
                "runs forecasts it.",
                DataWarning,
                stacklevel=3,
            )
            return


def default_proxy(law: Law, spec: FitSpec, table: pd.DataFrame | None = None) -> str | None:
    """The proxy loss a law reads when the spec names none: the law's ``default_proxy`` for this benchmark."""
    if law.default_proxy is None:
        return None
    templates = (law.default_proxy,) if isinstance(law.default_proxy, str) else law.default_proxy
    names = [t.format(benchmark=spec.benchmark, gold_metric=spec.gold_metric) for t in templates]
    if table is None or len(names) == 1:
        return names[0]
    held = set(zip(table["benchmark"], table["metric"], strict=True))
    return next((name for name in names if tuple(name.split(":", 1)) in held), None)


def design(table: pd.DataFrame, spec: FitSpec) -> tuple[pd.DataFrame, FitSpec]:
    """The rows a fit of ``spec`` sees (every covariate the law needs attached) and the resolved spec.

    Parameters
    ----------
    table : pandas.DataFrame
        The data table, as :func:`benchcast.load` returns it.
    spec : FitSpec
        The spec to resolve.

    Returns
    -------
    rows : pandas.DataFrame
        The selected rows, with the law's covariates; rows with no score (value NaN) among them, which
        :func:`~benchcast.fitting.api.fit_rows` drops with the reason.
    resolved : FitSpec
        ``spec`` with every default filled in (metric, k, chance level and its source, ...).
    """
    law = get_law(spec.law)
    metric, k = _resolve_metric(law, table, spec)
    # the selection's rows with no score come too (value NaN): the fit drops them, counted with the reason
    rows = select(
        table, spec.benchmark, metric, k, max_flops=spec.max_flops, min_flops=spec.min_flops, tpr=spec.tpr, missing=True
    )
    if law.per_k and k is None and (ks := sorted(int(v) for v in rows["k"].dropna().unique())):
        # the metric named or found holds several k: pooled, they would be one curve of different quantities
        if len(ks) > 1:
            raise SelectionError(
                f"law {law.name!r} is fitted one k at a time and {spec.benchmark!r} ({rows['metric'].iloc[0]}) has "
                f"k = {', '.join(map(str, ks))}; choose k with --k or -b {spec.benchmark}:pass@K."
            )
        k = ks[0]
    if spec.runs is not None:
        rows = rows[rows["run"].isin(spec.runs)]
    warn_pooled_runs(rows, spec.benchmark)
    if not law.per_k and spec.max_k is not None:
        rows = rows[rows["k"].fillna(1) <= spec.max_k]
    if rows.empty:
        raise SelectionError(f"no rows left for {spec.benchmark!r} after selecting runs.")
    rows = rows.copy()
    metric = str(rows["metric"].iloc[0])
    if is_loss_metric(metric):  # in [0, 1] or not, a loss is no score: the laws' curves rise to a ceiling
        raise SelectionError(
            f"benchmark {spec.benchmark!r}: metric {metric!r} is a loss or likelihood (lower is better, or not a "
            "probability), not a score; the laws forecast a probability of success that rises with compute. Forecast "
            f"the task's score (acc, exact_match, pass@k, ...); a two-stage law reads a loss as its proxy (--proxy "
            f"{spec.benchmark}:{metric})."
        )
    # every law forecasts a probability of success: a metric on another scale (percent, a loss) is refused by name
    what = f"metric {metric!r}, forecast as a score (a probability of success),"
    check_scores(rows["value"], rows["run"], what, f"benchmark {spec.benchmark!r}")
    rows["k"] = rows["k"].astype(float).fillna(1.0)
    if metric == "pass@k":  # a pass@k row is judged beside its run's others (a majority vote may fall with k)
        curve = select(table, spec.benchmark, metric, None).astype({"k": float})
        bad = curve[inconsistent_k(curve)]
        rows["inconsistent"] = pd.MultiIndex.from_frame(rows[["run", "k"]]).isin(bad.set_index(["run", "k"]).index)
    needed = set(law.covariates) | set(law.fit_covariates)
    proxy = (spec.proxy or default_proxy(law, spec, table)) if "proxy" in needed else None
    try:
        rows = attach_covariates(rows, table, law, replace(spec, proxy=proxy))
    except SelectionError as exc:
        if spec.proxy or not proxy:
            raise
        raise SelectionError(
            f"law {law.name!r} reads the proxy loss {proxy!r} by default (the task's own log-likelihood), but {exc} "
            "Name a proxy with proxy='benchmark:metric' (--proxy)."
        ) from None
    q_rand, q_source = chance = chance_level(spec.benchmark, metric, spec.q_rand, table=table)
    if not chance.known:
        warn_unknown_chance(table, spec.benchmark, metric)
    given = rows["margin"].dropna().unique() if "margin" in rows.columns else ()  # --margin's (chance.with_margins)
    own = spec.margin if spec.margin is not None else float(given[0]) if len(given) else None
    margin = law.margin_for(spec.benchmark, own)
    found = {"q_rand": q_rand, "q_rand_source": q_source, "margin": margin if law.uses_margin else None, "proxy": proxy}
    delta = law.huber_delta if spec.huber_delta is None else spec.huber_delta
    resolved = replace(spec, metric=metric, k=k, loss=spec.loss or law.loss, huber_delta=delta, **found)
    return rows.sort_values(["flops", "run", "k"]).reset_index(drop=True), resolved
