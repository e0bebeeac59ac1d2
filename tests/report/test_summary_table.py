"""The report's summary stays narrow with planned runs, and never reads "nan % MRE" (issue 32, item 12)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

import benchcast as bc
from benchcast.data.example import load_example
from benchcast.fitting.spec import FitSpec
from benchcast.report.analysis import analyse_benchmark
from benchcast.report.law_choice import choose_law
from benchcast.report.sections import summary_section


def test_summary_with_two_planned_runs_keeps_words_out_of_the_table():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = analyse_benchmark(
            load_example(),
            "arc_easy",
            "acc_norm",
            target_params=[7e9, 1.3e10],
            target_tokens=[4e12, 5e12],
            law="power",
            uncertainty=bc.Uncertainty(10),
        )
    targets = ["7e+09 parameters on 4e+12 tokens (C = 1.68e+23 FLOPs, TPR 571)", "1.3e+10 parameters on 5e+12 tokens"]
    html = summary_section([report], targets, 10)
    table = html[html.index("<table") : html.index("</table>")]
    headers = re.findall(r"<th[ >][^>]*>(.*?)</th>", table)
    assert "forecast @ T1" in headers and "forecast @ T2" in headers and "why" not in headers
    assert max(len(h) for h in headers) <= 25  # no planned run's description in a header
    assert "parameters on" not in table and report.choice.reason not in table  # the words are below the table
    assert "T1 = 7e+09 parameters on 4e+12 tokens" in html and report.choice.reason in html[html.index("</table>") :]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
    assert max(len(re.sub(r"<[^>]+>", "", c)) for c in cells) <= 60  # short cells: rows one or two lines tall


def test_summary_at_compute_targets_names_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = analyse_benchmark(
            load_example(), "arc_easy", "acc_norm", target_flops=[1e22], law="power", uncertainty=bc.Uncertainty(10)
        )
    html = summary_section([report], [1e22], 10)
    assert "forecast @ 1e+22" in html and "Targets:" not in html


def test_a_fallback_alone_is_not_said_to_err_by_nan():
    """Five runs: no candidate has support, the fallback forecasts alone and no origin checked the choice."""
    flops = np.geomspace(1e18, 1e20, 5)
    params = np.sqrt(flops / 120)
    table = bc.validate(
        pd.DataFrame(
            {
                "run": [f"r{i}" for i in range(5)],
                "params": params,
                "tokens": 20 * params,
                "benchmark": "b",
                "metric": "acc",
                "value": [0.33, 0.38, 0.45, 0.52, 0.6],
                "q_rand": 0.25,
            }
        ),
        "five.csv",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_law(table, FitSpec("power", "b", "acc"), tpr=None)
    assert "nan" not in choice.reason and "no rolling origin inside the runs checked the choice" in choice.reason
