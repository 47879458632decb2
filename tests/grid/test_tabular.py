"""Tabular successor features against independent computations: Bellman evaluation of the
environment's reward, a hand-worked corridor, TD, and the GPI theorem."""

import numpy as np
import pytest

import gridworld
from aps_teach.grid.tabular import (
    TabularGridworld,
    gpi,
    greedy_policy,
    optimal_q,
    policy_evaluation,
    successor_features,
    successor_features_td,
    uniform_policy,
)

GAMMA = 0.9


@pytest.mark.parametrize(("level", "w"), [("easy", [1, 10]), ("hard", [1, 1, 10])])
def test_psi_dot_w_is_the_q_of_the_environment_reward(level, w):
    mdp = TabularGridworld.from_level(level)
    policy = uniform_policy(mdp)
    psi = successor_features(mdp, policy, GAMMA)
    np.testing.assert_allclose(psi @ np.array(w, float), policy_evaluation(mdp, policy, GAMMA), atol=1e-8)


def test_corridor_by_hand():
    """'#SaT#' always moving right: psi(S, right) = [1 (key now), gamma (target next)]."""
    mdp = TabularGridworld.from_level(["#####", "#SaT#", "#####", "##A##"])  # A walled off
    right = np.zeros(mdp.next_state.shape)
    right[:, 3] = 1.0
    psi = successor_features(mdp, right, GAMMA)
    start = mdp.state_index((1, 1))
    np.testing.assert_allclose(psi[start, 3], [1.0, GAMMA])
    np.testing.assert_allclose(psi[start, 0], [GAMMA * 1.0, GAMMA**2])  # up: bump, then as above
    on_key = mdp.state_index((1, 2), ("green",))
    np.testing.assert_allclose(psi[on_key, 3], [0.0, 1.0])


def test_td_converges_to_the_exact_successor_features():
    mdp = TabularGridworld.from_level("easy")
    policy = uniform_policy(mdp)
    exact = successor_features(mdp, policy, GAMMA)
    learned = successor_features_td(mdp, policy, GAMMA, sweeps=150, seed=1)
    np.testing.assert_allclose(learned, exact, atol=1e-4)
    assert np.abs(successor_features_td(mdp, policy, GAMMA, sweeps=2, seed=1) - exact).max() > 1e-2


def test_optimal_policy_follows_a_shortest_solution():
    mdp = TabularGridworld.from_level("hard")
    policy = greedy_policy(optimal_q(mdp, mdp.rewards, GAMMA))
    for start in mdp.layout.start_cells:
        s, steps = mdp.state_index(start), 0
        while s >= 0:
            s = mdp.next_state[s, policy[s].argmax()]
            steps += 1
        assert steps == len(gridworld.shortest_path(mdp.layout, (start, ())))


def test_gpi_is_at_least_as_good_as_every_policy_it_combines():
    mdp = TabularGridworld.from_level("hard")
    tasks = np.eye(3)  # "green key", "purple key", "target" alone
    policies = [greedy_policy(optimal_q(mdp, mdp.events @ w, GAMMA)) for w in tasks]
    psis = np.stack([successor_features(mdp, p, GAMMA) for p in policies])
    w = np.array([1.0, 1.0, 10.0])
    q_gpi, chosen = gpi(psis, w)
    np.testing.assert_allclose(q_gpi, np.max([psi @ w for psi in psis], axis=0))
    assert set(np.unique(chosen)) <= {0, 1, 2}
    value_of = lambda p: policy_evaluation(mdp, p, GAMMA, mdp.events @ w)  # noqa: E731
    gpi_value = value_of(greedy_policy(q_gpi))
    for policy in policies:
        assert (gpi_value >= value_of(policy) - 1e-9).all()
