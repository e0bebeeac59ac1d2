"""Shared CLI plumbing: JSON/Rich output, and turning user errors into exit status 2."""

import functools
import json
import os
import warnings
from collections.abc import Callable

import typer
from rich.console import Console
from rich.markup import escape

from benchcast.errors import BenchcastError, DataWarning, FitWarning

console = Console()
if not console.is_terminal:  # pipes and files get whole tables, not 80-column truncations
    console = Console(width=200)
err_console = Console(stderr=True)
EXIT_USER_ERROR = 2


def emit_json(payload) -> None:
    from benchcast.utils.jsonable import jsonable  # numpy and pandas: loaded by a command, not by --help

    typer.echo(json.dumps(jsonable(payload), indent=2))


def rich_table(title: str, columns: list[str], rows: list[list], floatfmt: str = ".4g"):
    """:func:`benchcast.utils.rich_view.rich_table`, imported when a command prints a table."""
    from benchcast.utils.rich_view import rich_table as table

    return table(title, columns, rows, floatfmt)


def print_error(message: str) -> None:
    """One paragraph on stderr; the text is escaped, so '[score]' or 'array([nan])' survive."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def print_warning(message: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _describe(exc: BaseException) -> str:
    """An OSError/ValueError as a sentence that names the file when the exception knows it."""
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}."
    if isinstance(exc, UnicodeDecodeError):
        return f"an input is not valid UTF-8 text ({exc})."
    return str(exc)


def user_errors(command: Callable) -> Callable:
    """Run a command; user errors print one paragraph and exit 2; fit warnings go to stderr."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            warnings.simplefilter("always", DataWarning)
            try:
                result = command(*args, **kwargs)
            except BenchcastError as exc:
                print_error(str(exc))
                raise typer.Exit(EXIT_USER_ERROR) from None
            except (OSError, ValueError) as exc:
                if os.environ.get("BENCHCAST_DEBUG"):
                    raise
                print_error(_describe(exc))
                raise typer.Exit(EXIT_USER_ERROR) from None
        shown = set()
        for item in caught:
            if issubclass(item.category, (FitWarning, DataWarning)) and str(item.message) not in shown:
                shown.add(str(item.message))
                print_warning(str(item.message))
        return result

    return wrapper


def refuse_options(given: dict[str, bool], why: str) -> None:
    """Refuse the options a command cannot honour in this combination, rather than drop them."""
    named = [name for name, was_given in given.items() if was_given]
    if named:
        raise BenchcastError(f"{', '.join(named)}: " + why.replace("{them}", "it" if len(named) == 1 else "them"))


def refuse_jobs_with_ray(jobs: int | None, ray: str | None) -> None:
    """Refuse ``--jobs`` beside ``--ray``: the Ray cluster places the tasks, so no local pool is sized."""
    refuse_options(
        {"--jobs": jobs is not None and ray is not None},
        f"it sizes the local process pool, and --ray {ray} runs the jobs as Ray tasks that the cluster places "
        "itself: drop --jobs (or --ray).",
    )


def parse_ks(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        ks = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise BenchcastError(f"--k/--ks must be comma-separated integers, got {text!r}.") from None
    if not ks or min(ks) < 1:
        raise BenchcastError(f"--k/--ks must hold integers >= 1, got {text!r}.")
    return ks


def refuse_nothing_forecast(predictions, reasons, what: str) -> None:
    """After printing a result: where no point has a forecast, exit 2 saying why nothing was forecast (an empty answer
    is not a success)."""
    import numpy as np

    values = np.asarray(predictions, float).ravel()
    if values.size and np.isfinite(values).any():
        return
    why = "; ".join(dict.fromkeys(str(r) for r in reasons if isinstance(r, str) and r)) or "no reason was given"
    raise BenchcastError(f"nothing was forecast for {what}: {why}")


def print_answers(answers: list, json: bool) -> None:
    """One answer as its own view; several (one per ``-b``) as one JSON list, or one table (a row per benchmark and
    point: each answer's ``to_frame()``, flags as 'flagged'/'refused') followed by each answer's notes."""
    if json:
        emit_json(answers[0].to_dict() if len(answers) == 1 else [a.to_dict() for a in answers])
        return
    if len(answers) == 1:
        console.print(answers[0])
        return
    import pandas as pd
    from rich.markup import escape

    from benchcast.forecasting.flags import describe, refused, short
    from benchcast.forecasting.forecast import bound_column

    frames = []
    for answer in answers:
        frame = answer.to_frame()
        if "forecaster" in frame:  # a forecast: its runs, prediction, bounds at the widest level and flags
            sizes = [c for c in ("params", "tokens", "tpr") if frame[c].notna().any()]
            bounds = [bound_column(side, answer.level) for side in ("lower", "upper")]
            marks = [("refused" if refused(f) else "flagged") if f else "" for f in frame["flags"]]
            frame = frame[["flops", *sizes, "prediction", *bounds]].assign(flags=marks)
        else:  # a plan: its flags are its own
            frame = frame.assign(flags=short(answer.flags).split(":")[0])
        frames.append(frame.assign(benchmark=answer.benchmark))
    table = pd.concat(frames, ignore_index=True)
    table = table[["benchmark", *(c for c in table.columns if c != "benchmark")]]
    rows = [[("—" if isinstance(v, float) and v != v else v) for v in row] for row in table.values.tolist()]
    console.print(rich_table(answers[0].title.split(": ", 1)[-1], list(table.columns), rows))
    for answer in answers:
        own = [] if "forecaster" in answer.to_frame() else [describe(answer.flags)]  # a plan's, not its frame's
        for note in [*answer.notes, *(n for n in own if n)]:
            console.print(escape(f"{answer.benchmark}: {note}"), highlight=False, soft_wrap=True)
