"""Greedy rollouts, state observations and task-identification data, against hand-worked cases and
independent computations (the level's rules in `Layout.step`, the library's `identify_task`)."""

from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid.plots import plot_paths
from aps_teach.grid.rollouts import greedy_rollout, oracle_task, state_observations, transitions
from aps_teach.grid.train import TrainConfig, identify_task, new_learner, task_data
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import infer_task

ROOM = ("######",
        "#S...#",
        "#....#",
        "#...T#",
        "######")
AGENT_PLANE = gridworld.LAYER_NAMES.index("agent")


class StubLearner:
    """w[0] > 0: always right. Otherwise read the agent's row from the observation: down until row 3,
    then right. Records what `act` was called with."""

    config = SimpleNamespace(feature_dim=2)

    def __init__(self):
        self.calls = []

    def act(self, obs, w, epsilon, generator, gpi):
        self.calls.append((tuple(obs.shape), tuple(w.shape), epsilon, gpi))
        if w[0, 0] > 0:
            return torch.tensor([3])
        row = int(np.argwhere(obs[0, AGENT_PLANE].numpy())[0, 0])
        return torch.tensor([1 if row < 3 else 3])


def make_room():
    return gridworld.make(ROOM)


def test_rollout_into_a_wall_stays_there_until_the_time_limit():
    stub = StubLearner()
    out = greedy_rollout(stub, make_room, torch.tensor([1.0, 0.0]), seed=0)
    assert out.positions == [(1, 1), (1, 2), (1, 3), (1, 4)] + [(1, 4)] * 97
    assert out.keys_held == [()] * 101
    assert (out.total_reward, out.success) == (0.0, False)
    assert set(stub.calls) == {((1, len(gridworld.LAYER_NAMES), 5, 6), (1, 2), 0.0, False)}


def test_rollout_follows_the_observation_to_the_target_and_stops():
    stub = StubLearner()
    out = greedy_rollout(stub, make_room, torch.tensor([-1.0, 0.0]), seed=3, gpi=True)
    assert out.positions == [(1, 1), (2, 1), (3, 1), (3, 2), (3, 3), (3, 4)]
    assert (out.total_reward, out.success) == (10.0, True)
    assert len(stub.calls) == 5 and all(call[3] for call in stub.calls)


def test_rollout_rejects_a_w_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"w must have shape \(2,\), got \(1, 2\)"):
        greedy_rollout(StubLearner(), make_room, torch.ones(1, 2), seed=0)
    with pytest.raises(ValueError, match="needs a time limit"):
        greedy_rollout(StubLearner(), lambda: gridworld.PassagewayEnv(ROOM), torch.ones(2), seed=0)


def test_state_observations_show_the_agent_and_the_keys_of_each_state():
    states, obs = state_observations("hard")
    assert states == gridworld.resolve_level("hard").reachable_states()
    assert obs.shape == (len(states), len(gridworld.LAYER_NAMES), 10, 10)
    green = gridworld.LAYER_NAMES.index("green_key")
    for (position, held), frame in zip(states, obs, strict=True):
        assert [tuple(cell) for cell in np.argwhere(frame[AGENT_PLANE].numpy())] == [position]
        assert bool(frame[green].any()) == ("green" not in held)


def test_learner_rollout_matches_its_greedy_actions_replayed_with_the_level_rules():
    learner = new_learner("visr", "easy", seed=0, config=TrainConfig(agent=AgentConfig(feature_dim=5)))
    w = torch.tensor([0.0, 0.0, 0.6, 0.0, 0.8])
    states, obs = state_observations("easy")
    with torch.no_grad():
        greedy = learner.q_values(obs, w.expand(len(states), -1)).argmax(1)
    action = dict(zip(states, greedy.tolist(), strict=True))
    layout = gridworld.resolve_level("easy")
    state = (gridworld.make("easy").reset(seed=5)[1]["position"], ())
    expected = [state[0]]
    for _ in range(gridworld.MAX_EPISODE_STEPS):
        state, _, terminated = layout.step(state, action[state])
        expected.append(state[0])
        if terminated:
            break
    out = greedy_rollout(learner, "easy", w, seed=5)
    assert out.positions == expected
    assert out.success == terminated


