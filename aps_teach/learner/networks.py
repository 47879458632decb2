"""Networks: the feature map phi(s) (L2-normalised, R^d) and the successor features psi(s, a, w) as a UVFA.

Gridworld scale: small MLPs. They read prepared inputs, not raw boards: x = flattened board minus the
running mean (B, D), or `inputs.TableInputs` for observations given by state index; `Learner.inputs`
prepares them, and their first layer is `inputs.first_layer`.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from aps_teach.learner.inputs import TableInputs, first_layer

Inputs = torch.Tensor | TableInputs


class FeatureNet(nn.Module):
    """phi(s) = g(s) / ||g(s)||, g a one-hidden-layer ReLU MLP: a point on the unit sphere in R^dim (vMF
    discriminator or kNN space)."""

    def __init__(self, obs_dim: int, hidden: int, dim: int):
        super().__init__()
        self.input = nn.Linear(obs_dim, hidden)
        self.output = nn.Linear(hidden, dim)

    def hidden(self, x: Inputs) -> torch.Tensor:
        """The hidden layer's ReLU activations."""
        return F.relu(first_layer(self.input, x))

    def unnormalised(self, x: Inputs) -> torch.Tensor:
        """g(s), phi before the L2 normalisation (the authors' kNN space: `knn_phi_normalised=False`)."""
        return self.output(self.hidden(x))

    def forward(self, x: Inputs) -> torch.Tensor:
        return F.normalize(self.unnormalised(x), dim=-1)


class SuccessorFeatureNet(nn.Module):
    """psi(s, a, w): the state encoding concatenated with w, one output per (action, successor feature).

    `forward(x (B, ...), w (B, d))` gives (B, A, D); `w (B, C, d)` (C candidate tasks, for GPI)
    gives (B, C, A, D), encoding each observation once (a seed group's stacked copy, `group.stack_modules`:
    a leading dim S on all). D = `out_dim`, d by default (D = d + 1 when the
    kNN reward is a successor feature of its own, `AgentConfig.knn_feature`).
    """

    def __init__(self, obs_dim: int, hidden: int, num_actions: int, dim: int, out_dim: int | None = None):
        super().__init__()
        self.num_actions, self.dim = num_actions, dim if out_dim is None else out_dim
        self.input = nn.Linear(obs_dim, hidden)
        self.head = nn.Sequential(nn.Linear(hidden + dim, hidden), nn.ReLU(),
                                  nn.Linear(hidden, num_actions * self.dim))

    def forward(self, x: Inputs, w: torch.Tensor) -> torch.Tensor:
        h = F.relu(first_layer(self.input, x))
        if w.ndim > h.ndim:  # C candidate tasks per observation
            h = h.unsqueeze(-2).expand(*w.shape[:-1], -1)
        out = self.head(torch.cat([h, w], dim=-1))
        return out.unflatten(-1, (self.num_actions, self.dim))
