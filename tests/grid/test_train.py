"""The pipeline on both engines: reward-free pretraining with an absorbing target, checkpoint/resume,
exploration schedules, coverage bookkeeping, clear errors."""

from dataclasses import asdict, replace

import gymnasium as gym
import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid import envs as grid_envs
from aps_teach.grid.experiments import Budget, run_gridworld
from aps_teach.grid.train import (
    TrainConfig,
    evaluate,
    finetune,
    identify_task,
    new_learner,
    pretrain,
    random_walk,
    task_data,
)
from aps_teach.infra.seeds import round_seeds
from aps_teach.learner.config import AgentConfig

ROUND = 200  # 2 envs x 100-step episode limit
ENGINES = ("compiled", "pycolab")
BATCHES = {"compiled": grid_envs.CompiledBatch, "pycolab": grid_envs.PycolabBatch}


def tiny(method="aps", engine="compiled", **agent) -> TrainConfig:
    agent = AgentConfig(method=method, hidden=16, batch_size=8, n_step=3, k=3, target_update_period=20,
                        **agent)
    return TrainConfig(agent=agent, engine=engine, num_envs=2, learning_starts=100, checkpoint_every=1,
                       progress=False)


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
    config = tiny(method, engine="pycolab")  # env factories run on pycolab
    plain, _ = pretrain(method, "easy", 2 * ROUND, seed=3, config=config)
    absorbing = lambda: ScrambledReward(gridworld.make("easy", absorbing_target=True), 9)  # noqa: E731
    scrambled, _ = pretrain(method, absorbing, 2 * ROUND, seed=3, config=config)
    assert _same(_weights(plain), _weights(scrambled))
    # the scrambled rewards are real: fine-tuning on them changes the weights
    w = plain.default_task(1)[0]
    finetune(plain, "easy", w, ROUND, seed=3, config=config)
    finetune(scrambled, lambda: ScrambledReward(gridworld.make("easy"), 9), w, ROUND, seed=3, config=config)
    assert not _same(_weights(plain), _weights(scrambled))


@pytest.mark.parametrize("method", ["visr", "apt", "aps"])
def test_both_engines_train_alike(method):
    """Same seeds, same actions: the same states visited and the same weights up to float rounding."""
    runs = {engine: pretrain(method, "easy", 2 * ROUND, seed=5, config=tiny(method, engine))
            for engine in ENGINES}
    (compiled, compiled_log), (reference, reference_log) = runs["compiled"], runs["pycolab"]
    assert compiled_log.coverage == reference_log.coverage
    a, b = _weights(compiled), _weights(reference)
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_pretraining_target_is_absorbing_and_the_task_target_ends_the_episode(engine):
    corridor = grid_envs.LevelSpec(("######", "#S..T#", "######"))
    replays = []
    _, log = pretrain("visr", corridor, ROUND, seed=0, config=tiny("visr", engine),
                      on_round=lambda end: replays.append(end.replay))
    data = replays[-1].data
    assert log.coverage["target_reached"] and not data["terminated"].any()
    if engine == "compiled":  # once on the target (state 3), every later step of the round stays there
        on_target = (data["next_obs"] == 3).int()
        assert on_target.any() and (on_target.cummax(0).values == on_target).all()
    # fine-tuning keeps the paper's protocol: the task's target ends the episode
    dqn = new_learner("dqn", corridor, 0, tiny("dqn", engine))
    finetune(dqn, corridor, None, ROUND, seed=0, config=tiny("dqn", engine),
             on_round=lambda end: replays.append(end.replay))
    assert replays[-1].data["terminated"].any()
    # finetune_absorbing_target: no terminal; the +10 is paid once, on arrival, then 0 per step
    absorbing = replace(tiny("dqn", engine), finetune_absorbing_target=True)
    finetune(new_learner("dqn", corridor, 0, absorbing), corridor, None, ROUND, seed=0, config=absorbing,
             on_round=lambda end: replays.append(end.replay))
    data = replays[-1].data
    assert not data["terminated"].any() and (data["reward"] == 10).any()
    for env in range(data["reward"].shape[1]):
        rewards = data["reward"][:, env]
        ends = data["ended"][:, env].nonzero().flatten()
        for arrival in (rewards == 10).nonzero().flatten():  # nothing more is paid until the round ends
            end = ends[ends >= arrival][0]
            assert not rewards[arrival + 1:end + 1].any()
    # identification and evaluation keep the paper's protocol too
    learner, _ = pretrain("visr", corridor, ROUND, seed=0, config=tiny("visr", engine))
    _, rewards = task_data(learner, corridor, ROUND, seed=0, config=tiny("visr", engine))
    assert (rewards == 10).sum() > 1  # every arrival pays again: the episode restarted
    assert evaluate(dqn, corridor, None, 4, seed=0, config=tiny("dqn", engine)).episodes == 4


