"""Pretraining probes: each number recomputed independently (pretraining again with the seed, numpy least
squares on the identification data, phi's spread over every reachable cell by hand), the late window of
the reward terms by hand, APS without its exploration term is VISR, and clear errors."""

import json
import math

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid.experiments import Budget
from aps_teach.grid.rollouts import state_observations
from aps_teach.grid.train import TrainConfig, evaluate, new_learner, pretrain, task_data
from aps_teach.infra.phases import PhaseLog
from aps_teach.infra.sweeps import RunSpec
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import sample_tasks
from aps_teach.studies import probes
from aps_teach.studies.probes import skill_steering, w_dependence

ROUND = 200  # 2 envs x 100-step episode limit
AGENT = {"hidden": 16, "batch_size": 8, "n_step": 3, "k": 3, "target_update_period": 20}
TRAIN = {"num_envs": 2, "learning_starts": 100, "progress": False}
BUDGET = Budget(pretrain_steps=3 * ROUND, identify_steps=2 * ROUND, eval_episodes=4)


def tiny(**agent) -> TrainConfig:
    return TrainConfig(agent=AgentConfig(**{**AGENT, **agent}), **TRAIN)


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def test_late_reward_terms_average_the_last_quarter_of_rounds_by_hand():
    log = PhaseLog(metrics=[{"round": 1}, {"round": 2, "reward_exploit": 1.0},
                            {"round": 3, "reward_exploit": 2.0, "reward_explore": 5.0},
                            {"round": 4, "reward_exploit": 4.0, "reward_explore": 7.0},
                            {"round": 5, "reward_exploit": 6.0, "reward_explore": 9.0}])
    assert probes.late_reward_terms(log) == {"reward_exploit": 5.0, "reward_explore": 8.0}  # rounds 4, 5
    whole = probes.late_reward_terms(log, fraction=1.0)
    assert whole["reward_exploit"] == pytest.approx(13 / 4) and whole["reward_explore"] == 7.0
    early = probes.late_reward_terms(PhaseLog(metrics=[{"round": 1}]))
    assert math.isnan(early["reward_exploit"]) and math.isnan(early["reward_explore"])
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        probes.late_reward_terms(log, fraction=0)


def test_probe_numbers_match_an_independent_recomputation():
    config = tiny()
    row = probes.probe_pretraining("aps", "hard", seed=3, budget=BUDGET, config=config)
    learner, log = pretrain("aps", "hard", BUDGET.pretrain_steps, 3, config)
    assert row["updates"] == learner.updates > 0
    assert row["probe_cpu_seconds"] > 0 and row["probe_seconds"] > 0
    assert row["state_coverage"] == log.coverage["state_coverage"]
    assert row["keys_picked"] == log.coverage["keys_picked"]
    layout = gridworld.resolve_level("hard")
    observations = []
    env = gridworld.PassagewayEnv("hard")
    for position, held in layout.reachable_states():
        if held == ():
            observations.append(env.reset(options={"position": position, "keys_held": ()})[0])
    phi = learner.features(torch.as_tensor(np.stack(observations))).numpy()
    assert row["phi_spread"] == pytest.approx(phi.std(0, ddof=1).mean(), rel=1e-5)
    features, rewards = task_data(learner, "hard", BUDGET.identify_steps, 3, config)
    x, r = features.double().numpy(), rewards.double().numpy()
    if r.any():
        c = np.linalg.lstsq(x, r, rcond=None)[0]
        r2 = 1 - ((r - x @ c) ** 2).sum() / ((r - r.mean()) ** 2).sum()
        assert row["task_r2"] == pytest.approx(r2, rel=1e-5, abs=1e-6)
        w = torch.as_tensor(c / np.linalg.norm(c), dtype=torch.float32)
        result = evaluate(learner, "hard", w, BUDGET.eval_episodes, 3, config)
        assert row["zero_shot_return"] == pytest.approx(result.mean_return)
    else:
        assert math.isnan(row["task_r2"])
    last = log.metrics[-1]  # 3 rounds: the last quarter is the last round
    assert row["reward_exploit"] == last["reward_exploit"] and row["reward_explore"] == last["reward_explore"]


def test_apt_has_no_phi_to_measure():
    row = probes.probe_pretraining("apt", "easy", seed=0, config=tiny(), budget=BUDGET)
    assert math.isnan(row["phi_spread"]) and math.isnan(row["task_r2"]) and math.isnan(row["reward_exploit"])
    assert row["reward_explore"] > 0 and 0 < row["state_coverage"] <= 1


