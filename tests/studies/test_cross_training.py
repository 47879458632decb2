"""X -> Y: method Y trained on the data of method X, with Y's own update budget and without acting."""

import dataclasses

import pytest
import torch

from aps_teach.grid import envs as grid_envs
from aps_teach.grid import train
from aps_teach.grid.experiments import Budget
from aps_teach.grid.sweep import run_gridworld_rows
from aps_teach.grid.train import TrainConfig, new_learner, pretrain
from aps_teach.infra.sweeps import RunSpec
from aps_teach.learner.config import AgentConfig
from aps_teach.studies.cross_training import (
    parse_pair,
    pretrain_on_data_of,
    run_cross,
    run_cross_rows,
    task_labels,
    train_on_replay,
)

ROUND = 200  # 2 envs x 100-step episode limit
TINY = {"hidden": 16, "batch_size": 8, "n_step": 3, "k": 3, "target_update_period": 20, "feature_dim": 5}
TINY_TRAIN = {"num_envs": 2, "learning_starts": 100, "progress": False}
BUDGET = Budget(pretrain_steps=2 * ROUND, finetune_steps=ROUND, identify_steps=4 * ROUND, eval_episodes=2)


def tiny() -> TrainConfig:
    return TrainConfig(agent=AgentConfig(**TINY), **TINY_TRAIN)


def _weights(learner):
    return {f"{name}.{k}": v for name, m in learner._modules().items() for k, v in m.state_dict().items()}


def _same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("pair", [("apt", "aps"), ("aps", "apt"), ("visr", "aps")])
def test_y_makes_exactly_the_updates_of_its_own_pretraining(pair):
    data_method, learner_method = pair
    _, shadow, _ = pretrain_on_data_of(data_method, learner_method, "easy", 3 * ROUND, seed=2, config=tiny())
    own, _ = pretrain(learner_method, "easy", 3 * ROUND, seed=2, config=tiny())
    assert shadow.config.method == learner_method
    assert shadow.updates == own.updates == tiny().updates_per_step * (3 * ROUND // 2 - 100 // 2)
    untrained = new_learner(learner_method, "easy", seed=2, config=tiny())
    assert not _same(_weights(shadow), _weights(untrained))
    assert not _same(_weights(shadow), _weights(own))  # other data, other weights


def test_x_runs_exactly_as_it_would_alone():
    learner, _, log = pretrain_on_data_of("aps", "apt", "easy", 3 * ROUND, seed=4, config=tiny())
    alone, alone_log = pretrain("aps", "easy", 3 * ROUND, seed=4, config=tiny())
    assert _same(_weights(learner), _weights(alone))
    assert log.metrics == alone_log.metrics


def test_y_never_acts_and_steps_no_env(monkeypatch):
    steps, actors = [0], []
    step, act = grid_envs.CompiledBatch.step, train.Learner.act

    def counting_step(self, actions, last):
        steps[0] += len(actions)
        return step(self, actions, last)

    def recording_act(self, *args, **kwargs):
        actors.append(id(self))
        return act(self, *args, **kwargs)

    monkeypatch.setattr(grid_envs.CompiledBatch, "step", counting_step)
    monkeypatch.setattr(train.Learner, "act", recording_act)
    learner, shadow, _ = pretrain_on_data_of("apt", "visr", "easy", 2 * ROUND, seed=0, config=tiny())
    assert steps[0] == 2 * ROUND  # X's steps only
    assert set(actors) == {id(learner)}
    assert shadow.updates > 0


def test_training_on_a_replay_only_reads_it():
    kept = {}
    config = tiny()
    pretrain("visr", "easy", 2 * ROUND, seed=1, config=config,
             on_round=lambda end: kept.update(replay=end.replay))
    replay = kept["replay"]
    before = replay.state_dict()
    shadow = new_learner("aps", "easy", seed=1, config=config)
    train_on_replay(shadow, replay, 25, True, torch.Generator().manual_seed(0))
    after = replay.state_dict()
    assert shadow.updates == 25
    assert before.keys() == after.keys()
    assert all(torch.equal(torch.as_tensor(before[k]), torch.as_tensor(after[k])) for k in before)


def test_task_labels_follow_who_is_task_conditioned():
    stored = torch.randn(6, 5, generator=torch.Generator().manual_seed(0))
    stored = stored / stored.norm(dim=1, keepdim=True)
    aps = new_learner("aps", "easy", seed=0, config=tiny())
    apt = new_learner("apt", "easy", seed=0, config=tiny())
    assert torch.equal(task_labels(stored, True, aps, torch.Generator()), stored)
    assert torch.equal(task_labels(stored, True, apt, torch.Generator()), torch.eye(5)[[0] * 6])
    fresh = task_labels(stored, False, aps, torch.Generator().manual_seed(3))
    again = task_labels(stored, False, aps, torch.Generator().manual_seed(3))
    assert torch.equal(fresh, again)
    assert torch.allclose(fresh.norm(dim=1), torch.ones(6))
    assert not torch.allclose(fresh, stored) and fresh.std(0).min() > 0  # fresh and varied, not one w


def test_run_cross_is_deterministic_given_the_seed():
    def result(seed):
        fields = dataclasses.asdict(run_cross("apt", "aps", "easy", seed=seed, budget=BUDGET, config=tiny()))
        return {k: v for k, v in fields.items() if not k.endswith("seconds")}

    first = result(0)
    assert first["method"] == "apt->aps" and len(first["task_w"]) == 5
    assert result(0) == first
    assert result(1)["task_w"] != first["task_w"]


def test_sweep_rows_match_run_gridworld_rows_columns():
    overrides = tuple((f"agent.{k}", v) for k, v in TINY.items()) + tuple(
        (k, v) for k, v in TINY_TRAIN.items())
    cross = run_cross_rows(RunSpec("aps->apt", "easy", 0, overrides), BUDGET)
    own = run_gridworld_rows(RunSpec("apt", "easy", 0, overrides), BUDGET)
    assert [row.keys() for row in cross] == [row.keys() for row in own]
    assert [(row["method"], row["phase"]) for row in cross] == [("aps->apt", "zero_shot"),
                                                                ("aps->apt", "finetuned")]
    again = run_cross_rows(RunSpec("apt", "easy", 0, overrides), BUDGET)  # plain names delegate
    assert [_timeless(row) for row in again] == [_timeless(row) for row in own]


def _timeless(row):
    return {k: v for k, v in row.items() if k != "wall_seconds"}


@pytest.mark.parametrize("bad", ["dqn->aps", "aps->ppo", "aps", "apt->aps->visr"])
def test_bad_pairs_are_refused_with_the_valid_names(bad):
    with pytest.raises(ValueError, match="visr, apt, aps|X->Y"):
        parse_pair(bad)


def test_bad_methods_and_levels_are_refused_before_any_work():
    with pytest.raises(ValueError, match="data method X 'dqn'.*visr, apt, aps"):
        run_cross("dqn", "aps", "easy", seed=0)
    with pytest.raises(ValueError, match="learner method Y 'ppo'"):
        pretrain_on_data_of("aps", "ppo", "easy", ROUND, seed=0)
    with pytest.raises(ValueError, match="unknown level 'medium'"):
        run_cross("apt", "aps", "medium", seed=0)
    with pytest.raises(ValueError, match="unknown data method"):
        run_cross_rows(RunSpec("sac->aps", "easy", 0), BUDGET)
