"""The arrays of aps_teach.grid.cell_maps against brute force: one observation per cell built with
env.reset(options=...), rewards recomputed cell by cell, hand-worked distances, and bad input."""

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid.cell_maps import cell_states, reward_maps, value_map
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.rewards import particle_entropy_reward

HARD = gridworld.resolve_level("hard")
OBS_SHAPE = (len(gridworld.LAYER_NAMES), *HARD.shape)


@pytest.fixture(autouse=True)
def _no_grad():
    with torch.no_grad():
        yield


def _learner(**config) -> Learner:
    return Learner(AgentConfig(**{"feature_dim": 5, **config}), OBS_SHAPE, 4, seed=3)


ENV = gridworld.PassagewayEnv("hard")


def _observe(position, keys_held=()):
    return torch.as_tensor(ENV.reset(options={"position": position, "keys_held": keys_held})[0])


def _particles(n=40, seed=0):
    """Observations of n random reachable states of the hard level."""
    states = HARD.reachable_states()
    rng = np.random.default_rng(seed)
    return torch.stack([_observe(*states[i]) for i in rng.integers(len(states), size=n)])


def _per_cell(layout, keys_held, value_of):
    """Brute force: value_of(observation) on every cell the agent can stand on holding keys_held, else NaN.

    Network outputs for one row and for a batch differ in float32 rounding (~1e-7): compare with atol."""
    states = set(layout.reachable_states())
    grid = np.full(layout.shape, np.nan)
    for row in range(layout.shape[0]):
        for col in range(layout.shape[1]):
            if ((row, col), keys_held) in states:
                grid[row, col] = float(value_of(_observe((row, col), keys_held)))
    return grid



def test_cell_states_cover_the_reachable_cells_with_their_observations():
    cells = cell_states(HARD, ["green"])
    expected = {position for position, held in HARD.reachable_states() if held == ("green",)}
    assert set(cells.positions) == expected and len(cells.positions) == len(expected)
    agent = gridworld.LAYER_NAMES.index("agent")
    for position, obs in zip(cells.positions, cells.observations, strict=True):
        assert obs[agent].nonzero().tolist() == [list(position)]
        assert obs.sum(0).eq(1).all()  # one-hot planes
    assert cells.observations[:, gridworld.LAYER_NAMES.index("green_key")].sum() == 0  # held: gone
    assert cells.observations[:, gridworld.LAYER_NAMES.index("purple_key")].sum() == len(expected)
    grid = cells.grid(np.arange(len(expected)))
    assert np.isnan(grid[HARD.walls]).all() and np.isnan(grid[HARD.target]) and np.isnan(grid[6, 7])
    assert grid[cells.positions[5]] == 5


def test_exploration_map_is_the_knn_reward_at_each_cell():
    learner = _learner(method="aps", knn_normalise=False)
    particles = _particles()
    h_particles = learner.features(particles).double()
    cells = cell_states(HARD, ("green",))
    maps = reward_maps(learner, cells, particles, torch.tensor([0.0, 1, 0, 0, 0]), k=3)
    expected = _per_cell(HARD, ("green",), lambda obs: particle_entropy_reward(
        learner.features(obs[None]).double(), h_particles, 3))
    np.testing.assert_allclose(maps["explore"], expected, rtol=1e-5, atol=1e-6)
    assert np.isnan(maps["explore"][HARD.walls]).all()
    assert np.isfinite(maps["explore"]).sum() == len(cells.positions)


def test_normaliser_mean_is_a_fixed_scale_and_is_not_updated():
    learner = _learner(method="aps", knn_exponent=2.0)
    learner.normaliser.load_state_dict({"mean": torch.tensor(0.3, dtype=torch.float64), "count": 50})
    particles = _particles(seed=1)
    h_particles = learner.features(particles).double().numpy()
    maps = reward_maps(learner, cell_states(HARD), particles, torch.ones(5) / 5**0.5, k=4)

    def brute(obs):
        h = learner.features(obs[None]).double().numpy()
        distances = np.sort(np.linalg.norm(h_particles - h, axis=1))
        return np.log1p(np.mean(distances[:4] ** 2 / 0.3))

    np.testing.assert_allclose(maps["explore"], _per_cell(HARD, (), brute), rtol=1e-5, atol=1e-6)
    assert learner.normaliser.count == 50 and float(learner.normaliser.mean) == pytest.approx(0.3)


