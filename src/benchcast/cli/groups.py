"""Option groups, each declared once and handed to a command as one value (:data:`SOURCE`, :data:`UNCERTAINTY`,
:data:`WHERE`, :data:`RUNS`, :data:`FIGURES`): a command names one by a parameter whose default is the group
(``source: DataSource = SOURCE``), and :func:`~benchcast.cli.common.expand` puts its options in the signature Typer
reads. No pandas or numpy at import (``--help`` imports this).
"""

import functools
import inspect
from dataclasses import dataclass, replace
from pathlib import Path

from benchcast.cli.common import Group, refuse_options
from benchcast.cli.options import (
    Columns,
    Data,
    Dpi,
    FigureFormat,
    Format,
    Interval,
    Jobs,
    Level,
    Margin,
    MaxFlops,
    Metadata,
    MinFlops,
    NBoot,
    OutDir,
    QRand,
    RayAddress,
    Seed,
    Tpr,
    figure_options,
    parse_q_rand,
)
from benchcast.data import FORMATS
from benchcast.defaults import DEFAULT_INTERVAL, DEFAULT_LEVEL, DEFAULT_REPLICATES, DEFAULT_SEED


@dataclass(frozen=True)
class DataSource:
    """The data a command reads and how (``--format``, ``--metadata``, ``--column``, ``--q-rand``, ``--margin``)."""

    data: Path
    format: str = "auto"
    metadata: Path | None = None
    column: list[str] | None = None
    q_rand: list[str] | None = None
    margin: list[str] | None = None

    def read(self, samples: Path | None = None, checkpoints: str = "final", group: str | None = None):
        """The data, with ``--q-rand``'s chance levels and ``--margin``'s filter margins attached."""
        from benchcast.data.chance import with_chance_levels, with_margins
        from benchcast.data.readers import detect_format, load
        from benchcast.errors import BenchcastError

        data, metadata = self.data, self.metadata
        if metadata is not None and data.exists() and self.format in FORMATS:
            resolved = detect_format(data) if self.format == "auto" else self.format
            if resolved not in ("lm-eval", "wandb"):
                raise BenchcastError(
                    f"--metadata {metadata}: run metadata is read only for lm-eval results and training-log exports, "
                    f"and {data} is read as {resolved} data (its run sizes come from its own columns); drop --metadata."
                )
        renames = {}
        for text in self.column or []:
            column, equals, name = str(text).rpartition("=")
            if not (equals and column and name):
                raise BenchcastError(
                    f"--column {text!r}: expected FILE_COLUMN=NAME, e.g. throughput/total_flops=flops."
                )
            renames[column] = name
        how = {"samples": samples, "checkpoints": checkpoints, "columns": renames or None, "group": group}
        table = with_chance_levels(load(data, self.format, metadata=metadata, **how), parse_q_rand(self.q_rand))
        return with_margins(table, parse_q_rand(self.margin, "--margin"))

    def given(self) -> dict[str, bool]:
        """Which of the reading options were given (for a command that refuses them)."""
        return {
            "--format": self.format != "auto",
            "--metadata": self.metadata is not None,
            "--column": bool(self.column),
            "--q-rand": bool(self.q_rand),
            "--margin": bool(self.margin),
        }


SOURCE = Group(
    DataSource,
    {
        "data": (Data, inspect.Parameter.empty),
        "format": (Format, "auto"),
        "metadata": (Metadata, None),
        "column": (Columns, None),
        "q_rand": (QRand, None),
        "margin": (Margin, None),
    },
)


def _uncertainty(**given):
    """The Uncertainty the options give (a command without ``--level``: the default levels)."""
    from benchcast.forecasting.bootstrap import Uncertainty

    names = {"boot": "n_boot", "seed": "seed", "interval": "interval", "level": "levels"}
    return Uncertainty(**{names[option]: value for option, value in given.items()})


UNCERTAINTY = Group(
    _uncertainty,
    {
        "interval": (Interval, DEFAULT_INTERVAL),
        "level": (Level, DEFAULT_LEVEL),
        "boot": (NBoot, DEFAULT_REPLICATES),
        "seed": (Seed, DEFAULT_SEED),
    },
)


@dataclass(frozen=True)
class Where:
    """Local worker processes (``--jobs``) or a Ray cluster (``--ray``); not both."""

    n_jobs: int | None = None
    ray_address: str | None = None

    def __post_init__(self):
        refuse_options(
            {"--jobs": self.n_jobs is not None and self.ray_address is not None},
            f"it sizes the local process pool, and --ray {self.ray_address} runs the jobs as Ray tasks that the "
            "cluster places itself: drop --jobs (or --ray).",
        )

    def given(self) -> dict[str, bool]:
        """Which options were given."""
        return {"--jobs": self.n_jobs is not None, "--ray": self.ray_address is not None}

    def kwargs(self) -> dict:
        """As the API takes them."""
        return {"n_jobs": self.n_jobs, "ray_address": self.ray_address}


WHERE = Group(lambda jobs=None, ray=None: Where(jobs, ray), {"jobs": (Jobs, None), "ray": (RayAddress, None)})
# the runs fitted (``--tpr``, ``--min-flops``, ``--max-flops``), a dict as the API takes them by name
RUNS = Group(dict, {"tpr": (Tpr, None), "min_flops": (MinFlops, None), "max_flops": (MaxFlops, None)})
RUNS_FLOOR = RUNS.but(drop=("max_flops",))  # a backtest's: the held-out runs lie above the fitted ones
LOCAL = WHERE.but(drop=("ray",))  # a command whose jobs run in local workers only
REPLICATES = UNCERTAINTY.but(drop=("level", "seed"))  # a command showing the default levels, with no --seed


@dataclass(frozen=True)
class Figures:
    """Where a command writes its tables and figures (``--out``; None: nowhere) and their format and resolution."""

    out: Path | None
    format: str = "png"
    dpi: int | None = None

    def write(self, result) -> None:
        """``result.write`` to ``--out``, where it was given."""
        if self.out is not None:
            result.write(self.out, self.format, self.dpi)


def _figures(out=None, figure_format="png", dpi=None, *, writes: bool | None = None) -> Figures:
    """The output options, checked before any work (figure options are refused where nothing is written)."""
    return Figures(out, *figure_options(figure_format, dpi, out is not None if writes is None else writes))


FIGURES = Group(_figures, {"out": (OutDir, None), "figure_format": (FigureFormat, "png"), "dpi": (Dpi, None)})
# a command that always writes figures, to an --out of its own
WRITTEN = replace(FIGURES.but(drop=("out",)), make=functools.partial(_figures, writes=True))
