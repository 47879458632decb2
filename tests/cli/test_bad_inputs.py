"""No input breaks it (issue 34): the last bad inputs that ended in a traceback, a hang or a silent result now
end in one line naming the argument, what was given and what is valid, before anything is written (the
command line: exit status 2; the Python API: a ValueError or TypeError). Grouped as the issue numbers them:
1 finite but huge values, 2 unbounded work, 3 silently accepted values, 4 numpy and torch scalars, 5 API
errors that did not name the problem, 6 Ctrl-C at start-up, 7 wording. Gridworld runs are 2 rounds (2 envs
x 100 steps) per phase."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.cli.main import main
from aps_teach.grid.experiments import Budget, run_gridworld
from aps_teach.grid.sweep import FIGURE4_COLUMNS
from aps_teach.grid.train import TrainConfig, evaluate, identify_task, new_learner, pretrain
from aps_teach.infra.checks import InputTypeError
from aps_teach.infra.sweeps import RunSpec, config_hash, grid, read_rows, record_config, run_sweep
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import infer_task

TINY = ["--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
        "--train.agent.hidden", "16", "--train.agent.batch-size", "8", "--train.updates-per-step", "1",
        "--train.finetune-updates-per-step", "1", "--train.agent.k", "3"]
BUDGET = ["--pretrain-steps", "400", "--finetune-steps", "400", "--identify-steps", "200",
          "--eval-episodes", "4"]
CONFIG = TrainConfig(num_envs=2, learning_starts=100, progress=False, updates_per_step=1,
                     finetune_updates_per_step=1, agent=AgentConfig(hidden=16, batch_size=8, k=3))
"""TINY as a config."""


def run_argv(out, *extra):
    return ["gridworld", "run", "--out", str(out), "--seed", "1", *BUDGET, *TINY, *extra]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished tiny run."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(run_argv(out)) == 0
    return out


@pytest.fixture
def learner():
    return new_learner("aps", "easy", 0, CONFIG)


def refused(argv, capsys, tmp_path) -> str:
    """Run a command that must be refused: exit status 2, one error line (returned), nothing written under
    tmp_path."""
    before = files(tmp_path)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("aps-teach") and ": error: " in err and err.count("\n") == 1, err
    assert files(tmp_path) == before and not (tmp_path / "out").exists()
    return err


# 1: finite but huge values

@pytest.mark.parametrize("option, value, message", [
    ("--train.agent.lr", "1e308",
     "lr must be in (0, 1.84467e+19] (its square must fit in float32), got 1e+308"),
    ("--train.agent.finetune-lr", "1e20", "finetune_lr must be in (0, 1.84467e+19]"),
    ("--train.agent.explore-weight", "1e308", "explore_weight must be a finite number in [-1.84467e+19, "
                                              "1.84467e+19] (its square must fit in float32), got 1e+308"),
    ("--train.agent.exploit-weight", "-1e20", "exploit_weight must be a finite number in [-1.84467e+19"),
    ("--train.reward-clip", "1e300", "reward_clip must be in (0, 1.84467e+19]"),
    ("--train.agent.gpi-samples", "100000000",
     "acting in 2 envs with GPI over 100,000,001 candidate tasks each needs"),
])
def test_a_huge_finite_value_is_refused_before_anything_is_written(option, value, message, tmp_path, capsys):
    err = refused(run_argv(tmp_path / "out", option, value), capsys, tmp_path)
    assert message in err


def test_a_learning_rate_that_diverges_stops_training_naming_it(tmp_path):
    """lr 1e7 is below the overflow bound but diverges: it used to end in a torch.linalg.lstsq INTERNAL ASSERT
    after pretraining."""
    config = TrainConfig(**{**vars(CONFIG), "agent": AgentConfig(hidden=16, batch_size=8, k=3, lr=1e7)})
    with pytest.raises(ValueError, match=r"pretraining diverged in round 1 .* lower lr \(now 1e\+07\)"):
        pretrain("aps", "easy", 400, 0, config, run_dir=tmp_path / "pretrain")
    assert not (tmp_path / "pretrain" / "checkpoint.pt").exists()  # nothing of the diverged round is saved
    with pytest.raises(ValueError, match="infer_task: the features are not all finite"):
        infer_task(torch.full((10, 4), float("nan")), torch.ones(10))


# 2: unbounded work

@pytest.mark.parametrize("option, value, message", [
    ("--eval-episodes", "100000000", "eval_episodes makes 10,000,000,000 env steps, more than the "
                                     "1,000,000,000 one phase may take"),
    ("--train.num-envs", "1000000", "num_envs must be <= 65,536 (every phase runs whole rounds of num_envs x "
                                    "100 env steps: one round would be 100,000,000), got 1,000,000"),
    ("--identify-steps", "2000000000", "identify_steps makes 2,000,000,000 env steps"),
])
def test_work_without_a_useful_bound_is_refused_before_anything_is_written(option, value, message, tmp_path,
                                                                           capsys):
    assert message in refused(run_argv(tmp_path / "out", option, value), capsys, tmp_path)


def test_the_api_bounds_evaluation_work_and_an_exercise_checker_bounds_time(learner, monkeypatch, capsys):
    with pytest.raises(ValueError, match="^episodes makes 10,000,000,000 env steps"):
        evaluate(learner, "easy", torch.ones(learner.config.feature_dim), 10**8, 0, CONFIG)
    from aps_teach.course import exercises

    monkeypatch.setattr(exercises, "CASE_SECONDS", 0.2)

    def never_returns(features, rewards):
        while True:
            try:
                pass
            except Exception:  # a student's catch-all does not keep it running
                pass

    assert exercises.check_infer_task(never_returns) is infer_task
    assert capsys.readouterr().out == ("infer_task: case 0 did not return within 0.2 s (an endless loop?); "
                                       "using the library's answer until yours passes; "
                                       "exercises.failing_case('infer_task') gives the inputs\n")


# 3: silently accepted values

def test_learning_starts_that_leaves_no_phase_an_update_is_refused(tmp_path, capsys):
    err = refused(run_argv(tmp_path / "out", "--train.learning-starts", "100000"), capsys, tmp_path)
    assert ("learning_starts 100,000 is not below pretraining's 400 and fine-tuning's 400 env steps: no "
            "phase would make an update") in err


@pytest.mark.parametrize("device, message", [
    ("cuda", "device 'cuda' asked for but CUDA is not available"),
    ("tpu", "unknown device 'tpu'"),
    ("meta", "unsupported device 'meta'; valid: cpu, cuda, cuda:N, mps"),
])
def test_a_device_this_machine_lacks_is_refused_before_anything_is_written(device, message, tmp_path, capsys,
                                                                            monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    err = refused(run_argv(tmp_path / "out", "--device", device), capsys, tmp_path)
    assert message in err


def test_the_device_flag_is_spelled_as_atari_spells_it_and_the_old_spelling_works(tmp_path, capsys,
                                                                                  monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for argv in (["--device", "cuda"], ["--device=cuda"]):
        assert "use --device cpu" in refused(run_argv(tmp_path / "out", *argv), capsys, tmp_path)
    assert main(run_argv(tmp_path / "out", "--train.device", "cuda")) == 2
    said, error = capsys.readouterr().err.splitlines()
    assert "--train.device is the old spelling of --device" in said and "use --device cpu" in error
    assert not (tmp_path / "out").exists()


def test_learning_starts_that_idles_one_phase_is_one_warning_before_training(tmp_path, capsys):
    argv = run_argv(tmp_path / "out", "--pretrain-steps", "800", "--train.learning-starts", "500")
    assert main(argv) == 0
    lines = capsys.readouterr().err.splitlines()
    warning = [line for line in lines if line.startswith("warning:")]
    assert warning == ["warning: learning_starts 500 is not below fine-tuning's 400 env steps: fine-tuning "
                       "makes no update (the fine-tuned scores are the pretrained learner's)"]


def test_a_results_file_with_values_out_of_range_is_refused_naming_row_and_column(tmp_path):
    from aps_teach.studies.plots import write_figure4

    header = ",".join(FIGURE4_COLUMNS)
    good = ["visr-easy-seed0,visr,easy,0,zero_shot,0,0.5,1.0",
            "visr-easy-seed0,visr,easy,0,finetuned,400,1.0,2.0"]
    path = tmp_path / "figure4.csv"
    record_config(path, {"budget": {"finetune_steps": 400}})
    path.write_text("\n".join([header, *good]) + "\n")
    assert len(read_rows(path, FIGURE4_COLUMNS)) == 2
    for old, new, message in [
            (",1.0,2.0", ",7.5,2.0", "column 'success_rate' holds '7.5', not a number in [0, 1]"),
            (",0,finetuned", ",-3,finetuned", "column 'seed' holds '-3', not an integer >= 0"),
            (",400,", ",800,", "column 'finetune_steps' holds '800', not an integer in [0, 400] (the budget "
                               "figure4.sweep.json records)"),
            (",1.0,2.0", ",1.0,nan", "column 'return' holds 'nan', not a finite number in [-1e+06, 1e+06]"),
            (",finetuned,", ",fine-tuned,",
             "column 'phase' holds 'fine-tuned', not one of zero_shot, adapting, finetuned"),
            ("visr,easy", "visr,medium",
             "column 'level' holds 'medium', not one of easy, hard, deep, detour, fork, open10, fourroom")]:
        bad = good[1].replace(old, new)
        path.write_text("\n".join([header, good[0], bad]) + "\n")
        with pytest.raises(ValueError) as error:
            read_rows(path, FIGURE4_COLUMNS)
        assert str(error.value) == f"{path}, row 3: {message}"
        with pytest.raises(ValueError, match="row 3"):
            write_figure4(tmp_path)  # what `aps-teach gridworld sweep` draws with
    assert not (tmp_path / "figure4.png").exists()


def test_an_edited_run_config_is_refused_on_read_naming_the_field(finished, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    saved = json.loads((run / "config.json").read_text())
    for field, value, message in [
            ("pretrain_steps", -5, "pretrain_steps must be an integer >= 1, got -5"),
            ("seed", "one", "seed must be an integer >= 0 and <= 4294967295, got 'one'"),
            ("level", "medium",
             "unknown level 'medium'; valid levels: easy, hard, deep, detour, fork, open10, fourroom")]:
        (run / "config.json").write_text(json.dumps({**saved, field: value}))
        before = files(run)
        for command in ("evaluate", "finetune"):
            capsys.readouterr()
            assert main(["gridworld", command, "--out", str(run)]) == 2
            err = capsys.readouterr().err
            assert err == (f"aps-teach gridworld: error: corrupt run config {run}/config.json: {message} "
                           "(not a config of this version, or edited)\n")
        assert files(run) == before


@pytest.mark.parametrize("call, exception, message", [
    (lambda: TrainConfig(agent={"gamma": 0.5}), TypeError,
     "agent must be an AgentConfig (e.g. agent=AgentConfig(gamma=0.5)), got dict {'gamma': 0.5}"),
    (lambda: evaluate(new_learner("aps", "easy", 0, CONFIG), "easy", torch.full((16,), float("nan")), 4, 0,
                      CONFIG), ValueError, "w must be a vector of 16 finite numbers, not all zero"),
    (lambda: evaluate(new_learner("aps", "easy", 0, CONFIG), "easy", torch.zeros(16), 4, 0, CONFIG),
     ValueError, "w must be a vector of 16 finite numbers, not all zero"),
])
def test_a_value_accepted_silently_before_is_refused_naming_it(call, exception, message):
    with pytest.raises(exception) as error:
        call()
    assert str(error.value).startswith(message)


# 4: numpy and torch scalars

def test_numpy_and_torch_scalars_are_numbers_kept_as_python_numbers():
    budget = Budget(pretrain_steps=np.int64(3200), eval_episodes=torch.tensor(8))
    assert budget == Budget(pretrain_steps=3200, eval_episodes=8) and type(budget.pretrain_steps) is int
    assert config_hash(budget) == config_hash(Budget(pretrain_steps=3200, eval_episodes=8))
    agent = AgentConfig(gamma=np.float32(0.9), lr=torch.tensor(1e-3, dtype=torch.float64), k=np.int32(5))
    assert agent.gamma == float(np.float32(0.9)) and type(agent.gamma) is float
    assert agent.lr == 1e-3 and type(agent.k) is int and json.dumps(vars(agent))
    assert type(TrainConfig(num_envs=np.uint8(4), epsilon_end=np.float64(0.1)).epsilon_end) is float
    for bad in (np.bool_(True), torch.tensor(True), np.float64(3200.0), torch.tensor([3200])):
        with pytest.raises(TypeError, match="^eval_episodes must be an integer >= 1, got"):
            Budget(eval_episodes=bad)


def test_a_numpy_seed_runs_the_run_an_int_seed_runs(finished, tmp_path):
    budget = Budget(*(np.int64(steps) for steps in (400, 400, 200, 4)))
    run_gridworld("aps", "easy", seed=np.int64(1), budget=budget, config=CONFIG, run_dir=tmp_path / "run")
    for name in ("config.json", "summary.json"):
        ours, theirs = (json.loads((path / name).read_text()) for path in (tmp_path / "run", finished))
        untimed = [{k: v for k, v in saved.items() if not k.endswith("seconds")} for saved in (ours, theirs)]
        assert untimed[0] == untimed[1]
    assert evaluate(new_learner("aps", "easy", 0, CONFIG), "easy", np.ones(16), np.int64(4), np.int64(0),
                    CONFIG).episodes == 4


# 5: API errors that name the argument

ART = list(gridworld.LEVELS["easy"])


@pytest.mark.parametrize("call, exception, message", [
    (lambda: run_gridworld("aps", ART, seed=0), TypeError, "level must be a level name, one of easy, hard"),
    (lambda: pretrain("aps", ART, 200, 0, CONFIG), TypeError,
     "env must be a level or maze name (e.g. 'easy', 'open10'), a LevelSpec (ASCII art: "
     "LevelSpec(tuple(art)))"),
    (lambda: run_gridworld("aps", "easy", seed=0, config=AgentConfig()), TypeError,
     "config must be a TrainConfig (the learner's settings go in its agent field"),
    (lambda: run_gridworld("aps", "easy", seed=0, budget={"pretrain_steps": 200}), TypeError,
     "budget must be a Budget (e.g. Budget(pretrain_steps=3200)), got dict"),
    (lambda: pretrain("aps", "easy", 200, 0, AgentConfig()), TypeError, "config must be a TrainConfig"),
    (lambda: evaluate(new_learner("aps", "easy", 0, CONFIG), "easy", torch.zeros(3), 4, 0, CONFIG),
     ValueError, "w must be a vector of 16 finite numbers, not all zero (a torch tensor, numpy array or "
                 "list): shape (16,), got shape (3,)"),
    (lambda: evaluate(new_learner("aps", "easy", 0, CONFIG), "easy", "north", 4, 0, CONFIG), TypeError,
     "w must be a vector of 16 finite numbers"),
    (lambda: identify_task(None, "easy", 200, 0), TypeError,
     "learner must be a Learner (from pretrain, new_learner or load_learner), got NoneType None"),
    (lambda: evaluate("aps", "easy", None, 4, 0), TypeError, "learner must be a Learner"),
])
def test_a_wrong_argument_is_an_error_naming_it(call, exception, message):
    with pytest.raises(exception) as error:
        call()
    assert str(error.value).startswith(message)
    assert isinstance(error.value, ValueError)  # a wrong type is reported in one line by the commands too


def test_the_widgets_name_a_wrong_argument():
    from aps_teach.course.widgets import reward_explorer, reward_painter

    for snapshots, given in [(None, "NoneType None"), ([1, 2, 3], "int 1"), ({"aps": 3}, "int 3")]:
        with pytest.raises(InputTypeError) as error:
            reward_explorer(snapshots, show=False)
        name = "snapshots['aps']" if isinstance(snapshots, dict) else "snapshots"
        assert str(error.value) == (f"{name} must be a list of Snapshots (from pretrain_with_snapshots), or "
                                    f"a dict of run name -> such a list, got {given}")
    with pytest.raises(ValueError) as error:
        reward_painter("fourroom", cells=[(1, 1)], show=False)
    assert str(error.value) == ("cells must be {(row, col): value}, a list of ((row, col), value) pairs or "
                                "an H x W array; got a list of cells without values ((1, 1), ...): give each "
                                "its value, e.g. {(1, 1): 1.0}")
    assert reward_painter("fourroom", cells={(1, 1): 2.0}, show=False).reward_map()[1, 1] == 2.0


# 6: Ctrl-C at start-up

class _InterruptImport:
    """A finder that raises KeyboardInterrupt when `name` is imported, as Ctrl-C while torch loads."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, name, path=None, target=None):
        if name == self.name:
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_libraries_import_is_one_line(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "aps_teach.cli.gridworld", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptImport("aps_teach.cli.gridworld"), *sys.meta_path])
    assert main(["gridworld", "run", "--out", "x"]) == 130
    assert capsys.readouterr().err == "aps-teach gridworld: interrupted\n"
    with pytest.raises(KeyboardInterrupt):
        main(["gridworld", "run", "--out", "x", "--debug"])
    code = "import sys, aps_teach.cli.main; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout == "False\n"  # the handler is in place before torch imports


