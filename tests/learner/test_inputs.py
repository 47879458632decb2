"""The networks' inputs: the running observation mean, and state indices read through a table."""

import numpy as np
import pytest
import torch
from torch import nn

from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.inputs import InputColumns, ObservationNormaliser, StateTable, first_layer

OBS = (3, 4, 4)


def _table(states=12, seed=0):
    """Boards with constant cells (rows 0 and 3 of every plane) and varying ones."""
    rng = np.random.default_rng(seed)
    boards = np.zeros((states, *OBS), dtype=np.uint8)
    boards[:, :, 0] = 1
    boards[:, :, 1:3] = rng.integers(0, 2, (states, 3, 2, 4))
    return torch.as_tensor(boards)


def test_the_mean_is_the_mean_of_every_board_seen():
    boards = _table(30).flatten(1)
    normaliser = ObservationNormaliser(boards.shape[1])
    assert torch.equal(normaliser.mean, torch.zeros(boards.shape[1]))
    normaliser.update(boards[:7])
    normaliser.update(boards[7:])
    np.testing.assert_allclose(normaliser.mean.numpy(), boards.double().mean(0).numpy(), rtol=1e-6)
    normaliser.frozen = True
    normaliser.update(torch.ones_like(boards))
    np.testing.assert_allclose(normaliser.mean.numpy(), boards.double().mean(0).numpy(), rtol=1e-6)


@pytest.mark.parametrize("count", [5, 40])  # fewer indices than states (rows gathered) and more (table first)
def test_first_layer_on_indices_equals_the_layer_on_the_boards(count):
    table = _table()
    columns = InputColumns.of(table).columns
    assert len(columns) == 3 * 2 * 4  # only the middle rows differ between states
    linear = nn.Linear(len(columns), 8)
    mean = torch.rand(len(columns))
    index = torch.randint(len(table), (count,), generator=torch.Generator().manual_seed(1))
    by_index = first_layer(linear, StateTable(table, columns).inputs(index, mean))
    by_board = linear(table[index].flatten(1).float()[:, columns] - mean)
    torch.testing.assert_close(by_index, by_board, rtol=1e-5, atol=1e-5)


def test_reading_only_the_varying_entries_changes_nothing_once_centred():
    """The full network on centred boards equals the narrowed one: the constant entries are 0 once centred."""
    table = _table()
    config = AgentConfig(method="aps", feature_dim=4, hidden=16)
    full = Learner(config, OBS, 4, seed=3)
    narrow = Learner(config, OBS, 4, seed=3, input_columns=InputColumns.of(table))
    for learner in (full, narrow):
        learner.observe(table)
    torch.testing.assert_close(narrow.features(table), full.features(table), rtol=1e-5, atol=1e-6)
    w = torch.nn.functional.normalize(torch.ones(len(table), 4), dim=1)
    torch.testing.assert_close(narrow.q_values(table, w), full.q_values(table, w), rtol=1e-5, atol=1e-6)
    other = _table()
    other[:, 0, 0, 0] = 0  # a board of another level: differs where this level's boards never do
    with pytest.raises(ValueError, match="not of the level the learner was trained on"):
        narrow.set_observation_table(other)


@pytest.mark.parametrize("method", ["visr", "apt", "aps", "dqn"])
def test_a_learner_reads_indices_and_boards_alike(method):
    table = _table()
    learner = Learner(AgentConfig(method=method, feature_dim=4, hidden=16), OBS, 4, seed=0,
                      input_columns=InputColumns.of(table))
    learner.set_observation_table(table)
    learner.observe(table[:5])
    index = torch.tensor([0, 3, 3, 7, 11])
    w = torch.nn.functional.normalize(torch.randn(5, 4, generator=torch.Generator().manual_seed(0)), dim=1)
    torch.testing.assert_close(learner.q_values(index, w), learner.q_values(table[index], w))
    if learner.phi is not None:
        torch.testing.assert_close(learner.features(index), learner.features(table[index]))
    if learner.config.uses_knn:
        torch.testing.assert_close(learner.knn_features(index), learner.knn_features(table[index]))
    acts = [learner.act(obs, w, 0.0, torch.Generator().manual_seed(2), gpi=True)
            for obs in (index, table[index])]
    assert torch.equal(*acts)
    with pytest.raises(ValueError, match="state indices need an observation table"):
        Learner(AgentConfig(method=method), OBS, 4, seed=0).q_values(index, w)


def test_the_mean_freezes_when_a_trained_learner_starts_finetuning_and_not_for_dqn():
    table = _table()
    trained = Learner(AgentConfig(method="aps", feature_dim=4, hidden=16), OBS, 4, seed=0)
    trained.observe(table[:3])
    trained.updates = 1  # as after pretraining
    trained.start_finetune()
    before = trained.board_inputs.observation_mean.mean.clone()
    trained.observe(table)
    assert torch.equal(trained.board_inputs.observation_mean.mean, before)
    dqn = Learner(AgentConfig(method="dqn", feature_dim=4, hidden=16), OBS, 4, seed=0)
    dqn.start_finetune()
    dqn.observe(table)
    np.testing.assert_allclose(dqn.board_inputs.observation_mean.mean.numpy(),
                               table.flatten(1).double().mean(0).numpy(), rtol=1e-6)


def test_without_normalisation_the_networks_read_the_raw_boards():
    learner = Learner(AgentConfig(method="visr", feature_dim=4, hidden=16, normalise_observations=False),
                      OBS, 4, seed=0)
    learner.observe(_table())
    torch.testing.assert_close(learner.inputs(_table()), _table().flatten(1).float())


@pytest.mark.parametrize("method", ["visr", "aps"])
@pytest.mark.parametrize("level", ["easy", "hard", "open10", "fourroom"])
def test_phi_keeps_its_units_alive_and_spread_after_a_short_pretraining(level, method):
    """Raw one-hot boards kill most of phi's hidden units within a few thousand steps (the contrast below);
    centred inputs on the entries that vary keep them."""
    import gridworld
    from aps_teach.grid.envs import LevelSpec
    from aps_teach.grid.train import TrainConfig, pretrain
    from aps_teach.grid.transfer import dead_units, feature_spread

    layout = gridworld.resolve_level(level)
    source = level if level in gridworld.LEVELS else LevelSpec(level, np.zeros(layout.shape))
    learner, _ = pretrain(method, source, 6_400, seed=0, config=TrainConfig(progress=False))
    assert dead_units(learner, level) <= 8  # of 128
    assert feature_spread(learner, layout) > 0.1
    if (level, method) == ("open10", "visr"):
        raw = TrainConfig(agent=AgentConfig(method="visr", normalise_observations=False), progress=False)
        collapsed, _ = pretrain("visr", source, 6_400, seed=0, config=raw)
        assert dead_units(collapsed, level) >= 64
