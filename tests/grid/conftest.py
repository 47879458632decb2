"""What the gridworld wing's tests of the psi-side options and the fb arm share: a tiny training
configuration and a counter of the env steps taken."""

import pytest

from aps_teach.grid import envs as grid_envs
from aps_teach.grid.train import TrainConfig
from aps_teach.learner.config import AgentConfig


def tiny_config(method: str, **agent) -> TrainConfig:
    """`method` with small networks and minibatches on 2 envs, learning from step 100, a checkpoint every
    round, no progress bar; `agent` overrides more `AgentConfig` fields."""
    agent = AgentConfig(method=method, hidden=16, batch_size=8, n_step=3, k=3, target_update_period=20,
                        **agent)
    return TrainConfig(agent=agent, num_envs=2, learning_starts=100, checkpoint_every=1, progress=False)


@pytest.fixture
def env_steps(monkeypatch):
    """Every env step any env batch takes from here on, counted (one per env of the batch)."""
    taken = []
    for batch in (grid_envs.CompiledBatch, grid_envs.PycolabBatch):
        def counted(self, actions, *args, original=batch.step, **kwargs):
            taken.append(len(actions))
            return original(self, actions, *args, **kwargs)
        monkeypatch.setattr(batch, "step", counted)
    return taken
