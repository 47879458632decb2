"""The study commands and the task-family API on bad input: every plan checked in the parent before a worker
starts, one error line (exit status 2), nothing written, within seconds; readers that name the file, the row
and the column; values refused where they are taken. And the random walk alone, which used to fail."""

import csv
import io
import json
import re
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
from tests.cli.conftest import files

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


# issue 56: the zero-shot command checks its whole plan in the parent, as families and held-out do

ZERO_SHOT_CASES = {
    "a negative seed": (["--seeds", "-1"],
                        "each of --seeds must be an integer >= 0 and <= 4294967295, got -1"),
    "a seed past the range": (["--seeds", "4294967296"], "each of --seeds must be an integer >= 0 and <= "
                                                         "4294967295, got 4294967296"),
    "no seed": (["--seeds"], "--seeds: give 1 to 10,000 seeds, got 0"),
    "a seed twice": (["--seeds", "1", "1"], "--seeds repeat a seed: [1, 1]"),
    "no arm": (["--arms"], "--arms must name one or more distinct arms that act on a task vector, of "
                           "'visr', 'aps', 'aps, kNN feature', 'aps, explore-conditioned', 'aps, kNN "
                           "feature, explore weight 0.5'; got []"),
    "an arm twice": (["--arms", "visr", "visr"], "got ['visr', 'visr']"),
    "a huge budget": (["--pretrain-steps", "10000000000"], "pretrain_steps makes 10,000,000,000 env steps, "
                                                           "more than the 1,000,000,000 one phase may take"),
    "a huge feature": (["--feature-dim", "1000000"], "lower --pretrain-steps or the feature dimension, "
                                                     "1,000,000 (the replay keeps every step of the phase, "
                                                     "each with a task vector of 1,000,000)"),
    "50 seeds at 1e9 steps": (["--seeds", *map(str, range(50)), "--pretrain-steps", "1000000000"],
                              "pretrain: the replay of 1,000,000,000 transitions"),
    "no study to judge a fix against": (["--against", "nowhere"], "--against nowhere holds no "
                                                                  "task_families.csv"),
}