# 7: wording

@pytest.mark.parametrize("make, what", [
    (lambda path: path.symlink_to(path.parent / "nowhere"), "a link to {nowhere}, which does not exist"),
    (lambda path: path.write_text("x"), "not a directory")])
def test_a_file_or_a_dangling_link_where_pretrain_goes_is_named(make, what, finished, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    shutil.rmtree(run / "pretrain")
    make(run / "pretrain")
    before = files(run)
    capsys.readouterr()
    assert main(run_argv(run, "--resume")) == 2  # it read "File exists"
    err = capsys.readouterr().err.splitlines()[-1]
    assert err == (f"aps-teach gridworld: error: {run}/pretrain is {what.format(nowhere=run / 'nowhere')}, "
                   "where the run keeps its pretraining checkpoints: remove it, or give --force to start the "
                   "run over")
    assert files(run) == before and os.path.lexists(run / "pretrain")


def test_an_atari_command_on_a_gridworld_run_names_the_commands_that_handle_it(finished, capsys):
    before = files(finished)
    assert main(["atari", "evaluate", "--out", str(finished)]) == 2
    assert capsys.readouterr().err == (
        f"aps-teach atari: error: {finished} holds a gridworld run (level 'easy'), not one this command "
        f"handles: the `aps-teach gridworld` commands do (e.g. `aps-teach gridworld evaluate --out "
        f"{finished}`)\n")
    assert files(finished) == before


def _row_run(spec: RunSpec) -> list[dict]:
    return [{"method": spec.method, "level": spec.env, "seed": spec.seed, "phase": "finetuned",
             "success_rate": 0.5}]


def test_repeated_rows_are_said_once_and_the_file_rewritten(tmp_path, capsys):
    from concurrent.futures import ThreadPoolExecutor

    results = tmp_path / "r.csv"
    with ThreadPoolExecutor(1) as threads:
        run_sweep(grid(["visr"], ["easy"], range(2)), _row_run, results, config={}, executor=threads,
                  progress=False)
        lines = results.read_text().splitlines(keepends=True)
        results.write_text("".join([*lines, lines[1]]))  # the first run's row again, after the other run
        capsys.readouterr()
        run_sweep(grid(["visr"], ["easy"], range(2)), _row_run, results, config={}, executor=threads,
                  progress=False)
    read_rows(results)
    said = capsys.readouterr().err
    assert said == f"{results}: left out 1 repeated row(s), row 4 (visr-easy-seed0): a run counts once\n"
    assert results.read_text() == "".join(lines)


def test_resuming_a_finished_run_keeps_its_phase_times(finished, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = json.loads((run / "summary.json").read_text())
    assert main(run_argv(run, "--resume")) == 0
    after = json.loads((run / "summary.json").read_text())
    assert after["pretrain_seconds"] == before["pretrain_seconds"] > 0
    assert after["finetune_seconds"] == before["finetune_seconds"] > 0
    assert after["wall_seconds"] >= after["pretrain_seconds"] + after["finetune_seconds"]


def test_starting_ray_here_says_first_that_it_writes_a_token_into_home(tmp_path, monkeypatch, capsys):
    from aps_teach.infra import executors

    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    said_before_init = []
    ray = types.SimpleNamespace(
        is_initialized=lambda: False, init=lambda address: said_before_init.append(capsys.readouterr().err),
        exceptions=types.SimpleNamespace(WorkerCrashedError=OSError, NodeDiedError=OSError,
                                         LocalRayletDiedError=OSError))
    monkeypatch.setattr(executors, "import_ray", lambda: ray)
    a_ray_with_tokens = types.SimpleNamespace(util=types.SimpleNamespace(find_spec=lambda name: object()))
    monkeypatch.setattr(executors, "importlib", a_ray_with_tokens)
    executors.RayExecutor()
    assert said_before_init == [f"starting Ray on this machine; Ray writes an authentication token to "
                                f"{tmp_path}/.ray/auth_token (set RAY_AUTH_MODE=disabled to start it without "
                                "one)\n"]
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    executors.RayExecutor()
    executors.RayExecutor("auto")
    assert said_before_init[1:] == ["", ""]


def test_a_sweep_started_from_an_unguarded_script_says_to_guard_it(tmp_path):
    script = tmp_path / "sweep.py"
    script.write_text(textwrap.dedent("""
        from aps_teach.infra.sweeps import grid, run_sweep

        def run(spec):
            return [{"seed": spec.seed}]

        report = run_sweep(grid(["visr"], ["easy"], range(1)), run, "out/r.csv", workers=1, progress=False)
        print(len(report.failures))
        """))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.stdout == "1\n"
    assert (f"aps-teach: a sweep's worker process re-ran {script} as it started (each worker imports the "
            "main script anew) and reached the sweep again: put the lines that start the sweep under `if "
            "__name__ == \"__main__\":`") in done.stderr.splitlines()
    assert "Traceback" not in done.stderr
