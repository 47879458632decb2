"""The learning tests: with the default budget on the easy level, VISR's skills solve the task zero-shot and
APS solves it after fine-tuning; and the capstone's judge, at its default budget, decides each reward the same
way on every judged seed. A random policy succeeds in 9% of episodes, and before this set-up
zero-shot success was 0 for every method.

Seeds, from the committed Figure 4 runs: VISR's zero-shot success is 1.00 on 8 of 10 seeds (seed 0 among
them); APS ends fine-tuning at 1.00 on 8 of 10 seeds, seed 1 among them, while its seed 0 is one of the two
that fine-tuning leaves lower (it dips, recovers to 1.00, and ends at 0: see docs/results.md, "Why, mechanism
by mechanism"). Two full default runs, about 40 s on one core: the slowest test, kept in the suite because
it is the one that shows the learner learns. The thresholds leave room for another machine's rounding.
"""

from aps_teach.course import capstone, exercises
from aps_teach.grid.experiments import run_gridworld
from aps_teach.grid.train import TrainConfig


def test_visr_solves_easy_zero_shot_and_aps_after_finetuning():
    visr = run_gridworld("visr", "easy", seed=0, config=TrainConfig(progress=False))
    aps = run_gridworld("aps", "easy", seed=1, config=TrainConfig(progress=False))
    print(f"\neasy: visr seed 0 zero-shot {visr.zero_shot_success:.2f} ({visr.wall_seconds:.0f} s) | "
          f"aps seed 1 zero-shot {aps.zero_shot_success:.2f}, fine-tuned {aps.finetuned_success:.2f} "
          f"({aps.wall_seconds:.0f} s)")
    assert visr.zero_shot_success >= 0.5
    assert aps.finetuned_success >= 0.5
    assert visr.state_coverage == aps.state_coverage == 1.0


def test_the_capstone_judge_gives_each_reward_one_verdict_on_every_seed():
    """The capstone's judge at its own level, budget and seeds (deep, 64k steps, `JUDGED_SEEDS`: 3-5, fresh
    seeds, the thresholds chosen on 0-2): Eq. 6 passes and VISR's reward alone (its control) fails, each seed
    alone giving the same answers. Six pretrainings, the controls shared: a few minutes on one core. (APT's
    reward alone, the judge's known blind spot, is not trained here: it passes on these seeds in 04d's
    committed output and on all 220 calibration subsets, `course.judge_calibration`'s committed rows.)"""
    eq6, vmf = exercises.APS_REWARD.reference, exercises.VMF_LOSS.reference
    judged = {"eq6": capstone.train_your_aps(eq6, vmf),
              "visr": capstone.train_your_aps(capstone.exploit_only, vmf)}
    passed = {name: result.passed for name, result in judged.items()}
    assert passed == {"eq6": True, "visr": False}
    assert all(result.measures.seeds_agree for result in judged.values())
    assert [seed.gain for seed in judged["visr"].measures.seeds] == [0.0] * len(capstone.JUDGED_SEEDS)
