"""Notebook 04's capstone: an objective written outside the library trains APS exactly as the library's
does when it computes the same thing, bad settings and bad shapes are refused early, and the judge of the
trained agent passes the worked solution and fails a reward or loss with the wrong sign."""

import dataclasses

import pytest
import torch

from aps_teach.course import capstone, exercises, solutions
from aps_teach.grid.train import TrainConfig, pretrain
from aps_teach.learner.rewards import Objective, vmf_loss

STEPS = 16_000  # enough for the judge to tell the solution from a sign error on easy (seeds 0-4 measured)


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


def _train(reward, loss, capsys):
    result = capstone.train_your_aps(reward, loss, steps=STEPS, seed=0, identify_steps=1_600, eval_episodes=8)
    return result, capsys.readouterr().out


def test_the_solution_passes_and_a_sign_error_in_either_term_does_not(capsys):
    result, printed = _train(solutions.aps_reward, solutions.vmf_loss, capsys)
    assert result.yours == (True, True) and result.passed
    assert "aps_reward: correct" in printed and "vmf_loss: correct" in printed
    assert printed.rstrip().endswith("capstone: passed: the agent explores more evenly than a random walk "
                                     "and its skills are recognisable")

    def wrong_sign_loss(phi, w):
        return (phi * w).sum(1).mean()

    result, printed = _train(solutions.aps_reward, wrong_sign_loss, capsys)
    assert result.yours == (True, True) and result.explores and not result.recognisable
    assert "vmf_loss: wrong, it looks like the sign flipped" in printed
    assert exercises.KEPT.format(name="vmf_loss") in printed
    assert printed.rstrip().endswith("capstone: not yet: the agent does not tell its skills apart")

    def crowding_reward(phi, w, h, k):  # pays the kNN term negatively: crowded states
        return 2 * (phi * w).sum(1) - solutions.aps_reward(phi, w, h, k)

    result, printed = _train(crowding_reward, solutions.vmf_loss, capsys)
    assert not result.explores and result.entropy < result.walk_entropy
    assert printed.rstrip().endswith("capstone: not yet: the agent does not explore more evenly than a "
                                     "random walk")


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
