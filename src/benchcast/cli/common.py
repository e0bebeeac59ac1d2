"""Shared CLI plumbing: JSON/Rich output, and turning user errors into exit status 2."""

import functools
import inspect
import json
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, get_origin

import typer
from rich.console import Console
from rich.markup import escape

from benchcast.errors import BenchcastError, DataWarning, FitWarning

console = Console()
if not console.is_terminal:  # pipes and files get whole tables, not 80-column truncations
    console = Console(width=200)
err_console = Console(stderr=True)
EXIT_USER_ERROR = 2
EXIT_SOME_REFUSED = 3  # several benchmarks asked, some answered, the others refused in their rows


def emit_json(payload) -> None:
    from benchcast.utils.jsonable import jsonable  # numpy and pandas: loaded by a command, not by --help

    typer.echo(json.dumps(jsonable(payload), indent=2))


def show(result, as_json: bool, doc=None) -> None:
    """``--json``: the result's JSON (``doc(result)``, default ``result.to_dict()``); else the result printed."""
    if as_json:
        emit_json(result.to_dict() if doc is None else doc(result))
    else:
        console.print(result)


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


@dataclass(frozen=True)
class Group:
    """Options declared once (name: (annotation, default)) and the value ``make(**given)`` a command receives."""

    make: Callable
    options: dict = field(default_factory=dict)

    def but(self, *, drop=(), **changed) -> "Group":
        """The group with options dropped, or given another default, annotation or both (a tuple)."""
        options = {name: spec for name, spec in self.options.items() if name not in drop}
        for name, value in changed.items():
            annotation, default = options[name]
            if isinstance(value, tuple):
                annotation, default = value
            elif get_origin(value) is Annotated:
                annotation = value
            else:
                default = value
            options[name] = (annotation, default)
        return replace(self, options=options)


def expand(command: Callable) -> Callable:
    """The command with each group parameter replaced by the group's options, called with the group's value."""
    signature = inspect.signature(command)
    groups = {p.name: p.default for p in signature.parameters.values() if isinstance(p.default, Group)}
    if not groups:
        return command
    params = []
    for p in signature.parameters.values():
        if p.name not in groups:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        for name, (annotation, default) in groups[p.name].options.items():
            params.append(
                inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            )

    @functools.wraps(command)
    def grouped(**given):
        for name, group in groups.items():
            given[name] = group.make(**{option: given.pop(option) for option in group.options})
        return command(**given)

    grouped.__signature__ = signature.replace(parameters=params)
    return grouped


def user_errors(command: Callable) -> Callable:
    """Run a command: user errors print one paragraph and exit 2, fit/data warnings go to stderr; groups expanded."""
    command = expand(command)

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FitWarning)
            warnings.simplefilter("always", DataWarning)
            try:
                result = command(*args, **kwargs)
            except BenchcastError as exc:
                _print_warnings(caught)
                print_error(str(exc))
                raise typer.Exit(EXIT_USER_ERROR) from None
            except (OSError, ValueError) as exc:
                if os.environ.get("BENCHCAST_DEBUG"):
                    raise
                _print_warnings(caught)
                print_error(_describe(exc))
                raise typer.Exit(EXIT_USER_ERROR) from None
            except typer.Exit:  # a command's own exit status (some benchmarks refused): its warnings still count
                _print_warnings(caught)
                raise
            _print_warnings(caught)
            return result

    return wrapper


def _print_warnings(caught) -> None:
    """Each fit or data warning a command gathered, once."""
    shown = set()
    for item in caught:
        if issubclass(item.category, (FitWarning, DataWarning)) and str(item.message) not in shown:
            shown.add(str(item.message))
            print_warning(str(item.message))
    caught.clear()


def given_options(values: dict) -> dict[str, bool]:
    """Which options of ``values`` (by parameter name: ``min_flops``) were given, by option name (``--min-flops``)."""
    return {"--" + name.replace("_", "-"): value is not None for name, value in values.items()}


def refuse_options(given: dict[str, bool], why: str) -> None:
    """Refuse the options a command cannot honour in this combination, rather than drop them."""
    named = [name for name, was_given in given.items() if was_given]
    if named:
        raise BenchcastError(f"{', '.join(named)}: " + why.replace("{them}", "it" if len(named) == 1 else "them"))


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
    """Exit 2 saying why where no point has a forecast (an empty answer is not a success)."""
    import numpy as np

    values = np.asarray(predictions, float).ravel()
    if values.size and np.isfinite(values).any():
        return
    why = "; ".join(dict.fromkeys(str(r) for r in reasons if isinstance(r, str) and r)) or "no reason was given"
    raise BenchcastError(f"nothing was forecast for {what}: {why}")


