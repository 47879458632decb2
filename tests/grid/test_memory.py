"""Will a run fit: each estimate of `aps_teach.grid.memory` against its bytes counted by hand, each check
refusing exactly past the free memory (made the same on every machine), naming what helps, before anything
is written."""

import pytest
import torch

import gridworld
from aps_teach.grid import memory as grid_memory
from aps_teach.grid.config import TrainConfig
from aps_teach.grid.memory import (
    act_bytes,
    check_acting_memory,
    check_identify_memory,
    check_memory,
    check_phase_memory,
    update_bytes,
)
from aps_teach.grid.train import pretrain
from aps_teach.infra import memory
from aps_teach.learner.config import AgentConfig

GB = 10**9


@pytest.fixture
def free(monkeypatch):
    """Set the free memory every check reads (`infra.memory.free_bytes`) to a number of bytes."""
    def set_free(n: int | None) -> None:
        monkeypatch.setattr(memory, "free_bytes", lambda device="cpu": n)
    return set_free


def test_an_update_is_the_particles_distances_and_the_activations_of_its_states():
    # aps, batch 32, n-step 3 ('last'): 32 particles -> 3 * 32^2 floats; 32 x 4 states x max(hidden 64,
    # 8 x d 16 = 128) x 8 floats of activations
    agent = AgentConfig(method="aps", batch_size=32, n_step=3, hidden=64, feature_dim=16)
    assert update_bytes(agent) == 4 * (3 * 32 * 32 + 8 * (32 * 4) * 128)
    # 'sum': every window state is a particle (32 x 3); visr has no kNN, so no particles
    assert update_bytes(AgentConfig(method="aps", batch_size=32, n_step=3, hidden=64, feature_dim=16,
                                    nstep_reward="sum")) == 4 * (3 * 96 ** 2 + 8 * 128 * 128)
    assert update_bytes(AgentConfig(method="visr", batch_size=32, n_step=3, hidden=256, feature_dim=16)) \
        == 4 * 8 * 128 * 256


def test_acting_counts_each_env_once_per_candidate_task():
    agent = AgentConfig(method="aps", feature_dim=4, hidden=10, gpi=True, gpi_samples=9)
    row = 2 * 4 + 3 * 10 + 2 * 5 * agent.sf_dim  # 5 actions
    assert act_bytes(agent, 3, 5) == 4 * 3 * (1 + 9) * row  # GPI: the task and 9 fresh ones per env
    assert act_bytes(AgentConfig(method="apt", feature_dim=4, hidden=10, gpi=True, gpi_samples=9), 3, 5) \
        == 4 * 3 * (2 * 4 + 3 * 10 + 2 * 5 * AgentConfig(method="apt", feature_dim=4).sf_dim)


def test_identification_is_refused_one_byte_past_the_free_memory(free):
    agent = AgentConfig(feature_dim=15)
    need = 2 * 4 * 1000 * 16  # phi(s') and r, gathered then joined
    free(need)
    check_identify_memory(1000, agent)
    free(need - 1)
    refusal = (r"^task identification's 1,000 rows of phi\(s'\) and r needs 0.0 GB, more than the 0.0 GB "
               r"free on cpu; lower --identify-steps$")
    with pytest.raises(ValueError, match=refusal):
        check_identify_memory(1000, agent)
    free(None)  # unknown free memory: nothing refused
    check_identify_memory(10**12, agent)


@pytest.mark.parametrize(("method", "advice"), [
    ("aps", "lower --train.agent.gpi-samples (paper: 10) or --train.num-envs"),
    ("apt", "lower --train.num-envs or --train.agent.hidden"),
])
def test_acting_names_gpi_where_gpi_is_what_grows(method, advice, free):
    config = TrainConfig(agent=AgentConfig(method=method), num_envs=64, progress=False)
    need = act_bytes(config.agent, 64, len(gridworld.ACTIONS))
    free(need)
    check_acting_memory(config, len(gridworld.ACTIONS))
    free(need - 1)
    with pytest.raises(ValueError, match=r"^acting in 64 envs") as refusal:
        check_acting_memory(config, len(gridworld.ACTIONS))
    assert str(refusal.value).endswith(f"; {advice}")


def test_a_phase_is_its_whole_rounds_of_replay_plus_one_update(free):
    config = TrainConfig(agent=AgentConfig(method="visr", feature_dim=8), num_envs=2, progress=False)
    # 250 steps -> 2 rounds of 2 envs x 100 steps = 400 cells; a compiled pretraining cell: s, s' (int64),
    # action, w (8 floats), two flags
    cell = 8 + 8 + 8 + 4 * 8 + 2
    need = 400 * cell + update_bytes(config.agent)
    free(need)
    check_phase_memory("pretrain", 250, config, 100, ((), torch.int64))
    free(need - 1)
    with pytest.raises(ValueError, match=r"^pretrain: the replay of 400 transitions"):
        check_phase_memory("pretrain", 250, config, 100, ((), torch.int64))


def test_a_phase_whose_update_is_the_larger_part_names_the_update(free):
    config = TrainConfig(agent=AgentConfig(method="aps", batch_size=512, hidden=1024), num_envs=1,
                         progress=False)
    free(1)
    with pytest.raises(ValueError, match="lower --train.agent.batch-size, --train.agent.n-step"):
        check_phase_memory("finetune", 100, config, 100, ((), torch.int64))


def test_a_run_is_checked_phase_by_phase_then_identification_then_acting(free, monkeypatch):
    seen = []
    for name, record in (("check_phase_memory", lambda phase, steps, *_: seen.append((phase, steps))),
                         ("check_identify_memory", lambda steps, _: seen.append(("identify", steps))),
                         ("check_acting_memory", lambda _, actions: seen.append(("act", actions)))):
        monkeypatch.setattr(grid_memory, name, record)
    check_memory("easy", TrainConfig(progress=False), pretrain_steps=0, finetune_steps=300, identify_steps=7)
    assert seen == [("finetune", 300), ("identify", 7), ("act", len(gridworld.ACTIONS))]


def test_a_phase_that_cannot_fit_in_memory_is_refused_before_it_writes(tmp_path, free):
    free(GB)
    # twice the free memory in compiled-engine pretraining cells: s and s' (int64 indices), action, w (16
    # floats), two flags
    steps = 2 * GB // (8 + 8 + 8 + 4 * 16 + 2)
    refusal = (r"^pretrain: the replay of [\d,]+ transitions \(2.0 GB\) and an update .* GB, more than the "
               r"1.0 GB free on cpu; lower --pretrain-steps")
    with pytest.raises(ValueError, match=refusal):
        pretrain("aps", "easy", steps, 0, TrainConfig(progress=False), run_dir=tmp_path / "run")
    assert list(tmp_path.iterdir()) == []
