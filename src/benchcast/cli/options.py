"""Option and argument types shared by every command, and the one way commands read data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pandas as pd
import typer

from benchcast.data.readers import FORMATS, load

Data = Annotated[
    Path, typer.Argument(help="Data file: tidy CSV/Parquet, Apple long CSV, or lm-eval results JSON/folder.")
]
Format = Annotated[str, typer.Option("--format", help=f"Input format: {', '.join(FORMATS)}.")]
Metadata = Annotated[
    Path | None, typer.Option(help="Run metadata (YAML/CSV: run, params, tokens) for lm-eval results.")
]
Json = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
Benchmark = Annotated[str, typer.Option("--benchmark", "-b", help="Benchmark name.")]
Metric = Annotated[
    str | None, typer.Option("--metric", "-m", help="Metric (acc, acc_norm, exact_match, pass@k, pass@8...).")
]


def read(data: Path, format: str, metadata: Path | None) -> pd.DataFrame:
    return load(data, format, metadata=metadata)