@pytest.mark.parametrize("case", list(ZERO_SHOT_CASES))
def test_the_zero_shot_plan_is_checked_before_any_worker_starts(case, tmp_path, capsys, monkeypatch):
    """Each used to fail in a worker with a traceback of 43-2,150 lines (exit status 1), leaving
    zero_shot.sweep.json and an empty capping_links.csv; --seeds or --arms with no value completed nothing
    (exit status 0)."""
    args, message = ZERO_SHOT_CASES[case]
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    assert main(["gridworld", "zero-shot", "--out", "out", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aps-teach gridworld: error: ") and err.count("\n") == 1, err
    assert message in err
    assert list(tmp_path.iterdir()) == [] and time.perf_counter() - start < 30


def test_the_diagnosis_api_checks_its_plan_too(tmp_path):
    from aps_teach.studies.zero_shot import run_diagnosis

    for kwargs, message in (({"arms": ["apt"]}, "arms must name one or more distinct arms that act on a task "
                                                "vector"),
                            ({"seeds": []}, "seeds: give 1 to 10,000 seeds, got 0"),
                            ({"level": "open10"}, "level must be a level with a task family, one of easy, "
                                                  "hard, deep, detour, fork; got 'open10'")):
        call = {"level": "easy", "seeds": [0], "out_dir": tmp_path / "out", **kwargs}
        with pytest.raises(ValueError, match=re.escape(message)):
            run_diagnosis(**call, progress=False)
    assert not (tmp_path / "out").exists()


# issue 56: every results reader refuses non-finite scores, unknown labels and out-of-range seeds by file, row
# and column; no row is left out for it

ZERO_SHOT_RESULTS = ROOT / "results" / "zero_shot" / "detour"


def edit_cell(path: Path, row: int, column: str, value: str) -> None:
    """The CSV at path with data row `row` (1: the first after the header) of `column` set to value."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    cells = next(csv.reader([lines[row]]))
    cells[header.index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    lines[row] = out.getvalue()
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("column", "value"), [("zero_shot", "nan"), ("zero_shot", "1e300"),
                                               ("planner_best", "inf"), ("identified", "2"),
                                               ("level", "medium"), ("method", "apt")])
def test_a_diagnosis_row_out_of_range_is_refused_and_no_table_is_written(column, value, tmp_path, capsys):
    """nan and 1e300 zero-shot scores were read as numbers and copied into capping_links.csv."""
    from aps_teach.studies.zero_shot import read_diagnosis

    out = tmp_path / "detour"
    out.mkdir()
    for name in ("zero_shot.csv", "zero_shot.sweep.json"):
        shutil.copy(ZERO_SHOT_RESULTS / name, out)
    edit_cell(out / "zero_shot.csv", 7, column, value)
    with pytest.raises(ValueError) as error:
        read_diagnosis(out)
    assert str(error.value).startswith(f"{out / 'zero_shot.csv'}, row 8: column {column!r} holds {value!r}, "
                                       "not ")
    before = files(out)
    argv = ["gridworld", "zero-shot", "--out", str(out), "--level", "detour", "--seeds", "10", "11", "12",
            "--workers", "1"]
    assert main(argv) == 2  # every run is there: nothing runs, the reader refuses before any table
    err = capsys.readouterr().err
    assert err == f"aps-teach gridworld: error: {error.value}\n"
    assert {name: data for name, data in files(out).items() if not name.startswith(".")} == before


def test_psi_measures_may_be_undefined_but_not_infinite(tmp_path):
    from aps_teach.studies.zero_shot import read_diagnosis

    out = tmp_path / "d"
    out.mkdir()
    shutil.copy(ZERO_SHOT_RESULTS / "zero_shot.csv", out)
    edit_cell(out / "zero_shot.csv", 3, "psi_error", "nan")  # psi_quality: Q or Q^pi is 0
    assert len(read_diagnosis(out)) == len(read_rows(ZERO_SHOT_RESULTS / "zero_shot.csv"))
    edit_cell(out / "zero_shot.csv", 3, "psi_error", "inf")
    with pytest.raises(ValueError, match="row 4: column 'psi_error' holds 'inf', not a finite number in "
                                         "\\[-1e\\+06, 1e\\+06\\], or nan where it is undefined"):
        read_diagnosis(out)


def test_an_unknown_phase_of_a_task_family_study_is_refused_not_left_out(tmp_path):
    """A row of an unknown phase was left out of every table without a word: the tables changed."""
    study = copy_study(tmp_path)
    edit_cell(study / "task_families.csv", 4, "phase", "finetuned_twice")
    with pytest.raises(ValueError) as error:
        write_family_tables(study)
    assert str(error.value) == (f"{study / 'task_families.csv'}, row 5: column 'phase' holds "
                                "'finetuned_twice', not one of zero_shot, zero_shot_relabelled, finetuned, "
                                "finetuned_epsilon_1, finetuned_exploring, finetuned_relabelled, random_walk")
    assert sorted(path.name for path in study.iterdir()) == ["task_families.csv", "task_families.sweep.json"]


@pytest.mark.parametrize(("column", "value", "valid"), [
    ("phase", "finetuned_twice", "zero_shot, zero_shot_relabelled, finetuned, finetuned_epsilon_1"),
    ("seed", "25", "10, 11, 12, 13, 14, 15, 16, 17, 18, 19"),
    ("seed", "3", "10, 11, 12"),
])
def test_a_held_out_part_row_of_an_unknown_phase_or_an_unregistered_seed_is_refused(column, value, valid,
                                                                                     tmp_path):
    """A seed outside the registered range was left out of the part's tables without a word."""
    from aps_teach.studies.held_out import PREREGISTRATION, hypotheses, read_protocol, write_part_tables

    protocol = read_protocol(ROOT / PREREGISTRATION)
    part = protocol.part("detour-256k")
    study = copy_study(tmp_path, ROOT / "results" / "held_out" / "detour-256k", part.name)
    edit_cell(study / "task_families.csv", 2, column, value)
    for call in (lambda: write_part_tables(tmp_path, part), lambda: hypotheses(tmp_path, protocol)):
        with pytest.raises(ValueError) as error:
            call()
        assert str(error.value).startswith(f"{study / 'task_families.csv'}, row 3: column {column!r} holds "
                                           f"{value!r}, not one of ")
        assert valid in str(error.value)
    assert sorted(path.name for path in study.iterdir()) == ["task_families.csv", "task_families.sweep.json"]


def test_an_unknown_values_label_of_the_zero_shot_loss_experiment_is_refused(tmp_path):
    from aps_teach.studies.zero_shot_loss import COLUMNS as LOSS_COLUMNS

    path = tmp_path / "zero_shot_loss.csv"
    shutil.copy(ROOT / "results" / "zero_shot_loss" / "zero_shot_loss.csv", path)
    assert read_rows(path, LOSS_COLUMNS)
    edit_cell(path, 5, "values", "task + kNN")
    with pytest.raises(ValueError) as error:
        read_rows(path, LOSS_COLUMNS)
    assert str(error.value) == (f"{path}, row 6: column 'values' holds 'task + kNN', not one of task + kNN "
                                "return, task")


# issue 56: a protocol's parts and seeds, and the lock

def write_protocol(path: Path, block: str) -> Path:
    path.write_text(f"# A protocol\n\n<!-- protocol -->\n```json\n{block}\n```\n<!-- /protocol -->\n")
    return path


TINY_PART = '"a": {"level": "easy", "pretrain_steps": 200, "arms": ["visr", "apt"]}'


SEEDS_FIELD = ("its protocol block's \"seeds\" must be [first, last], integers with 0 <= first <= last <= "
               "4294967295 and at most 10,000 seeds (both ends included)")


def protocol_block(seeds: str = "[0, 1]", parts: str = TINY_PART) -> str:
    return '{"seeds": ' + seeds + ', "budget": {}, "parts": {' + parts + '}, "primary_parts": ["a"]}'


@pytest.mark.parametrize(("block", "message"), [
    (protocol_block(parts=f"{TINY_PART}, {TINY_PART}"),
     "its protocol block is not a valid protocol ('a' is named twice in one object; each part and field "
     "once)"),
    (protocol_block("[19, 10]"), f"{SEEDS_FIELD}, got [19, 10]"),
    (protocol_block("[-1, 3]"), f"{SEEDS_FIELD}, got [-1, 3]"),
    (protocol_block("10"), f"{SEEDS_FIELD}, got 10"),
])
def test_a_protocol_naming_a_part_twice_or_reversed_seeds_is_refused_naming_the_file(block, message, tmp_path,
                                                                                     capsys):
    """A part named twice was accepted (JSON keeps the last); reversed seeds gave `num_seeds ... got -8`,
    naming neither the file nor its field."""
    prereg = write_protocol(tmp_path / "prereg.md", block)
    argv = ["gridworld", "held-out", "--out", str(tmp_path / "out"), "--preregistration", str(prereg)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"aps-teach gridworld: error: {prereg}: {message}\n"
    assert not (tmp_path / "out").exists()


def test_a_part_named_twice_in_parts_is_refused(tmp_path, capsys):
    prereg = write_protocol(tmp_path / "prereg.md", protocol_block())
    argv = ["gridworld", "held-out", "--out", str(tmp_path / "out"), "--preregistration", str(prereg),
            "--parts", "a", "a"]
    assert main(argv) == 2
    assert capsys.readouterr().err == ("aps-teach gridworld: error: --parts names a part twice: a, a; each "
                                       "part once\n")
    assert not (tmp_path / "out").exists()


def test_held_out_refused_while_another_process_writes_a_part_names_the_lock(tmp_path, capsys):
    """It said the pre-registration had changed: `families` had just started writing the part's folder,
    whose record names no pre-registration."""
    from tests.infra.test_locks import held_by_another_process

    prereg = write_protocol(tmp_path / "prereg.md", protocol_block())
    part = tmp_path / "out" / "a"
    part.mkdir(parents=True)
    (part / "task_families.sweep.json").write_text(json.dumps({"budget": {}, "train": {}}))
    argv = ["gridworld", "held-out", "--out", str(tmp_path / "out"), "--preregistration", str(prereg)]
    with held_by_another_process(part) as pid:
        before = files(tmp_path / "out")
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err == (f"aps-teach gridworld: error: {part} is in use by another aps-teach process (pid "
                       f"{pid}): wait for it to end or stop it, then run this again (or give another "
                       "--out)\n")
        assert files(tmp_path / "out") == before
    assert main(argv) == 2  # once free: the record is a task-family study's, not this study's
    assert capsys.readouterr().err == (f"aps-teach gridworld: error: the results in {part} were not started "
                                       "under a pre-registration (task_families.sweep.json names none: a "
                                       "task-family study's, not the held-out study's); give a fresh --out\n")


# issue 56: a comparison of one seed, and the two cases left from the last round

def test_a_comparison_of_one_seed_has_no_interval_and_no_verdict():
    """It printed `+0.065 [+0.065, +0.065], above`: a single seed has no spread to resample."""
    from aps_teach.studies.verdicts import FEW_SEEDS, compare, interval_text

    found = compare([0.565], [0.5])
    assert found["reading"] == FEW_SEEDS == "needs at least two seeds of each arm"
    assert found["difference"] == pytest.approx(0.065)
    assert np.isnan(found["low"]) and np.isnan(found["high90"])
    assert interval_text(found) == "+0.065 (no interval)"
    assert compare([0.565], [0.5, 0.4, 0.6])["reading"] == FEW_SEEDS
    assert compare([0.6, 0.7], [0.5, 0.4])["reading"] in ("above", "no difference found")


def test_a_zero_shot_loss_effect_of_one_seed_has_no_verdict():
    from aps_teach.studies.zero_shot_loss import ONE_SEED, effects, effects_table, explanation

    rows = read_rows(ROOT / "results" / "zero_shot_loss" / "zero_shot_loss.csv")
    one = [row for row in rows if row["seed"] == "20"]
    assert {effect.verdict for effect in effects(one)} == {ONE_SEED}
    assert all(np.isnan(effect.low) for effect in effects(one))
    lines = explanation(one)
    assert lines[-1] == "explanation: undecided, the comparisons needs at least two seeds" or \
        lines[-1].startswith("explanation: undecided")
    assert all("[" not in line for line in lines[:3]) and all(ONE_SEED in line for line in lines[:3])
    assert "| none | 1 | needs at least two seeds |" in effects_table(one)


def test_a_lambda_as_a_sweeps_run_is_one_line():
    """It was a 20-line remote traceback in SweepReport.failures."""
    from aps_teach.infra.sweeps import grid, run_sweep

    with pytest.raises(ValueError) as error:
        run_sweep(grid(["visr"], ["easy"], range(1)), lambda spec: [], "unused/r.csv", progress=False)
    message = str(error.value)
    assert message == ("run_sweep's run must be a module-level function (worker processes import it by "
                       "name), got test_a_lambda_as_a_sweeps_run_is_one_line.<locals>.<lambda>: Can't pickle "
                       "local object 'test_a_lambda_as_a_sweeps_run_is_one_line.<locals>.<lambda>'")
    assert not Path("unused").exists()


def test_a_budget_axis_of_a_level_no_study_ran_is_refused():
    """budget_axis(read_family_studies([<a study of easy>]), level='hard') returned [] without a word."""
    from aps_teach.studies.families_budget import budget_axis
    from aps_teach.studies.task_families import read_family_studies

    studies = read_family_studies([AXIS_256K])
    assert budget_axis(studies, "deep")
    with pytest.raises(ValueError) as error:
        budget_axis(studies, "hard")
    assert str(error.value) == ("budget_axis: the study at 256,000 pretraining steps has no rows on level "
                                "'hard' (its levels: deep); give the level the studies ran on")
    shifted = {1: [{**row, "seed": str(int(row["seed"]) + 100)} for row in studies[256_000]], **studies}
    with pytest.raises(ValueError, match="the studies share no seed on level 'deep'"):
        budget_axis(shifted, "deep")