def test_exploit_and_total_maps():
    learner = _learner(method="aps", explore_weight=0.5, exploit_weight=2.0)
    w = torch.tensor([0.6, 0.0, -0.8, 0.0, 0.0])
    maps = reward_maps(learner, cell_states(HARD, ("green", "purple")), _particles(), w)
    expected = _per_cell(HARD, ("green", "purple"), lambda obs: (learner.features(obs[None])[0] @ w).item())
    np.testing.assert_allclose(maps["exploit"], expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(maps["total"], 0.5 * maps["explore"] + 2.0 * maps["exploit"], rtol=1e-6)
    assert sorted(maps) == ["exploit", "explore", "total"]


def test_visr_has_no_exploration_term_and_apt_none_for_exploitation():
    visr = _learner(method="visr", exploit_weight=3.0)
    w = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0])
    maps = reward_maps(visr, cell_states(HARD), None, w)
    assert sorted(maps) == ["exploit", "total"]
    np.testing.assert_allclose(maps["total"], 3.0 * maps["exploit"])
    apt = _learner(method="apt", knn_normalise=False)
    particles = _particles()
    maps = reward_maps(apt, cell_states(HARD), particles, k=2)
    assert sorted(maps) == ["explore", "total"]
    h = apt.knn_features(particles).double()
    reward = lambda obs: particle_entropy_reward(apt.knn_features(obs[None]).double(), h, 2)  # noqa: E731
    expected = _per_cell(HARD, (), reward)
    np.testing.assert_allclose(maps["explore"], expected, rtol=1e-5, atol=1e-6)


def test_observation_space_distances_by_hand():
    """Two one-hot observations that differ only in the agent's cell are sqrt(4) = 2 apart (agent and
    floor planes each differ on two cells); the same state is 0 apart."""
    learner = _learner(method="apt", representation="observation", knn_normalise=False)
    particle = _observe((5, 1))[None]
    maps = reward_maps(learner, cell_states(HARD), particle, k=1)
    assert maps["explore"][5, 1] == 0.0
    assert maps["explore"][7, 3] == pytest.approx(np.log(3.0))


def test_value_map_is_the_argmax_of_psi_transpose_w():
    learner = _learner(method="visr")
    w = torch.tensor([0.5, 0.5, 0.5, -0.5, 0.0])
    got = value_map(learner, cell_states(HARD, ("green",)), w)
    q_of = lambda obs: learner.q_values(obs[None], w[None])[0].tolist()  # noqa: E731
    np.testing.assert_allclose(got["value"], _per_cell(HARD, ("green",), lambda o: max(q_of(o))), rtol=1e-5)
    np.testing.assert_array_equal(got["action"], _per_cell(HARD, ("green",), lambda o: np.argmax(q_of(o))))
    apt = _learner(method="apt")  # w=None: apt's fixed task e_1
    np.testing.assert_allclose(value_map(apt, cell_states(HARD))["value"],
                               value_map(apt, cell_states(HARD), torch.eye(5)[0])["value"])


W5 = torch.ones(5)


@pytest.mark.parametrize(("call", "message"), [
    (lambda learner, cells, p: reward_maps(learner, cells, p, W5, k=0), "k must be >= 1"),
    (lambda learner, cells, p: reward_maps(learner, cells, p, W5[:4]), r"w must have shape \(5,\)"),
    (lambda learner, cells, p: reward_maps(learner, cells, p), "needs a task vector w"),
    (lambda learner, cells, p: reward_maps(learner, cells, p[:0], W5), "at least one particle"),
    (lambda learner, cells, p: reward_maps(learner, cells, p[:, :3], W5), "particles must be"),
    (lambda learner, cells, p: reward_maps(learner, cells, None, W5), "particles must be"),
    (lambda learner, cells, p: reward_maps(_learner(method="dqn"), cells, p, W5), "has no intrinsic reward"),
    (lambda learner, cells, p: value_map(learner, cells, torch.ones(6)), r"w must have shape \(5,\)"),
    (lambda learner, cells, p: cell_states(HARD, ("red",)), r"lacks; its keys: \('green', 'purple'\)"),
    (lambda learner, cells, p: cell_states(HARD, ("purple",)), "no reachable state holds exactly"),
    (lambda learner, cells, p: cells.grid([1.0, 2.0]), "one value per cell"),
])
def test_bad_input_is_refused_clearly(call, message):
    with pytest.raises(ValueError, match=message):
        call(_learner(method="aps"), cell_states(HARD), _particles(n=5))
