"""The learning test of issue 3: after fine-tuning with the default budget, APS solves the easy level.

Two full runs with the default budget (about two minutes on 2 CPU cores): the slowest test, kept in
the suite because it is the one that shows the learner learns. The dqn baseline, with the same
fine-tuning budget and no pretraining, is printed beside it (pytest -s).
"""

from aps_teach.experiments import run_gridworld
from aps_teach.train import TrainConfig


def test_aps_solves_easy_after_finetuning_with_dqn_beside_it():
    aps = run_gridworld("aps", "easy", seed=0, config=TrainConfig(progress=False))
    dqn = run_gridworld("dqn", "easy", seed=0, config=TrainConfig(progress=False))
    print(f"\neasy, seed 0: aps zero-shot {aps.zero_shot_success:.2f}, "
          f"fine-tuned {aps.finetuned_success:.2f} "
          f"({aps.wall_seconds:.0f} s) | dqn fine-tuned {dqn.finetuned_success:.2f} "
          f"({dqn.wall_seconds:.0f} s)")
    assert aps.finetuned_success >= 0.9
