"""The Atari pipeline on a real ROM (Pong) with tiny budgets and small networks: finite losses, a score row
checked against the reference scores, checkpoints that reload to identical outputs, resume that continues
the step count, augmentation of sampled batches, and clear errors."""

import csv
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from aps_teach.atari import train
from aps_teach.atari.agent import AtariLearner, agent_config
from aps_teach.atari.config import AtariConfig, AtariTrainConfig
from aps_teach.atari.envs import AtariEnvs
from aps_teach.atari.experiments import run, start_run_dir
from aps_teach.atari.train import augment_batch, load_learner, pretrain
from aps_teach.infra.run_dir import RunDir
from aps_teach.learner.batch import Batch
from aps_teach.learner.tasks import infer_task

TINY = AtariConfig(conv_channels=(8, 8, 8), psi_hidden=32, phi_hidden=32, batch_size=8, n_step=3, k=3,
                   pretrain_steps=200, finetune_steps=100, min_replay_size=64,
                   pretrain_update_period=4, finetune_update_period=4,
                   task_id_steps=200, eval_steps=400, max_frames_per_episode=800, epsilon_decay_steps=100)
"""Small networks; 800-frame games (200 agent steps) so that evaluation finishes games."""


def tiny(**kwargs) -> AtariTrainConfig:
    return AtariTrainConfig(**{"atari": TINY, "num_envs": 2, "log_every": 50, "checkpoint_every": 100,
                               "progress": False, "threads": 1, **kwargs})


def _rows(path):
    with open(path) as file:
        return list(csv.DictReader(file))


