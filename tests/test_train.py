"""The pipeline: reward-free pretraining, checkpoint/resume, coverage bookkeeping, clear errors."""

import gymnasium as gym
import numpy as np
import pytest
import torch

import gridworld
from aps_teach import train
from aps_teach.agents import AgentConfig
from aps_teach.experiments import run_gridworld
from aps_teach.train import TrainConfig, finetune, new_learner, pretrain

ROUND = 200  # 2 envs x 100-step episode limit


def tiny(method="aps", **agent) -> TrainConfig:
    agent = AgentConfig(method=method, hidden=16, batch_size=8, n_step=3, k=3, target_update_period=20,
                        **agent)
    return TrainConfig(agent=agent, num_envs=2, learning_starts=100,
                       checkpoint_every=1, progress=False)


class ScrambledReward(gym.Wrapper):
    """The same dynamics with arbitrary rewards."""

    def __init__(self, env, seed):
        super().__init__(env)
        self.rng = np.random.default_rng(seed)

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        return obs, float(self.rng.normal(scale=100.0)), terminated, truncated, info


def _weights(learner):
    return {f"{name}.{k}": v for name, m in learner._modules().items() for k, v in m.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("method", ["aps", "apt"])
def test_pretraining_never_sees_the_reward(method):
    plain, _ = pretrain(method, "easy", 2 * ROUND, seed=3, config=tiny(method))
    scrambled, _ = pretrain(method, lambda: ScrambledReward(gridworld.make("easy"), 9), 2 * ROUND, seed=3,
                            config=tiny(method))
    assert _same(_weights(plain), _weights(scrambled))
    # the scrambled rewards are real: fine-tuning on them changes the weights
    w = torch.tensor([1.0, 0, 0, 0, 0])
    finetune(plain, "easy", w, ROUND, seed=3, config=tiny(method))
    finetune(scrambled, lambda: ScrambledReward(gridworld.make("easy"), 9), w, ROUND, seed=3,
             config=tiny(method))
    assert not _same(_weights(plain), _weights(scrambled))


def test_resume_repeats_the_uninterrupted_run(tmp_path, monkeypatch):
    config = tiny("aps")
    full, full_log = pretrain("aps", "easy", 3 * ROUND, seed=1, config=config, run_dir=tmp_path / "a")

    calls = {"n": 0}
    reset = train.EnvBatch.reset

    def crash_on_third_round(self, seeds):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return reset(self, seeds)

    monkeypatch.setattr(train.EnvBatch, "reset", crash_on_third_round)
    with pytest.raises(KeyboardInterrupt):
        pretrain("aps", "easy", 3 * ROUND, seed=1, config=config, run_dir=tmp_path / "b")
    monkeypatch.setattr(train.EnvBatch, "reset", reset)
    assert torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=True)["round"] == 2
    resumed, resumed_log = pretrain("aps", "easy", 3 * ROUND, seed=1, config=config, run_dir=tmp_path / "b",
                                    resume=True)
    assert _same(_weights(full), _weights(resumed))
    assert resumed_log.metrics == full_log.metrics
    assert (tmp_path / "a" / "metrics.csv").read_text() == (tmp_path / "b" / "metrics.csv").read_text()
    for a, b in zip(full.optimizer.state_dict()["state"].values(),
                    resumed.optimizer.state_dict()["state"].values(), strict=True):
        assert torch.equal(a["exp_avg"], b["exp_avg"])


def test_checkpoint_mismatch_and_corruption_are_clear_errors(tmp_path):
    pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path)
    with pytest.raises(ValueError, match="method='aps'"):
        pretrain("visr", "easy", ROUND, seed=0, config=tiny("visr"), run_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match="has art="):
        pretrain("aps", "hard", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path, resume=True)
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt checkpoint file"):
        pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path, resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path / "empty", resume=True)


