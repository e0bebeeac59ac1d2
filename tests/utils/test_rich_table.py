"""A table too wide for the terminal folds its cells onto more lines: nothing is cut with an ellipsis."""

from __future__ import annotations

import io

from rich.console import Console

from benchcast.utils.rich_view import rich_table


def test_a_narrow_terminal_folds_names_messages_and_numbers_whole():
    """At 60 columns, a proxy's name, the law named in its refusal and a long number each survive whole."""
    message = "proxy_logistic: 2 point(s) cannot determine 2 free parameters; more than 2 distinct points are needed."
    table = rich_table(
        "proxy",
        ["benchmark", "proxy", "n", "r2", "rmse", "refused"],
        [["arc_easy", "arc_easy:brier", 2, 0.123456789, float("nan"), message]],
        floatfmt=".9f",
    )
    console = Console(width=60, file=io.StringIO(), color_system=None)
    console.print(table)
    printed = console.file.getvalue()
    body = [line.split("│")[1:-1] for line in printed.splitlines() if line.startswith("│")]
    columns = ["".join(cell.strip() for cell in column) for column in zip(*body, strict=True)]  # each read down
    assert "…" not in printed
    assert columns[1] == "arc_easy:brier" and columns[3] == "0.123456789"
    assert "".join(columns[5].split()) == "".join(message.split())
