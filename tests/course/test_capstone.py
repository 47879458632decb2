"""Notebook 04d's capstone: an objective written outside the library trains APS exactly as the library's
does when it computes the same thing, bad settings and bad shapes are refused early, a sign error in either
term shows in the trained agent, and the judge's thresholds, applied to agents measured at the default
budget on its level and the seeds the thresholds were chosen on (0-2), pass Eq. 6 and fail VISR's reward alone
on every seed (the live run at that budget on the judged seeds is in tests/course/test_learning.py; the rates
on fresh seeds in tests/course/test_judge_calibration.py)."""

import dataclasses

import pytest
import torch

from aps_teach.course import capstone, exercises, solutions
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.learner.rewards import Objective, vmf_loss

STEPS = 16_000  # enough to tell the solution from a sign error on easy (seeds 0-4 measured)
CONTROL = (0.709, 0.697, 0.723)
"""The exploit-only control's visitation entropy on deep at 64k steps, seeds 0-2 (VISR's reward, vMF loss)."""
MEASURED = {  # deep, 64k steps, seeds 0-2: entropy, the control's, own skill, other skill
    "eq6": [(0.753, CONTROL[0], 0.160, -0.001), (0.744, CONTROL[1], 0.169, -0.003),
            (0.758, CONTROL[2], 0.163, 0.001)],
    "eq6 as solutions.aps_reward writes it": [(0.728, CONTROL[0], 0.166, 0.006),
                                              (0.751, CONTROL[1], 0.166, 0.002),
                                              (0.741, CONTROL[2], 0.157, 0.004)],
    "eq6, each particle its own neighbour": [(0.739, CONTROL[0], 0.168, -0.000),
                                             (0.750, CONTROL[1], 0.167, -0.006),
                                             (0.755, CONTROL[2], 0.165, 0.001)],
    "apt": [(0.735, CONTROL[0], 0.176, 0.005), (0.762, CONTROL[1], 0.176, -0.003),
            (0.744, CONTROL[2], 0.165, -0.006)],
    "visr": [(CONTROL[0], CONTROL[0], 0.180, -0.002), (CONTROL[1], CONTROL[1], 0.188, -0.005),
             (CONTROL[2], CONTROL[2], 0.176, 0.002)],
    "crowding": [(0.575, CONTROL[0], 0.190, -0.001), (0.585, CONTROL[1], 0.196, 0.001),
                 (0.569, CONTROL[2], 0.191, -0.002)],
    "reversed vMF loss": [(0.680, 0.548, -0.023, -0.008), (0.664, 0.522, -0.024, 0.002),
                          (0.691, 0.532, -0.021, -0.000)],  # its control has the reversed loss too
}
"""What the judge decides from, for each reward (with the vMF loss, or the reversed one), as measured when its
thresholds were chosen (`capstone.train_your_aps` on each, default budget)."""
PASSES = {"eq6": True, "eq6 as solutions.aps_reward writes it": True,
          "eq6, each particle its own neighbour": True, "apt": True, "visr": False, "crowding": False,
          "reversed vMF loss": False}


def test_the_library_reward_as_an_objective_trains_bit_identically():
    """Eq. 6 and Eq. 5 handed in as an objective give the very weights the library's own update gives."""
    config = capstone.training_config(TrainConfig(progress=False, learning_starts=400))
    library, _ = pretrain("aps", "easy", 1_600, 3, config)
    objective = Objective(exercises.APS_REWARD.reference, vmf_loss)
    outside, _ = pretrain("aps", "easy", 1_600, 3, config, objective=objective)
    assert library.updates == outside.updates > 0
    for name, module in library._modules().items():
        theirs = outside._modules()[name].state_dict()
        for key, ours in module.state_dict().items():
            assert torch.equal(ours, theirs[key]), (name, key)


def test_an_objective_needs_the_settings_it_replaces():
    config = TrainConfig(progress=False)  # the library's default normalises kNN distances
    objective = Objective(exercises.APS_REWARD.reference, vmf_loss)
    with pytest.raises(ValueError, match=r"needs knn_normalise=False \(not True\)"):
        pretrain("aps", "easy", 800, 0, config, objective=objective)
    with pytest.raises(ValueError, match=r"needs method='aps' \(not 'visr'\)"):
        pretrain("visr", "easy", 800, 0, capstone.training_config(config), objective=objective)
    weighted = capstone.training_config(config)
    weighted = dataclasses.replace(weighted, agent=dataclasses.replace(weighted.agent, explore_weight=3.0))
    with pytest.raises(ValueError, match=r"needs explore_weight=1.0 \(not 3.0\)"):
        pretrain("aps", "easy", 800, 0, weighted, objective=objective)


def test_a_reward_of_the_wrong_shape_is_refused():
    config = capstone.training_config(TrainConfig(progress=False, learning_starts=400))
    objective = Objective(lambda phi, w, h, k: (phi * w).sum(1, keepdim=True), vmf_loss)
    with pytest.raises(ValueError, match=r"your reward: r has shape \(\d+, 1\), expected \(\d+,\)"):
        pretrain("aps", "easy", 1_600, 0, config, objective=objective)


def _train(reward, loss, capsys, level="easy", steps=STEPS):
    result = capstone.train_your_aps(reward, loss, level, steps, seeds=(0,))
    return result, capsys.readouterr().out


