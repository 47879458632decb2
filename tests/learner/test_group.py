"""Seed groups (`aps_teach.learner.group`): S seeds trained in one process with stacked weights give each
seed exactly what its own run gives, on this CPU build (the module docstring says where that may not hold)."""

from dataclasses import asdict, replace

import pytest
import torch

from aps_teach.course import capstone
from aps_teach.grid.experiments import Budget, prepare_run, run_gridworld, run_pipeline_seeds
from aps_teach.grid.sweep import run_figure4_sweep, run_gridworld_group_rows
from aps_teach.grid.train import TrainConfig, finetune, finetune_seeds, load_learner, pretrain, pretrain_seeds
from aps_teach.infra.sweeps import RunSpec, read_rows, seed_groups
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.group import LearnerGroup
from aps_teach.learner.rewards import (
    Objective,
    RunningMean,
    SeedNormalisers,
    particle_entropy_reward,
    vmf_loss,
)
from aps_teach.studies.task_families import FamilyBudget, run_family_group_rows, run_family_rows

SMALL = AgentConfig(hidden=32, feature_dim=4, batch_size=32, n_step=3, k=4, gpi_samples=2)
CONFIG = TrainConfig(agent=SMALL, num_envs=8, learning_starts=400, progress=False)
STEPS = 1_600  # two rounds of 8 envs x 100 steps: 300 updates


