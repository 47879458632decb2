"""The Atari sweep: each run's row is the row of the same run made alone, finished runs are skipped, an
interrupted run resumes to the same numbers, the summary aggregates by hand, local GPUs each get one run,
and bad input stops before anything is written."""

import csv
import multiprocessing
import os
import sys
from dataclasses import replace

import pytest

from aps_teach.atari import sweep
from aps_teach.atari.experiments import run
from aps_teach.atari.plots import write_scores_figure
from aps_teach.atari.sweep import expand_games, run_atari_sweep, run_dir, run_one, summary_rows, sweep_runs
from aps_teach.infra.executors import gpu_executor, make_executor
from aps_teach.infra.sweeps import RunSpec, read_rows
from tests.atari.test_train import tiny
from tests.cli.test_commands import ATARI_TINY

TIMING = ("run_seconds",)


def _rows(path):
    with open(path) as file:
        return list(csv.DictReader(file))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    report = run_atari_sweep(["Pong"], ["aps", "dqn"], 1, tiny(), out, progress=False)
    return out, report


def test_a_sweep_row_is_the_row_of_the_same_run_made_alone(swept, tmp_path):
    out, report = swept
    assert sorted(report.completed) == ["aps-pong-seed0", "dqn-pong-seed0"] and not report.failures
    _, alone = run("aps", "pong", seed=0, config=tiny(), out=tmp_path)
    rows_alone = _rows(tmp_path / "scores.csv")  # zero-shot, then fine-tuned
    dropped = ("run_key", "package_version", *TIMING)
    swept = [{k: v for k, v in row.items() if k not in dropped} for row in read_rows(out / "scores.csv")
             if row["run_key"] == "aps-pong-seed0"]
    assert swept == rows_alone and [row["checkpoint"] for row in swept] == ["pretrain", "finetune"]
    assert float(swept[1]["score"]) == pytest.approx(alone.score)
    assert [row["checkpoint"] for row in read_rows(out / "scores.csv")
            if row["run_key"] == "dqn-pong-seed0"] == ["finetune"]  # dqn: no zero-shot score
    assert (run_dir(out, RunSpec("dqn", "pong", 0)) / "finetune" / "metrics.csv").exists()
    assert not (run_dir(out, RunSpec("dqn", "pong", 0)) / "pretrain").exists()  # dqn: no pretraining


def test_the_summary_is_the_aggregate_of_each_games_seed_mean(swept):
    out, _ = swept
    summary = {(row["method"], row["checkpoint"]): row for row in _rows(out / "summary.csv")}
    assert sorted(summary) == [("aps", "finetune"), ("aps", "pretrain"), ("dqn", "finetune")]
    assert not (out / "scores.png").exists()  # the sweep returns data; `aps-teach atari sweep` draws
    assert write_scores_figure(out).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for method, checkpoint in summary:
        (row,) = [r for r in read_rows(out / "scores.csv") if (r["method"], r["checkpoint"]) ==
                  (method, checkpoint)]
        normalised = (float(row["score"]) + 20.7) / (14.6 + 20.7)  # Pong: random -20.7, human 14.6
        assert int(summary[method, checkpoint]["games"]) == 1
        for key in ("mean", "median", "iqm", "iqm_runs", "iqm_runs_low", "iqm_runs_high"):  # one seed: no CI
            assert float(summary[method, checkpoint][key]) == pytest.approx(normalised)
        assert int(summary[method, checkpoint]["superhuman"]) == int(normalised > 1)
        assert int(summary[method, checkpoint]["runs"]) == 1

    def row(method, game, seed, score, normalised):
        return {"method": method, "game": game, "seed": seed, "score": score, "human_normalised": normalised}

    rows = [row("aps", "pong", 0, "0", "0.5"), row("aps", "pong", 1, "0", "1.5"),  # pong: mean 1.0
            row("aps", "breakout", 0, "0", "3.0"), row("aps", "boxing", 0, "0", "-1.0"),
            row("aps", "breakout", 1, "0", "2.0"),  # breakout: mean 2.5
            row("aps", "adventure", 0, "0", ""), row("dqn", "pong", 0, "0", "0.25")]  # no reference
    aps, dqn = summary_rows(rows)
    # games -1.0, 1.0, 2.5: mean 2.5 / 3, median 1.0, IQM trims 25% of 3 games = 0 whole games -> the mean.
    # Over runs: -1, 0.5, 1.5, 2, 3 drop one from each end, (0.5 + 1.5 + 2) / 3. Resampled, boxing's -1 is
    # always dropped, so is breakout's larger draw: IQM = (pong's two + breakout's smaller) / 3, from
    # (1 + 2) / 3 (probability 3/16) to (3 + 3) / 3 (1/16 > 2.5%): the interval [1, 2]
    assert aps == {"method": "aps", "checkpoint": "finetune", "games": 3, "mean": pytest.approx(2.5 / 3),
                   "median": 1.0, "iqm": pytest.approx(2.5 / 3), "superhuman": 1, "runs": 5,
                   "iqm_runs": pytest.approx(4 / 3), "iqm_runs_low": pytest.approx(1.0),
                   "iqm_runs_high": pytest.approx(2.0)}
    assert dqn["games"] == 1 and dqn["mean"] == 0.25
    assert (dqn["runs"], dqn["iqm_runs"], dqn["iqm_runs_low"], dqn["iqm_runs_high"]) == (1, 0.25, 0.25, 0.25)
    with pytest.raises(ValueError, match="different nstep_reward \\(last, sum\\)"):
        summary_rows([{**rows[0], "nstep_reward": "last"}, {**rows[1], "nstep_reward": "sum"}])


