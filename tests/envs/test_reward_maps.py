"""Reward-map tasks: validation, the env's payments, and the exact references against brute force
(every action sequence through pycolab) and Monte Carlo."""

import itertools

import numpy as np
import pytest

import gridworld
from gridworld.reward_maps import as_reward_map

TINY = ["#####",
        "#S..#",
        "#.#.#",
        "#S.b#",
        "##B##",
        "#...#",
        "#####"]


def tiny_map():
    reward = np.zeros((7, 5))
    reward[1, 3], reward[3, 2], reward[5, 1] = 1.0, -0.5, 2.0
    return reward


def brute_force_returns(art, reward_map, horizon):
    """Mean over start cells of the best and of the average return over all 4^T action sequences,
    each sequence played through the pycolab environment."""
    env = gridworld.make(art, reward_map=reward_map, max_episode_steps=horizon)
    best, average = [], []
    for start in env.unwrapped.layout.start_cells:
        returns = []
        for actions in itertools.product(range(4), repeat=horizon):
            env.reset(options={"position": start})
            returns.append(sum(env.step(a)[1] for a in actions))
        best.append(max(returns))
        average.append(np.mean(returns))
    return np.mean(best), np.mean(average)


@pytest.mark.parametrize("horizon", [1, 3, 5])
def test_dynamic_programmes_match_brute_force_over_action_sequences(horizon):
    layout = gridworld.resolve_level(TINY)
    best, average = brute_force_returns(TINY, tiny_map(), horizon)
    assert gridworld.optimal_return(layout, tiny_map(), horizon) == pytest.approx(best)
    assert gridworld.random_return(layout, tiny_map(), horizon) == pytest.approx(average)


def test_random_return_matches_monte_carlo_on_the_four_room_maze():
    layout = gridworld.resolve_level("fourroom")
    reward_map = gridworld.random_box_reward_map(layout, num_boxes=2, box_size=3, seed=4)
    horizon, episodes = 30, 3000
    env = gridworld.make("fourroom", reward_map=reward_map, max_episode_steps=horizon)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    returns = []
    for _ in range(episodes):
        total, truncated = 0.0, False
        while not truncated:
            _, reward, _, truncated, _ = env.step(int(rng.integers(4)))
            total += reward
        returns.append(total)
        env.reset()
    expected = gridworld.random_return(layout, reward_map, horizon)
    assert abs(np.mean(returns) - expected) < 4 * np.std(returns) / np.sqrt(episodes)
    assert gridworld.optimal_return(layout, reward_map, horizon) > expected


def test_each_step_pays_the_cell_the_agent_is_on_and_keys_pay_nothing():
    env = gridworld.make(TINY, reward_map=tiny_map())
    env.reset(options={"position": (1, 2)})
    assert [env.step(3)[1] for _ in range(3)] == [1.0, 1.0, 1.0]  # onto (1, 3), then bump the wall
    env.reset(options={"position": (3, 2)})
    _, reward, terminated, _, info = env.step(3)  # onto the purple key
    assert reward == 0.0 and info["keys_held"] == ("purple",) and not terminated
    assert env.step(2)[1] == -0.5  # back onto (3, 2)
    assert env.step(1)[4]["position"] == (4, 2)  # its passageway opened


def test_random_boxes_are_reproducible_and_avoid_walls():
    layout = gridworld.resolve_level("fourroom")
    first = gridworld.random_box_reward_map(layout, num_boxes=3, box_size=2, seed=7)
    np.testing.assert_array_equal(first, gridworld.random_box_reward_map(layout, 3, 2, seed=7))
    assert not np.array_equal(first, gridworld.random_box_reward_map(layout, 3, 2, seed=8))
    walls = np.array([[char == "#" for char in row] for row in layout.art])
    assert first[walls].sum() == 0 and 1 <= (first > 0).sum() <= 3 * 4
    assert set(np.unique(first)) <= {0.0, 1.0}


def test_normalised_score():
    assert gridworld.normalised_score(3.0, optimal=5.0, random=1.0) == 0.5
    with pytest.raises(ValueError, match="does not beat random"):
        gridworld.normalised_score(1.0, optimal=1.0, random=1.0)


def test_built_in_mazes():
    assert gridworld.resolve_level("open10").shape == (12, 12)
    assert len(gridworld.resolve_level("open10").reachable_states()) == 100
    four = gridworld.resolve_level("fourroom")
    free_cells = sum(char != "#" for row in four.art for char in row)
    assert four.shape == (12, 12) and len(four.reachable_states()) == len(four.start_cells) == free_cells


@pytest.mark.parametrize(
    ("reward_map", "message"),
    [
        (np.zeros((3, 3)), r"shape \(3, 3\); this maze is 7x5"),
        ({(0, 0): 1.0}, r"wall cells \[\(0, 0\)\]"),
        ({(9, 1): 1.0}, "off the 7x5 grid"),
        (np.full((7, 5), np.nan), "finite"),
    ],
)
def test_bad_reward_maps_are_refused(reward_map, message):
    with pytest.raises(ValueError, match=message):
        as_reward_map(gridworld.resolve_level(TINY), reward_map)


def test_reward_maps_and_targets_do_not_mix():
    with pytest.raises(ValueError, match="replaces the key/target protocol"):
        gridworld.make("easy", reward_map={(1, 1): 1.0})
    with pytest.raises(ValueError, match="no target 'T': give it a reward_map"):
        gridworld.make("open10")
    with pytest.raises(ValueError, match="unknown level 'maze'; valid levels: easy, hard, deep, detour, "):
        gridworld.make("maze")


@pytest.mark.parametrize("horizon", [-5, 0, 2.5, True])
def test_a_horizon_that_is_not_a_positive_number_of_steps_is_refused(horizon):
    """A negative horizon used to give 0.0 for both references."""
    layout = gridworld.resolve_level("open10")
    for reference in (gridworld.optimal_return, gridworld.random_return):
        expected = rf"horizon must be an integer from 1 to 100,000 \(steps\), got {horizon!r}"
        with pytest.raises(ValueError, match=expected):
            reference(layout, np.ones(layout.shape), horizon)
