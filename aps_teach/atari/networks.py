"""Atari networks: phi(s) on the unit sphere and psi(s, a, w) with one MLP per feature dimension.

Both read stacks of uint8 frames (B, S, H, W), scaled to [0, 1] (float stacks are taken as already
scaled: the augmented batches, `aps_teach.atari.augment`), through the conv layers of the
paper's tables (`AtariConfig.conv_*`; 32, 64, 64 channels, kernels 8, 4, 3, strides 4, 2, 1):
- phi: conv with ELU, a fully connected layer of 1024 ELU units, 5 outputs, L2-normalised.
- psi: conv with ReLU, 512 ReLU units h(s); for each feature dimension j an MLP on [h(s), w] with 512
  ReLU units and one output per action, psi_j(s, ., w). That reads "one MLP for each dimension of the
  successor feature" and psi as a UVFA of w.
Call signatures match `aps_teach.learner.networks.FeatureNet` / `SuccessorFeatureNet`, so the same learner can
use either pair.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from aps_teach.atari.config import AtariConfig


def conv_torso(in_channels: int, channels: tuple[int, ...], kernels: tuple[int, ...],
               strides: tuple[int, ...], activation: type[nn.Module]) -> nn.Sequential:
    """Conv layers, each followed by `activation`, then flatten."""
    layers: list[nn.Module] = []
    for out, kernel, stride in zip(channels, kernels, strides, strict=True):
        layers += [nn.Conv2d(in_channels, out, kernel, stride), activation()]
        in_channels = out
    return nn.Sequential(*layers, nn.Flatten())


def _torso_out(config: AtariConfig) -> int:
    return config.conv_channels[-1] * config.conv_output_size() ** 2


def pixels(obs: torch.Tensor) -> torch.Tensor:
    """The networks' input: uint8 frames / 255; float input is taken as already scaled to [0, 1]."""
    return obs.float() / 255.0 if obs.dtype == torch.uint8 else obs


class AtariFeatureNet(nn.Module):
    """phi(s) = g(s) / ||g(s)||, g = conv (ELU) -> `phi_hidden` ELU units -> `feature_dim` outputs."""

    def __init__(self, config: AtariConfig):
        super().__init__()
        self.net = nn.Sequential(
            conv_torso(config.frame_stack, config.conv_channels, config.conv_kernels, config.conv_strides,
                       nn.ELU),
            nn.Linear(_torso_out(config), config.phi_hidden), nn.ELU(),
            nn.Linear(config.phi_hidden, config.feature_dim))

    def unnormalised(self, obs: torch.Tensor) -> torch.Tensor:
        """g(s), phi before the L2 normalisation (the authors' kNN space: `knn_phi_normalised=False`)."""
        return self.net(pixels(obs))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.unnormalised(obs), dim=-1)


class PerDimensionMLP(nn.Module):
    """`groups` independent two-layer MLPs on the same input: (..., in) -> (..., groups, out).

    MLP j is Linear(in, hidden) -> ReLU -> Linear(hidden, out); all run as batched matrix products.
    Initialised like `nn.Linear` (uniform in +-1/sqrt(fan_in)).
    """

    def __init__(self, groups: int, in_features: int, hidden: int, out_features: int):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(groups, in_features, hidden))
        self.b1 = nn.Parameter(torch.empty(groups, hidden))
        self.w2 = nn.Parameter(torch.empty(groups, hidden, out_features))
        self.b2 = nn.Parameter(torch.empty(groups, out_features))
        for (w, b), fan_in in (((self.w1, self.b1), in_features), ((self.w2, self.b2), hidden)):
            bound = 1.0 / math.sqrt(fan_in)
            nn.init.uniform_(w, -bound, bound)
            nn.init.uniform_(b, -bound, bound)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(torch.einsum("...i,gih->...gh", x, self.w1) + self.b1)
        return torch.einsum("...gh,gho->...go", h, self.w2) + self.b2


class AtariSuccessorFeatureNet(nn.Module):
    """psi(s, a, w): conv (ReLU) -> `psi_hidden` ReLU units h(s); psi_j(s, ., w) = MLP_j([h(s), w]).

    `forward(obs (B, S, H, W), w (B, d))` gives (B, A, d); `w (B, C, d)` (C candidate tasks, for GPI)
    gives (B, C, A, d), encoding each observation once.
    """

    def __init__(self, config: AtariConfig, num_actions: int):
        super().__init__()
        if isinstance(num_actions, bool) or not isinstance(num_actions, int) or num_actions < 1:
            raise ValueError(f"num_actions must be an integer >= 1, got {num_actions!r}")
        self.num_actions, self.dim = num_actions, config.feature_dim
        self.torso = nn.Sequential(
            conv_torso(config.frame_stack, config.conv_channels, config.conv_kernels, config.conv_strides,
                       nn.ReLU),
            nn.Linear(_torso_out(config), config.psi_hidden), nn.ReLU())
        self.heads = PerDimensionMLP(config.feature_dim, config.psi_hidden + config.feature_dim,
                                     config.psi_hidden, num_actions)

    def forward(self, obs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = self.torso(pixels(obs))
        if w.ndim == 3:
            h = h[:, None].expand(-1, w.shape[1], -1)
        return self.heads(torch.cat([h, w], dim=-1)).transpose(-1, -2)


@torch.no_grad()
def dead_units(psi: AtariSuccessorFeatureNet, obs: torch.Tensor) -> float:
    """The fraction of psi's torso units (its last ReLU layer, h(s)) that are 0 on every observation of
    `obs`: 1.0 is a collapsed network, whose Q no longer depends on the state, so its greedy policy plays
    one fixed action (what a from-scratch learner at the paper's fine-tuning learning rate 1e-3 became on
    Kung Fu Master: `AtariConfig.finetune_lr`). Frames that look alike keep many units off for all of them
    even at initialisation (about half on Kung Fu Master's)."""
    return float((psi.torso(pixels(obs)).amax(0) <= 0).float().mean())