@pytest.mark.parametrize("engine", ENGINES)
def test_visitation_entropy_counts_every_occupied_state(engine):
    """Visits per state against a replay of the same steps: each reset state and each step's s'."""
    replays, config = [], tiny("visr", engine)
    _, log = pretrain("visr", "easy", ROUND, seed=2, config=config,
                      on_round=lambda end: replays.append((end.replay, end.envs)))
    replay, envs = replays[-1]
    visits = envs.visits
    assert sum(visits.values()) == config.num_envs * (100 + 1)  # one reset and 100 steps per env
    assert set(visits) == envs.visited
    counts = np.array(list(visits.values()), dtype=float)
    p = counts / counts.sum()
    expected = -(p * np.log(p)).sum() / np.log(envs.num_reachable)
    assert log.coverage["visitation_entropy"] == pytest.approx(expected)


def test_visitation_entropy_closed_forms():
    assert grid_envs.visitation_entropy([5, 5, 5, 5], 4) == pytest.approx(1.0)
    assert grid_envs.visitation_entropy([7], 4) == 0.0
    assert grid_envs.visitation_entropy([3, 3], 4) == pytest.approx(0.5)  # log 2 / log 4


def test_random_walk_is_pretraining_without_a_learner():
    """The random walk's coverage equals a hand-rolled walk on the compiled tables with the same draws."""
    config = TrainConfig(num_envs=4, progress=False)
    coverage = random_walk("hard", 800, seed=3, config=config)
    level = gridworld.compile_level("hard", absorbing_target=True)
    envs = gridworld.make_vector("hard", 4, observation="state", absorbing_target=True)
    seen = set()
    for index in range(2):
        seeds, gen = round_seeds(3, "pretrain", index, 4)
        state, _ = envs.reset(seed=seeds)
        seen.update(state.tolist())
        for _ in range(100):
            state = level.successor[state, torch.randint(4, (4,), generator=gen).numpy()]
            seen.update(state.tolist())
    visited = {s for s in seen if s < level.num_nonterminal}
    assert coverage["states_visited"] == len(visited)
    assert coverage["target_reached"] == any(s >= level.num_nonterminal for s in seen)
    assert 0 < coverage["visitation_entropy"] < 1