def _real_stacks(n=6):
    envs = train.make_vector_env("pong", 2, TINY, seed=11, training=False)
    envs.reset()
    rng = np.random.default_rng(0)
    frames = [envs.step(rng.integers(envs.num_actions, size=2)).next_obs for _ in range(n // 2 + 30)]
    envs.close()
    return torch.from_numpy(np.concatenate(frames[-(n // 2):]))


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    learner, result = run("aps", "Pong", seed=0, config=tiny(), out=out)
    return out, learner, result


def test_whole_pipeline_on_pong(pipeline):
    tmp_path, learner, result = pipeline

    pre, fine = _rows(tmp_path / "pretrain" / "metrics.csv"), _rows(tmp_path / "finetune" / "metrics.csv")
    assert [int(r["env_steps"]) for r in pre] == [50, 100, 150, 200]
    # one update per update period (4) env steps once 64 transitions are in: vector steps 32..100 of 2 envs
    # give 2 * 69 = 138 credits -> 34 updates (fine-tuning: steps 32..50, 2 * 19 = 38 -> 9)
    assert int(pre[-1]["updates"]) == 34 and int(fine[-1]["updates"]) == 9
    pre_losses = ("loss_sf", "loss_vmf", "reward_exploit", "reward_explore")
    for rows, losses in ((pre, pre_losses), (fine, ("loss_sf",))):
        trained = [r for r in rows if int(r["updates"]) > 0]
        assert trained and all(math.isfinite(float(r[k])) for r in trained for k in losses)
    assert "reward_explore" not in fine[-1]  # fine-tuning trains on the task reward alone

    # the score rows: zero-shot (the pretrained learner, GPI) and fine-tuned (no GPI), both in the pretraining
    # mode; the raw mean of the finished games and its normalisation by Pong's random -20.7, human 14.6
    zero_shot, row = _rows(tmp_path / "scores.csv")
    assert (zero_shot["checkpoint"], zero_shot["gpi"], zero_shot["finetune_steps"]) == \
        ("pretrain", "True", "0")
    assert (row["checkpoint"], row["gpi"], row["nstep_reward"]) == ("finetune", "False", "last")
    assert zero_shot["task_w"] == row["task_w"] and zero_shot["nstep_reward"] == "last"
    assert row["game"] == "pong" and row["method"] == "aps" and int(row["games"]) == result.episodes >= 2
    assert float(row["score"]) == pytest.approx(np.mean(result.returns))
    assert float(row["human_normalised"]) == pytest.approx((np.mean(result.returns) + 20.7) / (14.6 + 20.7))
    assert all(r == int(r) and -21 <= r <= 21 for r in result.returns)  # raw Pong points, not clipped sums

    # the fine-tuned checkpoint reloads to the same networks: identical outputs on real frames
    reloaded, meta = load_learner(tmp_path / "finetune" / "checkpoint.pt", tiny())
    assert meta["phase"] == "finetune" and meta["env_steps"] == 100 and reloaded.phase == "finetune"
    obs, w = _real_stacks(), torch.tensor(meta["task_w"]).expand(6, -1)
    with torch.no_grad():
        assert torch.equal(reloaded.psi(obs, w), learner.psi(obs, w))
        assert torch.equal(reloaded.phi(obs), learner.phi(obs))
        assert torch.equal(reloaded.psi_target(obs, w), learner.psi_target(obs, w))
    # and phi, frozen while fine-tuning, is still the pretrained one
    pretrained, _ = load_learner(tmp_path / "pretrain" / "checkpoint.pt", tiny())
    with torch.no_grad():
        assert torch.equal(pretrained.phi(obs), learner.phi(obs))
        assert not torch.equal(pretrained.psi(obs, w), learner.psi(obs, w))


def test_resume_continues_the_step_count_and_the_replay(tmp_path, monkeypatch):
    config = tiny(save_replay=True)
    _, full = pretrain("aps", "pong", seed=1, config=config, run_dir=tmp_path / "a")

    step, calls = AtariEnvs.step, {"n": 0}

    def crash_after_75_steps(self, actions):
        calls["n"] += 1
        if calls["n"] == 76:
            raise KeyboardInterrupt
        return step(self, actions)

    monkeypatch.setattr(AtariEnvs, "step", crash_after_75_steps)
    with pytest.raises(KeyboardInterrupt):
        pretrain("aps", "pong", seed=1, config=config, run_dir=tmp_path / "b")
    monkeypatch.setattr(AtariEnvs, "step", step)
    saved = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)
    assert saved["env_steps"] == 100 and saved["updates"] == 9
    assert "reward" not in saved["replay"]  # reward-free: the pretraining replay has no reward column

    calls["n"] = 0
    monkeypatch.setattr(AtariEnvs, "step", lambda self, a: (calls.__setitem__("n", calls["n"] + 1),
                                                            step(self, a))[1])
    resumed_learner, resumed = pretrain("aps", "pong", seed=1, config=config, run_dir=tmp_path / "b",
                                        resume=True)
    assert calls["n"] == 50  # only the missing 100 env steps of 2 envs
    assert [r["env_steps"] for r in resumed.metrics] == [50, 100, 150, 200]
    timing = ("env_steps_per_s", "updates_per_s")
    untimed = [[{k: v for k, v in r.items() if k not in timing} for r in log.metrics[:2]]
               for log in (full, resumed)]
    assert untimed[0] == untimed[1]  # same seed, same numbers up to the interruption
    # with the replay restored, the update schedule is the uninterrupted run's
    assert resumed.env_steps == full.env_steps == 200 and resumed.updates == full.updates == 34
    assert resumed_learner.updates == 34
    assert [int(r["env_steps"]) for r in _rows(tmp_path / "b" / "metrics.csv")] == [50, 100, 150, 200]

    # without a saved replay a resumed phase first refills min_replay_size transitions
    monkeypatch.setattr(AtariEnvs, "step", crash_after_75_steps)
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        pretrain("aps", "pong", seed=1, config=tiny(), run_dir=tmp_path / "c")
    monkeypatch.setattr(AtariEnvs, "step", step)
    _, refilled = pretrain("aps", "pong", seed=1, config=tiny(), run_dir=tmp_path / "c", resume=True)
    # 9 updates and 2 credits at 100 steps; warm again after 32 of the 50 remaining vector steps: 19 steps
    # of 2 envs -> (2 + 38) // 4 = 10 more
    assert refilled.env_steps == 200 and refilled.updates == 9 + 10


def _batch(stacks: torch.Tensor) -> Batch:
    """Four windows of 2 steps over real stacks, the task reward given (fine-tuning's batch)."""
    return Batch(obs=stacks[:4], action=torch.tensor([0, 1, 2, 3]), w=torch.eye(5)[:1].expand(4, -1),
                 next_obs=stacks[:8].reshape(4, 2, *stacks.shape[1:]), mask=torch.ones(4, 2).bool(),
                 boot_obs=stacks[4:8], boot_steps=torch.full((4,), 2), boot_alive=torch.ones(4).bool(),
                 reward=torch.tensor([[1.0, 0], [0, 0], [0, -1], [1, 1]]))


def test_augment_batch_moves_every_observation_with_its_own_draw():
    stacks = _real_stacks(12)
    batch = _batch(stacks)._replace(boot_obs=stacks[:4])  # the same frames as obs
    observations = ("obs", "next_obs", "boot_obs")
    same = augment_batch(batch, AtariConfig(shift_pad=0, intensity_scale=0.0), torch.Generator())
    for key in observations:
        got = getattr(same, key)
        assert got.dtype == torch.float32 and torch.equal(got, getattr(batch, key).float() / 255)
    out = augment_batch(batch, AtariConfig(), torch.Generator().manual_seed(0))
    assert out.w is batch.w and out.reward is batch.reward and out.next_obs.shape == batch.next_obs.shape
    # obs and boot_obs hold the same frames but get different shifts/intensities
    assert not torch.equal(out.obs, out.boot_obs)
    for key in observations:
        assert not torch.equal(getattr(out, key), getattr(batch, key).float() / 255)
        assert getattr(out, key).min() >= 0 and getattr(out, key).max() <= 1.1
    skipped = augment_batch(batch, AtariConfig(), torch.Generator().manual_seed(0), windows=False)
    assert skipped.next_obs is batch.next_obs
    assert not torch.equal(skipped.obs, batch.obs.float() / 255)


def test_dqn_updates_ignore_the_windows_next_observations():
    """Why `augment_batch(windows=False)` is safe for dqn: its update does not read next_obs."""
    batch = _batch(_real_stacks(12))
    a, b = (AtariLearner(TINY, "dqn", 6, seed=3) for _ in range(2))
    for learner in (a, b):
        learner.start_finetune()
    a.update(batch)
    b.update(batch._replace(next_obs=torch.zeros_like(batch.next_obs)))
    assert all(torch.equal(p, q) for p, q in zip(a.psi.parameters(), b.psi.parameters(), strict=True))


def test_atari_learner_uses_the_papers_settings_and_networks():
    atari = AtariConfig(adam_beta1=0.8)
    cfg = agent_config(atari, "aps")
    assert (cfg.gamma, cfg.n_step, cfg.batch_size, cfg.lr, cfg.finetune_lr, cfg.adam_eps, cfg.max_grad_norm,
            cfg.target_update_period, cfg.gpi_samples, cfg.k, cfg.feature_dim) == \
        (0.99, 10, 32, 1e-4, 1e-4, 1.5e-4, 10.0, 100, 10, 10, 5)
    learner = AtariLearner(replace(TINY, finetune_lr=3e-4), "aps", 6, seed=0)
    assert type(learner.psi).__name__ == "AtariSuccessorFeatureNet" and learner.rep is None
    assert AtariLearner(atari, "aps", 6, 0).optimizer.param_groups[0]["betas"] == (0.8, 0.999)
    assert learner.optimizer.param_groups[0]["lr"] == 1e-4
    learner.start_finetune()
    assert learner.optimizer.param_groups[0]["lr"] == 3e-4
    assert type(AtariLearner(TINY, "apt", 6, 0).rep).__name__ == "AtariFeatureNet"
    assert AtariLearner(TINY, "dqn", 6, 0).phi is None


def test_bad_input_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown Atari game 'Pongg'.*closest: pong"):
        run("aps", "Pongg", seed=0, config=tiny(), out=tmp_path / "x")
    assert not (tmp_path / "x").exists()  # nothing written
    with pytest.raises(ValueError, match="valid methods: visr, apt, aps, dqn"):
        run("diayn", "pong", seed=0, config=tiny())
    with pytest.raises(ValueError, match="no pretraining phase"):
        pretrain("dqn", "pong", seed=0, config=tiny())
    if not torch.cuda.is_available():  # a config may name a GPU (a Ray worker has it); a run here may not
        with pytest.raises(ValueError, match="CUDA is not available.*use --device cpu"):
            run("aps", "pong", seed=0, config=tiny(device="cuda"), out=tmp_path / "gpu")
        assert not (tmp_path / "gpu").exists()
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        AtariTrainConfig(device="gpu")
    with pytest.raises(ValueError, match="more than the .* GB free"):
        pretrain("aps", "pong", seed=0, config=tiny(atari=AtariConfig(pretrain_steps=10**10)))

    short = tiny(atari=replace(TINY, pretrain_steps=4))
    pretrain("aps", "pong", seed=0, config=short, run_dir=tmp_path)
    with pytest.raises(ValueError, match=r"method \(checkpoint 'aps', this run 'visr'\)"):
        pretrain("visr", "pong", seed=0, config=short, run_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match=r"game \(checkpoint 'pong', this run 'breakout'\)"):
        pretrain("aps", "breakout", seed=0, config=short, run_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match=r"atari.n_step \(checkpoint 3, this run 4\)"):
        pretrain("aps", "pong", seed=0, config=tiny(atari=replace(short.atari, n_step=4)), run_dir=tmp_path,
                 resume=True)
    with pytest.raises(ValueError, match=r"atari.nstep_reward \(checkpoint 'last', this run 'sum'\)"):
        pretrain("aps", "pong", seed=0, config=tiny(atari=replace(short.atari, nstep_reward="sum")),
                 run_dir=tmp_path, resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        pretrain("aps", "pong", seed=0, config=short, run_dir=tmp_path / "empty", resume=True)
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt checkpoint file"):
        pretrain("aps", "pong", seed=0, config=short, run_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="corrupt checkpoint file"):
        load_learner(tmp_path / "checkpoint.pt")


def test_run_directory_refuses_a_different_run_and_drops_a_stale_task(tmp_path):
    def claim(config, resume):
        with RunDir(tmp_path) as run:
            start_run_dir(run, "aps", "pong", 0, config, resume=resume)

    claim(tiny(), resume=False)
    (tmp_path / "task.json").write_text('{"w": [1, 0, 0, 0, 0]}')
    before = (tmp_path / "config.json").read_text()
    with pytest.raises(ValueError, match=r"another run \(cannot resume it\): seed \(saved 0, this run 1\)"):
        run("aps", "pong", seed=1, config=tiny(), out=tmp_path, resume=True)
    with pytest.raises(ValueError, match=r"train.atari.gamma \(saved 0.99, this run 0.9\)"):
        claim(tiny(atari=replace(TINY, gamma=0.9)), resume=True)
    claim(tiny(device="cpu", threads=2, progress=True), resume=True)
    assert (tmp_path / "config.json").read_text() == before and (tmp_path / "task.json").exists()
    claim(tiny(), resume=False)  # a new pretraining: w is stale
    assert not (tmp_path / "task.json").exists()


def test_a_missing_rom_or_a_replay_too_large_is_refused_before_anything_is_written(tmp_path, monkeypatch,
                                                                                  capsys):
    """Both used to write config.json first, so the corrected command was refused as another run."""
    from aps_teach.cli.main import main

    out = tmp_path / "run"
    monkeypatch.setenv("ALE_ROMS_DIR", str(tmp_path))  # a ROM directory without pong.bin
    assert main(["atari", "run", "--out", str(out), "--game", "pong"]) == 2
    err = capsys.readouterr().err
    assert f"the ROM of pong is missing ({tmp_path}/pong.bin); reinstall ale-py" in err
    assert err.count("\n") == 1
    assert not out.exists()
    monkeypatch.delenv("ALE_ROMS_DIR")
    assert main(["atari", "run", "--out", str(out), "--game", "pong", "--atari.pretrain-steps",
                 "100000000000"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert "pretrain: the replay of 100,000,000,040 transitions needs" in err and "GB free on cpu" in err
    assert not out.exists()


def test_cli_pretrain_finetune_evaluate_give_the_library_numbers(pipeline, tmp_path, capsys):
    from aps_teach.cli.main import main

    library_zero_shot, library = _rows(pipeline[0] / "scores.csv")
    options = ["--out", str(tmp_path), "--game", "PONG", "--seed", "0", "--num-envs", "2",
               "--log-every", "50", "--checkpoint-every", "100", "--no-progress", "--threads", "1",
               "--atari.conv-channels", "8", "8", "8", "--atari.psi-hidden", "32", "--atari.phi-hidden", "32",
               "--atari.batch-size", "8", "--atari.n-step", "3", "--atari.k", "3",
               "--atari.pretrain-steps", "200",
               "--atari.finetune-steps", "100", "--atari.min-replay-size", "64",
               "--atari.pretrain-update-period", "4", "--atari.finetune-update-period", "4",
               "--atari.task-id-steps", "200", "--atari.eval-steps", "400",
               "--atari.max-frames-per-episode", "800", "--atari.epsilon-decay-steps", "100"]
    assert main(["atari", "pretrain", *options]) == 0
    assert main(["atari", "evaluate", "--out", str(tmp_path)]) == 0  # zero-shot: identify, then GPI
    assert main(["atari", "finetune", "--out", str(tmp_path)]) == 0
    assert main(["atari", "evaluate", "--out", str(tmp_path)]) == 0
    zero_shot, tuned, again = _rows(tmp_path / "scores.csv")
    assert zero_shot["checkpoint"] == "pretrain" and zero_shot["finetune_steps"] == "0"
    assert zero_shot["task_w"] == library["task_w"]  # identified once, reused by finetune
    for key in ("checkpoint", "gpi", "games", "score", "human_normalised"):  # run's zero-shot = evaluate's
        assert zero_shot[key] == library_zero_shot[key]
    assert float(zero_shot["human_normalised"]) == pytest.approx((float(zero_shot["score"]) + 20.7) / 35.3)
    for key in ("game", "method", "seed", "checkpoint", "games", "score", "human_normalised", "task_w"):
        assert tuned[key] == library[key] == again[key]
    assert "human-normalised" in capsys.readouterr().out

    assert main(["atari", "finetune", "--out", str(tmp_path / "none")]) == 2
    assert "config.json not found" in capsys.readouterr().err
    assert main(["atari", "evaluate", "--out", str(tmp_path), "--device", "cuda:7"]) == 2
    assert "cuda:7" in capsys.readouterr().err


def test_apt_pretrains_its_contrastive_encoder_on_pixels():
    config = tiny(atari=replace(TINY, pretrain_steps=100, min_replay_size=32))
    learner, log = pretrain("apt", "pong", seed=0, config=config)
    assert log.updates == 2 * 35 // 4 and learner.phi is None  # vector steps 16..50 of 2 envs, 1 update / 4
    last = log.metrics[-1]
    assert math.isfinite(last["loss_nce"]) and math.isfinite(last["reward_explore"])
    assert "loss_vmf" not in last


def test_identification_without_a_reward_draws_w_and_says_so(monkeypatch):
    """Freeway's rollouts may hold no reward at all: no w can be fitted, so w is drawn on the sphere (the same
    draw for the same seed), with a warning, and the record says no step was rewarded."""
    learner = train.new_learner("aps", "pong", 0, tiny())
    features = torch.nn.functional.normalize(torch.randn(50, 5), dim=-1)
    monkeypatch.setattr(train, "task_data", lambda *args: (features, torch.zeros(50)))
    with pytest.warns(RuntimeWarning, match="no reward in the 50 steps of task identification"):
        first = train.identify_task(learner, "pong", 3, tiny())
    with pytest.warns(RuntimeWarning):
        again = train.identify_task(learner, "pong", 3, tiny())
    assert (first.steps, first.rewarded) == (50, 0)
    assert float(first.w.norm()) == pytest.approx(1.0) and torch.equal(first.w, again.w)
    rewards = torch.zeros(50)
    rewards[[3, 7]] = 1.0
    monkeypatch.setattr(train, "task_data", lambda *args: (features, rewards))
    fitted = train.identify_task(learner, "pong", 3, tiny())
    assert fitted.rewarded == 2
    torch.testing.assert_close(fitted.w, infer_task(features, rewards))
