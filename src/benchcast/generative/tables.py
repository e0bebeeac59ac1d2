"""The tables of the generative workflow: pass@k rows ready for `fit`/`kscan` (with run sizes and
gold covariate rows), and the results that show pass@k estimates and a compute-optimal plan."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from rich.markup import escape

from benchcast.collect.store import SIZES, run_sizes
from benchcast.errors import BenchcastError, DataWarning
from benchcast.utils.jsonable import jsonable
from benchcast.utils.rich_view import Markup, RichView, rich_table

PASSK_COLUMNS = ["run", "benchmark", "k", "pass@k", "lower", "upper", "source", "note"]
OPTIMAL_LABELS = {
    "flops": "compute budget C (FLOPs)",
    "optimal_params": "compute-optimal parameters N*",
    "optimal_tokens": "compute-optimal tokens D*",
    "optimal_tokens_per_param": "compute-optimal tokens per parameter D*/N*",
    "alpha_eff": "envelope exponent alpha_eff",
    "C0_eff": "envelope scale C0_eff",
    "E0": "irreducible -log pass@k E0",
    "optimal_neg_log_passk": "-log pass@k of the compute-optimal run",
    "params": "planned parameters N",
    "tokens": "planned tokens D = C / (6 N)",
    "x": "x = N / N* (planned size over optimal)",
    "penalty": "penalty P(x) >= 1 on the reducible -log pass@k",
    "effective_flops": "effective compute C_eff of the planned run (FLOPs)",
    "neg_log_passk": "-log pass@k of the planned run",
}


def passk_rows(table: pd.DataFrame) -> list[list]:
    """The rows of a pass@k table as shown, in the order of ``PASSK_COLUMNS``."""
    # a table of refusals alone has no value column; a row without a note shows none
    return [
        [
            r.run,
            r.benchmark,
            int(r.k),
            *(getattr(r, c, np.nan) for c in ("pass_at_k", "lower", "upper")),
            r.source,
            note if isinstance(note := getattr(r, "note", ""), str) else "",
        ]
        for r in table.itertuples()
    ]


def passk_tidy(
    table: pd.DataFrame,
    samples: Path,
    *,
    counts: pd.DataFrame | None = None,
    gold: Path | None = None,
    per_token: bool = False,
    metadata: Path | None = None,
    destination: str | Path = "the output",
) -> pd.DataFrame:
    """pass@k estimates as tidy rows for `fit` and `kscan`, with run sizes and gold covariate rows."""
    from benchcast.data.readers import read_frame

    answered = table[table["source"] != "refused"]  # a refusal has no value to fit; the command printed why
    tidy = answered.rename(columns={"pass_at_k": "value"}).assign(metric="pass@k")
    sources = [run_sizes(_sample_table(samples), str(samples))]
    if gold is not None:
        from benchcast.collect.scoring import gold_table

        scores = read_frame(gold, "gold scores")
        covariate = gold_table(scores, per_token=per_token, problems=counts, source=str(gold))
        tidy = pd.concat([tidy, covariate.drop(columns=list(SIZES), errors="ignore")], ignore_index=True)
        sources.append(run_sizes(scores, str(gold)))
    sizes = _merge_sizes(sources, metadata)
    if len(sizes.columns) > 1:
        tidy = tidy.merge(sizes, on="run", how="left")
    known = pd.Series(False, index=tidy.index)  # runs that `fit` can place in compute
    if {"params", "tokens"} <= set(tidy.columns):
        known |= tidy["params"].notna() & tidy["tokens"].notna()
    if "flops" in tidy.columns:
        known |= tidy["flops"].notna()
    unsized = sorted(set(tidy.loc[~known, "run"]))
    if unsized:
        message = f"{destination}: no params/tokens known for run(s) {unsized}; `fit` will need them (pass --metadata)."
        warnings.warn(message, DataWarning, stacklevel=2)
    return tidy


def run_flops(samples: Path, metadata: Path | None = None) -> dict[str, float]:
    """Each run's training compute from the sample file's sizes or ``metadata``: its flops, else 6 N D."""
    sizes = _merge_sizes([run_sizes(_sample_table(Path(samples)), str(samples))], metadata)
    flops = sizes["flops"].astype(float) if "flops" in sizes.columns else pd.Series(np.nan, index=sizes.index)
    if {"params", "tokens"} <= set(sizes.columns):
        flops = flops.fillna(6 * sizes["params"].astype(float) * sizes["tokens"].astype(float))
    known = flops.notna() & (flops > 0)
    return dict(zip(sizes.loc[known, "run"].astype(str), flops[known].astype(float), strict=True))


def _optimal_rows(plan: dict) -> list[list]:
    """A compute-optimal plan (``Envelope.plan``) as (quantity, value) rows, pass@k added."""
    rows = [
        [OPTIMAL_LABELS.get(key, key), f"{value:.6g}" if isinstance(value, float) else value]
        for key, value in plan.items()
    ]
    passk = {"optimal_neg_log_passk": "pass@k of the compute-optimal run", "neg_log_passk": "pass@k of the planned run"}
    return rows + [[label, f"{float(np.exp(-plan[key])):.6g}"] for key, label in passk.items() if key in plan]


@dataclass
class PassKTable(RichView):
    """pass@k estimates of a sample file, with their bootstrap intervals."""

    table: pd.DataFrame
    samples: str
    n_problems: int
    n_boot: int
    level: float = 0.9

    def to_dict(self) -> dict:
        """``samples``, ``n_problems``, ``n_boot`` and ``rows`` (the table's records, what ``passk --json`` prints)."""
        return jsonable(
            {
                "samples": self.samples,
                "n_problems": self.n_problems,
                "n_boot": self.n_boot,
                "level": self.level,
                "rules": self.table.attrs.get("rules", []),
                "rows": self.table.to_dict("records"),
            }
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per (run, benchmark, k), in the columns of ``PASSK_COLUMNS``."""
        return pd.DataFrame(passk_rows(self.table), columns=PASSK_COLUMNS)

    @property
    def title(self) -> str:
        return (
            f"pass@k from {self.samples} ({self.n_problems} problems; {100 * self.level:g} % interval from "
            f"{self.n_boot} bootstrap replicates over problems)"
        )

    @property
    def notes(self) -> list[str]:
        """How each benchmark was forecast past n, and every run refused there, with why."""
        refused = self.table[self.table["source"] == "refused"] if "source" in self.table else self.table.iloc[0:0]
        lines = [f"past n, {rule}; each row's replicates in --json" for rule in self.table.attrs.get("rules", [])]
        return lines + [f"refused: {r.run} on {r.benchmark}: {r.note}" for r in refused.itertuples()]

    def rich_items(self) -> list:
        """The table of estimates."""
        notes = [Markup(escape(line), highlight=False) for line in self.notes]
        return [rich_table(self.title, PASSK_COLUMNS, passk_rows(self.table)), *notes]


@dataclass
class OptimalPlan(RichView):
    """A compute-optimal plan at one budget (and, optionally, one planned model size)."""

    plan: dict

    def to_dict(self) -> dict:
        """The plan's quantities (what ``optimal --json`` prints)."""
        return jsonable(self.plan)

    def to_frame(self) -> pd.DataFrame:
        """One (quantity, value) row per quantity, pass@k added (see :func:`_optimal_rows`)."""
        return pd.DataFrame(_optimal_rows(self.plan), columns=["quantity", "value"])

    @property
    def title(self) -> str:
        return f"Compute-optimal plan at C = {self.plan['flops']:.3g} FLOPs"

    def rich_items(self) -> list:
        """The plan's table."""
        return [rich_table(self.title, ["quantity", "value"], _optimal_rows(self.plan))]


def _sample_table(path: Path) -> pd.DataFrame:
    """The sample file as a table when it is one (for the run sizes it records), else empty."""
    from benchcast.data.readers import read_frame

    if path.suffix.lower() not in (".csv", ".parquet", ".pq", ".jsonl", ".ndjson", ".json"):
        return pd.DataFrame()
    try:
        return read_frame(path, "sample outcomes")
    except BenchcastError:  # lm-eval logs are not flat tables; read_counts has read them already
        return pd.DataFrame()


def _merge_sizes(sources: list[pd.DataFrame], metadata: Path | None) -> pd.DataFrame:
    """Per-run params/tokens/flops: ``metadata`` when given, else what the inputs recorded (they must agree)."""
    if metadata is not None:
        from benchcast.data.metadata import read_metadata

        meta = read_metadata(metadata).runs
        return meta[["run", *[c for c in SIZES if c in meta.columns]]]
    merged = pd.DataFrame(columns=["run"])
    for frame in sources:
        if len(frame.columns) <= 1:
            continue
        merged = merged.merge(frame, on="run", how="outer", suffixes=("", "_other"))
        for column in SIZES:
            other = f"{column}_other"
            if other not in merged.columns:
                continue
            clash = merged[column].notna() & merged[other].notna() & ~np.isclose(merged[column], merged[other])
            if clash.any():
                row = merged[clash].iloc[0]
                raise BenchcastError(
                    f"run {row['run']!r} has {column} {row[column]:g} in one input and {row[other]:g} in another; "
                    "fix one, or give --metadata."
                )
            merged[column] = merged[column].fillna(merged[other])
            merged = merged.drop(columns=other)
    return merged