@pytest.mark.parametrize("engine", ENGINES)
def test_resume_repeats_the_uninterrupted_run(tmp_path, monkeypatch, engine):
    config = tiny("aps", engine)
    full, full_log = pretrain("aps", "easy", 3 * ROUND, seed=1, config=config, run_dir=tmp_path / "a")

    calls = {"n": 0}
    batch = BATCHES[engine]
    reset = batch.reset

    def crash_on_third_round(self, seeds):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return reset(self, seeds)

    monkeypatch.setattr(batch, "reset", crash_on_third_round)
    with pytest.raises(KeyboardInterrupt):
        pretrain("aps", "easy", 3 * ROUND, seed=1, config=config, run_dir=tmp_path / "b")
    monkeypatch.setattr(batch, "reset", reset)
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
    with pytest.raises(ValueError, match=r"method \(checkpoint 'aps', this run 'visr'\)"):
        pretrain("visr", "easy", ROUND, seed=0, config=tiny("visr"), run_dir=tmp_path, resume=True)
    with pytest.raises(ValueError, match=r"art \(checkpoint 'easy', this run 'hard'\)"):
        pretrain("aps", "hard", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path, resume=True)
    engine = r"engine \(checkpoint 'compiled', this run 'pycolab'\).*--train.engine compiled"
    with pytest.raises(ValueError, match=engine):
        pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps", "pycolab"), run_dir=tmp_path, resume=True)
    for change, field in ((replace(tiny("aps").agent, nstep_reward="sum"), "agent.nstep_reward"),
                          (replace(tiny("aps").agent, normalise_observations=False),
                           "agent.normalise_observations")):
        with pytest.raises(ValueError, match=f"is not of this run: config.{field}"):
            pretrain("aps", "easy", ROUND, seed=0, config=replace(tiny("aps"), agent=change),
                     run_dir=tmp_path, resume=True)
    (tmp_path / "checkpoint.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="corrupt checkpoint file"):
        pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path, resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        pretrain("aps", "easy", ROUND, seed=0, config=tiny("aps"), run_dir=tmp_path / "empty", resume=True)


@pytest.mark.parametrize("engine", ENGINES)
def test_coverage_matches_a_recount_of_the_replayed_observations(tmp_path, engine):
    pretrain("visr", "easy", 2 * ROUND, seed=2, config=tiny("visr", engine), run_dir=tmp_path)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    replay, logged = state["replay"], state["metrics"][-1]
    boards = torch.tensor(gridworld.compile_level("easy").observations)
    seen = set()
    for frames in (replay["obs"], replay["next_obs"]):
        if engine == "compiled":  # state indices
            frames = boards[frames]
        for obs in frames.flatten(0, 1):
            agent = torch.nonzero(obs[2])
            if len(agent):  # an agent standing on the target is drawn over it: terminal, not counted
                held = () if obs[3].any() else ("green",)
                if tuple(agent[0].tolist()) != (6, 7):
                    seen.add((tuple(agent[0].tolist()), held))
    assert logged["states_visited"] == len(seen)
    assert logged["states_reachable"] == len(gridworld.make("easy").unwrapped.reachable_states())


def test_epsilon_decays_over_half_the_phase_and_finetuning_starts_low():
    config = tiny("aps")
    learner, log = pretrain("aps", "easy", 4 * ROUND, seed=0, config=config)
    # a round's last step is env step 200 r - 2; epsilon(t) = end + (start - end) max(0, 1 - t / (0.5 * 800))
    expected = [0.05 + 0.95 * max(0.0, 1 - (200 * r - 2) / 400) for r in (1, 2, 3, 4)]
    np.testing.assert_allclose([row["epsilon"] for row in log.metrics], expected)
    tuned = finetune(learner, "easy", learner.default_task(1)[0], 2 * ROUND, seed=0, config=config)
    # fine-tuning starts low: finetune_epsilon_start 0.3, down to 0.05 over half of its 400 steps
    np.testing.assert_allclose([row["epsilon"] for row in tuned.metrics],
                               [0.05 + 0.25 * max(0.0, 1 - (200 * r - 2) / 200) for r in (1, 2)])
    scratch = finetune(new_learner("dqn", "easy", 0, tiny("dqn")), "easy", None, 2 * ROUND, seed=0,
                       config=tiny("dqn"))  # one protocol: the learner from scratch starts there too
    assert [row["epsilon"] for row in scratch.metrics] == [row["epsilon"] for row in tuned.metrics]


def test_a_run_reports_success_along_finetuning():
    budget = Budget(pretrain_steps=ROUND, finetune_steps=4 * ROUND, identify_steps=ROUND, eval_episodes=4)
    result = run_gridworld("aps", "easy", seed=1, budget=budget, config=tiny("aps"))
    assert [p["finetune_steps"] for p in result.adaptation] == [0, 200, 400, 600, 800]
    assert result.adaptation[0]["success_rate"] == result.zero_shot_success
    assert result.adaptation[-1]["success_rate"] == result.finetuned_success
    logged = [row for row in result.metrics["finetune"] if "eval_success" in row]
    assert [row["eval_return"] for row in logged] == [p["return"] for p in result.adaptation[1:]]


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
    (lambda: pretrain("aps", "easy", 0, seed=0), "pretrain steps must be an integer >= 1"),
    (lambda: pretrain("dqn", "easy", 10, seed=0), "no pretraining phase"),
    (lambda: pretrain("aps", "easy", 10, seed=0, config=TrainConfig(agent=AgentConfig(feature_dim=1))),
     "feature_dim must be an integer >= 2"),
    (lambda: TrainConfig(agent=AgentConfig(k=0)), "k must be an integer >= 1"),
    (lambda: TrainConfig(engine="numba"), "valid engines: compiled, pycolab"),
    (lambda: TrainConfig(epsilon_decay_fraction=0), "epsilon_decay_fraction must be in"),
    (lambda: TrainConfig(epsilon_end=1.5), "epsilon_end must be in"),
    (lambda: AgentConfig(nstep_reward="first"), "valid: last, sum"),
    (lambda: pretrain("aps", lambda: gridworld.make("easy"), 10, seed=0), "engine 'pycolab' only"),
    (lambda: pretrain("aps", lambda: gridworld.make("easy"), 10, seed=0,
                      config=TrainConfig(engine="pycolab")), "absorbing_target=True"),
    (lambda: finetune(new_learner("aps", "easy", 0), "easy", torch.ones(3), 10, seed=0),
         r"w must be a vector of 16 .*: shape \(16,\), got shape \(3,\)"),
    (lambda: identify_task(new_learner("apt", "easy", 0), "easy", 10, seed=0), "no task vector"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(("name", "value"), [("pretrain_steps", 0), ("finetune_steps", -5),
                                             ("identify_steps", 2.5), ("eval_episodes", True),
                                             ("eval_episodes", None), ("pretrain_steps", "64000")])
def test_a_budget_refuses_a_number_that_is_not_a_positive_integer_naming_it(name, value):
    with pytest.raises(ValueError) as error:
        Budget(**{name: value})
    assert str(error.value) == f"{name} must be an integer >= 1, got {value!r}"


def test_the_default_budget_is_the_documented_defaults_and_a_variant_is_checked_too():
    assert asdict(Budget()) == {"pretrain_steps": 64_000, "finetune_steps": 32_000, "identify_steps": 16_000,
                                "eval_episodes": 64}
    assert replace(Budget(), eval_episodes=8) == Budget(64_000, 32_000, 16_000, 8)
    with pytest.raises(ValueError, match="identify_steps must be an integer >= 1, got 0"):
        replace(Budget(), identify_steps=0)


def test_cli_run_gives_the_library_numbers_and_resumes_to_them(tmp_path):
    import json

    from aps_teach.cli.gridworld import gridworld_main

    argv = ["run", "--out", str(tmp_path), "--method", "visr", "--seed", "4", "--pretrain-steps", "200",
            "--finetune-steps", "200", "--identify-steps", "200", "--eval-episodes", "4",
            "--train.num-envs", "2", "--train.learning-starts", "100", "--train.no-progress",
            "--train.agent.hidden", "16", "--train.agent.batch-size", "8"]
    assert gridworld_main(argv) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    config = TrainConfig(agent=AgentConfig(method="visr", hidden=16, batch_size=8), num_envs=2,
                         learning_starts=100, progress=False)
    result = run_gridworld("visr", "easy", seed=4, budget=Budget(pretrain_steps=200, finetune_steps=200,
                                                                 identify_steps=200, eval_episodes=4),
                           config=config)
    for key in ("zero_shot_return", "finetuned_return", "states_visited", "task_w"):
        assert summary[key] == getattr(result, key)
    assert gridworld_main([*argv, "--resume"]) == 0
    resumed = json.loads((tmp_path / "summary.json").read_text())
    assert {k: v for k, v in resumed.items() if "seconds" not in k} == \
        {k: v for k, v in summary.items() if "seconds" not in k}


def test_cli_unknown_method_lists_the_valid_ones(tmp_path, capsys):
    from aps_teach.cli.gridworld import gridworld_main

    assert gridworld_main(["run", "--out", str(tmp_path), "--method", "diayn"]) == 2
    assert capsys.readouterr().err == ("aps-teach gridworld: error: --method 'diayn' is not valid; valid: "
                                       "visr, apt, aps, dqn\n")


@pytest.mark.parametrize("obs_shape, obs_dtype, rewards, features", [
    ((), torch.int64, False, False), ((8, 10, 10), torch.uint8, True, True),
    ((3,), torch.uint8, True, False)])
def test_the_memory_estimate_of_a_replay_cell_is_what_the_replay_allocates(obs_shape, obs_dtype, rewards,
                                                                            features):
    from aps_teach.grid.replay import NStepReplay

    replay = NStepReplay(7, 3, obs_shape, 5, store_rewards=rewards, store_features=features,
                         obs_dtype=obs_dtype)
    allocated = sum(t.numel() * t.element_size() for t in replay.data.values())
    assert NStepReplay.bytes_per_cell(obs_shape, 5, rewards, features, obs_dtype) * 7 * 3 == allocated


def _tensors(value):
    """Every tensor inside nested dicts, lists and tuples."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


@pytest.mark.parametrize("method", ["visr", "apt", "aps"])
def test_a_learner_moved_to_a_device_takes_every_tensor_it_trains_with(method):
    """`TrainConfig.device` moves each learner for its phase (`train.on_device`): nothing it computes with
    may stay behind. The meta device stands in for a GPU (no machine here has one): after `Learner.to`,
    every tensor of its state (weights, target, Adam's moments and steps, normalisers, observation mean)
    and its state table are there."""
    learner, _ = pretrain(method, "easy", 2 * ROUND, 0, tiny(method))
    assert learner.optimizer.state, "pretraining made Adam steps"
    learner.to("meta")
    state = learner.state_dict()
    state.pop("input_columns")  # which board entries are read: indices kept on the CPU, like the env's boards
    left = [t.device for t in _tensors(state) if t.device.type != "meta"]
    assert not left and learner.device.type == "meta"
    inputs = learner.board_inputs
    assert inputs.table.boards.device.type == inputs._zeros.device.type == "meta"


def test_a_device_this_machine_lacks_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA is not available.*use --device cpu"):
        pretrain("aps", "easy", ROUND, 0, replace(tiny(), device="cuda"), run_dir=tmp_path / "run")
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="unsupported device 'meta'; valid: cpu, cuda, cuda:N, mps"):
        TrainConfig(device="meta")
