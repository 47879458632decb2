"""What the gridworld networks read: the observation minus a running mean, and observations by state index.

Input normalisation. A one-hot board has about 100 of its 800 inputs on in every state (walls, floor)
and only 2-8 that differ between states. Fed raw, the always-on inputs make up most of every first-layer
activation and Adam moves their weights together; on `open10` VISR's phi ended with 118-123 of its 128
hidden units dead, so phi was a constant. The networks read x = obs - m instead, m the running mean of the
observations the learner has trained on (`ObservationNormaliser`): RND-style observation normalisation
without the division by the standard deviation, which would scale a rarely visited cell up by 1/std. The
mean stops moving when fine-tuning starts from a pretrained learner, since phi is frozen then.

Observations by state index. The compiled engine (`gridworld.PassagewayVectorEnv(observation="state")`)
hands out state indices into a table of the level's S boards. The first layer W x + b of a batch of
indices then runs on the table's rows once, not on each of the B >= S observations of a batch, and only on
the columns that vary between states: the others are the same for every state, so their product with W
folds into the bias (`first_layer`). The result equals the layer applied to the boards.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F


class ObservationNormaliser:
    """m = (sum of the flattened observations seen) / (how many), in float64; m = 0 before the first."""

    def __init__(self, dim: int, device: torch.device | str = "cpu") -> None:
        self.total = torch.zeros(dim, dtype=torch.float64, device=device)
        self.count = 0
        self.frozen = False
        """True once fine-tuning started from a pretrained learner: `update` then changes nothing."""
        self._mean: torch.Tensor | None = None

    def update(self, boards: torch.Tensor) -> None:
        """Fold in a batch of flattened observations (N, D), unless frozen."""
        if self.frozen or not len(boards):
            return
        self.total += boards.double().sum(0)
        self.count += len(boards)
        self._mean = None

    @property
    def mean(self) -> torch.Tensor:
        """m as float32 (D,)."""
        if self._mean is None:
            self._mean = (self.total / max(self.count, 1)).float()
        return self._mean

    def state_dict(self) -> dict:
        return {"total": self.total.clone(), "count": self.count, "frozen": self.frozen}

    def load_state_dict(self, state: dict) -> None:
        self.total = state["total"].clone().to(self.total.device)
        self.count, self.frozen, self._mean = int(state["count"]), bool(state["frozen"]), None


class StateTable:
    """The S boards of a compiled level, flattened to (S, D) float, with the columns that vary between
    states (`varying`) and those that do not (`constant`, equal to row 0 in every state)."""

    def __init__(self, observations: torch.Tensor, device: torch.device | str = "cpu") -> None:
        boards = observations.flatten(1).float().to(device)
        differs = (boards != boards[0]).any(0)
        self.source = observations
        """The table it was built from (to tell whether a learner already reads it)."""
        self.boards = boards
        self.varying = differs.nonzero()[:, 0]
        self.constant = (~differs).nonzero()[:, 0]

    def __len__(self) -> int:
        return len(self.boards)

    def inputs(self, index: torch.Tensor, mean: torch.Tensor) -> TableInputs:
        """x = board - m for the states `index` (any shape), as `first_layer` takes it."""
        varying = self.boards[:, self.varying] - mean[self.varying]
        constant = self.boards[0, self.constant] - mean[self.constant]
        return TableInputs(varying, self.varying, constant, self.constant, index)


class TableInputs(NamedTuple):
    """Network inputs x = board - m given by state index (see `StateTable.inputs`)."""

    varying: torch.Tensor
    """(S, Dv): x on the columns that vary between states, one row per state."""
    varying_columns: torch.Tensor
    constant: torch.Tensor
    """(Dc,): x on the other columns, the same in every state."""
    constant_columns: torch.Tensor
    index: torch.Tensor
    """State indices, any shape: the layer's output has this shape plus its width."""


def first_layer(linear: nn.Linear, x: torch.Tensor | TableInputs) -> torch.Tensor:
    """W x + b for inputs x (B, D), or for `TableInputs`: W_v x_v + (b + W_c x_c) with v the varying and c
    the constant columns, on the table's rows then indexed (or on the indexed rows, if there are fewer)."""
    if not isinstance(x, TableInputs):
        return linear(x)
    bias = linear.bias + linear.weight[:, x.constant_columns] @ x.constant
    weight = linear.weight[:, x.varying_columns]
    if x.index.numel() < len(x.varying):
        return F.linear(x.varying[x.index], weight, bias)
    return F.linear(x.varying, weight, bias)[x.index]
