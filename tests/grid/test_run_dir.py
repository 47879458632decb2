"""Run directories you can trust (issue 17, findings 1 and 2): a run interrupted anywhere -- Ctrl-C after any
checkpoint or before the first, SIGKILL mid-phase -- and resumed ends bit-identical to the uninterrupted run;
a directory holding another run is refused with every byte unchanged unless --force; finetune and evaluate
read the run from its directory and refuse a checkpoint of another run; corrupt files are named with the
reason. Gridworld runs are 2 rounds of pretraining and 2 of fine-tuning on the compiled engine."""

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import aps_teach
from aps_teach.cli import gridworld as cli_gridworld
from aps_teach.cli.main import main
from aps_teach.grid import rounds, train
from aps_teach.grid.experiments import level_art
from aps_teach.infra.files import save_checkpoint
from aps_teach.infra.run_dir import RunDir

TINY = ["--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
        "--train.agent.hidden", "16", "--train.agent.batch-size", "8", "--train.checkpoint-every", "1",
        "--train.updates-per-step", "1", "--train.finetune-updates-per-step", "1", "--train.agent.k", "3"]
BUDGET = ["--pretrain-steps", "400", "--finetune-steps", "400", "--identify-steps", "200",
          "--eval-episodes", "4"]
"""2 rounds (2 envs x 100 steps) per phase; a checkpoint after every round."""
COMPARED = ("round", "env_steps", "total_env_steps", "learner", "replay", "coverage", "metrics", "task_w")
"""What a checkpoint holds besides its wall seconds."""


def run_argv(out, *extra):
    return ["gridworld", "run", "--out", str(out), "--seed", "1", *BUDGET, *TINY, *extra]


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return isinstance(b, list | tuple) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def untimed(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if not k.endswith("_seconds")}


def assert_same_run(a: Path, b: Path) -> None:
    """Bit-identical results: summary numbers, metrics files, every checkpoint's weights, replay, counters."""
    summaries = [json.loads((d / "summary.json").read_text()) for d in (a, b)]
    assert untimed(summaries[0]) == untimed(summaries[1])
    for phase in ("pretrain", "finetune"):
        assert (a / phase / "metrics.csv").read_bytes() == (b / phase / "metrics.csv").read_bytes()
        x, y = (torch.load(d / phase / "checkpoint.pt", weights_only=True) for d in (a, b))
        for key in COMPARED:
            assert same(x[key], y[key]), (phase, key)


