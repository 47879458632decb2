"""The zero-shot score acts by GPI: with planted successor features where the identified w's own policy
picks one action and only GPI over fresh tasks finds the better one, every action played while scoring
zero-shot is GPI's, and every action after fine-tuning is the w policy's (GPI off)."""

from dataclasses import replace

import numpy as np
import torch

from aps_teach.atari.agent import AtariLearner
from aps_teach.atari.envs import AtariEnvs
from aps_teach.atari.train import evaluate, evaluate_zero_shot
from tests.atari.test_train import TINY, tiny

W = torch.nn.functional.normalize(torch.tensor([1.0, 2.0, -1.0, 0.5, 0.0]), dim=0)


class PlantedPsi(torch.nn.Module):
    """psi(s, a, z), whatever s: under z = W, action 1 is worth psi^T W = 1 (the others 0); under any other
    z, action 2 is worth 2. Q(a | W) picks 1; GPI's max over candidates z_i, scored under W, picks 2."""

    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Parameter(torch.zeros(1))  # for fine-tuning's fresh Adam

    def forward(self, obs, z):
        own = ((z - W).abs().amax(-1) < 1e-6)[..., None]
        out = torch.zeros(*z.shape[:-1], 6, len(W))
        out[..., 1, :] = torch.where(own, W, 0.0)
        out[..., 2, :] = torch.where(own, 0.0, 2 * W)
        return out


def test_zero_shot_scores_with_gpi_and_fine_tuned_without(monkeypatch):
    config = tiny(atari=replace(TINY, eval_epsilon=0.0))
    learner = AtariLearner(config.atari, "aps", 6, seed=0)
    learner.psi = PlantedPsi()
    played, step = [], AtariEnvs.step
    monkeypatch.setattr(AtariEnvs, "step", lambda self, actions: (played.append(actions.copy()),
                                                                  step(self, actions))[1])
    result = evaluate_zero_shot(learner, "pong", W, seed=0, config=config)
    assert result.gpi and result.episodes >= 1
    assert set(np.concatenate(played).tolist()) == {2}  # only GPI finds action 2

    played.clear()
    learner.start_finetune()
    tuned = evaluate(learner, "pong", W, seed=0, config=config)
    assert not tuned.gpi and set(np.concatenate(played).tolist()) == {1}