def test_task_data_is_what_identify_task_regresses():
    learner = new_learner("visr", "easy", seed=0)
    config = TrainConfig(agent=learner.config, epsilon_end=1.0, num_envs=4, progress=False)
    features, rewards = task_data(learner, "easy", 400, seed=2, config=config)
    assert features.shape == (400, learner.config.feature_dim) and rewards.shape == (400,)
    assert torch.allclose(features.norm(dim=1), torch.ones(400))
    assert set(rewards.tolist()) <= {0.0, 1.0, 10.0, 11.0} and rewards.sum() > 0
    identified = identify_task(learner, "easy", 400, seed=2, config=config)
    assert torch.equal(infer_task(features, rewards), identified)


def test_plot_paths_draws_each_path_through_its_shifted_cell_centres():
    paths = [[(1, 1), (1, 2)], [(2, 1), (3, 1), (3, 2)], [(1, 1)]]
    fig, ax = plt.subplots()
    lines = plot_paths(ax, gridworld.resolve_level("easy"), paths, ["a", "b", "c"], spread=0.4)
    for line, path, shift in zip(lines, paths, [-0.2, 0.0, 0.2], strict=True):
        rows, cols = np.array(path).T
        np.testing.assert_allclose(line.get_xdata(), cols + shift)
        np.testing.assert_allclose(line.get_ydata(), rows + shift)
    assert [line.get_label() for line in lines] == ["a", "b", "c"]
    assert len({line.get_color() for line in lines}) == 3
    plt.close(fig)


class TargetIndicator:
    """phi(s') = (1 if the agent plane is empty, i.e. s' is the target, drawn over the agent; else 0, 1)."""

    config = SimpleNamespace(task_conditioned=True, method="stub")

    def features(self, obs):
        at_target = (obs[:, AGENT_PLANE].flatten(1).sum(1) == 0).float()
        return torch.stack([at_target, torch.ones_like(at_target)], 1)


def test_oracle_task_recovers_a_reward_linear_in_the_features():
    # in ROOM the reward is 10 * [s' is the target] exactly: least squares over every transition gives
    # w = (10, 0), unit norm (1, 0)
    assert torch.allclose(oracle_task(TargetIndicator(), ROOM), torch.tensor([1.0, 0.0]), atol=1e-6)


def test_transitions_are_every_move_by_the_level_rules():
    moves, frames, rewards = transitions(ROOM)
    layout = gridworld.resolve_level(ROOM)
    assert [state for state, _ in moves[::4]] == layout.reachable_states()
    assert [action for _, action in moves] == [0, 1, 2, 3] * len(layout.reachable_states())
    assert frames.shape == (len(moves), len(gridworld.LAYER_NAMES), 5, 6) and frames.dtype == torch.uint8
    for (state, action), frame, reward in zip(moves, frames, rewards.tolist(), strict=True):
        (position, _), _, terminated = layout.step(state, action)
        agent = [tuple(cell) for cell in np.argwhere(frame[AGENT_PLANE].numpy())]
        assert agent == ([] if terminated else [position])  # the target is drawn over the agent
        assert reward == (10.0 if terminated else 0.0)
    # into T at (3, 4): right from (3, 3), down from (2, 4)
    assert sorted(move for move, r in zip(moves, rewards.tolist(), strict=True) if r) == [
        (((2, 4), ()), 1), (((3, 3), ()), 3)]


def test_oracle_task_needs_task_features():
    with pytest.raises(ValueError, match="no features phi"):
        oracle_task(new_learner("apt", "easy", seed=0), "easy")
