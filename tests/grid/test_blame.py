"""Zero-shot blame: the exact planner on hand-made rewards, the verdict's arithmetic, and a run's report."""

import numpy as np
import pytest
import torch

import gridworld
from aps_teach.grid.blame import (
    BLAME_COLUMNS,
    blame_summary,
    ceiling,
    planner_success,
    verdict,
    zero_shot_blame,
)
from aps_teach.grid.experiments import Budget, run_gridworld
from aps_teach.grid.sweep import result_rows
from aps_teach.grid.train import TrainConfig, new_learner
from aps_teach.infra.sweeps import RunSpec
from aps_teach.learner.config import AgentConfig
from aps_teach.learner.tasks import TaskFit

CORRIDOR = ("#######", "#S...T#", "#######")
"""States 0-3 are the cells (1, 1)..(1, 4), state 4 the target."""


def reward_of_arriving(level, paid: dict[tuple[int, int], float]) -> np.ndarray:
    """(S, A) reward of each move: `paid` at the cell it reaches."""
    compiled = gridworld.compile_level(level)
    at = np.array([paid.get(tuple(p), 0.0) for p in compiled.positions])
    return at[compiled.successor]


def test_planner_reaches_the_target_only_when_the_reward_leads_there():
    gamma = 0.99
    assert planner_success(CORRIDOR, reward_of_arriving(CORRIDOR, {(1, 5): 1.0}), gamma) == 1.0
    # a cell before the target pays more per step than the target: the optimal policy stays on it
    assert planner_success(CORRIDOR, reward_of_arriving(CORRIDOR, {(1, 3): 1.0, (1, 5): 0.5}), gamma) == 0.0
    # with the target ending the episode, +5 once on it is worth less than 1 per step forever before it
    ends = reward_of_arriving(CORRIDOR, {(1, 4): 1.0, (1, 5): 5.0})
    assert planner_success(CORRIDOR, ends, gamma, absorbing=False) == 0.0
    assert planner_success(CORRIDOR, ends, gamma, absorbing=True) == 1.0  # 5 per step on the target wins
    # the true task of the hard level: the planner finds the target from every start cell
    hard = gridworld.compile_level("hard")
    assert planner_success("hard", hard.reward, gamma, absorbing=False) == 1.0
    with pytest.raises(ValueError, match="give a level with a target"):
        planner_success("open10", np.zeros((100, 4)), gamma)


@pytest.mark.parametrize(("zero_shot", "targets", "planner", "oracle", "expected"), [
    (1.0, 40, 1.0, 1.0, "none"),
    (0.0, 0, 1.0, 1.0, "identification"),   # no target reward in the data: nothing else can be judged
    (0.0, 12, 0.0, 0.25, "phi"),            # lost: phi 0.75, identification 0.25, psi 0
    (0.0, 12, 0.25, 1.0, "identification"),  # lost: phi 0, identification 0.75, psi 0.25
    (0.1, 12, 1.0, 1.0, "psi"),             # an exact planner on the agent's own fit does better
    (0.5, 12, np.nan, 1.0, "identification"),
])
def test_verdict_names_the_link_that_lost_the_most(zero_shot, targets, planner, oracle, expected):
    assert verdict(zero_shot, targets, planner, oracle) == expected


@pytest.mark.parametrize(("oracle_planner", "oracle_success", "expected"), [
    (1.0, 0.97, "none"),   # psi under the best-case w succeeds: identification alone stood in the way
    (0.0, 0.0, "phi"),     # no reward phi can express leads to the target (deep: phi(target) ~ a neighbour's)
    (1.0, 0.0, "psi"),     # the exact planner on the best-case fit succeeds, psi does not (hard)
    (0.6, 0.2, "phi"),     # lost: phi 0.4, psi 0.4: a tie names phi, the first link
    (0.8, 0.1, "psi"),     # lost: phi 0.2, psi 0.7
])
def test_ceiling_names_what_stops_the_agent_under_the_best_case_w(oracle_planner, oracle_success, expected):
    assert ceiling(oracle_planner, oracle_success) == expected


def test_blame_summary_reports_the_ceiling_behind_identification():
    def row(blame, planner, success):
        return {"phase": "zero_shot", "blame": blame, "oracle_planner_success": str(planner),
                "oracle_success": str(success)}
    rows = [row("identification", 0.0, 0.0), row("identification", 1.0, 0.0), row("identification", 0.1, 0.0),
            row("identification", 1.0, 1.0), row("psi", 1.0, 0.2), {"phase": "finetuned", "blame": "psi"},
            {"phase": "zero_shot", "blame": ""}]
    assert blame_summary(rows) == "identification 4, psi 1, — 1 (best-case w: phi 2, psi 1)"
    assert blame_summary(rows[4:]) == "psi 1, — 1"


def test_blame_counts_the_task_rewards_and_plans_on_the_fit():
    config = TrainConfig(agent=AgentConfig(method="visr", hidden=16), progress=False)
    learner = new_learner("visr", "easy", 0, config)
    rewards = torch.tensor([0.0, 1.0, 10.0, 0.0, 11.0, 10.0])
    fit = TaskFit(torch.ones(16) / 4, torch.ones(16, dtype=torch.float64) / 4, 0.5, True)
    asked = []
    blame = zero_shot_blame(learner, "easy", fit, rewards, 0.25, lambda w: asked.append(w) or 0.5)
    assert (blame.target_rewards, blame.key_rewards) == (3, 1)
    assert blame.oracle_success == 0.5 and len(asked) == 1 and asked[0].shape == (16,)
    assert 0 <= blame.planner_success <= 1 and 0 <= blame.oracle_planner_success <= 1
    assert blame.blame in ("identification", "phi", "psi")
    assert tuple(blame.row()) == BLAME_COLUMNS


def test_every_zero_shot_score_comes_with_its_blame():
    budget = Budget(pretrain_steps=3200, finetune_steps=3200, identify_steps=3200, eval_episodes=8)
    config = TrainConfig(agent=AgentConfig(hidden=16, batch_size=32), progress=False)
    visr = run_gridworld("visr", "easy", seed=0, budget=budget, config=config)
    apt = run_gridworld("apt", "easy", seed=0, budget=budget, config=config)
    assert visr.blame is not None and apt.blame is None
    rows = result_rows(RunSpec("visr", "easy", 0), budget, config, visr)
    assert all(row["blame"] == visr.blame.blame for row in rows)
    assert all(row["blame"] == "" for row in result_rows(RunSpec("apt", "easy", 0), budget, config, apt))