def test_coverage_matches_a_recount_of_the_replayed_observations(tmp_path):
    pretrain("visr", "easy", 2 * ROUND, seed=2, config=tiny("visr"), run_dir=tmp_path)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    replay, logged = state["replay"], state["metrics"][-1]
    seen = set()
    for frames in (replay["obs"], replay["next_obs"]):
        for obs in frames.flatten(0, 1):
            agent = torch.nonzero(obs[2])
            if len(agent):  # an agent standing on the target is drawn over it: terminal, not counted
                held = () if obs[3].any() else ("green",)
                if tuple(agent[0].tolist()) != (6, 7):
                    seen.add((tuple(agent[0].tolist()), held))
    assert logged["states_visited"] == len(seen)
    assert logged["states_reachable"] == len(gridworld.make("easy").unwrapped.reachable_states())


@pytest.mark.parametrize("method", ["visr", "dqn"])
def test_finetuning_stores_phi_of_every_next_state(method):
    learner = new_learner(method, "easy", 4, tiny(method))
    if method == "visr":
        learner, _ = pretrain(method, "easy", ROUND, seed=4, config=tiny(method))
    replays = []
    finetune(learner, "easy", learner.default_task(1)[0], ROUND, seed=4, config=tiny(method),
             on_round=lambda end: replays.append(end.replay))
    data, size = replays[-1].data, replays[-1].size
    if method == "dqn":  # no phi, nothing stored
        assert "next_phi" not in data
        return
    next_obs = data["next_obs"][:size].flatten(0, 1)
    torch.testing.assert_close(data["next_phi"][:size].flatten(0, 1), learner.features(next_obs))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: run_gridworld("diayn", "easy", seed=0), "valid methods: visr, apt, aps, dqn"),
    (lambda: run_gridworld("aps", "medium", seed=0), "valid levels: easy, hard"),
    (lambda: run_gridworld("aps", "easy", seed=0, pretrain_steps=0), "pretrain_steps must be a positive"),
    (lambda: run_gridworld("aps", "easy", seed=0, finetune_steps=-5), "finetune_steps must be a positive"),
    (lambda: pretrain("aps", "easy", 0, seed=0), "pretrain steps must be a positive"),
    (lambda: pretrain("dqn", "easy", 10, seed=0), "no pretraining phase"),
    (lambda: pretrain("aps", "easy", 10, seed=0, config=TrainConfig(agent=AgentConfig(feature_dim=1))),
     "feature_dim must be >= 2"),
    (lambda: TrainConfig(agent=AgentConfig(k=0)), "k must be >= 1"),
    (lambda: finetune(new_learner("aps", "easy", 0), "easy", torch.ones(3), 10, seed=0), "w must have shape"),
    (lambda: train.identify_task(new_learner("apt", "easy", 0), "easy", 10, seed=0), "no task vector"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_cli_run_gives_the_library_numbers_and_resumes_to_them(tmp_path):
    import json

    from aps_teach.cli_gridworld import gridworld_main

    argv = ["run", "--out", str(tmp_path), "--method", "visr", "--seed", "4", "--pretrain-steps", "200",
            "--finetune-steps", "200", "--identify-steps", "200", "--eval-episodes", "4",
            "--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
            "--train.agent.hidden", "16", "--train.agent.batch-size", "8"]
    assert gridworld_main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    config = TrainConfig(agent=AgentConfig(method="visr", hidden=16, batch_size=8), num_envs=2,
                         learning_starts=100, progress=False)
    result = run_gridworld("visr", "easy", seed=4, pretrain_steps=200, finetune_steps=200, identify_steps=200,
                           eval_episodes=4, config=config)
    for key in ("zero_shot_return", "finetuned_return", "states_visited", "task_w"):
        assert summary[key] == getattr(result, key)
    assert gridworld_main([*argv, "--resume"]) == 0
    resumed = json.loads((tmp_path / "summary.json").read_text())
    assert {k: v for k, v in resumed.items() if "seconds" not in k} == \
        {k: v for k, v in summary.items() if "seconds" not in k}


def test_cli_unknown_method_lists_the_valid_ones(tmp_path, capsys):
    from aps_teach.cli_gridworld import gridworld_main

    with pytest.raises(SystemExit):
        gridworld_main(["run", "--out", str(tmp_path), "--method", "diayn"])
    assert "visr" in capsys.readouterr().err
