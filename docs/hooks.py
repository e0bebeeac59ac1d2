"""MkDocs hooks: the CLI reference from the commands' own --help, the Python API from ``benchcast.__all__``.

Both are rendered at build time, so the pages cannot drift from the code. ``mkdocs build --strict`` runs in CI.
"""

from __future__ import annotations

import inspect
import os

CLI_MARKER = "<!-- cli-reference -->"
API_MARKER = "<!-- api-reference -->"


def _help(args: list[str]) -> str:
    """What ``benchcast ARGS --help`` prints, plain (no colour), 100 columns wide."""
    from typer.testing import CliRunner

    from benchcast.cli import app

    env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    out = CliRunner().invoke(app, [*args, "--help"], env=env, prog_name="benchcast")
    if out.exit_code != 0:
        raise RuntimeError(f"benchcast {' '.join(args)} --help failed: {out.output}")
    return out.output.rstrip()


def _commands() -> list[tuple[str, ...]]:
    """Every command and sub-command path, as the CLI declares them."""
    import typer

    from benchcast.cli import app

    root = typer.main.get_command(app)
    found: list[tuple[str, ...]] = []

    def walk(command, path):
        if hasattr(command, "commands"):  # a group (Typer's own click, or click's)
            for name in sorted(command.commands):
                walk(command.commands[name], (*path, name))
        elif path:
            found.append(path)

    walk(root, ())
    return found


def cli_reference() -> str:
    """The reference page's body: the top-level help, then each command's."""
    parts = ["```text", _help([]), "```"]
    for path in _commands():
        parts += ["", f"## benchcast {' '.join(path)}", "", "```text", _help(list(path)), "```"]
    return "\n".join(parts)


def api_reference() -> str:
    """Each name of ``benchcast.__all__``: its signature and docstring."""
    import benchcast

    parts = []
    for name in benchcast.__all__:
        obj = getattr(benchcast, name)
        try:
            signature = f"{name}{inspect.signature(obj)}" if callable(obj) else name
        except (TypeError, ValueError):
            signature = name
        doc = inspect.getdoc(obj) or ""
        parts += ["", f"## `{name}`", "", "```python", signature, "```", "", "```text", doc.strip(), "```"]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Fill the markers of the CLI and API pages."""
    os.environ.setdefault("BENCHCAST_NO_PROGRESS", "1")
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    return markdown
