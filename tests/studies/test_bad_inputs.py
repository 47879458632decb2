"""The study commands and the task-family API on bad input: every plan checked in the parent before a worker
starts, one error line (exit status 2), nothing written, within seconds; readers that name the file, the row
and the column; values refused where they are taken. And the random walk alone, which used to fail."""

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.cli.main import main
from aps_teach.grid.train import TrainConfig
from aps_teach.infra.sweeps import config_hash, read_rows
from aps_teach.studies.task_families import COLUMNS, FamilyBudget, write_family_tables

ROOT = Path(__file__).parents[2]
STUDY = ROOT / "results" / "task_families"
AXIS_256K = ROOT / "results" / "task_families_budget" / "pretrain_256000"


def copy_study(tmp_path: Path, source: Path = AXIS_256K, name: str = "study") -> Path:
    target = tmp_path / name
    target.mkdir()
    for file in ("task_families.csv", "task_families.sweep.json"):
        shutil.copy(source / file, target / file)
    return target


CASES = {
    "huge pretraining": (
        ["families", "--pretrain-steps", "10000000000"],
        "pretrain_steps makes 10,000,000,000",
    ),
    "huge evaluation": (["families", "--eval-episodes", "100000000"], "eval_episodes makes"),
    "huge identification": (["families", "--identify-steps", "2000000000"], "identify_steps makes"),
    "huge axis budget": (["families-budget", "--pretrain-steps", "10000000000"], "pretrain_steps makes"),
    "huge --seeds, families": (
        ["families", "--seeds", "100000000"],
        "--seeds must be an integer >= 1 and <= 10000",
    ),
    "huge --seeds, axis": (["families-budget", "--seeds", "100000000"], "--seeds must be an integer >= 1"),
    "huge --seeds, sweep": (["sweep", "--seeds", "100000000"], "--seeds must be an integer >= 1"),
    "huge --seeds, parts": (["parts", "--seeds", "100000000"], "--seeds must be an integer >= 1"),
    "no level": (["families", "--levels"], "levels must list one or more of easy, hard, deep"),
    "no arm": (["families", "--arms"], "arms must name distinct arms of 'visr'"),
    "repeated protocol": (["families", "--protocols", "finetuned", "finetuned"], "distinct protocols"),
    "protocol of no arm": (
        ["families", "--arms", "visr", "--protocols", "finetuned_exploring"],
        "'finetuned_exploring' applies to none of the arms visr",
    ),
    "dqn on the budget axis": (
        ["families-budget", "--arms", "dqn"],
        "--arms 'dqn' is not valid; valid: visr",
    ),
    "huge budget study": (["study", "--grid.pretrain-steps", "10000000000"], "pretrain_steps makes"),
    "unknown level in the budget study": (
        ["study", "--grid.levels", "easy", "medium"],
        "unknown level 'medium'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_study_plan_is_one_line_before_anything_starts(case, tmp_path, capsys):
    args, message = CASES[case]
    out = tmp_path / "out"
    start = time.perf_counter()
    assert main(["gridworld", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists() and time.perf_counter() - start < 30


def test_also_studies_are_checked_before_the_axis_runs(tmp_path, capsys):
    study = copy_study(tmp_path)
    other = copy_study(tmp_path, STUDY, "other")
    cases = [
        (["--also", str(study), str(study)], "names .* twice"),
        (
            ["--also", str(study), "--pretrain-steps", "256000"],
            "is at 256,000 pretraining steps, as this command",
        ),
        (["--also", str(study), "--level", "easy", "--pretrain-steps", "3200"], "has no rows on level easy"),
        (
            ["--also", str(other), "--finetune-steps", "800", "--pretrain-steps", "3200"],
            "ran at other per-task budgets",
        ),
    ]
    for args, message in cases:
        out = tmp_path / "out"
        assert main(["gridworld", "families-budget", "--out", str(out), *args]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and pytest.importorskip("re").search(message, err), err
        assert not out.exists()
    (study / "task_families.sweep.json").write_text("{not json")
    assert main(["gridworld", "families-budget", "--out", str(tmp_path / "out"), "--also", str(study)]) == 2
    err = capsys.readouterr().err
    assert "task_families.sweep.json is not the record of a task-family study (not JSON" in err
    (study / "task_families.sweep.json").write_text(json.dumps({"train": {}}))
    assert main(["gridworld", "families-budget", "--out", str(tmp_path / "out"), "--also", str(study)]) == 2
    assert "no budget's pretrain_steps" in capsys.readouterr().err


@pytest.mark.parametrize(
    "command", [["families", "--levels", "easy"], ["families-budget", "--level", "easy"]]
)
def test_the_random_walk_alone_completes_with_its_coverage_table(command, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(
            [
                "gridworld",
                *command,
                "--out",
                str(out),
                "--arms",
                "random",
                "--seeds",
                "2",
                "--pretrain-steps",
                "3200",
            ]
        )
        == 0
    )
    table = next(out.rglob("coverage.csv"))
    rows = read_rows(table)
    assert [(row["arm"], row["seeds"], row["pretrain_steps"]) for row in rows] == [("random", "2", "3200")]
    assert 0 < float(rows[0]["state_coverage"]) <= 1
    assert not list(out.rglob("*verdicts.csv"))  # no header-less tables


def test_a_study_of_one_arm_writes_no_empty_tables(tmp_path):
    study = copy_study(tmp_path, STUDY)
    rows = read_rows(study / "task_families.csv", COLUMNS)
    visr = [row for row in rows if row["method"] == "visr"]
    text = (study / "task_families.csv").read_text().splitlines()
    keep = {i for i, row in enumerate(rows, 1) if row["method"] == "visr"}
    (study / "task_families.csv").write_text(
        "\n".join(line for i, line in enumerate(text) if i == 0 or i in keep) + "\n"
    )
    assert len(read_rows(study / "task_families.csv", COLUMNS)) == len(visr)
    written = [path.name for path in write_family_tables(study)]
    assert written == ["coverage.csv", "classes.csv"]
    assert all(path.stat().st_size > 100 for path in study.glob("*.csv"))


@pytest.mark.parametrize(
    ("value", "column"),
    [("-3", "seed"), ("1e300", "normalised_score"), ("nan", "normalised_score"), ("1.7", "state_coverage")],
)
def test_a_task_family_row_out_of_range_is_named_by_file_row_and_column(value, column, tmp_path):
    study = copy_study(tmp_path)
    path = study / "task_families.csv"
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[5].split(",")
    cells[header.index(column)] = value
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=f"{path}, row 6: column '{column}' holds '{value}'"):
        read_rows(path, COLUMNS)


def test_a_results_file_of_random_bytes_is_named(tmp_path):
    path = tmp_path / "figure4.csv"
    path.write_bytes(bytes(range(128, 256)) * 4)
    with pytest.raises(ValueError, match=f"{path} is not a results file \\(not UTF-8 text"):
        read_rows(path)


def test_force_replaces_a_run_whose_config_is_unreadable(tmp_path):
    from aps_teach.infra.run_dir import RunDir

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.config_path.write_text("{not json")
    (run.path / "summary.json").write_text("{}")
    with run:
        with pytest.raises(ValueError, match="corrupt run config .* not valid JSON"):
            run.claim({"seed": 0})
        assert run.claim({"seed": 0}, force=True) == {"seed": 0}
    assert json.loads(run.config_path.read_text()) == {"seed": 0} and not (run.path / "summary.json").exists()


def test_configs_hold_plain_values():
    assert config_hash(FamilyBudget(pretrain_steps=np.int64(3200))) == config_hash(
        FamilyBudget(pretrain_steps=3200)
    )
    config = TrainConfig(device=torch.device("cpu"))
    assert config.device == "cpu" and config_hash(config) == config_hash(TrainConfig())
    with pytest.raises(TypeError, match="device must be a device name: cpu, cuda or cuda:N"):
        TrainConfig(device=3)


BAD_VALUES = {
    "a level that is a number": (
        lambda: gridworld.Task(123, "x", "box", [(1, 1)]),
        TypeError,
        "level must be a level name .* got int 123",
    ),
    "a family of a list": (
        lambda: gridworld.task_family(["easy"]),
        ValueError,
        "no task family for level \\['easy'\\]; levels with families",
    ),
    "rooms of a number": (lambda: gridworld.rooms(123), TypeError, "level must be a level name"),
    "a huge box value": (
        lambda: gridworld.Task("easy", "x", "box", [(1, 1)], value=1e308),
        ValueError,
        "value must be a finite non-zero number of size at most 1e\\+100",
    ),
    "half a box": (
        lambda: gridworld.random_box_reward_map("open10", 1.5, 2, 0),
        ValueError,
        "need integers 1 <= num_boxes <= 100",
    ),
    "a million boxes": (
        lambda: gridworld.random_box_reward_map("open10", 10**6, 2, 0),
        ValueError,
        "num_boxes=1000000",
    ),
    "a box paying nan": (
        lambda: gridworld.random_box_reward_map("open10", 2, 2, 0, value=float("nan")),
        ValueError,
        "value must be a finite number",
    ),
    "a reward map of letters": (
        lambda: gridworld.make("open10", reward_map=[["a"] * 12] * 12),
        ValueError,
        "reward map values must be real numbers, got an array of <U1",
    ),
}


@pytest.mark.parametrize("case", list(BAD_VALUES))
def test_bad_values_name_the_argument(case):
    make, kind, message = BAD_VALUES[case]
    with pytest.raises(kind, match=message):
        make()


def test_a_painter_refuses_nan_and_evaluate_refuses_a_missing_w():
    from aps_teach.course.widgets import reward_painter
    from aps_teach.grid.train import evaluate, new_learner

    with pytest.raises(ValueError, match="value must be in"):
        reward_painter("open10", value=float("nan"), show=False)
    learner = new_learner("aps", "easy", 0, TrainConfig(progress=False))
    with pytest.raises(ValueError, match="method 'aps' acts on a task vector w: give the w"):
        evaluate(learner, "easy", None, 2, 0)


def test_a_notebook_that_is_not_json_stops_the_site_build_in_one_line(tmp_path):
    import importlib.util

    from mkdocs.exceptions import PluginError

    spec = importlib.util.spec_from_file_location("hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    bad = tmp_path / "07_synthesis.ipynb"
    bad.write_text("not a notebook")
    with pytest.raises(
        PluginError, match="07_synthesis.ipynb is not a notebook .*regenerate it from 07_synthesis.py"
    ):
        hooks.notebook_title(bad)