def assert_same(a, b, where="state"):
    """Every tensor in two nested states equal bit for bit, everything else equal."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b), where
    else:
        assert a == b, where


OPTIONS = {  # every code path of the update that a seed group takes in its own way
    "visr": ("visr", {}), "apt": ("apt", {}), "aps": ("aps", {}),
    "aps-sum": ("aps", {"nstep_reward": "sum"}), "visr-sum": ("visr", {"nstep_reward": "sum"}),
    "aps-scalar": ("aps", {"sf_loss": "scalar"}), "aps-separate": ("aps", {"shared_encoder": False}),
    "apt-observation": ("apt", {"representation": "observation"}),
    "aps-knn-feature": ("aps", {"knn_feature": True}),
    "aps-explore-conditioned": ("aps", {"knn_feature": True, "explore_conditioned": True}),
}


@pytest.mark.parametrize("name", OPTIONS)
def test_pretraining_in_a_group_equals_each_seeds_own_run(name, tmp_path):
    method, changes = OPTIONS[name]
    config = replace(CONFIG, agent=replace(SMALL, **changes))
    alone = [pretrain(method, "hard", STEPS, seed, config, run_dir=tmp_path / f"alone{seed}")
             for seed in (3, 5)]
    grouped = pretrain_seeds(method, "hard", STEPS, [3, 5], config,
                             run_dirs=[tmp_path / "group3", tmp_path / "group5"])
    for seed, (learner, log), (g_learner, g_log) in zip((3, 5), alone, grouped, strict=True):
        assert g_learner.updates == learner.updates == 300
        assert_same(learner.state_dict(), g_learner.state_dict())
        assert_same(log.metrics, g_log.metrics)
        saved = [torch.load(tmp_path / f"{kind}{seed}" / "checkpoint.pt", weights_only=False)
                 for kind in ("alone", "group")]
        for state in saved:
            state.pop("seconds")
            state.pop("config")  # the group shows one progress bar: `progress` differs, a run setting
        assert_same(*saved)
        assert (tmp_path / f"alone{seed}" / "metrics.csv").read_text() == \
            (tmp_path / f"group{seed}" / "metrics.csv").read_text()
    assert not torch.equal(grouped[0][0].psi.head[0].weight, grouped[1][0].psi.head[0].weight)


def test_finetuning_in_a_group_equals_each_seeds_own_run(tmp_path):
    for seed in (0, 1):
        pretrain("aps", "easy", STEPS, seed, CONFIG, run_dir=tmp_path / str(seed))
    pretrained = [load_learner(tmp_path / str(seed) / "checkpoint.pt")[0] for seed in (0, 1)]
    copies = [load_learner(tmp_path / str(seed) / "checkpoint.pt")[0] for seed in (0, 1)]
    ws = [torch.nn.functional.normalize(torch.randn(4, generator=torch.Generator().manual_seed(s)), dim=0)
          for s in (0, 1)]
    alone = [finetune(p, "easy", w, STEPS, seed, CONFIG, explore_weight=0.5, reward_scale=0.3)
             for p, w, seed in zip(pretrained, ws, (0, 1), strict=True)]
    grouped = finetune_seeds(copies, "easy", ws, STEPS, [0, 1], CONFIG, explore_weight=0.5, reward_scale=0.3)
    for learner, log, g_learner, g_log in zip(pretrained, alone, copies, grouped, strict=True):
        assert g_learner.updates == learner.updates == 2 * 300
        assert_same(learner.state_dict(), g_learner.state_dict())
        assert_same(log.metrics, g_log.metrics)


@pytest.mark.parametrize("method", ["visr", "dqn"])
def test_a_grouped_pipeline_gives_each_seed_its_own_runs_result(method):
    budget = Budget(pretrain_steps=STEPS, finetune_steps=STEPS, identify_steps=800, eval_episodes=8)
    alone = [run_gridworld(method, "easy", seed=seed, budget=budget, config=CONFIG) for seed in (0, 1)]
    checked, config = prepare_run(method, "easy", 0, budget, CONFIG)
    grouped = run_pipeline_seeds(method, "easy", [0, 1], checked, config)
    times = ("pretrain_seconds", "finetune_seconds", "wall_seconds")
    for result, g_result in zip(alone, grouped, strict=True):
        assert_same({k: v for k, v in asdict(result).items() if k not in times},
                    {k: v for k, v in asdict(g_result).items() if k not in times})


def test_kNN_rewards_of_stacked_particle_sets_are_each_sets_own():
    g = torch.Generator().manual_seed(0)
    sets = torch.randn(3, 20, 5, generator=g)
    alone_norms, group_norms = [RunningMean() for _ in range(3)], [RunningMean() for _ in range(3)]
    for _ in range(2):  # the normalisers carry their means into the second batch
        alone = torch.stack([particle_entropy_reward(h, h, 4, exclude_self=True, normaliser=n)
                             for h, n in zip(sets, alone_norms, strict=True)])
        stacked = particle_entropy_reward(sets, sets, 4, exclude_self=True,
                                          normaliser=SeedNormalisers(group_norms))
        assert torch.equal(alone, stacked)
        sets = sets * 2
    assert [n.count for n in group_norms] == [160] * 3


def test_bad_groups_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="seed 3 appears twice"):
        pretrain_seeds("aps", "easy", STEPS, [3, 4, 3], CONFIG, run_dirs=[tmp_path / d for d in "abc"])
    with pytest.raises(ValueError, match="one or more seeds"):
        pretrain_seeds("aps", "easy", STEPS, [], CONFIG)
    with pytest.raises(ValueError, match="as many distinct run directories"):
        pretrain_seeds("aps", "easy", STEPS, [1, 2], CONFIG, run_dirs=[tmp_path / "a", tmp_path / "a"])
    with pytest.raises(ValueError, match="one resume flag"):
        pretrain_seeds("aps", "easy", STEPS, [1, 2], CONFIG, run_dirs=[tmp_path / "a", tmp_path / "b"],
                       resume=[True])
    with pytest.raises(ValueError, match="no pretraining"):
        pretrain_seeds("dqn", "easy", STEPS, [1, 2], CONFIG)
    assert not any(tmp_path.iterdir())
    learners = [Learner(SMALL, (3, 3), 4, 0), Learner(replace(SMALL, gamma=0.9), (3, 3), 4, 1)]
    with pytest.raises(ValueError, match="only their seeds may differ"):
        LearnerGroup(learners)
    specs = [RunSpec("aps", "easy", 0), RunSpec("visr", "easy", 1)]
    with pytest.raises(ValueError, match="differ in their seed only"):
        run_gridworld_group_rows(specs, Budget())


def without_times(rows):
    return [{k: v for k, v in row.items() if k not in ("wall_seconds", "run_seconds")} for row in rows]


@pytest.mark.parametrize("method", ["aps", "random"])
def test_a_task_family_seed_group_gives_each_run_its_own_rows(method):
    small = (("num_envs", 4), ("learning_starts", 100), ("agent.batch_size", 32), ("agent.hidden", 16))
    budget = FamilyBudget(pretrain_steps=800, identify_steps=400, finetune_steps=400, eval_episodes=4,
                          protocols=("finetuned",), tasks="one per class")
    specs = [RunSpec(method, "easy", seed, small) for seed in (0, 1)]
    grouped = run_family_group_rows(specs, budget)
    for spec, rows in zip(specs, grouped, strict=True):
        assert without_times(rows) == without_times(run_family_rows(spec, budget))
    assert len({row["wall_seconds"] for rows in grouped for row in rows}) == 1


def test_a_sweep_in_seed_groups_writes_the_rows_of_runs_alone(tmp_path):
    budget = Budget(pretrain_steps=800, finetune_steps=800, identify_steps=400, eval_episodes=4)
    for size in (1, 2):
        run_figure4_sweep(["visr"], ["easy"], 3, tmp_path / str(size), budget, workers=1, progress=False,
                          seeds_per_group=size)
    alone, grouped = (read_rows(tmp_path / str(size) / "figure4.csv") for size in (1, 2))
    assert without_times(alone) == without_times(grouped)
    assert [row["seed"] for row in grouped if row["phase"] == "zero_shot"] == ["0", "1", "2"]
    assert len({row["run_seconds"] for row in grouped if row["seed"] in "01"}) == 1  # one group of two


def test_seed_groups_keep_runs_apart_that_differ_in_anything_but_their_seed():
    specs = [RunSpec("aps", "easy", 0), RunSpec("aps", "hard", 0), RunSpec("aps", "easy", 1),
             RunSpec("aps", "easy", 2, (("agent.k", 5),)), RunSpec("aps", "easy", 3),
             RunSpec("visr", "easy", 0)]
    assert [[spec.key for spec in group] for group in seed_groups(specs, 2)] == \
        [[specs[0].key, specs[2].key], [specs[4].key], [specs[1].key], [specs[3].key], [specs[5].key]]


def test_an_objective_of_your_own_trains_in_a_group_as_alone():
    """The capstone's case: a reward and vMF loss written for one learner's batch, given each seed's."""
    config = capstone.training_config(CONFIG)
    objective = Objective(lambda phi, w, h, k: (phi * w).sum(1) + particle_entropy_reward(h, h, k,
                                                                                          exclude_self=True),
                          vmf_loss)
    alone = [pretrain("aps", "easy", STEPS, seed, config, objective=objective)[0] for seed in (0, 1)]
    grouped = pretrain_seeds("aps", "easy", STEPS, [0, 1], config, objective=objective)
    for learner, (g_learner, _) in zip(alone, grouped, strict=True):
        assert_same(learner.state_dict(), g_learner.state_dict())


class Killed(Exception):
    """Stands for a process killed after a checkpoint."""


def test_a_group_resumed_from_checkpoints_at_different_rounds_ends_as_its_seeds_own_runs(tmp_path):
    """Seed 3 was killed after its first round's checkpoint, seed 5 never started: the group brings seed 5
    up to seed 3 alone, then updates both together, and each ends as its own uninterrupted run."""
    config = replace(CONFIG, checkpoint_every=1)
    steps = 3 * 800
    alone = [pretrain("aps", "hard", steps, seed, config)[0] for seed in (3, 5)]

    def kill(end):
        if end.round == 2:
            raise Killed

    with pytest.raises(Killed):
        pretrain("aps", "hard", steps, 3, config, run_dir=tmp_path / "3", on_round=kill)
    assert torch.load(tmp_path / "3" / "checkpoint.pt", weights_only=False)["round"] == 1
    grouped = pretrain_seeds("aps", "hard", steps, [3, 5], config, run_dirs=[tmp_path / "3", tmp_path / "5"],
                             resume=[True, False])
    for learner, (g_learner, log) in zip(alone, grouped, strict=True):
        assert_same(learner.state_dict(), g_learner.state_dict())
        assert [row["round"] for row in log.metrics] == [1, 2, 3]
