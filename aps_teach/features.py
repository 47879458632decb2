"""Networks: the feature map phi(s) (L2-normalised, R^d) and the successor features psi(s, a, w) as a UVFA.

Gridworld scale: small MLPs on the flattened one-hot observation planes.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def _mlp(sizes: list[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class FeatureNet(nn.Module):
    """phi(s) = g(s) / ||g(s)||: an MLP onto the unit sphere in R^dim (vMF discriminator or kNN space)."""

    def __init__(self, obs_dim: int, hidden: int, dim: int):
        super().__init__()
        self.net = _mlp([obs_dim, hidden, dim])

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.net(obs.flatten(1).float()), dim=-1)


class SuccessorFeatureNet(nn.Module):
    """psi(s, a, w): the state encoding concatenated with w, one output per (action, feature dimension).

    `forward(obs (B, ...), w (B, d))` gives (B, A, d); `w (B, C, d)` (C candidate tasks, for GPI)
    gives (B, C, A, d), encoding each observation once.
    """

    def __init__(self, obs_dim: int, hidden: int, num_actions: int, dim: int):
        super().__init__()
        self.num_actions, self.dim = num_actions, dim
        self.torso = nn.Sequential(_mlp([obs_dim, hidden]), nn.ReLU())
        self.head = _mlp([hidden + dim, hidden, num_actions * dim])

    def forward(self, obs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        h = self.torso(obs.flatten(1).float())
        if w.ndim == 3:
            h = h[:, None].expand(-1, w.shape[1], -1)
        out = self.head(torch.cat([h, w], dim=-1))
        return out.unflatten(-1, (self.num_actions, self.dim))
