"""The gridworld learner on pixels: `Learner` with the Atari conv networks and the paper's Atari settings.

Nothing of the update changes: TD targets, the vMF and kNN rewards, GPI and the fine-tuning switch are
`aps_teach.agents.Learner`'s. `agent_config` maps `AtariConfig` onto `AgentConfig`; the fields the
Atari config does not name keep the learner's defaults (vector SF loss, kNN distances divided by their
running mean, bootstrapping through terminals while pretraining, equal reward weights).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from aps_teach.agents import AgentConfig, Learner, Method
from aps_teach.atari.config import AtariConfig
from aps_teach.atari.networks import AtariFeatureNet, AtariSuccessorFeatureNet


def agent_config(atari: AtariConfig, method: Method) -> AgentConfig:
    """The learner's settings from the Atari config: d, k, gamma, n, batch, learning rates, Adam epsilon,
    gradient clip, target period and GPI samples."""
    return replace(AgentConfig(), method=method, feature_dim=atari.feature_dim, k=atari.knn_k,
                   gamma=atari.gamma, n_step=atari.n_step, batch_size=atari.batch_size,
                   lr=atari.lr_pretrain, finetune_lr=atari.lr_finetune, adam_eps=atari.adam_eps,
                   max_grad_norm=atari.max_grad_norm, target_update_period=atari.target_update_period,
                   gpi_samples=atari.gpi_policies)


class AtariLearner(Learner):
    """`Learner` with psi = `AtariSuccessorFeatureNet`, phi and APT's f = `AtariFeatureNet`, Adam's betas
    from the config. Observations are uint8 stacks (B, S, H, W) or their augmented float copies."""

    def __init__(self, atari: AtariConfig, method: Method, num_actions: int, seed: int,
                 device: str | torch.device = "cpu"):
        self.atari = atari
        super().__init__(agent_config(atari, method), (atari.frame_stack, atari.frame_size, atari.frame_size),
                         num_actions, seed, device)

    def build_networks(self) -> tuple[torch.nn.Module, torch.nn.Module | None, torch.nn.Module | None]:
        psi = AtariSuccessorFeatureNet(self.atari, self.num_actions)
        phi = AtariFeatureNet(self.atari) if self.config.task_conditioned else None
        rep = AtariFeatureNet(self.atari) if self._separate_knn_space == "contrastive" else None
        return psi, phi, rep

    def compile(self, mode: str = "default") -> None:
        """torch.compile every network in place (their state dicts, hence checkpoints, are unchanged)."""
        for module in (*self._modules().values(), self.psi_target):
            module.compile(mode=mode)

    def _adam(self, lr: float) -> torch.optim.Adam:
        optimizer = super()._adam(lr)
        for group in optimizer.param_groups:
            group["betas"] = (self.atari.adam_beta1, self.atari.adam_beta2)
        return optimizer