def test_the_sweep_command_draws_the_scores_of_the_sweep(swept, tmp_path, monkeypatch, capsys):
    from aps_teach.cli import atari as cli_atari
    from aps_teach.cli.main import main

    out, report = swept
    (tmp_path / "scores.csv").write_bytes((out / "scores.csv").read_bytes())
    monkeypatch.setattr(cli_atari, "run_atari_sweep", lambda *args, **kwargs: report)  # the runs are done
    assert main(["atari", "sweep", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(tmp_path / "scores.png") in capsys.readouterr().out


def test_a_sweep_directory_keeps_one_nstep_reward_mode(swept):
    out, _ = swept
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    other = tiny(atari=replace(tiny().atari, nstep_reward="sum"))
    refusal = r"differing fields: atari.nstep_reward \(file 'last', this sweep 'sum'\)\. "
    with pytest.raises(ValueError, match=refusal):
        run_atari_sweep(["pong"], ["aps", "dqn"], 1, other, out, progress=False)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before  # nothing written


def test_finished_runs_are_skipped_and_an_interrupted_one_resumes_to_the_same_row(swept, monkeypatch):
    out, _ = swept
    specs = ["aps-pong-seed0", "dqn-pong-seed0"]
    again = run_atari_sweep(["pong"], ["aps", "dqn"], 1, tiny(), out, progress=False)
    assert again.completed == [] and sorted(again.skipped) == specs
    spec = RunSpec("aps", "pong", 0)
    finished = run_one(spec, tiny(), str(out))
    # a run that finished but whose row never reached the sweep's file: its own row, no training
    monkeypatch.setattr(sweep, "run", lambda *args, **kwargs: pytest.fail("trained again"))
    assert run_one(spec, tiny(), str(out)) == finished
    monkeypatch.undo()
    # a run stopped during fine-tuning: pretraining is loaded, fine-tuning done again, the same score
    directory = run_dir(out, spec)
    for name in ("finetune/checkpoint.pt", "finetune/metrics.csv", "scores.csv"):
        (directory / name).unlink()
    assert run_one(spec, tiny(), str(out)) == finished
    assert len(_rows(directory / "pretrain" / "metrics.csv")) == 4  # not pretrained a second time


def test_games_and_runs_are_checked_and_expanded():
    assert expand_games(["Pong", "ALE/Pong-v5", "ms_pacman"]) == ["pong", "ms_pacman"]
    assert len(expand_games(["atari26"])) == 26
    assert [s.key for s in sweep_runs(["pong", "breakout"], ["aps"], [0, 1])] == [
        "aps-pong-seed0", "aps-pong-seed1", "aps-breakout-seed0", "aps-breakout-seed1"]
    with pytest.raises(ValueError, match="unknown Atari game 'Pongg'"):
        sweep_runs(["Pongg"], ["aps"], [0])
    with pytest.raises(ValueError, match="valid methods"):
        sweep_runs(["pong"], ["diayn"], [0])


def _visible_after_barrier(barrier) -> tuple[int, str]:
    barrier.wait(timeout=60)  # both tasks at once: on two different workers
    return os.getpid(), os.environ["CUDA_VISIBLE_DEVICES"]


def test_the_local_gpu_pool_pins_one_gpu_to_each_worker(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")  # this process's GPUs 0, 1 are the machine's 3, 5
    with multiprocessing.get_context("spawn").Manager() as manager, gpu_executor([0, 1]) as pool:
        barrier = manager.Barrier(2)
        futures = [pool.submit(_visible_after_barrier, barrier) for _ in range(2)]
        seen = [future.result() for future in futures]
    assert len({pid for pid, _ in seen}) == 2 and sorted(gpu for _, gpu in seen) == ["3", "5"]
    with pytest.raises(ValueError, match="distinct GPU indices"):
        gpu_executor([0, 0])
    with pytest.raises(ValueError, match="GPU 2 is not among the 2 visible"):
        gpu_executor([2])
    with pytest.raises(ValueError, match="one whole GPU"):
        make_executor("local", num_gpus=0.5)


def test_sweep_command_bad_input_writes_nothing(tmp_path, monkeypatch, capsys):
    from aps_teach.cli.main import main

    out = tmp_path / "sweep"
    for argv, message in ((["--games", "pongg"], "unknown Atari game 'pongg'"),
                          (["--gpus", "0"], "gpus is for a sweep on local GPUs"),
                          (["--device", "cuda:1"], "use --device cuda"),
                          (["--seeds", "0"], "seeds must be >= 1")):
        assert main(["atari", "sweep", "--out", str(out), *argv]) == 2
        assert message in capsys.readouterr().err
        assert not out.exists()
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    assert main(["atari", "sweep", "--out", str(out), "--executor", "ray"]) == 2
    assert 'pip install "aps-teach[cluster]"' in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--methods", "ppo"], "--methods 'ppo' is not valid; valid: visr, apt, aps, dqn, random"),
    (["--atari.pretrain-update-period", "0"], "pretrain_update_period must be an integer >= 1"),
    (["--atari.finetune-update-period", "-2"], "finetune_update_period must be an integer >= 1"),
    (["--runs-at-once", "0"], "runs_at_once must be an integer >= 1"),
    (["--first-seed", "-1"], "seed must be an integer >= 0"),
])
def test_atari_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, argv, message):
    from aps_teach.cli.main import main

    out = tmp_path / "sweep"
    assert main(["atari", "sweep", "--out", str(out), "--games", "pong", *argv]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1
    assert not out.exists()


def test_replays_that_do_not_fit_together_are_refused_naming_their_sum(tmp_path, capsys, monkeypatch):
    """Two runs at once each keep a replay: a sweep whose replays fit one at a time but not together is
    refused before any run starts, naming the two replays' sum; more runs than cores is a warning."""
    from aps_teach.atari import train
    from aps_teach.cli.main import main
    from aps_teach.infra import memory

    atari = tiny().atari
    one = train.replay_bytes(atari, 2, "finetune", "dqn")
    monkeypatch.setattr(memory, "free_bytes", lambda device="cpu": int(1.5 * one))
    out = tmp_path / "sweep"
    argv = ["atari", "sweep", "--out", str(out), "--games", "pong", "--methods", "dqn", "--seeds", "2",
            "--runs-at-once", "2", *ATARI_TINY]
    assert main(argv) == 2
    error = capsys.readouterr().err
    transitions = train._replay_rows(atari, 2, "finetune", "dqn") * 2
    said = f"2 runs at once, finetune: 2 replays of {transitions:,} transitions needs {2 * one / 1e9:.1f} GB"
    assert said in error and "or fewer runs at once" in error and error.count("\n") == 1
    assert not out.exists()
    with pytest.warns(UserWarning,
                      match=r"3 runs at once x 1 threads each ask for 3 cores; this machine has"):
        monkeypatch.setattr("os.cpu_count", lambda: 2)
        monkeypatch.setattr(memory, "free_bytes", lambda device="cpu": None)
        run_atari_sweep(["pong"], ["random"], 1, tiny(), tmp_path / "warned", runs_at_once=3, progress=False)
