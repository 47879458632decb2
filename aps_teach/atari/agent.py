"""The gridworld learner on pixels: `Learner` with the Atari conv networks and the paper's Atari settings.

Nothing of the update changes: TD targets, the vMF and kNN rewards, GPI and the fine-tuning switch are
`aps_teach.learner.agent.Learner`'s (the update is `aps_teach.learner.update`). `agent_config` maps
`AtariConfig` onto `AgentConfig` field by field, by name (the two share their names), except the
observation mean, which the conv networks do without (they read the frames, scaled to [0, 1]);
`AgentConfig.hidden` and `representation` keep the learner's defaults, unused here (the conv networks have
their own sizes, the kNN space is phi or the conv f).

What does change is how: the learner is built with `fixed_shapes=True`, so an update here never waits on
the device: its statistics stay tensors (the training loop reads them when it writes a metrics row), and
with `nstep_reward="sum"` the kNN reward runs over all B x n next states with the invalid ones masked
(`rewards.masked_particle_entropy`) instead of selecting the valid ones, whose number the host would
have to read. The rewards are the gridworld learner's up to float rounding (tests/atari/test_agent.py
compares the two).
"""

from __future__ import annotations

import torch

from aps_teach.atari.config import AtariConfig, learner_fields
from aps_teach.atari.networks import AtariFeatureNet, AtariSuccessorFeatureNet
from aps_teach.learner.agent import Learner
from aps_teach.learner.config import AgentConfig, Method


def agent_config(atari: AtariConfig, method: Method) -> AgentConfig:
    """The learner's settings: every `AgentConfig` field the Atari config has, by name (`learner_fields`),
    `method`, and no observation mean (the conv networks read the frames)."""
    return AgentConfig(method=method, normalise_observations=False, **learner_fields(atari))


class AtariLearner(Learner):
    """`Learner` with psi = `AtariSuccessorFeatureNet`, phi and APT's f = `AtariFeatureNet`, Adam's betas
    from the config. Observations are uint8 stacks (B, S, H, W) or their augmented float copies."""

    def __init__(self, atari: AtariConfig, method: Method, num_actions: int, seed: int,
                 device: str | torch.device = "cpu"):
        self.atari = atari
        super().__init__(agent_config(atari, method), (atari.frame_stack, atari.frame_size, atari.frame_size),
                         num_actions, seed, device, fixed_shapes=True)

    def build_networks(self) -> tuple[torch.nn.Module, torch.nn.Module | None, torch.nn.Module | None]:
        psi = AtariSuccessorFeatureNet(self.atari, self.num_actions)
        phi = AtariFeatureNet(self.atari) if self.config.task_conditioned else None
        rep = AtariFeatureNet(self.atari) if self._separate_knn_space == "contrastive" else None
        return psi, phi, rep

    def inputs(self, obs: torch.Tensor) -> torch.Tensor:
        """The conv networks read the frame stacks themselves (uint8, or augmented floats)."""
        return obs

    def _adam(self, lr: float) -> torch.optim.Adam:
        """Adam with the config's betas; on CUDA `capturable` (its step count on the GPU), so that an
        update step with it can be captured in a CUDA graph."""
        optimizer = super()._adam(lr)
        for group in optimizer.param_groups:
            group["betas"] = (self.atari.adam_beta1, self.atari.adam_beta2)
            group["capturable"] = self.device.type == "cuda"
        return optimizer