def test_aps_without_its_exploration_term_is_visr_bit_for_bit():
    aps = probes.probe_pretraining("aps", "easy", seed=1, config=tiny(explore_weight=0.0), budget=BUDGET)
    visr = probes.probe_pretraining("visr", "easy", seed=1, config=tiny(), budget=BUDGET)
    differ = {key for key in visr if "seconds" not in key and not _same(visr[key], aps[key])}
    assert differ == {"reward_explore"}  # computed and logged, but weighted 0
    with_explore = probes.probe_pretraining("aps", "easy", seed=1, config=tiny(), budget=BUDGET)
    assert with_explore["reward_exploit"] != visr["reward_exploit"]


def test_sweep_rows_carry_the_spec_and_apply_its_overrides():
    spec = RunSpec("aps", "easy", 2, (("agent.k", 2), ("num_envs", 2), ("learning_starts", 100),
                                      ("agent.hidden", 16), ("agent.batch_size", 8)))
    (row,) = probes.run_probe_rows(spec, BUDGET)
    assert (row["method"], row["level"], row["seed"]) == ("aps", "easy", 2)
    assert json.loads(row["overrides"]) == [list(pair) for pair in spec.overrides]
    direct = probes.probe_pretraining("aps", "easy", seed=2, config=TrainConfig(
        agent=AgentConfig(k=2, hidden=16, batch_size=8), num_envs=2, learning_starts=100, progress=False),
        budget=BUDGET)
    assert all(_same(row[key], value) for key, value in direct.items() if "seconds" not in key)


@pytest.mark.parametrize(("level", "message"), [
    ("open10", "probes measure the key levels' task; valid levels: easy, hard"),
    ("medium", "unknown level 'medium'"),
])
def test_bad_levels_are_refused_before_training(level, message):
    with pytest.raises(ValueError, match=message):
        probes.probe_pretraining("aps", level, seed=0, config=tiny(), budget=BUDGET)


def test_w_dependence_is_zero_when_behaviour_ignores_w_and_not_otherwise():
    # the kNN reward alone (exploit weight 0) as its own successor feature, psi blind to w: Q(s, a, w) is
    # the same for every w, so every state's greedy action is too
    config = AgentConfig(method="aps", hidden=16, exploit_weight=0.0, knn_feature=True)
    learner = new_learner("aps", "easy", 0, TrainConfig(agent=config, progress=False))
    with torch.no_grad():
        learner.psi.head[0].weight[:, -config.feature_dim:] = 0  # the w inputs of psi's head
    blind = w_dependence(learner, "easy", num_tasks=8)
    assert blind["w_consistency"] == 1.0 and blind["q_std_over_w"] == pytest.approx(0.0, abs=1e-6)
    assert blind["action_gap"] > 0
    # APS's own cumulant carries the exploration along w: even psi blind to w gives Q = psi^T w varying in w
    plain = new_learner("aps", "easy", 0, TrainConfig(agent=AgentConfig(hidden=16), progress=False))
    with torch.no_grad():
        plain.psi.head[0].weight[:, -16:] = 0
    carried = w_dependence(plain, "easy", num_tasks=8)
    assert carried["w_consistency"] < 0.9 and carried["q_std_over_w"] > 0


def test_skill_steering_is_zero_for_a_policy_blind_to_w_and_follows_phi_otherwise():
    # the w-blind learner of the test above: every skill's path ends where the others' do, so phi(s_T)^T w
    # and phi(s_T)^T w' average to the same (each state's sum over the cycle of tasks telescopes)
    config = AgentConfig(method="aps", hidden=16, exploit_weight=0.0, knn_feature=True)
    blind = new_learner("aps", "easy", 0, TrainConfig(agent=config, progress=False))
    with torch.no_grad():
        blind.psi.head[0].weight[:, -config.feature_dim:] = 0
    steering = skill_steering(blind, "easy", num_tasks=8, steps=5)
    assert steering["own_skill"] == pytest.approx(steering["other_skill"], abs=1e-6)
    # no moves: s_T = s, whatever the policy; by hand over the level's states and the 8 tasks
    plain = new_learner("aps", "easy", 0, TrainConfig(agent=AgentConfig(hidden=16), progress=False))
    tasks = sample_tasks(8, 16, torch.Generator().manual_seed(0))
    _, states = state_observations("easy")
    phi = plain.features(states)
    still = skill_steering(plain, "easy", num_tasks=8, steps=0)
    assert still["own_skill"] == pytest.approx(float((phi @ tasks.T).mean()), abs=1e-6)
    assert still["other_skill"] == pytest.approx(float((phi @ tasks.roll(1, 0).T).mean()), abs=1e-6)
