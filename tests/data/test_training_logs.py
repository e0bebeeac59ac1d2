"""Training-log exports read directly: the column rule, sizes from --metadata, checkpoints set aside, refusals."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from conftest import run_cli
from training_logs_ladder import SIZES, TPRS, write_ladder

import benchcast as bc
from benchcast.data.chance import chance_level
from benchcast.data.table import runs as table_runs
from benchcast.errors import DataError, DataWarning


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    return write_ladder(tmp_path_factory.mktemp("ladder"))


def _load(path, **options):
    with pytest.warns(DataWarning, match=r"324 earlier checkpoint\(s\) of 36 run\(s\) set aside"):
        return bc.load(path, **options)


def test_a_folder_of_exports_is_a_table_of_final_checkpoints(ladder):
    exports, meta = ladder
    table = _load(exports, metadata=meta)
    runs = table_runs(table).set_index("run")
    assert len(runs) == len(SIZES) * len(TPRS) + len(SIZES)  # 30 runs and a rerun of each 20 TPR run
    assert "ladder-3B-200xN" in runs.index and "ladder-3B-20xN-rerun" in runs.index
    assert sorted({round(t) for t in runs["tpr"]}) == list(TPRS)  # the final checkpoint is the whole run
    raw = pd.read_csv(exports / "ladder-1B-50xN.csv")
    last = raw.dropna(subset=["eval/c4_en/CrossEntropyLoss"]).iloc[-1]
    assert runs.loc["ladder-1B-50xN", "flops"] == pytest.approx(last["throughput/total_training_Gflops"] * 1e9)
    hs = bc.select(table, "hellaswag_val", "len_norm").set_index("run")
    assert hs.loc["ladder-1B-50xN", "value"] == last["eval/downstream/hellaswag_val_rc_5shot_len_norm"]
    assert set(table["metric"]) == {"len_norm", "acc", "bpb", "loss"}
    assert (hs["shots"] == 5).all() and (hs["format"] == "rc").all()
    level = chance_level("hellaswag_val", "len_norm", table=table)
    assert level.value == 0.25 and "read as task hellaswag" in level.source


def test_one_long_file_with_a_run_column_reads_as_the_folder(ladder, tmp_path):
    exports, meta = ladder
    long = pd.concat([pd.read_csv(f).assign(run=f.stem) for f in sorted(exports.glob("*.csv"))])
    long.to_csv(tmp_path / "history.csv", index=False)
    folder, file = _load(exports, metadata=meta), _load(tmp_path / "history.csv", metadata=meta)
    key = ["run", "benchmark", "metric"]
    pd.testing.assert_frame_equal(
        folder.sort_values(key).reset_index(drop=True)[[*key, "value", "flops"]],
        file.sort_values(key).reset_index(drop=True)[[*key, "value", "flops"]],
    )


def test_every_checkpoint_on_request(ladder):
    exports, meta = ladder
    table = bc.load(exports, metadata=meta, checkpoints="all")
    assert table["run"].nunique() == 360 and table["series"].nunique() == 36
    assert table.groupby("series")["final"].sum().eq(9).all()  # one final checkpoint per run, nine metrics each
    assert table["run"].str.fullmatch(r"ladder-.+@step\d+").all()


def test_the_metadata_names_the_final_step(ladder, tmp_path):
    exports, meta = ladder
    raw = pd.read_csv(exports / "ladder-190M-10xN.csv")
    steps = raw.dropna(subset=["eval/c4_en/CrossEntropyLoss"])["_step"].tolist()
    runs = pd.read_csv(meta).assign(final_step=np.nan)
    runs.loc[runs["run"] == "ladder-190M-10xN", "final_step"] = steps[4]  # stopped half way: its fifth evaluation
    runs.to_csv(tmp_path / "runs.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        table = bc.load(exports, metadata=tmp_path / "runs.csv")
    run = table_runs(table).set_index("run").loc["ladder-190M-10xN"]
    assert run["tokens"] == pytest.approx(raw.set_index("_step").loc[steps[4], "throughput/total_tokens"])


def _folder(tmp_path, frame: pd.DataFrame, name: str = "run-a") -> tuple:
    folder = tmp_path / "exports"
    folder.mkdir()
    frame.to_csv(folder / f"{name}.csv", index=False)
    return folder, folder / f"{name}.csv"


BASE = {"_step": [10, 20], "throughput/total_tokens": [1e9, 2e9], "params": [1e8, 1e8]}


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (
            {"eval/downstream/hellaswag_val_rc_5shot_len_norm": [0.3, 0.4], "params": [np.nan] * 2},
            r"run 'run-a' has no size: add a 'params' column, or give --metadata",
        ),
        ({"eval/custom/a/weird": [0.3, 0.4]}, r"logs no value in any evaluation column it can read"),
        (
            {
                "eval/downstream/piqa_val_rc_5shot_len_norm": [0.5, 0.6],
                "eval/downstream/piqa_val_mc_5shot_len_norm": [0.5, 0.6],
            },
            r"are both piqa_val:len_norm; keep one of them",
        ),  # two shot counts are two benchmarks; two formats not
        (
            {
                "eval/downstream/piqa_val_rc_5shot_len_norm": [0.5, 0.6],
                "throughput/total_training_Gflops": [6e8, np.nan],
            },
            r"logs an evaluation \(eval/downstream/piqa_val_rc_5shot_len_norm\) in a row without 'total_training_Gflops'",
        ),
    ],
)
def test_exports_the_rule_cannot_read_are_refused_by_file_and_column(tmp_path, columns, message):
    folder, file = _folder(tmp_path, pd.DataFrame({**BASE, **columns}))
    with pytest.raises(DataError, match=message) as caught:
        bc.load(folder)
    assert str(file) in str(caught.value)


def test_a_step_column_without_a_final_one_is_refused(tmp_path):
    frame = pd.DataFrame(
        {
            "run": ["a", "a"],
            "step": [1, 2],
            "params": 1e8,
            "tokens": [1e9, 2e9],
            "benchmark": "piqa",
            "metric": "acc",
            "value": [0.55, 0.6],
        }
    )
    frame.to_csv(tmp_path / "tidy.csv", index=False)
    with pytest.raises(DataError, match=r"tidy.csv: column 'step' marks checkpoints.*add a 'final' column"):
        bc.load(tmp_path / "tidy.csv")
    frame.assign(final=[False, True]).to_csv(tmp_path / "tidy.csv", index=False)
    with pytest.warns(DataWarning, match=r"1 earlier checkpoint\(s\) of 1 run\(s\) set aside"):
        table = bc.load(tmp_path / "tidy.csv")
    assert table["run"].tolist() == ["a"] and table["tokens"].tolist() == [2e9]


def test_forecast_and_inspect_read_the_exports(ladder):
    exports, meta = ladder
    out = run_cli(
        "forecast",
        str(exports),
        "--metadata",
        str(meta),
        "-b",
        "hellaswag_val:len_norm",
        "-b",
        "boolq_val:acc",
        "--params",
        "7e9",
        "--tokens",
        "4e12",
        "--n-boot",
        "20",
        "--json",
    )
    assert out.exit_code == 0, out.stderr
    assert "324 earlier checkpoint(s) of 36 run(s) set aside" in " ".join(out.stderr.split())
    for answer in json.loads(out.stdout):
        point = answer["forecasts"][0]
        assert 0 <= point["lower"] <= point["prediction"] <= point["upper"] <= 1
    shown = run_cli("inspect", str(exports), "--metadata", str(meta))
    assert shown.exit_code == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "TPR (runs) 10 (6), 20 (12), 50 (6), 100 (6), 200 (6)" in text
    assert "checkpoints: 360 of 36 runs (10 per run)" in text
    refused = run_cli("forecast", str(exports), "-b", "hellaswag_val:len_norm", "--flops", "1e23")
    assert refused.exit_code == 2 and "has no size" in refused.stderr and "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("benchmark", "metric", "level", "task"),
    [
        ("hellaswag_val", "acc_norm", 0.252, "hellaswag"),
        ("arc_challenge_test_rc_5shot", "len_norm", 0.25, "arc_challenge"),
        ("mmlu_stem_val", "len_norm", 0.25, "mmlu_stem"),
        ("boolq_val", "acc", 0.5, "boolq"),
        ("piqa_val", "acc", 0.5, "piqa"),
    ],
)
def test_split_and_shot_suffixes_resolve_to_the_known_task(benchmark, metric, level, task):
    found = chance_level(benchmark, metric)
    assert found.value == pytest.approx(level) and f"{benchmark} read as task {task}" in found.source


def test_a_suffix_on_an_unknown_task_stays_unknown():
    assert not chance_level("trivia_val", "len_norm").known  # 'trivia' is no task benchcast knows: no level guessed
    assert not chance_level("myeval_test", "acc").known


def test_other_column_spellings_are_named_on_the_command_line(ladder, tmp_path):
    exports, meta = ladder
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    for file in sorted(exports.glob("*.csv"))[:8]:
        frame = pd.read_csv(file).rename(columns={"throughput/total_tokens": "tok"})
        frame["throughput/total_flops"] = frame.pop("throughput/total_training_Gflops") * 1e9
        frame.to_csv(renamed / file.name, index=False)
    refused = run_cli("inspect", str(renamed), "--metadata", str(meta))
    assert refused.exit_code == 2 and "name the one that holds it with --column COLUMN=tokens" in refused.stderr
    args = ["--metadata", str(meta), "--column", "tok=tokens", "--column", "throughput/total_flops=flops", "--json"]
    shown = run_cli("inspect", str(renamed), *args)
    assert shown.exit_code == 0, shown.stderr
    assert json.loads(shown.stdout)["runs"] == 8
    with pytest.warns(DataWarning):
        table = bc.load(renamed, metadata=meta, columns={"tok": "tokens", "throughput/total_flops": "flops"})
    original = pd.read_csv(sorted(exports.glob("*.csv"))[0])
    last = original.dropna(subset=["eval/c4_en/CrossEntropyLoss"]).iloc[-1]
    run = table_runs(table).set_index("run").loc[sorted(exports.glob("*.csv"))[0].stem]
    assert run["flops"] == pytest.approx(last["throughput/total_training_Gflops"] * 1e9)  # the column named, not 6ND


def _tidy(tmp_path, **columns) -> object:
    frame = pd.DataFrame(
        {
            "run": ["a", "a"],
            "step": [1, 2],
            "params": 1e8,
            "tokens": [1e9, 2e9],
            "benchmark": "piqa",
            "metric": "acc",
            "value": [0.55, 0.6],
            **columns,
        }
    )
    frame.to_csv(tmp_path / "tidy.csv", index=False)
    return tmp_path / "tidy.csv"


def test_final_must_be_one_true_or_false_per_run(tmp_path):
    with pytest.raises(DataError, match=r"run 'a' has 2 checkpoints marked final; mark one"):
        bc.load(_tidy(tmp_path, final=[True, True]))
    with pytest.raises(DataError, match=r"column 'final' must hold true or false, got 'no'"):
        bc.load(_tidy(tmp_path, final=["no", "yes"]))


def test_metadata_that_names_no_logged_step_is_refused(ladder, tmp_path):
    exports, meta = ladder
    pd.read_csv(meta).assign(final_step=12345).to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(DataError, match=r"the metadata's final_step 12345 matches no evaluated step"):
        bc.load(exports, metadata=tmp_path / "runs.csv")


def test_a_task_not_scored_at_the_final_step_is_named(tmp_path):
    frame = pd.DataFrame(
        {
            "_step": [10, 20, 30],
            "throughput/total_tokens": [1e9, 2e9, 3e9],
            "params": 1e8,
            "eval/downstream/piqa_val_rc_5shot_acc": [0.55, 0.6, np.nan],
            "eval/downstream/boolq_val_rc_5shot_acc": [0.5, 0.55, 0.6],
        }
    )
    folder, _ = _folder(tmp_path, frame)
    with pytest.warns(DataWarning, match=r"piqa_val not evaluated at its final step 30"):
        bc.load(folder, checkpoints="all")


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (
            pd.DataFrame({**BASE, "_step": [10.5, 20], "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6]}),
            r"column '_step' must hold whole steps, got 10.5",
        ),
        (
            pd.DataFrame({**BASE, "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6], "other": 1}),
            r"\['nosuch'\] named by --column",
        ),
    ],
)
def test_steps_and_column_names_are_checked(tmp_path, frame, message):
    folder, _ = _folder(tmp_path, frame)
    with pytest.raises(DataError, match=message):
        bc.load(folder, columns={"nosuch": "tokens"} if "other" in frame else None)


def test_a_json_beside_the_exports_does_not_make_them_lm_eval(ladder, tmp_path):
    from benchcast.data.readers import detect_format

    exports, _ = ladder
    folder = tmp_path / "with-config"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    for file in sorted(exports.glob("*.csv"))[:2]:
        (folder / file.name).write_text(file.read_text())
    assert detect_format(folder) == "wandb"


def test_a_size_in_the_file_and_another_in_the_metadata_is_refused(tmp_path):
    folder, _ = _folder(tmp_path, pd.DataFrame({**BASE, "eval/downstream/piqa_val_rc_5shot_acc": [0.5, 0.6]}))
    pd.DataFrame({"run": ["run-a"], "params": [2e8]}).to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(
        DataError, match=r"run 'run-a' has params 1e\+08 in the file's params column and 2e\+08 in --metadata"
    ):
        bc.load(folder, metadata=tmp_path / "runs.csv")
