"""A parameter at the law's own constraint (information: 'constraint active: a ≤ 1') is told apart from
one at a search limit (a warning: 'at search limit: d1') wherever a bound is shown: the FitResult's
findings, recommend's ranking, kscan's table and the report's parameter table; the report never shows
a standard error of 0 for one the data do not give."""

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest
from conftest import law_table

import benchcast as bc
from benchcast import FitSpec
from benchcast.data.example import example_path
from benchcast.fitting.diagnostics import bound_findings
from benchcast.laws import get_law


@pytest.fixture(scope="module")
def ladder():
    return bc.load(example_path())


@pytest.fixture(scope="module")
def monotone(ladder):
    """bnsl_monotone on the bundled ladder's arc_easy: its asymptote a sits at the constraint a ≤ 1."""
    return bc.fit(ladder, "bnsl_monotone", "arc_easy", "acc_norm")


def test_the_constraint_and_the_search_limit_are_two_findings(monotone):
    assert monotone.params["a"] == pytest.approx(1.0)
    columns = monotone.bounds.columns()
    assert "a ≤ 1" in columns["constraint_active"].split(", ") and columns["at_search_limit"] == ""
    # d1 pushed to the top of its search range: a search limit, apart from the active constraint
    params = {**monotone.params, "d1": get_law("bnsl_monotone").parameters[4].upper}
    found = bound_findings(monotone.law_object, params, ["a", "d1"])
    assert found.columns() == {"constraint_active": "a ≤ 1", "at_search_limit": "d1"}
    assert found.flags == {"a": "constraint active", "d1": "at search limit"}


def test_recommend_ranks_with_constraints_apart_from_search_limits(ladder):
    rec = bc.recommend(ladder, FitSpec("power", "arc_easy", metric="acc_norm"))
    ranking = rec.ranking.set_index("law")
    assert "at_bound" not in ranking
    assert "a ≤ 1" in ranking.loc["bnsl_monotone", "constraint_active"]
    assert ranking.loc["bnsl_monotone", "at_search_limit"] == ""
    assert list(rec.to_frame().columns)[-2:] == ["constraint active", "at search limit"]
    assert not any("warning" in note for note in rec.notes)  # an active constraint is only information
    limited = dataclasses.replace(rec, ranking=rec.ranking.assign(at_search_limit=["", "d1"]))
    (warning,) = [note for note in limited.notes if "warning" in note]
    assert "at search limit: d1" in warning and "try" in warning


def test_kscan_columns_tell_the_constraint_from_the_search_limit():
    flops = np.geomspace(1e18, 1e23, 16)
    # E0 = 0: the compute law's floor sits on its own constraint E0 ≥ 0
    table = pd.concat(
        [
            law_table("compute", [0.0, 3e4, 0.22], {"flops": flops, "k": np.full(16, k)}, metric="pass@k")
            for k in (1, 4)
        ],
        ignore_index=True,
    )
    scan = bc.kscan(table, "compute", "synthetic")
    columns, rows = scan.rows()
    assert columns[-2:] == ["constraint active", "at search limit"]
    assert [row[-2:] for row in rows] == [["E0 ≥ 0", ""], ["E0 ≥ 0", ""]]
    assert list(scan.to_frame().columns)[-2:] == ["constraint active", "at search limit"]


def test_report_parameter_table_shows_no_zero_standard_error(monotone):
    from benchcast.report.sections import parameter_table

    page = parameter_table(monotone)
    assert "constraint active: a ≤ 1" in page and "at search limit" not in page and "std. error" in page
    degenerate = dataclasses.replace(monotone, stderr={**monotone.stderr, "b_ref": 0.0, "f1": float("nan")})
    page = parameter_table(degenerate)
    assert page.count("not identified") == 2 and "nan" not in page.lower()
    stderr_cells = [re.findall(r"<td[^>]*>(.*?)</td>", row)[2] for row in re.findall(r"<tr>(.*?)</tr>", page)[1:]]
    assert "0" not in stderr_cells and len(stderr_cells) == len(monotone.params)
    member = dataclasses.replace(monotone, stderr={})  # a strategy's member: fitted without standard errors
    page = parameter_table(member)
    assert "std. error" not in page and "standard errors not computed" in page
