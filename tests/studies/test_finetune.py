"""The fine-tuning study: the task's optimal values by hand, every arm's rows, the table."""

import pytest

from aps_teach.grid.experiments import Budget
from aps_teach.infra.sweeps import RunSpec
from aps_teach.studies.finetune import METHOD_ARMS, finetune_table, optimal_value_range, run_finetune_rows

CORRIDOR = ("#######", "#SaA.T#", "#######")
"""From S: the key (+1) one step right, then the open passageway, a floor cell and the target (+10)."""


def test_the_task_optimum_is_the_discounted_shortest_solution():
    gamma = 0.99
    low, high = optimal_value_range(CORRIDOR, gamma)
    # the start: +1 now, +10 three steps later; holding the key back on S: +10 four steps away (gamma^3)
    assert high == pytest.approx(1 + gamma**3 * 10)
    assert low == pytest.approx(gamma**3 * 10)


def test_every_arm_starts_from_the_same_learner_and_is_evaluated_every_round():
    budget = Budget(pretrain_steps=3200, finetune_steps=6400, identify_steps=3200, eval_episodes=4)
    rows = run_finetune_rows(RunSpec("dqn", "easy", 0), budget)
    assert [row["arm"] for row in rows] == [arm for arm in METHOD_ARMS["dqn"] for _ in range(3)]  # rounds 0-2
    starts = [row for row in rows if row["round"] == 0]
    assert len({(row["success_rate"], row["value_max"]) for row in starts}) == 1  # one learner, copied
    assert [row["finetune_steps"] for row in rows[:3]] == [0, 3200, 6400]
    table = finetune_table(rows).splitlines()
    assert len(table) == 2 + len(METHOD_ARMS["dqn"])
    assert table[2].startswith("| dqn | target ends the episode |")