class Refusal:
    """A benchmark a multi-benchmark command could not answer: its row says why."""

    flags = ()
    notes = ()

    def __init__(self, benchmark: str, metric: str | None, reason: str):
        self.benchmark, self.metric, self.reason = benchmark, metric, reason

    def to_dict(self) -> dict:
        """Its JSON entry: the benchmark, the metric asked and the reason."""
        return {"benchmark": self.benchmark, "metric": self.metric, "refused": self.reason}


def answer_each(pairs: list, make: Callable) -> list:
    """``make(benchmark, metric)`` per pair; with several, a benchmark that cannot be answered is a Refusal."""
    if len(pairs) == 1:
        return [make(*pairs[0])]
    out = []
    for name, metric in pairs:
        try:
            out.append(make(name, metric))
        except BenchcastError as exc:
            out.append(Refusal(name, metric, str(exc)))
    return out


def _unanswered(answer, source: str) -> str:
    """Why an answer holds no number ('' where it holds one): a refusal's reason, or a forecast with none."""
    if isinstance(answer, Refusal):
        return answer.reason
    if not hasattr(answer, "prediction"):  # a plan: an answer of its own
        return ""
    try:
        refuse_nothing_forecast(answer.prediction, answer.notes, f"{answer.benchmark} from {source}")
    except BenchcastError as exc:
        return str(exc)
    return ""


def _finish_answers(answers: list, why: list[str]) -> None:
    """Exit 2 where nothing was answered, EXIT_SOME_REFUSED where some of several refused, else return."""
    refused = [answer.benchmark for answer, reason in zip(answers, why, strict=True) if reason]
    if not refused:
        return
    if len(answers) == 1:
        raise BenchcastError(why[0])
    if len(refused) == len(answers):
        raise BenchcastError(f"none of the {len(answers)} benchmarks was answered: " + "; ".join(why))
    print_error(
        f"{len(refused)} of {len(answers)} benchmarks refused ({', '.join(refused)}; each row says why), the others "
        f"answered: exit status {EXIT_SOME_REFUSED}."
    )
    raise typer.Exit(EXIT_SOME_REFUSED)


def print_answers(answers: list, json: bool, source: str) -> None:
    """One answer as its own view, several as one JSON list or table (refusals saying why); then the exit status."""
    why = [_unanswered(a, source) for a in answers]  # by position: one benchmark may be asked with two metrics
    if json:
        docs = [a.to_dict() | ({"refused": w} if w else {}) for a, w in zip(answers, why, strict=True)]
        emit_json(answers[0].to_dict() if len(answers) == 1 else docs)
    elif len(answers) == 1:
        console.print(answers[0])
    else:
        _print_table(answers, why)
    _finish_answers(answers, why)


def _print_table(answers: list, why: list[str]) -> None:
    """Several answers as one table, a row per benchmark and point, then each one's notes."""
    import pandas as pd
    from rich.markup import escape

    from benchcast.forecasting.flags import describe, refused, short
    from benchcast.forecasting.forecast import bound_column

    frames = []
    for answer, unanswered in zip(answers, why, strict=True):
        if isinstance(answer, Refusal):
            frames.append(pd.DataFrame({"benchmark": [answer.benchmark], "flags": ["refused"]}))
            continue
        frame = answer.to_frame()
        if "forecaster" in frame:  # a forecast: its runs, prediction, bounds at the widest level and flags
            sizes = [c for c in ("params", "tokens", "tpr") if frame[c].notna().any()]
            bounds = [bound_column(side, answer.level) for side in ("lower", "upper")]
            marks = [("refused" if refused(f) else "flagged") if f else "" for f in frame["flags"]]
            marks = ["refused" if unanswered else mark for mark in marks]
            metric = ["metric"] if frame["metric"].astype(bool).any() else []  # which of the benchmark's metrics
            frame = frame[[*metric, "flops", *sizes, "prediction", *bounds]].assign(flags=marks)
        else:  # a plan: its flags are its own
            frame = frame.assign(flags=short(answer.flags).split(":")[0])
        frames.append(frame.assign(benchmark=answer.benchmark))
    table = pd.concat(frames, ignore_index=True)
    table = table[["benchmark", *(c for c in table.columns if c not in ("benchmark", "flags")), "flags"]]
    rows = [
        [("—" if v is None or isinstance(v, float) and v != v else v) for v in row] for row in table.values.tolist()
    ]
    title = next((a.title for a in answers if not isinstance(a, Refusal)), "refused: every benchmark")
    console.print(rich_table(title.split(": ", 1)[-1], list(table.columns), rows))
    for answer in answers:
        if isinstance(answer, Refusal):
            console.print(escape(f"{answer.benchmark}: refused: {answer.reason}"), highlight=False, soft_wrap=True)
            continue
        own = [] if "forecaster" in answer.to_frame() else [describe(answer.flags)]  # a plan's, not its frame's
        for note in [*answer.notes, *(n for n in own if n)]:
            console.print(escape(f"{answer.benchmark}: {note}"), highlight=False, soft_wrap=True)