def test_a_sign_error_in_either_term_shows_in_the_agent(capsys):
    """On easy at 16k steps, one seed: the solution explores beyond its control and its skills are
    recognisable; a reversed vMF loss blurs the skills; a reward paying crowded states falls below the
    control."""
    result, printed = _train(solutions.aps_reward, solutions.vmf_loss, capsys)
    assert result.yours == (True, True) and result.measures.recognisable
    assert result.measures.seeds[0].gain > 0
    assert "aps_reward: correct" in printed and "vmf_loss: correct" in printed

    def wrong_sign_loss(phi, w):
        return (phi * w).sum(1).mean()

    result, printed = _train(solutions.aps_reward, wrong_sign_loss, capsys)
    assert result.yours == (True, True) and not result.measures.recognisable and not result.passed
    assert "vmf_loss: wrong, it looks like the sign flipped" in printed
    assert exercises.KEPT.format(name="vmf_loss") in printed
    assert printed.rstrip().endswith("tell their skills apart on every seed")

    def crowding_reward(phi, w, h, k):  # pays the kNN term negatively: crowded states
        return 2 * (phi * w).sum(1) - solutions.aps_reward(phi, w, h, k)

    result, printed = _train(crowding_reward, solutions.vmf_loss, capsys)
    assert result.measures.seeds[0].gain < 0 and not result.passed
    assert "capstone: not yet: the agents do not explore beyond the exploit-only control" in printed


@pytest.mark.parametrize("reward", MEASURED)
def test_each_measured_reward_gets_one_verdict_on_every_seed_by_a_clear_margin(reward):
    """Every way of writing Eq. 6 passes; VISR's reward alone (the control), a reward paying crowded states
    and a reversed vMF loss fail; APT's reward alone passes too (its kNN term explores as much as Eq. 6's:
    the judge cannot see the missing exploitation term). Each seed alone answers each question the same way,
    and no value lies within 0.015 of the threshold it is compared with (VISR's gain is 0 by construction)."""
    measures = capstone.Measures(tuple(capstone.SeedMeasures(*numbers) for numbers in MEASURED[reward]))
    assert measures.passed == PASSES[reward] and measures.seeds_agree
    gains, gaps = [seed.gain for seed in measures.seeds], [seed.gap for seed in measures.seeds]
    if reward == "visr":
        assert gains == [0.0] * 3
    else:
        assert min(abs(gain) for gain in gains) > 0.015
        assert abs(measures.mean_gain - capstone.EXPLORE_GAIN) > 0.015
    assert min(abs(gap - capstone.RECOGNISABLE) for gap in gaps) > 0.05


def test_the_verdict_lines_follow_the_measures():
    agreeing = capstone.Measures((capstone.SeedMeasures(0.70, 0.66, 0.05, 0.01),
                                  capstone.SeedMeasures(0.71, 0.70, 0.06, 0.0)))
    lines = capstone.verdict_lines(agreeing)
    assert lines[0] == ("  explores: visitation entropy over the exploit-only control's, per seed +0.040, "
                        f"+0.010 (mean +0.025): above 0 on every seed, mean >= {capstone.EXPLORE_GAIN}: yes")
    assert lines[1].endswith(f"per seed 0.040, 0.060: each >= {capstone.RECOGNISABLE}: no")
    assert lines[2].endswith(": yes")
    assert lines[3] == "capstone: not yet: the agents do not tell their skills apart on every seed"
    split = capstone.Measures((capstone.SeedMeasures(0.70, 0.66, 0.20, 0.0),
                               capstone.SeedMeasures(0.69, 0.70, 0.20, 0.0)))
    lines = capstone.verdict_lines(split)
    assert lines[0].endswith(": no") and lines[2].endswith(": no")
    assert lines[3].startswith("capstone: not yet: the agents do not explore beyond the exploit-only control")
    passing = capstone.Measures((capstone.SeedMeasures(0.75, 0.70, 0.16, 0.0),) * 3)
    assert capstone.verdict_lines(passing)[3] == (
        "capstone: passed on 3 seed(s): the agents explore beyond the exploit-only control and their "
        "skills are recognisable")


def test_no_seeds_is_refused():
    with pytest.raises(ValueError, match="one or more seeds, got none"):
        capstone.train_your_aps(solutions.aps_reward, solutions.vmf_loss, seeds=())


def test_the_judge_runs_on_its_level(capsys):
    """One short end-to-end run on the judging level: the printed verdict is the one its measures give."""
    result, printed = _train(solutions.aps_reward, solutions.vmf_loss, capsys, capstone.LEVEL, 3_200)
    assert (f"capstone: APS pretrained on {capstone.LEVEL} for 3,200 steps with your reward and your vMF "
            "loss, on 1 seed(s), each beside its exploit-only control") in printed
    assert printed.rstrip().endswith(capstone.verdict_lines(result.measures)[-1])


def test_the_starters_train_on_the_library_objective(capsys):
    def starter(*args):
        raise NotImplementedError

    result, printed = _train(starter, starter, capsys)
    assert result.yours == (False, False)
    assert result.objective == Objective(exercises.APS_REWARD.reference, vmf_loss)
    assert "with the library's reward and the library's vMF loss" in printed


def test_skill_gap_is_the_mean_alignment_with_own_and_with_another_skill():
    """On a replay whose phi(s') equals the skill w that reached it, the own gap is 1 and the other is the
    mean cosine between neighbouring windows' skills."""
    config = capstone.training_config(TrainConfig(progress=False, learning_starts=400))
    kept = {}
    learner, _ = pretrain("aps", "easy", 800, 0, config, on_round=lambda end: kept.update(end=end))
    batch = kept["end"].replay.sample(64, 1, torch.Generator().manual_seed(0))
    learner.features = lambda obs: batch.w  # phi(s') = w exactly
    own, other = capstone.skill_gap(learner, kept["end"], 64, 0)
    assert own == pytest.approx(1.0)
    assert other == pytest.approx((batch.w * batch.w.roll(1, 0)).sum(1).mean().item())
