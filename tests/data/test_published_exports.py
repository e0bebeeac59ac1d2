"""A lab's exports as they are published (issue #49): every column family read, W&B run folders, N from a config,
the checkpoint rule of inspect, reader edge values, ratio groups, task groups and the whole flow on the fixture."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED, require_shared, run_cli
from training_logs_ladder import write_ladder

import benchcast as bc
from benchcast.data.table import at_tpr, group_mean, summary, tpr_level
from benchcast.errors import DataError, DataWarning, SelectionError

OLMO = SHARED.parent / "olmo-exports"


def _quiet_load(path, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return bc.load(path, **options)


@pytest.fixture(scope="module")
def olmo():
    folder = require_shared(OLMO)
    return folder, folder / "runs.csv", _quiet_load(folder, metadata=folder / "runs.csv")


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    return write_ladder(tmp_path_factory.mktemp("published"), published=True)


def test_the_published_exports_read_every_family_and_the_sizes_file_is_no_run(olmo):
    folder, meta, table = olmo
    assert sorted(table["run"].unique()) == sorted(pd.read_csv(meta)["run"])  # runs.csv in the folder: not a run
    assert set(table["family"]) == {
        "eval/downstream",
        "eval/downstream_bpb",
        "eval/downstream_soft",
        "eval/downstream_soft_log",
        "eval/<corpus>/CrossEntropyLoss",
    }
    assert set(table["metric"]) == {"len_norm", "acc", "bpb", "soft", "soft_log", "loss"}
    assert set(table["params_source"]) == {"--metadata runs.csv"}
    loss = bc.select(table, "c4_en-validation", "loss")
    assert (loss["value"] > 1).all()  # a loss in nats, read and never range-checked as a score
    soft = bc.select(table, "hellaswag_val", "soft").set_index("run")["value"]
    log = bc.select(table, "hellaswag_val", "soft_log").set_index("run")["value"]
    assert sorted(soft.index) == sorted(log.index) and len(soft) == 5
    log = log.reindex(soft.index)
    # the mean probability of the answer and the mean of its log, paired by run: the log of a mean is never below it
    assert ((log <= np.log(soft)) & (log > np.log(soft) - 0.05)).all()
    assert bc.select(table, "hellaswag_val")["metric"].eq("len_norm").all()  # the one score metric, no --metric


def test_the_sizes_file_in_the_folder_is_no_run_without_metadata_or_with_a_copy_elsewhere(olmo, tmp_path):
    folder, meta, table = olmo
    with pytest.warns(DataWarning, match=r"runs\.csv looks like a sizes table \(run, params\), not a run history"):
        with pytest.raises(
            DataError,
            match=r"runs\.csv beside it looks like the sizes \(run, params\): pass it with "
            r"--metadata .*runs\.csv",
        ) as raised:
            bc.load(folder)
    assert "drop its 'run' column" not in str(raised.value)
    copy = tmp_path / "olmo"
    copy.mkdir()
    for file in folder.glob("*.csv"):
        (copy / file.name).write_bytes(file.read_bytes())
    (tmp_path / "runs_copy.csv").write_bytes(meta.read_bytes())
    with pytest.warns(DataWarning, match=r"runs\.csv looks like a sizes table .*not read \(--metadata runs_copy\.csv"):
        again = bc.load(copy, metadata=tmp_path / "runs_copy.csv", checkpoints="all")
    assert sorted(again["series"].unique()) == sorted(pd.read_csv(meta)["run"])
    assert set(again["params_source"]) == {"--metadata runs_copy.csv"}
    cli = run_cli("inspect", str(folder))
    assert cli.exit_code == 2 and "pass it with --metadata" in cli.stderr and "drop its" not in cli.stderr


def test_a_table_of_the_folder_without_steps_or_evaluations_is_skipped_with_a_note(tmp_path):
    folder = _folder(tmp_path, {"eval/downstream/piqa_val_rc_0shot_len_norm": [0.6, 0.65]})
    pd.DataFrame({"run": ["run-a"], "recipe": ["x"]}).to_csv(folder / "notes.csv", index=False)
    with pytest.warns(DataWarning, match=r"notes\.csv looks like a table \(run, recipe\), not a run history.*skipped"):
        table = bc.load(folder, checkpoints="all")
    assert set(table["series"]) == {"run-a"}


def test_a_forecast_names_the_metric_it_used_in_its_table_and_json(olmo):
    folder, meta, _ = olmo
    args = (str(folder), "--metadata", str(meta), "-N", "6.9e9", "-D", "3.9e12", "--n-boot", "10")
    one = run_cli("forecast", *args, "-b", "hellaswag_val", "--json")  # no metric asked: the one score metric
    assert one.exit_code == 0, one.stderr
    doc = json.loads(one.stdout)
    assert doc["metric"] == "len_norm" and [r["metric"] for r in doc["forecasts"]] == ["len_norm"]
    shown = run_cli("forecast", *args, "-b", "hellaswag_val")
    assert "hellaswag_val (len_norm): forecast of the" in shown.stdout
    several = run_cli("forecast", *args, "-b", "hellaswag_val", "-b", "boolq_val:acc")
    assert several.exit_code == 0, several.stderr
    assert re.search(r"hellaswag_val\s*│\s*len_norm", several.stdout), several.stdout
    assert re.search(r"boolq_val\s*│\s*acc", several.stdout), several.stdout


def test_a_forecast_whose_bootstrap_refits_mostly_fail_is_flagged_with_the_count(olmo):
    folder, meta, _ = olmo  # mmlu_val: 3 runs above chance for 2 parameters, most resamples cannot be refitted
    args = (str(folder), "--metadata", str(meta), "-b", "mmlu_val", "-N", "6.9e9", "-D", "3.9e12", "--n-boot", "40")
    out = run_cli("forecast", *args, "--json")
    assert out.exit_code == 0, out.stderr
    doc = json.loads(out.stdout)
    failed = doc["failed_refits"] + doc["dropped_refits"]
    assert failed > 10
    flag = f"flagged: interval from {40 - failed} of 40 replicates: {doc['failed_refits']} refits failed"
    assert flag in doc["forecasts"][0]["flags"]


def _folder(tmp_path, columns: dict, name: str = "run-a"):
    folder = tmp_path / "exports"
    folder.mkdir(exist_ok=True)
    base = {"_step": [10, 20], "throughput/total_tokens": [1e9, 2e9], "params": [1e8, 1e8]}
    pd.DataFrame({**base, **columns}).to_csv(folder / f"{name}.csv", index=False)
    return folder


def test_a_family_no_rule_reads_is_skipped_with_one_note(tmp_path):
    folder = _folder(
        tmp_path,
        {
            "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6],
            "eval/downstream_weird/a/piqa": [1.0, 2.0],
            "eval/downstream_weird/b/piqa": [1.0, 2.0],
            "eval/notes": ["ok", "ok"],
        },
    )
    with pytest.warns(DataWarning) as caught:
        table = bc.load(folder)
    notes = [str(w.message) for w in caught if "skipped" in str(w.message)]
    assert len(notes) == 2, notes
    assert any("eval/downstream_weird/... skipped (2 column(s)" in n for n in notes)
    assert any("eval/notes" in n and "(1 column(s)" in n for n in notes)
    assert set(table["benchmark"]) == {"piqa_val"}


def test_a_task_at_two_shot_counts_is_two_benchmarks_and_its_bare_name_is_refused(tmp_path):
    folder = _folder(
        tmp_path,
        {
            "eval/downstream/piqa_val_rc_0shot_len_norm": [0.55, 0.6],
            "eval/downstream/piqa_val_rc_5shot_len_norm": [0.57, 0.63],
            "eval/downstream/hellaswag_val_rc_5shot_len_norm": [0.3, 0.35],
        },
    )
    with pytest.warns(DataWarning, match=r"one benchmark per count \(<task>_<n>shot\): piqa_val at 0, 5 shots"):
        table = bc.load(folder, checkpoints="all")  # the file is read, not refused
    assert set(table["benchmark"]) == {"piqa_val_0shot", "piqa_val_5shot", "hellaswag_val"}
    five = bc.select(table, "piqa_val_5shot")
    assert five["value"].tolist() == pytest.approx([0.57, 0.63]) and (five["shots"] == 5).all()
    assert bc.select(table, "hellaswag_val")["value"].tolist() == pytest.approx([0.3, 0.35])
    with pytest.raises(
        SelectionError,
        match=r"'piqa_val' is evaluated at several shot counts \(0, 5\): name one "
        r"\(-b piqa_val_0shot, -b piqa_val_5shot\)",
    ):
        bc.select(table, "piqa_val")


def test_lm_eval_and_other_evaluator_names_are_read(tmp_path):
    folder = _folder(
        tmp_path,
        {
            "hellaswag/acc_norm,none": [0.3, 0.4],
            "hellaswag/acc_norm_stderr,none": [0.01, 0.02],
            "hellaswag/alias": ["hellaswag", "hellaswag"],
            "eval/lm/c4_en/CE loss": [3.1, 2.9],
            "eval/downstream/piqa_rc_0shot (length-normalized accuracy)": [0.55, 0.6],
            "eval/arc_easy/acc": [0.4, 0.5],
        },
    )
    table = bc.load(folder, checkpoints="all")  # hellaswag/alias (text, no filter) is no evaluation column: not read
    got = {(b, m) for b, m in zip(table["benchmark"], table["metric"], strict=True)}
    assert got == {("hellaswag", "acc_norm"), ("c4_en", "loss"), ("piqa_rc_0shot", "len_norm"), ("arc_easy", "acc")}
    assert table.loc[table["benchmark"] == "hellaswag", "stderr"].tolist() == pytest.approx([0.01, 0.02])
    shown = run_cli("inspect", str(folder), "--json")
    assert shown.exit_code == 0, shown.stderr
    families = json.loads(shown.stdout)["families"]  # the columns read, the stderr column among them
    assert families["lm-eval <task>/<metric>,<filter>"] == {"columns": 2, "metrics": ["acc_norm"]}


def test_a_wandb_run_folder_gives_its_size_from_its_config(tmp_path):
    root = tmp_path / "wandb"
    for name, size in (("run-a", 1e8), ("run-b", 3e8)):
        (root / name / "files").mkdir(parents=True)
        pd.DataFrame(
            {
                "_step": [10, 20],
                "throughput/total_tokens": [1e9, 2e9],
                "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6],
            }
        ).to_csv(root / name / "history.csv", index=False)
        total = f"    n_params: {size:g}\n" if name == "run-a" else ""  # run-b's config gives only its non-embedding N
        (root / name / "files" / "config.yaml").write_text(
            f"model:\n  value:\n    non_embedding_params: {size * 0.8:g}\n{total}    d_model: 64\n"
        )
    table = _quiet_load(root)
    assert dict(zip(table["run"], table["params"], strict=True)) == {"run-a": 1e8, "run-b": 2.4e8}  # total first
    shown = run_cli("inspect", str(root))
    assert shown.exit_code == 0, shown.stderr
    assert (
        "N (params) from: config config.yaml (model.n_params, total N) (1 runs), config config.yaml "
        "(model.non_embedding_params, non-embedding N) (1 runs)"
    ) in " ".join(shown.stdout.split())
    pd.DataFrame({"run": ["run-a"], "params": [2e8]}).to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(DataError, match=r"run 'run-a' has params 2e\+08 in --metadata runs.csv and 1e\+08 in config"):
        bc.load(root, metadata=tmp_path / "runs.csv")


@pytest.mark.parametrize(
    ("step", "message"),
    [(1e30, r"'_step' must hold steps below 2\*\*53 .*got 1e\+30"), (-10, r"'_step' must hold steps >= 0, got -10")],
)
def test_steps_that_would_move_the_final_checkpoint_are_refused(tmp_path, step, message):
    folder = _folder(tmp_path, {"_step": [10, step], "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6]})
    with pytest.raises(DataError, match=message) as caught:
        bc.load(folder)
    assert "run-a.csv: run 'run-a'" in str(caught.value)


def test_a_blank_run_name_in_one_long_file_is_refused(tmp_path):
    pd.DataFrame(
        {
            "run": ["a", "  "],
            "_step": [10, 20],
            "throughput/total_tokens": [1e9, 2e9],
            "params": 1e8,
            "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6],
        }
    ).to_csv(tmp_path / "h.csv", index=False)
    with pytest.raises(DataError, match=r"h.csv: row 1 has no 'run' \(it holds '  '\)"):
        bc.load(tmp_path / "h.csv")


@pytest.mark.parametrize(
    ("final", "message"),
    [
        (["True", "True"], "has 2 checkpoints marked final; mark one"),
        (["no", "yes"], "must hold true or false, got 'no'"),
        (["False", "False"], "no checkpoint of any of the 1 run"),
    ],
)
def test_inspect_reads_checkpoints_by_the_rule_of_fit(tmp_path, final, message):
    pd.DataFrame(
        {
            "run": "a",
            "step": [1, 2],
            "params": 1e8,
            "tokens": [1e9, 2e9],
            "benchmark": "piqa",
            "metric": "acc",
            "value": [0.55, 0.6],
            "final": final,
        }
    ).to_csv(tmp_path / "t.csv", index=False)
    outs = [
        run_cli(command, str(tmp_path / "t.csv"), *extra)
        for command, extra in (("inspect", ()), ("fit", ("-b", "piqa")))
    ]
    for out in outs:
        assert out.exit_code == 2 and message in out.stderr and "Traceback" not in out.stderr
    assert outs[0].stderr == outs[1].stderr


def test_ratios_within_one_percent_are_one_group_and_a_chain_is_bounded():
    tpr = [10, 10.05, 20, 99.6, 99.9, 100.3, 100.6, 199.8, 200.4, np.nan]
    level = tpr_level(tpr)
    assert np.array_equal(level[:-1], [0, 0, 1, 2, 2, 2, 2, 3, 3]) and np.isnan(level[-1])
    assert at_tpr(tpr, 100).tolist() == [False] * 3 + [True] * 4 + [False] * 3  # 100.6 is 0.6 % from 100: the group
    assert not at_tpr(tpr, 150).any()
    chain = np.geomspace(10, 12, 21)  # steps of 0.92 %: each within 1 % of the previous, but 20 % end to end
    level = tpr_level(chain)
    assert np.unique(level).size > 1  # the chain is split: no group spans more than 1 % either side of its centre
    assert all(chain[level == lv].max() / chain[level == lv].min() <= 1.01**2 for lv in np.unique(level))
    assert chain[at_tpr(chain, 10)].max() < 10.1 * 1.01


def test_the_published_ladder_groups_its_rounded_ratios(published):
    folder, meta = published
    table = _quiet_load(folder, metadata=meta)
    tprs = table.drop_duplicates("run")["tpr"].to_numpy()
    hundred = tprs[(tprs > 90) & (tprs < 110)]
    assert hundred.max() / hundred.min() > 1.005  # the ratios are spread by rounding (99.8 .. 100.4) ...
    info = summary(table)
    assert info["tpr"] == pytest.approx([10, 20, 50, 100, 200], rel=0.01) and info["tpr_runs"] == [5, 10, 5, 5, 5]
    rows = bc.select(table, "hellaswag_val", "len_norm", tpr=100)  # ... and --tpr takes the whole group
    assert rows["run"].nunique() == 5


def _groups_table():
    rows = []
    for run, scale in (("r1", 1.0), ("r2", 2.0), ("r3", 3.0)):
        for sub, value in (("stem", 0.3), ("humanities", 0.4), ("other", 0.5)):
            if run == "r3" and sub == "other":
                continue  # r3 lacks a subtask: no mean of the group there
            for split in ("val", "test"):
                rows.append(
                    {
                        "run": run,
                        "params": 1e8 * scale,
                        "tokens": 2e9 * scale,
                        "benchmark": f"mmlu_{sub}_{split}",
                        "metric": "acc",
                        "value": value * scale / 3,
                        "stderr": 0.01,
                    }
                )
    return bc.validate(pd.DataFrame(rows))


def test_a_task_group_is_the_mean_of_its_subtasks_where_each_is_present():
    table = _groups_table()
    with pytest.warns(
        DataWarning, match=r"'mmlu_val' is the unweighted mean of its 3 subtasks .*\(2 runs\); 1 run\(s\)"
    ):
        rows = bc.select(table, "mmlu_val")
    assert rows.set_index("run")["value"].to_dict() == pytest.approx({"r1": 0.4 / 3, "r2": 0.8 / 3})
    assert rows["stderr"].to_numpy() == pytest.approx(np.sqrt(3 * 0.01**2) / 3)
    with pytest.raises(
        SelectionError, match=r"'mmlu' is a task group whose subtasks span several splits: mmlu_test .*; mmlu_val"
    ):
        bc.select(table, "mmlu")
    with pytest.raises(SelectionError, match=r"unknown benchmark 'mmlu_dev'"):
        bc.select(table, "mmlu_dev")


def test_a_task_group_mean_keeps_checkpoints_apart_and_names_its_own_sources():
    rows = [
        {
            "run": "r1",
            "step": step,
            "params": 1e8,
            "tokens": 1e9 * step,
            "benchmark": f"mmlu_{sub}_val",
            "metric": "acc",
            "k": pd.NA,
            "value": value * step,
            "stderr": 0.01,
            "q_rand": 0.25,
            "q_rand_source": f"measured ({sub})",
            "family": family,
            "shots": shots,
        }
        for step in (1, 2)
        for sub, value, family, shots in (("stem", 0.1, "eval/downstream", 5), ("other", 0.3, "eval/x", 0))
    ]
    with pytest.warns(DataWarning, match="unweighted mean of its 2 subtasks"):
        out = group_mean(pd.DataFrame(rows), "mmlu_val", ["mmlu_other_val", "mmlu_stem_val"])
    assert out.set_index("step")["value"].to_dict() == pytest.approx({1: 0.2, 2: 0.4})  # per checkpoint, not pooled
    assert out["family"].eq("eval/downstream + eval/x").all()
    assert out["q_rand_source"].eq("mean of its 2 subtasks' levels (measured (other); measured (stem))").all()
    assert out["shots"].isna().all()  # the subtasks disagree: not the first one's


FLOW = (
    "-b",
    "hellaswag_val:len_norm",
    "-b",
    "arc_easy_val:len_norm",
    "-b",
    "mmlu_val:len_norm",
    "-b",
    "boolq_val:acc",
    "-N",
    "6.9e9",
    "-D",
    "3.9e12",
    "-N",
    "13e9",
    "-D",
    "5e12",
    "--n-boot",
    "10",
)


def _flow(folder, meta, tmp_path, benchmarks) -> dict:
    """inspect, a forecast of several tasks for two planned runs, plan --forecast-tpr 380 (a compute for the target
    at TPR 380) and report: each exits 0."""
    args = (str(folder), "--metadata", str(meta))
    shown = run_cli("inspect", *args)
    assert shown.exit_code == 0, shown.stderr
    forecast = run_cli("forecast", *args, *benchmarks, "--json")
    assert forecast.exit_code == 0, forecast.stderr
    plan = run_cli(
        "plan", *args, "-b", "hellaswag_val:len_norm", "--target", "0.9", "--forecast-tpr", "380", "--n-boot", "10"
    )
    assert plan.exit_code == 0, plan.stderr
    assert re.search(r"compute \(FLOPs\) needed for score 0\.9: \d\.\d+e\+\d+", plan.stdout), plan.stdout
    assert "(TPR 380)" in plan.stdout
    report = run_cli("report", *args, *benchmarks, "-o", str(tmp_path / "report.html"))
    assert report.exit_code == 0, report.stderr
    assert (tmp_path / "report.html").stat().st_size > 10_000
    return {
        "inspect": " ".join(shown.stdout.split()),
        "forecast": json.loads(forecast.stdout),
        "plan": plan,
        "stderr": " ".join(forecast.stderr.split()),
    }


def _check_answers(answers, benchmarks) -> None:
    assert [a["benchmark"] for a in answers] == benchmarks
    for answer in answers:
        assert len(answer["forecasts"]) == 2
        for point, tpr in zip(answer["forecasts"], (565, 385), strict=True):  # 3.9e12 / 6.9e9 and 5e12 / 13e9
            assert 0 <= point["prediction"] <= 1
            # beyond the ladder's TPRs (at most 200): the TPR-extrapolation flag, by name
            outside = rf"flagged: target TPR {tpr} lies outside the fitted runs' TPR \("
            assert re.search(outside, point["flags"]), point["flags"]  # the point's flags, as one text


@pytest.mark.slow
def test_the_whole_flow_on_the_published_fixture(olmo, tmp_path):
    folder, meta, _ = olmo
    out = _flow(folder, meta, tmp_path, FLOW)
    assert "TPR (runs) 200 (5)" in out["inspect"] and "N (params) from: --metadata runs.csv (5 runs)" in out["inspect"]
    assert "eval/downstream_soft (20: soft)" in out["inspect"]
    _check_answers(out["forecast"], ["hellaswag_val", "arc_easy_val", "mmlu_val", "boolq_val"])
    assert "'mmlu_val' is the unweighted mean of its 4 subtasks" in out["stderr"]


@pytest.mark.slow
def test_the_whole_flow_on_a_synthetic_ladder_in_the_published_format(published, tmp_path):
    folder, meta = published
    # two of the fixture flow's tasks: a score column and a task group's mean (boolq_val's acc is read in the flow
    # on the published fixture above); each task is a default forecast and a report section on the 30-run ladder
    benchmarks = [a for a in FLOW if a != "-b" and ":" in a and a.split(":")[0] in ("hellaswag_val", "mmlu_val")]
    args = [x for b in benchmarks for x in ("-b", b)] + list(FLOW[FLOW.index("-N") :])
    out = _flow(folder, meta, tmp_path, args)
    assert "TPR (runs) 10 (5), 20 (10), 50 (5), 100 (5), 200 (5)" in out["inspect"]
    _check_answers(out["forecast"], [b.split(":")[0] for b in benchmarks])
