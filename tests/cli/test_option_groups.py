"""The shared option groups (cli/groups.py): every command that reads a data file takes the whole data-source
group, the uncertainty options make one Uncertainty, and a group's new option reaches its commands from one entry."""

import inspect
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
import typer.main
from typer.testing import CliRunner

from benchcast.cli import app
from benchcast.cli.common import expand
from benchcast.cli.groups import SOURCE, UNCERTAINTY, DataSource

runner = CliRunner()
# bench reads several data sets (--data, --format and --metadata repeated, in order): not one data source
SEVERAL_SOURCES = {"bench"}


def _options(command) -> set[str]:
    return {opt for param in command.params for opt in (*param.opts, *param.secondary_opts)}


def test_every_command_that_reads_data_takes_the_whole_data_source_group():
    commands = typer.main.get_command(app).commands
    group = {f"--{name.replace('_', '-')}" for name in SOURCE.options if name != "data"}
    assert group == {"--format", "--metadata", "--column", "--q-rand", "--margin"}
    reading = {name for name, command in commands.items() if any(p.name == "data" for p in command.params)}
    assert {"inspect", "fit", "backtest", "sweep", "cutoff", "forecast", "plan", "recommend", "compare"} <= reading
    assert {"report", "kscan", "reproduce"} <= reading
    for name in sorted(reading - SEVERAL_SOURCES):
        assert group <= _options(commands[name]), f"{name} lacks {sorted(group - _options(commands[name]))}"


def test_a_new_option_of_a_group_is_one_entry():
    """An option added to a group's entries appears in every command taking the group, and its value is made
    from it: nothing else is edited."""
    flag = Annotated[int, typer.Option("--answer", help="A new shared option.")]
    grown = replace(SOURCE, options={**SOURCE.options, "answer": (flag, 42)})
    grown = replace(grown, make=lambda answer, **given: (DataSource(**given), answer))

    def command(source=grown, json: bool = False):
        return source

    expanded = expand(command)
    assert "answer" in inspect.signature(expanded).parameters
    source, answer = expanded(
        data=Path("x.csv"), format="auto", metadata=None, column=None, q_rand=None, margin=None, answer=7, json=False
    )
    assert (source.data, answer) == (Path("x.csv"), 7)
    probe = typer.Typer()
    probe.command()(expanded)
    shown = runner.invoke(probe, ["--help"])
    assert shown.exit_code == 0 and "--answer" in shown.output and "--margin" in shown.output


def test_the_uncertainty_options_make_one_uncertainty():
    made = UNCERTAINTY.make(boot=300, level=0.8, interval="bootstrap", seed=4)
    assert (made.n_boot, made.levels, made.interval, made.seed) == (300, (0.8,), "bootstrap", 4)
    assert UNCERTAINTY.but(drop=("level",)).make(boot=300, interval="bootstrap", seed=4).levels == (0.5, 0.9)


def test_jobs_beside_ray_is_refused_by_the_group(tmp_path):
    for command in (["forecast", str(tmp_path / "x.csv"), "-b", "a", "--flops", "1e22"], ["sweep", "x.csv", "-b", "a"]):
        out = runner.invoke(app, [*command, "--jobs", "2", "--ray", "auto"])
        assert out.exit_code == 2 and "--jobs" in out.output and "Ray" in out.output, out.output