def error_line(argv, capsys) -> str:
    """A command that must fail on bad input: exit status 2 and one error line (returned), the last on
    stderr (status lines such as "resuming ..." may come before it)."""
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    errors = [line for line in lines if line.startswith("aps-teach")]
    assert errors == lines[-1:] and ": error: " in errors[0], lines
    return errors[0]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run."""
    out = tmp_path_factory.mktemp("reference")
    assert main(run_argv(out)) == 0
    return out


def test_resume_from_every_interruption_point_repeats_the_uninterrupted_run(reference, tmp_path, monkeypatch,
                                                                            capsys):
    """Ctrl-C before the first checkpoint (config.json only), then after each of the four (mid and end of
    pretraining, mid and end of fine-tuning), each time continued with the command the interruption prints;
    then a resume of the finished run. The old code failed at the first resume (no checkpoint) and at the
    one after pretraining (no fine-tuning checkpoint)."""
    out = tmp_path / "run"
    saves = {"n": 0, "stop_after": 0}
    seconds: dict[str, float] = {}  # each phase's summed seconds in its last checkpoint

    def save_then_stop(path, state):
        if saves["stop_after"] == 0:  # before the first checkpoint
            raise KeyboardInterrupt
        save_checkpoint(path, state)
        saves["n"] += 1
        seconds[Path(path).parent.name] = state["seconds"]
        if saves["n"] == saves["stop_after"]:
            raise KeyboardInterrupt

    monkeypatch.setattr(rounds, "save_checkpoint", save_then_stop)
    argv = run_argv(out)
    standings = ["pretraining not started; fine-tuning not started",
                 "pretraining checkpointed at env step 200 of 400; fine-tuning not started",
                 "pretraining finished (400 env steps); fine-tuning not started",
                 "pretraining finished (400 env steps); fine-tuning checkpointed at env step 200 of 400",
                 "pretraining finished (400 env steps); fine-tuning finished (400 env steps)"]
    for stop_after, standing in enumerate(standings):
        saves["stop_after"] = stop_after
        capsys.readouterr()
        assert main(argv) == 130
        lines = capsys.readouterr().err.splitlines()  # status lines ("resuming ..."), then the one of the CLI
        prefix = f"aps-teach gridworld: interrupted: {standing}; continue with: "
        assert lines[-1].startswith(prefix) and sum(x.startswith("aps-teach") for x in lines) == 1, lines
        command = shlex.split(lines[-1][len(prefix):])
        assert command[:2] == ["aps-teach", "gridworld"] and command[-1] == "--resume"
        argv = command[1:]
        assert not (out / "summary.json").exists()
    saves["stop_after"] = None
    assert main(argv) == 0
    assert "resuming" in capsys.readouterr().err
    assert_same_run(reference, out)
    # timings survive: the last session only loaded both phases, its summary still counts their rounds
    summary = json.loads((out / "summary.json").read_text())
    assert summary["pretrain_seconds"] >= seconds["pretrain"] > 0
    assert summary["finetune_seconds"] >= seconds["finetune"] > 0
    assert summary["wall_seconds"] >= seconds["pretrain"] + seconds["finetune"]
    before = files(out)
    assert main(argv) == 0  # a finished run resumes to the same results
    assert_same_run(reference, out)
    assert files(out).keys() == before.keys()


def test_resume_after_sigkill_mid_pretraining(reference, tmp_path, capsys):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, "-m", "aps_teach", *run_argv(out)], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while child.poll() is None and not (out / "pretrain" / "checkpoint.pt").exists():
            time.sleep(0.005)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
    assert child.returncode == -signal.SIGKILL and not (out / "summary.json").exists()
    assert main(run_argv(out, "--resume")) == 0
    assert_same_run(reference, out)
    assert f"taking over {out}: its last owner (pid {child.pid}) ended without releasing it" in \
        capsys.readouterr().err


def test_a_second_process_writing_a_running_run_is_refused_naming_its_pid(tmp_path, capsys):
    """Two `run`s into one --out: the second, with or without --resume or --force, is refused while the
    first runs (it used to start over, deleting the first's files as it wrote them)."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(Path(aps_teach.__file__).parents[1])}
    long = [arg if arg != "400" else "40000" for arg in run_argv(out)]  # minutes of work: it is still running
    child = subprocess.Popen([sys.executable, "-m", "aps_teach", *long], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        while child.poll() is None and not (out / "pretrain" / "metrics.csv").exists():
            time.sleep(0.005)
        for extra in ((), ("--resume",), ("--force", "--seed", "4")):
            err = error_line([*long, *extra], capsys)
            assert err == (f"aps-teach gridworld: error: {out} is in use by another aps-teach process "
                           f"(pid {child.pid}): wait for it to end or stop it, then run this again (or give "
                           "another --out)")
        assert child.poll() is None and json.loads((out / "config.json").read_text())["seed"] == 1
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("command", ["run", "pretrain", "finetune", "sweep", "transfer", "atari run",
                                     "atari sweep"])
def test_every_command_that_writes_a_directory_is_refused_while_another_owns_it(command, reference, tmp_path,
                                                                               capsys):
    from tests.infra.test_locks import held_by_another_process

    out = tmp_path / "run"
    shutil.copytree(reference, out)
    argv = {"run": run_argv(out, "--resume"),
            "pretrain": ["gridworld", "pretrain", "--out", str(out), "--seed", "1", "--steps", "400", *TINY,
                         "--resume"],
            "finetune": ["gridworld", "finetune", "--out", str(out), "--resume"],
            "sweep": ["gridworld", "sweep", "--out", str(out), "--seeds", "1", "--methods", "dqn", "--levels",
                      "easy", "--finetune-steps", "3200"],
            "transfer": ["gridworld", "transfer", "--out", str(out), "--seeds", "1", "--tasks", "1"],
            "atari run": ["atari", "run", "--out", str(out), "--game", "pong"],
            "atari sweep": ["atari", "sweep", "--out", str(out)]}[command]
    with held_by_another_process(out) as pid:
        before = files(out)
        err = error_line(argv, capsys)
        assert f"{out} is in use by another aps-teach process (pid {pid})" in err
        assert files(out) == before


def test_a_finished_run_is_never_started_over_without_force(reference, tmp_path, capsys):
    """The same command again, without --resume, used to print "starting over" and delete the finished run;
    it is refused, saying how to score, resume or start over, and --force starts it over."""
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    before = files(out)
    err = error_line(run_argv(out), capsys)
    assert err == (f"aps-teach gridworld: error: {out} holds this run, pretraining finished (400 env "
                   "steps); fine-tuning finished (400 env steps); results in summary.json, which this "
                   "command would start over: nothing was changed; score it with `aps-teach gridworld "
                   f"evaluate --out {out}`, continue it with --resume (finished phases are loaded, not "
                   "trained again), or start it over with --force")
    err = error_line(["gridworld", "pretrain", "--out", str(out), "--seed", "1", "--steps", "400", *TINY],
                     capsys)
    assert "holds this run, pretraining finished (400 env steps); fine-tuning finished" in err
    assert f"fine-tune it with `aps-teach gridworld finetune --out {out}`" in err
    err = error_line(["gridworld", "finetune", "--out", str(out)], capsys)
    assert "holds this run, fine-tuning finished (400 env steps); results in summary.json" in err
    assert files(out) == before
    assert main(run_argv(out, "--force")) == 0
    assert "starting over in" in capsys.readouterr().err
    assert_same_run(reference, out)


def test_a_budget_is_rounded_up_to_whole_rounds_said_and_recorded(reference, tmp_path, capsys):
    """300 pretraining steps of 2 envs run as 2 rounds of 2 x 100 = 400 steps: the run says so, records 400
    (config.json and the checkpoint, where it used to record 300) and is the run of 400."""
    out = tmp_path / "run"
    budget = ["--pretrain-steps", "300", "--finetune-steps", "400", "--identify-steps", "101",
              "--eval-episodes", "4"]
    capsys.readouterr()
    assert main(["gridworld", "run", "--out", str(out), "--seed", "1", *budget, *TINY]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if "whole rounds" in line] == [
        "pretrain_steps 300 -> 400 env steps: whole rounds of 2 envs x 100 steps",
        "identify_steps 101 -> 200 env steps: whole rounds of 2 envs x 100 steps"]
    saved = json.loads((out / "config.json").read_text())
    assert (saved["pretrain_steps"], saved["finetune_steps"], saved["identify_steps"]) == (400, 400, 200)
    assert_same_run(reference, out)
    # the same command resumes it (its budget rounds to the recorded one)
    assert main(["gridworld", "run", "--out", str(out), "--seed", "1", *budget, *TINY, "--resume"]) == 0
    assert_same_run(reference, out)


def test_pretrain_then_finetune_is_the_run_and_finetune_reads_the_run(reference, tmp_path, capsys):
    """`pretrain` + `finetune` (method, level, seed, training config from the directory) = `run`; a
    later `finetune --resume` takes its budget from config.json; a --level or --seed of another run is
    refused."""
    out = tmp_path / "run"
    assert main(["gridworld", "pretrain", "--out", str(out), "--seed", "1", "--steps", "400", *TINY]) == 0
    assert main(["gridworld", "finetune", "--out", str(out), "--steps", "400", "--identify-steps", "200",
                 "--eval-episodes", "4"]) == 0
    assert_same_run(reference, out)
    saved = json.loads((out / "config.json").read_text())  # the method is held once: the agent config's
    assert "method" not in saved and saved["train"]["agent"]["method"] == "aps"
    assert main(["gridworld", "finetune", "--out", str(out), "--resume"]) == 0  # 400 steps, from config.json
    assert_same_run(reference, out)
    before = files(out)
    for option, value in (("--level", "hard"), ("--seed", "0")):
        err = error_line(["gridworld", "finetune", "--out", str(out), option, value], capsys)
        assert f"{option} {value}: {out}/config.json holds a run with" in err
    err = error_line(["gridworld", "finetune", "--out", str(out), "--steps", "600"], capsys)
    assert "finetune_steps (saved 400, this run 600)" in err
    assert files(out) == before


def test_a_directory_of_another_run_is_refused_with_nothing_changed(reference, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    before = files(out)
    cases = [(run_argv(out, "--level", "hard"), "level (saved 'easy', this run 'hard')"),
             (run_argv(out, "--level", "hard", "--resume"), "cannot resume it): level (saved 'easy'"),
             (run_argv(out, "--method", "visr"), "train.agent.method (saved 'aps', this run 'visr')"),
             (run_argv(out, "--train.agent.k", "5"), "train.agent.k (saved 3, this run 5)"),
             (run_argv(out, "--finetune-steps", "600", "--resume"),
              "finetune_steps (saved 400, this run 600)"),
             (["gridworld", "pretrain", "--out", str(out), "--method", "apt", "--seed", "1", "--steps", "400",
               *TINY], "method (saved 'aps', this run 'apt')"),
             (run_argv(out, "--resume", "--force"), "give one of them")]
    for argv, message in cases:
        err = error_line(argv, capsys)
        assert message in err and "--force" in err, err
        assert files(out) == before
    # --force replaces the run: nothing of the old one is left to mix with the new config
    assert main(["gridworld", "pretrain", "--out", str(out), "--level", "hard", "--seed", "1",
                 "--steps", "200", *TINY, "--force"]) == 0
    assert sorted(files(out)) == [".lock", "config.json", "pretrain/checkpoint.pt", "pretrain/metrics.csv"]
    assert json.loads((out / "config.json").read_text())["level"] == "hard"
    assert torch.load(out / "pretrain" / "checkpoint.pt", weights_only=True)["art"] == level_art("hard")
    assert "finetune_steps" not in json.loads((out / "config.json").read_text())  # nothing of the old run
    # a directory with run files but no config.json is nobody's run
    (out / "config.json").unlink()
    before = files(out)
    assert "holds run files (pretrain) but no config.json" in error_line(run_argv(out), capsys)
    assert files(out) == before


def test_evaluate_scores_the_run_on_its_level_and_seed_and_refuses_another_runs_checkpoint(
        reference, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    seeds = []
    library_evaluate = cli_gridworld.evaluate

    def spy(learner, level, w, episodes, seed, config):
        seeds.append(seed)
        return library_evaluate(learner, level, w, episodes, seed, config)

    monkeypatch.setattr(cli_gridworld, "evaluate", spy)
    capsys.readouterr()
    assert main(["gridworld", "evaluate", "--out", str(out)]) == 0
    assert seeds == [1]  # the run's seed (it was 0 whatever the run's)
    printed = dict(line.strip().split(": ", 1) for line in capsys.readouterr().out.splitlines())
    learner, meta = train.load_learner(out / "finetune" / "checkpoint.pt")
    config = cli_gridworld.train_config(RunDir(out), json.loads((out / "config.json").read_text()))
    expected = train.evaluate(learner, "easy", torch.tensor(meta["task_w"]), 4, 1, config)  # the run's 4
    assert (printed["seed"], printed["level"], printed["checkpoint"], printed["episodes"]) == \
        ("1", "easy", "finetune", "4")
    assert float(printed["mean_return"]) == expected.mean_return
    assert float(printed["success_rate"]) == expected.success_rate

    # a config.json that no longer describes the checkpoints (what the old `run` left behind) is refused
    saved = json.loads((out / "config.json").read_text())
    for change, message in ((("level", "hard"), "art (checkpoint 'easy', this run 'hard')"),
                            (("seed", 0), "seed (checkpoint 1, this run 0)"),
                            (("finetune_steps", 600), "steps (checkpoint 400, this run 600)")):
        (out / "config.json").write_text(json.dumps({**saved, change[0]: change[1]}))
        err = error_line(["gridworld", "evaluate", "--out", str(out)], capsys)
        assert f"checkpoint {out}/finetune/checkpoint.pt" in err and message in err
    train_k = {**saved["train"], "agent": {**saved["train"]["agent"], "k": 5}}
    (out / "config.json").write_text(json.dumps({**saved, "train": train_k}))
    assert "is not of this run: config.agent.k (checkpoint 3, this run 5)" in error_line(
        ["gridworld", "evaluate", "--out", str(out)], capsys)


def test_corrupt_config_and_checkpoint_are_named_with_the_reason(reference, tmp_path, capsys):
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    config = out / "config.json"
    good = config.read_bytes()
    for content, reason in ((b"", "the file is empty"), (b'{"method": "aps", ', "not valid JSON (Expecting"),
                            (b"[1, 2]", "a JSON list, not an object of config fields"),
                            (b'{"method": "aps"}', "no level, seed, train field")):
        config.write_bytes(content)
        for command in ("evaluate", "finetune"):
            err = error_line(["gridworld", command, "--out", str(out)], capsys)
            assert f"corrupt run config {config}: {reason}" in err, err
        if content != b'{"method": "aps"}':  # (a run adds the fields an incomplete config lacks)
            assert f"corrupt run config {config}: {reason}" in error_line(run_argv(out, "--resume"), capsys)
    config.write_bytes(good)
    checkpoint = out / "finetune" / "checkpoint.pt"
    for content, reason in ((b"", "the file is empty (0 bytes)"),
                            (b"not a checkpoint", "not a checkpoint of tensors and plain data")):
        checkpoint.write_bytes(content)
        for argv in (["gridworld", "evaluate", "--out", str(out)], run_argv(out, "--resume")):
            err = error_line(argv, capsys)
            assert f"corrupt checkpoint file {checkpoint}: {reason}" in err and "weights_only" not in err, err


@pytest.mark.parametrize("damage, reason", [
    (lambda path: path.unlink(), "was missing"),
    (lambda path: path.write_bytes(path.read_bytes()[:-40]), "was cut short"),
    (lambda path: path.write_bytes(path.read_bytes().replace(b",", b";", 3)),
     "did not match the checkpoint's rows"),
    (lambda path: path.write_bytes(path.read_bytes() + path.read_bytes().splitlines(keepends=True)[-1]),
     "had 1 row(s) written after the checkpoint (those steps are run again)"),
])
def test_a_damaged_metrics_csv_is_rewritten_from_the_checkpoint_on_resume_and_said(damage, reason, reference,
                                                                                     tmp_path, capsys):
    """A deleted, truncated or corrupt metrics.csv used to stay so, unreported (a finished phase never
    rewrites it); resume puts back the checkpoint's rows, as it does the weights."""
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    damage(out / "finetune" / "metrics.csv")
    capsys.readouterr()
    assert main(run_argv(out, "--resume")) == 0
    err = capsys.readouterr().err
    assert f"fine-tuning: {out}/finetune/metrics.csv {reason}; rewritten from the checkpoint (2 rows)" in err
    assert "pretraining: " not in err.replace("pretraining: finished", "")  # the intact file is left alone
    assert_same_run(reference, out)


def test_a_full_disk_while_checkpointing_is_one_line_naming_the_file_and_the_bytes(reference, tmp_path,
                                                                                   monkeypatch, capsys):
    """It used to be torch's RuntimeError traceback; the run then continues with --resume once there is
    room."""
    from aps_teach.infra import files as files_module

    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(files_module.shutil, "disk_usage", lambda path: usage._replace(free=20_000))
    out = tmp_path / "run"
    err = error_line(run_argv(out), capsys)
    need = files_module.tensor_bytes(torch.load(reference / "pretrain" / "checkpoint.pt", weights_only=True))
    # (the first checkpoint, after round 1 of 2, holds a little less than the last)
    assert err.startswith(f"aps-teach gridworld: error: {out}/pretrain/checkpoint.pt: not enough disk space "
                          "to write it: it needs ") and "20,000 bytes free" in err, err
    assert int(err.split("it needs ")[1].split(" bytes")[0].replace(",", "")) <= need
    assert sorted(files(out)) == ["config.json", "pretrain/metrics.csv"]  # no checkpoint, no temporary file
    monkeypatch.undo()
    assert main(run_argv(out, "--resume")) == 0
    assert_same_run(reference, out)


def test_a_write_that_runs_out_of_space_midway_is_disk_full_and_keeps_the_old_file(tmp_path, monkeypatch):
    from aps_teach.infra import files as files_module

    path = tmp_path / "checkpoint.pt"
    files_module.save_checkpoint(path, {"w": torch.zeros(10)})
    old = path.read_bytes()
    usage = shutil.disk_usage(tmp_path)
    free = iter([10**9, 100])  # room before the write, 100 bytes once it failed

    def full_midway(state, target):
        Path(target).write_bytes(b"partial")
        raise RuntimeError("PytorchStreamWriter failed writing file data/0: file write failed")

    monkeypatch.setattr(files_module.shutil, "disk_usage", lambda p: usage._replace(free=next(free)))
    monkeypatch.setattr(files_module.torch, "save", full_midway)
    with pytest.raises(files_module.DiskFull) as full:
        files_module.save_checkpoint(path, {"w": torch.zeros(1000)})
    assert str(full.value) == ("[Errno 28] not enough disk space to write it: it needs 4,000 bytes, 100 "
                               "bytes free; free some space and run the command again (the file it replaces, "
                               f"if any, is intact): '{path}'")
    assert path.read_bytes() == old and sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.pt"]


def test_claim_keeps_a_run_whole():
    """The claim's own rules, on a directory without training: the first write is config.json; a later
    command adds the fields it decides; another run is refused unless forced, which removes the old run's
    files (and only those)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        run = RunDir(Path(tmp) / "out")
        with pytest.raises(RuntimeError, match="inside `with RunDir"):
            run.claim({"a": 1})  # only the directory's owner claims it
        with pytest.raises(ValueError, match="give one of them"), run:
            run.claim({"a": 1}, resume=True, force=True)
        assert not run.path.exists()  # nothing written on refusal: not even the directory the lock made
        with run:
            first = {"method": "aps", "pretrain_steps": 10}
            assert run.claim(first) == first
            (run.path / "pretrain").mkdir()
            (run.path / "notes.txt").write_text("mine")
            merged = run.claim({"method": "aps", "finetune_steps": 5}, resume=True)
            assert merged == {"method": "aps", "pretrain_steps": 10, "finetune_steps": 5}
            assert json.loads(run.config_path.read_text()) == merged and run.resumes("pretrain") is False
            with pytest.raises(ValueError, match=r"method \(saved 'aps', this run 'apt'\)"):
                run.claim({"method": "apt"})
            assert run.claim({"method": "apt"}, force=True) == {"method": "apt"}  # a new run: config alone
        assert sorted(p.name for p in run.path.iterdir()) == [".lock", "config.json", "notes.txt"]  # no owner


def test_atari_run_directory_shares_the_rules(tmp_path, capsys):
    """The Atari pipeline claims through the same `RunDir`: another game refused with nothing changed, a
    corrupt config.json named, evaluate on the run's seed (apt: no task to identify) and refusing a checkpoint
    of another run."""
    from aps_teach.atari.experiments import read_run_config, start_run_dir

    out = tmp_path / "pong"
    options = ["--out", str(out), "--game", "pong", "--method", "apt", "--seed", "3", "--num-envs", "2",
               "--no-progress", "--threads", "1", "--atari.conv-channels", "8", "8", "8",
               "--atari.psi-hidden", "32", "--atari.phi-hidden", "32", "--atari.batch-size", "8",
               "--atari.n-step", "3", "--atari.k", "3",
               "--atari.pretrain-steps", "4", "--atari.min-replay-size", "64", "--atari.eval-steps", "400",
               "--atari.max-frames-per-episode", "800"]
    assert main(["atari", "pretrain", *options]) == 0
    before = files(out)
    err = error_line(["atari", "pretrain", *options, "--game", "breakout"], capsys)
    assert "game (saved 'pong', this run 'breakout')" in err and "--force" in err
    err = error_line(["atari", "pretrain", *options], capsys)  # the same command: its pretraining is done
    assert f"{out} holds this run, pretraining finished (4 env steps), which this command would start over" \
        in err and f"score it with `aps-teach atari evaluate --out {out}`" in err
    assert files(out) == before
    (out / "pretrain" / "metrics.csv").unlink()
    assert main(["atari", "pretrain", *options, "--resume"]) == 0
    assert f"pretraining: {out}/pretrain/metrics.csv was missing; rewritten from the checkpoint (1 rows)" in \
        capsys.readouterr().err
    assert files(out) == before
    *_, config = read_run_config(out)
    with RunDir(out) as run:
        start_run_dir(run, "apt", "pong", 3, config, resume=True)  # the same run: nothing changes
    assert files(out) == before

    capsys.readouterr()
    assert main(["atari", "evaluate", "--out", str(out)]) == 0
    assert "seed: 3" in capsys.readouterr().out
    scores = (out / "scores.csv").read_text().splitlines()
    assert scores[1].split(",")[:4] == ["pong", "apt", "3", "pretrain"]

    saved = json.loads((out / "config.json").read_text())
    (out / "config.json").write_text(json.dumps({**saved, "seed": 4}))
    err = error_line(["atari", "evaluate", "--out", str(out)], capsys)
    assert "is not of this run: seed (checkpoint 3, this run 4)" in err
    (out / "config.json").write_text("{")
    err = error_line(["atari", "evaluate", "--out", str(out)], capsys)
    assert f"corrupt run config {out}/config.json: not valid JSON" in err
